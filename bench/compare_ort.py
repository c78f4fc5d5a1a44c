#!/usr/bin/env python3
"""Weft vs ONNX Runtime on the same ONNX files, in one process, 1 and 2 threads, interleaved runs.

    .venv/bin/python bench/compare_ort.py [--build build] [--rounds 5] [--iters 20] [--threads 1,2]

Weft runs through the `weft` Python module (installed in the venv, or DIR/python of --build DIR;
without either, build/python of this checkout); ONNX Runtime, the reference, through the
`onnxruntime` package (CPU execution provider, intra_op_num_threads=N, inter_op_num_threads=1,
sequential execution, all graph optimizations). Both run zero-copy into preallocated outputs
(Weft's run_into, ORT's IOBinding). For each model and thread count, each round times a batch
of Weft runs, then a batch of ORT runs; the figure is the median of the batch medians. Prints the
Weft/ORT ratio, the largest difference between the two runtimes' outputs relative to the largest
magnitude of ORT's, and Weft's planned arena next to its lower bound (model.memory()). The models
are generated on first use (bench/models/make_models.py, with this interpreter; needs torch).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["resnet18", "mobilenet_v2", "transformer", "mlp"]


def import_weft(build):
    """The weft module: from BUILD/python if given, else installed, else this checkout's build/."""
    if build is None:
        try:
            import weft
            return weft
        except ImportError:
            build = os.path.join(HERE, "..", "build")
    path = os.path.join(os.path.abspath(build), "python")
    if not os.path.isdir(os.path.join(path, "weft")):
        sys.exit(f"no weft module installed and none in {path}; build Weft or pass --build DIR")
    sys.path.insert(0, path)
    import weft
    return weft


def batch(run, iters, warmup):
    """Median milliseconds of `iters` timed calls after `warmup` untimed ones.

    A 50 ms idle pause comes first: both runtimes leave worker threads spinning after a run, and a
    batch started at once would share the cores with the other runtime's spinners."""
    time.sleep(0.05)
    for _ in range(warmup):
        run()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def weft_runner(weft, onnx, x, threads):
    session = weft.Session(threads=threads, use_env_path=False)
    (name, _, _), = weft.import_onnx(onnx).inputs
    model = session.compile(weft.import_onnx(onnx, {name: list(x.shape)}))
    (_, dtype, shape), = model.outputs
    y = np.full(shape, np.nan, dtype)  # poisoned: an unwritten element shows in the diff
    return (lambda: model.run_into([x], [y])), y, model.memory()


def ort_session(onnx, threads):
    """ONNX Runtime as the benchmarks run it: CPU, `threads` intra-op threads, sequential, every
    graph optimization."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(onnx, so, providers=["CPUExecutionProvider"])


def ort_runner(onnx, x, threads, out_shape):
    s = ort_session(onnx, threads)
    out = s.get_outputs()[0]
    y = np.full(out_shape, np.nan, np.float32)
    binding = s.io_binding()
    binding.bind_ortvalue_input(s.get_inputs()[0].name, ort.OrtValue.ortvalue_from_numpy(x))
    binding.bind_ortvalue_output(out.name, ort.OrtValue.ortvalue_from_numpy(y))
    return (lambda: s.run_with_iobinding(binding)), y


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="a Weft build directory; its python/ goes first on sys.path")
    ap.add_argument("--models", default=os.path.join(HERE, "models", "out"))
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (one Weft batch, one ORT batch)")
    ap.add_argument("--iters", type=int, default=20, help="timed runs per batch")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs at the start of each batch")
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    weft = import_weft(a.build)
    if not all(os.path.exists(os.path.join(a.models, m + ".onnx")) for m in MODELS):
        p = subprocess.run([sys.executable, os.path.join(HERE, "models", "make_models.py"), a.models],
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"make_models.py failed:\n{p.stderr}")
    print(f"weft {weft.__version__} ({os.path.dirname(weft.__file__)}), onnxruntime {ort.__version__}; "
          f"{a.rounds} interleaved rounds of {a.iters} runs per runtime\n")
    print("| model | threads | Weft median ms | ORT median ms | Weft/ORT | max rel diff vs ORT | arena bytes | lower bound |")
    print("|---|---|---|---|---|---|---|---|")
    for model in MODELS:
        onnx = os.path.join(a.models, model + ".onnx")
        x = np.ascontiguousarray(np.load(os.path.join(a.models, model + ".input.npy")), np.float32)
        for threads in (int(t) for t in a.threads.split(",")):
            run_w, yw, mem = weft_runner(weft, onnx, x, threads)
            run_o, yo = ort_runner(onnx, x, threads, yw.shape)
            w_times, o_times = [], []
            for _ in range(a.rounds):
                w_times.append(batch(run_w, a.iters, a.warmup))
                o_times.append(batch(run_o, a.iters, a.warmup))
            wm, om = statistics.median(w_times), statistics.median(o_times)
            ref = yo.astype(np.float64)
            rel = float(np.max(np.abs(yw - ref)) / max(np.max(np.abs(ref)), 1e-30))
            print(f"| {model} | {threads} | {wm:.3f} | {om:.3f} | {wm / om:.2f} | {rel:.2e} | "
                  f"{mem['arena_bytes']} | {mem['lower_bound_bytes']} |", flush=True)


if __name__ == "__main__":
    main()
