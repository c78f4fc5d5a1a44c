"""LSTM, GRU and RNN against ONNX Runtime, with the weights as constants (the packed, fused path:
R in panels of hidden units, each step's gates computed right after its product) and as graph
inputs (the unpacked path), on hidden sizes around the panel width (16), batches of 1 to 5,
every direction, sequence_lens, initial states, peepholes, clip, input_forget, linear_before_reset
and non-default activations, at 1 and 2 intra-op threads (bidirectional layers then run one
direction per thread; large unidirectional ones split each step's panels)."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
OUTPUTS = {"LSTM": ["Y", "Y_h", "Y_c"], "GRU": ["Y", "Y_h"], "RNN": ["Y", "Y_h"]}

CASES = [
    # (op, seq, batch, input, hidden, direction, lens, initial states, peepholes, attrs)
    ("LSTM", 5, 1, 7, 16, "forward", None, False, False, {}),
    ("LSTM", 4, 3, 5, 17, "bidirectional", [4, 1, 3], True, False, {}),
    ("LSTM", 6, 2, 3, 40, "reverse", [6, 4], True, True, {}),
    ("LSTM", 3, 4, 8, 128, "forward", None, True, False, {}),
    ("LSTM", 3, 5, 6, 96, "bidirectional", [3, 2, 3, 1, 2], True, True, {}),
    ("LSTM", 3, 2, 4, 5, "forward", None, True, True, {"clip": 0.7}),
    ("LSTM", 4, 2, 4, 6, "forward", [4, 2], True, False, {"input_forget": 1}),
    ("LSTM", 3, 2, 3, 1, "bidirectional", None, True, True, {}),
    ("LSTM", 3, 2, 4, 18, "bidirectional", None, True, True,
     {"activations": ["HardSigmoid", "Softsign", "Relu", "Sigmoid", "Tanh", "Elu"], "activation_alpha": [0.3, 1.1],
      "activation_beta": [0.4]}),
    ("GRU", 5, 1, 7, 16, "forward", None, False, False, {"linear_before_reset": 1}),
    ("GRU", 4, 3, 5, 33, "bidirectional", [2, 4, 3], True, False, {"linear_before_reset": 1}),
    ("GRU", 3, 4, 8, 160, "forward", None, True, False, {"linear_before_reset": 1}),
    ("GRU", 3, 2, 4, 9, "reverse", [1, 3], True, False, {"linear_before_reset": 1, "clip": 0.5}),
    ("GRU", 3, 2, 4, 20, "forward", None, True, False,
     {"linear_before_reset": 1, "activations": ["HardSigmoid", "Softsign"]}),
    ("GRU", 4, 3, 5, 17, "bidirectional", [4, 2, 1], True, False, {"linear_before_reset": 0}),
    ("RNN", 5, 1, 7, 16, "forward", None, False, False, {}),
    ("RNN", 4, 3, 5, 21, "bidirectional", [4, 3, 1], True, False, {}),
    ("RNN", 3, 4, 8, 300, "forward", None, True, False, {}),
    ("RNN", 3, 2, 4, 7, "reverse", None, True, False, {"activations": ["Relu"], "clip": 1.5}),
]


def build(tmp_path, case, weights_constant):
    op, seq, batch, inp, hidden, direction, lens, states, peep, attrs = case
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    rng = np.random.default_rng(seq * 1000 + hidden)
    s = 1 / np.sqrt(hidden)  # PyTorch's initialisation bound
    arrays = {
        "W": rng.uniform(-s, s, (dirs, g * hidden, inp)).astype(np.float32),
        "R": rng.uniform(-s, s, (dirs, g * hidden, hidden)).astype(np.float32),
        "B": rng.uniform(-s, s, (dirs, 2 * g * hidden)).astype(np.float32),
    }
    feeds = {"X": rng.standard_normal((seq, batch, inp)).astype(np.float32)}
    names = ["X", "W", "R", "B", "", "", "", ""]
    if lens is not None:
        feeds["lens"] = np.array(lens, np.int32)
        names[4] = "lens"
    if states:
        feeds["h0"] = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
        names[5] = "h0"
        if op == "LSTM":
            feeds["c0"] = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
            names[6] = "c0"
    if peep:
        arrays["P"] = rng.uniform(-s, s, (dirs, 3 * hidden)).astype(np.float32)
        names[7] = "P"
    names = names[:8 if op == "LSTM" else 6]
    while names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, OUTPUTS[op], hidden_size=hidden, direction=direction, **attrs)
    inits = [numpy_helper.from_array(v, k) for k, v in arrays.items()] if weights_constant else []
    if not weights_constant:
        feeds.update(arrays)
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    inputs = [helper.make_tensor_value_info(k, elem[v.dtype], list(v.shape)) for k, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in OUTPUTS[op]],
                              inits)
    path = str(tmp_path / "rnn.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path, feeds


@pytest.mark.parametrize("constant", [True, False], ids=["constant-weights", "weights-as-inputs"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_recurrent_matches_onnx_runtime(tmp_path, case, constant):
    path, feeds = build(tmp_path, CASES[case], constant)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    for threads in (1, 2):
        model = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path))
        got = model.run([feeds[name] for name, _, _ in model.inputs])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)


def test_recurrent_runs_repeatedly_from_its_initial_state(tmp_path):
    """The fused path keeps no state between runs: a second run with the same inputs gives the
    same outputs, and one with other initial states gives ONNX Runtime's answer for those."""
    path, feeds = build(tmp_path, CASES[2], True)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    model = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path))
    order = [name for name, _, _ in model.inputs]
    first = model.run([feeds[n] for n in order])
    again = model.run([feeds[n] for n in order])
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    feeds["h0"] = feeds["h0"] * -0.5
    want = sess.run(None, feeds)
    got = model.run([feeds[n] for n in order])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("case", [1, 10, 16])
def test_recurrent_model_file_round_trip(tmp_path, case):
    """A saved model packs its recurrent weights again when loaded and gives the same outputs."""
    path, feeds = build(tmp_path, CASES[case], True)
    s = weft.Session(threads=2, use_env_path=False)
    model = s.compile(weft.import_onnx(path))
    order = [name for name, _, _ in model.inputs]
    want = model.run([feeds[n] for n in order])
    saved = str(tmp_path / "rnn.weft")
    model.save(saved)
    got = s.load_model(saved).run([feeds[n] for n in order])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case", [2, 4, 10, 16])
@pytest.mark.parametrize("constant", [True, False], ids=["constant-weights", "weights-as-inputs"])
def test_recurrent_layout_1_matches_layout_0(tmp_path, case, constant):
    """layout = 1 (batch first; ONNX Runtime's CPU kernels refuse it): the same layer on
    transposed inputs gives the transposed outputs of layout 0."""
    path0, feeds = build(tmp_path, CASES[case], constant)
    m0 = onnx.load(path0)
    want = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path0))
    order0 = [n for n, _, _ in want.inputs]
    want = want.run([feeds[n] for n in order0])
    # The same graph with layout = 1 and batch-first inputs.
    node = m0.graph.node[0]
    node.attribute.append(helper.make_attribute("layout", 1))
    t = {"X": (1, 0, 2), "h0": (1, 0, 2), "c0": (1, 0, 2)}
    feeds1 = {k: (np.ascontiguousarray(v.transpose(t[k])) if k in t else v) for k, v in feeds.items()}
    for vi in m0.graph.input:
        if vi.name in t:
            dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            for i, d in enumerate([dims[j] for j in t[vi.name]]):
                vi.type.tensor_type.shape.dim[i].dim_value = d
    path1 = str(tmp_path / "rnn_layout1.onnx")
    onnx.save(m0, path1)
    m1 = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path1))
    got = m1.run([feeds1[n] for n, _, _ in m1.inputs])
    np.testing.assert_allclose(got[0], want[0].transpose(2, 0, 1, 3), rtol=1e-6, atol=1e-7)  # Y: [batch, seq, dirs, hidden]
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w.transpose(1, 0, 2), rtol=1e-6, atol=1e-7)  # Y_h, Y_c: [batch, dirs, hidden]
