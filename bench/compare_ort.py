#!/usr/bin/python3
"""Weft vs ONNX Runtime on the same ONNX files, same machine, 1 and 2 threads, interleaved runs.

    /usr/bin/python3 bench/compare_ort.py [--build build] [--rounds 5] [--iters 20]

Needs the Weft build (build/bench/weft_bench_models), node with onnxruntime-node installed in
bench/ort (npm install --ignore-scripts onnxruntime-node@1.30.0), and Debian's python3-torch and
python3-torchvision to generate the models. Prints the Weft/ORT median-latency ratio per model
and thread count, the largest relative difference between the two runtimes' outputs, and the
planned arena next to its lower bound.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["resnet18", "mobilenet_v2", "transformer", "mlp"]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return dict(kv.split("=") for kv in p.stdout.split())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--models", default=os.path.join(HERE, "models", "out"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    if not all(os.path.exists(os.path.join(a.models, m + ".onnx")) for m in MODELS):
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "models", "make_models.py"), a.models], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    weft = os.path.join(a.build, "bench", "weft_bench_models")
    ort = ["node", os.path.join(HERE, "ort", "ort_bench.js")]
    print("| model | threads | Weft median ms | ORT median ms | Weft/ORT | max rel diff vs ORT | arena bytes | lower bound |")
    print("|---|---|---|---|---|---|---|---|")
    for model in MODELS:
        onnx = os.path.join(a.models, model + ".onnx")
        x = os.path.join(a.models, model + ".input.npy")
        for threads in a.threads.split(","):
            w_times, o_times = [], []
            wout, oout = f"/tmp/weft_{model}.npy", f"/tmp/ort_{model}.npy"
            for _ in range(a.rounds):  # interleaved: one Weft batch, one ORT batch, repeat
                w = run([weft, onnx, x, threads, str(a.iters), wout])
                o = run(ort + [onnx, x, threads, str(a.iters), oout])
                w_times.append(float(w["median_ms"]))
                o_times.append(float(o["median_ms"]))
            wm, om = statistics.median(w_times), statistics.median(o_times)
            yw, yo = np.load(wout).astype(np.float64), np.load(oout).astype(np.float64)
            rel = float(np.max(np.abs(yw - yo)) / max(np.max(np.abs(yo)), 1e-30))
            print(f"| {model} | {threads} | {wm:.3f} | {om:.3f} | {wm / om:.2f} | {rel:.2e} | {w['arena_bytes']} | {w['lower_bound_bytes']} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
