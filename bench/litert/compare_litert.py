"""Weft vs the LiteRT interpreter (PyPI ai-edge-litert, its default: XNNPACK) on the corpora's
.tflite models, in one process, interleaved batches, at 1 and 2 threads.

    .venv/bin/python bench/litert/compare_litert.py [--build build] [--corpora DIR] [--rounds 5]
                                                   [--iters 20] [--threads 1,2] [--markdown FILE] [--models A,B]

Each model that both runtimes run gets random seeded inputs (integers uniform over the type's
range, floats N(0, 1)); each round times a batch of Weft runs (Model.run) and a batch of LiteRT
runs (set_tensor + invoke + get_tensor), each batch after a 50 ms idle pause that lets the other
runtime's worker threads go to sleep; the figure is the median of the batch medians. The outputs
of the two are compared too: integer models should agree exactly with LiteRT's optimized kernels
as well, but XNNPACK is not bound to the reference arithmetic, so the largest difference is
reported, not asserted (tests/litert/ checks exactness against the reference kernels).
"""
import argparse
import glob
import os
import statistics
import struct
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def random_input(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def batch(run, iters, warmup=2):
    time.sleep(0.05)
    for _ in range(warmup):
        run()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def litert_loadable_copy(path, out_dir):
    """A copy of the model in which rank-1 tensors' per-channel quantization names dimension 0.

    Some converters wrote the bias tensors of per-channel convolutions with the weights'
    quantized_dimension (3) although the bias has one dimension; TFLM ignores it, LiteRT refuses
    the file. The arithmetic is the same either way: the scales run along the only dimension.
    Returns (path of the copy, number of tensors changed)."""
    import flatbuffers
    from flatbuffers.table import Table
    from flatbuffers import number_types as N

    def slot(t, i):  # a table's field i: its offset from the table, 0 when absent
        return t.Offset(4 + 2 * i)

    def vec_len(t, i):
        o = slot(t, i)
        return t.VectorLen(o) if o else 0

    def tables(t, i):
        o = slot(t, i)
        if not o:
            return []
        start = t.Vector(o)
        return [Table(t.Bytes, t.Indirect(start + 4 * k)) for k in range(t.VectorLen(o))]

    buf = bytearray(open(path, "rb").read())
    model = Table(buf, flatbuffers.encode.Get(N.UOffsetTFlags.packer_type, buf, 0))
    changed = 0
    # Model.subgraphs = field 2; SubGraph.tensors = 0; Tensor.shape = 0, .quantization = 4;
    # QuantizationParameters.quantized_dimension = 6.
    for subgraph in tables(model, 2):
        for tensor in tables(subgraph, 0):
            o = slot(tensor, 4)
            if not o:
                continue
            q = Table(buf, tensor.Indirect(tensor.Pos + o))
            o = slot(q, 6)
            if o and vec_len(tensor, 0) == 1 and q.Get(N.Int32Flags, q.Pos + o) != 0:
                struct.pack_into("<i", buf, q.Pos + o, 0)
                changed += 1
    out = os.path.join(out_dir, os.path.basename(path))
    with open(out, "wb") as f:
        f.write(buf)
    return out, changed


# Models LiteRT's interpreter loads but cannot run without taking the process down: its SVDF has
# no 8-bit state (TFLM's has) and corrupts the heap on this one.
LITERT_ABORTS = {"keyword_scrambled_8bit.tflite": "LiteRT's SVDF has no 8-bit state and aborts the process on it"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--corpora", default=os.path.join(ROOT, "..", "shared", "corpora"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--markdown", default="")
    ap.add_argument("--models", default="", help="comma-separated file names (default: every model)")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    import weft
    from ai_edge_litert.interpreter import Interpreter
    import ai_edge_litert

    models = sorted(p for p in glob.glob(os.path.join(a.corpora, "tflite-micro", "**", "*.tflite"), recursive=True)
                    if "integration_tests" not in p)
    if a.models:
        keep = set(a.models.split(","))
        models = [m for m in models if os.path.basename(m) in keep]
    rows, skipped, notes = [], [], []
    tmp = tempfile.TemporaryDirectory()
    for path in models:
        name = os.path.basename(path)
        for threads in (int(t) for t in a.threads.split(",")):
            try:
                model = weft.Session(threads=threads, use_env_path=False).compile(weft.import_litert(path))
            except Exception as e:
                skipped.append(f"{name}: Weft: {str(e).splitlines()[0][:160]}") if threads == 1 else None
                break
            if name in LITERT_ABORTS:
                skipped.append(f"{name}: LiteRT: {LITERT_ABORTS[name]}") if threads == 1 else None
                break
            try:
                try:
                    it = Interpreter(model_path=path, num_threads=threads)
                except ValueError as e:
                    if "quantized_dimension" not in str(e):
                        raise
                    copy, changed = litert_loadable_copy(path, tmp.name)
                    it = Interpreter(model_path=copy, num_threads=threads)
                    if threads == 1:
                        notes.append(f"{name}: LiteRT ran a copy in which {changed} rank-1 bias tensors' quantized_dimension "
                                     "is 0 instead of 3 (LiteRT refuses the original; TFLM and Weft read it as dimension 0)")
                it.allocate_tensors()
            except Exception as e:
                skipped.append(f"{name}: LiteRT: {str(e).splitlines()[0][:160]}") if threads == 1 else None
                break
            ins, outs = it.get_input_details(), it.get_output_details()
            rng = np.random.default_rng(0)
            xs = [random_input(tuple(d["shape"]), d["dtype"], rng) for d in ins]

            def run_litert():
                for d, x in zip(ins, xs):
                    it.set_tensor(d["index"], x)
                it.invoke()
                return [it.get_tensor(d["index"]) for d in outs]

            def run_weft():
                return model.run(xs)

            got, want = run_weft(), run_litert()  # stateful models: both from their initial state
            diff = max(float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max(initial=0)) for g, w in zip(got, want))
            wt, lt = [], []
            for _ in range(a.rounds):
                wt.append(batch(run_weft, a.iters))
                lt.append(batch(run_litert, a.iters))
            w_ms, l_ms = statistics.median(wt), statistics.median(lt)
            rows.append((name, threads, w_ms, l_ms, w_ms / l_ms, diff))
            print(f"{name:45s} {threads}t  weft {w_ms:9.3f} ms  litert {l_ms:9.3f} ms  ratio {w_ms / l_ms:6.2f}  max diff {diff:g}", flush=True)
    lines = [f"Weft vs LiteRT {ai_edge_litert.__version__} (default delegate: XNNPACK); {a.rounds} interleaved rounds of {a.iters} runs; "
             "median of batch medians.", "",
             "| model | threads | Weft ms | LiteRT ms | Weft/LiteRT | max abs diff |", "|---|---|---|---|---|---|"]
    lines += [f"| {n} | {t} | {w:.3f} | {l:.3f} | {r:.2f} | {d:g} |" for n, t, w, l, r, d in rows]
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    if skipped:
        lines += ["", "Not compared:"] + [f"- {s}" for s in skipped]
    text = "\n".join(lines)
    print("\n" + text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
