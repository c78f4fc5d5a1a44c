"""Shape and data-movement ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
Slice, Gather, GatherElements, Expand, Tile, Pad, Shape, Size, ConstantOfShape, Range,
DepthToSpace, SpaceToDepth, NonZero, Trilu, CumSum, TopK, ArgMax, ArgMin, Hardmax, Dropout.

Random ranks 0-5 with size-0 dims, negative axes, boundary and negative indices, clamped Slice
bounds, each dtype the op takes, attribute variants; shapes, axes, pads, sizes and bounds mostly
as initializers (`const`), some as runtime inputs. The must-fail cases name the attribute or
input a good error message has to mention."""
import numpy as np
from onnx import helper, TensorProto

from .common import BadCase, Case, axis_of, broadcast_pair, data, i64, nonzero_shape, shape, spec

I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min
DTYPES = (np.float32, np.int64, np.int32, np.bool_)


def any_data(rng, shp, dt):
    """Random data of any dtype (small integers, so int cases are exact)."""
    return data(rng, shp, dt, -9, 9) if np.dtype(dt) != np.float32 else data(rng, shp, dt)


def pick_dtype(rng, dtypes=DTYPES):
    return dtypes[int(rng.integers(0, len(dtypes)))]


# ---------------------------------------------------------------------------------------------
# Reshape / Flatten / Squeeze / Unsqueeze / Transpose


@spec("Reshape")
def reshape(rng, op):
    yield Case([data(rng, (2, 3, 4)), i64([4, -1])], const={1})
    yield Case([any_data(rng, (2, 3, 4), np.int64), i64([0, 12])], const={1})  # 0 copies the input dim
    yield Case([data(rng, (0, 3)), i64([3, -1])], const={1})  # -1 resolves to 0
    yield Case([data(rng, ()), i64([1, 1, 1])], const={1})  # scalar -> rank 3
    yield Case([data(rng, (1, 1)), i64([])], const={1})  # -> scalar
    yield Case([data(rng, ()), i64([-1])], const={1})
    yield Case([data(rng, (2, 0, 4)), i64([0, 8])], attrs={"allowzero": 1}, const={1})  # a literal 0
    yield Case([data(rng, (2, 0, 4)), i64([0, 5, 7])], attrs={"allowzero": 1}, const={1})
    yield Case([any_data(rng, (2, 1, 3, 1, 2), np.bool_), i64([-1])], const={1})
    yield Case([any_data(rng, (4, 6), np.int32), i64([3, 8])])  # shape as a runtime input
    yield Case([any_data(rng, (3, 4), np.int32), i64([0, -1])], const={1})
    yield Case([data(rng, (2, 3, 4)), i64([1, 2, 1, 3, 4])], const={1})  # rank 5
    yield Case([data(rng, (2, 3, 0)), i64([0, 0, -1])])  # runtime; -1 -> 0 with copied dims
    for rank in (1, 2, 3, 4, 5):
        s = nonzero_shape(rng, rank, 1, 4)
        tgt = list(rng.permutation(np.array(s)))
        tgt[int(rng.integers(0, rank))] = -1
        yield Case([data(rng, s), i64(tgt)], const={1})
    # must fail
    yield BadCase([data(rng, (2, 3)), i64([-1, -1])], const={1}, error="-1")
    yield BadCase([data(rng, (2, 3)), i64([4, 2])], const={1}, error="shape")
    yield BadCase([data(rng, (2, 3)), i64([4, 2])], error="shape")  # at run time
    yield BadCase([data(rng, (2, 3)), i64([3, -2])], const={1}, error="-2")
    yield BadCase([data(rng, (6,)), i64([6, 0])], const={1}, error="0")  # no input dim 1 to copy
    yield BadCase([data(rng, (2, 3)), i64([4, -1])], const={1}, error="-1")  # 6 % 4 != 0
    # allowzero=1 forbids a shape holding both 0 and -1
    yield BadCase([data(rng, (0, 3)), i64([0, -1])], attrs={"allowzero": 1}, const={1}, error="-1")


@spec("Flatten")
def flatten(rng, op):
    for rank in (0, 1, 2, 3, 4, 5):
        for _ in range(2 if rank else 1):
            axis = int(rng.integers(-rank, rank + 1))
            dt = pick_dtype(rng)
            yield Case([any_data(rng, shape(rng, rank), dt)], attrs={"axis": axis})
    yield Case([data(rng, (2, 3, 4))])  # default axis 1
    yield Case([data(rng, (2, 3, 4))], attrs={"axis": 3})  # axis == rank
    yield Case([data(rng, (2, 3, 4))], attrs={"axis": -3})  # axis == -rank
    yield BadCase([data(rng, (2, 3, 4))], attrs={"axis": 4}, error="axis")
    yield BadCase([data(rng, (2, 3, 4))], attrs={"axis": -4}, error="axis")


@spec("Squeeze")
def squeeze(rng, op):
    for rank in (1, 2, 3, 4, 5):
        s = list(shape(rng, rank, 2, 4))
        ones = sorted(rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=False).tolist())
        for k in ones:
            s[k] = 1
        axes = [a - rank if rng.random() < 0.5 else a for a in ones]
        dt = pick_dtype(rng)
        yield Case([any_data(rng, tuple(s), dt), i64(axes)], const={1})
        if rank in (2, 4):
            yield Case([any_data(rng, tuple(s), dt), i64(axes)])  # axes as a runtime input
        yield Case([any_data(rng, tuple(s), dt)])  # no axes: every dim of size 1
    yield Case([data(rng, (1, 0, 1))])  # size 0 kept
    yield Case([data(rng, (1, 1, 1)), i64([0, -1, 1])], const={1})  # -> scalar
    yield Case([data(rng, ())])  # scalar stays a scalar
    yield BadCase([data(rng, (1, 3)), i64([1])], const={1}, error="axis")  # dim 3 is not 1
    yield BadCase([data(rng, (1, 3)), i64([2])], const={1}, error="axis")
    yield BadCase([data(rng, (1, 3)), i64([-3])], const={1}, error="axis")


@spec("Unsqueeze")
def unsqueeze(rng, op):
    for rank in (0, 1, 2, 3, 4):
        n_new = int(rng.integers(1, 3))
        out_rank = rank + n_new
        pos = rng.choice(out_rank, size=n_new, replace=False).tolist()
        axes = [p - out_rank if rng.random() < 0.5 else p for p in pos]  # unsorted, mixed signs
        dt = pick_dtype(rng)
        x = any_data(rng, shape(rng, rank), dt)
        yield Case([x, i64(axes)], const={1})
        if rank in (1, 3):
            yield Case([x, i64(axes)])  # runtime axes
    yield Case([data(rng, ()), i64([0])], const={1})
    yield Case([data(rng, (0, 2)), i64([-1, 0])], const={1})
    yield Case([data(rng, (2, 3)), i64([4, 0, 2])], const={1})  # rank 2 -> 5, out of order
    yield BadCase([data(rng, (2, 3)), i64([3])], const={1}, error="axis")  # output rank is 3
    yield BadCase([data(rng, (2, 3)), i64([-4])], const={1}, error="axis")
    yield BadCase([data(rng, (2, 3)), i64([1, 1])], const={1}, error="axis")  # repeated
    yield BadCase([data(rng, (2, 3)), i64([0, -4])], const={1}, error="axis")  # the same axis twice


@spec("Transpose")
def transpose(rng, op):
    for rank in (0, 1, 2, 3, 4, 5):
        dt = pick_dtype(rng)
        x = any_data(rng, shape(rng, rank), dt)
        yield Case([x], attrs={"perm": [int(p) for p in rng.permutation(rank)]} if rank else {})
        if rank >= 2:
            yield Case([x])  # default: reversed dims
    yield Case([data(rng, (2, 3, 4, 5))], attrs={"perm": [0, 1, 3, 2]})
    yield Case([data(rng, (3, 1, 4))], attrs={"perm": [1, 2, 0]})
    yield Case([any_data(rng, (2, 3, 2, 2, 3), np.int64)], attrs={"perm": [4, 2, 0, 3, 1]})
    yield BadCase([data(rng, (2, 3, 4))], attrs={"perm": [0, 0, 1]}, error="perm")
    yield BadCase([data(rng, (2, 3, 4))], attrs={"perm": [1, 0]}, error="perm")
    yield BadCase([data(rng, (2, 3, 4))], attrs={"perm": [0, 1, 3]}, error="perm")
    yield BadCase([data(rng, (2, 3, 4))], attrs={"perm": [-1, 0, 1]}, error="perm")


# ---------------------------------------------------------------------------------------------
# Concat / Split / Slice


@spec("Concat")
def concat(rng, op):
    for rank in (1, 2, 3, 4, 5):
        for _ in range(2):
            base = list(shape(rng, rank, 1, 3, zero_prob=0.1))
            a = axis_of(rng, rank)
            dt = pick_dtype(rng)
            n = int(rng.integers(1, 5))
            xs = []
            for _ in range(n):
                s = list(base)
                s[a] = int(rng.integers(0, 4))  # size 0 along the axis too
                xs.append(any_data(rng, tuple(s), dt))
            const = {k for k in range(n) if rng.random() < 0.3}
            yield Case(xs, attrs={"axis": a}, const=const)
    yield Case([data(rng, (2, 0)), data(rng, (2, 3)), data(rng, (2, 0))], attrs={"axis": -1})
    yield Case([data(rng, (0, 3)), data(rng, (0, 2))], attrs={"axis": 1})
    yield BadCase([data(rng, (2, 3)), data(rng, (2, 3, 1))], attrs={"axis": 0}, error="rank")
    yield BadCase([data(rng, (2, 3)), data(rng, (4, 3))], attrs={"axis": 1}, error="input 1")
    yield BadCase([data(rng, (2, 3)), data(rng, (2, 3))], attrs={"axis": 2}, error="axis")
    yield BadCase([data(rng, (2, 3)), data(rng, (2, 3))], attrs={"axis": -3}, error="axis")
    yield BadCase([data(rng, ()), data(rng, ())], attrs={"axis": 0}, error="axis")  # scalars
    yield BadCase([data(rng, (2, 3)), data(rng, (2, 3), np.int64)], attrs={"axis": 0}, error="type")


@spec("Split")
def split(rng, op):
    # opset 17: explicit sizes (incl. 0) or equal split over the outputs
    for rank in (1, 2, 3, 4):
        s = list(nonzero_shape(rng, rank, 1, 4))
        a = axis_of(rng, rank)
        s[a] = int(rng.integers(3, 8))
        n = int(rng.integers(1, 4))
        cuts = np.sort(rng.integers(0, s[a] + 1, size=n - 1))
        sizes = np.diff(np.concatenate([[0], cuts, [s[a]]])).astype(np.int64)
        dt = pick_dtype(rng)
        x = any_data(rng, tuple(s), dt)
        yield Case([x, sizes], attrs={"axis": a}, outputs=n, const={1})
        if rank in (2, 3):
            yield Case([x, sizes], attrs={"axis": a}, outputs=n)  # sizes as a runtime input
    yield Case([data(rng, (2, 6, 3))], attrs={"axis": 1}, outputs=3)  # equal split
    yield Case([data(rng, (4, 2))], attrs={"axis": -2}, outputs=2)
    yield Case([data(rng, (0, 4))], attrs={"axis": 1}, outputs=2)  # size-0 off the axis
    yield Case([data(rng, (3, 4)), i64([0, 4, 0])], attrs={"axis": 1}, outputs=3, const={1})
    yield Case([data(rng, (5,))], outputs=1)
    # opset 18: num_outputs, the last chunk smaller when uneven
    yield Case([data(rng, (2, 7))], attrs={"axis": 1, "num_outputs": 3}, outputs=3, opset=18)
    yield Case([any_data(rng, (6, 2), np.int64)], attrs={"axis": -2, "num_outputs": 3}, outputs=3, opset=18)
    yield Case([data(rng, (5, 3))], attrs={"num_outputs": 2}, outputs=2, opset=18)
    yield Case([data(rng, (3, 2))], attrs={"axis": 1, "num_outputs": 3}, outputs=3, opset=18)  # more outputs than elements
    yield Case([data(rng, (2, 5)), i64([1, 4])], attrs={"axis": 1}, outputs=2, const={1}, opset=18)
    # must fail
    yield BadCase([data(rng, (2, 6)), i64([2, 3])], attrs={"axis": 1}, outputs=2, const={1}, error="split")
    yield BadCase([data(rng, (2, 6)), i64([2, 2, 2])], attrs={"axis": 1}, outputs=2, const={1}, error="split")
    yield BadCase([data(rng, (2, 6)), i64([7, -1])], attrs={"axis": 1}, outputs=2, const={1}, error="split")
    yield BadCase([data(rng, (2, 6)), i64([2, 3])], attrs={"axis": 1}, outputs=2, error="split")  # at run time
    yield BadCase([data(rng, (2, 6))], attrs={"axis": 2}, outputs=2, error="axis")
    yield BadCase([data(rng, (2, 6))], attrs={"axis": -3}, outputs=2, error="axis")
    yield BadCase([data(rng, (2, 6))], attrs={"axis": 1, "num_outputs": 3}, outputs=2, opset=18, error="num_outputs")
    yield BadCase([data(rng, (2, 6)), i64([3, 3])], attrs={"axis": 1, "num_outputs": 2}, outputs=2, const={1},
                  opset=18, error="num_outputs")  # split and num_outputs both given


@spec("Slice")
def slice_(rng, op):
    for rank in (1, 2, 3, 4, 5):
        for _ in range(2):
            s = shape(rng, rank, 1, 6, zero_prob=0.1)
            k = int(rng.integers(1, rank + 1))
            axes = rng.choice(rank, size=k, replace=False).tolist()
            starts, ends, steps = [], [], []
            for a in axes:
                d = s[a]
                starts.append(int(rng.integers(-d - 3, d + 4)))
                ends.append(int(rng.integers(-d - 3, d + 4)))
                steps.append(int(rng.choice([1, 1, 2, 3, -1, -2])))
            axes = [a - rank if rng.random() < 0.5 else a for a in axes]
            dt = pick_dtype(rng)
            yield Case([any_data(rng, s, dt), i64(starts), i64(ends), i64(axes), i64(steps)], const={1, 2, 3, 4})
    x = data(rng, (5, 4))
    yield Case([x, i64([1]), i64([I64_MAX])], const={1, 2})  # axes and steps omitted
    yield Case([x, i64([-1]), i64([I64_MIN]), i64([0]), i64([-1])], const={1, 2, 3, 4})  # full reverse
    yield Case([data(rng, (0, 3)), i64([-1]), i64([I64_MIN]), i64([0]), i64([-1])], const={1, 2, 3, 4})  # reversing an empty axis
    yield Case([data(rng, (2, 0)), i64([5]), i64([-9]), i64([1]), i64([-2])], const={1, 2, 3, 4})
    yield Case([x, i64([100]), i64([-100]), i64([1]), i64([-1])], const={1, 2, 3, 4})  # clamped from above
    yield Case([x, i64([-100]), i64([I64_MIN]), i64([0]), i64([-1])], const={1, 2, 3, 4})  # start clamps to 0
    yield Case([x, i64([-100]), i64([-200]), i64([1]), i64([-1])], const={1, 2, 3, 4})  # empty
    yield Case([x, i64([-100]), i64([100]), i64([0]), i64([2])], const={1, 2, 3, 4})
    yield Case([x, i64([4, 3]), i64([0, 0]), None, i64([-2, -1])], const={1, 2, 4})  # axes omitted
    yield Case([x, i64([0]), i64([3]), i64([-1])], const={1, 2, 3})  # steps omitted
    yield Case([x, np.array([1, -3], np.int32), np.array([4, -1], np.int32), np.array([0, 1], np.int32)],
               const={1, 2, 3})  # int32 indices
    yield Case([x, i64([3, 0]), i64([0, 4]), i64([0, 1]), i64([-1, 2])])  # all runtime
    yield Case([data(rng, (0, 3)), i64([0, 2]), i64([5, 0]), i64([0, 1]), i64([1, -1])], const={1, 2, 3, 4})
    yield Case([data(rng, (7,)), i64([I64_MAX]), i64([I64_MIN]), i64([0]), i64([I64_MIN])], const={1, 2, 3, 4})
    # must fail
    yield BadCase([x, i64([0]), i64([3]), i64([0]), i64([0])], const={1, 2, 3, 4}, error="step")
    yield BadCase([x, i64([0, 0]), i64([3, 3]), i64([1, -1])], const={1, 2, 3}, error="axes")  # repeated
    yield BadCase([x, i64([0]), i64([3]), i64([2])], const={1, 2, 3}, error="axis")
    yield BadCase([x, i64([0]), i64([3]), i64([-3])], const={1, 2, 3}, error="axis")
    yield BadCase([x, i64([0, 1]), i64([3])], const={1, 2}, error="ends")
    yield BadCase([x, i64([0]), i64([3]), i64([0]), i64([0])], error="step")  # at run time


# ---------------------------------------------------------------------------------------------
# Gather / GatherElements


def boundary_indices(rng, dim, shp, dt=np.int64):
    """Indices in [-dim, dim) that include 0, dim-1, -1 and -dim when there is room."""
    n = int(np.prod(shp, dtype=np.int64))
    vals = [0, dim - 1, -1, -dim] + rng.integers(-dim, dim, size=max(n, 1)).tolist()
    return np.asarray(rng.permutation(vals)[:n] if n else [], dtype=dt).reshape(shp)


@spec("Gather")
def gather(rng, op):
    for rank in (1, 2, 3, 4):
        for irank in (0, 1, 2):
            s = list(shape(rng, rank, 1, 4, zero_prob=0.1))
            a = axis_of(rng, rank)
            s[a] = int(rng.integers(1, 5))
            ishape = nonzero_shape(rng, irank, 1, 4)
            idt = np.int32 if rng.random() < 0.3 else np.int64
            dt = pick_dtype(rng)
            const = {1} if rng.random() < 0.5 else set()
            yield Case([any_data(rng, tuple(s), dt), boundary_indices(rng, s[a], ishape, idt)], attrs={"axis": a},
                       const=const)
    yield Case([data(rng, (3, 4)), i64([-3, 2, -1, 0])], attrs={"axis": 0})
    yield Case([data(rng, (3, 4)), np.zeros((0,), np.int64)], attrs={"axis": 1})  # no indices
    yield Case([data(rng, (0, 4)), i64([[3, -4]])], attrs={"axis": -1})
    yield Case([data(rng, (3, 0)), np.zeros((2, 0), np.int64)], attrs={"axis": 1})  # empty axis, no indices
    yield Case([any_data(rng, (5,), np.bool_), np.array(-5, np.int64)], const={1})  # scalar index -> scalar
    # must fail
    yield BadCase([data(rng, (3, 4)), i64([0, 3])], attrs={"axis": 0}, error="index")  # runtime, too big
    yield BadCase([data(rng, (3, 4)), i64([-4])], attrs={"axis": 0}, error="index")  # below -dim
    yield BadCase([data(rng, (3, 4)), np.array([4], np.int32)], attrs={"axis": 1}, error="index")
    yield BadCase([data(rng, (3, 4)), i64([5])], attrs={"axis": 1}, const={1}, error="index")
    yield BadCase([data(rng, (3, 4)), i64([0])], attrs={"axis": 2}, error="axis")
    yield BadCase([data(rng, (3, 4)), i64([0])], attrs={"axis": -3}, error="axis")
    yield BadCase([data(rng, ()), i64([0])], attrs={"axis": 0}, error="axis")  # scalar data


@spec("GatherElements")
def gather_elements(rng, op):
    for rank in (1, 2, 3, 4):
        for _ in range(2):
            s = list(nonzero_shape(rng, rank, 1, 4))
            a = axis_of(rng, rank)
            ishape = [int(rng.integers(1, d + 1)) for d in s]  # at most the data's dims off the axis
            ishape[a] = int(rng.integers(1, 5))
            idt = np.int32 if rng.random() < 0.3 else np.int64
            dt = pick_dtype(rng)
            yield Case([any_data(rng, tuple(s), dt), boundary_indices(rng, s[a], tuple(ishape), idt)],
                       attrs={"axis": a}, const={1} if rng.random() < 0.5 else set())
    yield Case([data(rng, (3, 3)), i64([[0, -1, -3], [2, 1, 0]])], attrs={"axis": -1})
    yield Case([data(rng, (3, 2)), np.zeros((0, 2), np.int64)], attrs={"axis": 0})
    yield BadCase([data(rng, (3, 3)), i64([[0, 3]])], attrs={"axis": 1}, error="index")
    yield BadCase([data(rng, (3, 3)), i64([[-4, 0]])], attrs={"axis": 0}, error="index")
    yield BadCase([data(rng, (3, 3)), i64([0, 1])], attrs={"axis": 0}, error="rank")
    yield BadCase([data(rng, (3, 3)), i64([[0, 1]])], attrs={"axis": 2}, error="axis")
    # indices may not exceed the data off the axis: row 3 of 2 does not exist
    yield BadCase([data(rng, (2, 3)), i64([[0], [1], [2]])], attrs={"axis": 1}, error="indices")


def nd_indices(rng, dims, lead, distinct=False):
    """Index tuples [lead..., len(dims)] into `dims`, negative ones included; with `distinct`, no
    tuple repeats (so a replacing scatter does not depend on the order of duplicates)."""
    n = int(np.prod(lead, dtype=np.int64)) if lead else 1
    space = int(np.prod(dims, dtype=np.int64))
    flat = rng.permutation(space)[:n] if distinct else rng.integers(0, max(space, 1), size=n)
    tup = np.stack(np.unravel_index(flat, dims), axis=-1) if dims else np.zeros((n, 0), np.int64)
    neg = rng.random(tup.shape) < 0.3
    tup = np.where(neg, tup - np.asarray(dims, np.int64), tup)
    return tup.astype(np.int64).reshape(tuple(lead) + (len(dims),))


@spec("GatherND")
def gather_nd(rng, op):
    for rank in (1, 2, 3, 4):
        for b in range(0, min(rank, 2)):
            s = nonzero_shape(rng, rank, 1, 4)
            k = int(rng.integers(1, rank - b + 1))
            lead = list(s[:b]) + list(nonzero_shape(rng, int(rng.integers(0, 3)), 1, 3))
            dt = pick_dtype(rng)
            if b == 0:
                ix = nd_indices(rng, s[:k], lead)
            else:  # one index array per batch element
                ix = np.stack([nd_indices(rng, s[b:b + k], lead[b:]) for _ in range(int(np.prod(s[:b])))]).reshape(
                    tuple(lead) + (k,))
            yield Case([any_data(rng, s, dt), ix], attrs={"batch_dims": b}, const={1} if rng.random() < 0.5 else set())
    yield Case([data(rng, (2, 3)), np.zeros((0, 2), np.int64)])
    yield BadCase([data(rng, (2, 3)), i64([[0, 3]])], error="index")
    yield BadCase([data(rng, (2, 3)), i64([[-3, 0]])], error="index")
    yield BadCase([data(rng, (2, 3)), i64([[0, 0, 0]])], error="indices")  # k > rank
    yield BadCase([data(rng, (2, 3)), i64([[0], [1]])], attrs={"batch_dims": 2}, error="batch_dims")
    yield BadCase([data(rng, (2, 3)), i64([[0], [1], [0]])], attrs={"batch_dims": 1}, error="batch axis")


@spec("ScatterND")
def scatter_nd(rng, op):
    for rank in (1, 2, 3, 4):
        for reduction in ("none", "add", "mul", "max", "min"):
            s = nonzero_shape(rng, rank, 1, 4)
            k = int(rng.integers(1, rank + 1))
            space = int(np.prod(s[:k]))
            lead = [int(rng.integers(1, space + 1))] if rng.random() < 0.7 else []
            dt = np.float32 if reduction == "mul" else pick_dtype(rng, (np.float32, np.int64, np.int32))
            # Replacing needs distinct tuples (ONNX leaves the order of duplicates open); the
            # reductions may repeat them.
            ix = nd_indices(rng, s[:k], lead, distinct=reduction == "none")
            upd = any_data(rng, tuple(lead) + tuple(s[k:]), dt)
            yield Case([any_data(rng, s, dt), ix, upd], attrs={} if reduction == "none" else {"reduction": reduction},
                       opset=18, const={1} if rng.random() < 0.5 else set())
    yield Case([any_data(rng, (4,), np.bool_), i64([[1], [-1]]), any_data(rng, (2,), np.bool_)])
    yield BadCase([data(rng, (2, 3)), i64([[0, 3]]), data(rng, (1,))], error="index")
    yield BadCase([data(rng, (2, 3)), i64([[0]]), data(rng, (1, 2))], error="updates")
    yield BadCase([data(rng, (2, 3)), i64([[0]]), data(rng, (1, 3))], attrs={"reduction": "sum"}, opset=18, error="reduction")


@spec("ScatterElements")
def scatter_elements(rng, op):
    for rank in (1, 2, 3):
        for reduction in ("none", "add", "mul", "max", "min"):
            s = list(nonzero_shape(rng, rank, 2, 4))
            a = axis_of(rng, rank)
            ishape = [int(rng.integers(1, d + 1)) for d in s]
            dt = np.float32 if reduction == "mul" else pick_dtype(rng, (np.float32, np.int64, np.int32))
            if reduction == "none":  # distinct targets along the axis within each line
                n = a % rank
                ishape[n] = int(rng.integers(1, s[n] + 1))
                perm = np.argsort(rng.random(tuple(ishape[:n]) + (s[n],) + tuple(ishape[n + 1:])), axis=n)
                ix = np.take(perm, np.arange(ishape[n]), axis=n).astype(np.int64) - (rng.random(tuple(ishape)) < 0.3) * s[n]
            else:
                ix = boundary_indices(rng, s[a], tuple(ishape))
            upd = any_data(rng, tuple(ishape), dt)
            yield Case([any_data(rng, tuple(s), dt), ix, upd], attrs=dict({"axis": a}, **({} if reduction == "none" else {"reduction": reduction})),
                       opset=18, const={1} if rng.random() < 0.5 else set())
    yield BadCase([data(rng, (2, 3)), i64([[0, 3]]), data(rng, (1, 2))], attrs={"axis": 1}, error="index")
    yield BadCase([data(rng, (2, 3)), i64([[0, 1]]), data(rng, (1, 3))], attrs={"axis": 1}, error="updates")
    yield BadCase([data(rng, (2, 3)), i64([[0, 1]]), data(rng, (1, 2))], attrs={"axis": 2}, error="axis")


# ---------------------------------------------------------------------------------------------
# Expand / Tile / Pad


@spec("Expand")
def expand(rng, op):
    for _ in range(8):
        sa, sb = broadcast_pair(rng)
        dt = pick_dtype(rng)
        const = {1} if rng.random() < 0.7 else set()
        yield Case([any_data(rng, sa, dt), i64(sb)], const=const)
    yield Case([data(rng, (3, 1)), i64([2, 1, 4])], const={1})
    yield Case([data(rng, (2, 3)), i64([1, 1])], const={1})  # target dims of 1 keep the input's
    yield Case([data(rng, (2, 3)), i64([])], const={1})  # a lower-rank shape
    yield Case([data(rng, ()), i64([2, 0, 3])], const={1})
    yield Case([data(rng, (1, 3)), i64([0, 1])], const={1})
    yield BadCase([data(rng, (2, 3)), i64([4, 3])], const={1}, error="broadcast")
    yield BadCase([data(rng, (3,)), i64([2, 2])], error="broadcast")  # at run time


@spec("Tile")
def tile(rng, op):
    for rank in (0, 1, 2, 3, 4):
        for _ in range(2):
            s = shape(rng, rank, 1, 3, zero_prob=0.1)
            reps = rng.integers(0, 4, size=rank) if rng.random() < 0.2 else rng.integers(1, 4, size=rank)
            dt = pick_dtype(rng)
            yield Case([any_data(rng, s, dt), i64(reps)], const={1} if rng.random() < 0.7 else set())
    yield Case([data(rng, (2, 3)), i64([1, 1])], const={1})
    yield BadCase([data(rng, (2, 3)), i64([2])], const={1}, error="repeats")
    yield BadCase([data(rng, (2, 3)), i64([2, 1, 1])], const={1}, error="repeats")
    yield BadCase([data(rng, (2, 3)), i64([2, -1])], const={1}, error="repeat")
    yield BadCase([data(rng, (2, 3)), i64([2])], error="repeats")  # at run time


@spec("Pad")
def pad(rng, op):
    # constant mode, random (also negative) pads, with and without a value
    for rank in (1, 2, 3, 4, 5):
        s = shape(rng, rank, 1, 4, zero_prob=0.1)
        pads = np.concatenate([rng.integers(-min(d, 2) if d else 0, 3, size=1) for d in s]
                              + [rng.integers(0, 3, size=1) for _ in s]).astype(np.int64)
        dt = pick_dtype(rng, (np.float32, np.int64, np.int32))
        cv = np.array(rng.integers(-5, 5), dtype=dt)
        if rank % 2:
            yield Case([any_data(rng, s, dt), pads, cv], const={1, 2})
        else:
            yield Case([any_data(rng, s, dt), pads], const={1})
    yield Case([any_data(rng, (2, 3), np.bool_), i64([1, 0, 0, 2]), np.array(True)], const={1, 2})
    yield Case([data(rng, (2, 3)), i64([1, 1, 1, 1]), np.array(7.5, np.float32)])  # runtime pads and value
    # reflect and edge
    for mode in ("reflect", "edge"):
        for rank in (1, 2, 3, 4):
            s = nonzero_shape(rng, rank, 2, 5)
            hi = [d - 1 for d in s] if mode == "reflect" else [4] * rank
            pads = np.concatenate([[int(rng.integers(0, h + 1)) for h in hi], [int(rng.integers(0, h + 1)) for h in hi]])
            yield Case([data(rng, s), pads.astype(np.int64)], attrs={"mode": mode}, const={1})
    yield Case([data(rng, (4, 5)), i64([-1, 2, 1, -2])], attrs={"mode": "edge"}, const={1})  # crop + pad
    yield Case([data(rng, (4, 5)), i64([-1, 2, 1, -2])], attrs={"mode": "reflect"}, const={1})
    yield Case([any_data(rng, (3, 4), np.int64), i64([0, 3, 0, 3])], attrs={"mode": "reflect"}, const={1})
    # opset 18: axes (negative too); opset 19: wrap
    yield Case([data(rng, (2, 3, 4)), i64([1, 2, 0, 1]), None, i64([-1, 0])], const={1, 3}, opset=18)
    yield Case([data(rng, (2, 3, 4)), i64([2, 1]), np.array(1.5, np.float32), i64([1])], const={1, 2, 3}, opset=18)
    yield Case([data(rng, (2, 3, 4)), i64([1, 1, 2, 2]), None, i64([2, 1])], attrs={"mode": "edge"}, const={1, 3},
               opset=18)
    yield Case([data(rng, (3, 4)), i64([2, 3, 1, 2])], attrs={"mode": "wrap"}, const={1}, opset=19)
    yield Case([data(rng, (3, 4)), i64([1, -1, 0, 2])], attrs={"mode": "wrap"}, const={1}, opset=19)
    yield Case([data(rng, (3, 4)), i64([2, 0, -1, 0])], attrs={"mode": "wrap"}, const={1}, opset=19)
    yield Case([data(rng, (2, 3, 4)), i64([1, 0, 0, 2]), None, i64([0, -1])], const={1}, opset=18)  # runtime axes
    # must fail
    yield BadCase([data(rng, (2, 3)), i64([1, 1, 1])], const={1}, error="pads")
    yield BadCase([data(rng, (2, 3)), i64([-2, 0, -1, 0])], const={1}, error="pad")  # dim 0 would be -1
    yield BadCase([data(rng, (2, 3)), i64([0, -4, 0, 0])], error="pad")  # at run time
    yield BadCase([data(rng, (2, 3)), i64([0, 3, 0, 0])], attrs={"mode": "reflect"}, const={1}, error="reflect")
    yield BadCase([data(rng, (2, 3)), i64([0, 1, 0, 1])], attrs={"mode": "mirror"}, const={1}, error="mode")
    yield BadCase([data(rng, (2, 3)), i64([1, 1]), None, i64([2])], const={1, 3}, opset=18, error="axis")
    yield BadCase([data(rng, (0, 3)), i64([1, 0, 0, 0])], attrs={"mode": "edge"}, const={1}, error="edge")


# ---------------------------------------------------------------------------------------------
# Shape / Size / ConstantOfShape / Range


@spec("Shape")
def shape_(rng, op):
    for rank in (0, 1, 2, 3, 4, 5):
        dt = pick_dtype(rng)
        yield Case([any_data(rng, shape(rng, rank), dt)])
    x = data(rng, (2, 0, 3, 4))
    for start, end in ((1, None), (-3, -1), (-10, 10), (2, 1), (0, -4), (4, None), (None, -2)):
        attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
        yield Case([x], attrs=attrs, opset=17)


@spec("Size")
def size_(rng, op):
    for rank in (0, 1, 2, 3, 4, 5):
        dt = pick_dtype(rng)
        yield Case([any_data(rng, shape(rng, rank), dt)])


@spec("ConstantOfShape")
def constant_of_shape(rng, op):
    def value(dt, v):
        return helper.make_tensor("value", dt, [1], [v])
    yield Case([i64([2, 3])], const={0})  # default: float 0
    yield Case([i64([2, 0, 3])], attrs={"value": value(TensorProto.FLOAT, 2.5)}, const={0})
    yield Case([i64([])], attrs={"value": value(TensorProto.INT64, -7)}, const={0})  # a scalar
    yield Case([i64([3, 1, 2, 1, 2])], attrs={"value": value(TensorProto.INT32, 11)}, const={0})
    yield Case([i64([4])], attrs={"value": value(TensorProto.BOOL, True)}, const={0})
    yield Case([i64([2, 4])], attrs={"value": value(TensorProto.DOUBLE, -1.25)})  # shape at run time
    yield Case([i64([0])], attrs={"value": value(TensorProto.FLOAT, 1.0)})
    yield BadCase([i64([2, -2])], const={0}, error="negative")
    yield BadCase([i64([2, -2])], error="negative")


@spec("Range")
def range_(rng, op):
    def sc(v, dt):
        return np.array(v, dtype=dt)
    cases = [(0, 10, 3, np.int64), (10, 0, -3, np.int64), (5, 5, 1, np.int64), (0, 5, -1, np.int64),
             (-4, 7, 2, np.int32), (7, -4, -5, np.int32), (0.0, 2.0, 0.25, np.float32), (1.0, -2.0, -0.5, np.float32),
             (0.5, 3.0, 0.3, np.float32), (-1.0, 1.0, 0.125, np.float64), (3, 3, -2, np.int32)]
    for k, (s, l, d, dt) in enumerate(cases):
        yield Case([sc(s, dt), sc(l, dt), sc(d, dt)], const={0, 1, 2} if k % 3 else set())
    yield BadCase([sc(0, np.int64), sc(5, np.int64), sc(0, np.int64)], const={0, 1, 2}, error="delta")
    yield BadCase([sc(0.0, np.float32), sc(5.0, np.float32), sc(0.0, np.float32)], error="delta")  # at run time


# ---------------------------------------------------------------------------------------------
# DepthToSpace / SpaceToDepth


@spec("DepthToSpace")
def depth_to_space(rng, op):
    for mode in ("DCR", "CRD"):
        for b in (1, 2, 3):
            n, c, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
            dt = pick_dtype(rng, (np.float32, np.float64))  # ORT: floating types only
            yield Case([any_data(rng, (n, c * b * b, h, w), dt)], attrs={"blocksize": b, "mode": mode})
    yield Case([data(rng, (1, 8, 2, 3))], attrs={"blocksize": 2})  # default DCR
    yield Case([data(rng, (0, 4, 2, 2))], attrs={"blocksize": 2, "mode": "CRD"})
    yield BadCase([data(rng, (1, 6, 2, 2))], attrs={"blocksize": 2}, error="blocksize")  # 6 % 4
    yield BadCase([data(rng, (1, 4, 2, 2))], attrs={"blocksize": 0}, error="blocksize")
    yield BadCase([data(rng, (4, 2, 2))], attrs={"blocksize": 2}, error="4-D")
    yield BadCase([data(rng, (1, 4, 2, 2))], attrs={"blocksize": 2, "mode": "XYZ"}, error="mode")


@spec("SpaceToDepth")
def space_to_depth(rng, op):
    for b in (1, 2, 3):
        for _ in range(2):
            n, c, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
            dt = pick_dtype(rng, (np.float32, np.float64))  # ORT: floating types only
            yield Case([any_data(rng, (n, c, h * b, w * b), dt)], attrs={"blocksize": b})
    yield Case([data(rng, (1, 0, 4, 2))], attrs={"blocksize": 2})
    yield BadCase([data(rng, (1, 2, 3, 4))], attrs={"blocksize": 2}, error="blocksize")  # H 3 % 2
    yield BadCase([data(rng, (1, 2, 4, 4))], attrs={"blocksize": -1}, error="blocksize")
    yield BadCase([data(rng, (2, 4, 4))], attrs={"blocksize": 2}, error="4-D")


# ---------------------------------------------------------------------------------------------
# NonZero / Trilu / CumSum


@spec("NonZero")
def nonzero(rng, op):
    for rank in (0, 1, 2, 3, 4, 5):
        dt = pick_dtype(rng)
        s = shape(rng, rank)
        x = any_data(rng, s, dt) if dt != np.float32 else np.where(rng.random(s) < 0.5, 0, data(rng, s)).astype(np.float32)
        yield Case([np.asarray(x)])
    yield Case([np.array([0.0, -0.0, np.nan, 1.0, np.inf], np.float32)])  # -0 is zero, NaN is not
    yield Case([np.zeros((3, 4), np.int64)])  # none
    yield Case([np.array(0, np.int32)])  # scalar zero
    yield Case([any_data(rng, (3, 3), np.int32)], const={0})  # a constant input


@spec("Trilu")
def trilu(rng, op):
    for upper in (0, 1):
        for rank in (2, 3, 4):
            s = shape(rng, rank, 1, 5, zero_prob=0.1)
            k = int(rng.integers(-4, 5))
            dt = pick_dtype(rng, (np.float32, np.int64))
            yield Case([any_data(rng, s, dt), np.array(k, np.int64)], attrs={"upper": upper},
                       const={1} if rng.random() < 0.6 else set())
        yield Case([data(rng, (3, 5))], attrs={"upper": upper})  # k omitted
        yield Case([data(rng, (4, 2)), np.array(-10, np.int64)], attrs={"upper": upper}, const={1})  # k past the matrix
        yield Case([data(rng, (2, 4)), np.array(I64_MAX, np.int64)], attrs={"upper": upper}, const={1})
    yield Case([any_data(rng, (3, 3), np.bool_), np.array(1, np.int64)], const={1})
    yield BadCase([data(rng, (4,))], error="rank")
    yield BadCase([data(rng, ())], attrs={"upper": 0}, error="rank")


@spec("CumSum")
def cumsum(rng, op):
    for rank in (1, 2, 3, 4, 5):
        for excl, rev in ((0, 0), (1, 0), (0, 1), (1, 1)):
            if rng.random() < 0.4 and rank not in (1, 3):
                continue
            s = shape(rng, rank, 1, 4, zero_prob=0.1)
            a = axis_of(rng, rank)
            dt = pick_dtype(rng, (np.float32, np.int64, np.int32, np.float64))
            adt = np.int32 if rng.random() < 0.3 else np.int64
            yield Case([any_data(rng, s, dt), np.array(a, adt)], attrs={"exclusive": excl, "reverse": rev},
                       const={1} if rng.random() < 0.7 else set())
    yield BadCase([data(rng, (2, 3)), np.array(2, np.int64)], const={1}, error="axis")
    yield BadCase([data(rng, (2, 3)), np.array(-3, np.int64)], error="axis")
    yield BadCase([data(rng, (2, 3)), i64([0, 1])], const={1}, error="axis")  # not a scalar


# ---------------------------------------------------------------------------------------------
# TopK / ArgMax / ArgMin / Hardmax


@spec("TopK")
def topk(rng, op):
    for rank in (1, 2, 3, 4):
        for _ in range(2):
            s = list(shape(rng, rank, 1, 5, zero_prob=0.1))
            a = axis_of(rng, rank)
            s[a] = int(rng.integers(1, 7))
            k = int(rng.integers(0, s[a] + 1))
            dt = pick_dtype(rng, (np.float32, np.int64, np.int32, np.float64))
            x = data(rng, tuple(s), dt, -3, 3)  # small ints: ties, lower index first
            largest = int(rng.integers(0, 2))
            yield Case([x, i64([k])], attrs={"axis": a, "largest": largest}, outputs=2,
                       const={1} if rng.random() < 0.7 else set())
    x = data(rng, (3, 6))
    yield Case([x, i64([6])], outputs=2, const={1})  # k == dim, default axis -1
    yield Case([x, i64([0])], attrs={"axis": 0}, outputs=2, const={1})
    yield Case([x, i64([1])], attrs={"sorted": 0, "largest": 0}, outputs=2, const={1})  # one: order is defined
    yield Case([np.array([2, 1, 2, 1, 2], np.int64), i64([3])], attrs={"largest": 1}, outputs=2, const={1})
    yield Case([np.array([2, 1, 2, 1, 2], np.int64), i64([3])], attrs={"largest": 0}, outputs=2, const={1})
    yield BadCase([data(rng, (3, 4)), i64([5])], const={1}, outputs=2, error="K")
    yield BadCase([data(rng, (3, 4)), i64([5])], outputs=2, error="K")  # at run time
    yield BadCase([data(rng, (3, 4)), i64([-1])], const={1}, outputs=2, error="K")
    yield BadCase([data(rng, (3, 4)), i64([1])], attrs={"axis": 2}, const={1}, outputs=2, error="axis")
    yield BadCase([data(rng, (3, 4)), i64([1, 2])], const={1}, outputs=2, error="K")  # K has 2 values


@spec("ArgMax", "ArgMin")
def argmax(rng, op):
    for rank in (1, 2, 3, 4, 5):
        for _ in range(2):
            s = list(shape(rng, rank, 1, 4, zero_prob=0.1))
            a = axis_of(rng, rank)
            s[a] = int(rng.integers(1, 5))
            dt = pick_dtype(rng, (np.float32, np.int64, np.int32, np.float64))
            x = data(rng, tuple(s), dt, -2, 2)  # ties
            attrs = {"axis": a, "keepdims": int(rng.integers(0, 2)), "select_last_index": int(rng.integers(0, 2))}
            yield Case([x], attrs=attrs)
    yield Case([data(rng, (3, 4))])  # defaults: axis 0, keepdims 1
    yield Case([np.array([[1, 3, 3], [2, 2, 0]], np.int64)], attrs={"axis": 1, "select_last_index": 1})
    yield Case([np.array([[1, 3, 3], [2, 2, 0]], np.int64)], attrs={"axis": -1, "select_last_index": 0, "keepdims": 0})
    yield BadCase([data(rng, (3, 4))], attrs={"axis": 2}, error="axis")
    yield BadCase([data(rng, (3, 4))], attrs={"axis": -3}, error="axis")
    yield BadCase([data(rng, (3, 0))], attrs={"axis": 1}, error="axis")  # nothing to choose from


@spec("Hardmax")
def hardmax(rng, op):
    for rank in (1, 2, 3, 4, 5):
        s = shape(rng, rank, 1, 4, zero_prob=0.1)
        attrs = {"axis": axis_of(rng, rank)} if rank != 3 else {}
        x = np.round(data(rng, s, np.float32, -2, 2))  # ties: the first wins
        yield Case([x], attrs=attrs)
    yield Case([data(rng, (2, 3, 4))], attrs={"axis": 1})
    yield Case([np.array([[1.0, 3.0, 3.0], [-np.inf, -np.inf, -np.inf]], np.float32)])
    yield Case([data(rng, (2, 3, 4))], opset=11)  # before 13: flattened to 2-D at axis 1
    yield Case([data(rng, (2, 3, 4))], attrs={"axis": 2}, opset=11)
    yield BadCase([data(rng, (3, 4))], attrs={"axis": 2}, error="axis")
    yield BadCase([data(rng, (3, 4))], attrs={"axis": -3}, error="axis")


# ---------------------------------------------------------------------------------------------
# Dropout (inference)


@spec("Dropout")
def dropout(rng, op):
    for rank in (0, 1, 2, 3, 4):
        yield Case([data(rng, shape(rng, rank))])
    yield Case([data(rng, (2, 3)), np.array(0.5, np.float32)], const={1})
    yield Case([data(rng, (2, 3)), np.array(0.3, np.float32), np.array(False)], const={1, 2})
    yield Case([data(rng, (2, 3)), np.array(0.3, np.float32), np.array(False)], outputs=2)  # mask: all true
    yield Case([data(rng, (0, 3))], outputs=2)
    yield Case([data(rng, (3, 4), np.float64)], attrs={"seed": 7})
    yield Case([data(rng, (2, 3))], attrs={"ratio": 0.2}, opset=10)
    # before opset 10 the mask had the data's type. Its values in inference are left open by the
    # operator's definition: ONNX Runtime writes 0, Weft 1 (every element kept, as from opset 10)
    keep_all = (lambda outs: [outs[0], np.ones_like(outs[1])])
    yield Case([data(rng, (2, 3))], attrs={"ratio": 0.2}, opset=7, outputs=2, check=keep_all)
    yield Case([data(rng, (4,), np.float64)], opset=9, outputs=2, check=keep_all)
    # training mode with ratio 0 keeps everything (other ratios draw at random: python/tests/test_random_ops.py)
    yield Case([data(rng, (2, 3, 4)), np.array(0.0, np.float32), np.array(True)], outputs=2)
    yield Case([data(rng, (5,), np.float64), np.array(0.0, np.float32), np.array(True)], const={1, 2}, outputs=2)
    yield BadCase([data(rng, (2, 3)), np.array(1.5, np.float32), np.array(True)], error="ratio must be in [0, 1]")
    yield BadCase([data(rng, (2, 3)), np.array([0.1, 0.2], np.float32), np.array(True)], error="ratio must be one value")
