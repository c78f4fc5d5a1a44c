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
