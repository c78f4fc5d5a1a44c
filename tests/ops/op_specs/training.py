"""Cases for the optimizers of the training domain: Adagrad, Momentum and Adam.

ONNX Runtime's standard build has no kernels for them, so the reference is the onnx package's
evaluator. One to three weights per node, float and double, T = 0 (the first update, where
Momentum and Adam skip their adjustments) and later updates, every attribute moved off its
default. The must-fail cases name what a good error has to mention."""
import numpy as np

from .common import BadCase, Case, data, nonzero_shape, positive, spec

DOMAIN = "ai.onnx.preview.training"


def _groups(rng, weights, states, dt):
    """R, T and the groups X, G, then `states` state groups, one tensor per weight."""
    shapes = [nonzero_shape(rng, int(rng.integers(0, 4)), 1, 4) for _ in range(weights)]
    xs = [data(rng, s, dt) for s in shapes]
    gs = [data(rng, s, dt) for s in shapes]
    st = [[positive(rng, s, dt) for s in shapes] for _ in range(states)]
    return xs + gs + [t for group in st for t in group]


def _cases(rng, op, states, attr_sets):
    for trial in range(12):
        weights = 1 + trial % 3
        # double with one weight: the reference's Adam turns the outputs of several into float32
        dt = np.float64 if trial in (3, 9) else np.float32
        r = np.array(rng.uniform(0.01, 0.5), np.float32)
        t = np.array(0 if trial % 3 == 0 else int(rng.integers(1, 50)), np.int64)
        attrs = attr_sets[trial % len(attr_sets)]
        yield Case([r, t] + _groups(rng, weights, states, dt), attrs=attrs, outputs=(1 + states) * weights,
                   domain=DOMAIN, reference="onnx", const={0, 1} if trial % 2 else set())


@spec("Adagrad")
def adagrad(rng, op):
    yield from _cases(rng, op, 1, [{}, {"decay_factor": 0.1, "epsilon": 1e-3, "norm_coefficient": 0.01}, {"norm_coefficient": 0.5}])
    ins = [np.array(0.1, np.float32), np.array(1, np.int64), data(rng, (3,)), data(rng, (3,)), data(rng, (4,))]
    yield BadCase(ins, outputs=2, domain=DOMAIN, error="H[0]")
    yield BadCase(ins[:4], outputs=2, domain=DOMAIN, error="groups")
    ins = [np.array([0.1, 0.2], np.float32), np.array(1, np.int64), data(rng, (3,)), data(rng, (3,)), data(rng, (3,))]
    yield BadCase(ins, outputs=2, domain=DOMAIN, error="R must be a scalar")


@spec("Momentum")
def momentum(rng, op):
    yield from _cases(rng, op, 1, [{"alpha": 0.9, "beta": 0.1, "mode": "standard", "norm_coefficient": 0.0},
                                   {"alpha": 0.5, "beta": 0.7, "mode": "nesterov", "norm_coefficient": 0.01},
                                   {"alpha": 0.95, "beta": 1.0, "mode": "nesterov", "norm_coefficient": 0.2}])
    ins = [np.array(0.1, np.float32), np.array(1, np.int64), data(rng, (3,)), data(rng, (3,)), data(rng, (3,))]
    yield BadCase(ins, attrs={"alpha": 0.9, "beta": 0.1, "mode": "heavy-ball", "norm_coefficient": 0.0}, outputs=2, domain=DOMAIN,
                  error="mode")
    yield BadCase(ins, attrs={"alpha": 0.9, "beta": 0.1, "mode": "standard", "norm_coefficient": 0.0}, outputs=1, domain=DOMAIN,
                  error="2 outputs")


@spec("Adam")
def adam(rng, op):
    yield from _cases(rng, op, 2, [{}, {"alpha": 0.8, "beta": 0.9, "epsilon": 1e-4, "norm_coefficient": 0.01},
                                   {"alpha": 0.95, "beta": 0.85, "norm_coefficient": 0.001, "norm_coefficient_post": 0.02}])
    ins = [np.array(0.1, np.float32), np.array(1, np.int64), data(rng, (3,)), data(rng, (3,)), data(rng, (3,)),
           data(rng, (3,), np.float64)]
    yield BadCase(ins, outputs=3, domain=DOMAIN, error="H[0]")
