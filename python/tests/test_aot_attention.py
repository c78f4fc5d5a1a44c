"""weft aot on ONNX Attention (float32): the module, built as strict C99, against the operator's
definition recomputed in float64 (test_onnx_attention.attention_ref), on grouped heads, 3-D and
4-D forms, bool and additive masks shorter than the keys, a key/value cache with and without the
present outputs, per-sequence valid key counts, causal and sliding windows, soft-capping and the
score outputs."""
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aot_onnx_check import STRICT  # noqa: E402
from test_onnx_attention import attention_ref, qkv, rand  # noqa: E402

import weft  # noqa: E402

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def build_and_check(tmp_path, node, feeds, want, atol=2e-5, rtol=1e-4):
    """Writes the one-node model, checks Weft's runtime against `want`, then generates, builds and
    runs the C module with `want` as its golden outputs."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("needs a C compiler")
    ins = [helper.make_tensor_value_info(n, numpy_helper.from_array(v).data_type, list(v.shape)) for n, v in feeds.items()]
    outs = [o for o in node.output if o]
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(w.shape)) for o, w in zip(outs, want)])
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)], ir_version=10), path)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run(list(feeds.values()))
    for o, g_, w in zip(outs, got, want):
        np.testing.assert_allclose(g_, w, atol=atol, rtol=rtol, err_msg=f"the runtime's {o}")
    out = tmp_path / "c"
    weft.generate_c(path, out, prefix="att", test_inputs=feeds, test_outputs=dict(zip(outs, want)), atol=atol, rtol=rtol)
    exe = str(tmp_path / "att_test")
    subprocess.run([cc, *STRICT, "-O1", f"-I{out}/includes-api", f"-I{out}/src", f"-I{out}/test", *sorted(glob.glob(f"{out}/src/*.c")),
                    *sorted(glob.glob(f"{out}/test/*.c")), "-o", exe, "-lm"], check=True)
    res = subprocess.run([exe], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def f32(xs):
    return [np.asarray(x, np.float32) for x in xs]


@pytest.mark.parametrize("rank3", [False, True])
def test_grouped_heads_causal_with_a_cache(tmp_path, rank3):
    rng = np.random.default_rng(1)
    B, Hq, Hkv, S, L, P, h, hv = 2, 4, 2, 3, 3, 4, 8, 6
    q, k, v, heads = qkv(rng, rank3, B, Hq, Hkv, S, L, h, hv)
    pk, pv = rand(rng, (B, Hkv, P, h)), rand(rng, (B, Hkv, P, hv))
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "ck", "cv"], is_causal=1, **heads)
    y, ck, cv, _ = attention_ref(q, k, v, past=(pk, pv), causal=True, qh=Hq, kvh=Hkv)
    build_and_check(tmp_path, node, {"q": q, "k": k, "v": v, "pk": pk, "pv": pv}, f32([y, ck, cv]))


def test_a_cache_without_the_present_outputs(tmp_path):
    rng = np.random.default_rng(2)
    q, k, v, _ = qkv(rng, False, 1, 2, 1, 2, 2, 4, 4)
    pk, pv = rand(rng, (1, 1, 5, 4)), rand(rng, (1, 1, 5, 4))
    node = helper.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y"], scale=0.3)
    y = attention_ref(q, k, v, past=(pk, pv), scale=0.3)[0]
    build_and_check(tmp_path, node, {"q": q, "k": k, "v": v, "pk": pk, "pv": pv}, f32([y]))


@pytest.mark.parametrize("mode", [0, 3])
def test_bool_mask_shorter_than_the_keys_softcap_and_scores(tmp_path, mode):
    rng = np.random.default_rng(3 + mode)
    B, Hq, Hkv, S, L, h, hv = 2, 2, 2, 4, 6, 4, 5
    q, k, v, heads = qkv(rng, True, B, Hq, Hkv, S, L, h, hv)
    mask = rng.random((B, 1, S, L - 1)) > 0.3
    mask[0, 0, 1, :] = False  # a row that sees no key: zeros
    y, _, _, qk = attention_ref(q, k, v, mask=mask, softcap=2.0, mode=mode, qh=Hq, kvh=Hkv)
    assert not y[0, 1, :hv].any()
    # the present key and value: K and V in the 4-D form
    ck = k.reshape(B, L, Hkv, h).transpose(0, 2, 1, 3)
    cv = v.reshape(B, L, Hkv, hv).transpose(0, 2, 1, 3)
    node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y", "ck", "cv", "qk"], softcap=2.0, qk_matmul_output_mode=mode, **heads)
    build_and_check(tmp_path, node, {"q": q, "k": k, "v": v, "m": mask}, f32([y, ck, cv, qk]))


@pytest.mark.parametrize("left,right", [(1, 0), (2, 1), (-1, 1)])
def test_additive_mask_and_sliding_windows(tmp_path, left, right):
    rng = np.random.default_rng(10 + left)
    B, Hq, Hkv, S, L, h, hv = 1, 3, 1, 5, 5, 4, 4
    q, k, v, _ = qkv(rng, False, B, Hq, Hkv, S, L, h, hv)
    mask = rand(rng, (S, L))
    y, _, _, qk = attention_ref(q, k, v, mask=mask, left=left, right=right, mode=2)
    node = helper.make_node("Attention", ["q", "k", "v", "m"], ["y", "ck", "cv", "qk"], left_window_size=left, right_window_size=right,
                            qk_matmul_output_mode=2)
    build_and_check(tmp_path, node, {"q": q, "k": k, "v": v, "m": mask}, f32([y, k, v, qk]))


def test_valid_key_counts_with_causal_masking(tmp_path):
    rng = np.random.default_rng(20)
    B, Hq, Hkv, S, L, h, hv = 3, 2, 1, 3, 6, 4, 3
    q, k, v, _ = qkv(rng, False, B, Hq, Hkv, S, L, h, hv)
    nonpad = np.array([6, 4, 0], np.int64)  # the last sequence has no valid key: zeros
    node = helper.make_node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"], is_causal=1)
    y = attention_ref(q, k, v, nonpad=nonpad, causal=True)[0]
    assert not y[2].any()
    build_and_check(tmp_path, node, {"q": q, "k": k, "v": v, "n": nonpad}, f32([y]))


@pytest.mark.parametrize("left,causal", [(1, 0), (-1, 1)])
def test_valid_key_counts_far_outside_the_keys(tmp_path, left, causal):
    # Hostile counts (the int64 extremes) with a window or causal masking: no overflow in the
    # runtime or the C. The reference takes them held within +-2^62, where every comparison of the
    # definition comes out the same (and NumPy's int64 sums do not wrap).
    rng = np.random.default_rng(21)
    q, k, v, _ = qkv(rng, False, 3, 2, 1, 3, 5, 4, 3)
    nonpad = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 3], np.int64)
    node = helper.make_node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"], is_causal=causal, left_window_size=left)
    y = attention_ref(q, k, v, nonpad=np.clip(nonpad, -2**62, 2**62), causal=bool(causal), left=left)[0]
    assert not y[0].any()
    build_and_check(tmp_path, node, {"q": q, "k": k, "v": v, "n": nonpad}, f32([y]))


def test_float16_is_refused_naming_the_type(tmp_path):
    q = np.ones((1, 1, 2, 4), np.float16)
    g = helper.make_graph([helper.make_node("Attention", ["q", "q", "q"], ["y"])], "g",
                          [helper.make_tensor_value_info("q", TensorProto.FLOAT16, [1, 1, 2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 1, 2, 4])])
    path = str(tmp_path / "m.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10), path)
    with pytest.raises(Exception, match="float16"):
        weft.generate_c(path, tmp_path / "c", prefix="att", test_inputs={"q": q})
