"""Models that are wrong in one way each: the import or compile fails with a message that names
the problem, never a crash or a silently accepted model."""
import os

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def save(tmp_path, nodes, inputs, inits=(), opset=17, ir=8):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    return path


def error_of(path):
    with pytest.raises((ValueError, RuntimeError)) as e:
        weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    return str(e.value)


F = TensorProto.FLOAT


@pytest.mark.parametrize("opset", [0, -3, 99])
def test_opsets_outside_the_known_range(tmp_path, opset):
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], opset=opset)
    assert f"the model imports ONNX opset {opset}; this importer reads opsets 1 to" in error_of(path)


def test_ir_version_zero(tmp_path):
    path = save(tmp_path, [helper.make_node("Relu", ["x"], ["y"])], [("x", F, [2])], ir=0)
    assert "ir_version is 0" in error_of(path)


@pytest.mark.parametrize("start,limit,delta", [(0, np.inf, 1), (np.nan, 4, 1), (0, 4, -np.inf), (0, 1e30, 1e-30)])
def test_range_with_non_finite_or_huge_bounds(tmp_path, start, limit, delta):
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("a", start), ("b", limit), ("c", delta))]
    path = save(tmp_path, [helper.make_node("Range", ["a", "b", "c"], ["y"])], [], inits)
    msg = error_of(path)
    assert "Range" in msg and ("must be finite" in msg or "elements" in msg), msg


def test_reflect_padding_wider_than_the_dim(tmp_path):
    path = save(tmp_path, [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", F, [1, 3])],
                [numpy_helper.from_array(np.array([0, 3, 0, 1], np.int64), "p")])
    assert "reflect padding (3, 1) of dim 1 must be smaller than the dim (3)" in error_of(path)
    # One less is fine, and matches NumPy's reflection.
    ok = save(tmp_path, [helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", F, [1, 3])],
              [numpy_helper.from_array(np.array([0, 2, 0, 2], np.int64), "p")])
    x = np.array([[1, 2, 3]], np.float32)
    (y,) = weft.Session(use_env_path=False).compile(weft.import_onnx(ok)).run([x])
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0), (2, 2)), mode="reflect"))


def test_sizes_that_overflow_or_exceed_the_memory_budget(tmp_path):
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
    cos = save(tmp_path, [helper.make_node("ConstantOfShape", ["s"], ["y"])], [], [i64("s", [2**40, 2**40])])
    assert "whose size does not fit in 64 bits" in error_of(cos)
    tile = save(tmp_path, [helper.make_node("Tile", ["x", "r"], ["y"])], [("x", F, [2, 2])], [i64("r", [2**62, 2**62])])
    assert "repeated 4611686018427387904 times overflows" in error_of(tile)
    pad = save(tmp_path, [helper.make_node("Pad", ["x", "p"], ["y"])], [("x", F, [1, 3])],
               [i64("p", [0, 2**62, 0, 2**62])])
    assert "padding overflows dim 1" in error_of(pad)
    expand = save(tmp_path, [helper.make_node("Expand", ["x", "s"], ["y"], name="grow")], [("x", F, [1])],
                  [i64("s", [2**20, 2**20])])
    msg = error_of(expand)  # 4 TiB: more than the physical memory of any machine this runs on
    assert "more than the memory budget" in msg and "[Expand 'grow']" in msg, msg
    # The budget is a session option: the same small model fits 1 MB and not 1 KB.
    relu = save(tmp_path, [helper.make_node("Relu", ["x"], ["h"], name="r1"), helper.make_node("Relu", ["h"], ["y"])],
                [("x", F, [1024])])
    g = weft.import_onnx(relu)
    weft.Session(use_env_path=False, memory_budget_bytes=1 << 20).compile(g)
    with pytest.raises(ValueError, match=r"need \d+ bytes, more than the memory budget of 1000 bytes; the largest is 'h' \[1024\]"):
        weft.Session(use_env_path=False, memory_budget_bytes=1000).compile(g)


def test_a_shape_computed_at_run_time_whose_size_overflows_is_refused(tmp_path):
    """An output shape that only the run's input values decide (MaxUnpool's output_shape as an
    input) with an element count that wraps around 64 bits (3 * 6148914691236517206 = 2^64 + 2)
    is an error naming the node, not a 2-element buffer that later ops read far past."""
    nodes = [helper.make_node("MaxUnpool", ["x", "i", "s"], ["u"], kernel_shape=[1, 1], name="unpool"),
             helper.make_node("Identity", ["u"], ["y"])]
    path = save(tmp_path, nodes, [("x", F, [1, 1, 1, 1]), ("i", TensorProto.INT64, [1, 1, 1, 1]), ("s", TensorProto.INT64, [4])], opset=11)
    model = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    x, i = np.ones((1, 1, 1, 1), np.float32), np.zeros((1, 1, 1, 1), np.int64)
    with pytest.raises(ValueError, match=r"\[MaxUnpool 'unpool'\] output 0 would have shape \[1,1,3,6148914691236517206\], larger than any"):
        model.run([x, i, np.array([1, 1, 3, 6148914691236517206], np.int64)])
    np.testing.assert_array_equal(model.run([x, i, np.array([1, 1, 2, 2], np.int64)])[0], [[[[1, 0], [0, 0]]]])
    # OneHot with its depth given at run time: 2^24 indices x 2^40 classes wraps too
    nodes = [helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="onehot")]
    path = save(tmp_path, nodes, [("i", TensorProto.INT64, [1 << 24]), ("d", TensorProto.INT64, [1])],
                [numpy_helper.from_array(np.array([0.0, 1.0], np.float32), "v")], opset=11)
    model = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    with pytest.raises(ValueError, match=r"\[OneHot 'onehot'\] output 0 would have shape \[16777216,1099511627776\]"):
        model.run([np.zeros(1 << 24, np.int64), np.array([1 << 40], np.int64)])


def test_slice_with_a_repeated_axis_or_extreme_steps(tmp_path):
    i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
    dup = save(tmp_path, [helper.make_node("Slice", ["x", "s", "e", "a"], ["y"])], [("x", F, [4, 5])],
               [i64("s", [0, 1]), i64("e", [2, 3]), i64("a", [1, -1])])
    assert "axis 1 appears twice in axes" in error_of(dup)
    # Steps at the int64 limits take one element (ONNX Runtime gives the same), never overflow.
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    for step, start, end in ((2**63 - 1, 0, 5), (-(2**63), 4, -6)):
        path = save(tmp_path, [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], [("x", F, [4, 5])],
                    [i64("s", [start]), i64("e", [end]), i64("a", [1]), i64("t", [step])])
        (y,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
        ort = pytest.importorskip("onnxruntime")
        (ref,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        np.testing.assert_array_equal(y, ref)


def test_arrays_in_the_other_byte_order_are_refused_not_misread(tmp_path):
    g = weft.Graph("g")
    g.add_input("x", np.float32, [3])
    g.add_node("Relu", "r", ["x"], ["y"], {})
    g.add_output("y")
    m = weft.Session(use_env_path=False).compile(g)
    big = np.array([1, 2, 3], dtype=">f4")
    with pytest.raises(ValueError, match="byte order"):
        m.run([big])
    assert np.array_equal(m.run([big.astype("=f4")])[0], [1, 2, 3])
    with pytest.raises(ValueError, match="byte order"):
        weft.Graph("c").add_constant("c", big)


def test_a_fifo_is_not_a_model_file_and_loading_it_does_not_wait(tmp_path):
    fifo = tmp_path / "pipe.weft"
    os.mkfifo(fifo)
    with pytest.raises(Exception, match="not a regular file"):
        weft.Session(use_env_path=False).load_model(str(fifo))


def test_absurd_thread_counts_are_refused():
    with pytest.raises(Exception, match="intra_op_threads"):
        weft.Session(use_env_path=False, threads=2**31 - 1)


def test_roi_align_regions_with_an_empty_side_take_no_samples(tmp_path):
    """A region of zero (or negative) width and a huge height has no samples at all: its bins are
    0, at once; the huge side alone does not make the op loop over it (ONNX Runtime would)."""
    path = save(tmp_path, [helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=2, output_width=2)],
                [("x", F, [1, 2, 8, 8]), ("r", F, [2, 4]), ("b", TensorProto.INT64, [2])], opset=16)
    model = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    rois = np.array([[1, 0, 1, 1e15], [3, 0, 1, 1e12]], np.float32)
    (y,) = model.run([np.ones((1, 2, 8, 8), np.float32), rois, np.zeros(2, np.int64)])
    np.testing.assert_array_equal(y, np.zeros((2, 2, 2, 2), np.float32))
