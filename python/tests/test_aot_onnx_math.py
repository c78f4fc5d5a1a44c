"""weft aot on BitShift, Shrink, Det, MeanVarianceNormalization and MaxUnpool: each small model's
C module, built as strict C99, reproduces ONNX Runtime's outputs (aot_onnx_check.py), or Weft's
runtime byte for byte where ONNX Runtime leaves the result undefined or has no kernel."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot_onnx_check import check_c_against_runtime, check_onnx_model  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

RNG = np.random.default_rng(23)


def model(nodes, inputs, outputs, opset=18):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, arr_or_type, shape=None):
    if isinstance(arr_or_type, np.ndarray):
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr_or_type.dtype), list(arr_or_type.shape))
    return helper.make_tensor_value_info(name, arr_or_type, shape)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(tmp_path, dtype, direction):
    bits = np.dtype(dtype).itemsize * 8
    x = RNG.integers(0, np.iinfo(dtype).max, (3, 4, 5), dtype=dtype, endpoint=True)
    s = RNG.integers(0, bits, (4, 1), dtype=dtype)  # broadcast; shifts below the width (defined in ONNX Runtime)
    m = model([helper.make_node("BitShift", ["x", "s"], ["y"], direction=direction)], [vi("x", x), vi("s", s)],
              [vi("y", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), [3, 4, 5])])
    check_onnx_model(tmp_path, m, {"x": x, "s": s}, atol=0, rtol=0)


def test_bitshift_by_the_width_or_more_gives_zero_as_the_runtime(tmp_path):
    x = np.array([1, 255, 7, 128], np.uint8)
    s = np.array([8, 9, 200, 7], np.uint8)
    path = str(tmp_path / "shift.onnx")
    onnx.save(model([helper.make_node("BitShift", ["x", "s"], ["y"], direction="LEFT")], [vi("x", x), vi("s", s)],
                    [vi("y", TensorProto.UINT8, [4])]), path)
    check_c_against_runtime(tmp_path, path, {"x": x, "s": s})


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int16, np.uint8])  # ONNX Runtime computes in float: exact to 16 bits
def test_shrink(tmp_path, dtype):
    if np.issubdtype(dtype, np.integer):
        x = RNG.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (4, 6), dtype=dtype, endpoint=True)
        attrs = {"lambd": 1.5, "bias": 2.0}
    else:
        x = RNG.standard_normal((4, 6)).astype(dtype)
        attrs = {"lambd": 0.4, "bias": 0.25}
    m = model([helper.make_node("Shrink", ["x"], ["y"], **attrs)], [vi("x", x)], [vi("y", helper.np_dtype_to_tensor_dtype(x.dtype), [4, 6])])
    check_onnx_model(tmp_path, m, {"x": x})


@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 4, 4), (1, 1), (5, 6, 6)])
def test_det(tmp_path, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    if len(shape) == 4:
        x[0, 1] = 0  # singular
        x[1, 2, 0] = x[1, 2, 3]  # two equal rows
    m = model([helper.make_node("Det", ["x"], ["y"])], [vi("x", x)], [vi("y", TensorProto.FLOAT, list(shape[:-2]))])
    check_onnx_model(tmp_path, m, {"x": x}, atol=1e-5, rtol=1e-4)


def test_det_double_and_nan_as_the_runtime(tmp_path):
    x = RNG.standard_normal((3, 4, 4))
    x[2, 1, 1] = np.nan
    path = str(tmp_path / "det.onnx")
    onnx.save(model([helper.make_node("Det", ["x"], ["y"])], [vi("x", x)], [vi("y", TensorProto.DOUBLE, [3])]), path)
    check_c_against_runtime(tmp_path, path, {"x": x})


@pytest.mark.parametrize("shape,axes", [((2, 3, 4, 5), None), ((2, 3, 4, 5), [1]), ((3, 7), [0, 1]), ((2, 3, 4), [-1])])
def test_mean_variance_normalization(tmp_path, shape, axes):
    x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
    attrs = {} if axes is None else {"axes": axes}
    m = model([helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs)], [vi("x", x)], [vi("y", TensorProto.FLOAT, list(shape))])
    check_onnx_model(tmp_path, m, {"x": x}, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32])  # ONNX Runtime's MaxUnpool is float32 only
def test_max_unpool_restores_pooled_maxima(tmp_path, dtype):
    # MaxPool's output and Indices (flat positions in the whole tensor), as numpy computes them
    x = RNG.standard_normal((2, 3, 6, 8)).astype(dtype)
    win = x.reshape(2, 3, 3, 2, 4, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 3, 4, 4)
    arg = win.argmax(axis=-1)
    p = np.take_along_axis(win, arg[..., None], axis=-1)[..., 0]
    n, c, h, w = np.meshgrid(np.arange(2), np.arange(3), np.arange(3), np.arange(4), indexing="ij")
    idx = ((n * 3 + c) * 6 + h * 2 + arg // 2) * 8 + w * 2 + arg % 2
    m = model([helper.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [vi("p", p), vi("i", idx.astype(np.int64))],
              [vi("y", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), [2, 3, 6, 8])])
    want = check_onnx_model(tmp_path, m, {"p": p, "i": idx.astype(np.int64)}, atol=0, rtol=0)[0]
    np.testing.assert_array_equal(want[want != 0], p.ravel()[np.argsort(idx.ravel())])  # the reference itself


def test_shrink_wide_integers_as_the_runtime(tmp_path):
    # the runtime computes in double and clamps to the type's range; the C must agree to the bit
    for dtype in (np.int32, np.int64, np.uint64):
        x = RNG.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (5, 7), dtype=dtype, endpoint=True)
        x.flat[:4] = [np.iinfo(dtype).min, np.iinfo(dtype).max, 0, 1]
        path = str(tmp_path / f"shrink_{np.dtype(dtype).name}.onnx")
        onnx.save(model([helper.make_node("Shrink", ["x"], ["y"], lambd=2.5, bias=-3.0)], [vi("x", x)],
                        [vi("y", helper.np_dtype_to_tensor_dtype(x.dtype), [5, 7])]), path)
        check_c_against_runtime(tmp_path, path, {"x": x}, name=f"s_{np.dtype(dtype).name}")


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("reduction,ignore,weighted,shape", [("mean", None, False, (4, 5)), ("sum", 2, True, (3, 4, 6)),
                                                             ("none", -1, True, (2, 3, 4, 2)), ("mean", 1, True, (2, 4, 3))])
def test_losses(tmp_path, op, reduction, ignore, weighted, shape):
    n, c = shape[0], shape[1]
    x = RNG.standard_normal(shape).astype(np.float32)
    t = RNG.integers(0, c, (n,) + shape[2:]).astype(np.int64)
    attrs = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
        t.flat[::3] = ignore
    inputs, feeds = [vi("x", x), vi("t", t)], {"x": x, "t": t}
    names = ["x", "t"]
    if weighted:
        w = RNG.uniform(0.2, 2.0, c).astype(np.float32)
        inputs.append(vi("w", w))
        feeds["w"] = w
        names.append("w")
    outs = ["loss"] + (["log_prob"] if op == "SoftmaxCrossEntropyLoss" else [])
    loss_shape = [n] + list(shape[2:]) if reduction == "none" else []
    out_vi = [vi("loss", TensorProto.FLOAT, loss_shape)] + ([vi("log_prob", TensorProto.FLOAT, list(shape))] if len(outs) > 1 else [])
    m = model([helper.make_node(op, names, outs, **attrs)], inputs, out_vi)
    check_onnx_model(tmp_path, m, feeds, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode,ctm,sampling,opset", [("avg", "half_pixel", 2, 16), ("max", "half_pixel", 0, 16),
                                                     ("avg", "output_half_pixel", 0, 16), ("avg", None, 0, 10)])
def test_roi_align(tmp_path, mode, ctm, sampling, opset):
    x = RNG.standard_normal((2, 3, 10, 12)).astype(np.float32)
    rois = np.array([[0.5, 0.5, 6.0, 4.0], [1.0, 2.0, 11.5, 9.5], [-2.0, -1.0, 3.0, 12.0], [4.0, 4.0, 4.0, 7.0]], np.float32)
    bi = np.array([0, 1, 1, 0], np.int64)
    attrs = {"mode": mode, "output_height": 3, "output_width": 4, "sampling_ratio": sampling, "spatial_scale": 0.9}
    if ctm:
        attrs["coordinate_transformation_mode"] = ctm
    m = model([helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], **attrs)], [vi("x", x), vi("rois", rois), vi("bi", bi)],
              [vi("y", TensorProto.FLOAT, [4, 3, 3, 4])], opset=opset)
    check_onnx_model(tmp_path, m, {"x": x, "rois": rois, "bi": bi}, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_double_int32_indices_as_the_runtime(tmp_path, mode):
    x = RNG.standard_normal((3, 4, 7, 9))
    rois = RNG.uniform(-2, 10, (6, 4))
    rois[:, 2:] += rois[:, :2] * 0.5
    bi = np.array([0, 2, 1, 1, 0, 2], np.int32)
    path = str(tmp_path / "roi.onnx")
    onnx.save(model([helper.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], mode=mode, output_height=2, output_width=5)],
                    [vi("x", x), vi("rois", rois), vi("bi", bi)], [vi("y", TensorProto.DOUBLE, [6, 4, 2, 5])]), path)
    check_c_against_runtime(tmp_path, path, {"x": x, "rois": rois, "bi": bi})
