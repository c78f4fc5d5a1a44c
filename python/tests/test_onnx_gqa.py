"""ONNX Runtime's GroupQueryAttention (com.microsoft; what its model builder writes for decoder
language models, with MatMulNBits projections): hand-built nodes over prompts and decoding steps,
rotary embeddings (halves and interleaved), packed QKV, soft-capping, local windows, batches whose
sequences differ in length, and a small decoder run step by step with its caches fed back,
each against ONNX Runtime itself."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MS = "com.microsoft"


def rope_caches(hd, positions=64):
    ang = np.arange(positions)[:, None] * (1.0 / 10000 ** (np.arange(hd // 2) * 2 / hd))[None]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def gqa_model(nh=4, kvh=2, hd=16, rotary=False, interleaved=False, packed=False, past=True, **attrs):
    ins = ["query", "" if packed else "key", "" if packed else "value", "past_key" if past else "", "past_value" if past else "",
           "seqlens_k", "total_sequence_length"]
    vi = [helper.make_tensor_value_info("query", TensorProto.FLOAT, ["B", "S", (nh + 2 * kvh) * hd if packed else nh * hd])]
    if not packed:
        vi += [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["B", "S", kvh * hd]) for n in ("key", "value")]
    if past:
        vi += [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["B", kvh, "P", hd]) for n in ("past_key", "past_value")]
    vi += [helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["B"]),
           helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, [])]
    inits = []
    if rotary:
        ins += ["cos_cache", "sin_cache"]
        cos, sin = rope_caches(hd)
        inits = [numpy_helper.from_array(cos, "cos_cache"), numpy_helper.from_array(sin, "sin_cache")]
    while ins[-1] == "":
        ins.pop()
    node = helper.make_node("GroupQueryAttention", ins, ["out", "present_key", "present_value"], domain=MS, num_heads=nh, kv_num_heads=kvh,
                            do_rotary=int(rotary), rotary_interleaved=int(interleaved), **attrs)
    g = helper.make_graph([node], "g", vi, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("out", "present_key", "present_value")],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=8)


def feeds_for(rng, m, B, S, P, seqlens, total, nh=4, kvh=2, hd=16, packed=False):
    f = {"query": rng.standard_normal((B, S, (nh + 2 * kvh) * hd if packed else nh * hd)).astype(np.float32)}
    if not packed:
        f["key"] = rng.standard_normal((B, S, kvh * hd)).astype(np.float32)
        f["value"] = rng.standard_normal((B, S, kvh * hd)).astype(np.float32)
    if P is not None:
        f["past_key"] = rng.standard_normal((B, kvh, P, hd)).astype(np.float32)
        f["past_value"] = rng.standard_normal((B, kvh, P, hd)).astype(np.float32)
    f["seqlens_k"] = np.array(seqlens, np.int32)
    f["total_sequence_length"] = np.array(total, np.int32)
    return [f[i.name] for i in m.graph.input], f


CASES = [  # model keywords, B, S, P (None: no past), seqlens_k, total_sequence_length
    ({}, 1, 5, None, [4], 5),                     # a prompt
    ({}, 2, 5, None, [4, 4], 5),
    ({}, 2, 5, None, [2, 4], 5),                  # a batch of prompts padded on the right
    ({"rotary": True}, 2, 5, None, [2, 4], 5),
    ({}, 1, 1, 6, [6], 7),                        # a decoding step
    ({}, 1, 3, 6, [8], 9),                        # a chunk of prompt after a past
    ({}, 2, 1, 8, [3, 5], 6),                     # a shared 8-long cache, sequences of 4 and 6
    ({"rotary": True}, 1, 5, None, [4], 5),
    ({"rotary": True}, 1, 1, 6, [6], 7),
    ({"rotary": True, "interleaved": True}, 1, 2, 4, [5], 6),
    ({"rotary": True, "interleaved": True}, 2, 1, 4, [4, 4], 5),
    ({"packed": True}, 1, 4, None, [3], 4),
    ({"packed": True, "rotary": True}, 1, 1, 3, [3], 4),
    ({"softcap": 2.0}, 1, 4, 2, [5], 6),
    ({"local_window_size": 3}, 1, 6, None, [5], 6),
    ({"local_window_size": 2}, 1, 1, 6, [6], 7),
    ({"scale": 0.1, "nh": 2, "kvh": 2}, 1, 3, 2, [4], 5),  # as many key/value heads as query heads
    ({"nh": 6, "kvh": 2, "hd": 32, "rotary": True}, 1, 4, 3, [6], 7),
]


def case_model(tmp_path, case, seed):
    """CASES[case] as a model file and random feeds: (path, positional args, named feeds)."""
    kw, B, S, P, seqlens, total = CASES[case]
    kw = dict(kw)
    dims = {k: kw.pop(k) for k in ("nh", "kvh", "hd") if k in kw}
    m = gqa_model(past=P is not None, **dims, **kw)
    path = str(tmp_path / "gqa.onnx")
    onnx.save(m, path)
    args, named = feeds_for(np.random.default_rng(seed), m, B, S, P, seqlens, total, packed=kw.get("packed", False), **dims)
    return path, args, named


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_onnxruntime(tmp_path, case):
    path, args, named = case_model(tmp_path, case, case)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, named)
    for threads in (1, 2):
        got = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path)).run(args)
        for name, g, w in zip(("output", "present_key", "present_value"), got, want):
            assert g.shape == w.shape, name
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{name} at {threads} threads")


def test_errors_name_what_is_wrong(tmp_path):
    rng = np.random.default_rng(0)
    for attrs, feeds, match in (({"smooth_softmax": 1}, (1, 1, 3, [3], 4), "smooth_softmax"),
                                ({"nh": 3, "kvh": 2}, (1, 1, 3, [3], 4), "multiple of kv_num_heads"),
                                ({}, (1, 1, 3, [6], 7), r"seqlens_k\[0\] = 6 does not fit 1 new positions after a past of 3"),
                                ({"rotary": True}, (1, 1, 70, [70], 71), "position 70 is outside the rotary caches' 64 positions")):
        attrs = dict(attrs)
        dims = {k: attrs.pop(k) for k in ("nh", "kvh") if k in attrs}
        m = gqa_model(**dims, **attrs)
        path = str(tmp_path / "bad.onnx")
        onnx.save(m, path)
        args, _ = feeds_for(rng, m, *feeds, **{"nh": dims.get("nh", 4), "kvh": dims.get("kvh", 2)})
        with pytest.raises(Exception, match=match):
            weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(args)


def decoder(tmp_path, rng, layers=2, hidden=64, nh=4, kvh=2, ffn=128, vocab=50, bits=4, block=32, positions=64):
    """A small decoder as ONNX Runtime's model builder lays one out for CPU: embedding, per layer
    SimplifiedLayerNormalization, MatMulNBits projections (packed QKV), GroupQueryAttention with
    rotary embeddings, SkipSimplifiedLayerNormalization, a SiLU-gated MLP; caches in and out."""
    hd = hidden // nh
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def nbits(x, name, k, n):
        blocks = k // block
        codes = rng.integers(0, 2 ** bits, (n, blocks, block))
        packed = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
        const(f"{name}_B", packed)
        const(f"{name}_s", (rng.uniform(0.5, 1.5, n * blocks) / np.sqrt(k) / 8).astype(np.float32))
        nodes.append(helper.make_node("MatMulNBits", [x, f"{name}_B", f"{name}_s"], [name], domain=MS, K=k, N=n, bits=bits, block_size=block))
        return name

    cos, sin = rope_caches(hd, positions)
    const("cos", cos), const("sin", sin)
    const("embed", rng.standard_normal((vocab, hidden)).astype(np.float32))
    nodes.append(helper.make_node("Gather", ["embed", "input_ids"], ["h0"]))
    # seqlens_k and total_sequence_length from the attention mask, as the builder writes them
    nodes += [helper.make_node("ReduceSum", ["attention_mask", "one_axis"], ["mask_sum"], keepdims=0),
              helper.make_node("Sub", ["mask_sum", "one64"], ["sl64"]), helper.make_node("Cast", ["sl64"], ["seqlens_k"], to=TensorProto.INT32),
              helper.make_node("Shape", ["attention_mask"], ["mshape"]), helper.make_node("Gather", ["mshape", "one_scalar"], ["tot64"], axis=0),
              helper.make_node("Cast", ["tot64"], ["total_seq"], to=TensorProto.INT32)]
    const("one_axis", np.array([1], np.int64)), const("one64", np.array(1, np.int64)), const("one_scalar", np.array(1, np.int64))
    x, skip = "h0", None
    for i in range(layers):
        const(f"ln{i}_g", rng.uniform(0.5, 1.5, hidden).astype(np.float32))
        if skip is None:
            nodes.append(helper.make_node("SimplifiedLayerNormalization", [x, f"ln{i}_g"], [f"n{i}"], axis=-1, epsilon=1e-5))
            res = x
        else:
            nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [x, skip, f"ln{i}_g"], [f"n{i}", "", "", f"res{i}"], domain=MS,
                                          epsilon=1e-5))
            res = f"res{i}"
        qkv = nbits(f"n{i}", f"qkv{i}", hidden, (nh + 2 * kvh) * hd)
        nodes.append(helper.make_node("GroupQueryAttention", [qkv, "", "", f"past_key.{i}", f"past_value.{i}", "seqlens_k", "total_seq", "cos", "sin"],
                                      [f"att{i}", f"present_key.{i}", f"present_value.{i}"], domain=MS, num_heads=nh, kv_num_heads=kvh,
                                      do_rotary=1))
        o = nbits(f"att{i}", f"o{i}", hidden, hidden)
        const(f"ln{i}b_g", rng.uniform(0.5, 1.5, hidden).astype(np.float32))
        nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [o, res, f"ln{i}b_g"], [f"m{i}", "", "", f"mres{i}"], domain=MS,
                                      epsilon=1e-5))
        gate = nbits(f"m{i}", f"gate{i}", hidden, ffn)
        up = nbits(f"m{i}", f"up{i}", hidden, ffn)
        nodes += [helper.make_node("Sigmoid", [gate], [f"sg{i}"]), helper.make_node("Mul", [gate, f"sg{i}"], [f"silu{i}"]),
                  helper.make_node("Mul", [f"silu{i}", up], [f"gu{i}"])]
        x, skip = nbits(f"gu{i}", f"down{i}", ffn, hidden), f"mres{i}"
    nodes.append(helper.make_node("Add", [x, skip], ["logits"]))
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["B", "S"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["B", "T"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)]
    for i in range(layers):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_{kind}.{i}", TensorProto.FLOAT, ["B", kvh, "P", hd]))
            outputs.append(helper.make_tensor_value_info(f"present_{kind}.{i}", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "decoder", inputs, outputs, inits)
    path = str(tmp_path / "decoder.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=8), path)
    return path, [i.name for i in inputs], layers, kvh, hd


@pytest.mark.parametrize("threads", [1, 2])
def test_decoder_prompt_then_steps(tmp_path, threads):
    """A prompt, then four decoding steps with each runtime's own caches fed back: every step's
    logits and caches within 1e-4 of ONNX Runtime's."""
    rng = np.random.default_rng(5)
    path, names, layers, kvh, hd = decoder(tmp_path, rng)
    o = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    w = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path))
    ids = rng.integers(0, 50, (1, 6))
    caches_o = caches_w = [np.zeros((1, kvh, 0, hd), np.float32)] * (2 * layers)
    total = ids.shape[1]
    for step in range(5):
        feeds = {"input_ids": ids, "attention_mask": np.ones((1, total), np.int64)}
        fo = dict(feeds, **{n: c for n, c in zip(names[2:], caches_o)})
        want = o.run(None, fo)
        got = w.run([feeds["input_ids"], feeds["attention_mask"]] + list(caches_w))
        for k, (g, x) in enumerate(zip(got, want)):
            assert g.shape == x.shape, (step, k)
            np.testing.assert_allclose(g, x, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(x).max())), err_msg=f"step {step} output {k}")
        caches_o, caches_w = want[1:], got[1:]
        ids = np.array([[int(np.argmax(want[0][0, -1])) % 50]])
        total += 1


@pytest.mark.parametrize("bias_shape", [(1, 4, 1, 5), (2, 1, 1, 5), (2, 4, 1, 5)])
def test_attention_bias_over_a_shared_cache(tmp_path, bias_shape):
    """attention_bias is [B or 1, N or 1, S, total_sequence_length], also when the cache (8 long
    here) is longer than the sequences; a local window of 0 takes no key (zeros, as ONNX Runtime)."""
    rng = np.random.default_rng(9)
    args, named = feeds_for(rng, gqa_model(past=True), 2, 1, 8, [3, 4], 5)
    m = gqa_model(past=True)
    ins = list(m.graph.node[0].input) + ["", "", "", "attention_bias"]
    m.graph.node[0].ClearField("input")
    m.graph.node[0].input.extend(ins)
    m.graph.input.append(helper.make_tensor_value_info("attention_bias", TensorProto.FLOAT, list(bias_shape)))
    path = str(tmp_path / "bias.onnx")
    onnx.save(m, path)
    bias = rng.standard_normal(bias_shape).astype(np.float32)
    named["attention_bias"] = bias
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, named)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(args + [bias])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    check_c(tmp_path, path, named, want, "bias")
    m0 = gqa_model(past=True, local_window_size=0)
    onnx.save(m0, path)
    args, named = feeds_for(rng, m0, 1, 3, 5, [7], 8)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, named)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    check_c(tmp_path, path, named, want, "window0")


def check_c(tmp_path, path, named, want, name="gqa"):
    """weft aot: the module of the model at `path`, built as strict C99 for the shapes of `named`
    (the total length, which sizes the present caches, frozen), reproduces `want` (ONNX Runtime's
    output and present caches)."""
    import glob
    import os
    import shutil
    import subprocess
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from aot_onnx_check import STRICT
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    named = dict(named)
    shapes = {k: list(v.shape) for k, v in named.items()}
    frozen = {"total_sequence_length": named.pop("total_sequence_length")}
    out = tmp_path / f"{name}_c"
    weft.generate_c(path, out, prefix=name, input_shapes=shapes, freeze=frozen, test_inputs=named,
                    test_outputs=dict(zip(("out", "present_key", "present_value"), want)), atol=1e-5, rtol=1e-4)
    exe = str(tmp_path / f"{name}_test")
    subprocess.run([cc, *STRICT, f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test", *sorted(glob.glob(f"{out}/src/*.c")),
                    *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("case", range(len(CASES)))
def test_generated_c_matches_onnxruntime(tmp_path, case):
    path, _, named = case_model(tmp_path, case, 100 + case)
    check_c(tmp_path, path, named, ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, named))
