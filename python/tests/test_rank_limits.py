"""Results that would have more than 8 dims (the most a Weft tensor has) are errors naming the
rank, not shapes cut to 8 dims: those made kernels write or read past their buffers. Each case
has a control one rank lower that runs and equals NumPy."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper as H, numpy_helper as NH  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), extra=()):
    g = H.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 18)] + [H.make_opsetid(d, v) for d, v in extra])
    m.ir_version = 8
    return m


def _vi(name, dt, shape):
    return H.make_tensor_value_info(name, dt, shape)


def _run(tmp_path, m, feeds):
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    return weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(feeds)


def _gathernd(idx_shape):
    data = np.arange(3 * 2 ** 7, dtype=np.float32).reshape([3] + [2] * 7)
    idx = np.zeros(idx_shape, np.int64)
    m = _model([H.make_node("GatherND", ["d", "i"], ["y"])], [_vi("d", T.FLOAT, list(data.shape)), _vi("i", T.INT64, idx_shape)],
               [_vi("y", T.FLOAT, None)])
    return m, [data, idx]


def test_gathernd(tmp_path):
    m, feeds = _gathernd([1, 1, 1, 1, 1, 1, 2, 1])  # 7 + 7 dims
    with pytest.raises(ValueError, match="rank 14 .*at most 8 dims"):
        _run(tmp_path, m, feeds)
    m, feeds = _gathernd([2, 1])  # control: 1 + 7 dims
    (y,) = _run(tmp_path, m, feeds)
    np.testing.assert_array_equal(y, feeds[0][[0, 0]])


def test_scatternd(tmp_path):
    data = np.zeros([4] + [2] * 7, np.float32)
    idx = np.zeros([1, 1, 1, 1, 1, 1, 2, 1], np.int64)
    upd = np.ones([1, 1, 1, 1, 1, 1, 2, 2], np.float32)  # matches the 8-dim cut of the true 14-dim shape
    m = _model([H.make_node("ScatterND", ["d", "i", "u"], ["y"])],
               [_vi("d", T.FLOAT, list(data.shape)), _vi("i", T.INT64, list(idx.shape)), _vi("u", T.FLOAT, list(upd.shape))],
               [_vi("y", T.FLOAT, None)])
    with pytest.raises(ValueError, match="rank 14 .*at most 8 dims"):
        _run(tmp_path, m, [data, idx, upd])
    idx = np.array([[1], [3]], np.int64)
    upd = np.random.default_rng(0).random([2] + [2] * 7).astype(np.float32)
    m = _model([H.make_node("ScatterND", ["d", "i", "u"], ["y"])],
               [_vi("d", T.FLOAT, list(data.shape)), _vi("i", T.INT64, [2, 1]), _vi("u", T.FLOAT, list(upd.shape))],
               [_vi("y", T.FLOAT, None)])
    (y,) = _run(tmp_path, m, [data, idx, upd])
    want = data.copy()
    want[[1, 3]] = upd
    np.testing.assert_array_equal(y, want)


def test_gather_block_quantized(tmp_path):
    data = np.full([4, 32], 0x98, np.uint8)  # 4-bit codes 8 and 9, 64 a row
    scales = np.full([4, 2], 0.5, np.float32)

    def model(idx_shape):
        return _model([H.make_node("GatherBlockQuantized", ["d", "i", "s"], ["y"], domain="com.microsoft", block_size=32, bits=4)],
                      [_vi("d", T.UINT8, [4, 32]), _vi("i", T.INT64, idx_shape), _vi("s", T.FLOAT, [4, 2])],
                      [_vi("y", T.FLOAT, None)], extra=[("com.microsoft", 1)])

    idx = np.arange(4, dtype=np.int64).reshape([1, 1, 1, 1, 1, 1, 2, 2])
    with pytest.raises(ValueError, match="rank 9 .*at most 8 dims"):
        _run(tmp_path, model(list(idx.shape)), [data, idx, scales])
    idx = idx.reshape([1, 1, 1, 1, 1, 2, 2])
    (y,) = _run(tmp_path, model(list(idx.shape)), [data, idx, scales])
    row = np.tile(np.array([(8 - 8) * 0.5, (9 - 8) * 0.5], np.float32), 32)  # low nibble first; zero point 8
    np.testing.assert_array_equal(y, np.broadcast_to(row, [1, 1, 1, 1, 1, 2, 2, 64]))


def _loop(rank):
    c = np.arange(2 ** rank, dtype=np.float32).reshape([2] * rank)
    body = H.make_graph([H.make_node("Identity", ["cond_in"], ["cond_out"]), H.make_node("Identity", ["C"], ["scan_out"])], "body",
                        [_vi("iter", T.INT64, []), _vi("cond_in", T.BOOL, [])],
                        [_vi("cond_out", T.BOOL, []), _vi("scan_out", T.FLOAT, None)])
    m = _model([H.make_node("Loop", ["M", ""], ["Y"], body=body)], [_vi("C", T.FLOAT, [2] * rank)], [_vi("Y", T.FLOAT, None)],
               [NH.from_array(np.array(3, np.int64), "M")])
    return m, c


def test_loop_scan_output(tmp_path):
    m, c = _loop(8)
    with pytest.raises(ValueError, match="scan output 0 .*stacked over the iterations it would have 9 dims"):
        _run(tmp_path, m, [c])
    m, c = _loop(7)
    (y,) = _run(tmp_path, m, [c])
    np.testing.assert_array_equal(y, np.stack([c] * 3))


def _scan(rank, axes=None):
    c = np.arange(2 ** rank, dtype=np.float32).reshape([2] * rank)
    body = H.make_graph([H.make_node("Identity", ["C"], ["scan_out"])], "body", [_vi("s_in", T.FLOAT, [])],
                        [_vi("scan_out", T.FLOAT, None)])
    kw = {"scan_output_axes": axes} if axes is not None else {}
    m = _model([H.make_node("Scan", ["S"], ["Y"], body=body, num_scan_inputs=1, **kw)],
               [_vi("C", T.FLOAT, [2] * rank), _vi("S", T.FLOAT, [3])], [_vi("Y", T.FLOAT, None)])
    return m, [c, np.zeros(3, np.float32)]


@pytest.mark.parametrize("axes", [None, "last"])
def test_scan_output(tmp_path, axes):
    m, feeds = _scan(8, [8] if axes else None)
    with pytest.raises(ValueError, match="scan output 0 .*stacked it would have 9 dims"):
        _run(tmp_path, m, feeds)
    m, feeds = _scan(7, [7] if axes else None)
    (y,) = _run(tmp_path, m, feeds)
    np.testing.assert_array_equal(y, np.stack([feeds[0]] * 3, axis=7 if axes else 0))


def test_assign_variable_shape_attribute():
    g = weft.Graph("v")
    g.add_input("v", "float32", [2] * 8)
    g.add_node("AssignVariable", "a", ["v"], ["done"], {"variable": "x", "dtype": 0, "shape": [2] * 8 + [5]})
    g.add_output("done")
    with pytest.raises(ValueError, match="'shape' has 9 dims; tensors have at most 8"):
        weft.Session(use_env_path=False).compile(g)
