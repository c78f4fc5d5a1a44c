"""ONNX Runtime's MatMulNBits (com.microsoft: weight-only block quantization, what its
MatMulNBitsQuantizer and model builder write for language models): hand-built nodes over the
widths, block sizes, zero-point forms and bias, against ONNX Runtime and against a
NumPy float64 re-computation from the packed codes; and errors for what it does not take."""
import os
import subprocess

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

MS = "com.microsoft"


def pack(codes, bits):
    """Codes (ints < 2^bits) along the last axis packed low bit first into bytes."""
    *lead, n = codes.shape
    nbytes = (n * bits + 7) // 8
    out = np.zeros(lead + [nbytes], np.uint8)
    for i in range(n):
        for b in range(bits):
            at = i * bits + b
            out[..., at // 8] |= (((codes[..., i] >> b) & 1) << (at % 8)).astype(np.uint8)
    return out


def build(tmp_path, rng, K, N, bits, block, zp_kind, bias, g_idx, rows=(3, 5), name="m.onnx"):
    blocks = (K + block - 1) // block
    codes = rng.integers(0, 2 ** bits, (N, blocks, block))
    B = pack(codes, bits)  # [N, blocks, blob]
    scales = rng.uniform(0.01, 0.05, (N, blocks)).astype(np.float32)
    inits = {"B": B, "scales": scales.reshape(-1)}
    names = ["A", "B", "scales"]
    if zp_kind == "packed":
        z = rng.integers(0, 2 ** bits, (N, blocks))
        inits["zp"] = pack(z, bits).reshape(-1)
        zf = z.astype(np.float64)
    elif zp_kind == "float":
        zf = rng.uniform(0, 2 ** bits - 1, (N, blocks)).astype(np.float32)
        inits["zp"] = zf.reshape(-1)
        zf = zf.astype(np.float64)
    else:
        zf = np.full((N, blocks), 2 ** (bits - 1), np.float64)
    names.append("zp" if zp_kind else "")
    gi = None
    if g_idx:
        gi = rng.integers(0, blocks, K).astype(np.int32)
        inits["g_idx"] = gi
    names.append("g_idx" if g_idx else "")
    if bias:
        inits["bias"] = rng.standard_normal(N).astype(np.float32)
    names.append("bias" if bias else "")
    while names[-1] == "":
        names.pop()
    node = helper.make_node("MatMulNBits", names, ["Y"], domain=MS, K=K, N=N, bits=bits, block_size=block)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("A", TensorProto.FLOAT, list(rows) + [K])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    path = str(tmp_path / name)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=8), path)
    # float64: W[k, n] = (code - zero point) * scale of k's block
    W = np.zeros((K, N))
    for k in range(K):
        blk = gi[k] if gi is not None else k // block
        W[k] = (codes[:, k // block, k % block] - zf[:, blk]) * scales[:, blk]
    return path, W, inits.get("bias")


CASES = [  # K, N, bits, block_size, zero points, bias, g_idx
    (64, 48, 4, 32, None, False, False),
    (96, 40, 4, 32, "packed", True, False),
    (200, 33, 4, 64, "packed", False, False),  # K not a multiple of the block: the last block is partial
    (128, 24, 4, 16, "float", True, False),
    (256, 64, 8, 128, "packed", True, False),
    (64, 20, 2, 32, "packed", False, False),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_onnxruntime_and_float64(tmp_path, case):
    K, N, bits, block, zp, bias, g_idx = CASES[case]
    rng = np.random.default_rng(case)
    path, W, b = build(tmp_path, rng, K, N, bits, block, zp, bias, g_idx)
    a = rng.standard_normal((3, 5, K)).astype(np.float32)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([a])[0]
    ref = a.astype(np.float64) @ W + (b if b is not None else 0)
    assert got.shape == (3, 5, N)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    try:
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"A": a})[0]
    except Exception as e:  # noqa: BLE001 - a form this ONNX Runtime build does not run on CPU
        pytest.skip(f"ONNX Runtime does not run this form: {str(e)[:120]}")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_errors_name_what_is_wrong(tmp_path):
    rng = np.random.default_rng(0)
    path, _, _ = build(tmp_path, rng, 64, 16, 4, 32, None, False, False)
    m = onnx.load(path)
    m.graph.node[0].attribute[3].i = 24  # block_size not a power of 2
    onnx.save(m, path)
    with pytest.raises(Exception, match="block_size is 24"):
        weft.import_onnx(path)
    path, _, _ = build(tmp_path, rng, 64, 16, 4, 32, None, False, False, name="b.onnx")
    m = onnx.load(path)
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.zeros((16, 2, 8), np.uint8), "B"))  # blob 16 expected
    onnx.save(m, path)
    with pytest.raises(Exception, match=r"B \[16,2,8\] must be uint8 \[N 16, k_blocks 2, blob 16\]"):
        weft.import_onnx(path)
    # a block size whose blob would overflow (B empty, scales one per column): refused, not read
    for bits in (3, 5, 4):
        path, _, _ = build(tmp_path, rng, 64, 32, 4, 64, None, False, False, name=f"huge{bits}.onnx")
        m = onnx.load(path)
        node = m.graph.node[0]
        for a in node.attribute:
            if a.name == "block_size":
                a.i = 2 ** 62
            if a.name == "bits":
                a.i = bits
        m.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.zeros(0, np.uint8), "B"))
        m.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.ones(32, np.float32), "scales"))
        onnx.save(m, path)
        with pytest.raises(Exception, match="block_size is 4611686018427387904"):
            weft.import_onnx(path)
    # act-order block indices: deprecated, and read differently by ONNX Runtime's CPU kernel
    path, _, _ = build(tmp_path, rng, 64, 16, 4, 32, "packed", False, True, name="g.onnx")
    with pytest.raises(Exception, match="g_idx .* is not supported"):
        weft.import_onnx(path)


def test_float16_activations(tmp_path):
    """A and scales in float16 (what the model builder writes for GPUs and some CPUs): the
    dequantized weights are rounded to float16 as ONNX Runtime's are."""
    rng = np.random.default_rng(42)
    path, W, b = build(tmp_path, rng, 64, 32, 4, 32, "packed", True, False)
    m = onnx.load(path)
    for t in m.graph.initializer:
        if t.name in ("scales", "bias"):
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.save(m, path)
    a = rng.standard_normal((3, 5, 64)).astype(np.float16)
    got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([a])[0]
    assert got.dtype == np.float16 and got.shape == (3, 5, 32)
    try:
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"A": a})[0]
    except Exception as e:  # noqa: BLE001 - a form this ONNX Runtime build does not run on CPU
        pytest.skip(f"ONNX Runtime does not run float16 MatMulNBits here: {str(e)[:120]}")
    # float16 outputs: within two of their units in the last place at the largest output
    ulp = float(np.spacing(np.float16(np.abs(want).max())))
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=0, atol=2 * ulp)


NATIVE = [  # K, N, bits, block_size, zero points, bias: the packed-code kernel's lane widths and forms
    (256, 80, 4, 32, "packed", True),    # 16 bytes a block: 16 lanes
    (200, 33, 4, 64, None, False),       # a partial last block
    (96, 40, 4, 16, "float", True),      # 8 bytes a block: 8 lanes
    (128, 24, 8, 16, "packed", False),
    (160, 18, 2, 32, "packed", True),    # 8 bytes a block
    (64, 20, 1, 16, None, True),         # 2 bytes a block
    (512, 300, 4, 128, "packed", True),  # many columns: chunks over the threads
]


def steps_of(path):
    cli = os.environ.get("WEFT_CLI")
    if not cli:
        return None
    return subprocess.run([cli, "inspect", path, "--steps"], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("rows", [(1,), (2, 3), (8,), (1, 11), (13,), (4, 16)])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", range(len(NATIVE)))
def test_packed_codes_kernel(tmp_path, case, threads, rows):
    """float32 A with 1-, 2-, 4- and 8-bit codes runs on the packed codes: up to 12 rows straight
    from them, more through dequantized panels. Against a float64 re-computation and ONNX
    Runtime, for row counts on both sides of that split, at 1 and 2 threads."""
    K, N, bits, block, zp, bias = NATIVE[case]
    rng = np.random.default_rng(100 + case)
    path, W, b = build(tmp_path, rng, K, N, bits, block, zp, bias, False, rows=rows)
    a = rng.standard_normal(tuple(rows) + (K,)).astype(np.float32)
    got = weft.Session(threads=threads, use_env_path=False).compile(weft.import_onnx(path)).run([a])[0]
    ref = a.astype(np.float64) @ W + (b if b is not None else 0)
    assert got.shape == tuple(rows) + (N,)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    if bits == 1:
        return  # ONNX Runtime's CPU kernel takes 2, 4 and 8 bits
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"A": a})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_codes_stay_packed(tmp_path):
    """The imported graph keeps the packed codes (no float32 copy of the weights) and runs one
    MatMulNBits step; 3-bit codes, which straddle bytes, are dequantized at import instead."""
    rng = np.random.default_rng(7)
    path, _, _ = build(tmp_path, rng, 1024, 512, 4, 32, "packed", True, False, rows=("rows",))
    g = weft.import_onnx(path)
    out = tmp_path / "m.weft"
    s = weft.Session(use_env_path=False)
    model = s.compile(g)
    model.save(str(out))
    # 1024 x 512 weights: 256 KiB of codes; as float32 they would be 2 MiB
    assert out.stat().st_size < 600_000, out.stat().st_size
    for rows in (1, 20):  # both kernels, from the loaded file
        a = rng.standard_normal((rows, 1024)).astype(np.float32)
        np.testing.assert_array_equal(s.load_model(str(out)).run([a])[0], model.run([a])[0])
    steps = steps_of(path)
    if steps is not None:
        assert " MatMulNBits " in steps and " MatMul " not in steps, steps
    path3, W, _ = build(tmp_path, rng, 64, 16, 3, 32, "packed", False, False, name="three.onnx")
    steps = steps_of(path3)
    if steps is not None:
        assert " MatMul " in steps and " MatMulNBits " not in steps, steps


def test_portable_loops(tmp_path):
    """The loops a CPU without AVX-512 runs (WEFT_DISABLE_AVX512=1, in a child process), for row
    counts on both sides of the split and each code width, against the float64 re-computation."""
    import sys
    rng = np.random.default_rng(11)
    cases = []
    for i, (K, N, bits, block, zp, bias) in enumerate(NATIVE[:6]):
        for rows in ((3,), (2, 10)):
            path, W, b = build(tmp_path, rng, K, N, bits, block, zp, bias, False, rows=rows, name=f"p{i}_{len(rows)}.onnx")
            a = rng.standard_normal(tuple(rows) + (K,)).astype(np.float32)
            ref = a.astype(np.float64) @ W + (b if b is not None else 0)
            np.savez(tmp_path / f"p{i}_{len(rows)}.npz", a=a, ref=ref)
            cases.append((path, str(tmp_path / f"p{i}_{len(rows)}.npz")))
    script = ("import sys, numpy as np, weft\n"
              "for path, io in zip(sys.argv[1::2], sys.argv[2::2]):\n"
              "    d = np.load(io)\n"
              "    for t in (1, 2):\n"
              "        got = weft.Session(threads=t, use_env_path=False).compile(weft.import_onnx(path)).run([d['a']])[0]\n"
              "        np.testing.assert_allclose(got, d['ref'], rtol=1e-5, atol=1e-5 * np.abs(d['ref']).max(), err_msg=path)\n")
    env = dict(os.environ, WEFT_DISABLE_AVX512="1")
    done = subprocess.run([sys.executable, "-c", script] + [x for c in cases for x in c], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("case", [0, 2, 3, 4])
def test_generated_c(tmp_path, case):
    """weft aot: the C of MatMulNBits (strict C99, from the packed codes) gives the runtime's
    values within float32 rounding of the sums' order."""
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    from aot_onnx_check import check_c_against_runtime
    K, N, bits, block, zp, bias = NATIVE[case]
    rng = np.random.default_rng(300 + case)
    path, _, _ = build(tmp_path, rng, K, N, bits, block, zp, bias, False, rows=(1, 3))
    check_c_against_runtime(tmp_path, path, {"A": rng.standard_normal((1, 3, K)).astype(np.float32)}, atol=2e-5, rtol=2e-5)


def gather_model(tmp_path, rng, V, dims, bits, block, zp, idx_shape, idx_type=TensorProto.INT64, name="g.onnx"):
    """GatherBlockQuantized over a [V, *dims] table: its initializers and the float64 table."""
    C = dims[-1]
    blocks = (C + block - 1) // block
    codes = rng.integers(0, 2 ** bits, (V,) + tuple(dims[:-1]) + (blocks * block,))
    data = codes[..., :C]
    if bits == 4:
        data = (data[..., 0::2] | (data[..., 1::2] << 4))
    scales = rng.uniform(0.01, 0.1, (V,) + tuple(dims[:-1]) + (blocks,)).astype(np.float32)
    inits = [numpy_helper.from_array(data.astype(np.uint8), "data"), numpy_helper.from_array(scales, "scales")]
    z = np.full((V,) + tuple(dims[:-1]) + (blocks,), 2 ** (bits - 1))
    names = ["data", "indices", "scales"]
    if zp:
        z = rng.integers(0, 2 ** bits, z.shape)
        zz = np.concatenate([z, np.zeros(z.shape[:-1] + (blocks % 2,), z.dtype)], -1) if bits == 4 else z
        packed = (zz[..., 0::2] | (zz[..., 1::2] << 4)) if bits == 4 else zz
        inits.append(numpy_helper.from_array(packed.astype(np.uint8), "zp"))
        names.append("zp")
    table = (codes[..., :C] - np.repeat(z, block, -1)[..., :C]) * np.repeat(scales.astype(np.float64), block, -1)[..., :C]
    node = helper.make_node("GatherBlockQuantized", names, ["y"], domain=MS, bits=bits, block_size=block, gather_axis=0, quantize_axis=len(dims))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("indices", idx_type, list(idx_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    path = str(tmp_path / name)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=8), path)
    return path, table


@pytest.mark.parametrize("case", [(50, (64,), 4, 32, False), (50, (96,), 4, 32, True), (20, (3, 48), 8, 16, True), (30, (80,), 8, 64, False)])
def test_gather_block_quantized(tmp_path, case):
    """Embedding rows of a 4- or 8-bit block-quantized table (tied embeddings of language models):
    against the float64 table and ONNX Runtime, negative indices and int32 indices too."""
    V, dims, bits, block, zp = case
    rng = np.random.default_rng(V)
    for idx_type, np_type in ((TensorProto.INT64, np.int64), (TensorProto.INT32, np.int32)):
        path, table = gather_model(tmp_path, rng, V, dims, bits, block, zp, (2, 3), idx_type)
        idx = rng.integers(-V, V, (2, 3)).astype(np_type)
        got = weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([idx])[0]
        np.testing.assert_allclose(got, table[idx], rtol=1e-6, atol=1e-7)
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"indices": idx})[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    with pytest.raises(Exception, match=f"index {V} is outside the table's {V} rows"):
        weft.Session(use_env_path=False).compile(weft.import_onnx(path)).run([np.full((2, 3), V, np_type)])
