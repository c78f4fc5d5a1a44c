"""8-bit products with values that overflow 16-bit pair sums (uint8 255 x int8 127, twice, is
64770): QLinearMatMul, QLinearConv and com.microsoft's MatMulIntegerToFloat against exact NumPy
re-computations (int64 sums, requantized in float32 as ONNX Runtime's kernels do), on every CPU.
ONNX Runtime itself is the reference only where its own sums are exact (ort_int8.py)."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

T = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.float32: TensorProto.FLOAT}


def compile_model(tmp_path, node, inputs, out_type, inits, domain=None):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, T[dt], list(s)) for n, dt, s in inputs],
                          [helper.make_tensor_value_info("y", out_type, None)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=opsets, ir_version=8), path)
    return weft.Session(use_env_path=False, threads=2).compile(weft.import_onnx(path))


def extreme(rng, shape, dtype):
    """Mostly the range's ends (where 16-bit pair sums saturate), some values between."""
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    v = rng.choice([lo, hi, hi - 1, lo + 1], size=shape).astype(np.int64)
    mid = rng.integers(lo, hi + 1, shape)
    return np.where(rng.random(shape) < 0.2, mid, v).astype(dtype)


def requantize(acc, scale, zp, dtype):
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    return np.clip(np.rint(acc.astype(np.float32) * np.float32(scale)) + zp, lo, hi).astype(dtype)


@pytest.mark.parametrize("m,k,n", [(2, 33, 20), (37, 256, 48), (1, 1024, 16)])
def test_qlinear_matmul_sums_exactly(tmp_path, m, k, n):
    rng = np.random.default_rng(k)
    a, b = extreme(rng, (m, k), np.uint8), extreme(rng, (k, n), np.int8)
    bs = rng.uniform(0.0005, 0.002, n).astype(np.float32)
    inits = {"b": b, "as": np.float32(0.02), "az": np.uint8(0), "bs": bs, "bz": np.zeros(n, np.int8), "ys": np.float32(40.0),
             "yz": np.uint8(128)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    (y,) = compile_model(tmp_path, node, [("a", np.uint8, a.shape)], TensorProto.UINT8, inits).run([a])
    acc = a.astype(np.int64) @ b.astype(np.int64)
    assert np.abs(acc).max() > 32767 * 2  # sums that 16-bit pair lanes would clip
    np.testing.assert_array_equal(y, requantize(acc, np.float32(0.02) * bs / np.float32(40.0), 128, np.uint8))


@pytest.mark.parametrize("group,stride,dilation", [(1, 1, 1), (2, 2, 1), (1, 1, 2)])
def test_qlinear_conv_sums_exactly(tmp_path, group, stride, dilation):
    rng = np.random.default_rng(group * 10 + stride + dilation)
    x = extreme(rng, (1, 8, 9, 10), np.uint8)
    w = extreme(rng, (6, 8 // group, 3, 3), np.int8)
    ws = rng.uniform(0.0005, 0.002, 6).astype(np.float32)
    inits = {"xs": np.float32(0.03), "xz": np.uint8(3), "w": w, "ws": ws, "wz": np.zeros(6, np.int8), "ys": np.float32(30.0),
             "yz": np.uint8(100)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], group=group, strides=[stride, stride],
                            dilations=[dilation, dilation], pads=[1, 1, 1, 1])
    (y,) = compile_model(tmp_path, node, [("x", np.uint8, x.shape)], TensorProto.UINT8, inits).run([x])
    xp = np.pad(x.astype(np.int64) - 3, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh = (xp.shape[2] - dilation * 2 - 1) // stride + 1
    ow = (xp.shape[3] - dilation * 2 - 1) // stride + 1
    acc = np.zeros((1, 6, oh, ow), np.int64)
    cg, og = 8 // group, 6 // group
    for o in range(6):
        g = o // og
        for ky in range(3):
            for kx in range(3):
                patch = xp[0, g * cg:(g + 1) * cg, ky * dilation:ky * dilation + stride * (oh - 1) + 1:stride,
                           kx * dilation:kx * dilation + stride * (ow - 1) + 1:stride]
                acc[0, o] += np.tensordot(w[o, :, ky, kx].astype(np.int64), patch, axes=1)
    assert np.abs(acc).max() > 32767 * 2
    scale = (np.float32(0.03) * ws / np.float32(30.0)).astype(np.float32).reshape(1, 6, 1, 1)
    np.testing.assert_array_equal(y, requantize(acc, scale, 100, np.uint8))


def test_matmul_integer_to_float_sums_exactly(tmp_path):
    rng = np.random.default_rng(4)
    a, b = extreme(rng, (5, 300), np.uint8), extreme(rng, (300, 24), np.int8)
    bs = rng.uniform(0.001, 0.01, 24).astype(np.float32)
    inits = {"b": b, "as": np.float32(0.05), "bs": bs, "az": np.uint8(0), "bz": np.zeros(24, np.int8)}
    node = helper.make_node("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz"], ["y"], domain="com.microsoft")
    (y,) = compile_model(tmp_path, node, [("a", np.uint8, a.shape)], TensorProto.FLOAT, inits, domain="com.microsoft").run([a])
    acc = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_allclose(y, acc * (0.05 * bs.astype(np.float64)), rtol=1e-6)
