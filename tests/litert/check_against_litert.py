"""LiteRT models in Weft against the LiteRT interpreter (PyPI ai-edge-litert) on random inputs.

    python tests/litert/check_against_litert.py [--corpora DIR] [--build DIR] [--models A,B]
                                                [--seeds 3] [--expect-fail A,B] [--tflm A,B] [--testdata]

The models: every .tflite under <corpora>/tflite-micro outside integration_tests (int8 and float
models). LiteRT runs with its reference kernels (OpResolverType.BUILTIN_REF, no XNNPACK), one
thread. A model LiteRT refuses to load (person_detect.tflite: its bias tensors carry an
out-of-range quantized_dimension, which TFLM ignores) is checked against TFLM's interpreter (PyPI
tflite-micro, reference kernels) instead, as are the models given with --tflm (LiteRT aborts the
process on keyword_scrambled_8bit.tflite: its reference SVDF has no 8-bit state); the line says
which oracle was used. Each seed is one more run of the same model and interpreter, so stateful
models (variable tensors) are compared over a stream of `--seeds` runs. Inputs are random and seeded: integers uniform over the type's range, floats N(0, 1).
Integer outputs must be equal bit for bit; float outputs within 1e-5 * max(1, max|ref|).

A model Weft cannot import or compile is a failure unless listed in --expect-fail, where its error
must name what is unsupported (the message is printed). With --testdata, every file of
<corpora>/litert-testdata is also imported, compiled and run where LiteRT runs it; a file must
either match LiteRT or fail with an error (never crash); counts are printed.
Exit status 1 on any unexpected failure.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def litert_interpreter(path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_REF, num_threads=1)
    it.allocate_tensors()
    return it


def random_input(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (info.min, info.max) if dtype.itemsize <= 2 else (-1000, 1000)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.standard_normal(shape).astype(dtype)


class TflmOracle:
    """TFLM's Python interpreter behind the few calls compare() makes."""

    def __init__(self, path, n_in, n_out):
        from tflite_micro.python.tflite_micro import runtime

        self.it = runtime.Interpreter.from_file(path)
        self.ins = []
        for k in range(n_in):
            d = self.it.get_input_details(k)
            self.ins.append({"index": k, "shape": d["shape"], "dtype": d["dtype"]})
        self.outs = list(range(n_out))

    def run(self, feeds):
        for d in self.ins:
            self.it.set_input(feeds[d["index"]], d["index"])
        self.it.invoke()
        return [self.it.get_output(k).copy() for k in self.outs]


class LiteRtOracle:
    def __init__(self, path):
        self.it = litert_interpreter(path)
        self.ins = self.it.get_input_details()
        self.outs = self.it.get_output_details()

    def run(self, feeds):
        for d in self.ins:
            self.it.set_tensor(d["index"], feeds[d["index"]])
        self.it.invoke()
        return [self.it.get_tensor(d["index"]) for d in self.outs]


def oracle_for(path, weft):
    """(oracle, name): LiteRT's reference kernels, or TFLM's where LiteRT refuses the file."""
    try:
        return LiteRtOracle(path), "LiteRT"
    except Exception as e:
        if "quantized_dimension" not in str(e):
            raise
        g = weft.import_litert(path)
        return TflmOracle(path, len(g.inputs), len(g.outputs)), "TFLM"


def compare(path, weft, session, seeds, oracle=None):
    """None when Weft matches the oracle on every seed; else a message."""
    oracle = oracle or LiteRtOracle(path)
    ins = oracle.ins
    graph = weft.import_litert(path)
    model = session.compile(graph)
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        feeds = {d["index"]: random_input(tuple(d["shape"]), d["dtype"], rng) for d in ins}
        want = oracle.run(feeds)
        # The oracle orders inputs as the subgraph lists them, as Weft's importer does.
        got = model.run([feeds[d["index"]] for d in ins])
        if len(got) != len(want):
            return f"{len(got)} outputs, LiteRT has {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            if g.shape != w.shape or g.dtype != w.dtype:
                return f"output {k}: {g.dtype}{list(g.shape)}, oracle {w.dtype}{list(w.shape)}"
            if w.dtype.kind in "iub":
                bad = int(np.count_nonzero(g != w))
                if bad:
                    d = np.abs(g.astype(np.int64) - w.astype(np.int64)).max()
                    return f"seed {seed} output {k}: {bad} of {w.size} values differ (max {d})"
            else:
                ref = w.astype(np.float64)
                err = float(np.abs(g - ref).max(initial=0)) / max(1.0, float(np.abs(ref).max(initial=0)))
                if not err <= 1e-5:
                    return f"seed {seed} output {k}: relative difference {err:.2e}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default=os.path.join(ROOT, "..", "shared", "corpora"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="", help="comma-separated file names to check (default: all)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--expect-fail", default="", help="comma-separated file names Weft does not support yet")
    ap.add_argument("--tflm", default="", help="comma-separated file names to check against TFLM's interpreter instead of LiteRT's")
    ap.add_argument("--testdata", action="store_true", help="also sweep litert-testdata")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    import weft

    session = weft.Session(use_env_path=False)
    base = os.path.join(a.corpora, "tflite-micro")
    models = sorted(p for p in glob.glob(os.path.join(base, "**", "*.tflite"), recursive=True) if "integration_tests" not in p)
    if a.models:
        keep = set(a.models.split(","))
        models = [m for m in models if os.path.basename(m) in keep]
    expect_fail = set(x for x in a.expect_fail.split(",") if x)
    use_tflm = set(x for x in a.tflm.split(",") if x)
    bad = 0
    for path in models:
        name = os.path.basename(path)
        try:  # Weft first: an unsupported construct must be reported by Weft, whatever LiteRT does
            session.compile(weft.import_litert(path))
        except Exception as e:
            msg = "error: " + str(e).splitlines()[0][:400]
        else:
            try:
                if os.path.basename(path) in use_tflm:
                    g = weft.import_litert(path)
                    oracle, oname = TflmOracle(path, len(g.inputs), len(g.outputs)), "TFLM"
                else:
                    oracle, oname = oracle_for(path, weft)
                name = f"{name} (vs {oname})"
                msg = compare(path, weft, session, a.seeds, oracle)
            except Exception as e:
                msg = "oracle or run failed: " + str(e).splitlines()[0][:400]
        if os.path.basename(path) in expect_fail:
            if msg is None:
                print(f"UNEXPECTED PASS {name} (remove it from --expect-fail)")
                bad += 1
            elif msg.startswith("error"):
                print(f"unsupported     {name}: {msg}")
            else:
                print(f"FAIL            {name}: {msg}")
                bad += 1
        elif msg is None:
            print(f"match           {name}")
        else:
            print(f"FAIL            {name}: {msg}")
            bad += 1
    if a.testdata:
        bad += sweep_testdata(os.path.join(a.corpora, "litert-testdata"), a.build)
    return 1 if bad else 0


# Files of the test data whose LiteRT outputs are wrong, and why; Weft's results for what they
# contain are checked against another reference in python/tests/test_litert.py.
LITERT_WRONG = {name: "LiteRT's BATCH_MATMUL gives all zeros for int16 x int8 (weights per channel); "
                      "test_litert.py checks Weft's against a float64 recomputation"
                for name in ("static_w8_a16_quantized_attn_vec_einsum.tflite", "static_w8_a16_quantized_k_einsum.tflite",
                             "static_w8_a16_quantized_q_einsum.tflite", "static_w8_a16_quantized_v_einsum.tflite")}
LITERT_WRONG["qwen_fc_blockwise_quantized.tflite"] = (
    "LiteRT's reference FULLY_CONNECTED gives all zeros for INT4 weights quantized block-wise (its XNNPACK path runs them); "
    "test_litert.py checks Weft's against a float64 recomputation and XNNPACK's")


def sweep_testdata(base, build):
    """Each file in child processes (a crash is counted, not fatal), LiteRT and Weft apart so that a
    crash is charged to the runtime that crashed: match / differs / weft error / no oracle / crash."""
    counts = {"match": 0, "differs": 0, "weft error": 0, "no oracle": 0, "weft crash": 0}
    files = sorted(glob.glob(os.path.join(base, "**", "*.tflite"), recursive=True))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(build, "python"), HERE]))
    with tempfile.TemporaryDirectory() as tmp:
        for k, path in enumerate(files):
            ref = os.path.join(tmp, f"{k}.npz")
            wrong = LITERT_WRONG.get(os.path.basename(path))
            if not wrong:
                p = subprocess.run([sys.executable, "-c", LITERT_CHILD, path, ref], capture_output=True, text=True, timeout=300, env=env)
            has_ref = not wrong and p.returncode == 0 and os.path.exists(ref)
            p = subprocess.run([sys.executable, "-c", WEFT_CHILD, path, ref if has_ref else ""], capture_output=True, text=True,
                               timeout=300, env=env)
            last = (p.stdout.strip().splitlines() or [""])[-1]
            kind, _, detail = last.partition(": ")
            if p.returncode != 0 or kind not in counts:
                kind, detail = "weft crash", f"exit {p.returncode}: {p.stderr.strip()[-300:]}"
            elif kind == "no oracle" and wrong:
                detail = "Weft compiles it; " + wrong
            counts[kind] += 1
            print(f"  {kind:11s} {os.path.relpath(path, base)}: {detail}"[:300])
    print("litert-testdata: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + f" (of {len(files)})")
    return counts["weft crash"] + counts["differs"]


# LiteRT alone: random inputs (seed 0) and its outputs into an .npz; any failure leaves no file.
LITERT_CHILD = r"""
import sys, numpy as np
from check_against_litert import LiteRtOracle, random_input
path, out = sys.argv[1], sys.argv[2]
o = LiteRtOracle(path)
rng = np.random.default_rng(0)
feeds = {d["index"]: random_input(tuple(d["shape"]), d["dtype"], rng) for d in o.ins}
want = o.run(feeds)
np.savez(out, **{f"in{k}": feeds[d["index"]] for k, d in enumerate(o.ins)}, **{f"out{k}": w for k, w in enumerate(want)})
"""

# Weft alone: import, compile, and with LiteRT's .npz run the same inputs and compare.
WEFT_CHILD = r"""
import sys, numpy as np
import weft
path, ref = sys.argv[1], sys.argv[2]
try:
    model = weft.Session(use_env_path=False).compile(weft.import_litert(path))
except Exception as e:
    print("weft error: " + str(e).splitlines()[0][:250]); sys.exit(0)
if not ref:
    print("no oracle: LiteRT cannot run it; Weft compiles it"); sys.exit(0)
z = np.load(ref)
ins = [z[f"in{k}"] for k in range(len([n for n in z.files if n.startswith("in")]))]
want = [z[f"out{k}"] for k in range(len([n for n in z.files if n.startswith("out")]))]
try:
    got = model.run(ins)
except Exception as e:
    print("weft error: " + str(e).splitlines()[0][:250]); sys.exit(0)
for k, (g, w) in enumerate(zip(got, want)):
    if g.shape != w.shape or g.dtype != w.dtype:
        print(f"differs: output {k} {g.dtype}{list(g.shape)} vs {w.dtype}{list(w.shape)}"); sys.exit(0)
    if w.dtype.kind in "iub":
        bad = int(np.count_nonzero(g != w))
        if bad:
            print(f"differs: output {k}: {bad} of {w.size} values differ (max {np.abs(g.astype(np.int64) - w.astype(np.int64)).max()})"); sys.exit(0)
    else:
        ref = w.astype(np.float64)
        err = float(np.abs(g - ref).max(initial=0)) / max(1.0, float(np.abs(ref).max(initial=0)))
        if not err <= 1e-5:
            print(f"differs: output {k}: relative difference {err:.2e}"); sys.exit(0)
print("match: ok")
"""


if __name__ == "__main__":
    sys.exit(main())
