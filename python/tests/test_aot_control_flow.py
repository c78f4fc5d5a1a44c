"""weft aot on ONNX If with a condition known only at run time: the module runs only the taken
branch's operators, and matches ONNX Runtime on inputs that take each branch (nested Ifs too)."""
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import weft

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot_onnx_check import STRICT, check_onnx_model  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def branch(name, nodes, out):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)])


def model(nested):
    """y = sum(x) > 0 ? (x * 2, or if nested: max(x) > 1 ? x * 2 : x * 3) : Relu(-x) - 1."""
    inner = helper.make_node(
        "If", ["big"], ["tb"],
        then_branch=branch("double", [helper.make_node("Mul", ["x", "two"], ["d"])], "d"),
        else_branch=branch("triple", [helper.make_node("Mul", ["x", "three"], ["t"])], "t"))
    then_nodes = ([helper.make_node("ReduceMax", ["x"], ["mx"], keepdims=0), helper.make_node("Greater", ["mx", "one"], ["big"]), inner]
                  if nested else [helper.make_node("Mul", ["x", "two"], ["tb"])])
    else_nodes = [helper.make_node("Neg", ["x"], ["nx"]), helper.make_node("Relu", ["nx"], ["rx"]),
                  helper.make_node("Sub", ["rx", "one"], ["eb"])]
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["pos"]),
        helper.make_node("If", ["pos"], ["y"], then_branch=branch("then", then_nodes, "tb"), else_branch=branch("else", else_nodes, "eb")),
    ]
    inits = [("zero", np.array(0, np.float32)), ("one", np.array(1, np.float32)), ("two", np.array(2, np.float32)),
             ("three", np.array(3, np.float32))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


INPUTS = {
    "then_big": np.abs(np.random.default_rng(7).standard_normal((2, 3))).astype(np.float32) + 0.5,  # sum > 0, max > 1
    "then_small": np.full((2, 3), 0.1, np.float32),                                                # sum > 0, max <= 1
    "else": -np.abs(np.random.default_rng(8).standard_normal((2, 3))).astype(np.float32),          # sum < 0
}


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("which", sorted(INPUTS))
def test_if_with_a_runtime_condition_matches_onnx_runtime(tmp_path, nested, which):
    check_onnx_model(tmp_path, model(nested), {"x": INPUTS[which]}, name="cf")


def test_only_the_taken_branch_runs_in_the_module(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    path = str(tmp_path / "m.onnx")
    onnx.save(model(True), path)
    out = tmp_path / "c"
    weft.generate_c(path, out, prefix="cf")
    names = open(out / "src" / "cf.c").read()
    assert "cf_step_taken" in names
    main = tmp_path / "main.c"
    main.write_text(r"""#include <stdio.h>
#include <string.h>
#include "cf.h"
static cf_context ctx;
static void count(void* user, int32_t op, const char* name, int32_t phase) {
  (void)op; (void)name;
  if (phase == 0) ++*(int*)user;
}
int main(void) {
  static const float inputs[3][6] = {{1.5f, 2, 1, 0.5f, 1, 1}, {0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f}, {-1, -2, -1, -1, -1, -1}};
  int k, runs;
  if (cf_init(&ctx, 0, 0) != cf_status_ok) return 10;
  for (k = 0; k < 3; ++k) {
    const float* y;
    int i;
    runs = 0;
    memcpy(ctx.tensor_ptrs[cf_inputs[0].index], inputs[k], sizeof inputs[k]);
    ctx.op_callback = count;
    ctx.op_callback_user = &runs;
    if (cf_run(&ctx) != cf_status_ok) return 11;
    y = (const float*)ctx.tensor_ptrs[cf_outputs[0].index];
    printf("%d", runs);
    for (i = 0; i < 6; ++i) printf(" %g", y[i]);
    printf("\n");
  }
  printf("%d\n", (int)cf_NUM_OPS);
  return 0;
}
""")
    exe = str(tmp_path / "main")
    subprocess.run([cc, *STRICT, f"-I{out}/includes-api", f"-I{out}/src", *sorted(glob.glob(f"{out}/src/*.c")), str(main), "-o", exe, "-lm"],
                   check=True)
    lines = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split("\n")
    total = int(lines[3])
    rows = [list(map(float, line.split())) for line in lines[:3]]
    runs = [int(r[0]) for r in rows]
    x = [np.array(r, np.float32) for r in ([1.5, 2, 1, 0.5, 1, 1], [0.1] * 6, [-1, -2, -1, -1, -1, -1])]
    np.testing.assert_allclose(rows[0][1:], x[0] * 2, rtol=1e-6)
    np.testing.assert_allclose(rows[1][1:], x[1] * 3, rtol=1e-6)
    np.testing.assert_allclose(rows[2][1:], np.maximum(-x[2], 0) - 1, rtol=1e-6)
    # The operators that ran: the shared ones and one path through the branches. The else path
    # (Neg, Relu, Sub) skips the then branch's ReduceMax, Greater, both inner Muls and the inner If.
    assert runs[0] == runs[1] < total and runs[2] < total, (runs, total)
    assert runs[0] - runs[2] == (5 - 1) - 3, runs  # then: ReduceMax, Greater, one Mul, inner If; else: Neg, Relu, Sub


def test_branches_of_different_rank_chosen_at_run_time_are_named_in_the_refusal(tmp_path):
    # then: Unsqueeze (rank 3), else: Identity (rank 2); the runtime runs it, a C module cannot plan it.
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["pos"]),
        helper.make_node("If", ["pos"], ["y"], name="pick",
                         then_branch=branch("up", [helper.make_node("Unsqueeze", ["x", "axes"], ["u"])], "u"),
                         else_branch=branch("same", [helper.make_node("Identity", ["x"], ["i"])], "i")),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array(0, np.float32), "zero"), axes])
    path = str(tmp_path / "rank.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    model = weft.Session(use_env_path=False).compile(weft.import_onnx(path))
    assert model.run([np.ones((2, 3), np.float32)])[0].shape == (1, 2, 3)
    assert model.run([-np.ones((2, 3), np.float32)])[0].shape == (2, 3)
    with pytest.raises(Exception) as e:
        weft.generate_c(path, tmp_path / "c", prefix="rk")
    msg = str(e.value)
    assert "known only at run time" in msg and "'pick'" in msg and "'y'" in msg, msg
    assert "dynamic shapes" not in msg, msg
