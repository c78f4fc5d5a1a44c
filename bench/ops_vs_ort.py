#!/usr/bin/env python3
"""Weft vs ONNX Runtime on single operators at the sizes real models give them, in one process,
interleaved: Attention (opset 23: encoder, causal prefill with grouped query heads, one-token
decode over a key/value cache), DeformConv (detection heads' deformable 3x3 layers) and Col2Im.

    .venv/bin/python bench/ops_vs_ort.py [--build build] [--rounds 5] [--iters 10] [--threads 1,2] [--only NAME,...]

Each case is a one-node ONNX model with random inputs (fixed seed). Both runtimes run zero-copy
into preallocated outputs (Weft's run_into, ONNX Runtime's IOBinding; CPU execution provider,
intra_op_num_threads = N, inter_op_num_threads = 1, all graph optimizations). Each round times a
batch of Weft runs, then a batch of ONNX Runtime runs (bench/compare_ort.py's `batch`: a pause,
warm-up runs, the median); the figure is the median of the batch medians. Also prints the largest
difference between the two runtimes' outputs, relative to the largest magnitude of ONNX Runtime's.
"""
import argparse
import os
import statistics
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_ort import batch, import_weft, ort_session  # noqa: E402

F = TensorProto.FLOAT


def attention(name, b, hq, hkv, s, past, h, causal, mask=False):
    """Attention on 4-D Q/K/V [B, H, S, h]; with `past`, a cache of that many positions."""
    rng = np.random.default_rng(1)
    ins = {"Q": rng.standard_normal((b, hq, s, h)), "K": rng.standard_normal((b, hkv, s, h)), "V": rng.standard_normal((b, hkv, s, h))}
    names = ["Q", "K", "V"]
    if mask:
        ins["mask"] = np.where(rng.random((b, 1, s, s + past)) < 0.1, -1e4, 0.0)
        names.append("mask")
    else:
        names.append("")
    outs = ["Y"]
    if past:
        ins["past_key"] = rng.standard_normal((b, hkv, past, h))
        ins["past_value"] = rng.standard_normal((b, hkv, past, h))
        names += ["past_key", "past_value"]
        outs += ["present_key", "present_value"]
    node = helper.make_node("Attention", names, outs, is_causal=int(causal))
    return name, node, {k: v.astype(np.float32) for k, v in ins.items()}, 23


def deform_conv(name, n, c, m, hw, og, with_mask):
    rng = np.random.default_rng(2)
    ins = {"X": rng.standard_normal((n, c, hw, hw)), "W": rng.standard_normal((m, c, 3, 3)) * 0.05,
           "offset": rng.standard_normal((n, og * 18, hw, hw)) * 2, "B": rng.standard_normal(m)}
    names = ["X", "W", "offset", "B"]
    if with_mask:
        ins["mask"] = rng.random((n, og * 9, hw, hw))
        names.append("mask")
    node = helper.make_node("DeformConv", names, ["Y"], pads=[1, 1, 1, 1], offset_group=og)
    return name, node, {k: v.astype(np.float32) for k, v in ins.items()}, 22


def col2im(name, n, c, image, block):
    rng = np.random.default_rng(3)
    count = (image - block + 1) ** 2
    ins = {"x": rng.standard_normal((n, c * block * block, count)).astype(np.float32)}
    inits = [onnx.numpy_helper.from_array(np.array([image, image], np.int64), "image"),
             onnx.numpy_helper.from_array(np.array([block, block], np.int64), "block")]
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    return name, node, ins, 18, inits


CASES = [
    attention("attention_encoder_b8_s128_h12", 8, 12, 12, 128, 0, 64, False, mask=True),
    attention("attention_causal_prefill_gqa_s512", 1, 32, 8, 512, 0, 64, True),
    attention("attention_decode_gqa_past1023", 1, 32, 8, 1, 1023, 128, True),
    attention("attention_decode_b4_past255", 4, 16, 16, 1, 255, 64, True),
    deform_conv("deform_conv_256ch_32x32_mask", 1, 256, 256, 32, 1, True),
    deform_conv("deform_conv_64ch_64x64_og4", 1, 64, 64, 64, 4, False),
    col2im("col2im_64ch_64x64_k3", 1, 64, 64, 3),
]


def save(case, path):
    name, node, ins, opset = case[:4]
    inits = case[4] if len(case) > 4 else []
    g = helper.make_graph([node], name, [helper.make_tensor_value_info(k, F, list(v.shape)) for k, v in ins.items()],
                          [helper.make_tensor_value_info(o, F, None) for o in node.output], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10), path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="a Weft build directory; its python/ goes first on sys.path")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (one Weft batch, one ONNX Runtime batch)")
    ap.add_argument("--iters", type=int, default=10, help="timed runs per batch")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs at the start of each batch")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", help="comma-separated case names")
    a = ap.parse_args()
    weft = import_weft(a.build)
    only = set(a.only.split(",")) if a.only else None
    work = tempfile.mkdtemp()
    print(f"weft {weft.__version__}, onnxruntime {ort.__version__}; {a.rounds} interleaved rounds of {a.iters} runs per runtime\n")
    print("| case | threads | Weft median ms | ORT median ms | Weft/ORT | max rel diff vs ORT |")
    print("|---|---|---|---|---|---|")
    for case in CASES:
        name, _, ins, _ = case[:4]
        if only and name not in only:
            continue
        path = os.path.join(work, name + ".onnx")
        save(case, path)
        feeds = [ins[k] for k in ins]
        for threads in (int(t) for t in a.threads.split(",")):
            model = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path))
            w_out = [np.full(shape, np.nan, dtype) for _, dtype, shape in model.outputs]
            s = ort_session(path, threads)
            bind = s.io_binding()
            for k, v in ins.items():
                bind.bind_ortvalue_input(k, ort.OrtValue.ortvalue_from_numpy(v))
            o_out = [np.full(y.shape, np.nan, np.float32) for y in w_out]
            for o, y in zip(s.get_outputs(), o_out):
                bind.bind_ortvalue_output(o.name, ort.OrtValue.ortvalue_from_numpy(y))

            def run_w():
                model.run_into(feeds, w_out)

            def run_o():
                s.run_with_iobinding(bind)

            wt, ot = [], []
            for _ in range(a.rounds):
                wt.append(batch(run_w, a.iters, a.warmup))
                ot.append(batch(run_o, a.iters, a.warmup))
            wm, om = statistics.median(wt), statistics.median(ot)
            rel = max(float(np.max(np.abs(w.astype(np.float64) - o)) / max(float(np.max(np.abs(o))), 1e-30)) for w, o in zip(w_out, o_out))
            print(f"| {name} | {threads} | {wm:.3f} | {om:.3f} | {wm / om:.2f} | {rel:.1e} |", flush=True)


if __name__ == "__main__":
    main()
