#!/usr/bin/env python3
"""A decoder language model as ONNX Runtime's model builder writes one for CPU, in Weft and in
ONNX Runtime, in one process.

    .venv/bin/python bench/quantized/decoder_vs_ort.py [--layers 4] [--hidden 1024] [--heads 16]
                                                       [--kv-heads 4] [--ffn 2816] [--past 16,256,1024]
                                                       [--prompt 32] [--threads 1,2] [--rounds 5]
                                                       [--iters 10] [--markdown FILE]

The model (python/tests/test_onnx_gqa.py's `decoder`, random weights): token embedding, per layer
SimplifiedLayerNormalization / SkipSimplifiedLayerNormalization, 4-bit MatMulNBits projections
(packed QKV, block 32), GroupQueryAttention with rotary embeddings, a SiLU-gated MLP; key/value
caches in and out. Timed: one prompt of --prompt tokens (no past), and one decoding step after a
past of each --past length. Interleaved batches of --iters runs after a 50 ms pause (both
runtimes leave worker threads spinning after a run), the median of the batch medians; the
outputs are compared with ONNX Runtime's.
"""
import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleave import interleaved_ms  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=2816)
    ap.add_argument("--past", default="16,256,1024", help="past lengths of the decoding steps (default: %(default)s)")
    ap.add_argument("--prompt", type=int, default=32, help="prompt tokens (0: no prompt row)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="Weft build directory (default: %(default)s)")
    ap.add_argument("--markdown", help="append the table to this file")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
    import onnxruntime as ort
    import weft
    from test_onnx_gqa import decoder

    pasts = [int(p) for p in args.past.split(",") if p]
    rng = np.random.default_rng(0)
    lines = ["| run | threads | Weft ms | ORT ms | Weft/ORT | max abs diff |", "|---|---|---|---|---|---|"]
    print(lines[0], flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path, names, layers, kvh, hd = decoder(Path(tmp), rng, layers=args.layers, hidden=args.hidden, nh=args.heads, kvh=args.kv_heads,
                                               ffn=args.ffn, vocab=1000, positions=max(pasts + [args.prompt]) + 2)
        cases = []
        if args.prompt:
            cases.append((f"prompt of {args.prompt}", rng.integers(0, 1000, (1, args.prompt)), 0))
        cases += [(f"step after {p}", np.array([[7]]), p) for p in pasts]
        for threads in [int(t) for t in args.threads.split(",")]:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            o = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            w = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path))
            for label, ids, p in cases:
                caches = [rng.standard_normal((1, kvh, p, hd)).astype(np.float32) for _ in range(2 * layers)]
                mask = np.ones((1, p + ids.shape[1]), np.int64)
                fo = dict({"input_ids": ids, "attention_mask": mask}, **dict(zip(names[2:], caches)))
                fw = [ids, mask] + caches
                runs = {"weft": lambda: w.run(fw), "ort": lambda: o.run(None, fo)}
                outs = {k: f() for k, f in runs.items()}
                diff = max(float(np.max(np.abs(a - b))) for a, b in zip(outs["weft"], outs["ort"]))
                ms = interleaved_ms(runs, args.rounds, args.iters)
                line = f"| {label} | {threads} | {ms['weft']:.3f} | {ms['ort']:.3f} | {ms['weft'] / ms['ort']:.2f} | {diff:.1e} |"
                lines.append(line)
                print(line, flush=True)
            del o, w
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
