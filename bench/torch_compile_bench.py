"""torch.compile(backend="weft") against eager PyTorch and torch.compile's default (inductor).

Each model is built once (bench/zoo, seeded random weights) and compiled both ways; then rounds
interleave the three (eager, inductor, weft) on the same inputs, under torch.no_grad, with one
intra-op thread unless --threads says otherwise. Reports medians and the ratios weft/inductor and
weft/eager (below 1.0: weft is faster), and checks the outputs agree within 1e-4.

    .venv/bin/python bench/torch_compile_bench.py [--size small|full] [--batch 1] [--rounds 30] [--dynamic]

--dynamic compiles both ways with dynamic=True (symbolic sizes: Weft's -1 dims and its per-shape
plan cache; inductor's dynamic kernels) and, after the first call at --batch, warms a second
batch size (--batch + 1) before timing, so that both have seen the batch vary.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "zoo"))
import zoo_models as zm  # noqa: E402

MODELS = ["resnet18", "resnet50", "mobilenet_v3_large", "bert_base", "gpt2"]


def inputs(specs, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(int(i.low), int(i.high), i.shape, generator=g) if i.dtype == "int64"
            else torch.randn(*i.shape, generator=g) for i in specs]


def flat(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def timed(fn, xs, reps):
    t = time.perf_counter()
    for _ in range(reps):
        fn(*xs)
    return (time.perf_counter() - t) / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="full", choices=["small", "full"])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--dynamic", action="store_true", help="compile with dynamic=True (see above)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    import weft
    import weft.torch as wt

    session = weft.Session(threads=a.threads)
    print(f"torch {torch.__version__}, {a.threads} thread(s), batch {a.batch}, size {a.size}, {a.rounds} rounds"
          + (", dynamic=True" if a.dynamic else ""))
    dyn = {"dynamic": True} if a.dynamic else {}
    print(f"{'model':<20} {'eager ms':>9} {'inductor ms':>12} {'weft ms':>9} {'weft/inductor':>14} {'weft/eager':>11}"
          f" {'max |diff|':>11}  compile s (inductor, weft)")
    rows = []
    for name in a.models.split(","):
        b = zm.build(name, a.size, a.batch)
        m = b.module
        xs = inputs(b.inputs)
        torch._dynamo.reset()
        with torch.no_grad():
            ref = m(*xs)
            t0 = time.perf_counter()
            ind = torch.compile(m, **dyn)
            ind(*xs)
            t_ind = time.perf_counter() - t0
            t0 = time.perf_counter()
            wf = wt.compile(m, session=session, **dyn)
            wf(*xs)
            wf(*xs)
            t_weft = time.perf_counter() - t0
            if a.dynamic:  # both see a second batch size before the timed rounds
                other = inputs(zm.build(name, a.size, a.batch + 1).inputs, seed=1)
                ind(*other)
                wf(*other)
            diff = max(float((p - q).abs().max()) for p, q in zip(flat(wf(*xs)), flat(ref)))
            reps = max(1, int(0.2 / max(timed(m, xs, 1), 1e-4)))
            runs = {"eager": [], "inductor": [], "weft": []}
            for _ in range(a.rounds):
                for k, fn in (("eager", m), ("inductor", ind), ("weft", wf)):
                    runs[k].append(timed(fn, xs, reps))
        med = {k: statistics.median(v) * 1e3 for k, v in runs.items()}
        rows.append((name, med))
        print(f"{name:<20} {med['eager']:>9.3f} {med['inductor']:>12.3f} {med['weft']:>9.3f} "
              f"{med['weft'] / med['inductor']:>14.2f} {med['weft'] / med['eager']:>11.2f} {diff:>11.2e}"
              f"  {t_ind:.1f}, {t_weft:.1f}", flush=True)
    gm = statistics.geometric_mean([r[1]["weft"] / r[1]["inductor"] for r in rows])
    print(f"geometric mean weft/inductor: {gm:.2f}")


if __name__ == "__main__":
    main()
