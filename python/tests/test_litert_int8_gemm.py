"""8-bit CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED (the integer GEMM and depthwise paths) bit-exact against LiteRT's reference
kernels, over shapes that leave every partial tile: rows (output pixels) short of a register tile,
output channels short of a vector, reduction lengths short of a group of four, zero points at the
ends of the range, per-channel and per-tensor weight scales, fused clamps, weights constant or fed
at run time (packed per run, so a change must be seen)."""
import os
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402
from test_litert import litert_reference as reference  # noqa: E402  (LiteRT's reference kernels)

SAME, VALID = 0, 1
NONE, RELU, RELU6 = 0, 1, 3




def weft_run(path, inputs):
    """The output at 1 and at 2 threads (the work is split differently), which must agree."""
    outs = [weft.Session(use_env_path=False, threads=t).compile(weft.import_litert(path)).run(inputs)[0] for t in (1, 2)]
    np.testing.assert_array_equal(outs[0], outs[1])
    return outs[0]


# (height, width, in channels, out channels, kernel, stride, padding, activation, input zero point
#  [, dilation, batch])
CONV = [
    (1, 1, 3, 5, 1, 1, VALID, NONE, 0),        # one row, three values of k, five columns
    (3, 3, 4, 16, 1, 1, VALID, RELU, -128),    # nine rows: one tile of eight and one row
    (5, 3, 7, 17, 3, 1, SAME, RELU6, 127),     # k = 63, a column past a vector
    (6, 5, 13, 33, 3, 2, SAME, NONE, 11),      # strided, k = 117
    (4, 4, 64, 40, 1, 1, VALID, NONE, -3),     # 1x1 over the input itself, k a multiple of 64
    (7, 6, 70, 48, 2, 1, VALID, RELU, 100),    # k = 280 (a tail past 64-byte chunks)
    (2, 9, 130, 3, 1, 1, VALID, NONE, -77),    # k = 130, three columns
    (9, 8, 3, 32, 3, 2, SAME, RELU6, -128, 1, 2),  # a first layer (k = 27, one vector per row), two images
    (9, 9, 5, 20, 3, 1, SAME, NONE, 40, 2, 1),   # dilated taps
    (6, 7, 2, 9, 5, 1, SAME, RELU, -60, 1, 3),   # k = 50 with wide padding, three images
    (7, 6, 7, 12, 5, 2, SAME, NONE, -30, 1, 1),  # k = 175: a row in three vectors
    (5, 5, 24, 18, 3, 1, SAME, RELU, 90, 1, 2),  # k = 216: four vectors
]


@pytest.mark.parametrize("case", CONV, ids=[f"conv{i}" for i in range(len(CONV))])
@pytest.mark.parametrize("per_channel", [True, False], ids=["per_channel", "per_tensor"])
def test_int8_conv2d_is_bit_exact(tmp_path, case, per_channel):
    h, w, ic, oc, k, s, pad, act, in_zp = case[:9]
    dil, batch = (case[9], case[10]) if len(case) > 9 else (1, 1)
    rng = np.random.default_rng(hash((case, per_channel)) % 2**32)
    in_scale = 0.05
    w_scales = rng.uniform(0.002, 0.02, oc) if per_channel else np.full(oc, 0.01)
    ek = (k - 1) * dil + 1
    oh = -(-h // s) if pad == SAME else (h - ek) // s + 1
    ow = -(-w // s) if pad == SAME else (w - ek) // s + 1
    out_scale = in_scale * float(np.mean(w_scales)) * np.sqrt(k * k * ic) * 30
    m = Model()
    x = m.tensor("x", [batch, h, w, ic], "int8", scale=in_scale, zero_point=in_zp)
    wv = rng.integers(-127, 128, (oc, k, k, ic)).astype(np.int8)
    bv = rng.integers(-3000, 3000, oc).astype(np.int32)
    wscale = list(w_scales) if per_channel else float(w_scales[0])
    wzp = [0] * oc if per_channel else 0
    tw = m.tensor("w", wv.shape, "int8", data=wv, scale=wscale, zero_point=wzp)
    bscale = list(in_scale * w_scales) if per_channel else in_scale * float(w_scales[0])
    tb = m.tensor("b", [oc], "int32", data=bv, scale=bscale, zero_point=[0] * oc if per_channel else 0)
    y = m.tensor("y", [batch, oh, ow, oc], "int8", scale=out_scale, zero_point=-5)
    fields = [(0, "byte", pad), (1, "int32", s), (2, "int32", s), (3, "byte", act), (4, "int32", dil), (5, "int32", dil)]
    m.builtin(3, [x, tw, tb], [y], options=(1, fields))
    path = str(tmp_path / "conv.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [y]))
    xv = rng.integers(-128, 128, (batch, h, w, ic)).astype(np.int8)
    got, want = weft_run(path, [xv]), reference(path, [xv])
    assert got.shape == want.shape
    assert len(np.unique(want)) > 2, "the output should not be saturated"
    np.testing.assert_array_equal(got, want)


# (rows, in features, out features, input zero point, activation)
FC = [(1, 1, 1, 0, NONE), (1, 3, 17, -128, NONE), (3, 70, 5, 127, RELU), (8, 64, 16, 9, NONE),
      (9, 130, 33, -20, RELU6), (1, 1280, 100, -1, NONE), (20, 257, 64, 50, NONE)]


@pytest.mark.parametrize("case", FC, ids=[f"fc{i}" for i in range(len(FC))])
@pytest.mark.parametrize("weights", ["constant", "input"])
def test_int8_fully_connected_is_bit_exact(tmp_path, case, weights):
    rows, ic, oc, in_zp, act = case
    rng = np.random.default_rng(hash((case, weights)) % 2**32)
    in_scale, w_scale = 0.04, 0.008
    out_scale = in_scale * w_scale * np.sqrt(ic) * 30
    m = Model()
    x = m.tensor("x", [rows, ic], "int8", scale=in_scale, zero_point=in_zp)
    wv = rng.integers(-127, 128, (oc, ic)).astype(np.int8)
    bv = rng.integers(-2000, 2000, oc).astype(np.int32)
    tw = m.tensor("w", wv.shape, "int8", data=wv if weights == "constant" else None, scale=w_scale, zero_point=0)
    tb = m.tensor("b", [oc], "int32", data=bv, scale=in_scale * w_scale, zero_point=0)
    y = m.tensor("y", [rows, oc], "int8", scale=out_scale, zero_point=3)
    m.builtin(9, [x, tw, tb], [y], options=(8, [(0, "byte", act)]))
    path = str(tmp_path / "fc.tflite")
    ins = [x] if weights == "constant" else [x, tw]
    with open(path, "wb") as f:
        f.write(m.finish(ins, [y]))
    xv = rng.integers(-128, 128, (rows, ic)).astype(np.int8)
    if weights == "constant":
        got, want = weft_run(path, [xv]), reference(path, [xv])
        np.testing.assert_array_equal(got, want)
        return
    # Weights fed at run time: one compiled model run with two different weight tensors, so a
    # stale packing of the first would show in the second.
    model = weft.Session(use_env_path=False).compile(weft.import_litert(path))
    for trial in range(2):
        wt = wv if trial == 0 else rng.integers(-127, 128, (oc, ic)).astype(np.int8)
        (got,) = model.run([xv, wt])
        np.testing.assert_array_equal(got, reference(path, [xv, wt]), err_msg=f"weights #{trial}")


# (height, width, channels, kernel, stride, padding, activation, input zero point, dilation, multiplier)
DEPTHWISE = [
    (5, 6, 64, 3, 1, SAME, RELU6, -128, 1, 1),   # one full block of 64 channels
    (7, 5, 144, 3, 2, SAME, NONE, 127, 1, 1),    # two blocks and 16 channels, strided
    (9, 9, 32, 3, 1, VALID, RELU, 5, 2, 1),      # half a block, dilated
    (6, 6, 8, 5, 1, SAME, NONE, -3, 1, 1),       # 25 taps (7 groups of four), 8 channels
    (4, 7, 3, 3, 2, SAME, RELU6, 20, 1, 4),      # depth multiplier 4 (12 output channels)
    (3, 3, 200, 1, 1, VALID, NONE, 0, 1, 1),     # one tap
    (10, 3, 1, 3, 1, SAME, NONE, -100, 1, 1),    # one channel
    (6, 8, 96, 3, 1, SAME, RELU, 33, 1, 1),      # a block of 64 and one of 32
    (7, 7, 50, 3, 2, VALID, NONE, -9, 1, 1),     # 32, then 16, then 2 channels
    (8, 9, 32, 3, 1, SAME, RELU6, 1, 1, 1),      # a block of 32, interior pixels stepping
    # flattened rows (channels repeating every lcm(c, 64) positions)
    (5, 70, 8, 3, 2, SAME, RELU, -128, 1, 1),    # a wide row: several periods, stride 2
    (6, 9, 5, 3, 3, SAME, NONE, 60, 1, 1),       # stride 3 (three phases), a period of 320
    (9, 10, 2, 3, 2, VALID, RELU6, -20, 2, 3),   # multiplier 3 over 2 channels, dilated and strided
    (5, 7, 24, 5, 2, SAME, NONE, 127, 1, 1),     # 25 taps, strided
    (4, 5, 130, 3, 1, SAME, NONE, 10, 1, 1),     # a period of 4160: the per-pixel blocks instead
]


@pytest.mark.parametrize("case", DEPTHWISE, ids=[f"dw{i}" for i in range(len(DEPTHWISE))])
def test_int8_depthwise_is_bit_exact(tmp_path, case):
    h, w, c, k, s, pad, act, in_zp, dil, mult = case
    rng = np.random.default_rng(hash(case) % 2**32)
    oc = c * mult
    in_scale = 0.05
    w_scales = rng.uniform(0.002, 0.02, oc)
    ek = (k - 1) * dil + 1
    oh = -(-h // s) if pad == SAME else (h - ek) // s + 1
    ow = -(-w // s) if pad == SAME else (w - ek) // s + 1
    out_scale = in_scale * float(np.mean(w_scales)) * k * 20
    m = Model()
    x = m.tensor("x", [2, h, w, c], "int8", scale=in_scale, zero_point=in_zp)
    wv = rng.integers(-127, 128, (1, k, k, oc)).astype(np.int8)
    bv = rng.integers(-3000, 3000, oc).astype(np.int32)
    tw = m.tensor("w", wv.shape, "int8", data=wv, scale=list(w_scales), zero_point=[0] * oc, quantized_dimension=3)
    tb = m.tensor("b", [oc], "int32", data=bv, scale=list(in_scale * w_scales), zero_point=[0] * oc)
    y = m.tensor("y", [2, oh, ow, oc], "int8", scale=out_scale, zero_point=7)
    fields = [(0, "byte", pad), (1, "int32", s), (2, "int32", s), (3, "int32", mult), (4, "byte", act), (5, "int32", dil), (6, "int32", dil)]
    m.builtin(4, [x, tw, tb], [y], options=(2, fields))
    path = str(tmp_path / "dw.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [y]))
    xv = rng.integers(-128, 128, (2, h, w, c)).astype(np.int8)
    got, want = weft_run(path, [xv]), reference(path, [xv])
    assert got.shape == want.shape
    assert len(np.unique(want)) > 2, "the output should not be saturated"
    np.testing.assert_array_equal(got, want)


def test_saved_model_packs_the_weights_again(tmp_path):
    """Constant int8 weights are packed when the graph is compiled; a saved .weft model packs them
    again when loaded and gives the same bits as LiteRT."""
    rng = np.random.default_rng(5)
    m = Model()
    x = m.tensor("x", [1, 6, 6, 8], "int8", scale=0.05, zero_point=-2)
    wv = rng.integers(-127, 128, (24, 3, 3, 8)).astype(np.int8)
    tw = m.tensor("w", wv.shape, "int8", data=wv, scale=0.01, zero_point=0)
    tb = m.tensor("b", [24], "int32", data=rng.integers(-500, 500, 24).astype(np.int32), scale=0.0005, zero_point=0)
    h = m.tensor("h", [1, 6, 6, 24], "int8", scale=0.2, zero_point=1)
    m.builtin(3, [x, tw, tb], [h], options=(1, [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1), (3, "byte", RELU)]))
    flat = m.tensor("flat", [1, 864], "int8", scale=0.2, zero_point=1)
    shape = m.tensor("shape", [2], "int32", data=np.array([1, 864], dtype=np.int32))
    m.builtin(22, [h, shape], [flat])  # RESHAPE
    fv = rng.integers(-127, 128, (10, 864)).astype(np.int8)
    tf = m.tensor("fw", fv.shape, "int8", data=fv, scale=0.004, zero_point=0)
    y = m.tensor("y", [1, 10], "int8", scale=0.5, zero_point=0)
    m.builtin(9, [flat, tf, -1], [y], options=(8, [(0, "byte", NONE)]))
    path = str(tmp_path / "convfc.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [y]))
    xv = rng.integers(-128, 128, (1, 6, 6, 8)).astype(np.int8)
    want = reference(path, [xv])
    assert len(np.unique(want)) > 2
    s = weft.Session(use_env_path=False)
    model = s.compile(weft.import_litert(path))
    np.testing.assert_array_equal(model.run([xv])[0], want)
    saved = str(tmp_path / "convfc.weft")
    model.save(saved)
    np.testing.assert_array_equal(weft.Session(use_env_path=False).load_model(saved).run([xv])[0], want)


@pytest.mark.parametrize("dtype", ["int8", "int16", "float32"])
@pytest.mark.parametrize("shape,perm", [((1, 3, 64, 50), (0, 2, 3, 1)), ((2, 70, 90), (2, 0, 1)), ((5, 4, 3, 2, 60), (4, 1, 3, 0, 2)),
                                        ((300, 41), (1, 0)), ((1, 96, 96, 8), (0, 3, 1, 2)),
                                        # planes interleaved into a short last axis: 4, 7, 2 (with a batch), 1
                                        ((2, 4, 5, 33), (0, 2, 3, 1)), ((1, 7, 9, 11), (0, 2, 3, 1)), ((3, 2, 100), (0, 2, 1)),
                                        ((2, 6, 7, 3, 5), (0, 2, 3, 4, 1)), ((4, 1, 30), (0, 2, 1))])
def test_transpose_matches_litert(tmp_path, shape, perm, dtype):
    """TRANSPOSE, its lines split over threads, against NumPy."""
    m = Model()
    q = {"scale": 0.1, "zero_point": 0} if dtype != "float32" else {}
    x = m.tensor("x", list(shape), dtype, **q)
    tp = m.tensor("perm", [len(perm)], "int32", data=np.array(perm, dtype=np.int32))
    y = m.tensor("y", [shape[p] for p in perm], dtype, **q)
    m.builtin(39, [x, tp], [y])
    path = str(tmp_path / "t.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [y]))
    xv = np.random.default_rng(1).integers(-128, 128, shape).astype(dtype)
    for threads in (1, 2):
        (got,) = weft.Session(use_env_path=False, threads=threads).compile(weft.import_litert(path)).run([xv])
        np.testing.assert_array_equal(got, np.transpose(xv, perm))


@pytest.mark.parametrize("c", [16, 96, 200])
def test_int8_depthwise_with_run_time_filter(tmp_path, c):
    """A depthwise filter and bias fed at run time (laid out per run, not at compile time): two runs
    of one compiled model with different filters, each equal to LiteRT's."""
    rng = np.random.default_rng(c)
    m = Model()
    x = m.tensor("x", [1, 6, 5, c], "int8", scale=0.05, zero_point=-7)
    tw = m.tensor("w", [1, 3, 3, c], "int8", scale=[0.01] * c, zero_point=[0] * c, quantized_dimension=3)
    tb = m.tensor("b", [c], "int32", scale=[0.0005] * c, zero_point=[0] * c)
    y = m.tensor("y", [1, 6, 5, c], "int8", scale=0.06, zero_point=2)
    m.builtin(4, [x, tw, tb], [y], options=(2, [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1), (3, "int32", 1), (4, "byte", NONE)]))
    path = str(tmp_path / "dwin.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x, tw, tb], [y]))
    model = weft.Session(use_env_path=False).compile(weft.import_litert(path))
    xv = rng.integers(-128, 128, (1, 6, 5, c)).astype(np.int8)
    for trial in range(2):
        wv = rng.integers(-127, 128, (1, 3, 3, c)).astype(np.int8)
        bv = rng.integers(-2000, 2000, c).astype(np.int32)
        want = reference(path, [xv, wv, bv])
        assert len(np.unique(want)) > 2
        np.testing.assert_array_equal(model.run([xv, wv, bv])[0], want, err_msg=f"filter #{trial}")


@pytest.mark.parametrize("kind", ["conv", "depthwise", "fully_connected"])
def test_bias_of_the_wrong_length_is_an_error(tmp_path, kind):
    """A bias with fewer values than output channels (LiteRT refuses such a model) is an error that
    names it, at compile time, rather than a read past its end."""
    m = Model()
    if kind == "fully_connected":
        x = m.tensor("x", [2, 10], "int8", scale=0.04, zero_point=0)
        w = m.tensor("w", [7, 10], "int8", data=np.ones((7, 10), np.int8), scale=0.01)
        b = m.tensor("b", [3], "int32", data=np.zeros(3, np.int32), scale=0.0004)
        y = m.tensor("y", [2, 7], "int8", scale=0.5, zero_point=0)
        m.builtin(9, [x, w, b], [y], options=(8, [(0, "byte", NONE)]))
    elif kind == "conv":
        x = m.tensor("x", [1, 4, 4, 3], "int8", scale=0.05, zero_point=0)
        w = m.tensor("w", [16, 3, 3, 3], "int8", data=np.ones((16, 3, 3, 3), np.int8), scale=0.01)
        b = m.tensor("b", [3], "int32", data=np.zeros(3, np.int32), scale=0.0005)
        y = m.tensor("y", [1, 4, 4, 16], "int8", scale=0.5, zero_point=0)
        m.builtin(3, [x, w, b], [y], options=(1, [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1), (3, "byte", NONE)]))
    else:
        x = m.tensor("x", [1, 4, 4, 32], "int8", scale=0.05, zero_point=0)
        w = m.tensor("w", [1, 3, 3, 32], "int8", data=np.ones((1, 3, 3, 32), np.int8), scale=0.01)
        b = m.tensor("b", [31], "int32", data=np.zeros(31, np.int32), scale=0.0005)
        y = m.tensor("y", [1, 4, 4, 32], "int8", scale=0.5, zero_point=0)
        m.builtin(4, [x, w, b], [y], options=(2, [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1), (3, "int32", 1), (4, "byte", NONE)]))
    path = str(tmp_path / "bias.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [y]))
    with pytest.raises(ValueError, match="bias .* values for .* output channels"):
        weft.Session(use_env_path=False).compile(weft.import_litert(path))


@pytest.mark.parametrize("zp", [200, -300, -129])
@pytest.mark.parametrize("act", [RELU, RELU6])
@pytest.mark.parametrize("kind", ["conv", "depthwise"])
def test_output_zero_point_outside_int8(tmp_path, kind, act, zp):
    """An output zero point outside int8 with a fused activation: the reference clamps in int32 to a
    range that leaves int8, then casts (wrapping); the vector paths must do the same."""
    rng = np.random.default_rng(abs(zp) + act)
    c = 32
    m = Model()
    x = m.tensor("x", [1, 5, 6, c], "int8", scale=0.05, zero_point=1)
    if kind == "conv":
        wv = rng.integers(-127, 128, (24, 3, 3, c)).astype(np.int8)
        oc, code, opt = 24, 3, (1, [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1), (3, "byte", act)])
        qdim = 0
    else:
        wv = rng.integers(-127, 128, (1, 3, 3, c)).astype(np.int8)
        oc, code, opt = c, 4, (2, [(0, "byte", SAME), (1, "int32", 1), (2, "int32", 1), (3, "int32", 1), (4, "byte", act)])
        qdim = 3
    w_scales = list(rng.uniform(0.002, 0.02, oc))
    tw = m.tensor("w", wv.shape, "int8", data=wv, scale=w_scales, zero_point=[0] * oc, quantized_dimension=qdim)
    tb = m.tensor("b", [oc], "int32", data=rng.integers(-3000, 3000, oc).astype(np.int32), scale=[0.05 * s for s in w_scales],
                  zero_point=[0] * oc)
    y = m.tensor("y", [1, 5, 6, oc], "int8", scale=0.03, zero_point=zp)
    m.builtin(code, [x, tw, tb], [y], options=opt)
    path = str(tmp_path / "zp.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [y]))
    xv = rng.integers(-128, 128, (1, 5, 6, c)).astype(np.int8)
    np.testing.assert_array_equal(weft_run(path, [xv]), reference(path, [xv]))
