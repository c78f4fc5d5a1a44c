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
