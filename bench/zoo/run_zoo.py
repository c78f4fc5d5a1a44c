#!/usr/bin/env python3
"""Checks and times Weft against ONNX Runtime on the model zoo (bench/zoo/make_zoo.py's output).

    .venv/bin/python bench/zoo/run_zoo.py --check [--only A,B] [--allow-fail A,B] [--build DIR]
    .venv/bin/python bench/zoo/run_zoo.py --bench [--threads 1,2] [--rounds 3] [--iters 10] [--markdown FILE]
    .venv/bin/python bench/zoo/run_zoo.py --profile NAME [--size full|small] [--threads 1] [--runs 20]

The zoo is read from --zoo DIR (default bench/zoo/out; manifest.json there). Weft is the `weft`
module found as bench/compare_ort.py finds it (installed; else DIR/python of --build DIR; else
this checkout's build/python), run like compare_ort.py runs it: weft.Session(threads=N,
use_env_path=False), weft.import_onnx + Session.compile, Model.run_into into preallocated (NaN-
poisoned) outputs; ONNX Runtime with the CPU provider, intra_op_num_threads=N,
inter_op_num_threads=1, sequential execution, all graph optimizations, run through IOBinding
into preallocated outputs.

--check: every model's small files (both variants). Inputs are random and seeded (floats N(0,1),
token ids in the model's vocabulary range, attention masks 0/1). The static file runs at its
batch (2), with the shapes fixed at import; the dynamic file is imported without fixing any shape
(the batch stays symbolic in Weft) and runs at batch 2, then batch 1. Both runtimes use 1 thread.
An output passes when max|weft - ort| <= tol * max(1, max|ort|) (tol 1e-4); the figure printed is
max|weft - ort| / max(1, max|ort|) over all outputs. A model fails on any Weft import, compile or
run error (its text is printed), a failed comparison or a crash. Exit status 1 when a model not
listed in --allow-fail fails; listed models are still run and reported, and one that passes gets
an "unexpectedly passed" line.

--check --ort-optimized: the same, but Weft runs the file ONNX Runtime writes for each model after
its extended graph optimizations (SessionOptions.optimized_model_filepath: FusedConv, FusedGemm,
FusedMatMul, QuickGelu, SkipLayerNormalization, SimplifiedLayerNormalization, ...), as a user who
saved an optimized model would hand it over; ONNX Runtime runs the original. `--ort-optimized all`
saves at ORT_ENABLE_ALL instead: on x86 CPUs that file holds ONNX Runtime's channel-blocked
(com.microsoft.nchwc) graph, ReorderInput/ReorderOutput and reordered convolution weights.

--bench: every model's full static file at each thread count; each round times a batch of Weft
runs, then a batch of ORT runs (interleaved), each after a 50 ms idle pause that lets the other
runtime's spinning worker threads go to sleep; the figure is the median of the batch medians.
Heavy models get fewer runs per batch automatically: a batch aims at --batch-ms (default 1500 ms)
of the slower runtime, with at least 3 runs. Prints (and with --markdown writes) the table sorted
worst Weft/ORT ratio first within each thread count, the geometric mean of the ratios per thread
count, and the models Weft fails on with the error.

--profile NAME: Weft's time per op type for one model, from the command-line tool's
`weft run MODEL -i NAME=FILE.npy ... --profile RUNS` (the Python module has no profile API). The
tool is looked for next to the module (weft/bin/weft), in --build DIR/bin, in this checkout's
build/bin, then on PATH. Inputs and outputs go to a scratch directory under /tmp (removed after).

Each model runs in its own child process (one at a time), so that a crash in either runtime is
reported against the model and the run goes on; --no-isolate runs everything in this process.
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
REPO = os.path.dirname(BENCH)


def import_weft(build):
    """The weft module: from BUILD/python if given, else installed, else this checkout's build/
    (the same search as bench/compare_ort.py)."""
    if build is None:
        try:
            import weft
            return weft
        except ImportError:
            build = os.path.join(REPO, "build")
    path = os.path.join(os.path.abspath(build), "python")
    if not os.path.isdir(os.path.join(path, "weft")):
        sys.exit(f"no weft module installed and none in {path}; build Weft or pass --build DIR")
    sys.path.insert(0, path)
    import weft
    return weft


def one_line(text, limit=600):
    s = " | ".join(ln.strip() for ln in str(text).strip().splitlines() if ln.strip())
    return s if len(s) <= limit else s[:limit] + " ..."


# ----------------------------------------------------------------------------------------------
# Manifest, inputs
# ----------------------------------------------------------------------------------------------


def load_manifest(zoo):
    p = os.path.join(zoo, "manifest.json")
    if not os.path.exists(p):
        sys.exit(f"no {p}; run bench/zoo/make_zoo.py first (or pass --zoo DIR)")
    with open(p) as f:
        return json.load(f)


def model_order(man):
    seen = []
    for e in sorted(man["entries"], key=lambda e: e.get("index", 0)):
        if e["model"] not in seen:
            seen.append(e["model"])
    return seen


def find_entry(man, model, size, variant):
    for e in man["entries"]:
        if e["model"] == model and e["size"] == size and e["variant"] == variant:
            return e
    return None


def concrete(shape, batch):
    return [batch if d == "batch" else int(d) for d in shape]


def make_inputs(entry, batch, seed):
    """Seeded inputs for `entry` at `batch`: floats N(0,1) (or U(low, high)), ids in [low, high),
    masks 0/1. The same (model, batch, seed) gives the same arrays."""
    rng = np.random.default_rng([seed, batch])
    arrays = []
    for i in entry["inputs"]:
        shape = concrete(i["shape"], batch)
        if i["kind"] in ("ids", "mask"):
            a = rng.integers(int(i["low"]), int(i["high"]), size=shape, dtype=np.int64)
        elif i["kind"] == "uniform":
            a = rng.uniform(i["low"], i["high"], size=shape).astype(np.float32)
        else:
            a = rng.standard_normal(shape, dtype=np.float32)
        arrays.append(np.ascontiguousarray(a.astype(i["dtype"])))
    return arrays


# ----------------------------------------------------------------------------------------------
# Runners (as in bench/compare_ort.py: run_into and IOBinding into preallocated outputs)
# ----------------------------------------------------------------------------------------------


class Stage(Exception):
    """An error in one stage (import, compile, run) of one runtime."""

    def __init__(self, stage, err):
        super().__init__(f"{stage}: {type(err).__name__}: {one_line(err)}")
        self.stage = stage


def weft_model(weft, path, entry, threads, fixed_batch):
    """Imports and compiles `path`; with fixed_batch the input shapes are fixed at import,
    without (dynamic files) every dim stays as the file has it."""
    session = weft.Session(threads=threads, use_env_path=False)
    try:
        shapes = ({i["name"]: concrete(i["shape"], fixed_batch) for i in entry["inputs"]}
                  if fixed_batch is not None else None)
        graph = weft.import_onnx(path, shapes)
    except Exception as e:  # noqa: BLE001
        raise Stage("weft import", e)
    try:
        model = session.compile(graph)
    except Exception as e:  # noqa: BLE001
        raise Stage("weft compile", e)
    return session, model


def weft_runner(model, xs):
    """A zero-copy run closure and its NaN-poisoned outputs (shapes from the compiled model when
    static; else from one plain run)."""
    outs = model.outputs
    if all(len(s) > 0 and all(isinstance(d, int) and d >= 0 for d in s) for _, _, s in outs):
        ys = [np.full(s, np.nan, dt) if np.dtype(dt).kind == "f" else np.zeros(s, dt) for _, dt, s in outs]
    else:
        try:
            first = model.run(xs)
        except Exception as e:  # noqa: BLE001
            raise Stage("weft run", e)
        ys = [np.full(y.shape, np.nan, y.dtype) if y.dtype.kind == "f" else np.zeros(y.shape, y.dtype) for y in first]

    def run():
        model.run_into(xs, ys)
    try:
        run()
    except Exception as e:  # noqa: BLE001
        raise Stage("weft run", e)
    return run, ys


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001
        raise Stage("ort session", e)


def ort_runner(sess, xs):
    import onnxruntime as ort
    feeds = {i.name: x for i, x in zip(sess.get_inputs(), xs)}
    try:
        first = sess.run(None, feeds)          # learns the output shapes (dynamic batch too)
    except Exception as e:  # noqa: BLE001
        raise Stage("ort run", e)
    ys = [np.full(y.shape, np.nan, y.dtype) if y.dtype.kind == "f" else np.zeros(y.shape, y.dtype) for y in first]
    binding = sess.io_binding()
    for i, x in zip(sess.get_inputs(), xs):
        binding.bind_ortvalue_input(i.name, ort.OrtValue.ortvalue_from_numpy(x))
    for o, y in zip(sess.get_outputs(), ys):
        binding.bind_ortvalue_output(o.name, ort.OrtValue.ortvalue_from_numpy(y))

    def run():
        sess.run_with_iobinding(binding)
    run()
    return run, ys


def rel_diff(ws, os_):
    """max over outputs of max|w - o| / max(1, max|o|); inf on a shape mismatch, nan on NaNs."""
    worst = 0.0
    for w, o in zip(ws, os_):
        if w.shape != o.shape:
            return math.inf
        ref = o.astype(np.float64)
        if ref.size == 0:
            continue
        d = float(np.max(np.abs(w.astype(np.float64) - ref)))
        scale = max(1.0, float(np.max(np.abs(ref))))
        r = d / scale
        if math.isnan(r):
            return math.nan
        worst = max(worst, r)
    return worst


# ----------------------------------------------------------------------------------------------
# --check
# ----------------------------------------------------------------------------------------------


def ort_optimized_copy(path, outdir, level="extended"):
    """The file ONNX Runtime writes for `path` after its extended graph optimizations (what
    SessionOptions.optimized_model_filepath saves: its fused com.microsoft operators, FusedConv,
    FusedGemm, FusedMatMul, QuickGelu, SkipLayerNormalization and others, in place of the
    standard ones)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL if level == "all" else ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = os.path.join(outdir, os.path.basename(path).replace(".onnx", ".ort_optimized.onnx"))
    ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return so.optimized_model_filepath


def check_model(weft, zoo, man, name, tol, ort_optimized=False):
    """Returns a dict: model, opset, ok, runs: [{variant, batch, rel | error}]. With
    ort_optimized, Weft runs the file ONNX Runtime saves after optimizing the model (ONNX Runtime
    still runs the original)."""
    res = {"model": name, "runs": [], "ok": True, "ort_level": ort_optimized if isinstance(ort_optimized, str) else "extended"}
    scratch = tempfile.mkdtemp(prefix="zoo_ort_optimized_", dir="/tmp") if ort_optimized else None
    try:
        return check_files(weft, zoo, man, name, tol, res, scratch)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def check_files(weft, zoo, man, name, tol, res, scratch):
    for variant in ("static", "dynamic"):
        e = find_entry(man, name, "small", variant)
        if e is None:
            res["runs"].append({"variant": variant, "batch": None, "error": "not in the manifest (make_zoo.py --size small)"})
            res["ok"] = False
            continue
        res["opset"] = e.get("opset")
        if "error" in e:
            res["runs"].append({"variant": variant, "batch": e["batch"], "error": f"export: {e['error']}"})
            res["ok"] = False
            continue
        path = os.path.join(zoo, e["file"])
        batches = [e["batch"]] if variant == "static" else [2, 1]
        model = None
        for batch in batches:
            run = {"variant": variant, "batch": batch}
            res["runs"].append(run)
            try:
                xs = make_inputs(e, batch, e["seed"])
                sess = ort_session(path, 1)
                _, yo = ort_runner(sess, xs)
                if model is None:
                    if scratch:
                        try:
                            weft_path = ort_optimized_copy(path, scratch, res["ort_level"])
                        except Exception as ex:  # noqa: BLE001
                            raise Stage("onnxruntime optimization", ex)
                    _, model = weft_model(weft, weft_path if scratch else path, e, 1, e["batch"] if variant == "static" else None)
                _, yw = weft_runner(model, xs)
                r = rel_diff(yw, yo)
                run["rel"] = r
                if not (r <= tol):
                    run["error"] = f"mismatch: max rel diff {r:.3e} > {tol:g}"
                    res["ok"] = False
            except Stage as s:
                run["error"] = str(s)
                res["ok"] = False
                if s.stage in ("weft import", "weft compile"):
                    break
            except Exception as ex:  # noqa: BLE001
                run["error"] = f"{type(ex).__name__}: {one_line(ex)}"
                res["ok"] = False
    return res


def format_check(res):
    parts = []
    for r in res["runs"]:
        tag = f"{r['variant']}" + (f" b{r['batch']}" if r["variant"] == "dynamic" else "")
        parts.append(f"{tag}: {r['rel']:.2e}" if "error" not in r else f"{tag}: {r['error']}")
    return "; ".join(parts)


# ----------------------------------------------------------------------------------------------
# --bench
# ----------------------------------------------------------------------------------------------


# Both runtimes leave their worker threads spinning for a while after a run (ONNX Runtime's pool,
# OpenMP's team under Weft and oneDNN); a batch started at once would share the cores with the
# other runtime's spinners and measure that. A short idle pause before each batch lets them sleep.
SETTLE_S = 0.05


def timed_batch(run, iters, warmup):
    time.sleep(SETTLE_S)
    for _ in range(warmup):
        run()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench_model(weft, zoo, man, name, threads, rounds, iters, warmup, batch_ms):
    e = find_entry(man, name, "full", "static")
    out = {"model": name, "threads": threads}
    if e is None or "error" in e:
        out["error"] = "not exported (make_zoo.py --size full)" if e is None else f"export: {e['error']}"
        return out
    out["opset"] = e["opset"]
    path = os.path.join(zoo, e["file"])
    xs = make_inputs(e, e["batch"], e["seed"])
    try:
        t0 = time.perf_counter()
        _, model = weft_model(weft, path, e, threads, e["batch"])
        out["compile_s"] = time.perf_counter() - t0
        run_w, yw = weft_runner(model, xs)
        sess = ort_session(path, threads)
        run_o, yo = ort_runner(sess, xs)
    except Stage as s:
        out["error"] = str(s)
        return out
    out["rel"] = rel_diff(yw, yo)
    mem = model.memory()
    out["arena"], out["lower_bound"] = mem.get("arena_bytes"), mem.get("lower_bound_bytes")
    # one timed run each sizes the batches
    t_one = max(timed_batch(run_w, 1, 0), timed_batch(run_o, 1, 0))
    n = max(3, min(iters, int(batch_ms / max(t_one, 1e-3))))
    w = min(warmup, 1) if t_one * (n + warmup) > batch_ms else warmup
    out["iters"], out["warmup"] = n, w
    wt, ot = [], []
    for _ in range(rounds):
        wt.append(timed_batch(run_w, n, w))
        ot.append(timed_batch(run_o, n, w))
    out["weft_ms"], out["ort_ms"] = statistics.median(wt), statistics.median(ot)
    out["ratio"] = out["weft_ms"] / out["ort_ms"]
    return out


def bench_table(rows, fails):
    lines = ["| model | threads | Weft ms | ORT ms | Weft/ORT | max rel diff | arena bytes | lower bound | runs/batch |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["threads"], -r["ratio"])):
        lines.append(f"| {r['model']} | {r['threads']} | {r['weft_ms']:.3f} | {r['ort_ms']:.3f} | {r['ratio']:.2f} | "
                     f"{r['rel']:.2e} | {r['arena']} | {r['lower_bound']} | {r['iters']} |")
    lines.append("")
    for t in sorted({r["threads"] for r in rows}):
        rs = [r["ratio"] for r in rows if r["threads"] == t]
        gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
        lines.append(f"geometric mean Weft/ORT at {t} thread(s): {gm:.3f} over {len(rs)} models")
    if fails:
        lines += ["", "Models Weft fails on (not timed):", ""]
        seen = set()
        for f in fails:
            if f["model"] in seen:
                continue
            seen.add(f["model"])
            lines.append(f"- {f['model']}: {f['error']}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# --profile
# ----------------------------------------------------------------------------------------------


def find_cli(weft_mod, build):
    cands = [os.path.join(os.path.dirname(weft_mod.__file__), "bin", "weft")]
    if build:
        cands.append(os.path.join(os.path.abspath(build), "bin", "weft"))
    cands.append(os.path.join(REPO, "build", "bin", "weft"))
    w = shutil.which("weft")
    if w:
        cands.append(w)
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def profile(weft_mod, a, man):
    e = find_entry(man, a.profile, a.size, "static")
    if e is None or "error" in e:
        sys.exit(f"{a.profile}: no {a.size} static file in the manifest")
    cli = find_cli(weft_mod, a.build)
    if cli is None:
        sys.exit("the weft command-line tool was not found (weft/bin/weft, --build DIR/bin, build/bin, PATH)")
    threads = int(a.threads.split(",")[0])
    tmp = tempfile.mkdtemp(prefix="zoo_profile_", dir="/tmp")
    try:
        cmd = [cli, "run", os.path.join(a.zoo, e["file"]), "-t", str(threads), "-o", tmp, "--profile", str(a.runs)]
        for i, x in zip(e["inputs"], make_inputs(e, e["batch"], e["seed"])):
            f = os.path.join(tmp, f"in_{len(cmd)}.npy")
            np.save(f, x)
            cmd += ["-i", f"{i['name']}={f}"]
        print(f"{a.profile} ({a.size}, static, opset {e['opset']}), {threads} thread(s): {cli} run ... "
              f"--profile {a.runs}", flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        text = p.stdout + p.stderr
        print(text.rstrip())
        if p.returncode != 0:
            return 1
        by_type = parse_profile(text)
        if by_type:
            print("top op types: " + ", ".join(f"{t} {us / 1e3:.3f} ms ({pct:.1f}%)" for t, us, pct in by_type[:3]))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def parse_profile(text):
    """[(op_type, microseconds per run, percent)] from the CLI's 'by op type:' section."""
    out, inside = [], False
    units = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    for ln in text.splitlines():
        if ln.strip().startswith("by op type"):
            inside = True
            continue
        if inside:
            m = re.match(r"\s+(\S+)\s+([\d.]+)\s*(ns|us|ms|s)\s+([\d.]+)%", ln)
            if not m:
                break
            out.append((m.group(1), float(m.group(2)) * units[m.group(3)], float(m.group(4))))
    return out


# ----------------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------------


def worker(a):
    """Child process: one model, one mode; prints one JSON line prefixed with @@."""
    weft = import_weft(a.build)
    man = load_manifest(a.zoo)
    if a.check:
        res = check_model(weft, a.zoo, man, a._worker, a.tol, a.ort_optimized)
    else:
        res = [bench_model(weft, a.zoo, man, a._worker, t, a.rounds, a.iters, a.warmup, a.batch_ms)
               for t in (int(x) for x in a.threads.split(","))]
    print("@@" + json.dumps(res), flush=True)


def run_isolated(a, name):
    argv = [sys.executable, os.path.abspath(__file__), "--_worker", name, "--zoo", a.zoo, "--tol", str(a.tol),
            "--threads", a.threads, "--rounds", str(a.rounds), "--iters", str(a.iters), "--warmup", str(a.warmup),
            "--batch-ms", str(a.batch_ms), "--check" if a.check else "--bench"]
    if a.ort_optimized:
        argv += ["--ort-optimized", a.ort_optimized]
    if a.build:
        argv += ["--build", a.build]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {a.timeout}s"
    for ln in reversed(p.stdout.splitlines()):
        if ln.startswith("@@"):
            return json.loads(ln[2:]), None
    why = f"crashed (signal {-p.returncode})" if p.returncode < 0 else f"child exited with status {p.returncode}"
    return None, f"{why}: {one_line(p.stderr[-800:] or p.stdout[-800:], 400)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="correctness against ONNX Runtime (small files)")
    mode.add_argument("--bench", action="store_true", help="latency against ONNX Runtime (full static files)")
    mode.add_argument("--profile", metavar="NAME", help="Weft's time per op type for one model")
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--zoo", default=os.path.join(HERE, "out"), help="directory with manifest.json (default: %(default)s)")
    ap.add_argument("--build", help="a Weft build directory; its python/ goes first on sys.path")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--allow-fail", default="", help="comma-separated models expected to fail (--check)")
    ap.add_argument("--ort-optimized", nargs="?", const="extended", choices=("extended", "all"),
                    help="--check: Weft runs the file ONNX Runtime saves after its extended graph optimizations "
                         "(com.microsoft fused operators; 'all': also its NCHWc layout), compared with ONNX Runtime on the original")
    ap.add_argument("--tol", type=float, default=1e-4, help="relative tolerance (default: %(default)g)")
    ap.add_argument("--threads", default=None, help="thread counts (--bench default 1,2; --profile default 1)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default: %(default)s)")
    ap.add_argument("--iters", type=int, default=10, help="timed runs per batch, at most (default: %(default)s)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs before each batch (default: %(default)s)")
    ap.add_argument("--batch-ms", type=float, default=1500.0,
                    help="fewer runs per batch for heavy models: aim a batch at this many ms (default: %(default)s)")
    ap.add_argument("--markdown", help="write the --bench table to this file")
    ap.add_argument("--size", choices=("full", "small"), default="full", help="--profile: which file (default full)")
    ap.add_argument("--runs", type=int, default=20, help="--profile: runs to profile (default: %(default)s)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per model in its child process")
    ap.add_argument("--no-isolate", action="store_true", help="run all models in this process")
    a = ap.parse_args()
    a.zoo = os.path.abspath(a.zoo)
    if a.threads is None:
        a.threads = "1" if (a.check or a.profile) else "1,2"
    if a._worker:
        return worker(a)

    weft = import_weft(a.build)
    import onnxruntime as ort
    man = load_manifest(a.zoo)
    if a.profile:
        return profile(weft, a, man)

    names = model_order(man)
    if a.only:
        want = [s.strip() for s in a.only.split(",") if s.strip()]
        unknown = [s for s in want if s not in names]
        if unknown:
            sys.exit(f"not in the manifest: {', '.join(unknown)}")
        names = [n for n in names if n in want]
    allow = {s.strip() for s in a.allow_fail.split(",") if s.strip()}
    fam = {e["model"]: e["family"] for e in man["entries"]}
    print(f"weft {weft.__version__} ({os.path.dirname(weft.__file__)}), onnxruntime {ort.__version__}; "
          f"zoo {a.zoo} ({len(names)} models)", flush=True)

    if a.check:
        print(f"check: small files, static at batch 2, dynamic at batch 2 then 1; 1 thread; pass if "
              f"max|weft-ort| <= {a.tol:g} * max(1, max|ort|)\n", flush=True)
        failed, unexpected, n_ok = [], [], 0
        for name in names:
            t0 = time.time()
            if a.no_isolate:
                res, err = check_model(weft, a.zoo, man, name, a.tol, a.ort_optimized), None
            else:
                res, err = run_isolated(a, name)
            if res is None:
                res = {"model": name, "ok": False, "runs": [{"variant": "all", "batch": None, "error": err}]}
            opset = res.get("opset") or next((e["opset"] for e in man["entries"] if e["model"] == name), "?")
            status = "PASS" if res["ok"] else ("XFAIL" if name in allow else "FAIL")
            print(f"{status:5s} {name:30s} opset {opset}  {format_check(res)}  ({time.time() - t0:.1f}s)", flush=True)
            if res["ok"]:
                n_ok += 1
                if name in allow:
                    unexpected.append(name)
                    print(f"      {name}: unexpectedly passed (listed in --allow-fail)", flush=True)
            else:
                failed.append(res)
        print(f"\n{n_ok} of {len(names)} models pass; {len(failed)} fail "
              f"({sum(1 for r in failed if r['model'] in allow)} of them allowed)")
        for r in failed:
            first = next(x for x in r["runs"] if "error" in x)
            print(f"  {r['model']} [{fam.get(r['model'], '?')}]{' (allowed)' if r['model'] in allow else ''}: "
                  f"{first['variant']}{' b' + str(first['batch']) if first['variant'] == 'dynamic' else ''}: {first['error']}")
        for n in unexpected:
            print(f"  {n}: unexpectedly passed")
        return 1 if any(r["model"] not in allow for r in failed) else 0

    # --bench
    threads = [int(t) for t in a.threads.split(",")]
    print(f"bench: full static files, threads {threads}, {a.rounds} interleaved rounds of up to {a.iters} runs "
          f"(+{a.warmup} warm-up) per runtime, batches sized to ~{a.batch_ms:.0f} ms\n", flush=True)
    rows, fails = [], []
    t_all = time.time()
    for name in names:
        t0 = time.time()
        if a.no_isolate:
            res, err = [bench_model(weft, a.zoo, man, name, t, a.rounds, a.iters, a.warmup, a.batch_ms)
                        for t in threads], None
        else:
            res, err = run_isolated(a, name)
        if res is None:
            res = [{"model": name, "threads": t, "error": err} for t in threads]
        for r in res:
            if "error" in r:
                fails.append(r)
                print(f"{name:30s} {r['threads']}t  FAIL  {r['error']}", flush=True)
            else:
                rows.append(r)
                print(f"{name:30s} {r['threads']}t  weft {r['weft_ms']:9.3f} ms  ort {r['ort_ms']:9.3f} ms  "
                      f"ratio {r['ratio']:5.2f}  rel {r['rel']:.1e}  ({r['iters']} runs/batch, compile "
                      f"{r['compile_s']:.1f}s, {time.time() - t0:.0f}s)", flush=True)
    table = bench_table(rows, fails)
    print(f"\n{len(names)} models in {time.time() - t_all:.0f}s\n\n" + table)
    if a.markdown:
        head = (f"Weft vs ONNX Runtime on the model zoo (full size, static batch 1); weft {weft.__version__}, "
                f"onnxruntime {ort.__version__}; {a.rounds} interleaved rounds, up to {a.iters} runs per batch "
                f"(heavy models fewer, runs/batch column); median of batch medians. max rel diff = "
                f"max|weft-ort| / max(1, max|ort|) over all outputs.\n\n")
        with open(a.markdown, "w") as f:
            f.write(head + table)
        print(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
