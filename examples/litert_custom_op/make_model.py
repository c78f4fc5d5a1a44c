"""Writes the demo model: x [1, 5, 4, 3] → Convolution2DTransposeBias (custom, SAME, stride 2,
3x3 kernel, 3 → 2 channels) → RELU → y [1, 10, 8, 2]; plus x.npy and the expected y (a float64
re-computation) in the given directory.   python make_model.py DIR
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_writer import Model  # noqa: E402


def transpose_conv_reference(x, w, b, stride, same):
    n, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    oh = ih * stride if same else (ih - 1) * stride + kh
    ow = iw * stride if same else (iw - 1) * stride + kw
    ph = max((ih - 1) * stride + kh - oh, 0) // 2
    pw = max((iw - 1) * stride + kw - ow, 0) // 2
    y = np.zeros((n, oh, ow, oc)) + b
    for iy in range(ih):
        for ix in range(iw):
            for ky in range(kh):
                for kx in range(kw):
                    oy, ox = iy * stride - ph + ky, ix * stride - pw + kx
                    if 0 <= oy < oh and 0 <= ox < ow:
                        y[:, oy, ox, :] += x[:, iy, ix, :] @ w[:, ky, kx, :].T
    return y


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 5, 4, 3)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    m = Model()
    tx = m.tensor("x", x.shape, "float32")
    tw = m.tensor("weights", w.shape, "float32", data=w)
    tb = m.tensor("bias", b.shape, "float32", data=b)
    tt = m.tensor("upsampled", [1, 10, 8, 2], "float32")
    ty = m.tensor("y", [1, 10, 8, 2], "float32")
    m.custom("Convolution2DTransposeBias", [tx, tw, tb], [tt], options=struct.pack("<3i", 1, 2, 2))
    m.builtin(19, [tt], [ty])  # RELU
    with open(os.path.join(out, "model.tflite"), "wb") as f:
        f.write(m.finish(inputs=[tx], outputs=[ty]))
    np.save(os.path.join(out, "x.npy"), x)
    want = np.maximum(transpose_conv_reference(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), 2, True), 0)
    np.save(os.path.join(out, "want.npy"), want)


if __name__ == "__main__":
    main()
