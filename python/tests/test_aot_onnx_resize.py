"""weft aot on ONNX Resize and ConvTranspose: each small model's C module, built as strict C99,
must reproduce ONNX Runtime's outputs, and Weft's runtime must agree with ONNX Runtime too
(aot_onnx_check.py)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot_onnx_check import check_c_against_runtime, check_onnx_model  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import weft  # noqa: E402

F = TensorProto.FLOAT
ATOL, RTOL = 1e-5, 1e-4


def model(nodes, inputs, outputs, inits=(), opset=19):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def out(rank, t=F):
    # The output with its rank and symbolic dims (Weft and ONNX Runtime infer them).
    return vi("y", [f"y{i}" for i in range(rank)], t)


def rand(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def resize_model(shape, scales=None, sizes=None, roi=None, opset=19, **attrs):
    inits, names = [], ["x", "", "", ""]
    if roi is not None:
        inits.append(numpy_helper.from_array(np.array(roi, np.float32), "roi"))
        names[1] = "roi"
    if scales is not None:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        names[2] = "scales"
    if sizes is not None:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        names[3] = "sizes"
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", names, ["y"], **attrs)
    return model([node], [vi("x", list(shape))], [out(len(shape))], inits, opset)


def check_resize(tmp_path, shape, seed=1, **kw):
    check_onnx_model(tmp_path, resize_model(shape, **kw), {"x": rand(seed, *shape)}, ATOL, RTOL)


# ---- Resize: nearest ----

CTMS_NEAREST = ["half_pixel", "asymmetric", "align_corners", "tf_half_pixel_for_nn", "pytorch_half_pixel", "half_pixel_symmetric"]


NEAREST_UP = [(ctm, nm) for ctm in CTMS_NEAREST for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]]


@pytest.mark.parametrize("ctm,nearest_mode", NEAREST_UP)
def test_resize_nearest_up(tmp_path, ctm, nearest_mode):
    check_resize(tmp_path, (1, 2, 3, 4), scales=[1, 1, 2, 2.5], mode="nearest", nearest_mode=nearest_mode,
                 coordinate_transformation_mode=ctm)


@pytest.mark.parametrize("nearest_mode", ["round_prefer_ceil", "ceil"])
def test_resize_nearest_tf_half_pixel_every_axis(tmp_path, nearest_mode):
    # Every axis resized: Weft and ONNX Runtime agree.
    check_resize(tmp_path, (3, 4), scales=[2, 2.5], mode="nearest", nearest_mode=nearest_mode,
                 coordinate_transformation_mode="tf_half_pixel_for_nn")


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners", "half_pixel_symmetric"])
def test_resize_nearest_down(tmp_path, nearest_mode, ctm):
    check_resize(tmp_path, (1, 3, 8, 6), scales=[1, 1, 0.5, 0.5], mode="nearest", nearest_mode=nearest_mode,
                 coordinate_transformation_mode=ctm)


def test_resize_nearest_every_dim_rank5(tmp_path):
    # N-D: every axis resized, batch and channels too.
    check_resize(tmp_path, (2, 2, 3, 2, 3), scales=[1.5, 2, 1, 2, 0.5], mode="nearest", nearest_mode="floor",
                 coordinate_transformation_mode="asymmetric")


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_resize_nearest_low_rank(tmp_path, rank):
    shape = (3, 4, 5)[:rank]
    scales = [2.0, 0.5, 3.0][:rank]
    check_resize(tmp_path, shape, scales=scales, mode="nearest", coordinate_transformation_mode="half_pixel")


def test_resize_nearest_sizes(tmp_path):
    check_resize(tmp_path, (1, 2, 5, 7), sizes=[1, 2, 9, 4], mode="nearest", coordinate_transformation_mode="half_pixel")


# ---- Resize: linear ----

@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.75]], ids=["up", "down"])
def test_resize_linear(tmp_path, ctm, scales):
    check_resize(tmp_path, (2, 3, 4, 8), scales=scales, mode="linear", coordinate_transformation_mode=ctm)


def test_resize_linear_sizes_fractional(tmp_path):
    # sizes whose ratio to the input is not a simple fraction (the deeplab/lraspp heads' form).
    check_resize(tmp_path, (1, 4, 5, 7), sizes=[1, 4, 17, 23], mode="linear", coordinate_transformation_mode="half_pixel")


def test_resize_linear_3d(tmp_path):
    # Trilinear over the three spatial dims of an NCDHW tensor.
    check_resize(tmp_path, (1, 2, 3, 4, 5), scales=[1, 1, 2, 1.5, 0.6], mode="linear", coordinate_transformation_mode="half_pixel")


def test_resize_linear_1d_axes(tmp_path):
    # axes (opset 18+): only the last dim of a 3-D tensor.
    check_resize(tmp_path, (2, 3, 6), scales=[2.5], axes=[-1], mode="linear", coordinate_transformation_mode="align_corners")


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_resize_linear_keep_aspect_ratio(tmp_path, policy):
    check_resize(tmp_path, (1, 2, 6, 9), sizes=[10, 12], axes=[2, 3], keep_aspect_ratio_policy=policy, mode="linear",
                 coordinate_transformation_mode="half_pixel")


# ---- Resize: cubic ----

@pytest.mark.parametrize("ctm", ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"])
@pytest.mark.parametrize("a,exclude", [(-0.75, 0), (-0.5, 0), (-0.75, 1), (-0.5, 1)])
def test_resize_cubic(tmp_path, ctm, a, exclude):
    check_resize(tmp_path, (1, 2, 5, 6), scales=[1, 1, 2, 1.5], mode="cubic", cubic_coeff_a=a, exclude_outside=exclude,
                 coordinate_transformation_mode=ctm)


def test_resize_cubic_down_sizes(tmp_path):
    check_resize(tmp_path, (1, 3, 9, 10), sizes=[1, 3, 4, 7], mode="cubic", coordinate_transformation_mode="half_pixel")


# ---- Resize: tf_crop_and_resize ----

@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_resize_tf_crop_and_resize(tmp_path, mode):
    # The roi reaches outside the input, so some outputs take extrapolation_value. (No source
    # coordinate falls on a .5 tie, where float and double roi arithmetic round differently.)
    roi = [0, 0, -0.15, 0.1, 1, 1, 0.85, 1.3]
    check_resize(tmp_path, (1, 2, 6, 5), roi=roi, sizes=[1, 2, 7, 8], mode=mode, extrapolation_value=-3.5,
                 coordinate_transformation_mode="tf_crop_and_resize")


def test_resize_tf_crop_and_resize_axes(tmp_path):
    check_resize(tmp_path, (2, 5, 6), roi=[0.25, 0.1, 0.75, 0.9], scales=[1.6, 1.5], axes=[1, 2], mode="linear",
                 coordinate_transformation_mode="tf_crop_and_resize")


def test_resize_opset13_scales(tmp_path):
    # The common exported form: an empty roi and constant scales (opset 13).
    check_resize(tmp_path, (1, 3, 4, 4), roi=[], scales=[1, 1, 2, 2], opset=13, mode="nearest",
                 coordinate_transformation_mode="asymmetric", nearest_mode="floor")


def test_resize_two_in_a_row(tmp_path):
    # One module with two Resize nodes shares the helper.
    inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s1"),
             numpy_helper.from_array(np.array([1, 2, 5, 3], np.int64), "s2")]
    nodes = [helper.make_node("Resize", ["x", "", "s1"], ["t"], mode="linear"),
             helper.make_node("Resize", ["t", "", "", "s2"], ["y"], mode="cubic")]
    m = model(nodes, [vi("x", [1, 2, 3, 4])], [out(4)], inits)
    check_onnx_model(tmp_path, m, {"x": rand(3, 1, 2, 3, 4)}, ATOL, RTOL)


def test_resize_refuses_wider_integer_input(tmp_path):
    # Weft's runtime resizes every integer type; the generated C takes float32 and 8-bit and says so.
    s = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    m = model([node], [vi("x", [1, 1, 2, 2], TensorProto.INT32)], [out(4, TensorProto.INT32)], [s])
    path = str(tmp_path / "i32.onnx")
    onnx.save(m, path)
    with pytest.raises(Exception, match="float32, uint8 and int8"):
        weft.generate_c(path, tmp_path / "i32_c", prefix="i32")


# ---- ConvTranspose ----

def conv_t_model(x_shape, w_shape, bias=True, w_input=False, seed=5, **attrs):
    w = rand(seed, *w_shape)
    inits = [] if w_input else [numpy_helper.from_array(w, "w")]
    names = ["x", "w"]
    if bias:
        m_out = w_shape[1] * attrs.get("group", 1)
        inits.append(numpy_helper.from_array(rand(seed + 1, m_out), "b"))
        names.append("b")
    ins = [vi("x", list(x_shape))] + ([vi("w", list(w_shape))] if w_input else [])
    m = model([helper.make_node("ConvTranspose", names, ["y"], **attrs)], ins, [out(len(x_shape))], inits, opset=17)
    feeds = {"x": rand(seed + 2, *x_shape)}
    if w_input:
        feeds["w"] = w
    return m, feeds


CONV_T_2D = {
    "plain": ((1, 3, 4, 5), (3, 2, 3, 3), {}),
    "stride2_pad_outpad": ((2, 4, 4, 4), (4, 3, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])),
    "dcgan": ((1, 4, 3, 3), (4, 2, 4, 4), dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "stride3_asym_pads": ((1, 2, 3, 4), (2, 3, 3, 2), dict(strides=[3, 2], pads=[0, 1, 2, 0])),
    "dilation": ((1, 2, 4, 4), (2, 2, 3, 2), dict(strides=[2, 1], dilations=[2, 3], pads=[1, 0, 0, 2])),
    "dilation_outpad": ((1, 2, 3, 3), (2, 2, 2, 2), dict(strides=[2, 2], dilations=[3, 2], output_padding=[1, 1])),
    "group2": ((1, 4, 3, 4), (4, 3, 3, 3), dict(group=2, strides=[2, 2], pads=[1, 0, 1, 0])),
    "depthwise": ((1, 3, 4, 4), (3, 1, 3, 3), dict(group=3, strides=[2, 2], pads=[1, 1, 1, 1])),
    "same_upper": ((1, 2, 3, 5), (2, 3, 4, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    "same_lower": ((1, 2, 3, 5), (2, 3, 4, 3), dict(strides=[2, 2], auto_pad="SAME_LOWER")),
    "valid": ((1, 2, 3, 3), (2, 2, 3, 3), dict(strides=[2, 1], auto_pad="VALID")),
    "output_shape": ((1, 2, 3, 3), (2, 2, 3, 3), dict(strides=[2, 2], output_shape=[8, 7])),
    "output_shape_small": ((1, 2, 3, 3), (2, 2, 3, 3), dict(strides=[2, 2], output_shape=[6, 5])),
    "output_shape_same_upper": ((1, 2, 3, 3), (2, 2, 3, 3), dict(strides=[2, 2], output_shape=[6, 5], auto_pad="SAME_UPPER")),
    "kernel_eq_stride": ((1, 4, 3, 3), (4, 2, 2, 2), dict(strides=[2, 2])),
}


@pytest.mark.parametrize("name", list(CONV_T_2D))
def test_conv_transpose_2d(tmp_path, name):
    xs, ws, attrs = CONV_T_2D[name]
    m, feeds = conv_t_model(xs, ws, **attrs)
    check_onnx_model(tmp_path, m, feeds, ATOL, RTOL)


def test_conv_transpose_2d_no_bias(tmp_path):
    m, feeds = conv_t_model((1, 3, 4, 4), (3, 2, 3, 3), bias=False, strides=[2, 2], pads=[1, 1, 1, 1])
    check_onnx_model(tmp_path, m, feeds, ATOL, RTOL)


def test_conv_transpose_weights_as_input(tmp_path):
    # Weights not constant: the runtime's reference loops, the C reads them from the arena.
    m, feeds = conv_t_model((1, 2, 3, 3), (2, 3, 3, 3), bias=False, w_input=True, strides=[2, 2], pads=[0, 1, 1, 0])
    check_onnx_model(tmp_path, m, feeds, ATOL, RTOL)


@pytest.mark.parametrize("attrs", [dict(), dict(strides=[3], pads=[1, 2], output_padding=[1]),
                                   dict(strides=[2], dilations=[2], group=2), dict(strides=[2], auto_pad="SAME_UPPER")],
                         ids=["plain", "stride_pads", "dilation_group", "same_upper"])
def test_conv_transpose_1d(tmp_path, attrs):
    m, feeds = conv_t_model((2, 4, 7), (4, 3, 3), **attrs)
    check_onnx_model(tmp_path, m, feeds, ATOL, RTOL)


def test_conv_transpose_3d(tmp_path):
    m, feeds = conv_t_model((1, 2, 3, 3, 2), (2, 2, 2, 3, 2), strides=[2, 1, 2], pads=[1, 1, 0, 0, 1, 1], output_padding=[1, 0, 0])
    check_onnx_model(tmp_path, m, feeds, ATOL, RTOL)


def test_resize_sizes_from_shape(tmp_path):
    # sizes computed in the graph (the exported deeplab/lraspp heads' form): Shape of another
    # input, sliced and concatenated with the batch and channels.
    nodes = [helper.make_node("Shape", ["ref"], ["shp"]),
             helper.make_node("Slice", ["shp", "two", "four"], ["hw"]),
             helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
             helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", coordinate_transformation_mode="half_pixel")]
    inits = [numpy_helper.from_array(np.array([2], np.int64), "two"), numpy_helper.from_array(np.array([4], np.int64), "four"),
             numpy_helper.from_array(np.array([1, 3], np.int64), "nc")]
    m = model(nodes, [vi("x", [1, 3, 4, 5]), vi("ref", [1, 1, 9, 11])], [out(4)], inits)
    check_onnx_model(tmp_path, m, {"x": rand(4, 1, 3, 4, 5), "ref": rand(5, 1, 1, 9, 11)}, ATOL, RTOL)


def test_upsample_opset9(tmp_path):
    # Upsample (opset 9), which the importer rewrites to Resize.
    s = numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales")
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
    m = model([node], [vi("x", [1, 2, 3, 4])], [out(4)], [s], opset=9)
    check_onnx_model(tmp_path, m, {"x": rand(6, 1, 2, 3, 4)}, ATOL, RTOL)


# ---- Resize on 8-bit tensors (what QDQ and QOperator models resize): the runtime's bytes ----

EIGHT_BIT = [  # shape, Resize inputs and attributes
    ((1, 3, 5, 7), dict(scales=[1, 1, 2, 2], mode="linear")),                                      # the separable path
    ((2, 2, 6, 5), dict(scales=[1, 1, 0.5, 1.6], mode="linear", coordinate_transformation_mode="align_corners")),
    ((1, 2, 4, 4), dict(scales=[1, 1, 2.5, 2.5], mode="cubic")),                                   # overshoots: saturates
    ((1, 3, 5, 7), dict(scales=[1, 1, 2, 3], mode="nearest")),                                     # a copy by index
    ((2, 4, 5, 3), dict(scales=[1, 2, 1.5, 1], mode="linear")),                                    # channels last: the general loop
    ((1, 1, 6, 6), dict(sizes=[1, 1, 4, 5], roi=[0, 0, 0.2, 0.1, 1, 1, 1.3, 0.9], mode="linear",
                        coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=300.0)),  # extrapolated: saturates
]


@pytest.mark.parametrize("qtype", [np.uint8, np.int8])
@pytest.mark.parametrize("case", range(len(EIGHT_BIT)))
def test_resize_eight_bit_gives_the_runtime_bytes(tmp_path, qtype, case):
    """int8 and uint8 Resize in the C module: the bytes of Weft's runtime (its separable path where
    only the last two dims change, its general loop otherwise), on random bytes over the whole range."""
    shape, kw = EIGHT_BIT[case]
    m = resize_model(shape, **kw)
    t = TensorProto.UINT8 if qtype == np.uint8 else TensorProto.INT8
    m.graph.input[0].type.tensor_type.elem_type = t
    m.graph.output[0].type.tensor_type.elem_type = t
    path = str(tmp_path / "r8.onnx")
    onnx.save(m, path)
    info = np.iinfo(qtype)
    x = np.random.default_rng(case).integers(info.min, info.max + 1, shape).astype(qtype)
    y = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
    # the runtime against a float64 re-computation: ONNX Runtime's float Resize of the same values,
    # rounded half away from zero and saturated (one step apart at most, where float32 passes round
    # a sum that lies on .5)
    fm = resize_model(shape, **kw)
    fpath = str(tmp_path / "rf.onnx")
    onnx.save(fm, fpath)
    ort = pytest.importorskip("onnxruntime")
    ref = ort.InferenceSession(fpath, providers=["CPUExecutionProvider"]).run(None, {"x": x.astype(np.float32)})[0]
    ref = np.clip(np.sign(ref) * np.floor(np.abs(ref.astype(np.float64)) + 0.5), info.min, info.max)
    assert y.shape == ref.shape and np.abs(y.astype(np.float64) - ref).max() <= 1
    check_c_against_runtime(tmp_path, path, {"x": x})
