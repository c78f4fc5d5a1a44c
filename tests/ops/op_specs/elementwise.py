"""Unary, binary, variadic and comparison ops: random shapes with size-0 dims, broadcasting,
each dtype the op takes, values at the edges of each function's domain."""
import numpy as np

from .common import BadCase, Case, broadcast_pair, data, positive, shape, spec

FLOAT_UNARY = {
    # op: (lo, hi) of the random inputs, inside the domain
    "Abs": (-3, 3), "Neg": (-3, 3), "Ceil": (-3, 3), "Floor": (-3, 3), "Round": (-3, 3),
    "Exp": (-5, 5), "Log": (0.01, 5), "Sqrt": (0, 5), "Reciprocal": (0.1, 3), "Sign": (-3, 3),
    "Sin": (-6, 6), "Cos": (-6, 6), "Tan": (-1.5, 1.5), "Asin": (-1, 1), "Acos": (-1, 1), "Atan": (-5, 5),
    "Sinh": (-4, 4), "Cosh": (-4, 4), "Asinh": (-5, 5), "Acosh": (1, 5), "Atanh": (-0.99, 0.99),
    "Erf": (-3, 3), "Relu": (-3, 3), "Sigmoid": (-8, 8), "Tanh": (-5, 5), "Softplus": (-5, 5),
    "Softsign": (-5, 5), "Mish": (-5, 5), "HardSwish": (-5, 5), "Identity": (-3, 3),
}
ACTIVATIONS_WITH_ATTRS = {
    "LeakyRelu": lambda rng: {"alpha": float(rng.uniform(0.01, 0.5))},
    "Elu": lambda rng: {"alpha": float(rng.uniform(0.1, 2))},
    "Selu": lambda rng: {"alpha": float(rng.uniform(1, 2)), "gamma": float(rng.uniform(0.5, 1.5))},
    "Celu": lambda rng: {"alpha": float(rng.uniform(0.5, 2))},
    "HardSigmoid": lambda rng: {"alpha": float(rng.uniform(0.1, 0.5)), "beta": float(rng.uniform(0.2, 0.8))},
    "ThresholdedRelu": lambda rng: {"alpha": float(rng.uniform(-1, 1))},
    "Gelu": lambda rng: {"approximate": str(rng.choice(["none", "tanh"]))},
}


@spec(*FLOAT_UNARY)
def unary(rng, op):
    lo, hi = FLOAT_UNARY[op]
    opset = 18 if op == "Mish" else 17
    for rank in (0, 1, 2, 3, 4, 5):
        yield Case([data(rng, shape(rng, rank), np.float32, lo, hi)], opset=opset)
    if op in ("Abs", "Neg", "Sign", "Identity"):
        for dt in (np.int32, np.int64) + ((np.int8,) if op not in ("Relu",) else ()):
            yield Case([data(rng, shape(rng, 3), dt, -100, 100)])
    if op not in ("Identity",):
        yield BadCase([data(rng, (2, 3), np.float32)], attrs={"alpha": 1.0}, error="alpha", opset=opset)


@spec(*ACTIVATIONS_WITH_ATTRS)
def activation(rng, op):
    for rank in (0, 1, 2, 4):
        attrs = ACTIVATIONS_WITH_ATTRS[op](rng)
        if op == "Gelu":
            yield Case([data(rng, shape(rng, rank))], attrs=attrs, opset=20)
        else:
            yield Case([data(rng, shape(rng, rank))], attrs=attrs)
    yield BadCase([data(rng, (2, 3))], attrs={"no_such_attribute": 1}, error="no_such_attribute",
                  opset=20 if op == "Gelu" else 17)
    if op == "Gelu":
        yield BadCase([data(rng, (2, 3))], attrs={"approximate": "cubic"}, error="approximate", opset=20)


ARITH = ["Add", "Sub", "Mul", "Div", "Pow", "Mod"]
COMPARE = ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"]
LOGIC = ["And", "Or", "Xor"]


@spec(*ARITH, *COMPARE)
def binary(rng, op):
    dtypes = [np.float32, np.int32, np.int64]
    if op in ("Add", "Sub", "Mul"):
        dtypes.append(np.float64)
    for dt in dtypes:
        for _ in range(3):
            sa, sb = broadcast_pair(rng)
            if op == "Pow":
                if dt == np.float32:
                    a, b = positive(rng, sa, dt), data(rng, sb, dt, -2, 2)
                else:
                    a, b = data(rng, sa, dt, -4, 4), data(rng, sb, dt, 0, 3)
            elif op in ("Div", "Mod") and dt != np.float32:
                a, b = data(rng, sa, dt, -50, 50), data(rng, sb, dt, 1, 9) * np.where(rng.random(sb) < 0.5, -1, 1).astype(dt).reshape(sb)
            elif op in ("Div", "Mod"):
                a, b = data(rng, sa, dt), positive(rng, sb, dt) * np.where(rng.random(sb) < 0.5, -1, 1).astype(dt).reshape(sb)
            else:
                a, b = data(rng, sa, dt, -5, 5), data(rng, sb, dt, -5, 5)
            if op in COMPARE and dt != np.float32:
                b = data(rng, sb, dt, -2, 2)
                a = data(rng, sa, dt, -2, 2)
            attrs = {"fmod": 1} if op == "Mod" and dt == np.float32 else {}
            yield Case([a, b], attrs=attrs)
    if op == "Pow":  # one exponent that is a small whole number or 1/2 takes its own path
        for e in (0.5, 1.0, 2.0, 3.0, 4.0, -1.0, -2.0):
            yield Case([data(rng, shape(rng, 3), np.float32, -4, 4), np.array(e, np.float32)], const={1})
        yield Case([data(rng, (2, 5), np.float32, -4, 4), np.array(3, np.int64)])
    yield BadCase([data(rng, (2, 3)), data(rng, (4, 3))], error="broadcast")
    if op != "Pow":  # Pow takes an exponent of another type
        yield BadCase([data(rng, (2, 3)), data(rng, (2, 3), np.int64, -3, 3)], error="type")


@spec(*LOGIC)
def logic(rng, op):
    for _ in range(5):
        sa, sb = broadcast_pair(rng)
        yield Case([data(rng, sa, np.bool_), data(rng, sb, np.bool_)])
    yield BadCase([data(rng, (3, 2), np.bool_), data(rng, (2, 3), np.bool_)], error="broadcast")


@spec("Not")
def not_(rng, op):
    for rank in (0, 1, 3):
        yield Case([data(rng, shape(rng, rank), np.bool_)])
    yield BadCase([data(rng, (2,), np.bool_)], attrs={"alpha": 1.0}, error="alpha")


@spec("Max", "Min", "Sum", "Mean")
def variadic(rng, op):
    for n in (1, 2, 3):
        for _ in range(2):
            sa, sb = broadcast_pair(rng)
            shapes = [sa, sb, sa][:n]
            yield Case([data(rng, s) for s in shapes])
    if op in ("Max", "Min"):
        sa, sb = broadcast_pair(rng)
        yield Case([data(rng, sa, np.int64, -9, 9), data(rng, sb, np.int64, -9, 9)])
    yield BadCase([data(rng, (2, 3)), data(rng, (3, 2))], error="broadcast")


@spec("Where")
def where(rng, op):
    for _ in range(6):
        sa, sb = broadcast_pair(rng)
        sc = sa if rng.random() < 0.5 else sb
        yield Case([data(rng, sc, np.bool_), data(rng, sa), data(rng, sb)])
    yield Case([data(rng, (2, 3), np.bool_), data(rng, (2, 3), np.int64, -5, 5), data(rng, (1, 3), np.int64, -5, 5)])
    yield BadCase([data(rng, (2, 3), np.bool_), data(rng, (4, 3)), data(rng, (2, 3))], error="broadcast")


@spec("IsNaN", "IsInf")
def isnan(rng, op):
    x = data(rng, (4, 5))
    x.flat[::3] = np.nan
    x.flat[1::4] = np.inf
    x.flat[2::5] = -np.inf
    yield Case([x])
    yield Case([data(rng, shape(rng, 2))])
    if op == "IsInf":
        yield Case([x], attrs={"detect_negative": 0})
        yield Case([x], attrs={"detect_positive": 0})


@spec("Clip")
def clip(rng, op):
    for rank in (0, 1, 3):
        lo = np.array(rng.uniform(-2, 0), dtype=np.float32)
        hi = np.array(rng.uniform(0, 2), dtype=np.float32)
        yield Case([data(rng, shape(rng, rank)), lo, hi], const={1, 2})
        yield Case([data(rng, shape(rng, rank)), lo, None], const={1})
        yield Case([data(rng, shape(rng, rank)), None, hi], const={2})
        yield Case([data(rng, shape(rng, rank)), lo, hi])  # bounds as runtime inputs
    yield Case([data(rng, (3, 4), np.int64, -9, 9), np.array(-2, np.int64), np.array(3, np.int64)], const={1, 2})
    yield BadCase([data(rng, (2, 3)), np.zeros((2,), np.float32), None], const={1}, error="min")


@spec("PRelu")
def prelu(rng, op):
    for _ in range(5):
        sa, sb = broadcast_pair(rng)
        if len(sb) > len(sa):
            sa, sb = sb, sa
        # the slope broadcasts to X (unidirectionally)
        sb = tuple(1 if (d != a and d != 1) else d for d, a in zip(sb, sa[len(sa) - len(sb):]))
        yield Case([data(rng, sa), data(rng, sb)])
    yield BadCase([data(rng, (2, 3)), data(rng, (4,))], error="broadcast")


@spec("BitShift")
def bitshift(rng, op):
    for direction in ("LEFT", "RIGHT"):
        for dt in (np.uint8, np.uint32, np.uint64):
            sa, sb = broadcast_pair(rng)
            yield Case([data(rng, sa, dt, 0, 200), data(rng, sb, dt, 0, 7)], attrs={"direction": direction})
    yield BadCase([data(rng, (2,), np.uint32, 0, 9), data(rng, (2,), np.uint32, 0, 3)], attrs={"direction": "UP"},
                  error="direction")


@spec("Cast")
def cast(rng, op):
    from onnx import TensorProto
    pairs = [(np.float32, TensorProto.INT32), (np.float32, TensorProto.INT64), (np.int64, TensorProto.FLOAT),
             (np.float32, TensorProto.FLOAT16), (np.float32, TensorProto.DOUBLE), (np.int32, TensorProto.BOOL),
             (np.bool_, TensorProto.FLOAT), (np.float64, TensorProto.FLOAT), (np.uint8, TensorProto.INT64),
             (np.float32, TensorProto.UINT8)]
    for src, to in pairs:
        lo, hi = (0, 200) if to == TensorProto.UINT8 else (-100, 100)
        yield Case([data(rng, shape(rng, int(rng.integers(0, 4))), src, lo, hi)], attrs={"to": to})
    yield BadCase([data(rng, (2,))], attrs={"to": 12345}, error="to")


@spec("CastLike")
def castlike(rng, op):
    for src, dst in ((np.float32, np.int64), (np.int64, np.float32), (np.float32, np.float64)):
        yield Case([data(rng, shape(rng, 2), src, -50, 50), data(rng, (1,), dst)])


def _extremes(dtype, shape):
    info = np.iinfo(dtype)
    vals = np.array([info.min, info.max, info.min + 1, info.max - 1, -1, 0, 1, 2], dtype=dtype)
    return np.resize(vals, shape).astype(dtype)


@spec("IntegerWrap")
def integer_wrap(rng, op):
    """Signed integer overflow wraps around (two's complement), as NumPy and ONNX Runtime give it;
    in C++ it is undefined behaviour, which the sanitizer run of this harness would report."""
    for dt in (np.int32, np.int64):
        a, b = _extremes(dt, (4, 8)), np.flip(_extremes(dt, (4, 8)))
        for o in ("Add", "Sub", "Mul"):
            yield Case([a, b], op=o)
        for o in ("Neg", "Abs"):
            yield Case([a], op=o)
        # ONNX Runtime's integer reductions do not wrap consistently; the onnx reference (NumPy) does.
        yield Case([a, np.array([0], np.int64)], op="ReduceSum", const={1}, attrs={"keepdims": 0}, reference="onnx")
        yield Case([a, np.array(1, np.int64)], op="CumSum", const={1}, reference="onnx")
