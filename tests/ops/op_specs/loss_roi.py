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
    yield BadCase([data(rng, (3, 4)), np.array([0, 1, 1], np.int64), data(rng, (3,))], opset=13, error="weight must be [4]")
    yield BadCase([data(rng, (3, 4)), np.array([0, 1, 1], np.int64)], attrs={"reduction": "avg"}, opset=13, error="reduction")
    yield BadCase([data(rng, (4,)), np.array([0], np.int64)], opset=13, error="rank 2")


@spec("NegativeLogLikelihoodLoss")
def nll_loss(rng, op):
    yield from _losses(rng, op, lambda trial: 1)


@spec("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(rng, op):
    yield from _losses(rng, op, lambda trial: 2 if trial % 2 == 0 else 1)
