#!/usr/bin/env python3
"""Block-quantized weights (ONNX Runtime's MatMulNBits) in Weft and in ONNX Runtime, in one process.

    .venv/bin/python bench/quantized/matmul_nbits_vs_ort.py [--hidden 4096] [--ffn 11008] [--bits 4]
                                                            [--block 32,128] [--rows 1,4,32,128]
                                                            [--threads 1,2] [--rounds 5] [--iters 10]
                                                            [--markdown FILE]

The model is a language model's feed-forward stack as weight-only quantization leaves it: X [rows,
hidden] -> MatMulNBits (hidden -> hidden) -> Relu -> MatMulNBits (hidden -> ffn) -> Relu ->
MatMulNBits (ffn -> hidden), random codes, scales and packed zero points in the layout
onnxruntime.quantization's MatMulNBitsQuantizer writes (asymmetric, no accuracy_level). One row
is a decoding step; more rows are a prompt. Three runs of it, interleaved in batches of --iters
after a 50 ms pause, the figure the median of the batch medians:
  - Weft on the MatMulNBits file (the packed codes);
  - ONNX Runtime on the same file (its CPU MatMulNBits kernel, all graph optimizations);
  - Weft on the same weights dequantized to float32 MatMul, what a user without a block-quantized
    kernel runs (8x the weight memory for 4-bit codes).
Outputs are compared with ONNX Runtime's and the largest relative difference printed.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleave import interleaved_ms  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def pack(codes, bits):
    """Codes (ints < 2^bits) along the last axis packed low bit first into bytes (bits divides 8)."""
    per = 8 // bits
    c = codes.reshape(codes.shape[:-1] + (codes.shape[-1] // per, per)).astype(np.uint8)
    out = np.zeros(c.shape[:-1], np.uint8)
    for p in range(per):
        out |= c[..., p] << (p * bits)
    return out


def layer(rng, name, k, n, bits, block):
    """Initializers of one MatMulNBits layer and its float32 [k, n] weights."""
    from onnx import numpy_helper
    blocks = (k + block - 1) // block
    codes = rng.integers(0, 2 ** bits, (n, blocks, block))
    zp = rng.integers(0, 2 ** bits, (n, blocks))
    scale = (rng.uniform(0.5, 1.5, (n, blocks)) / np.sqrt(k) / 2 ** (bits - 1)).astype(np.float32)
    zp_packed = pack(np.pad(zp, ((0, 0), (0, -blocks % (8 // bits)))), bits)
    w = ((codes - zp[:, :, None]) * scale[:, :, None]).reshape(n, blocks * block)[:, :k].T.astype(np.float32)
    inits = [numpy_helper.from_array(pack(codes, bits), f"{name}_B"), numpy_helper.from_array(scale.reshape(-1), f"{name}_s"),
             numpy_helper.from_array(zp_packed.reshape(-1), f"{name}_z")]
    return inits, w


def build(path_q, path_f, hidden, ffn, bits, block, seed=0):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    dims = [(hidden, hidden), (hidden, ffn), (ffn, hidden)]
    qn, fn, qi, fi = [], [], [], []
    x = "X"
    for i, (k, n) in enumerate(dims):
        inits, w = layer(rng, f"l{i}", k, n, bits, block)
        qi += inits
        fi.append(numpy_helper.from_array(w, f"l{i}_W"))
        y = "Y" if i == len(dims) - 1 else f"h{i}"
        mm = f"mm{i}" if y != "Y" else "Y"
        qn.append(helper.make_node("MatMulNBits", [x, f"l{i}_B", f"l{i}_s", f"l{i}_z"], [mm], domain="com.microsoft", K=k, N=n,
                                   bits=bits, block_size=block))
        fn.append(helper.make_node("MatMul", [x, f"l{i}_W"], [mm]))
        if y != "Y":
            qn.append(helper.make_node("Relu", [mm], [y]))
            fn.append(helper.make_node("Relu", [mm], [y]))
        x = y
    io = ([helper.make_tensor_value_info("X", TensorProto.FLOAT, ["rows", hidden])], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(helper.make_graph(qn, "q", *io, qi), opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                                ir_version=8), path_q)
    onnx.save(helper.make_model(helper.make_graph(fn, "f", *io, fi), opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path_f,
              save_as_external_data=True, location=os.path.basename(path_f) + ".data")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=11008)
    ap.add_argument("--bits", type=int, default=4, choices=(2, 4, 8))
    ap.add_argument("--block", default="32,128", help="block sizes (default: %(default)s)")
    ap.add_argument("--rows", default="1,4,32,128", help="rows of X (default: %(default)s)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="Weft build directory (default: %(default)s)")
    ap.add_argument("--markdown", help="append the table to this file")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import onnxruntime as ort
    import weft

    lines = ["| block | rows | threads | Weft ms | ORT ms | Weft/ORT | Weft float32 MatMul ms | packed/float32 | max rel diff |",
             "|---|---|---|---|---|---|---|---|---|"]
    print(lines[0], flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for block in [int(b) for b in args.block.split(",")]:
            pq, pf = os.path.join(tmp, f"q{block}.onnx"), os.path.join(tmp, f"f{block}.onnx")
            print(f"building {args.hidden}/{args.ffn} {args.bits}-bit block {block} ...", file=sys.stderr, flush=True)
            build(pq, pf, args.hidden, args.ffn, args.bits, block)
            for threads in [int(t) for t in args.threads.split(",")]:
                so = ort.SessionOptions()
                so.intra_op_num_threads = threads
                so.inter_op_num_threads = 1
                o = ort.InferenceSession(pq, so, providers=["CPUExecutionProvider"])
                wq = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(pq))
                wf = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(pf))
                for rows in [int(r) for r in args.rows.split(",")]:
                    x = np.random.default_rng(rows).standard_normal((rows, args.hidden)).astype(np.float32)
                    runs = {"weft": lambda: wq.run([x])[0], "ort": lambda: o.run(None, {"X": x})[0], "float": lambda: wf.run([x])[0]}
                    outs = {k: f() for k, f in runs.items()}
                    diff = float(np.max(np.abs(outs["weft"] - outs["ort"])) / max(1e-30, float(np.max(np.abs(outs["ort"])))))
                    ms = interleaved_ms(runs, args.rounds, args.iters)
                    line = (f"| {block} | {rows} | {threads} | {ms['weft']:.3f} | {ms['ort']:.3f} | {ms['weft'] / ms['ort']:.2f} | {ms['float']:.3f} | "
                            f"{ms['weft'] / ms['float']:.2f} | {diff:.1e} |")
                    lines.append(line)
                    print(line, flush=True)
                del o, wq, wf
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
