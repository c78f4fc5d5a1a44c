"""A Cast (or CastLike) to its input's own type, as exporters emit around softmax: the output may
take the input's bytes (no copy) when nothing later reads the input, and must still be a copy
where something does. Checked against NumPy, for float32 and int64, with the input read again
after the cast and not."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def run(tmp_path, nodes, inputs, outputs, inits, feeds, memory=None):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    path = str(tmp_path / "cast.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    m = weft.Session(threads=1, use_env_path=False).compile(weft.import_onnx(path))
    if memory is not None:
        memory.update(m.memory())
    return m.run([feeds[n] for n, _, _ in m.inputs])


def test_float_cast_between_add_and_softmax(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 16, 16)).astype(np.float32)
    bias = rng.standard_normal((16, 16)).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "bias"], ["s"]), helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Softmax", ["f"], ["y"], axis=-1)]
    y, = run(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(bias, "bias")], {"x": x})
    s = (x + bias).astype(np.float64)
    want = np.exp(s - s.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_same_type_cast_takes_its_inputs_bytes(tmp_path):
    """Add -> Cast(float) -> ReduceMax: with the cast's output in the sum's bytes, the arena
    holds one [2, 4, 16, 16] tensor and the small result, not two of the large ones."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 16, 16)).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "x"], ["s"]), helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("ReduceMax", ["f"], ["y"], axes=[-1], keepdims=0)]
    mem = {}
    y, = run(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [], {"x": x}, mem)
    np.testing.assert_array_equal(y, (x + x).max(-1))
    assert mem["arena_bytes"] < 2 * x.nbytes, mem


@pytest.mark.parametrize("op", ["Cast", "CastLike"])
def test_same_type_cast_keeps_its_input_when_read_again(tmp_path, op):
    """s is read by the cast and again by the Mul after a step that writes the cast's output:
    had the cast's output taken s's bytes, the Mul would read (s + 1)."""
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4) - 7
    like = [numpy_helper.from_array(np.zeros(1, np.int64), "like")] if op == "CastLike" else []
    cast = (helper.make_node("Cast", ["s"], ["c"], to=TensorProto.INT64) if op == "Cast"
            else helper.make_node("CastLike", ["s", "like"], ["c"]))
    nodes = [helper.make_node("Add", ["x", "x"], ["s"]), cast, helper.make_node("Add", ["c", "one"], ["c1"]),
             helper.make_node("Mul", ["c1", "s"], ["y"])]
    inits = [numpy_helper.from_array(np.ones(1, np.int64), "one")] + like
    y, = run(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.INT64, list(x.shape))],
             [helper.make_tensor_value_info("y", TensorProto.INT64, None)], inits, {"x": x})
    np.testing.assert_array_equal(y, (2 * x + 1) * (2 * x))


def test_type_changing_cast_still_converts(tmp_path):
    x = np.array([[-2.7, -0.5, 0.0, 0.49, 3.99]], np.float32)
    nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Cast", ["n"], ["i"], to=TensorProto.INT32),
             helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)]
    y, = run(tmp_path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [], {"x": x})
    np.testing.assert_array_equal(y, np.trunc(-x).astype(np.int32).astype(np.float32))
