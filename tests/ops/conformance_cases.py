#!/usr/bin/env python3
"""Writes the op conformance cases: every built-in op as a one-node ONNX model on random shapes
(size-0 dims, negative axes, broadcasting, boundary indices), with ONNX Runtime's outputs as the
reference (the onnx package's reference evaluator for the few cases where ONNX Runtime departs
from the operator's specification), plus a table of bad attributes and shapes per op that must be refused with an error
naming the culprit.

    conformance_cases.py OUT_DIR [--seed N] [--ops Relu,Conv] [--list]

Each case is a directory in the layout of the ONNX backend node tests, which
weft_onnx_conformance runs (tests/CMakeLists.txt: op_conformance; scripts/test.sh runs it under
AddressSanitizer + UBSan as well):
    OUT_DIR/<op>_<n>/model.onnx, test_data_set_0/input_<k>.pb, test_data_set_0/output_<k>.pb
    OUT_DIR/<op>_bad_<n>/model.onnx, test_data_set_0/input_<k>.pb, expected_error.txt
expected_error.txt holds text the error must contain. The op specs are in op_specs/*.py.
"""
import argparse
import importlib
import os
import pathlib
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from op_specs.common import REGISTRY, BadCase, Case  # noqa: E402

SPEC_MODULES = ["elementwise", "shape_ops", "reduce_nn", "conv_rnn", "index_ops", "loss_roi", "training", "tfidf"]


def to_value_info(name, arr):
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape))


def build_model(op, case, opset):
    inputs, initializers, feeds = [], [], []
    names = []
    for k, item in enumerate(case.inputs):
        if item is None:  # an omitted optional input
            names.append("")
            continue
        item = np.asarray(item)
        name = f"in{k}"
        names.append(name)
        if k in case.const:
            initializers.append(numpy_helper.from_array(item, name))
        else:
            inputs.append(to_value_info(name, item))
            feeds.append((name, item))
    outs = [f"out{k}" for k in range(case.outputs)]
    node = helper.make_node(op, names, outs, name=f"{op.lower()}_node", domain=case.domain, **case.attrs)
    out_infos = [onnx.ValueInfoProto(name=o) for o in outs]  # types and shapes left to the engines
    graph = helper.make_graph([node], f"{op}_case", inputs, out_infos, initializer=initializers)
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(case.domain, 1)] if case.domain else [])
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 8
    return model, feeds


def run_ort(model, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {n: a for n, a in feeds})


def run_onnx_reference(model, feeds):
    from onnx.reference import ReferenceEvaluator
    return ReferenceEvaluator(model).run(None, {n: a for n, a in feeds})


def write_case(dirpath, model, feeds, outputs=None, error=None):
    data = dirpath / "test_data_set_0"
    data.mkdir(parents=True)
    onnx.save(model, str(dirpath / "model.onnx"))
    for k, (_, arr) in enumerate(feeds):
        (data / f"input_{k}.pb").write_bytes(numpy_helper.from_array(arr).SerializeToString())
    if outputs is not None:
        for k, arr in enumerate(outputs):
            (data / f"output_{k}.pb").write_bytes(numpy_helper.from_array(np.asarray(arr)).SerializeToString())
    if error is not None:
        (dirpath / "expected_error.txt").write_text(error + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--ops", default="", help="comma-separated op types (default: every op with a spec)")
    ap.add_argument("--list", action="store_true", help="print the ops with specs and exit")
    args = ap.parse_args()
    for m in SPEC_MODULES:
        importlib.import_module(f"op_specs.{m}")
    if args.list:
        print("\n".join(sorted(REGISTRY)))
        return 0
    wanted = [o for o in args.ops.split(",") if o] or sorted(REGISTRY)
    unknown = [o for o in wanted if o not in REGISTRY]
    if unknown:
        print(f"conformance_cases.py: no spec for {', '.join(unknown)} (--list shows the ops)", file=sys.stderr)
        return 2
    out = pathlib.Path(args.out_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    total = bad_total = 0
    rejected_by_ort = []
    for op in wanted:
        rng = np.random.default_rng(_seed(args.seed, op))
        good = bad = 0
        for case in REGISTRY[op](rng):
            opset = case.opset
            model, feeds = build_model(case.op or op, case, opset)
            if isinstance(case, BadCase):
                write_case(out / f"{op}_bad_{bad}", model, feeds, error=case.error)
                bad += 1
                continue
            try:
                outputs = (run_onnx_reference if case.reference == "onnx" else run_ort)(model, feeds)
            except Exception as e:  # the reference refuses a case the spec calls valid: a spec bug
                rejected_by_ort.append(f"{op} case {good}: {str(e).splitlines()[0][:200]}")
                continue
            if case.check is not None:
                outputs = case.check(outputs)
            write_case(out / f"{op}_{good}", model, feeds, outputs=outputs)
            good += 1
        if good == 0:
            print(f"conformance_cases.py: {op} has no valid case", file=sys.stderr)
            rejected_by_ort.append(f"{op}: no valid case")
        total += good
        bad_total += bad
    print(f"op conformance: {len(wanted)} ops, {total} cases against ONNX Runtime, {bad_total} must-fail cases -> {out}")
    if rejected_by_ort:
        print("ONNX Runtime refused cases the specs call valid (fix the spec):", file=sys.stderr)
        for r in rejected_by_ort:
            print("  " + r, file=sys.stderr)
        return 1
    return 0


def _seed(seed, op):
    h = seed
    for ch in op:
        h = (h * 131 + ord(ch)) % (2**32)
    return h


if __name__ == "__main__":
    sys.exit(main())
