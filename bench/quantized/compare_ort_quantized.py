#!/usr/bin/env python3
"""Models quantized by ONNX Runtime's own tooling, Weft against ONNX Runtime, in one process.

    .venv/bin/python bench/quantized/compare_ort_quantized.py [--models resnet18,mobilenet_v2,bert_base]
                                                              [--formats qdq,qoperator,dynamic]
                                                              [--rounds 7] [--iters 10] [--threads 1]
                                                              [--out DIR] [--markdown FILE]

Users who quantize with onnxruntime.quantization get one of two kinds of file:
  - static (quantize_static, calibrated), in its default QDQ format: QuantizeLinear/DequantizeLinear
    pairs around float operators, which ONNX Runtime fuses into integer kernels (QLinearConv, ...);
    uint8 activations and int8 weights, per-channel weight scales; used here for the CNNs. With
    `--formats qoperator` the CNNs are quantized in its QOperator format instead (or as well):
    QLinearConv, and contrib operators of the com.microsoft domain (QLinearAdd,
    QLinearGlobalAveragePool, QGemm, ...) in place of the pairs.
  - dynamic (quantize_dynamic): DynamicQuantizeLinear + MatMulInteger for every MatMul/Gemm with a
    constant weight, ConvInteger for convolutions, DynamicQuantizeLSTM for LSTMs, the rest float;
    used here for the transformers and recurrent models. With `dynamic` among --formats every listed
    model is quantized in every listed format.
Each model comes from the zoo (bench/zoo/make_zoo.py, full size, static shapes, random seeded
weights), is quantized once into --out (default bench/quantized/out, ignored by git), then timed:
interleaved batches of `--iters` runs of each runtime, a 50 ms pause before each batch, the figure
the median of the batch medians. Inputs are seeded random (the zoo's value ranges). The outputs are
compared too: ONNX Runtime's kernels round some intermediate steps differently (its QLinearConv
requantizes in fixed point on some CPUs), so the largest difference is reported, not asserted;
python/tests/test_onnx_quantized.py checks Weft's arithmetic bit for bit against NumPy.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STATIC = {"resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "squeezenet1_1", "googlenet"}


def zoo_file(name):
    out = os.path.join(ROOT, "bench", "zoo", "out")
    path = os.path.join(out, f"{name}.full.static.onnx")
    if not os.path.exists(path):
        print(f"exporting {name} from the zoo ...", flush=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "zoo", "make_zoo.py"), "--only", name, "--size", "full",
                        "--variant", "static"], check=True)
    with open(os.path.join(out, "manifest.json")) as f:
        man = json.load(f)
    entry = next(e for e in man["entries"] if e.get("file") == os.path.basename(path))
    return path, entry


def feeds_for(entry, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in entry["inputs"]:
        dt = np.dtype(inp["dtype"])
        shape = inp["shape"]
        if dt.kind in "iu":  # token ids, masks: [low, high)
            feeds[inp["name"]] = rng.integers(int(inp["low"]), int(inp["high"]), shape).astype(dt)
        else:
            feeds[inp["name"]] = rng.standard_normal(shape).astype(dt)
    return feeds


def kind(name, fmt):
    return {"qdq": "static QDQ", "qoperator": "static QOperator", "dynamic": "dynamic"}[fmt]


def quantize(name, src, entry, out_dir, fmt):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

    tag = {"qdq": "static", "qoperator": "qoperator", "dynamic": "dynamic"}[fmt]
    dst = os.path.join(out_dir, f"{name}.{tag}.onnx")
    if os.path.exists(dst):
        return dst
    if fmt != "dynamic":
        class Reader(CalibrationDataReader):
            def __init__(self):
                self.i = 0

            def get_next(self):
                self.i += 1
                return feeds_for(entry, 100 + self.i) if self.i <= 8 else None

        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, per_channel=True)
    else:
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
    return dst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="resnet18,mobilenet_v2,bert_base")
    ap.add_argument("--formats", default="qdq", help="qdq, qoperator or both (comma-separated): the CNNs' static format(s); "
                    "with dynamic among them, every listed model in every listed format")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--markdown")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, ".gitignore"), "w") as f:
        f.write("*\n")
    import onnx
    import onnxruntime as ort
    import weft

    formats = args.formats.split(",")
    for f in formats:
        if f not in ("qdq", "qoperator", "dynamic"):
            ap.error(f"unknown format {f!r} (qdq, qoperator, dynamic)")
    if "dynamic" in formats:
        jobs = [(name, fmt) for name in args.models.split(",") for fmt in formats]
    else:  # the CNNs statically, the others dynamically
        jobs = [(name, fmt) for name in args.models.split(",") for fmt in (formats if name in STATIC else ["dynamic"])]
    rows = []
    for name, fmt in jobs:
        src, entry = zoo_file(name)
        path = quantize(name, src, entry, args.out, fmt)
        kinds = sorted({n.op_type for n in onnx.load(path).graph.node
                        if any(w in n.op_type.lower() for w in ("integer", "quantize", "qlinear", "qgemm"))})
        feeds = feeds_for(entry, 7)
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        model = weft.Session(threads=args.threads, use_env_path=False).compile(weft.import_onnx(path))
        names = [i.name for i in sess.get_inputs()]
        args_w = [feeds[n] for n in names]
        want = sess.run(None, feeds)
        got = model.run(args_w)
        diff = max(float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max()) for g, w in zip(got, want))
        scale = max(float(np.abs(w.astype(np.float64)).max()) for w in want)
        times = {"weft": [], "ort": []}
        for _ in range(args.rounds):
            for who, fn in (("weft", lambda: model.run(args_w)), ("ort", lambda: sess.run(None, feeds))):
                time.sleep(0.05)
                fn()
                batch = []
                for _ in range(args.iters):
                    t = time.perf_counter()
                    fn()
                    batch.append(time.perf_counter() - t)
                times[who].append(statistics.median(batch))
        w_ms, o_ms = statistics.median(times["weft"]) * 1e3, statistics.median(times["ort"]) * 1e3
        rows.append((name, kind(name, fmt), ", ".join(kinds), w_ms, o_ms, w_ms / o_ms, diff, scale))
        print(f"{name} ({kind(name, fmt)}): weft {w_ms:.3f} ms, onnxruntime {o_ms:.3f} ms, ratio {w_ms / o_ms:.2f}, max diff {diff:.4g} (outputs up to {scale:.4g})",
              flush=True)
    lines = [f"Weft vs ONNX Runtime {ort.__version__} on ONNX Runtime-quantized models, {args.threads} thread(s); "
             f"{args.rounds} interleaved rounds of {args.iters} runs; median of batch medians.", "",
             "| model | quantization | quantization ops | Weft ms | ORT ms | Weft/ORT | max abs diff (max abs output) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.3f} | {r[4]:.3f} | {r[5]:.2f} | {r[6]:.3g} ({r[7]:.3g}) |")
    print("\n" + "\n".join(lines))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
