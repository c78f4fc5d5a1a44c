"""weft.generate_c: a model as a C99 module from Python (docs/aot.md), built and run here."""
import glob
import os
import shutil
import subprocess

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
import sys  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402


def mlp(tmp_path):
    """x [2, 6] -> FULLY_CONNECTED (RELU) -> FULLY_CONNECTED -> SOFTMAX, float32."""
    rng = np.random.default_rng(3)
    m = Model()
    x = m.tensor("x", [2, 6], "float32")
    w1 = m.tensor("w1", [5, 6], "float32", data=rng.standard_normal((5, 6)).astype(np.float32))
    b1 = m.tensor("b1", [5], "float32", data=rng.standard_normal(5).astype(np.float32))
    h = m.tensor("h", [2, 5], "float32")
    w2 = m.tensor("w2", [3, 5], "float32", data=rng.standard_normal((3, 5)).astype(np.float32))
    z = m.tensor("z", [2, 3], "float32")
    y = m.tensor("y", [2, 3], "float32")
    m.builtin(9, [x, w1, b1], [h], options=(8, [(0, "byte", 1)]))  # FULLY_CONNECTED, RELU
    m.builtin(9, [h, w2, -1], [z])
    m.builtin(25, [z], [y], options=(9, [(0, "float32", 1.0)]))  # SOFTMAX
    path = str(tmp_path / "mlp.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [y]))
    return path


def test_generate_c_builds_and_matches_numpy(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    path = mlp(tmp_path)
    x = np.random.default_rng(5).standard_normal((2, 6)).astype(np.float32)
    want = weft.Session(use_env_path=False).compile(weft.import_litert(path)).run([x])[0]
    out = tmp_path / "c"
    report = weft.generate_c(path, out, prefix="mlp", test_inputs={"x": x})
    assert report["ops"] == 3 and report["arena_bytes"] >= report["lower_bound_bytes"] > 0
    assert "includes-api/mlp.h" in report["files"] and "test/mlp_test_case.c" in report["files"]
    exe = str(tmp_path / "t")
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test",
                    *sorted(glob.glob(f"{out}/src/*.c")), *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout
    # The test case's golden outputs are the runtime's; check those against NumPy in float64.
    rng = np.random.default_rng(3)
    w1, b1 = rng.standard_normal((5, 6)), rng.standard_normal(5)
    w2 = rng.standard_normal((3, 5))
    w1, b1, w2 = (a.astype(np.float32).astype(np.float64) for a in (w1, b1, w2))
    z = np.maximum(x.astype(np.float64) @ w1.T + b1, 0) @ w2.T
    ref = np.exp(z - z.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(want, ref, rtol=1e-5, atol=1e-6)


def test_generate_c_errors_name_the_problem(tmp_path):
    path = mlp(tmp_path)
    with pytest.raises(ValueError, match="--prefix"):
        weft.generate_c(path, tmp_path / "bad", prefix="1x")
    with pytest.raises(ValueError, match="test input 'nope'"):
        weft.generate_c(path, tmp_path / "bad", test_inputs={"nope": np.zeros((2, 6), np.float32)})
    g = weft.Graph("isnan")
    g.add_input("x", "float32", [3])
    g.add_node("IsNaN", "n", ["x"], ["y"])
    g.add_output("y")
    with pytest.raises(Exception, match=r"\[IsNaN 'n'\]"):
        weft.generate_c(g, tmp_path / "isnan")


def layer_norm_model(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    s = numpy_helper.from_array(np.linspace(0.5, 2.0, 8).astype(np.float32), "s")
    g = helper.make_graph([helper.make_node("LayerNormalization", ["x", "s"], ["h"], name="ln", axis=-1, epsilon=1e-5),
                           helper.make_node("Relu", ["h"], ["y"], name="act")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])], initializer=[s])
    path = str(tmp_path / "ln.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


def layer_norm_relu(x, eps):
    x = x.astype(np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return np.maximum((x - mu) / np.sqrt(var + eps) * np.linspace(0.5, 2.0, 8), 0)


def build_and_run(out, tmp_path, objects_too=False):
    cc = shutil.which(os.environ.get("CC", "cc"))
    exe = str(tmp_path / "t")
    srcs = sorted(glob.glob(f"{out}/src/*.c")) + sorted(glob.glob(f"{out}/test/*.c"))
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test",
                    *srcs, "-o", exe, "-lm"], check=True)
    return subprocess.run([exe], capture_output=True, text=True)


def test_config_rules_set_attributes_and_sections(tmp_path):
    """A config file's rule changes LayerNormalization's epsilon (the C then matches a float64
    recomputation with the new value, and not with the old one) and places the Relu's code and
    the constants in named sections."""
    if not shutil.which(os.environ.get("CC", "cc")):
        pytest.skip("needs a C compiler")
    path = layer_norm_model(tmp_path)
    cfg = tmp_path / "aot.yaml"
    cfg.write_text("# rules for the test\noperators:\n  - type: LayerNormalization\n    attributes:\n      epsilon: 0.5\n"
                   "  - type: '*'\n    name: 'a?t'\n    attributes: {code_section: .itcm_text}\nconst_section: .ext_rodata\nprefix: lnc\n")
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32) * 0.3
    want = layer_norm_relu(x, 0.5).astype(np.float32)
    out = tmp_path / "c"
    rep = weft.generate_c(path, out, test_inputs={"x": x}, test_outputs={"y": want}, config=cfg)
    assert rep["prefix"] == "lnc"
    res = build_and_run(out, tmp_path)
    assert res.returncode == 0, res.stdout
    # The old epsilon's result differs by far more than the tolerance: the same module fails it.
    assert np.abs(layer_norm_relu(x, 1e-5) - want).max() > 1e-2
    out2 = tmp_path / "c2"
    weft.generate_c(path, out2, test_inputs={"x": x}, test_outputs={"y": layer_norm_relu(x, 1e-5).astype(np.float32)}, config=cfg)
    assert build_and_run(out2, tmp_path).returncode != 0
    src = (out / "src" / "lnc.c").read_text()
    assert '__attribute__((section(".itcm_text")))' in src
    assert src.count("lnc_CODE_SECTION_0 int32_t") == 2  # the Relu's init and run, not the LayerNormalization's
    assert '.ext_rodata' in (out / "src" / "lnc_constants.h").read_text()
    objdump = shutil.which("objdump")
    if objdump:
        obj = str(tmp_path / "lnc.o")
        subprocess.run([shutil.which(os.environ.get("CC", "cc")), "-std=c99", "-c", f"-I{out}/includes-api", f"-I{out}/src",
                        str(out / "src" / "lnc.c"), "-o", obj], check=True)
        assert ".itcm_text" in subprocess.run([objdump, "-h", obj], capture_output=True, text=True).stdout


@pytest.mark.parametrize("text,message", [
    ("operators:\n  - type: LayerNormalization\n    attributes: {epsilom: 0.5}\n", r"has no attribute 'epsilom'; did you mean 'epsilon'\?"),
    ("operators:\n  - type: LayerNormalizaton\n    attributes: {epsilon: 0.5}\n", r"no op type 'LayerNormalizaton'.*did you mean 'LayerNormalization'"),
    ("operators:\n  - type: LayerNormalization\n    attributes: {epsilon: abc}\n", r"'epsilon' of LayerNormalization takes a float"),
    ("operators:\n  - type: LayerNormalization\n    attributes: {axis: [1, 2]}\n", r"'axis' of LayerNormalization takes an integer"),
    ("operator:\n  - type: Relu\n", r":1: unknown key 'operator'; did you mean 'operators'\?"),
    ("operators:\n  - typ: Relu\n    attributes: {code_section: .a}\n", r":2: unknown rule key 'typ'; did you mean 'type'\?"),
    ("operators:\n  - type: Relu\n    name: 'nothing*'\n    attributes: {code_section: .a}\n", r"reaches no node"),
    ("operators:\n  - type: Relu\n    attributes: {code_section: '.a\"b'}\n", r"code_section"),
    ("operators:\n  - type: '*'\n    attributes: {alpha: 1}\n", r"no op the rule reaches has attribute 'alpha'"),
    ("operators: [\n  {type: Relu", r"not valid YAML"),
    ("operators:\n  - type: Relu\n", r"sets no attributes"),
])
def test_config_errors_name_line_key_and_nearest(tmp_path, text, message):
    path = layer_norm_model(tmp_path)
    cfg = tmp_path / "aot.yaml"
    cfg.write_text(text)
    with pytest.raises(ValueError, match=message):
        weft.generate_c(path, tmp_path / "c", config=cfg)
    assert not (tmp_path / "c").exists()


def test_config_cli(tmp_path):
    cli = os.environ.get("WEFT_CLI")
    if not cli:
        pytest.skip("WEFT_CLI is not set")
    path = layer_norm_model(tmp_path)
    cfg = tmp_path / "aot.yaml"
    cfg.write_text("operators:\n  - type: LayerNormalization\n    attributes: {epsilon: 0.5, stash_type: 1}\n")
    ok = subprocess.run([cli, "aot", path, "-o", str(tmp_path / "c"), "--config", str(cfg)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    cfg.write_text("operators:\n  - type: LayerNormalization\n    attributes: {epsilonn: 0.5}\n")
    bad = subprocess.run([cli, "aot", path, "-o", str(tmp_path / "d"), "--config", str(cfg)], capture_output=True, text=True)
    assert bad.returncode != 0 and "did you mean 'epsilon'" in bad.stderr and str(cfg) in bad.stderr
    assert "--config" in subprocess.run([cli, "aot", "--help"], capture_output=True, text=True).stdout
