"""Resize with antialias=1 (opset 18): downsampling through a linear or cubic filter stretched by
1 / scale, against the onnx package's reference evaluator and against PyTorch's antialiased
interpolation (the same filter: half_pixel coordinates, cubic coefficient -0.5, taps outside the
image excluded)."""
import os
import tempfile

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402


def resize_model(x_shape, sizes=None, scales=None, **attrs):
    inits = []
    names = ["x", ""]
    if scales is not None:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        names.append("scales")
    else:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        names += ["", "sizes"]
    node = helper.make_node("Resize", names, ["y"], antialias=1, **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def run_weft(m, x):
    path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    onnx.save(m, path)
    return weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("ctm", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("how", [{"scales": [1, 1, 0.6, 0.35]}, {"sizes": [1, 2, 3, 5]}, {"scales": [1, 1, 1.5, 0.5]}])
def test_antialias_against_the_reference(mode, ctm, how):
    rng = np.random.default_rng(len(mode) + len(ctm))
    x = rng.standard_normal((1, 2, 7, 11)).astype(np.float32)
    m = resize_model(x.shape, mode=mode, coordinate_transformation_mode=ctm, **how)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_allclose(run_weft(m, x), want, rtol=1e-5, atol=1e-5)


def test_antialias_exclude_outside():
    x = np.random.default_rng(5).standard_normal((1, 1, 9, 8)).astype(np.float32)
    m = resize_model(x.shape, scales=[1, 1, 0.4, 0.7], mode="cubic", exclude_outside=1)
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_allclose(run_weft(m, x), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("size", [(24, 17), (9, 40), (5, 5)])
def test_antialias_against_torch(mode, size):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(size[0]).standard_normal((2, 3, 48, 40)).astype(np.float32)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=size, mode=mode, antialias=True, align_corners=False).numpy()
    m = resize_model(x.shape, sizes=[2, 3, *size], mode="linear" if mode == "bilinear" else "cubic",
                     coordinate_transformation_mode="pytorch_half_pixel", cubic_coeff_a=-0.5,
                     exclude_outside=1)  # taps outside the image dropped and the rest renormalized, as PyTorch does
    np.testing.assert_allclose(run_weft(m, x), want, rtol=1e-4, atol=1e-5)
