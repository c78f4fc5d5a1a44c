"""Two compile-time rewrites of common export patterns, each checked against ONNX Runtime, with
`weft inspect --steps` showing whether the rewritten node still runs as its own step:

- a Slice that trims the spatial edges of a Conv's output (a causal convolution's "chomp") becomes
  less padding on the Conv (src/compile/passes/fold_slice.cc), and is kept where that cannot be
  exact;
- an activation after an Add, Sub or Mul that no producer absorbs runs inside it (ops/binary.cc),
  also between channel-blocked convolutions, where the padded channels must stay zero."""
import os
import subprocess

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def save(tmp_path, name, nodes, x_shape, inits, outputs=("y",)):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def steps_of(path):
    cli = os.environ.get("WEFT_CLI")
    if not cli:
        return None
    out = subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout
    return [line.split()[1] for line in out.splitlines() if line.strip()[:1].isdigit() and len(line.split()) > 1]


def check(path, x, runs_alone, not_alone=()):
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for threads in (1, 2):
        got = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path)).run([x])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    steps = steps_of(path)
    if steps is not None:
        for op in runs_alone:
            assert op in steps, steps
        for op in not_alone:
            assert op not in steps, steps


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


# (name, x shape, W shape, conv attrs, slice starts, ends, axes, steps or None, folds)
SLICES = [
    # The temporal convolution network's chomp: pad (k-1)*d both ends, drop the last (k-1)*d.
    ("tcn_chomp", (1, 8, 50), (8, 8, 3), dict(pads=[4, 4], dilations=[2]), [0], [-4], [2], None, True),
    ("tcn_chomp_big_end", (2, 6, 40), (5, 6, 3), dict(pads=[2, 2]), [0], [40], [-1], None, True),
    ("both_ends_2d", (1, 4, 12, 12), (6, 4, 3, 3), dict(pads=[2, 2, 2, 2]), [1, 1], [13, 12], [2, 3], [1, 1], True),
    ("stride2", (1, 3, 21), (4, 3, 3), dict(pads=[4, 4], strides=[2]), [1], [-1], [2], None, True),
    ("depthwise_2d", (1, 8, 9, 9), (8, 1, 3, 3), dict(pads=[1, 1, 1, 1], group=8), [0, 0], [8, 8], [2, 3], None, True),
    # Kept: the trim would need negative padding, a channel or batch slice, a step, nothing padded.
    ("needs_negative_pad", (1, 4, 20), (4, 4, 3), dict(pads=[1, 1]), [0], [-3], [2], None, False),
    ("channel_slice", (1, 8, 16), (8, 8, 3), dict(pads=[1, 1]), [0], [4], [1], None, False),
    ("step2", (1, 4, 20), (4, 4, 3), dict(pads=[2, 2]), [0], [20], [2], [2], False),
    ("unpadded", (1, 4, 20), (4, 4, 3), dict(), [0], [-2], [2], None, False),
]


@pytest.mark.parametrize("case", SLICES, ids=[c[0] for c in SLICES])
def test_slice_after_conv(tmp_path, case):
    name, xs, ws, attrs, starts, ends, axes, steps, folds = case
    rng = np.random.default_rng(len(name))
    inits = [numpy_helper.from_array(rng.standard_normal(ws).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(ws[0]).astype(np.float32), "b"),
             ints("s", starts), ints("e", ends), ints("a", axes)]
    slice_in = ["c", "s", "e", "a"]
    if steps is not None:
        inits.append(ints("st", steps))
        slice_in.append("st")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs), helper.make_node("Slice", slice_in, ["t"]),
             helper.make_node("Relu", ["t"], ["y"])]
    path = save(tmp_path, name, nodes, xs, inits)
    x = rng.standard_normal(xs).astype(np.float32)
    if folds:  # the Slice is gone and the Relu fuses into the Conv
        check(path, x, runs_alone=["Conv"], not_alone=["Slice", "Relu"])
    else:
        check(path, x, runs_alone=["Conv", "Slice"])


def test_slice_kept_when_the_conv_output_is_read_twice(tmp_path):
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 4, 3)).astype(np.float32), "w"),
             ints("s", [0]), ints("e", [-2]), ints("a", [2])]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[2, 2]), helper.make_node("Slice", ["c", "s", "e", "a"], ["y"]),
             helper.make_node("ReduceMean", ["c"], ["z"], keepdims=1)]
    path = save(tmp_path, "twice", nodes, (1, 4, 16), inits, outputs=("y", "z"))
    check(path, rng.standard_normal((1, 4, 16)).astype(np.float32), runs_alone=["Conv", "Slice"])


@pytest.mark.parametrize("act", ["Relu", "Tanh", "LeakyRelu", "Elu"])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_activation_after_binary_between_blocked_convolutions(tmp_path, op, act):
    # x -> conv1 + Relu -> a; a -> conv2 + Relu -> b; op(a, b) -> act. Both convolutions keep their
    # own Relu, so the binary op takes the activation; 20 channels pad to 32 when blocked.
    rng = np.random.default_rng(7)
    c = 20
    inits = [numpy_helper.from_array(rng.standard_normal((c, 6, 3, 3)).astype(np.float32) * 0.3, "w1"),
             numpy_helper.from_array(rng.standard_normal((c, c, 1, 1)).astype(np.float32) * 0.3, "w2"),
             numpy_helper.from_array(rng.standard_normal((c, c, 3, 3)).astype(np.float32) * 0.1, "w3")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["a"]),
             helper.make_node("Conv", ["a", "w2"], ["c2"]), helper.make_node("Relu", ["c2"], ["b"]),
             helper.make_node(op, ["b", "a"], ["s"]), helper.make_node(act, ["s"], ["r"]),
             helper.make_node("Conv", ["r", "w3"], ["y"], pads=[1, 1, 1, 1])]
    path = save(tmp_path, f"{op}_{act}", nodes, (1, 6, 10, 10), inits)
    x = rng.standard_normal((1, 6, 10, 10)).astype(np.float32)
    check(path, x, runs_alone=[op], not_alone=[act])


def test_activation_after_broadcast_add(tmp_path):
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(rng.standard_normal((1, 5)).astype(np.float32), "bias")]
    nodes = [helper.make_node("Add", ["x", "bias"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    path = save(tmp_path, "broadcast_add", nodes, (3, 4, 5), inits)
    check(path, rng.standard_normal((3, 4, 5)).astype(np.float32), runs_alone=["Add"], not_alone=["Relu"])


def test_sigmoid_after_add_is_not_fused(tmp_path):
    # Sigmoid(0) is not 0: it cannot run on a blocked tensor's padding, so it stays its own step.
    rng = np.random.default_rng(13)
    nodes = [helper.make_node("Add", ["x", "x"], ["s"]), helper.make_node("Sigmoid", ["s"], ["y"])]
    path = save(tmp_path, "sigmoid_add", nodes, (2, 7), [])
    check(path, rng.standard_normal((2, 7)).astype(np.float32), runs_alone=["Add", "Sigmoid"])
