"""Models that are wrong in one way each: the import or compile fails with a message that names
the problem, never a crash or a silently accepted model."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def save(tmp_path, nodes, inputs, inits=(), opset=17, ir=8):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    return path


def error_of(path):
    with pytest.raises((ValueError, RuntimeError)) as e:
        weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    return str(e.value)


F = TensorProto.FLOAT


@pytest.mark.parametrize("opset", [0, -3, 99])
def test_opsets_outside_the_known_range(tmp_path, opset):
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], opset=opset)
    assert f"the model imports ONNX opset {opset}; this importer reads opsets 1 to" in error_of(path)


def test_ir_version_zero(tmp_path):
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], ir=0)
    assert "ir_version is 0" in error_of(path)


@pytest.mark.parametrize("start,limit,delta", [(0, np.inf, 1), (np.nan, 4, 1), (0, 4, -np.inf), (0, 1e30, 1e-30)])
def test_range_with_non_finite_or_huge_bounds(tmp_path, start, limit, delta):
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("a", start), ("b", limit), ("c", delta))]
    path = save(tmp_path, [helper.make_node("Range", ["a", "b", "c"], ["y"])], [], inits)
    msg = error_of(path)
    assert "Range" in msg and ("must be finite" in msg or "elements" in msg), msg


def test_reflect_padding_wider_than_the_dim(tmp_path):
    path = save(tmp_path, [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", F, [1, 3])],
                [numpy_helper.from_array(np.array([0, 3, 0, 1], np.int64), "p")])
    assert "reflect padding (3, 1) of dim 1 must be smaller than the dim (3)" in error_of(path)
    # One less is fine, and matches NumPy's reflection.
    ok = save(tmp_path, [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", F, [1, 3])],
              [numpy_helper.from_array(np.array([0, 2, 0, 2], np.int64), "p")])
    x = np.array([[1, 2, 3]], np.float32)
    (y,) = weft.Session(use_env_path=False).compile(weft.import_onnx(ok)).run([x])
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0), (2, 2)), mode="reflect"))
