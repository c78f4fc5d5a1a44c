"""Small ONNX models for the weft.serve tests, written with onnx.helper (random weights)."""
import numpy as np


def mlp(path, features=16, hidden=32, classes=5, batch="N", seed=0):
    """x [batch, features] -> MatMul, Add, Relu, MatMul, Softmax -> y [batch, classes]; `batch` is a
    dim name (dynamic) or an int (fixed)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((features, hidden)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(hidden).astype(np.float32) * 0.1
    w2 = rng.standard_normal((hidden, classes)).astype(np.float32) * 0.3
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]), helper.make_node("MatMul", ["h2", "w2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, features])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, classes])],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
                               numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def two_inputs(path, batch="N"):
    """a [batch, 4] int32, b [batch, 4] float32 -> s = Cast(a) * b + 1 [batch, 4]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Cast", ["a"], ["af"], to=TensorProto.FLOAT), helper.make_node("Mul", ["af", "b"], ["m"]),
             helper.make_node("Add", ["m", "one"], ["s"])]
    graph = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("a", TensorProto.INT32, [batch, 4]),
                                             helper.make_tensor_value_info("b", TensorProto.FLOAT, [batch, 4])],
                              [helper.make_tensor_value_info("s", TensorProto.FLOAT, [batch, 4])],
                              [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path
