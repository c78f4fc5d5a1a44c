"""ONNX If as control flow, against ONNX Runtime: branches that differ in rank chosen by an input's
rank (the pattern PyTorch exports), data-dependent conditions, nested Ifs, and dynamic batch."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def branch(name, nodes, out):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def make_model(nodes, inputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def both(m, tmp_path, feeds, input_shapes=None):
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)[0]
    compiled = weft.Session(use_env_path=False).compile(weft.import_onnx(path, input_shapes))
    got = compiled.run(list(feeds.values()))[0]
    return got, want


def rank_dependent_conv(batch_dim):
    """x is [N, 4, 16] or [4, 16]: add the batch dim only when it is missing, then Conv1d."""
    rank = helper.make_node("Size", ["xs"], ["r"])
    nodes = [
        helper.make_node("Shape", ["x"], ["xs"]), rank,
        helper.make_node("Equal", ["r", "two"], ["is2d"]),
        helper.make_node("If", ["is2d"], ["b"],
                         then_branch=branch("add_batch", [helper.make_node("Unsqueeze", ["x", "zero"], ["tb"])], "tb"),
                         else_branch=branch("keep", [helper.make_node("Identity", ["x"], ["eb"])], "eb")),
        helper.make_node("Conv", ["b", "w"], ["y"], pads=[1, 1]),
    ]
    rng = np.random.default_rng(5)
    inits = [("two", np.array(2, np.int64)), ("zero", np.array([0], np.int64)),
             ("w", rng.standard_normal((8, 4, 3)).astype(np.float32))]
    shape = [batch_dim, 4, 16] if batch_dim is not None else [4, 16]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)], inits)


@pytest.mark.parametrize("batch_dim", [None, 1, "N"])
def test_branches_of_different_rank_chosen_by_the_input_rank(tmp_path, batch_dim):
    rng = np.random.default_rng(6)
    for n in ([None] if batch_dim is None else [1, 3] if batch_dim == "N" else [1]):
        x = rng.standard_normal((4, 16) if n is None else (n, 4, 16)).astype(np.float32)
        got, want = both(rank_dependent_conv(batch_dim), tmp_path, {"x": x})
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def data_dependent(nested):
    """y = sum(x) > 0 ? (x * 2 [then, if nested: x * 2 when max(x) > 1 else x * 3]) : Transpose(x)."""
    inner = helper.make_node(
        "If", ["big"], ["tb"],
        then_branch=branch("double", [helper.make_node("Mul", ["x", "two"], ["d"])], "d"),
        else_branch=branch("triple", [helper.make_node("Mul", ["x", "three"], ["t"])], "t"))
    then_nodes = ([helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0), helper.make_node("Greater", ["mx", "one"], ["big"]), inner]
                  if nested else [helper.make_node("Mul", ["x", "two"], ["tb"])])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["pos"]),
        helper.make_node("If", ["pos"], ["y"], then_branch=branch("then", then_nodes, "tb"),
                         else_branch=branch("else", [helper.make_node("Transpose", ["x"], ["tr"])], "tr")),
    ]
    inits = [("zero", np.array(0, np.float32)), ("one", np.array(1, np.float32)), ("two", np.array(2, np.float32)),
             ("three", np.array(3, np.float32))]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])], inits)


@pytest.mark.parametrize("nested", [False, True])
def test_a_data_dependent_condition_runs_one_branch(tmp_path, nested):
    m = data_dependent(nested)
    for x in (np.abs(np.random.default_rng(7).standard_normal((2, 3))).astype(np.float32) + 0.5,  # sum > 0, max > 1
              np.full((2, 3), 0.1, np.float32),                                                  # sum > 0, max <= 1
              -np.abs(np.random.default_rng(8).standard_normal((2, 3))).astype(np.float32)):     # sum < 0: [3, 2]
        got, want = both(m, tmp_path, {"x": x})
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
