"""Weft: a graph engine in which every operator is a plugin.

    import numpy as np, weft
    s = weft.Session()                                   # built-ins + WEFT_CUSTOM_OPP_PATH
    g = weft.Graph("demo")
    g.add_input("x", "float32", [2, 3]).add_input("y", "float32", [2, 3])
    g.add_node("Add", "add0", ["x", "y"], ["z"]).add_output("z")
    m = s.compile(g)
    z, = m.run([np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)])

Arrays are passed to runs without copies; `weft.run(model, *tensors)` also takes torch tensors
(CPU, contiguous) and returns the same kind. `import weft.torch` exposes every operator as
`torch.ops.weft.<op>`.

One engine serves the whole process: `weft.default_session()` is the session libweft_torch.so
registers its ops from, and `weft.set_default_session(s)` (before `import weft.torch`) or
`weft.torch.register(s)` makes the ops of a session you configured reach torch.ops.weft.
"""
import os as _os

import numpy as _np

from ._weft import (EmitCall, Graph, Model, RegistryContext, Session, _generate_c, default_session, dtype_code, kernel_cache_stats,
                    litert_custom_op_key, set_default_session)

__all__ = ["EmitCall", "Graph", "Model", "NotFoundError", "RegistryContext", "Session", "kernel_cache_stats", "generate_c", "import_onnx", "import_litert", "import_model", "litert_custom_op_key", "default_session", "run", "as_array",
           "cmake_prefix_path", "dtype_code", "set_default_session"]
__version__ = "0.1.0"

# Where find_package(Weft) finds the C++ SDK shipped with this package (an installed wheel):
#   cmake -DCMAKE_PREFIX_PATH="$(python -c 'import weft; print(weft.cmake_prefix_path)')" ...
cmake_prefix_path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "lib", "cmake")

class NotFoundError(KeyError):
    """Something Weft could not find: an op type, a model input, a package. A KeyError, whose str()
    is the message as written (KeyError's own quotes it)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def import_onnx(path, input_shapes=None, registry=None, fuse_qdq=True):
    """Reads an ONNX model into a Graph; `input_shapes` fixes dims ({"input": [1, 3, 224, 224]}).
    `registry` (a RegistryContext) supplies onnx_model_hooks, run on the file's bytes first.
    `fuse_qdq`: statically quantized convolutions in the QDQ format (DequantizeLinear -> Conv ->
    QuantizeLinear) become QLinearConv where they fit it exactly (integer sums, one rounding, as
    ONNX Runtime runs them); so do Add, Mul, Sigmoid, LeakyRelu, GlobalAveragePool, AveragePool,
    Concat and Gemm (QLinearAdd, ..., QGemm), and MaxPool runs on the 8-bit values. False keeps the float operators between the
    quantization nodes (the CLI's --no-fuse-qdq)."""
    return Graph.from_onnx(str(path), dict(input_shapes or {}), registry, bool(fuse_qdq))


def import_litert(path, input_shapes=None, op_map=None, registry=None):
    """Reads a LiteRT (.tflite) model into a Graph; `input_shapes` fixes dims, `op_map` maps a custom
    operator's customCode (or its canonical key) to a Weft op type. `registry` (a RegistryContext)
    supplies litert_model_hooks, litert_parsers and options schemas (docs/aot.md, "Registry")."""
    return Graph.from_litert(str(path), dict(input_shapes or {}), dict(op_map or {}), registry)


def import_model(path, input_shapes=None, registry=None):
    """Reads a model by its extension: .onnx, .tflite, or a JSON graph."""
    path = str(path)
    ext = _os.path.splitext(path)[1].lower()
    if ext == ".onnx":
        return import_onnx(path, input_shapes, registry=registry)
    if ext == ".tflite":
        return import_litert(path, input_shapes, registry=registry)
    return Graph.from_json(path)


def generate_c(model, output_dir, prefix="model", input_shapes=None, packages=(), allow_override=False, test=False,
               test_inputs=None, test_outputs=None, test_steps=1, seed=1, atol=1e-5, rtol=1e-4, const_section="",
               external_arena=False, config=None, registry=None, freeze=None):
    """Writes a dependency-free C99 module for `model` (a Graph; a compiled Model; or a .tflite, .onnx,
    .json or .weft path) into
    `output_dir`, as `weft aot` does (docs/aot.md): includes-api/<prefix>.h, src/, CMakeLists.txt,
    and with `test` (or test_inputs/test_outputs, dicts of name -> array) a test case under test/.
    Every operator must emit C (EmittableOp); `input_shapes` fixes unknown dims. A compiled Model (or a
    .weft file) keeps its graph passes' work: fused additions and activations are written after each
    op's own C, blocked layouts become plain ones. `config` is a
    YAML file of attribute rules, transforms and module options, as `weft aot --config` takes
    (docs/aot.md). `registry` (a RegistryContext) supplies the conversion's parts: model hooks and
    parsers (when `model` is a path), transforms and option schemas (for `config`), and emitters.
    `freeze` (name -> array) makes graph inputs constants, as `weft aot --freeze` does, so that
    shapes depending on their values (a loop's trip count, a conditional's branch) become known.
    Returns the report: prefix, ops, tensors, arena_bytes, lower_bound_bytes, algorithm, trials,
    constant_bytes, files."""
    if isinstance(model, (str, _os.PathLike)) and str(model).lower().endswith(".weft"):
        if input_shapes:
            raise ValueError("input_shapes apply to a graph, not to a compiled model file, whose shapes are fixed")
        model = Session(packages=list(packages), allow_override=allow_override).load_model(str(model))
    graph = import_model(model, input_shapes, registry) if isinstance(model, (str, _os.PathLike)) else model
    return _generate_c(graph, str(output_dir), prefix, list(packages), allow_override, test, dict(test_inputs or {}),
                       dict(test_outputs or {}), int(test_steps), int(seed), float(atol), float(rtol), const_section,
                       external_arena, str(config) if config else "", registry, dict(freeze or {}))


def _is_torch(x):
    mod = type(x).__module__
    return mod.startswith("torch")


def as_array(x):
    """A NumPy view of `x` without copying when possible (torch CPU tensors, NumPy arrays)."""
    if _is_torch(x):
        if x.device.type != "cpu":
            raise ValueError(f"weft runs on CPU tensors here; got a tensor on {x.device}")
        return x.detach().contiguous().numpy()
    return _np.ascontiguousarray(x)


def run(model, *inputs):
    """Runs `model` on NumPy arrays or torch tensors; returns outputs of the inputs' kind."""
    # A list stays a list (a sequence input), None stays None (an empty optional).
    arrays = [x if x is None or isinstance(x, (list, tuple)) else as_array(x) for x in inputs]
    outs = model.run(arrays)
    if inputs and _is_torch(inputs[0]):
        import torch

        return [torch.from_numpy(o) for o in outs]
    return outs
