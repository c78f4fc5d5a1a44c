"""Elementwise ops and global pooling between channel-blocked convolutions (the layout pass keeps
the blocked layout through them) against ONNX Runtime: channel counts that are not multiples of
16, per-channel operands on either side of a Sub, per-batch gates, a squeeze-and-excitation
block as mobile networks write it."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


@pytest.mark.parametrize("channels", [16, 20, 40])
@pytest.mark.parametrize("batch", [1, 2])
def test_se_block_and_residual_in_the_blocked_layout(tmp_path, channels, batch):
    rng = np.random.default_rng(channels * 10 + batch)
    c = channels
    w = lambda *s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), f"w{len(inits)}")  # noqa: E731
    inits = []
    def const(*s):
        inits.append(w(*s))
        return inits[-1].name
    w1, w2, w3, fc1, fc2, w4 = const(c, 8, 1, 1), const(c, 1, 3, 3), const(c, c, 1, 1), const(4, c, 1, 1), const(c, 4, 1, 1), const(12, c, 1, 1)
    nodes = [
        helper.make_node("Conv", ["x", w1], ["a"]),
        helper.make_node("Relu", ["a"], ["a1"]),
        helper.make_node("Conv", ["a1", w2], ["d"], group=c, pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["d"], ["g"]),
        helper.make_node("Conv", ["g", fc1], ["g1"]),
        helper.make_node("Relu", ["g1"], ["g2"]),
        helper.make_node("Conv", ["g2", fc2], ["g3"]),
        helper.make_node("Sigmoid", ["g3"], ["gate"]),      # [N, C, 1, 1], per batch
        helper.make_node("Mul", ["d", "gate"], ["se"]),
        helper.make_node("Sub", ["gate", "se"], ["s2"]),    # per-channel operand first
        helper.make_node("Conv", ["s2", w3], ["p"]),
        helper.make_node("Add", ["p", "a1"], ["r"]),        # same-shape residual
        helper.make_node("Mul", ["r", "r"], ["rr"]),
        helper.make_node("Conv", ["rr", w4], ["y"]),
        helper.make_node("GlobalMaxPool", ["rr"], ["m"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8, 9, 7])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("m", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "se.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    x = rng.standard_normal((batch, 8, 9, 7)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    session = weft.Session(threads=2, use_env_path=False)
    model = session.compile(weft.import_onnx(path))
    got = model.run([x])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("widths", [(16, 32), (16, 24), (32, 32, 48)])
def test_channel_concat_between_convolutions(tmp_path, widths):
    """Blocked when every part has a multiple of 16 channels, plain otherwise; same results."""
    rng = np.random.default_rng(sum(widths))
    inits, nodes, parts = [], [], []
    for k, c in enumerate(widths):
        inits.append(numpy_helper.from_array((rng.standard_normal((c, 8, 3, 3)) * 0.3).astype(np.float32), f"w{k}"))
        nodes.append(helper.make_node("Conv", ["x", f"w{k}"], [f"p{k}"], pads=[1, 1, 1, 1]))
        parts.append(f"p{k}")
    total = sum(widths)
    inits.append(numpy_helper.from_array((rng.standard_normal((5, total, 1, 1)) * 0.3).astype(np.float32), "wo"))
    nodes += [helper.make_node("Concat", parts, ["cat"], axis=1), helper.make_node("Conv", ["cat", "wo"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 10, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "cat.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    x = rng.standard_normal((2, 8, 10, 6)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cin,cout,spatial", [(24, 28, (0, 0, 0, 0)), (16, 40, (1, 1, 1, 1)), (20, 32, (2, 2, 2, 2)), (8, 12, (1, 0, 2, 1))])
def test_channel_pad_between_convolutions(tmp_path, cin, cout, spatial):
    """A zero Pad that adds channels (and rows/columns) between convolutions, as a residual branch
    of a BlazeFace block: it keeps the channel-blocked layout (checked with `weft inspect --steps`
    where the machine's convolutions use it) and matches ONNX Runtime."""
    import os
    import re
    import subprocess
    rng = np.random.default_rng(cin + cout)
    t, left, b, r = spatial
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
             for n, s in [("w0", (cin, 8, 1, 1)), ("wm", (cin, cin, 1, 1)), ("wd", (cin, 1, 3, 3)), ("w1", (cout, cin, 1, 1)),
                          ("w2", (6, cout, 1, 1))]]
    inits.append(numpy_helper.from_array(np.array([0, 0, t, left, 0, cout - cin, b, r], np.int64), "pads"))
    nodes = [  # pointwise, then depthwise + pointwise beside the padded residual
        helper.make_node("Conv", ["x", "w0"], ["a"]),
        helper.make_node("Relu", ["a"], ["a0"]),
        helper.make_node("Conv", ["a0", "wm"], ["m"]),
        helper.make_node("Relu", ["m"], ["a1"]),
        helper.make_node("Pad", ["a1", "pads"], ["p"], name="chpad"),
        helper.make_node("Conv", ["a1", "wd"], ["d"], group=cin, pads=[1 + t, 1 + left, 1 + b, 1 + r]),
        helper.make_node("Conv", ["d", "w1"], ["c"]),
        helper.make_node("Add", ["c", "p"], ["s"]),
        helper.make_node("Relu", ["s"], ["s1"]),
        helper.make_node("Conv", ["s1", "w2"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 24, 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "pad.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    x = rng.standard_normal((1, 8, 24, 20)).astype(np.float32) - 0.5
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    cli = os.environ.get("WEFT_CLI")
    if cli and os.path.exists(cli):
        steps = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout
        conv = [line for line in steps.splitlines() if re.match(r"\s+\d+ Conv ", line)][1]  # the one before the Pad
        if conv.endswith("@NC1HWC0)"):  # this machine's convolutions take the blocked layout
            pad = next(line for line in steps.splitlines() if "'chpad'" in line)
            assert pad.count("@NC1HWC0") == 2, steps


@pytest.mark.parametrize("cin,k,stride", [(3, 5, 2), (1, 3, 1), (3, 3, 2)])
def test_first_layer_writes_the_blocked_layout(tmp_path, cin, k, stride):
    """A convolution over the plain graph input with few channels (fast only with its input plain)
    still writes the channel-blocked layout for the convolutions after it, residual included."""
    import os
    import re
    import subprocess
    rng = np.random.default_rng(cin * 10 + k)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
             for n, s in [("w0", (24, cin, k, k)), ("wd", (24, 1, 3, 3)), ("w1", (24, 24, 1, 1)), ("w2", (5, 24, 1, 1))]]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["a"], pads=[k // 2] * 4, strides=[stride, stride]),
        helper.make_node("Relu", ["a"], ["a1"]),
        helper.make_node("Conv", ["a1", "wd"], ["d"], group=24, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["d", "w1"], ["c"]),
        helper.make_node("Add", ["c", "a1"], ["s"]),
        helper.make_node("Conv", ["s", "w2"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, cin, 30, 26])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "first.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    x = rng.standard_normal((2, cin, 30, 26)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    cli = os.environ.get("WEFT_CLI")
    if cli and os.path.exists(cli):
        steps = [line for line in subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout.splitlines()
                 if re.match(r"\s+\d+ Conv ", line)]
        if "@NC1HWC0" in steps[2]:  # this machine's convolutions take the blocked layout
            assert steps[0].endswith("@NC1HWC0)") and "(x:" in steps[0] and "x:float32[2,%d,30,26]," % cin in steps[0], steps[0]


@pytest.mark.parametrize("mode,ctm,scale", [("nearest", "asymmetric", 2.0), ("nearest", "half_pixel", 1.5),
                                            ("linear", "half_pixel", 2.0), ("linear", "align_corners", 2.0), ("linear", "asymmetric", 1.5),
                                            ("linear", "pytorch_half_pixel", 0.5), ("cubic", "half_pixel", 2.0)])
def test_resize_between_convolutions(tmp_path, mode, ctm, scale):
    """An FPN/YOLO-style upsample between convolutions, concatenated with a skip branch: the Resize
    keeps the channel-blocked layout (checked where the machine's convolutions use it) and matches
    ONNX Runtime in every mode."""
    import os
    import re
    import subprocess
    rng = np.random.default_rng(int(scale * 10) + len(mode + ctm))
    h, w = 12, 10
    oh, ow = int(np.floor(h * scale)), int(np.floor(w * scale))
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
             for n, s in [("w0", (32, 8, 1, 1)), ("w1", (32, 32, 1, 1)), ("ws", (16, 8, 1, 1)), ("w2", (5, 48, 1, 1))]]
    inits.append(numpy_helper.from_array(np.array([1, 1, scale, scale], np.float32), "scales"))
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["a"]),
        helper.make_node("Relu", ["a"], ["a1"]),
        helper.make_node("Conv", ["a1", "w1"], ["b"]),
        helper.make_node("Resize", ["b", "", "scales"], ["u"], name="up", mode=mode, coordinate_transformation_mode=ctm),
        helper.make_node("Conv", ["skip", "ws"], ["s"]),
        helper.make_node("Concat", ["u", "s"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "w2"], ["y"]),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, h, w]),
                                       helper.make_tensor_value_info("skip", TensorProto.FLOAT, [1, 8, oh, ow])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "up.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    feeds = {"x": rng.standard_normal((1, 8, h, w)).astype(np.float32), "skip": rng.standard_normal((1, 8, oh, ow)).astype(np.float32)}
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = weft.Session(threads=2, use_env_path=False).compile(weft.import_onnx(path)).run([feeds["x"], feeds["skip"]])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    cli = os.environ.get("WEFT_CLI")
    if cli and os.path.exists(cli):
        lines = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout.splitlines()
        conv = [line for line in lines if re.match(r"\s+\d+ Conv ", line)][1]
        if conv.endswith("@NC1HWC0)"):  # this machine's convolutions take the blocked layout
            up = next(line for line in lines if "'up'" in line)
            assert up.count("@NC1HWC0") == 2, up


@pytest.mark.parametrize("act", [None, "Relu", "Sigmoid", "LeakyRelu"])
@pytest.mark.parametrize("grow", [16, 12])
def test_pre_activation_batch_norm_between_convolutions(tmp_path, act, grow):
    """A DenseNet-style block: Concat of two convolutions' outputs, then BatchNormalization and an
    activation (fused into it), then a convolution. The BatchNormalization cannot fold into a
    producer (it reads a Concat), so it runs on the channel-blocked layout; channels that are not
    a multiple of 16 (grow 12) leave padded lanes, which an activation such as Sigmoid would move
    off zero. Checked against ONNX Runtime; where this machine's convolutions use the blocked
    layout the BatchNormalization must run blocked too."""
    import os
    import re
    import subprocess
    rng = np.random.default_rng(grow)
    c = 16 + grow
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
             for n, s in [("w0", (16, 16, 3, 3)), ("w1", (grow, 16, 3, 3)), ("w2", (8, c, 1, 1))]]
    inits += [numpy_helper.from_array(rng.uniform(0.5, 2.0, c).astype(np.float32), "s"),
              numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b"),
              numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "m"),
              numpy_helper.from_array(rng.uniform(0.2, 2.0, c).astype(np.float32), "v")]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["a", "w1"], ["g"], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["a", "g"], ["cat"], axis=1),
        helper.make_node("BatchNormalization", ["cat", "s", "b", "m", "v"], ["n" if act else "r"], epsilon=1e-5),
    ]
    if act:
        nodes.append(helper.make_node(act, ["n"], ["r"], **({"alpha": 0.1} if act == "LeakyRelu" else {})))
    nodes.append(helper.make_node("Conv", ["r", "w2"], ["y"]))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 14, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / "bn.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8), path)
    x = rng.standard_normal((2, 16, 14, 12)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for threads in (1, 2):
        got = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    cli = os.environ.get("WEFT_CLI")
    if cli and os.path.exists(cli):
        lines = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout.splitlines()
        convs = [line for line in lines if re.match(r"\s+\d+ Conv ", line)]
        bn = [line for line in lines if re.match(r"\s+\d+ BatchNormalization ", line)]
        assert len(bn) == 1 and not any(re.match(r"\s+\d+ (Relu|Sigmoid|LeakyRelu) ", line) for line in lines), lines
        if grow == 16 and convs[0].endswith("@NC1HWC0)"):  # this machine's convolutions take the blocked layout
            assert bn[0].count("@NC1HWC0") == 2, lines


@pytest.mark.parametrize("op", ["Exp", "Cos", "Softplus"])
def test_activation_that_moves_zero_keeps_the_blocked_layout_out(tmp_path, op):
    """An elementwise float op with f(0) != 0 between two convolutions of 20 channels: it takes
    pixel rows or plain values (Format(NHWC).AnyFormat()), never the channel-blocked layout, whose
    4 padding channels would stop being 0; the result equals ONNX Runtime's."""
    import os
    import subprocess
    rng = np.random.default_rng(len(op))
    w1 = numpy_helper.from_array((rng.standard_normal([20, 8, 3, 3]) * 0.2).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal([12, 20, 3, 3]) * 0.2).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]), helper.make_node(op, ["a"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["y"], pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 14, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1, w2])
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    x = rng.standard_normal([1, 8, 14, 14]).astype(np.float32)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    cli = os.environ.get("WEFT_CLI")
    if cli and os.path.exists(cli):
        steps = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout
        line = next(ln for ln in steps.splitlines() if f" {op} '" in ln)
        assert "@NC1HWC0" not in line, line
