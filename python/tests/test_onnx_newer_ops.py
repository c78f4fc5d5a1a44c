"""Operators and forms of the newer ONNX opsets (18-27) on random inputs, against NumPy
re-computations in float64 (the node suites cover the fixed examples): GroupNormalization with
per-channel (opset 21) and per-group (opsets 18-20) affine parameters, RMSNormalization, Swish,
Bitwise*, signed BitShift, float Mod with fmod=0, unsigned arithmetic, bool ReduceMax/ReduceMin,
SpaceToDepth's modes and Range with its opset-27 attribute."""
import os
import tempfile

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def run(node, inputs, opset, inits=()):
    ins = [helper.make_tensor_value_info(n, numpy_helper.from_array(v).data_type, list(v.shape)) for n, v in inputs]
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output],
                          initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    onnx.save(m, path)
    return weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([v for _, v in inputs])


def group_norm(x, scale, bias, groups, eps, per_group):
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    if per_group:
        scale, bias = np.repeat(scale, c // groups), np.repeat(bias, c // groups)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * scale.reshape(shape) + bias.reshape(shape)


@pytest.mark.parametrize("opset,groups,shape", [(21, 2, (2, 6, 5, 4)), (21, 6, (1, 6, 7)), (18, 3, (3, 6, 2, 2, 2)), (18, 1, (2, 4, 9))])
def test_group_normalization(opset, groups, shape):
    rng = np.random.default_rng(opset + groups)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    n_aff = groups if opset < 21 else shape[1]
    scale, bias = rng.standard_normal(n_aff).astype(np.float32), rng.standard_normal(n_aff).astype(np.float32)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups, epsilon=1e-4)
    (y,) = run(node, [("x", x), ("s", scale), ("b", bias)], opset)
    np.testing.assert_allclose(y, group_norm(x, scale, bias, groups, 1e-4, opset < 21), rtol=1e-5, atol=1e-5)


def test_group_normalization_refuses_groups_that_do_not_divide():
    x = np.zeros((1, 6, 2), np.float32)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4)
    with pytest.raises(ValueError, match="num_groups is 4; it must be positive and divide the 6 channels"):
        run(node, [("x", x), ("s", np.ones(6, np.float32)), ("b", np.zeros(6, np.float32))], 21)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_rms_normalization(axis):
    rng = np.random.default_rng(axis + 5)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    scale = rng.standard_normal(x.shape[axis:] if axis >= 0 else x.shape[axis:]).astype(np.float32)
    (y,) = run(helper.make_node("RMSNormalization", ["x", "s"], ["y"], axis=axis, epsilon=1e-5), [("x", x), ("s", scale)], 23)
    axes = tuple(range(axis % 3, 3))
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(axis=axes, keepdims=True) + 1e-5) * scale
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_swish():
    x = np.linspace(-30, 30, 121).astype(np.float32)
    (y,) = run(helper.make_node("Swish", ["x"], ["y"], alpha=0.7), [("x", x)], 24)
    x64 = x.astype(np.float64)
    # float32: alpha * x rounds to within |alpha * x| * 2^-24 (up to 21 * 6e-8 here), which exp turns
    # into that relative error of the result.
    np.testing.assert_allclose(y, x64 / (1 + np.exp(-0.7 * x64)), rtol=2e-6, atol=1e-30)


@pytest.mark.parametrize("dt", [np.int8, np.int32, np.int64, np.uint16, np.uint64])
def test_bitwise(dt):
    info = np.iinfo(dt)
    rng = np.random.default_rng(1)
    a = rng.integers(info.min, info.max, (3, 4), dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, (4,), dtype=dt, endpoint=True)
    for op, f in (("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or), ("BitwiseXor", np.bitwise_xor)):
        (y,) = run(helper.make_node(op, ["a", "b"], ["y"]), [("a", a), ("b", b)], 18)
        np.testing.assert_array_equal(y, f(a, b))
    (y,) = run(helper.make_node("BitwiseNot", ["a"], ["y"]), [("a", a)], 18)
    np.testing.assert_array_equal(y, np.invert(a))


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64])
def test_signed_bit_shift(dt):
    bits = np.iinfo(dt).bits
    x = np.array([-128, -7, -1, 0, 1, 5, 100, -100, 3, -3, 64, -64], dtype=dt)
    s = np.array([0, 1, 2, 3, bits - 1, bits, bits + 3, -1, -bits, 4, 1, 6], dtype=dt)
    for direction in ("LEFT", "RIGHT"):
        (y,) = run(helper.make_node("BitShift", ["x", "s"], ["y"], direction=direction), [("x", x), ("s", s)], 11)
        want = []
        for v, k in zip(x.astype(np.int64), s.astype(np.int64)):
            if k < 0 or k >= bits:
                want.append(-1 if direction == "RIGHT" and v < 0 else 0)
            elif direction == "RIGHT":
                want.append(v >> k)  # arithmetic
            else:
                want.append(((int(v) << int(k)) + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1)))  # wraps
        np.testing.assert_array_equal(y, np.array(want, dtype=dt))


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_float_mod_takes_the_divisor_sign(dt):
    special = np.array([0.0, -0.0, 1.5, -1.5, 7.25, -7.25, np.inf, -np.inf, np.nan, 3.0], dt)
    a, b = np.meshgrid(special, special)
    (y,) = run(helper.make_node("Mod", ["a", "b"], ["y"], fmod=0), [("a", a.ravel()), ("b", b.ravel())], 13)
    with np.errstate(all="ignore"):
        want = np.mod(a.ravel(), b.ravel())
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(np.signbit(y[y == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("dt", [np.uint16, np.uint32, np.uint64])
def test_unsigned_arithmetic_wraps(dt):
    info = np.iinfo(dt)
    rng = np.random.default_rng(3)
    a = rng.integers(0, info.max, 64, dtype=dt, endpoint=True)
    b = rng.integers(1, info.max, 64, dtype=dt, endpoint=True)
    for op, f in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", np.floor_divide)):
        (y,) = run(helper.make_node(op, ["a", "b"], ["y"]), [("a", a), ("b", b)], 14)
        np.testing.assert_array_equal(y, f(a, b))
    with pytest.raises(RuntimeError, match="division by zero"):
        run(helper.make_node("Div", ["a", "b"], ["y"]), [("a", a), ("b", np.zeros(64, dt))], 14)


def test_bool_reduce_max_min():
    rng = np.random.default_rng(4)
    x = rng.random((3, 4, 5)) < 0.3
    for op, f in (("ReduceMax", np.any), ("ReduceMin", np.all)):
        for axes in ([0], [1, 2], [-1]):
            axes_t = numpy_helper.from_array(np.array(axes, np.int64), "axes")
            (y,) = run(helper.make_node(op, ["x", "axes"], ["y"], keepdims=0), [("x", x)], 20, [axes_t])
            np.testing.assert_array_equal(y, f(x, axis=tuple(axes)))
    empty = np.zeros((2, 0), bool)
    axes_t = numpy_helper.from_array(np.array([1], np.int64), "axes")
    (mx,) = run(helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=0), [("x", empty)], 20, [axes_t])
    (mn,) = run(helper.make_node("ReduceMin", ["x", "axes"], ["y"], keepdims=0), [("x", empty)], 20, [axes_t])
    np.testing.assert_array_equal(mx, [False, False])
    np.testing.assert_array_equal(mn, [True, True])


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_modes(mode):
    x = np.arange(2 * 3 * 4 * 6, dtype=np.float32).reshape(2, 3, 4, 6)
    (y,) = run(helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode=mode), [("x", x)], 13)
    r = x.reshape(2, 3, 2, 2, 3, 2)
    perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    np.testing.assert_array_equal(y, r.transpose(perm).reshape(2, 12, 2, 3))


def test_range_with_its_opset_27_attribute():
    start, limit, delta = np.array(0.5, np.float16), np.array(9.0, np.float16), np.array(0.75, np.float16)
    node = helper.make_node("Range", ["s", "l", "d"], ["y"], stash_type=1)
    (y,) = run(node, [("s", start), ("l", limit), ("d", delta)], 27)
    np.testing.assert_array_equal(y, (0.5 + 0.75 * np.arange(12)).astype(np.float16))


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_cumprod(exclusive, reverse, dtype):
    rng = np.random.default_rng(exclusive * 2 + reverse)
    x = (rng.integers(-3, 4, (3, 5, 4)) if np.issubdtype(dtype, np.integer) else rng.uniform(0.5, 1.5, (3, 5, 4))).astype(dtype)
    for axis in (0, 1, -1):
        node = helper.make_node("CumProd", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse)
        (y,) = run(node, [("x", x), ("a", np.array(axis, np.int64))], 26)
        v = np.flip(x, axis) if reverse else x
        want = np.cumprod(v.astype(np.float64), axis=axis)
        if exclusive:
            want = np.concatenate([np.ones_like(np.take(want, [0], axis)), np.delete(want, -1, axis)], axis)
        want = np.flip(want, axis) if reverse else want
        np.testing.assert_allclose(y, want.astype(dtype), rtol=1e-6)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode):
    rng = np.random.default_rng(1)
    cache = rng.standard_normal((3, 2, 8, 4)).astype(np.float32)
    update = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
    idx = np.array([0, 5, 7] if mode == "circular" else [0, 5, 2], np.int64)
    node = helper.make_node("TensorScatter", ["c", "u", "i"], ["y"], mode=mode)
    (y,) = run(node, [("c", cache), ("u", update), ("i", idx)], 24)
    want = cache.copy()
    for b in range(3):
        for s in range(3):
            want[b, :, (idx[b] + s) % 8] = update[b, :, s]
    np.testing.assert_array_equal(y, want)
    if mode == "linear":
        node = helper.make_node("TensorScatter", ["c", "u", "i"], ["y"], mode=mode)
        with pytest.raises(RuntimeError, match="write index 7 of sequence 2 with 3 positions does not fit the cache's 8"):
            run(node, [("c", cache), ("u", update), ("i", np.array([0, 0, 7], np.int64))], 24)


@pytest.mark.parametrize("k,with_bias,with_past,act", [(4, True, True, "silu"), (3, False, False, "none"), (1, True, False, "swish"),
                                                       (5, False, True, "none")])
def test_causal_conv_with_state(k, with_bias, with_past, act):
    rng = np.random.default_rng(k)
    B, C, L = 2, 3, 6
    x, w = rng.standard_normal((B, C, L)).astype(np.float32), rng.standard_normal((C, 1, k)).astype(np.float32)
    b = rng.standard_normal(C).astype(np.float32)
    past = rng.standard_normal((B, C, k - 1)).astype(np.float32)
    names = ["x", "w", "b" if with_bias else "", "p" if with_past else ""]
    ins = [("x", x), ("w", w)] + ([("b", b)] if with_bias else []) + ([("p", past)] if with_past else [])
    node = helper.make_node("CausalConvWithState", names, ["y", "s"], activation=act)
    y, state = run(node, ins, 27)
    padded = np.concatenate([past if with_past else np.zeros((B, C, k - 1)), x], axis=2).astype(np.float64)
    want = np.stack([sum(w[None, :, 0, j, None] * padded[:, :, j:j + L] for j in range(k))], 0)[0]
    if with_bias:
        want = want + b[None, :, None]
    if act != "none":
        want = want / (1 + np.exp(-want))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(state, padded[:, :, L:].astype(np.float32))


def test_swiglu():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 7)).astype(np.float32), rng.standard_normal((4, 7)).astype(np.float32)
    (y,) = run(helper.make_node("SwiGLU", ["a", "b"], ["y"], alpha=1.7), [("a", a), ("b", b)], 28)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(y, a64 / (1 + np.exp(-1.7 * a64)) * b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p,axis", [(1, 0), (2, 1), (2, -1), (1, -1)])
def test_lp_normalization(p, axis):
    rng = np.random.default_rng(p + axis)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x[1, 2] = 0  # a zero norm along the last axis gives zeros
    (y,) = run(helper.make_node("LpNormalization", ["x"], ["y"], p=p, axis=axis), [("x", x)], 22)
    norm = np.linalg.norm(x.astype(np.float64), ord=p, axis=axis, keepdims=True)
    np.testing.assert_allclose(y, np.where(norm == 0, 0, x / np.where(norm == 0, 1, norm)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p,attrs", [(2, {"kernel_shape": [3, 3]}), (3, {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 0, 1, 2]}),
                                     (1, {"kernel_shape": [2, 2], "dilations": [2, 1]})])
def test_lp_pool(p, attrs):
    rng = np.random.default_rng(p)
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    (y,) = run(helper.make_node("LpPool", ["x"], ["y"], p=p, **attrs), [("x", x)], 22)
    kh, kw = attrs["kernel_shape"]
    sh, sw = attrs.get("strides", [1, 1])
    dh, dw = attrs.get("dilations", [1, 1])
    t, lft, b, r = attrs.get("pads", [0, 0, 0, 0])
    xp = np.pad(np.abs(x.astype(np.float64)) ** p, ((0, 0), (0, 0), (t, b), (lft, r)))
    oh, ow = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1, (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    want = np.zeros((2, 3, oh, ow))
    for i in range(oh):
        for j in range(ow):
            want[:, :, i, j] = xp[:, :, i * sh:i * sh + (kh - 1) * dh + 1:dh, j * sw:j * sw + (kw - 1) * dw + 1:dw].sum((2, 3))
    np.testing.assert_allclose(y, want ** (1 / p), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,axes", [([3, 8, 2], None), ([5, 2], [1, 2]), ([7], [-1])])
def test_center_crop_pad(shape, axes):
    x = np.arange(4 * 5 * 4, dtype=np.float32).reshape(4, 5, 4)
    kw = {} if axes is None else {"axes": axes}
    (y,) = run(helper.make_node("CenterCropPad", ["x", "s"], ["y"], **kw), [("x", x), ("s", np.array(shape, np.int64))], 18)
    want = x
    for a, s in zip(axes if axes is not None else range(3), shape):
        a = a % 3
        n = want.shape[a]
        if s < n:
            start = (n - s) // 2
            want = np.take(want, range(start, start + s), axis=a)
        elif s > n:
            before = (s - n) // 2
            pad = [(0, 0)] * 3
            pad[a] = (before, s - n - before)
            want = np.pad(want, pad)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [2, 1, 3, 1, 4], [2, 1, 1, 3]])
def test_affine_grid(align, size):
    rng = np.random.default_rng(align + len(size))
    nd = len(size) - 2
    theta = rng.standard_normal((2, nd, nd + 1)).astype(np.float32)
    (y,) = run(helper.make_node("AffineGrid", ["t", "s"], ["y"], align_corners=align), [("t", theta), ("s", np.array(size, np.int64))], 20)

    def coords(n):
        i = np.arange(n, dtype=np.float64)
        return (-1 + 2 * i / (n - 1) if n > 1 else np.zeros(1)) if align else -1 + (2 * i + 1) / n

    axes = [coords(n) for n in size[2:]]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    homo = np.stack([m for m in reversed(mesh)] + [np.ones_like(mesh[0])], -1)  # (x, y, [z], 1)
    want = np.einsum("bkj,...j->b...k", theta.astype(np.float64), homo)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    torch = pytest.importorskip("torch")
    if nd == 2 or align == 0:  # PyTorch's affine_grid, the source of exported AffineGrids
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its note on unit-size grids with align_corners
            t = torch.nn.functional.affine_grid(torch.from_numpy(theta).double(), size, align_corners=bool(align))
        np.testing.assert_allclose(y, t.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rule,decay_w,beta_w,heads", [("linear", 0, 0, (2, 2)), ("gated", "h", 0, (4, 2)), ("delta", 0, "h", (2, 1)),
                                                       ("gated_delta", "hd", 1, (4, 4)), ("gated_delta", "h", "h", (6, 2))])
@pytest.mark.parametrize("with_past", [False, True])
def test_linear_attention(rule, decay_w, beta_w, heads, with_past):
    rng = np.random.default_rng(len(rule) + with_past)
    Hq, Hkv = heads
    B, T, dk, dv = 2, 5, 4, 3
    q, k = rng.standard_normal((B, T, Hq * dk)).astype(np.float32), rng.standard_normal((B, T, Hkv * dk)).astype(np.float32)
    v = rng.standard_normal((B, T, Hkv * dv)).astype(np.float32)
    past = rng.standard_normal((B, Hkv, dk, dv)).astype(np.float32)
    decay = None if not decay_w else -rng.random((B, T, Hkv if decay_w == "h" else Hkv * dk)).astype(np.float32)
    beta = None if not beta_w else rng.random((B, T, Hkv if beta_w == "h" else 1)).astype(np.float32)
    names = ["q", "k", "v", "p" if with_past else "", "d" if decay is not None else "", "b" if beta is not None else ""]
    ins = [("q", q), ("k", k), ("v", v)] + ([("p", past)] if with_past else []) + ([("d", decay)] if decay is not None else []) + \
        ([("b", beta)] if beta is not None else [])
    node = helper.make_node("LinearAttention", names, ["y", "s"], q_num_heads=Hq, kv_num_heads=Hkv, update_rule=rule)
    y, state = run(node, ins, 27)
    # float64 recurrence
    S = past.astype(np.float64).copy() if with_past else np.zeros((B, Hkv, dk, dv))
    want = np.zeros((B, T, Hq, dv))
    for t in range(T):
        kt = k[:, t].reshape(B, Hkv, dk).astype(np.float64)
        vt = v[:, t].reshape(B, Hkv, dv).astype(np.float64)
        if decay is not None:
            g = decay[:, t].astype(np.float64)
            S = S * np.exp(g.reshape(B, Hkv, 1, 1) if decay_w == "h" else g.reshape(B, Hkv, dk, 1))
        if beta is not None:
            bt = beta[:, t].astype(np.float64).reshape(B, -1, 1)
            vt = bt * (vt - np.einsum("bhdm,bhd->bhm", S, kt))
        S = S + kt[..., None] * vt[..., None, :]
        qt = q[:, t].reshape(B, Hq, dk).astype(np.float64)
        want[:, t] = np.einsum("bhd,bhdm->bhm", qt, np.repeat(S, Hq // Hkv, axis=1)) / np.sqrt(dk)
    np.testing.assert_allclose(y, want.reshape(B, T, -1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(state, S, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("scale_type", [np.float16, np.float32])
def test_qlinear_matmul_half_scales(scale_type):
    rng = np.random.default_rng(9)
    a, b = rng.integers(-128, 128, (3, 5)).astype(np.int8), rng.integers(-128, 128, (5, 4)).astype(np.int8)
    sa, sb, sy = (np.array(v, scale_type) for v in (0.05, 0.02, 0.5))
    za, zb, zy = np.array(3, np.int8), np.array(-2, np.int8), np.array(1, np.int8)
    node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])
    (y,) = run(node, [("a", a), ("sa", sa), ("za", za), ("b", b), ("sb", sb), ("zb", zb), ("sy", sy), ("zy", zy)], 21)
    acc = (a.astype(np.int64) - 3) @ (b.astype(np.int64) + 2)
    scale = np.float32(sa) * np.float32(sb) / np.float32(sy)
    want = np.clip(np.rint(acc * np.float64(scale)) + 1, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("axis", [1, 2, -2])
def test_dft_axis_known_only_when_it_runs(axis):
    rng = np.random.default_rng(axis + 3)
    x = rng.standard_normal((2, 6, 5, 1)).astype(np.float32)
    node = helper.make_node("DFT", ["x", "", "a"], ["y"])
    (y,) = run(node, [("x", x), ("a", np.array(axis, np.int64))], 20)
    want = np.fft.fft(x[..., 0].astype(np.float64), axis=axis % 4)  # the axis counts the trailing dim
    np.testing.assert_allclose(y, np.stack([want.real, want.imag], -1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis,block", [(0, 2), (1, 3), (-1, 4), (1, 8)])
def test_blocked_dequantize_and_quantize(axis, block):
    rng = np.random.default_rng(block)
    shape = (4, 6, 5)
    ax = axis % 3
    sshape = list(shape)
    sshape[ax] = -(-shape[ax] // block)
    x = rng.integers(-128, 128, shape).astype(np.int8)
    scale = rng.uniform(0.01, 0.1, sshape).astype(np.float32)
    zp = rng.integers(-5, 5, sshape).astype(np.int8)
    expand = lambda t: np.repeat(t, block, axis=ax).take(range(shape[ax]), axis=ax)  # noqa: E731
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=axis, block_size=block)
    (y,) = run(node, [("x", x), ("s", scale), ("z", zp)], 21)
    want = (x.astype(np.float64) - expand(zp)) * expand(scale)
    np.testing.assert_allclose(y, want, rtol=1e-6)
    f = rng.standard_normal(shape).astype(np.float32)
    node = helper.make_node("QuantizeLinear", ["f", "s", "z"], ["q"], axis=axis, block_size=block)
    (q,) = run(node, [("f", f), ("s", scale), ("z", zp)], 21)
    np.testing.assert_array_equal(q, np.clip(np.rint(f / expand(scale)) + expand(zp), -128, 127).astype(np.int8))
    m = helper.make_model(helper.make_graph([node], "g", [helper.make_tensor_value_info(n, numpy_helper.from_array(v).data_type, list(v.shape))
                                                           for n, v in (("f", f), ("s", scale), ("z", zp))],
                                            [helper.make_tensor_value_info("q", TensorProto.INT8, None)]),
                          opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    from onnx.reference import ReferenceEvaluator
    np.testing.assert_array_equal(q, ReferenceEvaluator(m).run(None, {"f": f, "s": scale, "z": zp})[0])


def test_blocked_quantize_refuses_a_scale_of_the_wrong_shape():
    node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=1, block_size=2)
    with pytest.raises(ValueError, match=r"with block_size 2 the scale \[2,2\] must have the shape of \[2,6\] but ceil"):
        run(node, [("x", np.zeros((2, 6), np.int8)), ("s", np.ones((2, 2), np.float32))], 21)


def test_quantize_output_dtype():
    x = np.array([-300.0, -1.2, 0.4, 70000.0], np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=TensorProto.INT16)
    (y,) = run(node, [("x", x), ("s", np.array(1.0, np.float32))], 21)
    assert y.dtype == np.int16
    np.testing.assert_array_equal(y, [-300, -1, 0, 32767])
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], output_dtype=TensorProto.INT16)
    with pytest.raises(ValueError, match="output_dtype int16 differs from the zero point's type int8"):
        run(node, [("x", x), ("s", np.array(1.0, np.float32)), ("z", np.array(0, np.int8))], 21)


def test_tensor_scatter_indices_near_the_int64_limit():
    big = np.iinfo(np.int64).max
    cache = np.zeros((2, 7, 3), np.float32)
    update = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3) + 1
    node = helper.make_node("TensorScatter", ["c", "u", "i"], ["y"], axis=1, mode="circular")
    (y,) = run(node, [("c", cache), ("u", update), ("i", np.array([big, 2], np.int64))], 24)
    want = cache.copy()
    for b, start in enumerate((big % 7, 2)):
        for s in range(3):
            want[b, (start + s) % 7] = update[b, s]
    np.testing.assert_array_equal(y, want)
    node = helper.make_node("TensorScatter", ["c", "u", "i"], ["y"], axis=1)
    with pytest.raises(RuntimeError, match="does not fit the cache's 7"):
        run(node, [("c", cache), ("u", update), ("i", np.array([big - 1, 0], np.int64))], 24)


def test_pool_window_larger_than_the_input_gives_an_empty_output():
    x = np.arange(3, dtype=np.float32).reshape(1, 1, 3)
    for op in ("MaxPool", "AveragePool", "LpPool"):
        (y,) = run(helper.make_node(op, ["x"], ["y"], kernel_shape=[4]), [("x", x)], 18)
        assert y.shape == (1, 1, 0)


def test_lp_pool_refuses_ceil_mode():
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    with pytest.raises(ValueError, match="ceil_mode=1 is not supported"):
        run(helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2], strides=[2], ceil_mode=1), [("x", x)], 18)


@pytest.mark.parametrize("op,attrs,inputs,match", [
    ("LpNormalization", {"p": 1.0}, [np.ones((2, 3), np.float32)], "attribute 'p' must be an int"),
    ("SwiGLU", {"alpha": "x"}, [np.ones(3, np.float32), np.ones(3, np.float32)], "attribute 'alpha' must be a float"),
    ("CenterCropPad", {"axes": [0.0]}, [np.ones((3, 4), np.float32), np.array([2], np.int64)], "attribute 'axes' must be a list of ints"),
])
def test_rewritten_ops_refuse_mistyped_attributes(op, attrs, inputs, match):
    names = ["a", "b"][:len(inputs)]
    with pytest.raises(ValueError, match=match):
        run(helper.make_node(op, names, ["y"], **attrs), list(zip(names, inputs)), 28)


@pytest.mark.parametrize("op,first,attrs,inputs", [
    ("BitCast", 26, {"to": TensorProto.INT32}, [np.ones(3, np.float32)]),
    ("Gelu", 20, {}, [np.ones(3, np.float32)]),
    ("Mish", 18, {}, [np.ones(3, np.float32)]),
    ("Trilu", 14, {}, [np.ones((3, 3), np.float32)]),
])
def test_an_operator_older_than_the_model_opset_is_refused(op, first, attrs, inputs):
    names = ["a", "b"][:len(inputs)]
    node = helper.make_node(op, names, ["y"], **attrs)
    with pytest.raises(ValueError, match=rf"\({op}\): ONNX defines {op} from opset {first}; the model imports opset {first - 1}"):
        run(node, list(zip(names, inputs)), first - 1)
    assert run(node, list(zip(names, inputs)), first)[0].shape == inputs[0].shape  # its own opset imports


def test_layer_normalization_below_opset_17_as_onnx_runtime_writes_it():
    # ONNX Runtime's optimizer fuses LayerNormalization into files of any opset (it defines the
    # operator in the ONNX domain from opset 1); such a file imports.
    x, scale, bias = np.random.default_rng(4).standard_normal((2, 5)).astype(np.float32), np.ones(5, np.float32), np.zeros(5, np.float32)
    (y,) = run(helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"]), [("x", x), ("s", scale), ("b", bias)], 13)
    want = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
