"""The samplers (RandomUniform, RandomNormal, their -Like forms, Bernoulli, Multinomial) and
training-mode Dropout: their values follow the distributions they name (moments and
Kolmogorov-Smirnov distances against the exact distribution, bounds set at about five standard
errors for a fixed seed), a seed fixes the sequence of every new run context, successive runs of
one context draw new values, nothing is constant-folded, and bad input is refused by name."""
import math
import os
import tempfile

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

N = 200_000


def session():
    return weft.Session(use_env_path=False)


def single(op, attrs=None, inputs=(), outputs=1, opset=17):
    """A compiled model of one `op` node fed by `inputs` [(name, array)] (a name starting with
    'c:' becomes a constant)."""
    graph_inputs, inits, names = [], [], []
    for name, a in inputs:
        a = np.asarray(a)
        if name.startswith("c:"):
            name = name[2:]
            inits.append(onnx.numpy_helper.from_array(a, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)))
        names.append(name)
    outs = [f"y{k}" for k in range(outputs)]
    node = helper.make_node(op, names, outs, **(attrs or {}))
    g = helper.make_graph([node], op, graph_inputs, [onnx.ValueInfoProto(name=o) for o in outs], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        return session().compile(weft.import_onnx(path))


def ks_distance(sample, cdf):
    """The Kolmogorov-Smirnov distance between a sample and a distribution function."""
    x = np.sort(np.asarray(sample, np.float64))
    f = cdf(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


KS_BOUND = 1.95 / math.sqrt(N)  # the 0.1% critical value of the statistic


def test_uniform_has_the_moments_and_distribution_of_uniform():
    (y,) = single("RandomUniform", {"shape": [N], "low": -2.0, "high": 3.0, "seed": 11.0}).run([])
    assert y.dtype == np.float32 and y.shape == (N,)
    assert y.min() >= -2.0 and y.max() < 3.0
    assert abs(y.mean() - 0.5) < 5 * (5 / math.sqrt(12)) / math.sqrt(N)
    assert abs(y.var() - 25 / 12) < 0.03
    assert ks_distance(y, lambda x: (x + 2) / 5) < KS_BOUND


def test_normal_has_the_moments_and_distribution_of_normal():
    (y,) = single("RandomNormal", {"shape": [400, 500], "mean": 1.5, "scale": 2.0, "seed": 5.0,
                                   "dtype": TensorProto.DOUBLE}).run([])
    assert y.dtype == np.float64 and y.shape == (400, 500)
    z = (y.ravel() - 1.5) / 2.0
    assert abs(z.mean()) < 5 / math.sqrt(N)
    assert abs(z.std() - 1) < 0.01
    erf = np.vectorize(math.erf)
    assert ks_distance(z, lambda x: 0.5 * (1 + erf(x / math.sqrt(2)))) < KS_BOUND
    # no two neighbours correlated (each value from its own pair of draws)
    assert abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 5 / math.sqrt(N)


def test_like_forms_take_the_input_shape_and_type():
    x = np.zeros((3, 70, 50), np.float16)
    (u,) = single("RandomUniformLike", {"seed": 2.0}, [("x", x)]).run([x])
    assert u.dtype == np.float16 and u.shape == x.shape and 0 <= u.min() and u.max() <= 1
    assert abs(u.astype(np.float64).mean() - 0.5) < 0.01
    (n,) = single("RandomNormalLike", {"seed": 2.0, "dtype": TensorProto.FLOAT}, [("x", x.astype(np.int32))]).run([x.astype(np.int32)])
    assert n.dtype == np.float32 and n.shape == x.shape and abs(n.std() - 1) < 0.02


def test_a_seed_fixes_each_context_sequence_and_runs_draw_anew():
    attrs = {"shape": [1000], "seed": 42.0}
    first = single("RandomUniform", attrs)
    a1, a2 = first.run([])[0], first.run([])[0]
    assert not np.array_equal(a1, a2)  # the stream goes on from run to run
    second = single("RandomUniform", attrs)
    b1, b2 = second.run([])[0], second.run([])[0]
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    first.reset_state()  # the stream starts again
    np.testing.assert_array_equal(first.run([])[0], a1)
    other = single("RandomUniform", {"shape": [1000], "seed": 43.0}).run([])[0]
    assert not np.array_equal(other, a1)


def test_without_a_seed_every_model_draws_differently():
    a = single("RandomUniform", {"shape": [1000]}).run([])[0]
    b = single("RandomUniform", {"shape": [1000]}).run([])[0]
    assert not np.array_equal(a, b)


def test_a_sampler_of_a_constant_is_not_folded():
    m = single("RandomNormalLike", {"seed": 1.0}, [("c:x", np.zeros((64,), np.float32))])
    assert not np.array_equal(m.run([])[0], m.run([])[0])


def test_a_saved_model_keeps_the_seeded_stream(tmp_path):
    m = single("RandomNormal", {"shape": [64], "seed": 9.0})
    path = os.path.join(tmp_path, "normal.weft")
    m.save(path)
    want = m.run([])[0]
    got = session().load_model(path).run([])[0]
    np.testing.assert_array_equal(got, want)


def test_bernoulli_frequencies_follow_p():
    p = np.repeat(np.array([0.0, 0.2, 0.5, 0.9, 1.0]), 40_000).astype(np.float64)
    (y,) = single("Bernoulli", {"seed": 3.0}, [("p", p)]).run([p])
    assert y.dtype == np.float64 and set(np.unique(y)) <= {0.0, 1.0}
    freq = y.reshape(5, -1).mean(axis=1)
    assert freq[0] == 0 and freq[4] == 1
    for f, q in zip(freq[1:4], (0.2, 0.5, 0.9)):
        assert abs(f - q) < 5 * math.sqrt(q * (1 - q) / 40_000), (f, q)
    (b,) = single("Bernoulli", {"seed": 3.0, "dtype": TensorProto.BOOL}, [("p", p)]).run([p])
    assert b.dtype == np.bool_
    np.testing.assert_array_equal(b, y.astype(bool))  # the same draws in another type


def test_bernoulli_refuses_a_probability_outside_0_1():
    p = np.array([0.5, 1.5, 0.2], np.float32)
    with pytest.raises(Exception, match=r"probability 1\.5.*element 1"):
        single("Bernoulli", {}, [("p", p)]).run([p])
    p = np.array([0.5, np.nan], np.float32)
    with pytest.raises(Exception, match="element 1"):
        single("Bernoulli", {}, [("p", p)]).run([p])


def test_multinomial_frequencies_follow_the_softmax():
    with np.errstate(divide="ignore"):  # log 0 = -inf: never drawn
        logits = np.log(np.array([[1.0, 2.0, 3.0, 0.0], [5.0, 1.0, 1.0, 1.0]], np.float32))
    samples = 60_000
    (y,) = single("Multinomial", {"seed": 4.0, "sample_size": samples, "dtype": TensorProto.INT64}, [("x", logits)]).run([logits])
    assert y.dtype == np.int64 and y.shape == (2, samples)
    for row, weights in zip(y, ([1, 2, 3, 0], [5, 1, 1, 1])):
        p = np.array(weights, np.float64) / sum(weights)
        counts = np.bincount(row, minlength=4)
        assert counts[p == 0].sum() == 0
        live = p > 0
        chi2 = (((counts[live] - samples * p[live]) ** 2) / (samples * p[live])).sum()
        assert chi2 < 20, (counts, chi2)  # 3 degrees of freedom: P(chi2 > 20) < 2e-4
    (i32,) = single("Multinomial", {"seed": 4.0, "sample_size": 5}, [("x", logits)]).run([logits])
    assert i32.dtype == np.int32


def test_multinomial_refuses_rows_without_a_distribution():
    x = np.array([[0.0, 1.0], [-np.inf, -np.inf]], np.float32)
    with pytest.raises(Exception, match="row 1"):
        single("Multinomial", {"sample_size": 3}, [("x", x)]).run([x])
    x = np.array([[0.0, np.nan]], np.float32)
    with pytest.raises(Exception, match="row 0"):
        single("Multinomial", {"sample_size": 3}, [("x", x)]).run([x])


def test_a_shape_too_large_for_memory_is_an_error():
    with pytest.raises(Exception, match="RandomUniform"):
        single("RandomUniform", {"shape": [1 << 40, 1 << 20]}).run([])


def test_training_dropout_drops_the_ratio_and_scales_the_rest():
    x = np.ones((N,), np.float32)
    ratio = np.array(0.3, np.float32)
    training = np.array(True)
    m = single("Dropout", {"seed": 8}, [("x", x), ("c:r", ratio), ("c:t", training)], outputs=2)
    y, mask = m.run([x])
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(y != 0, mask)
    np.testing.assert_allclose(y[mask], 1 / 0.7, rtol=1e-6)
    assert abs((~mask).mean() - 0.3) < 5 * math.sqrt(0.3 * 0.7 / N)
    y2, _ = m.run([x])
    assert not np.array_equal(y, y2)
    # training_mode false (an input here): the input unchanged, every element kept
    m = single("Dropout", {}, [("x", x), ("c:r", ratio), ("t", training)], outputs=2)
    y, mask = m.run([x, np.array(False)])
    np.testing.assert_array_equal(y, x)
    assert mask.all()
    # ratio 1 drops everything
    y, mask = single("Dropout", {}, [("x", x[:100]), ("c:r", np.array(1.0, np.float32)), ("c:t", training)], outputs=2).run([x[:100]])
    assert not y.any() and not mask.any()


def test_uniform_values_stay_below_high_after_rounding():
    # float16 rounds many draws near 1 up to 1.0; a range two float32 steps wide rounds half of them
    (h,) = single("RandomUniform", {"shape": [1 << 20], "seed": 7.0, "dtype": TensorProto.FLOAT16}).run([])
    assert h.dtype == np.float16 and h.max() < 1.0 and h.min() >= 0.0
    (n,) = single("RandomUniform", {"shape": [10000], "low": 5.0, "high": 5.0000005, "seed": 1.0}).run([])
    assert n.max() < np.float32(5.0000005) and n.min() >= np.float32(5.0)


def test_a_type_weft_does_not_hold_is_refused_by_its_onnx_name():
    p = np.array([0.5], np.float32)
    with pytest.raises(Exception, match="ONNX type STRING"):
        single("Bernoulli", {"dtype": TensorProto.STRING}, [("p", p)])
    with pytest.raises(Exception, match="ONNX type COMPLEX64"):
        single("RandomUniform", {"shape": [2], "dtype": TensorProto.COMPLEX64})
