"""1-D Conv and pooling (run by oneDNN as 2-D with a height of 1) against ONNX Runtime, over the
configurations audio and sequence models use: groups (depthwise included), strides, dilations,
asymmetric pads, bias; MaxPool and AveragePool with pads, ceil_mode and count_include_pad."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

CONVS = [  # x shape, out channels, group, kernel, attrs, bias
    ((1, 64, 50), 128, 1, 5, dict(pads=[2, 2]), True),
    ((2, 16, 33), 16, 16, 3, dict(pads=[1, 1]), True),
    ((1, 8, 40), 12, 4, 3, dict(strides=[2], dilations=[2], pads=[0, 3]), False),
    ((3, 80, 17), 64, 1, 1, dict(), True),
    ((1, 4, 9), 6, 2, 4, dict(auto_pad="SAME_UPPER", strides=[3]), True),
]
POOLS = [  # op, x shape, attrs
    ("MaxPool", (1, 64, 41), dict(kernel_shape=[3], strides=[2])),
    ("MaxPool", (2, 5, 20), dict(kernel_shape=[4], strides=[3], pads=[1, 2], ceil_mode=1)),
    ("AveragePool", (1, 16, 30), dict(kernel_shape=[4], strides=[4])),
    ("AveragePool", (1, 3, 11), dict(kernel_shape=[3], strides=[2], pads=[1, 1], count_include_pad=1)),
    ("AveragePool", (1, 3, 11), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
]


def check(tmp_path, node, xs, inits, seed):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xs))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    x = np.random.default_rng(seed).standard_normal(xs).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv1d_matches_onnx_runtime(tmp_path, case):
    xs, m, group, k, attrs, bias = CONVS[case]
    rng = np.random.default_rng(case)
    inits = [numpy_helper.from_array(rng.standard_normal((m, xs[1] // group, k)).astype(np.float32), "w")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b"))
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], group=group, kernel_shape=[k], **attrs)
    check(tmp_path, node, xs, inits, case)


@pytest.mark.parametrize("case", range(len(POOLS)))
def test_pool1d_matches_onnx_runtime(tmp_path, case):
    op, xs, attrs = POOLS[case]
    check(tmp_path, helper.make_node(op, ["x"], ["y"], **attrs), xs, [], 10 + case)
