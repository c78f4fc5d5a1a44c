"""weft.torch.compile: offload torch.fx graphs to Weft.

The module is traced with torch.fx and shapes are propagated with the example inputs. Runs of
consecutive nodes Weft can express (torch functions and modules mapped to built-in ops,
torch.ops.weft.* to the plugin ops, parameters and buffers as constants) become compiled Weft
models; every other node runs in PyTorch between them. ``compiled.report`` lists the nodes that
fell back and why.
"""
import operator

import numpy as np
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

import weft as _weft


class _Unsupported(Exception):
    pass


def _np(t):
    return t.detach().cpu().contiguous().numpy()


def _pair(v, n=2):
    return list(v) if isinstance(v, (list, tuple)) else [v] * n


class _Segment:
    """A run of convertible nodes becoming one Weft graph."""

    def __init__(self, index, session):
        self.index = index
        self.session = session
        self.graph = _weft.Graph(f"segment{index}")
        self.nodes = []
        self.inputs = []      # fx nodes feeding the segment from outside
        self.defined = set()  # value names produced inside
        self.consts = 0
        self.model = None
        self.outputs = []

    def value(self, arg):
        """The Weft value name of an fx node argument (declaring a segment input if needed)."""
        if not isinstance(arg, torch.fx.Node):
            raise _Unsupported(f"argument {arg!r} is not a tensor")
        if arg.name in self.defined:
            return arg.name
        meta = arg.meta.get("tensor_meta")
        if meta is None or not isinstance(meta, torch.fx.passes.shape_prop.TensorMetadata):
            raise _Unsupported(f"input '{arg.name}' is not a tensor")
        if arg not in self.inputs:
            dtype = str(meta.dtype).replace("torch.", "")
            self.graph.add_input(arg.name, dtype, list(meta.shape))
            self.inputs.append(arg)
            self.defined.add(arg.name)
        return arg.name

    def const(self, tensor, hint="c"):
        name = f"{hint}_{self.index}_{self.consts}"
        self.consts += 1
        self.graph.add_constant(name, _np(tensor))
        self.defined.add(name)
        return name


def _shape_of(node):
    return list(node.meta["tensor_meta"].shape)


class _Converter:
    """Emits Weft nodes for one fx node into a segment, or raises _Unsupported."""

    def __init__(self, gm):
        self.gm = gm
        self.modules = dict(gm.named_modules())

    def emit(self, seg, node):
        out = node.name
        add = lambda op, ins, attrs=None: seg.graph.add_node(op, out + "/" + op, ins, [out], attrs or {})  # noqa: E731
        if node.op == "get_attr":
            t = self._attr(node.target)
            if not isinstance(t, torch.Tensor):
                raise _Unsupported("a non-tensor attribute")
            seg.graph.add_constant(out, _np(t))
            seg.defined.add(out)
            return
        if node.op == "call_module":
            return self._module(seg, node, self.modules[node.target], add)
        if node.op == "call_function":
            return self._function(seg, node, node.target, add)
        if node.op == "call_method":
            return self._method(seg, node, add)
        raise _Unsupported(f"fx op {node.op}")

    def _attr(self, target):
        obj = self.gm
        for part in target.split("."):
            obj = getattr(obj, part)
        return obj

    # ---- modules -------------------------------------------------------------------------------
    def _module(self, seg, node, mod, add):
        x = lambda: seg.value(node.args[0])  # noqa: E731
        if isinstance(mod, nn.Conv2d):
            if isinstance(mod.padding, str) or mod.padding_mode != "zeros":
                raise _Unsupported("Conv2d with string padding or non-zero padding mode")
            w, b = mod.weight, mod.bias
            bn = self._bn_after(node)
            if bn is not None:  # fold an eval-mode BatchNorm2d into the convolution
                scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                w = w * scale.reshape(-1, 1, 1, 1)
                b = (b if b is not None else torch.zeros_like(bn.running_mean)) * scale + bn.bias - bn.running_mean * scale
            ins = [x(), seg.const(w, "w")] + ([seg.const(b, "b")] if b is not None else [])
            p = _pair(mod.padding)
            add("Conv", ins, {"strides": _pair(mod.stride), "pads": [p[0], p[1], p[0], p[1]],
                              "dilations": _pair(mod.dilation), "group": int(mod.groups)})
            if bn is not None:
                node.meta["weft_folded_bn"] = bn
            return
        if isinstance(mod, nn.BatchNorm2d):
            if mod.training or not mod.track_running_stats:
                raise _Unsupported("BatchNorm2d in training mode")
            if node.meta.get("weft_bn_folded"):
                seg.graph.add_node("Identity", node.name + "/Identity", [seg.value(node.args[0])], [node.name])
                return
            ins = [x(), seg.const(mod.weight, "g"), seg.const(mod.bias, "b"), seg.const(mod.running_mean, "m"),
                   seg.const(mod.running_var, "v")]
            add("BatchNormalization", ins, {"epsilon": float(mod.eps)})
            return
        if isinstance(mod, nn.Linear):
            xs = _shape_of(node.args[0])
            if len(xs) == 2:
                ins = [x(), seg.const(mod.weight, "w")] + ([seg.const(mod.bias, "b")] if mod.bias is not None else [])
                add("Gemm", ins, {"transB": 1})
            else:
                wt = seg.const(mod.weight.t(), "wt")
                if mod.bias is None:
                    add("MatMul", [x(), wt])
                else:
                    mid = node.name + "/mm"
                    seg.graph.add_node("MatMul", mid, [x(), wt], [mid])
                    seg.defined.add(mid)
                    add("Add", [mid, seg.const(mod.bias, "b")])
            return
        simple = {nn.ReLU: "Relu", nn.Sigmoid: "Sigmoid", nn.Tanh: "Tanh", nn.Identity: "Identity", nn.GELU: "Gelu",
                  nn.Dropout: "Identity", nn.SiLU: None, nn.Hardswish: "HardSwish"}
        for cls, op in simple.items():
            if type(mod) is cls and op:
                if cls is nn.GELU and getattr(mod, "approximate", "none") != "none":
                    raise _Unsupported("tanh-approximate GELU")
                add(op, [x()])
                return
        if isinstance(mod, nn.MaxPool2d):
            if mod.ceil_mode or mod.return_indices:
                raise _Unsupported("MaxPool2d with ceil_mode or indices")
            p = _pair(mod.padding)
            add("MaxPool", [x()], {"kernel_shape": _pair(mod.kernel_size), "strides": _pair(mod.stride or mod.kernel_size),
                                   "pads": [p[0], p[1], p[0], p[1]], "dilations": _pair(mod.dilation)})
            return
        if isinstance(mod, nn.AvgPool2d):
            p = _pair(mod.padding)
            add("AveragePool", [x()], {"kernel_shape": _pair(mod.kernel_size), "strides": _pair(mod.stride or mod.kernel_size),
                                       "pads": [p[0], p[1], p[0], p[1]], "count_include_pad": int(mod.count_include_pad),
                                       "ceil_mode": int(mod.ceil_mode)})
            return
        if isinstance(mod, nn.AdaptiveAvgPool2d) and _pair(mod.output_size) == [1, 1]:
            add("GlobalAveragePool", [x()])
            return
        if isinstance(mod, nn.Flatten):
            if mod.end_dim != -1:
                raise _Unsupported("Flatten with end_dim")
            add("Flatten", [x()], {"axis": int(mod.start_dim)})
            return
        if isinstance(mod, nn.Softmax):
            add("Softmax", [x()], {"axis": int(mod.dim if mod.dim is not None else -1)})
            return
        if isinstance(mod, nn.LayerNorm):
            n = len(mod.normalized_shape)
            ins = [x(), seg.const(mod.weight, "g")] + ([seg.const(mod.bias, "b")] if mod.bias is not None else [])
            add("LayerNormalization", ins, {"axis": -n, "epsilon": float(mod.eps)})
            return
        if isinstance(mod, nn.TransformerEncoderLayer):
            return self._encoder_layer(seg, node, mod)
        if isinstance(mod, nn.MultiheadAttention):
            if len(node.args) < 3 or not (node.args[0] is node.args[1] is node.args[2]):
                raise _Unsupported("MultiheadAttention other than self-attention")
            extra = {k: v for k, v in node.kwargs.items() if v is not None and k != "need_weights"}
            if extra or len(node.args) > 3:
                raise _Unsupported("MultiheadAttention with masks")
            raise _Unsupported("MultiheadAttention returns (output, weights); use it inside TransformerEncoderLayer")
        raise _Unsupported("no Weft lowering")

    # ---- transformer lowering --------------------------------------------------------------------
    @staticmethod
    def _op(seg, op, ins, attrs=None, tag="t"):
        name = f"{tag}/{op}/{len(seg.defined)}"
        seg.graph.add_node(op, name, ins, [name], attrs or {})
        seg.defined.add(name)
        return name

    def _linear(self, seg, x, weight, bias, tag):
        y = self._op(seg, "MatMul", [x, seg.const(weight.t(), "w")], tag=tag)
        return self._op(seg, "Add", [y, seg.const(bias, "b")], tag=tag) if bias is not None else y

    def _self_attention(self, seg, x, mha, b, s, tag):
        e, h = mha.embed_dim, mha.num_heads
        d = e // h
        if not mha._qkv_same_embed_dim or mha.in_proj_bias is None or mha.bias_k is not None or mha.add_zero_attn:
            raise _Unsupported("MultiheadAttention with separate projections, bias_k/v or zero attention")
        w, bias = mha.in_proj_weight, mha.in_proj_bias
        scale = 1.0 / float(d) ** 0.5
        shape4 = seg.const(torch.tensor([b, s, h, d], dtype=torch.int64), "shape")
        heads = []
        for i, perm in enumerate(([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3])):
            wi, bi = w[i * e:(i + 1) * e], bias[i * e:(i + 1) * e]
            if i == 0:  # fold the 1/sqrt(d) scaling into the query projection
                wi, bi = wi * scale, bi * scale
            p = self._linear(seg, x, wi, bi, tag)
            p = self._op(seg, "Reshape", [p, shape4], tag=tag)
            heads.append(self._op(seg, "Transpose", [p], {"perm": perm}, tag=tag))
        scores = self._op(seg, "MatMul", [heads[0], heads[1]], tag=tag)
        probs = self._op(seg, "Softmax", [scores], {"axis": -1}, tag=tag)
        ctx = self._op(seg, "MatMul", [probs, heads[2]], tag=tag)
        ctx = self._op(seg, "Transpose", [ctx], {"perm": [0, 2, 1, 3]}, tag=tag)
        ctx = self._op(seg, "Reshape", [ctx, seg.const(torch.tensor([b, s, e], dtype=torch.int64), "shape")], tag=tag)
        return self._linear(seg, ctx, mha.out_proj.weight, mha.out_proj.bias, tag)

    def _layer_norm(self, seg, x, ln, tag):
        return self._op(seg, "LayerNormalization", [x, seg.const(ln.weight, "g"), seg.const(ln.bias, "b")],
                        {"axis": -1, "epsilon": float(ln.eps)}, tag=tag)

    def _encoder_layer(self, seg, node, layer):
        if layer.training:
            raise _Unsupported("TransformerEncoderLayer in training mode")
        masks = [a for a in list(node.args[1:]) + list(node.kwargs.values()) if a is not None]
        if masks:
            raise _Unsupported("TransformerEncoderLayer with masks")
        act = layer.activation
        if act is F.relu or isinstance(act, nn.ReLU):
            act_op = "Relu"
        elif act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none"):
            act_op = "Gelu"
        else:
            raise _Unsupported("TransformerEncoderLayer activation other than relu/gelu")
        tag = node.name
        shape = _shape_of(node.args[0])
        if len(shape) != 3:
            raise _Unsupported("TransformerEncoderLayer input that is not 3-D")
        x = seg.value(node.args[0])
        batch_first = layer.self_attn.batch_first
        if not batch_first:
            x = self._op(seg, "Transpose", [x], {"perm": [1, 0, 2]}, tag=tag)
            shape = [shape[1], shape[0], shape[2]]
        b, s = shape[0], shape[1]

        def ff(t):
            t = self._linear(seg, t, layer.linear1.weight, layer.linear1.bias, tag)
            t = self._op(seg, act_op, [t], tag=tag)
            return self._linear(seg, t, layer.linear2.weight, layer.linear2.bias, tag)

        if layer.norm_first:
            x = self._op(seg, "Add", [x, self._self_attention(seg, self._layer_norm(seg, x, layer.norm1, tag),
                                                             layer.self_attn, b, s, tag)], tag=tag)
            y = self._op(seg, "Add", [x, ff(self._layer_norm(seg, x, layer.norm2, tag))], tag=tag)
        else:
            x = self._layer_norm(seg, self._op(seg, "Add", [x, self._self_attention(seg, x, layer.self_attn, b, s, tag)],
                                               tag=tag), layer.norm1, tag)
            y = self._layer_norm(seg, self._op(seg, "Add", [x, ff(x)], tag=tag), layer.norm2, tag)
        perm = {} if batch_first else {"perm": [1, 0, 2]}
        seg.graph.add_node("Transpose" if perm else "Identity", node.name + "/out", [y], [node.name], perm)

    def _bn_after(self, node):
        users = list(node.users)
        if len(users) != 1 or users[0].op != "call_module":
            return None
        bn = self.modules[users[0].target]
        if isinstance(bn, nn.BatchNorm2d) and not bn.training and bn.track_running_stats and bn.affine:
            users[0].meta["weft_bn_folded"] = True
            return bn
        return None

    # ---- functions -----------------------------------------------------------------------------
    def _binary_operand(self, seg, a, like):
        if isinstance(a, torch.fx.Node):
            return seg.value(a)
        if isinstance(a, (int, float)):
            dtype = like.meta["tensor_meta"].dtype
            return seg.const(torch.tensor(a, dtype=dtype), "s")
        raise _Unsupported(f"operand {a!r}")

    def _function(self, seg, node, fn, add):
        binary = {operator.add: "Add", torch.add: "Add", operator.iadd: "Add", operator.mul: "Mul", torch.mul: "Mul",
                  operator.sub: "Sub", torch.sub: "Sub", operator.truediv: "Div", torch.div: "Div",
                  torch.matmul: "MatMul", operator.matmul: "MatMul"}
        unary = {torch.relu: "Relu", F.relu: "Relu", torch.sigmoid: "Sigmoid", torch.tanh: "Tanh", F.gelu: "Gelu",
                 torch.exp: "Exp", torch.sqrt: "Sqrt", torch.neg: "Neg", operator.neg: "Neg", torch.abs: "Abs"}
        if fn in binary:
            if node.kwargs.get("alpha", 1) != 1 or node.kwargs.get("rounding_mode") is not None:
                raise _Unsupported(f"{fn.__name__} with alpha/rounding_mode")
            tensor = next(a for a in node.args if isinstance(a, torch.fx.Node))
            a = self._binary_operand(seg, node.args[0], tensor)
            b = self._binary_operand(seg, node.args[1], tensor)
            add(binary[fn], [a, b])
            return
        if fn in unary:
            if fn is F.gelu and node.kwargs.get("approximate", "none") != "none":
                raise _Unsupported("tanh-approximate GELU")
            add(unary[fn], [seg.value(node.args[0])])
            return
        if fn is torch.flatten:
            start = node.args[1] if len(node.args) > 1 else node.kwargs.get("start_dim", 0)
            end = node.args[2] if len(node.args) > 2 else node.kwargs.get("end_dim", -1)
            if end != -1:
                raise _Unsupported("flatten with end_dim")
            add("Flatten", [seg.value(node.args[0])], {"axis": int(start)})
            return
        if fn in (torch.cat, torch.concat):
            dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
            add("Concat", [seg.value(a) for a in node.args[0]], {"axis": int(dim)})
            return
        if fn is F.softmax or fn is torch.softmax:
            dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
            add("Softmax", [seg.value(node.args[0])], {"axis": int(dim)})
            return
        if isinstance(fn, torch._ops.OpOverloadPacket) or isinstance(fn, torch._ops.OpOverload):
            return self._weft_op(seg, node, fn)
        raise _Unsupported("no Weft lowering")

    def _weft_op(self, seg, node, fn):
        qualified = fn._schema.name if isinstance(fn, torch._ops.OpOverload) else fn._qualified_op_name
        ns, _, name = qualified.partition("::")
        if ns != "weft":
            raise _Unsupported(f"operator {qualified}")
        from . import _bind, op_session

        session, proto = op_session(name)
        ins, attrs = _bind(proto, node.args, node.kwargs)
        names, counts = [], []
        for io, v in zip(proto["inputs"], ins):
            if io["kind"] == "dynamic":
                names.extend(seg.value(e) for e in v)
                counts.append(len(v))
            elif v is None:
                names.append("")
                counts.append(1)
            else:
                names.append(seg.value(v))
                counts.append(1)
        if len(proto["outputs"]) != 1:
            raise _Unsupported(f"weft::{name} has several outputs")
        from . import _attr_value

        types = {a["name"]: a["type"] for a in proto["attrs"]}
        clean = {k: _attr_value(v, types[k]) for k, v in attrs.items() if v is not None}
        seg.graph.add_node(name, node.name + "/" + name, names, [node.name], clean, counts, [1])

    # ---- methods -------------------------------------------------------------------------------
    def _method(self, seg, node, add):
        m = node.target
        self_arg = node.args[0]
        if m in ("relu", "sigmoid", "tanh", "exp", "sqrt", "neg", "abs"):
            add({"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "sqrt": "Sqrt", "neg": "Neg",
                 "abs": "Abs"}[m], [seg.value(self_arg)])
            return
        if m in ("add", "mul", "sub", "div") and len(node.args) == 2 and not node.kwargs:
            b = self._binary_operand(seg, node.args[1], self_arg)
            add({"add": "Add", "mul": "Mul", "sub": "Sub", "div": "Div"}[m], [seg.value(self_arg), b])
            return
        if m in ("view", "reshape"):
            shape = node.args[1:] if len(node.args) > 2 or not isinstance(node.args[1], (list, tuple)) else node.args[1]
            if not all(isinstance(d, int) for d in shape):
                raise _Unsupported(f"{m} with a computed shape")
            add("Reshape", [seg.value(self_arg), seg.const(torch.tensor(list(shape), dtype=torch.int64), "shape")])
            return
        if m == "flatten":
            start = node.args[1] if len(node.args) > 1 else node.kwargs.get("start_dim", 0)
            end = node.args[2] if len(node.args) > 2 else node.kwargs.get("end_dim", -1)
            if end != -1:
                raise _Unsupported("flatten with end_dim")
            add("Flatten", [seg.value(self_arg)], {"axis": int(start)})
            return
        if m == "permute":
            dims = node.args[1:] if not isinstance(node.args[1], (list, tuple)) else node.args[1]
            add("Transpose", [seg.value(self_arg)], {"perm": [int(d) for d in dims]})
            return
        if m == "contiguous":
            add("Identity", [seg.value(self_arg)])
            return
        raise _Unsupported("no Weft lowering")


class CompiledModule:
    """What weft.torch.compile returns: call it like the module."""

    def __init__(self, gm, steps, report, output_node):
        self.gm = gm
        self.steps = steps
        self.report = report
        self._output = output_node

    @property
    def num_segments(self):
        return sum(1 for s in self.steps if s[0] == "weft")

    def print_report(self):
        print(f"weft.torch.compile: {self.num_segments} Weft segment(s), {len(self.report)} node(s) in PyTorch")
        for name, what, why in self.report:
            print(f"  {name}: {what}: {why}")

    def __call__(self, *args):
        env = {}
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n, a in zip(placeholders, args):
            env[n.name] = a
        for step in self.steps:
            if step[0] == "weft":
                _, seg = step
                arrays = [_np(env[n.name]) for n in seg.inputs]
                outs = seg.model.run(arrays)
                for name, o in zip(seg.outputs, outs):
                    env[name] = torch.from_numpy(o)
            else:
                node = step[1]
                env[node.name] = self._run_torch(node, env)
        return torch.fx.node.map_arg(self._output.args[0], lambda n: env[n.name])

    def _run_torch(self, node, env):
        args = torch.fx.node.map_arg(node.args, lambda n: env[n.name])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n.name])
        if node.op == "call_function":
            return node.target(*args, **kwargs)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        if node.op == "call_module":
            return self.gm.get_submodule(node.target)(*args, **kwargs)
        if node.op == "get_attr":
            obj = self.gm
            for part in node.target.split("."):
                obj = getattr(obj, part)
            return obj
        raise RuntimeError(f"unexpected fx node {node.op}")


def compile(module, example_inputs, session=None):  # noqa: A001 - mirrors torch.compile's name
    """Traces `module` with torch.fx and runs the parts Weft can express as compiled Weft models
    (shapes fixed by `example_inputs`), the rest in PyTorch. Returns a callable; its `.report`
    lists the nodes left to PyTorch and why."""
    from . import register

    session = session or _weft.default_session()
    register(session)  # ops of this session's packages become callable as torch.ops.weft.*
    module = module.eval()
    try:
        gm = _trace(module)
    except Exception as e:  # noqa: BLE001 - any tracing failure: the whole module stays in PyTorch
        return _Eager(module, [("<module>", type(module).__name__, f"torch.fx cannot trace it: {e}".splitlines()[0])])
    example_inputs = tuple(example_inputs)
    with torch.no_grad():
        ShapeProp(gm).propagate(*example_inputs)
    conv = _Converter(gm)
    steps, report = [], []
    seg = None
    nodes = list(gm.graph.nodes)
    output_node = nodes[-1]
    for node in nodes:
        if node.op in ("placeholder", "output"):
            continue
        if seg is None:
            seg = _Segment(len(steps), session)
        try:
            # Convert into a scratch segment first: a failed conversion must leave the real one
            # untouched.
            probe = _Segment(-1, session)
            conv.emit(probe, node)
        except _Unsupported as e:
            report.append((node.name, _describe(node), str(e)))
            if seg.nodes:
                steps.append(("weft", seg))
            seg = None
            steps.append(("torch", node))
            continue
        conv.emit(seg, node)
        seg.nodes.append(node)
        seg.defined.add(node.name)
    if seg is not None and seg.nodes:
        steps.append(("weft", seg))
    # Each segment's outputs: values used after it (by later steps or the graph output).
    position = {}
    for i, st in enumerate(steps):
        for n in (st[1].nodes if st[0] == "weft" else [st[1]]):
            position[n.name] = i
    for i, st in enumerate(steps):
        if st[0] != "weft":
            continue
        seg = st[1]
        for n in seg.nodes:
            used_later = any(u.op == "output" or position.get(u.name, -1) != i for u in n.users)
            if used_later:
                seg.graph.add_output(n.name)
                seg.outputs.append(n.name)
        if not seg.outputs:
            steps[i] = ("skip", None)
            continue
        seg.model = session.compile(seg.graph)
    steps = [s for s in steps if s[0] != "skip"]
    return CompiledModule(gm, steps, report, output_node)


class _Tracer(torch.fx.Tracer):
    """Keeps the modules Weft lowers whole (their forward has data-dependent control flow)."""

    def is_leaf_module(self, m, qualname):
        return isinstance(m, (nn.TransformerEncoderLayer, nn.MultiheadAttention)) or super().is_leaf_module(m, qualname)


class _Root(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)


def _trace(module):
    if isinstance(module, torch.fx.GraphModule):
        return module
    root = _Root(module) if isinstance(module, (nn.TransformerEncoderLayer, nn.MultiheadAttention)) else module
    return torch.fx.GraphModule(root, _Tracer().trace(root))


class _Eager:
    """A module Weft could not take at all; runs it as is."""

    def __init__(self, module, report):
        self.module = module
        self.report = report
        self.num_segments = 0

    def print_report(self):
        print(f"weft.torch.compile: nothing offloaded; {self.report[0][2]}")

    def __call__(self, *args):
        with torch.no_grad():
            return self.module(*args)


def _describe(node):
    if node.op == "call_module":
        return f"module {node.target}"
    if node.op == "call_function":
        return f"function {getattr(node.target, '__name__', node.target)}"
    if node.op == "call_method":
        return f"method .{node.target}()"
    return node.op
