"""Every Weft operator as ``torch.ops.weft.<op>``.

Importing this module registers, in ``torch.library`` namespace ``weft``, every operator the
default session sees (built-ins and the packages on ``WEFT_CUSTOM_OPP_PATH``):

- the schema comes from the operator's REG_OP prototype (required/optional/dynamic inputs,
  typed keyword-only attributes with their defaults, one result per output);
- CPU kernel: the operator's Execute, on the tensors' own memory (one compiled single-node
  model per signature, cached);
- Meta kernel: the operator's InferDataType/InferShape, so meta tensors and tracing work;
- Autograd: an operator ``<Op>`` whose package also has ``<Op>Grad`` (inputs: the op's inputs,
  then one gradient per output; outputs: one gradient per input) is differentiable; calling any
  other operator on a tensor that requires grad raises a clear error;
- ONNX: a symbolic that exports ``weft::<Op>`` nodes, which Weft's ONNX importer maps back.

The ops run in the process's one engine: the default session is ``weft.default_session()``
(``weft.set_default_session(s)`` before this import picks yours), and ``register(session)``
registers the ops of another session (e.g. one with extra packages), natively when
libweft_torch.so is present;
``torch.compile(model, backend="weft")`` runs models through Weft (``compile`` is the same with a
session), ``explain(model, *inputs)`` says which nodes ran where and why, ``from_exported(program)``
turns a torch.export program into a Weft model; ``check_op`` validates an op.
"""
import contextlib
import threading

import numpy as np
import torch

import weft as _weft

from . import _backend as _backend_module
from ._backend import explain, from_exported, graph_from_exported, weft_backend  # noqa: F401
from ._check import check_op  # noqa: F401

__all__ = ["register", "registered_ops", "schema_of", "compile", "explain", "from_exported", "graph_from_exported",
           "weft_backend", "check_op", "op_session", "load_native", "is_native"]


def compile(model, session=None, **kwargs):  # noqa: A001 - mirrors torch.compile
    """torch.compile(model, backend="weft", **kwargs), with `session` (a weft.Session) serving the
    Weft segments instead of weft.default_session()."""
    options = dict(kwargs.pop("options", None) or {})
    if session is not None:
        options["session"] = session
    return torch.compile(model, backend="weft", options=options or None, **kwargs)

_lib = None
_registered = {}  # op type -> (session, schema dict, torch schema string)
_lock = threading.Lock()

_TORCH_DTYPES = {
    "float32": torch.float32, "float16": torch.float16, "float64": torch.float64, "bfloat16": torch.bfloat16,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64, "bool": torch.bool,
}
_WEFT_DTYPES = {v: k for k, v in _TORCH_DTYPES.items()}
# c10::ScalarType's numbers (how TorchScript graphs hold a dtype) of the dtypes Weft has.
_C10_DTYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16, 6: torch.float32,
               7: torch.float64, 11: torch.bool, 15: torch.bfloat16, 27: torch.uint16, 28: torch.uint32, 29: torch.uint64}

_ATTR_TYPES = {
    "Int": "int", "Float": "float", "Bool": "bool", "String": "str", "ListInt": "int[]",
    "ListFloat": "float[]", "ListBool": "bool[]", "ListString": "str[]", "Type": "ScalarType", "Tensor": "Tensor?",
}


_DEFAULT_AS_NONE = ("ListString", "ListBool", "Type")


def _default_as_none(a):
    """Whether torch's schema states attribute `a`'s default as None (it has no literal for it;
    a float default of NaN, as a sampler's "no seed", included)."""
    d = a.get("default")
    return a["type"] in _DEFAULT_AS_NONE or (a["type"] == "Float" and isinstance(d, float) and d != d)

# Ops whose output rank (not only sizes) depends on input values: no fake kernel can say it.
_RANK_FROM_VALUES = {"Squeeze", "Unsqueeze"}


def _literal(value, attr_type):
    if attr_type == "Tensor":
        return "None"
    if attr_type == "Type":
        return "0"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        r = repr(value)
        return {"inf": "inf", "-inf": "-inf"}.get(r, r)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v, attr_type[4:]) for v in value) + "]"
    return str(value)


def schema_of(proto):
    """The torch schema string of a Weft prototype (the dict ``Session.schema`` returns)."""
    args = []
    # An optional input before a required one (a zero point between data and scale) has no
    # default: torch schemas allow defaults only at the end.
    last_required = max((k for k, io in enumerate(proto["inputs"]) if io["kind"] != "optional"), default=-1)
    for k, io in enumerate(proto["inputs"]):
        if io["kind"] == "required":
            args.append(f"Tensor {io['name']}")
        elif io["kind"] == "optional":
            args.append(f"Tensor? {io['name']}" + ("=None" if k > last_required else ""))
        else:
            args.append(f"Tensor[] {io['name']}")
    attrs = []
    for a in proto["attrs"]:
        t = _ATTR_TYPES[a["type"]]
        if a["required"]:
            attrs.append(f"{t} {a['name']}")
        elif _default_as_none(a):
            # torch schemas have no literal for these defaults: None stands for the op's default
            attrs.append(f"{t}? {a['name']}=None")
        else:
            attrs.append(f"{t} {a['name']}={_literal(a['default'], a['type'])}")
    attrs.extend(f"int {name}=0" for _, name in _count_args(proto))
    if attrs:
        args.append("*")
        args.extend(attrs)
    outs = ["Tensor[]" if o["kind"] == "dynamic" else "Tensor" for o in proto["outputs"]]
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return f"{proto['op_type']}({', '.join(args)}) -> {ret}"


def _count_args(proto):
    """(output index, keyword) of each extra result list a call can ask for: `num_<output>=n`
    returns n tensors there (Dropout's mask, MaxPool's Indices, BatchNormalization's running
    statistics); the default 0 returns []. Ops whose outputs are only lists take none."""
    outs = proto["outputs"]
    if all(o["kind"] == "dynamic" for o in outs):
        return []
    taken = {a["name"] for a in proto["attrs"]} | {io["name"] for io in proto["inputs"]}
    return [(j, "num_" + o["name"]) for j, o in enumerate(outs)
            if o["kind"] == "dynamic" and ("num_" + o["name"]).isidentifier() and "num_" + o["name"] not in taken]


def _counts(proto, kwargs, count_args=None):
    """{output index: tensors asked for} of a call (see _count_args; `count_args`: its result)."""
    counts = {}
    for j, name in _count_args(proto) if count_args is None else count_args:
        n = int(kwargs.get(name, 0) or 0)
        if not 0 <= n <= 64:
            raise ValueError(f"weft::{proto['op_type']}: {name}={n} is out of range (0 to 64)")
        counts[j] = n
    return counts


def _bind(proto, args, kwargs):
    """Splits a call into (tensor inputs per IR input, attrs dict) following the prototype."""
    n_in = len(proto["inputs"])
    ins = list(args[:n_in])
    for io in proto["inputs"][len(ins):]:
        ins.append(kwargs.get(io["name"]))
    attrs = {}
    extra = list(args[n_in:])
    for a in proto["attrs"]:
        if a["name"] in kwargs:
            attrs[a["name"]] = kwargs[a["name"]]
        elif extra:
            attrs[a["name"]] = extra.pop(0)
        elif not a["required"]:  # None stands for the op's own default where torch has no literal
            attrs[a["name"]] = None if _default_as_none(a) else a["default"]
    return ins, attrs


def _attr_value(v, attr_type):
    if attr_type == "Tensor":
        return None if v is None else _weft.as_array(v)
    if attr_type == "Float":
        return float(v)
    if attr_type == "ListFloat":
        return [float(x) for x in v]
    if attr_type == "Type":  # a torch.dtype (the schema's ScalarType)
        if isinstance(v, torch.dtype):
            if v not in _WEFT_DTYPES:
                raise TypeError(f"{v} has no Weft element type")
            return _weft.dtype_code(_WEFT_DTYPES[v])
        return _weft.dtype_code(v)
    if attr_type == "Int":
        return int(v)
    if attr_type == "ListInt":
        return [int(x) for x in v]
    return v


def _key_of(x):
    if isinstance(x, (list, tuple)):
        return tuple(_key_of(e) for e in x)
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes())
    return x


class _OpRunner:
    """Runs one op eagerly: a single-node graph compiled per (shapes, dtypes, attrs)."""

    def __init__(self, session, proto):
        self.session = session
        self.proto = proto
        self.attr_types = {a["name"]: a["type"] for a in proto["attrs"]}
        self.models = {}
        self.infers = {}
        self._list_only = len(proto["outputs"]) == 1 and proto["outputs"][0]["kind"] == "dynamic"
        self._count_args = _count_args(proto)

    def _graph(self, ins, attrs, metas, count=None, extra=None):
        g = _weft.Graph(self.proto["op_type"])
        names, counts = [], []
        k = 0
        for io, value in zip(self.proto["inputs"], ins):
            group = value if io["kind"] == "dynamic" else ([] if value is None else [value])
            if io["kind"] == "optional" and value is None:
                names.append("")
                counts.append(1)
                continue
            counts.append(len(group))
            for _ in group:
                dtype, shape = metas[k]
                name = f"in{k}"
                g.add_input(name, dtype, list(shape))
                names.append(name)
                k += 1
        outs = []
        out_counts = []
        if self._list_only:  # one list of outputs (Split): as many as the call asks for
            n = count if count is not None else self._list_count(ins, attrs, metas)
            outs = [f"out0_{k}" for k in range(n)]
            g.add_node(self.proto["op_type"], "op", names, outs, self._clean(attrs), counts, [n])
            for o in outs:
                g.add_output(o)
            return g
        if all(io["kind"] == "dynamic" for io in self.proto["outputs"]):
            raise NotImplementedError(f"weft::{self.proto['op_type']}: ops whose outputs are several lists are not callable "
                                      "from torch")
        for j, io in enumerate(self.proto["outputs"]):
            if io["kind"] == "dynamic":  # extra results (e.g. MaxPool's Indices): as many as num_<name> asks
                n = (extra or {}).get(j, 0)
                outs.extend(f"out{j}_{k}" for k in range(n))
                out_counts.append(n)
                continue
            outs.append(f"out{j}")
            out_counts.append(1)
        g.add_node(self.proto["op_type"], "op", names, outs, self._clean(attrs), counts, out_counts)
        for o in outs:
            g.add_output(o)
        return g

    def _clean(self, attrs):
        return {n: _attr_value(v, self.attr_types[n]) for n, v in attrs.items() if v is not None}

    def _list_count(self, ins, attrs, metas):
        """How many tensors an op whose only output is a list returns: its `num_outputs` attribute,
        else the length of an input named `split` (a shape, so fake tensors know it too), else, for
        an op that takes a list too (an optimizer's weight groups), the smallest count its shape
        inference accepts."""
        n = attrs.get("num_outputs")
        if n:
            return int(n)
        for io, v in zip(self.proto["inputs"], ins):
            if io["name"] == "split" and v is not None:
                return int(v.numel())
        listed = sum(len(v) for io, v in zip(self.proto["inputs"], ins) if io["kind"] == "dynamic")
        for n in range(1, 4 * listed + 1):
            try:
                self.session.infer(self._graph(ins, attrs, metas, n))
                return n
            except Exception:  # noqa: BLE001 - a count the op refuses: try the next
                continue
        raise ValueError(f"weft::{self.proto['op_type']}: its outputs are a list; say how many with num_outputs= "
                         "or a split tensor")

    @staticmethod
    def _flat(ins):
        flat = []
        for v in ins:
            if isinstance(v, (list, tuple)):
                flat.extend(v)
            elif v is not None:
                flat.append(v)
        return flat

    def _key(self, flat, attrs, ins, extra=None):
        structure = tuple(len(v) if isinstance(v, (list, tuple)) else (v is not None) for v in ins)
        structure += tuple(sorted((extra or {}).items()))
        metas = tuple((_WEFT_DTYPES[t.dtype], tuple(int(d) for d in t.shape)) for t in flat)
        return structure, metas, tuple(sorted((k, _key_of(_attr_value(v, self.attr_types[k])) if v is not None else None)
                                              for k, v in attrs.items()))

    def run(self, args, kwargs):
        ins, attrs = _bind(self.proto, args, kwargs)
        extra = _counts(self.proto, kwargs, self._count_args)
        flat = self._flat(ins)
        key = self._key(flat, attrs, ins, extra)
        model = self.models.get(key)
        if model is None:
            model = self.session.compile(self._graph(ins, attrs, key[1], extra=extra))
            self.models[key] = model
        arrays = [t.detach().contiguous().numpy() for t in flat]
        # Each call starts from a fresh state, as the native route's does: a stateful op (SVDF,
        # the sequence LSTM) or a seeded sampler is then a function of its arguments.
        model.reset_state()
        outs = model.run(arrays)
        return self._results([torch.from_numpy(o) for o in outs], extra)

    def _results(self, res, extra=None):
        if self._list_only:
            return list(res)
        it = iter(res)
        full = [[next(it) for _ in range((extra or {}).get(j, 0))] if io["kind"] == "dynamic" else next(it)
                for j, io in enumerate(self.proto["outputs"])]
        return full[0] if len(full) == 1 else tuple(full)

    def meta(self, args, kwargs, fake=False):
        """Outputs without data: on meta tensors, or (fake=True) as the op's fake kernel, where a
        data-dependent dim (-1 from InferShape) becomes a new dynamic size, at most the op's
        declared bound for it."""
        ins, attrs = _bind(self.proto, args, kwargs)
        extra = _counts(self.proto, kwargs, self._count_args)
        flat = self._flat(ins)
        key = self._key(flat, attrs, ins, extra)
        info = self.infers.get(key)
        if info is None:
            info = self.session.infer(self._graph(ins, attrs, key[1], extra=extra), bounds=True)
            self.infers[key] = info
        # As a fake kernel, the device the op runs on (the CPU for an op without tensor inputs).
        device = (flat[0].device if flat else "cpu") if fake else "meta"
        res = []
        for name, dtype, shape, bound in info:
            if any(d < 0 for d in shape):
                if not fake:
                    raise RuntimeError(
                        f"weft::{self.proto['op_type']}: output '{name}' has a data-dependent shape {shape}; "
                        "it cannot be computed on meta tensors")
                if self.proto["op_type"] in _RANK_FROM_VALUES:
                    raise RuntimeError(
                        f"weft::{self.proto['op_type']}: the rank of output '{name}' depends on the values of its "
                        "inputs, which fake tensors do not have; pass them as attributes or use a torch op")
                ctx = torch.library.get_ctx()
                # A dim the op bounds (InferShape's SetOutputShapeBound) gets that range.
                shape = [(ctx.new_dynamic_size(max=bound[k]) if bound is not None and bound[k] >= 0 else ctx.new_dynamic_size())
                         if d < 0 else d for k, d in enumerate(shape)]
            res.append(torch.empty(shape, dtype=_TORCH_DTYPES[dtype], device=device))
        return self._results(res, extra)


@contextlib.contextmanager
def _below_autograd():
    """Dispatch below the Autograd keys (the guard is an RAII object, not a context manager)."""
    guard = torch._C._AutoDispatchBelowAutograd()
    try:
        yield
    finally:
        del guard


def _requires_grad(args, kwargs):
    for v in list(args) + list(kwargs.values()):
        vs = v if isinstance(v, (list, tuple)) else [v]
        for t in vs:
            if isinstance(t, torch.Tensor) and t.requires_grad:
                return True
    return False


def _make_autograd(op, proto, grad_op):
    packet = getattr(torch.ops.weft, op)

    class _Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, kwargs, *tensors):
            with _below_autograd():
                out = packet(*tensors, **kwargs)
            ctx.save_for_backward(*tensors)
            ctx.kwargs = kwargs
            return out

        @staticmethod
        def backward(ctx, *grads):
            grad_packet = getattr(torch.ops.weft, grad_op)
            with _below_autograd():
                gins = grad_packet(*ctx.saved_tensors, *[g.contiguous() for g in grads])
            if isinstance(gins, torch.Tensor):
                gins = (gins,)
            return (None, *gins)

    def autograd_kernel(*args, **kwargs):
        if torch.is_grad_enabled() and _requires_grad(args, kwargs):
            if grad_op is None:
                raise RuntimeError(
                    f"weft::{op} has no backward: it was called on a tensor that requires grad. Add an op "
                    f"'{op}Grad' to its package (inputs: {op}'s inputs then one gradient per output; outputs: one "
                    f"gradient per input), or call it under torch.no_grad() / on detached tensors")
            if any(io["kind"] != "required" for io in proto["inputs"]):
                raise RuntimeError(f"weft::{op}: autograd supports ops with required tensor inputs only")
            return _Fn.apply(kwargs, *args)
        with _below_autograd():
            return packet(*args, **kwargs)

    return autograd_kernel


def _make_symbolic(op, proto):
    from torch.onnx import symbolic_helper as sh

    suffix = {"Int": "i", "Float": "f", "Bool": "i", "String": "s", "ListInt": "i", "ListFloat": "f", "ListBool": "i",
              "ListString": "s", "Type": "i"}

    def symbolic(g, *args):
        n_in = len(proto["inputs"])
        tensors = []
        for io, v in zip(proto["inputs"], args[:n_in]):
            if io["kind"] == "dynamic":
                tensors.extend(sh._unpack_list(v))
            elif io["kind"] == "optional" and sh._is_none(v):
                continue
            else:
                tensors.append(v)
        attrs = {}
        for a, v in zip(proto["attrs"], args[n_in:]):
            if a["type"] == "Tensor" or sh._is_none(v):
                continue
            value = sh._maybe_get_const(v, suffix[a["type"]] if not a["type"].startswith("List") else "is")
            if isinstance(value, torch._C.Value):
                raise RuntimeError(f"weft::{op}: attribute '{a['name']}' must be a constant to export to ONNX")
            if a["type"] in ("Bool",):
                value = int(bool(value))
            if a["type"] == "Type":  # TorchScript holds a dtype as c10's ScalarType number
                if int(value) not in _C10_DTYPES:
                    raise RuntimeError(f"weft::{op}: attribute '{a['name']}' holds a dtype with no Weft element type")
                value = _weft.dtype_code(_WEFT_DTYPES[_C10_DTYPES[int(value)]])
            if a["type"] == "ListBool":
                value = [int(bool(x)) for x in value]
            attrs[f"{a['name']}_{suffix[a['type']]}"] = value
        n_out = len(proto["outputs"])
        out = g.op(f"weft::{op}", *tensors, outputs=n_out, **attrs)
        # Outputs that follow an input (SAME_AS_INPUT) get its type, for the exporter's inference.
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o, io in zip(outs, proto["outputs"]):
            src = io["same_as_input"]
            if 0 <= src < n_in and proto["inputs"][src]["kind"] == "required":
                o.setType(args[src].type())
        return out

    return symbolic


_native = None  # ctypes handle of libweft_torch.so once loaded


def load_native():
    """Loads libweft_torch.so (the C++ registrations: CPU, Meta and Autograd kernels with no Python
    in the call path) when it ships with this package; returns whether it is loaded. Loading it
    registers the ops of weft.default_session(). Set WEFT_TORCH_NATIVE=0 to keep everything in
    Python."""
    global _native
    import ctypes
    import os

    if _native is not None:
        return True
    path = os.path.join(os.path.dirname(__file__), "libweft_torch.so")
    if os.environ.get("WEFT_TORCH_NATIVE", "1") == "0" or not os.path.exists(path):
        return False
    try:
        torch.ops.load_library(path)
    except (OSError, RuntimeError) as e:  # built against another torch: the Python registration serves
        import warnings

        warnings.warn(f"weft.torch: {path} does not load with torch {torch.__version__} ({str(e).splitlines()[0]}); "
                      "the ops are registered from Python instead", RuntimeWarning, stacklevel=2)
        return False
    lib = ctypes.CDLL(path)  # the same handle: the library is loaded once
    lib.weft_torch_register.restype = ctypes.c_char_p
    lib.weft_torch_register.argtypes = [ctypes.c_void_p]
    _native = lib
    return True


def _register_native(session):
    """Registers `session`'s ops through libweft_torch.so (the same engine, the same session)."""
    import ctypes

    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    capsule = session._capsule()
    text = _native.weft_torch_register(get(capsule, b"weft.Session")).decode()
    if text.startswith("error: "):
        raise RuntimeError(f"weft.torch: {text[7:]}")
    return text.split()


def _defined_natively(op):
    try:
        return any(torch._C._dispatch_has_kernel_for_dispatch_key(f"weft::{op}", key) for key in ("CPU", "CompositeExplicitAutograd"))
    except RuntimeError:
        return False


def is_native(op):
    """Whether torch.ops.weft.<op> runs through the C++ kernels of libweft_torch.so."""
    return op in _registered and _registered[op][4]


def _takes_only_values(proto):
    """An op with an input or output that is only ever a sequence or an optional (SequenceAt,
    Optional, ...): torch has no tensor for it."""
    for io in proto["inputs"] + proto["outputs"]:
        types = io["dtypes"]
        if types and all(t.startswith(("sequence(", "optional(")) for t in types):
            return True
    return False


def register(session=None):
    """Registers every op of `session` (default: weft.default_session()) as torch.ops.weft.<op>.
    Ops already registered (by name) are skipped. Returns the names registered now."""
    global _lib
    session = session or _weft.default_session()
    done = []
    with _lock:
        if _native is not None:
            _register_native(session)
        if _lib is None:
            _lib = torch.library.Library("weft", "FRAGMENT")
        names = session.ops()
        for op in names:
            if op in _registered or not op.isidentifier():
                continue
            proto = session.schema(op)
            if "EagerExecute" not in proto["capabilities"] or _takes_only_values(proto):
                continue
            schema = schema_of(proto)
            runner = _OpRunner(session, proto)
            native = _native is not None and _defined_natively(op)
            if not native:
                try:
                    _lib.define(schema)
                except RuntimeError as e:  # a prototype torch cannot express: leave the op out
                    _registered[op] = (session, proto, None, f"not registered: {e}".splitlines()[0], False)
                    continue
                # An op without tensor inputs (RandomUniform, RandomNormal) gives torch nothing
                # to dispatch on: its kernel serves every backend, as a factory function's does.
                _lib.impl(op, lambda *a, _r=runner, **k: _r.run(a, k), "CompositeExplicitAutograd" if not proto["inputs"] else "CPU")
            # The fake kernel (it serves meta tensors too): InferDataType/InferShape, with a new
            # dynamic size for each data-dependent dim, so torch.compile and torch.export trace
            # through ops like NonZero, Reshape or TopK.
            torch.library.register_fake(f"weft::{op}", lambda *a, _r=runner, **k: _r.meta(a, k, fake=True), lib=_lib)
            _registered[op] = (session, proto, schema, runner, native)
            done.append(op)
        for op in done:
            proto, native = _registered[op][1], _registered[op][4]
            grad = op + "Grad" if (op + "Grad") in _registered and _registered[op + "Grad"][2] else None
            if not native or grad:  # the C++ Autograd kernel covers ops without a backward
                _lib.impl(op, _make_autograd(op, proto, grad), "Autograd")
            try:
                torch.onnx.register_custom_op_symbolic(f"weft::{op}", _make_symbolic(op, proto), 9)
            except Exception:  # noqa: BLE001 - an exporter without custom symbolics: eager use still works
                pass
    return done


def registered_ops():
    """{op type: torch schema} of everything registered so far."""
    return {op: v[2] for op, v in _registered.items() if v[2]}


def op_session(op):
    """The Weft session and prototype behind torch.ops.weft.<op>."""
    if op not in _registered:
        raise KeyError(f"weft::{op} is not registered")
    return _registered[op][0], _registered[op][1]


load_native()
register()
_backend_module.register_backend()
