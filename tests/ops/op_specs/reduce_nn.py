"""Reductions, softmax, normalizations and pooling: random ranks and shapes with size-0 dims,
negative axes, axes as attribute (opset 17) and as a constant input (opset 18), keepdims and
noop_with_empty_axes, every dtype the op takes, epsilon variants, 1-D/2-D/3-D pooling with pads,
strides, dilations, ceil_mode, count_include_pad and auto_pad."""
import numpy as np

from .common import BadCase, Case, axis_of, data, i64, nonzero_shape, positive, shape, spec

# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
REDUCE_INT_OPS = ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd")
# Ops whose reduction over an empty set has a defined value (ONNX opset 18: 0, 1, -inf, +inf...);
# ReduceMean of nothing is undefined.
REDUCE_EMPTY_OK = ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceLogSum",
                   "ReduceLogSumExp", "ReduceSumSquare")


def _reduce_data(rng, op, shp, dt=np.float32):
    if np.issubdtype(np.dtype(dt), np.integer):
        return data(rng, shp, dt, -2, 2) if op == "ReduceProd" else data(rng, shp, dt, -50, 50)
    if op == "ReduceLogSum":
        return positive(rng, shp, dt, 0.1, 3.0)
    if op == "ReduceProd":
        return data(rng, shp, dt, 0.5, 1.5) * np.where(rng.random(shp) < 0.3, -1, 1).astype(dt).reshape(shp)
    return data(rng, shp, dt)


def _random_axes(rng, rank):
    """A non-empty set of distinct axes, some negative."""
    k = int(rng.integers(1, rank + 1))
    picked = sorted(rng.choice(rank, size=k, replace=False).tolist())
    return [int(a) - rank if rng.random() < 0.5 else int(a) for a in picked]


def _reduce_case(op, x, axes, keepdims=1, opset=17, noop=None, axes_const=True):
    """A reduction in the form `opset` defines: axes as attribute (opset < 18, ReduceSum < 13) or input."""
    attrs = {"keepdims": keepdims}
    as_input = opset >= 18 or op == "ReduceSum"
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    if not as_input:
        if axes is not None:
            attrs["axes"] = list(axes)
        return Case([x], attrs=attrs, opset=opset)
    if axes is None:
        return Case([x], attrs=attrs, opset=opset)
    return Case([x, i64(axes)], attrs=attrs, opset=opset, const={1} if axes_const else set())


def _reduce_bad(op, x, axes, error, opset=17):
    c = _reduce_case(op, x, axes, opset=opset)
    return BadCase(c.inputs, attrs=c.attrs, opset=c.opset, const=c.const, error=error)


@spec(*REDUCE_OPS)
def reduce(rng, op):
    # Opset 17 form (attribute, or input for ReduceSum), random ranks, axes with negatives.
    for rank in (1, 2, 3, 4):
        shp = shape(rng, rank, 1, 4, zero_prob=0.0 if op == "ReduceMean" else 0.1)
        axes = _random_axes(rng, rank)
        yield _reduce_case(op, _reduce_data(rng, op, shp), axes, keepdims=int(rng.integers(0, 2)))
    # No axes: reduce everything, both keepdims.
    for keep in (0, 1):
        yield _reduce_case(op, _reduce_data(rng, op, nonzero_shape(rng, 3)), None, keepdims=keep)
    # float64, and ints where the op takes them.
    yield _reduce_case(op, _reduce_data(rng, op, nonzero_shape(rng, 3), np.float64), [-1, 0], keepdims=0)
    if op in REDUCE_INT_OPS:
        for dt in (np.int32, np.int64):
            yield _reduce_case(op, _reduce_data(rng, op, nonzero_shape(rng, 3, 1, 3), dt), [1], keepdims=int(rng.integers(0, 2)))
    # Size-0 dims that are kept (every op) and, where ONNX defines the identity, reduced.
    yield _reduce_case(op, _reduce_data(rng, op, (0, 3, 2)), [-1], keepdims=1)
    if op in REDUCE_EMPTY_OK:
        yield _reduce_case(op, _reduce_data(rng, op, (2, 0, 3)), [1], keepdims=1, opset=18)
        yield _reduce_case(op, _reduce_data(rng, op, (2, 0, 3)), [-2, 2], keepdims=0, opset=18)
    # Opset 18: axes as a constant input.
    for rank in (2, 3, 4):
        shp = nonzero_shape(rng, rank)
        yield _reduce_case(op, _reduce_data(rng, op, shp), _random_axes(rng, rank), keepdims=int(rng.integers(0, 2)), opset=18)
    # noop_with_empty_axes: no axes input is the identity; an empty axes input likewise; 0 reduces all.
    yield _reduce_case(op, _reduce_data(rng, op, nonzero_shape(rng, 3)), None, opset=18, noop=1)
    yield _reduce_case(op, _reduce_data(rng, op, nonzero_shape(rng, 2)), [], opset=18, noop=1)
    yield _reduce_case(op, _reduce_data(rng, op, nonzero_shape(rng, 2)), [], keepdims=0, opset=18, noop=0)
    # A scalar reduced over nothing.
    yield _reduce_case(op, _reduce_data(rng, op, ()), None, keepdims=1, opset=18)
    # Axes given at run time (a graph input, not a constant).
    yield _reduce_case(op, _reduce_data(rng, op, nonzero_shape(rng, 3)), [0, -1], keepdims=1, opset=18, axes_const=False)
    if op == "ReduceLogSumExp":  # large values must not overflow
        yield _reduce_case(op, data(rng, (3, 4), np.float32, 400, 500), [1], keepdims=0, opset=18)

    # Must-fail: axes out of range (positive and negative), axes in the wrong form for the opset.
    # The attribute/input is called axes, so a good message names it.
    x = _reduce_data(rng, op, (2, 3, 4))
    yield _reduce_bad(op, x, [3], "axes")
    yield _reduce_bad(op, x, [-4], "axes")
    yield _reduce_bad(op, x, [3], "axes", opset=18)
    yield _reduce_bad(op, x, [-4, 0], "axes", opset=18)
    # (Duplicate axes are not refused: ONNX does not forbid them and ONNX Runtime accepts them.)
    if op == "ReduceSum":  # since opset 13 the axes are an input, not an attribute
        yield BadCase([x], attrs={"axes": [1]}, opset=17, error="axes")
    else:  # since opset 18 the axes are an input, not an attribute
        yield BadCase([x], attrs={"axes": [1]}, opset=18, error="axes")
        yield BadCase([x, i64([1])], const={1}, opset=17, error="axes")  # opset 17 takes no axes input
    yield BadCase([x, np.array([0.0, 1.0], np.float32)], const={1}, opset=18, error="axes")  # axes must be int64
    yield BadCase([x, i64([[0, 1]])], const={1}, opset=18, error="axes")  # axes must be 1-D


# ---------------------------------------------------------------------------------------------
# Softmax / LogSoftmax
# ---------------------------------------------------------------------------------------------

@spec("Softmax", "LogSoftmax")
def softmax(rng, op):
    # Every axis, positive and negative, of ranks 1-4.
    for rank in (1, 2, 3, 4):
        shp = shape(rng, rank, 1, 5, zero_prob=0.1)
        for a in range(-rank, rank):
            yield Case([data(rng, shp, np.float32, -6, 6)], attrs={"axis": a})
    yield Case([data(rng, nonzero_shape(rng, 3))])  # default axis -1
    yield Case([data(rng, nonzero_shape(rng, 3), np.float64, -6, 6)], attrs={"axis": 1})
    yield Case([data(rng, (3, 0, 4))], attrs={"axis": 1})  # size-0 reduced axis
    yield Case([data(rng, (2, 1, 3))], attrs={"axis": 1})  # an axis of length 1
    big = data(rng, (2, 7), np.float32, -3, 3)
    big[0, 3] = 80.0  # large values must not overflow
    big[1, :] += 500.0
    yield Case([big], attrs={"axis": -1})
    # Opset 11: the input is flattened to 2-D at `axis` (default 1).
    yield Case([data(rng, nonzero_shape(rng, 4))], opset=11)
    yield Case([data(rng, nonzero_shape(rng, 3))], attrs={"axis": 0}, opset=11)
    yield Case([data(rng, nonzero_shape(rng, 4))], attrs={"axis": -2}, opset=11)

    yield BadCase([data(rng, (2, 3, 4))], attrs={"axis": 3}, error="axis")
    yield BadCase([data(rng, (2, 3, 4))], attrs={"axis": -4}, error="axis")
    yield BadCase([data(rng, (2, 3), np.int32, -5, 5)], error="type")


# ---------------------------------------------------------------------------------------------
# Normalizations
# ---------------------------------------------------------------------------------------------

@spec("LayerNormalization")
def layer_norm(rng, op):
    for rank in (1, 2, 3, 4):
        shp = nonzero_shape(rng, rank)
        axis = axis_of(rng, rank)
        tail = shp[axis % rank:]
        const = {1, 2} if rng.random() < 0.5 else set()
        yield Case([data(rng, shp), data(rng, tail), data(rng, tail)], attrs={"axis": axis}, const=const)
    # Default axis -1, no bias; Scale/B constant and not.
    yield Case([data(rng, (3, 5)), data(rng, (5,)), None], const={1})
    yield Case([data(rng, (2, 3, 4)), data(rng, (4,)), None])
    # Scale/B broadcasting over the normalized dims (dims of 1, fewer dims).
    yield Case([data(rng, (2, 3, 4)), data(rng, (1, 4)), data(rng, (3, 1))], attrs={"axis": 1}, const={1, 2})
    yield Case([data(rng, (2, 3, 4)), data(rng, (4,)), data(rng, (4,))], attrs={"axis": -2})
    # Scale/B need only broadcast (unidirectionally) to X, not to the normalized dims.
    yield Case([data(rng, (2, 3, 4)), data(rng, (3, 4)), data(rng, (4,))], attrs={"axis": -1}, const={1, 2})
    yield Case([data(rng, (2, 3, 4)), data(rng, (4,)), data(rng, (3, 1))], attrs={"axis": -1})
    # epsilon variants, float64.
    yield Case([data(rng, (4, 6)), data(rng, (6,)), data(rng, (6,))], attrs={"epsilon": 1e-2})
    yield Case([data(rng, (3, 6), np.float32, -0.01, 0.01), data(rng, (6,)), data(rng, (6,))], attrs={"epsilon": 0.5})
    yield Case([data(rng, (3, 4), np.float64), data(rng, (4,), np.float64), data(rng, (4,), np.float64)], const={1, 2})
    # Size-0 outer dim.
    yield Case([data(rng, (0, 4)), data(rng, (4,)), data(rng, (4,))])
    # Mean and InvStdDev outputs.
    yield Case([data(rng, (2, 3, 4)), data(rng, (3, 4)), data(rng, (3, 4))], attrs={"axis": -2}, outputs=3)
    yield Case([data(rng, (3, 5)), data(rng, (5,)), None], attrs={"axis": 0}, outputs=3, const={1})

    yield BadCase([data(rng, (2, 3, 4)), data(rng, (5,)), data(rng, (4,))], error="Scale", const={1, 2})
    yield BadCase([data(rng, (2, 3, 4)), data(rng, (5,)), data(rng, (4,))], error="Scale")
    yield BadCase([data(rng, (2, 3, 4)), data(rng, (2, 2, 3, 4)), data(rng, (4,))], attrs={"axis": 1}, error="Scale")
    yield BadCase([data(rng, (2, 3, 4)), data(rng, (4,)), data(rng, (3,))], error="B", const={1, 2})
    yield BadCase([data(rng, (2, 3, 4)), data(rng, (4,)), data(rng, (4,))], attrs={"axis": 3}, error="axis")
    yield BadCase([data(rng, (2, 3, 4)), data(rng, (4,)), data(rng, (4,))], attrs={"axis": -4}, error="axis")


BN_VARIANTS = [{}, {"epsilon": 1e-3}, {"momentum": 0.5}, {"epsilon": 0.1, "momentum": 0.99}]


@spec("BatchNormalization")
def batch_norm(rng, op):
    for k, rank in enumerate((2, 3, 4, 5, 4)):
        shp = nonzero_shape(rng, rank, 1, 4)
        if k == 4:
            shp = (0,) + shp[1:]
        c = shp[1]
        params = [data(rng, (c,)), data(rng, (c,)), data(rng, (c,)), positive(rng, (c,))]
        const = {1, 2, 3, 4} if k % 2 == 0 else set()
        yield Case([data(rng, shp)] + params, attrs=BN_VARIANTS[k % len(BN_VARIANTS)], const=const, opset=15)
    c = 3
    yield Case([data(rng, (2, c, 4), np.float64)] + [data(rng, (c,), np.float64) for _ in range(3)] +
               [positive(rng, (c,), np.float64)], const={1, 2, 3, 4}, opset=15)
    yield Case([data(rng, (2, c, 3, 3)), data(rng, (c,)), data(rng, (c,)), data(rng, (c,)), positive(rng, (c,))],
               attrs={"training_mode": 0, "epsilon": 1e-2}, opset=15)
    yield Case([data(rng, (1, c, 2, 2)), data(rng, (c,)), data(rng, (c,)), data(rng, (c,)), positive(rng, (c,))],
               attrs={"epsilon": 1e-5}, opset=14, const={3, 4})
    yield Case([data(rng, (2, c, 0, 2)), data(rng, (c,)), data(rng, (c,)), data(rng, (c,)), positive(rng, (c,))], opset=15)
    # training mode: the batch's statistics, and the running mean and variance as outputs 1 and 2
    for k, rank in enumerate((2, 3, 4, 5)):
        shp = nonzero_shape(rng, rank, 1, 4)
        shp = (shp[0] + 1,) + shp[1:]
        c = shp[1]
        dt = np.float64 if k == 3 else np.float32
        params = [data(rng, (c,), dt), data(rng, (c,), dt), data(rng, (c,), dt), positive(rng, (c,), dt)]
        yield Case([data(rng, shp, dt)] + params, attrs={"training_mode": 1, "momentum": (0.9, 0.5, 0.99, 0.1)[k]},
                   const={1, 2} if k % 2 else set(), outputs=3, opset=15)
    yield Case([data(rng, (4, c, 3, 3)), data(rng, (c,)), data(rng, (c,)), data(rng, (c,)), positive(rng, (c,))],
               attrs={"training_mode": 1, "epsilon": 1e-2}, const={1, 2, 3, 4}, outputs=3, opset=14)
    # an empty batch: no statistics (NaN running mean and variance, as ONNX Runtime gives)
    yield Case([data(rng, (0, c, 4)), data(rng, (c,)), data(rng, (c,)), data(rng, (c,)), positive(rng, (c,))],
               attrs={"training_mode": 1}, outputs=3, opset=15)

    def bad(which, error):
        p = [data(rng, (3,)), data(rng, (3,)), data(rng, (3,)), positive(rng, (3,))]
        p[which] = data(rng, (4,)) if which != 3 else positive(rng, (4,))
        return BadCase([data(rng, (2, 3, 4))] + p, const={1, 2, 3, 4}, error=error, opset=15)

    yield bad(0, "scale")
    yield bad(1, "B")
    yield bad(2, "mean")
    yield bad(3, "var")
    yield BadCase([data(rng, (2, 3, 4)), data(rng, (3,)), data(rng, (3,)), data(rng, (4,)), positive(rng, (3,))],
                  error="mean", opset=15)  # not constant
    yield BadCase([data(rng, (3,)), data(rng, (3,)), data(rng, (3,)), data(rng, (3,)), positive(rng, (3,))],
                  error="X", opset=15)


@spec("InstanceNormalization")
def instance_norm(rng, op):
    for k, rank in enumerate((3, 4, 5, 4, 3)):
        shp = nonzero_shape(rng, rank, 1, 4)
        if k == 3:
            shp = (0,) + shp[1:]
        c = shp[1]
        const = {1, 2} if k % 2 == 0 else set()
        attrs = {"epsilon": float(rng.choice([1e-5, 1e-3, 0.1]))} if k > 0 else {}
        yield Case([data(rng, shp), data(rng, (c,)), data(rng, (c,))], attrs=attrs, const=const)
    yield Case([data(rng, (2, 2, 1, 1)), data(rng, (2,)), data(rng, (2,))])  # one element per instance

    yield BadCase([data(rng, (2, 3, 4)), data(rng, (4,)), data(rng, (3,))], const={1, 2}, error="scale")
    yield BadCase([data(rng, (2, 3, 4)), data(rng, (3,)), data(rng, (2,))], const={1, 2}, error="B")
    yield BadCase([data(rng, (2, 3, 4)), data(rng, (4,)), data(rng, (3,))], error="scale")


@spec("MeanVarianceNormalization")
def mvn(rng, op):
    yield Case([data(rng, nonzero_shape(rng, 4))])  # default axes [0, 2, 3]
    for axes in ([0, 1, 2, 3], [2, 3], [1], [-1, -2], [0, -1]):
        yield Case([data(rng, nonzero_shape(rng, 4, 2, 4))], attrs={"axes": axes})
    yield Case([data(rng, nonzero_shape(rng, 3, 2, 5))], attrs={"axes": [0, 2]})
    yield Case([data(rng, nonzero_shape(rng, 2, 2, 6))], attrs={"axes": [1]})
    yield Case([data(rng, (0, 3, 2, 2))], attrs={"axes": [2, 3]})  # size-0 kept dim

    yield BadCase([data(rng, (2, 3, 4))], attrs={"axes": [0, 3]}, error="axes")
    yield BadCase([data(rng, (2, 3, 4))], attrs={"axes": [-4]}, error="axes")
    yield BadCase([data(rng, (2, 3))], error="axes")  # default axes [0, 2, 3] do not fit rank 2


@spec("LRN")
def lrn(rng, op):
    for size in (1, 3, 5, 3, 7):
        shp = nonzero_shape(rng, 4, 1, 6)
        attrs = {"size": size}
        if rng.random() < 0.6:
            attrs.update(alpha=float(rng.uniform(1e-4, 0.5)), beta=float(rng.uniform(0.5, 1.0)), bias=float(rng.uniform(0.5, 2.0)))
        yield Case([data(rng, shp)], attrs=attrs)
    yield Case([data(rng, (1, 7, 3, 3))], attrs={"size": 9})  # window wider than the channels
    yield Case([data(rng, (0, 3, 2, 2))], attrs={"size": 3})
    yield Case([data(rng, (2, 4, 3, 2), np.float32, -10, 10)], attrs={"size": 3, "alpha": 1.0, "beta": 0.5, "bias": 2.0})

    x = data(rng, (1, 4, 3, 3))
    # (An even size is not refused here: ONNX defines it, floor/ceil of (size - 1) / 2 channels
    # either side, though ONNX Runtime refuses it, so it can be no valid case either.)
    yield BadCase([x], attrs={"size": 0}, error="size")
    yield BadCase([x], attrs={"size": -3}, error="size")
    yield BadCase([x], error="size")  # size is required


@spec("GlobalAveragePool", "GlobalMaxPool")
def global_pool(rng, op):
    for rank in (3, 4, 5, 4):
        yield Case([data(rng, nonzero_shape(rng, rank, 1, 5))])
    yield Case([data(rng, (0, 3, 2, 2))])
    yield Case([data(rng, (0, 2, 3))])
    yield Case([data(rng, (2, 3, 1, 1))])
    yield BadCase([data(rng, (2, 3, 4))], attrs={"kernel_shape": [2]}, error="kernel_shape")


# ---------------------------------------------------------------------------------------------
# MaxPool / AveragePool
# ---------------------------------------------------------------------------------------------

def _pool_geometry(rng, nd, dilate=False):
    """kernel, strides, pads, dilations and an input spatial shape the window fits."""
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    s = [int(rng.integers(1, 3)) for _ in range(nd)]
    d = [int(rng.integers(1, 3)) if dilate else 1 for _ in range(nd)]
    p = [int(rng.integers(0, kk)) for kk in k] + [int(rng.integers(0, kk)) for kk in k]  # pads < kernel
    ext = [(kk - 1) * dd + 1 for kk, dd in zip(k, d)]
    sp = [int(rng.integers(max(1, e - p[i] - p[i + nd]), e + 5)) for i, e in enumerate(ext)]
    return k, s, p, d, sp


def _pool_input(rng, sp, dt=np.float32, n=None, c=None):
    n = int(rng.integers(1, 3)) if n is None else n
    c = int(rng.integers(1, 4)) if c is None else c
    return data(rng, tuple([n, c] + list(sp)), dt, -20, 20) if np.issubdtype(np.dtype(dt), np.integer) \
        else data(rng, tuple([n, c] + list(sp)), dt)


@spec("MaxPool", "AveragePool")
def pool(rng, op):
    mx = op == "MaxPool"
    # 1-D, 2-D, 3-D with strides and pads (and dilations for MaxPool).
    for nd in (1, 2, 3, 2, 1):
        k, s, p, d, sp = _pool_geometry(rng, nd, dilate=mx)
        attrs = {"kernel_shape": k, "strides": s, "pads": p}
        if mx:
            attrs["dilations"] = d
        else:
            attrs["count_include_pad"] = int(rng.integers(0, 2))
        yield Case([_pool_input(rng, sp)], attrs=attrs)
    # Only the kernel (strides 1, no pads).
    yield Case([_pool_input(rng, (5, 6))], attrs={"kernel_shape": [2, 3]})
    # ceil_mode, with and without pads (count_include_pad for AveragePool).
    for nd in (1, 2, 3):
        k, s, p, d, sp = _pool_geometry(rng, nd, dilate=mx)
        s = [2] * nd
        attrs = {"kernel_shape": k, "strides": s, "ceil_mode": 1}
        if nd != 1:
            attrs["pads"] = p
        if mx:
            attrs["dilations"] = d
        else:
            attrs["count_include_pad"] = int(nd == 2)
        yield Case([_pool_input(rng, sp)], attrs=attrs)
    yield Case([_pool_input(rng, (6, 7))], attrs={"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1})
    if not mx:
        yield Case([_pool_input(rng, (5, 6))], attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                                      "count_include_pad": 1})
        yield Case([_pool_input(rng, (6, 6))], attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                                      "count_include_pad": 1, "ceil_mode": 1})
    # auto_pad.
    for j, (ap, nd) in enumerate((("SAME_UPPER", 2), ("SAME_LOWER", 2), ("VALID", 2), ("SAME_UPPER", 1), ("SAME_LOWER", 3),
                                  ("VALID", 3))):
        k = [int(rng.integers(2, 4)) for _ in range(nd)]
        s = [int(rng.integers(1, 3)) for _ in range(nd)]  # <= kernel: ORT refuses SAME pads below 0
        sp = [int(rng.integers(kk, kk + 5)) for kk in k]
        attrs = {"kernel_shape": k, "strides": s, "auto_pad": ap}
        if not mx and ap != "VALID":
            attrs["count_include_pad"] = j % 2
        yield Case([_pool_input(rng, sp)], attrs=attrs)
    # float64, size-0 batch, a channel of size 0.
    yield Case([_pool_input(rng, (5, 5), np.float64 if mx else np.float32)],  # ORT has no float64 AveragePool
               attrs={"kernel_shape": [2, 2], "strides": [2, 1], "pads": [0, 1, 1, 0]})
    yield Case([_pool_input(rng, (4, 4), n=0)], attrs={"kernel_shape": [2, 2]})
    yield Case([_pool_input(rng, (4,), n=0)], attrs={"kernel_shape": [3], "strides": [2], "pads": [1, 1]})
    # A kernel longer than the (padded) input: ONNX's output size formula gives 0, an empty output.
    yield Case([_pool_input(rng, (6, 6))], attrs={"kernel_shape": [7, 2]})
    if mx:
        # int8/uint8 (opset 12+).
        yield Case([_pool_input(rng, (5, 5), np.int8)], attrs={"kernel_shape": [2, 2], "strides": [2, 2]})
        yield Case([_pool_input(rng, (6,), np.uint8)], attrs={"kernel_shape": [3], "pads": [1, 1]})
        # The Indices output, row-major and column-major (storage_order), with pads.
        yield Case([_pool_input(rng, (5, 6))], attrs={"kernel_shape": [2, 2], "strides": [2, 2]}, outputs=2)
        yield Case([_pool_input(rng, (5, 6))], attrs={"kernel_shape": [3, 2], "strides": [1, 2], "pads": [1, 0, 1, 1]},
                   outputs=2)
        yield Case([_pool_input(rng, (4, 5))], attrs={"kernel_shape": [2, 2], "storage_order": 1}, outputs=2)
        yield Case([_pool_input(rng, (7,))], attrs={"kernel_shape": [3], "strides": [2]}, outputs=2)
        yield Case([_pool_input(rng, (3, 4, 4), n=2, c=2)], attrs={"kernel_shape": [2, 2, 2], "strides": [1, 2, 2]}, outputs=2)
        yield Case([_pool_input(rng, (6, 6))], attrs={"kernel_shape": [2, 2], "dilations": [2, 2]}, outputs=2)
    else:
        # dilations (opset 19).
        yield Case([_pool_input(rng, (7, 7))], attrs={"kernel_shape": [2, 2], "dilations": [2, 2]}, opset=19)
        yield Case([_pool_input(rng, (9,))], attrs={"kernel_shape": [3], "dilations": [3], "strides": [2], "pads": [1, 2]},
                   opset=19)

    x = _pool_input(rng, (6, 6), n=1, c=2)
    yield BadCase([x], attrs={"kernel_shape": [2]}, error="kernel_shape")
    yield BadCase([x], attrs={"kernel_shape": [2, 2, 2]}, error="kernel_shape")
    yield BadCase([x], attrs={"kernel_shape": [0, 2]}, error="kernel_shape")
    yield BadCase([x], attrs={}, error="kernel_shape")  # required
    yield BadCase([x], attrs={"kernel_shape": [2, 2], "strides": [0, 1]}, error="strides")
    yield BadCase([x], attrs={"kernel_shape": [2, 2], "strides": [1]}, error="strides")
    yield BadCase([x], attrs={"kernel_shape": [2, 2], "pads": [-1, 0, 0, 0]}, error="pads")
    yield BadCase([x], attrs={"kernel_shape": [2, 2], "pads": [0, 0, 1]}, error="pads")
    yield BadCase([x], attrs={"kernel_shape": [2, 2], "pads": [2, 0, 0, 0]}, error="pads")  # pad >= kernel
    yield BadCase([x], attrs={"kernel_shape": [2, 2], "auto_pad": "SAME"}, error="auto_pad")
    if mx:
        yield BadCase([x], attrs={"kernel_shape": [2, 2], "dilations": [0, 1]}, error="dilations")
        yield BadCase([x], attrs={"kernel_shape": [2, 2], "dilations": [1, 1, 1]}, error="dilations")
        yield BadCase([x], attrs={"kernel_shape": [2, 2], "storage_order": 2}, error="storage_order")
    else:
        yield BadCase([x], attrs={"kernel_shape": [2, 2], "dilations": [0, 1]}, error="dilations", opset=19)
