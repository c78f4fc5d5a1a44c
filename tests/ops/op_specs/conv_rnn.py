"""Convolutions, Gemm/MatMul, recurrent layers and Resize: 1-D/2-D/3-D windows with groups,
strides, dilations, asymmetric and automatic padding; transposes, C broadcasting and batch
broadcasting; every RNN/GRU/LSTM input and attribute; every Resize mode and coordinate
transformation.

Float data is drawn on a grid of quarters (see q()) wherever the op is a sum of products, so that
the results are exact in float32 whatever the summation order; cases that may run Winograd
(3x3, stride 1, 2-D) or go through nonlinearities use data away from cancellation instead.
"""
import numpy as np

from .common import BadCase, Case, data, i64, positive, spec

F32 = np.float32


def q(rng, shp, lo=-2.0, hi=2.0, dtype=F32):
    """Multiples of 1/4 in [lo, hi]: products and their sums are exact in float32."""
    return np.asarray(np.round(rng.uniform(lo, hi, size=shp) * 4) / 4, dtype=dtype)


def qpos(rng, shp, dtype=F32):
    return q(rng, shp, 0.25, 2.0, dtype)


def f32(values):
    return np.array(values, dtype=F32)


# --------------------------------------------------------------------------------------------
# Conv
# --------------------------------------------------------------------------------------------

@spec("Conv")
def conv(rng, op):
    # (X shape, W shape, attrs, bias: None | "const" | "input", W const, positive data)
    configs = [
        # 1-D: stride 2, asymmetric pads, runtime bias
        ((2, 3, 7), (4, 3, 3), {"strides": [2], "pads": [1, 0]}, "input", True, False),
        # 1-D: dilation, SAME_UPPER, runtime weights, no bias (ORT has no SAME with dilation)
        ((1, 2, 8), (3, 2, 3), {"auto_pad": "SAME_UPPER"}, None, False, False),
        ((1, 2, 8), (3, 2, 3), {"dilations": [3], "pads": [2, 3]}, None, False, False),
        # 1-D: SAME_LOWER with an even kernel and stride 2 (odd total padding)
        ((2, 2, 7), (2, 2, 4), {"strides": [2], "auto_pad": "SAME_LOWER"}, "const", True, False),
        # 2-D 3x3 stride 1 (the Winograd-eligible shape), const bias
        ((1, 3, 6, 5), (4, 3, 3, 3), {"pads": [1, 1, 1, 1]}, "const", True, True),
        # 2-D groups=2, strides, asymmetric pads
        ((2, 4, 5, 6), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [0, 1, 2, 0]}, "const", True, False),
        # 2-D depthwise (group == channels), runtime bias
        ((1, 4, 6, 6), (4, 1, 3, 3), {"group": 4, "pads": [1, 0, 0, 1]}, "input", True, False),
        # 2-D depthwise with channel multiplier 2, dilations
        ((1, 3, 7, 5), (6, 1, 3, 3), {"group": 3, "dilations": [2, 1], "pads": [2, 1, 2, 1]}, "const", True, False),
        # 2-D depthwise, runtime weights and bias (the reference loops)
        ((2, 3, 5, 5), (6, 1, 2, 3), {"group": 3, "strides": [1, 2]}, "input", False, False),
        # 2-D SAME_LOWER / SAME_UPPER, stride 2, even kernel
        ((1, 2, 7, 6), (3, 2, 2, 4), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}, None, True, False),
        ((1, 2, 7, 6), (3, 2, 2, 4), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, None, True, False),
        # 2-D SAME_UPPER, stride (1, 3), odd kernel, runtime weights
        ((1, 2, 6, 7), (2, 2, 3, 3), {"strides": [1, 3], "auto_pad": "SAME_UPPER"}, "const", False, False),
        # 2-D VALID, stride 2, dilation 2, kernel_shape given
        ((1, 3, 9, 8), (2, 3, 3, 2), {"auto_pad": "VALID", "strides": [2, 2], "dilations": [2, 1], "kernel_shape": [3, 2]},
         "const", True, False),
        # 2-D 1x1, stride 2
        ((2, 5, 5, 4), (3, 5, 1, 1), {"strides": [2, 2]}, "const", True, False),
        # 3-D with asymmetric pads and strides
        ((1, 2, 4, 5, 3), (3, 2, 2, 3, 2), {"pads": [1, 0, 1, 0, 1, 0], "strides": [1, 2, 1]}, "const", True, False),
        # 3-D groups=2, SAME_UPPER, runtime weights
        ((2, 4, 3, 4, 4), (4, 2, 2, 2, 2), {"group": 2, "auto_pad": "SAME_UPPER"}, "input", False, False),
        # 3-D depthwise, dilations
        ((1, 2, 5, 4, 4), (2, 1, 2, 2, 2), {"group": 2, "dilations": [2, 1, 2]}, None, True, False),
        # batch 0
        ((0, 3, 5, 5), (2, 3, 3, 3), {"pads": [1, 1, 1, 1]}, "const", True, True),
        ((0, 2, 6), (2, 2, 2), {}, None, False, False),
    ]
    for xs, ws, attrs, bias, wconst, pos in configs:
        gen = qpos if pos else q
        x, w = gen(rng, xs), gen(rng, ws)
        inputs, const = [x, w], ({1} if wconst else set())
        if bias is not None:
            inputs.append(gen(rng, (ws[0],)))
            if bias == "const":
                const.add(2)
        yield Case(inputs, attrs=attrs, const=const)
    # (ORT has no float64 Conv and refuses a size-0 spatial dim: neither is covered)

    x4, w4 = q(rng, (1, 4, 5, 5)), q(rng, (4, 2, 3, 3))
    yield BadCase([x4, w4, q(rng, (3,))], attrs={"group": 2}, const={1, 2}, error="B")  # bias too short
    yield BadCase([x4, w4, q(rng, (4, 1))], attrs={"group": 2}, const={1}, error="B")  # bias not 1-D
    yield BadCase([q(rng, (1, 3, 5, 5)), q(rng, (4, 1, 3, 3))], attrs={"group": 2}, const={1}, error="group")  # C % group
    yield BadCase([x4, q(rng, (3, 2, 3, 3))], attrs={"group": 2}, const={1}, error="group")  # M % group
    yield BadCase([x4, w4], attrs={"group": 0}, const={1}, error="group")
    yield BadCase([x4, w4], attrs={"group": 2, "kernel_shape": [3, 2]}, const={1}, error="kernel_shape")
    yield BadCase([x4, w4], attrs={"group": 2, "strides": [0, 1]}, const={1}, error="strides")
    yield BadCase([x4, w4], attrs={"group": 2, "dilations": [1, 0]}, const={1}, error="dilation")
    yield BadCase([x4, w4], attrs={"group": 2, "pads": [1, 1]}, const={1}, error="pads")
    yield BadCase([x4, w4], attrs={"group": 2, "strides": [1, 1, 1]}, const={1}, error="strides")
    yield BadCase([x4, w4], attrs={"group": 2, "auto_pad": "SAME"}, const={1}, error="auto_pad")
    yield BadCase([x4, q(rng, (4, 2, 3))], attrs={"group": 2}, const={1}, error="W")  # W rank differs from X
    yield BadCase([q(rng, (1, 4, 2, 2)), w4], attrs={"group": 2}, const={1}, error="kernel")  # kernel > input
    yield BadCase([q(rng, (1, 4, 5, 5)), q(rng, (4, 4, 3, 3), dtype=np.float64)], error="type")


# --------------------------------------------------------------------------------------------
# ConvTranspose
# --------------------------------------------------------------------------------------------

@spec("ConvTranspose")
def conv_transpose(rng, op):
    # (X shape, W shape [C, M/group, k...], attrs, bias, W const)
    configs = [
        # 1-D stride 2 kernel 3, const bias
        ((1, 2, 4), (2, 3, 3), {"strides": [2]}, "const", True),
        # 1-D stride 2 kernel 2 with output_padding
        ((2, 3, 5), (3, 2, 2), {"strides": [2], "output_padding": [1]}, None, False),
        # 2-D stride 2 kernel 2
        ((1, 3, 3, 4), (3, 2, 2, 2), {"strides": [2, 2]}, "input", True),
        # 2-D stride 2 kernel 3, pads and output_padding
        ((1, 2, 3, 3), (2, 3, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, "const", True),
        # 2-D asymmetric pads, stride (2, 1)
        ((2, 2, 3, 4), (2, 2, 3, 2), {"strides": [2, 1], "pads": [0, 1, 1, 0]}, None, False),
        # 2-D groups=2 (M = 6), runtime bias
        ((1, 4, 3, 3), (4, 3, 3, 3), {"group": 2, "strides": [2, 2]}, "input", True),
        # 2-D depthwise (group == channels)
        ((2, 3, 4, 4), (3, 1, 3, 3), {"group": 3, "strides": [2, 1], "pads": [1, 0, 1, 0]}, "const", False),
        # 2-D output_shape (pads derived), stride 2 kernel 3
        ((1, 2, 3, 4), (2, 2, 3, 3), {"strides": [2, 2], "output_shape": [8, 9]}, "const", True),
        # 2-D output_shape with SAME_UPPER (odd total padding)
        ((1, 2, 3, 3), (2, 2, 3, 3), {"strides": [2, 2], "output_shape": [6, 6], "auto_pad": "SAME_UPPER"}, None, True),
        # 2-D SAME_UPPER / SAME_LOWER, stride 2 kernel 3: odd total padding
        ((1, 2, 3, 4), (2, 3, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, None, True),
        ((1, 2, 3, 4), (2, 3, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}, "const", True),
        # 2-D VALID with dilations
        ((1, 2, 3, 3), (2, 2, 2, 3), {"auto_pad": "VALID", "dilations": [2, 1], "strides": [1, 2]}, None, False),
        # 2-D kernel_shape given
        ((1, 1, 4, 3), (1, 2, 2, 2), {"kernel_shape": [2, 2], "strides": [2, 2]}, "const", True),
        # 3-D strides, pads
        ((1, 2, 2, 3, 2), (2, 2, 2, 2, 2), {"strides": [2, 1, 2], "pads": [0, 1, 1, 0, 0, 1]}, "const", True),
        # 3-D groups=2, output_padding
        ((1, 4, 2, 2, 2), (4, 1, 3, 2, 2), {"group": 2, "strides": [2, 2, 2], "output_padding": [1, 0, 1]}, None, False),
        # batch 0
        ((0, 2, 3, 3), (2, 2, 2, 2), {"strides": [2, 2]}, "const", True),
    ]
    for xs, ws, attrs, bias, wconst in configs:
        x, w = q(rng, xs), q(rng, ws)
        inputs, const = [x, w], ({1} if wconst else set())
        if bias is not None:
            inputs.append(q(rng, (ws[1] * attrs.get("group", 1),)))
            if bias == "const":
                const.add(2)
        yield Case(inputs, attrs=attrs, const=const)

    x, w = q(rng, (1, 4, 3, 3)), q(rng, (4, 2, 3, 3))
    yield BadCase([x, w, q(rng, (3,))], attrs={"group": 2}, const={1, 2}, error="B")  # M = 4
    yield BadCase([x, q(rng, (3, 2, 3, 3))], const={1}, error="W")  # C != W[0]
    yield BadCase([q(rng, (1, 3, 3, 3)), q(rng, (3, 1, 3, 3))], attrs={"group": 2}, const={1}, error="group")  # C % group
    yield BadCase([x, w], attrs={"kernel_shape": [2, 2]}, const={1}, error="kernel_shape")
    yield BadCase([x, w], attrs={"strides": [0, 2]}, const={1}, error="strides")
    yield BadCase([x, w], attrs={"dilations": [0, 1]}, const={1}, error="dilation")
    yield BadCase([x, w], attrs={"pads": [1, 1, 1]}, const={1}, error="pads")
    yield BadCase([x, w], attrs={"strides": [2, 2], "output_shape": [7]}, const={1}, error="output_shape")
    yield BadCase([x, w], attrs={"strides": [2, 2], "output_padding": [1]}, const={1}, error="output_padding")
    yield BadCase([x, w], attrs={"strides": [2, 2], "output_padding": [3, 3]}, const={1}, error="output_padding")
    yield BadCase([x, w], attrs={"auto_pad": "SAME"}, const={1}, error="auto_pad")


# --------------------------------------------------------------------------------------------
# Gemm
# --------------------------------------------------------------------------------------------

@spec("Gemm")
def gemm(rng, op):
    M, K, N = 3, 4, 5
    # (transA, transB, alpha, beta, C shape or None, C const, B const)
    configs = [
        (0, 0, None, None, (N,), True, True),        # oneDNN bias path
        (1, 0, 0.5, 2.0, (M, N), False, False),      # full C, runtime
        (0, 1, -1.5, None, (M, 1), True, False),     # column C
        (1, 1, None, -0.5, (), False, True),         # scalar C
        (0, 0, 2.0, None, None, None, True),         # C omitted
        (0, 1, 0.5, None, (1, N), True, True),       # row C, alpha != 1 on the bias path
        (0, 0, None, None, (1,), True, False),       # one-element C
        (1, 0, 1.5, 0.25, (1, 1), False, True),      # [1, 1] C
        (0, 0, 0.25, None, (N,), True, False),       # row C, runtime B
        (0, 0, None, 0.0, (M, N), True, True),       # beta 0
        (1, 1, -2.0, 1.0, (1, N), False, False),     # runtime row C
    ]
    for ta, tb, alpha, beta, cs, cconst, bconst in configs:
        a = q(rng, (K, M) if ta else (M, K))
        b = q(rng, (N, K) if tb else (K, N))
        attrs = {}
        if ta:
            attrs["transA"] = 1
        if tb:
            attrs["transB"] = 1
        if alpha is not None:
            attrs["alpha"] = alpha
        if beta is not None:
            attrs["beta"] = beta
        inputs, const = [a, b], ({1} if bconst else set())
        if cs is not None:
            inputs.append(q(rng, cs))
            if cconst:
                const.add(2)
        yield Case(inputs, attrs=attrs, const=const)
    # larger, on the oneDNN path (constant B and bias)
    yield Case([q(rng, (16, 32)), q(rng, (24, 32)), q(rng, (24,))], attrs={"transB": 1, "alpha": 1.5}, const={1, 2})
    # float64
    yield Case([q(rng, (3, 4), dtype=np.float64), q(rng, (4, 2), dtype=np.float64), q(rng, (3, 1), dtype=np.float64)],
               attrs={"alpha": 0.5, "beta": 2.0})
    # M = 0, N = 0, K = 0
    yield Case([q(rng, (0, 4)), q(rng, (4, 5)), q(rng, (5,))], const={1, 2})  # the oneDNN bias path
    yield Case([q(rng, (0, 4)), q(rng, (4, 5)), q(rng, (1, 5))])  # the reference loops
    yield Case([q(rng, (3, 4)), q(rng, (4, 0))])
    yield Case([q(rng, (3, 0)), q(rng, (0, 5)), q(rng, (3, 5))], attrs={"beta": 0.5})

    a, b = q(rng, (3, 4)), q(rng, (4, 5))
    yield BadCase([a, b, q(rng, (4, 5))], error="C")      # rows differ
    yield BadCase([a, b, q(rng, (3,))], const={2}, error="C")  # a 1-D C must match N
    yield BadCase([a, b, q(rng, (2, 3, 5))], error="C")   # C of rank 3
    yield BadCase([a, q(rng, (5, 6))], const={1}, error="[3,4]")  # inner dims differ
    yield BadCase([a, b], attrs={"transB": 1}, error="[4,5]")     # inner dims differ after the transpose
    yield BadCase([q(rng, (2, 3, 4)), b], error="A")       # A must be 2-D
    yield BadCase([a, q(rng, (4, 5), dtype=np.float64)], error="type")


# --------------------------------------------------------------------------------------------
# MatMul
# --------------------------------------------------------------------------------------------

@spec("MatMul")
def matmul(rng, op):
    pairs = [
        ((3, 4), (4, 5), set()),
        ((4,), (2, 4, 3), set()),        # 1-D x N-D
        ((2, 3, 4), (4,), set()),        # N-D x 1-D
        ((4,), (4,), set()),             # 1-D x 1-D: a scalar
        ((4,), (4, 2), {1}),             # 1-D x 2-D, constant B
        ((2, 1, 3, 4), (5, 4, 2), set()),  # batch broadcast
        ((1, 3, 4), (2, 4, 5), {1}),
        ((2, 3, 1, 2, 3), (3, 1, 3, 2), set()),  # rank 5 broadcast
        ((3, 0), (0, 4), set()),         # K = 0: zeros
        ((2, 3, 0), (0, 2), {1}),
        ((0, 3, 4), (4, 2), set()),      # size-0 batch
        ((2, 0, 4), (4, 3), set()),      # M = 0
        ((3, 4), (4, 0), set()),         # N = 0
        ((2, 3, 16, 32), (32, 40), {1}),  # oneDNN path: constant 2-D B folded into M
        ((2, 1, 16, 32), (3, 32, 40), set()),  # oneDNN path: batch broadcast, runtime B
        ((64, 48), (48, 32), set()),     # oneDNN path: plain 2-D
    ]
    for sa, sb, const in pairs:
        yield Case([q(rng, sa), q(rng, sb)], const=const)
    yield Case([q(rng, (2, 3, 4), dtype=np.float64), q(rng, (4, 2), dtype=np.float64)])
    for dt in (np.int32, np.int64):
        yield Case([data(rng, (2, 3, 4), dt, -9, 9), data(rng, (4, 5), dt, -9, 9)])
        yield Case([data(rng, (4,), dt, -9, 9), data(rng, (3, 4, 2), dt, -9, 9)], const={1})

    yield BadCase([q(rng, (3, 7)), q(rng, (5, 2))], error="[3,7]")  # inner dims differ
    yield BadCase([q(rng, (7,)), q(rng, (2, 5, 3))], error="[7]")
    yield BadCase([q(rng, (2, 3, 4)), q(rng, (3, 4, 5))], error="broadcast")  # batch dims
    yield BadCase([q(rng, ()), q(rng, (3,))], error="rank")
    yield BadCase([q(rng, (3, 4)), data(rng, (4, 5), np.int32, -3, 3)], error="type")


# --------------------------------------------------------------------------------------------
# RNN, GRU, LSTM
# --------------------------------------------------------------------------------------------

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
NOUT = {"RNN": 2, "GRU": 2, "LSTM": 3}


def rnn_inputs(rng, op, seq, batch, inp, hidden, dirs, layout=0, bias=True, lens=None, h0=False, c0=False, p=False):
    """The inputs (trailing omitted ones dropped) of an RNN/GRU/LSTM node."""
    g = GATES[op] * hidden
    scale = 1.0 / np.sqrt(max(inp, hidden))
    x = data(rng, (batch, seq, inp) if layout else (seq, batch, inp), F32, -1.5, 1.5)
    w = data(rng, (dirs, g, inp), F32, -2 * scale, 2 * scale)
    r = data(rng, (dirs, g, hidden), F32, -2 * scale, 2 * scale)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    ins = [x, w, r,
           data(rng, (dirs, 2 * g), F32, -0.5, 0.5) if bias else None,
           np.asarray(lens, dtype=np.int32) if lens is not None else None,
           data(rng, state, F32, -1, 1) if h0 else None]
    if op == "LSTM":
        ins += [data(rng, state, F32, -1, 1) if c0 else None, data(rng, (dirs, 3 * hidden), F32, -0.5, 0.5) if p else None]
    while ins[-1] is None:
        ins.pop()
    return ins


DIRS = {"forward": 1, "reverse": 1, "bidirectional": 2}


@spec("RNN", "GRU", "LSTM")
def recurrent(rng, op):
    # (direction, layout, seq, batch, input, hidden, bias, lens, h0, c0, P, extra attrs, W/R const)
    acts1 = {"RNN": ["Relu"], "GRU": ["HardSigmoid", "Softsign"], "LSTM": ["HardSigmoid", "Tanh", "Softsign"]}
    acts2 = {
        "RNN": (["LeakyRelu", "ScaledTanh"], [0.2, 0.8], [1.3]),
        "GRU": (["Sigmoid", "Tanh", "HardSigmoid", "LeakyRelu"], [0.3, 0.1], [0.6]),
        "LSTM": (["Sigmoid", "Elu", "Softplus", "HardSigmoid", "Affine", "ThresholdedRelu"], [1.2, 0.25, 0.5, 0.3], [0.45, 0.1]),
    }
    configs = [
        ("forward", 0, 4, 2, 3, 3, False, None, False, False, False, {}, False),
        ("reverse", 0, 3, 3, 2, 2, True, None, False, False, False, {}, True),
        ("bidirectional", 0, 4, 2, 3, 4, True, [4, 2], True, True, True, {}, False),
        ("forward", 0, 5, 3, 2, 5, True, [3, 5, 1], True, True, False, {}, True),
        ("reverse", 0, 4, 3, 3, 2, True, [2, 4, 3], False, True, True, {}, False),
        # layout 1 is not covered: ONNX Runtime's CPU kernels refuse it ("Batchwise recurrent
        # operations (layout == 1) are not supported"), so there is no reference.
        ("bidirectional", 0, 3, 2, 3, 3, True, None, True, True, True, {}, False),
        ("forward", 0, 4, 3, 2, 4, False, [4, 1, 3], True, False, False, {}, True),
        ("reverse", 0, 2, 2, 4, 2, True, None, True, True, False, {}, False),
        ("forward", 0, 3, 4, 2, 1, True, None, True, True, True, {}, False),        # hidden 1
        ("bidirectional", 0, 2, 2, 3, 8, True, None, False, False, False, {}, True),  # hidden 8
        ("forward", 0, 4, 2, 3, 3, True, None, True, True, False, {"clip": 0.4}, False),
        ("bidirectional", 0, 3, 2, 2, 3, True, [3, 1], True, True, True, {"clip": 1.5}, False),
        ("forward", 0, 3, 2, 3, 3, True, None, True, True, True, {"activations": acts1[op]}, False),
        ("bidirectional", 0, 3, 2, 2, 3, True, None, True, True, True,
         {"activations": acts2[op][0], "activation_alpha": acts2[op][1], "activation_beta": acts2[op][2]}, False),
        ("forward", 0, 1, 1, 1, 2, True, None, False, False, False, {}, False),       # one step, batch 1
    ]
    for (direction, layout, seq, batch, inp, hidden, bias, lens, h0, c0, p, extra, wconst) in configs:
        dirs = DIRS[direction]
        ins = rnn_inputs(rng, op, seq, batch, inp, hidden, dirs, layout, bias, lens, h0, c0, p)
        attrs = {"hidden_size": hidden, "direction": direction, **extra}
        if layout:
            attrs["layout"] = 1
        yield Case(ins, attrs=attrs, outputs=NOUT[op], const={1, 2} if wconst else set())
    if op == "GRU":
        for lbr, direction, layout in ((1, "forward", 0), (1, "bidirectional", 0), (1, "reverse", 0), (0, "bidirectional", 0)):
            ins = rnn_inputs(rng, op, 4, 3, 3, 3, DIRS[direction], layout, True, [4, 2, 3], True)
            attrs = {"hidden_size": 3, "direction": direction, "linear_before_reset": lbr}
            if layout:
                attrs["layout"] = 1
            yield Case(ins, attrs=attrs, outputs=2)
        ins = rnn_inputs(rng, op, 3, 2, 2, 4, 1, 0, True, None, True)
        yield Case(ins, attrs={"hidden_size": 4, "linear_before_reset": 1, "clip": 0.5}, outputs=2)
    if op == "LSTM":
        ins = rnn_inputs(rng, op, 4, 2, 3, 3, 1, 0, True, [4, 3], True, True, True)
        yield Case(ins, attrs={"hidden_size": 3, "input_forget": 1}, outputs=3)
        ins = rnn_inputs(rng, op, 3, 2, 3, 2, 2, 0, True, None, True, True)
        yield Case(ins, attrs={"hidden_size": 2, "direction": "bidirectional"}, outputs=1)  # Y alone
    # RNN default activations with the alpha list holding only what they take
    if op == "RNN":
        ins = rnn_inputs(rng, op, 3, 2, 3, 3, 2, 0, True, None, True)
        yield Case(ins, attrs={"hidden_size": 3, "direction": "bidirectional", "activations": ["Affine", "ThresholdedRelu"],
                               "activation_alpha": [0.5, 0.1], "activation_beta": [0.25]}, outputs=2)
        ins = rnn_inputs(rng, op, 3, 2, 2, 3, 1, 0, True, None, True)
        yield Case(ins, attrs={"hidden_size": 3, "activations": ["Softplus"]}, outputs=2)

    # must fail: every case derived from a valid forward config (seq 3, batch 2, input 3, hidden 4)
    def base(**kw):
        args = dict(seq=3, batch=2, inp=3, hidden=4, dirs=1, layout=0, bias=True, lens=[3, 2], h0=True, c0=True, p=True)
        args.update(kw)
        return rnn_inputs(rng, op, **args)

    n = NOUT[op]
    attrs = {"hidden_size": 4}
    ins = base()
    ins[1] = data(rng, (1, GATES[op] * 5, 3))  # W built for hidden 5
    yield BadCase(ins, attrs=attrs, outputs=n, error="hidden_size")
    ins = base()
    ins[1] = data(rng, (1, GATES[op] * 4, 2))  # W of the wrong input size
    yield BadCase(ins, attrs=attrs, outputs=n, error="W")
    ins = base()
    ins[5] = data(rng, (1, 3, 4))  # initial_h of batch 3
    yield BadCase(ins, attrs=attrs, outputs=n, error="initial_h")
    ins = base()
    ins[5] = data(rng, (2, 4))  # initial_h 2-D
    yield BadCase(ins, attrs=attrs, outputs=n, error="initial_h")
    ins = base()
    ins[4] = np.array([3, 2, 1], np.int32)
    yield BadCase(ins, attrs=attrs, outputs=n, error="sequence_lens")
    ins = base()
    ins[4] = np.array([3, 4], np.int32)  # longer than the sequence
    yield BadCase(ins, attrs=attrs, outputs=n, error="sequence_lens")
    yield BadCase(base(), attrs={"hidden_size": 4, "direction": "sideways"}, outputs=n, error="direction")
    bad_acts = {"RNN": ["Swish"], "GRU": ["Sigmoid", "Swish"], "LSTM": ["Sigmoid", "Swish", "Tanh"]}[op]
    yield BadCase(base(), attrs={"hidden_size": 4, "activations": bad_acts}, outputs=n, error="activation")
    yield BadCase(base(), attrs={}, outputs=n, error="hidden_size")
    yield BadCase(base(), attrs={"hidden_size": 0}, outputs=n, error="hidden_size must be positive")
    yield BadCase(base(), attrs={"hidden_size": 4, "clip": -1.0}, outputs=n, error="clip must be positive")
    short = {"RNN": [], "GRU": ["Sigmoid"], "LSTM": ["Sigmoid", "Tanh"]}[op]  # one name too few
    if short:
        yield BadCase(base(), attrs={"hidden_size": 4, "activations": short}, outputs=n, error="per direction")
    yield BadCase(base(), attrs={"hidden_size": 4, "activations": ["Tanh"] * (GATES[op] + 2)}, outputs=n, error="per direction")
    yield BadCase(base(), attrs={"hidden_size": 4, "layout": 2}, outputs=n, error="layout")
    ins = base()
    ins[0] = data(rng, (3, 6))
    yield BadCase(ins, attrs=attrs, outputs=n, error="X")
    if op == "LSTM":
        ins = base()
        ins[6] = data(rng, (1, 2, 3))
        yield BadCase(ins, attrs=attrs, outputs=n, error="initial_c")
        ins = base()
        ins[7] = data(rng, (1, 8))  # P must be [dirs, 3 * hidden]
        yield BadCase(ins, attrs=attrs, outputs=n, error="P ")


# --------------------------------------------------------------------------------------------
# Resize
# --------------------------------------------------------------------------------------------

def resize_case(rng, xs, attrs, scales=None, sizes=None, roi=None, opset=13, const=True, dtype=F32):
    x = positive(rng, xs, dtype, 0.25, 3.0)
    ins = [x, None if roi is None else f32(roi), None if scales is None else f32(scales),
           None if sizes is None else i64(sizes)]
    while ins[-1] is None:
        ins.pop()
    return Case(ins, attrs=attrs, opset=opset, const={1, 2, 3} if const else set())


@spec("Resize")
def resize(rng, op):
    R = resize_case
    # nearest: every nearest_mode
    yield R(rng, (1, 2, 3, 4), {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
            scales=[1, 1, 2, 2])
    yield R(rng, (1, 2, 4, 6), {"mode": "nearest"}, scales=[1, 1, 0.5, 0.5])  # half_pixel, round_prefer_floor
    yield R(rng, (2, 1, 3, 5), {"mode": "nearest", "coordinate_transformation_mode": "align_corners",
                                "nearest_mode": "round_prefer_ceil"}, sizes=[2, 1, 5, 8])
    yield R(rng, (1, 1, 4, 4), {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn",
                                "nearest_mode": "ceil"}, scales=[1, 1, 1.5, 2])
    yield R(rng, (1, 2, 5, 4), {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                                "nearest_mode": "round_prefer_ceil"}, sizes=[1, 2, 3, 7])
    yield R(rng, (2, 3, 4), {"mode": "nearest", "nearest_mode": "floor"}, scales=[1, 1, 2.5])  # 3-D
    yield R(rng, (1, 1, 2, 3, 2), {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                   "nearest_mode": "round_prefer_floor"}, scales=[1, 1, 2, 1.5, 3])  # 5-D
    yield R(rng, (4, 6), {"mode": "nearest", "nearest_mode": "ceil"}, scales=[2, 0.5])  # 2-D, outer dims resized
    # linear
    yield R(rng, (1, 2, 3, 4), {"mode": "linear"}, scales=[1, 1, 2, 2])  # half_pixel
    yield R(rng, (2, 1, 6, 5), {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, sizes=[2, 1, 4, 3])
    yield R(rng, (1, 2, 4, 4), {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
            sizes=[1, 2, 1, 6])
    yield R(rng, (1, 1, 4, 6), {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, scales=[1, 1, 0.5, 1.5])
    yield R(rng, (1, 1, 2, 3, 4), {"mode": "linear"}, scales=[1, 1, 2, 2, 0.5])  # trilinear
    # A fractional scale * length (7.5 -> 7 rows, 1.5 -> 1 row): ONNX's reference and node tests
    # take the unrounded resized length, ONNX Runtime the integer output length; Weft follows ONNX.
    for c in (R(rng, (1, 1, 5, 4), {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
                scales=[1, 1, 1.5, 2]),
              R(rng, (1, 1, 3, 4), {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
                scales=[1, 1, 0.5, 1])):
        c.reference = "onnx"
        yield c
    # cubic
    yield R(rng, (1, 2, 3, 4), {"mode": "cubic"}, scales=[1, 1, 2, 1.5])
    yield R(rng, (1, 1, 6, 5), {"mode": "cubic", "coordinate_transformation_mode": "align_corners", "exclude_outside": 1,
                                "cubic_coeff_a": -0.5}, sizes=[1, 1, 4, 8])
    yield R(rng, (2, 1, 4, 4), {"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}, scales=[1, 1, 0.5, 2])
    yield R(rng, (1, 1, 4, 4), {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel",
                                "exclude_outside": 1}, scales=[1, 1, 1.5, 0.75])
    # tf_crop_and_resize with roi (extrapolated outside it)
    yield R(rng, (1, 1, 4, 5), {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                                "extrapolation_value": 7.5},
            roi=[0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2], sizes=[1, 1, 3, 6])
    yield R(rng, (1, 2, 5, 5), {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize"},
            roi=[0, 0, 0.1, 0.3, 1, 1, 0.7, 0.9], sizes=[1, 2, 4, 3], const=False)
    yield R(rng, (1, 1, 4, 4), {"mode": "cubic", "coordinate_transformation_mode": "tf_crop_and_resize"},
            roi=[0, 0, 0.25, 0.0, 1, 1, 0.75, 1.0], sizes=[1, 1, 5, 3])
    # runtime scales / sizes, size-0 batch
    yield R(rng, (1, 2, 3, 3), {"mode": "linear"}, scales=[1, 1, 2, 3], const=False)
    yield R(rng, (0, 2, 3, 3), {"mode": "nearest"}, scales=[1, 1, 2, 2])
    # opset 18: axes, keep_aspect_ratio_policy
    yield R(rng, (1, 2, 3, 4), {"mode": "linear", "axes": [2, 3]}, scales=[2, 0.5], opset=18)
    yield R(rng, (2, 3, 4), {"mode": "nearest", "axes": [-1]}, sizes=[7], opset=18)
    yield R(rng, (1, 1, 4, 6), {"mode": "nearest", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
            sizes=[6, 6], opset=18)
    yield R(rng, (1, 1, 4, 6), {"mode": "linear", "axes": [3, 2], "keep_aspect_ratio_policy": "not_smaller"},
            sizes=[3, 5], opset=18)
    yield R(rng, (1, 2, 5, 3), {"mode": "cubic", "keep_aspect_ratio_policy": "not_larger"}, sizes=[1, 2, 8, 8], opset=18)
    yield R(rng, (1, 1, 3, 4), {"mode": "nearest", "nearest_mode": "round_prefer_ceil",
                                "coordinate_transformation_mode": "asymmetric"}, scales=[1, 1, 1.5, 2.5], opset=18)
    yield R(rng, (1, 1, 4, 5), {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
            scales=[1, 1, 1.5, 0.6], opset=19)

    x = positive(rng, (1, 2, 3, 4))
    yield BadCase([x, None, f32([1, 2, 2])], attrs={"mode": "nearest"}, const={2}, error="scales")
    yield BadCase([x, None, f32([1, 1, -2, 2])], attrs={"mode": "nearest"}, const={2}, error="scales")
    yield BadCase([x, None, f32([1, 1, 0, 2])], attrs={"mode": "linear"}, const={2}, error="scales")
    yield BadCase([x, None, f32([1, 1, 2, 2])], attrs={"mode": "bilinear"}, const={2}, error="mode")
    yield BadCase([x, None, f32([1, 1, 2, 2])], attrs={"mode": "linear", "coordinate_transformation_mode": "corners"},
                  const={2}, error="coordinate_transformation_mode")
    yield BadCase([x, None, f32([1, 1, 2, 2])], attrs={"mode": "nearest", "nearest_mode": "round_half_even"},
                  const={2}, error="nearest_mode")
    yield BadCase([x, None, None, i64([1, 2, 6])], attrs={"mode": "nearest"}, const={3}, error="sizes")
    yield BadCase([x, None, None, i64([1, 2, -6, 8])], attrs={"mode": "nearest"}, const={3}, error="sizes")
    yield BadCase([x, None, f32([1, 1, 2, 2]), i64([1, 2, 6, 8])], attrs={"mode": "nearest"}, const={2, 3}, error="sizes")
    yield BadCase([x], attrs={"mode": "nearest"}, error="scales")
    yield BadCase([x, f32([0, 0, 0, 1, 1, 1]), None, i64([1, 2, 6, 8])],
                  attrs={"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, const={1, 3}, error="roi")
    yield BadCase([x, None, f32([2, 2])], attrs={"mode": "nearest", "axes": [2, 4]}, const={2}, opset=18, error="axes")
    yield BadCase([x, None, f32([2, 2])], attrs={"mode": "nearest", "axes": [2, 2]}, const={2}, opset=18, error="axes")
    yield BadCase([x, None, None, i64([6, 8])], attrs={"mode": "nearest", "axes": [2, 3], "keep_aspect_ratio_policy": "fit"},
                  const={3}, opset=18, error="keep_aspect_ratio_policy")
