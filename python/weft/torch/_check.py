"""check_op: Weft's own check of torch.ops.weft.<op> (schema, Meta, mutation, autograd, model file)."""
import os
import shutil
import subprocess
import tempfile

import torch


def _tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for e in x for t in _tensors(e)]
    return []


def _map(x, fn):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map(e, fn) for e in x)
    return x


def check_op(op, args, kwargs=None, rtol=1e-5, atol=1e-6):
    """Checks torch.ops.weft.<op> called on `args`/`kwargs` (CPU tensors and attributes):

    1. schema: the torch schema matches the Weft prototype (inputs, attributes, outputs);
    2. meta: Meta output shapes and dtypes equal those of the real run;
    3. mutation: no input is modified;
    4. autograd: the op has an Autograd kernel, and with an input that requires grad it either
       differentiates (the op has <op>Grad) or raises the clear no-backward error;
    5. model file: the op in a compiled, saved and reloaded model gives the eager result;
    6. native: for an op from a plugin library, `weft check-op` on that library (dtype sweep,
       InferShape vs Execute, red zones, unwritten outputs, mutated inputs, determinism,
       concurrent Execute, Serialize round trip, ArgsUpdater rebinding) must pass.

    Returns a dict of the checks done; raises AssertionError naming the first that fails.
    """
    import weft
    from . import op_session, registered_ops, schema_of

    kwargs = dict(kwargs or {})
    name = op if isinstance(op, str) else str(op).split(".")[-1]
    if name not in registered_ops():
        raise AssertionError(f"weft::{name} is not registered in torch.ops.weft")
    session, proto = op_session(name)
    packet = getattr(torch.ops.weft, name)
    report = {}

    # 1. Schema.
    torch_schema = str(packet.default._schema)
    expected = schema_of(proto)
    if str(torch._C.parse_schema("weft::" + expected)) != torch_schema:
        raise AssertionError(f"schema mismatch for weft::{name}: torch has {torch_schema}, the prototype gives {expected}")
    report["schema"] = torch_schema

    # 3 (first, on the real run). Mutation.
    before = [t.clone() for t in _tensors(args)]
    with torch.no_grad():
        real = packet(*args, **kwargs)
    for i, (b, a) in enumerate(zip(before, _tensors(args))):
        if not torch.equal(b, a):
            raise AssertionError(f"weft::{name} modified its input tensor #{i}, which its schema does not declare")
    report["mutation"] = "none"
    real_list = _tensors(real)

    # 2. Meta.
    meta = packet(*_map(args, lambda t: t.to("meta")), **_map(kwargs, lambda t: t.to("meta")))
    meta_list = _tensors(meta)
    if len(meta_list) != len(real_list):
        raise AssertionError(f"weft::{name}: Meta gives {len(meta_list)} outputs, the real run {len(real_list)}")
    for i, (m, r) in enumerate(zip(meta_list, real_list)):
        if m.device.type != "meta" or m.shape != r.shape or m.dtype != r.dtype:
            raise AssertionError(f"weft::{name} output {i}: Meta gives {m.dtype}{list(m.shape)} on {m.device}, "
                                 f"the real run {r.dtype}{list(r.shape)}")
    report["meta"] = [(str(r.dtype), list(r.shape)) for r in real_list]

    # 4. Autograd.
    if not torch._C._dispatch_has_kernel_for_dispatch_key(f"weft::{name}", "Autograd"):
        raise AssertionError(f"weft::{name} has no Autograd kernel")
    float_inputs = [t for t in _tensors(args) if t.is_floating_point()]
    if float_inputs:
        grad_args = _map(args, lambda t: t.detach().clone().requires_grad_(t.is_floating_point()))
        has_grad = (name + "Grad") in registered_ops()
        try:
            out = packet(*grad_args, **kwargs)
            outs = _tensors(out)
            if not has_grad:
                raise AssertionError(f"weft::{name} ran on a tensor that requires grad without a backward")
            sum(o.float().sum() for o in outs).backward()
            report["autograd"] = "differentiable"
        except RuntimeError as e:
            if has_grad or "has no backward" not in str(e):
                raise AssertionError(f"weft::{name}: unexpected autograd behaviour: {e}") from e
            report["autograd"] = "raises a clear error (no backward)"
    else:
        report["autograd"] = "no floating-point inputs"

    # 5. Model-file round trip of the op alone.
    runner = _registered_runner(name)
    ins, attrs = _bind_for(proto, args, kwargs)
    from . import _counts

    extra = _counts(proto, kwargs)
    flat = runner._flat(ins)
    key = runner._key(flat, attrs, ins, extra)
    graph = runner._graph(ins, attrs, key[1], extra=extra)
    model = session.compile(graph)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, f"{name}.weft")
        try:
            model.save(path)
        except RuntimeError as e:
            report["model_file"] = f"not saveable: {e}"
        else:
            loaded = session.load_model(path)
            outs = loaded.run([t.detach().contiguous().numpy() for t in flat])
            for i, (o, r) in enumerate(zip(outs, real_list)):
                if not torch.allclose(torch.from_numpy(o).to(r.dtype), r, rtol=rtol, atol=atol, equal_nan=True):
                    raise AssertionError(f"weft::{name} output {i} differs after a model-file round trip")
            report["model_file"] = "round trip matches"

    # 6. The engine-side checks of `weft check-op`, in plugin checking mode.
    origin = proto.get("origin", "built-in")
    if origin == "built-in" or not os.path.isfile(origin):
        report["native"] = "built-in op: checked by the engine's own tests"
    else:
        exe = _weft_cli()
        if exe is None:
            report["native"] = "skipped: no weft command-line tool found (install the package, or set WEFT_CLI)"
        else:
            r = subprocess.run([exe, "check-op", origin, "--op", name, "--allow-override"],
                               capture_output=True, text=True, check=False)
            if r.returncode != 0:
                fails = [line.strip() for line in r.stdout.splitlines() if line.strip().startswith("FAIL")]
                detail = "; ".join(fails) if fails else (r.stderr or r.stdout).strip()[-800:]
                raise AssertionError(f"weft check-op {origin} --op {name} failed: {detail}")
            report["native"] = "weft check-op passed"
    return report


def _weft_cli():
    """The weft tool: beside this package (a wheel), $WEFT_CLI, or `weft` on PATH."""
    import weft
    bundled = os.path.join(os.path.dirname(os.path.abspath(weft.__file__)), "bin", "weft")
    for exe in (bundled, os.environ.get("WEFT_CLI"), shutil.which("weft")):
        if exe and os.access(exe, os.X_OK):
            return exe
    return None


def _registered_runner(name):
    from . import _registered

    return _registered[name][3]


def _bind_for(proto, args, kwargs):
    from . import _bind

    return _bind(proto, args, kwargs)
