"""ONNX Runtime's fused float operators, which its graph optimizers write into the models they
save (SessionOptions.optimized_model_filepath; onnxruntime.transformers' optimizer): FusedConv,
FusedGemm, FusedMatMul, QuickGelu, SkipLayerNormalization, SimplifiedLayerNormalization,
SkipSimplifiedLayerNormalization, BiasGelu, FastGelu, BiasAdd, Attention and
EmbedLayerNormalization. Each case is one small model with random weights and inputs, run by ONNX
Runtime (which implements these operators: the independent reference) and by Weft; a network that
ONNX Runtime itself optimizes and saves; the forms Weft does not rewrite, with the error naming
the node; and the two new operators as generated C (`weft aot`)."""
import glob
import os
import shutil
import subprocess

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MS = "com.microsoft"
TYPES = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.float16: TensorProto.FLOAT16}


def save(tmp_path, nodes, inputs, outputs, inits=None, name="m.onnx", opset=17):
    """inputs: {name: array} (declared with their shapes); outputs: names (float32 unless in a
    (name, type) pair); inits: {name: array}."""
    outs = [o if isinstance(o, tuple) else (o, np.float32) for o in outputs]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(k, TYPES[v.dtype.type], list(v.shape)) for k, v in inputs.items()],
                          [helper.make_tensor_value_info(k, TYPES[t], None) for k, t in outs],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    path = str(tmp_path / name)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)], ir_version=8), path)
    return path


def check(path, feeds, tol=1e-5):
    """Weft's outputs against ONNX Runtime's: max|weft - ort| <= tol * max(1, max|ort|) each."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the file's own ops
    want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(list(feeds.values()))
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, f"output {k}: {g.dtype}{g.shape} vs ONNX Runtime's {w.dtype}{w.shape}"
        if w.dtype.kind == "f":
            err = float(np.max(np.abs(g - w))) / max(1.0, float(np.max(np.abs(w))))
            assert err <= tol, f"output {k}: relative difference {err:.3e}"
        else:
            np.testing.assert_array_equal(g, w)
    return want


def rand(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


ACTIVATIONS = [("", []), ("Relu", []), ("Tanh", []), ("Sigmoid", []), ("LeakyRelu", [0.2]), ("Clip", [-0.5, 0.7]),
               ("HardSigmoid", [0.3, 0.4])]


@pytest.mark.parametrize("activation,params", ACTIVATIONS)
@pytest.mark.parametrize("with_z", [False, True])
def test_fused_conv(tmp_path, activation, params, with_z):
    rng = np.random.default_rng(1)
    x, w, b = rand(rng, 2, 4, 9, 9), rand(rng, 6, 2, 3, 3, scale=0.3), rand(rng, 6)
    attrs = {"strides": [2, 1], "pads": [1, 0, 1, 2], "group": 2}
    if activation:
        attrs["activation"] = activation
    if params:
        attrs["activation_params"] = params
    feeds = {"x": x}
    ins = ["x", "w", "b"]
    if with_z:
        feeds["z"] = rand(rng, 2, 6, 5, 9)
        ins.append("z")
    path = save(tmp_path, [helper.make_node("FusedConv", ins, ["y"], domain=MS, **attrs)], feeds, ["y"], {"w": w, "b": b})
    check(path, feeds)


@pytest.mark.parametrize("activation,attrs", [("Relu", {}), ("Tanh", {}), ("Sigmoid", {}), ("LeakyRelu", {"activation_alpha": 0.3}),
                                              ("HardSigmoid", {"activation_alpha": 0.25, "activation_beta": 0.45}),
                                              ("Elu", {"activation_alpha": 0.7}), ("Softsign", {}), ("Softplus", {}),
                                              ("ThresholdedRelu", {"activation_alpha": 0.2}),
                                              ("Selu", {"activation_alpha": 1.5, "activation_gamma": 1.1})])
@pytest.mark.parametrize("trans", [(0, 1), (1, 0)])
def test_fused_gemm(tmp_path, activation, attrs, trans):
    rng = np.random.default_rng(2)
    a = rand(rng, *((7, 5) if trans[0] else (5, 7)))
    bw = rand(rng, *((3, 7) if trans[1] else (7, 3)))
    path = save(tmp_path, [helper.make_node("FusedGemm", ["a", "b", "c"], ["y"], domain=MS, activation=activation, transA=trans[0],
                                            transB=trans[1], alpha=0.5, beta=2.0, **attrs)],
                {"a": a}, ["y"], {"b": bw, "c": rand(rng, 3)})
    check(path, {"a": a})


@pytest.mark.parametrize("trans_a,trans_b,batch_a,batch_b", [(0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0), (0, 0, 1, 0),
                                                              (0, 0, 0, 1), (1, 0, 1, 0), (0, 1, 0, 1)])
@pytest.mark.parametrize("rank", [3, 4])
def test_fused_matmul(tmp_path, trans_a, trans_b, batch_a, batch_b, rank):
    rng = np.random.default_rng(3)
    lead = [2, 3][: rank - 2]

    def stored(logical, trans, batch):
        # The shape that op(stored) reads as `logical`: op moves dim 0 behind the other batch
        # dims (transBatch), then swaps the last two (trans).
        perm = list(range(len(logical)))
        if batch:
            perm = list(range(1, len(logical) - 1)) + [0, len(logical) - 1]
        if trans:
            perm[-2], perm[-1] = perm[-1], perm[-2]
        shape = [0] * len(logical)
        for i, p in enumerate(perm):
            shape[p] = logical[i]
        return shape

    a = rand(rng, *stored(lead + [4, 5], trans_a, batch_a))
    b = rand(rng, *stored(lead + [5, 6], trans_b, batch_b))
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, alpha=0.5, transA=trans_a, transB=trans_b, transBatchA=batch_a,
                            transBatchB=batch_b)
    y = check(save(tmp_path, [node], {"a": a, "b": b}, ["y"]), {"a": a, "b": b})[0]
    assert y.shape == tuple(lead + [4, 6])


@pytest.mark.parametrize("alpha", [1.702, 1.0, -0.5])
def test_quick_gelu(tmp_path, alpha):
    rng = np.random.default_rng(4)
    x = rand(rng, 3, 1000, scale=4.0)
    path = save(tmp_path, [helper.make_node("QuickGelu", ["x"], ["y"], domain=MS, alpha=alpha)], {"x": x}, ["y"])
    check(path, {"x": x})
    x64 = x.astype(np.float64)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
    np.testing.assert_allclose(got, x64 / (1 + np.exp(-alpha * x64)), rtol=1e-5, atol=1e-6)


def test_quick_gelu_after_conv(tmp_path):
    """QuickGelu with alpha 1 is SiLU: a Conv's epilogue takes it (as it takes Sigmoid * x)."""
    rng = np.random.default_rng(5)
    x = rand(rng, 1, 16, 12, 12)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("QuickGelu", ["c"], ["y"], domain=MS, alpha=1.0)]
    check(save(tmp_path, nodes, {"x": x}, ["y"], {"w": rand(rng, 16, 16, 3, 3, scale=0.2), "b": rand(rng, 16)}), {"x": x})


@pytest.mark.parametrize("beta,bias", [(True, True), (False, False), (True, False), (False, True)])
@pytest.mark.parametrize("all_outputs", [False, True])
def test_skip_layer_normalization(tmp_path, beta, bias, all_outputs):
    rng = np.random.default_rng(6)
    x, skip = rand(rng, 2, 5, 32), rand(rng, 2, 5, 32)
    ins, inits = ["x", "skip", "gamma"], {"gamma": rand(rng, 32)}
    ins.append("beta" if beta else "")
    if beta:
        inits["beta"] = rand(rng, 32)
    if bias:
        ins.append("bias")
        inits["bias"] = rand(rng, 32)
    outs = ["y", "mean", "inv_std", "sum"] if all_outputs else ["y"]
    path = save(tmp_path, [helper.make_node("SkipLayerNormalization", ins, outs, domain=MS, epsilon=1e-5)], {"x": x, "skip": skip}, outs, inits)
    check(path, {"x": x, "skip": skip})


@pytest.mark.parametrize("axis,scale_shape", [(-1, [16]), (1, [5, 16])])
def test_simplified_layer_normalization(tmp_path, axis, scale_shape):
    rng = np.random.default_rng(7)
    x = rand(rng, 3, 5, 16, scale=3.0)
    scale = rand(rng, *scale_shape)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y", "inv"], axis=axis, epsilon=1e-6)
    want = check(save(tmp_path, [node], {"x": x}, ["y", "inv"], {"scale": scale}), {"x": x})
    x64 = x.astype(np.float64)
    red = tuple(range(axis % 3, 3))
    inv = 1 / np.sqrt(np.mean(x64 * x64, axis=red, keepdims=True) + 1e-6)
    np.testing.assert_allclose(want[0], x64 * inv * scale, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bias", [False, True])
def test_skip_simplified_layer_normalization(tmp_path, bias):
    rng = np.random.default_rng(8)
    x, skip = rand(rng, 2, 4, 24), rand(rng, 2, 4, 24)
    ins, inits = ["x", "skip", "gamma"], {"gamma": rand(rng, 24)}
    if bias:
        ins.append("bias")
        inits["bias"] = rand(rng, 24)
    path = save(tmp_path, [helper.make_node("SkipSimplifiedLayerNormalization", ins, ["y", "", "inv", "sum"], domain=MS, epsilon=1e-6)],
                {"x": x, "skip": skip}, ["y", "inv", "sum"], inits)
    check(path, {"x": x, "skip": skip})


@pytest.mark.parametrize("op,with_bias", [("BiasGelu", True), ("FastGelu", True), ("FastGelu", False)])
def test_gelu_family(tmp_path, op, with_bias):
    rng = np.random.default_rng(9)
    x = rand(rng, 2, 3, 64, scale=3.0)
    feeds, ins, inits = {"x": x}, ["x"], {}
    if with_bias:
        ins.append("bias")
        inits["bias"] = rand(rng, 64)
    check(save(tmp_path, [helper.make_node(op, ins, ["y"], domain=MS)], feeds, ["y"], inits), feeds)


@pytest.mark.parametrize("bias", [False, True])
def test_gemm_fast_gelu(tmp_path, bias):
    """GemmFastGelu (the transformers optimizer's MatMul + FastGelu): ONNX Runtime's CPU provider has
    no kernel for it, so the reference is its parts, MatMul (+ Add) and FastGelu."""
    rng = np.random.default_rng(95 + bias)
    feeds = {"x": rand(rng, 2, 5, 16)}
    inits = {"w": rand(rng, 16, 24, scale=0.3)}
    ins = ["x", "w"]
    if bias:
        inits["b"] = rand(rng, 24, scale=0.2)
        ins.append("b")
    path = save(tmp_path, [helper.make_node("GemmFastGelu", ins, ["y"], domain=MS)], feeds, ["y"], inits, name="g.onnx")
    parts = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("FastGelu", ["h"] + (["b"] if bias else []), ["y"], domain=MS)]
    ref = save(tmp_path, parts, feeds, ["y"], inits, name="parts.onnx")
    want = ort.InferenceSession(ref, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(list(feeds.values()))[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bias_add(tmp_path):
    """BiasAdd (X + bias + skip; ONNX Runtime has it for CUDA only): against NumPy."""
    rng = np.random.default_rng(16)
    x, bias, skip = rand(rng, 2, 3, 64), rand(rng, 64), rand(rng, 2, 3, 64)
    path = save(tmp_path, [helper.make_node("BiasAdd", ["x", "bias", "skip"], ["y"], domain=MS)], {"x": x, "skip": skip}, ["y"], {"bias": bias})
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x, skip])[0]
    np.testing.assert_array_equal(got, (x + bias) + skip)


def attention_model(tmp_path, rng, mask=None, unidirectional=0, attention_bias=False, qkv=None, scale=None, heads=4, b=2, filter_value=None):
    s, hin = 6, 16
    sizes = qkv or [16, 16, 16]
    x = rand(rng, b, s, hin)
    feeds, ins = {"x": x}, ["x", "w", "bias"]
    inits = {"w": rand(rng, hin, sum(sizes), scale=0.4), "bias": rand(rng, sum(sizes), scale=0.1)}
    if mask is not None:
        feeds["mask"] = mask
    ins.append("mask" if mask is not None else "")
    if attention_bias:
        ins += ["", "attn_bias"]
        feeds["attn_bias"] = rand(rng, b, heads, s, s)
    attrs = {"num_heads": heads, "unidirectional": unidirectional}
    if qkv:
        attrs["qkv_hidden_sizes"] = qkv
    if scale is not None:
        attrs["scale"] = scale
    if filter_value is not None:
        attrs["mask_filter_value"] = filter_value
    path = save(tmp_path, [helper.make_node("Attention", ins, ["y"], domain=MS, **attrs)], feeds, ["y"], inits)
    return path, feeds


@pytest.mark.parametrize("form", ["none", "lengths", "ends_starts", "ends_starts_batch1", "raw_2d", "raw_3d", "unidirectional",
                                  "unidirectional_soft_filter", "attention_bias", "qkv_sizes", "scale"])
def test_attention(tmp_path, form):
    rng = np.random.default_rng(10)
    kw = {}
    if form == "lengths":
        kw["mask"] = np.array([6, 3], np.int32)  # keys from each sequence's length on are masked
    elif form == "ends_starts":  # [2B]: end positions, then start positions (left padding)
        kw["mask"] = np.array([6, 5, 0, 2], np.int32)
    elif form == "ends_starts_batch1":
        kw["mask"], kw["b"] = np.array([5, 1], np.int32), 1
    elif form == "raw_2d":  # positive values take part; zero and negative ones are masked
        kw["mask"] = np.array([[1, 2, 0, 1, -1, 1], [1, 1, 1, 1, 0, 0]], np.int32)
    elif form == "raw_3d":
        kw["mask"] = rng.integers(0, 2, (2, 6, 6)).astype(np.int32)
        kw["mask"][:, :, 0] = 1
    elif form == "unidirectional":
        kw["unidirectional"] = 1
    elif form == "unidirectional_soft_filter":  # the causal mask does not use mask_filter_value
        kw["unidirectional"], kw["filter_value"] = 1, -1.0
    elif form == "attention_bias":
        kw["attention_bias"] = True
    elif form == "qkv_sizes":
        kw["qkv"] = [16, 16, 24]
    elif form == "scale":
        kw["scale"] = 0.3
    path, feeds = attention_model(tmp_path, rng, **kw)
    check(path, feeds)


@pytest.mark.parametrize("mask", ["none", "raw_2d", "lengths"])
@pytest.mark.parametrize("unidirectional", [0, 1])
def test_attention_with_past_state(tmp_path, mask, unidirectional):
    """GPT-2-style decoding: past [2, B, N, P, h] before this step's keys and values, present the
    same P + S long; a causal mask offset by P; masks over all P + S keys."""
    rng = np.random.default_rng(20 + unidirectional)
    b, s, p, heads, hid = 2, 3, 5, 4, 16
    feeds = {"x": rand(rng, b, s, hid), "past": rand(rng, 2, b, heads, p, hid // heads)}
    ins = ["x", "w", "bias", "", "past"]
    if mask == "raw_2d":
        feeds["mask"] = np.ones((b, p + s), np.int32)
        feeds["mask"][1, :2] = 0  # left padding
        ins[3] = "mask"
    elif mask == "lengths":
        feeds["mask"] = np.array([p + s, p + 1], np.int32)
        ins[3] = "mask"
    node = helper.make_node("Attention", ins, ["y", "present"], domain=MS, num_heads=heads, unidirectional=unidirectional)
    path = save(tmp_path, [node], feeds, ["y", "present"], {"w": rand(rng, hid, 3 * hid, scale=0.4), "bias": rand(rng, 3 * hid, scale=0.1)})
    check(path, feeds)


def test_attention_in_float16(tmp_path):
    """A float16 Attention (the transformers optimizer's float16 conversion): its constants in float16."""
    rng = np.random.default_rng(23)
    feeds = {"x": rand(rng, 2, 6, 16).astype(np.float16), "mask": np.array([6, 4], np.int32)}
    node = helper.make_node("Attention", ["x", "w", "bias", "mask"], ["y"], domain=MS, num_heads=4, unidirectional=1)
    path = save(tmp_path, [node], feeds, [("y", np.float16)], {"w": rand(rng, 16, 48, scale=0.4).astype(np.float16),
                                                               "bias": rand(rng, 48, scale=0.1).astype(np.float16)})
    check(path, feeds, tol=2e-3)


def test_attention_mask_from_an_undeclared_reduction(tmp_path):
    """mask_index computed in the graph (ReduceSum with keepdims=0, no value_info): its rank follows
    from the reduction."""
    rng = np.random.default_rng(24)
    feeds = {"x": rand(rng, 2, 6, 16), "raw": np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)}
    nodes = [helper.make_node("ReduceSum", ["raw", "ax"], ["lens"], keepdims=0),
             helper.make_node("Attention", ["x", "w", "bias", "lens"], ["y"], domain=MS, num_heads=4)]
    path = save(tmp_path, nodes, feeds, ["y"], {"w": rand(rng, 16, 48, scale=0.4), "bias": rand(rng, 48, scale=0.1), "ax": np.array([1], np.int64)})
    check(path, feeds)


@pytest.mark.parametrize("form", ["plain", "bias", "lengths", "raw_2d", "raw_3d", "attention_bias", "cross", "past", "past_causal", "bnsh", "scale",
                                  "float16"])
def test_multi_head_attention(tmp_path, form):
    """MultiHeadAttention as the transformers optimizer writes it (separate query, key and value, a
    bias, key_padding_mask of each form) and as decoders use it (past and present keys and values,
    cross attention, keys and values already split into heads)."""
    rng = np.random.default_rng(40 + len(form))
    b, s, l, heads, d = 2, 5, 7 if form == "cross" else 5, 4, 16
    h = d // heads
    feeds = {"q": rand(rng, b, s, d)}
    if form == "bnsh":
        feeds["k"], feeds["v"] = rand(rng, b, heads, l, h), rand(rng, b, heads, l, h)
    else:
        feeds["k"], feeds["v"] = rand(rng, b, l, d), rand(rng, b, l, d)
    ins, inits, attrs = ["q", "k", "v"], {}, {"num_heads": heads}
    outs = ["y"]
    if form not in ("plain", "bnsh"):
        inits["bias"] = rand(rng, 3 * d, scale=0.2)
        ins.append("bias")
    mask = {"lengths": np.array([l, 3], np.int32), "raw_2d": np.array([[1] * l, [1] * (l - 2) + [0, 0]], np.int32),
            "raw_3d": rng.integers(0, 2, (b, s, l)).astype(np.int32)}.get(form)
    if mask is not None:
        if form == "raw_3d":
            mask[:, :, 0] = 1
        while len(ins) < 4:
            ins.append("")
        feeds["mask"] = mask
        ins.append("mask")
    if form == "attention_bias":
        feeds["ab"] = rand(rng, 1, heads, s, l)
        ins += ["", "ab"]
    if form.startswith("past"):
        p = 3
        feeds["pk"], feeds["pv"] = rand(rng, b, heads, p, h), rand(rng, b, heads, p, h)
        while len(ins) < 6:
            ins.append("")
        ins += ["pk", "pv"]
        outs += ["present_k", "present_v"]
        attrs["unidirectional"] = int(form == "past_causal")
    if form == "scale":
        attrs["scale"] = 0.37
    if form == "float16":
        feeds = {k: v.astype(np.float16) for k, v in feeds.items()}
        inits = {k: v.astype(np.float16) for k, v in inits.items()}
    node = helper.make_node("MultiHeadAttention", ins, outs, domain=MS, **attrs)
    path = save(tmp_path, [node], feeds, [(o, np.float16) if form == "float16" else o for o in outs], inits)
    check(path, feeds, tol=3e-3 if form == "float16" else 1e-5)


@pytest.mark.parametrize("layout", ["bsd", "bnsh"])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("form", ["ids", "offset", "partial", "float16"])
def test_rotary_embedding(tmp_path, layout, interleaved, form):
    """RotaryEmbedding (the rotary position embedding of Llama/Qwen-style decoders): 3-D input with
    num_heads or 4-D, halves or interleaved pairs, position ids or an offset, a rotary size below the
    head size, float16."""
    rng = np.random.default_rng(60 + interleaved + 2 * len(form))
    b, s, heads, h, positions = 2, 5, 3, 8, 16
    rot = 4 if form == "partial" else h
    x = rand(rng, b, s, heads * h) if layout == "bsd" else rand(rng, b, heads, s, h)
    angles = np.arange(positions)[:, None] * (1.0 / 10000 ** (np.arange(rot // 2) / (rot // 2)))[None, :]
    feeds = {"x": x, "pos": np.array([3], np.int64) if form == "offset" else rng.integers(0, positions, (b, s)).astype(np.int64)}
    inits = {"cos": np.cos(angles).astype(np.float32), "sin": np.sin(angles).astype(np.float32)}
    attrs = {"interleaved": interleaved}
    if layout == "bsd" or form == "partial":
        attrs["num_heads"] = heads
    if form == "partial":
        attrs["rotary_embedding_dim"] = rot
    if form == "float16":
        feeds["x"] = feeds["x"].astype(np.float16)
        inits = {k: v.astype(np.float16) for k, v in inits.items()}
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS, **attrs)
    path = save(tmp_path, [node], feeds, [("y", np.float16) if form == "float16" else "y"], inits)
    check(path, feeds, tol=2e-3 if form == "float16" else 1e-5)


@pytest.mark.parametrize("segments,mask,position_ids", [(True, True, False), (False, True, False), (True, False, False), (True, True, True)])
def test_embed_layer_normalization(tmp_path, segments, mask, position_ids):
    rng = np.random.default_rng(11)
    b, s, h = 2, 6, 16
    feeds = {"ids": rng.integers(0, 30, (b, s)).astype(np.int32)}
    inits = {"word": rand(rng, 30, h), "pos": rand(rng, 10, h), "gamma": rand(rng, h), "beta": rand(rng, h)}
    ins = ["ids", "seg" if segments else "", "word", "pos", "segemb" if segments else "", "gamma", "beta", "mask" if mask else ""]
    if segments:
        feeds["seg"] = rng.integers(0, 2, (b, s)).astype(np.int32)
        inits["segemb"] = rand(rng, 2, h)
    if mask:  # mask_index counts the values equal to 1
        feeds["mask"] = np.array([[1] * 6, [1, 2, 1, 1, 0, 0]], np.int32)
    if position_ids:
        ins.append("posids")
        feeds["posids"] = rng.integers(0, 10, (b, s)).astype(np.int32)
    outs = ["y", ("mask_index", np.int32), "emb_sum"] if mask else ["y", "", "emb_sum"]
    node = helper.make_node("EmbedLayerNormalization", ins, [o[0] if isinstance(o, tuple) else o for o in outs], domain=MS, epsilon=1e-5)
    check(save(tmp_path, [node], feeds, [o for o in outs if o != ""], inits), feeds)


def test_bert_as_the_transformers_optimizer_writes_it(tmp_path):
    """EmbedLayerNormalization -> Attention (with the mask lengths it computes) -> SkipLayerNormalization
    -> BiasGelu -> SkipLayerNormalization, the layer the transformers optimizer fuses for BERT, on a
    batch whose second sequence is padded."""
    rng = np.random.default_rng(12)
    b, s, h, heads = 2, 8, 32, 4
    ids = rng.integers(0, 50, (b, s)).astype(np.int32)
    seg = np.zeros((b, s), np.int32)
    mask = np.array([[1] * 8, [1] * 5 + [0] * 3], np.int32)
    inits = {"word": rand(rng, 50, h), "pos": rand(rng, 16, h), "segemb": rand(rng, 2, h), "g0": rand(rng, h), "b0": rand(rng, h),
             "wqkv": rand(rng, h, 3 * h, scale=0.2), "bqkv": rand(rng, 3 * h, scale=0.1), "wo": rand(rng, h, h, scale=0.2), "bo": rand(rng, h),
             "g1": rand(rng, h), "b1": rand(rng, h), "w1": rand(rng, h, 4 * h, scale=0.2), "bb1": rand(rng, 4 * h), "w2": rand(rng, 4 * h, h, scale=0.1),
             "bb2": rand(rng, h), "g2": rand(rng, h), "b2": rand(rng, h)}
    nodes = [helper.make_node("EmbedLayerNormalization", ["ids", "seg", "word", "pos", "segemb", "g0", "b0", "mask"], ["e", "mi"], domain=MS,
                              epsilon=1e-12),
             helper.make_node("Attention", ["e", "wqkv", "bqkv", "mi"], ["a"], domain=MS, num_heads=heads),
             helper.make_node("MatMul", ["a", "wo"], ["o"]),
             helper.make_node("SkipLayerNormalization", ["o", "e", "g1", "b1", "bo"], ["l1"], domain=MS, epsilon=1e-12),
             helper.make_node("MatMul", ["l1", "w1"], ["f1"]),
             helper.make_node("BiasGelu", ["f1", "bb1"], ["g"], domain=MS),
             helper.make_node("MatMul", ["g", "w2"], ["f2"]),
             helper.make_node("SkipLayerNormalization", ["f2", "l1", "g2", "b2", "bb2"], ["y"], domain=MS, epsilon=1e-12)]
    feeds = {"ids": ids, "seg": seg, "mask": mask}
    check(save(tmp_path, nodes, feeds, ["y"], inits), feeds)


def test_a_network_onnx_runtime_optimized_and_saved(tmp_path):
    """A small CNN and transformer block, optimized by ONNX Runtime and saved: the saved file holds
    FusedConv, FusedGemm, FusedMatMul and SkipLayerNormalization (checked), and Weft runs it as ONNX
    Runtime runs the original."""
    rng = np.random.default_rng(13)
    x = rand(rng, 1, 3, 16, 16)
    t = rand(rng, 1, 8, 32)
    inits = {"w1": rand(rng, 8, 3, 3, 3, scale=0.3), "b1": rand(rng, 8), "w2": rand(rng, 8, 8, 3, 3, scale=0.2), "b2": rand(rng, 8),
             "fw": rand(rng, 10, 8), "fb": rand(rng, 10), "lg": rand(rng, 32), "lb": rand(rng, 32), "scale": np.array(0.25, np.float32),
             "wq": rand(rng, 32, 32, scale=0.2)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), helper.make_node("Add", ["c2", "r1"], ["s"]),
             helper.make_node("Relu", ["s"], ["r2"]), helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("Gemm", ["f", "fw", "fb"], ["g"], transB=1),
             helper.make_node("Relu", ["g"], ["cls"]),
             helper.make_node("MatMul", ["t", "wq"], ["q"]), helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "qt"], ["sc"]), helper.make_node("Mul", ["sc", "scale"], ["scs"]),
             helper.make_node("Softmax", ["scs"], ["pr"], axis=-1), helper.make_node("MatMul", ["pr", "q"], ["ctx"]),
             helper.make_node("Add", ["ctx", "t"], ["res"]), helper.make_node("LayerNormalization", ["res", "lg", "lb"], ["ln"], axis=-1, epsilon=1e-5)]
    src = save(tmp_path, nodes, {"x": x, "t": t}, ["cls", "ln"], inits, name="src.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    saved = onnx.load(so.optimized_model_filepath)
    fused = {n.op_type for n in saved.graph.node if n.domain == MS}
    assert {"FusedConv", "FusedGemm", "FusedMatMul", "SkipLayerNormalization"} <= fused, fused
    want = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {"x": x, "t": t})
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(so.optimized_model_filepath)).run([x, t])
    for g, w in zip(got, want):
        assert float(np.max(np.abs(np.asarray(g) - w))) <= 1e-5 * max(1.0, float(np.max(np.abs(w))))


@pytest.mark.parametrize("case,message", [
    ("activation", "'fc' (FusedConv, domain com.microsoft): activation 'Swoosh' is not supported"),
    ("clip", "'fc' (FusedConv, domain com.microsoft): activation Clip takes activation_params [min, max]"),
    ("past", "'att' (Attention, domain com.microsoft): past_sequence_length and past_present_share_buffer (a key/value cache shared in place) are not supported"),
    ("rank", "'mm' (FusedMatMul, domain com.microsoft): transA needs the rank of A ('h')"),
])
def test_forms_not_rewritten_name_the_node(tmp_path, case, message):
    rng = np.random.default_rng(14)
    if case in ("activation", "clip"):
        attrs = {"activation": "Swoosh"} if case == "activation" else {"activation": "Clip", "activation_params": [0.0]}
        path = save(tmp_path, [helper.make_node("FusedConv", ["x", "w"], ["y"], name="fc", domain=MS, **attrs)], {"x": rand(rng, 1, 2, 4, 4)}, ["y"],
                    {"w": rand(rng, 2, 2, 1, 1)})
    elif case == "past":
        path = save(tmp_path, [helper.make_node("Attention", ["x", "w", "b", "", "past", "", "plen"], ["y"], name="att", domain=MS, num_heads=2)],
                    {"x": rand(rng, 1, 3, 8), "past": rand(rng, 2, 1, 2, 3, 4), "plen": np.array([3], np.int32)}, ["y"],
                    {"w": rand(rng, 8, 24), "b": rand(rng, 24)})
    else:  # h's rank is known only when the model runs (a Reshape to a shape given as an input)
        nodes = [helper.make_node("Reshape", ["x", "s"], ["h"]), helper.make_node("FusedMatMul", ["h", "x"], ["y"], name="mm", domain=MS, transA=1)]
        path = save(tmp_path, nodes, {"x": rand(rng, 4, 4), "s": np.array([4, 4], np.int64)}, ["y"])
    with pytest.raises(Exception) as e:
        weft.import_onnx(path)
    assert message in str(e.value)


def test_new_operators_as_generated_c(tmp_path):
    """QuickGelu and SimplifiedLayerNormalization emit C: the module, built as strict C99, gives ONNX
    Runtime's outputs within the tolerance."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    rng = np.random.default_rng(15)
    x = rand(rng, 2, 5, 16, scale=3.0)
    nodes = [helper.make_node("QuickGelu", ["x"], ["q"], domain=MS, alpha=1.702),
             helper.make_node("SimplifiedLayerNormalization", ["q", "scale"], ["y"], axis=-1, epsilon=1e-6)]
    path = save(tmp_path, nodes, {"x": x}, ["y"], {"scale": rand(rng, 16)})
    want = check(path, {"x": x})
    out = tmp_path / "c"
    weft.generate_c(path, out, prefix="m", test_inputs={"x": x}, test_outputs={"y": want[0]}, atol=1e-5, rtol=1e-4)
    exe = str(tmp_path / "m_test")
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test",
                    *sorted(glob.glob(f"{out}/src/*.c")), *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_onnx_runtime_nchwc_graph(tmp_path, mode):
    """A file ONNX Runtime saves at ORT_ENABLE_ALL on this CPU: its channel-blocked (NCHWc) graph,
    ReorderInput/ReorderOutput, reordered convolution weights with channels padded to whole blocks
    (24 and 40 here), a depthwise and a grouped convolution, a residual sum and activations fused
    into its Conv, an upsampling; Weft runs it and matches ONNX Runtime on the original file."""
    rng = np.random.default_rng(70)
    inits = {"w0": rand(rng, 24, 3, 3, 3, scale=0.3), "b0": rand(rng, 24, scale=0.1), "w1": rand(rng, 24, 1, 3, 3, scale=0.3),
             "w2": rand(rng, 32, 24, 1, 1, scale=0.3), "w3": rand(rng, 32, 16, 3, 3, scale=0.1), "w4": rand(rng, 40, 32, 1, 1, scale=0.2),
             "sc": np.array([1, 1, 2, 2], np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1]),
             helper.make_node("HardSwish", ["c0"], ["a0"]),
             helper.make_node("Conv", ["a0", "w1"], ["c1"], pads=[1, 1, 1, 1], group=24),
             helper.make_node("Relu", ["c1"], ["a1"]),
             helper.make_node("Conv", ["a1", "w2"], ["c2"]),
             helper.make_node("Conv", ["c2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=2),
             helper.make_node("Add", ["c3", "c2"], ["s3"]),
             helper.make_node("Relu", ["s3"], ["a3"]),
             helper.make_node("Resize", ["a3", "", "sc"], ["u"], mode=mode),
             helper.make_node("Conv", ["u", "w4"], ["c4"]),
             helper.make_node("MaxPool", ["c4"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["c4"], ["g"])]
    feeds = {"x": rand(rng, 1, 3, 12, 12)}
    path = save(tmp_path, nodes, feeds, ["p", "g"], inits, opset=14)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = str(tmp_path / "all.onnx")
    ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    saved = onnx.load(so.optimized_model_filepath)
    domains = {(n.domain, n.op_type) for n in saved.graph.node}
    if not any(d == "com.microsoft.nchwc" for d, _ in domains):
        pytest.skip("ONNX Runtime wrote no NCHWc graph on this CPU")
    assert ("com.microsoft.nchwc", "ReorderOutput") in domains
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(so.optimized_model_filepath)).run(list(feeds.values()))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_unknown_nchwc_operator_is_named(tmp_path):
    path = save(tmp_path, [helper.make_node("ReorderSideways", ["x"], ["y"], name="odd", domain="com.microsoft.nchwc")],
                {"x": np.zeros([1, 16, 2, 2], np.float32)}, ["y"])
    m = onnx.load(path)
    m.opset_import.append(helper.make_opsetid("com.microsoft.nchwc", 1))
    onnx.save(m, path)
    with pytest.raises(Exception, match="'odd' \\(ReorderSideways, domain com.microsoft.nchwc\\): is not an operator of ONNX Runtime's NCHWc layout"):
        weft.import_onnx(path)
