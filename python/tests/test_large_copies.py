"""Concat, Split and Slice on tensors large enough that their copies are cut into pieces and spread
over the intra-op threads (ops/op_util.h, ParallelCopy): every byte where NumPy puts it, at 1, 2 and
3 threads, for copies that end mid-piece and for many small rows."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def run(tmp_path, nodes, inputs, outputs, inits, feeds, threads):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), path)
    return weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path)).run(feeds)


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape,axis", [((1, 232, 28, 29), 1), ((3, 100, 1001), 2), ((2, 50000), 0), ((7, 3, 5000), 1)])
def test_concat_split_slice_move_every_byte(tmp_path, threads, shape, axis):
    rng = np.random.default_rng(sum(shape) + axis)
    a = rng.standard_normal(shape).astype(np.float32)
    b_shape = list(shape)
    b_shape[axis] += 3
    b = rng.standard_normal(b_shape).astype(np.float32)
    n = shape[axis] + b_shape[axis]
    cut = [shape[axis] // 2 + 1, n - shape[axis] // 2 - 1]
    lo, hi = 1, n - 2
    nodes = [helper.make_node("Concat", ["a", "b"], ["c"], axis=axis),
             helper.make_node("Split", ["c", "sizes"], ["s0", "s1"], axis=axis),
             helper.make_node("Slice", ["c", "st", "en", "ax"], ["sl"])]
    inits = [numpy_helper.from_array(np.array(cut, np.int64), "sizes"), numpy_helper.from_array(np.array([lo], np.int64), "st"),
             numpy_helper.from_array(np.array([hi], np.int64), "en"), numpy_helper.from_array(np.array([axis], np.int64), "ax")]
    got = run(tmp_path, nodes, [("a", list(shape)), ("b", b_shape)], ["c", "s0", "s1", "sl"], inits, [a, b], threads)
    c = np.concatenate([a, b], axis=axis)
    want = [c, *np.split(c, [cut[0]], axis=axis), np.take(c, np.arange(lo, hi), axis=axis)]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert np.array_equal(g, w)
