"""float32 Resize of the last two dims (the separable fast path) against ONNX Runtime: nearest
with each nearest_mode, linear and cubic with the coordinate transformations exported models use,
up- and downsampling, rank 3 and 4, scales and sizes."""
import itertools

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

CTMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
CASES = [("nearest", ctm, nm) for ctm in CTMS for nm in ("round_prefer_floor", "floor", "ceil")] + \
        [(mode, ctm, None) for mode in ("linear", "cubic") for ctm in CTMS]


@pytest.mark.parametrize("mode,ctm,nm", CASES)
def test_resize_matches_onnx_runtime(tmp_path, mode, ctm, nm):
    rng = np.random.default_rng(abs(hash((mode, ctm, nm))) % 1000)
    for xs, target in [((2, 3, 7, 9), (2, 3, 14, 18)), ((1, 4, 10, 6), (1, 4, 5, 13)), ((2, 5, 11), (2, 5, 4)), ((1, 2, 1, 8), (1, 2, 3, 16))]:
        if mode == "cubic" and len(xs) != 4:
            continue  # ONNX Runtime runs cubic on 2-D and 4-D inputs only
        attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
        if nm:
            attrs["nearest_mode"] = nm
        for use_scales in (False, True):
            if use_scales and ctm == "align_corners":
                continue
            if use_scales:
                scales = np.array([t / s for s, t in zip(xs, target)], np.float32)
                init, ins = numpy_helper.from_array(scales, "s"), ["x", "", "s"]
            else:
                init, ins = numpy_helper.from_array(np.array(target, np.int64), "sz"), ["x", "", "", "sz"]
            g = helper.make_graph([helper.make_node("Resize", ins, ["y"], **attrs)], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [init])
            path = str(tmp_path / "r.onnx")
            onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), path)
            x = rng.standard_normal(xs).astype(np.float32)
            want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
            got = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
            assert got.shape == want.shape, (xs, target, use_scales)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5, err_msg=f"{xs} -> {target} scales={use_scales}")


@pytest.mark.parametrize("qtype", [np.uint8, np.int8])
@pytest.mark.parametrize("mode,ctm", [("linear", ctm) for ctm in CTMS] + [("cubic", "half_pixel"), ("nearest", "asymmetric")])
def test_eight_bit_resize_rounds_the_float_result(tmp_path, qtype, mode, ctm):
    """int8 and uint8 Resize of the last two dims (the quantized models' upsampling): the float
    resize of the same values (ONNX Runtime's, on float32 input) rounded half away from zero and
    saturated, except where that float result lies within 4e-3 of a half (either rounding is then
    the float arithmetic's)."""
    rng = np.random.default_rng(7)
    lo, hi = (-128, 127) if qtype == np.int8 else (0, 255)
    for xs, target in [((1, 21, 33, 33), (1, 21, 130, 130)), ((2, 3, 7, 9), (2, 3, 14, 18)), ((1, 4, 10, 6), (1, 4, 5, 13))]:
        g = helper.make_graph([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode=mode, coordinate_transformation_mode=ctm)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8 if qtype == np.uint8 else TensorProto.INT8, list(xs))],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8 if qtype == np.uint8 else TensorProto.INT8, None)],
                              [numpy_helper.from_array(np.array(target, np.int64), "sz")])
        path = str(tmp_path / "r8.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), path)
        gf = helper.make_graph([helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode=mode, coordinate_transformation_mode=ctm)], "g",
                               [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
                               [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(np.array(target, np.int64), "sz")])
        pathf = str(tmp_path / "rf.onnx")
        onnx.save(helper.make_model(gf, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), pathf)
        x = rng.integers(lo, hi + 1, xs).astype(qtype)
        ref = ort.InferenceSession(pathf, providers=["CPUExecutionProvider"]).run(None, {"x": x.astype(np.float32)})[0].astype(np.float64)
        want = np.clip(np.sign(ref) * np.floor(np.abs(ref) + 0.5), lo, hi)
        got = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
        assert got.dtype == qtype and got.shape == want.shape
        near_half = np.abs(np.abs(ref - np.trunc(ref)) - 0.5) < 4e-3  # the float test's tolerance at this magnitude
        assert np.array_equal(got[~near_half], want[~near_half]), (xs, target)
        assert np.abs(got.astype(np.int64) - want)[near_half].max(initial=0) <= 1
        if mode == "cubic":
            assert (got == hi).any() or (got == lo).any()  # overshoot saturates
