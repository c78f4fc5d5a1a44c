"""Load test on loopback: weft.serve's deployment beside the same deployment running onnxruntime,
on one local Ray Serve instance, for each model x replica count x batch setting.

    .venv/bin/python bench/serve/load_test.py                       # defaults below
    .venv/bin/python bench/serve/load_test.py --models cnn --replicas 1 --batch 1,8 --requests 200
    .venv/bin/python bench/serve/load_test.py --models zoo:resnet18,zoo:mobilenet_v2   # bench/zoo's models

Every cell sends --requests requests from --clients concurrent clients (HTTP POST, .npz bodies,
keep-alive sessions) and stops early at --max-seconds; engines alternate within each round and the
order flips every round (interleaved); a cell's figures are the median over --rounds. Reports
throughput (requests/s), p50 and p99 latency, and Weft/onnxruntime ratios. Both deployments are
weft.serve's WeftModel (same HTTP, batching and queueing code); only the engine differs
(backend="weft" or "onnxruntime", 1 intra-op thread per replica).
"""
import argparse
import io
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

MODELS = {
    # name: (builder, input shape without the batch dim)
    "cnn": ("a 6-layer conv net, 3x64x64 -> 10 classes", (3, 64, 64)),
    "mlp": ("a 3-layer MLP, 512 -> 1024 -> 1024 -> 10", (512,)),
    "encoder": ("a pre-norm transformer encoder block, d_model 128, 4 heads, FFN 256, sequence 32", (32, 128)),
}


def build_zoo_model(name, path):
    """A model of bench/zoo (full size, dynamic batch); returns (description, input shape)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo"))
    from make_zoo import export_one
    from zoo_models import REGISTRY
    if name not in REGISTRY:
        raise SystemExit(f"no zoo model '{name}' (bench/zoo/zoo_models.py has: {', '.join(sorted(REGISTRY))})")
    entry = export_one(name, REGISTRY[name].family, "full", "dynamic", 17, path, 0)
    if len(entry["inputs"]) != 1 or entry["inputs"][0]["dtype"] != "float32" or entry["inputs"][0]["name"] != "input":
        raise SystemExit(f"zoo model '{name}': the load test sends one float32 input named 'input'")
    shape = tuple(entry["inputs"][0]["shape"][1:])
    return f"bench/zoo's {name} (full size), input {'x'.join(map(str, shape))}", shape


def build_model(name, path):
    if name.startswith("zoo:"):
        return build_zoo_model(name[4:], path)
    import torch
    torch.manual_seed(0)
    nn = torch.nn
    if name == "cnn":
        def block(i, o, s):
            return nn.Sequential(nn.Conv2d(i, o, 3, s, 1), nn.BatchNorm2d(o), nn.ReLU())
        net = nn.Sequential(block(3, 16, 2), block(16, 32, 1), block(32, 32, 2), block(32, 64, 1), block(64, 64, 2),
                            block(64, 128, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10))
    elif name == "mlp":
        net = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    elif name == "encoder":
        class Encoder(nn.Module):  # one pre-norm transformer encoder block, written out
            def __init__(self, d=128, heads=4, ff=256):
                super().__init__()
                self.heads, self.qkv, self.proj = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)
                self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
                self.ff = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

            def forward(self, x):
                b, t, d = x.shape
                q, k, v = self.qkv(self.n1(x)).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
                att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
                x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
                return x + self.ff(self.n2(x))
        net = Encoder()
    else:
        raise SystemExit(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    net.eval()
    x = torch.randn(2, *MODELS[name][1])
    with torch.no_grad():
        torch.onnx.export(net, (x,), path, input_names=["input"], output_names=["y"], opset_version=17,
                          dynamic_axes={"input": {0: "batch"}, "y": {0: "batch"}}, dynamo=False)
    return MODELS[name]


def one_cell(url, shape, requests_total, clients, max_seconds, seed):
    import requests
    rng = np.random.default_rng(seed)
    bodies = []
    for _ in range(16):
        buf = io.BytesIO()
        np.savez(buf, input=rng.standard_normal((1, *shape)).astype(np.float32))
        bodies.append(buf.getvalue())
    latencies, errors = [], []
    lock = threading.Lock()
    counter = iter(range(requests_total))
    deadline = time.monotonic() + max_seconds

    def client(c):
        s = requests.Session()
        while time.monotonic() < deadline:
            with lock:
                k = next(counter, None)
            if k is None:
                return
            t0 = time.perf_counter()
            try:
                r = s.post(url, data=bodies[k % len(bodies)], headers={"Content-Type": "application/x-npz"},
                           timeout=max_seconds)
                ok = r.status_code == 200
            except requests.RequestException:
                ok = False
            ms = (time.perf_counter() - t0) * 1e3
            with lock:
                (latencies if ok else errors).append(ms)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    elapsed = time.perf_counter() - t0
    lat = sorted(latencies)
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")  # noqa: E731
    return {"rps": len(lat) / elapsed, "p50": pct(0.50), "p99": pct(0.99), "errors": len(errors), "done": len(lat)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="cnn,mlp,encoder")
    p.add_argument("--replicas", default="1,2")
    p.add_argument("--batch", default="1,8", help="max_batch_size settings (1: no batching)")
    p.add_argument("--requests", type=int, default=400, help="requests per cell and round")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--max-seconds", type=float, default=60.0, help="a cell stops after this long")
    p.add_argument("--port", type=int, default=18700)
    p.add_argument("--markdown", help="also write the table to this file")
    a = p.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import onnxruntime
    import ray
    from ray import serve
    import weft
    import weft.serve as ws

    models = a.models.split(",")
    replicas = [int(r) for r in a.replicas.split(",")]
    batches = [int(b) for b in a.batch.split(",")]
    work = tempfile.mkdtemp(prefix="weft_serve_bench_")
    paths, info = {}, {}
    for m in models:
        paths[m] = os.path.join(work, f"{m.replace(':', '_')}.onnx")
        info[m] = build_model(m, paths[m])
    cells = [(m, r, b) for m in models for r in replicas for b in batches]
    ray.init(num_cpus=64, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             object_store_memory=200 << 20)
    serve.start(http_options={"host": "127.0.0.1", "port": a.port})
    results = {}
    try:
        for m in models:  # one model's applications at a time: every replica is a process
            mcells = [c for c in cells if c[0] == m]
            names = []
            for _, r, b in mcells:
                for engine in ("weft", "onnxruntime"):
                    route = f"/{m.replace(':', '_')}-{r}-{b}-{engine}"
                    serve.run(ws.build(paths[m], replicas=r, max_batch_size=b, batch_wait_timeout_s=0.002,
                                       backend=engine, num_cpus=1), name=route.strip("/"), route_prefix=route)
                    names.append(route.strip("/"))
            print(f"{m}: deployed {len(names)} applications; {a.rounds} round(s) of {a.requests} requests per cell, "
                  f"{a.clients} clients", flush=True)
            for rnd in range(a.rounds):
                for _, r, b in mcells:
                    order = ("weft", "onnxruntime") if rnd % 2 == 0 else ("onnxruntime", "weft")
                    for engine in order:
                        url = f"http://127.0.0.1:{a.port}/{m.replace(':', '_')}-{r}-{b}-{engine}"
                        one_cell(url, info[m][1], a.clients * 4, a.clients, a.max_seconds, 99)  # warm-up
                        res = one_cell(url, info[m][1], a.requests, a.clients, a.max_seconds, rnd)
                        results.setdefault((m, r, b, engine), []).append(res)
                        print(f"round {rnd + 1} {m:8s} replicas {r} batch {b:2d} {engine:12s} {res['rps']:8.1f} req/s  "
                              f"p50 {res['p50']:7.1f} ms  p99 {res['p99']:7.1f} ms  errors {res['errors']}", flush=True)
            for n in names:
                serve.delete(n)
    finally:
        serve.shutdown()
        ray.shutdown()

    def med(key, field):
        return statistics.median(x[field] for x in results[key])

    lines = [f"Weft {weft.__version__} vs onnxruntime {onnxruntime.__version__} behind weft.serve on Ray Serve; "
             f"{a.clients} concurrent clients, {a.requests} requests per cell, median of {a.rounds} interleaved "
             f"round(s); .npz bodies over HTTP on loopback; 1 intra-op thread per replica.", "",
             "| model | replicas | max batch | Weft req/s | ORT req/s | Weft/ORT throughput | Weft p50 / p99 ms | "
             "ORT p50 / p99 ms | errors |", "|---|---|---|---|---|---|---|---|---|"]
    for m, r, b in cells:
        w, o = (m, r, b, "weft"), (m, r, b, "onnxruntime")
        errs = sum(x["errors"] for x in results[w] + results[o])
        lines.append(f"| {m} | {r} | {b} | {med(w, 'rps'):.1f} | {med(o, 'rps'):.1f} | "
                     f"{med(w, 'rps') / med(o, 'rps'):.2f} | {med(w, 'p50'):.1f} / {med(w, 'p99'):.1f} | "
                     f"{med(o, 'p50'):.1f} / {med(o, 'p99'):.1f} | {errs} |")
    lines.append("")
    lines += [f"- {m}: {info[m][0]}" for m in models]
    table = "\n".join(lines)
    print("\n" + table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    sys.exit(main())
