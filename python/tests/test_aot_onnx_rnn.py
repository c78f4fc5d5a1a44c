"""weft aot for ONNX LSTM, GRU and RNN (float32): directions, initial states, biases, peepholes,
clip, layout 1, constant sequence_lens and the activations, each against ONNX Runtime and Weft's
runtime, as C built and run here."""
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from aot_onnx_check import STRICT, check_onnx_model  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def rnn_model(op, seq=5, batch=3, inp=4, hidden=6, direction="forward", layout=0, bias=True, h0=False, c0=False, peep=False,
              lens=None, lens_input=False, outputs=("Y", "Y_h", "Y_c"), seed=0, **attrs):
    """One `op` node over X (a graph input); W, R, B, P and sequence_lens as initializers,
    initial_h / initial_c as graph inputs. Returns (model, inputs)."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    g = GATES[op] * hidden
    f32 = lambda *s: (rng.standard_normal(s) * 0.6).astype(np.float32)  # noqa: E731
    x_shape = [batch, seq, inp] if layout else [seq, batch, inp]
    state_shape = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    inits = [numpy_helper.from_array(f32(dirs, g, inp), "W"), numpy_helper.from_array(f32(dirs, g, hidden), "R")]
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    feeds = {"X": f32(seq, batch, inp)}  # drawn time major: layout 1 gets the same values transposed
    if layout:
        feeds["X"] = np.ascontiguousarray(feeds["X"].transpose(1, 0, 2))
    names = ["X", "W", "R", "", "", "", "", ""]
    if bias:
        inits.append(numpy_helper.from_array(f32(dirs, 2 * g), "B"))
        names[3] = "B"
    if lens is not None:
        lens = np.array(lens, dtype=np.int32)
        if lens_input:
            graph_inputs.append(helper.make_tensor_value_info("L", TensorProto.INT32, [batch]))
            feeds["L"] = lens
        else:
            inits.append(numpy_helper.from_array(lens, "L"))
        names[4] = "L"
    for used, name, at in ((h0, "H0", 5), (c0, "C0", 6)):
        if used:
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, state_shape))
            feeds[name] = f32(dirs, batch, hidden)
            if layout:
                feeds[name] = np.ascontiguousarray(feeds[name].transpose(1, 0, 2))
            names[at] = name
    if peep:
        inits.append(numpy_helper.from_array(f32(dirs, 3 * hidden), "P"))
        names[7] = "P"
    while names and not names[-1]:
        names.pop()
    y_shape = [batch, seq, dirs, hidden] if layout else [seq, dirs, batch, hidden]
    all_outs = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    node_outs = [o if o in outputs else "" for o in all_outs]
    while node_outs and not node_outs[-1]:
        node_outs.pop()
    node = helper.make_node(op, names, node_outs, hidden_size=hidden, direction=direction, layout=layout, **attrs)
    graph_outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, y_shape if o == "Y" else state_shape) for o in node_outs if o]
    graph = helper.make_graph([node], "rnn", graph_inputs, graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, feeds


CASES = [
    # LSTM
    ("LSTM", dict()),
    ("LSTM", dict(direction="reverse", h0=True, c0=True)),
    ("LSTM", dict(direction="bidirectional", h0=True, c0=True, peep=True)),
    ("LSTM", dict(direction="bidirectional", layout=1, h0=True, c0=True, peep=True, seed=1)),
    ("LSTM", dict(bias=False, h0=True, seed=2)),
    ("LSTM", dict(peep=True, c0=True, clip=0.7, seed=3)),
    ("LSTM", dict(direction="bidirectional", h0=True, c0=True, lens=[5, 2, 4], seed=4)),
    ("LSTM", dict(direction="reverse", layout=1, lens=[3, 5, 1], peep=True, seed=5)),
    ("LSTM", dict(outputs=("Y_h",), direction="bidirectional", seed=6)),
    ("LSTM", dict(outputs=("Y", "Y_c"), h0=True, c0=True, seed=7)),
    ("LSTM", dict(activations=["HardSigmoid", "Softsign", "Elu"], activation_alpha=[0.3, 0.8], activation_beta=[0.4], seed=8)),
    ("LSTM", dict(input_forget=1, peep=True, h0=True, c0=True, seed=9)),
    ("LSTM", dict(direction="bidirectional", lens=[1, 5, 3], h0=True, c0=True, seed=10)),
    # GRU
    ("GRU", dict()),
    ("GRU", dict(linear_before_reset=1, h0=True)),
    ("GRU", dict(direction="reverse", linear_before_reset=1, h0=True, seed=1)),
    ("GRU", dict(direction="bidirectional", h0=True, seed=2)),
    ("GRU", dict(direction="bidirectional", layout=1, h0=True, linear_before_reset=1, seed=3)),
    ("GRU", dict(direction="bidirectional", layout=1, h0=True, seed=4)),
    ("GRU", dict(bias=False, linear_before_reset=1, seed=5)),
    ("GRU", dict(clip=0.5, h0=True, seed=6)),
    ("GRU", dict(direction="bidirectional", lens=[4, 5, 2], h0=True, linear_before_reset=1, seed=7)),
    ("GRU", dict(layout=1, lens=[1, 5, 3], seed=8)),
    ("GRU", dict(outputs=("Y_h",), direction="reverse", seed=9)),
    ("GRU", dict(lens=[3, 1, 5], h0=True, seed=11)),
    ("GRU", dict(activations=["Relu", "Tanh", "Sigmoid", "LeakyRelu"], activation_alpha=[0.1], direction="bidirectional", seed=10)),
    # RNN
    ("RNN", dict()),
    ("RNN", dict(direction="bidirectional", h0=True, layout=1, seed=1)),
    ("RNN", dict(direction="reverse", lens=[2, 5, 4], clip=0.9, seed=2)),
    ("RNN", dict(activations=["Relu"], h0=True, seed=3)),
]


def case_id(c):
    op, kw = c
    return op + "-" + "-".join(f"{k}={v}" for k, v in kw.items() if k not in ("activation_alpha", "activation_beta", "seed")).replace(" ", "")


def check_batch_major(tmp_path, op, kw, atol=1e-5, rtol=1e-4):
    """check_onnx_model for layout 1, which ONNX Runtime lacks: its reference is the same layer
    time major (layout 0) on the transposed inputs, its outputs transposed back."""
    ort = pytest.importorskip("onnxruntime")
    weft = pytest.importorskip("weft")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    model, feeds = rnn_model(op, **kw)
    ref_model, ref_feeds = rnn_model(op, **{**kw, "layout": 0})
    for n, v in feeds.items():
        assert np.array_equal(v, ref_feeds[n] if v.ndim != 3 else ref_feeds[n].transpose(1, 0, 2))
    onnx.checker.check_model(model)
    path, ref_path = str(tmp_path / "m.onnx"), str(tmp_path / "ref.onnx")
    onnx.save(model, path)
    onnx.save(ref_model, ref_path)
    sess = ort.InferenceSession(ref_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    want = [np.ascontiguousarray(w.transpose(2, 0, 1, 3) if n == "Y" else w.transpose(1, 0, 2)) for n, w in zip(names, sess.run(names, ref_feeds))]
    graph = weft.import_model(path)
    got = weft.Session(use_env_path=False).compile(graph).run([feeds[i.name] for i in model.graph.input])
    for n, w, g in zip(names, want, got):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"Weft's runtime vs ONNX Runtime on {n}")
    out = tmp_path / "m_c"
    weft.generate_c(path, out, prefix="m", test_inputs=feeds, test_outputs=dict(zip(names, want)), atol=atol, rtol=rtol)
    exe = str(tmp_path / "m_test")
    subprocess.run([cc, *STRICT, f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test", *sorted(glob.glob(f"{out}/src/*.c")),
                    *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("op,kw", CASES, ids=[case_id(c) for c in CASES])
def test_recurrent_as_c(tmp_path, op, kw):
    if kw.get("layout"):
        return check_batch_major(tmp_path, op, kw)
    model, feeds = rnn_model(op, **kw)
    check_onnx_model(tmp_path, model, feeds, atol=1e-5, rtol=1e-4)


def test_larger_lstm_as_c(tmp_path):
    model, feeds = rnn_model("LSTM", seq=12, batch=2, inp=16, hidden=24, direction="bidirectional", h0=True, c0=True, peep=True, seed=11)
    check_onnx_model(tmp_path, model, feeds, atol=1e-5, rtol=1e-4)


def test_sequence_lens_as_input_is_refused(tmp_path):
    weft = pytest.importorskip("weft")
    model, feeds = rnn_model("GRU", lens=[5, 2, 4], lens_input=True)
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    with pytest.raises(Exception, match="constant sequence_lens"):
        weft.generate_c(path, tmp_path / "out", prefix="m", test_inputs=feeds)


def test_unknown_activation_is_refused(tmp_path):
    weft = pytest.importorskip("weft")
    model, feeds = rnn_model("RNN", activations=["Swish"])
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    with pytest.raises(Exception, match="unknown activation 'Swish'"):
        weft.generate_c(path, tmp_path / "out", prefix="m", test_inputs=feeds)
