#!/usr/bin/env python3
"""Exports the model zoo (bench/zoo/zoo_models.py) to ONNX, with a manifest.

    .venv/bin/python bench/zoo/make_zoo.py [--out DIR] [--only NAME[,NAME]] [--size small|full|both]
                                           [--variant static|dynamic|both] [--force] [--list]

Every registered model goes through the TorchScript exporter (torch.onnx.export(..., dynamo=False);
models marked `script` are torch.jit.script'ed first, which keeps their control flow as ONNX If),
at an opset that rotates over 13..18 in registry order (the same opset for all files of a model),
in two variants and two sizes:

    <name>.<size>.<variant>.onnx     size: small (tiny inputs, batch 2; for correctness tests)
                                           full  (the published input size, batch 1; for timing)
                                     variant: static (all dims fixed)
                                              dynamic (batch dim of every input and output symbolic,
                                                       traced at batch 2)

Weights are random and seeded (seed = 1000 + crc32(name) % 100000; recorded per file), so every
run writes the same models. A file is skipped when it exists and its manifest entry has the current
stamp (a hash of zoo_models.py and this script; any edit re-exports everything) unless --force.

The output directory (default bench/zoo/out) holds generated files only: the .onnx files,
manifest.json (one entry per file: model, family, file, opset, variant, size, batch, seed, inputs
with names/shapes/dtypes/value ranges/batch axis, outputs, op types, whether an If is present) and
a .gitignore that ignores the directory's contents.
"""
import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import time
import warnings
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

OPSETS = (13, 14, 15, 16, 17, 18)
SIZES = ("small", "full")
VARIANTS = ("static", "dynamic")
BATCH = {"small": 2, "full": 1}
TRACE_BATCH_DYNAMIC = 2


def model_seed(name):
    return 1000 + zlib.crc32(name.encode()) % 100000


def stamp():
    h = hashlib.sha256()
    for f in ("zoo_models.py", "make_zoo.py"):
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()[:16]


def example_args(inputs, seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    args = []
    for i in inputs:
        if i.kind in ("ids", "mask"):
            args.append(torch.randint(int(i.low), int(i.high), i.shape, generator=g, dtype=torch.int64))
        elif i.kind == "uniform":
            args.append(torch.rand(i.shape, generator=g) * (i.high - i.low) + i.low)
        else:
            args.append(torch.randn(i.shape, generator=g))
    return tuple(args)


def graph_ops(graph, ops=None):
    """Op types of `graph` including those in subgraphs (If/Loop/Scan bodies)."""
    ops = set() if ops is None else ops
    for n in graph.node:
        ops.add(n.op_type if not n.domain or n.domain == "ai.onnx" else f"{n.domain}::{n.op_type}")
        for a in n.attribute:
            if a.g is not None and len(a.g.node):
                graph_ops(a.g, ops)
            for sg in a.graphs:
                graph_ops(sg, ops)
    return ops


def export_one(name, family, size, variant, opset, path, seed):
    """Exports one file; returns its manifest entry (without file/stamp)."""
    import onnx
    import torch
    from zoo_models import build

    batch = BATCH[size] if variant == "static" else TRACE_BATCH_DYNAMIC
    b = build(name, size, batch, seed)
    args = example_args(b.inputs, seed + 1)
    module = torch.jit.script(b.module) if b.script else b.module
    with torch.no_grad():
        ref = b.module(*args)
    ref = ref if isinstance(ref, tuple) else (ref,)
    in_names, out_names = [i.name for i in b.inputs], [o.name for o in b.outputs]
    dyn = None
    if variant == "dynamic":
        dyn = {i.name: {i.batch_axis: "batch"} for i in b.inputs}
        dyn.update({o.name: {o.batch_axis: "batch"} for o in b.outputs})
    tmp = path + ".tmp"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, tmp, dynamo=False, opset_version=opset, input_names=in_names,
                          output_names=out_names, dynamic_axes=dyn, do_constant_folding=True)
    os.replace(tmp, path)
    onnx.checker.check_model(path)
    m = onnx.load(path, load_external_data=False)
    ops = graph_ops(m.graph)

    def shape(dims, axis):
        s = list(dims)
        if variant == "dynamic":
            s[axis] = "batch"
        return s

    return {
        "model": name, "family": family, "opset": opset, "variant": variant, "size": size,
        "batch": BATCH[size], "seed": seed,
        "inputs": [{"name": i.name, "shape": shape(i.shape, i.batch_axis), "dtype": i.dtype, "kind": i.kind,
                    "low": i.low, "high": i.high, "batch_axis": i.batch_axis} for i in b.inputs],
        "outputs": [{"name": o.name, "shape": shape(t.shape, o.batch_axis), "dtype": str(t.dtype).replace("torch.", ""),
                     "batch_axis": o.batch_axis} for o, t in zip(b.outputs, ref)],
        "ops": sorted(ops), "has_if": "If" in ops, "nodes": len(m.graph.node),
        "script": b.script, "bytes": os.path.getsize(path),
    }


def load_manifest(out):
    p = os.path.join(out, "manifest.json")
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return {"entries": []}


def save_manifest(out, man):
    import torch
    man["torch"] = torch.__version__
    man["opsets"] = list(OPSETS)
    man["entries"].sort(key=lambda e: (e["index"], SIZES.index(e["size"]), VARIANTS.index(e["variant"])))
    p = os.path.join(out, "manifest.json")
    with open(p + ".tmp", "w") as f:
        json.dump(man, f, indent=1)
    os.replace(p + ".tmp", p)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="output directory (default: %(default)s)")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--size", choices=("small", "full", "both"), default="both")
    ap.add_argument("--variant", choices=("static", "dynamic", "both"), default="both")
    ap.add_argument("--force", action="store_true", help="re-export files that are up to date")
    ap.add_argument("--list", action="store_true", help="list the models (name, family, opset) and exit")
    a = ap.parse_args()

    from zoo_models import REGISTRY
    names = list(REGISTRY)
    opset_of = {n: OPSETS[i % len(OPSETS)] for i, n in enumerate(names)}
    if a.list:
        for i, n in enumerate(names):
            print(f"{i + 1:2d} {n:30s} {REGISTRY[n].family:15s} opset {opset_of[n]}  {REGISTRY[n].doc}")
        return 0
    sel = names
    if a.only:
        sel = [s.strip() for s in a.only.split(",") if s.strip()]
        unknown = [s for s in sel if s not in REGISTRY]
        if unknown:
            sys.exit(f"unknown model(s): {', '.join(unknown)}; --list shows the names")
    sizes = SIZES if a.size == "both" else (a.size,)
    variants = VARIANTS if a.variant == "both" else (a.variant,)

    import torch
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    gi = os.path.join(a.out, ".gitignore")
    if not os.path.exists(gi):
        with open(gi, "w") as f:
            f.write("# generated by bench/zoo/make_zoo.py\n*\n")
    man = load_manifest(a.out)
    entries = {(e["model"], e["size"], e["variant"]): e for e in man["entries"]}
    st = stamp()
    failed = []
    t_all = time.time()
    for k, name in enumerate(sel):
        fam, opset, seed = REGISTRY[name].family, opset_of[name], model_seed(name)
        parts = []
        for size in sizes:
            for variant in variants:
                fname = f"{name}.{size}.{variant}.onnx"
                path = os.path.join(a.out, fname)
                old = entries.get((name, size, variant))
                if (not a.force and old and old.get("stamp") == st and old.get("opset") == opset
                        and "error" not in old and os.path.exists(path)):
                    parts.append(f"{size}/{variant} up to date")
                    continue
                t0 = time.time()
                try:
                    e = export_one(name, fam, size, variant, opset, path, seed)
                    parts.append(f"{size}/{variant} {time.time() - t0:.1f}s{' [If]' if e['has_if'] else ''}")
                except Exception as ex:  # noqa: BLE001 - report and go on
                    msg = " ".join(f"{type(ex).__name__}: {ex}".split())[:400]
                    e = {"model": name, "family": fam, "opset": opset, "variant": variant, "size": size,
                         "batch": BATCH[size], "seed": seed, "error": msg}
                    parts.append(f"{size}/{variant} FAILED ({msg})")
                    failed.append(f"{name} {size}/{variant}: {msg}")
                e.update(file=fname, stamp=st, index=names.index(name))
                entries[(name, size, variant)] = e
                man["entries"] = list(entries.values())
                save_manifest(a.out, man)
        print(f"[{k + 1:2d}/{len(sel)}] {name:30s} {fam:15s} opset {opset}: {', '.join(parts)}", flush=True)
    man["entries"] = list(entries.values())
    save_manifest(a.out, man)
    print(f"{len(sel)} models in {time.time() - t_all:.0f}s -> {a.out}/manifest.json")
    if failed:
        print("export failures:\n  " + "\n  ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
