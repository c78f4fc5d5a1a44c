"""InstanceNormalization on float32 against a float64 NumPy recomputation and ONNX Runtime: planes
from 1 to 400,000 elements, data far from zero mean and narrow (where float32 statistics or a
float32 mean subtracted from each value lose digits), 1 and 2 intra-op threads."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def reference(x, scale, bias, eps):
    x64 = x.astype(np.float64)
    axes = tuple(range(2, x.ndim))
    mu = x64.mean(axis=axes, keepdims=True)
    var = ((x64 - mu) ** 2).mean(axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x64 - mu) / np.sqrt(var + eps) * scale.reshape(shape) + bias.reshape(shape)


@pytest.mark.parametrize("shape,offset", [((2, 5, 3000), 0.0), ((1, 64, 3199), 0.0), ((3, 4, 7, 9), 100.0), ((1, 3, 1), 0.0),
                                          ((1, 2, 400000), 1000.0), ((2, 3, 2, 3, 4), -7.0),
                                          ((1, 4, 5000), 1e4), ((1, 2, 777), -3e4)])
@pytest.mark.parametrize("threads", [1, 2])
def test_instance_norm_float32(tmp_path, shape, offset, threads):
    rng = np.random.default_rng(len(shape) * 10 + shape[1])
    c = shape[1]
    scale = rng.uniform(0.5, 2.0, c).astype(np.float32)
    bias = rng.uniform(-1, 1, c).astype(np.float32)
    eps = 1e-5
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=eps)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")])
    path = str(tmp_path / "in.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    spread = 0.01 if abs(offset) >= 1e4 else 3.0  # a plane far from zero and narrow: the hard case
    x = (rng.standard_normal(shape) * spread + offset).astype(np.float32)
    got = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
    want = reference(x, scale, bias, eps)
    # Against the float64 recomputation on the same float32 inputs: as close as float32 output
    # allows, whatever the offset.
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    ort_y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    if abs(offset) < 1e4:  # ONNX Runtime's own float32 statistics lose digits on the narrow far planes
        np.testing.assert_allclose(got, ort_y, rtol=1e-4, atol=1e-4 + abs(offset) * 1e-6)
