"""BatchNormalization after a Conv or ConvTranspose is folded into the convolution's weights and bias
(src/compile/passes/fold_batch_norm.cc). Each model is checked against ONNX Runtime, and
`weft inspect --steps` shows whether the BatchNormalization still runs as its own step: folded where
the rewrite is exact, kept where it must not apply (the convolution's output read elsewhere too,
weights that are not constant, training mode)."""
import os
import subprocess

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def bn_inits(rng, c, prefix="bn"):
    # Running statistics away from 0/1 so that a wrong fold shows.
    return [numpy_helper.from_array(rng.uniform(0.5, 2.0, c).astype(np.float32), f"{prefix}_scale"),
            numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), f"{prefix}_bias"),
            numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), f"{prefix}_mean"),
            numpy_helper.from_array(rng.uniform(0.1, 3.0, c).astype(np.float32), f"{prefix}_var")]


def bn_node(x, y, prefix="bn", **attrs):
    return helper.make_node("BatchNormalization", [x] + [f"{prefix}_{n}" for n in ("scale", "bias", "mean", "var")], [y],
                            epsilon=1e-3, **attrs)


def build(tmp_path, name, nodes, x_shape, inits, outputs, inputs=()):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))] + list(inputs),
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=8), path)
    return path


def check(path, feeds, folded):
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    model = weft.Session(threads=1, use_env_path=False).compile(weft.import_onnx(path))
    got = model.run([feeds[k] for k in sorted(feeds, key=lambda k: k != "x")])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    cli = os.environ.get("WEFT_CLI")
    if cli:
        steps = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout
        ran = [line for line in steps.splitlines() if line.strip()[:1].isdigit() and " BatchNormalization " in line]
        assert (not ran) == folded, steps
        # The folded weights travel in a model file.
        weft_file = path[:-5] + ".weft"
        subprocess.run([cli, "compile", path, "-o", weft_file], capture_output=True, text=True, check=True)
        loaded = weft.Session(threads=1, use_env_path=False).load_model(weft_file)
        for g, w in zip(loaded.run([feeds[k] for k in sorted(feeds, key=lambda k: k != "x")]), want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


# (name, op, x shape, W shape, attrs, bias, activation after the BatchNormalization)
CASES = [
    ("conv", "Conv", (2, 5, 9, 9), (8, 5, 3, 3), dict(pads=[1, 1, 1, 1]), True, "Relu"),
    ("conv_nobias_grouped", "Conv", (1, 6, 8, 8), (9, 2, 3, 3), dict(group=3, strides=[2, 2]), False, None),
    ("conv_depthwise", "Conv", (1, 8, 7, 7), (8, 1, 3, 3), dict(group=8, pads=[1, 1, 1, 1]), True, "Relu"),
    ("conv1d", "Conv", (2, 4, 20), (6, 4, 5), dict(pads=[2, 2]), False, "Sigmoid"),
    ("convt", "ConvTranspose", (1, 6, 5, 5), (6, 4, 4, 4), dict(strides=[2, 2], pads=[1, 1, 1, 1]), False, "Relu"),
    ("convt_grouped_bias", "ConvTranspose", (2, 6, 4, 4), (6, 2, 3, 3), dict(group=3, strides=[2, 2]), True, "Tanh"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_batch_norm_folds_into_convolution(tmp_path, case):
    name, op, xs, ws, attrs, bias, act = case
    rng = np.random.default_rng(len(name))
    m = ws[1] * attrs.get("group", 1) if op == "ConvTranspose" else ws[0]
    inits = [numpy_helper.from_array(rng.standard_normal(ws).astype(np.float32), "w")] + bn_inits(rng, m)
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b"))
    nodes = [helper.make_node(op, ["x", "w"] + (["b"] if bias else []), ["c"], **attrs), bn_node("c", "n" if act else "y")]
    if act:
        nodes.append(helper.make_node(act, ["n"], ["y"]))
    path = build(tmp_path, name, nodes, xs, inits, ["y"])
    check(path, {"x": rng.standard_normal(xs).astype(np.float32)}, folded=True)


def test_shared_weights_keep_their_other_reader(tmp_path):
    # Two convolutions read one weight tensor; only the first is followed by a BatchNormalization.
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")] + bn_inits(rng, 4)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), bn_node("c", "y1"),
             helper.make_node("Conv", ["y1", "w", "b"], ["y2"], pads=[1, 1, 1, 1])]
    path = build(tmp_path, "shared", nodes, (1, 4, 6, 6), inits, ["y1", "y2"])
    check(path, {"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)}, folded=True)


def test_convolution_output_read_elsewhere_is_not_folded(tmp_path):
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")] + bn_inits(rng, 4)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), bn_node("c", "n"), helper.make_node("Add", ["c", "n"], ["y"])]
    path = build(tmp_path, "twice", nodes, (1, 3, 6, 6), inits, ["y"])
    check(path, {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}, folded=False)


def test_weights_from_an_input_are_not_folded(tmp_path):
    rng = np.random.default_rng(3)
    inits = bn_inits(rng, 4)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), bn_node("c", "y")]
    path = build(tmp_path, "input_w", nodes, (1, 3, 6, 6), inits, ["y"],
                 inputs=[helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 3, 3, 3])])
    check(path, {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32),
                 "w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32)}, folded=False)


def test_two_folds_of_one_shared_weight_get_distinct_names(tmp_path):
    # A siamese pair: one weight tensor, two convolutions, each followed by its own
    # BatchNormalization. Each fold needs its own weights; the model file keys them by name.
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")]
    inits += bn_inits(rng, 4, "bn1") + bn_inits(rng, 4, "bn2")
    # An initializer already named like a folded copy would be.
    inits.append(numpy_helper.from_array(np.ones(4, np.float32), "w/batch_norm_folded"))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c1"]), bn_node("c1", "y1", "bn1"),
             helper.make_node("Conv", ["x2", "w"], ["c2"]), bn_node("c2", "n2", "bn2"),
             helper.make_node("Add", ["n2", "w/batch_norm_folded"], ["y2"])]
    x2 = helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 3, 6, 6])
    path = build(tmp_path, "siamese", nodes, (1, 3, 6, 6), inits, ["y1", "y2"], inputs=[x2])
    check(path, {"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32),
                 "x2": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)}, folded=True)


def test_fold_that_would_overflow_float32_is_not_made(tmp_path):
    # The two taps cancel exactly on a constant input, so the convolution gives 0 and the batch
    # norm gives its bias; folded, the weights times 1e30 would be +-inf and the result NaN.
    inits = [numpy_helper.from_array(np.array([[[[1e10, -1e10]]]], np.float32), "w"),
             numpy_helper.from_array(np.array([1e30], np.float32), "bn_scale"),
             numpy_helper.from_array(np.array([0.5], np.float32), "bn_bias"),
             numpy_helper.from_array(np.array([0.0], np.float32), "bn_mean"),
             numpy_helper.from_array(np.array([1.0], np.float32), "bn_var")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), bn_node("c", "y")]
    path = build(tmp_path, "overflow", nodes, (1, 1, 3, 4), inits, ["y"])
    got = weft.Session(threads=1, use_env_path=False).compile(weft.import_onnx(path)).run([np.ones((1, 1, 3, 4), np.float32)])[0]
    np.testing.assert_array_equal(got, np.full((1, 1, 3, 3), 0.5, np.float32))
    cli = os.environ.get("WEFT_CLI")
    if cli:
        steps = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout
        assert " BatchNormalization " in steps, steps
