"""`weft serve MODEL`: a local Ray Serve app for one model, until Ctrl-C."""
import argparse
import os
import signal
import sys
import threading


def _shape(text):
    name, sep, dims = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=DIMS (e.g. x=-1x3x224x224)")
    try:
        return name, [int(d) for d in dims.replace(",", "x").split("x") if d != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': dims are integers separated by x (-1 for dynamic)") from None


def _range(text):
    lo, sep, hi = text.partition(":")
    try:
        lo, hi = int(lo), int(hi)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not MIN:MAX (e.g. 1:4)") from None
    if not sep or lo < 0 or hi < max(1, lo):
        raise argparse.ArgumentTypeError(f"'{text}': need 0 <= MIN <= MAX and MAX >= 1")
    return lo, hi


def main(argv):
    p = argparse.ArgumentParser(
        prog="weft serve",
        description="Serve a model (.weft, .onnx, .tflite) over HTTP on a local Ray Serve app: POST JSON or .npz "
                    "inputs to http://HOST:PORT/ROUTE, GET it for the model's metadata (docs/serving.md). Runs "
                    "until interrupted (Ctrl-C).")
    p.add_argument("model", help="model file")
    p.add_argument("--replicas", type=int, default=1, help="replica processes (default 1)")
    p.add_argument("--autoscale", type=_range, metavar="MIN:MAX",
                   help="autoscale between MIN and MAX replicas instead of a fixed count")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    p.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--route", default="/", help="route prefix (default /)")
    p.add_argument("--name", help="the model's name in responses (default: the file name)")
    p.add_argument("--model-version", help="the model's version in responses (default: its SHA-256, 12 digits)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per replica (default 1)")
    p.add_argument("--max-batch-size", type=int, default=8, help="requests per run at most (default 8; 1: no batching)")
    p.add_argument("--batch-wait-ms", type=float, default=5.0,
                   help="how long a run waits for more requests to batch (default 5)")
    p.add_argument("--batch-sizes", help="compile one plan per batch size, e.g. 1,2,4,8 (pads up to the next)")
    p.add_argument("--input-shape", type=_shape, action="append", default=[], metavar="NAME=DIMS",
                   help="fix an input's dims, e.g. x=-1x3x224x224 (repeatable)")
    p.add_argument("-p", "--package", action="append", default=[], help="operator package root (repeatable)")
    p.add_argument("--backend", choices=["weft", "onnxruntime"], default="weft",
                   help="engine (onnxruntime: a reference deployment to compare with)")
    p.add_argument("--address", help="an existing Ray cluster to deploy to (default: start a local one)")
    a = p.parse_args(argv)
    if not os.path.isfile(a.model):
        sys.exit(f"weft serve: no such model file: {a.model}")
    if a.replicas < 1:
        sys.exit("weft serve: --replicas must be at least 1")
    try:
        import ray
        from ray import serve
    except ImportError:
        sys.exit("weft serve: needs Ray Serve: pip install 'ray[serve]' (or 'weft[serve]')")
    import weft.serve as ws

    engine_args = {"threads": a.threads, "packages": a.package, "name": a.name, "version": a.model_version,
                   "backend": a.backend}
    if a.input_shape:
        engine_args["input_shapes"] = dict(a.input_shape)
    if a.batch_sizes:
        try:
            engine_args["batch_sizes"] = [int(b) for b in a.batch_sizes.split(",") if b]
        except ValueError:
            sys.exit(f"weft serve: --batch-sizes '{a.batch_sizes}' is not a comma-separated list of integers")
    autoscaling = None
    if a.autoscale:
        autoscaling = {"min_replicas": a.autoscale[0], "max_replicas": a.autoscale[1],
                       "initial_replicas": max(1, a.autoscale[0])}
    print(f"weft serve: loading {a.model} ...", flush=True)
    try:
        application = ws.build(a.model, replicas=a.replicas, autoscaling=autoscaling,
                               max_batch_size=a.max_batch_size, batch_wait_timeout_s=a.batch_wait_ms / 1e3,
                               **engine_args)
    except (ValueError, KeyError, RuntimeError, TypeError, OSError) as e:
        sys.exit(f"weft serve: {a.model}: {e}")
    print("weft serve: starting Ray Serve ...", flush=True)
    ray.init(address=a.address, include_dashboard=False, logging_level="WARNING", log_to_driver=False,
             configure_logging=False)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        serve.start(http_options={"host": a.host, "port": a.port})
        name = os.path.splitext(os.path.basename(a.model))[0]
        serve.run(application, name=name, route_prefix=a.route)
        url = f"http://{a.host}:{a.port}{a.route if a.route.startswith('/') else '/' + a.route}"
        count = f"{a.autoscale[0]}-{a.autoscale[1]} replicas (autoscaling)" if a.autoscale else f"{a.replicas} replica(s)"
        print(f"weft serve: {a.model} at {url} with {count}; Ctrl-C stops", flush=True)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        print("weft serve: stopping", flush=True)
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
