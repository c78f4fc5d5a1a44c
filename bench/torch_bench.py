"""PyTorch integration benchmarks (run with /usr/bin/python3 from the repository root after a build):

1. per-call cost of torch.ops.weft.AddCustom on one-element tensors, next to a native
   TORCH_LIBRARY no-op (returns its input), a native no-op that allocates its result, and torch.add;
2. weft.torch.compile vs eager PyTorch on resnet18 (batch 1, 224x224) and a TransformerEncoderLayer
   (d_model 256, 4 heads, sequence 128, batch 1), at 1 and 2 threads.

Rounds are interleaved; the figures are medians over rounds, ratios are taken within one run.
"""
import os
import statistics
import sys
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("WEFT_BUILD_DIR", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))
os.environ.setdefault("WEFT_CUSTOM_OPP_PATH", os.path.join(BUILD, "tests", "packages", "add_custom"))

import torch  # noqa: E402
import torchvision  # noqa: E402

import weft  # noqa: E402
import weft.torch as wt  # noqa: E402


def per_call():
    torch.ops.load_library(os.path.join(BUILD, "bench", "libweft_bench_torch_noop.so"))
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
    compiled = wt.compile(module, (x,), session=session)
    with torch.no_grad():
        ref = module(x)
        eager_f = lambda: module(x)  # noqa: E731
    out = compiled(x)
    diff = float((out - ref).abs().max() / ref.abs().max())
    eager, weft_ms = [], []
    for _ in range(5):
        with torch.no_grad():
            eager += timed(eager_f, 1, 5)
        weft_ms += timed(lambda: compiled(x), 1, 5)
    e, w = statistics.median(eager), statistics.median(weft_ms)
    print(f"  {name:12s} threads {threads}: eager {e:8.2f} ms, weft.torch.compile {w:8.2f} ms, speed-up {e / w:5.2f}x, "
          f"max rel diff {diff:.1e}, segments {compiled.num_segments}, nodes left to PyTorch {len(compiled.report)}")


def main():
    per_call()
    torch.manual_seed(0)
    print("== weft.torch.compile vs eager PyTorch 1.13")
    resnet = torchvision.models.resnet18().eval()
    layer = torch.nn.TransformerEncoderLayer(256, 4, batch_first=True).eval()
    for threads in (1, 2):
        offload("resnet18", resnet, torch.randn(1, 3, 224, 224), threads)
        offload("transformer", layer, torch.randn(1, 128, 256), threads)


if __name__ == "__main__":
    main()
