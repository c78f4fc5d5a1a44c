"""ONNX Runtime's com.microsoft quantized operators (the QOperator format of its quantizer):
QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool,
QLinearAveragePool, QLinearConcat, QLinearSoftmax, QLinearWhere and QGemm, node by node on random data and random scales, byte for
byte against ONNX Runtime and within one step of a float64 recomputation, and as generated C
(`weft aot`, built as strict C99) byte for byte against the runtime on the same inputs; a network
quantized by onnxruntime.quantization in the QOperator format, its 8-bit values kept as pixel rows
between the ops; and the errors for quantization parameters the ops do not take."""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import weft
from ort_int8 import skip_unless_ort_u8s8_exact

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

T = {np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32,
     np.bool_: TensorProto.BOOL}
MS = "com.microsoft"


def save(tmp_path, nodes, inputs, outputs, inits, name="q.onnx"):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, T[dt], list(s)) for n, dt, s in inputs],
                          [helper.make_tensor_value_info(n, T[dt], None) for n, dt in outputs],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    path = str(tmp_path / name)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)], ir_version=8)
    onnx.save(model, path)
    return path


def both(path, feeds):
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(list(feeds.values()))
    return [np.asarray(g) for g in got], want


def as_c(tmp_path, path, feeds, prefix="q"):
    """weft aot on the model with these test inputs, built as strict C99 and run: every output value
    equals the runtime's (the test program compares them byte for byte for integer outputs)."""
    cli = os.environ.get("WEFT_CLI", "weft")
    cli = os.path.abspath(cli) if os.sep in cli else cli
    cc = shutil.which(os.environ.get("CC", "cc"))
    assert cc, "a C compiler (cc) is needed"
    out = tmp_path / f"aot_{prefix}"
    args = [cli, "aot", path, "-o", str(out), "--prefix", prefix, "--test"]
    for name, value in feeds.items():
        np.save(tmp_path / f"in_{name}.npy", value)
        args += ["--test-input", f"{name}={tmp_path / f'in_{name}.npy'}"]
    gen = subprocess.run(args, capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr
    exe = tmp_path / f"{prefix}_test"
    build = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", f"-I{out}/includes-api", f"-I{out}/src",
                            f"-I{out}/test", *map(str, sorted(out.glob("src/*.c"))), *map(str, sorted(out.glob("test/*.c"))), "-o", str(exe),
                            "-lm"], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[:2000]
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    m = re.search(r"(\d+) of (\d+) output values", res.stdout)
    assert res.returncode == 0 and m and m.group(1) == "0" and int(m.group(2)) > 0, res.stdout + res.stderr


def lim(qtype):
    return (-128, 127) if qtype == np.int8 else (0, 255)


def rand_q(rng, qtype, shape):
    lo, hi = lim(qtype)
    return rng.integers(lo, hi + 1, size=shape).astype(qtype)


def quantize64(v, scale, zp, qtype):
    lo, hi = lim(qtype)
    return np.clip(np.rint(v / scale) + zp, lo, hi)


def within_one_step(got, want64):
    """The float32 arithmetic of the kernels against real arithmetic: a value that lies on a
    rounding boundary may go either way, never further."""
    d = np.abs(got.astype(np.float64) - want64)
    assert d.max() <= 1, d.max()
    assert (d > 0).mean() < 0.05


SHAPES = [  # (A, B): same shape, per channel either side, a scalar either side, a row, mixed
    ([2, 5, 7, 9], [2, 5, 7, 9]),
    ([2, 5, 7, 9], [1, 5, 1, 1]),
    ([1, 5, 1, 1], [2, 5, 7, 9]),
    ([2, 5, 7, 9], []),
    ([1], [3, 4, 5]),
    ([2, 5, 7, 9], [9]),
    ([2, 1, 7, 1], [1, 5, 1, 9]),
    ([6, 1], [1, 1]),
]


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
@pytest.mark.parametrize("shapes", SHAPES, ids=[f"{a}x{b}" for a, b in SHAPES])
def test_binary_matches_onnxruntime(tmp_path, op, qtype, shapes):
    sa, sb = shapes
    rng = np.random.default_rng(len(sa) * 7 + len(sb) + (op == "QLinearMul") * 50 + (qtype == np.int8))
    for trial in range(3):
        scales = np.exp(rng.uniform(-6, -1, 3)).astype(np.float32)
        lo, hi = lim(qtype)
        zps = [qtype(rng.integers(lo, hi + 1)) for _ in range(3)]
        nodes = [helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"], domain=MS)]
        inits = {"as": scales[0], "az": zps[0], "bs": scales[1], "bz": zps[1], "cs": scales[2], "cz": zps[2]}
        path = save(tmp_path, nodes, [("a", qtype, sa), ("b", qtype, sb)], [("c", qtype)], inits, name=f"{op}{trial}.onnx")
        a, b = rand_q(rng, qtype, sa), rand_q(rng, qtype, sb)
        got, want = both(path, {"a": a, "b": b})
        assert got[0].dtype == qtype and got[0].shape == want[0].shape
        np.testing.assert_array_equal(got[0], want[0])
        if trial == 0:
            as_c(tmp_path, path, {"a": a, "b": b})
        fa = (a.astype(np.float64) - float(zps[0])) * float(scales[0])
        fb = (b.astype(np.float64) - float(zps[1])) * float(scales[1])
        within_one_step(got[0], quantize64(fa + fb if op == "QLinearAdd" else fa * fb, float(scales[2]), float(zps[2]), qtype))


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_binary_every_pair_of_bytes(tmp_path, op, qtype):
    """Every (a, b) pair under 24 random sets of scales and zero points, in each broadcast form:
    values that land within a float rounding of a half show whether the arithmetic is ONNX
    Runtime's operation for operation."""
    rng = np.random.default_rng(40 + (op == "QLinearMul") * 2 + (qtype == np.int8))
    lo, hi = lim(qtype)
    v = np.arange(lo, hi + 1).astype(qtype)
    a_full, b_full = np.repeat(v[:, None], 256, 1), np.repeat(v[None, :], 256, 0)
    nodes, inits, outs = [], {}, []
    for i in range(24):
        sc = np.exp(rng.uniform(-6, -1, 3)).astype(np.float32)
        zp = [qtype(rng.integers(lo, hi + 1)) for _ in range(3)]
        for k, name in enumerate(["as", "bs", "cs"]):
            inits[f"{name}{i}"] = sc[k]
        for k, name in enumerate(["az", "bz", "cz"]):
            inits[f"{name}{i}"] = zp[k]
        for form, (x, y) in enumerate([("a", "b"), ("a", "bcol"), ("arow", "b")]):
            nodes.append(helper.make_node(op, [x, f"as{i}", f"az{i}", y, f"bs{i}", f"bz{i}", f"cs{i}", f"cz{i}"], [f"c{i}_{form}"], domain=MS))
            outs.append((f"c{i}_{form}", qtype))
    ins = [("a", qtype, [256, 256]), ("b", qtype, [256, 256]), ("bcol", qtype, [256, 1]), ("arow", qtype, [1, 256])]
    path = save(tmp_path, nodes, ins, outs, inits)
    feeds = {"a": a_full, "b": b_full, "bcol": v[:, None].copy(), "arow": v[None, :].copy()}
    got, want = both(path, feeds)
    for g, w, (name, _) in zip(got, want, outs):
        np.testing.assert_array_equal(g, w, err_msg=name)
    as_c(tmp_path, path, feeds)


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_binary_without_zero_points(tmp_path, qtype):
    """Absent zero points are 0 (ONNX Runtime, which will not load the node without them, gets
    explicit zeros)."""
    rng = np.random.default_rng(3)
    z = qtype(0)
    for op in ["QLinearAdd", "QLinearMul"]:
        inits = {"as": np.float32(0.02), "bs": np.float32(0.03), "cs": np.float32(0.04), "z": z}
        shapes = [("a", qtype, [4, 33]), ("b", qtype, [4, 33])]
        bare = save(tmp_path, [helper.make_node(op, ["a", "as", "", "b", "bs", "", "cs"], ["c"], domain=MS)], shapes, [("c", qtype)], inits, "bare.onnx")
        full = save(tmp_path, [helper.make_node(op, ["a", "as", "z", "b", "bs", "z", "cs", "z"], ["c"], domain=MS)], shapes, [("c", qtype)], inits)
        feeds = {"a": rand_q(rng, qtype, [4, 33]), "b": rand_q(rng, qtype, [4, 33])}
        got = np.asarray(weft.Session(use_env_path=False).compile(weft.import_onnx(bare)).run(list(feeds.values()))[0])
        np.testing.assert_array_equal(got, ort.InferenceSession(full, providers=["CPUExecutionProvider"]).run(None, feeds)[0])
        as_c(tmp_path, bare, feeds, prefix=op.lower())


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_lookup_ops_match_onnxruntime_on_every_byte(tmp_path, op, qtype):
    rng = np.random.default_rng(11 + (op == "QLinearSigmoid"))
    lo, hi = lim(qtype)
    x = np.arange(lo, hi + 1).astype(qtype).reshape(2, 4, 4, 8)  # every value once
    for trial in range(4):
        xs = np.float32(np.exp(rng.uniform(-5, -1)))
        ys = np.float32(xs * rng.uniform(0.3, 2))
        if op == "QLinearSigmoid":
            ys = np.float32(1 / 256 * rng.uniform(0.5, 1.5))
        xz, yz = qtype(rng.integers(lo, hi + 1)), qtype(rng.integers(lo, hi + 1))
        attrs = {"alpha": float(rng.uniform(0.01, 0.3))} if op == "QLinearLeakyRelu" else {}
        nodes = [helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **attrs)]
        path = save(tmp_path, nodes, [("x", qtype, x.shape)], [("y", qtype)], {"xs": xs, "xz": xz, "ys": ys, "yz": yz}, name=f"{op}{trial}.onnx")
        got, want = both(path, {"x": x})
        np.testing.assert_array_equal(got[0], want[0])
        if trial == 0:
            as_c(tmp_path, path, {"x": x})
        v = (x.astype(np.float64) - float(xz)) * float(xs)
        f = 1 / (1 + np.exp(-v)) if op == "QLinearSigmoid" else np.where(v >= 0, v, np.float32(attrs["alpha"]) * v)
        within_one_step(got[0], quantize64(f, float(ys), float(yz), qtype))
        assert len(np.unique(got[0])) > 8


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu"])
@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_lookup_tables_under_many_scales(tmp_path, op, qtype):
    """Every byte under 96 random sets of scales and zero points (one node each)."""
    rng = np.random.default_rng(60 + (op == "QLinearSigmoid") * 2 + (qtype == np.int8))
    lo, hi = lim(qtype)
    nodes, inits, outs = [], {}, []
    for i in range(96):
        xs = np.float32(np.exp(rng.uniform(-6, 0)))
        inits[f"xs{i}"], inits[f"xz{i}"] = xs, qtype(rng.integers(lo, hi + 1))
        inits[f"ys{i}"] = np.float32(np.exp(rng.uniform(-9, -5))) if op == "QLinearSigmoid" else np.float32(xs * rng.uniform(0.3, 2))
        inits[f"yz{i}"] = qtype(rng.integers(lo, hi + 1))
        attrs = {"alpha": float(rng.uniform(0.01, 0.3))} if op == "QLinearLeakyRelu" else {}
        nodes.append(helper.make_node(op, ["x", f"xs{i}", f"xz{i}", f"ys{i}", f"yz{i}"], [f"y{i}"], domain=MS, **attrs))
        outs.append((f"y{i}", qtype))
    path = save(tmp_path, nodes, [("x", qtype, [256])], outs, inits)
    got, want = both(path, {"x": np.arange(lo, hi + 1).astype(qtype)})
    for g, w, (name, _) in zip(got, want, outs):
        np.testing.assert_array_equal(g, w, err_msg=name)
    as_c(tmp_path, path, {"x": np.arange(lo, hi + 1).astype(qtype)})


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
@pytest.mark.parametrize("shape", [[2, 19, 7, 5], [1, 40, 1, 1], [3, 8, 33], [1, 4, 2, 3, 5]])
def test_global_average_pool_matches_onnxruntime(tmp_path, channels_last, qtype, shape):
    rng = np.random.default_rng(len(shape) + channels_last)
    lo, hi = lim(qtype)
    for trial in range(3):
        xs, ys = np.exp(rng.uniform(-5, -1, 2)).astype(np.float32)
        xz, yz = qtype(rng.integers(lo, hi + 1)), qtype(rng.integers(lo, hi + 1))
        nodes = [helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, channels_last=channels_last)]
        path = save(tmp_path, nodes, [("x", qtype, shape)], [("y", qtype)], {"xs": xs, "xz": xz, "ys": ys, "yz": yz}, name=f"p{trial}.onnx")
        x = rand_q(rng, qtype, shape)
        got, want = both(path, {"x": x})
        assert got[0].shape == want[0].shape
        np.testing.assert_array_equal(got[0], want[0])
        if trial == 0:
            as_c(tmp_path, path, {"x": x})
        axes = tuple(range(1, len(shape) - 1)) if channels_last else tuple(range(2, len(shape)))
        mean = ((x.astype(np.float64) - float(xz)) * float(xs)).mean(axis=axes, keepdims=True)
        within_one_step(got[0], quantize64(mean, float(ys), float(yz), qtype))


POOLS = [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1),
         dict(kernel_shape=[2, 2], strides=[2, 2]),
         dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1),
         dict(kernel_shape=[9, 7]),  # the whole image: the integer path
         dict(kernel_shape=[5, 3], strides=[1, 2], pads=[2, 0, 1, 1])]


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
@pytest.mark.parametrize("pool", POOLS, ids=[str(sorted(p.items())) for p in POOLS])
def test_average_pool_matches_onnxruntime(tmp_path, qtype, pool):
    rng = np.random.default_rng(len(str(pool)))
    lo, hi = lim(qtype)
    for trial in range(3):
        xs = np.float32(np.exp(rng.uniform(-5, -2)))
        ys = np.float32(xs * rng.uniform(0.1, 0.3))  # averages spread over the output range
        mid = (lo + hi) // 2
        xz, yz = qtype(mid + rng.integers(-20, 21)), qtype(mid + rng.integers(-20, 21))
        nodes = [helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **pool)]
        path = save(tmp_path, nodes, [("x", qtype, [2, 5, 9, 7])], [("y", qtype)], {"xs": xs, "xz": xz, "ys": ys, "yz": yz}, name=f"a{trial}.onnx")
        x = rand_q(rng, qtype, [2, 5, 9, 7])
        got, want = both(path, {"x": x})
        assert got[0].shape == want[0].shape
        np.testing.assert_array_equal(got[0], want[0])
        assert len(np.unique(got[0])) > 5
        if trial == 0:
            as_c(tmp_path, path, {"x": x})


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
@pytest.mark.parametrize("pool", [POOLS[0], POOLS[1], POOLS[3], POOLS[4]], ids=["pad", "count_pad", "ceil", "whole"])
def test_channels_last_average_pool_matches_onnxruntime(tmp_path, qtype, pool):
    # ONNX Runtime's NHWC form ([N, H, W, C]); Weft runs the channels-first op between Transposes.
    rng = np.random.default_rng(7 + len(str(pool)))
    lo, hi = lim(qtype)
    xs = np.float32(np.exp(rng.uniform(-5, -2)))
    ys = np.float32(xs * rng.uniform(0.1, 0.3))
    mid = (lo + hi) // 2
    xz, yz = qtype(mid + rng.integers(-20, 21)), qtype(mid + rng.integers(-20, 21))
    nodes = [helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, channels_last=1, **pool)]
    path = save(tmp_path, nodes, [("x", qtype, [2, 9, 7, 5])], [("y", qtype)], {"xs": xs, "xz": xz, "ys": ys, "yz": yz})
    x = rand_q(rng, qtype, [2, 9, 7, 5])
    got, want = both(path, {"x": x})
    assert got[0].shape == want[0].shape and got[0].shape[-1] == 5
    np.testing.assert_array_equal(got[0], want[0])
    assert len(np.unique(got[0])) > 5
    as_c(tmp_path, path, {"x": x})


@pytest.mark.parametrize("axis", [1, -1, 0])
@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_concat_matches_onnxruntime(tmp_path, axis, qtype):
    rng = np.random.default_rng(5 + axis)
    lo, hi = lim(qtype)
    base = [2, 3, 4, 5]
    shapes = []
    for c in (3, 1, 6):
        s = list(base)
        s[axis] = c
        shapes.append(s)
    ys, yz = np.float32(0.05), qtype(rng.integers(lo, hi + 1))
    # The first input is quantized as the output (copied); the others are requantized.
    params = [(ys, yz), (np.float32(0.013), qtype(rng.integers(lo, hi + 1))), (np.float32(0.21), qtype(rng.integers(lo, hi + 1)))]
    names = ["ys", "yz"]
    inits = {"ys": ys, "yz": yz}
    for i, (s, z) in enumerate(params):
        names += [f"x{i}", f"s{i}", f"z{i}"]
        inits[f"s{i}"], inits[f"z{i}"] = s, z
    nodes = [helper.make_node("QLinearConcat", names, ["y"], domain=MS, axis=axis)]
    path = save(tmp_path, nodes, [(f"x{i}", qtype, s) for i, s in enumerate(shapes)], [("y", qtype)], inits)
    xs = [rand_q(rng, qtype, s) for s in shapes]
    got, want = both(path, {f"x{i}": x for i, x in enumerate(xs)})
    np.testing.assert_array_equal(got[0], want[0])
    as_c(tmp_path, path, {f"x{i}": x for i, x in enumerate(xs)})
    ref = np.concatenate([quantize64((x.astype(np.float64) - float(z)) * float(s), float(ys), float(yz), qtype)
                          for x, (s, z) in zip(xs, params)], axis=axis)
    within_one_step(got[0], ref)
    np.testing.assert_array_equal(got[0].take(range(3), axis=axis), xs[0])  # copied as it is


QGEMM_CASES = [  # (m, k, n, transA, transB, per_column, with_c, quantized_out)
    (3, 5, 4, 0, 0, False, True, True),
    (3, 5, 4, 1, 1, True, True, True),
    (4, 7, 6, 0, 1, True, False, False),
    (16, 96, 40, 0, 1, True, True, True),   # large enough for the packed GEMM kernels
    (16, 96, 40, 0, 0, False, True, False),
    (9, 130, 33, 1, 0, True, True, True),
]


@pytest.mark.parametrize("atype", [np.uint8, np.int8])
@pytest.mark.parametrize("case", QGEMM_CASES, ids=[str(c) for c in QGEMM_CASES])
def test_qgemm_matches_onnxruntime(tmp_path, atype, case):
    m, k, n, ta, tb, per_col, with_c, qout = case
    rng = np.random.default_rng(m * k + n + ta * 2 + tb)
    # Weights within [-64, 63]: ONNX Runtime's 16-bit pair sums on CPUs without VNNI stay exact.
    b = rng.integers(-64, 64, size=[n, k] if tb else [k, n]).astype(np.int8)
    a = rand_q(rng, atype, [k, m] if ta else [m, k])
    a_s, a_z = np.float32(0.02), atype(rng.integers(*lim(atype)) // 2)
    b_s = np.exp(rng.uniform(-6, -3, n)).astype(np.float32) if per_col else np.float32(0.004)
    b_z = np.zeros(n, np.int8) if per_col else np.int8(0)
    inputs = ["a", "as", "az", "b", "bs", "bz"]
    inits = {"as": a_s, "az": a_z, "b": b, "bs": b_s, "bz": b_z}
    c = rng.integers(-3000, 3000, size=[n]).astype(np.int32)
    if with_c:
        inputs.append("c")
        inits["c"] = c
    otype = atype if qout else np.float32
    if qout:
        if not with_c:
            inputs.append("")
        inputs += ["ys", "yz"]
        inits["ys"], inits["yz"] = np.float32(0.3), atype(rng.integers(*lim(atype)) // 3)
    alpha = 0.75
    nodes = [helper.make_node("QGemm", inputs, ["y"], domain=MS, transA=ta, transB=tb, alpha=alpha)]
    path = save(tmp_path, nodes, [("a", atype, a.shape)], [("y", otype)], inits)
    got, want = both(path, {"a": a})
    assert got[0].dtype == want[0].dtype and got[0].shape == (m, n)
    np.testing.assert_array_equal(got[0], want[0])
    as_c(tmp_path, path, {"a": a})
    A = (a.T if ta else a).astype(np.int64) - int(a_z)
    B = (b.T if tb else b).astype(np.int64) - np.asarray(b_z, np.int64)
    acc = A @ B + (c if with_c else 0)
    real = acc * alpha * float(a_s) * np.asarray(b_s, np.float64)
    if qout:
        within_one_step(got[0], quantize64(real, float(inits["ys"]), float(inits["yz"]), atype))
    else:
        np.testing.assert_allclose(got[0], real, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
@pytest.mark.parametrize("pool", [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                  dict(kernel_shape=[2, 3], strides=[2, 1], ceil_mode=1),
                                  dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[0, 2, 1, 0])])
def test_eight_bit_max_pool(tmp_path, qtype, pool):
    """MaxPool on 8-bit values (oneDNN's kernels), alone and between two QLinearConvs that keep
    pixel rows through it."""
    rng = np.random.default_rng(8)
    x = rand_q(rng, qtype, [2, 20, 13, 11])
    path = save(tmp_path, [helper.make_node("MaxPool", ["x"], ["y"], **pool)], [("x", qtype, x.shape)], [("y", qtype)], {}, name="p.onnx")
    got, want = both(path, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    as_c(tmp_path, path, {"x": x}, prefix="pool")
    lo, hi = lim(qtype)
    w1 = rng.integers(-60, 60, [20, 20, 1, 1]).astype(np.int8)
    w2 = rng.integers(-60, 60, [8, 20, 3, 3]).astype(np.int8)
    inits = {"s": np.float32(0.05), "z": qtype((lo + hi) // 2), "ws": np.float32(0.01), "wz": np.int8(0), "w1": w1, "w2": w2,
             "s2": np.float32(0.3)}
    nodes = [helper.make_node("QLinearConv", ["x", "s", "z", "w1", "ws", "wz", "s", "z"], ["a"]),
             helper.make_node("MaxPool", ["a"], ["b"], **pool),
             helper.make_node("QLinearConv", ["b", "s", "z", "w2", "ws", "wz", "s2", "z"], ["y"], pads=[1, 1, 1, 1])]
    path = save(tmp_path, nodes, [("x", qtype, x.shape)], [("y", qtype)], inits, name="c.onnx")
    got, want = both(path, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", path], capture_output=True, text=True,
                           check=True).stdout
    line = next(ln for ln in steps.splitlines() if " MaxPool '" in ln)
    assert line.count("@NHWC") == 2, line


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_qdq_patterns_run_as_onnxruntime_runs_them(tmp_path, qtype):
    """DequantizeLinear -> Add / Mul / Sigmoid / LeakyRelu / GlobalAveragePool / Concat /
    AveragePool -> QuantizeLinear become the contrib operators, and a MaxPool between pairs of equal parameters runs on the 8-bit
    values, as ONNX Runtime rewrites them: the same bytes as ONNX Runtime; within one step of the
    float path that import_onnx(fuse_qdq=False) keeps."""
    rng = np.random.default_rng(21)
    lo, hi = lim(qtype)
    names = ["p", "a", "s", "l", "m", "g", "k", "v"]
    inits = {}
    for i, n in enumerate(["x", "y"] + names):
        inits[f"{n}_s"] = np.float32(np.exp(rng.uniform(-5, -2)))
        inits[f"{n}_z"] = qtype(rng.integers(lo // 2, hi // 2 + 1))
    inits["p_s"], inits["p_z"] = inits["x_s"], inits["x_z"]  # MaxPool keeps its input's parameters

    def dq(v, p):
        return helper.make_node("DequantizeLinear", [v, f"{p}_s", f"{p}_z"], [v + "_f"])

    def q(v, p):
        return helper.make_node("QuantizeLinear", [v, f"{p}_s", f"{p}_z"], [p + "_q"])

    nodes = [dq("x", "x"), helper.make_node("MaxPool", ["x_f"], ["pf"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]), q("pf", "p"),
             dq("p_q", "p"), dq("y", "y"), helper.make_node("Add", ["p_q_f", "y_f"], ["af"]), q("af", "a"),
             dq("a_q", "a"), helper.make_node("Sigmoid", ["a_q_f"], ["sf"]), q("sf", "s"),
             helper.make_node("LeakyRelu", ["a_q_f"], ["lf"], alpha=0.2), q("lf", "l"),
             dq("s_q", "s"), dq("l_q", "l"), helper.make_node("Mul", ["s_q_f", "l_q_f"], ["mf"]), q("mf", "m"),
             dq("m_q", "m"), helper.make_node("GlobalAveragePool", ["m_q_f"], ["gf"]), q("gf", "g"),
             helper.make_node("Concat", ["a_q_f", "m_q_f"], ["kf"], axis=1), q("kf", "k"),
             helper.make_node("AveragePool", ["m_q_f"], ["vf"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), q("vf", "v")]
    path = save(tmp_path, nodes, [("x", qtype, [1, 6, 9, 10]), ("y", qtype, [1, 6, 9, 10])], [("m_q", qtype), ("g_q", qtype), ("k_q", qtype), ("v_q", qtype)],
                inits)
    feeds = {"x": rand_q(rng, qtype, [1, 6, 9, 10]), "y": rand_q(rng, qtype, [1, 6, 9, 10])}
    got, want = both(path, feeds)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", path], capture_output=True, text=True,
                           check=True).stdout
    for op in ["QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearGlobalAveragePool", "QLinearConcat",
               "QLinearAveragePool"]:
        assert f" {op} " in steps, op
    assert "Sigmoid '" not in steps.replace("QLinearSigmoid '", "") and " Add '" not in steps
    pool = next(ln for ln in steps.splitlines() if " MaxPool '" in ln)
    assert f"(x:{'int8' if qtype == np.int8 else 'uint8'}[" in pool, pool
    plain = weft.Session(use_env_path=False).compile(weft.import_onnx(path, fuse_qdq=False)).run(list(feeds.values()))
    for g, p in zip(got, plain):
        d = np.abs(g.astype(np.int32) - np.asarray(p).astype(np.int32))
        assert d.max() <= 1
    # weft aot imports the file the same way: its C gives the same bytes.
    as_c(tmp_path, path, feeds)


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_qdq_gemm_becomes_qgemm(tmp_path, qtype, trans_b, per_column, bias):
    """DequantizeLinear (A, B, int32 bias) -> Gemm -> QuantizeLinear runs as QGemm, as ONNX Runtime
    runs it: the same bytes; within one step of the float path (--no-fuse-qdq)."""
    rng = np.random.default_rng(30 + trans_b * 4 + per_column * 2 + bias)
    m, k, n = 3, 200, 24
    lo, hi = lim(qtype)
    w = rng.integers(-64, 64, [n, k] if trans_b else [k, n]).astype(np.int8)
    ws = np.exp(rng.uniform(-7, -5, n)).astype(np.float32) if per_column else np.float32(0.002)
    xs, xz = np.float32(0.03), qtype(rng.integers(lo // 2, hi // 2))
    inits = {"xs": xs, "xz": xz, "w": w, "ws": ws, "wz": np.zeros(n, np.int8) if per_column else np.int8(0), "ys": np.float32(0.08),
             "yz": qtype(rng.integers(lo // 2, hi // 2))}
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0 if trans_b else 1)]
    gemm_in = ["xf", "wf"]
    if bias:
        inits.update({"b": rng.integers(-5000, 5000, n).astype(np.int32), "bs": (xs * ws).astype(np.float32),
                      "bz": np.zeros(n, np.int32) if per_column else np.int32(0)})
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bf"], axis=0))
        gemm_in.append("bf")
    nodes += [helper.make_node("Gemm", gemm_in, ["yf"], transB=trans_b), helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
    path = save(tmp_path, nodes, [("x", qtype, [m, k])], [("y", qtype)], inits)
    feeds = {"x": rand_q(rng, qtype, [m, k])}
    got, want = both(path, feeds)
    np.testing.assert_array_equal(got[0], want[0])
    assert len(np.unique(got[0])) > 10
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", path], capture_output=True, text=True,
                           check=True).stdout
    assert " QGemm " in steps and " Gemm '" not in steps
    plain = weft.Session(use_env_path=False).compile(weft.import_onnx(path, fuse_qdq=False)).run(list(feeds.values()))[0]
    assert np.abs(got[0].astype(np.int32) - np.asarray(plain).astype(np.int32)).max() <= 1


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
@pytest.mark.parametrize("case", ["weights_per_column", "weights_per_tensor", "two_activations"])
def test_qdq_matmul_becomes_qlinear_matmul(tmp_path, qtype, case):
    """DequantizeLinear (A per tensor; B a constant per column or per tensor, or a second activation
    as in attention) -> MatMul -> QuantizeLinear runs as QLinearMatMul, as ONNX Runtime runs it: the
    same bytes; within one step of the float path (--no-fuse-qdq)."""
    if qtype == np.uint8:
        skip_unless_ort_u8s8_exact()
    rng = np.random.default_rng({"weights_per_column": 50, "weights_per_tensor": 51, "two_activations": 52}[case] + (qtype == np.int8))
    lo, hi = lim(qtype)
    shape_a, k, n = [2, 5, 96], 96, 40
    xs, xz = np.float32(0.03), qtype(rng.integers(lo // 2, hi // 2))
    inits = {"xs": xs, "xz": xz, "ys": np.float32(4.0 if case == "two_activations" else 0.3), "yz": qtype(rng.integers(lo // 2, hi // 2))}
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"])]
    inputs = [("x", qtype, shape_a)]
    feeds = {"x": rand_q(rng, qtype, shape_a)}
    if case == "two_activations":
        inits.update({"bs": np.float32(0.02), "bz": qtype(rng.integers(lo // 2, hi // 2))})
        nodes.append(helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["wf"]))
        inputs.append(("b", qtype, [2, k, n]))
        feeds["b"] = rand_q(rng, qtype, [2, k, n])
    else:
        per_column = case == "weights_per_column"
        inits.update({"w": rng.integers(-128, 128, [k, n]).astype(np.int8),
                      "ws": np.exp(rng.uniform(-7, -5, n)).astype(np.float32) if per_column else np.float32(0.002),
                      "wz": np.zeros(n, np.int8) if per_column else np.int8(0)})
        nodes.append(helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=1))
    nodes += [helper.make_node("MatMul", ["xf", "wf"], ["yf"]), helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"])]
    path = save(tmp_path, nodes, inputs, [("y", qtype)], inits)
    got, want = both(path, feeds)
    np.testing.assert_array_equal(got[0], want[0])
    assert len(np.unique(got[0])) > 10
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", path], capture_output=True, text=True,
                           check=True).stdout
    assert " QLinearMatMul " in steps and " MatMul '" not in steps
    plain = weft.Session(use_env_path=False).compile(weft.import_onnx(path, fuse_qdq=False)).run(list(feeds.values()))[0]
    assert np.abs(got[0].astype(np.int32) - np.asarray(plain).astype(np.int32)).max() <= 1


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_qdq_embedding_gathers_the_eight_bit_rows(tmp_path, qtype):
    """DequantizeLinear of a constant table -> Gather (a QDQ embedding, also read by a second op):
    the Gather takes the 8-bit rows and only they are dequantized; the same floats as ONNX Runtime."""
    rng = np.random.default_rng(60)
    lo, hi = lim(qtype)
    table = rng.integers(lo, hi + 1, [500, 16]).astype(qtype)
    inits = {"t": table, "ts": np.float32(0.05), "tz": qtype(rng.integers(lo // 2, hi // 2))}
    nodes = [helper.make_node("DequantizeLinear", ["t", "ts", "tz"], ["tf"]),
             helper.make_node("Gather", ["tf", "ids"], ["emb"]),
             helper.make_node("ReduceSum", ["tf"], ["total"], keepdims=0)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 7])],
                          [helper.make_tensor_value_info("emb", TensorProto.FLOAT, None), helper.make_tensor_value_info("total", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    path = str(tmp_path / "emb.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), path)
    feeds = {"ids": rng.integers(-500, 500, [2, 7]).astype(np.int64)}
    got, want = both(path, feeds)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", path], capture_output=True, text=True,
                           check=True).stdout
    assert re.search(r"Gather '[^']*' \(t:u?int8\[500,16\]", steps), steps  # the table stays 8-bit


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_permutes_between_eight_bit_convolutions_copy_pixel_rows(tmp_path, qtype):
    """QLinearConv -> Transpose to NHWC -> an 8-bit op -> Transpose back -> QLinearConv (ConvNeXt's
    blocks quantized in the QOperator format): the convolutions keep pixel rows, which are the NHWC
    tensor's bytes, so the transposes copy; ONNX Runtime's bytes."""
    rng = np.random.default_rng(77)
    lo, hi = lim(qtype)
    c = 24
    inits = {"s": np.float32(0.05), "z": qtype(rng.integers(lo // 2, hi // 2)), "w1": rng.integers(-60, 60, [c, 8, 3, 3]).astype(np.int8),
             "w2": rng.integers(-60, 60, [c, 1, 3, 3]).astype(np.int8), "ws": np.float32(0.01), "wz": np.int8(0),
             "ys": np.float32(0.08), "yz": qtype(rng.integers(lo // 2, hi // 2)), "ts": np.float32(0.02)}
    nodes = [helper.make_node("QLinearConv", ["x", "s", "z", "w1", "ws", "wz", "ys", "yz"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["c1"], ["t1"], perm=[0, 2, 3, 1]),
             helper.make_node("QLinearSigmoid", ["t1", "ys", "yz", "ts", "z"], ["g"], domain=MS),
             helper.make_node("Transpose", ["g"], ["t2"], perm=[0, 3, 1, 2]),
             helper.make_node("QLinearConv", ["t2", "ts", "z", "w2", "ws", "wz", "ys", "yz"], ["y"], pads=[1, 1, 1, 1], group=c)]
    path = save(tmp_path, nodes, [("x", qtype, [1, 8, 10, 12])], [("y", qtype)], inits)
    feeds = {"x": rand_q(rng, qtype, [1, 8, 10, 12])}
    got, want = both(path, feeds)
    np.testing.assert_array_equal(got[0], want[0])
    assert len(np.unique(got[0])) > 10
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", path], capture_output=True, text=True,
                           check=True).stdout
    assert steps.count("@NHWC) -> (") + steps.count("@NHWC)\n") >= 2, steps


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_qdq_moves_run_on_the_eight_bit_values(tmp_path, qtype):
    """Transpose, Reshape, Squeeze, Unsqueeze and Flatten between a DequantizeLinear and a
    QuantizeLinear of the same parameters (what quantize_static writes around them) move the 8-bit
    values: no float step, ONNX Runtime's bytes; a pair whose parameters differ stays on the float path."""
    rng = np.random.default_rng(81)
    lo, hi = lim(qtype)
    inits = {"s": np.float32(0.05), "z": qtype(rng.integers(lo // 2, hi // 2)), "s2": np.float32(0.07), "shape": np.array([2, 12, 5], np.int64),
             "ax": np.array([1], np.int64)}
    chain = [("Transpose", [], {"perm": [0, 2, 1, 3]}), ("Reshape", ["shape"], {}), ("Unsqueeze", ["ax"], {}), ("Squeeze", ["ax"], {}),
             ("Flatten", [], {"axis": 2})]
    nodes, cur = [], "x"
    for i, (op, extra, attrs) in enumerate(chain):
        nodes += [helper.make_node("DequantizeLinear", [cur, "s", "z"], [f"d{i}"]), helper.make_node(op, [f"d{i}"] + extra, [f"m{i}"], **attrs),
                  helper.make_node("QuantizeLinear", [f"m{i}", "s", "z"], [f"q{i}"])]
        cur = f"q{i}"
    nodes += [helper.make_node("DequantizeLinear", [cur, "s", "z"], ["dl"]), helper.make_node("Transpose", ["dl"], ["tl"], perm=[1, 0]),
              helper.make_node("QuantizeLinear", ["tl", "s2", "z"], ["y"])]  # other parameters: requantized in float
    path = save(tmp_path, nodes, [("x", qtype, [2, 3, 4, 5])], [("y", qtype)], inits)
    feeds = {"x": rand_q(rng, qtype, [2, 3, 4, 5])}
    got, want = both(path, feeds)
    np.testing.assert_array_equal(got[0], want[0])
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", path], capture_output=True, text=True,
                           check=True).stdout
    assert steps.count(" DequantizeLinear '") == 1 and steps.count(" QuantizeLinear '") == 1, steps  # the last pair only


@pytest.mark.parametrize("qtype", [np.int8, np.uint8])
def test_float_activations_between_qdq_pairs_keep_pixel_rows(tmp_path, qtype):
    """Float activations ONNX Runtime leaves unquantized (HardSigmoid, Tanh) between a
    DequantizeLinear and a QuantizeLinear, between two QLinearConvs: the whole stretch stays in
    pixel rows (@NHWC), and the output equals ONNX Runtime's."""
    rng = np.random.default_rng(12)
    lo, hi = lim(qtype)
    x = rand_q(rng, qtype, [1, 8, 15, 13])
    inits = {"s": np.float32(0.05), "z": qtype((lo + hi) // 2), "ws": np.float32(0.01), "wz": np.int8(0),
             "w1": rng.integers(-60, 60, [16, 8, 1, 1]).astype(np.int8), "w2": rng.integers(-60, 60, [8, 16, 3, 3]).astype(np.int8),
             "hs": np.float32(0.004), "hz": qtype(lo + 10), "s2": np.float32(0.2)}
    nodes = [helper.make_node("QLinearConv", ["x", "s", "z", "w1", "ws", "wz", "s", "z"], ["a"]),
             helper.make_node("DequantizeLinear", ["a", "s", "z"], ["af"]),
             helper.make_node("HardSigmoid", ["af"], ["hf"], alpha=0.2, beta=0.5),
             helper.make_node("Tanh", ["hf"], ["tf"]),
             helper.make_node("QuantizeLinear", ["tf", "hs", "hz"], ["h"]),
             helper.make_node("QLinearConv", ["h", "hs", "hz", "w2", "ws", "wz", "s2", "z"], ["y"], pads=[1, 1, 1, 1])]
    path = save(tmp_path, nodes, [("x", qtype, x.shape)], [("y", qtype)], inits)
    got, want = both(path, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    assert len(np.unique(got[0])) > 10
    cli = os.environ.get("WEFT_CLI", "weft")
    steps = subprocess.run([os.path.abspath(cli) if os.sep in cli else cli, "inspect", "--steps", path], capture_output=True, text=True,
                           check=True).stdout
    for op in [" HardSigmoid '", " Tanh '", " DequantizeLinear '", " QuantizeLinear '"]:
        line = next(ln for ln in steps.splitlines() if op in ln)
        assert line.count("@NHWC") == 2, line


def qoperator_model(tmp_path, activation_type):
    torch = pytest.importorskip("torch")
    quant = pytest.importorskip("onnxruntime.quantization")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.c2 = torch.nn.Conv2d(16, 16, 3, padding=1)
            self.c3 = torch.nn.Conv2d(16, 8, 1)
            self.fc = torch.nn.Linear(24, 10)

        def forward(self, x):
            a = torch.relu(self.c1(x))
            b = self.c2(a) + a
            b = b * torch.sigmoid(b)
            c = torch.cat([b, self.c3(b)], 1)
            p = torch.nn.functional.adaptive_avg_pool2d(c, 1).flatten(1)
            return torch.nn.functional.leaky_relu(self.fc(p), 0.1)

    torch.manual_seed(0)
    f = str(tmp_path / "f.onnx")
    torch.onnx.export(Net().eval(), torch.randn(1, 3, 20, 20), f, opset_version=13, input_names=["x"], output_names=["y"], dynamo=False)
    rng = np.random.default_rng(0)

    class Reader(quant.CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": rng.standard_normal((1, 3, 20, 20)).astype(np.float32)} for _ in range(6)])

        def get_next(self):
            return next(self.it, None)

    q = str(tmp_path / "q.onnx")
    quant.quantize_static(f, q, Reader(), quant_format=quant.QuantFormat.QOperator, activation_type=activation_type,
                          weight_type=quant.QuantType.QInt8)
    return q


@pytest.mark.parametrize("act", ["QUInt8", "QInt8"])
def test_qoperator_network_from_the_onnxruntime_quantizer(tmp_path, act):
    skip_unless_ort_u8s8_exact()
    quant = pytest.importorskip("onnxruntime.quantization")
    path = qoperator_model(tmp_path, getattr(quant.QuantType, act))
    ops = {(n.domain, n.op_type) for n in onnx.load(path).graph.node}
    for op in ["QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearConcat", "QLinearGlobalAveragePool", "QGemm"]:
        assert (MS, op) in ops
    compiled = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = (rng.standard_normal((1, 3, 20, 20)) * 1.5).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(compiled.run([x])[0]), sess.run(None, {"x": x})[0])
    # The 8-bit values between the convolutions stay pixel rows through Add, Sigmoid, Mul and Concat.
    cli = os.environ.get("WEFT_CLI", "weft")
    cli = os.path.abspath(cli) if os.sep in cli else cli
    steps = subprocess.run([cli, "inspect", "--steps", path], capture_output=True, text=True, check=True).stdout
    for node in ["/Add_quant", "/Sigmoid_quant", "/Mul_quant", "/Concat_quant"]:
        line = next(ln for ln in steps.splitlines() if f"'{node}'" in ln)
        assert "@NHWC" in line.split("->")[1], line
    # A model file keeps the layouts and the outputs.
    wf = str(tmp_path / "q.weft")
    subprocess.run([cli, "compile", path, "-o", wf], capture_output=True, text=True, check=True)
    x = rng.standard_normal((1, 3, 20, 20)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([cli, "run", wf, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path)], capture_output=True, text=True,
                   check=True, cwd=tmp_path)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), sess.run(None, {"x": x})[0])
    # As generated C: the same bytes.
    as_c(tmp_path, path, {"x": x})


def error_of(tmp_path, nodes, inputs, outputs, inits, feeds):
    path = save(tmp_path, nodes, inputs, outputs, inits, name="bad.onnx")
    with pytest.raises(Exception) as e:
        weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(feeds)
    return str(e.value)


SOFTMAX = [  # shape, axis (None: the attribute absent), opset of the Softmax replaced
    ([2, 12, 197], -1, 13),
    ([3, 5, 7], 1, 13),
    ([4, 10], None, 13),
    ([2, 3, 4, 5], 2, 12),
    ([2, 3, 4, 5], None, 11),
    ([1, 1000], 1, 13),
    ([5, 8, 9], -1, 13),  # 40 short rows: 16 at a time, then one by one
]


@pytest.mark.parametrize("qtype", [np.uint8, np.int8])
@pytest.mark.parametrize("case", range(len(SOFTMAX)))
def test_softmax_matches_onnxruntime(tmp_path, qtype, case):
    """QLinearSoftmax as onnxruntime.quantization writes it (y_scale 1/256, y_zero_point 0 or -128)
    and with other output parameters, on random bytes under scales that keep many values apart and
    that make one value dominate: ONNX Runtime's bytes, within one step of a float64 softmax; and
    the C that weft aot writes gives the same bytes."""
    shape, axis, opset = SOFTMAX[case]
    rng = np.random.default_rng(case * 7 + (qtype == np.int8))
    x = rand_q(rng, qtype, shape)
    for k, (xs, ys, yz) in enumerate([(0.02, 1 / 256, 0 if qtype == np.uint8 else -128), (0.15, 1 / 256, 0 if qtype == np.uint8 else -128),
                                      (0.05, 1 / 200, 10 if qtype == np.uint8 else -100)]):
        attrs = {"opset": opset}
        if axis is not None:
            attrs["axis"] = axis
        node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain=MS, **attrs)
        path = save(tmp_path, [node], [("x", qtype, shape)], [("y", qtype)],
                    {"xs": np.float32(xs), "xz": qtype(3), "ys": np.float32(ys), "yz": qtype(yz)}, name=f"s{k}.onnx")
        got, want = both(path, {"x": x})
        # float64: the softmax of the dequantized values along the axis (below opset 13, over the
        # flattened dims from the axis on)
        ax = (axis if axis is not None else -1) % len(shape)  # absent: -1 below opset 13 too (ONNX Runtime's schema)
        v = (x.astype(np.float64) - 3) * np.float32(xs)
        if opset < 13:
            v = v.reshape(int(np.prod(shape[:ax])), -1)
            e = np.exp(v - v.max(axis=1, keepdims=True))
            p = (e / e.sum(axis=1, keepdims=True)).reshape(shape)
        else:
            e = np.exp(v - v.max(axis=ax, keepdims=True))
            p = e / e.sum(axis=ax, keepdims=True)
        ref = quantize64(p, np.float64(np.float32(ys)), yz, qtype)
        within_one_step(got[0], ref)
        # where ONNX Runtime's int8 kernel wraps a probability that rounds to 1, Weft saturates
        wraps = (want[0].astype(np.int64) == -128) & (ref == 127) if qtype == np.int8 else np.zeros(shape, bool)
        assert np.array_equal(got[0][~wraps], want[0][~wraps])
        assert (got[0][wraps] == 127).all()
        if k == 0 or case == 0:  # the generated C gives the runtime's bytes
            as_c(tmp_path, path, {"x": x}, prefix=f"s{k}")


@pytest.mark.parametrize("qtype", [np.uint8, np.int8])
@pytest.mark.parametrize("shapes", [([2, 3, 4], [2, 3, 4], [2, 3, 4]), ([1, 1, 4], [2, 3, 1], [3, 4]), ([2, 3, 4], [], [1])])
def test_where_matches_onnxruntime(tmp_path, qtype, shapes):
    """QLinearWhere: each side requantized to the output's parameters (also when they equal the
    side's own), with broadcasting; ONNX Runtime's bytes."""
    cs, xsh, ysh = shapes
    rng = np.random.default_rng(len(cs) * 10 + len(xsh))
    feeds = {"c": rng.integers(0, 2, cs).astype(bool), "x": rand_q(rng, qtype, xsh), "y": rand_q(rng, qtype, ysh)}
    for k, (xs, xz, ys, yz) in enumerate([(0.1, 5, 0.03, -7), (0.07, 1, 0.07, 1)]):
        lo, _ = lim(qtype)
        zs, zz = np.float32(0.07), qtype(1)
        node = helper.make_node("QLinearWhere", ["c", "x", "xs", "xz", "y", "ys", "yz", "zs", "zz"], ["z"], domain=MS)
        path = save(tmp_path, [node], [("c", np.bool_, cs), ("x", qtype, xsh), ("y", qtype, ysh)], [("z", qtype)],
                    {"xs": np.float32(xs), "xz": qtype(xz - lo if qtype == np.uint8 and xz < 0 else xz), "ys": np.float32(ys),
                     "yz": qtype(yz + 128 if qtype == np.uint8 and yz < 0 else yz), "zs": zs, "zz": zz}, name=f"w{k}.onnx")
        got, want = both(path, feeds)
        assert got[0].dtype == want[0].dtype and np.array_equal(got[0], want[0])


def test_errors_name_the_parameter(tmp_path):
    a = np.zeros([2, 3], np.uint8)
    per_channel = error_of(tmp_path, [helper.make_node("QLinearAdd", ["a", "as", "az", "a", "as", "az", "cs", "cz"], ["c"], domain=MS)],
                           [("a", np.uint8, [2, 3])], [("c", np.uint8)],
                           {"as": np.array([0.1, 0.2, 0.3], np.float32), "az": np.uint8(0), "cs": np.float32(0.1), "cz": np.uint8(0)}, [a])
    assert "A_scale" in per_channel and "per-tensor" in per_channel
    zero = error_of(tmp_path, [helper.make_node("QLinearSigmoid", ["a", "xs", "", "ys"], ["c"], domain=MS)], [("a", np.uint8, [2, 3])],
                    [("c", np.uint8)], {"xs": np.float32(0.0), "ys": np.float32(0.1)}, [a])
    assert "X_scale" in zero and "positive" in zero
    mixed = error_of(tmp_path, [helper.make_node("QLinearGlobalAveragePool", ["x", "s", "z", "s", "w"], ["y"], domain=MS)],
                     [("x", np.uint8, [1, 2, 3, 3])], [("y", np.uint8)], {"s": np.float32(0.1), "z": np.uint8(0), "w": np.int8(0)},
                     [np.zeros([1, 2, 3, 3], np.uint8)])
    assert "y_zero_point" in mixed
    gemm = error_of(tmp_path, [helper.make_node("QGemm", ["a", "s", "z", "b", "bs", "bz"], ["y"], domain=MS)], [("a", np.uint8, [2, 3])],
                    [("y", np.float32)], {"s": np.float32(0.1), "z": np.uint8(0), "b": np.ones([3, 4], np.int8),
                                          "bs": np.full(3, 0.1, np.float32), "bz": np.zeros(3, np.int8)}, [a])
    assert "b_scale" in gemm and "column" in gemm


def test_parameters_the_quantized_ops_do_not_take(tmp_path):
    """A zero point whose type differs from its data, and dilated average pooling, fail with clear
    errors; a QDQ pattern whose scale is not positive stays on the float path (a negative scale
    would turn MaxPool on the bytes into a minimum), whose QuantizeLinear names the scale."""
    x = np.arange(24, dtype=np.uint8).reshape(1, 2, 3, 4)
    mixed = error_of(tmp_path, [helper.make_node("QLinearConv", ["x", "s", "z", "w", "s", "wz", "s", "yz"], ["y"])],
                     [("x", np.uint8, [1, 2, 3, 4])], [("y", np.uint8)],
                     {"s": np.float32(0.1), "z": np.int8(3), "w": np.ones([2, 2, 1, 1], np.int8), "wz": np.int8(0), "yz": np.uint8(0)}, [x])
    assert "x_zero_point is int8 but x is uint8" in mixed
    dil = error_of(tmp_path, [helper.make_node("QLinearAveragePool", ["x", "s", "z", "s", "z"], ["y"], domain=MS, kernel_shape=[2, 2],
                                               dilations=[2, 1])], [("x", np.uint8, [1, 2, 3, 4])], [("y", np.uint8)],
                   {"s": np.float32(0.1), "z": np.uint8(3)}, [x])
    assert "dilations" in dil
    # A negative scale reverses the order: MaxPool on the bytes would compute the minimum.
    nodes = [helper.make_node("DequantizeLinear", ["x", "neg", "z"], ["xf"]),
             helper.make_node("MaxPool", ["xf"], ["pf"], kernel_shape=[2, 2]),
             helper.make_node("QuantizeLinear", ["pf", "neg", "z"], ["y"])]
    path = save(tmp_path, nodes, [("x", np.uint8, [1, 2, 3, 4])], [("y", np.uint8)], {"neg": np.float32(-0.1), "z": np.uint8(128)},
                name="neg.onnx")
    with pytest.raises(Exception, match="scale"):  # the float path refuses the scale, as it always did
        weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
