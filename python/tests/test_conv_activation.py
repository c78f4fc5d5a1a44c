"""A Conv followed by an activation (and optionally a residual Add), which the compiler fuses into
the convolution, against ONNX Runtime: 3x3 stride-1 layers that take oneDNN's Winograd kernels
(where transcendental activations run as a separate step) and the direct ones, channel counts
that are and are not multiples of the 16-channel block, and a second convolution reading the
first one's blocked output."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ACTIVATIONS = [
    ("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("LeakyRelu", {"alpha": 0.1}),
    ("Elu", {"alpha": 0.7}), ("HardSwish", {}),
]
SHAPES = [(32, 32, 12, 14), (20, 24, 9, 9), (3, 16, 10, 10)]  # (in channels, out channels, H, W)


def build(tmp_path, cin, cout, h, w, act, residual):
    rng = np.random.default_rng(cin * 100 + cout)
    inits = [
        numpy_helper.from_array(rng.uniform(-0.3, 0.3, (cout, cin, 3, 3)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.uniform(-0.3, 0.3, cout).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.uniform(-0.3, 0.3, (cout, cout, 3, 3)).astype(np.float32), "w2"),
    ]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1])]
    first = "c1"
    if residual:  # Conv + Add(residual) + activation: the residual is the first conv's input
        nodes.append(helper.make_node("Add", ["c1", "r"], ["s1"]))
        first = "s1"
    nodes.append(helper.make_node(act[0], [first], ["a1"], **act[1]))
    nodes.append(helper.make_node("Conv", ["a1", "w2"], ["c2"], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node(act[0], ["c2"], ["y"], **act[1]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, h, w])]
    if residual:
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, cout, h, w]))
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                               helper.make_tensor_value_info("a1", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "conv_act.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    feeds = {"x": rng.standard_normal((1, cin, h, w)).astype(np.float32)}
    if residual:
        feeds["r"] = rng.standard_normal((1, cout, h, w)).astype(np.float32)
    return path, feeds


@pytest.mark.parametrize("algorithm", ["auto", "winograd", "direct"])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("act", range(len(ACTIVATIONS)), ids=[a[0] for a in ACTIVATIONS])
@pytest.mark.parametrize("shape", SHAPES, ids=["32-32", "20-24", "3-16"])
def test_conv_activation_matches_onnx_runtime(tmp_path, shape, act, residual, algorithm):
    path, feeds = build(tmp_path, *shape, ACTIVATIONS[act], residual)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    model = weft.Session(threads=1, use_env_path=False, options={"weft.conv_algorithm": algorithm}).compile(weft.import_onnx(path))
    got = model.run([feeds[n] for n, _, _ in model.inputs])
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
