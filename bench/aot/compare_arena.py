"""Arena sizes side by side: Weft's ahead-of-time plan, TFLM's interpreter and heliaAOT.

    python bench/aot/compare_arena.py [--weft build/bin/weft] [--corpora /work/shared/corpora]
                                      [--only NAME.tflite,...] [--markdown FILE] [--jobs N]

Needs the packages `tflite-micro` and `helia-aot` (requirements.txt) in the Python that runs it.
For every .tflite file under <corpora>/tflite-micro (recursively) it measures three numbers, each
tool in its own process with a timeout, so that a crash or an unsupported model is reported in the
notes column instead of stopping the run:

  Weft arena        `weft aot MODEL --json`: arena_bytes, the one arena the generated C module
                    declares for every intermediate tensor. Constants are not in it.
  lower bound       lower_bound_bytes from the same report: the largest sum of the sizes of the
                    tensors live at one time in Weft's schedule; no placement can do better.
  TFLM arena used   TFLM's Python interpreter (tflite_micro.runtime.Interpreter.from_file with
                    arena_size of at least 16 MiB) allocates its tensors when it is created; its
                    print_allocations() then prints RecordingMicroAllocator's "Arena allocation
                    total", the same number as MicroInterpreter::arena_used_bytes() in C++ (the
                    Python wrapper has no call that returns it). That total is the head plus the
                    tail of the arena:
                      head  the non-persistent section: the planned intermediate tensors, the
                            inputs and outputs and the kernels' scratch buffers;
                      tail  persistent bookkeeping: TfLiteEvalTensor and TfLiteTensor structs,
                            quantization data, node and registration structs, the kernels'
                            persistent buffers (op data, per-channel multipliers, ...).
                    The structs are measured on this 64-bit host, so the tail is larger than on a
                    32-bit microcontroller. The column shows the total; "TFLM head" shows the head
                    alone, which is the part that compares like for like with Weft's arena.
  helia-aot arena   `helia-aot convert --memory.dump-residency-json` on the apollo510_evb target,
                    with its DTCM enlarged to 64 MiB so that every model's tensors fit one memory
                    region (the target's own 496 KiB would split large models over DTCM and SRAM).
                    The column is the sum of "used" (the size of the generated C arena array) over
                    the residency report's scratch arenas (intermediate tensors and kernel scratch
                    buffers) and persistent arenas (state that outlives one inference). Its
                    constant arenas (weights, "cold" in flash or "staged" into RAM at start) are
                    not counted, as Weft's constants are not; a staged constant arena is named in
                    the notes. heliaAOT's own lower bound (the scratch arenas' peak_live) is in the
                    notes where it differs from its arena.

The ratios are Weft's arena over each other number (below 1: Weft's plan is smaller).
The seanet transpose_conv models take their output shape as an int32 rank-1 input: for Weft it is
frozen with --freeze NAME=FILE.npy from the model's NAME_input0_int32.csv, so that the shapes it
decides are known. The summary counts the models where Weft's arena is no larger than TFLM's
(total and head) and heliaAOT's, among those where both ran, and gives the mean Weft/lower bound.
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HELIA_DTCM_BYTES = 64 << 20
TFLM_MIN_ARENA = 16 << 20

TFLM_CHILD = r"""
import sys
from tflite_micro.python.tflite_micro import runtime
interpreter = runtime.Interpreter.from_file(sys.argv[1], arena_size=int(sys.argv[2]))
interpreter.print_allocations()
"""


def run(cmd, timeout, **kw):
    """(returncode, stdout + stderr); returncode None on a timeout."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    return p.returncode, p.stdout + p.stderr


def first_error(text, rc):
    """The line that says what went wrong: an 'Error'/'error:' line, else the first message before
    a Python traceback, else the traceback's last line."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if re.match(r"(\S+: )?(Error|error|ERROR)\b", l) or l.startswith("weft aot:"):
            return l
    if "Traceback (most recent call last):" in lines:
        before = lines[:lines.index("Traceback (most recent call last):")]
        return before[0] if before else lines[-1]
    if rc is not None and rc < 0:
        return f"killed by signal {-rc}"
    return lines[0] if lines else f"exit status {rc}"


def short(text, n=90):
    text = text.replace("|", "/")
    return text if len(text) <= n else text[: n - 3] + "..."


def freeze_args(weft, model, work):
    """--freeze NAME=FILE.npy for each int32 rank-1 input whose value the corpora give in a CSV."""
    out = subprocess.run([weft, "inspect", model], capture_output=True, text=True).stdout
    inputs = [m.groups() for m in re.finditer(r"^input\s+(.*?): (\w+)\[([-0-9,]*)\]$", out, re.M)]
    stem = os.path.splitext(model)[0]
    args = []
    for k, (name, dtype, shape) in enumerate(inputs):
        csv = f"{stem}_input{k}_int32.csv"
        if dtype == "int32" and len(shape.split(",")) == 1 and os.path.exists(csv):
            with open(csv) as f:
                values = [int(v) for v in f.read().replace("\n", ",").split(",") if v.strip()]
            path = os.path.join(work, f"freeze{k}.npy")
            np.save(path, np.array(values, dtype=np.int32))
            args += ["--freeze", f"{name}={path}"]
    return args


def weft_arena(weft, model):
    with tempfile.TemporaryDirectory(prefix="weft_arena_") as work:
        cmd = [weft, "aot", model, "-o", os.path.join(work, "out"), "--prefix", "m", "--json"]
        if "transpose_conv" in os.path.basename(model):
            cmd += freeze_args(weft, model, work)
        rc, text = run(cmd, 300)
    if rc != 0:
        return None, None, first_error(text, rc)
    report = json.loads(text[text.index("{"): text.rindex("}") + 1])
    return report["arena_bytes"], report["lower_bound_bytes"], None


def tflm_arena(model, at_least):
    """(total, head, error) from TFLM's RecordingMicroAllocator."""
    arena = max(TFLM_MIN_ARENA, 4 * at_least)
    rc, text = run([sys.executable, "-c", TFLM_CHILD, model, str(arena)], 120)
    found = dict(re.findall(r"Arena allocation (total|head) (\d+) bytes", text))
    if rc != 0 or "total" not in found:
        return None, None, first_error(text, rc)
    return int(found["total"]), int(found["head"]), None


def helia_arena(model):
    """(bytes, notes, error) from heliaAOT's residency report."""
    with tempfile.TemporaryDirectory(prefix="helia_arena_") as work:
        out = os.path.join(work, "module")
        cmd = [sys.executable, "-m", "helia_aot", "convert", "--model.path", model, "--module.path", out,
               "--memory.dump-residency-json", "--verbose", "0",
               "--platform.memories", json.dumps({"dtcm": HELIA_DTCM_BYTES})]
        rc, text = run(cmd, 300, cwd=work, env={**os.environ, "COLUMNS": "400", "NO_COLOR": "1"})
        reports = glob.glob(os.path.join(out, "**", "*_residency.json"), recursive=True)
        if rc != 0 or not reports:
            return None, "", first_error(text, rc)
        with open(reports[0]) as f:
            arenas = json.load(f)["arenas"]
    writable = [(role, a) for role in ("scratch", "persistent") for a in arenas.get(role, [])]
    total = sum(a["used"] for _, a in writable)
    notes = []
    if len(writable) > 1:
        notes.append("helia arenas " + " + ".join(f"{role} {a['memory']} {a['used']}" for role, a in writable))
    peak = [a.get("peak_live") for a in arenas.get("scratch", [])]
    if peak and None not in peak and sum(peak) != sum(a["used"] for a in arenas["scratch"]):
        notes.append(f"helia peak_live {sum(peak)}")
    staged = sum(a["used"] for a in arenas.get("constant", []) if a.get("kind") == "staged")
    if staged:
        notes.append(f"helia staged constants {staged}")
    return total, "; ".join(notes), None


def measure(model, args, helia_ok):
    r = {"model": os.path.basename(model), "notes": []}
    r["weft"], r["lb"], err = weft_arena(args.weft, model)
    if err:
        r["notes"].append("weft: " + short(err.removeprefix("weft: ")))
    r["tflm"], r["tflm_head"], err = tflm_arena(model, (r["weft"] or 0) + os.path.getsize(model))
    if err:
        r["notes"].append("TFLM: " + short(err))
    r["helia"] = None
    if helia_ok:
        r["helia"], notes, err = helia_arena(model)
        if err:
            r["notes"].append("helia-aot: " + short(err))
        elif notes:
            r["notes"].append(notes)
    return r


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def num(v):
    return "-" if v is None else str(v)


def table(rows, helia_ok):
    head = ["model", "Weft arena", "lower bound", "Weft/lower bound", "TFLM arena used", "Weft/TFLM",
            "TFLM head", "Weft/TFLM head", "helia-aot arena", "Weft/helia-aot", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        helia = num(r["helia"]) if helia_ok else "n/a"
        cells = [r["model"], num(r["weft"]), num(r["lb"]), ratio(r["weft"], r["lb"]), num(r["tflm"]),
                 ratio(r["weft"], r["tflm"]), num(r["tflm_head"]), ratio(r["weft"], r["tflm_head"]),
                 helia, ratio(r["weft"], r["helia"]), "; ".join(r["notes"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows, helia_ok):
    def count(key):
        both = [r for r in rows if r["weft"] is not None and r[key] is not None]
        larger = [r["model"] for r in both if r["weft"] > r[key]]
        return f"{len(both) - len(larger)}/{len(both)} models where both ran" + (
            f" (larger on {', '.join(larger)})" if larger else "")
    ratios = [r["weft"] / r["lb"] for r in rows if r["weft"] is not None and r["lb"]]
    mean = f"{sum(ratios) / len(ratios):.3f} over {len(ratios)} models" if ratios else "-"
    helia = f"Weft <= helia-aot on {count('helia')}" if helia_ok else "helia-aot not run (see above)"
    return (f"Weft <= TFLM arena used on {count('tflm')}; Weft <= TFLM head on {count('tflm_head')}; "
            f"{helia}; mean Weft/lower bound {mean}.")


def helia_status():
    """None when heliaAOT can run here, else why not."""
    if importlib.util.find_spec("helia_aot") is None:
        return f"the package helia-aot is not installed in {sys.executable} (pip install helia-aot)"
    rc, text = run([sys.executable, "-m", "helia_aot", "version"], 120)
    return None if rc == 0 else "helia-aot does not run on this machine: " + first_error(text, rc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weft", default="/work/main/build/bin/weft")
    ap.add_argument("--corpora", default="/work/shared/corpora")
    ap.add_argument("--only", help="comma-separated model file names")
    ap.add_argument("--markdown", help="also write the table and the summary to this file")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()

    models = sorted(glob.glob(os.path.join(args.corpora, "tflite-micro", "**", "*.tflite"), recursive=True),
                    key=os.path.basename)
    if args.only:
        wanted = {n.strip() for n in args.only.split(",") if n.strip()}
        missing = wanted - {os.path.basename(m) for m in models}
        if missing:
            sys.exit(f"not in the corpora: {', '.join(sorted(missing))}")
        models = [m for m in models if os.path.basename(m) in wanted]
    if not models:
        sys.exit(f"no .tflite model under {args.corpora}/tflite-micro")

    helia_problem = helia_status()
    if helia_problem:
        print(f"heliaAOT column skipped: {helia_problem}", flush=True)

    def one(model):
        r = measure(model, args, helia_problem is None)
        print(f"{r['model']}: weft {num(r['weft'])} (lower bound {num(r['lb'])}), TFLM {num(r['tflm'])} "
              f"(head {num(r['tflm_head'])}), helia-aot {num(r['helia'])}"
              + (f"  [{'; '.join(r['notes'])}]" if r["notes"] else ""), flush=True)
        return r

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(one, models))

    text = table(rows, helia_problem is None) + "\n\n" + summary(rows, helia_problem is None) + "\n"
    if helia_problem:
        text += f"\nheliaAOT: {helia_problem}\n"
    print("\n" + text, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
