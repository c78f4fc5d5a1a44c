"""Transpose against NumPy: every permutation of ranks 2 to 5 over shapes with dims of 1, small and
large sizes (the tiled path for NCHW <-> NHWC and matrix transposes, the row path for the rest),
1-, 2-, 4- and 8-byte elements, one and two threads."""
import itertools

import numpy as np
import pytest

import weft

SHAPES = [(7, 9), (4, 50, 33), (1, 96, 20, 21), (2, 3, 37, 5), (3, 1, 10, 8, 6)]


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "int64"])
def test_every_permutation_matches_numpy(shape, dtype):
    rng = np.random.default_rng(len(shape) * 10 + len(dtype))
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    for threads in (1, 2):
        session = weft.Session(threads=threads, use_env_path=False)
        for perm in itertools.permutations(range(len(shape))):
            g = weft.Graph("t")
            g.add_input("x", dtype, list(shape)).add_node("Transpose", "t", ["x"], ["y"], {"perm": list(perm)}).add_output("y")
            y = session.compile(g).run([x])[0]
            assert np.array_equal(y, x.transpose(perm)), (perm, threads)
