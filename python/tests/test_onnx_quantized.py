"""ONNX's quantization operators against ONNX Runtime on random data: a QDQ graph (QuantizeLinear /
DequantizeLinear around a float Conv, per-tensor and per-channel), QLinearConv with per-channel
weight scales, groups, strides and padding, QLinearMatMul, MatMulInteger with per-row and
per-column zero points and batch broadcasting, ConvInteger, DynamicQuantizeLinear; and the errors
for bad scales and zero points."""
import os
import subprocess

import numpy as np
import pytest

import weft
from ort_int8 import skip_unless_ort_u8s8_exact

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

T = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32}


def save(tmp_path, nodes, inputs, outputs, inits, name="q.onnx", opset=13):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, T[dt], list(s)) for n, dt, s in inputs],
                          [helper.make_tensor_value_info(n, T[dt], None) for n, dt in outputs],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    path = str(tmp_path / name)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8), path)
    return path


def both(path, feeds):
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(list(feeds.values()))
    return got, want


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_qdq_convolution_matches_onnxruntime(tmp_path, per_channel, qtype):
    rng = np.random.default_rng(1 + per_channel)
    zp = 3 if qtype == np.uint8 else -2
    w = rng.standard_normal([6, 4, 3, 3]).astype(np.float32) * 0.3
    w_scale = (np.abs(w).reshape(6, -1).max(1) / 127).astype(np.float32) if per_channel else np.float32(np.abs(w).max() / 127)
    wq = np.clip(np.rint(w / (w_scale.reshape(6, 1, 1, 1) if per_channel else w_scale)), -127, 127).astype(np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd", "b"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["out"])]
    inits = {"xs": np.float32(0.02), "xz": qtype(zp), "wq": wq, "ws": w_scale, "wz": np.zeros(6, np.int8) if per_channel else np.int8(0),
             "b": rng.standard_normal(6).astype(np.float32), "ys": np.float32(0.05), "yz": qtype(zp)}
    path = save(tmp_path, nodes, [("x", np.float32, [2, 4, 7, 8])], [("out", np.float32), ("yq", qtype)], inits)
    x = (rng.standard_normal([2, 4, 7, 8]) * 1.5).astype(np.float32)
    got, want = both(path, {"x": x})
    assert got[1].dtype == qtype
    # ONNX Runtime fuses the QDQ pattern into integer kernels; the float path here may round a
    # value sitting on a rounding boundary the other way: at most one step, rarely.
    diff = np.abs(got[1].astype(np.int32) - want[1].astype(np.int32))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01
    assert len(np.unique(want[1])) > 20


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_qlinear_conv_matches_onnxruntime(tmp_path, qtype):
    if qtype == np.uint8:
        skip_unless_ort_u8s8_exact()
    rng = np.random.default_rng(3)
    lo, hi = (-128, 127) if qtype == np.int8 else (0, 255)
    x = rng.integers(lo, hi + 1, [1, 6, 9, 10]).astype(qtype)
    w = rng.integers(-127, 128, [8, 3, 3, 3]).astype(np.int8)
    w_scale = rng.uniform(0.001, 0.01, 8).astype(np.float32)
    inits = {"xs": np.float32(0.03), "xz": qtype(5 if qtype == np.uint8 else -4), "w": w, "ws": w_scale, "wz": np.zeros(8, np.int8),
             "ys": np.float32(0.2), "yz": qtype(7 if qtype == np.uint8 else 3), "b": rng.integers(-2000, 2000, 8).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], group=2, strides=[2, 1],
                            pads=[1, 0, 1, 2], dilations=[1, 2])
    path = save(tmp_path, [node], [("x", qtype, x.shape)], [("y", qtype)], inits)
    got, want = both(path, {"x": x})
    diff = np.abs(got[0].astype(np.int32) - want[0].astype(np.int32))
    assert got[0].shape == want[0].shape and diff.max() <= 1 and (diff > 0).mean() < 0.02
    assert len(np.unique(want[0])) > 20


def test_qlinear_matmul_and_matmul_integer_match_onnxruntime(tmp_path):
    skip_unless_ort_u8s8_exact()
    rng = np.random.default_rng(4)
    a = rng.integers(0, 256, [3, 5, 17]).astype(np.uint8)
    b = rng.integers(-128, 128, [17, 9]).astype(np.int8)
    inits = {"as": np.float32(0.02), "az": np.uint8(128), "bs": np.float32(0.01), "bz": np.int8(0), "ys": np.float32(0.1), "yz": np.uint8(120)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    path = save(tmp_path, [node], [("a", np.uint8, a.shape), ("b", np.int8, b.shape)], [("y", np.uint8)], inits, name="qmm.onnx")
    got, want = both(path, {"a": a, "b": b})
    diff = np.abs(got[0].astype(np.int32) - want[0].astype(np.int32))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.02 and len(np.unique(want[0])) > 20
    # MatMulInteger, B's batch broadcast: a scalar zero point for A and one per column of B
    # against ONNX Runtime, then one per row of A (which ONNX Runtime refuses) against NumPy
    a2 = rng.integers(0, 256, [2, 4, 6]).astype(np.uint8)
    b2 = rng.integers(0, 256, [1, 6, 5]).astype(np.uint8)
    bz = rng.integers(0, 256, 5).astype(np.uint8)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    path = save(tmp_path, [node], [("a", np.uint8, a2.shape), ("b", np.uint8, [6, 5])], [("y", np.int32)],
                {"az": np.uint8(77), "bz": bz}, name="mmi.onnx")
    got, want = both(path, {"a": a2, "b": b2[0]})
    np.testing.assert_array_equal(got[0], want[0])
    az = rng.integers(0, 256, 4).astype(np.uint8)
    path = save(tmp_path, [node], [("a", np.uint8, a2.shape), ("b", np.uint8, b2.shape)], [("y", np.int32)], {"az": az, "bz": bz},
                name="mmi_rows.onnx")
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([a2, b2])
    want64 = (a2.astype(np.int64) - az.reshape(4, 1)) @ (b2.astype(np.int64) - bz.reshape(1, 5))
    np.testing.assert_array_equal(got[0], want64)


def test_conv_integer_and_dynamic_quantize_match_onnxruntime(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, [2, 3, 6, 5]).astype(np.uint8)
    w = rng.integers(0, 256, [4, 3, 2, 2]).astype(np.uint8)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 1, 0, 0], strides=[1, 2])
    path = save(tmp_path, [node], [("x", np.uint8, x.shape)], [("y", np.int32)], {"w": w, "xz": np.uint8(100), "wz": np.uint8(128)}, name="ci.onnx")
    got, want = both(path, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    path = save(tmp_path, [node], [("x", np.float32, [3, 40])], [("y", np.uint8), ("s", np.float32), ("z", np.uint8)], {}, name="dq.onnx")
    for offset in (0.0, 4.0, -4.0):
        xf = (rng.standard_normal([3, 40]) + offset).astype(np.float32)
        got, want = both(path, {"x": xf})
        np.testing.assert_allclose(got[1], want[1], rtol=1e-7)
        assert got[2] == want[2]
        assert np.abs(got[0].astype(np.int32) - want[0].astype(np.int32)).max() <= 1


@pytest.mark.parametrize("btype", [np.int8, np.uint8])
def test_qlinear_matmul_with_per_column_weights(tmp_path, btype):
    """QLinearMatMul as quantize_static(per_channel=True) writes it: b_scale and b_zero_point one per
    column of the constant B; ONNX Runtime's bytes (the multiplier a_scale * b_scale[j] / y_scale
    per column), in the runtime and as generated C; a b_scale of another length is an error."""
    if btype == np.int8:
        skip_unless_ort_u8s8_exact()
    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, [2, 7, 33]).astype(np.uint8)
    lo, hi = (-128, 127) if btype == np.int8 else (0, 255)
    b = rng.integers(lo, hi + 1, [33, 20]).astype(btype)
    bz = np.zeros(20, btype) if btype == np.int8 else rng.integers(100, 156, 20).astype(btype)
    inits = {"b": b, "as": np.float32(0.02), "az": np.uint8(128), "bs": rng.uniform(0.002, 0.02, 20).astype(np.float32), "bz": bz,
             "ys": np.float32(0.07), "yz": np.uint8(120)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    path = save(tmp_path, [node], [("a", np.uint8, a.shape)], [("y", np.uint8)], inits, name="qmm_pc.onnx")
    got, want = both(path, {"a": a})
    assert len(np.unique(want[0])) > 50
    np.testing.assert_array_equal(got[0], want[0])
    res = build_and_run_c(tmp_path, path, {"a": a})
    assert res.returncode == 0, res.stdout + res.stderr
    inits["bs"] = inits["bs"][:7]
    inits["bz"] = inits["bz"][:7]
    path = save(tmp_path, [node], [("a", np.uint8, a.shape)], [("y", np.uint8)], inits, name="qmm_bad.onnx")
    with pytest.raises(Exception, match=r"b_scale \[7\] must be one value or one per column of b \(20\)"):
        weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([a])


@pytest.mark.parametrize("btype", [np.int8, np.uint8])
@pytest.mark.parametrize("per_column,bias", [(False, False), (True, True), (True, False)])
def test_matmul_integer_to_float_matches_onnxruntime(tmp_path, btype, per_column, bias):
    """com.microsoft's MatMulIntegerToFloat (ONNX Runtime's fused dynamic MatMul): the int32 sums
    times a_scale * b_scale[j], plus the bias; ONNX Runtime's floats exactly, and so are those of the
    C that weft aot writes."""
    if btype == np.int8:
        skip_unless_ort_u8s8_exact()
    rng = np.random.default_rng(80 + per_column * 2 + bias)
    m, k, n = 37, 96, 50
    lo, hi = (-128, 127) if btype == np.int8 else (0, 255)
    inits = {"b": rng.integers(lo, hi + 1, [k, n]).astype(btype),
             "bs": rng.uniform(0.001, 0.01, n if per_column else 1).astype(np.float32).reshape([n] if per_column else []),
             "bz": (np.zeros(n, btype) if btype == np.int8 else rng.integers(100, 156, n).astype(btype)) if per_column else btype(0 if btype == np.int8 else 128)}
    ins = ["a", "b", "as", "bs", "az", "bz"]
    if bias:
        inits["bias"] = rng.standard_normal(n).astype(np.float32)
        ins.append("bias")
    node = helper.make_node("MatMulIntegerToFloat", ins, ["y"], domain="com.microsoft")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [2, m, k]),
                                        helper.make_tensor_value_info("as", TensorProto.FLOAT, []),
                                        helper.make_tensor_value_info("az", TensorProto.UINT8, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v), k_) for k_, v in inits.items()])
    path = str(tmp_path / "mitf.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)], ir_version=8), path)
    feeds = {"a": rng.integers(0, 256, [2, m, k]).astype(np.uint8), "as": np.array(0.02, np.float32), "az": np.array(131, np.uint8)}
    got, want = both(path, feeds)
    np.testing.assert_array_equal(got[0], want[0])
    # weft aot's C: the runtime's floats bit for bit
    res = build_and_run_c(tmp_path, path, feeds)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamically_quantized_matmuls_run_fused(tmp_path, per_channel):
    """quantize_dynamic's MatMulInteger -> Cast -> Mul (-> Add bias) runs as MatMulIntegerToFloat: ONNX
    Runtime's floats exactly, one step per MatMul."""
    skip_unless_ort_u8s8_exact()
    from onnxruntime.quantization import quantize_dynamic
    rng = np.random.default_rng(90 + per_channel)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]), helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    inits = {"w1": rng.standard_normal([64, 48]).astype(np.float32) * 0.2, "b1": rng.standard_normal(48).astype(np.float32),
             "w2": rng.standard_normal([48, 24]).astype(np.float32) * 0.2}
    src = save(tmp_path, nodes, [("x", np.float32, [3, 10, 64])], [("y", np.float32)], inits, name="f.onnx")
    dst = str(tmp_path / "d.onnx")
    quantize_dynamic(src, dst, per_channel=per_channel)
    feeds = {"x": rng.standard_normal([3, 10, 64]).astype(np.float32)}
    got, want = both(dst, feeds)
    np.testing.assert_array_equal(got[0], want[0])
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", dst], capture_output=True, text=True, check=True).stdout
    assert steps.count(" MatMulIntegerToFloat ") == 2 and " Cast " not in steps, steps


def test_bad_quantization_parameters_are_errors(tmp_path):
    x = np.ones([2, 3], np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    path = save(tmp_path, [node], [("x", np.float32, [2, 3])], [("y", np.int8)], {"s": np.float32([0.1, 0.2]), "z": np.int8([0, 0])},
                name="a.onnx")
    with pytest.raises(Exception, match="the scale has 2 values for axis 1"):
        weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    path = save(tmp_path, [node], [("x", np.float32, [2, 3])], [("y", np.int8)], {"s": np.float32([0.1, 0.0, 0.2]), "z": np.int8([0, 0, 0])},
                name="b.onnx")
    with pytest.raises(Exception, match="scale 1 is 0.0+; it must be positive"):
        weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    # An infinite scale (what calibration over values that overflow writes) maps finite values to the
    # zero point, as ONNX Runtime runs it; a scalar zero point beside a [1] scale is per-tensor.
    path = save(tmp_path, [node], [("x", np.float32, [2, 3])], [("y", np.int8)], {"s": np.float32([0.1, np.inf, 0.2]), "z": np.int8([0, 3, 0])},
                name="inf.onnx")
    xi = np.float32([[1, 2, 3], [-4, 5e30, -np.inf]])
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([xi])[0]
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": xi})[0]
    assert np.array_equal(got[:, :2], want[:, :2]) and (got[:1, 1] == 3).all()
    dq = helper.make_node("DequantizeLinear", ["q", "s1", "z0"], ["f"])
    path = save(tmp_path, [dq], [("q", np.int32, [4])], [("f", np.float32)], {"s1": np.float32([0.5]), "z0": np.int32(0)}, name="bias.onnx")
    q = np.int32([1, -2, 300, 7])
    assert np.array_equal(weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([q])[0],
                          ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"q": q})[0])
    path = save(tmp_path, [node], [("x", np.float32, [2, 3])], [("y", np.int8)], {"s": np.float32([0.1, 0.1, 0.2]), "z": np.int8([0, 0])},
                name="c.onnx")
    with pytest.raises(Exception, match=r"zero point \[2\] must have the scale's shape \[3\]"):
        weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    path = save(tmp_path, [node], [("x", np.float32, [2, 3])], [("y", np.uint8), ("s", np.float32), ("z", np.uint8)], {}, name="d.onnx")
    with pytest.raises(Exception, match="it must be finite"):
        weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([np.float32([[1, np.inf, 0], [0, 0, 0]])])


def build_and_run_c(tmp_path, path, inputs, atol=0.0, rtol=0.0):
    """weft aot on `path` with Weft's runtime outputs as the test case's golden values; the module
    built as strict C99 and run."""
    import glob
    import os
    import shutil
    import subprocess
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    out = tmp_path / "c"
    weft.generate_c(path, out, prefix="q", test_inputs=inputs, atol=atol, rtol=rtol)
    exe = str(tmp_path / "q_test")
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test",
                    *sorted(glob.glob(f"{out}/src/*.c")), *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    return subprocess.run([exe], capture_output=True, text=True)


@pytest.mark.parametrize("axis", [0, 1])
def test_blocked_quantize_dequantize_as_c(tmp_path, axis):
    """Block-wise (opset 21) QuantizeLinear and DequantizeLinear: the runtime against NumPy, and weft
    aot's C equal to the runtime bit for bit."""
    rng = np.random.default_rng(axis)
    x = rng.standard_normal([6, 10]).astype(np.float32)
    sshape = [3, 10] if axis == 0 else [6, 4]  # blocks of 2 rows, or of 3 columns (the last one short)
    s = rng.uniform(0.01, 0.05, sshape).astype(np.float32)
    z = rng.integers(-4, 5, sshape).astype(np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis, block_size=2 if axis == 0 else 3),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis, block_size=2 if axis == 0 else 3)]
    path = save(tmp_path, nodes, [("x", np.float32, x.shape)], [("y", np.float32)], {"s": s, "z": z}, name="blocked.onnx", opset=21)
    (y,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    block = 2 if axis == 0 else 3
    se = np.repeat(s, block, axis=axis).take(range(x.shape[axis]), axis=axis)
    ze = np.repeat(z, block, axis=axis).take(range(x.shape[axis]), axis=axis).astype(np.float32)
    q = np.clip(np.rint(x / se) + ze, -128, 127)
    np.testing.assert_allclose(y, (q - ze) * se, rtol=1e-6)
    res = build_and_run_c(tmp_path, path, {"x": x})
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_quantize_dequantize_as_c(tmp_path, qtype):
    """QuantizeLinear and DequantizeLinear (per tensor and per axis, with ties, values past the
    range and NaN) in weft aot's C: equal to Weft's runtime bit for bit; a QDQ convolution within
    one quantization step (the C convolution sums in another order than oneDNN)."""
    rng = np.random.default_rng(6)
    zp = np.array([3, -2, 0], np.int8) if qtype == np.int8 else np.array([3, 200, 0], np.uint8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1),
             helper.make_node("QuantizeLinear", ["x", "s1"], ["q1"])]
    path = save(tmp_path, nodes, [("x", np.float32, [2, 3, 5])], [("q", qtype), ("y", np.float32), ("q1", np.uint8)],
                {"s": np.float32([0.5, 0.1, 2.0]), "z": zp, "s1": np.float32(0.25)}, name="qdq.onnx")
    x = (rng.standard_normal([2, 3, 5]) * 40).astype(np.float32)
    x[0, 0, :3] = [0.25, 0.75, -1.25]  # ties at scale 0.5: half to even
    x[1, 2, 4] = np.nan
    res = build_and_run_c(tmp_path, path, {"x": x})
    assert res.returncode == 0, res.stdout + res.stderr
    # the QDQ convolution of test_qdq_convolution_matches_onnxruntime
    w = rng.standard_normal([6, 4, 3, 3]).astype(np.float32) * 0.3
    wq = np.clip(np.rint(w / 0.01), -127, 127).astype(np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["out"])]
    path = save(tmp_path, nodes, [("x", np.float32, [1, 4, 6, 6])], [("out", np.float32)],
                {"xs": np.float32(0.02), "xz": qtype(zp[0]), "wq": wq, "ws": np.float32(0.01), "ys": np.float32(0.05), "yz": qtype(zp[0])},
                name="qdq_conv.onnx")
    res = build_and_run_c(tmp_path / "conv", path, {"x": rng.standard_normal([1, 4, 6, 6]).astype(np.float32)}, atol=0.0501)
    assert res.returncode == 0, res.stdout + res.stderr


def test_integer_matmuls_and_dynamic_quantize_as_c(tmp_path):
    """MatMulInteger (per-row and per-column zero points, B's batch broadcast), QLinearMatMul and
    DynamicQuantizeLinear in weft aot's C: equal to Weft's runtime bit for bit."""
    rng = np.random.default_rng(9)
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"]),
             helper.make_node("QLinearMatMul", ["a", "as", "az0", "b2", "bs", "bz0", "ys", "yz"], ["q"]),
             helper.make_node("DynamicQuantizeLinear", ["f"], ["d", "ds", "dz"])]
    inits = {"az": rng.integers(0, 256, 4).astype(np.uint8), "bz": rng.integers(0, 256, 5).astype(np.uint8), "b": rng.integers(0, 256, [1, 6, 5]).astype(np.uint8),
             "as": np.float32(0.02), "az0": np.uint8(128), "b2": rng.integers(-128, 128, [6, 3]).astype(np.int8), "bs": np.float32(0.01),
             "bz0": np.int8(0), "ys": np.float32(0.03), "yz": np.int8(-5)}
    path = save(tmp_path, nodes, [("a", np.uint8, [2, 4, 6]), ("f", np.float32, [3, 7])],
                [("y", np.int32), ("q", np.int8), ("d", np.uint8), ("ds", np.float32), ("dz", np.uint8)], inits, name="imm.onnx")
    res = build_and_run_c(tmp_path, path, {"a": rng.integers(0, 256, [2, 4, 6]).astype(np.uint8),
                                           "f": (rng.standard_normal([3, 7]) * 3 + 1).astype(np.float32)})
    assert res.returncode == 0, res.stdout + res.stderr


def test_integer_convolutions_as_c(tmp_path):
    """ConvInteger (1-D) and QLinearConv (2-D: groups, strides, dilation, asymmetric pads,
    per-channel weight scales, a bias) in weft aot's C: equal to Weft's runtime bit for bit."""
    rng = np.random.default_rng(10)
    nodes = [helper.make_node("ConvInteger", ["x1", "w1", "xz1", "wz1"], ["y1"], pads=[2, 1], strides=[2]),
             helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], group=2, strides=[2, 1],
                              pads=[1, 0, 1, 2], dilations=[1, 2])]
    inits = {"w1": rng.integers(0, 256, [3, 2, 3]).astype(np.uint8), "xz1": np.uint8(100), "wz1": rng.integers(0, 256, 3).astype(np.uint8),
             "xs": np.float32(0.03), "xz": np.uint8(5), "w": rng.integers(-127, 128, [8, 3, 3, 3]).astype(np.int8),
             "ws": rng.uniform(0.001, 0.01, 8).astype(np.float32), "wz": np.zeros(8, np.int8), "ys": np.float32(0.2), "yz": np.uint8(7),
             "b": rng.integers(-2000, 2000, 8).astype(np.int32)}
    path = save(tmp_path, nodes, [("x1", np.uint8, [2, 2, 9]), ("x", np.uint8, [1, 6, 9, 10])], [("y1", np.int32), ("y", np.uint8)], inits,
                name="iconv.onnx")
    res = build_and_run_c(tmp_path, path, {"x1": rng.integers(0, 256, [2, 2, 9]).astype(np.uint8),
                                           "x": rng.integers(0, 256, [1, 6, 9, 10]).astype(np.uint8)})
    assert res.returncode == 0, res.stdout + res.stderr


def conv_sums_reference(x, w, xz, wz, group, strides, pads, dilations):
    """(x - xz) conv (w - wz) in int64 (NCHW / OIHW, 1 or 2 spatial dims; pads begin..., end...)."""
    nd = x.ndim - 2
    xi = x.astype(np.int64) - np.int64(xz)
    xi = np.pad(xi, [(0, 0), (0, 0)] + [(pads[d], pads[nd + d]) for d in range(nd)])  # padding: the zero point, 0 after - xz
    wi = w.astype(np.int64) - np.asarray(wz, np.int64).reshape([-1] + [1] * (nd + 1))
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    k = w.shape[2:]
    out = [(xi.shape[2 + d] - dilations[d] * (k[d] - 1) - 1) // strides[d] + 1 for d in range(nd)]
    y = np.zeros([n, m] + out, np.int64)
    mg = m // group
    for tap in np.ndindex(*k):
        sl = tuple(slice(tap[d] * dilations[d], tap[d] * dilations[d] + strides[d] * (out[d] - 1) + 1, strides[d]) for d in range(nd))
        for g in range(group):
            patch = xi[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]  # [n, cg, *out]
            wt = wi[(slice(g * mg, (g + 1) * mg), slice(None)) + tap]    # [mg, cg]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch, wt)
    return y


@pytest.mark.parametrize("case", ["int8_groups", "uint8_dense_uint8_weights", "depthwise_uint8", "depthwise_mult2_int8",
                                  "depthwise_5x5_dilated_int8", "depthwise_3x4_uint8", "depthwise_1x7_uint8_weights", "depthwise_dilated8",
                                  "conv1d_dilated", "pointwise", "one_channel_stride2_uint8", "one_channel_uint8_weights"])
def test_qlinear_conv_is_bit_exact_against_a_numpy_recomputation(tmp_path, case):
    """QLinearConv's arithmetic as ONNX Runtime defines it (int32 sums, plus the bias, times
    x_scale * w_scale / y_scale in float32, rounded half to even, plus the zero point, clamped),
    recomputed in NumPy, against Weft bit for bit: the vectorized sums (dense and grouped layers, one
    channel per group, weight zero points taken off through the inputs' sums, 1-D and 2-D)."""
    rng = np.random.default_rng(abs(hash(case)) % 1000)
    xt, wt, c, m, group, k, strides, pads, dil, size = {
        "int8_groups": (np.int8, np.int8, 8, 12, 2, [3, 3], [2, 1], [1, 0, 1, 2], [1, 2], [11, 13]),
        "uint8_dense_uint8_weights": (np.uint8, np.uint8, 16, 24, 1, [3, 3], [1, 1], [1, 1, 1, 1], [1, 1], [14, 9]),
        "depthwise_uint8": (np.uint8, np.int8, 24, 24, 24, [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], [15, 16]),
        "depthwise_mult2_int8": (np.int8, np.uint8, 6, 12, 6, [5, 3], [1, 2], [2, 0, 2, 1], [1, 1], [9, 12]),
        # filter rows of more than four taps (two dwords a row for vpdpbusd), dilation, padding
        "depthwise_5x5_dilated_int8": (np.int8, np.int8, 20, 20, 20, [5, 5], [1, 1], [4, 3, 4, 4], [2, 2], [17, 19]),
        "depthwise_3x4_uint8": (np.uint8, np.int8, 33, 33, 33, [3, 4], [2, 1], [1, 2, 1, 1], [1, 1], [12, 21]),
        "depthwise_1x7_uint8_weights": (np.uint8, np.uint8, 18, 18, 18, [1, 7], [1, 2], [0, 3, 0, 3], [1, 1], [8, 30]),
        # a dilation that spans more input rows than four filters' worth (rows kept per filter row)
        "depthwise_dilated8": (np.uint8, np.int8, 16, 16, 16, [3, 3], [1, 1], [8, 8, 8, 8], [8, 8], [20, 18]),
        "conv1d_dilated": (np.uint8, np.int8, 10, 7, 1, [4], [2], [3, 1], [2], [33]),
        "pointwise": (np.int8, np.int8, 40, 72, 1, [1, 1], [1, 1], [0, 0, 0, 0], [1, 1], [20, 20]),
        # a first layer over one channel (a spectrogram): the GEMM of k = kh * kw
        "one_channel_stride2_uint8": (np.uint8, np.int8, 1, 48, 1, [3, 3], [2, 2], [0, 0, 0, 0], [1, 1], [41, 23]),
        "one_channel_uint8_weights": (np.int8, np.uint8, 1, 32, 1, [5, 3], [1, 1], [2, 1, 2, 1], [1, 1], [17, 16]),
    }[case]
    ilo, ihi = (-128, 127) if xt == np.int8 else (0, 255)
    wlo, whi = (-127, 127) if wt == np.int8 else (0, 255)
    x = rng.integers(ilo, ihi + 1, [2, c] + size).astype(xt)
    w = rng.integers(wlo, whi + 1, [m, c // group] + k).astype(wt)
    xz = xt(rng.integers(ilo, ihi + 1))
    wz = np.zeros(m, wt) if wt == np.int8 else rng.integers(100, 156, m).astype(wt)
    ws = rng.uniform(0.001, 0.01, m).astype(np.float32)
    xs, ys = np.float32(0.03), np.float32(0.4)
    yz = xt(rng.integers(ilo + 40, ihi - 40))
    b = rng.integers(-3000, 3000, m).astype(np.int32)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], group=group, strides=strides,
                            pads=pads, dilations=dil, kernel_shape=k)
    path = save(tmp_path, [node], [("x", xt, x.shape)], [("y", xt)],
                {"xs": xs, "xz": xz, "w": w, "ws": ws, "wz": wz, "ys": ys, "yz": yz, "b": b})
    (got,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    sums = conv_sums_reference(x, w, xz, wz, group, strides, pads, dil)
    wrapped = ((sums + b.reshape([1, m] + [1] * len(k)) + 2**31) % 2**32 - 2**31).astype(np.int32)
    scale = (xs * ws / ys).astype(np.float32).reshape([1, m] + [1] * len(k))
    want = np.clip(np.rint(wrapped.astype(np.float32) * scale) + np.float32(yz), ilo, ihi).astype(xt)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # and the sums alone (ConvInteger), against the int64 recomputation wrapped to int32
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], group=group, strides=strides, pads=pads, dilations=dil)
    wz_ci = wz if wt == np.uint8 else np.zeros(1, wt)
    path = save(tmp_path, [node], [("x", xt, x.shape)], [("y", np.int32)], {"w": w, "xz": xz, "wz": wz_ci}, name="ci.onnx")
    (got,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    np.testing.assert_array_equal(got, ((sums + 2**31) % 2**32 - 2**31).astype(np.int32))


@pytest.mark.parametrize("at,bt", [(np.uint8, np.int8), (np.int8, np.uint8), (np.uint8, np.uint8), (np.int8, np.int8)])
@pytest.mark.parametrize("b_kind", ["constant", "input", "batched_input"])
def test_matmul_integer_vectorized_sums_are_exact(tmp_path, at, bt, b_kind):
    """MatMulInteger large enough for the vectorized sums (int8 operands, zero points taken off
    through row and column sums), with scalar, per-row and per-column zero points, B a constant
    (laid out at compile time), an input, or batched, against an int64 NumPy recomputation wrapped
    to int32; QLinearMatMul on the same operands against NumPy's float32 rescaling."""
    rng = np.random.default_rng(len(b_kind) * 3 + (at == np.uint8) + 2 * (bt == np.uint8))
    rlo = lambda t: (-128, 128) if t == np.int8 else (0, 256)  # noqa: E731
    a = rng.integers(*rlo(at), [3, 37, 70]).astype(at)
    bshape = [3, 70, 45] if b_kind == "batched_input" else [70, 45]
    b = rng.integers(*rlo(bt), bshape).astype(bt)
    for az, bz in [(at(rng.integers(*rlo(at))), bt(rng.integers(*rlo(bt)))),
                   (rng.integers(*rlo(at), 37).astype(at), rng.integers(*rlo(bt), 45).astype(bt))]:
        node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
        inputs = [("a", at, a.shape)] + ([] if b_kind == "constant" else [("b", bt, b.shape)])
        inits = {"az": az, "bz": bz, **({"b": b} if b_kind == "constant" else {})}
        path = save(tmp_path, [node], inputs, [("y", np.int32)], inits, name="mmi_fast.onnx")
        model = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
        (got,) = model.run([a] if b_kind == "constant" else [a, b])
        a64 = a.astype(np.int64) - np.asarray(az, np.int64).reshape(-1, 1)
        b64 = b.astype(np.int64) - np.asarray(bz, np.int64).reshape(1, -1)
        sums = a64 @ b64
        np.testing.assert_array_equal(got, ((sums + 2**31) % 2**32 - 2**31).astype(np.int32))
        if np.ndim(az) == 0:  # QLinearMatMul takes scalar zero points
            node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
            inits.update({"as": np.float32(0.02), "bs": np.float32(0.013), "ys": np.float32(3.1), "yz": at(rlo(at)[0] + 100)})
            path = save(tmp_path, [node], inputs, [("y", at)], inits, name="qmm_fast.onnx")
            (got,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([a] if b_kind == "constant" else [a, b])
            scale = np.float32(0.02) * np.float32(0.013) / np.float32(3.1)
            wrapped = ((sums + 2**31) % 2**32 - 2**31).astype(np.int32)
            want = np.clip(np.rint(wrapped.astype(np.float32) * scale) + np.float32(rlo(at)[0] + 100), rlo(at)[0], rlo(at)[1] - 1)
            np.testing.assert_array_equal(got, want.astype(at))


def test_dynamic_quantize_names_a_non_finite_value(tmp_path):
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    path = save(tmp_path, [node], [("x", np.float32, [5, 40])], [("y", np.uint8), ("s", np.float32), ("z", np.uint8)], {}, name="dq.onnx")
    model = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    for bad, at in ((np.inf, 77), (np.nan, 199), (-np.inf, 3)):
        x = np.linspace(-3, 5, 200, dtype=np.float32).reshape(5, 40)
        x.reshape(-1)[at] = bad
        with pytest.raises(Exception, match=f"at element {at}; it must be finite"):
            model.run([x])


@pytest.mark.parametrize("qt", [np.int8, np.uint8])
def test_quantize_linear_rounds_and_saturates_like_the_spec(tmp_path, qt):
    """QuantizeLinear per tensor and per axis over ties, values past the range, infinities, NaN
    and long runs (split between threads), against NumPy: round half to even, saturate, NaN gives
    the zero point."""
    rng = np.random.default_rng(9)
    lo, hi = (-128, 127) if qt == np.int8 else (0, 255)
    x = (rng.standard_normal([3, 40000]) * 60).astype(np.float32)
    x[0, :9] = [0.5, 1.5, 2.5, -0.5, -2.5, 1e30, -1e30, np.inf, -np.inf]
    x[1, 5] = np.nan
    x[2, :4] = [4194303.5, -4194304.5, 8388607.0, 3.0e9]
    for axis_scale in (np.float32(0.5), np.float32([0.5, 0.25, 2.0])):
        z = qt(rng.integers(lo, hi)) if np.ndim(axis_scale) == 0 else rng.integers(lo, hi, 3).astype(qt)
        node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0)
        path = save(tmp_path, [node], [("x", np.float32, x.shape)], [("y", qt)], {"s": axis_scale, "z": z}, name="ql.onnx")
        (got,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
        s = np.asarray(axis_scale, np.float32).reshape(-1, 1)
        zz = np.asarray(z, np.float64).reshape(-1, 1)
        with np.errstate(invalid="ignore", over="ignore"):
            v = np.rint((x / s).astype(np.float32)).astype(np.float64) + zz
            want = np.where(np.isnan(v), np.broadcast_to(zz, v.shape), np.clip(v, lo, hi)).astype(qt)
        np.testing.assert_array_equal(got, want)


def test_qdq_convolutions_fuse_and_match_onnxruntime_bit_for_bit(tmp_path):
    """A float conv net quantized by onnxruntime.quantization.quantize_static in its default QDQ
    format (per-channel weights, uint8 activations): imported, its DequantizeLinear -> Conv ->
    QuantizeLinear chains become QLinearConv (dense, depthwise and pointwise layers), and the outputs
    equal ONNX Runtime's, which fuses the same way; with fuse_qdq=False the float Convs run instead."""
    skip_unless_ort_u8s8_exact()
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(12)
    w = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["y"])]
    inits = {"w1": w(8, 3, 3, 3), "b1": w(8), "w2": w(8, 1, 3, 3), "b2": w(8), "w3": w(16, 8, 1, 1), "b3": w(16)}
    src = save(tmp_path, nodes, [("x", np.float32, [1, 3, 20, 24])], [("y", np.float32)], inits, name="f.onnx")

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.left = [{"x": rng.standard_normal([1, 3, 20, 24]).astype(np.float32)} for _ in range(4)]

        def get_next(self):
            return self.left.pop() if self.left else None

    dst = str(tmp_path / "q.onnx")
    quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    g = weft.import_onnx(dst)
    assert sum(n["op_type"] == "QLinearConv" for n in g.nodes) == 3 and not any(n["op_type"] == "Conv" for n in g.nodes)
    x = rng.standard_normal([1, 3, 20, 24]).astype(np.float32)
    want = ort.InferenceSession(dst, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    (got,) = weft.Session(use_env_path=False).compile(g).run([x])
    np.testing.assert_array_equal(got, want)
    unfused = weft.import_onnx(dst, fuse_qdq=False)
    assert sum(n["op_type"] == "Conv" for n in unfused.nodes) == 3
    (loose,) = weft.Session(use_env_path=False).compile(unfused).run([x])
    step = float(np.abs(np.diff(np.unique(want))).min())  # one quantization step of the output
    assert np.abs(loose - want).max() <= 1.01 * step


def qlinear_conv_reference(x, w, xz, wz, ws, xs, ys, yz, b, group, strides, pads, dil):
    """QLinearConv as ONNX Runtime computes it, in NumPy: int64 sums wrapped to int32 with the
    bias, times x_scale * w_scale / y_scale in float32, rounded half to even, plus the output zero
    point, clamped to the output type."""
    m, nd = w.shape[0], len(strides)
    sums = conv_sums_reference(x, w, xz, wz, group, strides, pads, dil)
    wrapped = ((sums + b.reshape([1, m] + [1] * nd) + 2**31) % 2**32 - 2**31).astype(np.int32)
    scale = (xs * ws / ys).astype(np.float32).reshape([1, m] + [1] * nd)
    lo, hi = (-128, 127) if yz.dtype == np.int8 else (0, 255)
    return np.clip(np.rint(wrapped.astype(np.float32) * scale) + np.float32(yz), lo, hi).astype(yz.dtype)


@pytest.mark.parametrize("xt,wt", [(np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8)])
def test_qlinear_conv_chains_exchange_pixel_rows_bit_exact(tmp_path, xt, wt):
    """Chains of QLinearConv nodes, as an imported QDQ network has them: dense 3x3 with stride 2,
    depthwise (stride 1 and 2, dilation, uneven padding), pointwise, two groups of several
    channels, a depthwise layer with two filters per channel, and a value read both by a layer and
    as a graph output. Between two layers that take them, values are planned as pixel rows (NHWC,
    `weft inspect --steps` shows @NHWC); each layer reads and writes either layout. Every output
    equals a NumPy recomputation of ONNX Runtime's arithmetic, layer by layer, bit for bit."""
    import os
    import subprocess
    import sys
    rng = np.random.default_rng(int(np.dtype(xt).num * 7 + np.dtype(wt).num))
    ilo, ihi = (-128, 127) if xt == np.int8 else (0, 255)
    wlo, whi = (-127, 127) if wt == np.int8 else (0, 255)
    # (name, out channels, group, kernel, strides, pads, dilations)
    layers = [("dense", 24, 1, [3, 3], [2, 2], [1, 1, 1, 1], [1, 1]),
              ("dw1", 24, 24, [3, 3], [1, 1], [1, 1, 1, 1], [1, 1]),
              ("pw1", 40, 1, [1, 1], [1, 1], [0, 0, 0, 0], [1, 1]),
              ("dw2", 40, 40, [3, 3], [2, 2], [0, 1, 2, 1], [1, 1]),
              ("grp", 32, 2, [3, 3], [1, 1], [2, 2, 2, 2], [2, 2]),
              ("dwm", 64, 32, [3, 3], [1, 1], [1, 1, 1, 1], [1, 1]),
              ("pw2", 8, 1, [1, 1], [1, 1], [0, 0, 0, 0], [1, 1])]
    x = rng.integers(ilo, ihi + 1, [2, 5, 23, 18]).astype(xt)
    nodes, inits, prev, c = [], {}, "x", 5
    want, cur = {}, x
    zs = {}
    for name, m, group, k, strides, pads, dil in layers:
        w = rng.integers(wlo, whi + 1, [m, c // group] + k).astype(wt)
        wz = np.zeros(m, wt) if wt == np.int8 else rng.integers(100, 156, m).astype(wt)
        ws = rng.uniform(0.002, 0.01, m).astype(np.float32)
        xs = np.float32(zs.get(prev, (0.05, None))[0])
        xz = zs[prev][1] if prev in zs else xt(rng.integers(ilo, ihi + 1))
        ys = np.float32(rng.uniform(0.2, 0.6))
        yz = xt(rng.integers(ilo + 40, ihi - 40))
        b = rng.integers(-3000, 3000, m).astype(np.int32)
        p = name + "_"
        inits.update({p + "xs": xs, p + "xz": xz, p + "w": w, p + "ws": ws, p + "wz": wz, p + "ys": ys, p + "yz": yz, p + "b": b})
        nodes.append(helper.make_node("QLinearConv", [prev] + [p + s for s in ["xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]], [name],
                                      group=group, strides=strides, pads=pads, dilations=dil, kernel_shape=k, name=name))
        cur = qlinear_conv_reference(cur, w, xz, wz, ws, xs, ys, yz, b, group, strides, pads, dil)
        want[name] = cur
        zs[name] = (ys, yz)
        prev, c = name, m
    outputs = ["pw2", "pw1"]  # pw1 is read by dw2 and is a graph output too
    path = save(tmp_path, nodes, [("x", xt, x.shape)], [(o, xt) for o in outputs], inits)
    got = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path)).run([x])
    for o, g in zip(outputs, got):
        assert g.shape == want[o].shape, o
        np.testing.assert_array_equal(g, want[o], err_msg=o)
    # The portable loops (what a CPU without AVX-512 runs), in a process with the vector kernels off.
    np.savez(tmp_path / "io.npz", x=x, **{o: want[o] for o in outputs})
    script = ("import sys, numpy as np, weft\n"
              "d = np.load(sys.argv[2])\n"
              "got = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(sys.argv[1])).run([d['x']])\n"
              f"for o, g in zip({outputs!r}, got): np.testing.assert_array_equal(g, d[o], err_msg=o)\n")
    env = dict(os.environ, WEFT_DISABLE_VNNI="1")
    done = subprocess.run([sys.executable, "-c", script, path, str(tmp_path / "io.npz")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    cli = os.environ.get("WEFT_CLI")
    if cli and os.path.exists(cli):
        steps = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout
        line = {n: next(ln for ln in steps.splitlines() if f"'{n}'" in ln) for n, *_ in layers}
        rows = {n: line[n].count("@NHWC") for n in line}
        # dense reads the graph input and writes rows; dw1 rows to rows; pw1 reads rows and writes a
        # graph output (plain), which dw2 reads; grp reads rows and writes for the layer with two
        # filters per channel, which runs on channel planes (declared slow with rows), as pw2 then.
        assert rows == {"dense": 1, "dw1": 2, "pw1": 1, "dw2": 1, "grp": 1, "dwm": 0, "pw2": 0}, steps
        assert line["pw1"].endswith("pw1:" + np.dtype(xt).name + "[2,40,12,9])"), steps


def test_residual_quantized_block_keeps_pixel_rows_through_dequantize_add_quantize(tmp_path):
    """A residual block as an imported QDQ network has it: two QLinearConv branches, each
    dequantized, added in float, quantized again, read by a third QLinearConv. On import the
    DequantizeLinear -> Add -> QuantizeLinear becomes a QLinearAdd (as ONNX Runtime runs it); with
    --no-fuse-qdq the float Add stays. Either way the whole block is planned as pixel rows (@NHWC)
    between the convolutions (QLinearAdd, DequantizeLinear, Add and QuantizeLinear take any layout:
    LayoutSupport::AnyFormat); the output equals a NumPy recomputation bit for bit, and so does the
    compiled model file run by the CLI."""
    skip_unless_ort_u8s8_exact()
    import os
    import subprocess
    rng = np.random.default_rng(77)
    x = rng.integers(0, 256, [1, 16, 14, 12]).astype(np.uint8)
    nodes, inits, want = [], {}, {}

    def conv(name, src, xs, xz, c, m, k, group=1):
        w = rng.integers(-127, 128, [m, c // group, k, k]).astype(np.int8)
        ws = rng.uniform(0.002, 0.01, m).astype(np.float32)
        ys, yz = np.float32(rng.uniform(0.2, 0.5)), np.uint8(rng.integers(90, 160))
        b = rng.integers(-2000, 2000, m).astype(np.int32)
        p = name + "_"
        inits.update({p + "xs": xs, p + "xz": xz, p + "w": w, p + "ws": ws, p + "wz": np.zeros(m, np.int8), p + "ys": ys, p + "yz": yz, p + "b": b})
        nodes.append(helper.make_node("QLinearConv", [src] + [p + s for s in ["xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]], [name],
                                      group=group, pads=[k // 2] * 4, kernel_shape=[k, k], name=name))
        want[name] = qlinear_conv_reference(want.get(src, x), w, xz, np.zeros(m, np.int8), ws, xs, ys, yz, b, group, [1, 1],
                                            [k // 2] * 4, [1, 1])
        return ys, yz

    a_s, a_z = conv("a", "x", np.float32(0.05), np.uint8(128), 16, 24, 1)
    b_s, b_z = conv("b", "a", a_s, a_z, 24, 24, 3, group=24)
    q_s, q_z = np.float32(0.45), np.uint8(120)
    inits.update({"as": a_s, "az": a_z, "bs": b_s, "bz": b_z, "qs": q_s, "qz": q_z})
    nodes += [helper.make_node("DequantizeLinear", ["a", "as", "az"], ["da"], name="da"),
              helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["db"], name="db"),
              helper.make_node("Add", ["da", "db"], ["sum"], name="add"),
              helper.make_node("QuantizeLinear", ["sum", "qs", "qz"], ["q"], name="q")]
    da = (want["a"].astype(np.int32) - np.int32(a_z)).astype(np.float32) * a_s
    db = (want["b"].astype(np.int32) - np.int32(b_z)).astype(np.float32) * b_s
    want["q"] = np.clip(np.rint((da + db) / q_s) + np.float32(q_z), 0, 255).astype(np.uint8)
    conv("c", "q", q_s, q_z, 24, 8, 1)
    path = save(tmp_path, nodes, [("x", np.uint8, x.shape)], [("c", np.uint8)], inits)
    (got,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    np.testing.assert_array_equal(got, want["c"])
    want_ort = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want_ort)
    cli = os.environ.get("WEFT_CLI")
    if cli and os.path.exists(cli):
        steps = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout
        add = next(ln for ln in steps.splitlines() if "'add'" in ln)
        assert " QLinearAdd " in add and add.count("@NHWC") == 3, steps
        steps = subprocess.run([cli, "inspect", path, "--steps", "--no-fuse-qdq"], capture_output=True, text=True, check=True).stdout
        line = {n: next(ln for ln in steps.splitlines() if f"'{n}'" in ln) for n in ["da", "db", "add", "q"]}
        assert all(ln.count("@NHWC") == 2 for n, ln in line.items() if n != "add"), steps
        assert " Add " in line["add"] and line["add"].count("@NHWC") == 3, steps
        np.save(tmp_path / "x.npy", x)
        subprocess.run([cli, "compile", path, "-o", str(tmp_path / "m.weft")], capture_output=True, text=True, check=True)
        subprocess.run([os.path.abspath(cli), "run", str(tmp_path / "m.weft"), "-i", f"x={tmp_path / 'x.npy'}"], capture_output=True, text=True, check=True,
                       cwd=tmp_path)
        np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), want["c"])
