"""torch.compile(model, backend="weft"), weft.torch.explain and weft.torch.from_exported.

The backend lowers Dynamo's graph to ATen through aot_autograd (inference; a graph that needs
gradients runs its forward and backward in PyTorch). For each set of input shapes it builds a plan
once: one eager run records every value, parameters and buffers become Weft constants (folded, a
BatchNorm into its convolution), and runs of supported nodes become compiled Weft models; the rest
runs in PyTorch between them. Plans are cached per input shapes (so symbolic sizes reuse Dynamo's
one graph) and rebuilt if a parameter is replaced or modified in place.
"""
import collections
import os
import threading
import weakref

import torch
import torch.fx

import weft as _weft

from ._aten import Lowering, Unsupported

_MAX_PLANS = 16


def _describe(n):
    t = n.target
    return getattr(t, "__name__", None) if not isinstance(t, torch._ops.OpOverload) else str(t)


class _Recorder(torch.fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm, garbage_collect_values=False)
        self.values = {}

    def run_node(self, n):
        v = super().run_node(n)
        self.values[n] = v
        return v


class Plan:
    """One graph at one set of input shapes: Weft segments and PyTorch nodes in order."""

    def __init__(self, gm, args, static_idx, session):
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        rec = _Recorder(gm)
        with torch.no_grad():
            self.first_outputs = rec.run(*args)
        values = rec.values
        static = {placeholders[i] for i in static_idx if i < len(placeholders)}
        low = Lowering(gm, values, static, session)
        steps, report = low.partition()
        self.report = [(n, reason) for n, reason in report]
        self.segments = 0
        compiled = []
        for kind, what in steps:
            if kind == "weft":
                try:
                    what.model = session.compile(what.graph)
                except Exception as e:  # noqa: BLE001 - a segment Weft cannot compile runs in PyTorch
                    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
                    for n in what.nodes:
                        self.report.append((n, f"Weft could not compile its segment: {msg}"))
                        compiled.append(("torch", n))
                    continue
                self.segments += 1
                ins = list(what.inputs)
                outs = [(n, tuple(values[n].shape), values[n].dtype) for n in what.outputs]
                compiled.append(("weft", (what.model, ins, outs, [n.name for n in what.nodes], what.index_checks)))
            else:
                compiled.append((kind, what))
        self.steps = compiled
        self.placeholders = placeholders
        # constants evaluated once that PyTorch steps (or the graph's output) read
        needed = set()
        for kind, what in compiled:
            if kind == "torch":
                needed.update(what.all_input_nodes)
        output = next(n for n in gm.graph.nodes if n.op == "output")
        needed.update(output.all_input_nodes)
        self.consts = {n: values[n] for n in low.static if n.op != "placeholder" and n in needed}
        self.output = next(n for n in gm.graph.nodes if n.op == "output")
        self.weft_nodes = sum(len(w[3]) for k, w in self.steps if k == "weft")
        self.torch_nodes = [n for k, n in self.steps if k == "torch"]

    def __call__(self, args):
        env = dict(self.consts)
        for n, a in zip(self.placeholders, args):
            env[n] = a
        for kind, what in self.steps:
            if kind == "weft":
                model, ins, outs, _, checks = what
                for node, rows in checks:  # what embedding checks before it reads
                    t = env[node]
                    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= rows):
                        raise IndexError("index out of range in self")
                arrays = [env[n].detach().contiguous().numpy() for n in ins]
                results = [torch.empty(shape, dtype=dtype) for _, shape, dtype in outs]
                model.run_into(arrays, [r.numpy() for r in results])
                for (n, _, _), r in zip(outs, results):
                    env[n] = r
            else:
                n = what
                a = torch.fx.node.map_arg(n.args, lambda x: env[x])
                k = torch.fx.node.map_arg(n.kwargs, lambda x: env[x])
                env[n] = n.target(*a, **k)
        return torch.fx.node.map_arg(self.output.args[0], lambda x: env[x])


class _Compiled:
    """What the backend gives aot_autograd for one ATen graph: plans per input shapes."""

    def __init__(self, gm, static_idx, session, name):
        self.gm = gm
        self.static_idx = sorted(static_idx)
        self.session = session
        self.name = name
        self.plans = collections.OrderedDict()
        self.lock = threading.Lock()
        self.last_plan = None
        self.rebuilds = 0

    def _key(self, args):
        key = []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                key.append((tuple(a.shape), a.dtype))
            else:
                key.append(a)
        # Parameters are baked into a plan: it serves these very tensor objects (checked through
        # weak references, so a new tensor at a freed one's address is not taken for it), at
        # these storages and version counters.
        statics = tuple((id(args[i]), args[i].data_ptr(), args[i]._version) for i in self.static_idx
                        if isinstance(args[i], torch.Tensor))
        return tuple(key), statics

    def _same_objects(self, plan, args):
        return all(ref() is args[i] for i, ref in plan.static_refs)

    def __call__(self, *args):
        key = self._key(args)
        plan = self.plans.get(key)
        if plan is not None and not self._same_objects(plan, args):
            plan = None
        if plan is None:
            with self.lock:
                plan = self.plans.get(key)
                if plan is None or not self._same_objects(plan, args):
                    plan = Plan(self.gm, list(args), self.static_idx, self.session)
                    plan.static_refs = [(i, weakref.ref(args[i])) for i in self.static_idx
                                        if isinstance(args[i], torch.Tensor)]
                    self.plans[key] = plan
                    self.plans.move_to_end(key)
                    if len(self.plans) > _MAX_PLANS:
                        self.plans.popitem(last=False)
                    self.last_plan = plan
                    _log_plan(self.name, plan)
                    first, plan.first_outputs = plan.first_outputs, None
                    return first
        self.last_plan = plan
        return plan(args)


_explain_sink = threading.local()


def _log_plan(name, plan):
    sink = getattr(_explain_sink, "plans", None)
    if sink is not None:
        sink.append((name, plan))
    if os.environ.get("WEFT_TORCH_VERBOSE"):
        print(f"weft backend: {name}: {plan.segments} Weft segment(s) with {plan.weft_nodes} node(s), "
              f"{len(plan.torch_nodes)} node(s) in PyTorch")
        for n, why in plan.report:
            print(f"  {n.name} ({_describe(n)}): {why}")


_graph_counter = [0]


def weft_backend(gm, example_inputs, options=None, **kwargs):
    """The torch.compile backend "weft" (registered through the torch_dynamo_backends entry point
    and on `import weft.torch`). Options (`torch.compile(..., options={...})`): `session` (a
    weft.Session; default: weft.default_session()); `freeze_parameters` (default True: parameters
    and buffers become constants of the plan, rebuilt when PyTorch sees them change; False: they
    are inputs read on every call, for code that changes weights behind PyTorch's version
    counter, e.g. through `.data`)."""
    options = dict(options or {}, **kwargs)
    unknown = sorted(set(options) - {"session", "freeze_parameters"})
    if unknown:
        raise ValueError(f"backend 'weft': unknown option(s) {unknown}; it takes 'session' and 'freeze_parameters'")
    freeze = bool(options.get("freeze_parameters", True))
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from torch._guards import TracingContext

    from . import register

    session = options.get("session") or _weft.default_session()
    register(session)

    def inference(gm_aten, inputs):
        ctx = TracingContext.try_get()
        static = []
        if freeze and ctx is not None and ctx.fw_metadata is not None:
            meta = ctx.fw_metadata
            static = list(meta.static_input_indices or [])
            # A buffer the graph itself updates (a counter, running statistics) is not a constant.
            info = getattr(meta, "input_info", None) or []
            static = [i for i in static if not (i < len(info) and (info[i].mutates_data or info[i].mutates_metadata))]
        _graph_counter[0] += 1
        compiled = _Compiled(gm_aten, static, session, f"graph{_graph_counter[0]}")
        return make_boxed_func(compiled)

    def eager(gm_aten, inputs):  # a graph that needs gradients: PyTorch runs it
        return make_boxed_func(gm_aten.forward)

    return aot_autograd(fw_compiler=eager, bw_compiler=eager, inference_compiler=inference)(gm, example_inputs)


class Explanation:
    """What `explain` found: Dynamo's graphs and breaks, and per graph which nodes Weft runs."""

    def __init__(self, graph_breaks, plans):
        self.graph_breaks = graph_breaks      # [(reason, location)]
        self.graphs = []
        for name, plan in plans:
            self.graphs.append({
                "graph": name,
                "weft_segments": plan.segments,
                "weft_nodes": plan.weft_nodes,
                "torch_nodes": [(n.name, _describe(n), why) for n, why in plan.report],
            })

    @property
    def weft_nodes(self):
        return sum(g["weft_nodes"] for g in self.graphs)

    @property
    def torch_nodes(self):
        return [t for g in self.graphs for t in g["torch_nodes"]]

    def __str__(self):
        lines = [f"{len(self.graphs)} graph(s), {len(self.graph_breaks)} graph break(s); "
                 f"{self.weft_nodes} node(s) run in Weft, {len(self.torch_nodes)} in PyTorch"]
        for reason, where in self.graph_breaks:
            lines.append(f"  graph break at {where}: {reason}")
        for g in self.graphs:
            lines.append(f"  {g['graph']}: {g['weft_segments']} Weft segment(s), {g['weft_nodes']} node(s)")
            for name, what, why in g["torch_nodes"]:
                lines.append(f"    in PyTorch: {name} ({what}): {why}")
        return "\n".join(lines)

    __repr__ = __str__


def explain(model, *inputs, **compile_kwargs):
    """Compiles `model` with backend="weft", runs it once on `inputs` (under no_grad) and reports
    Dynamo's graph breaks and, per graph, the nodes Weft runs and those left to PyTorch with why."""
    import torch._dynamo

    torch._dynamo.reset()
    breaks = []
    try:
        with torch.no_grad():
            ex = torch._dynamo.explain(model)(*inputs)
        for b in ex.break_reasons:
            where = b.user_stack[-1] if getattr(b, "user_stack", None) else "?"
            breaks.append((b.reason.splitlines()[0] if b.reason else "?", str(where).strip()))
    finally:
        torch._dynamo.reset()
    _explain_sink.plans = []
    try:
        compiled = torch.compile(model, backend="weft", **compile_kwargs)
        with torch.no_grad():
            compiled(*inputs)
        plans = list(_explain_sink.plans)
    finally:
        _explain_sink.plans = None
    return Explanation(breaks, plans)


def register_backend():
    """Makes backend="weft" known to torch.compile where the package's torch_dynamo_backends entry
    point is not installed (a build tree on PYTHONPATH)."""
    from importlib.metadata import entry_points

    from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend as reg

    if "weft" in _COMPILER_FNS:
        return
    if any(ep.name == "weft" for ep in entry_points(group="torch_dynamo_backends")):
        return  # torch loads it through the entry point
    reg(name="weft")(weft_backend)


# ---- torch.export ------------------------------------------------------------------------------
def from_exported(program, session=None, decompose=True):
    """A compiled Weft model of a torch.export ExportedProgram (decomposed to core ATen first).

    Parameters, buffers and lifted constants become constants; inputs keep the program's order,
    dims exported as dynamic become -1. Every node must have a Weft lowering: the error lists
    those that do not."""
    graph = graph_from_exported(program, decompose=decompose)
    return (session or _weft.default_session()).compile(graph)


def graph_from_exported(program, decompose=True):
    """The weft.Graph of an ExportedProgram (see from_exported)."""
    from torch.export.graph_signature import InputKind

    ep = program.run_decompositions() if decompose else program
    gm = ep.graph_module
    sig = ep.graph_signature
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values, static = {}, set()
    state = dict(ep.state_dict)
    consts = dict(getattr(ep, "constants", {}) or {})
    user_inputs = []
    for n, spec in zip(placeholders, sig.input_specs):
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            v = state.get(spec.target)
            if v is None:
                v = consts.get(spec.target)
            if v is None:
                raise ValueError(f"torch.export program: no value for {spec.kind.name.lower()} '{spec.target}'")
            values[n] = v.detach()
            static.add(n)
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            values[n] = consts[spec.target].detach()
            static.add(n)
        elif spec.kind == InputKind.USER_INPUT:
            values[n] = n.meta.get("val")
            user_inputs.append(n)
        else:
            raise ValueError(f"torch.export program: input '{n.name}' of kind {spec.kind.name} is not supported")
    for n in gm.graph.nodes:
        if n.op == "call_function":
            values[n] = n.meta.get("val")
    # constant subgraphs (parameters only) are evaluated once, for real
    _evaluate_static(gm, values, static)
    low = Lowering(gm, values, static, None, for_export=True)
    from ._aten import Segment

    seg = Segment(0, low)
    seg.graph = _weft.Graph("exported")
    missing = []
    for n in user_inputs:
        v = values[n]
        if not isinstance(v, torch.Tensor):
            raise ValueError(f"torch.export program: input '{n.name}' is not a tensor")
        seg.tensor(n)
    for n in gm.graph.nodes:
        if n.op != "call_function" or n in low.static:
            continue
        if not n.users and values.get(n) is None:
            continue  # a runtime assertion on metadata (dtype, a size's range) that the import fixed
        try:
            low.convert(seg, n)
            low.converted.add(n)
            seg.defined.add(n.name)
        except Unsupported as e:
            missing.append(f"{n.name} ({_describe(n)}): {e}")
    if missing:
        raise ValueError("torch.export program: these nodes have no Weft lowering:\n  " + "\n  ".join(missing))
    from torch.export.graph_signature import OutputKind

    out = next(n for n in gm.graph.nodes if n.op == "output")
    kinds = [spec.kind for spec in sig.output_specs]
    mutated = [spec.target for spec in sig.output_specs if spec.kind in (OutputKind.BUFFER_MUTATION,
                                                                          OutputKind.USER_INPUT_MUTATION)]
    if mutated:
        raise ValueError(f"torch.export program: it updates {', '.join(map(str, mutated))} in place; a Weft model "
                         "has no state to carry that from one run to the next (torch.compile(backend=\"weft\") "
                         "handles such models)")
    for o, kind in zip(out.args[0], kinds):
        if kind != OutputKind.USER_OUTPUT:
            continue
        if not isinstance(o, torch.fx.Node):
            raise ValueError(f"torch.export program: output {o!r} is not a tensor")
        seg.tensor(o)  # a constant or an input returned as is becomes a value of the graph
        seg.output(o)
    return seg.graph


def _evaluate_static(gm, values, static):
    """Runs, for real, the nodes whose inputs are all parameters/constants (e.g. a transposed
    weight), so that they become constants."""
    import operator

    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        t = n.target
        if isinstance(t, torch._ops.OpOverload) and (torch.Tag.nondeterministic_seeded in t.tags or t._schema.is_mutable):
            continue
        if t is not operator.getitem and not isinstance(t, torch._ops.OpOverload):
            continue
        ins = n.all_input_nodes
        if not all(a in static for a in ins):
            continue
        if not ins and not isinstance(t, torch._ops.OpOverload):
            continue
        try:
            a = torch.fx.node.map_arg(n.args, lambda x: values[x])
            k = torch.fx.node.map_arg(n.kwargs, lambda x: values[x])
            with torch.no_grad():
                values[n] = t(*a, **k)
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"torch.export program: could not evaluate constant node {n.name}: {e}") from e
        static.add(n)
