"""ONNX Loop and Scan run as subgraphs, against ONNX Runtime: data-dependent trip counts, scan
outputs of a length known only when the loop ends, loop-carried values that change shape, values
captured from enclosing graphs (two levels deep), a Loop inside an If branch, Scan with reversed
directions and other axes, and the same models saved to a model file and loaded again."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, t, shape=None):
    return helper.make_tensor_value_info(name, t, shape)


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def compare(m, tmp_path, feeds, save=False, rtol=1e-5):
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    session = weft.Session(use_env_path=False)
    compiled = session.compile(weft.import_onnx(path))
    got = compiled.run(list(feeds.values()))
    if save:
        compiled.save(str(tmp_path / "m.weft"))
        got = session.load_model(str(tmp_path / "m.weft")).run(list(feeds.values()))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)
    return compiled


def halving_loop():
    """while sum(x) > limit and i < M: x = x * w (w captured from the outer graph); scan out x."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_in", "w"], ["x_out"]),
         helper.make_node("ReduceSum", ["x_out"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "limit"], ["cond_out"]),
         helper.make_node("Identity", ["x_out"], ["x_scan"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("x_in", F, None)],
        [vi("cond_out", B, []), vi("x_out", F, None), vi("x_scan", F, None)])
    nodes = [helper.make_node("Loop", ["M", "go", "x"], ["x_final", "xs"], body=body)]
    inits = [("M", np.array(50, np.int64)), ("go", np.array(True)), ("w", np.full((3,), 0.5, np.float32))]
    return model(nodes, [vi("x", F, [3]), vi("limit", F, [])], [vi("x_final", F, None), vi("xs", F, None)], inits)


@pytest.mark.parametrize("limit", [0.5, 10.0, 1000.0])
def test_a_loop_that_stops_on_a_computed_condition(tmp_path, limit):
    x = np.array([40.0, 30.0, 20.0], np.float32)
    compiled = compare(halving_loop(), tmp_path, {"x": x, "limit": np.array(limit, np.float32)}, save=True)
    assert compiled.has_dynamic_shapes  # the scan output's length is known only when the loop ends


def test_a_counted_loop_has_static_shapes(tmp_path):
    """test_loop11's pattern: cond passed through, M a constant: every shape is known at compile time."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Add", ["y_in", "fi"], ["y_out"]),
         helper.make_node("Mul", ["y_out", "y_out"], ["sq"])],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("y_in", F, [2, 3])],
        [vi("cond_out", B, []), vi("y_out", F, [2, 3]), vi("sq", F, [2, 3])])
    m = model([helper.make_node("Loop", ["M", "", "y"], ["yf", "sqs"], body=body)],
              [vi("y", F, [2, 3])], [vi("yf", F, None), vi("sqs", F, None)], [("M", np.array(5, np.int64))])
    y = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    compiled = compare(m, tmp_path, {"y": y}, save=True)
    assert not compiled.has_dynamic_shapes
    assert [list(shape) for _, _, shape in compiled.outputs] == [[2, 3], [5, 2, 3]]


def test_a_loop_carried_value_that_grows(tmp_path):
    """Each iteration appends a row: the body is compiled once per shape it meets."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Expand", ["fi", "row_shape"], ["row"]),
         helper.make_node("Concat", ["acc_in", "row"], ["acc_out"], axis=0)],
        "body", [vi("i", I64, []), vi("cond_in", B, []), vi("acc_in", F, None)],
        [vi("cond_out", B, []), vi("acc_out", F, None)])
    m = model([helper.make_node("Loop", ["n", "", "acc"], ["out"], body=body)],
              [vi("n", I64, []), vi("acc", F, [1, 4])], [vi("out", F, None)], [("row_shape", np.array([1, 4], np.int64))])
    # Past the 16 body plans kept (40 shapes), each new shape's plan lives as long as its run context.
    for n in (0, 1, 7, 40):
        compare(m, tmp_path, {"n": np.array(n, np.int64), "acc": np.ones((1, 4), np.float32)})


def test_nested_loops_capture_values_from_two_levels_up(tmp_path):
    inner = helper.make_graph(
        [helper.make_node("Identity", ["c2"], ["c2o"]),
         helper.make_node("Mul", ["v_in", "outer_x"], ["t"]),     # outer_x: the outer body's value
         helper.make_node("Add", ["t", "bias"], ["v_out"])],     # bias: the top-level graph's
        "inner", [vi("j", I64, []), vi("c2", B, []), vi("v_in", F, None)], [vi("c2o", B, []), vi("v_out", F, None)])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["c1"], ["c1o"]),
         helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Add", ["x_in", "fi"], ["outer_x"]),
         helper.make_node("Loop", ["three", "", "x_in"], ["x_out"], body=inner),
         helper.make_node("ReduceMean", ["x_out"], ["mean"], keepdims=0)],
        "outer", [vi("i", I64, []), vi("c1", B, []), vi("x_in", F, None)],
        [vi("c1o", B, []), vi("x_out", F, None), vi("mean", F, None)])
    m = model([helper.make_node("Loop", ["four", "", "x"], ["xf", "means"], body=outer)],
              [vi("x", F, [2, 2])], [vi("xf", F, None), vi("means", F, None)],
              [("three", np.array(3, np.int64)), ("four", np.array(4, np.int64)), ("bias", np.array([0.1, -0.2], np.float32))])
    x = np.random.default_rng(2).uniform(-0.5, 0.5, (2, 2)).astype(np.float32)
    compare(m, tmp_path, {"x": x}, save=True, rtol=1e-4)


def test_a_loop_inside_an_if_branch(tmp_path):
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Add", ["a", "x"], ["b"])],
        "body", [vi("i", I64, []), vi("c", B, []), vi("a", F, None)], [vi("co", B, []), vi("b", F, None)])
    then = helper.make_graph([helper.make_node("Loop", ["two", "", "x"], ["t"], body=body)], "then", [], [vi("t", F, None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", F, None)])
    m = model([helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
               helper.make_node("Greater", ["s", "zero"], ["pos"]),
               helper.make_node("If", ["pos"], ["y"], then_branch=then, else_branch=other)],
              [vi("x", F, [3])], [vi("y", F, None)], [("two", np.array(2, np.int64)), ("zero", np.array(0, np.float32))])
    for x in ([1, 2, 3], [-1, -2, -3]):
        compare(m, tmp_path, {"x": np.array(x, np.float32)})


def rnn_scan(in_dirs, in_axes, out_axes, out_dirs):
    """An Elman RNN as a Scan: h = tanh(x W + h U), over two scan inputs summed."""
    body = helper.make_graph(
        [helper.make_node("Add", ["xa", "xb"], ["x"]),
         helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("MatMul", ["h_in", "U"], ["hu"]),
         helper.make_node("Add", ["xw", "hu"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["y"])],
        "cell", [vi("h_in", F, [2, 5]), vi("xa", F, [2, 4]), vi("xb", F, [2, 4])], [vi("h_out", F, [2, 5]), vi("y", F, [2, 5])])
    rng = np.random.default_rng(3)
    inits = [("W", rng.standard_normal((4, 5)).astype(np.float32) * 0.5), ("U", rng.standard_normal((5, 5)).astype(np.float32) * 0.5)]
    def shape(axis):
        s = [2, 4]
        s.insert(axis % 3, 6)
        return s
    node = helper.make_node("Scan", ["h0", "a", "b"], ["hT", "ys"], body=body, num_scan_inputs=2,
                            scan_input_directions=in_dirs, scan_input_axes=in_axes,
                            scan_output_axes=out_axes, scan_output_directions=out_dirs)
    m = model([node], [vi("h0", F, [2, 5]), vi("a", F, shape(in_axes[0])), vi("b", F, shape(in_axes[1]))],
              [vi("hT", F, None), vi("ys", F, None)], inits)
    feeds = {"h0": rng.standard_normal((2, 5)).astype(np.float32),
             "a": rng.standard_normal(shape(in_axes[0])).astype(np.float32),
             "b": rng.standard_normal(shape(in_axes[1])).astype(np.float32)}
    return m, feeds


@pytest.mark.parametrize("in_dirs,in_axes,out_axes,out_dirs", [
    ([0, 0], [0, 0], [0], [0]),
    ([1, 0], [0, 1], [1], [0]),
    ([0, 1], [2, -1], [-1], [1]),
])
def test_scan_directions_and_axes(tmp_path, in_dirs, in_axes, out_axes, out_dirs):
    m, feeds = rnn_scan(in_dirs, in_axes, out_axes, out_dirs)
    compare(m, tmp_path, feeds, save=True, rtol=1e-4)


def test_bad_loops_are_refused_naming_the_node(tmp_path):
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["co"])], "body",
                             [vi("i", I64, []), vi("c", B, []), vi("a", F, None)], [vi("co", B, [])])
    m = model([helper.make_node("Loop", ["M", "", "x"], ["y"], body=body, name="bad_loop")],
              [vi("x", F, [2]), vi("M", I64, [])], [vi("y", F, None)])
    path = str(tmp_path / "bad.onnx")
    onnx.save(m, path)
    with pytest.raises(Exception, match="bad_loop.*body gives 1 outputs"):
        weft.Session(use_env_path=False).compile(weft.import_onnx(path))

    # Neither a trip count nor a condition: refused when it runs, not looped forever.
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Identity", ["a"], ["b"])], "body",
                             [vi("i", I64, []), vi("c", B, []), vi("a", F, None)], [vi("co", B, []), vi("b", F, None)])
    m = model([helper.make_node("Loop", ["", "", "x"], ["y"], body=body, name="endless")], [vi("x", F, [2])], [vi("y", F, None)])
    onnx.save(m, path)
    compiled = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    with pytest.raises(Exception, match="endless.*neither a trip count"):
        compiled.run([np.zeros(2, np.float32)])
