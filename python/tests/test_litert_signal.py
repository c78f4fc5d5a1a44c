"""TFLM's signal library ops (the audio front end of keyword-spotting models: SignalWindow,
SignalFftAutoScale, SignalRfft, SignalEnergy, SignalFilterBank, SignalFilterBankSquareRoot,
SignalFilterBankSpectralSubtraction, SignalPCAN, SignalFilterBankLog) against TFLM's own
interpreter (PyPI tflite-micro), bit for bit: the corpora's audio preprocessors over runs that carry
state, and each op alone on random inputs and options. Their C in weft aot matches too."""
import os
import re
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402
from test_aot import build_and_run  # noqa: E402

tflm = pytest.importorskip("tflite_micro.python.tflite_micro.runtime")
flexbuffers = pytest.importorskip("flatbuffers.flexbuffers")

CORPORA = os.environ.get("WEFT_CORPORA", os.path.join(ROOT, "..", "shared", "corpora"))
PREPROCESSORS = [os.path.join(CORPORA, "tflite-micro", "examples", "micro_speech", "models", f"audio_preprocessor_{k}.tflite")
                 for k in ("int8", "float")]
RNG = np.random.default_rng(2024)


def frames(count, rng):
    """Audio frames [1, 480] of every loudness: noise, tones, silence, full scale."""
    out = []
    for k in range(count):
        amp = [30000, 3000, 300, 30, 3, 0, 32767][k % 7]
        if k % 5 == 3:
            x = amp * np.sin(np.arange(480) * (0.05 + 0.07 * k))
        else:
            x = rng.integers(-amp - 1, amp + 1, 480) if amp else np.zeros(480)
        out.append(np.clip(x, -32768, 32767).astype(np.int16).reshape(1, 480))
    return out


@pytest.mark.parametrize("path", PREPROCESSORS, ids=["int8", "float"])
def test_audio_preprocessors_match_tflm_run_after_run(path):
    if not os.path.exists(path):
        pytest.skip(f"needs the test corpora ({path})")
    it = tflm.Interpreter.from_file(path, arena_size=1 << 20)
    model = weft.Session(use_env_path=False).compile(weft.import_litert(path))
    xs = frames(42, np.random.default_rng(5))
    for sequence in range(2):  # the second time from a reset state, as a new interpreter starts
        for k, x in enumerate(xs):
            it.set_input(x, 0)
            it.invoke()
            want = it.get_output(0)
            (got,) = model.run([x])
            np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"sequence {sequence}, frame {k}")
        model.reset_state()
        it = tflm.Interpreter.from_file(path, arena_size=1 << 20)


def one_op(tmp_path, code, inputs, outputs, options, feeds, consts=None):
    """A model of one custom operator; returns (Weft's outputs, TFLM's outputs, path)."""
    consts = consts or {}
    m = Model()
    ts = [m.tensor(n, s, d, data=consts.get(n)) for n, s, d in inputs]
    to = [m.tensor(n, s, d) for n, s, d in outputs]
    m.custom(code, ts, to, options=flexbuffers.Dumps(options) if options else b"")
    path = str(tmp_path / f"{code}.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([t for t, (n, _, _) in zip(ts, inputs) if n not in consts], to))
    it = tflm.Interpreter.from_file(path, arena_size=1 << 20)
    for k, v in enumerate(feeds):
        it.set_input(v, k)
    it.invoke()
    want = [it.get_output(k) for k in range(len(outputs))]
    got = weft.Session(use_env_path=False).compile(weft.import_litert(path)).run(feeds)
    return got, want, path


def same(got, want):
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).reshape(np.shape(w)), w)


# radix-4 (512, 64), with radix 2 (8, 12), 3 (96, 12, 240), 5 (40, 240); rows shorter than
# fft_length are zero-padded; several rows at once.
@pytest.mark.parametrize("shape,fft_length", [([512], 512), ([1, 512], 512), ([3, 64], 64), ([2, 480], 512), ([96], 96), ([40], 40),
                                              ([12], 12), ([8], 8), ([240], 240), ([5, 33], 40)])
def test_rfft_matches_tflm(tmp_path, shape, fft_length):
    x = RNG.integers(-32768, 32768, shape).astype(np.int16)
    out = list(shape[:-1]) + [2 * (fft_length // 2 + 1)]
    got, want, _ = one_op(tmp_path, "SignalRfft", [("x", shape, "int16")], [("y", out, "int16")], {"T": 7, "fft_length": fft_length}, [x])
    same(got, want)


@pytest.mark.parametrize("fft_length", [14, 22, 2 * 49])
def test_rfft_generic_radix_is_the_dft_over_fft_length(tmp_path, fft_length):
    """Half-lengths with factors above 5 (7, 11, 7 * 7) take the generic butterfly, which TFLM's
    build cannot run; check it against a float64 DFT instead (each stage rounds once)."""
    x = (RNG.integers(-20000, 20000, fft_length)).astype(np.int16)
    m = Model()
    tx, ty = m.tensor("x", [fft_length], "int16"), m.tensor("y", [fft_length + 2], "int16")
    m.custom("SignalRfft", [tx], [ty], options=flexbuffers.Dumps({"T": 7, "fft_length": fft_length}))
    path = str(tmp_path / "g.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([tx], [ty]))
    (got,) = weft.Session(use_env_path=False).compile(weft.import_litert(path)).run([x])
    ref = np.fft.rfft(x.astype(np.float64)) / fft_length
    want = np.stack([ref.real, ref.imag], axis=-1).ravel()
    assert np.abs(got.astype(np.float64) - want).max() <= 4, np.abs(got - want).max()


@pytest.mark.parametrize("shift", [0, 12, 15])
def test_window(tmp_path, shift):
    x = RNG.integers(-32768, 32768, (3, 40)).astype(np.int16)
    w = RNG.integers(-32768, 32768, 40).astype(np.int16)  # products that saturate
    got, want, _ = one_op(tmp_path, "SignalWindow", [("x", [3, 40], "int16"), ("w", [40], "int16")], [("y", [3, 40], "int16")], {"shift": shift},
                          [x], {"w": w})
    same(got, want)


@pytest.mark.parametrize("x", [RNG.integers(-3000, 3000, 64), np.zeros(64), np.full(64, 1), [-32768] + [100] * 63, [-32768] * 64,
                               RNG.integers(-32768, 32768, 64), [5, -7, 32767, 0] * 16])
def test_fft_auto_scale(tmp_path, x):
    x = np.asarray(x, np.int16)
    got, want, _ = one_op(tmp_path, "SignalFftAutoScale", [("x", [64], "int16")], [("y", [64], "int16"), ("s", [], "int32")], None, [x])
    same(got, want)


@pytest.mark.parametrize("start,end", [(0, 33), (5, 30), (2, 4), (7, 7)])
def test_energy(tmp_path, start, end):
    x = RNG.integers(-32768, 32768, 66).astype(np.int16)
    x[:4] = -32768  # the square sums that reach 2^31
    got, want, _ = one_op(tmp_path, "SignalEnergy", [("x", [66], "int16")], [("y", [33], "uint32")], {"end_index": end, "start_index": start}, [x])
    # TFLM leaves the bins outside [start, end) unwritten; Weft writes 0 there.
    np.testing.assert_array_equal(got[0][start:end], want[0][start:end])
    assert not got[0][:start].any() and not got[0][end:].any()


def filter_bank_tables(rng, channels, bins):
    starts = np.sort(rng.integers(0, bins - 8, channels + 1)).astype(np.int16)
    widths = rng.integers(0, 8, channels + 1).astype(np.int16)
    wstarts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int16)
    total = int(widths.sum())
    weights = rng.integers(0, 4097, total).astype(np.int16)
    return weights, (4096 - weights).astype(np.int16), starts, wstarts, widths


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_filter_bank(tmp_path, seed):
    rng = np.random.default_rng(seed)
    c, k = 12, 60
    w, uw, fs, ws, wd = filter_bank_tables(rng, c, k)
    e = rng.integers(0, 2**32, k, dtype=np.uint64).astype(np.uint32)
    names = ["w", "uw", "fs", "ws", "wd"]
    got, want, _ = one_op(tmp_path, "SignalFilterBank",
                          [("e", [k], "uint32")] + [(n, [len(v)], "int16") for n, v in zip(names, (w, uw, fs, ws, wd))],
                          [("y", [c], "uint64")], {"num_channels": c}, [e], dict(zip(names, (w, uw, fs, ws, wd))))
    same(got, want)


@pytest.mark.parametrize("scale", [0, 3, 15])
def test_filter_bank_square_root(tmp_path, scale):
    x = np.concatenate([RNG.integers(0, 2**63, 20, dtype=np.uint64), RNG.integers(0, 2**32, 20, dtype=np.uint64),
                        np.array([0, 1, 2, 3, 2**32 - 1, 2**32, 2**64 - 1, 4294836225, 4294836224], np.uint64)])
    m = Model()
    tx, tsb, ty = m.tensor("x", [len(x)], "uint64"), m.tensor("s", [], "int32", data=np.array(scale, np.int32)), m.tensor("y", [len(x)], "uint32")
    m.custom("SignalFilterBankSquareRoot", [tx, tsb], [ty])
    path = str(tmp_path / "sq.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([tx], [ty]))
    it = tflm.Interpreter.from_file(path, arena_size=1 << 20)
    it.set_input(x, 0)
    it.invoke()
    (got,) = weft.Session(use_env_path=False).compile(weft.import_litert(path)).run([x])
    np.testing.assert_array_equal(got, it.get_output(0))


@pytest.mark.parametrize("clamping", [False, True])
def test_spectral_subtraction_over_runs(tmp_path, clamping):
    c = 10
    opts = {"alternate_one_minus_smoothing": 15401, "alternate_smoothing": 983, "clamping": clamping, "min_signal_remaining": 819,
            "num_channels": c, "one_minus_smoothing": 15975, "smoothing": 409, "smoothing_bits": 10, "spectral_subtraction_bits": 14}
    m = Model()
    tx, ty, tn = m.tensor("x", [c], "uint32"), m.tensor("y", [c], "uint32"), m.tensor("n", [c], "uint32")
    m.custom("SignalFilterBankSpectralSubtraction", [tx], [ty, tn], options=flexbuffers.Dumps(opts))
    path = str(tmp_path / "ss.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([tx], [ty, tn]))
    it = tflm.Interpreter.from_file(path, arena_size=1 << 20)
    model = weft.Session(use_env_path=False).compile(weft.import_litert(path))
    rng = np.random.default_rng(9)
    for step in range(12):
        x = rng.integers(0, [2**22, 2**12, 2**30][step % 3], c, dtype=np.uint64).astype(np.uint32)
        it.set_input(x, 0)
        it.invoke()
        got = model.run([x])
        same(got, [it.get_output(0), it.get_output(1)])


def test_pcan(tmp_path):
    c = 40
    lut = np.concatenate([[32767, 32767, 32767], RNG.integers(-2000, 32767, 122)]).astype(np.int16)
    x = RNG.integers(0, 2**24, c, dtype=np.uint64).astype(np.uint32)
    noise = np.concatenate([[0, 1, 2, 3], RNG.integers(0, 2**32, c - 4, dtype=np.uint64)]).astype(np.uint32)
    got, want, _ = one_op(tmp_path, "SignalPCAN", [("x", [c], "uint32"), ("n", [c], "uint32"), ("lut", [125], "int16")], [("y", [c], "uint32")],
                          {"snr_shift": 6}, [x, noise], {"lut": lut})
    same(got, want)


@pytest.mark.parametrize("scale,bits", [(64, 3), (1600, 3), (32768, 5), (1, 0), (2**31, 31)])
def test_filter_bank_log(tmp_path, scale, bits):
    x = np.concatenate([[0, 1, 2, 3, 14, 2**32 - 1], RNG.integers(0, 2**32, 40, dtype=np.uint64), RNG.integers(0, 4096, 40)]).astype(np.uint32)
    got, want, _ = one_op(tmp_path, "SignalFilterBankLog", [("x", [len(x)], "uint32")], [("y", [len(x)], "int16")],
                          {"input_correction_bits": bits, "output_scale": scale}, [x])
    same(got, want)


@pytest.mark.parametrize("path", PREPROCESSORS, ids=["int8", "float"])
def test_audio_preprocessor_as_c_matches_tflm(tmp_path, path):
    """The module of each preprocessor, on TFLM's outputs for one frame; then 8 frames in a row
    (the spectral subtraction's noise estimate carried in the context) against the runtime."""
    if not os.path.exists(path):
        pytest.skip(f"needs the test corpora ({path})")
    x = frames(1, np.random.default_rng(3))[0]
    it = tflm.Interpreter.from_file(path, arena_size=1 << 20)
    it.set_input(x, 0)
    it.invoke()
    want = it.get_output(0)
    graph = weft.import_litert(path)
    (name,) = graph.outputs
    out = tmp_path / "one"
    weft.generate_c(path, out, prefix="ap", test_inputs={graph.inputs[0][0]: x}, test_outputs={name: want.reshape(-1)})
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "steps"
    report = weft.generate_c(path, out, prefix="ap", test=True, test_steps=8)
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert report["ops"] >= 9


@pytest.mark.parametrize("code,inputs,outputs,options,consts,message", [
    ("SignalRfft", [("x", [64], "int16")], [("y", [66], "int16")], {"T": 7, "fft_length": 63}, {}, "fft_length 63 must be even"),
    ("SignalRfft", [("x", [64], "int16")], [("y", [66], "int16")], {"T": 7, "fft_length": 32}, {}, "must be at most fft_length 32"),
    ("SignalRfft", [("x", [64], "int16")], [("y", [66], "int16")], {"T": 0, "fft_length": 64}, {}, "only int16 (7) is implemented"),
    ("SignalWindow", [("x", [1, 8], "int16"), ("w", [6], "int16")], [("y", [1, 8], "int16")], {"shift": 12}, {"w": np.ones(6, np.int16)},
     "the window has 6 weights"),
    ("SignalWindow", [("x", [1, 8], "int16"), ("w", [8], "int16")], [("y", [1, 8], "int16")], {"shift": 40}, {"w": np.ones(8, np.int16)},
     "option 'shift' is 40; it must be 0 to 31"),
    ("SignalEnergy", [("x", [66], "int16")], [("y", [33], "uint32")], {"end_index": 40, "start_index": 0}, {}, "bins [0, 40) are not within"),
    ("SignalPCAN", [("x", [4], "uint32"), ("n", [4], "uint32"), ("lut", [100], "int16")], [("y", [4], "uint32")], {"snr_shift": 6},
     {"lut": np.ones(100, np.int16)}, "gain_lut has 100 entries; it needs 125"),
])
def test_bad_options_and_shapes_are_errors_naming_the_op(tmp_path, code, inputs, outputs, options, consts, message):
    m = Model()
    ts = [m.tensor(n, s, d, data=consts.get(n)) for n, s, d in inputs]
    to = [m.tensor(n, s, d) for n, s, d in outputs]
    m.custom(code, ts, to, options=flexbuffers.Dumps(options))
    path = str(tmp_path / "bad.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([t for t, (n, _, _) in zip(ts, inputs) if n not in consts], to))
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        weft.Session(use_env_path=False).compile(weft.import_litert(path))
    assert code.upper() in str(e.value)


def test_filter_bank_tables_out_of_range_are_an_error(tmp_path):
    rng = np.random.default_rng(4)
    w, uw, fs, ws, wd = filter_bank_tables(rng, 4, 30)
    fs[2], wd[2] = 28, 5  # band 2 reads past the 30 energies
    names = ["w", "uw", "fs", "ws", "wd"]
    m = Model()
    ts = [m.tensor("e", [30], "uint32")] + [m.tensor(n, [len(v)], "int16", data=v) for n, v in zip(names, (w, uw, fs, ws, wd))]
    ty = m.tensor("y", [4], "uint64")
    m.custom("SignalFilterBank", ts, [ty], options=flexbuffers.Dumps({"num_channels": 4}))
    path = str(tmp_path / "fb.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([ts[0]], [ty]))
    with pytest.raises(ValueError, match=r"SIGNALFILTERBANK: band 2 \(start 28, .* width 5\) reaches past the 30 energies"):
        weft.Session(use_env_path=False).compile(weft.import_litert(path))


def test_empty_rows_and_tensors(tmp_path):
    """Rows of 0 samples are all padding (their bins are 0); a model of empty tensors runs and its
    module builds under the strict flags."""
    m = Model()
    tx, ty = m.tensor("x", [3, 0], "int16"), m.tensor("y", [3, 10], "int16")
    m.custom("SignalRfft", [tx], [ty], options=flexbuffers.Dumps({"T": 7, "fft_length": 8}))
    path = str(tmp_path / "r0.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([tx], [ty]))
    for _ in range(3):  # fresh output buffers each time: all zeros, never what memory held
        (y,) = weft.Session(use_env_path=False).compile(weft.import_litert(path)).run([np.zeros((3, 0), np.int16)])
        np.testing.assert_array_equal(y, np.zeros((3, 10), np.int16))
    out = tmp_path / "c"
    weft.generate_c(path, out, prefix="r0", test=True)
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    m = Model()
    tx, ty = m.tensor("x", [0], "uint32"), m.tensor("y", [0], "int16")
    m.custom("SignalFilterBankLog", [tx], [ty], options=flexbuffers.Dumps({"input_correction_bits": 3, "output_scale": 1600}))
    path = str(tmp_path / "e.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([tx], [ty]))
    out = tmp_path / "e"
    weft.generate_c(path, out, prefix="e", test=True)
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
