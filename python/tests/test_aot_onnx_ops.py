"""weft aot on ONNX data-movement, comparison and normalization operators: each small model's C
module, built as strict C99, must reproduce ONNX Runtime's outputs (aot_onnx_check.py)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot_onnx_check import check_onnx_model, run_with_main  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT
RNG = np.random.default_rng(11)


def model(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("exponent", [np.float32(2.0), np.float32(0.5), np.float32(3.0), np.float32(-1.5)])
def test_pow_scalar_exponent(tmp_path, exponent):
    e = numpy_helper.from_array(np.array(exponent, np.float32), "e")
    m = model([helper.make_node("Pow", ["x", "e"], ["y"])], [vi("x", [2, 3, 5])], [vi("y", [2, 3, 5])], [e])
    x = np.abs(rand(2, 3, 5)) + 0.1
    check_onnx_model(tmp_path, m, {"x": x})


def test_pow_broadcast_tensor_exponent(tmp_path):
    m = model([helper.make_node("Pow", ["x", "e"], ["y"])], [vi("x", [2, 3, 4]), vi("e", [3, 1])], [vi("y", [2, 3, 4])])
    check_onnx_model(tmp_path, m, {"x": np.abs(rand(2, 3, 4)) + 0.5, "e": rand(3, 1)})


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
def test_comparisons_feed_where(tmp_path, op):
    # The bool result selects between two broadcast operands.
    nodes = [helper.make_node(op, ["a", "b"], ["c"]), helper.make_node("Where", ["c", "x", "y"], ["out"])]
    m = model(nodes, [vi("a", [3, 1, 4]), vi("b", [1, 5, 4]), vi("x", [5, 4]), vi("y", [3, 1, 1])], [vi("out", [3, 5, 4])])
    a = np.round(rand(3, 1, 4))
    b = np.round(rand(1, 5, 4))  # rounded, so Equal is true somewhere
    check_onnx_model(tmp_path, m, {"a": a, "b": b, "x": rand(5, 4), "y": rand(3, 1, 1)})


def test_logical_ops_and_bool_output(tmp_path):
    nodes = [helper.make_node("Greater", ["a", "b"], ["g"]), helper.make_node("Less", ["a", "c"], ["l"]),
             helper.make_node("And", ["g", "l"], ["both"]), helper.make_node("Or", ["g", "l"], ["either"]),
             helper.make_node("Xor", ["both", "either"], ["x"])]
    m = model(nodes, [vi("a", [4, 6]), vi("b", [6]), vi("c", [4, 1])],
              [vi("both", [4, 6], TensorProto.BOOL), vi("x", [4, 6], TensorProto.BOOL)])
    check_onnx_model(tmp_path, m, {"a": rand(4, 6), "b": rand(6), "c": rand(4, 1)})


@pytest.mark.parametrize("to", [TensorProto.INT32, TensorProto.INT64, TensorProto.INT8, TensorProto.UINT8, TensorProto.BOOL, TensorProto.DOUBLE])
def test_cast_there_and_back(tmp_path, to):
    nodes = [helper.make_node("Cast", ["x"], ["i"], to=to), helper.make_node("Cast", ["i"], ["y"], to=F)]
    m = model(nodes, [vi("x", [3, 7])], [vi("y", [3, 7])])
    # Within every target's range: out-of-range conversions are implementation-defined in ONNX.
    x = np.clip(rand(3, 7) * 40, -120, 120)
    if to == TensorProto.UINT8:
        x = np.abs(x)
    check_onnx_model(tmp_path, m, {"x": x})


@pytest.mark.parametrize("axis,indices", [(0, [[0, 3], [2, 1]]), (1, [-1, 0, 2]), (2, [1])])
def test_gather(tmp_path, axis, indices):
    idx = np.array(indices, np.int64)
    shape = [4, 3, 5]
    out = shape[:axis] + list(idx.shape) + shape[axis + 1:]
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)], [vi("x", shape), vi("i", list(idx.shape), TensorProto.INT64)],
              [vi("y", out)])
    check_onnx_model(tmp_path, m, {"x": rand(*shape), "i": idx})


def test_gather_out_of_range_index_fails_the_run(tmp_path):
    """An index outside the axis makes P_run return op_failed with failed_op set, not read out of bounds."""
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=0)], [vi("x", [4, 2]), vi("i", [2], TensorProto.INT64)], [vi("y", [2, 2])])
    path = str(tmp_path / "g.onnx")
    onnx.save(m, path)
    res = run_with_main(tmp_path, path, "g", """
#include <stdio.h>
#include "g.h"
int main(void) {
  static g_context ctx;
  int64_t* idx;
  int32_t s = g_init(&ctx, 0, 0);
  if (s) return 10;
  idx = (int64_t*)ctx.tensor_ptrs[g_i];
  idx[0] = 1; idx[1] = -4;
  if (g_run(&ctx) != g_status_ok) return 11;
  idx[1] = 4;
  s = g_run(&ctx);
  printf("%d %d\\n", (int)s, (int)ctx.failed_op);
  return s == g_status_op_failed && ctx.failed_op == 0 ? 0 : 12;
}
""")
    assert res.returncode == 0, res.stdout


@pytest.mark.parametrize("split,axis", [(None, 1), ([1, 4, 1], 1), ([2, 1], 0), ([3, 3, 2], -1)])
def test_split(tmp_path, split, axis):
    shape = [3, 6, 8]
    a = axis % 3
    sizes = split or [shape[a] // 3] * 3
    inits, ins = [], ["x"]
    if split:
        inits.append(numpy_helper.from_array(np.array(split, np.int64), "s"))
        ins.append("s")
    outs = [f"y{k}" for k in range(len(sizes))]
    kw = {} if split else {"num_outputs": 3}
    m = model([helper.make_node("Split", ins, outs, axis=axis, **kw)], [vi("x", shape)],
              [vi(o, shape[:a] + [s] + shape[a + 1:]) for o, s in zip(outs, sizes)], inits)
    check_onnx_model(tmp_path, m, {"x": rand(*shape)})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes(tmp_path, mode):
    pads = np.array([0, 1, 2, 0, 0, 2, 1, 3], np.int64)  # begins then ends, for 4 dims
    inits = [numpy_helper.from_array(pads, "p")]
    ins = ["x", "p"]
    if mode == "constant":
        inits.append(numpy_helper.from_array(np.array(1.5, np.float32), "v"))
        ins.append("v")
    m = model([helper.make_node("Pad", ins, ["y"], mode=mode)], [vi("x", [1, 3, 4, 5])], [vi("y", [1, 6, 7, 8])], inits, opset=19)
    check_onnx_model(tmp_path, m, {"x": rand(1, 3, 4, 5)})


def test_pad_negative_crops_and_axes(tmp_path):
    inits = [numpy_helper.from_array(np.array([-1, 2, 1, -2], np.int64), "p"), numpy_helper.from_array(np.array([1, 3], np.int64), "a")]
    m = model([helper.make_node("Pad", ["x", "p", "", "a"], ["y"])], [vi("x", [2, 4, 3, 6])], [vi("y", [2, 4, 3, 6])], inits, opset=19)
    check_onnx_model(tmp_path, m, {"x": rand(2, 4, 3, 6)})


@pytest.mark.parametrize("op,mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"), ("SpaceToDepth", None)])
def test_depth_space(tmp_path, op, mode):
    kw = {"blocksize": 2}
    if mode:
        kw["mode"] = mode
    if op == "DepthToSpace":
        shape_in, shape_out = [2, 12, 3, 4], [2, 3, 6, 8]
    else:
        shape_in, shape_out = [2, 3, 6, 8], [2, 12, 3, 4]
    m = model([helper.make_node(op, ["x"], ["y"], **kw)], [vi("x", shape_in)], [vi("y", shape_out)])
    check_onnx_model(tmp_path, m, {"x": rand(*shape_in)})


@pytest.mark.parametrize("axis,bias,stats", [(-1, True, False), (1, False, False), (2, True, True)])
def test_layer_normalization(tmp_path, axis, bias, stats):
    shape = [2, 3, 8]
    a = axis % 3
    norm = shape[a:]
    inits = [numpy_helper.from_array(rand(*norm), "s")]
    ins = ["x", "s"]
    if bias:
        inits.append(numpy_helper.from_array(rand(*norm), "b"))
        ins.append("b")
    outs = ["y"] + (["mean", "inv"] if stats else [])
    stat_shape = shape[:a] + [1] * (3 - a)
    m = model([helper.make_node("LayerNormalization", ins, outs, axis=axis, epsilon=1e-3)], [vi("x", shape)],
              [vi("y", shape)] + ([vi("mean", stat_shape), vi("inv", stat_shape)] if stats else []), inits)
    check_onnx_model(tmp_path, m, {"x": rand(*shape) * 3 + 1})


def test_instance_normalization(tmp_path):
    inits = [numpy_helper.from_array(rand(4), "s"), numpy_helper.from_array(rand(4), "b")]
    m = model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-4)], [vi("x", [2, 4, 5, 3])],
              [vi("y", [2, 4, 5, 3])], inits)
    check_onnx_model(tmp_path, m, {"x": rand(2, 4, 5, 3) * 2 - 1})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                "ReduceLogSumExp", "ReduceSumSquare"])
@pytest.mark.parametrize("axes,keepdims", [([1], 1), ([0, 2], 0), (None, 1), ([-1], 0)])
def test_reductions(tmp_path, op, axes, keepdims):
    x = rand(3, 4, 5)
    if op == "ReduceLogSum":
        x = np.abs(x) + 0.1  # a log of a positive sum
    if op == "ReduceProd":
        x = np.sign(x) * (0.6 + 0.8 * np.abs(x) / (1 + np.abs(x)))  # products that stay in range
    inits, ins = [], ["x"]
    if axes is not None:
        inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        ins.append("axes")
    red = set(range(3)) if axes is None else {a % 3 for a in axes}
    out_shape = [1 if k in red else d for k, d in enumerate([3, 4, 5]) if keepdims or k not in red]
    m = model([helper.make_node(op, ins, ["y"], keepdims=keepdims)], [vi("x", [3, 4, 5])], [vi("y", out_shape)], inits)
    check_onnx_model(tmp_path, m, {"x": x.astype(np.float32)})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("t,np_t", [(TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64), (TensorProto.UINT8, np.uint8),
                                    (TensorProto.INT8, np.int8)])
def test_integer_arithmetic_wraps_as_onnx_runtime(tmp_path, op, t, np_t):
    info = np.iinfo(np_t)
    a = RNG.integers(info.min, int(info.max) + 1, (3, 4)).astype(np_t)
    b = RNG.integers(info.min, int(info.max) + 1, (4,)).astype(np_t)
    if op == "Div":
        b[b == 0] = 3
        if info.min < 0:  # (ONNX Runtime itself traps on MIN / -1, so that one is left out)
            b[0], a[0, 0] = -1, info.min + 1
    m = model([helper.make_node(op, ["a", "b"], ["y"])], [vi("a", [3, 4], t), vi("b", [4], t)], [vi("y", [3, 4], t)])
    check_onnx_model(tmp_path, m, {"a": a, "b": b})


@pytest.mark.parametrize("op", ["Min", "Max", "Sum", "Mean"])
def test_variadic_ops_broadcast(tmp_path, op):
    m = model([helper.make_node(op, ["a", "b", "c"], ["y"])], [vi("a", [2, 3, 4]), vi("b", [4]), vi("c", [3, 1])], [vi("y", [2, 3, 4])])
    check_onnx_model(tmp_path, m, {"a": rand(2, 3, 4), "b": rand(4), "c": rand(3, 1)})


@pytest.mark.parametrize("op", ["Min", "Max"])
def test_integer_min_max(tmp_path, op):
    t = TensorProto.INT32
    m = model([helper.make_node(op, ["a", "b"], ["y"])], [vi("a", [5], t), vi("b", [5], t)], [vi("y", [5], t)])
    check_onnx_model(tmp_path, m, {"a": RNG.integers(-9, 9, 5).astype(np.int32), "b": RNG.integers(-9, 9, 5).astype(np.int32)})


@pytest.mark.parametrize("op,attrs,lo,hi", [("Round", {}, -4, 4), ("Sign", {}, -2, 2), ("Tan", {}, -1.4, 1.4), ("Asin", {}, -0.99, 0.99),
                                            ("Acos", {}, -0.99, 0.99), ("Atan", {}, -5, 5), ("Sinh", {}, -4, 4), ("Cosh", {}, -4, 4),
                                            ("Asinh", {}, -5, 5), ("Acosh", {}, 1.01, 6), ("Atanh", {}, -0.99, 0.99), ("Mish", {}, -6, 25),
                                            ("ThresholdedRelu", {"alpha": 0.5}, -2, 2), ("Celu", {"alpha": 1.5}, -4, 4)])
def test_more_unary_ops(tmp_path, op, attrs, lo, hi):
    x = RNG.uniform(lo, hi, (4, 25)).astype(np.float32)
    if op in ("Round", "Sign"):
        x[0, :8] = [-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, -0.0]  # ties go to even; zeros keep no sign
    m = model([helper.make_node(op, ["x"], ["y"], **attrs)], [vi("x", [4, 25])], [vi("y", [4, 25])])
    check_onnx_model(tmp_path, m, {"x": x})


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd"])
@pytest.mark.parametrize("t,np_t", [(TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64), (TensorProto.UINT8, np.uint8)])
def test_integer_reductions(tmp_path, op, t, np_t):
    if np_t == np.uint8 and op in ("ReduceSum", "ReduceProd"):
        pytest.skip("ONNX Runtime has no uint8 ReduceSum or ReduceProd")
    x = RNG.integers(0 if np_t == np.uint8 else -50, 50, (3, 4, 5)).astype(np_t)
    if op == "ReduceProd":  # products of 15 values that stay in range (overflow is not the same everywhere)
        x = RNG.integers(0 if np_t == np.uint8 else -3, 2 if np_t == np.uint8 else 4, (3, 4, 5)).astype(np_t)
    axes = numpy_helper.from_array(np.array([0, 2], np.int64), "axes")
    m = model([helper.make_node(op, ["x", "axes"], ["y"], keepdims=0)], [vi("x", [3, 4, 5], t)], [vi("y", [4], t)], [axes])
    check_onnx_model(tmp_path, m, {"x": x})


@pytest.mark.parametrize("shape,repeats", [([2, 3], [2, 1]), ([2, 1, 3], [1, 4, 2]), ([5], [3]), ([2, 2, 1, 2], [2, 1, 3, 1])])
def test_tile(tmp_path, shape, repeats):
    r = numpy_helper.from_array(np.array(repeats, np.int64), "r")
    out = [d * k for d, k in zip(shape, repeats)]
    m = model([helper.make_node("Tile", ["x", "r"], ["y"])], [vi("x", shape)], [vi("y", out)], [r])
    check_onnx_model(tmp_path, m, {"x": rand(*shape)})


@pytest.mark.parametrize("fmod,t,np_t", [(0, TensorProto.INT32, np.int32), (1, TensorProto.INT32, np.int32),
                                         (0, TensorProto.INT64, np.int64), (0, TensorProto.INT8, np.int8),
                                         (1, TensorProto.INT16, np.int16), (0, TensorProto.UINT8, np.uint8),
                                         (1, F, np.float32)])
def test_mod(tmp_path, fmod, t, np_t):
    m = model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)], [vi("a", [3, 4], t), vi("b", [4], t)], [vi("y", [3, 4], t)])
    if np_t == np.float32:
        a, b = rand(3, 4) * 10, rand(4) * 3 + np.float32(0.1) * np.sign(rand(4))
    else:
        lo = 0 if np_t == np.uint8 else -100
        a = RNG.integers(lo, 100, (3, 4)).astype(np_t)
        b = RNG.integers(1, 9, 4).astype(np_t)
        if lo < 0:
            b[::2] *= -1  # negative divisors: the remainder takes the divisor's sign unless fmod
            b[1] = -1
            a[0, 1] = np.iinfo(np_t).min  # the minimum over -1
    check_onnx_model(tmp_path, m, {"a": a, "b": b})


@pytest.mark.parametrize("axis,k,largest", [(-1, 3, 1), (0, 2, 0), (1, 4, 1), (1, 1, 0)])
def test_topk(tmp_path, axis, k, largest):
    shape = [3, 6, 4]
    kk = numpy_helper.from_array(np.array([k], np.int64), "k")
    out = list(shape)
    out[axis] = k
    m = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)], [vi("x", shape)],
              [vi("v", out), vi("i", out, TensorProto.INT64)], [kk])
    x = np.round(rand(*shape) * 2) / 2  # ties: the lower index first, as ONNX requires
    check_onnx_model(tmp_path, m, {"x": x})


@pytest.mark.parametrize("reduction,t,np_t", [("none", F, np.float32), ("add", F, np.float32), ("mul", F, np.float32),
                                              ("max", F, np.float32), ("min", TensorProto.INT32, np.int32),
                                              ("add", TensorProto.INT64, np.int64)])
def test_scatter_nd(tmp_path, reduction, t, np_t):
    # Index tuples of length 2 into [4, 3, 5]: each update is a row of 5; duplicates (except with
    # "none", where ONNX leaves their order open) combine in order.
    idx = np.array([[0, 1], [3, -1], [2, 0]] + ([] if reduction == "none" else [[0, 1], [-4, 1]]), np.int64)
    data = (rand(4, 3, 5) * 10).astype(np_t)
    upd = (rand(len(idx), 5) * 10).astype(np_t)
    m = model([helper.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction=reduction)],
              [vi("d", [4, 3, 5], t), vi("i", list(idx.shape), TensorProto.INT64), vi("u", [len(idx), 5], t)], [vi("y", [4, 3, 5], t)])
    check_onnx_model(tmp_path, m, {"d": data, "i": idx, "u": upd})


def test_a_constant_graph_output(tmp_path):
    # An output that no operator computes (an initializer, as exporters leave folded results): P_run
    # copies its value to where the caller reads outputs.
    c = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, "c")
    m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("y", [4]), vi("c", [2, 3])], [c])
    check_onnx_model(tmp_path, m, {"x": rand(4)})


@pytest.mark.parametrize("slope_shape", [[3, 1, 1], [1], [5]])
def test_prelu(tmp_path, slope_shape):
    s = numpy_helper.from_array(rand(*slope_shape), "s")
    m = model([helper.make_node("PRelu", ["x", "s"], ["y"])], [vi("x", [2, 3, 4, 5])], [vi("y", [2, 3, 4, 5])], [s])
    check_onnx_model(tmp_path, m, {"x": rand(2, 3, 4, 5)})


def test_prelu_int32_slope_as_input(tmp_path):
    m = model([helper.make_node("PRelu", ["x", "s"], ["y"])], [vi("x", [4, 3], TensorProto.INT32), vi("s", [3], TensorProto.INT32)],
              [vi("y", [4, 3], TensorProto.INT32)])
    check_onnx_model(tmp_path, m, {"x": RNG.integers(-50, 50, (4, 3)).astype(np.int32), "s": np.array([2, -3, 0], np.int32)})


@pytest.mark.parametrize("size", [1, 3, 5])  # ONNX Runtime takes odd sizes only
def test_lrn(tmp_path, size):
    m = model([helper.make_node("LRN", ["x"], ["y"], size=size, alpha=0.02, beta=0.6, bias=1.5)], [vi("x", [2, 6, 3, 4])], [vi("y", [2, 6, 3, 4])])
    check_onnx_model(tmp_path, m, {"x": rand(2, 6, 3, 4) * 3})


def test_not(tmp_path):
    B = TensorProto.BOOL
    nodes = [helper.make_node("Greater", ["x", "y"], ["g"]), helper.make_node("Not", ["g"], ["ok"])]
    m = model(nodes, [vi("x", [3, 4]), vi("y", [4])], [vi("ok", [3, 4], B)])
    check_onnx_model(tmp_path, m, {"x": rand(3, 4), "y": rand(4)})


@pytest.mark.parametrize("src,shape", [([3, 1], [2, 3, 4]), ([1], [2, 2]), ([4, 1, 2], [4, 3, 2]), ([], [2, 3]), ([2, 3], [2, 3])])
def test_expand(tmp_path, src, shape):
    sh = numpy_helper.from_array(np.array(shape, np.int64), "shape")
    m = model([helper.make_node("Expand", ["x", "shape"], ["y"])], [vi("x", src)], [vi("y", list(np.broadcast_shapes(tuple(src), tuple(shape))))], [sh])
    check_onnx_model(tmp_path, m, {"x": rand(*src)})


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,keepdims,last", [(0, 1, 0), (1, 0, 0), (-1, 1, 1), (2, 0, 1)])
def test_arg_reductions(tmp_path, op, axis, keepdims, last):
    x = np.round(rand(3, 4, 5) * 2) / 2  # ties, to check which index wins
    out = [3, 4, 5]
    if keepdims:
        out[axis] = 1
    else:
        out.pop(axis)
    m = model([helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=last)], [vi("x", [3, 4, 5])],
              [vi("y", out, TensorProto.INT64)])
    check_onnx_model(tmp_path, m, {"x": x})


@pytest.mark.parametrize("t,np_t", [(F, np.float32), (TensorProto.INT32, np.int32), (TensorProto.INT64, np.int64), (TensorProto.DOUBLE, np.float64)])
@pytest.mark.parametrize("axis,exclusive,reverse", [(0, 0, 0), (1, 1, 0), (-1, 0, 1), (1, 1, 1)])
def test_cumsum(tmp_path, t, np_t, axis, exclusive, reverse):
    a = numpy_helper.from_array(np.array(axis, np.int64), "a")
    m = model([helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=exclusive, reverse=reverse)], [vi("x", [3, 4, 5], t)], [vi("y", [3, 4, 5], t)], [a])
    check_onnx_model(tmp_path, m, {"x": (rand(3, 4, 5) * 20).astype(np_t)})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(tmp_path, axis):
    shape = [3, 4, 5]
    ishape = [2, 3, 4]
    dim = shape[axis]
    idx = RNG.integers(-dim, dim, ishape).astype(np.int64)
    m = model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)], [vi("x", shape), vi("i", ishape, TensorProto.INT64)], [vi("y", ishape)])
    check_onnx_model(tmp_path, m, {"x": rand(*shape), "i": idx})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1])
def test_trilu(tmp_path, upper, k):
    inputs, inits = ["x"], []
    if k is not None:
        inputs.append("k")
        inits.append(numpy_helper.from_array(np.array(k, np.int64), "k"))
    m = model([helper.make_node("Trilu", inputs, ["y"], upper=upper)], [vi("x", [2, 4, 5])], [vi("y", [2, 4, 5])], inits)
    check_onnx_model(tmp_path, m, {"x": rand(2, 4, 5)})


def test_trilu_causal_mask_from_a_run_time_k(tmp_path):
    m = model([helper.make_node("Trilu", ["x", "k"], ["y"], upper=0)], [vi("x", [6, 6], TensorProto.INT64), vi("k", [], TensorProto.INT64)],
              [vi("y", [6, 6], TensorProto.INT64)])
    check_onnx_model(tmp_path, m, {"x": np.ones((6, 6), np.int64), "k": np.array(1, np.int64)})


def test_dropout_in_inference(tmp_path):
    nodes = [helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"]), helper.make_node("Relu", ["y"], ["z"])]
    r = numpy_helper.from_array(np.array(0.3, np.float32), "r")
    m = model(nodes, [vi("x", [3, 4]), vi("t", [], TensorProto.BOOL)], [vi("z", [3, 4]), vi("mask", [3, 4], TensorProto.BOOL)], [r])
    check_onnx_model(tmp_path, m, {"x": rand(3, 4), "t": np.array(False)})


@pytest.mark.parametrize("batch_dims,dshape,ishape", [(0, [4, 3, 5], [2, 2]), (0, [4, 3, 5], [3, 1]), (1, [2, 3, 4], [2, 5, 1]),
                                                      (0, [3, 4], [2, 2])])
def test_gather_nd(tmp_path, batch_dims, dshape, ishape):
    k = ishape[-1]
    idx = np.stack([RNG.integers(-dshape[batch_dims + j], dshape[batch_dims + j], ishape[:-1]) for j in range(k)], axis=-1).astype(np.int64)
    out = ishape[:-1] + dshape[batch_dims + k:]
    m = model([helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=batch_dims)], [vi("x", dshape), vi("i", ishape, TensorProto.INT64)],
              [vi("y", out)])
    check_onnx_model(tmp_path, m, {"x": rand(*dshape), "i": idx})


@pytest.mark.parametrize("reduction,t,np_t", [("none", F, np.float32), ("add", F, np.float32), ("mul", TensorProto.INT32, np.int32),
                                              ("max", F, np.float32), ("min", TensorProto.INT64, np.int64)])
@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements(tmp_path, reduction, t, np_t, axis):
    data = (rand(4, 5) * 10).astype(np_t)
    ishape = [3, 5] if axis == 0 else [4, 2]
    dim = [4, 5][axis]
    if reduction == "none":  # distinct targets along the axis: ONNX leaves duplicates' order open
        idx = np.stack([RNG.permutation(np.arange(-dim, 0) if c % 2 else np.arange(dim))[:ishape[axis]] for c in range(ishape[1 - axis])],
                       axis=1 - axis).astype(np.int64)
    else:
        idx = RNG.integers(-dim, dim, ishape).astype(np.int64)
    upd = (rand(*ishape) * 10).astype(np_t)
    m = model([helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=axis, reduction=reduction)],
              [vi("d", [4, 5], t), vi("i", ishape, TensorProto.INT64), vi("u", ishape, t)], [vi("y", [4, 5], t)])
    check_onnx_model(tmp_path, m, {"d": data, "i": idx, "u": upd})


@pytest.mark.parametrize("axis,itype,np_it", [(-1, TensorProto.INT64, np.int64), (0, TensorProto.INT32, np.int32), (1, F, np.float32)])
def test_one_hot(tmp_path, axis, itype, np_it):
    # depth's type follows the indices' (the type pairs ONNX Runtime implements)
    depth = numpy_helper.from_array(np.array(5, np_it), "depth")
    ind = np.array([[0, 4, -1], [-5, 2, 7]], np_it)  # 7: outside [-5, 5), a row of off values
    if np_it == np.float32:
        ind = np.array([[0.7, 4.2, -1.5], [-4.9, 2.0, 6.0]], np.float32)
    out = [2, 3]
    out.insert(axis if axis >= 0 else len(out) + 1 + axis, 5)
    m = model([helper.make_node("OneHot", ["i", "depth", "v"], ["y"], axis=axis)], [vi("i", [2, 3], itype), vi("v", [2])], [vi("y", out)], [depth])
    check_onnx_model(tmp_path, m, {"i": ind, "v": np.array([-0.5, 3.0], np.float32)})


@pytest.mark.parametrize("batch_axis,time_axis", [(0, 1), (1, 0)])
def test_reverse_sequence(tmp_path, batch_axis, time_axis):
    shape = [3, 5, 2] if batch_axis == 0 else [5, 3, 2]
    m = model([helper.make_node("ReverseSequence", ["x", "l"], ["y"], batch_axis=batch_axis, time_axis=time_axis)],
              [vi("x", shape), vi("l", [3], TensorProto.INT64)], [vi("y", shape)])
    check_onnx_model(tmp_path, m, {"x": rand(*shape), "l": np.array([5, 0, 3], np.int64)})


@pytest.mark.parametrize("eq,shapes", [
    ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("bhij,bhjd->bhid", [(1, 2, 4, 4), (1, 2, 4, 3)]), ("ij,jk", [(3, 4), (4, 2)]),
    ("ii->i", [(4, 4)]), ("ii", [(3, 3)]), ("i,i->", [(5,), (5,)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 3, 4, 2)]),
    ("bsd,dhk->bshk", [(2, 5, 8), (8, 3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("ij,kj->ikj", [(2, 1), (4, 3)]),
    ("bij->", [(2, 3, 4)]), ("ij->ji", [(3, 5)])])
def test_einsum(tmp_path, eq, shapes):
    names = [f"x{k}" for k in range(len(shapes))]
    arrays = {n: rand(*s) for n, s in zip(names, shapes)}
    out = np.einsum(eq, *arrays.values()).shape
    m = model([helper.make_node("Einsum", names, ["y"], equation=eq)], [vi(n, list(s)) for n, s in zip(names, shapes)], [vi("y", list(out))],
              opset=12)
    want = check_onnx_model(tmp_path, m, arrays)
    np.testing.assert_allclose(want[0], np.einsum(eq, *[a.astype(np.float64) for a in arrays.values()]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(tmp_path, mode, padding, align):
    grid = (RNG.random((2, 4, 5, 2)) * 2.6 - 1.3).astype(np.float32)  # some positions outside [-1, 1]
    m = model([helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=align)],
              [vi("x", [2, 3, 6, 7]), vi("g", [2, 4, 5, 2])], [vi("y", [2, 3, 4, 5])], opset=20)
    check_onnx_model(tmp_path, m, {"x": rand(2, 3, 6, 7), "g": grid})


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_3d(tmp_path, mode):
    grid = (RNG.random((1, 2, 3, 4, 3)) * 2.4 - 1.2).astype(np.float32)
    m = model([helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode="border")],
              [vi("x", [1, 2, 3, 4, 5]), vi("g", [1, 2, 3, 4, 3])], [vi("y", [1, 2, 2, 3, 4])], opset=20)
    check_onnx_model(tmp_path, m, {"x": rand(1, 2, 3, 4, 5), "g": grid})


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
def test_grid_sample_float16_runtime_samples_in_float32(tmp_path, mode):
    """The runtime's float16 GridSample (no emitter: the C takes float32 and double) samples in
    float32: on float16 inputs it equals the float32 result rounded to float16."""
    import weft
    x = rand(1, 2, 5, 6).astype(np.float16)
    g = (RNG.random((1, 3, 4, 2)) * 2.4 - 1.2).astype(np.float16)
    outs = {}
    for t, np_t in ((TensorProto.FLOAT16, np.float16), (F, np.float32)):
        m = model([helper.make_node("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode="reflection")],
                  [vi("x", [1, 2, 5, 6], t), vi("g", [1, 3, 4, 2], t)], [vi("y", [1, 2, 3, 4], t)], opset=20)
        path = str(tmp_path / f"{np.dtype(np_t).name}.onnx")
        onnx.save(m, path)
        (outs[np_t],) = weft.Session(use_env_path=False).compile(weft.import_model(path)).run([x.astype(np_t), g.astype(np_t)])
    np.testing.assert_array_equal(outs[np.float16], outs[np.float32].astype(np.float16))


@pytest.mark.parametrize("shape", [[3, 0], [0, 3], [0, 2, 2]])
def test_empty_trilu_and_dropout_build_warning_free(tmp_path, shape):
    nodes = [helper.make_node("Trilu", ["x"], ["t"]), helper.make_node("Dropout", ["t"], ["y", "mask"])]
    m = model(nodes, [vi("x", shape)], [vi("y", shape), vi("mask", shape, TensorProto.BOOL)])
    check_onnx_model(tmp_path, m, {"x": np.zeros(shape, np.float32)})


@pytest.mark.parametrize("strides,dilations,pads", [([1, 1], [1, 1], [0, 0, 0, 0]), ([2, 1], [1, 2], [1, 0, 2, 1])])
def test_col2im(tmp_path, strides, dilations, pads):
    image, block = [7, 6], [3, 2]
    counts = [(image[d] + pads[d] + pads[d + 2] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1 for d in range(2)]
    x = rand(2, 3 * 6, counts[0] * counts[1])
    inits = [numpy_helper.from_array(np.array(image, np.int64), "image"), numpy_helper.from_array(np.array(block, np.int64), "block")]
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=strides, dilations=dilations, pads=pads)
    m = model([node], [vi("x", list(x.shape))], [vi("y", [2, 3] + image)], inits)
    check_onnx_model(tmp_path, m, {"x": x})


@pytest.mark.parametrize("t,np_t", [(TensorProto.INT32, np.int32), (TensorProto.DOUBLE, np.float64), (TensorProto.INT8, np.int8)])
def test_col2im_3d_other_types_match_the_runtime(tmp_path, t, np_t):
    from aot_onnx_check import check_c_against_runtime
    image, block = [4, 5, 3], [2, 3, 2]
    x = (RNG.standard_normal((1, 2 * 12, 3 * 3 * 2)) * 40).astype(np_t)
    inits = [numpy_helper.from_array(np.array(image, np.int64), "image"), numpy_helper.from_array(np.array(block, np.int64), "block")]
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], pads=[0, 0, 0, 0, 0, 0])
    m = model([node], [vi("x", list(x.shape), t)], [vi("y", [1, 2] + image, t)], inits)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    check_c_against_runtime(tmp_path, path, {"x": x})


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(tmp_path, mode):
    cache, update = rand(2, 3, 6, 4), rand(2, 3, 2, 4)
    idx = np.array([4, 1] if mode == "linear" else [5, 3], np.int64)
    node = helper.make_node("TensorScatter", ["c", "u", "i"], ["y"], axis=2, mode=mode)
    m = model([node], [vi("c", [2, 3, 6, 4]), vi("u", [2, 3, 2, 4]), vi("i", [2], TensorProto.INT64)], [vi("y", [2, 3, 6, 4])], opset=24)
    check_onnx_model(tmp_path, m, {"c": cache, "u": update, "i": idx})


def test_tensor_scatter_index_past_the_cache_fails_the_run(tmp_path):
    """A write index whose rows do not fit the cache makes P_run return op_failed, not write out of bounds."""
    node = helper.make_node("TensorScatter", ["c", "u", "i"], ["y"], axis=1)
    m = model([node], [vi("c", [1, 4, 2]), vi("u", [1, 2, 2]), vi("i", [1], TensorProto.INT64)], [vi("y", [1, 4, 2])], opset=24)
    path = str(tmp_path / "s.onnx")
    onnx.save(m, path)
    res = run_with_main(tmp_path, path, "s", """
#include <stdio.h>
#include "s.h"
int main(void) {
  static s_context ctx;
  int64_t* at;
  int32_t st = s_init(&ctx, 0, 0);
  if (st) return 10;
  at = (int64_t*)ctx.tensor_ptrs[s_i];
  at[0] = 2;
  if (s_run(&ctx) != s_status_ok) return 11;
  at[0] = 3;
  st = s_run(&ctx);
  printf("%d %d\\n", (int)st, (int)ctx.failed_op);
  if (st != s_status_op_failed || ctx.failed_op != 0) return 12;
  at[0] = -1;
  return s_run(&ctx) == s_status_op_failed ? 0 : 13;
}
""")
    assert res.returncode == 0, res.stdout


def test_bitcast_matches_the_runtime(tmp_path):
    from aot_onnx_check import check_c_against_runtime
    import weft
    x = rand(3, 5)
    m = model([helper.make_node("BitCast", ["x"], ["b"], to=TensorProto.INT32), helper.make_node("Add", ["b", "b"], ["y"])],
              [vi("x", [3, 5])], [vi("y", [3, 5], TensorProto.INT32)], opset=26)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    (got,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    np.testing.assert_array_equal(got, x.view(np.int32) + x.view(np.int32))
    check_c_against_runtime(tmp_path, path, {"x": x})


@pytest.mark.parametrize("align,size", [(0, [2, 3, 4, 5]), (1, [1, 2, 3, 4, 2]), (0, [2, 1, 1, 3])])
def test_affine_grid(tmp_path, align, size):
    sp = len(size) - 2
    theta = rand(size[0], sp, sp + 1)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
    out_shape = [size[0]] + size[2:] + [sp]
    m = model([node], [vi("theta", list(theta.shape))], [vi("grid", out_shape)], [numpy_helper.from_array(np.array(size, np.int64), "size")], opset=20)
    check_onnx_model(tmp_path, m, {"theta": theta})


def test_affine_grid_unit_dim_with_align_corners_matches_the_runtime(tmp_path):
    # A dim of one position sits at 0 (PyTorch's affine_grid; ONNX Runtime and ONNX's reference
    # disagree with it and with each other), so the C is checked against Weft's runtime here.
    from aot_onnx_check import check_c_against_runtime
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=1)
    m = model([node], [vi("theta", [2, 2, 3])], [vi("grid", [2, 1, 3, 2])], [numpy_helper.from_array(np.array([2, 1, 1, 3], np.int64), "size")],
              opset=20)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    check_c_against_runtime(tmp_path, path, {"theta": rand(2, 2, 3)})


@pytest.mark.parametrize("group,offset_group,bias,mask,strides,pads,dilations", [
    (1, 1, False, False, [1, 1], [0, 0, 0, 0], [1, 1]),
    (2, 2, True, True, [2, 1], [1, 0, 2, 1], [1, 2]),
    (1, 4, True, False, [1, 2], [1, 1, 1, 1], [2, 1]),
    (4, 1, False, True, [1, 1], [2, 2, 0, 0], [1, 1]),
])
def test_deform_conv(tmp_path, group, offset_group, bias, mask, strides, pads, dilations):
    n, c, h, w, m_out, kh, kw = 2, 8, 7, 6, 8, 3, 2
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    # offsets of a few pixels, so that samples land between pixels, on the border and outside
    feeds = {"x": rand(n, c, h, w), "w": rand(m_out, c // group, kh, kw),
             "offset": (RNG.standard_normal((n, offset_group * 2 * kh * kw, oh, ow)) * 2.5).astype(np.float32)}
    names = ["x", "w", "offset", "b" if bias else "", "mask" if mask else ""]
    if bias:
        feeds["b"] = rand(m_out)
    if mask:
        feeds["mask"] = RNG.uniform(0, 1, (n, offset_group * kh * kw, oh, ow)).astype(np.float32)
    while names[-1] == "":
        names.pop()
    node = helper.make_node("DeformConv", names, ["y"], group=group, offset_group=offset_group, kernel_shape=[kh, kw],
                            strides=strides, pads=pads, dilations=dilations)
    m = model([node], [vi(k, list(v.shape)) for k, v in feeds.items()], [vi("y", [n, m_out, oh, ow])], opset=19)
    check_onnx_model(tmp_path, m, feeds)


def test_deform_conv_float64_matches_the_runtime(tmp_path):
    from aot_onnx_check import check_c_against_runtime
    D = TensorProto.DOUBLE
    feeds = {"x": RNG.standard_normal((1, 4, 5, 5)), "w": RNG.standard_normal((6, 2, 3, 3)),
             "offset": RNG.standard_normal((1, 2 * 9, 3, 3)) * 3, "b": RNG.standard_normal(6)}
    feeds["offset"][0, 0, 0, 0] = np.nan  # reads zero, in the runtime and in the C
    feeds["offset"][0, 1, 1, 1] = np.inf
    node = helper.make_node("DeformConv", ["x", "w", "offset", "b"], ["y"], group=2)
    m = model([node], [vi(k, list(v.shape), D) for k, v in feeds.items()], [vi("y", [1, 6, 3, 3], D)], opset=19)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    check_c_against_runtime(tmp_path, path, feeds, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("k,bias,past,act,t,np_t", [(4, True, True, "silu", TensorProto.FLOAT, np.float32),
                                                    (3, False, False, "none", TensorProto.FLOAT, np.float32),
                                                    (1, True, False, "swish", TensorProto.DOUBLE, np.float64),
                                                    (5, False, True, "silu", TensorProto.DOUBLE, np.float64)])
def test_causal_conv_with_state_matches_the_runtime(tmp_path, k, bias, past, act, t, np_t):
    # ONNX Runtime has no CausalConvWithState; the runtime's own is checked against NumPy in
    # test_onnx_newer_ops.py, and the C against the runtime here (the same sums in the same order).
    from aot_onnx_check import check_c_against_runtime
    B, C, L = 2, 3, 7
    feeds = {"x": RNG.standard_normal((B, C, L)).astype(np_t), "w": RNG.standard_normal((C, 1, k)).astype(np_t)}
    names = ["x", "w", "", ""]
    if bias:
        feeds["b"], names[2] = RNG.standard_normal(C).astype(np_t), "b"
    if past:
        feeds["p"], names[3] = RNG.standard_normal((B, C, k - 1)).astype(np_t), "p"
    while names[-1] == "":
        names.pop()
    node = helper.make_node("CausalConvWithState", names, ["y", "s"], activation=act)
    m = model([node], [vi(n, list(v.shape), t) for n, v in feeds.items()], [vi("y", [B, C, L], t), vi("s", [B, C, k - 1], t)], opset=27)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    tol = 1e-6 if np_t == np.float32 else 1e-13  # the runtime may fuse a multiply-add the strict C does not
    check_c_against_runtime(tmp_path, path, feeds, atol=tol, rtol=tol)


@pytest.mark.parametrize("rule,decay_w,beta_w,heads,past,np_t", [("linear", None, None, (2, 2), False, np.float32),
                                                                 ("gated", "h", None, (4, 2), True, np.float32),
                                                                 ("gated", "hd", None, (2, 1), False, np.float64),
                                                                 ("delta", None, "h", (2, 2), True, np.float32),
                                                                 ("gated_delta", "hd", "1", (4, 2), True, np.float32)])
def test_linear_attention_matches_the_runtime(tmp_path, rule, decay_w, beta_w, heads, past, np_t):
    # ONNX Runtime has no LinearAttention; the runtime's is checked against a float64 recurrence in
    # test_onnx_newer_ops.py, and the C against the runtime here (the same float32 operations).
    from aot_onnx_check import check_c_against_runtime
    t = TensorProto.FLOAT if np_t == np.float32 else TensorProto.DOUBLE
    Hq, Hkv = heads
    B, T, dk, dv = 2, 5, 4, 3
    feeds = {"q": RNG.standard_normal((B, T, Hq * dk)), "k": RNG.standard_normal((B, T, Hkv * dk)), "v": RNG.standard_normal((B, T, Hkv * dv))}
    names = ["q", "k", "v", "", "", ""]
    if past:
        feeds["p"], names[3] = RNG.standard_normal((B, Hkv, dk, dv)), "p"
    if decay_w:
        feeds["d"], names[4] = -RNG.random((B, T, Hkv if decay_w == "h" else Hkv * dk)), "d"
    if beta_w:
        feeds["b"], names[5] = RNG.random((B, T, Hkv if beta_w == "h" else 1)), "b"
    feeds = {n: a.astype(np_t) for n, a in feeds.items()}
    while names[-1] == "":
        names.pop()
    node = helper.make_node("LinearAttention", names, ["y", "s"], q_num_heads=Hq, kv_num_heads=Hkv, update_rule=rule)
    m = model([node], [vi(n, list(a.shape), t) for n, a in feeds.items()], [vi("y", [B, T, Hq * dv], t), vi("s", [B, Hkv, dk, dv], t)], opset=27)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    check_c_against_runtime(tmp_path, path, feeds, atol=1e-5, rtol=1e-5)  # the runtime may fuse multiply-adds the strict C does not


def test_deform_conv_with_no_input_channels_matches_the_runtime(tmp_path):
    from aot_onnx_check import check_c_against_runtime
    feeds = {"x": np.zeros((1, 0, 4, 4), np.float32), "w": np.zeros((3, 0, 2, 2), np.float32), "offset": rand(1, 8, 3, 3), "b": rand(3)}
    node = helper.make_node("DeformConv", ["x", "w", "offset", "b"], ["y"])
    m = model([node], [vi(k, list(v.shape)) for k, v in feeds.items()], [vi("y", [1, 3, 3, 3])], opset=19)
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    check_c_against_runtime(tmp_path, path, feeds)


def test_space_to_depth_crd_matches_numpy(tmp_path):
    # SpaceToDepth takes DepthToSpace's mode here; CRD keeps each channel's b x b block together.
    from aot_onnx_check import check_c_against_runtime
    import weft
    b, x = 2, rand(2, 3, 6, 8)
    m = model([helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=b, mode="CRD")], [vi("x", [2, 3, 6, 8])], [vi("y", [2, 12, 3, 4])])
    path = str(tmp_path / "m.onnx")
    onnx.save(m, path)
    want = x.reshape(2, 3, 3, b, 4, b).transpose(0, 1, 3, 5, 2, 4).reshape(2, 12, 3, 4)
    (got,) = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])
    np.testing.assert_array_equal(got, want)
    check_c_against_runtime(tmp_path, path, {"x": x})
