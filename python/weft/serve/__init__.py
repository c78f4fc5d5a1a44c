"""Weft models behind Ray Serve (docs/serving.md).

    from ray import serve
    import weft.serve
    handle = serve.run(weft.serve.build("model.onnx", replicas=2, max_batch_size=16))
    outputs = handle.infer.remote({"x": x}).result()      # {"y": array}

or from the command line: `weft serve model.onnx --replicas 2 --port 8000`, or `serve run` with a
config file whose application's import_path is `weft.serve:app` (examples/serving/serve.yaml).

Each replica holds one Engine (the model, compiled once); requests are checked against the
model's inputs before they queue, grouped by @serve.batch, and run on one thread per replica with
the GIL released. HTTP: POST JSON or .npz to the route (the model's outputs come back the same
way); GET the route for the model's metadata, `<route>/healthz` for liveness, `<route>/stats`
for the answering replica's counters.
"""
import asyncio
import collections
import difflib
import inspect
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ._engine import DEFAULT_MAX_REQUEST_BYTES, Engine, RequestError
from . import _http

try:
    from ray import serve as _serve
    from ray.serve import metrics as _metrics
except ImportError:  # weft.serve.Engine works without Ray; the deployment needs it
    _serve = None

__all__ = ["Engine", "RequestError", "WeftModel", "app", "build", "DEFAULT_MAX_REQUEST_BYTES"]

_NEED_RAY = "weft.serve needs Ray Serve: pip install 'ray[serve]' (or the package's extra: 'weft[serve]')"
_LATENCY_BOUNDS_MS = [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]
_BATCH_BOUNDS = [1, 2, 4, 8, 16, 32, 64, 128, 256]


class _Stats:
    """The replica's own counters, for `<route>/stats` (Ray's metrics carry the same numbers)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_status = collections.Counter()
        self.batches = 0
        self.batched_requests = 0
        self.latencies_ms = collections.deque(maxlen=10000)
        self.queue_depth = 0
        self.started = time.time()

    def snapshot(self):
        with self.lock:
            lat = sorted(self.latencies_ms)
            q = lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))], 3) if lat else None  # noqa: E731
            return {"requests": dict(self.by_status), "batches": self.batches,
                    "mean_batch_size": round(self.batched_requests / self.batches, 3) if self.batches else None,
                    "latency_ms": {"p50": q(0.50), "p99": q(0.99), "count": len(lat)},
                    "queue_depth": self.queue_depth, "uptime_s": round(time.time() - self.started, 1),
                    "pid": os.getpid()}


def _error_body(identity, status, message):
    return json.dumps({"error": message, "status": status, "model": identity}).encode()


if _serve is not None:
    from starlette.responses import Response

    @_serve.deployment(name="WeftModel", max_ongoing_requests=32, health_check_period_s=5, health_check_timeout_s=30)
    class WeftModel:
        """One replica: an Engine, a batching queue, and the HTTP and handle entry points."""

        def __init__(self, model, max_batch_size=8, batch_wait_timeout_s=0.005, **engine_args):
            self._engine = Engine(model, **engine_args)
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="weft-run")
            self._infer_batch.set_max_batch_size(int(max_batch_size))
            self._infer_batch.set_batch_wait_timeout_s(float(batch_wait_timeout_s))
            self._stats = _Stats()
            self._engine_faults = 0
            ident = self._engine.identity()
            self._headers = {"X-Weft-Model": ident["name"], "X-Weft-Model-Version": ident["version"]}
            self._tags = {"model": ident["name"]}
            self._m_latency = _metrics.Histogram("weft_request_latency_ms", description="Request latency in a replica",
                                                 boundaries=_LATENCY_BOUNDS_MS, tag_keys=("model", "status"))
            self._m_batch = _metrics.Histogram("weft_batch_size", description="Requests per run",
                                               boundaries=_BATCH_BOUNDS, tag_keys=("model",))
            self._m_queue = _metrics.Gauge("weft_queue_depth", description="Requests in a replica, waiting or running",
                                           tag_keys=("model",))
            self._m_requests = _metrics.Counter("weft_requests", description="Requests by status",
                                                tag_keys=("model", "status"))

        # --- entry points -------------------------------------------------------------------------
        async def __call__(self, request):
            if isinstance(request, dict):  # handle.remote({...}) is handle.infer.remote({...})
                return await self.infer(request)
            t0 = time.perf_counter()
            status, body, ctype = 500, b"", "application/json"
            self._enter()
            try:
                status, body, ctype = await self._http(request)
            except RequestError as e:
                status, body = e.status, _error_body(self._engine.identity(), e.status, str(e))
            except Exception as e:  # noqa: BLE001 - a fault of the engine: a 500 naming it, the replica lives on
                status, body = 500, _error_body(self._engine.identity(), 500, f"{type(e).__name__}: {e}")
            finally:
                self._leave(status, t0)
            return Response(body, status_code=status, media_type=ctype, headers=self._headers)

        async def infer(self, inputs):
            """Handle API: {input: array or nested list} -> {output: array}. Raises RequestError."""
            t0 = time.perf_counter()
            self._enter()
            status = 500
            try:
                out = await self._submit(self._engine.validate(inputs))
                status = 200
                return out
            except RequestError as e:
                status = e.status
                raise
            finally:
                self._leave(status, t0)

        def metadata(self):
            return self._engine.metadata()

        def stats(self):
            return self._stats.snapshot()

        def check_health(self):
            # Ray replaces a replica whose check raises: an engine that keeps failing on its own.
            if self._engine_faults >= 3:
                raise RuntimeError(f"model '{self._engine.name}': {self._engine_faults} engine faults in a row")

        # --- HTTP ---------------------------------------------------------------------------------
        async def _http(self, request):
            path = request.url.path.rstrip("/")
            root = request.scope.get("root_path", "").rstrip("/")
            sub = path[len(root):] if root and path.startswith(root) else path
            last = sub.rsplit("/", 1)[-1]
            if request.method == "GET":
                if last == "healthz":
                    return 200, b'{"status": "ok"}', "application/json"
                if last == "stats":
                    return 200, json.dumps({"model": self._engine.identity(), **self._stats.snapshot()}).encode(), \
                        "application/json"
                if last in ("", "metadata") or sub in ("", "/"):
                    return 200, json.dumps(self._engine.metadata()).encode(), "application/json"
                raise RequestError(404, f"no such path '{request.url.path}': GET the route for metadata, "
                                        "<route>/healthz, <route>/stats; POST the route to run the model")
            if request.method != "POST":
                raise RequestError(405, f"method {request.method} is not served: POST inputs, GET metadata")
            kind = _http.content_kind(request.headers.get("content-type"))
            limit = self._engine.max_request_bytes * (8 if kind == "json" else 1) + (1 << 20)
            declared = request.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise RequestError(413, f"the body is {declared} bytes; this route takes at most {limit}")
            body = bytearray()
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise RequestError(413, f"the body exceeds {limit} bytes")
            if kind == "json":
                inputs = _http.decode_json(bytes(body))
            else:
                inputs = _http.decode_npz(bytes(body), self._engine.max_request_bytes)
            outputs = await self._submit(self._engine.validate(inputs))
            if kind == "json":
                return 200, _http.encode_json(self._engine.identity(), outputs), "application/json"
            return 200, _http.encode_npz(outputs), "application/x-npz"

        # --- batching -----------------------------------------------------------------------------
        async def _submit(self, item):
            kind, value = await self._infer_batch(item)
            if kind == "err":
                raise value
            return value

        @_serve.batch(max_batch_size=8, batch_wait_timeout_s=0.005)
        async def _infer_batch(self, items):
            loop = asyncio.get_running_loop()
            with self._stats.lock:
                self._stats.batches += 1
                self._stats.batched_requests += len(items)
            self._m_batch.observe(len(items), tags=self._tags)
            try:
                outs = await loop.run_in_executor(self._pool, self._engine.run_batch, items)
                self._engine_faults = 0
                return [("ok", o) for o in outs]
            except RequestError as e:
                if len(items) == 1:
                    return [("err", e)]
            except Exception as e:  # noqa: BLE001 - counted; goes to the request(s) below
                self._engine_faults += 1
                if len(items) == 1:
                    return [("err", e)]
            # One request spoiled the batch: run each alone, so only that one fails.
            results = []
            for item in items:
                try:
                    out = await loop.run_in_executor(self._pool, self._engine.run_batch, [item])
                    results.append(("ok", out[0]))
                except Exception as e:  # noqa: BLE001 - goes to its own request
                    results.append(("err", e))
            return results

        # --- bookkeeping --------------------------------------------------------------------------
        def _enter(self):
            with self._stats.lock:
                self._stats.queue_depth += 1
                depth = self._stats.queue_depth
            self._m_queue.set(depth, tags=self._tags)

        def _leave(self, status, t0):
            ms = (time.perf_counter() - t0) * 1e3
            with self._stats.lock:
                self._stats.queue_depth -= 1
                self._stats.by_status[str(status)] += 1
                self._stats.latencies_ms.append(ms)
                depth = self._stats.queue_depth
            self._m_queue.set(depth, tags=self._tags)
            self._m_requests.inc(tags={**self._tags, "status": str(status)})
            self._m_latency.observe(ms, tags={**self._tags, "status": str(status)})
else:
    WeftModel = None


_BUILD_OPTIONS = ("replicas", "autoscaling", "num_cpus", "max_ongoing_requests", "max_batch_size",
                  "batch_wait_timeout_s")


def build(model, *, replicas=1, autoscaling=None, num_cpus=None, max_ongoing_requests=None, max_batch_size=8,
          batch_wait_timeout_s=0.005, **engine_args):
    """A Ray Serve application serving `model` (.weft, .onnx, .tflite): pass it to serve.run.

    replicas: fixed replica count, or autoscaling: {"min_replicas", "max_replicas",
    "target_ongoing_requests", ...} (Ray's autoscaling_config). num_cpus: CPUs reserved per replica
    (default: threads). max_batch_size / batch_wait_timeout_s: @serve.batch's limits, in requests
    and seconds. engine_args: Engine's (threads, input_shapes, batch_sizes, packages, name, version,
    backend, max_request_bytes, trust_embedded_code, allow_override). The model is loaded here
    first, so a bad file or option fails now, not in the replicas."""
    if _serve is None:
        raise ImportError(_NEED_RAY)
    known = set(inspect.signature(Engine.__init__).parameters) - {"self", "model"}
    for k in engine_args:
        if k not in known:
            near = difflib.get_close_matches(k, sorted(known) + list(_BUILD_OPTIONS), n=1)
            raise TypeError(f"weft.serve: unknown option '{k}'" + (f" (did you mean '{near[0]}'?)" if near else ""))
    path = os.path.abspath(os.fspath(model))
    Engine(path, **engine_args)  # fails here, with the model's own message, before any replica starts
    threads = int(engine_args.get("threads", 1))
    opts = {"ray_actor_options": {"num_cpus": float(num_cpus if num_cpus is not None else threads)}}
    if autoscaling:
        opts["autoscaling_config"] = dict(autoscaling)
        opts["num_replicas"] = "auto"
    else:
        if int(replicas) < 1:
            raise ValueError(f"weft.serve: replicas must be at least 1, not {replicas}")
        opts["num_replicas"] = int(replicas)
    if max_ongoing_requests is not None:
        opts["max_ongoing_requests"] = int(max_ongoing_requests)
    if int(max_batch_size) < 1:
        raise ValueError(f"weft.serve: max_batch_size must be at least 1, not {max_batch_size}")
    return WeftModel.options(**opts).bind(path, max_batch_size=int(max_batch_size),
                                          batch_wait_timeout_s=float(batch_wait_timeout_s), **engine_args)


def app(args):
    """Ray Serve application builder: `serve run weft.serve:app model=model.onnx`, or
    `import_path: weft.serve:app` with `args: {model: ..., ...}` in a Serve config file. Takes
    build()'s options by name."""
    args = dict(args or {})
    if "model" not in args:
        raise ValueError("weft.serve:app needs args.model: the model file to serve")
    model = args.pop("model")
    for k in ("replicas", "max_batch_size", "threads", "max_ongoing_requests", "max_request_bytes"):
        if isinstance(args.get(k), str):  # `serve run ... key=value` passes strings
            args[k] = int(args[k])
    for k in ("batch_wait_timeout_s", "num_cpus"):
        if isinstance(args.get(k), str):
            args[k] = float(args[k])
    if isinstance(args.get("batch_sizes"), str):
        args["batch_sizes"] = [int(b) for b in args["batch_sizes"].split(",") if b]
    return build(model, **args)
