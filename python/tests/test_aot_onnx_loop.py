"""weft aot on ONNX Loop: the body becomes a module of its own inside the generated one. Each
model's C module, built as strict C99, must reproduce ONNX Runtime's outputs (aot_onnx_check.py);
a loop whose run-time trip count disagrees with its planned scan output fails the run."""
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot_onnx_check import STRICT, check_c_against_runtime, check_onnx_model, run_with_main  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL
RNG = np.random.default_rng(3)


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def model(nodes, inputs, outputs, inits=(), opset=16):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def rnn_body():
    """h' = tanh(W h + x[i]) with W and x read from the enclosing graph; a scan output of h'."""
    nodes = [
        helper.make_node("Gather", ["x", "i"], ["xi"], axis=0),
        helper.make_node("MatMul", ["h", "W"], ["wh"]),
        helper.make_node("Add", ["wh", "xi"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h_out"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Identity", ["h_out"], ["scan"]),
    ]
    return helper.make_graph(nodes, "body", [vi("i", [], I64), vi("cond_in", [], B), vi("h", [2, 4])],
                             [vi("cond_out", [], B), vi("h_out", [2, 4]), vi("scan", [2, 4])])


def test_loop_with_captures_and_a_scan_output(tmp_path):
    W = numpy_helper.from_array(RNG.standard_normal((4, 4)).astype(np.float32) * 0.5, "W")
    M = numpy_helper.from_array(np.array(5, np.int64), "M")
    m = model([helper.make_node("Loop", ["M", "", "h0"], ["h_final", "hs"], body=rnn_body())],
              [vi("h0", [2, 4]), vi("x", [5, 2, 4])], [vi("h_final", [2, 4]), vi("hs", [5, 2, 4])], [W, M])
    check_onnx_model(tmp_path, m, {"h0": RNG.standard_normal((2, 4)).astype(np.float32),
                                   "x": RNG.standard_normal((5, 2, 4)).astype(np.float32)})


def test_loop_stopped_by_its_condition(tmp_path):
    # Doubles s until it exceeds a limit: the trip count is decided at run time (no scan output).
    body = helper.make_graph(
        [helper.make_node("Mul", ["s", "two"], ["s_out"]), helper.make_node("ReduceMax", ["s_out"], ["mx"], keepdims=0),
         helper.make_node("Less", ["mx", "limit"], ["cond_out"]), helper.make_node("Add", ["n", "one"], ["n_out"])],
        "body", [vi("i", [], I64), vi("c", [], B), vi("s", [3]), vi("n", [], I64)],
        [vi("cond_out", [], B), vi("s_out", [3]), vi("n_out", [], I64)],
        initializer=[numpy_helper.from_array(np.array(2, np.float32), "two"), numpy_helper.from_array(np.array(1, np.int64), "one")])
    m = model([helper.make_node("Loop", ["M", "c0", "s0", "n0"], ["s_final", "n_final"], body=body)],
              [vi("M", [], I64), vi("c0", [], B), vi("s0", [3]), vi("n0", [], I64), vi("limit", [])],
              [vi("s_final", [3]), vi("n_final", [], I64)])
    check_onnx_model(tmp_path, m, {"M": np.array(50, np.int64), "c0": np.array(True), "s0": np.array([0.5, 1.0, 0.25], np.float32),
                                   "n0": np.array(0, np.int64), "limit": np.array(100.0, np.float32)})


def test_loop_swapping_its_carried_values(tmp_path):
    # a' = b, b' = a + b: each output is (or reads) another input, which the staging area keeps apart.
    body = helper.make_graph(
        [helper.make_node("Identity", ["b"], ["a_out"]), helper.make_node("Add", ["a", "b"], ["b_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [vi("i", [], I64), vi("c", [], B), vi("a", [2], I64), vi("b", [2], I64)],
        [vi("c_out", [], B), vi("a_out", [2], I64), vi("b_out", [2], I64)])
    M = numpy_helper.from_array(np.array(10, np.int64), "M")
    m = model([helper.make_node("Loop", ["M", "", "a0", "b0"], ["a", "b"], body=body)], [vi("a0", [2], I64), vi("b0", [2], I64)],
              [vi("a", [2], I64), vi("b", [2], I64)], [M])
    check_onnx_model(tmp_path, m, {"a0": np.array([0, 2], np.int64), "b0": np.array([1, 3], np.int64)})


def test_nested_loops(tmp_path):
    # The inner loop adds its iteration numbers to a running sum; the outer loop runs it 3 times
    # and stacks the sums.
    inner = helper.make_graph(
        [helper.make_node("Cast", ["j"], ["jf"], to=F), helper.make_node("Add", ["t", "jf"], ["t_out"]),
         helper.make_node("Identity", ["ci"], ["ci_out"])],
        "inner", [vi("j", [], I64), vi("ci", [], B), vi("t", [])], [vi("ci_out", [], B), vi("t_out", [])])
    outer = helper.make_graph(
        [helper.make_node("Loop", ["K", "", "acc"], ["acc_out"], body=inner), helper.make_node("Identity", ["co"], ["co_out"]),
         helper.make_node("Identity", ["acc_out"], ["each"])],
        "outer", [vi("i", [], I64), vi("co", [], B), vi("acc", [])], [vi("co_out", [], B), vi("acc_out", []), vi("each", [])],
        initializer=[numpy_helper.from_array(np.array(4, np.int64), "K")])
    M = numpy_helper.from_array(np.array(3, np.int64), "M")
    m = model([helper.make_node("Loop", ["M", "", "a0"], ["a", "all"], body=outer)], [vi("a0", [])], [vi("a", []), vi("all", [3])], [M])
    check_onnx_model(tmp_path, m, {"a0": np.array(0.5, np.float32)})


def test_a_loop_that_may_stop_early_with_a_scan_output_is_refused(tmp_path):
    """Its scan output's length is decided at run time (a condition can stop it before M), so no
    arena can be planned for it: weft aot refuses it and names the Loop."""
    import weft
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["f"], to=F), helper.make_node("Less", ["f", "stop"], ["c_out"]),
         helper.make_node("Identity", ["f"], ["scan"])],
        "body", [vi("i", [], I64), vi("c", [], B)], [vi("c_out", [], B), vi("scan", [])])
    M = numpy_helper.from_array(np.array(5, np.int64), "M")
    m = model([helper.make_node("Loop", ["M", "c0"], ["out"], body=body)], [vi("c0", [], B), vi("stop", [])], [vi("out", ["n"])], [M])
    path = str(tmp_path / "l.onnx")
    onnx.save(m, path)
    with pytest.raises(ValueError, match="Loop.*known only at run time"):
        weft.generate_c(path, tmp_path / "c", prefix="l")


def test_a_failing_body_fails_the_run(tmp_path):
    """A Gather in the body with an index out of range: P_run reports the Loop as the failed
    operator (the body's own failure does not escape as success)."""
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "k"], ["g"], axis=0), helper.make_node("Add", ["acc", "g"], ["acc_out"]),
         helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [vi("i", [], I64), vi("c", [], B), vi("acc", [2])], [vi("c_out", [], B), vi("acc_out", [2])])
    M = numpy_helper.from_array(np.array(3, np.int64), "M")
    m = model([helper.make_node("Relu", ["a0"], ["r"]), helper.make_node("Loop", ["M", "", "r"], ["acc"], body=body)],
              [vi("a0", [2]), vi("x", [4, 2]), vi("k", [], I64)], [vi("acc", [2])], [M])
    path = str(tmp_path / "l.onnx")
    onnx.save(m, path)
    res = run_with_main(tmp_path, path, "l", """
#include <stdio.h>
#include <string.h>
#include "l.h"
int main(void) {
  static l_context ctx;
  const float a0[2] = {1.0f, -2.0f}, x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float* acc;
  if (l_init(&ctx, 0, 0)) return 10;
  memcpy(ctx.tensor_ptrs[l_a0], a0, sizeof a0);
  memcpy(ctx.tensor_ptrs[l_x], x, sizeof x);
  *(int64_t*)ctx.tensor_ptrs[l_k] = 2;
  if (l_run(&ctx) != l_status_ok) return 11;
  acc = (float*)ctx.tensor_ptrs[l_acc];
  if (acc[0] != 1.0f + 3 * 5.0f || acc[1] != 3 * 6.0f) return 12;
  *(int64_t*)ctx.tensor_ptrs[l_k] = 4;
  if (l_run(&ctx) != l_status_op_failed || ctx.failed_op != 1) return 13;
  return 0;
}
""")
    assert res.returncode == 0


def cumsum_body(n=2, extra_out=False):
    """state' = state + x; the scan output is state' (and, with extra_out, x * 2 too)."""
    nodes = [helper.make_node("Add", ["s", "x"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y"])]
    outs = [vi("s_out", [n]), vi("y", [n])]
    inits = []
    if extra_out:
        nodes.append(helper.make_node("Mul", ["x", "two"], ["x2"]))
        outs.append(vi("x2", [n]))
        inits.append(numpy_helper.from_array(np.array(2, np.float32), "two"))
    return helper.make_graph(nodes, "body", [vi("s", [n]), vi("x", [n])], outs, initializer=inits)


@pytest.mark.parametrize("in_axis,in_dir,out_dir", [(0, 0, 0), (0, 1, 0), (1, 0, 1), (1, 1, 1)])
def test_scan_running_sum(tmp_path, in_axis, in_dir, out_dir):
    xs = [5, 2] if in_axis == 0 else [2, 5]
    attrs = {"num_scan_inputs": 1, "scan_input_axes": [in_axis], "scan_input_directions": [in_dir], "scan_output_directions": [out_dir, out_dir]}
    m = model([helper.make_node("Scan", ["s0", "x"], ["s", "ys", "x2s"], body=cumsum_body(extra_out=True), **attrs)],
              [vi("s0", [2]), vi("x", xs)], [vi("s", [2]), vi("ys", [5, 2]), vi("x2s", [5, 2])])
    check_onnx_model(tmp_path, m, {"s0": RNG.standard_normal(2).astype(np.float32), "x": RNG.standard_normal(xs).astype(np.float32)})


def test_scan_output_axis_and_a_captured_weight(tmp_path):
    # h' = tanh(x W + h V): the weights are read from the enclosing graph; the outputs stack along axis 1.
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]), helper.make_node("MatMul", ["h", "V"], ["hv"]), helper.make_node("Add", ["xw", "hv"], ["p"]),
         helper.make_node("Tanh", ["p"], ["h_out"]), helper.make_node("Identity", ["h_out"], ["y"])],
        "body", [vi("h", [1, 3]), vi("x", [1, 4])], [vi("h_out", [1, 3]), vi("y", [1, 3])])
    W = numpy_helper.from_array(RNG.standard_normal((4, 3)).astype(np.float32), "W")
    m = model([helper.make_node("Scan", ["h0", "x"], ["h", "ys"], body=body, num_scan_inputs=1, scan_output_axes=[1])],
              [vi("h0", [1, 3]), vi("x", [6, 1, 4]), vi("V", [3, 3])], [vi("h", [1, 3]), vi("ys", [1, 6, 3])], [W])
    check_onnx_model(tmp_path, m, {"h0": np.zeros((1, 3), np.float32), "x": RNG.standard_normal((6, 1, 4)).astype(np.float32),
                                   "V": RNG.standard_normal((3, 3)).astype(np.float32) * 0.5})


def test_scan8_batch_major(tmp_path):
    # ONNX Scan 8: a leading batch axis on every state and scan tensor, and an optional sequence_lens input.
    m = model([helper.make_node("Scan", ["", "s0", "x"], ["s", "ys"], body=cumsum_body(3), num_scan_inputs=1)],
              [vi("s0", [2, 3]), vi("x", [2, 4, 3])], [vi("s", [2, 3]), vi("ys", [2, 4, 3])], opset=8)
    check_onnx_model(tmp_path, m, {"s0": RNG.standard_normal((2, 3)).astype(np.float32), "x": RNG.standard_normal((2, 4, 3)).astype(np.float32)})


def test_loop_outputs_that_are_inputs_passed_through(tmp_path):
    """A scan output that is the carried input itself (no node between) and carried values that
    swap: each output is read before any carried value is replaced, in the runtime and in C."""
    body = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["x_out"]), helper.make_node("Identity", ["c"], ["c_out"])],
        "body", [vi("i", [], I64), vi("c", [], B), vi("x", [2]), vi("a", [2]), vi("b", [2])],
        [vi("c_out", [], B), vi("x_out", [2]), vi("b", [2]), vi("a", [2]), vi("x", [2])],
        initializer=[numpy_helper.from_array(np.array(2, np.float32), "two")])
    M = numpy_helper.from_array(np.array(3, np.int64), "M")
    m = model([helper.make_node("Loop", ["M", "", "x0", "a0", "b0"], ["x", "a", "b", "seq"], body=body)],
              [vi("x0", [2]), vi("a0", [2]), vi("b0", [2])], [vi("x", [2]), vi("a", [2]), vi("b", [2]), vi("seq", [3, 2])], [M])
    feeds = {"x0": np.array([1, 2], np.float32), "a0": np.array([5, 6], np.float32), "b0": np.array([7, 8], np.float32)}
    want = check_onnx_model(tmp_path, m, feeds)
    np.testing.assert_array_equal(want[3], [[1, 2], [2, 4], [4, 8]])
    np.testing.assert_array_equal(want[1], [7, 8])  # three swaps


def test_scan_outputs_that_are_states_passed_through(tmp_path):
    """Scan: the output slice is the state as it came in, and two states swap each step (ONNX
    Runtime gives zeros for such an output, so the reference here is NumPy)."""
    import weft
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x"], ["s_out"])],
        "body", [vi("s", [2]), vi("p", [2]), vi("q", [2]), vi("x", [2])],
        [vi("s_out", [2]), vi("q", [2]), vi("p", [2]), vi("s", [2])])
    m = model([helper.make_node("Scan", ["s0", "p0", "q0", "xs"], ["s", "p", "q", "ys"], body=body, num_scan_inputs=1)],
              [vi("s0", [2]), vi("p0", [2]), vi("q0", [2]), vi("xs", [4, 2])], [vi("s", [2]), vi("p", [2]), vi("q", [2]), vi("ys", [4, 2])])
    path = str(tmp_path / "s.onnx")
    onnx.save(m, path)
    xs = RNG.standard_normal((4, 2)).astype(np.float32)
    feeds = {"s0": np.zeros(2, np.float32), "p0": np.array([1, 2], np.float32), "q0": np.array([3, 4], np.float32), "xs": xs}
    got = weft.Session(use_env_path=False).compile(weft.import_model(path)).run(list(feeds.values()))
    before = np.concatenate([np.zeros((1, 2), np.float32), np.cumsum(xs, axis=0)[:-1]])  # the state entering each step
    np.testing.assert_allclose(got[3], before, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[0], xs.sum(axis=0), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got[1], [1, 2])  # four swaps
    np.testing.assert_array_equal(got[2], [3, 4])
    check_c_against_runtime(tmp_path, path, feeds)


def test_freezing_the_trip_count_input_makes_the_loop_convert(tmp_path):
    """A trip count given as a graph input leaves the scan output's length unknown: generate_c
    names --freeze; with freeze={"M": 5} the count is a constant and the module matches ONNX
    Runtime. A frozen value of the wrong type is refused by name."""
    import weft
    W = numpy_helper.from_array(RNG.standard_normal((4, 4)).astype(np.float32) * 0.5, "W")
    m = model([helper.make_node("Loop", ["M", "", "h0"], ["h_final", "hs"], body=rnn_body())],
              [vi("M", [], I64), vi("h0", [2, 4]), vi("x", [5, 2, 4])], [vi("h_final", [2, 4]), vi("hs", ["n", 2, 4])], [W])
    path = str(tmp_path / "loop.onnx")
    onnx.save(m, path)
    with pytest.raises(ValueError, match="freeze"):
        weft.generate_c(path, tmp_path / "refused", prefix="l")
    with pytest.raises(ValueError, match="'M'"):
        weft.generate_c(path, tmp_path / "wrong", prefix="l", freeze={"M": np.array(5, np.int32)})
    with pytest.raises(ValueError, match="no input 'K'"):
        weft.generate_c(path, tmp_path / "wrong", prefix="l", freeze={"K": np.array(5, np.int64)})
    h0, x = RNG.standard_normal((2, 4)).astype(np.float32), RNG.standard_normal((5, 2, 4)).astype(np.float32)
    ort = pytest.importorskip("onnxruntime")
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"M": np.array(5, np.int64), "h0": h0, "x": x})
    out = tmp_path / "frozen"
    weft.generate_c(path, out, prefix="l", freeze={"M": np.array(5, np.int64)}, test_inputs={"h0": h0, "x": x},
                    test_outputs={"h_final": want[0], "hs": want[1]}, atol=1e-5, rtol=1e-4)
    exe = str(tmp_path / "frozen_test")
    cc = shutil.which(os.environ.get("CC", "cc"))
    subprocess.run([cc, *STRICT, f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test", *sorted(glob.glob(f"{out}/src/*.c")),
                    *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
