"""Writes dynamic-range quantized LiteRT models (float activations, int8 weights: the "hybrid"
CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED that TensorFlow's converter emits for
`optimizations=[tf.lite.Optimize.DEFAULT]` without a representative dataset), with seeded random
weights, for compare_litert.py.

    .venv/bin/python bench/litert/make_hybrid.py -o /tmp/hybrid
    .venv/bin/python bench/litert/compare_litert.py --corpora /tmp/hybrid --threads 1,2

Models (written under OUT/tflite-micro/, the layout compare_litert.py reads):
  mobilenet_v1_hybrid.tflite   MobileNet v1 (224x224x3, width 1.0): a 3x3 stride-2 convolution,
                               13 depthwise-separable blocks, average pool, 1000-way FULLY_CONNECTED
  mobilenet_v1_025_hybrid.tflite  the same at width 0.25 and 128x128 (a microcontroller size)
  kws_cnn_hybrid.tflite        a keyword-spotting CNN on 49x40 features: two 3x3 convolutions,
                               depthwise-separable blocks, FULLY_CONNECTED
Channel scales differ per filter (as the converter writes them), so CONV_2D quantizes its input
asymmetrically; DEPTHWISE_CONV_2D always does.
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402

SAME, VALID, RELU6 = 0, 1, 3


class Net:
    def __init__(self, rng, shape):
        self.m, self.rng, self.k = Model(), rng, 0
        self.x = self.m.tensor("input", shape, "float32")
        self.cur, self.shape = self.x, list(shape)

    def _name(self, what):
        self.k += 1
        return f"{what}_{self.k}"

    def _weights(self, shape, oc, qdim, fan_in):
        w = self.rng.integers(-127, 128, shape).astype(np.int8)
        scales = list(self.rng.uniform(0.5, 1.5, oc) * (2.0 / np.sqrt(fan_in)) / 127.0)
        return self.m.tensor(self._name("w"), shape, "int8", data=w, scale=scales, zero_point=[0] * oc, quantized_dimension=qdim)

    def _bias(self, oc):
        return self.m.tensor(self._name("b"), [oc], "float32", data=(self.rng.standard_normal(oc) * 0.1).astype(np.float32))

    def conv(self, oc, k, stride, act=RELU6):
        n, h, w, ic = self.shape
        oh, ow = -(-h // stride), -(-w // stride)
        y = self.m.tensor(self._name("conv"), [n, oh, ow, oc], "float32")
        self.m.builtin(3, [self.cur, self._weights([oc, k, k, ic], oc, 0, k * k * ic), self._bias(oc)], [y],
                       options=(1, [(0, "byte", SAME), (1, "int32", stride), (2, "int32", stride), (3, "byte", act)]))
        self.cur, self.shape = y, [n, oh, ow, oc]

    def depthwise(self, stride, act=RELU6):
        n, h, w, c = self.shape
        oh, ow = -(-h // stride), -(-w // stride)
        y = self.m.tensor(self._name("dw"), [n, oh, ow, c], "float32")
        self.m.builtin(4, [self.cur, self._weights([1, 3, 3, c], c, 3, 9), self._bias(c)], [y],
                       options=(2, [(0, "byte", SAME), (1, "int32", stride), (2, "int32", stride), (3, "int32", 1), (4, "byte", act)]))
        self.cur, self.shape = y, [n, oh, ow, c]

    def pool_fc(self, classes):
        n, h, w, c = self.shape
        p = self.m.tensor(self._name("pool"), [n, 1, 1, c], "float32")
        self.m.builtin(1, [self.cur], [p], options=(5, [(0, "byte", VALID), (1, "int32", w), (2, "int32", h), (3, "int32", w), (4, "int32", h)]))
        y = self.m.tensor("logits", [n, classes], "float32")
        self.m.builtin(9, [p, self._weights([classes, c], classes, 0, c), self._bias(classes)], [y])
        self.cur = y

    def finish(self):
        return self.m.finish([self.x], [self.cur])


def mobilenet_v1(rng, width, size):
    net = Net(rng, [1, size, size, 3])
    ch = lambda c: max(8, int(c * width))  # noqa: E731
    net.conv(ch(32), 3, 2)
    for c, s in [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]:
        net.depthwise(s)
        net.conv(ch(c), 1, 1)
    net.pool_fc(1000)
    return net.finish()


def kws_cnn(rng):
    net = Net(rng, [1, 49, 40, 1])
    net.conv(64, 3, 2)
    net.conv(64, 3, 1)
    for _ in range(4):
        net.depthwise(1)
        net.conv(64, 1, 1)
    net.pool_fc(12)
    return net.finish()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True, help="output folder (models go to OUT/tflite-micro/)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    out = os.path.join(a.out, "tflite-micro")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    for name, data in [("mobilenet_v1_hybrid.tflite", mobilenet_v1(rng, 1.0, 224)),
                       ("mobilenet_v1_025_hybrid.tflite", mobilenet_v1(rng, 0.25, 128)),
                       ("kws_cnn_hybrid.tflite", kws_cnn(rng))]:
        path = os.path.join(out, name)
        with open(path, "wb") as f:
            f.write(data)
        print(f"wrote {path} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
