"""ONNX sequence and optional values: the Sequence* operators, SplitToSequence, ConcatFromSequence,
SequenceMap and the Optional* operators, in graphs and as graph inputs and outputs (a list of
arrays, None). Checked against NumPy re-computations on random inputs, and against ONNX Runtime
where it is installed."""
import os
import tempfile

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def save(nodes, inputs, outputs, opset=17, initializers=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    d = tempfile.mkdtemp()
    path = os.path.join(d, "m.onnx")
    onnx.save(m, path)
    return path


def weft_run(path, feeds):
    return weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(feeds)


def ort_run(path, names, feeds):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, dict(zip(names, feeds)))


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def seq(name, elem=F):
    return helper.make_tensor_sequence_value_info(name, elem, None)


def opt(name, type_proto):
    return helper.make_value_info(name, helper.make_optional_type_proto(type_proto))


def assert_lists_equal(got, want):
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


# x [6, 4] -> SplitToSequence along axis 1 with split [1, 3] -> insert t at 1, erase the last,
# read element -1, concatenate the rest along axis 0 and stacked along a new axis 2.
def pipeline_model():
    nodes = [
        helper.make_node("SplitToSequence", ["x", "split"], ["s"], axis=1),
        helper.make_node("SequenceInsert", ["s", "t", "one"], ["s2"]),
        helper.make_node("SequenceErase", ["s2"], ["s3"]),
        helper.make_node("SequenceAt", ["s2", "minus_one"], ["last"]),
        helper.make_node("SequenceLength", ["s2"], ["n"]),
        helper.make_node("ConcatFromSequence", ["s3"], ["cat"], axis=-1),
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
        helper.make_node("ConcatFromSequence", ["rows"], ["stacked"], axis=-1, new_axis=1),
    ]
    inits = [helper.make_tensor("split", I64, [2], [1, 3]), helper.make_tensor("one", I64, [], [1]),
             helper.make_tensor("minus_one", TensorProto.INT32, [], [-1])]
    outs = [tensor("last", F, None), tensor("n", I64, []), tensor("cat", F, None), tensor("stacked", F, None), seq("s3")]
    return save(nodes, [tensor("x", F, [6, 4]), tensor("t", F, [6, 2])], outs, initializers=inits)


def test_pipeline_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    t = rng.standard_normal((6, 2)).astype(np.float32)
    last, n, cat, stacked, s3 = weft_run(pipeline_model(), [x, t])
    pieces = [x[:, :1], t, x[:, 1:]]  # after the insert
    np.testing.assert_array_equal(last, pieces[-1])
    assert n == 3 and n.dtype == np.int64
    np.testing.assert_array_equal(cat, np.concatenate(pieces[:2], axis=-1))
    np.testing.assert_array_equal(stacked, np.stack(list(x), axis=-1))
    assert_lists_equal(s3, pieces[:2])


def test_pipeline_against_onnxruntime():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    t = rng.standard_normal((6, 2)).astype(np.float32)
    path = pipeline_model()
    got = weft_run(path, [x, t])
    want = ort_run(path, ["x", "t"], [x, t])
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_array_equal(g, w)
    assert_lists_equal(got[4], want[4])


@pytest.mark.parametrize("split", [None, 3, 4, 7, [0, 5, 2]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_split_to_sequence(split, keepdims):
    x = np.arange(3 * 7 * 2, dtype=np.float32).reshape(3, 7, 2)
    inputs, feeds, names = [tensor("x", F, [3, 7, 2])], [x], ["x"]
    node_inputs = ["x"]
    if split is not None:
        s = np.array(split, np.int64)
        inputs.append(tensor("split", I64, list(s.shape)))
        feeds.append(s)
        names.append("split")
        node_inputs.append("split")
    path = save([helper.make_node("SplitToSequence", node_inputs, ["s"], axis=-2, keepdims=keepdims)], inputs, [seq("s")])
    got = weft_run(path, feeds)[0]
    if split is None:
        want = [x[:, k:k + 1] if keepdims else x[:, k] for k in range(7)]
    elif np.ndim(split) == 0:
        want = [x[:, k:k + split] for k in range(0, 7, split)]
    else:
        bounds = np.cumsum([0] + list(split))
        want = [x[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    assert_lists_equal(got, want)


def test_sequence_graph_input_and_output():
    """A list goes in, a list comes out; an empty list and zero-size items work."""
    path = save([helper.make_node("SequenceInsert", ["s", "t", "pos"], ["out"]),
                 helper.make_node("SequenceLength", ["out"], ["n"])],
                [seq("s", TensorProto.INT32), tensor("t", TensorProto.INT32, [1, 2]), tensor("pos", I64, [])],
                [seq("out", TensorProto.INT32), tensor("n", I64, [])])
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    rng = np.random.default_rng(2)
    for count in (0, 1, 4):
        items = [rng.integers(-9, 9, size=rng.integers(0, 4, size=rng.integers(0, 3))).astype(np.int32) for _ in range(count)]
        t = np.array([[5, 6]], np.int32)
        for pos in range(-count, count + 1):
            out, n = m.run([items, t, np.array(pos, np.int64)])
            want = list(items)
            want.insert(pos if pos >= 0 else pos + count, t)
            assert_lists_equal(out, want)
            assert n == count + 1
    with pytest.raises(RuntimeError, match=r"position 3 is outside \[-1, 1\]"):
        m.run([[np.zeros(2, np.int32)], t, np.array(3, np.int64)])
    with pytest.raises(TypeError, match="int32"):
        m.run([[np.zeros(2, np.float32)], t, np.array(0, np.int64)])
    with pytest.raises(TypeError, match="list of arrays"):
        m.run([np.zeros(2, np.int32), t, np.array(0, np.int64)])


def test_loop_grows_a_sequence():
    """The pattern exported loops use: a sequence carried through Loop, concatenated after."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["f"], to=F),
         helper.make_node("Mul", ["x", "f"], ["y"]),
         helper.make_node("SequenceInsert", ["s_in", "y"], ["s_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [tensor("i", I64, []), tensor("c_in", TensorProto.BOOL, []), seq("s_in")],
        [tensor("c_out", TensorProto.BOOL, []), seq("s_out")])
    nodes = [helper.make_node("SequenceEmpty", [], ["s0"], dtype=F),
             helper.make_node("Loop", ["n", "", "s0"], ["s"], body=body),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=1)]
    path = save(nodes, [tensor("x", F, [2, 3]), tensor("n", I64, [])], [tensor("y", F, None)])
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    for n in (1, 5, 40):
        y = m.run([x, np.array(n, np.int64)])[0]
        np.testing.assert_array_equal(y, np.stack([x * np.float32(k) for k in range(n)]))
    with pytest.raises(ValueError, match="empty"):  # nothing to concatenate
        m.run([x, np.array(0, np.int64)])


def test_sequence_map_against_numpy():
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Shape", ["a"], ["shape"])], "map",
                             [tensor("a", F, None), tensor("b", F, None)], [tensor("sum", F, None), tensor("shape", I64, None)])
    path = save([helper.make_node("SequenceMap", ["s", "t"], ["sums", "shapes"], body=body)],
                [seq("s"), tensor("t", F, [3])], [seq("sums"), seq("shapes", I64)])
    rng = np.random.default_rng(4)
    items = [rng.standard_normal((k + 1, 3)).astype(np.float32) for k in range(4)]
    t = rng.standard_normal(3).astype(np.float32)
    sums, shapes = weft_run(path, [items, t])
    assert_lists_equal(sums, [a + t for a in items])
    assert_lists_equal(shapes, [np.array(a.shape, np.int64) for a in items])


def test_optionals():
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    path = save([helper.make_node("OptionalHasElement", ["o"], ["has"]),
                 helper.make_node("If", ["has"], ["n"],
                                  then_branch=helper.make_graph(
                                      [helper.make_node("OptionalGetElement", ["o"], ["s"]),
                                       helper.make_node("SequenceLength", ["s"], ["len"])],
                                      "then", [], [tensor("len", I64, [])]),
                                  else_branch=helper.make_graph(
                                      [helper.make_node("Constant", [], ["none"], value=helper.make_tensor("v", I64, [], [-1]))],
                                      "else", [], [tensor("none", I64, [])])),
                 helper.make_node("Optional", ["x"], ["wrapped"])],
                [opt("o", seq_type), tensor("x", F, [2])],
                [tensor("has", TensorProto.BOOL, []), tensor("n", I64, []), opt("wrapped", helper.make_tensor_type_proto(F, [2]))],
                opset=18)
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    x = np.array([1.5, -2], np.float32)
    has, n, wrapped = m.run([None, x])
    assert not has and n == -1
    np.testing.assert_array_equal(wrapped, x)
    has, n, _ = m.run([[x, x, x], x])
    assert has and n == 3
    has, n, _ = m.run([[], x])  # an empty sequence is still a value
    assert has and n == 0


def test_empty_optional_read_is_refused():
    path = save([helper.make_node("OptionalGetElement", ["o"], ["y"])],
                [opt("o", helper.make_tensor_type_proto(F, [2]))], [tensor("y", F, [2])], opset=18)
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    np.testing.assert_array_equal(m.run([np.ones(2, np.float32)])[0], np.ones(2, np.float32))
    with pytest.raises(ValueError, match="optional input is empty"):
        m.run([None])


def test_concat_refuses_mismatched_shapes():
    path = save([helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=1)], [seq("s")], [tensor("y", F, None)])
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    a, b = np.ones((2, 3), np.float32), np.ones((3, 1), np.float32)
    np.testing.assert_array_equal(m.run([[a, a[:, :1]]])[0], np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"tensor 1 has shape \[3,1\]"):
        m.run([[a, b]])


def test_cli_reads_and_writes_sequences(tmp_path):
    """`weft run`: a sequence input from a list of .npy files, a sequence output as one file per item."""
    import shutil
    import subprocess

    cli = os.environ.get("WEFT_CLI") or shutil.which("weft")
    if not cli:
        pytest.skip("no weft command (WEFT_CLI)")
    path = save([helper.make_node("SequenceInsert", ["s", "t"], ["out"])], [seq("s"), tensor("t", F, [2])], [seq("out")])
    a, b, t = np.ones(3, np.float32), np.zeros((1, 2), np.float32), np.full(2, 7, np.float32)
    for name, v in (("a", a), ("b", b), ("t", t)):
        np.save(tmp_path / f"{name}.npy", v)
    run = subprocess.run([cli, "run", path, "-i", f"s={tmp_path / 'a.npy'},{tmp_path / 'b.npy'}", "-i", f"t={tmp_path / 't.npy'}",
                          "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "sequence(float32) of 3" in run.stdout
    for k, want in enumerate((a, b, t)):
        np.testing.assert_array_equal(np.load(tmp_path / "out" / f"out.{k}.npy"), want)
    empty = subprocess.run([cli, "run", path, "-i", "s=", "-i", f"t={tmp_path / 't.npy'}", "-o", str(tmp_path / "e")],
                           capture_output=True, text=True)
    assert empty.returncode == 0 and "of 1" in empty.stdout, empty.stderr
    bad = subprocess.run([cli, "run", path, "-i", f"s={tmp_path / 'a.npy'}", "-i", "t="], capture_output=True, text=True)
    assert bad.returncode != 0 and "float32 tensor; give one .npy file" in bad.stderr


def test_sequence_map_over_more_element_shapes_than_plans_kept():
    """Each element shape compiles the body once; past the plans kept, every element still gets its own."""
    body = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "body", [tensor("x", F, None)], [tensor("y", F, None)])
    path = save([helper.make_node("SequenceMap", ["s"], ["o"], body=body)], [seq("s")], [seq("o")])
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    rng = np.random.default_rng(5)
    items = [rng.standard_normal(k).astype(np.float32) for k in (30, 1, 7, 19, 2, 25, 3, 11, 5, 29, 13, 8, 21, 17, 4, 23, 6, 27, 9, 10)]
    assert_lists_equal(m.run([items])[0], [2 * a for a in items])
    for r in range(3):  # and across runs
        more = [rng.standard_normal(40 + 3 * r + k).astype(np.float32) for k in range(3)]
        assert_lists_equal(m.run([more])[0], [2 * a for a in more])


def test_split_with_an_empty_split_list_is_no_split():
    path = save([helper.make_node("SplitToSequence", ["x", "split"], ["s"], axis=0)],
                [tensor("x", F, [3, 2]), tensor("split", I64, [0])], [seq("s")])
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert_lists_equal(weft_run(path, [x, np.zeros(0, np.int64)])[0], [x[k:k + 1] for k in range(3)])


def test_none_for_a_tensor_input_is_refused_by_name():
    path = save([helper.make_node("Identity", ["x"], ["y"])], [tensor("x", F, [2])], [tensor("y", F, [2])])
    with pytest.raises(TypeError, match="'x', float32\\) is None"):
        weft_run(path, [None])


def test_torch_scripted_loop_that_collects_a_list(tmp_path):
    """What torch.onnx.export (TorchScript) writes for a loop that appends to a Python list and
    concatenates it: SequenceEmpty, SequenceInsert in a Loop, ConcatFromSequence, SequenceLength."""
    torch = pytest.importorskip("torch")

    class Collect(torch.nn.Module):
        def forward(self, x, n: int):
            outs = []
            h = x
            for i in range(n):
                h = torch.tanh(h * 0.5 + i)
                outs.append(h[: i + 1])
            return torch.cat(outs, 0), len(outs)

    scripted = torch.jit.script(Collect())
    path = str(tmp_path / "collect.onnx")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(scripted, (torch.randn(6, 3), 4), path, dynamo=False, input_names=["x", "n"], opset_version=17)
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert {"Loop", "SequenceEmpty", "ConcatFromSequence"} <= ops
    m = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    rng = np.random.default_rng(6)
    for n in (1, 4, 9):
        x = rng.standard_normal((6, 3)).astype(np.float32)
        y, count = m.run([x, np.array(n, np.int64)])
        want_y, want_count = scripted(torch.from_numpy(x), n)
        np.testing.assert_allclose(y, want_y.numpy(), rtol=1e-6, atol=1e-6)
        assert count == want_count == n
