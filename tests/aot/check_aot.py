"""weft aot on every model of the test corpora: convert, build as strict C99, run, compare.

    python tests/aot/check_aot.py [--build DIR] [--corpora DIR] [--work DIR] [--only NAME,...]
                                  [--valgrind auto|on|off] [--markdown FILE] [--via-model-file]

For each .tflite file under <corpora>/tflite-micro (and with --testdata, <corpora>/litert-testdata):
  1. `weft aot MODEL --test` writes the module and a test case: random inputs (seeded) with
     Weft's runtime's outputs as golden values, or, for the seanet models, the corpora's own inputs
     and TFLM's golden outputs (their int32 shape inputs are frozen with --freeze);
  2. the module and its test program build with `cc -std=c99 -Wall -Wextra -Werror -pedantic`;
  3. the object files are checked: no allocation function referenced, no writable globals
     (no .data or .bss symbols: everything mutable lives in the caller's context);
  4. the test program runs (twice through the model) and must report no differing output value:
     integers bit-exact, floats within the module's tolerance; under valgrind as well when it is
     installed (models whose constants source is under 3 MB; larger ones natively only).
Models listed in EXPECTED_FAILURES must fail to convert with the error given there (so the list
stays honest). With --onnx-zoo DIR, the float ONNX models of the model zoo (bench/zoo, the
<name>.small.static.onnx files) go through the same steps; those in ONNX_MUST must convert, the
others may stop at an operator without an emitter (listed) but must match when they convert. With
--onnx-quantized DIR, the zoo's models as ONNX Runtime's quantizer writes them (QDQ, QOperator,
dynamic; those with small weights) must all convert, build and match, 8-bit values exactly, but
for ONNX_QUANTIZED_FAILURES and the reasons in ONNX_QUANTIZED_LOOSE. Also checked: two different modules and two instances of one in one program, and
one module built through its own CMakeLists.txt. With --via-model-file each model is first
compiled into a .weft file with the default graph passes (`weft compile`) and the module made from
that file (fused additions and activations, blocked layouts). Prints a table (ops, arena, lower bound, code
size without constants); exits 1 on any failure.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# model file -> a fragment of the error `weft aot` must give.
EXPECTED_FAILURES = {
    "person_detect_vela.tflite": "ETHOS_U",  # an Arm Ethos-U NPU command stream
}
# LiteRT's own test data (--testdata): files whose operators have no emitter yet, with the error
# `weft aot` must give (none at present). Every other file the runtime runs must convert, build
# and match.
TESTDATA_NOT_YET = {}
# Test inputs for files whose random ones would not do: name -> {input: value}; an int32 scalar
# that decides an output's size is frozen into the module (--freeze), the rest are test inputs.
TESTDATA_INPUTS = {
    "simple_topk_op_runtime_k.tflite": {"serving_default_k:0": np.array(5, np.int32)},
    # RSQRT is defined from the zero point up (0 here): every 32nd value of [0, 32767].
    "single_rsqrt_default_a16w8_recipe_quantized.tflite": {"serving_default_input_1:0": (np.arange(1024, dtype=np.int16) * 32).reshape(1, 32, 32)},
    "simple_floor_mod.tflite": {"arg0": np.array([7, -7, 7, -7, 0], np.int32), "arg1": np.array([3, 3, -3, -3, 5], np.int32)},
}
# Zoo models that must convert, build and match in every test run: those with small weights (a
# module's constants are C source: 3-4 bytes of text per weight byte) that between them have every
# kind of generic op with an emitter. The others convert too (bench/aot/RESULTS.md).
ONNX_MUST = ["blazeface", "conv1d_gru", "conv_autoencoder", "dcgan_generator", "densenet121", "distilbert", "espcn", "gpt2",
             "gru_streaming", "lstm_streaming", "mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x1_0", "squeezenet1_1",
             "t5_decoder", "tcn"]
# Models quantized by ONNX Runtime's tool (--onnx-quantized: model_zoo_quantized's files) whose C
# cannot give Weft's runtime's values to the bit, with the reason and what is checked instead.
ONNX_QUANTIZED_LOOSE = {
    # (atol, rtol, compare every operator's outputs, reason)
    "conv_autoencoder.qdq": (1e-5, 1e-4, False, "its ConvTranspose runs in float between QDQ pairs (as ONNX Runtime runs it) and the C "
                             "sums in another order: a few 8-bit values after it land one step apart; the outputs agree"),
    "conv1d_gru.qdq": (3e-3, 0.0, False, "its GRU runs in float between QDQ pairs (as ONNX Runtime runs it) and the C sums in "
                       "another order: a few 8-bit values after it land one step apart, and so do 4 of 1856 outputs (by up to 3e-3)"),
    "conv1d_gru.qop": (3e-3, 0.0, False, "the same float GRU as the QDQ file"),
    "distilbert.dynamic": (1e-3, 0.0, True, "every MatMul's float input is quantized from its own range: C's expf and tanhf one "
                           "ulp from the runtime's move a value over a rounding boundary now and then (outputs up to 1e-3 apart)"),
    "espcn.dynamic": (1e-2, 0.0, True, "every layer's float output is quantized again from its own range (DynamicQuantizeLinear): "
                      "C's tanhf one ulp from the runtime's Tanh moves a value over a rounding boundary now and then, one "
                      "quantization step (up to 3e-3 on outputs up to 3.8)"),
}
# Quantized files that must fail to convert, with the error fragment.
ONNX_QUANTIZED_FAILURES = {
    "t5_decoder.qop.onnx": "A_scale is inf",  # calibration over log(0) wrote an infinite QLinearMul scale
}
# Float tolerances wider than the default (atol 1e-5, rtol 1e-4) for zoo models whose random
# weights make outputs so large that float32 summation order alone moves them further: the same
# inputs through Weft's runtime and ONNX Runtime differ by as much (measured, in the reason).
ONNX_TOLERANCE = {
    "blazeface": (0.05, 2e-3, "outputs up to ~120; Weft's runtime and ONNX Runtime differ by up to 0.043 absolute, 1.1e-3 relative"),
    "fpn_resnet18": (2e-4, 1e-4, "outputs up to ~34; Weft's runtime and ONNX Runtime differ by up to 9.2e-5 absolute"),
}
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1"]
ALLOC = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign", "valloc", "sbrk", "mmap"}
CSV_TYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "float32": np.float32}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def read_csv(path, dtype):
    with open(path) as f:
        text = f.read().strip()
    return np.array([int(v) if dtype != np.float32 else float(v) for v in text.replace("\n", ",").split(",") if v.strip()], dtype=dtype)


def seanet_args(model, work, graph_inputs, graph_outputs):
    """--freeze / --test-input / --test-output for a seanet model from its CSV files."""
    stem = os.path.splitext(model)[0]
    args = []
    for k, (name, dtype, shape) in enumerate(graph_inputs):
        files = glob.glob(f"{stem}_input{k}_*.csv")
        if len(files) != 1:
            raise RuntimeError(f"expected one input{k} CSV for {model}")
        dt = CSV_TYPES[files[0].rsplit("_", 1)[1][:-4]]
        value = read_csv(files[0], dt).reshape(shape)
        shape_input = dt == np.int32 and len(shape) == 1 and shape[0] <= 8  # e.g. an output_shape: frozen
        path = os.path.join(work, f"in{k}.npy")
        np.save(path, value)
        args += ["--freeze" if shape_input else "--test-input", f"{name}={path}"]
    golden = glob.glob(f"{stem}_golden_*.csv")
    if len(golden) != 1 or len(graph_outputs) != 1:
        raise RuntimeError(f"expected one golden CSV and one output for {model}")
    name, _, shape = graph_outputs[0]
    dt = CSV_TYPES[golden[0].rsplit("_", 1)[1][:-4]]
    path = os.path.join(work, "golden.npy")
    np.save(path, read_csv(golden[0], dt).reshape(shape))
    return args + ["--test-output", f"{name}={path}"]


def model_io(weft_cli, model):
    """[(name, dtype, shape)] of the inputs and outputs, from `weft inspect`."""
    out = run([weft_cli, "inspect", model])
    ins, outs = [], []
    for line in out.stdout.splitlines():
        m = re.match(r"(input|output)\s+(.*?): (\w+)\[([-0-9,]*)\]$", line)
        if m:
            shape = [int(d) for d in m.group(4).split(",") if d]
            (ins if m.group(1) == "input" else outs).append((m.group(2), m.group(3), shape))
        else:
            m = re.match(r"output\s+(.*)$", line)
            if m:
                outs.append((m.group(1), None, None))
    return ins, outs


def object_checks(objects, objdump):
    """Problems with the module's objects: allocation functions called, writable data (objects in
    .data or .bss; .data.rel.ro is read-only after relocation)."""
    problems = []
    for obj in objects:
        out = run([objdump, "-t", obj]).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 4:
                continue
            name, section = parts[-1], next((p for p in parts if p.startswith(".") or p == "*UND*" or p == "*COM*"), "")
            if section == "*UND*" and name in ALLOC:
                problems.append(f"{os.path.basename(obj)} calls {name}")
            writable = section in (".data", ".bss", "*COM*") or (section.startswith((".data.", ".bss.")) and not section.startswith(".data.rel.ro"))
            if writable and " O " in f" {line} ":
                problems.append(f"{os.path.basename(obj)} has writable data '{name}' in {section}")
    return problems


def code_size(obj, size_tool):
    """text + rodata of an object (Berkeley `size` counts rodata in text)."""
    out = run([size_tool, obj]).stdout.splitlines()
    return int(out[1].split()[0]) if len(out) > 1 else -1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--corpora", default=os.path.join(ROOT, "..", "shared", "corpora"))
    ap.add_argument("--work", default="", help="keep the generated modules here (default: a temporary directory)")
    ap.add_argument("--only", default="", help="comma-separated model file names")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--valgrind", default="auto", choices=["auto", "on", "off"])
    ap.add_argument("--markdown", default="", help="also write the table here")
    ap.add_argument("--onnx-zoo", default="", help="also the <name>.small.static.onnx files of this exported model zoo")
    ap.add_argument("--onnx-quantized", default="",
                    help="also the quantized zoo files of this directory (bench/zoo/check_quantized.py --out: <name>.qdq/.qop/.dynamic.onnx) "
                         "whose weights are small (under 3 MB)")
    ap.add_argument("--no-corpora", action="store_true", help="skip the tflite-micro corpus (with --onnx-zoo or --testdata)")
    ap.add_argument("--testdata", action="store_true",
                    help="also every file of <corpora>/litert-testdata that Weft's runtime compiles (unknown dims as 1); "
                         "those in TESTDATA_NOT_YET must fail with the error given there")
    ap.add_argument("--onnx-must-only", action="store_true", help="of the zoo, only the models in ONNX_MUST (their C builds take minutes)")
    ap.add_argument("--via-model-file", action="store_true",
                    help="convert each model as a user with a compiled model file would: `weft compile` first (the default graph "
                         "passes: fused epilogues, blocked layouts), then `weft aot` on the .weft; the test's golden values come "
                         "from the compiled model (not with --testdata)")
    a = ap.parse_args()
    if a.via_model_file and a.testdata:
        sys.exit("--via-model-file does not combine with --testdata (its --freeze inputs apply to graphs, not model files)")
    weft_cli = os.path.join(a.build, "bin", "weft")
    base = os.path.join(a.corpora, "tflite-micro")
    if not os.path.isdir(base):
        sys.exit(f"no tflite-micro corpus under {a.corpora} (--corpora)")
    valgrind = shutil.which("valgrind") if a.valgrind != "off" else None
    if a.valgrind == "on" and not valgrind:
        sys.exit("--valgrind on: valgrind is not installed")
    objdump, size_tool = shutil.which("objdump"), shutil.which("size")
    work = a.work or tempfile.mkdtemp(prefix="weft-aot-")
    os.makedirs(work, exist_ok=True)
    only = set(x for x in a.only.split(",") if x)
    failures, rows, converted = [], [], {}
    models = [] if a.no_corpora else sorted(glob.glob(os.path.join(base, "**", "*.tflite"), recursive=True))
    if a.testdata:
        models += sorted(glob.glob(os.path.join(a.corpora, "litert-testdata", "*.tflite")))
    runtime_refuses = []
    if a.onnx_zoo:
        zoo = sorted(glob.glob(os.path.join(a.onnx_zoo, "*.small.static.onnx")))
        if not zoo:
            sys.exit(f"no *.small.static.onnx files in {a.onnx_zoo} (bench/zoo/make_zoo.py --size small --variant static)")
        found = {os.path.basename(z).split(".")[0] for z in zoo}
        for name in ONNX_MUST:
            if name not in found:
                failures.append(f"{name}: not in the zoo at {a.onnx_zoo}")
        models += [z for z in zoo if not a.onnx_must_only or os.path.basename(z).split(".")[0] in ONNX_MUST]
    if a.onnx_quantized:
        quantized = sorted(q for q in glob.glob(os.path.join(a.onnx_quantized, "*.onnx"))
                           if re.search(r"\.(qdq|qop|dynamic)\.onnx$", q) and os.path.getsize(q) < 3_000_000)
        if not quantized:
            sys.exit(f"no small quantized zoo files in {a.onnx_quantized} (bench/zoo/check_quantized.py --out DIR)")
        models += quantized
    for model in models:
        fname = os.path.basename(model)
        if only and fname not in only:
            continue
        quantized_file = re.search(r"\.(qdq|qop|dynamic)\.onnx$", fname) is not None
        stem = fname[:-5] if quantized_file else os.path.splitext(fname)[0].split(".")[0]
        prefix = re.sub(r"[^a-z0-9_]", "_", stem.lower())
        if not prefix[0].isalpha():
            prefix = "m_" + prefix
        prefix = prefix[:32]
        out_dir = os.path.join(work, prefix)
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        extra = []
        seanet = "/seanet/" in model
        if seanet and a.via_model_file:
            continue  # their shape inputs are frozen into the graph (--freeze), which a model file cannot take
        try:
            if seanet:
                ins, outs = model_io(weft_cli, model)
                extra = seanet_args(model, out_dir, ins, outs)
        except Exception as e:  # noqa: BLE001 - reported as this model's failure
            failures.append(f"{fname}: preparing the seanet data: {e}")
            continue
        if fname.endswith(".onnx") and stem in ONNX_TOLERANCE:
            extra += ["--atol", str(ONNX_TOLERANCE[stem][0]), "--rtol", str(ONNX_TOLERANCE[stem][1])]
        if stem in ONNX_QUANTIZED_LOOSE:
            atol, rtol, layers, _ = ONNX_QUANTIZED_LOOSE[stem]
            extra += ["--atol", str(atol), "--rtol", str(rtol), "--test-layers", "auto" if layers else "off"]
        testdata = "/litert-testdata/" in model.replace(os.sep, "/")
        for name, value in (TESTDATA_INPUTS.get(fname, {}) if testdata else {}).items():
            path = os.path.join(out_dir, re.sub(r"[^A-Za-z0-9_]", "_", name) + ".npy")
            np.save(path, value)
            extra += ["--freeze" if value.ndim == 0 and value.dtype == np.int32 else "--test-input", f"{name}={path}"]
        if testdata and run([weft_cli, "compile", model, "-o", os.path.join(out_dir, "runtime.weft")]).returncode != 0:
            runtime_refuses.append(fname)  # litert_testdata checks that its error names the construct
            continue
        source = model
        if a.via_model_file:
            source = os.path.join(out_dir, prefix + ".weft")
            # A module has fixed shapes: unknown input dims become 1, as `weft aot` does for a graph.
            fixed = [f"{n}={','.join(str(d if d >= 0 else 1) for d in shape)}" for n, _, shape in model_io(weft_cli, model)[0]
                     if shape is not None and any(d < 0 for d in shape)]
            comp = run([weft_cli, "compile", model, "-o", source] + [x for f in fixed for x in ("-s", f)])
            expected = EXPECTED_FAILURES.get(fname)
            if comp.returncode != 0 and expected and expected in comp.stderr:
                rows.append((fname, "-", "-", "-", "-", "expected failure: " + comp.stderr.strip().split("error: ")[-1][:90]))
                continue
            if comp.returncode != 0:
                failures.append(f"{fname}: weft compile failed: {comp.stderr.strip()[:400]}")
                continue
        gen = run([weft_cli, "aot", source, "-o", out_dir, "--prefix", prefix, "--test", "--json"] + extra)
        expected = EXPECTED_FAILURES.get(fname) or ONNX_QUANTIZED_FAILURES.get(fname) or (TESTDATA_NOT_YET.get(fname) if testdata else None)
        if expected:
            want = expected
            if gen.returncode == 0:
                failures.append(f"{fname}: converts now; remove it from EXPECTED_FAILURES")
            elif want not in gen.stderr:
                failures.append(f"{fname}: failed with an unexpected error: {gen.stderr.strip()[:300]}")
            else:
                rows.append((fname, "-", "-", "-", "-", "expected failure: " + gen.stderr.strip().split("error: ")[-1][:90]))
            continue
        if gen.returncode != 0:
            if fname.endswith(".onnx") and not quantized_file and stem not in ONNX_MUST and "cannot emit C" in gen.stderr:
                ops = sorted(set(re.findall(r"\[(\w+) '", gen.stderr)))
                rows.append((fname, "-", "-", "-", "-", "not yet: no emitter for " + ", ".join(ops)))
                continue
            failures.append(f"{fname}: weft aot failed: {gen.stderr.strip()[:400]}")
            continue
        report = json.loads(gen.stdout)
        inc = ["-I", os.path.join(out_dir, "includes-api"), "-I", os.path.join(out_dir, "src"), "-I", os.path.join(out_dir, "test")]
        objects, ok = [], True
        for src in [f"src/{prefix}.c", f"src/{prefix}_constants.c", f"test/{prefix}_test_case.c", f"test/{prefix}_test_main.c"]:
            obj = os.path.join(out_dir, os.path.basename(src)[:-2] + ".o")
            cc = run([a.cc] + CFLAGS + inc + ["-c", os.path.join(out_dir, src), "-o", obj])
            if cc.returncode != 0:
                failures.append(f"{fname}: {src} does not build: {cc.stderr.strip()[:600]}")
                ok = False
                break
            objects.append(obj)
        if not ok:
            continue
        size_obj = os.path.join(out_dir, "size.o")  # code size as built for a device: -Os
        run([a.cc, "-std=c99", "-Os"] + inc + ["-c", os.path.join(out_dir, f"src/{prefix}.c"), "-o", size_obj])
        code = code_size(size_obj, size_tool) if size_tool else -1
        if objdump:
            for p in object_checks(objects[:2], objdump):
                failures.append(f"{fname}: {p}")
        exe = os.path.join(out_dir, "run_test")
        link = run([a.cc] + objects + ["-o", exe, "-lm"])
        if link.returncode != 0:
            failures.append(f"{fname}: link failed: {link.stderr.strip()[:300]}")
            continue
        res = run([exe], timeout=600)
        if res.returncode != 0:
            failures.append(f"{fname}: the test program says: {(res.stdout + res.stderr).strip()[:400]}")
            continue
        status = res.stdout.strip().splitlines()[-1].split(": ", 2)[-1]
        if valgrind and os.path.getsize(os.path.join(out_dir, f"src/{prefix}_constants.c")) < 3_000_000:
            vg = run([valgrind, "--error-exitcode=9", "--quiet", exe], timeout=1800)
            if vg.returncode != 0:
                failures.append(f"{fname}: valgrind: {vg.stderr.strip()[:400]}")
                continue
            status += "; valgrind clean"
        converted[prefix] = out_dir
        rows.append((fname, report["ops"], report["arena_bytes"], report["lower_bound_bytes"], code, status))
        print(f"{fname}: {report['ops']} ops, arena {report['arena_bytes']} (lower bound {report['lower_bound_bytes']}), "
              f"code {code} bytes: {status}", flush=True)

    # Two different modules and two instances of one, in one program.
    pair = [p for p in ("hello_world_int8", "micro_speech_quantized") if p in converted]
    if len(pair) == 2:
        main_c = os.path.join(work, "two_models.c")
        with open(main_c, "w") as f:
            f.write('#include <stdio.h>\n#include "hello_world_int8_test_case.h"\n#include "micro_speech_quantized_test_case.h"\n'
                    "static hello_world_int8_context a, b;\nstatic micro_speech_quantized_context c;\n"
                    "int main(void) {\n  uint32_t total = 0;\n  hello_world_int8_test_result r1, r3;\n  micro_speech_quantized_test_result r2;\n"
                    "  if (hello_world_int8_init(&a, 0, 0) || hello_world_int8_init(&b, 0, 0) || micro_speech_quantized_init(&c, 0, 0)) return 2;\n"
                    "  hello_world_int8_test_case_init(&a, 0);\n  micro_speech_quantized_test_case_init(&c, 0);\n"
                    "  hello_world_int8_test_case_init(&b, 0);\n"
                    "  if (hello_world_int8_test_case_run(&a, 0, &r1)) return 2;\n"
                    "  if (micro_speech_quantized_test_case_run(&c, 0, &r2)) return 2;\n"
                    "  if (hello_world_int8_test_case_run(&b, 0, &r3)) return 2;\n"
                    "  total = r1.mismatches + r1.layer_mismatches + r2.mismatches + r2.layer_mismatches + r3.mismatches + r3.layer_mismatches;\n"
                    '  printf("%u values differ\\n", (unsigned)total);\n  return total != 0;\n}\n')
        srcs, incs = [main_c], []
        for p in pair:
            d = converted[p]
            srcs += [f"{d}/src/{p}.c", f"{d}/src/{p}_constants.c", f"{d}/test/{p}_test_case.c"]
            incs += ["-I", f"{d}/includes-api", "-I", f"{d}/src", "-I", f"{d}/test"]
        exe = os.path.join(work, "two_models")
        cc = run([a.cc] + CFLAGS + incs + srcs + ["-o", exe, "-lm"])
        res = run([exe]) if cc.returncode == 0 else None
        if cc.returncode != 0 or res.returncode != 0:
            failures.append("two modules in one program: " + (cc.stderr if cc.returncode else res.stdout + res.stderr).strip()[:500])
        else:
            print("two modules and two instances of one in one program: " + res.stdout.strip())
    # One module through its own CMakeLists.txt.
    if "hello_world_int8" in converted and shutil.which("cmake"):
        d = converted["hello_world_int8"]
        b = os.path.join(d, "build")
        steps = [["cmake", "-S", d, "-B", b, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror -pedantic"],
                 ["cmake", "--build", b], [os.path.join(b, "hello_world_int8_test")]]
        for s in steps:
            r = run(s)
            if r.returncode != 0:
                failures.append(f"hello_world_int8 through CMake: {' '.join(s[:2])}: {(r.stdout + r.stderr).strip()[-500:]}")
                break
        else:
            print("hello_world_int8 through its CMakeLists.txt: built and passed")

    table = ["| model | ops | arena (bytes) | lower bound | code, -Os (bytes) | result |", "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        table.append("| " + " | ".join(str(x) for x in r) + " |")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(table) + "\n")
    ok_count = sum(1 for r in rows if r[1] != "-")
    print(f"\n{ok_count} modules built and matched, {len(rows) - ok_count} not converted (expected), {len(failures)} failures")
    if runtime_refuses:
        print(f"{len(runtime_refuses)} litert-testdata files not tried: Weft's runtime does not compile them "
              f"(the litert_testdata test checks their errors): {', '.join(runtime_refuses)}")
    for f in failures:
        print("FAIL " + f)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
