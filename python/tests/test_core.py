"""The weft Python package: graphs, runs without copies, packages, model files, ONNX import."""
import os

import numpy as np
import pytest

import weft


def rng(seed=0):
    return np.random.default_rng(seed)


def add_relu_graph(shape=(4, 5)):
    g = weft.Graph("add_relu")
    g.add_input("x", "float32", list(shape)).add_input("y", "float32", list(shape))
    g.add_node("Add", "add", ["x", "y"], ["s"]).add_node("Relu", "relu", ["s"], ["z"]).add_output("z")
    return g


def test_build_compile_run_against_numpy():
    s = weft.Session(use_env_path=False)
    m = s.compile(add_relu_graph())
    x, y = rng(1).standard_normal((2, 4, 5)).astype(np.float32)
    (z,) = m.run([x, y])
    np.testing.assert_array_equal(z, np.maximum(x + y, 0))
    assert m.inputs == [("x", "float32", [4, 5]), ("y", "float32", [4, 5])]
    assert m.outputs == [("z", "float32", [4, 5])]
    assert m.memory()["arena_bytes"] >= 0


def test_run_into_writes_the_callers_buffer():
    s = weft.Session(use_env_path=False)
    m = s.compile(add_relu_graph())
    x, y = rng(2).standard_normal((2, 4, 5)).astype(np.float32)
    out = np.full((4, 5), np.nan, np.float32)
    m.run_into([x, y], [out])
    np.testing.assert_array_equal(out, np.maximum(x + y, 0))
    with pytest.raises(ValueError, match="input 'x'"):
        m.run([x[:2], y])


def test_torch_tensors_without_copies():
    torch = pytest.importorskip("torch")
    s = weft.Session(use_env_path=False)
    m = s.compile(add_relu_graph())
    x, y = torch.randn(4, 5), torch.randn(4, 5)
    (z,) = weft.run(m, x, y)
    assert isinstance(z, torch.Tensor)
    torch.testing.assert_close(z, torch.relu(x + y), rtol=0, atol=0)
    view = weft.as_array(x)
    assert view.__array_interface__["data"][0] == x.data_ptr()  # a view, not a copy


def test_constants_attributes_and_a_package(pkg):
    s = weft.Session(packages=[pkg("test_ops")], use_env_path=False)
    g = weft.Graph("scale")
    w = rng(3).standard_normal((3,)).astype(np.float32)
    g.add_input("x", "float32", [2, 3]).add_constant("w", w)
    g.add_node("Mul", "mul", ["x", "w"], ["m"])
    g.add_node("ScaleAttrs", "sc", ["m"], ["y"], {"scale": 2.0, "bias": 0.5})
    g.add_output("y")
    x = rng(4).standard_normal((2, 3)).astype(np.float32)
    (y,) = s.compile(g).run([x])
    np.testing.assert_allclose(y, (x * w) * 2.0 + 0.5, rtol=1e-6)
    assert "ScaleAttrs" in s.ops()
    schema = s.schema("ScaleAttrs")
    assert [a["name"] for a in schema["attrs"]][:2] == ["scale", "bias"]


def test_errors_name_the_culprit():
    s = weft.Session(use_env_path=False)
    g = weft.Graph("bad")
    g.add_input("x", "float32", [3]).add_node("NoSuchOp", "n1", ["x"], ["y"]).add_output("y")
    with pytest.raises(KeyError, match="NoSuchOp 'n1'"):
        s.compile(g)
    with pytest.raises(TypeError):
        weft.Graph("t").add_input("x", "complex64", [1])
    with pytest.raises(ValueError, match="no attribute 'bogus'"):
        g2 = weft.Graph("a")
        g2.add_input("x", "float32", [3]).add_node("Relu", "r", ["x"], ["y"], {"bogus": 1}).add_output("y")
        s.compile(g2)


def test_model_file_round_trip(tmp_path, pkg):
    s = weft.Session(packages=[pkg("compilable_add_custom")], use_env_path=False)
    g = weft.Graph("add")
    g.add_input("x", "float32", [3, 8]).add_input("y", "float32", [3, 8])
    g.add_node("CompilableAddCustom", "a", ["x", "y"], ["z"]).add_output("z")
    os.environ.setdefault("WEFT_CACHE_DIR", str(tmp_path / "cache"))
    m = s.compile(g)
    path = str(tmp_path / "add.weft")
    m.save(path, embed_plugins=True)
    x, y = rng(5).standard_normal((2, 3, 8)).astype(np.float32)
    with pytest.raises(RuntimeError, match="runs only when trusted"):
        weft.Session(use_env_path=False).load_model(path)  # native code from a file needs trust
    loaded = weft.Session(use_env_path=False).load_model(path, trust_embedded_code=True)  # plugin from the file
    (z,) = loaded.run([x, y])
    np.testing.assert_array_equal(z, x + y)
    data = open(path, "rb").read()
    with pytest.raises(ValueError, match="truncated"):
        s.load_model_bytes(data[: len(data) // 2])


def test_dynamic_and_data_dependent_shapes():
    s = weft.Session(use_env_path=False)
    g = weft.Graph("nz")
    g.add_input("x", "int32", [-1]).add_node("NonZero", "nz", ["x"], ["y"]).add_output("y")
    m = s.compile(g)
    assert m.has_dynamic_shapes
    x = np.array([0, 3, 0, 0, 7, 1], np.int32)
    (y,) = m.run([x])
    np.testing.assert_array_equal(y, np.array(np.nonzero(x)))


def test_onnx_import_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).eval()
    x = torch.randn(3, 6)
    path = str(tmp_path / "mlp.onnx")
    torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"], opset_version=13, dynamo=False)
    g = weft.import_onnx(path)
    m = weft.Session(use_env_path=False).compile(g)
    (y,) = weft.run(m, x)
    with torch.no_grad():
        torch.testing.assert_close(y, net(x), rtol=1e-5, atol=1e-6)
