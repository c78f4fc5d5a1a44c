"""LSTM, GRU and RNN with an input size of 0: the input projection is an empty sum, so each
layer runs on its biases and initial states alone. The reference is the same layer with an
input size of 1 fed zeros (checked against ONNX Runtime in test_recurrent.py), and ONNX Runtime
itself for RNN where it is installed (its GRU and LSTM abort on such a layer)."""
import os
import tempfile

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def model(op, inputs, hidden, dirs, rng):
    g = GATES[op]
    r = rng.standard_normal((dirs, g * hidden, hidden)).astype(np.float32) * 0.5
    b = rng.standard_normal((dirs, 2 * g * hidden)).astype(np.float32)
    h0 = rng.standard_normal((dirs, 2, hidden)).astype(np.float32)
    c0 = rng.standard_normal((dirs, 2, hidden)).astype(np.float32)
    w = rng.standard_normal((dirs, g * hidden, inputs)).astype(np.float32)  # drawn last: the rest match across sizes
    inits = [numpy_helper.from_array(v, n) for v, n in ((w, "W"), (r, "R"), (b, "B"), (h0, "h0"))]
    ins = ["x", "W", "R", "B", "", "h0"]
    if op == "LSTM":
        inits.append(numpy_helper.from_array(c0, "c0"))
        ins.append("c0")
    direction = "bidirectional" if dirs == 2 else "forward"
    node = helper.make_node(op, ins, ["Y", "Y_h"], hidden_size=hidden, direction=direction)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, inputs])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None)], initializer=inits)
    path = os.path.join(tempfile.mkdtemp(), f"{op}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    return path


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("dirs", [1, 2])
def test_input_size_zero_runs_on_biases_and_states(op, dirs):
    session = weft.Session(use_env_path=False)
    # Same seed: the same R, B and initial states; W differs only in its (absent or zero-fed) column.
    empty = model(op, 0, 5, dirs, np.random.default_rng(7))
    one = model(op, 1, 5, dirs, np.random.default_rng(7))
    got = session.compile(weft.import_onnx(empty)).run([np.zeros((4, 2, 0), np.float32)])
    want = session.compile(weft.import_onnx(one)).run([np.zeros((4, 2, 1), np.float32)])
    assert np.abs(want[0]).max() > 0.1  # the biases and states drive the outputs
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_input_size_zero_rnn_against_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    path = model("RNN", 0, 6, 2, np.random.default_rng(3))
    x = np.zeros((4, 2, 0), np.float32)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
