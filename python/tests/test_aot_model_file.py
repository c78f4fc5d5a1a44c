"""weft aot on compiled models: a graph compiled with the default graph passes (fused residual and
bias additions and activations, channel-blocked layouts), as a Model object, as a saved .weft
file and through the CLI. The module's outputs must equal ONNX Runtime's on the source model
(the independent reference), and the C must contain the fused work it was given."""
import glob
import os
import shutil
import subprocess

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
CLI = os.environ.get("WEFT_CLI") or shutil.which("weft")

# (ONNX activation node(s) after the producer, the fused activation's name in the C comment)
ACTIVATIONS = {
    "relu": ([("Relu", {})], "Relu"),
    "clip": ([("Clip", {"min": -0.3, "max": 0.4})], "Clip"),
    "leaky": ([("LeakyRelu", {"alpha": 0.13})], "LeakyRelu"),
    "sigmoid": ([("Sigmoid", {})], "Sigmoid"),
    "tanh": ([("Tanh", {})], "Tanh"),
    "hard_sigmoid": ([("HardSigmoid", {"alpha": 0.25, "beta": 0.4})], "HardSigmoid"),
    "elu": ([("Elu", {"alpha": 0.7})], "Elu"),
    "hard_swish": ([("HardSwish", {})], "HardSwish"),
    "swish": ([("Swish", {})], "Swish"),
    "gelu": ([("Gelu", {})], "Gelu"),
    "gelu_tanh": ([("Gelu", {"approximate": "tanh"})], "GeluTanh"),
}


def activation_nodes(kind, x, y):
    """The ONNX nodes computing activation `kind` of value x into y (opset 20), and initializers."""
    (op, attrs), = ACTIVATIONS[kind][0]
    if op == "Clip":
        inits = [numpy_helper.from_array(np.array(attrs["min"], np.float32), "clip_lo"),
                 numpy_helper.from_array(np.array(attrs["max"], np.float32), "clip_hi")]
        return [helper.make_node("Clip", [x, "clip_lo", "clip_hi"], [y])], inits
    if op == "Swish":  # x * sigmoid(x), as exporters write SiLU
        return [helper.make_node("Sigmoid", [x], [x + "_sig"]), helper.make_node("Mul", [x, x + "_sig"], [y])], []
    return [helper.make_node(op, [x], [y], **attrs)], []


def conv_model(kind, residual, channels=16):
    """Conv 3x3 (pad 1) [+ residual Add of the input] -> activation -> Conv 1x1 -> activation: the
    two convolutions exchange a channel-blocked value in the compiled model."""
    rng = np.random.default_rng(7)
    c = channels
    w1 = numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) * 0.2).astype(np.float32), "w1")
    b1 = numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(np.float32), "b1")
    w2 = numpy_helper.from_array((rng.standard_normal((c, c, 1, 1)) * 0.3).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1])]
    src = "c1"
    if residual:
        nodes.append(helper.make_node("Add", ["c1", "x"], ["r1"]))
        src = "r1"
    act1, inits = activation_nodes(kind, src, "a1")
    nodes += act1
    nodes.append(helper.make_node("Conv", ["a1", "w2"], ["c2"]))
    act2, _ = activation_nodes(kind, "c2", "y")
    nodes += [n for n in act2]
    g = helper.make_graph(nodes, "conv_" + kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 9, 7])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 9, 7])], initializer=[w1, b1, w2] + inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def matmul_model(kind):
    """MatMul + Add of a bias along the last dim -> activation (the bias fuses into the MatMul)."""
    rng = np.random.default_rng(11)
    w = numpy_helper.from_array((rng.standard_normal((24, 40)) * 0.2).astype(np.float32), "w")
    b = numpy_helper.from_array((rng.standard_normal(40) * 0.5).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["mb"])]
    act, inits = activation_nodes(kind, "mb", "y")
    g = helper.make_graph(nodes + act, "mm_" + kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5, 24])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5, 40])], initializer=[w, b] + inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def reference(path, inputs):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, inputs)))


def build_and_run(out, tmp_path, name):
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    exe = str(tmp_path / f"{name}_test")
    subprocess.run([cc, *STRICT, f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test", *sorted(glob.glob(f"{out}/src/*.c")),
                    *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def fused_comments(out):
    text = "".join(open(p).read() for p in glob.glob(f"{out}/src/*.c"))
    return [line.strip() for line in text.splitlines() if "/* fused:" in line]


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("kind", sorted(ACTIVATIONS))
def test_compiled_convolutions_with_fused_work_match_onnx_runtime(tmp_path, kind, residual):
    path = str(tmp_path / "m.onnx")
    model = conv_model(kind, residual)
    onnx.save(model, path)
    x = np.random.default_rng(3).standard_normal((1, 16, 9, 7)).astype(np.float32)
    want = reference(path, {"x": x})
    compiled = weft.Session(use_env_path=False).compile(weft.import_model(path))
    assert compiled.num_steps == 2, "every addition and activation should fuse into the convolutions"
    np.testing.assert_allclose(compiled.run([x])[0], want["y"], rtol=1e-4, atol=1e-5)
    out = tmp_path / "c"
    weft.generate_c(compiled, out, prefix="m", test_inputs={"x": x}, test_outputs=want, atol=1e-5, rtol=1e-4)
    comments = fused_comments(out)
    name = ACTIVATIONS[kind][1]
    assert len(comments) == 2 and all(c.endswith(name + " */") for c in comments), comments
    assert ("+ addend" in comments[0]) == residual
    build_and_run(out, tmp_path, "m")


@pytest.mark.parametrize("kind", sorted(ACTIVATIONS))
def test_compiled_matmul_with_fused_bias_and_activation_matches_onnx_runtime(tmp_path, kind):
    path = str(tmp_path / "m.onnx")
    onnx.save(matmul_model(kind), path)
    x = np.random.default_rng(5).standard_normal((3, 5, 24)).astype(np.float32) * 2
    want = reference(path, {"x": x})
    compiled = weft.Session(use_env_path=False).compile(weft.import_model(path))
    assert compiled.num_steps == 1
    out = tmp_path / "c"
    weft.generate_c(compiled, out, prefix="mm", test_inputs={"x": x}, test_outputs=want, atol=1e-5, rtol=1e-4)
    comments = fused_comments(out)
    assert len(comments) == 1 and "+ bias" in comments[0] and comments[0].endswith(ACTIVATIONS[kind][1] + " */"), comments
    build_and_run(out, tmp_path, "mm")


def test_a_saved_model_file_converts_from_python_and_the_cli(tmp_path):
    path = str(tmp_path / "m.onnx")
    onnx.save(conv_model("hard_swish", True, channels=32), path)
    x = np.random.default_rng(9).standard_normal((1, 32, 9, 7)).astype(np.float32)
    want = reference(path, {"x": x})
    weft_file = str(tmp_path / "m.weft")
    weft.Session(use_env_path=False).compile(weft.import_model(path)).save(weft_file)
    out = tmp_path / "py"
    report = weft.generate_c(weft_file, out, prefix="mf", test_inputs={"x": x}, test_outputs=want, atol=1e-5, rtol=1e-4)
    assert report["ops"] == 2
    # The blocked value between the convolutions is plain in the module: at most three plain
    # tensors of 32 x 9 x 7 floats live at once (input, residual result, output), each 16-aligned.
    assert report["arena_bytes"] <= 3 * (32 * 9 * 7 * 4 + 16)
    build_and_run(out, tmp_path, "mf")
    with pytest.raises(ValueError, match="input_shapes"):
        weft.generate_c(weft_file, tmp_path / "bad", input_shapes={"x": [1, 32, 9, 7]})
    if not CLI:
        pytest.skip("the weft CLI is not on PATH (WEFT_CLI)")
    cli_out = tmp_path / "cli"
    res = subprocess.run([CLI, "aot", weft_file, "-o", str(cli_out), "--prefix", "mc", "--test"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert build_and_run(cli_out, tmp_path, "mc").startswith("mc: 0 of ")
