"""LiteRT (.tflite) import: custom operators by customCode, flexbuffer options, bad files."""
import glob
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The example's .tflite writer: from the checkout, or copied next to these tests (scripts/test_wheel.sh).
sys.path.insert(0, os.path.join(ROOT, "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402

CORPORA = os.path.join(os.environ.get("WEFT_CORPORA_DIR", os.path.join(ROOT, "..", "shared", "corpora")), "tflite-micro")


def write(tmp_path, model, inputs, outputs, name="m.tflite"):
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(model.finish(inputs, outputs))
    return path


def session():
    return weft.Session(use_env_path=False)


def test_custom_op_key():
    assert weft.litert_custom_op_key("custom-noop") == "CUSTOM_NOOP"
    assert weft.litert_custom_op_key(" custom-noop ") == "_CUSTOM_NOOP_"
    assert weft.litert_custom_op_key("\tMy Op-v2\n") == "MY_OP_V2"
    assert weft.litert_custom_op_key("Convolution2DTransposeBias") == "CONVOLUTION2DTRANSPOSEBIAS"


def custom_model(tmp_path, code, options=b""):
    m = Model()
    x = m.tensor("x", [2, 3], "float32")
    y = m.tensor("y", [2, 3], "float32")
    m.custom(code, [x], [y], options=options)
    return write(tmp_path, m, [x], [y])


def test_unknown_custom_code_names_code_key_and_remedy(tmp_path):
    path = custom_model(tmp_path, "my-fancy op")
    g = weft.import_litert(path)
    with pytest.raises(Exception) as e:
        session().compile(g)
    assert isinstance(e.value, weft.NotFoundError) and isinstance(e.value, KeyError)
    msg = str(e.value)  # the message as written, not KeyError's quoted repr
    assert msg == e.value.args[0]
    assert "customCode 'my-fancy op'" in msg
    assert "canonical key 'MY_FANCY_OP'" in msg
    assert "WEFT_CUSTOM_OPP_PATH" in msg and "framework/litert/op_map.json" in msg


def test_op_map_and_flexbuffer_options_become_typed_attributes(tmp_path):
    from flatbuffers import flexbuffers

    options = flexbuffers.Dumps({"alpha": 0.25})
    path = custom_model(tmp_path, "leaky-relu", options)
    # The code (or its key) mapped to a built-in whose attribute the flexbuffer map provides.
    for key in ("leaky-relu", "LEAKY_RELU"):
        model = session().compile(weft.import_litert(path, op_map={key: "LeakyRelu"}))
        x = np.array([[-4, -1, 0], [1, 2, -8]], np.float32)
        (y,) = model.run([x])
        np.testing.assert_array_equal(y, np.where(x > 0, x, 0.25 * x))


def test_raw_custom_options_arrive_as_bytes(tmp_path):
    # Not a flexbuffer map: the op gets the bytes; LeakyRelu does not take them, and says so.
    path = custom_model(tmp_path, "leaky-relu", struct.pack("<3i", 1, 2, 2))
    with pytest.raises(Exception) as e:
        session().compile(weft.import_litert(path, op_map={"leaky-relu": "LeakyRelu"}))
    msg = str(e.value)
    assert "[LeakyRelu" in msg and "12 bytes" in msg and "not a flexbuffer map" in msg, msg
    assert "REQUIRED_ATTR(custom_options, Tensor)" in msg and "parser" in msg, msg
    assert "has no attribute" not in msg, msg


def test_builtin_lowering_runs(tmp_path):
    m = Model()
    a = m.tensor("a", [2, 4], "float32")
    b = m.tensor("b", [2, 4], "float32")
    c = m.tensor("c", [2, 4], "float32")
    d = m.tensor("d", [2, 4], "float32")
    m.builtin(99, [a, b], [c])  # SQUARED_DIFFERENCE
    m.builtin(76, [c], [d])  # RSQRT
    path = write(tmp_path, m, [a, b], [d])
    rng = np.random.default_rng(0)
    xa, xb = rng.standard_normal((2, 2, 4)).astype(np.float32)
    (got,) = session().compile(weft.import_litert(path)).run([xa, xb])
    want = 1 / np.sqrt((xa.astype(np.float64) - xb) ** 2)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.skipif(not os.path.isdir(CORPORA), reason="no corpora")
def test_corrupt_files_fail_cleanly(tmp_path):
    """Truncations and byte flips of a real model: an error or a model that runs, never a crash."""
    src = os.path.join(CORPORA, "examples", "micro_speech", "models", "micro_speech_quantized.tflite")
    data = open(src, "rb").read()
    rng = np.random.default_rng(1)
    cases = [data[:n] for n in (0, 4, 8, 64, len(data) // 2, len(data) - 1)]
    for _ in range(150):
        b = bytearray(data)
        for _ in range(int(rng.integers(1, 8))):
            b[int(rng.integers(0, len(b)))] = int(rng.integers(0, 256))
        cases.append(bytes(b))
    errors = 0
    for k, blob in enumerate(cases):
        path = str(tmp_path / f"c{k}.tflite")
        with open(path, "wb") as f:
            f.write(blob)
        try:
            g = weft.import_litert(path)
            model = session().compile(g)
            ins = [np.zeros(shape, np.dtype(dt)) for _, dt, shape in g.inputs]
            model.run(ins)
        except Exception as e:
            errors += 1
            assert str(e), "an error must say what is wrong"
    assert errors >= 6  # at least the truncations


def test_not_a_tflite_file(tmp_path):
    path = str(tmp_path / "x.tflite")
    with open(path, "wb") as f:
        f.write(b"\x00" * 64)
    with pytest.raises(Exception) as e:
        weft.import_litert(path)
    assert "TFL3" in str(e.value)


def test_quantized_data_movement_with_one_scale_is_a_copy(tmp_path):
    """CONCATENATION of int8 tensors that share scale and zero point runs as a plain Concat, bit
    for bit what LiteRT's reference kernels give; different scales need requantization, which
    Weft has no kernel for yet, and say so."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    for same in (True, False):
        m = Model()
        a = m.tensor("a", [2, 3], "int8", scale=0.5, zero_point=3)
        b = m.tensor("b", [4, 3], "int8", scale=0.5 if same else 0.25, zero_point=3)
        y = m.tensor("y", [6, 3], "int8", scale=0.5, zero_point=3)
        m.builtin(2, [a, b], [y])  # CONCATENATION (no options: axis 0)
        path = write(tmp_path, m, [a, b], [y], name=f"concat{same}.tflite")
        g = weft.import_litert(path)
        if not same:
            with pytest.raises(Exception) as e:
                session().compile(g)
            assert "TflConcatenation" in e.value.args[0]
            continue
        rng = np.random.default_rng(2)
        xa = rng.integers(-128, 127, (2, 3), endpoint=True).astype(np.int8)
        xb = rng.integers(-128, 127, (4, 3), endpoint=True).astype(np.int8)
        (got,) = session().compile(g).run([xa, xb])
        it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        ins = it.get_input_details()
        it.set_tensor(ins[0]["index"], xa)
        it.set_tensor(ins[1]["index"], xb)
        it.invoke()
        np.testing.assert_array_equal(got, it.get_tensor(it.get_output_details()[0]["index"]))


@pytest.mark.parametrize("op", ["bilinear", "nearest"])
@pytest.mark.parametrize("mode", ["asymmetric", "align_corners", "half_pixel_centers"])
def test_resize_matches_litert(tmp_path, op, mode):
    """RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR (NHWC, float) against LiteRT's reference kernels,
    up- and downsampling, in each coordinate mode."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    code, opt_type = (23, 15) if op == "bilinear" else (97, 74)
    align_id, half_id = (2, 3) if op == "bilinear" else (0, 1)
    fields = [(align_id, "bool", mode == "align_corners"), (half_id, "bool", mode == "half_pixel_centers")]
    rng = np.random.default_rng(5)
    for out_hw in ([13, 7], [3, 2]):
        m = Model()
        x = m.tensor("x", [2, 5, 4, 3], "float32")
        size = m.tensor("size", [2], "int32", data=np.array(out_hw))
        y = m.tensor("y", [2] + out_hw + [3], "float32")
        m.builtin(code, [x, size], [y], options=(opt_type, fields))
        path = write(tmp_path, m, [x], [y], name=f"{op}{mode}{out_hw[0]}.tflite")
        xv = rng.standard_normal((2, 5, 4, 3)).astype(np.float32)
        (got,) = session().compile(weft.import_litert(path)).run([xv])
        it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], xv)
        it.invoke()
        want = it.get_tensor(it.get_output_details()[0]["index"])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{op} {mode} {out_hw}")


def litert_reference(path, inputs):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def run_c_module(out, path, inputs, outputs, atol=0.0, rtol=0.0):
    """Generates the C module of the model at `path` (weft aot) with a test case holding `inputs`
    and the expected `outputs`, builds it as strict C99 and runs it; the test case's exit status
    says whether every output is within the tolerance (0 and 0: equal)."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("no C compiler")
    weft.generate_c(path, out, prefix="m", test_inputs=inputs, test_outputs=outputs, atol=atol, rtol=rtol)
    exe = str(out / "t")
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{out}/includes-api", f"-I{out}/src",
                    f"-I{out}/test", *sorted(glob.glob(f"{out}/src/*.c")), *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe,
                    "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


SAME, VALID, RELU, RELU6 = 0, 1, 1, 3


@pytest.mark.parametrize("case", ["conv_same_s2_relu", "conv_valid_dil2", "dw_same_m2_relu6", "dw_valid_s2",
                                  "tconv_same_s2", "tconv_valid_s1", "avgpool_same", "maxpool_valid_relu",
                                  "softmax_beta", "mean_hw"])
def test_float_kernels_match_litert(tmp_path, case):
    """The float paths of the Tfl* kernels (NHWC, OHWI / 1HWO filters) against LiteRT's reference
    kernels on random inputs: padding modes, strides, dilation, depth multiplier, fused clamps."""
    rng = np.random.default_rng(11)
    m = Model()
    x = m.tensor("x", [1, 7, 6, 4], "float32")
    xs = [rng.standard_normal((1, 7, 6, 4)).astype(np.float32)]
    ins = [x]

    def out(shape):
        return m.tensor("y", shape, "float32")

    if case.startswith("conv"):
        w = rng.standard_normal((5, 3, 3, 4)).astype(np.float32)
        b = rng.standard_normal(5).astype(np.float32)
        tw, tb = m.tensor("w", w.shape, "float32", data=w), m.tensor("b", b.shape, "float32", data=b)
        if case == "conv_same_s2_relu":
            y = out([1, 4, 3, 5])
            fields = [(0, "byte", SAME), (1, "int32", 2), (2, "int32", 2), (3, "byte", RELU), (4, "int32", 1), (5, "int32", 1)]
        else:
            y = out([1, 3, 2, 5])
            fields = [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1), (3, "byte", 0), (4, "int32", 2), (5, "int32", 2)]
        m.builtin(3, [x, tw, tb], [y], options=(1, fields))
    elif case.startswith("dw"):
        w = rng.standard_normal((1, 3, 3, 8)).astype(np.float32)
        b = rng.standard_normal(8).astype(np.float32)
        tw, tb = m.tensor("w", w.shape, "float32", data=w), m.tensor("b", b.shape, "float32", data=b)
        if case == "dw_same_m2_relu6":
            y = out([1, 7, 6, 8])
            fields = [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1), (3, "int32", 2), (4, "byte", RELU6)]
        else:
            y = out([1, 3, 2, 8])
            fields = [(0, "byte", VALID), (1, "int32", 2), (2, "int32", 2), (3, "int32", 2), (4, "byte", 0)]
        m.builtin(4, [x, tw, tb], [y], options=(2, fields))
    elif case.startswith("tconv"):
        w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
        tw = m.tensor("w", w.shape, "float32", data=w)
        shape = [1, 14, 12, 3] if case == "tconv_same_s2" else [1, 9, 8, 3]
        ts = m.tensor("shape", [4], "int32", data=np.array(shape))
        y = out(shape)
        stride = 2 if case == "tconv_same_s2" else 1
        fields = [(0, "byte", SAME if stride == 2 else VALID), (1, "int32", stride), (2, "int32", stride)]
        m.builtin(67, [ts, tw, x, -1], [y], options=(49, fields))
    elif case.endswith("pool_same") or case.startswith("maxpool"):
        if case == "avgpool_same":
            y = out([1, 4, 3, 4])
            fields = [(0, "byte", SAME), (1, "int32", 2), (2, "int32", 2), (3, "int32", 3), (4, "int32", 3), (5, "byte", 0)]
            m.builtin(1, [x], [y], options=(5, fields))
        else:
            y = out([1, 3, 2, 4])
            fields = [(0, "byte", VALID), (1, "int32", 2), (2, "int32", 2), (3, "int32", 3), (4, "int32", 3), (5, "byte", RELU)]
            m.builtin(17, [x], [y], options=(5, fields))
    elif case == "softmax_beta":
        y = out([1, 7, 6, 4])
        m.builtin(25, [x], [y], options=(9, [(0, "float", 0.7)]))
    else:  # mean over H and W, keep dims
        axes = m.tensor("axes", [2], "int32", data=np.array([1, 2]))
        y = out([1, 1, 1, 4])
        m.builtin(40, [x, axes], [y], options=(27, [(0, "bool", True)]))
    path = write(tmp_path, m, ins, [y], name=case + ".tflite")
    (got,) = session().compile(weft.import_litert(path)).run(xs)
    want = litert_reference(path, xs)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=case)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("shapes", [([1, 64, 64, 16], [1, 64, 64, 16]), ([1, 24, 24, 16], [1, 1, 1, 16]), ([2, 5, 3], [2, 5, 3])])
@pytest.mark.parametrize("act", [0, 3])
def test_8bit_add_sub_mul_are_bit_exact(tmp_path, dtype, op, shapes, act):
    """Quantized ADD, SUB and MUL (outputs large enough for the table of every input pair, broadcast,
    and small), with and without RELU6, against LiteRT's reference kernels on every input value."""
    code, opt = {"add": (0, 11), "sub": (41, 28), "mul": (18, 21)}[op]
    rng = np.random.default_rng(len(op) * 7 + act + len(shapes[1]))
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    for trial in range(3):
        sa, sb = rng.uniform(0.005, 0.2, 2)
        so = rng.uniform(0.01, 0.3) * (sa * sb * 40 if op == "mul" else 1)
        za, zb, zo = (int(v) for v in rng.integers(lo + 20, hi - 20, 3))
        m = Model()
        a = m.tensor("a", shapes[0], dtype, scale=float(sa), zero_point=za)
        b = m.tensor("b", shapes[1], dtype, scale=float(sb), zero_point=zb)
        y = m.tensor("y", list(np.broadcast_shapes(shapes[0], shapes[1])), dtype, scale=float(so), zero_point=zo)
        m.builtin(code, [a, b], [y], options=(opt, [(0, "byte", act)]))
        path = write(tmp_path, m, [a, b], [y], name=f"{op}_{trial}.tflite")
        av = rng.integers(lo, hi + 1, shapes[0]).astype(dtype)
        bv = rng.integers(lo, hi + 1, shapes[1]).astype(dtype)
        if av.size >= 65536 and bv.size >= 65536:  # every pair of values
            pairs = np.arange(65536)
            av.reshape(-1)[:65536], bv.reshape(-1)[:65536] = (pairs // 256 + lo).astype(dtype), (pairs % 256 + lo).astype(dtype)
        (got,) = session().compile(weft.import_litert(path)).run([av, bv])
        np.testing.assert_array_equal(got, litert_reference(path, [av, bv]))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("op", ["logistic", "tanh"])
@pytest.mark.parametrize("in_scale", [0.02, 0.1, 0.37])
def test_8bit_logistic_and_tanh_are_bit_exact(tmp_path, op, dtype, in_scale):
    """Quantized LOGISTIC and TANH over every 8-bit input value, against LiteRT's reference kernels."""
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    in_zp = 5 if dtype == "int8" else 130
    if op == "logistic":  # LiteRT requires these output parameters
        out_scale, out_zp, code = 1.0 / 256, (-128 if dtype == "int8" else 0), 14
    else:
        out_scale, out_zp, code = 1.0 / 128, (0 if dtype == "int8" else 128), 28
    m = Model()
    x = m.tensor("x", [256], dtype, scale=in_scale, zero_point=in_zp)
    y = m.tensor("y", [256], dtype, scale=out_scale, zero_point=out_zp)
    m.builtin(code, [x], [y])
    path = write(tmp_path, m, [x], [y], name=f"{op}_{dtype}.tflite")
    xv = np.arange(lo, hi + 1).astype(dtype)
    (got,) = session().compile(weft.import_litert(path)).run([xv])
    want = litert_reference(path, [xv])
    np.testing.assert_array_equal(got, want)
    if in_scale == 0.1:  # the C module's table (weft aot), bit for bit
        run_c_module(tmp_path / "c", path, {"x": xv}, {"y": want})


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
# The last three: output rescaling shifts of 16 and more, where the reference's 16-bit rounding
# division behaves as its int16 mask makes it (values 1 off the exact rounding).
@pytest.mark.parametrize("scales", [(0.05, 0.03), (0.1, 0.1), (0.02, 0.2), (0.5, 0.01), (0.01, 6.0), (0.0039, 11.2), (0.0033, 2.87)])
def test_8bit_hard_swish_is_bit_exact(tmp_path, dtype, scales):
    """Quantized HARD_SWISH over every 8-bit input value against LiteRT's reference kernel, with
    output scales coarser and finer than the input's (both shift directions)."""
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    in_zp, out_zp = (7, -20) if dtype == "int8" else (120, 40)
    m = Model()
    x = m.tensor("x", [256], dtype, scale=scales[0], zero_point=in_zp)
    y = m.tensor("y", [256], dtype, scale=scales[1], zero_point=out_zp)
    m.builtin(117, [x], [y])  # HARD_SWISH
    path = write(tmp_path, m, [x], [y], name=f"hswish_{dtype}.tflite")
    xv = np.arange(lo, hi + 1).astype(dtype)
    (got,) = session().compile(weft.import_litert(path)).run([xv])
    want = litert_reference(path, [xv])
    np.testing.assert_array_equal(got, want)
    if scales[0] != scales[1]:  # the C module's table (weft aot), bit for bit
        run_c_module(tmp_path / "c", path, {"x": xv}, {"y": want})


def tflm_reference(path, inputs):
    """TFLM's Python interpreter (PyPI tflite-micro) on `inputs`; its first output."""
    tflm = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
    it = tflm.Interpreter.from_file(path, arena_size=1 << 21)
    for k, x in enumerate(inputs):
        it.set_input(x, k)
    it.invoke()
    return it.get_output(0)


# Input scales: the power-of-two ones the kernels special-case (2^-12; for TANH also 2^-11), others
# that take the general multiplier, one far below them, and 10, whose product leaves 32 bits.
@pytest.mark.parametrize("op", ["logistic", "tanh"])
@pytest.mark.parametrize("in_scale", [2.0**-12, 2.0**-11, 2.0**-14, 1e-4, 3.7e-4, 1.0 / 3000, 2e-3, 1e-6, 2.0, 10.0])
def test_int16_logistic_and_tanh_are_bit_exact(tmp_path, op, in_scale):
    """int16 LOGISTIC and TANH (zero points 0, output scale 2^-15) over every int16 input value,
    against LiteRT's reference kernels and TFLM, in the runtime and in the C module."""
    m = Model()
    x = m.tensor("x", [65536], "int16", scale=in_scale, zero_point=0)
    y = m.tensor("y", [65536], "int16", scale=2.0**-15, zero_point=0)
    m.builtin(14 if op == "logistic" else 28, [x], [y])
    path = write(tmp_path, m, [x], [y], name=f"{op}_int16.tflite")
    xv = np.arange(-32768, 32768).astype(np.int16)
    (got,) = session().compile(weft.import_litert(path)).run([xv])
    want = litert_reference(path, [xv])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, tflm_reference(path, [xv]))
    if 1e-4 <= in_scale <= 2e-3:
        assert len(np.unique(want)) > 1000  # the table is exercised, not only its saturated ends
    if in_scale in (2.0**-11, 3.7e-4, 10.0):
        run_c_module(tmp_path / "c", path, {"x": xv}, {"y": want})


@pytest.mark.parametrize("op", ["logistic", "tanh"])
@pytest.mark.parametrize("case", ["input_zero_point", "output_zero_point", "output_scale"])
def test_int16_logistic_and_tanh_refuse_what_the_references_refuse(tmp_path, op, case):
    m = Model()
    x = m.tensor("x", [8], "int16", scale=1e-3, zero_point=3 if case == "input_zero_point" else 0)
    y = m.tensor("y", [8], "int16", scale=2.0**-14 if case == "output_scale" else 2.0**-15,
                 zero_point=5 if case == "output_zero_point" else 0)
    m.builtin(14 if op == "logistic" else 28, [x], [y])
    path = write(tmp_path, m, [x], [y])
    want = "zero point 0" if "zero_point" in case else "scale 2\\^-15"
    with pytest.raises(Exception, match=want):
        session().compile(weft.import_litert(path)).run([np.zeros(8, np.int16)])


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("alpha_shape", [[1, 1, 4], [4], [1]])
def test_8bit_prelu_is_bit_exact(tmp_path, dtype, alpha_shape):
    """Quantized PRELU with alpha broadcast per channel or per tensor, against LiteRT's reference."""
    rng = np.random.default_rng(3)
    lo, hi = (-128, 127) if dtype == "int8" else (0, 255)
    zps = (3, -9, 12) if dtype == "int8" else (128, 140, 100)
    m = Model()
    x = m.tensor("x", [2, 5, 3, 4], dtype, scale=0.07, zero_point=zps[0])
    av = rng.integers(lo, hi, alpha_shape, endpoint=True).astype(dtype)
    a = m.tensor("alpha", alpha_shape, dtype, data=av, scale=0.004, zero_point=zps[1])
    y = m.tensor("y", [2, 5, 3, 4], dtype, scale=0.05, zero_point=zps[2])
    m.builtin(54, [x, a], [y])  # PRELU
    path = write(tmp_path, m, [x], [y], name=f"prelu_{dtype}.tflite")
    xv = rng.integers(lo, hi, (2, 5, 3, 4), endpoint=True).astype(dtype)
    (got,) = session().compile(weft.import_litert(path)).run([xv])
    want = litert_reference(path, [xv])
    np.testing.assert_array_equal(got, want)
    run_c_module(tmp_path / "c", path, {"x": xv}, {"y": want})  # weft aot, bit for bit


def test_float_prelu_matches_litert_in_the_runtime_and_the_c_module(tmp_path):
    rng = np.random.default_rng(4)
    m = Model()
    x = m.tensor("x", [2, 5, 3, 4], "float32")
    a = m.tensor("alpha", [1, 3, 4], "float32", data=rng.uniform(-1, 1, (1, 3, 4)).astype(np.float32))
    y = m.tensor("y", [2, 5, 3, 4], "float32")
    m.builtin(54, [x, a], [y])  # PRELU
    path = write(tmp_path, m, [x], [y])
    xv = rng.standard_normal((2, 5, 3, 4)).astype(np.float32)
    (got,) = session().compile(weft.import_litert(path)).run([xv])
    want = litert_reference(path, [xv])
    np.testing.assert_array_equal(got, want)
    assert (xv < 0).any() and not np.array_equal(want, xv)
    run_c_module(tmp_path / "c", path, {"x": xv}, {"y": want})


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
@pytest.mark.parametrize("mode", ["asymmetric", "align_corners", "half_pixel_centers"])
def test_integer_resize_bilinear_is_bit_exact(tmp_path, dtype, mode):
    """Quantized RESIZE_BILINEAR against LiteRT's reference kernel, up- and downsampling, in each
    coordinate mode."""
    info = np.iinfo(dtype)
    fields = [(2, "bool", mode == "align_corners"), (3, "bool", mode == "half_pixel_centers")]
    rng = np.random.default_rng(8)
    for out_hw in ([13, 7], [3, 2], [10, 8]):
        m = Model()
        zp = 0 if dtype == "int16" else 3
        x = m.tensor("x", [2, 5, 4, 3], dtype, scale=0.1, zero_point=zp)
        size = m.tensor("size", [2], "int32", data=np.array(out_hw))
        y = m.tensor("y", [2] + out_hw + [3], dtype, scale=0.1, zero_point=zp)
        m.builtin(23, [x, size], [y], options=(15, fields))
        path = write(tmp_path, m, [x], [y], name=f"rb_{dtype}_{mode}_{out_hw[0]}.tflite")
        xv = rng.integers(info.min, info.max, (2, 5, 4, 3), endpoint=True).astype(dtype)
        (got,) = session().compile(weft.import_litert(path)).run([xv])
        want = litert_reference(path, [xv])
        np.testing.assert_array_equal(got, want, err_msg=f"{out_hw}")
        if out_hw != [3, 2]:  # weft aot's module, bit for bit
            run_c_module(tmp_path / f"c{out_hw[0]}", path, {"x": xv}, {"y": want})


@pytest.mark.parametrize("shape,perm,dtype", [((1, 3, 7, 5), (0, 2, 3, 1), "int8"), ((2, 5, 4, 3), (0, 3, 1, 2), "int8"),
                                              ((6, 17), (1, 0), "int16"), ((2, 3, 4, 5, 6), (4, 2, 0, 3, 1), "int8"),
                                              ((1, 20, 3), (0, 2, 1), "int16")])
def test_quantized_transpose_matches_numpy(tmp_path, shape, perm, dtype):
    # A quantized TRANSPOSE keeps its Tfl form: every line order (short innermost axes included).
    m = Model()
    x = m.tensor("x", list(shape), dtype, scale=0.1, zero_point=0)
    p = m.tensor("perm", [len(perm)], "int32", data=np.array(perm))
    y = m.tensor("y", [shape[k] for k in perm], dtype, scale=0.1, zero_point=0)
    m.builtin(39, [x, p], [y])
    path = write(tmp_path, m, [x], [y])
    info = np.iinfo(dtype)
    xs = np.random.default_rng(1).integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    (got,) = session().compile(weft.import_litert(path)).run([xs])
    np.testing.assert_array_equal(got, np.transpose(xs, perm))


@pytest.mark.parametrize("case", ["dw_int8", "conv_int8", "conv_float", "dw_int8_stride2", "used_twice", "pads_channels"])
def test_pad_folds_into_a_valid_convolution(tmp_path, case):
    # PAD (zeros, or the zero point) of H and W read only by a VALID convolution becomes that
    # convolution's own padding: one step fewer, the same outputs as LiteRT's reference kernels.
    rng = np.random.default_rng(3)
    quant = "int8" in case or case in ("used_twice", "pads_channels")
    dt = "int8" if quant else "float32"
    q = {"scale": 0.05, "zero_point": -9} if quant else {}
    m = Model()
    x = m.tensor("x", [1, 7, 6, 16], dt, **q)
    pads = [[0, 0], [1, 2], [2, 1], [0, 0]] if case != "pads_channels" else [[0, 0], [1, 1], [1, 1], [0, 3]]
    c = 16 + (3 if case == "pads_channels" else 0)
    pshape = [1, 7 + pads[1][0] + pads[1][1], 6 + pads[2][0] + pads[2][1], c]
    p = m.tensor("paddings", [4, 2], "int32", data=np.array(pads))
    xp = m.tensor("xp", pshape, dt, **q)
    m.builtin(34, [x, p], [xp])
    dw = case.startswith("dw") or case in ("used_twice", "pads_channels")
    stride = 2 if case == "dw_int8_stride2" else 1
    oh, ow = (pshape[1] - 3) // stride + 1, (pshape[2] - 3) // stride + 1
    if quant:
        w = m.tensor("w", [1, 3, 3, c] if dw else [8, 3, 3, c], "int8", data=rng.integers(-127, 128, [1, 3, 3, c] if dw else [8, 3, 3, c]),
                     scale=0.02)
        b = m.tensor("b", [c if dw else 8], "int32", data=rng.integers(-500, 500, c if dw else 8), scale=0.001)
        y = m.tensor("y", [1, oh, ow, c if dw else 8], "int8", scale=0.1, zero_point=4)
    else:
        w = m.tensor("w", [8, 3, 3, c], "float32", data=rng.standard_normal([8, 3, 3, c]).astype(np.float32))
        b = m.tensor("b", [8], "float32", data=rng.standard_normal(8).astype(np.float32))
        y = m.tensor("y", [1, oh, ow, 8], "float32")
    if dw:
        m.builtin(4, [xp, w, b], [y], options=(2, [(0, "byte", VALID), (1, "int32", stride), (2, "int32", stride), (3, "int32", 1)]))
    else:
        m.builtin(3, [xp, w, b], [y], options=(1, [(0, "byte", VALID), (1, "int32", stride), (2, "int32", stride)]))
    outs = [y]
    if case == "used_twice":  # the padded tensor is also an output: the PAD stays
        outs.append(xp)
    path = write(tmp_path, m, [x], outs, name=case + ".tflite")
    xs = (rng.integers(-128, 128, [1, 7, 6, 16]).astype(np.int8) if quant else rng.standard_normal([1, 7, 6, 16]).astype(np.float32))
    model = session().compile(weft.import_litert(path))
    folded = case not in ("used_twice", "pads_channels")
    assert model.num_steps == (1 if folded else 2)
    got = model.run([xs])
    want = litert_reference(path, [xs])
    if quant:
        np.testing.assert_array_equal(got[0], want)
    else:
        np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ic,mult", [(1, 8), (1, 3), (3, 1), (8, 1), (12, 1), (4, 2), (24, 1), (40, 1), (16, 2)])
@pytest.mark.parametrize("geometry", ["same_s1", "same_s2_relu6", "valid_dil2"])
def test_int8_depthwise_is_bit_exact(tmp_path, ic, mult, geometry):
    """int8 DEPTHWISE_CONV_2D against LiteRT's reference kernels over channel counts that take each
    vector block (16, 8) and the scalar tail, depth multipliers (the input widened per channel),
    padding, strides and dilation, per-channel scales."""
    rng = np.random.default_rng(ic * 100 + mult)
    oc, h, w_ = ic * mult, 9, 11
    padding, stride, act, dil = {"same_s1": (SAME, 1, 0, 1), "same_s2_relu6": (SAME, 2, RELU6, 1),
                                 "valid_dil2": (VALID, 1, 0, 2)}[geometry]
    if padding == SAME:
        oh, ow = -(-h // stride), -(-w_ // stride)
    else:
        oh, ow = h - 2 * dil, w_ - 2 * dil
    m = Model()
    x = m.tensor("x", [1, h, w_, ic], "int8", scale=0.05, zero_point=-7)
    wq = rng.integers(-127, 128, [1, 3, 3, oc])
    w = m.tensor("w", [1, 3, 3, oc], "int8", data=wq, scale=list(rng.uniform(0.005, 0.03, oc)), zero_point=[0] * oc,
                 quantized_dimension=3)
    b = m.tensor("b", [oc], "int32", data=rng.integers(-900, 900, oc))
    y = m.tensor("y", [1, oh, ow, oc], "int8", scale=0.08, zero_point=3)
    m.builtin(4, [x, w, b], [y], options=(2, [(0, "byte", padding), (1, "int32", stride), (2, "int32", stride), (3, "int32", mult),
                                               (4, "byte", act), (5, "int32", dil), (6, "int32", dil)]))
    path = write(tmp_path, m, [x], [y], name="dw.tflite")
    model = session().compile(weft.import_litert(path))
    for seed in range(2):
        xs = np.random.default_rng(seed).integers(-128, 128, [1, h, w_, ic]).astype(np.int8)
        np.testing.assert_array_equal(model.run([xs])[0], litert_reference(path, [xs]))


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_mirror_pad_matches_litert(tmp_path, mode, dtype):
    """MIRROR_PAD in both modes (SYMMETRIC repeats the edge; its pads may be as long as the dim)."""
    m = Model()
    q = {"scale": 0.1, "zero_point": 2} if dtype == "int8" else {}
    x = m.tensor("x", [2, 3, 4], dtype, **q)
    pads = [[0, 1], [2, 1], [3, 2]] if mode == "REFLECT" else [[1, 2], [3, 2], [4, 1]]
    p = m.tensor("paddings", [3, 2], "int32", data=np.array(pads))
    shape = [2 + sum(pads[0]), 3 + sum(pads[1]), 4 + sum(pads[2])]
    y = m.tensor("y", shape, dtype, **q)
    m.builtin(100, [x, p], [y], options=(77, [(0, "byte", 0 if mode == "REFLECT" else 1)]))
    path = write(tmp_path, m, [x], [y])
    rng = np.random.default_rng(5)
    xs = rng.integers(-128, 128, [2, 3, 4]).astype(np.int8) if dtype == "int8" else rng.standard_normal([2, 3, 4]).astype(np.float32)
    (got,) = session().compile(weft.import_litert(path)).run([xs])
    np.testing.assert_array_equal(got, litert_reference(path, [xs]))
    np.testing.assert_array_equal(got, np.pad(xs, pads, mode=mode.lower()))


def test_symmetric_pad_longer_than_the_dim_is_an_error(tmp_path):
    m = Model()
    x = m.tensor("x", [3], "float32")
    p = m.tensor("paddings", [1, 2], "int32", data=np.array([[4, 0]]))
    y = m.tensor("y", [7], "float32")
    m.builtin(100, [x, p], [y], options=(77, [(0, "byte", 1)]))
    path = write(tmp_path, m, [x], [y])
    with pytest.raises(Exception, match="symmetric padding .* must not be longer than the dim"):
        session().compile(weft.import_litert(path))


@pytest.mark.parametrize("kind", ["conv1x1", "depthwise", "fully_connected"])
def test_int8_rescaling_over_every_shift_is_bit_exact(tmp_path, kind):
    """Per-channel output multipliers from 2^-26 to 8 (right shifts up to 26, none, and left shifts)
    through the vector rescaling of the convolutions' and fully-connected's int8 paths, against
    LiteRT's reference kernels; 40 channels: two blocks of 16 and a block of 8."""
    rng = np.random.default_rng(7)
    c, in_scale, out_scale = 40, 0.05, 0.1
    eff = np.concatenate([2.0 ** np.linspace(-26, 3, c - 8), rng.uniform(0.5, 1.0, 8)])
    rng.shuffle(eff)
    w_scale = list(eff * out_scale / in_scale)
    m = Model()
    if kind == "fully_connected":
        x = m.tensor("x", [5, 24], "int8", scale=in_scale, zero_point=-3)
        w = m.tensor("w", [c, 24], "int8", data=rng.integers(-127, 128, [c, 24]), scale=w_scale, zero_point=[0] * c)
        y = m.tensor("y", [5, c], "int8", scale=out_scale, zero_point=6)
        b = m.tensor("b", [c], "int32", data=rng.integers(-3000, 3000, c))
        m.builtin(9, [x, w, b], [y], options=(8, [(0, "byte", 0)]))
        shape = [5, 24]
    else:
        ic = 24 if kind == "conv1x1" else c
        x = m.tensor("x", [1, 6, 7, ic], "int8", scale=in_scale, zero_point=-3)
        b = m.tensor("b", [c], "int32", data=rng.integers(-3000, 3000, c))
        y = m.tensor("y", [1, 6, 7, c], "int8", scale=out_scale, zero_point=6)
        if kind == "conv1x1":
            w = m.tensor("w", [c, 1, 1, ic], "int8", data=rng.integers(-127, 128, [c, 1, 1, ic]), scale=w_scale, zero_point=[0] * c)
            m.builtin(3, [x, w, b], [y], options=(1, [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1)]))
        else:
            w = m.tensor("w", [1, 3, 3, c], "int8", data=rng.integers(-127, 128, [1, 3, 3, c]), scale=w_scale, zero_point=[0] * c,
                         quantized_dimension=3)
            m.builtin(4, [x, w, b], [y], options=(2, [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1), (3, "int32", 1)]))
        shape = [1, 6, 7, ic]
    path = write(tmp_path, m, [x], [y], name=kind + ".tflite")
    model = session().compile(weft.import_litert(path))
    for seed in range(3):
        xs = np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)
        got, want = model.run([xs])[0], litert_reference(path, [xs])
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > 20  # the outputs are not all clamped


def _branch(op, shape, const=None):
    """A subgraph (a) -> r applying a binary builtin to a and itself or to a constant."""
    def build(s):
        a = s.tensor("a", shape, "float32")
        r = s.tensor("r", shape, "float32")
        other = s.tensor("k", [1], "float32", data=np.array([const], np.float32)) if const is not None else a
        s.builtin(op, [a, other], [r])
        return [a], [r]
    return build


def _if_model(nested):
    m = Model()
    c1 = m.tensor("c1", [1], "bool")
    c2 = m.tensor("c2", [1], "bool")
    x = m.tensor("x", [2, 3], "float32")
    y = m.tensor("y", [2, 3], "float32")
    els = m.subgraph(_branch(0, [2, 3], 1.5))  # ADD 1.5
    if nested:
        inner_then, inner_else = m.subgraph(_branch(18, [2, 3])), m.subgraph(_branch(41, [2, 3], 0.25))  # MUL x x, SUB 0.25

        def then(s):  # (c, a) -> IF(c, a)
            c = s.tensor("c", [1], "bool")
            a = s.tensor("a", [2, 3], "float32")
            r = s.tensor("r", [2, 3], "float32")
            s.builtin(118, [c, a], [r], options=(92, [(0, "int32", inner_then), (1, "int32", inner_else)]))
            return [c, a], [r]

        def else_two(s):  # (c, a) -> a + 1.5, ignoring c
            c = s.tensor("c", [1], "bool")
            a = s.tensor("a", [2, 3], "float32")
            k = s.tensor("k", [1], "float32", data=np.array([1.5], np.float32))
            r = s.tensor("r", [2, 3], "float32")
            s.builtin(0, [a, k], [r])
            return [c, a], [r]
        t, e = m.subgraph(then), m.subgraph(else_two)
        m.builtin(118, [c1, c2, x], [y], options=(92, [(0, "int32", t), (1, "int32", e)]))
        return m, [c1, c2, x], [y]
    t = m.subgraph(_branch(18, [2, 3]))
    m.builtin(118, [c1, x], [y], options=(92, [(0, "int32", t), (1, "int32", els)]))
    return m, [c1, x], [y]


@pytest.mark.parametrize("nested", [False, True])
def test_if_runs_its_subgraphs_like_litert(tmp_path, nested):
    """IF with its then/else subgraphs imported inline (only the taken branch runs), nested IF
    too, against LiteRT's reference kernels for every combination of conditions."""
    m, ins, outs = _if_model(nested)
    path = write(tmp_path, m, ins, outs)
    model = session().compile(weft.import_litert(path))
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    seen = []
    for conds in ([True, True], [True, False], [False, True], [False, False]):
        feeds = [np.array([c]) for c in conds[:len(ins) - 1]] + [x]
        got = model.run(feeds)[0]
        np.testing.assert_allclose(got, litert_reference(path, feeds), rtol=1e-6, atol=1e-6)
        seen.append(got)
    # the branches really differ: x * x, x + 1.5 (and x - 0.25 when nested)
    assert not np.allclose(seen[0], seen[3])
    if nested:
        assert not np.allclose(seen[0], seen[1])


@pytest.mark.parametrize("case", ["self", "main", "out_of_range", "missing_output"])
def test_bad_subgraph_references_are_errors(tmp_path, case):
    m = Model()
    c = m.tensor("c", [1], "bool")
    x = m.tensor("x", [2], "float32")
    y = m.tensor("y", [2], "float32")
    good = m.subgraph(_branch(18, [2]))
    if case == "self":  # subgraph 2 runs subgraph 2
        def loop(s):
            cc = s.tensor("c", [1], "bool")
            a = s.tensor("a", [2], "float32")
            r = s.tensor("r", [2], "float32")
            s.builtin(118, [cc, a], [r], options=(92, [(0, "int32", 2), (1, "int32", 1)]))
            return [cc, a], [r]
        t = m.subgraph(loop)
        m.builtin(118, [c, c, x], [y], options=(92, [(0, "int32", t), (1, "int32", t)]))
        match = "runs itself"
    elif case == "main":
        m.builtin(118, [c, x], [y], options=(92, [(0, "int32", 0), (1, "int32", good)]))
        match = "then_subgraph_index is 0"
    elif case == "out_of_range":
        m.builtin(118, [c, x], [y], options=(92, [(0, "int32", good), (1, "int32", 7)]))
        match = "else_subgraph_index is 7"
    else:
        y2 = m.tensor("y2", [2], "float32")
        m.builtin(118, [c, x], [y, y2], options=(92, [(0, "int32", good), (1, "int32", good)]))
        match = "gives 1 outputs for the operator's 2"
    path = write(tmp_path, m, [c, x], [y])
    with pytest.raises(Exception, match=match):
        weft.import_litert(path)


@pytest.mark.parametrize("name", ["group_norm_2_groups_op.tflite", "l2_norm_composite.tflite", "simple_group_norm_op.tflite",
                                  "simple_mirror_pad_symmetric_op.tflite"])
def test_litert_testdata_composites_and_symmetric_pad_match(name):
    """STABLEHLO_COMPOSITE (its decomposition subgraph inline) and MIRROR_PAD SYMMETRIC on files of
    LiteRT's own test data, against LiteRT's reference kernels."""
    path = os.path.join(os.path.dirname(CORPORA), "litert-testdata", name)
    if not os.path.exists(path):
        pytest.skip("no litert-testdata corpus")
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    rng = np.random.default_rng(4)
    feeds = [rng.standard_normal(tuple(d["shape"])).astype(d["dtype"]) for d in it.get_input_details()]
    for d, v in zip(it.get_input_details(), feeds):
        it.set_tensor(d["index"], v)
    it.invoke()
    want = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    got = session().compile(weft.import_litert(path)).run(feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _blockwise_fc(tmp_path, vtype, zero_points, rows=2, oc=7, ic=9, block=3, seed=0, name="bw.tflite"):
    """FULLY_CONNECTED with a float input and weights quantized block-wise (blocks of `block` along
    the input dim, a float16 scale per block, optional integer zero points); returns the path, the
    input and the float64 recomputation of the output."""
    rng = np.random.default_rng(seed)
    lo, hi = (-8, 7) if vtype == "int4" else (-128, 127)
    wq = rng.integers(lo, hi + 1, [oc, ic])
    sc = rng.uniform(0.01, 0.2, [oc, ic // block]).astype(np.float16)
    zp = rng.integers(-3, 4, [oc, ic // block]).astype(np.int32) if zero_points else None
    m = Model()
    x = m.tensor("x", [rows, ic], "float32")
    ts = m.tensor("scales", [oc, ic // block], "float16", data=sc)
    tz = m.tensor("zps", [oc, ic // block], "int32", data=zp) if zero_points else -1
    w = m.tensor("w", [oc, ic], vtype, data=wq, blockwise=(ts, tz, block))
    y = m.tensor("y", [rows, oc], "float32")
    m.builtin(9, [x, w, -1], [y])
    path = write(tmp_path, m, [x], [y], name=name)
    xv = rng.standard_normal([rows, ic]).astype(np.float32)
    deq = (wq - (np.repeat(zp, block, axis=1) if zero_points else 0)) * np.repeat(sc.astype(np.float64), block, axis=1)
    return path, xv, xv.astype(np.float64) @ deq.T


@pytest.mark.parametrize("vtype", ["int4", "int8"])
@pytest.mark.parametrize("zero_points", [False, True])
def test_blockwise_quantized_weights(tmp_path, vtype, zero_points):
    """Weights quantized block-wise (LiteRT's BlockwiseQuantization; INT4 packed two a byte, an odd
    count of them here) become float32 constants at import: the FULLY_CONNECTED runs in float32,
    checked against a float64 recomputation, and converts to C (weft aot) with the same result."""
    path, xv, want = _blockwise_fc(tmp_path, vtype, zero_points)
    got = session().compile(weft.import_litert(path)).run([xv])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    run_c_module(tmp_path / "c", path, {"x": xv}, {"y": got}, atol=1e-5 * float(np.abs(want).max()), rtol=1e-5)


def test_blockwise_quantization_errors(tmp_path):
    """A block size that does not divide the last dim, scales of the wrong shape and an INT4 buffer
    of the wrong length are errors naming the tensor."""
    m = Model()
    x = m.tensor("x", [1, 8], "float32")
    ts = m.tensor("scales", [2, 3], "float16", data=np.ones([2, 3], np.float16))
    w = m.tensor("w", [2, 8], "int8", data=np.ones([2, 8], np.int8), blockwise=(ts, -1, 3))
    y = m.tensor("y", [1, 2], "float32")
    m.builtin(9, [x, w, -1], [y])
    with pytest.raises(Exception, match="'w'.*block size 3 does not divide its last dim"):
        weft.import_litert(write(tmp_path, m, [x], [y], name="a.tflite"))
    m = Model()
    x = m.tensor("x", [1, 8], "float32")
    ts = m.tensor("scales", [2, 3], "float16", data=np.ones([2, 3], np.float16))
    w = m.tensor("w", [2, 8], "int8", data=np.ones([2, 8], np.int8), blockwise=(ts, -1, 4))
    y = m.tensor("y", [1, 2], "float32")
    m.builtin(9, [x, w, -1], [y])
    with pytest.raises(Exception, match=r"'w'.*scales must be a constant of shape \[2,2\] \(tensor 1 is \[2,3\]\)"):
        weft.import_litert(write(tmp_path, m, [x], [y], name="b.tflite"))
    m = Model()
    x = m.tensor("x", [1, 8], "float32")
    w = m.tensor("w", [2, 8], "int4", raw=b"\x11" * 7, scale=0.5)
    y = m.tensor("y", [1, 2], "float32")
    m.builtin(9, [x, w, -1], [y])
    with pytest.raises(Exception, match="'w'.*16 values, 8 bytes packed.*holds 7 bytes"):
        weft.import_litert(write(tmp_path, m, [x], [y], name="c.tflite"))


def test_int4_per_channel_weights_match_litert(tmp_path):
    """INT4 constant data quantized per channel (not block-wise) is unpacked to int8 values and runs
    on the int8 kernels: an int8 FULLY_CONNECTED with INT4 weights, bit-exact against LiteRT."""
    rng = np.random.default_rng(5)
    m = Model()
    x = m.tensor("x", [3, 10], "int8", scale=0.05, zero_point=-4)
    wv = rng.integers(-8, 8, [5, 10])
    w = m.tensor("w", [5, 10], "int4", data=wv, scale=list(rng.uniform(0.05, 0.2, 5)), zero_point=[0] * 5, quantized_dimension=0)
    y = m.tensor("y", [3, 5], "int8", scale=0.1, zero_point=2)
    m.builtin(9, [x, w, -1], [y])
    path = write(tmp_path, m, [x], [y], name="i4.tflite")
    xv = rng.integers(-128, 128, [3, 10]).astype(np.int8)
    np.testing.assert_array_equal(session().compile(weft.import_litert(path)).run([xv])[0], litert_reference(path, [xv]))


def test_litert_testdata_int4_blockwise_fully_connected():
    """qwen_fc_blockwise_quantized.tflite (LiteRT's test data: a 1024 x 1024 projection of an LLM,
    INT4 weights in blocks of 32 with float16 scales): within float32 rounding of a float64
    recomputation from the weights as LiteRT unpacks them; LiteRT itself (XNNPACK, which quantizes
    the input to 8 bits per row) within 2% of the output's range of it."""
    path = os.path.join(os.path.dirname(CORPORA), "litert-testdata", "qwen_fc_blockwise_quantized.tflite")
    if not os.path.exists(path):
        pytest.skip("no litert-testdata corpus")
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=path)
    it.allocate_tensors()
    x = np.random.default_rng(8).standard_normal([1, 1, 1024]).astype(np.float32)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    lite = it.get_tensor(it.get_output_details()[0]["index"])
    w = it.get_tensor(1).astype(np.float64)  # the INT4 values, unpacked by LiteRT
    scales = it.get_tensor(3).astype(np.float64)
    assert w.min() >= -8 and w.max() <= 7 and len(np.unique(w)) == 16
    want = (x.reshape(1, 1024).astype(np.float64) @ (w * np.repeat(scales, 32, axis=1)).T).reshape(1, 1, 1024)
    got = session().compile(weft.import_litert(path)).run([x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    assert np.abs(lite - want).max() <= 0.02 * float(np.abs(want).max())


def _while_model(limit=5):
    """WHILE(i, a): while i < limit: i, a = i + 1, a * 1.5 + x (x: a third loop value, unchanged)."""
    m = Model()
    i0 = m.tensor("i0", [1], "int32")
    a0 = m.tensor("a0", [2, 3], "float32")
    x = m.tensor("x", [2, 3], "float32")
    i1, a1, x1 = m.tensor("i1", [1], "int32"), m.tensor("a1", [2, 3], "float32"), m.tensor("x1", [2, 3], "float32")

    def cond(s):
        i, a, xx = s.tensor("i", [1], "int32"), s.tensor("a", [2, 3], "float32"), s.tensor("x", [2, 3], "float32")
        lim = s.tensor("limit", [1], "int32", data=np.array([limit], np.int32))
        c = s.tensor("c", [1], "bool")
        s.builtin(58, [i, lim], [c])  # LESS
        return [i, a, xx], [c]

    def body(s):
        i, a, xx = s.tensor("i", [1], "int32"), s.tensor("a", [2, 3], "float32"), s.tensor("x", [2, 3], "float32")
        one = s.tensor("one", [1], "int32", data=np.array([1], np.int32))
        k = s.tensor("k", [1], "float32", data=np.array([1.5], np.float32))
        i2, t, a2 = s.tensor("i2", [1], "int32"), s.tensor("t", [2, 3], "float32"), s.tensor("a2", [2, 3], "float32")
        s.builtin(0, [i, one], [i2])
        s.builtin(18, [a, k], [t])
        s.builtin(0, [t, xx], [a2])
        return [i, a, xx], [i2, a2, xx]
    c, b = m.subgraph(cond), m.subgraph(body)
    m.builtin(119, [i0, a0, x], [i1, a1, x1], options=(93, [(0, "int32", c), (1, "int32", b)]))
    return m, [i0, a0, x], [i1, a1]


def test_while_runs_its_subgraphs_like_litert(tmp_path):
    """WHILE as Weft's Loop (the condition subgraph before each pass, the body subgraph as the
    pass), a loop value passed through unchanged, zero and several iterations, against LiteRT."""
    m, ins, outs = _while_model()
    path = write(tmp_path, m, ins, outs)
    model = session().compile(weft.import_litert(path))
    rng = np.random.default_rng(8)
    a, x = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    for start, passes in ((7, 0), (4, 1), (-3, 8)):
        feeds = [np.array([start], np.int32), a, x]
        got = model.run(feeds)
        assert got[0][0] == start + passes
        want_a = a.astype(np.float64)
        for _ in range(passes):
            want_a = want_a * 1.5 + x
        np.testing.assert_allclose(got[1], want_a, rtol=1e-5, atol=1e-5)
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
        it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        for d, v in zip(it.get_input_details(), feeds):
            it.set_tensor(d["index"], v)
        it.invoke()
        for g, d in zip(got, it.get_output_details()):
            np.testing.assert_allclose(g, it.get_tensor(d["index"]), rtol=1e-6, atol=1e-6)


def _batch_matmul_model(xt, wt, x_shape, w_shape, out_shape, adj_x, adj_y, w_data=None, w_scale=0.02, per_channel=False, out_scale=None):
    m = Model()
    wide = xt == "int16"
    x = m.tensor("x", x_shape, xt, scale=0.01, zero_point=0 if wide else -5)
    n = out_shape[-1]
    if w_data is not None:  # constant weights, possibly per channel along N
        scales = list(np.linspace(0.5, 2.0, n) * w_scale) if per_channel else w_scale
        qdim = len(w_shape) - (2 if adj_y else 1)
        w = m.tensor("w", w_shape, wt, data=w_data, scale=scales, zero_point=[0] * n if per_channel else 0, quantized_dimension=qdim)
    else:
        w = m.tensor("w", w_shape, wt, scale=w_scale, zero_point=0 if wide else 3)
    y = m.tensor("y", out_shape, xt, scale=out_scale or (0.05 if not wide else 0.01), zero_point=0 if wide else 2)
    m.builtin(126, [x, w], [y], options=(101, [(0, "bool", adj_x), (1, "bool", adj_y)]))
    return m, ([x] if w_data is not None else [x, w]), [y]


@pytest.mark.parametrize("xt", ["int8", "int16"])
@pytest.mark.parametrize("layout", ["plain", "adj_x", "adj_y", "broadcast"])
def test_quantized_batch_matmul_is_bit_exact(tmp_path, xt, layout):
    """Quantized BATCH_MATMUL (both operands at run time) against LiteRT's reference kernels:
    int8 x int8 and int16 x int16, transposed operands, batch dims broadcast."""
    shapes = {"plain": ([2, 3, 5], [2, 5, 4], [2, 3, 4], False, False),
              "adj_x": ([2, 5, 3], [2, 5, 4], [2, 3, 4], True, False),
              "adj_y": ([2, 3, 5], [2, 4, 5], [2, 3, 4], False, True),
              "broadcast": ([3, 1, 3, 5], [2, 5, 4], [3, 2, 3, 4], False, False)}[layout]
    m, ins, outs = _batch_matmul_model(xt, xt, *shapes, w_scale=0.02 if xt == "int8" else 0.0005)
    path = write(tmp_path, m, ins, outs)
    model = session().compile(weft.import_litert(path))
    rng = np.random.default_rng(12)
    lo, hi = (-128, 127) if xt == "int8" else (-3000, 3000)
    for _ in range(2):
        feeds = [rng.integers(lo, hi, shapes[0]).astype(xt), rng.integers(lo, hi, shapes[1]).astype(xt)]
        got, want = model.run(feeds)[0], litert_reference(path, feeds)
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > 5


@pytest.mark.parametrize("adj_y", [False, True])
def test_int16_by_int8_batch_matmul_matches_a_float64_recomputation(tmp_path, adj_y):
    """int16 activations times int8 weights quantized per output column (LiteRT's own BATCH_MATMUL
    returns zeros here): Weft's result is the float64 product of the dequantized operands,
    requantized, to within one unit (the multipliers' 31-bit rounding)."""
    rng = np.random.default_rng(13)
    k, n = 24, 6
    wq = rng.integers(-127, 128, (n, k) if adj_y else (k, n)).astype(np.int8)
    m, ins, outs = _batch_matmul_model("int16", "int8", [4, k], list(wq.shape), [4, n], False, adj_y, w_data=wq, w_scale=0.004,
                                       per_channel=True, out_scale=0.05)
    path = write(tmp_path, m, ins, outs)
    model = session().compile(weft.import_litert(path))
    xq = rng.integers(-20000, 20000, (4, k)).astype(np.int16)
    got = model.run([xq])[0]
    scales = np.linspace(0.5, 2.0, n) * 0.004
    w = (wq.T if adj_y else wq).astype(np.float64) * scales[None, :]
    want = np.clip(np.round((xq.astype(np.float64) * 0.01) @ w / 0.05), -32768, 32767)
    assert np.abs(got.astype(np.float64) - want).max() <= 1
    assert len(np.unique(got)) > 10


@pytest.mark.parametrize("in_zp,in_scale,out_scale,out_zp", [(-128, 0.05, 0.02, -100), (-20, 0.3, 0.01, 0), (5, 0.002, 0.5, -128),
                                                             (-128, 1e-4, 1.0, 3)])
def test_int8_rsqrt_is_bit_exact_over_every_value(tmp_path, in_zp, in_scale, out_scale, out_zp):
    """Int8 RSQRT (TFLite's fixed-point inverse square root) on every input value it accepts, against
    LiteRT's reference kernels; a value below the zero point is an error naming it."""
    m = Model()
    x = m.tensor("x", [256], "int8", scale=in_scale, zero_point=in_zp)
    y = m.tensor("y", [256], "int8", scale=out_scale, zero_point=out_zp)
    m.builtin(76, [x], [y])
    path = write(tmp_path, m, [x], [y])
    model = session().compile(weft.import_litert(path))
    xs = np.array([max(v, in_zp) for v in range(-128, 128)], np.int8)
    got = model.run([xs])[0]
    want = litert_reference(path, [xs])
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 10
    if in_zp > -128:
        bad = xs.copy()
        bad[7] = in_zp - 1
        with pytest.raises(Exception, match="element 7"):
            model.run([bad])


def test_atan2_matches_litert_and_numpy(tmp_path):
    """ATAN2(y, x) in every quadrant and on the axes (zeros of either sign) against LiteRT (which
    needs equal shapes) and NumPy; Weft also broadcasts, checked against NumPy."""
    ys = np.array([[1, -1, 0, -0.0], [2.5, -3, 1e-30, 0], [-7, 7, -1, 1]], np.float32)
    xs = np.array([[1, -1, 0, -2], [-1, 0, -0.0, 3], [0.5, -0.5, 1e-30, -1e-30]], np.float32)
    for x_shape, xv in (([3, 4], xs), ([4], xs[0])):
        m = Model()
        a = m.tensor("y", [3, 4], "float32")
        b = m.tensor("x", x_shape, "float32")
        z = m.tensor("z", [3, 4], "float32")
        m.builtin(156, [a, b], [z])
        path = write(tmp_path, m, [a, b], [z], name=f"atan2_{len(x_shape)}.tflite")
        got = session().compile(weft.import_litert(path)).run([ys, xv])[0]
        np.testing.assert_allclose(got, np.arctan2(ys, xv), rtol=1e-6, atol=1e-7)
        if x_shape == [3, 4]:
            np.testing.assert_allclose(got, litert_reference(path, [ys, xv]), rtol=1e-6, atol=1e-7)
        # The C module (weft aot) against NumPy too.
        run_c_module(tmp_path / f"atan2_{len(x_shape)}_c", path, {"y": ys, "x": xv},
                     {"z": np.arctan2(ys, xv).astype(np.float32)}, atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("in_scale,out_scale", [(1e-3, 1e-3), (3e-5, 0.02), (0.05, 1e-4)])
def test_int16_rsqrt_table_is_bit_exact(tmp_path, in_scale, out_scale):
    """int16 RSQRT through TFLite's 513-entry interpolated table, on every non-negative input value,
    against LiteRT's reference kernels; a negative value is an error."""
    m = Model()
    x = m.tensor("x", [32768], "int16", scale=in_scale, zero_point=0)
    y = m.tensor("y", [32768], "int16", scale=out_scale, zero_point=0)
    m.builtin(76, [x], [y])
    path = write(tmp_path, m, [x], [y])
    model = session().compile(weft.import_litert(path))
    xs = np.arange(32768, dtype=np.int16)
    got = model.run([xs])[0]
    want = litert_reference(path, [xs])
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 100
    bad = xs.copy()
    bad[3] = -1
    with pytest.raises(Exception, match="element 3"):
        model.run([bad])


def test_control_flow_that_multiplies_imports_is_refused(tmp_path):
    """Twelve levels of subgraphs, each running the next from both branches of two IFs: 4^12
    imports if followed blindly; the importer stops at its budget with an error instead."""
    m = Model()
    depth = 12
    # Subgraph k (1-based) runs subgraph k + 1; the last one is a plain MUL. Written deepest first,
    # so their indices are known: the plain one gets index 1, level L gets index depth - L + 1.
    def leaf(s):
        c = s.tensor("c", [1], "bool")
        a = s.tensor("a", [2], "float32")
        r = s.tensor("r", [2], "float32")
        s.builtin(18, [a, a], [r])
        return [c, a], [r]
    nxt = m.subgraph(leaf)
    for _ in range(depth - 1):
        def level(s, nxt=nxt):
            c = s.tensor("c", [1], "bool")
            a = s.tensor("a", [2], "float32")
            r1, r2 = s.tensor("r1", [2], "float32"), s.tensor("r2", [2], "float32")
            s.builtin(118, [c, c, a], [r1], options=(92, [(0, "int32", nxt), (1, "int32", nxt)]))
            s.builtin(118, [c, c, r1], [r2], options=(92, [(0, "int32", nxt), (1, "int32", nxt)]))
            return [c, a], [r2]
        nxt = m.subgraph(level)
    c = m.tensor("c", [1], "bool")
    x = m.tensor("x", [2], "float32")
    y = m.tensor("y", [2], "float32")
    m.builtin(118, [c, c, x], [y], options=(92, [(0, "int32", nxt), (1, "int32", nxt)]))
    path = write(tmp_path, m, [c, x], [y])
    with pytest.raises(Exception, match="imported more than 4096 times"):
        weft.import_litert(path)


@pytest.mark.parametrize("op", ["conv", "depthwise", "fully_connected"])
@pytest.mark.parametrize("case", ["per_channel_bias", "per_channel_input", "per_channel_weights_and_bias"])
def test_per_channel_scales_come_from_the_weights(tmp_path, op, case):
    """A weighted int8 operator rescales with its weights' scales: a bias quantized per channel with
    its own scales, or an input activation quantized per channel, does not take their place (as in
    LiteRT's kernels, which read per-channel scales from the filter only)."""
    rng = np.random.default_rng(11)
    oc, ic = 6, (6 if op == "depthwise" else 5)
    m = Model()
    in_scale = [0.02 + 0.01 * k for k in range(ic)] if case == "per_channel_input" else 0.03
    in_zp = [2] * ic if case == "per_channel_input" else 2
    x_shape = [1, 5, 5, ic] if op != "fully_connected" else [3, ic]
    x = m.tensor("x", x_shape, "int8", scale=in_scale, zero_point=in_zp, quantized_dimension=len(x_shape) - 1)
    w_shape = {"conv": [oc, 3, 3, ic], "depthwise": [1, 3, 3, oc], "fully_connected": [oc, ic]}[op]
    w_dim = 3 if op == "depthwise" else 0
    per_w = case == "per_channel_weights_and_bias"
    w_scale = [0.004 + 0.001 * k for k in range(oc)] if per_w else 0.005
    w = m.tensor("w", w_shape, "int8", data=rng.integers(-127, 127, w_shape, endpoint=True).astype(np.int8),
                 scale=w_scale, zero_point=[0] * oc if per_w else 0, quantized_dimension=w_dim)
    b = m.tensor("b", [oc], "int32", data=rng.integers(-3000, 3000, oc).astype(np.int32),
                 scale=[0.0001 * (k + 1) for k in range(oc)], zero_point=[0] * oc)
    out_shape = [1, 3, 3, oc] if op != "fully_connected" else [3, oc]
    y = m.tensor("y", out_shape, "int8", scale=0.05, zero_point=-3)
    if op == "conv":
        m.builtin(3, [x, w, b], [y], options=(1, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1)]))
    elif op == "depthwise":
        m.builtin(4, [x, w, b], [y], options=(2, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1), (3, "int32", 1)]))
    else:
        m.builtin(9, [x, w, b], [y])
    path = write(tmp_path, m, [x], [y], name=f"{op}_{case}.tflite")
    if case == "per_channel_input":  # LiteRT reads a scale of 0 there (every output the zero point): refused
        with pytest.raises(Exception, match="'x' \\(the activation\\) is quantized per channel"):
            weft.import_litert(path)
        return
    xv = rng.integers(-128, 127, x_shape, endpoint=True).astype(np.int8)
    want = litert_reference(path, [xv])
    assert len(np.unique(want)) > 4
    for threads in (1, 2):
        (got,) = weft.Session(threads=threads, use_env_path=False).compile(weft.import_litert(path)).run([xv])
        np.testing.assert_array_equal(got, want, err_msg=f"{threads} thread(s)")


def add_weighted_layer(m, op, x, w, b, y):
    """A 1x1 VALID CONV_2D, a FULLY_CONNECTED or a TRANSPOSE_CONV (output [1, 4, 4, 4]) of x, w, b."""
    if op == "conv":
        m.builtin(3, [x, w, b], [y], options=(1, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1)]))
    elif op == "fully_connected":
        m.builtin(9, [x, w, b], [y])
    else:
        shape = m.tensor("shape", [4], "int32", data=np.array([1, 4, 4, 4], np.int32))
        m.builtin(67, [shape, w, x, b], [y], options=(49, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1)]))


@pytest.mark.parametrize("op", ["conv", "fully_connected", "transpose_conv"])
def test_int64_bias_on_an_8bit_layer_is_refused(tmp_path, op):
    """An 8-bit layer takes an int32 bias (LiteRT reads an int64 one as int32 words); the error names
    both types. The AOT emitter refuses it too."""
    m = Model()
    x = m.tensor("x", [1, 4, 4, 3] if op != "fully_connected" else [2, 3], "int8", scale=0.02, zero_point=1)
    w_shape = [4, 3] if op == "fully_connected" else [4, 1, 1, 3]
    w = m.tensor("w", w_shape, "int8", data=np.ones(w_shape, np.int8), scale=0.01)
    b = m.tensor("b", [4], "int64", data=np.arange(4), scale=0.0002)
    y = m.tensor("y", [1, 4, 4, 4] if op != "fully_connected" else [2, 4], "int8", scale=0.05)
    add_weighted_layer(m, op, x, w, b, y)
    path = write(tmp_path, m, [x], [y])
    xv = np.ones([1, 4, 4, 3] if op != "fully_connected" else [2, 3], np.int8)
    with pytest.raises(Exception, match="int8 input takes an int32 bias, not int64"):
        session().compile(weft.import_litert(path)).run([xv])
    with pytest.raises(Exception, match="int32 bias, not int64"):
        weft.generate_c(path, tmp_path / "c", prefix="m")


@pytest.mark.parametrize("op", ["conv", "depthwise"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_a_conv_filter_zero_point_other_than_0_is_refused(tmp_path, op, per_channel):
    """LiteRT's CONV_2D takes a symmetric int8 filter and refuses others; Weft names the zero point
    (it used to ignore it). DEPTHWISE_CONV_2D runs, the zero point ignored, in both."""
    m = Model()
    x = m.tensor("x", [1, 4, 4, 4], "int8", scale=0.02, zero_point=1)
    w_shape = [4, 1, 1, 4] if op == "conv" else [1, 1, 1, 4]
    zp = [0, 0, 5, 0] if per_channel else 5
    w = m.tensor("w", w_shape, "int8", data=np.ones(w_shape, np.int8), scale=[0.01] * 4 if per_channel else 0.01, zero_point=zp,
                 quantized_dimension=0 if op == "conv" else 3)
    y = m.tensor("y", [1, 4, 4, 4], "int8", scale=0.05)
    if op == "conv":
        m.builtin(3, [x, w], [y], options=(1, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1)]))
    else:
        m.builtin(4, [x, w], [y], options=(2, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1), (3, "int32", 1)]))
    path = write(tmp_path, m, [x], [y])
    xv = np.random.default_rng(2).integers(-128, 127, [1, 4, 4, 4]).astype(np.int8)
    if op == "depthwise":
        np.testing.assert_array_equal(session().compile(weft.import_litert(path)).run([xv])[0], litert_reference(path, [xv]))
        return
    with pytest.raises(Exception, match="filter's zero point must be 0, not 5"):
        session().compile(weft.import_litert(path)).run([xv])
    with pytest.raises(Exception, match="filter's zero point must be 0, not 5"):
        weft.generate_c(path, tmp_path / "c", prefix="m")


@pytest.mark.parametrize("rows", [1, 5])
def test_fully_connected_per_channel_weight_zero_points_are_ignored_as_in_litert(tmp_path, rows):
    """FULLY_CONNECTED with weights quantized per channel: LiteRT's kernel ignores their zero points
    (per tensor it subtracts the one); the runtime (VNNI or not, 1 and 2 threads) and the C module
    give LiteRT's bits."""
    rng = np.random.default_rng(21)
    oc, ic = 24, 40
    m = Model()
    x = m.tensor("x", [rows, ic], "int8", scale=0.03, zero_point=-4)
    wv = rng.integers(-127, 127, (oc, ic), endpoint=True).astype(np.int8)
    w = m.tensor("w", [oc, ic], "int8", data=wv, scale=[0.002 + 0.0002 * k for k in range(oc)],
                 zero_point=[(k % 5) - 2 for k in range(oc)], quantized_dimension=0)
    b = m.tensor("b", [oc], "int32", data=rng.integers(-500, 500, oc).astype(np.int32))
    y = m.tensor("y", [rows, oc], "int8", scale=0.08, zero_point=5)
    m.builtin(9, [x, w, b], [y])
    path = write(tmp_path, m, [x], [y])
    xv = rng.integers(-128, 127, (rows, ic), endpoint=True).astype(np.int8)
    want = litert_reference(path, [xv])
    assert len(np.unique(want)) > 10
    for threads in (1, 2):
        (got,) = weft.Session(threads=threads, use_env_path=False).compile(weft.import_litert(path)).run([xv])
        np.testing.assert_array_equal(got, want, err_msg=f"{threads} thread(s)")
    run_c_module(tmp_path / "c", path, {"x": xv}, {"y": want})


def test_transpose_conv_refuses_a_per_channel_activation(tmp_path):
    """TRANSPOSE_CONV's activation is its third input; quantized per channel it is refused, as for
    the other weighted operators (LiteRT reads a scale of 0 there)."""
    m = Model()
    shape = m.tensor("shape", [4], "int32", data=np.array([1, 4, 4, 2], np.int32))
    w = m.tensor("w", [2, 1, 1, 3], "int8", data=np.ones([2, 1, 1, 3], np.int8), scale=[0.01, 0.02], zero_point=[0, 0])
    x = m.tensor("x", [1, 4, 4, 3], "int8", scale=[0.02, 0.03, 0.04], zero_point=[0, 0, 0], quantized_dimension=3)
    y = m.tensor("y", [1, 4, 4, 2], "int8", scale=0.05)
    m.builtin(67, [shape, w, x], [y], options=(49, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1)]))
    path = write(tmp_path, m, [x], [y])
    with pytest.raises(Exception, match="'x' \\(the activation\\) is quantized per channel"):
        weft.import_litert(path)


@pytest.mark.parametrize("code,options_type,fields", [(23, 15, (2, 3)), (97, 74, (0, 1))])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_resize_with_align_corners_and_half_pixel_centers_is_refused(tmp_path, code, options_type, fields, dtype):
    """LiteRT and TFLM refuse a resize with both flags set; so does Weft, naming them."""
    m = Model()
    q = {} if dtype == "float32" else {"scale": 0.1, "zero_point": 0}
    x = m.tensor("x", [1, 2, 2, 1], dtype, **q)
    size = m.tensor("size", [2], "int32", data=np.array([4, 4], np.int32))
    y = m.tensor("y", [1, 4, 4, 1], dtype, **q)
    m.builtin(code, [x, size], [y], options=(options_type, [(fields[0], "bool", True), (fields[1], "bool", True)]))
    path = write(tmp_path, m, [x], [y])
    with pytest.raises(Exception, match="align_corners and half_pixel_centers are both set"):
        weft.import_litert(path)


@pytest.mark.parametrize("missing", ["input", "output", "weights"])
def test_fully_connected_without_a_scale_is_refused(tmp_path, missing):
    """An 8-bit FULLY_CONNECTED whose input, weights or output carries no scale (or scale 0) is an
    error naming it, in the runtime and in weft aot (the rescaling would divide by zero)."""
    m = Model()
    x = m.tensor("x", [2, 3], "int8", **({} if missing == "input" else {"scale": 0.02}))
    w = m.tensor("w", [4, 3], "int8", data=np.ones([4, 3], np.int8), **({"scale": 0.0} if missing == "weights" else {"scale": 0.01}))
    y = m.tensor("y", [2, 4], "int8", **({} if missing == "output" else {"scale": 0.05}))
    m.builtin(9, [x, w], [y])
    path = write(tmp_path, m, [x], [y])
    with pytest.raises(Exception, match=f"the {missing} has none"):
        session().compile(weft.import_litert(path)).run([np.ones([2, 3], np.int8)])
    with pytest.raises(Exception, match=f"the {missing} has none"):
        weft.generate_c(path, tmp_path / "c", prefix="m")


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_hybrid_fully_connected_matches_litert(tmp_path, asymmetric, per_channel):
    """FULLY_CONNECTED with a float input and int8 weights (dynamic-range quantized models): each
    input row quantized on the fly, symmetric or (asymmetric_quantize_inputs) with a zero point, as
    LiteRT's hybrid kernel does; random shapes, scales, biases, activations, small and large ranges
    and an all-zero row; equal to LiteRT's outputs bit for bit, in the runtime and in the C of weft
    aot."""
    rng = np.random.default_rng(31 + 2 * asymmetric + per_channel)
    for trial in range(12):
        rows, ic, oc = int(rng.integers(1, 6)), int(rng.integers(1, 70)), int(rng.integers(1, 40))
        m = Model()
        x = m.tensor("x", [rows, ic], "float32")
        wv = rng.integers(-127, 128, [oc, ic]).astype(np.int8)
        w = m.tensor("w", [oc, ic], "int8", data=wv, scale=list(rng.uniform(0.001, 0.02, oc)) if per_channel else 0.01,
                     zero_point=[0] * oc if per_channel else 0, quantized_dimension=0)
        ins = [x, w]
        if trial % 3:
            ins.append(m.tensor("b", [oc], "float32", data=rng.standard_normal(oc).astype(np.float32)))
        y = m.tensor("y", [rows, oc], "float32")
        m.builtin(9, ins, [y], options=(8, [(0, "byte", [0, RELU, RELU6][trial % 3]), (3, "bool", asymmetric)]))
        path = write(tmp_path, m, [x], [y], name=f"hybrid{trial}.tflite")
        xv = (rng.standard_normal([rows, ic]) * rng.uniform(0.01, 100) + rng.uniform(-3, 3)).astype(np.float32)
        xv[0] = 0 if trial == 5 else xv[0]
        if trial == 9:  # scale 1 and values halfway between codes (asymmetric: the zero point added after rounding)
            xv = (rng.integers(0, 255, [rows, ic]) + 0.5).astype(np.float32)
            xv[:, 0] = 255.0
        want = litert_reference(path, [xv])
        got = session().compile(weft.import_litert(path)).run([xv])[0]
        np.testing.assert_array_equal(got, want, err_msg=f"trial {trial}")
        assert np.abs(want).max() > 0
        if trial in (1, 5, 6):  # weft aot: the same arithmetic in C (trial 5 has an all-zero row)
            run_c_module(tmp_path / f"c{trial}", path, {"x": xv}, {"y": want})


def test_hybrid_fully_connected_rows_without_a_finite_scale(tmp_path):
    """Rows whose asymmetric quantization has no zero point (an infinite value; a range so small
    that its scale underflows to 0) run as defined arithmetic, equal to LiteRT, in the runtime and
    bit for bit in the C; with no activation an overflowing sum is infinite, as LiteRT gives it."""
    rng = np.random.default_rng(12)
    for asymmetric in (True, False):
        m = Model()
        x = m.tensor("x", [3, 16], "float32")
        w = m.tensor("w", [6, 16], "int8", data=rng.integers(-127, 128, [6, 16]).astype(np.int8), scale=0.01)
        b = m.tensor("b", [6], "float32", data=rng.standard_normal(6).astype(np.float32))
        y = m.tensor("y", [3, 6], "float32")
        m.builtin(9, [x, w, b], [y], options=(8, [(0, "byte", 0), (3, "bool", asymmetric)]))
        path = write(tmp_path, m, [x], [y], name=f"nozp{asymmetric}.tflite")
        xv = np.stack([np.r_[np.float32(np.inf), np.ones(15, np.float32)],
                       np.r_[np.float32(-1e-44), np.zeros(15, np.float32)],
                       np.linspace(-1, 1, 16, dtype=np.float32)]).astype(np.float32)
        want = litert_reference(path, [xv])
        got = session().compile(weft.import_litert(path)).run([xv])[0]
        np.testing.assert_array_equal(got, want)
        run_c_module(tmp_path / f"nozp_c{asymmetric}", path, {"x": xv}, {"y": got})
    m = Model()
    x = m.tensor("x", [2, 4], "float32")
    w = m.tensor("w", [2, 4], "int8", data=np.full([2, 4], 127, np.int8), scale=1.0)
    y = m.tensor("y", [2, 2], "float32")
    m.builtin(9, [x, w], [y], options=(8, [(0, "byte", 0)]))
    path = write(tmp_path, m, [x], [y], name="overflow.tflite")
    xv = np.array([[3e37] * 4, [-3e37] * 4], np.float32)
    want = litert_reference(path, [xv])
    assert np.isinf(want).all()
    np.testing.assert_array_equal(session().compile(weft.import_litert(path)).run([xv])[0], want)
    run_c_module(tmp_path / "overflow_c", path, {"x": xv}, {"y": want})


def test_fully_connected_weights_without_input_channels_are_named(tmp_path):
    m = Model()
    x = m.tensor("x", [2, 3], "float32")
    w = m.tensor("w", [8, 0], "float32", data=np.zeros([8, 0], np.float32))
    y = m.tensor("y", [2, 8], "float32")
    m.builtin(9, [x, w], [y])
    path = write(tmp_path, m, [x], [y], name="ic0.tflite")
    with pytest.raises(Exception, match=r"weights \[8,0\] have no input channels"):
        session().compile(weft.import_litert(path))


def _hybrid_conv(rng, op, scales, trial, groups=1):
    """A CONV_2D or DEPTHWISE_CONV_2D with a float input and int8 filters, random geometry; returns
    (model, x, y, input shape)."""
    n, ic = int(rng.integers(1, 3)), int(rng.integers(1, 7)) * groups
    kh, kw, stride, dil = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    pad = [SAME, VALID][trial % 2]
    h, w_ = int(rng.integers((kh - 1) * dil + 1, 10)), int(rng.integers((kw - 1) * dil + 1, 10))
    mult = int(rng.integers(1, 4)) if op == "depthwise" else 1
    oc = ic * mult if op == "depthwise" else int(rng.integers(1, 5)) * groups
    if pad == SAME:
        oh, ow = -(-h // stride), -(-w_ // stride)
    else:
        oh, ow = (h - (kh - 1) * dil - 1) // stride + 1, (w_ - (kw - 1) * dil - 1) // stride + 1
    wshape = [1, kh, kw, oc] if op == "depthwise" else [oc, kh, kw, ic // groups]
    if scales == "per_channel":
        sc = list(rng.uniform(0.001, 0.03, oc))
    elif scales == "equal":
        sc = [float(rng.uniform(0.001, 0.03))] * oc
    else:
        sc = float(rng.uniform(0.001, 0.03))
    wv, bv = rng.integers(-127, 128, wshape).astype(np.int8), rng.standard_normal(oc).astype(np.float32)
    act = [0, RELU, RELU6][trial % 3]

    def build(sc):
        m = Model()
        x = m.tensor("x", [n, h, w_, ic], "float32")
        w = m.tensor("w", wshape, "int8", data=wv, scale=sc, zero_point=[0] * oc if isinstance(sc, list) else 0,
                     quantized_dimension=3 if op == "depthwise" else 0)
        b = m.tensor("b", [oc], "float32", data=bv)
        y = m.tensor("y", [n, oh, ow, oc], "float32")
        if op == "depthwise":
            m.builtin(4, [x, w, b], [y], options=(2, [(0, "byte", pad), (1, "int32", stride), (2, "int32", stride), (3, "int32", mult),
                                                       (4, "byte", act), (5, "int32", dil), (6, "int32", dil)]))
        else:
            m.builtin(3, [x, w, b], [y], options=(1, [(0, "byte", pad), (1, "int32", stride), (2, "int32", stride), (3, "byte", act),
                                                       (4, "int32", dil), (5, "int32", dil)]))
        return m, x, y

    geo = dict(w=wv, b=bv, scales=np.broadcast_to(np.asarray(sc, np.float32), [oc]), pad=pad, stride=stride, dil=dil,
               groups=groups, act=act, out=[n, oh, ow, oc], build=build, sc=sc)
    m, x, y = build(sc)
    return m, x, y, [n, h, w_, ic], geo


@pytest.mark.parametrize("op", ["conv", "depthwise"])
@pytest.mark.parametrize("scales", ["per_channel", "equal", "one"])
def test_hybrid_convolutions_match_litert_bit_for_bit(tmp_path, op, scales):
    """CONV_2D and DEPTHWISE_CONV_2D with a float input and int8 filters (what dynamic-range
    quantization writes): each image quantized on the fly (CONV_2D symmetrically when its filter
    has one scale or all equal, asymmetrically with channel scales; DEPTHWISE_CONV_2D
    asymmetrically), int32 sums, the float rescale in LiteRT's order. Equal to LiteRT's reference
    kernels bit for bit over random geometries (padding, strides, dilations, depth multipliers,
    batches of two, activations, an all-zero image, small and large ranges), in the runtime and in
    the C of weft aot."""
    rng = np.random.default_rng({"conv": 0, "depthwise": 10}[op] + {"per_channel": 0, "equal": 1, "one": 2}[scales])
    for trial in range(10):
        m, x, y, shape, geo = _hybrid_conv(rng, op, scales, trial)
        path = write(tmp_path, m, [x], [y], name=f"hy{trial}.tflite")
        ref = path
        if op == "depthwise" and scales == "one":  # LiteRT takes depthwise filters' scales only per channel: the same one repeated
            rm, rx, ry = geo["build"]([geo["sc"]] * len(geo["b"]))
            ref = write(tmp_path, rm, [rx], [ry], name=f"ref{trial}.tflite")
        xv = (rng.standard_normal(shape) * rng.uniform(0.01, 100) + rng.uniform(-2, 2)).astype(np.float32)
        if trial == 4:
            xv[0] = 0  # an image of zeros: scale 1, zero point 0
        if trial == 7:
            xv = np.abs(xv)  # all positive: the zero point at the low end
        if trial == 8:  # scale 1 and values halfway between codes: x / scale rounds first, then the zero point is added
            xv = (rng.integers(0, 255, shape) + 0.5).astype(np.float32)
            xv.flat[0] = 255.0
        want = litert_reference(ref, [xv])
        got = session().compile(weft.import_litert(path)).run([xv])[0]
        np.testing.assert_array_equal(got, want, err_msg=f"trial {trial}")
        assert np.abs(want).max() > 0
        if trial in (1, 4, 7):
            run_c_module(tmp_path / f"c{trial}", path, {"x": xv}, {"y": want})


@pytest.mark.parametrize("net", ["kws_cnn", "mobilenet_v1_025"])
def test_dynamic_range_quantized_networks_match_litert_bit_for_bit(tmp_path, net):
    """Whole dynamic-range quantized networks (bench/litert/make_hybrid.py: a keyword-spotting CNN,
    MobileNet v1 at width 0.25 and 128x128): every layer a hybrid CONV_2D, DEPTHWISE_CONV_2D or
    FULLY_CONNECTED, equal to LiteRT's reference kernels bit for bit on random inputs."""
    sys.path.insert(0, os.path.join(ROOT, "bench", "litert"))  # from the checkout, or copied next to these tests (scripts/test_wheel.sh)
    import make_hybrid

    rng = np.random.default_rng(7)
    data = make_hybrid.kws_cnn(rng) if net == "kws_cnn" else make_hybrid.mobilenet_v1(rng, 0.25, 128)
    path = str(tmp_path / f"{net}.tflite")
    with open(path, "wb") as f:
        f.write(data)
    model = session().compile(weft.import_litert(path))
    shape = [1, 49, 40, 1] if net == "kws_cnn" else [1, 128, 128, 3]
    for seed in range(2):
        xv = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        want = litert_reference(path, [xv])
        np.testing.assert_array_equal(model.run([xv])[0], want)
        assert np.abs(want).max() > 0


def test_hybrid_edge_cases(tmp_path):
    """A hybrid convolution with an empty output gives it (as LiteRT); NaN inputs run, the same way
    every time (a NaN takes the lowest code)."""
    rng = np.random.default_rng(9)
    m = Model()
    x = m.tensor("x", [1, 2, 2, 3], "float32")
    w = m.tensor("w", [2, 3, 3, 3], "int8", data=rng.integers(-127, 128, [2, 3, 3, 3]), scale=[0.01, 0.02], zero_point=[0, 0])
    b = m.tensor("b", [2], "float32", data=np.zeros(2, np.float32))
    y = m.tensor("y", [1, 0, 0, 2], "float32")
    m.builtin(3, [x, w, b], [y], options=(1, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1)]))
    path = write(tmp_path, m, [x], [y], name="empty.tflite")
    got = session().compile(weft.import_litert(path)).run([np.ones([1, 2, 2, 3], np.float32)])[0]
    assert got.shape == (1, 0, 0, 2)
    for op in ("conv", "depthwise"):
        m, x, y, shape, _ = _hybrid_conv(np.random.default_rng(4), op, "per_channel", 1)
        path = write(tmp_path, m, [x], [y], name=f"nan_{op}.tflite")
        model = session().compile(weft.import_litert(path))
        for where in (0, 5):  # LiteRT's result here rests on casting NaN to integers (undefined); Weft's runs and is defined
            xv = np.random.default_rng(where).standard_normal(shape).astype(np.float32)
            xv.flat[where] = np.nan
            got = model.run([xv])[0]
            assert got.shape == litert_reference(path, [xv]).shape
            np.testing.assert_array_equal(got, model.run([xv])[0])


@pytest.mark.parametrize("case", ["zero_point", "axis1"])
def test_embedding_lookup_refuses_what_it_cannot_dequantize(tmp_path, case):
    """int8 embeddings with a zero point, or scales along another dimension than the rows, are
    errors naming the cause (LiteRT refuses them too), not silently wrong rows."""
    m = Model()
    ids = m.tensor("ids", [2], "int32")
    if case == "zero_point":
        v = m.tensor("v", [3, 3], "int8", data=np.ones([3, 3], np.int8), scale=0.5, zero_point=5)
    else:
        v = m.tensor("v", [3, 3], "int8", data=np.ones([3, 3], np.int8), scale=[1.0, 10.0, 100.0], zero_point=[0, 0, 0],
                     quantized_dimension=1)
    y = m.tensor("y", [2, 3], "float32")
    m.builtin(7, [ids, v], [y])
    path = write(tmp_path, m, [ids], [y])
    with pytest.raises(Exception, match="zero point 0" if case == "zero_point" else "per row \\(quantized_dimension 0\\)"):
        session().compile(weft.import_litert(path)).run([np.array([0, 2], np.int32)])


def test_hybrid_grouped_convolution_matches_a_recomputation(tmp_path):
    """A grouped CONV_2D with a float input and int8 filters (which LiteRT's hybrid kernel does not
    take) runs the same arithmetic: checked against a NumPy re-computation of the quantization, the
    integer sums and the rescale, in the runtime and the C of weft aot."""
    rng = np.random.default_rng(5)
    for trial in range(4):
        m, x, y, shape, geo = _hybrid_conv(rng, "conv", "per_channel" if trial % 2 else "one", trial, groups=2 + trial % 2)
        path = write(tmp_path, m, [x], [y], name=f"g{trial}.tflite")
        xv = (rng.standard_normal(shape) * 3 + 0.5).astype(np.float32)
        got = session().compile(weft.import_litert(path)).run([xv])[0]
        want = _hybrid_conv_numpy(geo, xv)
        np.testing.assert_array_equal(got, want, err_msg=f"trial {trial}")
        if trial < 2:
            run_c_module(tmp_path / f"c{trial}", path, {"x": xv}, {"y": want})


def _round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))


def _hybrid_quantize(x, asym):
    f = np.float32
    mn, mx = min(f(0), f(x.min())), max(f(0), f(x.max()))
    if not asym:
        r = max(abs(mn), abs(mx))
        if r == 0:
            return np.zeros(x.shape, np.int64), f(1), 0
        return np.clip(_round_away(x * (f(127) / r)), -127, 127).astype(np.int64), f(r / f(127)), 0
    if mn == mx:
        return np.zeros(x.shape, np.int64), f(1), 0
    s = f(mx - mn) / f(255)
    zmin, zmax = f(-128) - mn / s, f(127) - mx / s
    zp = zmin if f(128) + abs(mn / s) < f(127) + abs(mx / s) else zmax
    off = -128 if zp <= -128 else 127 if zp >= 127 else int(_round_away(zp))
    return np.clip(_round_away(x * (f(1) / s)) + off, -128, 127).astype(np.int64), s, off


def _hybrid_conv_numpy(geo, xv):
    """CONV_2D (groups allowed) of a float input with int8 filters in NumPy, as LiteRT's hybrid
    kernel computes it: symmetric quantization and sum * (scale * filter scale) for one filter
    scale, asymmetric and (sum * channel scale) * scale for channel scales."""
    f = np.float32
    wq, sc = geo["w"].astype(np.int64), geo["scales"]
    oc, kh, kw, wic = wq.shape
    n, h, w_, ic = xv.shape
    _, oh, ow, _ = geo["out"]
    stride, dil, per_group = geo["stride"], geo["dil"], oc // geo["groups"]
    per_channel = bool(np.any(sc != sc[0]))
    ph = max(0, ((oh - 1) * stride + (kh - 1) * dil + 1 - h) // 2) if geo["pad"] == SAME else 0
    pw = max(0, ((ow - 1) * stride + (kw - 1) * dil + 1 - w_) // 2) if geo["pad"] == SAME else 0
    out = np.zeros(geo["out"], np.float32)
    for bn in range(n):
        q, s, off = _hybrid_quantize(xv[bn], per_channel)
        acc = np.zeros([oh, ow, oc], np.int64)
        for oy in range(oh):
            for ox in range(ow):
                for ky in range(kh):
                    for kx in range(kw):
                        iy, ix = oy * stride - ph + ky * dil, ox * stride - pw + kx * dil
                        if 0 <= iy < h and 0 <= ix < w_:
                            for o in range(oc):
                                base = (o // per_group) * wic
                                acc[oy, ox, o] += int(np.dot(wq[o, ky, kx], q[iy, ix, base:base + wic] - off))
        a = acc.astype(np.float32)
        v = (a * sc) * s if per_channel else a * (s * sc)
        v = v + geo["b"]
        lo, hi = {0: (-np.inf, np.inf), RELU: (0, np.inf), RELU6: (0, 6)}[geo["act"]]
        out[bn] = np.minimum(np.maximum(v, f(lo)), f(hi))
    return out


@pytest.mark.parametrize("kind", ["float32", "int32", "int8_per_tensor", "int8_per_row"])
def test_embedding_lookup_matches_litert(tmp_path, kind):
    """EMBEDDING_LOOKUP: rows picked by int32 ids (repeats, any order), value of rank 2 and 3;
    float and int32 values copied, int8 values dequantized to float32 (scale per tensor or per
    row, as dynamic-range quantization writes embeddings). Equal to LiteRT bit for bit, in the
    runtime and in the C of weft aot."""
    rng = np.random.default_rng(len(kind))
    for vshape in ([10, 4], [7, 3, 5]):
        m = Model()
        ids = m.tensor("ids", [6], "int32")
        rows = vshape[0]
        if kind.startswith("int8"):
            scale = list(rng.uniform(0.01, 0.1, rows)) if kind == "int8_per_row" else 0.037
            v = m.tensor("v", vshape, "int8", data=rng.integers(-128, 128, vshape), scale=scale,
                         zero_point=[0] * rows if isinstance(scale, list) else 0, quantized_dimension=0)
            out_type = "float32"
        else:
            v = m.tensor("v", vshape, kind, data=(rng.standard_normal(vshape) * 10).astype(kind))
            out_type = kind
        y = m.tensor("y", [6] + vshape[1:], out_type)
        m.builtin(7, [ids, v], [y])
        path = write(tmp_path, m, [ids], [y], name=f"emb{len(vshape)}.tflite")
        idv = rng.integers(0, rows, 6).astype(np.int32)
        idv[3] = idv[1]
        want = litert_reference(path, [idv])
        got = session().compile(weft.import_litert(path)).run([idv])[0]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        run_c_module(tmp_path / f"c{len(vshape)}", path, {"ids": idv}, {"y": want})
        bad = idv.copy()
        bad[4] = rows
        with pytest.raises(Exception, match=f"lookup id {rows} \\(entry 4\\) is outside \\[0, {rows}\\)"):
            session().compile(weft.import_litert(path)).run([bad])


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("layout", ["plain", "adj_x", "adj_y", "broadcast"])
def test_hybrid_batch_matmul_matches_litert(tmp_path, asymmetric, layout):
    """BATCH_MATMUL of a float lhs and an int8 rhs (dynamic-range quantized): each lhs row
    quantized on the fly (symmetric or asymmetric), int32 sums rescaled by the row's scale times
    the rhs's, as LiteRT's hybrid kernel; every layout flag and batch broadcasting, equal to LiteRT's
    reference kernels bit for bit."""
    rng = np.random.default_rng(3 + asymmetric)
    b, m_, k, n = 2, 3, 40, 5
    xs = {"adj_x": [b, k, m_], "broadcast": [2, b, m_, k]}.get(layout, [b, m_, k])
    ws = {"adj_y": [n, k], "broadcast": [b, k, n]}.get(layout, [k, n])
    ys = ([2] if layout == "broadcast" else []) + [b, m_, n]
    for trial in range(3):
        m = Model()
        x = m.tensor("x", xs, "float32")
        w = m.tensor("w", ws, "int8", data=rng.integers(-127, 128, ws), scale=float(rng.uniform(0.005, 0.05)))
        y = m.tensor("y", ys, "float32")
        m.builtin(126, [x, w], [y], options=(101, [(0, "bool", layout == "adj_x"), (1, "bool", layout == "adj_y"), (2, "bool", asymmetric)]))
        path = write(tmp_path, m, [x], [y], name=f"bmm{trial}.tflite")
        xv = (rng.standard_normal(xs) * rng.uniform(0.1, 20) + rng.uniform(-1, 1)).astype(np.float32)
        if trial == 2:
            xv = (rng.integers(0, 255, xs) + 0.5).astype(np.float32)
            xv.flat[0] = 255.0
        want = litert_reference(path, [xv])
        got = session().compile(weft.import_litert(path)).run([xv])[0]
        if layout == "broadcast":
            # LiteRT's hybrid kernel is wrong past the first outer batch when the rhs broadcasts
            # (its outputs there are several units from the float product); Weft is checked against
            # a NumPy re-computation of the same arithmetic, and against LiteRT where LiteRT is right.
            np.testing.assert_array_equal(got[0], want[0], err_msg=f"trial {trial}")
            w_data, w_scale = _tensor_data(path, "w"), _tensor_scale(path, "w")
            want = _hybrid_matmul_numpy(xv, w_data, w_scale, asymmetric)
            assert np.abs(want - np.matmul(xv.astype(np.float64), w_data * w_scale)).max() < 0.1 * np.abs(want).max()
        np.testing.assert_array_equal(got, want, err_msg=f"trial {trial}")
    run_c_module(tmp_path / "c", path, {"x": xv}, {"y": got})  # weft aot: the same arithmetic in C, bit for bit


def _tensor_data(path, name):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=path)
    d = {t["name"]: t for t in it.get_tensor_details()}[name]
    return it.get_tensor(d["index"]).astype(np.float64)


def _tensor_scale(path, name):
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=path)
    return float(np.float32({t["name"]: t for t in it.get_tensor_details()}[name]["quantization"][0]))


def _hybrid_matmul_numpy(xv, w, w_scale, asym):
    """x [..., M, K] (float) times w [..., K, N] (int8 values), as LiteRT's hybrid batch matmul
    computes it: each row of x quantized, int32 sums, the zero point taken out in float, rescaled."""
    f = np.float32
    out_shape = np.broadcast_shapes(xv.shape[:-2], w.shape[:-2]) + (xv.shape[-2], w.shape[-1])
    xs = np.broadcast_to(xv, out_shape[:-2] + xv.shape[-2:])
    ws = np.broadcast_to(w, out_shape[:-2] + w.shape[-2:]).astype(np.int64)
    out = np.zeros(out_shape, np.float32)
    for idx in np.ndindex(*out_shape[:-2]):
        for i in range(out_shape[-2]):
            q, s, off = _hybrid_quantize(xs[idx][i], asym)
            total = (q @ ws[idx]).astype(np.int32)
            colsum = ws[idx].sum(axis=0).astype(np.int32)
            total = (total.astype(np.float32) - colsum.astype(np.float32) * f(off)).astype(np.int32)
            out[idx][i] = f(0) + f(s * f(w_scale)) * total.astype(np.float32)
    return out


def test_float_fully_connected_with_other_weight_types_is_refused(tmp_path):
    m = Model()
    x = m.tensor("x", [2, 3], "float32")
    w = m.tensor("w", [4, 3], "int16", data=np.ones([4, 3], np.int16), scale=0.01)
    y = m.tensor("y", [2, 4], "float32")
    m.builtin(9, [x, w], [y])
    path = write(tmp_path, m, [x], [y])
    with pytest.raises(Exception, match="float input takes float or int8 weights"):
        session().compile(weft.import_litert(path)).run([np.ones([2, 3], np.float32)])


@pytest.mark.parametrize("op", ["conv", "transpose_conv", "fully_connected"])
@pytest.mark.parametrize("bad", ["weights", "bias"])
def test_float_layers_refuse_integer_weights_or_bias_they_cannot_take(tmp_path, op, bad):
    """A float TRANSPOSE_CONV with int8 weights, or any of these layers with an int32 bias, is an
    error naming the types, in the runtime and in weft aot (they were read as floats).
    FULLY_CONNECTED and CONV_2D take int8 weights (the hybrid kernels) but not an int32 bias."""
    m = Model()
    x = m.tensor("x", [1, 4, 4, 3] if op != "fully_connected" else [2, 3], "float32")
    w_shape = [4, 3] if op == "fully_connected" else [4, 1, 1, 3]
    if bad == "weights" and op != "fully_connected":
        w = m.tensor("w", w_shape, "int8", data=np.ones(w_shape, np.int8), scale=0.01)
    else:
        w = m.tensor("w", w_shape, "float32", data=np.ones(w_shape, np.float32))
    b = m.tensor("b", [4], "int32" if bad == "bias" else "float32", data=np.arange(4))
    y = m.tensor("y", [1, 4, 4, 4] if op != "fully_connected" else [2, 4], "float32")
    add_weighted_layer(m, op, x, w, b, y)
    path = write(tmp_path, m, [x], [y])
    if op != "transpose_conv" and bad == "weights":
        return  # float weights (fully_connected), or int8 filters that run as LiteRT's hybrid convolution
    xv = np.ones([1, 4, 4, 3] if op != "fully_connected" else [2, 3], np.float32)
    with pytest.raises(Exception, match="float input (needs|takes) (a )?float"):
        session().compile(weft.import_litert(path)).run([xv])
    with pytest.raises(Exception, match="float input (needs|takes) (a )?float"):
        weft.generate_c(path, tmp_path / "c", prefix="m")


@pytest.mark.parametrize("dim", [0, 1, 3])
def test_per_channel_dequantize_matches_litert_and_numpy(tmp_path, dim):
    """DEQUANTIZE of a tensor quantized per channel (weight-only quantized models store weights so):
    a graph input dequantized along `dim`, and constant int8 weights dequantized into a float
    CONV_2D; against LiteRT and a NumPy recomputation, in the runtime and the C module."""
    rng = np.random.default_rng(40 + dim)
    shape = [4, 3, 2, 5]
    ch = shape[dim]
    scales = list(rng.uniform(0.001, 0.1, ch).astype(np.float32))
    zps = [int(v) for v in rng.integers(-5, 5, ch)]
    m = Model()
    q = m.tensor("q", shape, "int8", scale=scales, zero_point=zps, quantized_dimension=dim)
    f = m.tensor("f", shape, "float32")
    m.builtin(6, [q], [f])  # DEQUANTIZE
    path = write(tmp_path, m, [q], [f], name="deq.tflite")
    qv = rng.integers(-128, 127, shape, endpoint=True).astype(np.int8)
    bshape = [1] * 4
    bshape[dim] = ch
    expect = (np.array(scales, np.float32).reshape(bshape) * (qv.astype(np.float32) - np.array(zps, np.float32).reshape(bshape)))
    (got,) = session().compile(weft.import_litert(path)).run([qv])
    np.testing.assert_array_equal(got, expect.astype(np.float32))
    np.testing.assert_array_equal(got, litert_reference(path, [qv]))
    run_c_module(tmp_path / "c", path, {"q": qv}, {"f": got})
    if dim != 0:
        return
    # Constant per-channel weights (output channels on dim 0) dequantized into a float convolution.
    m = Model()
    x = m.tensor("x", [1, 5, 5, 5], "float32")
    wq = m.tensor("wq", shape, "int8", data=qv, scale=scales, zero_point=[0] * ch, quantized_dimension=0)
    w = m.tensor("w", shape, "float32")
    b = m.tensor("b", [4], "float32", data=rng.standard_normal(4).astype(np.float32))
    y = m.tensor("y", [1, 3, 4, 4], "float32")
    m.builtin(6, [wq], [w])
    m.builtin(3, [x, w, b], [y], options=(1, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1)]))
    path = write(tmp_path, m, [x], [y], name="conv.tflite")
    xv = rng.standard_normal([1, 5, 5, 5]).astype(np.float32)
    (got,) = session().compile(weft.import_litert(path)).run([xv])
    np.testing.assert_allclose(got, litert_reference(path, [xv]), rtol=1e-5, atol=1e-5)


def test_float16_weights_dequantized_into_a_float_convolution(tmp_path):
    """Float16-quantized models keep weights as float16 constants behind a DEQUANTIZE; the runtime
    and the C module run them and match LiteRT."""
    rng = np.random.default_rng(16)
    m = Model()
    x = m.tensor("x", [1, 5, 5, 3], "float32")
    wh = m.tensor("wh", [4, 3, 3, 3], "float16", data=rng.standard_normal([4, 3, 3, 3]).astype(np.float16))
    w = m.tensor("w", [4, 3, 3, 3], "float32")
    b = m.tensor("b", [4], "float32", data=rng.standard_normal(4).astype(np.float32))
    y = m.tensor("y", [1, 3, 3, 4], "float32")
    m.builtin(6, [wh], [w])  # DEQUANTIZE
    m.builtin(3, [x, w, b], [y], options=(1, [(0, "byte", VALID), (1, "int32", 1), (2, "int32", 1)]))
    path = write(tmp_path, m, [x], [y])
    xv = rng.standard_normal([1, 5, 5, 3]).astype(np.float32)
    want = litert_reference(path, [xv])
    (got,) = session().compile(weft.import_litert(path)).run([xv])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    run_c_module(tmp_path / "c", path, {"x": xv}, {"y": want}, atol=1e-5, rtol=1e-5)


def _call_model(index=None):
    """CALL(x, y) -> z with subgraph 1: z = x * y + x (LiteRT's interpreter has no kernel for CALL;
    the schema's meaning is to run the subgraph)."""
    m = Model()
    x, y, z = m.tensor("x", [2, 3], "float32"), m.tensor("y", [2, 3], "float32"), m.tensor("z", [2, 3], "float32")

    def sub(s):
        a, b = s.tensor("a", [2, 3], "float32"), s.tensor("b", [2, 3], "float32")
        t, r = s.tensor("t", [2, 3], "float32"), s.tensor("r", [2, 3], "float32")
        s.builtin(18, [a, b], [t])  # MUL
        s.builtin(0, [t, a], [r])  # ADD
        return [a, b], [r]
    c = m.subgraph(sub)
    m.builtin(31, [x, y], [z], options=(16, [(0, "int32", c if index is None else index)]))
    return m, [x, y], [z]


def test_call_runs_its_subgraph_inline(tmp_path):
    m, ins, outs = _call_model()
    path = write(tmp_path, m, ins, outs)
    rng = np.random.default_rng(4)
    xv, yv = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
    got = session().compile(weft.import_litert(path)).run([xv, yv])[0]
    np.testing.assert_allclose(got, xv * yv + xv, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("index,match", [(0, "subgraph \\(CallOptions\\) is 0"), (7, "subgraph \\(CallOptions\\) is 7")])
def test_call_of_a_missing_or_the_main_subgraph_is_refused(tmp_path, index, match):
    m, ins, outs = _call_model(index)
    with pytest.raises(Exception, match=match):
        weft.import_litert(write(tmp_path, m, ins, outs))
