"""ONNX's Attention (opsets 23-25) and RotaryEmbedding (opset 23) on random inputs, against a
float64 NumPy re-computation written from the operator definitions, and against the onnx
package's reference evaluator: 3-D and 4-D inputs, grouped query heads, bool and additive masks of
every rank (shorter than the keys too), a key/value cache, per-sequence valid key counts, causal
and sliding-window masking, soft-capping, the four score outputs, float16 and bfloat16."""
import os
import tempfile

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

NEG = -np.inf


def model(node, inputs, opset):
    ins = [helper.make_tensor_value_info(n, numpy_helper.from_array(v).data_type, list(v.shape)) for n, v in inputs]
    t = numpy_helper.from_array(inputs[0][1]).data_type  # every output takes the first input's type
    outs = [helper.make_tensor_value_info(o, t, None) for o in node.output if o]
    g = helper.make_graph([node], "g", ins, outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def run_weft(m, inputs, threads=1):
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    onnx.save(m, path)
    s = weft.Session(use_env_path=False, threads=threads)
    return s.compile(weft.import_onnx(path)).run([v for _, v in inputs])


def attention_ref(q, k, v, mask=None, past=None, nonpad=None, scale=None, causal=False, qh=None, kvh=None, softcap=0.0, mode=0,
                  left=-1, right=-1):
    """Y, present_key, present_value, qk in float64, from the operator's definition."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    rank3 = q.ndim == 3
    if rank3:
        def heads(x, n):
            b, s, d = x.shape
            return x.reshape(b, s, n, d // n).transpose(0, 2, 1, 3)
        q, k, v = heads(q, qh), heads(k, kvh), heads(v, kvh)
    P = 0
    if past is not None:
        P = past[0].shape[2]
        k = np.concatenate([past[0].astype(np.float64), k], axis=2)
        v = np.concatenate([past[1].astype(np.float64), v], axis=2)
    B, Hq, S, h = q.shape
    Hkv, T = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(h) if scale is None else scale
    rep = Hq // Hkv
    kk, vv = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    scores = q @ kk.transpose(0, 1, 3, 2) * scale
    if softcap > 0:
        scores = softcap * np.tanh(scores / softcap)
    bias = np.zeros((B, Hq, S, T))
    if mask is not None:
        m = mask
        if m.dtype == np.bool_:
            m = np.where(m, 0.0, NEG)
        m = m.astype(np.float64)
        if m.shape[-1] < T:
            m = np.concatenate([m, np.full(m.shape[:-1] + (T - m.shape[-1],), NEG)], axis=-1)
        bias = bias + m
    offset = np.full(B, P) if nonpad is None or past is not None else nonpad - S
    s_idx = np.arange(S)[None, :, None]
    t_idx = np.arange(T)[None, None, :]
    diff = s_idx + offset[:, None, None] - t_idx  # [B, S, T]
    block = np.zeros((B, S, T), bool)
    if causal:
        block |= diff < 0
    if left >= 0:
        block |= diff > left
    if right >= 0:
        block |= -diff > right
    if nonpad is not None:
        block |= t_idx >= nonpad[:, None, None]
    bias = np.where(block[:, None], NEG, bias)
    with np.errstate(invalid="ignore"):
        logits = scores + bias
        top = logits.max(-1, keepdims=True)
        e = np.exp(logits - np.where(np.isneginf(top), 0, top))
        p = e / np.where(e.sum(-1, keepdims=True) == 0, 1, e.sum(-1, keepdims=True))
    dead = np.isneginf(bias.max(-1, keepdims=True)) if T else np.ones((B, Hq, S, 1), bool)
    p = np.where(dead, 0.0, p)
    y = p @ vv
    if rank3:
        y = y.transpose(0, 2, 1, 3).reshape(B, S, -1)
    qk = {0: scores, 1: scores, 2: logits, 3: p}[mode]
    return y, k, v, qk


def rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def qkv(rng, rank3, B, Hq, Hkv, S, L, h, hv):
    """Random Q, K, V in the 3-D (with the head counts as attributes) or 4-D form."""
    if rank3:
        return rand(rng, (B, S, Hq * h)), rand(rng, (B, L, Hkv * h)), rand(rng, (B, L, Hkv * hv)), {"q_num_heads": Hq, "kv_num_heads": Hkv}
    return rand(rng, (B, Hq, S, h)), rand(rng, (B, Hkv, L, h)), rand(rng, (B, Hkv, L, hv)), {}


CASES = [
    # name, rank3, B, Hq, Hkv, S, L, h, hv, extra
    ("4d", False, 2, 3, 3, 4, 6, 8, 8, {}),
    ("4d_diff_v", False, 1, 2, 2, 5, 7, 4, 6, {}),
    ("3d", True, 2, 4, 4, 3, 5, 8, 8, {}),
    ("3d_gqa", True, 2, 8, 2, 4, 6, 4, 4, {}),
    ("4d_gqa_causal", False, 1, 6, 3, 7, 7, 8, 5, {"causal": True}),
    ("4d_scaled_softcap", False, 2, 2, 1, 3, 9, 16, 16, {"scale": 0.37, "softcap": 2.5}),
    ("4d_long_rows", False, 1, 2, 2, 70, 90, 8, 8, {"causal": True}),
]


@pytest.mark.parametrize("name,rank3,B,Hq,Hkv,S,L,h,hv,extra", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("threads", [1, 2])
def test_attention_against_float64(name, rank3, B, Hq, Hkv, S, L, h, hv, extra, threads):
    rng = np.random.default_rng(len(name) + threads)
    q, k, v, attrs = qkv(rng, rank3, B, Hq, Hkv, S, L, h, hv)
    if "scale" in extra:
        attrs["scale"] = extra["scale"]
    if "softcap" in extra:
        attrs["softcap"] = extra["softcap"]
    if extra.get("causal"):
        attrs["is_causal"] = 1
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], **attrs)
    ins = [("q", q), ("k", k), ("v", v)]
    (y,) = run_weft(model(node, ins, 23), ins, threads)
    want = attention_ref(q, k, v, scale=extra.get("scale"), causal=extra.get("causal", False), qh=Hq, kvh=Hkv,
                         softcap=extra.get("softcap", 0.0))[0]
    np.testing.assert_allclose(y, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("mask_shape,dtype", [((6,), np.bool_), ((4, 6), np.float32), ((3, 4, 6), np.bool_), ((2, 1, 4, 6), np.float32),
                                              ((1, 3, 1, 4), np.bool_), ((4, 2), np.float32)])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_masks(mask_shape, dtype, causal):
    rng = np.random.default_rng(sum(mask_shape) + causal)
    q, k, v = rand(rng, (2, 3, 4, 8)), rand(rng, (2, 3, 6, 8)), rand(rng, (2, 3, 6, 8))
    if dtype == np.bool_:
        mask = rng.random(mask_shape) < 0.7
    else:
        mask = np.where(rng.random(mask_shape) < 0.2, -np.inf, rng.standard_normal(mask_shape)).astype(np.float32)
    node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y", "", "", "qk"], is_causal=causal, qk_matmul_output_mode=2)
    ins = [("q", q), ("k", k), ("v", v), ("m", mask)]
    y, qk = run_weft(model(node, ins, 23), ins)
    want_y, _, _, want_qk = attention_ref(q, k, v, mask=mask, causal=bool(causal), mode=2)
    np.testing.assert_allclose(y, want_y, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(qk, want_qk, rtol=2e-5, atol=2e-5)
    assert np.all(np.isfinite(y))


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("rank3", [False, True])
def test_attention_cache_and_score_outputs(mode, rank3):
    rng = np.random.default_rng(mode * 2 + rank3)
    B, Hq, Hkv, S, L, P, h, hv = 2, 4, 2, 3, 3, 5, 4, 6
    q, k, v, attrs = qkv(rng, rank3, B, Hq, Hkv, S, L, h, hv)
    pk, pv = rand(rng, (B, Hkv, P, h)), rand(rng, (B, Hkv, P, hv))
    mask = rng.random((S, P + L)) < 0.8
    node = helper.make_node("Attention", ["q", "k", "v", "m", "pk", "pv"], ["y", "ck", "cv", "qk"], is_causal=1, softcap=3.0,
                            qk_matmul_output_mode=mode, **attrs)
    ins = [("q", q), ("k", k), ("v", v), ("m", mask), ("pk", pk), ("pv", pv)]
    got = run_weft(model(node, ins, 23), ins)
    want = attention_ref(q, k, v, mask=mask, past=(pk, pv), causal=True, qh=Hq, kvh=Hkv, softcap=3.0, mode=mode)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    # the onnx package's own evaluator agrees
    ref = ReferenceEvaluator(model(node, ins, 23)).run(None, dict(ins))
    for g, w in zip(got, ref):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_attention_valid_key_counts_and_windows():
    rng = np.random.default_rng(7)
    B, H, S, T, h = 3, 2, 4, 9, 8
    q, k, v = rand(rng, (B, H, S, h)), rand(rng, (B, H, T, h)), rand(rng, (B, H, T, h))
    nonpad = np.array([9, 6, 2], np.int64)  # the last has fewer keys than queries: its early rows see none
    node = helper.make_node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"], is_causal=1)
    ins = [("q", q), ("k", k), ("v", v), ("n", nonpad)]
    (y,) = run_weft(model(node, [("q", q), ("k", k), ("v", v), ("n", nonpad)], 24), ins)
    np.testing.assert_allclose(y, attention_ref(q, k, v, nonpad=nonpad, causal=True)[0], rtol=2e-5, atol=2e-5)
    assert np.all(y[2, :, 0] == 0)  # no key at or before its position: zeros
    for left, right, causal in [(2, -1, 1), (1, 1, 0), (-1, 0, 0), (0, 3, 0)]:
        node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=causal, left_window_size=left, right_window_size=right)
        ins = [("q", q), ("k", k), ("v", v)]
        (y,) = run_weft(model(node, ins, 25), ins)
        np.testing.assert_allclose(y, attention_ref(q, k, v, causal=bool(causal), left=left, right=right)[0], rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_attention_half_types(dtype):
    rng = np.random.default_rng(dtype)
    q, k, v = rand(rng, (1, 4, 5, 8)), rand(rng, (1, 2, 7, 8)), rand(rng, (1, 2, 7, 8))
    pk, pv = rand(rng, (1, 2, 3, 8)), rand(rng, (1, 2, 3, 8))
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "ck", "cv"], is_causal=1)
    g = helper.make_graph(
        [helper.make_node("Cast", [n], [n + "_t"], to=dtype) for n in ("q", "k", "v", "pk", "pv")]
        + [helper.make_node("Attention", ["q_t", "k_t", "v_t", "", "pk_t", "pv_t"], ["y_t", "ck_t", "cv_t"], is_causal=1)]
        + [helper.make_node("Cast", [n + "_t"], [n], to=TensorProto.FLOAT) for n in ("y", "ck", "cv")],
        "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(x.shape)) for n, x in zip("q k v pk pv".split(), (q, k, v, pk, pv))],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "ck", "cv")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    del node
    got = run_weft(m, [("q", q), ("k", k), ("v", v), ("pk", pk), ("pv", pv)])
    # the reference on the inputs as rounded to the narrow type
    narrow = ReferenceEvaluator(helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["t"], to=dtype), helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)], "r",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 23)], ir_version=10))
    r = [narrow.run(None, {"x": x})[0] for x in (q, k, v, pk, pv)]
    want = attention_ref(r[0], r[1], r[2], past=(r[3], r[4]), causal=True)
    tol = 1e-2 if dtype == TensorProto.FLOAT16 else 4e-2
    np.testing.assert_allclose(got[0], want[0], rtol=tol, atol=tol)
    np.testing.assert_array_equal(got[1], want[1].astype(np.float32))  # the caches are copies
    np.testing.assert_array_equal(got[2], want[2].astype(np.float32))


def test_attention_dynamic_sequence_lengths():
    """One compiled model over decode steps whose cache grows: -1 dims resolved per run."""
    rng = np.random.default_rng(11)
    ins = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 4, "s", 8]),
           helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 2, "s", 8]),
           helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 2, "s", 8]),
           helper.make_tensor_value_info("pk", TensorProto.FLOAT, [1, 2, "p", 8]),
           helper.make_tensor_value_info("pv", TensorProto.FLOAT, [1, 2, "p", 8])]
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "ck", "cv"], is_causal=1)
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("y", "ck", "cv")]
    m = helper.make_model(helper.make_graph([node], "g", ins, outs), opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    onnx.save(m, path)
    compiled = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    pk, pv = np.zeros((1, 2, 0, 8), np.float32), np.zeros((1, 2, 0, 8), np.float32)
    for s in (5, 1, 1, 2):
        q, k, v = rand(rng, (1, 4, s, 8)), rand(rng, (1, 2, s, 8)), rand(rng, (1, 2, s, 8))
        y, ck, cv = compiled.run([q, k, v, pk, pv])
        want = attention_ref(q, k, v, past=(pk, pv), causal=True)
        np.testing.assert_allclose(y, want[0], rtol=2e-5, atol=2e-5)
        pk, pv = ck, cv
    assert pk.shape == (1, 2, 9, 8)


def test_attention_against_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    q, k, v = rand(rng, (2, 10, 64)), rand(rng, (2, 12, 32)), rand(rng, (2, 12, 32))
    mask = rng.random((2, 1, 10, 12)) < 0.9
    node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y"], q_num_heads=8, kv_num_heads=4)
    ins = [("q", q), ("k", k), ("v", v), ("m", mask)]
    m = model(node, ins, 23)
    try:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # an ONNX Runtime without opset 23's Attention
        pytest.skip(f"ONNX Runtime cannot run it: {e}")
    (want,) = sess.run(None, dict(ins))
    (y,) = run_weft(m, ins, 2)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("what,node_kw,shapes,match", [
    ("3-D without heads", {}, [(1, 3, 8), (1, 3, 8), (1, 3, 8)], "3-D inputs need q_num_heads and kv_num_heads"),
    ("heads not dividing", {"q_num_heads": 3, "kv_num_heads": 2}, [(1, 3, 12), (1, 3, 8), (1, 3, 8)], "not a multiple"),
    ("head sizes differ", {}, [(1, 2, 3, 8), (1, 2, 4, 6), (1, 2, 4, 8)], "same head size"),
    ("batch differs", {}, [(2, 2, 3, 8), (1, 2, 4, 8), (1, 2, 4, 8)], "same batch"),
    ("mode", {"qk_matmul_output_mode": 5}, [(1, 2, 3, 8), (1, 2, 4, 8), (1, 2, 4, 8)], "qk_matmul_output_mode 5"),
])
def test_attention_refusals(what, node_kw, shapes, match):
    ins = [(n, np.zeros(s, np.float32)) for n, s in zip("qkv", shapes)]
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], **node_kw)
    with pytest.raises(ValueError, match=match):
        run_weft(model(node, ins, 23), ins)


def test_attention_refuses_a_mask_longer_than_the_keys():
    ins = [("q", np.zeros((1, 1, 2, 4), np.float32)), ("k", np.zeros((1, 1, 3, 4), np.float32)), ("v", np.zeros((1, 1, 3, 4), np.float32)),
           ("m", np.ones((2, 5), np.bool_))]
    node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y"])
    with pytest.raises(ValueError, match="covers 5 keys; there are 3"):
        run_weft(model(node, ins, 23), ins)


def rotary_ref(x, cos, sin, pos=None, interleaved=0, rot=0, heads=0):
    x = x.astype(np.float64)
    shape = x.shape
    if x.ndim == 4:
        x = x.transpose(0, 2, 1, 3)
    else:
        x = x.reshape(shape[0], shape[1], heads, -1)
    rot = rot or x.shape[-1]
    if pos is not None:
        cos, sin = cos[pos], sin[pos]
    cos, sin = cos[:, :, None, :].astype(np.float64), sin[:, :, None, :].astype(np.float64)
    xr, rest = x[..., :rot], x[..., rot:]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    else:
        x1, x2 = xr[..., : rot // 2], xr[..., rot // 2:]
    a, b = x1 * cos - x2 * sin, x1 * sin + x2 * cos
    turned = np.stack([a, b], -1).reshape(xr.shape) if interleaved else np.concatenate([a, b], -1)
    out = np.concatenate([turned, rest], -1)
    return out.transpose(0, 2, 1, 3) if len(shape) == 4 else out.reshape(shape)


@pytest.mark.parametrize("rank,interleaved,rot,with_pos", [(4, 0, 0, True), (4, 1, 0, True), (3, 0, 4, True), (3, 1, 6, False),
                                                           (4, 0, 8, False), (4, 1, 4, False)])
def test_rotary_embedding(rank, interleaved, rot, with_pos):
    rng = np.random.default_rng(rank * 10 + interleaved * 3 + rot)
    B, N, S, h = 2, 3, 5, 8
    x = rand(rng, (B, N, S, h)) if rank == 4 else rand(rng, (B, S, N * h))
    half = (rot or h) // 2
    if with_pos:
        cos, sin = rand(rng, (16, half)), rand(rng, (16, half))
        pos = rng.integers(0, 16, (B, S)).astype(np.int64)
    else:
        cos, sin = rand(rng, (B, S, half)), rand(rng, (B, S, half))
        pos = None
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rot}
    if rank == 3:
        attrs["num_heads"] = N
    names = ["x", "c", "s"] + (["p"] if with_pos else [])
    ins = [("x", x), ("c", cos), ("s", sin)] + ([("p", pos)] if with_pos else [])
    node = helper.make_node("RotaryEmbedding", names, ["y"], **attrs)
    (y,) = run_weft(model(node, ins, 23), ins)
    np.testing.assert_allclose(y, rotary_ref(x, cos, sin, pos, interleaved, rot, N), rtol=1e-5, atol=1e-5)
    (ref,) = ReferenceEvaluator(model(node, ins, 23)).run(None, dict(ins))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("precision,ok", [(1, True), (10, True), (11, True), (16, True), (27, False)])
def test_attention_softmax_precision_takes_onnx_type_codes(precision, ok):
    rng = np.random.default_rng(precision)
    ins = [(n, rand(rng, s)) for n, s in (("q", (1, 2, 3, 4)), ("k", (1, 2, 5, 4)), ("v", (1, 2, 5, 4)))]
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], softmax_precision=precision)
    if not ok:
        with pytest.raises(ValueError, match="softmax_precision 27 is not an ONNX float type"):
            run_weft(model(node, ins, 23), ins)
        return
    (y,) = run_weft(model(node, ins, 23), ins)
    np.testing.assert_allclose(y, attention_ref(*(v for _, v in ins))[0], rtol=2e-5, atol=2e-5)


def test_rotary_embedding_refuses_caches_of_another_width():
    rng = np.random.default_rng(1)
    x, pos = rand(rng, (1, 3, 8)), np.zeros((1, 3), np.int64)
    for cw, sw in ((3, 3), (2, 1)):
        ins = [("x", x), ("c", rand(rng, (4, cw))), ("s", rand(rng, (4, sw))), ("p", pos)]
        node = helper.make_node("RotaryEmbedding", ["x", "c", "s", "p"], ["y"], num_heads=2)
        with pytest.raises((ValueError, RuntimeError), match="Reshape"):
            run_weft(model(node, ins, 23), ins)


def test_rotary_embedding_of_an_empty_sequence():
    x = np.zeros((1, 0, 8), np.float32)
    ins = [("x", x), ("c", np.ones((4, 2), np.float32)), ("s", np.ones((4, 2), np.float32)), ("p", np.zeros((1, 0), np.int64))]
    (y,) = run_weft(model(helper.make_node("RotaryEmbedding", ["x", "c", "s", "p"], ["y"], num_heads=2), ins, 23), ins)
    assert y.shape == (1, 0, 8)
