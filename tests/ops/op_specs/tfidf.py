"""Cases for TfIdfVectorizer on token ids: [C] and [B, C] inputs of int32 and int64, pools of
unigrams to trigrams (some levels empty), every mode with and without weights, gram lengths and
skip counts from none to more than the row, columns shared by several n-grams. The must-fail
cases name what a good error has to mention."""
import numpy as np

from .common import BadCase, Case, spec


def _pool(rng, max_len, vocab):
    """Distinct n-grams per length 1..max_len (a length may have none): (pool, ngram_counts, count)."""
    pool, counts, total = [], [], 0
    for n in range(1, max_len + 1):
        counts.append(len(pool))
        grams = {tuple(int(t) for t in rng.integers(0, vocab, n)) for _ in range(int(rng.integers(0, 6)))}
        for g in sorted(grams):
            pool.extend(g)
        total += len(grams)
    return pool, counts, total


@spec("TfIdfVectorizer")
def tfidf(rng, op):
    for trial in range(24):
        vocab = 4 + trial % 5
        max_len = 1 + trial % 3
        min_len = 1 + int(rng.integers(0, max_len))
        pool, counts, total = _pool(rng, max_len, vocab)
        if total == 0:
            pool, counts, total = [0], [0] + [1] * (max_len - 1), 1
        # a permutation of the columns, or columns shared by several n-grams. Weights are per
        # n-gram in pool order (the onnx package's evaluator reads them per column instead).
        indexes = rng.permutation(total) if trial % 4 else rng.integers(0, max(total - 1, 1), total)
        mode = ("TF", "IDF", "TFIDF")[trial % 3]
        attrs = {"min_gram_length": min_len, "max_gram_length": max_len, "max_skip_count": int(trial % 4 if trial < 20 else 30),
                 "mode": mode, "ngram_counts": counts, "ngram_indexes": [int(i) for i in indexes], "pool_int64s": pool}
        if trial % 2:
            attrs["weights"] = [float(w) for w in rng.uniform(0.1, 3.0, total)]
        dt = np.int32 if trial % 3 == 1 else np.int64
        shp = (int(rng.integers(1, 12)),) if trial % 2 == 0 else (int(rng.integers(1, 4)), int(rng.integers(1, 12)))
        yield Case([rng.integers(0, vocab, shp).astype(dt)], attrs=attrs, opset=9)
    base = {"min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 1, "mode": "TF", "ngram_counts": [0, 2],
            "ngram_indexes": [0, 1, 2], "pool_int64s": [1, 2, 1, 2]}
    x = np.array([1, 2, 1, 2], np.int64)
    yield BadCase([x], attrs={**base, "mode": "BM25"}, opset=9, error="mode")
    yield BadCase([x], attrs={**base, "ngram_indexes": [0, 1]}, opset=9, error="more n-grams than ngram_indexes")
    yield BadCase([x], attrs={**base, "ngram_counts": [0, 3], "pool_int64s": [1, 2, 3, 4]}, opset=9, error="not a multiple of 2")
    yield BadCase([x], attrs={**base, "pool_int64s": [1, 1, 1, 2]}, opset=9, error="twice")
    yield BadCase([x], attrs={**base, "ngram_counts": [1, 2]}, opset=9, error="must start at 0")
    yield BadCase([x], attrs={**base, "ngram_counts": [0, 9]}, opset=9, error="ngram_counts")
    yield BadCase([x], attrs={**base, "ngram_indexes": [0, -1, 2]}, opset=9, error="ngram_indexes[1]")
    yield BadCase([x], attrs={**base, "weights": [1.0]}, opset=9, error="weights")
    yield BadCase([x], attrs={**base, "min_gram_length": 3}, opset=9, error="min_gram_length")
    yield BadCase([x.reshape(1, 2, 2)], attrs=base, opset=9, error="[B, C]")
