"""ConvTranspose with constant weights against ONNX Runtime, over the configurations exported models
use: 1-3 spatial dims, groups (depthwise included), strides, dilations, pads, output_padding,
output_shape, auto_pad, with and without bias, alone and with an activation after it (which the
X
deconvolution, kept by the session option weft.conv_transpose_path) and on the automatic choice between them."""
import re

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

CASES = [
    # (x shape, out channels per group, group, kernel, attrs, bias)
    ((1, 24, 16, 16), 24, 1, (2, 2), dict(strides=[2, 2]), True),
    ((2, 8, 7, 9), 4, 2, (3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]), True),
    ((1, 16, 10, 10), 1, 16, (4, 4), dict(strides=[2, 2], pads=[1, 1, 1, 1]), False),
    ((1, 6, 5, 5), 3, 1, (3, 3), dict(dilations=[2, 2], pads=[0, 1, 2, 0]), True),
    ((1, 4, 6, 6), 5, 1, (3, 3), dict(strides=[3, 2], output_shape=[18, 12]), False),
    ((1, 4, 6, 6), 5, 1, (3, 3), dict(strides=[2, 2], auto_pad="SAME_UPPER"), True),
    ((3, 8, 20), 16, 1, (5,), dict(strides=[2], pads=[2, 2], output_padding=[1]), True),
    ((1, 4, 4, 5, 6), 2, 2, (2, 3, 3), dict(strides=[2, 1, 2], pads=[0, 1, 1, 0, 1, 1]), True),
    ((1, 100, 1, 1), 32, 1, (4, 4), dict(), False),
    ((2, 12, 8, 8), 3, 1, (4, 4), dict(strides=[2, 2], pads=[1, 1, 1, 1]), True),
    ((1, 6, 7, 5), 4, 1, (3, 3), dict(strides=[2, 2], output_shape=[12, 8]), True),
]
# An activation after the ConvTranspose, fused into it by the compiler.
ACTIVATIONS = [None, ("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("LeakyRelu", {"alpha": 0.2})]


@pytest.mark.parametrize("path", ["auto", "gemm", "matmul", "onednn"])
@pytest.mark.parametrize("act", range(len(ACTIVATIONS)))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_conv_transpose_matches_onnx_runtime(tmp_path, case, act, path):
    options = {} if path == "auto" else {"weft.conv_transpose_path": path}
    xs, mg, group, k, attrs, bias = CASES[case]
    rng = np.random.default_rng(case)
    c = xs[1]
    w = rng.standard_normal((c, mg) + k).astype(np.float32)
    b = rng.standard_normal(mg * group).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if bias else [])
    nodes = [helper.make_node("ConvTranspose", ["x", "w"] + (["b"] if bias else []), ["t" if ACTIVATIONS[act] else "y"], group=group,
                              kernel_shape=list(k), **attrs)]
    if ACTIVATIONS[act]:
        nodes.append(helper.make_node(ACTIVATIONS[act][0], ["t"], ["y"], **ACTIVATIONS[act][1]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = str(tmp_path / "ct.onnx")
    onnx.save(m, path)
    x = rng.standard_normal(xs).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = weft.Session(threads=threads, use_env_path=False, options=options).compile(weft.import_onnx(path)).run([x])[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("path", ["auto", "gemm", "matmul", "onednn"])
@pytest.mark.parametrize("xs,ws", [((1, 2, 0, 4), (2, 3, 3, 3)), ((1, 0, 4, 4), (0, 3, 3, 3)), ((1, 2, 4, 4), (2, 0, 3, 3)),
                                   ((0, 2, 4, 4), (2, 3, 3, 3))])
def test_conv_transpose_with_empty_dims(tmp_path, path, xs, ws):
    """No input positions, no input channels, no output channels, no images: the output is the
    bias (or empty), as ONNX Runtime computes it, on every path."""
    rng = np.random.default_rng(5)
    m = ws[1]
    inits = [numpy_helper.from_array(rng.standard_normal(ws).astype(np.float32), "w"),
             numpy_helper.from_array(np.arange(1, m + 1, dtype=np.float32), "b")]
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    p = str(tmp_path / "empty.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), p)
    x = np.zeros(xs, np.float32)
    want = ort.InferenceSession(p, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    options = {} if path == "auto" else {"weft.conv_transpose_path": path}
    got = weft.Session(threads=1, use_env_path=False, options=options).compile(weft.import_onnx(p)).run([x])[0]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("options,words", [
    ({"weft.conv_transpose_path": "cuda"}, "'weft.conv_transpose_path' is 'cuda'; it takes auto, gemm, matmul or onednn"),
    ({"weft.conv_transpose_paths": "gemm"}, "did you mean 'weft.conv_transpose_path'"),
    ({"weft.conv_algorithm": "fast"}, "it takes auto, winograd or direct"),
    ({"weft.graph_passes": "some"}, "it takes all or none"),
    ({"weft.intra_op_threads": "4"}, "set by the session from SessionOptions::intra_op_threads (Python: threads=)"),
])
def test_bad_session_options_are_errors(options, words):
    """The engine's own options (weft.*) are checked when the session is made; a plugin's options
    (another prefix) pass through."""
    with pytest.raises(Exception, match=re.escape(words)):
        weft.Session(use_env_path=False, options=options)
    weft.Session(use_env_path=False, options={"myplugin.tile": "64", "weft.conv_transpose_path": "gemm"})
