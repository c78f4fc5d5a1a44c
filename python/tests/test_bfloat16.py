"""bfloat16 tensors to and from Python: ml_dtypes' bfloat16 arrays when ml_dtypes is installed,
raw uint16 bits otherwise (and raw bits are accepted for a bfloat16 input either way). The
rounding is checked against ml_dtypes' own float32 -> bfloat16 conversion."""
import os
import subprocess
import sys

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper  # noqa: E402


@pytest.fixture(scope="module")
def cast_model(tmp_path_factory):
    """x (float32) -> y (bfloat16); b (bfloat16) -> z (float32), 2 * b -> w (bfloat16)."""
    g = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16), helper.make_node("Cast", ["b"], ["z"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["b", "b"], ["w"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64]), helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [64])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [64]), helper.make_tensor_value_info("z", TensorProto.FLOAT, [64]),
         helper.make_tensor_value_info("w", TensorProto.BFLOAT16, [64])])
    path = str(tmp_path_factory.mktemp("bf16") / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)
    return path


def inputs():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(64) * 10.0 ** rng.integers(-3, 4, 64)).astype(np.float32)
    x[:4] = [0.0, -0.0, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8]  # ties round to even
    return x, rng.standard_normal(64).astype(ml_dtypes.bfloat16)


def test_bfloat16_arrays_in_and_out(cast_model):
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(cast_model))
    assert [o[1] for o in m.outputs] == ["bfloat16", "float32", "bfloat16"]
    x, b = inputs()
    y, z, w = m.run([x, b])
    assert y.dtype == np.dtype(ml_dtypes.bfloat16) and w.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(y.view(np.uint16), x.astype(ml_dtypes.bfloat16).view(np.uint16))
    np.testing.assert_array_equal(z, b.astype(np.float32))
    np.testing.assert_array_equal(w.astype(np.float32), (b.astype(np.float32) * 2))  # doubling is exact
    # the same bits given as uint16 are read as bfloat16
    _, z2, _ = m.run([x, b.view(np.uint16)])
    np.testing.assert_array_equal(z2, z)
    # another 2-byte type is still refused, by name
    with pytest.raises(ValueError, match="'b' must be bfloat16.*got float16"):
        m.run([x, b.astype(np.float16)])


def test_without_ml_dtypes_outputs_are_raw_bits(cast_model):
    code = f"""
import sys
sys.modules["ml_dtypes"] = None  # as if not installed
import numpy as np, weft
m = weft.Session(use_env_path=False).compile(weft.import_onnx({cast_model!r}))
x = np.array([1.0, -2.5] + [0.0] * 62, np.float32)
b = np.zeros(64, np.uint16); b[0] = 0x3FC0  # 1.5
y, z, w = m.run([x, b])
assert y.dtype == np.uint16 and list(y[:2]) == [0x3F80, 0xC020], y[:2]
assert z[0] == 1.5 and w.dtype == np.uint16 and w[0] == 0x4040, (z[0], w[0])
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_run_into_takes_raw_bits(cast_model):
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(cast_model))
    x, b = inputs()
    y, z, w = np.zeros(64, np.uint16), np.zeros(64, np.float32), np.zeros(64, ml_dtypes.bfloat16)
    m.run_into([x, b.view(np.uint16)], [y, z, w])
    np.testing.assert_array_equal(y, x.astype(ml_dtypes.bfloat16).view(np.uint16))
    np.testing.assert_array_equal(z, b.astype(np.float32))
    np.testing.assert_array_equal(w.astype(np.float32), b.astype(np.float32) * 2)


def test_first_use_from_many_threads_at_once(cast_model):
    # ml_dtypes is imported on the first bfloat16 output; threads that reach it together must
    # all get it (its import lets the GIL go while another thread may be waiting).
    code = f"""
import sys, threading
import numpy as np, weft
assert "ml_dtypes" not in sys.modules
sys.setswitchinterval(1e-6)
m = weft.Session(use_env_path=False).compile(weft.import_onnx({cast_model!r}))
x, b = np.ones(64, np.float32), np.zeros(64, np.uint16)
barrier, kinds = threading.Barrier(8), []
def go():
    barrier.wait()
    kinds.append(str(m.run([x, b])[0].dtype))
ts = [threading.Thread(target=go) for _ in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
print(sorted(set(kinds)))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.strip() == "['bfloat16']", r.stdout + r.stderr
