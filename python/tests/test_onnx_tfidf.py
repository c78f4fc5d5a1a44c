"""TfIdfVectorizer beyond the random conformance cases (tests/ops/op_specs/tfidf.py): a skip count
larger than any row, IDF where several n-grams share a column (the one found last in the row wins,
as in ONNX Runtime), and pools that are not well formed, refused by name."""
import os
import tempfile

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402


def tfidf(attrs, x, with_ort=False):
    """Weft's output, and ONNX Runtime's with `with_ort`."""
    node = helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.INT64, list(x.shape))],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)], ir_version=8)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        onnx.save(m, path)
        got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([x])[0]
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0] if with_ort else None
        return got, want


BASE = dict(min_gram_length=1, max_gram_length=2, mode="TF", ngram_counts=[0, 2], ngram_indexes=[0, 1, 2], pool_int64s=[1, 2, 1, 2])


def test_skip_counts_beyond_the_row_count_every_gap_once():
    x = np.array([1, 2, 1, 3, 2, 1, 2], np.int64)
    want, _ = tfidf(dict(BASE, max_skip_count=6), x)
    np.testing.assert_array_equal(want, [3, 3, 6])
    for skip in (7, 1000, 2**62, 2**63 - 1):  # the largest would overflow skip + 1
        got, _ = tfidf(dict(BASE, max_skip_count=skip), x)
        np.testing.assert_array_equal(got, want, err_msg=str(skip))


def test_idf_with_a_shared_column_takes_the_ngram_found_last():
    rng = np.random.default_rng(4)
    for trial in range(20):
        attrs = dict(min_gram_length=1, max_gram_length=1, max_skip_count=0, mode="IDF", ngram_counts=[0],
                     ngram_indexes=[0, 0, 1, 1], pool_int64s=[0, 1, 2, 3], weights=[float(w) for w in rng.uniform(0.5, 2, 4)])
        x = rng.integers(0, 5, (3, 6)).astype(np.int64)
        got, want = tfidf(attrs, x, with_ort=True)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"trial {trial}")


def test_gram_lengths_beyond_the_row_count_nothing():
    x = np.array([1, 2, 1, 2], np.int64)
    got, _ = tfidf(dict(BASE, max_skip_count=3, min_gram_length=2**62, max_gram_length=2**62 + 1), x)
    np.testing.assert_array_equal(got, [0, 0, 0])
    got, _ = tfidf(dict(BASE, max_skip_count=2, max_gram_length=2**62), x)  # unigrams and bigrams still count
    want, _ = tfidf(dict(BASE, max_skip_count=2), x)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("change,error", [({"ngram_counts": [1, 2]}, "must start at 0"),
                                          ({"pool_int64s": [1, 1, 1, 2]}, "twice"),
                                          ({"ngram_indexes": [0, 1]}, "more n-grams than ngram_indexes")])
def test_malformed_pools_are_refused(change, error):
    with pytest.raises(Exception, match=error):
        tfidf(dict(BASE, max_skip_count=0, **change), np.array([1, 2], np.int64))
