"""weft.serve's engine and HTTP bodies, without Ray: request checks, batching, identity."""
import io
import json

import numpy as np
import pytest

import weft
from weft.serve import Engine, RequestError
from weft.serve import _http

from serve_models import mlp, two_inputs

pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def mlp_path(tmp_path_factory):
    return mlp(tmp_path_factory.mktemp("serve") / "mlp.onnx")


def direct(path, x):
    model = weft.Session().compile(weft.import_onnx(str(path)))
    return model.run([x])[0]


def softmax_mlp_f64(path, x):
    import onnx
    from onnx import numpy_helper
    w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(str(path)).graph.initializer}
    h = np.maximum(x.astype(np.float64) @ w["w1"] + w["b1"], 0) @ w["w2"]
    e = np.exp(h - h.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_identity_and_metadata(mlp_path):
    e = Engine(mlp_path)
    ident = e.identity()
    assert ident["name"] == "mlp" and len(ident["version"]) == 12 and ident["engine"] == "weft"
    meta = e.metadata()
    assert meta["inputs"] == [{"name": "x", "dtype": "float32", "shape": [-1, 16]}]
    assert meta["outputs"][0]["name"] == "y" and meta["batched"]
    named = Engine(mlp_path, name="clf", version="7")
    assert named.identity()["name"] == "clf" and named.identity()["version"] == "7"


def test_outputs_match_float64(mlp_path):
    e = Engine(mlp_path)
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    y = e.infer({"x": x})["y"]
    np.testing.assert_allclose(y, softmax_mlp_f64(mlp_path, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("inputs,status,words", [
    ({"X": np.zeros((1, 16), np.float32)}, 422, ["unknown input 'X'", "did you mean 'x'"]),
    ({}, 422, ["missing input 'x'"]),
    ({"x": np.zeros((1, 16), np.float64)}, 422, ["'x' is float64", "takes float32"]),
    ({"x": np.zeros((1, 15), np.float32)}, 422, ["dim 1 must be 16"]),
    ({"x": np.zeros((16,), np.float32)}, 422, ["rank 2, not 1"]),
    ({"x": np.zeros((0, 16), np.float32)}, 422, ["empty batch"]),
    ({"x": [[1, 2], [3]]}, 422, ["'x'"]),
    ({"x": "text"}, 422, ["not an array of numbers"]),
    ([1, 2], 400, ["must be an object"]),
])
def test_bad_requests_name_the_input(mlp_path, inputs, status, words):
    with pytest.raises(RequestError) as err:
        Engine(mlp_path).infer(inputs)
    assert err.value.status == status
    for w in words:
        assert w in str(err.value)


def test_plain_numbers_convert_only_without_loss(tmp_path):
    e = Engine(two_inputs(tmp_path / "two.onnx"))
    out = e.infer({"a": [[1, 2, 3, 4]], "b": [[0.5, 0.5, 0.5, 0.5]]})["s"]
    np.testing.assert_array_equal(out, [[1.5, 2.0, 2.5, 3.0]])
    with pytest.raises(RequestError, match="'a' holds values that are not int32"):
        e.infer({"a": [[1.5, 2, 3, 4]], "b": [[0.5] * 4]})
    with pytest.raises(RequestError, match="'a' holds values that are not int32"):
        e.infer({"a": [[2 ** 40, 2, 3, 4]], "b": [[0.5] * 4]})
    with pytest.raises(RequestError, match="batch 2, other inputs 1"):
        e.infer({"a": [[1, 2, 3, 4]], "b": [[0.5] * 4, [1] * 4]})


def test_request_size_limit(mlp_path):
    e = Engine(mlp_path, max_request_bytes=1000)
    e.infer({"x": np.zeros((15, 16), np.float32)})  # 960 bytes
    with pytest.raises(RequestError) as err:
        e.infer({"x": np.zeros((16, 16), np.float32)})
    assert err.value.status == 413


def test_batches_run_together_and_split_back(mlp_path):
    e = Engine(mlp_path)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((n, 16)).astype(np.float32) for n in (1, 3, 2, 1)]
    items = [e.validate({"x": x}) for x in xs]
    outs = e.run_batch(items)
    assert len(outs) == 4
    for x, out in zip(xs, outs):
        assert out["y"].shape == (x.shape[0], 5)
        np.testing.assert_allclose(out["y"], direct(mlp_path, x), rtol=1e-5, atol=1e-6)


def test_batch_sizes_pad_up_and_match(mlp_path):
    e = Engine(mlp_path, batch_sizes=[1, 4])
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((n, 16)).astype(np.float32) for n in (1, 2, 3, 1)]
    outs = e.run_batch([e.validate({"x": x}) for x in xs])  # 7 rows: runs of 4 (padded) and 4
    for x, out in zip(xs, outs):
        np.testing.assert_allclose(out["y"], softmax_mlp_f64(mlp_path, x), rtol=1e-5, atol=1e-6)
    with pytest.raises(RequestError, match="exceeds the largest compiled batch size 4"):
        e.validate({"x": np.zeros((5, 16), np.float32)})


def test_batch_sizes_need_a_dynamic_batch(tmp_path):
    with pytest.raises(ValueError, match="dynamic first dim"):
        Engine(mlp(tmp_path / "fixed.onnx", batch=2), batch_sizes=[1, 2])


def test_fixed_shape_model_runs_requests_one_by_one(tmp_path):
    path = mlp(tmp_path / "fixed.onnx", batch=2)
    e = Engine(path)
    assert not e.batched
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((2, 16)).astype(np.float32) for _ in range(3)]
    for x, out in zip(xs, e.run_batch([e.validate({"x": x}) for x in xs])):
        np.testing.assert_allclose(out["y"], softmax_mlp_f64(path, x), rtol=1e-5, atol=1e-6)


def test_weft_file_and_onnxruntime_backend(tmp_path, mlp_path):
    compiled = tmp_path / "mlp.weft"
    weft.Session().compile(weft.import_onnx(str(mlp_path))).save(str(compiled))
    x = np.random.default_rng(5).standard_normal((2, 16)).astype(np.float32)
    a = Engine(compiled).infer({"x": x})["y"]
    np.testing.assert_allclose(a, softmax_mlp_f64(mlp_path, x), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="already compiled"):
        Engine(compiled, batch_sizes=[1, 2])
    pytest.importorskip("onnxruntime")
    b = Engine(mlp_path, backend="onnxruntime").infer({"x": x})["y"]
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_bad_models_and_options(tmp_path, mlp_path):
    with pytest.raises(FileNotFoundError, match="no such model file"):
        Engine(tmp_path / "missing.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises((ValueError, RuntimeError)):
        Engine(junk)
    other = tmp_path / "model.pb"
    other.write_bytes(b"x")
    with pytest.raises(ValueError, match="not a model Weft serves"):
        Engine(other)
    with pytest.raises(ValueError, match="unknown backend"):
        Engine(mlp_path, backend="tvm")
    with pytest.raises(ValueError, match="threads must be at least 1"):
        Engine(mlp_path, threads=0)


def test_json_bodies():
    assert _http.decode_json(b'{"inputs": {"x": [[1, 2]]}}') == {"x": [[1, 2]]}
    typed = _http.decode_json(b'{"inputs": {"x": {"dtype": "int8", "shape": [2, 2], "data": [1, 2, 3, 4]}}}')["x"]
    assert typed.dtype == np.int8 and typed.shape == (2, 2)
    for body, status, words in [
        (b"{bad", 400, "not JSON"),
        (b"[1]", 400, '"inputs"'),
        (b'{"inputs": {}, "extra": 1}', 400, "unknown field 'extra'"),
        (b'{"inputs": [1]}', 400, "must be an object"),
        (b'{"inputs": {"x": {"dtype": "float32"}}}', 400, "typed tensor"),
        (b'{"inputs": {"x": {"dtype": "qint9", "data": [1]}}}', 422, "unknown dtype"),
        (b'{"inputs": {"x": {"dtype": "int8", "data": [1000]}}}', 422, "not int8"),
        (b'{"inputs": {"x": {"dtype": "float32", "shape": [3], "data": [1, 2]}}}', 422, "holds 3 values"),
        (b'{"inputs": {"x": {"dtype": "float32", "shape": [-1], "data": [1]}}}', 422, "non-negative"),
    ]:
        with pytest.raises(RequestError) as err:
            _http.decode_json(body)
        assert err.value.status == status and words in str(err.value), (body, str(err.value))
    out = json.loads(_http.encode_json({"name": "m"}, {"y": np.array([[1.5, 2.0]], np.float32)}))
    assert out == {"model": {"name": "m"}, "outputs": {"y": {"dtype": "float32", "shape": [1, 2], "data": [[1.5, 2.0]]}}}


def test_npz_bodies():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    back = _http.decode_npz(_http.encode_npz({"x": x}), 1 << 20)
    np.testing.assert_array_equal(back["x"], x)
    for body, status in [(b"PK\x03\x04broken", 400), (b"not a zip", 400)]:
        with pytest.raises(RequestError) as err:
            _http.decode_npz(body, 1 << 20)
        assert err.value.status == status
    with pytest.raises(RequestError) as err:
        _http.decode_npz(_http.encode_npz({"x": np.zeros(100000, np.float32)}), 1000)
    assert err.value.status == 413
    buf = io.BytesIO()
    np.save(buf, x)
    with pytest.raises(RequestError, match="single .npy"):
        _http.decode_npz(buf.getvalue(), 1 << 20)
    buf = io.BytesIO()
    np.savez(buf, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(RequestError, match="unreadable"):  # object arrays would need pickle: refused
        _http.decode_npz(buf.getvalue(), 1 << 20)
    with pytest.raises(RequestError) as err:
        _http.content_kind("text/html")
    assert err.value.status == 415


def test_litert_model(tmp_path):
    import os
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "examples", "litert_custom_op"))  # or copied beside the tests
    pytest.importorskip("flatbuffers")
    from tflite_writer import Model
    m = Model()
    x = m.tensor("x", [1, 4], "float32")
    k = m.tensor("k", [1, 4], "float32", data=np.array([[1, -2, 3, -4]], np.float32))
    y = m.tensor("y", [1, 4], "float32")
    m.builtin(18, [x, k], [y])  # MUL
    path = tmp_path / "mul.tflite"
    path.write_bytes(m.finish([x], [y]))
    e = Engine(path)
    assert not e.batched and e.metadata()["inputs"] == [{"name": "x", "dtype": "float32", "shape": [1, 4]}]
    xs = [np.random.default_rng(s).standard_normal((1, 4)).astype(np.float32) for s in range(3)]
    for v, out in zip(xs, e.run_batch([e.validate({"x": v}) for v in xs])):
        np.testing.assert_array_equal(out["y"], v * np.array([[1, -2, 3, -4]], np.float32))
