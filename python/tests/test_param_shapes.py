"""Parameter tensors checked before any kernel reads them, and RNN/GRU/LSTM initial states in
layout 1 (batch first), against ONNX Runtime."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                          [helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel()) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def weft_run(m, tmp_path, feeds):
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    compiled = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    return compiled.run([feeds[k] for k in sorted(feeds, key=list(feeds).index)])


@pytest.mark.parametrize("op,gates", [("RNN", 1), ("GRU", 3), ("LSTM", 4)])
def test_batch_first_initial_states_match_onnxruntime(tmp_path, op, gates):
    rng = np.random.default_rng(3)
    seq, batch, inp, hid, dirs = 5, 3, 4, 6, 2
    W = rng.standard_normal((dirs, gates * hid, inp)).astype(np.float32) * 0.5
    R = rng.standard_normal((dirs, gates * hid, hid)).astype(np.float32) * 0.5
    B = rng.standard_normal((dirs, 2 * gates * hid)).astype(np.float32) * 0.5
    x = rng.standard_normal((batch, seq, inp)).astype(np.float32)
    h0 = rng.standard_normal((batch, dirs, hid)).astype(np.float32)
    c0 = rng.standard_normal((batch, dirs, hid)).astype(np.float32)
    ins = ["X", "W", "R", "B", "", "initial_h"] + (["initial_c"] if op == "LSTM" else [])
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    feeds1 = {"X": x, "initial_h": h0, **({"initial_c": c0} if op == "LSTM" else {})}
    m1 = model([helper.make_node(op, ins, outs, hidden_size=hid, direction="bidirectional", layout=1)],
               [(k, list(v.shape)) for k, v in feeds1.items()], outs, [("W", W), ("R", R), ("B", B)])
    got = weft_run(m1, tmp_path, feeds1)
    # The reference: ONNX Runtime on the same layer in layout 0, the data transposed to match.
    feeds0 = {"X": x.transpose(1, 0, 2), "initial_h": h0.transpose(1, 0, 2),
              **({"initial_c": c0.transpose(1, 0, 2)} if op == "LSTM" else {})}
    m0 = model([helper.make_node(op, ins, outs, hidden_size=hid, direction="bidirectional")],
               [(k, list(v.shape)) for k, v in feeds0.items()], outs, [("W", W), ("R", R), ("B", B)])
    ref = ort.InferenceSession(m0.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds0)
    np.testing.assert_allclose(got[0], ref[0].transpose(2, 0, 1, 3), rtol=1e-4, atol=1e-5)  # [seq,dirs,b,h] -> [b,seq,dirs,h]
    for g, r in zip(got[1:], ref[1:]):
        np.testing.assert_allclose(g, r.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)


def compile_error(tmp_path, m):
    path = str(tmp_path / "bad.onnx")
    onnx.save(m, path)
    with pytest.raises((ValueError, RuntimeError)) as e:
        weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    return str(e.value)


def test_short_parameters_are_errors_not_reads_past_the_end(tmp_path):
    f = np.float32
    conv = model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv")], [("x", [1, 2, 5, 5])], ["y"],
                 [("w", np.ones((4, 2, 3, 3), f)), ("b", np.ones(3, f))])
    assert "bias B [3] must be 1-D with one value per output channel (4)" in compile_error(tmp_path, conv)
    convt = model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"])], [("x", [1, 2, 5, 5])], ["y"],
                  [("w", np.ones((2, 4, 3, 3), f)), ("b", np.ones(2, f))])
    assert "bias B [2] must be 1-D with one value per output channel (4)" in compile_error(tmp_path, convt)
    lstm = model([helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], hidden_size=3)], [("x", [2, 1, 4])], ["y"],
                 [("W", np.ones((1, 12, 4), f)), ("R", np.ones((1, 12, 3), f)), ("B", np.ones((1, 12), f))])
    assert "B [1,12] must be [1,24]" in compile_error(tmp_path, lstm)
    gru = model([helper.make_node("GRU", ["x", "W", "R", "", "", "h0"], ["y"], hidden_size=3)], [("x", [2, 2, 4])], ["y"],
                [("W", np.ones((1, 9, 4), f)), ("R", np.ones((1, 9, 3), f)), ("h0", np.ones((1, 1, 3), f))])
    assert "initial_h [1,1,3] must be [1,2,3]" in compile_error(tmp_path, gru)
    ln = model([helper.make_node("LayerNormalization", ["x", "s"], ["y"], axis=-1)], [("x", [2, 8])], ["y"],
               [("s", np.ones(5, f))])
    assert "Scale [5] does not broadcast to X [2,8]" in compile_error(tmp_path, ln)
