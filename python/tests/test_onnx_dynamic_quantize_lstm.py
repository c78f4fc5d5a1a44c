"""ONNX Runtime's DynamicQuantizeLSTM (com.microsoft), what onnxruntime.quantization.quantize_dynamic
writes for an LSTM: hand-built nodes over every attribute and input (directions, batch, per-direction
and per-row scales, int8 and uint8 weights with zero points, biases, initial states, peepholes,
sequence lengths, clip, input_forget) against ONNX Runtime and against the float LSTM of the
dequantized weights; torch LSTMs quantized by ONNX Runtime's own tool; and the errors for inputs
the operator does not take."""
import os
import sys

import numpy as np
import pytest

import weft
from ort_int8 import ort_u8s8_exact

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot_onnx_check import check_c_against_runtime  # noqa: E402

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MS = "com.microsoft"


def lstm_model(tmp_path, I, H, dirs, seq, batch, wtype, per_row, bias, states, peep, lens, attrs, seed, name="q.onnx"):
    """A graph of one DynamicQuantizeLSTM with random quantized weights. Returns the path, the feeds
    and the dequantized float weights in ONNX LSTM's layout (W [D, 4H, I], R [D, 4H, H])."""
    rng = np.random.default_rng(seed)
    G = 4 * H
    lo, hi = (-128, 128) if wtype == np.int8 else (0, 256)
    w = rng.integers(lo, hi, (dirs, I, G)).astype(wtype)
    r = rng.integers(lo, hi, (dirs, H, G)).astype(wtype)
    sshape = (dirs, G) if per_row else (dirs,)
    ws = rng.uniform(0.001, 0.006, sshape).astype(np.float32)
    rs = rng.uniform(0.001, 0.006, sshape).astype(np.float32)
    if wtype == np.int8:
        wz = np.zeros(sshape, np.int8)
        rz = np.zeros(sshape, np.int8)
    else:
        # one zero point per tensor (ONNX Runtime's kernel takes no other), spread over the rows
        wz = np.full(sshape, rng.integers(100, 156), np.uint8)
        rz = np.full(sshape, rng.integers(100, 156), np.uint8)
    inits = {"W": w, "R": r, "W_scale": ws, "W_zero_point": wz, "R_scale": rs, "R_zero_point": rz}
    names = ["X", "W", "R", "", "", "", "", "", "W_scale", "W_zero_point", "R_scale", "R_zero_point"]
    feeds = {"X": rng.standard_normal((seq, batch, I)).astype(np.float32)}
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, I])]
    if bias:
        inits["B"] = rng.standard_normal((dirs, 2 * G)).astype(np.float32) * 0.5
        names[3] = "B"
    if lens:
        inits["lens"] = rng.integers(1, seq + 1, (batch,)).astype(np.int32)
        names[4] = "lens"
    if states:
        for k, n in ((5, "h0"), (6, "c0")):
            feeds[n] = rng.standard_normal((dirs, batch, H)).astype(np.float32)
            inputs.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, [dirs, batch, H]))
            names[k] = n
    if peep:
        inits["P"] = rng.standard_normal((dirs, 3 * H)).astype(np.float32) * 0.3
        names[7] = "P"
    node = helper.make_node("DynamicQuantizeLSTM", names, ["Y", "Y_h", "Y_c"], domain=MS, hidden_size=H, **attrs)
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("Y", "Y_h", "Y_c")],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    path = str(tmp_path / name)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=8), path)
    deq = lambda q, s, z: (q.astype(np.float64) - z.reshape(dirs, 1, -1)) * s.reshape(dirs, 1, -1)  # noqa: E731
    floats = {"W": deq(w, ws, wz).transpose(0, 2, 1), "R": deq(r, rs, rz).transpose(0, 2, 1)}
    for k in ("B", "P", "lens"):
        if k in inits:
            floats[k] = inits[k]
    return path, feeds, floats


def float_lstm(x, f, H, direction, h0=None, c0=None, clip=0.0, input_forget=False):
    """ONNX's LSTM in float64 (default activations) on the dequantized weights."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    seq, batch, _ = x.shape
    dirs = f["W"].shape[0]
    lens = f.get("lens", np.full(batch, seq))
    y = np.zeros((seq, dirs, batch, H))
    yh, yc = np.zeros((dirs, batch, H)), np.zeros((dirs, batch, H))
    cl = (lambda v: np.clip(v, -clip, clip)) if clip > 0 else (lambda v: v)  # noqa: E731
    for d in range(dirs):
        rev = direction == "reverse" or (direction == "bidirectional" and d == 1)
        b = f["B"][d][:4 * H] + f["B"][d][4 * H:] if "B" in f else np.zeros(4 * H)
        p = f["P"][d] if "P" in f else np.zeros(3 * H)
        for n in range(batch):
            h = h0[d, n].astype(np.float64) if h0 is not None else np.zeros(H)
            c = c0[d, n].astype(np.float64) if c0 is not None else np.zeros(H)
            for s in range(lens[n]):
                t = lens[n] - 1 - s if rev else s
                z = f["W"][d] @ x[t, n] + f["R"][d] @ h + b
                i = sig(cl(z[:H] + p[:H] * c))
                fg = 1 - i if input_forget else sig(cl(z[2 * H:3 * H] + p[2 * H:] * c))
                c = fg * c + i * np.tanh(cl(z[3 * H:]))
                o = sig(cl(z[H:2 * H] + p[H:2 * H] * c))
                h = o * np.tanh(c)
                y[t, d, n] = h
            yh[d, n], yc[d, n] = h, c
    return y, yh, yc


CASES = [
    # I, H, dirs, seq, batch, wtype, per_row, bias, states, peep, lens, attrs
    (16, 32, 1, 5, 1, np.int8, False, True, False, False, False, {}),
    (16, 32, 2, 7, 1, np.int8, False, True, True, False, False, {"direction": "bidirectional"}),
    (24, 16, 1, 6, 3, np.int8, True, True, True, False, False, {"direction": "reverse"}),
    (12, 20, 2, 4, 2, np.uint8, True, True, True, True, False, {"direction": "bidirectional"}),
    (8, 24, 1, 9, 1, np.uint8, False, False, False, True, False, {"clip": 0.5}),
    (8, 16, 1, 6, 2, np.int8, False, True, False, False, False, {"input_forget": 1}),
    (8, 16, 2, 6, 3, np.int8, False, True, False, False, True, {"direction": "bidirectional"}),
    (10, 12, 1, 5, 6, np.uint8, True, True, True, False, True, {}),  # more rows than the few-row product takes
    (20, 16, 1, 4, 4, np.int8, True, True, False, False, False, {"direction": "reverse"}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_onnxruntime_and_the_float_lstm(tmp_path, case):
    I, H, dirs, seq, batch, wtype, per_row, bias, states, peep, lens, attrs = CASES[case]
    path, feeds, floats = lstm_model(tmp_path, I, H, dirs, seq, batch, wtype, per_row, bias, states, peep, lens, attrs, seed=case)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = weft.Session(threads=1, use_env_path=False).compile(weft.import_onnx(path)).run(list(feeds.values()))
    # ONNX Runtime quantizes the same values at the same points: the sums are equal; what differs is
    # the last bits of Sigmoid and Tanh.
    for g, w in zip(got, want):
        assert g.shape == w.shape
        if ort_u8s8_exact():  # (elsewhere its sums saturate; the float LSTM below still bounds the error)
            np.testing.assert_allclose(g, w, rtol=0, atol=2e-5)
    # The float LSTM of the dequantized weights differs by the activations' quantization only.
    ref = float_lstm(feeds["X"], floats, H, attrs.get("direction", "forward"), feeds.get("h0"), feeds.get("c0"), attrs.get("clip", 0.0),
                     bool(attrs.get("input_forget", 0)))
    for g, r in zip(got, ref):
        err = np.abs(g - r).max()
        assert err < 0.05 * max(1.0, np.abs(r).max()), err
    if lens:
        lengths = floats["lens"]
        for n in range(batch):
            assert not got[0][lengths[n]:, :, n].any()  # steps past a row's length are zeros


def torch_lstm(tmp_path, I, H, layers, bidir, batch, seq, per_channel):
    torch = pytest.importorskip("torch")
    from onnxruntime.quantization import quantize_dynamic

    torch.manual_seed(I * 100 + H)
    m = torch.nn.LSTM(I, H, num_layers=layers, bidirectional=bidir)
    d = layers * (2 if bidir else 1)
    x, h0, c0 = torch.randn(seq, batch, I), torch.randn(d, batch, H), torch.randn(d, batch, H)
    src, dst = str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx")
    torch.onnx.export(m, (x, (h0, c0)), src, input_names=["x", "h0", "c0"], opset_version=17, dynamo=False)
    quantize_dynamic(src, dst, per_channel=per_channel)
    return src, dst, {"x": x.numpy(), "h0": h0.numpy(), "c0": c0.numpy()}


@pytest.mark.parametrize("shape", [(32, 64, 1, False, 1, 12, False), (20, 48, 2, True, 2, 8, True), (64, 128, 1, False, 4, 5, True)])
def test_torch_lstms_quantized_by_onnxruntime(tmp_path, shape):
    src, dst, feeds = torch_lstm(tmp_path, *shape)
    assert "DynamicQuantizeLSTM" in {n.op_type for n in onnx.load(dst).graph.node}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(dst, so, providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    flt = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    model = weft.Session(threads=1, use_env_path=False).compile(weft.import_onnx(dst))
    got = model.run([feeds[i.name] for i in sess.get_inputs()])
    for g, w, f in zip(got, want, flt):
        if ort_u8s8_exact():
            np.testing.assert_allclose(g, w, rtol=0, atol=2e-5)
            assert np.abs(g - w).max() < 0.01 * np.abs(f - w).max()  # far below the quantization's own error
        else:  # ONNX Runtime's own sums saturate here: the float model bounds Weft's error instead
            assert np.abs(g - f).max() < 0.05 * max(1.0, np.abs(f).max())
    assert np.array_equal(model.run([feeds[i.name] for i in sess.get_inputs()])[0], got[0])  # runs again the same


def test_errors_name_the_input(tmp_path):
    def fails(mutate, pattern):
        path, feeds, _ = lstm_model(tmp_path, 8, 16, 1, 3, 1, np.int8, False, True, False, False, False, {}, seed=5)
        m = onnx.load(path)
        mutate(m)
        onnx.save(m, path)
        with pytest.raises(Exception, match=pattern):
            weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(list(feeds.values()))

    def init(m, name, value):
        for i, t in enumerate(m.graph.initializer):
            if t.name == name:
                m.graph.initializer[i].CopyFrom(numpy_helper.from_array(value, name))

    fails(lambda m: init(m, "W", np.zeros((1, 8, 60), np.int8)), r"W \[1,8,60\] must be \[1, input 8, 4 \* hidden_size 64\]")
    fails(lambda m: init(m, "R_scale", np.ones((3,), np.float32)), r"R_scale .* one value per direction")
    fails(lambda m: init(m, "W_zero_point", np.zeros((1,), np.uint8)), r"W_zero_point \(uint8")
    fails(lambda m: init(m, "W_scale", np.array([-1.0], np.float32)), r"W_scale\[0\] is -1")
    fails(lambda m: m.graph.node[0].attribute.append(helper.make_attribute("direction", "sideways")), "unknown direction 'sideways'")


@pytest.mark.parametrize("case", range(len(CASES)))
def test_generated_c_matches_the_runtime(tmp_path, case):
    """weft aot's C quantizes at the same points and sums exactly; only the activations are C's
    own, so it lies as near the runtime as ONNX Runtime does."""
    I, H, dirs, seq, batch, wtype, per_row, bias, states, peep, lens, attrs = CASES[case]
    path, feeds, _ = lstm_model(tmp_path, I, H, dirs, seq, batch, wtype, per_row, bias, states, peep, lens, attrs, seed=case)
    check_c_against_runtime(tmp_path, path, feeds, atol=2e-5)


def test_generated_c_of_a_torch_lstm_quantized_by_onnxruntime(tmp_path):
    src, dst, feeds = torch_lstm(tmp_path, 20, 48, 2, True, 2, 8, True)
    sess = ort.InferenceSession(dst, providers=["CPUExecutionProvider"])
    check_c_against_runtime(tmp_path, dst, {i.name: feeds[i.name] for i in sess.get_inputs()}, atol=2e-5)
