"""weft.RegistryContext: the conversion's parts (model hooks, LiteRT parsers, typed options, emitters,
transforms) from Python, each checked end to end: the model imports, runs, and its C module builds
and runs against the runtime's outputs or a NumPy re-computation (docs/aot.md, "Registry")."""
import os
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "litert_custom_op"))
from tflite_writer import Model  # noqa: E402
from test_aot import build_and_run  # noqa: E402


def scale_model(tmp_path, options):
    """x [2, 5] -> custom 'my-scale' (flexbuffer options) -> y."""
    from flatbuffers import flexbuffers

    m = Model()
    x = m.tensor("x", [2, 5], "float32")
    y = m.tensor("y", [2, 5], "float32")
    m.custom("my-scale", [x], [y], options=flexbuffers.Dumps(options))
    path = str(tmp_path / "scale.tflite")
    with open(path, "wb") as f:
        f.write(m.finish([x], [y]))
    return path


def hard_sigmoid(x, alpha, beta):
    return np.clip(alpha * x.astype(np.float64) + beta, 0.0, 1.0)


def parse_scale(op, node):
    """MY_SCALE(alpha, beta) is the op HardSigmoid: y = clip(alpha * x + beta, 0, 1)."""
    assert op["key"] == "MY_SCALE" and op["custom_code"] == "my-scale"
    assert op["input_types"] == ["float32"] and op["input_shapes"] == [[2, 5]]
    node["op_type"] = "HardSigmoid"
    node["attrs"] = {"alpha": node["attrs"]["alpha"], "beta": node["attrs"]["beta"]}


def scale_context(**kw):
    def customize(ctx):
        ctx.options.register("MY_SCALE", {"alpha": float, "beta": {"type": float, "default": 0.5, "doc": "offset"}})
        ctx.litert_parsers.register("MY_SCALE", parse_scale)

    return weft.RegistryContext([customize], **kw)


def test_parser_and_typed_options_make_a_custom_op_run_and_emit(tmp_path):
    # alpha arrives as an int (flexbuffers keeps 2 as an int): the schema makes it a float; beta
    # is absent and takes its default.
    path = scale_model(tmp_path, {"alpha": 2})
    ctx = scale_context()
    graph = weft.import_litert(path, registry=ctx)
    (node,) = graph.nodes
    assert node["op_type"] == "HardSigmoid" and node["attrs"] == {"alpha": 2.0, "beta": 0.5}
    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    (y,) = weft.Session().compile(graph).run([x])
    np.testing.assert_allclose(y, hard_sigmoid(x, 2.0, 0.5), rtol=1e-6, atol=1e-7)
    out = tmp_path / "c"
    weft.generate_c(path, out, prefix="sc", registry=ctx, test_inputs={"x": x})
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_without_the_registry_the_custom_op_is_unknown(tmp_path):
    graph = weft.import_litert(scale_model(tmp_path, {"alpha": 2}))
    assert graph.nodes[0]["op_type"] == "MY_SCALE"
    with pytest.raises(Exception, match="MY_SCALE"):
        weft.Session().compile(graph)


@pytest.mark.parametrize("options, message", [
    ({"alpah": 2.0}, r"option 'alpah' is not declared; did you mean 'alpha'\?"),
    ({"alpha": "big"}, r"option 'alpha' must be Float, got String"),
    ({"beta": 1.0}, r"option 'alpha' \(Float\) is required"),
])
def test_options_schema_errors_name_operator_option_and_nearest(tmp_path, options, message):
    def customize(ctx):
        ctx.options.register("MY_SCALE", {"alpha": {"type": float, "required": True}, "beta": float})

    with pytest.raises(ValueError, match=message) as e:
        weft.import_litert(scale_model(tmp_path, options), registry=weft.RegistryContext([customize]))
    assert "operator #0 (custom 'my-scale')" in str(e.value)


def test_parser_errors_name_the_parser(tmp_path):
    path = scale_model(tmp_path, {"alpha": 2})

    def raises(op, node):
        raise RuntimeError("cannot lower this one")

    def rewires(op, node):
        node["inputs"] = ["nope"]

    def returns_junk(op, node):
        return 7

    for fn, message in [(raises, "RuntimeError: cannot lower this one"), (rewires, "changed the node's name, inputs or outputs"),
                        (returns_junk, "returned neither None nor a node dict")]:
        ctx = weft.RegistryContext()
        ctx.litert_parsers.register("MY_SCALE", fn)
        with pytest.raises(ValueError, match="litert_parsers\\['MY_SCALE'\\]") as e:
            weft.import_litert(path, registry=ctx)
        assert message in str(e.value)


def test_model_hooks_rewrite_bytes_in_order_and_errors_name_the_hook(tmp_path):
    path = scale_model(tmp_path, {"alpha": 2})
    seen = []

    def rename(data):  # same length: the flatbuffer's offsets stay valid
        seen.append("rename")
        return data.replace(b"my-scale", b"my-shift")

    def count(data):
        seen.append("count")
        return bytearray(data)

    ctx = weft.RegistryContext()
    ctx.litert_model_hooks.register("rename", rename)
    ctx.litert_model_hooks.register("count", count)
    assert weft.import_litert(path, registry=ctx).nodes[0]["op_type"] == "MY_SHIFT"
    assert seen == ["rename", "count"]

    bad = weft.RegistryContext()
    bad.litert_model_hooks.register("truncate", lambda data: data[:100])
    with pytest.raises(ValueError, match="fails verification"):
        weft.import_litert(path, registry=bad)
    none = weft.RegistryContext()
    none.litert_model_hooks.register("forgot", lambda data: None)
    with pytest.raises(ValueError, match=r"litert_model_hooks\['forgot'\]: returned NoneType; a model hook returns the model's bytes"):
        weft.import_litert(path, registry=none)


def test_onnx_model_hooks(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    path = str(tmp_path / "relu.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)

    def to_sigmoid(data):
        m = onnx.load_from_string(data)
        m.graph.node[0].op_type = "Sigmoid"
        return m.SerializeToString()

    ctx = weft.RegistryContext()
    ctx.onnx_model_hooks.register("relu_to_sigmoid", to_sigmoid)
    graph = weft.import_onnx(path, registry=ctx)
    assert [n["op_type"] for n in graph.nodes] == ["Sigmoid"]
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    np.testing.assert_allclose(weft.Session().compile(graph).run([x])[0], 1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6)
    assert weft.import_onnx(path).nodes[0]["op_type"] == "Relu"


def isnan_graph():
    g = weft.Graph("isnan")
    g.add_input("x", "float32", [2, 3])
    g.add_node("IsNaN", "nan", ["x"], ["m"])
    g.add_output("m")
    return g


def emit_isnan(call):
    assert call.op_type == "IsNaN" and call.inputs == [("float32", [2, 3])] and call.outputs == [("bool", [2, 3])]
    assert not call.has_own
    n = 1
    for d in call.inputs[0][1]:
        n *= d
    call.run(f"{{ const float* x = {call.input(0, 'float')}; uint8_t* m = {call.output(0, 'uint8_t')}; int32_t i;\n"
             f"  for (i = 0; i < {n}; ++i) m[i] = (uint8_t)(x[i] != x[i]); }}")


def test_python_emitter_for_an_op_without_one(tmp_path):
    with pytest.raises(Exception, match=r"IsNaN 'nan'\] \(from built-in\)"):
        weft.generate_c(isnan_graph(), tmp_path / "none", prefix="nan")
    ctx = weft.RegistryContext()
    ctx.emitters.register("IsNaN", emit_isnan)
    x = np.array([[0, np.nan, 1], [np.inf, -np.nan, 2]], np.float32)
    out = tmp_path / "c"
    weft.generate_c(isnan_graph(), out, prefix="nan", registry=ctx, test_inputs={"x": x})
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # The test case compares with the runtime's outputs; check them too.
    (m,) = weft.Session().compile(isnan_graph()).run([x])
    np.testing.assert_array_equal(m, np.isnan(x))


def test_emitter_errors_and_a_stale_call(tmp_path):
    kept = []

    def broken(call):
        kept.append(call)
        call.run("/* half */")
        raise KeyError("no kernel for this shape")

    ctx = weft.RegistryContext()
    ctx.emitters.register("IsNaN", broken)
    with pytest.raises(ValueError, match=r"\[IsNaN 'nan'\] emitters\['IsNaN'\]: raised KeyError: 'no kernel for this shape'"):
        weft.generate_c(isnan_graph(), tmp_path / "c", prefix="nan", registry=ctx)
    with pytest.raises(ValueError, match="this EmitCall is over"):
        kept[0].run("/* later */")
    assert not (tmp_path / "c" / "src").exists()


def relu_graph():
    g = weft.Graph("relu")
    g.add_input("x", "float32", [4])
    g.add_node("Relu", "r", ["x"], ["y"])
    g.add_output("y")
    return g


def test_replacing_a_builtin_emitter_needs_allow_override(tmp_path):
    calls = []

    def counted_relu(call):  # the built-in's C, plus a counter in the node's state
        calls.append(call.node_name)
        call.declare_state("uint32_t runs;")
        call.init(f"{call.state()}->runs = 0;")
        call.emit_own()
        call.run(f"{call.state()}->runs++;")

    ctx = weft.RegistryContext()
    with pytest.raises(RuntimeError, match="'Relu' is already registered \\(a built-in\\); pass overwrite=true"):
        ctx.emitters.register("Relu", counted_relu)
    with pytest.raises(RuntimeError, match="'Relu' is a built-in; replacing it needs allow_override=true"):
        ctx.emitters.register("Relu", counted_relu, overwrite=True)
    with pytest.raises(RuntimeError, match="removing it needs allow_override"):
        ctx.emitters.remove("Relu")

    def customize(c):
        c.emitters.register("Relu", counted_relu, overwrite=True)

    with pytest.raises(ValueError, match=r"registry customizer #1 \(customize\) failed"):
        weft.RegistryContext([customize])
    ctx = weft.RegistryContext([customize], allow_override=True)
    assert not ctx.emitters.is_builtin("Relu") and ctx.emitters.is_builtin("Sigmoid")
    out = tmp_path / "c"
    x = np.array([-2, -0.5, 0.5, 3], np.float32)
    weft.generate_c(relu_graph(), out, prefix="rl", registry=ctx, test_inputs={"x": x}, test_steps=3)
    assert calls == ["r"]
    source = "".join(open(p).read() for p in (out / "src").glob("*.c"))
    assert "runs++" in source
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def identity_graph():
    g = weft.Graph("ids")
    g.add_input("x", "float32", [3])
    g.add_node("Identity", "i1", ["x"], ["a"])
    g.add_node("Relu", "r", ["a"], ["b"])
    g.add_node("Identity", "i2", ["b"], ["c"])
    g.add_node("Neg", "n", ["c"], ["y"])
    g.add_output("y")
    return g


def test_transforms_from_python_and_from_a_config_file(tmp_path):
    ctx = weft.RegistryContext()
    g = ctx.apply_transform("remove_identity", identity_graph())
    assert [n["name"] for n in g.nodes] == ["r", "n"] and g.nodes[1]["inputs"] == ["b"]

    def scale_leaky(graph, options):
        """Every LeakyRelu's alpha times `factor`, then the named attribute set."""
        nodes = graph.nodes
        for n in nodes:
            if n["op_type"] == "LeakyRelu":
                n["attrs"]["alpha"] = n["attrs"].get("alpha", 0.01) * options["factor"]
        graph.set_nodes(nodes)

    ctx.transforms.register("scale_leaky", scale_leaky, options={"factor": {"type": float, "default": 2.0}}, doc="alpha times factor")
    assert ctx.transforms.options("scale_leaky")["factor"]["default"] == 2.0
    with pytest.raises(ValueError, match=r"option 'factr' is not declared; did you mean 'factor'\?"):
        ctx.apply_transform("scale_leaky", identity_graph(), {"factr": 3})

    g = weft.Graph("lk")
    g.add_input("x", "float32", [4])
    g.add_node("LeakyRelu", "lk", ["x"], ["y"], {"alpha": 0.1})
    g.add_output("y")
    cfg = tmp_path / "aot.yaml"
    cfg.write_text("transforms:\n  - remove_identity\n  - name: scale_leaky\n    options: {factor: 3}\n")
    out = tmp_path / "c"
    x = np.array([-2, -0.5, 0.5, 3], np.float32)
    weft.generate_c(g, out, prefix="lk", registry=ctx, config=str(cfg), test_inputs={"x": x})
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # The golden outputs are the runtime's on the transformed graph: alpha 0.3.
    ref = ctx.apply_transform("scale_leaky", g, {"factor": 3})
    assert abs(ref.nodes[0]["attrs"]["alpha"] - 0.3) < 1e-7
    (y,) = weft.Session().compile(ref).run([x])
    np.testing.assert_allclose(y, np.where(x > 0, x, 0.3 * x), rtol=1e-6)


@pytest.mark.parametrize("text, message", [
    ("transforms:\n  - remove_identty\n", r"aot.yaml:2: transform 'remove_identty' is not registered; did you mean 'remove_identity'\?"),
    ("transforms:\n  - name: scale_leaky\n    options: {factr: 3}\n", r"aot.yaml:2: transform 'scale_leaky': unknown option 'factr'; did you mean 'factor'\?"),
    ("transforms:\n  - name: scale_leaky\n    options: {factor: big}\n", r"option 'factor' takes a float; the file gives 'big'"),
    ("transforms:\n  - name: remove_identity\n    options: {x: 1}\n", r"unknown option 'x' \(it takes no options\)"),
    ("transforms:\n  - name: boom\n", r"aot.yaml:2: transform 'boom': raised ZeroDivisionError"),
    ("transforms:\n  - nam: x\n", r"unknown transform key 'nam'; did you mean 'name'\?"),
])
def test_config_transform_errors(tmp_path, text, message):
    ctx = weft.RegistryContext()
    ctx.transforms.register("scale_leaky", lambda g, o: None, options={"factor": float})
    ctx.transforms.register("boom", lambda g, o: 1 / 0)
    cfg = tmp_path / "aot.yaml"
    cfg.write_text(text)
    with pytest.raises(ValueError, match=message):
        weft.generate_c(relu_graph(), tmp_path / "c", prefix="rl", registry=ctx, config=str(cfg))
    assert not (tmp_path / "c").exists()


def test_config_rules_check_the_registry_options_schema(tmp_path):
    """A rule's key may be one the op type's registered options declare (and nothing else)."""
    ctx = weft.RegistryContext()
    ctx.options.register("HardSigmoid", {"alpha": float, "beta": float})
    g = weft.Graph("hs")
    g.add_input("x", "float32", [4])
    g.add_node("HardSigmoid", "hs", ["x"], ["y"])
    g.add_output("y")
    cfg = tmp_path / "aot.yaml"
    cfg.write_text("operators:\n  - type: HardSigmoid\n    attributes: {alpah: 0.5}\n")
    with pytest.raises(ValueError, match=r"HardSigmoid has no attribute 'alpah'; did you mean 'alpha'\?"):
        weft.generate_c(g, tmp_path / "c", prefix="hs", registry=ctx, config=str(cfg))
    cfg.write_text("operators:\n  - type: HardSigmoid\n    attributes: {alpha: 0.5, beta: 0.25}\n")
    x = np.array([-3, -0.5, 0.5, 3], np.float32)
    out = tmp_path / "c"
    weft.generate_c(g, out, prefix="hs", registry=ctx, config=str(cfg), test_inputs={"x": x},
                    test_outputs={"y": hard_sigmoid(x, 0.5, 0.25).astype(np.float32)})
    r = build_and_run(out, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_registry_listing_and_keys():
    ctx = weft.RegistryContext()
    assert "CONV_2D" in ctx.litert_parsers and ctx.litert_parsers.is_builtin("CONV_2D")
    assert "CUSTOM" not in ctx.litert_parsers
    assert "TflConv2D" in ctx.emitters and "IsNaN" not in ctx.emitters
    assert list(ctx.transforms) == ["remove_identity"]
    assert "drops Identity" in ctx.transforms.doc("remove_identity")
    with pytest.raises(KeyError, match="nothing is registered as 'nope'"):
        ctx.options.remove("nope")
    with pytest.raises(ValueError, match="unknown key 'defualt'"):
        ctx.options.register("X", {"a": {"type": int, "defualt": 1}})
    with pytest.raises(ValueError, match="option 'a' default: option 'a' must be Int"):
        ctx.options.register("X", {"a": {"type": int, "default": "one"}})


def test_interrupts_in_parts_are_raised_unchanged(tmp_path):
    path = scale_model(tmp_path, {"alpha": 2})

    def interrupted(op, node):
        raise KeyboardInterrupt

    ctx = weft.RegistryContext()
    ctx.litert_parsers.register("MY_SCALE", interrupted)
    with pytest.raises(KeyboardInterrupt):
        weft.import_litert(path, registry=ctx)
    ctx = weft.RegistryContext()
    ctx.transforms.register("leave", lambda g, o: sys.exit(3))
    with pytest.raises(SystemExit):
        ctx.apply_transform("leave", relu_graph())

    def stop(call):
        raise KeyboardInterrupt

    ctx = weft.RegistryContext()
    ctx.emitters.register("IsNaN", stop)
    with pytest.raises(KeyboardInterrupt):
        weft.generate_c(isnan_graph(), tmp_path / "c", prefix="nan", registry=ctx)
    # The next call is not affected.
    assert weft.import_litert(path).nodes[0]["op_type"] == "MY_SCALE"


@pytest.mark.parametrize("field,value,want", [
    ("inputs", "x", "field 'inputs' must be a list of str, got str"),
    ("inputs", ["x", 3], "field 'inputs' must be a list of str, got list"),
    ("op_type", None, "field 'op_type' must be a str, got NoneType"),
    ("attrs", [("alpha", 1.0)], "field 'attrs' must be a dict, got list"),
    ("when", [("c", "yes", 1)], "field 'when' must be a list of (str, bool) pairs"),
])
def test_set_nodes_names_the_node_and_field_it_cannot_convert(field, value, want):
    g = identity_graph()
    nodes = g.nodes
    nodes[1][field] = value
    with pytest.raises(TypeError) as e:
        g.set_nodes(nodes)
    assert "node 'r'" in str(e.value) and want in str(e.value), str(e.value)
    assert [n["name"] for n in g.nodes] == ["i1", "r", "i2", "n"]  # left as it was
    with pytest.raises(TypeError, match=r"set_nodes: item 2 must be a dict .* got tuple"):
        g.set_nodes(g.nodes[:2] + [("i2",)])
