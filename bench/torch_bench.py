"""PyTorch integration benchmarks, run from the repository root after a build with tests and
benchmarks (build/):

    .venv/bin/python bench/torch_bench.py [--build build]     # or with `. .venv/bin/activate`

1. per-call cost of torch.ops.weft.AddCustom on one-element tensors, next to a native
   TORCH_LIBRARY no-op (returns its input), a native no-op that allocates its result, and torch.add;
2. torch.compile(backend="weft") vs eager PyTorch on resnet18 (bench/models/make_models.py; batch 1, 224x224,
   random weights) and a TransformerEncoderLayer (d_model 256, 4 heads, sequence 128, batch 1),
   at 1 and 2 threads.

Rounds are interleaved; the figures are medians over rounds, ratios are taken within one run.
The build directory (--build, else $WEFT_BUILD_DIR, else build/) provides the weft module
(DIR/python), the add_custom package and the native no-op operator.
"""
import argparse
import os
import statistics
import sys
import timeit

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
from make_models import resnet18  # noqa: E402

weft = wt = None  # imported in main(), once the build directory is known


def per_call(build):
    torch.ops.load_library(os.path.join(build, "bench", "libweft_bench_torch_noop.so"))
    torch.set_num_threads(1)
    x, y = torch.ones(1), torch.ones(1)
    cases = {
        "torch.ops.weft.AddCustom": lambda: torch.ops.weft.AddCustom(x, y),
        "native no-op (returns x)": lambda: torch.ops.weft_bench.noop(x, y),
        "native no-op (allocates)": lambda: torch.ops.weft_bench.noop_alloc(x, y),
        "torch.add": lambda: torch.add(x, y),
    }
    for f in cases.values():
        f()
    samples = {k: [] for k in cases}
    n = 20000
    for _ in range(15):
        for k, f in cases.items():
            samples[k].append(timeit.timeit(f, number=n) / n * 1e9)
    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"== per call, one-element float32 tensors ({'C++ kernels' if wt.is_native('AddCustom') else 'Python kernels'})")
    base = med["native no-op (returns x)"]
    for k, v in med.items():
        print(f"  {k:28s} {v:8.0f} ns   {v / base:5.2f}x the native no-op")
    return med


def timed(f, rounds, number):
    f()
    return [timeit.timeit(f, number=number) / number * 1e3 for _ in range(rounds)]


def offload(name, module, x, threads):
    torch.set_num_threads(threads)
    session = weft.Session(threads=threads)
    report = wt.explain(module, x)
    torch._dynamo.reset()
    compiled = wt.compile(module, session=session)
    with torch.no_grad():
        ref = module(x)
        eager_f = lambda: module(x)  # noqa: E731
        compiled(x)
        out = compiled(x)
    diff = float((out - ref).abs().max() / ref.abs().max())
    eager, weft_ms = [], []
    for _ in range(5):
        with torch.no_grad():
            eager += timed(eager_f, 1, 5)
        with torch.no_grad():
            weft_ms += timed(lambda: compiled(x), 1, 5)
    e, w = statistics.median(eager), statistics.median(weft_ms)
    print(f"  {name:12s} threads {threads}: eager {e:8.2f} ms, weft.torch.compile {w:8.2f} ms, speed-up {e / w:5.2f}x, "
          f"max rel diff {diff:.1e}, segments {sum(g['weft_segments'] for g in report.graphs)}, "
          f"nodes left to PyTorch {len(report.torch_nodes)}")


def main():
    global weft, wt
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("WEFT_BUILD_DIR", os.path.join(ROOT, "build")))
    build = os.path.abspath(ap.parse_args().build)
    sys.path.insert(0, os.path.join(build, "python"))
    os.environ.setdefault("WEFT_CUSTOM_OPP_PATH", os.path.join(build, "tests", "packages", "add_custom"))
    import weft
    import weft.torch as wt

    per_call(build)
    torch.manual_seed(0)
    print(f"== weft.torch.compile vs eager PyTorch {torch.__version__}")
    resnet = resnet18()
    layer = torch.nn.TransformerEncoderLayer(256, 4, batch_first=True).eval()
    for threads in (1, 2):
        offload("resnet18", resnet, torch.randn(1, 3, 224, 224), threads)
        offload("transformer", layer, torch.randn(1, 128, 256), threads)


if __name__ == "__main__":
    main()
