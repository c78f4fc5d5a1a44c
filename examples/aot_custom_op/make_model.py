"""Writes the demo model: x [1, 8] -> checked-sqrt (custom) -> FULLY_CONNECTED (8 -> 4, bias) -> y,
plus x.npy (non-negative), bad_x.npy (one negative element) and the expected y (a float64
re-computation) in the given directory.   python make_model.py DIR
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(11)
    w = rng.standard_normal((4, 8)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    m = Model()
    tx = m.tensor("x", [1, 8], "float32")
    tr = m.tensor("root", [1, 8], "float32")
    tw = m.tensor("weights", w.shape, "float32", data=w)
    tb = m.tensor("bias", b.shape, "float32", data=b)
    ty = m.tensor("y", [1, 4], "float32")
    m.custom("checked-sqrt", [tx], [tr])
    m.builtin(9, [tr, tw, tb], [ty])  # FULLY_CONNECTED
    with open(os.path.join(out, "model.tflite"), "wb") as f:
        f.write(m.finish(inputs=[tx], outputs=[ty]))
    x = rng.uniform(0.0, 4.0, (1, 8)).astype(np.float32)
    bad = x.copy()
    bad[0, 5] = -0.25
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "bad_x.npy"), bad)
    want = np.sqrt(x.astype(np.float64)) @ w.astype(np.float64).T + b
    np.save(os.path.join(out, "want.npy"), want)


if __name__ == "__main__":
    main()
