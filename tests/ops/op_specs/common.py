"""What an op spec yields, and helpers for random shapes and data.

A spec is a generator registered with @spec("OpType"); it takes a numpy Generator and yields
Case (run on ONNX Runtime and Weft, outputs compared) and BadCase (Weft must refuse it with an
error containing `error`). Inputs listed in `const` become initializers (for inputs an op needs
constant, such as shapes and axes); None in `inputs` is an omitted optional input.
"""
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

REGISTRY = {}


def spec(*ops):
    """Registers fn(rng, op) as the case generator of each op type in `ops`."""
    def wrap(fn):
        for op in ops:
            REGISTRY[op] = (lambda o: (lambda rng: fn(rng, o)))(op)
        return fn
    return wrap


@dataclass
class Case:
    inputs: list
    attrs: dict = field(default_factory=dict)
    outputs: int = 1
    const: set = field(default_factory=set)
    opset: int = 17
    op: Optional[str] = None
    domain: str = ""
    check: Optional[Callable] = None  # post-processes ORT's outputs (e.g. to drop an unspecified one)
    # "ort" (ONNX Runtime), or "onnx" (the onnx package's reference evaluator) where ONNX Runtime
    # departs from the operator's specification; say why beside the case.
    reference: str = "ort"


@dataclass
class BadCase(Case):
    error: str = ""


def shape(rng, rank, lo=0, hi=5, zero_prob=0.15):
    """A random shape; each dim is 0 with probability zero_prob."""
    return tuple(0 if rng.random() < zero_prob else int(rng.integers(max(lo, 1), hi + 1)) for _ in range(rank))


def nonzero_shape(rng, rank, lo=1, hi=5):
    return tuple(int(rng.integers(lo, hi + 1)) for _ in range(rank))


def broadcast_pair(rng, rank=None):
    """Two shapes that broadcast against each other (dims of 1, missing leading dims, size 0)."""
    rank = int(rng.integers(0, 5)) if rank is None else rank
    full = shape(rng, rank, 1, 4, zero_prob=0.1)
    a = list(full)
    b = list(full)
    for i in range(rank):
        r = rng.random()
        if r < 0.25:
            a[i] = 1
        elif r < 0.5:
            b[i] = 1
    drop = int(rng.integers(0, rank + 1))
    if rng.random() < 0.5:
        b = b[drop:]
    else:
        a = a[drop:]
    return tuple(a), tuple(b)


def data(rng, shp, dtype=np.float32, lo=-3.0, hi=3.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(rng.random(shp) < 0.5)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(max(int(lo), info.min), min(int(hi), info.max) + 1, size=shp), dtype=dtype)
    return np.asarray(rng.uniform(lo, hi, size=shp), dtype=dtype)


def positive(rng, shp, dtype=np.float32, lo=0.1, hi=3.0):
    return data(rng, shp, dtype, lo, hi)


def i64(values):
    return np.array(values, dtype=np.int64)


def axis_of(rng, rank, negative_prob=0.5):
    """A random valid axis for `rank`, negative half the time."""
    a = int(rng.integers(0, rank))
    return a - rank if rng.random() < negative_prob else a
