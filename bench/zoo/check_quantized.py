#!/usr/bin/env python3
"""The model zoo quantized by ONNX Runtime's own tool, three ways, against ONNX Runtime.

    .venv/bin/python bench/zoo/check_quantized.py [--zoo DIR] [--out DIR] [--only NAME[,NAME]]
                                                  [--variants dynamic,qop,qdq] [--build DIR] [--json FILE]

Each small static zoo file (bench/zoo/make_zoo.py --size small --variant static; --zoo, default
bench/zoo/out) is quantized as a user would with onnxruntime.quantization:
    dynamic  quantize_dynamic(src, dst) with its defaults (MatMulInteger / DynamicQuantizeLinear,
             ConvInteger, DynamicQuantizeLSTM)
    qop      quantize_static in the QOperator format (QLinearConv, QLinearMatMul, QLinearSoftmax, ...),
             per-channel int8 weights, uint8 activations, calibrated on 4 seeded random inputs
    qdq      quantize_static in the QDQ format, same settings
into --out (default bench/zoo/out/quantized; files are reused while newer than their source). Every
file then runs in ONNX Runtime (CPU, 1 thread) and in Weft (1 thread) on one seeded random input,
beside the unquantized model in ONNX Runtime.

A file passes when Weft runs it and either its outputs are within 1e-3 of ONNX Runtime's (relative
to the largest output) or, where they are not, Weft's outputs are as close to the float model's as
ONNX Runtime's are (at most 1.5x ONNX Runtime's distance, plus 1e-3 of the largest output): both
quantize the same float values, and values that fall on a rounding boundary after slightly
different float arithmetic go one step either way, which later layers amplify. Integer outputs must
be equal. Files listed in KNOWN below must fail with the message given (and are reported as
known); one that passes is reported, so that the list stays true. Exit status 1 when any other file
fails.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# file stem -> the text its failure must contain
KNOWN = {
    # T5's relative-position buckets take the logarithm of zero: calibration gives QLinearMul an
    # infinite scale, which the per-tensor QLinear ops refuse.
    "t5_decoder.qop": "A_scale is inf",
}
# ONNX Runtime's quantizer cannot write these (its own error, not Weft's).
QUANTIZER_FAILS = {"distilbert.qop"}


def feeds_for(entry, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in entry["inputs"]:
        dt = np.dtype(inp["dtype"])
        if dt.kind in "iu":
            feeds[inp["name"]] = rng.integers(int(inp["low"]), int(inp["high"]), inp["shape"]).astype(dt)
        else:
            feeds[inp["name"]] = rng.standard_normal(inp["shape"]).astype(dt)
    return feeds


def quantize(src, dst, variant, entry):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

    if variant == "dynamic":
        quantize_dynamic(src, dst)
        return

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.i = 0

        def get_next(self):
            self.i += 1
            return feeds_for(entry, 100 + self.i) if self.i <= 4 else None

    quantize_static(src, dst, Reader(), quant_format=QuantFormat.QOperator if variant == "qop" else QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def check(path, float_path, entry, weft, ort):
    """(verdict, detail): verdict 'ok', 'close' (differs from ONNX Runtime, as near the float model) or
    'fail'."""
    feeds = feeds_for(entry, 7)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    want = sess.run(None, feeds)
    ref = ort.InferenceSession(float_path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    try:
        got = weft.Session(threads=1, use_env_path=False).compile(weft.import_onnx(path)).run([feeds[n] for n in names])
    except Exception as e:  # noqa: BLE001 - reported per file
        return "fail", str(e).strip().splitlines()[0][:300]
    verdict, notes = "ok", []
    for k, (g, w, r) in enumerate(zip(got, want, ref)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            return "fail", f"output {k}: {g.dtype}{list(g.shape)} where ONNX Runtime gives {w.dtype}{list(w.shape)}"
        if w.dtype.kind in "iub":
            if not np.array_equal(g, w):
                return "fail", f"output {k}: integer values differ"
            continue
        g64, w64, r64 = (np.asarray(v, np.float64) for v in (g, w, r))
        if np.isnan(g64).sum() != np.isnan(w64).sum():
            return "fail", f"output {k}: {int(np.isnan(g64).sum())} NaN where ONNX Runtime has {int(np.isnan(w64).sum())}"
        top = max(float(np.nanmax(np.abs(w64))) if w64.size else 0.0, 1e-12)
        d = float(np.nanmax(np.abs(g64 - w64))) if w64.size else 0.0
        if d <= 1e-3 * top:
            continue
        ew = float(np.nanmax(np.abs(g64 - r64)))
        eo = float(np.nanmax(np.abs(w64 - r64)))
        notes.append(f"output {k}: {d:.3g} from ONNX Runtime (largest {top:.3g}); from the float model Weft {ew:.3g}, ONNX Runtime {eo:.3g}")
        if ew > 1.5 * eo + 1e-3 * top:
            return "fail", "; ".join(notes)
        verdict = "close"
    return verdict, "; ".join(notes)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", default=os.path.join(HERE, "out"), help="directory of the exported zoo (default: %(default)s)")
    ap.add_argument("--out", help="directory for the quantized files (default: ZOO/quantized)")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--variants", default="dynamic,qop,qdq")
    ap.add_argument("--build", help="Weft build directory whose python/ to use (default: the installed weft)")
    ap.add_argument("--json", help="write the per-file results here")
    args = ap.parse_args()
    if args.build:
        sys.path.insert(0, os.path.join(os.path.abspath(args.build), "python"))
    import onnxruntime as ort

    import weft

    out = args.out or os.path.join(args.zoo, "quantized")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(args.zoo, "manifest.json")) as f:
        entries = [e for e in json.load(f)["entries"] if e.get("size") == "small" and e.get("variant") == "static"]
    only = set(args.only.split(",")) if args.only else None
    entries = [e for e in entries if not only or e["model"] in only]
    if not entries:
        sys.exit(f"no small static zoo files in {args.zoo} (bench/zoo/make_zoo.py --size small --variant static)")
    variants = args.variants.split(",")
    results, counts, unexpected = [], {}, []
    start = time.time()
    for i, e in enumerate(entries):
        src = os.path.join(args.zoo, e["file"])
        for v in variants:
            stem = f"{e['model']}.{v}"
            dst = os.path.join(out, stem + ".onnx")
            if stem in QUANTIZER_FAILS:
                verdict, detail = "quantizer", "ONNX Runtime's quantizer cannot write it"
            else:
                if not (os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(src)):
                    quantize(src, dst, v, e)
                verdict, detail = check(dst, src, e, weft, ort)
            if stem in KNOWN:
                if verdict == "fail" and KNOWN[stem] in detail:
                    verdict = "known"
                else:
                    unexpected.append(f"{stem}: listed as failing with '{KNOWN[stem]}', got {verdict} {detail}")
            elif verdict == "fail":
                unexpected.append(f"{stem}: {detail}")
            counts[verdict] = counts.get(verdict, 0) + 1
            results.append({"file": stem, "verdict": verdict, "detail": detail})
            print(f"[{i + 1}/{len(entries)}] {stem:45s} {verdict:9s} {detail}", flush=True)
    print(f"\n{len(results)} files in {time.time() - start:.0f} s: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) +
          "  (ok: within 1e-3 of ONNX Runtime; close: as near the float model as ONNX Runtime; known: listed failure; "
          "quantizer: ONNX Runtime's tool fails)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if unexpected:
        print("\nunexpected:\n  " + "\n  ".join(unexpected))
        sys.exit(1)


if __name__ == "__main__":
    main()
