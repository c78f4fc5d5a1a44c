"""Stateful LiteRT operators (variable tensors): SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM.

Each model runs as a stream: one Weft Model and one LiteRT interpreter, the same random input per
step, outputs compared at every step (float within 1e-5, integer bit for bit). The state lives in
the run context; reset_state() starts a new stream.
"""
import os
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402

SVDF, LSTM = 27, 44
SVDF_OPTIONS, LSTM_OPTIONS = 6, 71
NONE, RELU, TANH = 0, 1, 4


def session():
    return weft.Session(use_env_path=False)


def litert(path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF, num_threads=1)
    it.allocate_tensors()
    return it


def stream(path, inputs):
    """Weft's and LiteRT's outputs over the same sequence of runs."""
    model = session().compile(weft.import_litert(path))
    it = litert(path)
    got, want = [], []
    for x in inputs:
        got.append(model.run([x])[0])
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        want.append(it.get_tensor(it.get_output_details()[0]["index"]).copy())
    return model, got, want


def write(tmp_path, m, ins, outs, name):
    path = str(tmp_path / name)
    with open(path, "wb") as f:
        f.write(m.finish(ins, outs))
    return path


def svdf_float(tmp_path, batch, inputs, filters, memory, rank, act, bias=True):
    rng = np.random.default_rng(1)
    m = Model()
    x = m.tensor("x", [batch, inputs], "float32")
    wf = m.tensor("wf", [filters, inputs], "float32", data=rng.standard_normal((filters, inputs)).astype(np.float32) * 0.5)
    wt = m.tensor("wt", [filters, memory], "float32", data=rng.standard_normal((filters, memory)).astype(np.float32) * 0.5)
    b = m.tensor("b", [filters // rank], "float32", data=rng.standard_normal(filters // rank).astype(np.float32)) if bias else -1
    state = m.tensor("state", [batch, filters * memory], "float32", variable=True)
    y = m.tensor("y", [batch, filters // rank], "float32")
    m.builtin(SVDF, [x, wf, wt, b, state], [y], options=(SVDF_OPTIONS, [(0, "int32", rank), (1, "byte", act)]))
    return write(tmp_path, m, [x], [y], f"svdf_{batch}_{rank}_{act}_{bias}.tflite")


@pytest.mark.parametrize("batch,rank,act,bias", [(1, 1, NONE, True), (2, 2, RELU, True), (3, 4, NONE, False)])
def test_svdf_float_stream_matches_litert(tmp_path, batch, rank, act, bias):
    path = svdf_float(tmp_path, batch, 6, 8, 5, rank, act, bias)
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((batch, 6)).astype(np.float32) for _ in range(12)]
    _, got, want = stream(path, xs)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"step {k}")
    # The state matters: a step's output is not what the same input gives from a fresh state.
    fresh = session().compile(weft.import_litert(path)).run([xs[-1]])[0]
    assert not np.allclose(fresh, got[-1], atol=1e-4)


def svdf_hybrid(tmp_path, batch, inputs, filters, memory, rank, act, bias, asymmetric):
    """An SVDF as dynamic-range quantization writes it: float input, bias and state; int8
    weights_feature and weights_time with a scale each."""
    rng = np.random.default_rng(3)
    m = Model()
    x = m.tensor("x", [batch, inputs], "float32")
    wf = m.tensor("wf", [filters, inputs], "int8", data=rng.integers(-127, 128, (filters, inputs)), scale=0.004)
    wt = m.tensor("wt", [filters, memory], "int8", data=rng.integers(-127, 128, (filters, memory)), scale=0.006)
    b = m.tensor("b", [filters // rank], "float32", data=rng.standard_normal(filters // rank).astype(np.float32)) if bias else -1
    state = m.tensor("state", [batch, filters * memory], "float32", variable=True)
    y = m.tensor("y", [batch, filters // rank], "float32")
    m.builtin(SVDF, [x, wf, wt, b, state], [y], options=(SVDF_OPTIONS, [(0, "int32", rank), (1, "byte", act), (2, "bool", asymmetric)]))
    return write(tmp_path, m, [x], [y], f"svdf_hybrid_{batch}_{rank}_{act}_{bias}_{asymmetric}.tflite")


@pytest.mark.parametrize("batch,rank,act,bias,asymmetric", [(1, 1, NONE, True, False), (2, 2, RELU, True, True), (3, 4, NONE, False, False),
                                                            (2, 1, RELU, False, True)])
def test_svdf_hybrid_stream_matches_litert(tmp_path, batch, rank, act, bias, asymmetric):
    """SVDF with a float input and int8 weights: each input row quantized on the fly (symmetric, or
    asymmetric with asymmetric_quantize_inputs), the newest activation from the int32 products,
    weights_time as floats; streamed over 12 runs against LiteRT's reference kernels, including
    an all-zero input and values halfway between codes."""
    path = svdf_hybrid(tmp_path, batch, 16, 8, 5, rank, act, bias, asymmetric)
    rng = np.random.default_rng(4)
    xs = [(rng.standard_normal((batch, 16)) * 3).astype(np.float32) for _ in range(12)]
    xs[3][:] = 0
    xs[5] = (rng.integers(0, 255, (batch, 16)) + 0.5).astype(np.float32)
    xs[5][:, 0] = 255.0
    model, got, want = stream(path, xs)
    for k, (g, w) in enumerate(zip(got, want)):
        if asymmetric:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=f"step {k}")
        else:  # bit for bit (the rank filters' dots summed before the bias, as LiteRT)
            np.testing.assert_array_equal(g, w, err_msg=f"step {k}")
    fresh = session().compile(weft.import_litert(path)).run([xs[-1]])[0]
    assert not np.allclose(fresh, got[-1], atol=1e-4)
    # weft aot: the same arithmetic in C, over a stream of 10 runs on one context
    res, _ = aot_module(tmp_path, path, "svdfh")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 of" in res.stdout and "(10 runs, twice)" in res.stdout


def test_svdf_hybrid_refuses_channel_scales(tmp_path):
    m = Model()
    x = m.tensor("x", [1, 4], "float32")
    wf = m.tensor("wf", [2, 4], "int8", data=np.ones((2, 4)), scale=[0.01, 1.0], zero_point=[0, 0], quantized_dimension=0)
    wt = m.tensor("wt", [2, 3], "int8", data=np.ones((2, 3)), scale=0.01)
    state = m.tensor("state", [1, 6], "float32", variable=True)
    y = m.tensor("y", [1, 2], "float32")
    m.builtin(SVDF, [x, wf, wt, -1, state], [y], options=(SVDF_OPTIONS, [(0, "int32", 1)]))
    path = write(tmp_path, m, [x], [y], "svdf_pc.tflite")
    with pytest.raises(Exception, match="one scale each, not per-channel scales"):
        session().compile(weft.import_litert(path)).run([np.ones((1, 4), np.float32)])
    with pytest.raises(Exception, match="one scale each, not per-channel scales"):
        weft.generate_c(path, tmp_path / "c", prefix="m")


def svdf_int(tmp_path, state_type, state_zp, batch=2):
    rng = np.random.default_rng(3)
    filters, inputs, memory, rank = 8, 10, 6, 2
    m = Model()
    x = m.tensor("x", [batch, inputs], "int8", scale=0.05, zero_point=-7)
    wf = m.tensor("wf", [filters, inputs], "int8", data=rng.integers(-127, 128, (filters, inputs)), scale=0.01)
    lo, hi = (-32767, 32768) if state_type == "int16" else (-127, 128)
    wt_scale = 0.002 if state_type == "int16" else 0.01
    wt = m.tensor("wt", [filters, memory], state_type, data=rng.integers(lo, hi, (filters, memory)), scale=wt_scale)
    b = m.tensor("b", [filters // rank], "int32", data=rng.integers(-2000, 2000, filters // rank), scale=1e-5)
    s_scale = 0.004 if state_type == "int16" else 0.3
    state = m.tensor("state", [batch, filters * memory], state_type, scale=s_scale, zero_point=state_zp, variable=True)
    y = m.tensor("y", [batch, filters // rank], "int8", scale=0.08, zero_point=3)
    m.builtin(SVDF, [x, wf, wt, b, state], [y], options=(SVDF_OPTIONS, [(0, "int32", rank), (1, "byte", RELU)]))
    return write(tmp_path, m, [x], [y], f"svdf_{state_type}.tflite")


def test_svdf_int16_state_stream_is_bit_exact(tmp_path):
    path = svdf_int(tmp_path, "int16", 0)
    rng = np.random.default_rng(4)
    xs = [rng.integers(-128, 128, (2, 10)).astype(np.int8) for _ in range(15)]
    model, got, want = stream(path, xs)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"step {k}")
    # reset_state() starts a new stream: the first step again.
    model.reset_state()
    np.testing.assert_array_equal(model.run([xs[0]])[0], want[0])
    assert any(not np.array_equal(want[0], w) for w in want[1:])


def test_svdf_state_must_be_a_variable_tensor_owned_by_one_operator(tmp_path):
    m = Model()
    x = m.tensor("x", [1, 4], "float32")
    wf = m.tensor("wf", [2, 4], "float32", data=np.ones((2, 4)))
    wt = m.tensor("wt", [2, 3], "float32", data=np.ones((2, 3)))
    state = m.tensor("state", [1, 6], "float32", variable=True)
    y1 = m.tensor("y1", [1, 2], "float32")
    y2 = m.tensor("y2", [1, 2], "float32")
    m.builtin(SVDF, [x, wf, wt, -1, state], [y1], options=(SVDF_OPTIONS, [(0, "int32", 1)]))
    m.builtin(SVDF, [x, wf, wt, -1, state], [y2], options=(SVDF_OPTIONS, [(0, "int32", 1)]))
    path = write(tmp_path, m, [x], [y1, y2], "shared.tflite")
    with pytest.raises(Exception, match="shares the variable tensor 'state' with operator #0"):
        weft.import_litert(path)
    m = Model()
    x = m.tensor("x", [1, 4], "float32")
    wf = m.tensor("wf", [2, 4], "float32", data=np.ones((2, 4)))
    wt = m.tensor("wt", [2, 3], "float32", data=np.ones((2, 3)))
    state = m.tensor("state", [1, 6], "float32", data=np.zeros((1, 6)))  # a constant, not a variable
    y = m.tensor("y", [1, 2], "float32")
    m.builtin(SVDF, [x, wf, wt, -1, state], [y], options=(SVDF_OPTIONS, [(0, "int32", 1)]))
    path = write(tmp_path, m, [x], [y], "const_state.tflite")
    with pytest.raises(Exception, match="input 4 \\('state'\\) must be a variable tensor"):
        weft.import_litert(path)


def test_svdf_with_constant_input_is_not_folded(tmp_path):
    # All inputs constant: still one step per run, with its state carried (not folded at compile time).
    rng = np.random.default_rng(5)
    m = Model()
    x = m.tensor("x", [1, 4], "float32", data=rng.standard_normal((1, 4)).astype(np.float32))
    wf = m.tensor("wf", [2, 4], "float32", data=rng.standard_normal((2, 4)).astype(np.float32))
    wt = m.tensor("wt", [2, 3], "float32", data=rng.standard_normal((2, 3)).astype(np.float32))
    state = m.tensor("state", [1, 6], "float32", variable=True)
    y = m.tensor("y", [1, 2], "float32")
    z = m.tensor("z", [1, 2], "float32")
    dummy = m.tensor("dummy", [1, 2], "float32")
    m.builtin(SVDF, [x, wf, wt, -1, state], [y], options=(SVDF_OPTIONS, [(0, "int32", 1)]))
    m.builtin(0, [y, dummy], [z])  # ADD with a graph input, so that the model has one
    path = write(tmp_path, m, [dummy], [z], "const_in.tflite")
    model = session().compile(weft.import_litert(path))
    zero = np.zeros((1, 2), np.float32)
    outs = [model.run([zero])[0] for _ in range(4)]
    # memory 3: the output changes while the memory fills, then stays.
    assert not np.allclose(outs[0], outs[1]) and not np.allclose(outs[1], outs[2])
    np.testing.assert_allclose(outs[2], outs[3], rtol=1e-6)
    it = litert(path)
    for k in range(4):
        it.set_tensor(it.get_input_details()[0]["index"], zero)
        it.invoke()
        np.testing.assert_allclose(outs[k], it.get_tensor(it.get_output_details()[0]["index"]), rtol=1e-5, atol=1e-6)


def lstm_constant(m, rng, hybrid):
    """const(name, shape, present, weight): a random constant of `m` (-1 when absent); with
    `hybrid`, weights int8 with one scale each, as dynamic-range quantization writes them."""
    def const(name, shape, present=True, weight=False):
        if not present:
            return -1
        if hybrid and weight:
            return m.tensor(name, shape, "int8", data=rng.integers(-127, 128, shape).astype(np.int8), scale=float(rng.uniform(0.002, 0.006)))
        return m.tensor(name, shape, "float32", data=(rng.standard_normal(shape) * 0.5).astype(np.float32))
    return const


def lstm_weights(const, prefix, n_in, n_cell, n_out, cifg, peephole, projection):
    """An LSTM direction's 17 parameter inputs in the operator's order (LiteRT's inputs 1-17)."""
    ins = [const(f"{prefix}wx{g}", [n_cell, n_in], not (cifg and g == "i"), True) for g in "ifco"]
    ins += [const(f"{prefix}wh{g}", [n_cell, n_out], not (cifg and g == "i"), True) for g in "ifco"]
    ins += [const(f"{prefix}p{g}", [n_cell], peephole and not (cifg and g == "i"), True) for g in "ifo"]
    ins += [const(f"{prefix}b{g}", [n_cell], not (cifg and g == "i")) for g in "ifco"]
    return ins + [const(f"{prefix}proj", [n_out, n_cell], projection, True), const(f"{prefix}proj_b", [n_out], projection)]


def lstm_float(tmp_path, cifg=False, peephole=False, projection=False, time_major=False, cell_clip=0.0, proj_clip=0.0,
               batch=2, steps=4, n_in=5, n_cell=6, layer_norm=False, act=None, hybrid=False, asymmetric=False):
    """A float LSTM; with `hybrid`, its weights (input, recurrent, peephole, projection) int8 with
    one scale each, as dynamic-range quantization writes them."""
    rng = np.random.default_rng(6)
    n_out = 4 if projection else n_cell
    m = Model()
    xshape = [steps, batch, n_in] if time_major else [batch, steps, n_in]
    x = m.tensor("x", xshape, "float32")
    const = lstm_constant(m, rng, hybrid)
    ins = [x] + lstm_weights(const, "", n_in, n_cell, n_out, cifg, peephole, projection)
    ins += [m.tensor("h", [batch, n_out], "float32", variable=True), m.tensor("c", [batch, n_cell], "float32", variable=True)]
    ins += [const(f"ln{g}", [n_cell], layer_norm and not (cifg and g == "i")) for g in "ifco"]
    y = m.tensor("y", xshape[:2] + [n_out], "float32")
    fields = [(0, "byte", TANH if act is None else act), (1, "float", cell_clip), (2, "float", proj_clip), (3, "bool", time_major),
              (4, "bool", asymmetric)]
    m.builtin(LSTM, ins, [y], options=(LSTM_OPTIONS, fields))
    return write(tmp_path, m, [x], [y], "lstm.tflite"), xshape


@pytest.mark.parametrize("variant", ["plain", "asymmetric", "cifg_peephole", "projection_clips", "time_major", "layer_norm",
                                     "layer_norm_projection_relu_asymmetric"])
def test_lstm_hybrid_stream_matches_litert(tmp_path, variant):
    """UNIDIRECTIONAL_SEQUENCE_LSTM with a float input and int8 weights (dynamic-range quantized):
    the input row, the previous output and (with a projection) the gated output quantized every
    step, symmetric or asymmetric, as LiteRT's hybrid kernel; streamed over five runs against the
    LiteRT interpreter (reference kernels), states carried, every variant the float LSTM has."""
    kw = {"plain": {}, "asymmetric": {"asymmetric": True}, "cifg_peephole": {"cifg": True, "peephole": True},
          "projection_clips": {"projection": True, "cell_clip": 0.8, "proj_clip": 0.5, "peephole": True},
          "time_major": {"time_major": True, "batch": 3},
          "layer_norm": {"layer_norm": True, "peephole": True},
          "layer_norm_projection_relu_asymmetric": {"layer_norm": True, "projection": True, "cell_clip": 2.0, "act": 1, "asymmetric": True}}[variant]
    path, xshape = lstm_float(tmp_path, hybrid=True, n_in=12, n_cell=10, steps=6, **kw)
    rng = np.random.default_rng(8)
    xs = [(rng.standard_normal(xshape) * 2).astype(np.float32) for _ in range(5)]
    xs[2][0] = 0  # an all-zero input row skips its product
    model, got, want = stream(path, xs)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{variant} step {k}")
    model.reset_state()
    np.testing.assert_allclose(model.run([xs[0]])[0], want[0], rtol=1e-5, atol=1e-5)
    # weft aot: the same arithmetic in C, over a stream of 10 runs on one context
    res, _ = aot_module(tmp_path, path, "lstmh")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 of" in res.stdout and "(10 runs, twice)" in res.stdout


def test_lstm_refuses_partial_layer_norm_and_short_vectors(tmp_path):
    """A layer-normalized LSTM missing a gate's coefficients, or a per-cell vector of the wrong
    length, is an error naming it (float and hybrid LSTMs), never a read past the tensor."""
    rng = np.random.default_rng(0)

    def build(name, hybrid, ln_shapes, bias_len=4):
        m = Model()
        x = m.tensor("x", [1, 2, 3], "float32")

        def w(n, shape):
            if hybrid:
                return m.tensor(n, shape, "int8", data=rng.integers(-127, 128, shape), scale=0.01)
            return m.tensor(n, shape, "float32", data=rng.standard_normal(shape).astype(np.float32))

        def f(n, shape):
            return m.tensor(n, shape, "float32", data=rng.standard_normal(shape).astype(np.float32)) if shape else -1

        ins = [x] + [w(f"wx{g}", [4, 3]) for g in "ifco"] + [w(f"wh{g}", [4, 4]) for g in "ifco"] + [-1, -1, -1]
        ins += [f(f"b{g}", [bias_len]) for g in "ifco"] + [-1, -1]
        ins += [m.tensor("h", [1, 4], "float32", variable=True), m.tensor("c", [1, 4], "float32", variable=True)]
        ins += [f(f"ln{g}", shape) for g, shape in zip("ifco", ln_shapes)]
        y = m.tensor("y", [1, 2, 4], "float32")
        m.builtin(LSTM, ins, [y], options=(LSTM_OPTIONS, [(0, "byte", TANH)]))
        return write(tmp_path, m, [x], [y], name)

    xv = np.ones([1, 2, 3], np.float32)
    for hybrid in (False, True):
        path = build(f"partial{hybrid}.tflite", hybrid, [[4], None, None, None])
        with pytest.raises(Exception, match="one layer-norm coefficient vector per gate"):
            session().compile(weft.import_litert(path)).run([xv])
        path = build(f"short_ln{hybrid}.tflite", hybrid, [[4], [4], [2], [4]])
        with pytest.raises(Exception, match="holds 2 values, not one per cell \\(4\\)"):
            session().compile(weft.import_litert(path)).run([xv])
        path = build(f"long_bias{hybrid}.tflite", hybrid, [None] * 4, bias_len=50)
        with pytest.raises(Exception, match="input_gate_bias is \\[50\\], not \\[4\\]"):
            session().compile(weft.import_litert(path)).run([xv])

@pytest.mark.parametrize("variant", ["plain", "cifg", "peephole", "projection_clips", "time_major", "layer_norm", "layer_norm_cifg_peephole",
                                     "layer_norm_projection_relu"])
def test_lstm_float_stream_matches_litert(tmp_path, variant):
    kw = {"plain": {}, "cifg": {"cifg": True, "peephole": True}, "peephole": {"peephole": True},
          "projection_clips": {"projection": True, "cell_clip": 0.8, "proj_clip": 0.5}, "time_major": {"time_major": True},
          "layer_norm": {"layer_norm": True}, "layer_norm_cifg_peephole": {"layer_norm": True, "cifg": True, "peephole": True},
          "layer_norm_projection_relu": {"layer_norm": True, "projection": True, "peephole": True, "cell_clip": 2.0, "act": 1}}[variant]
    path, xshape = lstm_float(tmp_path, **kw)
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(xshape).astype(np.float32) for _ in range(5)]
    model, got, want = stream(path, xs)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{variant} step {k}")
    # The states carry over between runs: a fresh stream differs at the same input.
    model.reset_state()
    first = model.run([xs[0]])[0]
    np.testing.assert_allclose(first, want[0], rtol=1e-5, atol=1e-5)
    assert not np.allclose(model.run([xs[0]])[0], first, atol=1e-4)


def lstm_int8(tmp_path, cifg=False, peephole=False, projection=False, time_major=False, cell_clip=0.0, proj_clip=0.0,
              h_zp=0, hidden_zp=0, batch=2, steps=4, n_in=5, n_cell=6):
    """An integer (8x8->16) LSTM as the converter writes one: int8 weights and output state, int16
    cell state with a power-of-two scale, int16 peepholes, int32 biases, five intermediates."""
    rng = np.random.default_rng(8)
    n_out = 4 if projection else n_cell
    s_h = 0.02 if projection else 1 / 128
    m = Model()
    xshape = [steps, batch, n_in] if time_major else [batch, steps, n_in]
    x = m.tensor("x", xshape, "int8", scale=0.05, zero_point=3)

    def weights(name, shape, present=True):
        if not present:
            return -1
        return m.tensor(name, shape, "int8", data=rng.integers(-127, 128, shape), scale=float(rng.uniform(0.003, 0.008)))

    def peep(name, present):
        return m.tensor(name, [n_cell], "int16", data=rng.integers(-4000, 4000, n_cell), scale=1e-4) if present else -1

    def bias(name, present=True, n=n_cell):
        return m.tensor(name, [n], "int32", data=rng.integers(-3000, 3000, n), scale=1e-4) if present else -1

    ins = [x]
    ins += [weights(f"wx{g}", [n_cell, n_in], not (cifg and g == "i")) for g in "ifco"]
    ins += [weights(f"wh{g}", [n_cell, n_out], not (cifg and g == "i")) for g in "ifco"]
    ins += [peep(f"p{g}", peephole and not (cifg and g == "i")) for g in "ifo"]
    ins += [bias(f"b{g}", not (cifg and g == "i")) for g in "ifco"]
    ins += [weights("proj", [n_out, n_cell], projection), bias("proj_b", projection, n_out)]
    ins += [m.tensor("h", [batch, n_out], "int8", scale=s_h, zero_point=h_zp, variable=True),
            m.tensor("c", [batch, n_cell], "int16", scale=2.0 ** -11, variable=True)]
    ins += [-1, -1, -1, -1]
    im = [m.tensor(f"im{k}", [0], "int16", scale=2.0 ** -12) for k in range(4)]
    im.append(m.tensor("hidden", [0], "int8", scale=1 / 128, zero_point=hidden_zp))
    y = m.tensor("y", xshape[:2] + [n_out], "int8", scale=s_h, zero_point=h_zp)
    fields = [(0, "byte", TANH), (1, "float", cell_clip), (2, "float", proj_clip), (3, "bool", time_major)]
    m.builtin(LSTM, ins, [y], options=(LSTM_OPTIONS, fields), intermediates=im)
    return write(tmp_path, m, [x], [y], "lstm8.tflite"), xshape


@pytest.mark.parametrize("variant", ["plain", "cifg_peephole", "peephole", "projection_clips", "time_major", "state_zero_points"])
def test_lstm_int8_stream_is_bit_exact(tmp_path, variant):
    kw = {"plain": {}, "cifg_peephole": {"cifg": True, "peephole": True}, "peephole": {"peephole": True},
          "projection_clips": {"projection": True, "cell_clip": 1.5, "proj_clip": 1.2, "hidden_zp": 0},
          "time_major": {"time_major": True, "peephole": True},
          "state_zero_points": {"projection": True, "h_zp": -5, "hidden_zp": 4}}[variant]
    path, xshape = lstm_int8(tmp_path, **kw)
    rng = np.random.default_rng(9)
    xs = [rng.integers(-128, 128, xshape).astype(np.int8) for _ in range(6)]
    _, got, want = stream(path, xs)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"{variant} step {k}")
    assert len({w.tobytes() for w in want}) > 1  # outputs vary: the test sees real values
    assert any(np.count_nonzero((w != w.min()) & (w != w.max())) for w in want)  # not all saturated


# ---- the same operators as generated C (weft aot) ---------------------------------------------

def aot_module(tmp_path, model_path, prefix, steps=10):
    """Converts the model with its test case (steps runs in a row on one context, every operator's
    outputs compared after it runs), builds it as strict C99 and runs it; returns its report."""
    import shutil
    import subprocess

    cli = os.environ.get("WEFT_CLI") or shutil.which("weft")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cli or not cc:
        pytest.skip("needs the weft command (WEFT_CLI) and a C compiler")
    out = tmp_path / prefix
    subprocess.run([cli, "aot", model_path, "-o", str(out), "--prefix", prefix, "--test", "--test-steps", str(steps)],
                   check=True, capture_output=True, text=True)
    exe = tmp_path / (prefix + "_test")
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", f"-I{out}/includes-api", f"-I{out}/src",
                    f"-I{out}/test", *map(str, sorted(out.glob("src/*.c"))), *map(str, sorted(out.glob("test/*.c"))), "-o", str(exe),
                    "-lm"], check=True, capture_output=True, text=True)
    return subprocess.run([str(exe)], capture_output=True, text=True), out


@pytest.mark.parametrize("batch,rank,act,bias", [(1, 1, NONE, True), (3, 4, RELU, False)])
def test_svdf_float_as_c_carries_its_state(tmp_path, batch, rank, act, bias):
    path = svdf_float(tmp_path, batch, 6, 8, 5, rank, act, bias)
    res, _ = aot_module(tmp_path, path, "svdf")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 of" in res.stdout and "(10 runs, twice)" in res.stdout


@pytest.mark.parametrize("state_type,state_zp", [("int16", 0), ("int8", 5)])
def test_svdf_integer_as_c_is_bit_exact_over_a_stream(tmp_path, state_type, state_zp):
    path = svdf_int(tmp_path, state_type, state_zp)
    res, out = aot_module(tmp_path, path, "svdfq")
    assert res.returncode == 0, res.stdout + res.stderr
    # The test has power: a module whose state does not advance fails it.
    src = out / "src" / "svdfq.c"
    text = src.read_text()
    shift = "memmove(state, (uint8_t*)state + elem, (size_t)(cells - 1) * elem);"
    assert shift in text
    src.write_text(text.replace(shift, "(void)elem;"))
    import subprocess
    exe = tmp_path / "broken"
    subprocess.run(["cc", "-std=c99", "-O1", f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test", *map(str, sorted(out.glob("src/*.c"))),
                    *map(str, sorted(out.glob("test/*.c"))), "-o", str(exe), "-lm"], check=True)
    broken = subprocess.run([str(exe)], capture_output=True, text=True)
    assert broken.returncode == 1, broken.stdout
    assert "is the first whose output differs" in broken.stdout


FLOAT_LSTM_VARIANTS = {"plain": {}, "cifg": {"cifg": True, "peephole": True}, "peephole": {"peephole": True},
                       "projection_clips": {"projection": True, "cell_clip": 0.8, "proj_clip": 0.5}, "time_major": {"time_major": True},
                       "layer_norm_cifg_peephole": {"layer_norm": True, "cifg": True, "peephole": True},
                       "layer_norm_projection": {"layer_norm": True, "projection": True, "peephole": True}}
INT8_LSTM_VARIANTS = {"plain": {}, "cifg_peephole": {"cifg": True, "peephole": True}, "peephole": {"peephole": True},
                      "projection_clips": {"projection": True, "cell_clip": 1.5, "proj_clip": 1.2, "hidden_zp": 0},
                      "time_major": {"time_major": True, "peephole": True},
                      "state_zero_points": {"projection": True, "h_zp": -5, "hidden_zp": 4}}


@pytest.mark.parametrize("variant", sorted(FLOAT_LSTM_VARIANTS))
def test_lstm_float_as_c_carries_its_state(tmp_path, variant):
    path, _ = lstm_float(tmp_path, **FLOAT_LSTM_VARIANTS[variant])
    res, _ = aot_module(tmp_path, path, "lstm")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "(10 runs, twice)" in res.stdout


@pytest.mark.parametrize("variant", sorted(INT8_LSTM_VARIANTS))
def test_lstm_int8_as_c_is_bit_exact_over_a_stream(tmp_path, variant):
    path, _ = lstm_int8(tmp_path, **INT8_LSTM_VARIANTS[variant])
    res, _ = aot_module(tmp_path, path, "lstmq")
    assert res.returncode == 0, res.stdout + res.stderr
    assert " 0 of " in res.stdout and "(10 runs, twice)" in res.stdout


@pytest.mark.parametrize("case", ["lstm_batch0", "lstm_cell0", "lstm_hybrid_batch0", "svdf_batch0", "svdf_hybrid_batch0", "svdf_units0"])
def test_empty_state_gives_empty_outputs_in_the_runtime_and_the_c(tmp_path, case):
    """A stateful operator with nothing to keep (no batch rows, no cells, no units) gives its empty
    output, as LiteRT's LSTM does with no batch rows (its SVDF, and its LSTM with no cells, crash),
    and its C module declares no empty
    state array (not C99) and builds and runs."""
    if case.startswith("lstm"):
        path, xshape = lstm_float(tmp_path, batch=0 if "batch0" in case else 2, n_cell=0 if case == "lstm_cell0" else 6,
                                  hybrid="hybrid" in case)
    elif case == "svdf_units0":
        path, xshape = svdf_float(tmp_path, 2, 4, 0, 3, 1, NONE, bias=False), [2, 4]
    else:
        make = svdf_hybrid if "hybrid" in case else svdf_float
        args = (tmp_path, 0, 4, 4, 3, 2, NONE, True) + ((False,) if "hybrid" in case else ())
        path, xshape = make(*args), [0, 4]
    model = session().compile(weft.import_litert(path))
    xv = np.ones(xshape, np.float32)
    got = model.run([xv])[0]
    assert got.size == 0
    if case in ("lstm_batch0", "lstm_hybrid_batch0"):  # LiteRT's SVDF segfaults here, its float LSTM with no cells divides by 0
        it = litert(path)
        it.set_tensor(it.get_input_details()[0]["index"], xv)
        it.invoke()
        assert it.get_tensor(it.get_output_details()[0]["index"]).shape == got.shape
    res, out = aot_module(tmp_path, path, "m", steps=2)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[0]" not in (out / "includes-api" / "m.h").read_text()


def test_hybrid_svdf_without_a_weight_scale_is_named(tmp_path):
    rng = np.random.default_rng(3)
    m = Model()
    x = m.tensor("x", [1, 4], "float32")
    wf = m.tensor("wf", [4, 4], "int8", data=rng.integers(-127, 128, (4, 4)), scale=0.0)
    wt = m.tensor("wt", [4, 3], "int8", data=rng.integers(-127, 128, (4, 3)), scale=0.006)
    state = m.tensor("state", [1, 12], "float32", variable=True)
    y = m.tensor("y", [1, 4], "float32")
    m.builtin(SVDF, [x, wf, wt, -1, state], [y], options=(SVDF_OPTIONS, [(0, "int32", 1), (1, "byte", NONE)]))
    path = write(tmp_path, m, [x], [y], "svdf_scale0.tflite")
    with pytest.raises(Exception, match="weights_feature needs a positive scale"):
        session().compile(weft.import_litert(path)).run([np.ones([1, 4], np.float32)])


BIDI_LSTM, BIDI_LSTM_OPTIONS = 52, 69


def bidi_lstm(tmp_path, merge=True, time_major=True, hybrid=False, cifg=False, peephole=False, projection=False, cell_clip=0.0,
              batch=2, steps=5, n_in=6, n_cell=5, name="bidi.tflite"):
    """BIDIRECTIONAL_SEQUENCE_LSTM: each direction its own weights and variable states; float, or
    hybrid (int8 weights, one scale each)."""
    rng = np.random.default_rng(12)
    n_out = 3 if projection else n_cell
    m = Model()
    xshape = [steps, batch, n_in] if time_major else [batch, steps, n_in]
    x = m.tensor("x", xshape, "float32")
    const = lstm_constant(m, rng, hybrid)
    ins = [x] + [w for d in ("fw", "bw") for w in lstm_weights(const, d, n_in, n_cell, n_out, cifg, peephole, projection)]
    ins += [m.tensor(f"{d}{s}", [batch, n_out if s == "h" else n_cell], "float32", variable=True) for d in ("fw", "bw") for s in "hc"]
    ins += [-1] * 9  # no auxiliary input
    oshape = xshape[:2] + [2 * n_out if merge else n_out]
    outs = [m.tensor("y", oshape, "float32")] + ([] if merge else [m.tensor("y_bw", oshape, "float32")])
    fields = [(0, "byte", TANH), (1, "float", cell_clip), (3, "bool", merge), (4, "bool", time_major)]
    m.builtin(BIDI_LSTM, ins, outs, options=(BIDI_LSTM_OPTIONS, fields))
    return write(tmp_path, m, [x], outs, name), xshape


@pytest.mark.parametrize("variant", ["merged", "separate_batch_major", "hybrid", "cifg_peephole_projection", "hybrid_projection_clip"])
def test_bidirectional_lstm_stream_matches_litert(tmp_path, variant):
    """BIDIRECTIONAL_SEQUENCE_LSTM against the LiteRT interpreter over a stream of runs (each
    direction's states carried from run to run, as its variable tensors are), merged or separate
    outputs, time- or batch-major, float and hybrid; and as C from weft aot over a stream."""
    kw = {"merged": {}, "separate_batch_major": {"merge": False, "time_major": False},
          "hybrid": {"hybrid": True, "n_in": 12, "n_cell": 8},
          "cifg_peephole_projection": {"cifg": True, "peephole": True, "projection": True},
          "hybrid_projection_clip": {"hybrid": True, "projection": True, "cell_clip": 0.7, "merge": False}}[variant]
    path, xshape = bidi_lstm(tmp_path, **kw)
    rng = np.random.default_rng(13)
    xs = [rng.standard_normal(xshape).astype(np.float32) for _ in range(4)]
    model = session().compile(weft.import_litert(path))
    it = litert(path)
    for k, x in enumerate(xs):
        got = model.run([x])
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        want = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{variant} run {k}")
    res, _ = aot_module(tmp_path, path, "bidi", steps=4)
    assert res.returncode == 0, res.stdout + res.stderr


def test_bidirectional_lstm_with_an_auxiliary_input_is_refused(tmp_path):
    path, xshape = bidi_lstm(tmp_path)
    import flatbuffers  # noqa: F401 - the writer's dependency
    m = Model()
    x = m.tensor("x", [2, 1, 3], "float32")
    aux = m.tensor("aux", [2, 1, 3], "float32")
    w = [m.tensor(f"w{k}", [2, 3] if k % 17 < 4 else [2, 2] if k % 17 < 8 else [2], "float32", data=np.ones([2, 3] if k % 17 < 4 else [2, 2] if k % 17 < 8 else [2], np.float32))
         if k % 17 not in (8, 9, 10, 15, 16) else -1 for k in range(34)]
    states = [m.tensor(f"s{k}", [1, 2], "float32", variable=True) for k in range(4)]
    y = m.tensor("y", [2, 1, 4], "float32")
    m.builtin(BIDI_LSTM, [x] + w + states + [aux] + [-1] * 8, [y], options=(BIDI_LSTM_OPTIONS, [(0, "byte", TANH), (3, "bool", True)]))
    path = write(tmp_path, m, [x, aux], [y], "aux.tflite")
    with pytest.raises(Exception, match="auxiliary input"):
        weft.import_litert(path)


UNI_RNN, BIDI_RNN, SEQ_RNN_OPTIONS, BIDI_RNN_OPTIONS = 35, 46, 31, 70
RELU_ACT = 1


def seq_rnn(tmp_path, bidi=False, merge=True, time_major=False, act=TANH, batch=2, steps=5, n_in=4, units=6, name="rnn.tflite"):
    """UNIDIRECTIONAL_ or BIDIRECTIONAL_SEQUENCE_RNN (float), each direction's hidden state a variable tensor."""
    rng = np.random.default_rng(21)
    m = Model()
    xshape = [steps, batch, n_in] if time_major else [batch, steps, n_in]
    x = m.tensor("x", xshape, "float32")

    def direction(d):
        return [m.tensor(f"{d}w", [units, n_in], "float32", data=(rng.standard_normal((units, n_in)) * 0.5).astype(np.float32)),
                m.tensor(f"{d}r", [units, units], "float32", data=(rng.standard_normal((units, units)) * 0.4).astype(np.float32)),
                m.tensor(f"{d}b", [units], "float32", data=(rng.standard_normal(units) * 0.3).astype(np.float32)),
                m.tensor(f"{d}h", [batch, units], "float32", variable=True)]

    ins = [x] + direction("fw") + (direction("bw") + [-1, -1, -1] if bidi else [])
    oshape = xshape[:2] + [2 * units if bidi and merge else units]
    outs = [m.tensor("y", oshape, "float32")] + ([m.tensor("y_bw", oshape, "float32")] if bidi and not merge else [])
    if bidi:
        m.builtin(BIDI_RNN, ins, outs, options=(BIDI_RNN_OPTIONS, [(0, "bool", time_major), (1, "byte", act), (2, "bool", merge)]))
    else:
        m.builtin(UNI_RNN, ins, outs, options=(SEQ_RNN_OPTIONS, [(0, "bool", time_major), (1, "byte", act)]))
    return write(tmp_path, m, [x], outs, name), xshape


@pytest.mark.parametrize("variant", ["uni_tanh", "uni_relu_time_major", "uni_none", "bidi_merged", "bidi_separate_time_major",
                                     "bidi_relu"])
def test_sequence_rnn_stream_matches_litert(tmp_path, variant):
    """UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN against the LiteRT interpreter
    over a stream of runs (hidden states carried from run to run), then a new stream after
    reset_state()."""
    kw = {"uni_tanh": {}, "uni_relu_time_major": {"act": RELU_ACT, "time_major": True}, "uni_none": {"act": NONE},
          "bidi_merged": {"bidi": True}, "bidi_separate_time_major": {"bidi": True, "merge": False, "time_major": True},
          "bidi_relu": {"bidi": True, "act": RELU_ACT}}[variant]
    path, xshape = seq_rnn(tmp_path, **kw)
    rng = np.random.default_rng(22)
    xs = [rng.standard_normal(xshape).astype(np.float32) for _ in range(4)]
    model = session().compile(weft.import_litert(path))

    def litert_stream():
        it = litert(path)
        outs = []
        for x in xs:
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            outs.append([it.get_tensor(d["index"]).copy() for d in it.get_output_details()])
        return outs

    want = litert_stream()
    for rounds in range(2):  # the second after reset_state(), as a new interpreter
        for k, x in enumerate(xs):
            got = model.run([x])
            assert len(got) == len(want[k])
            for g, w in zip(got, want[k]):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=f"{variant} run {k}, round {rounds}")
        model.reset_state()


def tiny_rnn(tmp_path, name, int8_weights=False, state_shape=(1, 4)):
    """A UNIDIRECTIONAL_SEQUENCE_RNN of 4 units over [1, 2, 3]; state_shape None leaves the state out."""
    m = Model()
    x = m.tensor("x", [1, 2, 3], "float32")
    w = (m.tensor("w", [4, 3], "int8", data=np.ones((4, 3), np.int8), scale=0.1) if int8_weights
         else m.tensor("w", [4, 3], "float32", data=np.ones((4, 3), np.float32)))
    r = m.tensor("r", [4, 4], "float32", data=np.ones((4, 4), np.float32))
    b = m.tensor("b", [4], "float32", data=np.zeros(4, np.float32))
    h = m.tensor("h", list(state_shape), "float32", variable=True) if state_shape else -1
    y = m.tensor("y", [1, 2, 4], "float32")
    m.builtin(UNI_RNN, [x, w, r, b, h], [y], options=(SEQ_RNN_OPTIONS, [(1, "byte", TANH)]))
    return write(tmp_path, m, [x], [y], name)


def test_sequence_rnn_with_int8_weights_is_refused_by_name(tmp_path):
    path = tiny_rnn(tmp_path, "hybrid_rnn.tflite", int8_weights=True)
    with pytest.raises(Exception, match="input 1 \\('w'\\) is int8: a hybrid RNN is not supported"):
        weft.import_litert(path)


def test_sequence_rnn_as_c_carries_its_state(tmp_path):
    """weft aot: the RNNs' hidden states are module state shared by the variable's read and its
    assignment; the C matches the runtime over a stream of runs on one context."""
    for kw in ({}, {"bidi": True, "merge": False, "time_major": True}):
        path, _ = seq_rnn(tmp_path, name=f"rnn{len(kw)}.tflite", **kw)
        res, _ = aot_module(tmp_path, path, f"rnn{len(kw)}", steps=6)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "0 of" in res.stdout


def test_empty_sequences_and_batches(tmp_path):
    """No steps, or no batch rows: empty outputs, as LiteRT gives (the backward direction's time
    reversal of an empty axis takes nothing)."""
    cases = [(bidi_lstm, {"steps": 0, "merge": False}), (bidi_lstm, {"steps": 0}), (seq_rnn, {"bidi": True, "batch": 0}),
             (seq_rnn, {"bidi": True, "steps": 0, "time_major": True})]
    for k, (build, kw) in enumerate(cases):
        path, xshape = build(tmp_path, name=f"empty{k}.tflite", **kw)
        x = np.zeros(xshape, np.float32)
        got = session().compile(weft.import_litert(path)).run([x])
        it = litert(path)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        want = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        assert [g.shape for g in got] == [w.shape for w in want], (kw, [g.shape for g in got], [w.shape for w in want])


def test_sequence_op_states_are_checked(tmp_path):
    """A state tensor of the wrong shape or type, or absent, is refused by name; generated names
    never collide with the file's own tensor names."""
    path = tiny_rnn(tmp_path, "bad_state.tflite", state_shape=(1, 5))
    with pytest.raises(Exception, match="state 'h' is float32\\[1,5\\]; it must be float32\\[1,4\\]"):
        weft.import_litert(path)
    path = tiny_rnn(tmp_path, "no_state.tflite", state_shape=None)
    with pytest.raises(Exception, match="input 4 \\(the operator's state\\) is absent"):
        weft.import_litert(path)
    # a file tensor named like a value the import generates
    rng = np.random.default_rng(3)
    m = Model()
    x = m.tensor("x", [2, 1, 3], "float32")
    w = m.tensor("w", [4, 3], "float32", data=rng.standard_normal((4, 3)).astype(np.float32))
    rr = m.tensor("r", [4, 4], "float32", data=(rng.standard_normal((4, 4)) * 0.3).astype(np.float32))
    b = m.tensor("b", [4], "float32", data=np.zeros(4, np.float32))
    h = m.tensor("h", [1, 4], "float32", variable=True)
    y = m.tensor("y", [2, 1, 4], "float32")
    z = m.tensor("y/UNIDIRECTIONAL_SEQUENCE_RNN/Y", [2, 1, 4], "float32")
    m.builtin(UNI_RNN, [x, w, rr, b, h], [y], options=(SEQ_RNN_OPTIONS, [(0, "bool", True), (1, "byte", TANH)]))
    m.builtin(0, [y, y], [z])  # ADD
    path = write(tmp_path, m, [x], [z], "names.tflite")
    xv = rng.standard_normal((2, 1, 3)).astype(np.float32)
    got = session().compile(weft.import_litert(path)).run([xv])[0]
    it = litert(path)
    it.set_tensor(it.get_input_details()[0]["index"], xv)
    it.invoke()
    np.testing.assert_allclose(got, it.get_tensor(it.get_output_details()[0]["index"]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("clips", [{"cell_clip": -1.0}, {"proj_clip": -0.5, "projection": True}, {"cell_clip": float("nan")}])
def test_lstm_refuses_negative_or_nan_clips(tmp_path, clips):
    """0 means no clipping; a negative or NaN clip bounds nothing (LiteRT refuses negatives), float or integer."""
    name = next(k for k in clips if k.endswith("clip"))
    for build in (lstm_float, lstm_int8):
        path = build(tmp_path, **clips)[0]
        with pytest.raises(ValueError, match=f"{name} is .*; it must be 0 \\(no clipping\\) or positive"):
            session().compile(weft.import_litert(path))
