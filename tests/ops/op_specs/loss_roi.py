"""Cases for NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss and RoiAlign.

Losses: ranks 2 to 5, int32 and int64 targets, every reduction, with and without class weights
and ignore_index (including an ignore_index outside [0, C) and a batch where every target is
ignored), float and double. The must-fail cases name what a good error has to mention."""
import numpy as np

from .common import BadCase, Case, data, nonzero_shape, spec


def _loss_inputs(rng, rank, dt, ttype, ignore=None):
    s = nonzero_shape(rng, rank, 1, 4)
    c = s[1]
    x = data(rng, s, dt, -3, 3)
    t = rng.integers(0, c, size=(s[0],) + s[2:]).astype(ttype)
    if ignore is not None:
        t[rng.random(t.shape) < 0.3] = ignore
    return x, t, c


def _losses(rng, op, outputs):
    for trial in range(24):
        rank = 2 + trial % 4
        dt = np.float64 if trial % 7 == 3 else np.float32
        ttype = np.int32 if trial % 3 == 1 else np.int64
        reduction = ("mean", "sum", "none")[trial % 3]
        ignore = (None, 1, -1, 100)[(trial // 3) % 4]
        x, t, c = _loss_inputs(rng, rank, dt, ttype, ignore if ignore is not None and (ignore < c or ignore >= 100 or ignore < 0) else None)
        attrs = {"reduction": reduction}
        if ignore is not None:
            attrs["ignore_index"] = ignore
        inputs = [x, t]
        if trial % 2:
            inputs.append(data(rng, (c,), dt, 0.1, 2.0))
        yield Case(inputs, attrs=attrs, opset=13, outputs=outputs(trial))
    # every target ignored: the mean divides 0 by 0
    x = data(rng, (3, 4), np.float32)
    yield Case([x, np.full((3,), 2, np.int64)], attrs={"ignore_index": 2, "reduction": "sum"}, opset=13)
    # a spatial batch as a segmentation model's loss has it
    x = data(rng, (2, 5, 6, 7), np.float32)
    yield Case([x, rng.integers(0, 5, size=(2, 6, 7)).astype(np.int64)], attrs={"reduction": "mean"}, opset=13, outputs=outputs(1))
    yield BadCase([x, rng.integers(0, 5, size=(2, 6, 6)).astype(np.int64)], opset=13, error="target must be")
    yield BadCase([data(rng, (3, 4)), np.array([0, 4, 1], np.int64)], opset=13, error="target 4")
    # the lowest int64 is a target like any other when no ignore_index is given
    yield BadCase([data(rng, (3, 4)), np.array([0, np.iinfo(np.int64).min, 1], np.int64)], opset=13, error="target -9223372036854775808")
    yield BadCase([data(rng, (3, 4)), np.array([0, 1, 1], np.int64), data(rng, (3,))], opset=13, error="weight must be [4]")
    yield BadCase([data(rng, (3, 4)), np.array([0, 1, 1], np.int64)], attrs={"reduction": "avg"}, opset=13, error="reduction")
    yield BadCase([data(rng, (4,)), np.array([0], np.int64)], opset=13, error="rank 2")


@spec("NegativeLogLikelihoodLoss")
def nll_loss(rng, op):
    yield from _losses(rng, op, lambda trial: 1)


@spec("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(rng, op):
    yield from _losses(rng, op, lambda trial: 2 if trial % 2 == 0 else 1)


def _rois(rng, r, h, w, scale, inverted=True):
    """Regions in input coordinates: inside the image, partly outside, tiny and inverted (ONNX
    Runtime fails on an inverted region whose sample grid is adaptive: its count is negative)."""
    out = []
    for k in range(r):
        x1, y1 = rng.uniform(-2, w / scale), rng.uniform(-2, h / scale)
        bw, bh = rng.uniform(0.2, w / scale), rng.uniform(0.2, h / scale)
        if inverted and k % 5 == 4:
            bw = -bw  # inverted: no samples in half_pixel mode, one pixel wide in output_half_pixel
        out.append([x1, y1, x1 + bw, y1 + bh])
    return np.array(out, np.float32).reshape(r, 4)


@spec("RoiAlign")
def roi_align(rng, op):
    for trial in range(20):
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        h, w = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        scale = (1.0, 0.5, 0.25)[trial % 3]
        r = int(rng.integers(0 if trial == 7 else 1, 6))
        dt = np.float64 if trial % 6 == 5 else np.float32
        x = data(rng, (n, c, h, w), dt)
        rois = _rois(rng, r, h, w, scale, inverted=trial % 3 != 0).astype(dt)
        bi = rng.integers(0, n, size=(r,)).astype(np.int64)
        attrs = {"output_height": int(rng.integers(1, 4)), "output_width": int(rng.integers(1, 4)),
                 "sampling_ratio": (0, 2, 1)[trial % 3], "spatial_scale": scale, "mode": ("avg", "max")[trial % 2]}
        opset = 10 if trial % 4 == 3 else 16
        if opset == 16 and trial % 4 != 0:
            attrs["coordinate_transformation_mode"] = ("half_pixel", "output_half_pixel")[trial % 2]
        yield Case([x, rois, bi], attrs=attrs, opset=opset, const={1, 2} if trial % 3 == 0 else set())
    # a detection head's shape: many regions over a feature map at stride 16
    x = data(rng, (1, 8, 14, 14))
    rois = _rois(rng, 12, 14, 14, 0.0625)
    yield Case([x, rois, np.zeros(12, np.int64)], attrs={"output_height": 7, "output_width": 7, "spatial_scale": 0.0625,
                                                         "sampling_ratio": 2}, opset=16)
    x = data(rng, (2, 2, 5, 5))
    good = np.array([[0, 0, 3, 3]], np.float32)
    yield BadCase([x, good, np.array([2], np.int64)], opset=16, error="batch index 2")
    yield BadCase([x, np.array([[0, 0, np.nan, 3]], np.float32), np.array([0], np.int64)], opset=16, error="not finite")
    yield BadCase([x, np.array([[0, 0, 1e30, 1e30]], np.float32), np.array([0], np.int64)], opset=16, error="samples per output bin")
    yield BadCase([x, np.array([[0, 0, 2e3, 2e3]], np.float32), np.array([0], np.int64)], opset=16, error="samples per output bin")
    yield BadCase([x, np.array([0, 0, 3, 3], np.float32), np.array([0], np.int64)], opset=16, error="rois must be")
    yield BadCase([x, good, np.array([0], np.int64)], attrs={"mode": "sum"}, opset=16, error="mode")
    yield BadCase([x, good, np.array([0], np.int64)], attrs={"sampling_ratio": -1}, opset=16, error="sampling_ratio")
