"""weft aot on the spectral operators (DFT, STFT): each small model's C module, built as strict
C99, must reproduce Weft's runtime (the same double-precision transform and tables) and, through
it, NumPy's float64 FFT; where ONNX Runtime's float32 transform agrees, its outputs too."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot_onnx_check import check_c_against_runtime, check_onnx_model  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import weft  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(5)


def save(tmp_path, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    return path, m


def runtime(path, inputs):
    return weft.Session(use_env_path=False).compile(weft.import_model(path)).run(list(inputs.values()))


@pytest.mark.parametrize("n,length,onesided,inverse,complex_in", [
    (16, None, 0, 0, False), (16, None, 1, 0, False), (12, None, 0, 0, True), (12, None, 0, 1, True),
    (10, 16, 1, 0, False), (20, 7, 0, 0, False), (1, None, 0, 0, False), (400, None, 1, 0, False)])
def test_dft(tmp_path, n, length, onesided, inverse, complex_in):
    comps = 2 if complex_in else 1
    x = RNG.standard_normal((3, n, comps)).astype(np.float32)
    ins, inits = ["x"], []
    if length is not None:
        ins.append("len")
        inits.append(numpy_helper.from_array(np.array(length, np.int64), "len"))
    L = length or n
    bins = L // 2 + 1 if onesided else L
    path, _ = save(tmp_path, [helper.make_node("DFT", ins, ["y"], axis=1, onesided=onesided, inverse=inverse)],
                   [helper.make_tensor_value_info("x", F, [3, n, comps])], [helper.make_tensor_value_info("y", F, [3, bins, 2])], inits)
    (got,) = runtime(path, {"x": x})
    sig = x[..., 0].astype(np.float64) + (1j * x[..., 1] if complex_in else 0)
    sig = np.pad(sig[:, :L], ((0, 0), (0, max(0, L - n))))
    want = (np.fft.ifft(sig, axis=1) if inverse else np.fft.fft(sig, axis=1))[:, :bins]
    np.testing.assert_allclose(got[..., 0] + 1j * got[..., 1], want, rtol=1e-5, atol=1e-5)
    check_c_against_runtime(tmp_path, path, {"x": x}, atol=1e-6, rtol=1e-6)


def test_dft_double_on_a_middle_axis(tmp_path):
    x = RNG.standard_normal((2, 9, 3, 1))
    path, m = save(tmp_path, [helper.make_node("DFT", ["x"], ["y"], axis=1)], [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 9, 3, 1])],
                   [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 9, 3, 2])])
    (got,) = runtime(path, {"x": x})
    want = np.fft.fft(x[..., 0], axis=1)
    np.testing.assert_allclose(got[..., 0] + 1j * got[..., 1], want, rtol=1e-12, atol=1e-12)
    check_c_against_runtime(tmp_path, path, {"x": x}, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("frame,step,window", [(16, 8, "hann"), (25, 10, "hamming"), (32, 32, None), (12, 5, "input")])
def test_stft(tmp_path, frame, step, window):
    sig = RNG.standard_normal((2, 100, 1)).astype(np.float32)
    nodes, inits = [], [numpy_helper.from_array(np.array(step, np.int64), "step")]
    ins = ["s", "step"]
    feeds = {"s": sig}
    graph_inputs = [helper.make_tensor_value_info("s", F, [2, 100, 1])]
    if window in ("hann", "hamming"):
        inits.append(numpy_helper.from_array(np.array(frame, np.int64), "wl"))
        nodes.append(helper.make_node("HannWindow" if window == "hann" else "HammingWindow", ["wl"], ["w"]))
        ins.append("w")
    elif window == "input":
        ins.append("w")
        feeds["w"] = RNG.random(frame).astype(np.float32)
        graph_inputs.append(helper.make_tensor_value_info("w", F, [frame]))
    else:
        inits.append(numpy_helper.from_array(np.array(frame, np.int64), "fl"))
        ins += ["", "fl"]
    frames, bins = (100 - frame) // step + 1, frame // 2 + 1
    nodes.append(helper.make_node("STFT", ins, ["y"]))
    path, m = save(tmp_path, nodes, graph_inputs, [helper.make_tensor_value_info("y", F, [2, frames, bins, 2])], inits)
    (got,) = runtime(path, feeds)
    w = {"hann": np.hanning(frame + 1)[:frame], "hamming": None, None: np.ones(frame), "input": feeds.get("w")}[window]
    if w is not None:  # periodic Hann as ONNX defines it; Hamming's coefficients are ONNX's own, checked by ONNX Runtime below
        fr = np.stack([sig[:, f * step:f * step + frame, 0] for f in range(frames)], axis=1).astype(np.float64) * w
        want = np.fft.rfft(fr, axis=2)
        np.testing.assert_allclose(got[..., 0] + 1j * got[..., 1], want, rtol=1e-5, atol=1e-5)
    check_c_against_runtime(tmp_path, path, feeds, atol=1e-6, rtol=1e-6)
    check_onnx_model(tmp_path, m, feeds, atol=1e-4, rtol=1e-4, name="ort")


def test_dft_length_from_a_run_time_input_is_refused(tmp_path):
    path, _ = save(tmp_path, [helper.make_node("DFT", ["x", "len"], ["y"], axis=1)],
                   [helper.make_tensor_value_info("x", F, [1, 8, 1]), helper.make_tensor_value_info("len", TensorProto.INT64, [])],
                   [helper.make_tensor_value_info("y", F, [1, "bins", 2])])
    with pytest.raises(ValueError, match="DFT.*known only at run time"):
        weft.generate_c(path, tmp_path / "c", prefix="m")


@pytest.mark.parametrize("bins,length,complex_in", [(5, None, True), (9, 15, True), (6, None, False), (4, 3, True)])
def test_dft_inverse_onesided_is_the_real_inverse(tmp_path, bins, length, complex_in):
    comps = 2 if complex_in else 1
    x = RNG.standard_normal((2, bins, comps)).astype(np.float32)
    ins, inits = ["x"], []
    if length is not None:
        ins.append("len")
        inits.append(numpy_helper.from_array(np.array(length, np.int64), "len"))
    L = length or 2 * (bins - 1)
    path, _ = save(tmp_path, [helper.make_node("DFT", ins, ["y"], axis=1, onesided=1, inverse=1)],
                   [helper.make_tensor_value_info("x", F, [2, bins, comps])], [helper.make_tensor_value_info("y", F, [2, L, 1])], inits)
    (got,) = runtime(path, {"x": x})
    spectrum = x[..., 0].astype(np.float64) + (1j * x[..., 1] if complex_in else 0)
    np.testing.assert_allclose(got[..., 0], np.fft.irfft(spectrum, n=L, axis=1), rtol=1e-5, atol=1e-6)
    check_c_against_runtime(tmp_path, path, {"x": x}, atol=1e-6, rtol=1e-6)
