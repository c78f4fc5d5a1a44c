"""ATen graphs (torch.compile through aot_autograd, torch.export after run_decompositions) as Weft
graphs.

A `Lowering` walks one ATen-level fx graph whose values are known: real tensors recorded by one
eager run (torch.compile: every plan is built for one set of input shapes) or fake tensors from
the graph's metadata (torch.export: symbolic sizes become -1 dims). Nodes whose tensor inputs are
all parameters, buffers or other constants are evaluated once and become Weft constants; runs of
consecutive convertible nodes become Weft models; everything else stays in PyTorch, with the
reason recorded.
"""
import operator

import torch

import weft as _weft

aten = torch.ops.aten

# Weft's element type numbers (GE's ge::DataType), as Cast's `to` takes them
_WEFT_DTYPE = {torch.float32: 0, torch.float16: 1, torch.int8: 2, torch.int32: 3, torch.uint8: 4, torch.int16: 6,
               torch.int64: 9, torch.float64: 11, torch.bool: 12, torch.bfloat16: 27}
# Tensors a Weft segment takes in or gives out; other dtypes stay in PyTorch.
_SEGMENT_DTYPES = {torch.float32, torch.int64, torch.int32, torch.bool}


class Unsupported(Exception):
    """A node Weft does not take; the message says why."""


def _dims(t):
    return [d if isinstance(d, int) else -1 for d in t.shape]


def _shape_ints(t):
    """Concrete sizes (torch.compile plans) or -1 for symbolic ones (export)."""
    out = []
    for d in t.shape:
        if isinstance(d, int):
            out.append(d)
        else:
            try:
                out.append(int(d))  # a SymInt with a hint still has no single value: keep it symbolic
                out[-1] = -1
            except Exception:  # noqa: BLE001
                out.append(-1)
    return out


class Segment:
    """A run of convertible nodes that becomes one Weft model."""

    def __init__(self, index, lowering):
        self.index = index
        self.low = lowering
        self.graph = _weft.Graph(f"torch_segment{index}")
        self.inputs = []   # fx nodes fed from PyTorch
        self.defined = set()
        self.consts = {}
        self.nodes = []
        self.outputs = []  # fx nodes whose values leave the segment
        self.alias = {}    # fx node name -> the Weft value it is (getitem, clone: no copy)
        self.index_checks = []  # (fx node of int indices from PyTorch, rows): checked per call
        self._output_names = set()
        self._produced = set()  # values computed by nodes
        self.model = None
        self._n = 0

    # -- values ---------------------------------------------------------------------------------
    def tensor(self, arg):
        """The Weft value name of a tensor argument: produced here, a constant, or a new input."""
        low = self.low
        if not isinstance(arg, torch.fx.Node):
            raise Unsupported(f"argument {arg!r} is not a tensor")
        if arg.name in self.alias:
            return self.alias[arg.name]
        if arg.name in self.defined:
            return arg.name
        value = low.values.get(arg)
        if not isinstance(value, torch.Tensor):
            raise Unsupported(f"'{arg.name}' is not a single tensor")
        if arg in low.static:
            return self.const(low.constant(arg), arg.name)
        if value.dtype not in _SEGMENT_DTYPES:
            raise Unsupported(f"input '{arg.name}' is {value.dtype}")
        if value.device.type != "cpu":
            raise Unsupported(f"input '{arg.name}' is on {value.device}")
        if arg not in self.inputs:
            self.graph.add_input(arg.name, str(value.dtype).replace("torch.", ""), _shape_ints(value))
            self.inputs.append(arg)
            self.defined.add(arg.name)
        return arg.name

    def same_as(self, n, name):
        """Node `n` is the Weft value `name` (no copy)."""
        self.alias[n.name] = name
        self.defined.add(n.name)

    def output(self, n):
        """Makes fx node `n` a graph output; returns the Weft name it has there."""
        value = self.tensor(n)
        if value in self._output_names or value not in self._produced:  # a repeat, an input or a constant
            value = self.node("Identity", [value], out=n.name + "#out")
        self.graph.add_output(value)
        self._output_names.add(value)
        return value

    def const(self, t, hint="c"):
        key = (hint, id(t))
        if key in self.consts:
            return self.consts[key][0]
        name = f"{hint}#const{len(self.consts)}"
        if t.dtype not in _SEGMENT_DTYPES:
            raise Unsupported(f"constant '{hint}' is {t.dtype}")
        self.graph.add_constant(name, t.detach().contiguous().numpy())
        self.consts[key] = (name, t)  # keeps the keyed object alive, so its id is not reused
        self.defined.add(name)
        return name

    def ints(self, values, hint="ints"):
        return self.const(torch.tensor([int(v) for v in values], dtype=torch.int64), hint)

    def scalar(self, v, dtype, hint="scalar"):
        return self.const(torch.tensor(v, dtype=dtype), hint)

    def node(self, op, ins, attrs=None, out=None, input_counts=None, output_counts=None, outs=None):
        """Adds a Weft node; returns its output name (a fresh one unless `out` is given)."""
        if outs is None:
            if out is None:
                self._n += 1
                out = f"{self.low.current.name}/{op}{self._n}"
            outs = [out]
        self.graph.add_node(op, f"{outs[0]}/{op}", ins, outs, attrs or {}, input_counts or [], output_counts or [])
        self.defined.update(outs)
        self._produced.update(outs)
        return outs[0]


def _arg(node, i, name, default=None):
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


class Lowering:
    """One ATen fx graph with known values; `partition()` gives the steps of a plan."""

    def __init__(self, gm, values, static_placeholders, session, for_export=False):
        self.gm = gm
        self.for_export = for_export  # a whole-graph model file: no PyTorch between segments
        self.values = values          # fx node -> tensor / int / list (real or fake)
        self.session = session
        self.current = None
        self.folded = {}              # convolution node -> (weight, bias) with a BatchNorm folded in
        self.bn_of_conv = {}          # batch-norm node -> its folded convolution node
        self.keep_in_torch = {}       # node -> reason
        self.static = set()
        self.converted = set()        # nodes emitted into a Weft segment
        nodes = list(gm.graph.nodes)
        for n in nodes:
            if n.op == "placeholder" and n in static_placeholders:
                self.static.add(n)
            elif n.op == "get_attr":
                self.static.add(n)
            elif n.op == "call_function" and (self._is_static(n) or self._is_shape_int(n)):
                self.static.add(n)  # a size is fixed within a plan: a constant like the weights
        self._fold_batch_norms(nodes)
        self._pin_strided_views(nodes)

    # -- constants ------------------------------------------------------------------------------
    def _is_static(self, n):
        target = n.target
        if isinstance(target, torch._ops.OpOverload):
            if torch.Tag.nondeterministic_seeded in target.tags or target._schema.is_mutable:
                return False
        elif target is not operator.getitem:
            return False
        if not isinstance(self.values.get(n), (torch.Tensor, list, tuple)):
            return False
        if self._is_fake(self.values.get(n)):
            return False
        for a in n.all_input_nodes:
            if a not in self.static and not self._is_shape_int(a):
                return False
        return True

    @staticmethod
    def _is_fake(v):
        if isinstance(v, (list, tuple)):
            return any(Lowering._is_fake(e) for e in v)
        return isinstance(v, torch._subclasses.FakeTensor)

    def _is_shape_int(self, n):
        """An int that depends only on input shapes (fixed within a plan), never on tensor data."""
        v = self.values.get(n)
        if not isinstance(v, (int, torch.SymInt)) or isinstance(v, bool):
            return False
        if n.op == "placeholder":
            return True
        if n.op != "call_function":
            return False
        if n.target in (aten.sym_size.int, aten.sym_numel.default, aten.sym_stride.int):
            return True
        if getattr(n.target, "__module__", "") in ("_operator", "operator") or n.target in (
                torch.sym_int, torch.sym_max, torch.sym_min):
            return all(self._is_shape_int(a) for a in n.all_input_nodes)
        return False

    def constant(self, n):
        if n in self.folded:
            raise Unsupported("folded")
        v = self.values[n]
        if self._is_fake(v):
            raise Unsupported(f"'{n.name}' has no value at conversion time")
        return v

    def int_arg(self, a):
        """A Python int for an int argument (a literal, or a size within this plan)."""
        if isinstance(a, torch.fx.Node):
            if not self._is_shape_int(a):
                raise Unsupported(f"'{a.name}' is not a constant int")
            v = self.values[a]
            if isinstance(v, torch.SymInt):
                raise Unsupported(f"'{a.name}' is a symbolic size")
            return int(v)
        if isinstance(a, torch.SymInt):
            raise Unsupported("a symbolic size")
        return int(a)

    def info(self, n):
        v = self.values.get(n)
        if not isinstance(v, torch.Tensor):
            raise Unsupported(f"'{getattr(n, 'name', n)}' is not a tensor")
        return v

    # -- graph rewrites -------------------------------------------------------------------------
    def _fold_batch_norms(self, nodes):
        """convolution -> inference batch norm, with constant weights and statistics: one
        convolution with the normalization folded into its weight and bias."""
        for bn in nodes:
            if bn.target is not aten._native_batch_norm_legit_no_training.default:
                continue
            conv = bn.args[0]
            if not (isinstance(conv, torch.fx.Node) and conv.target is aten.convolution.default
                    and len(conv.users) == 1 and conv not in self.static):
                continue
            w, b = conv.args[1], conv.args[2]
            gamma, beta, mean, var = bn.args[1], bn.args[2], bn.args[3], bn.args[4]
            eps = bn.args[6] if len(bn.args) > 6 else bn.kwargs.get("eps", 1e-5)
            parts = [w, b, gamma, beta, mean, var]
            if not all(p is None or (isinstance(p, torch.fx.Node) and p in self.static) for p in parts[:1] + parts[2:]):
                continue
            if b is not None and not (isinstance(b, torch.fx.Node) and b in self.static):
                continue
            if self._is_fake(self.values.get(w)) or any(
                    self._is_fake(self.values.get(p)) for p in parts if p is not None):
                continue
            if any(u.target is not operator.getitem or u.args[1] != 0 for u in bn.users):
                continue
            weight = self.values[w]
            if weight.dtype != torch.float32 or conv.args[6]:  # transposed convolutions keep their BN
                continue
            with torch.no_grad():
                mean_v, var_v = self.values[mean].double(), self.values[var].double()
                g = self.values[gamma].double() if gamma is not None else torch.ones_like(mean_v)
                be = self.values[beta].double() if beta is not None else torch.zeros_like(mean_v)
                scale = g / torch.sqrt(var_v + float(eps))
                bias = self.values[b].double() if b is not None else torch.zeros_like(mean_v)
                fw = (weight.double() * scale.reshape(-1, *([1] * (weight.dim() - 1)))).float()
                fb = ((bias - mean_v) * scale + be).float()
            self.folded[conv] = (fw, fb)
            self.bn_of_conv[bn] = conv

    def _pin_strided_views(self, nodes):
        """as_strided reads its input's memory layout: the input must come from PyTorch."""
        for n in nodes:
            if n.target in (aten.as_strided.default,) and isinstance(n.args[0], torch.fx.Node):
                self.keep_in_torch[n.args[0]] = "read through as_strided, which depends on its strides"

    # -- partition ------------------------------------------------------------------------------
    def convert(self, seg, n):
        if n in self.keep_in_torch:
            raise Unsupported(self.keep_in_torch[n])
        self.current = n
        if n.target is operator.getitem:
            return _getitem(seg, n, self)
        fn = _LOWERINGS.get(n.target)
        if fn is None and isinstance(n.target, torch._ops.OpOverload) and n.target.namespace == "weft":
            fn = _weft_op
        if fn is None:
            raise Unsupported(f"no Weft lowering for {n.target}")
        v = self.values.get(n)
        for t in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(t, torch.Tensor) and t.dtype not in _SEGMENT_DTYPES:
                raise Unsupported(f"result is {t.dtype}")
        fn(seg, n, self)

    def partition(self):
        """[("weft", Segment) | ("torch", node)], and [(node, reason)] for nodes left to PyTorch."""
        steps, report = [], []
        seg = None
        for n in self.gm.graph.nodes:
            if n.op in ("placeholder", "output", "get_attr") or n in self.static:
                continue
            probe = Segment(-1, self)
            if seg is not None:
                probe.defined = set(seg.defined)
                probe.alias = dict(seg.alias)
            try:
                self.convert(probe, n)
            except Unsupported as e:
                # (an item of a result PyTorch computed is part of that node's report)
                if not self._is_shape_int(n) and not (n.target is operator.getitem and n.args[0] not in self.converted):
                    report.append((n, str(e)))
                if seg is not None and seg.nodes:
                    steps.append(("weft", seg))
                seg = None
                steps.append(("torch", n))
                continue
            if seg is None:
                seg = Segment(len(steps), self)
            self.convert(seg, n)
            self.converted.add(n)
            seg.nodes.append(n)
            seg.defined.add(n.name)
        if seg is not None and seg.nodes:
            steps.append(("weft", seg))
        position = {}
        for i, (kind, what) in enumerate(steps):
            for n in (what.nodes if kind == "weft" else [what]):
                position[n] = i
        for i, (kind, seg) in enumerate(steps):
            if kind != "weft":
                continue
            for n in seg.nodes:
                if any(u.op == "output" or position.get(u, -1) != i for u in n.users):
                    v = self.values[n]
                    if not isinstance(v, torch.Tensor):
                        raise Unsupported(f"'{n.name}' leaves a Weft segment but is not a tensor")
                    seg.output(n)
                    seg.outputs.append(n)
        return [s for s in steps if s[0] != "weft" or s[1].outputs], report


# ---- lowerings --------------------------------------------------------------------------------
_LOWERINGS = {}


def _lower(*targets):
    def deco(fn):
        for t in targets:
            _LOWERINGS[t] = fn
        return fn
    return deco


def _getitem(seg, n, low):
    src, i = n.args
    if src in low.bn_of_conv and i == 0:
        if low.bn_of_conv[src] not in low.converted:
            raise Unsupported("its convolution runs in PyTorch")
        seg.same_as(n, seg.tensor(low.bn_of_conv[src]))
        return
    if not isinstance(src, torch.fx.Node) or f"{src.name}:{i}" not in seg.defined:
        raise Unsupported(f"item {i} of '{getattr(src, 'name', src)}' is not produced by Weft")
    seg.same_as(n, f"{src.name}:{i}")


def _cast_to(seg, name, from_dtype, to_dtype):
    if from_dtype == to_dtype:
        return name
    return seg.node("Cast", [name], {"to": _WEFT_DTYPE[to_dtype]})


def _operand(seg, a, dtype):
    """A tensor argument or a Python number, as a Weft value of `dtype` (ATen's promotion result)."""
    if isinstance(a, torch.fx.Node):
        v = seg.low.values.get(a)
        if isinstance(v, torch.Tensor):
            return _cast_to(seg, seg.tensor(a), v.dtype, dtype)
        a = seg.low.int_arg(a)
    if isinstance(a, (bool, int, float)):
        return seg.scalar(a, dtype)
    raise Unsupported(f"operand {a!r}")


_BINARY = {aten.add.Tensor: "Add", aten.add.Scalar: "Add", aten.sub.Tensor: "Sub", aten.sub.Scalar: "Sub",
           aten.mul.Tensor: "Mul", aten.mul.Scalar: "Mul", aten.div.Tensor: "Div", aten.div.Scalar: "Div",
           aten.pow.Tensor_Scalar: "Pow", aten.pow.Tensor_Tensor: "Pow", aten.maximum.default: "Max",
           aten.minimum.default: "Min", aten.eq.Tensor: "Equal", aten.eq.Scalar: "Equal", aten.lt.Tensor: "Less",
           aten.lt.Scalar: "Less", aten.gt.Tensor: "Greater", aten.gt.Scalar: "Greater", aten.le.Scalar: "LessOrEqual",
           aten.le.Tensor: "LessOrEqual", aten.ge.Scalar: "GreaterOrEqual", aten.ge.Tensor: "GreaterOrEqual",
           aten.logical_and.default: "And", aten.logical_or.default: "Or", aten.bitwise_and.Tensor: "And",
           aten.bitwise_or.Tensor: "Or"}


@_lower(*_BINARY)
def _binary(seg, n, low):
    out = low.info(n)
    op = _BINARY[n.target]
    alpha = n.kwargs.get("alpha", 1)
    if alpha != 1:
        raise Unsupported("alpha other than 1")
    if op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
        # compare in the type ATen promotes the operands to (int tensor < 0.5 compares in float)
        ops = []
        for a in n.args[:2]:
            v = low.values.get(a) if isinstance(a, torch.fx.Node) else a
            if isinstance(v, torch.SymInt):
                v = low.int_arg(a)
            ops.append(v)
        if not all(isinstance(v, (torch.Tensor, bool, int, float)) for v in ops):
            raise Unsupported("a comparison operand that is neither a tensor nor a number")
        dtype = torch.result_type(*ops) if isinstance(ops[0], torch.Tensor) else torch.result_type(ops[1], ops[0])
    elif op in ("And", "Or"):
        if out.dtype != torch.bool:
            raise Unsupported("bitwise ops on integers")
        dtype = torch.bool
    else:
        dtype = out.dtype
        if op == "Div" and not dtype.is_floating_point:
            raise Unsupported("integer division")
    a = _operand(seg, n.args[0], dtype)
    b = _operand(seg, n.args[1], dtype if op != "Pow" or isinstance(n.args[1], torch.fx.Node) else dtype)
    seg.node(op, [a, b], out=n.name)


@_lower(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(seg, n, low):
    if n.kwargs.get("alpha", 1) != 1 or (len(n.args) > 2 and n.args[2] != 1):
        raise Unsupported("alpha other than 1")
    dtype = low.info(n).dtype
    seg.node("Sub", [_operand(seg, n.args[1], dtype), _operand(seg, n.args[0], dtype)], out=n.name)


_UNARY = {aten.relu.default: "Relu", aten.sigmoid.default: "Sigmoid", aten.tanh.default: "Tanh",
          aten.exp.default: "Exp", aten.log.default: "Log", aten.sqrt.default: "Sqrt", aten.neg.default: "Neg",
          aten.abs.default: "Abs", aten.erf.default: "Erf", aten.hardswish.default: "HardSwish",
          aten.reciprocal.default: "Reciprocal", aten.sin.default: "Sin", aten.cos.default: "Cos",
          aten.floor.default: "Floor", aten.ceil.default: "Ceil", aten.logical_not.default: "Not",
          aten.sign.default: "Sign", aten.mish.default: "Mish", aten.softplus.default: None}


@_lower(*[k for k, v in _UNARY.items() if v])
def _unary(seg, n, low):
    out = low.info(n)
    # an integer input to a float function (sigmoid of an int tensor) is cast first, as ATen does
    seg.node(_UNARY[n.target], [_operand(seg, n.args[0], out.dtype)], out=n.name)


@_lower(aten.rsqrt.default)
def _rsqrt(seg, n, low):
    seg.node("Reciprocal", [seg.node("Sqrt", [seg.tensor(n.args[0])])], out=n.name)


@_lower(aten.silu.default)
def _silu(seg, n, low):
    x = seg.tensor(n.args[0])
    seg.node("Mul", [x, seg.node("Sigmoid", [x])], out=n.name)


@_lower(aten.hardsigmoid.default)
def _hardsigmoid(seg, n, low):
    seg.node("HardSigmoid", [seg.tensor(n.args[0])], {"alpha": 1.0 / 6.0, "beta": 0.5}, out=n.name)


@_lower(aten.gelu.default)
def _gelu(seg, n, low):
    approx = n.kwargs.get("approximate", n.args[1] if len(n.args) > 1 else "none")
    seg.node("Gelu", [seg.tensor(n.args[0])], {"approximate": approx}, out=n.name)


@_lower(aten.leaky_relu.default)
def _leaky_relu(seg, n, low):
    seg.node("LeakyRelu", [seg.tensor(n.args[0])], {"alpha": float(_arg(n, 1, "negative_slope", 0.01))}, out=n.name)


@_lower(aten.hardtanh.default, aten.clamp.default)
def _clamp(seg, n, low):
    dtype = low.info(n).dtype
    if n.target is aten.hardtanh.default:
        lo, hi = _arg(n, 1, "min_val", -1.0), _arg(n, 2, "max_val", 1.0)
    else:
        lo, hi = _arg(n, 1, "min"), _arg(n, 2, "max")
    ins = [_operand(seg, n.args[0], dtype), "" if lo is None else _operand(seg, lo, dtype),
           "" if hi is None else _operand(seg, hi, dtype)]
    seg.node("Clip", ins, out=n.name)


@_lower(aten.where.self)
def _where(seg, n, low):
    dtype = low.info(n).dtype
    seg.node("Where", [_operand(seg, n.args[0], torch.bool), _operand(seg, n.args[1], dtype),
                       _operand(seg, n.args[2], dtype)], out=n.name)


@_lower(aten.clone.default, aten.alias.default, aten.lift_fresh_copy.default, aten.detach.default,
        aten.contiguous.default if hasattr(aten, "contiguous") else aten.clone.default)
def _identity(seg, n, low):
    seg.same_as(n, seg.tensor(n.args[0]))


@_lower(aten._to_copy.default)
def _to_copy(seg, n, low):
    src, out = low.info(n.args[0]), low.info(n)
    if out.device != src.device:
        raise Unsupported("a device copy")
    seg.same_as(n, _cast_to(seg, seg.tensor(n.args[0]), src.dtype, out.dtype))


def _same_size(a, b):
    """Whether two sizes are the same: equal ints, or the same symbolic expression."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return not isinstance(a, int) and not isinstance(b, int) and str(a) == str(b)


@_lower(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.unsqueeze.default,
        aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.flatten.using_ints,
        aten.view_copy.default if hasattr(aten, "view_copy") else aten.view.default)
def _reshape(seg, n, low):
    out, x = low.info(n), low.info(n.args[0])
    shape = []
    for i, d in enumerate(out.shape):
        if isinstance(d, int):
            if d == 0:
                raise Unsupported("a reshape to an empty tensor")
            shape.append(d)
        elif i < x.dim() and _same_size(x.shape[i], d):
            shape.append(0)  # Reshape's 0: this dim of the input, whatever its size
        else:
            shape.append(-1)
    if shape.count(-1) > 1:
        raise Unsupported("a reshape with several new symbolic sizes")
    seg.node("Reshape", [seg.tensor(n.args[0]), seg.ints(shape, "shape")], out=n.name)


@_lower(aten.expand.default)
def _expand(seg, n, low):
    out, x = low.info(n), low.info(n.args[0])
    shape = []
    offset = out.dim() - x.dim()
    for i, d in enumerate(out.shape):
        if isinstance(d, int):
            shape.append(d)
        elif i >= offset and _same_size(x.shape[i - offset], d):
            shape.append(1)  # Expand broadcasts: 1 keeps the input's own size
        else:
            raise Unsupported("expand to a new symbolic size")
    if x.dim() == out.dim() and all(_same_size(a, b) for a, b in zip(x.shape, out.shape)):
        seg.same_as(n, seg.tensor(n.args[0]))  # expanding to its own shape: the tensor itself
        return
    seg.node("Expand", [seg.tensor(n.args[0]), seg.ints(shape, "shape")], out=n.name)


@_lower(aten.permute.default)
def _permute(seg, n, low):
    rank = low.info(n).dim()
    seg.node("Transpose", [seg.tensor(n.args[0])], {"perm": [int(d) % rank for d in n.args[1]]}, out=n.name)


@_lower(aten.t.default)
def _t(seg, n, low):
    x = seg.tensor(n.args[0])
    if low.info(n).dim() < 2:
        seg.same_as(n, x)
    else:
        seg.node("Transpose", [x], {"perm": [1, 0]}, out=n.name)


@_lower(aten.transpose.int)
def _transpose(seg, n, low):
    rank = low.info(n).dim()
    perm = list(range(rank))
    a, b = int(n.args[1]) % rank, int(n.args[2]) % rank
    perm[a], perm[b] = perm[b], perm[a]
    seg.node("Transpose", [seg.tensor(n.args[0])], {"perm": perm}, out=n.name)


@_lower(aten.slice.Tensor)
def _slice(seg, n, low):
    x = low.info(n.args[0])
    dim = int(_arg(n, 1, "dim", 0)) % x.dim()
    start = _arg(n, 2, "start", None)
    end = _arg(n, 3, "end", None)
    step = int(_arg(n, 4, "step", 1))
    start = 0 if start is None else low.int_arg(start)
    end = 2 ** 62 if end is None else min(low.int_arg(end), 2 ** 62)
    seg.node("Slice", [seg.tensor(n.args[0]), seg.ints([start]), seg.ints([end]), seg.ints([dim]), seg.ints([step])],
             out=n.name)


@_lower(aten.select.int)
def _select(seg, n, low):
    x = low.info(n.args[0])
    dim = int(n.args[1]) % x.dim()
    index = low.int_arg(n.args[2])
    if not isinstance(x.shape[dim], int):
        raise Unsupported("select on a symbolic dimension")
    index %= x.shape[dim]
    seg.node("Gather", [seg.tensor(n.args[0]), seg.const(torch.tensor(index, dtype=torch.int64), "index")],
             {"axis": dim}, out=n.name)


@_lower(aten.split.Tensor, aten.split_with_sizes.default)
def _split(seg, n, low):
    x = low.info(n.args[0])
    dim = int(_arg(n, 2, "dim", 0)) % x.dim()
    parts = low.values[n]
    sizes = [p.shape[dim] for p in parts]
    if not all(isinstance(s, int) for s in sizes):
        raise Unsupported("split into symbolic sizes")
    outs = [f"{n.name}:{i}" for i in range(len(parts))]
    seg.node("Split", [seg.tensor(n.args[0]), seg.ints(sizes, "split")], {"axis": dim}, outs=outs,
             input_counts=[1, 1], output_counts=[len(outs)])


@_lower(aten.cat.default)
def _cat(seg, n, low):
    out = low.info(n)
    dim = int(_arg(n, 1, "dim", 0)) % out.dim()
    ins = [_operand(seg, a, out.dtype) for a in n.args[0] if low.info(a).numel() != 0 or low.info(a).dim() == out.dim()]
    seg.node("Concat", ins, {"axis": dim}, out=n.name, input_counts=[len(ins)])


@_lower(aten.convolution.default)
def _convolution(seg, n, low):
    x, w, b, stride, padding, dilation, transposed, output_padding, groups = n.args[:9]
    xv = low.info(x)
    spatial = xv.dim() - 2
    if spatial not in (1, 2, 3):
        raise Unsupported(f"{spatial}-D convolution")
    if n in low.folded:
        fw, fb = low.folded[n]
        wname, bname = seg.const(fw, f"{n.name}.weight"), seg.const(fb, f"{n.name}.bias")
    else:
        wname, bname = seg.tensor(w), ("" if b is None else seg.tensor(b))
    pads = [int(p) for p in padding] * 2
    attrs = {"strides": [int(s) for s in stride], "pads": pads, "dilations": [int(d) for d in dilation],
             "group": int(groups)}
    if transposed:
        attrs["output_padding"] = [int(p) for p in output_padding]
        seg.node("ConvTranspose", [seg.tensor(x), wname, bname], attrs, out=n.name)
    else:
        seg.node("Conv", [seg.tensor(x), wname, bname], attrs, out=n.name)


@_lower(aten._native_batch_norm_legit_no_training.default)
def _batch_norm(seg, n, low):
    if n in low.bn_of_conv:
        if low.bn_of_conv[n] not in low.converted:
            raise Unsupported("its convolution runs in PyTorch")
        return  # its getitem(0) reads the convolution it was folded into
    x, w, b, mean, var = n.args[:5]
    eps = float(_arg(n, 6, "eps", 1e-5))
    c = low.info(x).shape[1]
    ones, zeros = torch.ones(c), torch.zeros(c)
    ins = [seg.tensor(x), seg.tensor(w) if w is not None else seg.const(ones, "ones"),
           seg.tensor(b) if b is not None else seg.const(zeros, "zeros"), seg.tensor(mean), seg.tensor(var)]
    seg.node("BatchNormalization", ins, {"epsilon": eps}, out=f"{n.name}:0")


@_lower(aten.native_layer_norm.default)
def _layer_norm(seg, n, low):
    x, shape, w, b, eps = n.args[:5]
    if any(u.target is not operator.getitem or u.args[1] != 0 for u in n.users):
        raise Unsupported("the mean/rstd results of layer_norm are used")
    d = low.info(x).shape[-1]
    ins = [seg.tensor(x), seg.tensor(w) if w is not None else seg.const(torch.ones(low.info(n.args[0]).shape[-len(shape):]), "ones")]
    if b is not None:
        ins.append(seg.tensor(b))
    del d
    seg.node("LayerNormalization", ins, {"axis": -len(shape), "epsilon": float(eps)}, out=f"{n.name}:0")


@_lower(aten.addmm.default)
def _addmm(seg, n, low):
    bias, a, b = n.args[:3]
    beta, alpha = n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1)
    bias_v = low.info(bias)
    if bias_v.dim() > 1 and bias_v.shape[0] != 1:
        raise Unsupported("addmm with a 2-D input")
    seg.node("Gemm", [seg.tensor(a), seg.tensor(b), seg.tensor(bias)], {"alpha": float(alpha), "beta": float(beta)},
             out=n.name)


@_lower(aten.mm.default, aten.bmm.default, aten.matmul.default)
def _matmul(seg, n, low):
    seg.node("MatMul", [seg.tensor(n.args[0]), seg.tensor(n.args[1])], out=n.name)


@_lower(aten._softmax.default, aten._log_softmax.default)
def _softmax(seg, n, low):
    x = low.info(n.args[0])
    if n.args[2] and x.dtype != low.info(n).dtype:
        raise Unsupported("half_to_float")
    op = "Softmax" if n.target is aten._softmax.default else "LogSoftmax"
    seg.node(op, [seg.tensor(n.args[0])], {"axis": int(n.args[1]) % max(x.dim(), 1)}, out=n.name)


_REDUCE = {aten.mean.dim: "ReduceMean", aten.sum.dim_IntList: "ReduceSum", aten.amax.default: "ReduceMax",
           aten.amin.default: "ReduceMin"}


@_lower(*_REDUCE)
def _reduce(seg, n, low):
    x = low.info(n.args[0])
    dims = _arg(n, 1, "dim", None)
    keep = bool(_arg(n, 2, "keepdim", False))
    if n.kwargs.get("dtype") is not None:
        raise Unsupported("a reduction with dtype")
    if dims is None or len(dims) == 0:
        dims = list(range(x.dim()))
    if x.dtype != low.info(n).dtype:
        raise Unsupported("a reduction that changes dtype")
    axes = [int(d) % x.dim() for d in dims]
    seg.node(_REDUCE[n.target], [seg.tensor(n.args[0]), seg.ints(axes, "axes")], {"keepdims": int(keep)}, out=n.name)


def _pool_pads(padding, k):
    p = [int(v) for v in padding] if padding else [0] * k
    if len(p) == 1:
        p = p * k
    return p * 2


@_lower(aten.max_pool2d_with_indices.default)
def _max_pool(seg, n, low):
    if any(u.target is not operator.getitem or u.args[1] != 0 for u in n.users):
        raise Unsupported("the indices of max_pool2d are used")
    x, k = n.args[0], [int(v) for v in n.args[1]]
    k = k * 2 if len(k) == 1 else k
    stride = [int(v) for v in _arg(n, 2, "stride", [])] or k
    stride = stride * 2 if len(stride) == 1 else stride
    dil = [int(v) for v in _arg(n, 4, "dilation", [1, 1])]
    dil = dil * 2 if len(dil) == 1 else dil
    attrs = {"kernel_shape": k, "strides": stride, "pads": _pool_pads(_arg(n, 3, "padding", [0, 0]), 2),
             "dilations": dil, "ceil_mode": int(bool(_arg(n, 5, "ceil_mode", False)))}
    seg.node("MaxPool", [seg.tensor(x)], attrs, outs=[f"{n.name}:0"], output_counts=[1, 0])


@_lower(aten.avg_pool2d.default)
def _avg_pool(seg, n, low):
    if _arg(n, 6, "divisor_override", None) is not None:
        raise Unsupported("divisor_override")
    k = [int(v) for v in n.args[1]]
    k = k * 2 if len(k) == 1 else k
    stride = [int(v) for v in _arg(n, 2, "stride", [])] or k
    stride = stride * 2 if len(stride) == 1 else stride
    attrs = {"kernel_shape": k, "strides": stride, "pads": _pool_pads(_arg(n, 3, "padding", [0, 0]), 2),
             "ceil_mode": int(bool(_arg(n, 4, "ceil_mode", False))),
             "count_include_pad": int(bool(_arg(n, 5, "count_include_pad", True)))}
    seg.node("AveragePool", [seg.tensor(n.args[0])], attrs, out=n.name)


@_lower(aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool2d.default)
def _adaptive_avg_pool(seg, n, low):
    x = low.info(n.args[0])
    out = [int(v) for v in n.args[1]]
    h, w = x.shape[-2], x.shape[-1]
    if out == [1, 1]:
        seg.node("GlobalAveragePool", [seg.tensor(n.args[0])], out=n.name)
        return
    if not (isinstance(h, int) and isinstance(w, int)) or h % out[0] or w % out[1]:
        raise Unsupported("adaptive pooling with uneven windows")
    k = [h // out[0], w // out[1]]
    seg.node("AveragePool", [seg.tensor(n.args[0])], {"kernel_shape": k, "strides": k}, out=n.name)


@_lower(aten.mean.default, aten.sum.default)
def _reduce_all(seg, n, low):
    x = low.info(n.args[0])
    if x.dtype != low.info(n).dtype:
        raise Unsupported("a reduction that changes dtype")
    op = "ReduceMean" if n.target is aten.mean.default else "ReduceSum"
    seg.node(op, [seg.tensor(n.args[0]), seg.ints(list(range(x.dim())), "axes")], {"keepdims": 0}, out=n.name)


@_lower(aten.embedding.default)
def _embedding(seg, n, low):
    # Gather counts negative indices from the end, where embedding raises IndexError. Under
    # torch.compile the indices, when they come from PyTorch, are checked before the segment runs
    # (as embedding would); indices computed inside a segment keep the lookup in PyTorch. An
    # exported model has no such check (docs/python.md says so).
    idx = n.args[1]
    if not low.for_export:
        if not isinstance(idx, torch.fx.Node) or idx.name in seg.defined and idx not in seg.inputs:
            raise Unsupported("embedding indices computed in Weft could not be range-checked")
        rows = int(low.info(n.args[0]).shape[0])
        if idx in low.static:  # constant indices (position ids): checked once, here
            v = low.values[idx]
            if v.numel() and (int(v.min()) < 0 or int(v.max()) >= rows):
                raise Unsupported("constant indices out of range")
        else:
            seg.index_checks.append((idx, rows))
    seg.node("Gather", [seg.tensor(n.args[0]), seg.tensor(idx)], {"axis": 0}, out=n.name)


@_lower(aten.constant_pad_nd.default)
def _pad(seg, n, low):
    x = low.info(n.args[0])
    pad = [int(p) for p in n.args[1]]
    value = float(_arg(n, 2, "value", 0.0))
    rank = x.dim()
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # pairs from the last dimension backwards
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    if any(p < 0 for p in begins + ends):
        raise Unsupported("negative padding")
    seg.node("Pad", [seg.tensor(n.args[0]), seg.ints(begins + ends, "pads"), seg.scalar(value, x.dtype)],
             out=n.name)


@_lower(aten.upsample_nearest2d.default, aten.upsample_nearest2d.vec, aten.upsample_bilinear2d.default,
        aten.upsample_bilinear2d.vec)
def _upsample(seg, n, low):
    out = _shape_ints(low.info(n))
    if -1 in out:
        raise Unsupported("upsampling to a symbolic size")
    nearest = n.target in (aten.upsample_nearest2d.default, aten.upsample_nearest2d.vec)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    if not nearest:
        align = bool(n.args[2]) if len(n.args) > 2 else False
        attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners" if align else "pytorch_half_pixel"}
        if len(n.args) > 3 and n.args[3] is not None:
            raise Unsupported("bilinear upsampling with explicit scales")
    elif len(n.args) > 2 and n.args[2] is not None and n.target is aten.upsample_nearest2d.default:
        raise Unsupported("nearest upsampling with explicit scales")
    seg.node("Resize", [seg.tensor(n.args[0]), "", "", seg.ints(out, "sizes")], attrs, out=n.name)


def _weft_op(seg, n, low):
    """torch.ops.weft.<Op>: the Weft op itself, with the call's attributes."""
    from . import _attr_value, _bind, op_session

    name = n.target._schema.name.split("::", 1)[1]
    try:
        session, proto = op_session(name)
    except KeyError as e:
        raise Unsupported(str(e)) from None
    if low.session is not None and session is not low.session and name not in low.session.ops():
        raise Unsupported(f"weft::{name} is not in the session compiling this graph")
    ins, attrs = _bind(proto, n.args, n.kwargs)
    names, counts = [], []
    for io, v in zip(proto["inputs"], ins):
        if io["kind"] == "dynamic":
            names.extend(seg.tensor(e) for e in v)
            counts.append(len(v))
        elif v is None:
            names.append("")
            counts.append(1)
        else:
            names.append(seg.tensor(v))
            counts.append(1)
    if any(io["kind"] == "dynamic" for io in proto["outputs"]):
        raise Unsupported(f"weft::{name} has a dynamic output list")
    types = {a["name"]: a["type"] for a in proto["attrs"]}
    clean = {}
    for k, v in attrs.items():
        if v is None:
            continue
        if isinstance(v, torch.fx.Node):
            raise Unsupported(f"attribute '{k}' is computed in the graph")
        clean[k] = _attr_value(v, types[k])
    outs = [n.name] if len(proto["outputs"]) == 1 else [f"{n.name}:{i}" for i in range(len(proto["outputs"]))]
    seg.node(name, names, clean, outs=outs, input_counts=counts, output_counts=[1] * len(outs))


@_lower(aten._transformer_encoder_layer_fwd.default)
def _encoder_layer(seg, n, low):
    """PyTorch's fused inference path of nn.TransformerEncoderLayer (batch first, no mask)."""
    (src, e, h, qkv_w, qkv_b, proj_w, proj_b, use_gelu, norm_first, eps, n1w, n1b, n2w, n2b,
     f1w, f1b, f2w, f2b) = n.args[:18]
    mask = n.args[18] if len(n.args) > 18 else n.kwargs.get("mask")
    if mask is not None:
        raise Unsupported("an attention mask")
    x_v = low.info(src)
    if x_v.dim() != 3 or not all(isinstance(d, int) for d in x_v.shape):
        raise Unsupported("an input that is not 3-D with fixed sizes")
    b, s, e, h = x_v.shape[0], x_v.shape[1], int(e), int(h)
    d = e // h
    for p in (qkv_w, qkv_b, proj_w, proj_b, n1w, n1b, n2w, n2b, f1w, f1b, f2w, f2b):
        if p not in low.static:
            raise Unsupported("weights that are not constants")
    val = low.constant
    w, bias = val(qkv_w), val(qkv_b)
    scale = 1.0 / float(d) ** 0.5

    def linear(x, weight, b_):
        y = seg.node("MatMul", [x, seg.const(weight.t().contiguous(), "w")])
        return seg.node("Add", [y, seg.const(b_, "b")])

    def layer_norm(x, g, b_):
        return seg.node("LayerNormalization", [x, seg.const(g, "g"), seg.const(b_, "b")],
                        {"axis": -1, "epsilon": float(eps)})

    def attention(x):
        heads = []
        for i, perm in enumerate(([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3])):
            wi, bi = w[i * e:(i + 1) * e], bias[i * e:(i + 1) * e]
            if i == 0:  # the 1/sqrt(d) scaling folded into the query projection
                wi, bi = wi * scale, bi * scale
            p = seg.node("Reshape", [linear(x, wi, bi), seg.ints([b, s, h, d], "shape")])
            heads.append(seg.node("Transpose", [p], {"perm": perm}))
        probs = seg.node("Softmax", [seg.node("MatMul", [heads[0], heads[1]])], {"axis": -1})
        ctx = seg.node("Transpose", [seg.node("MatMul", [probs, heads[2]])], {"perm": [0, 2, 1, 3]})
        ctx = seg.node("Reshape", [ctx, seg.ints([b, s, e], "shape")])
        return linear(ctx, val(proj_w), val(proj_b))

    def ffn(x):
        t = linear(x, val(f1w), val(f1b))
        t = seg.node("Gelu" if use_gelu else "Relu", [t])
        return linear(t, val(f2w), val(f2b))

    x = seg.tensor(src)
    if norm_first:
        x = seg.node("Add", [x, attention(layer_norm(x, val(n1w), val(n1b)))])
        y = seg.node("Add", [x, ffn(layer_norm(x, val(n2w), val(n2b)))])
    else:
        x = layer_norm(seg.node("Add", [x, attention(x)]), val(n1w), val(n1b))
        y = layer_norm(seg.node("Add", [x, ffn(x)]), val(n2w), val(n2b))
    seg.same_as(n, y)
