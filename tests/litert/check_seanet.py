"""The TFLM seanet integration models (int16 activations) against their golden outputs.

    python tests/litert/check_seanet.py [--corpora DIR] [--build DIR] [--only add,conv]

Each NAME.tflite in <corpora>/tflite-micro/integration_tests/seanet/<op>/ runs in Weft on the
inputs NAME_input<k>_<type>.csv; the output must equal NAME_golden_<type>.csv exactly (the files
were written by TFLite's reference kernels). Prints one line per model and a summary with the
count of exact matches and of models off by at most 1 somewhere; exits 1 unless all are exact.
"""
import argparse
import glob
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DTYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "float32": np.float32}


def read_csv(path):
    with open(path) as f:
        text = f.read().strip()
    return [int(v) for v in text.replace("\n", ",").split(",") if v.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default=os.path.join(ROOT, "..", "shared", "corpora"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--only", default="", help="comma-separated op directories")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    import weft

    base = os.path.join(a.corpora, "tflite-micro", "integration_tests", "seanet")
    if not os.path.isdir(base):
        sys.exit(f"no seanet models under {base} (--corpora)")
    only = set(x for x in a.only.split(",") if x)
    session = weft.Session(use_env_path=False)
    exact, off_by_one, failed = 0, 0, []
    models = sorted(glob.glob(os.path.join(base, "*", "*.tflite")))
    for path in models:
        op = os.path.basename(os.path.dirname(path))
        if only and op not in only:
            continue
        name = os.path.splitext(path)[0]
        golden = glob.glob(name + "_golden_*.csv")
        tag = os.path.relpath(path, base)
        try:
            graph = weft.import_litert(path)
            model = session.compile(graph)
            inputs = []
            for k, info in enumerate(graph.inputs):
                files = glob.glob(f"{name}_input{k}_*.csv")
                if len(files) != 1:
                    raise RuntimeError(f"expected one input{k} CSV, found {len(files)}")
                dt = DTYPES[files[0].rsplit("_", 1)[1][:-4]]
                inputs.append(np.array(read_csv(files[0]), dtype=dt).reshape(info[2]))
            (out,) = model.run(inputs)
            want_dt = DTYPES[golden[0].rsplit("_", 1)[1][:-4]]
            want = np.array(read_csv(golden[0]), dtype=np.int64)
            got = out.astype(np.int64).reshape(-1)
            if out.dtype != want_dt:
                raise RuntimeError(f"output type {out.dtype}, golden {np.dtype(want_dt)}")
            if got.shape != want.shape:
                raise RuntimeError(f"output has {got.size} elements, golden {want.size}")
            diff = np.abs(got - want)
            if diff.max(initial=0) == 0:
                exact += 1
                print(f"exact      {tag}")
            else:
                if diff.max() == 1:
                    off_by_one += 1
                failed.append(tag)
                print(f"MISMATCH   {tag}: {int((diff > 0).sum())} of {diff.size} differ, max {int(diff.max())}")
        except Exception as e:  # report and go on
            failed.append(tag)
            print(f"ERROR      {tag}: {str(e).splitlines()[0][:300]}")
    total = exact + len(failed)
    print(f"\nseanet: {exact}/{total} bit-exact, {off_by_one} off by at most 1, {len(failed) - off_by_one} other failures")
    return 0 if exact == total and total > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
