"""The serving engine without Ray: loads one model, checks requests against its inputs, and runs
batches of requests. weft.serve's deployment wraps one Engine per replica."""
import difflib
import hashlib
import os
import threading

import numpy as np

import weft

# Largest request a replica accepts by default, in bytes of decoded input data.
DEFAULT_MAX_REQUEST_BYTES = 64 << 20


class RequestError(ValueError):
    """A request the model cannot take. `status` is the HTTP status it maps to (400: the payload is
    not readable; 413: too large; 415: unknown content type; 422: readable, but the wrong inputs,
    dtypes or shapes for this model)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = int(status)

    def __reduce__(self):  # crosses process boundaries (Ray handles) with its status
        return (RequestError, (self.status, str(self)))


def _shape_text(shape):
    return "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"


def _file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class _OrtRunner:
    """onnxruntime behind the same interface: the reference deployment benchmarks compare with."""

    def __init__(self, path, threads):
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise RuntimeError("backend 'onnxruntime' needs the onnxruntime package (pip install onnxruntime)") from e
        if not path.lower().endswith(".onnx"):
            raise ValueError(f"backend 'onnxruntime' serves .onnx models, not '{os.path.basename(path)}'")
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        self._s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        types = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(int64)": "int64",
                 "tensor(int32)": "int32", "tensor(int8)": "int8", "tensor(uint8)": "uint8",
                 "tensor(bool)": "bool", "tensor(float16)": "float16", "tensor(int16)": "int16"}
        self.inputs = [(i.name, types.get(i.type, i.type),
                        [d if isinstance(d, int) and d >= 0 else -1 for d in i.shape]) for i in self._s.get_inputs()]
        self.outputs = [(o.name, types.get(o.type, o.type),
                         [d if isinstance(d, int) and d >= 0 else -1 for d in o.shape]) for o in self._s.get_outputs()]
        self._names = [n for n, _, _ in self.inputs]

    def run(self, arrays):
        return self._s.run(None, dict(zip(self._names, arrays)))


class Engine:
    """One model ready to serve: `Engine("model.onnx").infer({"x": array})` -> {"y": array}.

    model: a .weft model file, or an .onnx / .tflite model (imported and compiled here).
    input_shapes: {input: shape} fixing unknown dims of an imported model (-1 keeps one dynamic).
    batch_sizes: compile one plan per batch size (an imported model whose inputs all have a dynamic
        first dim); a batch is padded up to the smallest size that holds it. Without it, a model
        whose inputs all have a dynamic first dim runs each batch at its own size (one plan per
        size, cached), and any other model runs the requests of a batch one by one.
    threads: intra-op threads of this engine. packages: operator package roots to load.
    name / version: the model's identity in responses (default: file name, and the first 12 hex
        digits of the file's SHA-256).
    backend: "weft", or "onnxruntime" (a reference for comparisons; .onnx only).
    """

    def __init__(self, model, *, input_shapes=None, batch_sizes=None, threads=1, packages=(), name=None,
                 version=None, backend="weft", max_request_bytes=DEFAULT_MAX_REQUEST_BYTES,
                 trust_embedded_code=False, allow_override=False):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"weft.serve: no such model file: '{path}'")
        threads = int(threads)
        if threads < 1:
            raise ValueError(f"weft.serve: threads must be at least 1, not {threads}")
        self.path = os.path.abspath(path)
        digest = _file_digest(path)
        stem, ext = os.path.splitext(os.path.basename(path))
        self.name = str(name) if name else stem
        self.version = str(version) if version else digest[:12]
        self.sha256 = digest
        self.backend = backend
        self.threads = threads
        self.max_request_bytes = int(max_request_bytes)
        self._lock = threading.Lock()
        ext = ext.lower()
        self._sized = {}  # batch size -> compiled model (batch_sizes)
        self.batch_sizes = sorted({int(b) for b in batch_sizes}) if batch_sizes else []
        if any(b < 1 for b in self.batch_sizes):
            raise ValueError(f"weft.serve: batch sizes must be positive: {self.batch_sizes}")
        if backend == "onnxruntime":
            if self.batch_sizes:
                raise ValueError("weft.serve: batch_sizes applies to the weft backend only")
            self._model = _OrtRunner(path, threads)
            self.inputs, self.outputs = self._model.inputs, self._model.outputs
            self._stateful = False
        elif backend == "weft":
            self._session = weft.Session(packages=list(packages), threads=threads, allow_override=allow_override,
                                         trust_embedded_code=trust_embedded_code)
            if ext == ".weft":
                if input_shapes or self.batch_sizes:
                    raise ValueError("weft.serve: a .weft file is already compiled; input_shapes and batch_sizes "
                                     "apply to .onnx and .tflite models")
                self._model = self._session.load_model(path, trust_embedded_code=trust_embedded_code)
            elif ext in (".onnx", ".tflite"):
                graph = weft.import_model(path, input_shapes)
                self._model = self._session.compile(graph)
                if self.batch_sizes:
                    self._compile_sizes(path, graph, dict(input_shapes or {}))
            else:
                raise ValueError(f"weft.serve: '{os.path.basename(path)}' is not a model Weft serves "
                                 "(.weft, .onnx or .tflite)")
            self.inputs = [(n, str(t), list(s)) for n, t, s in self._model.inputs]
            outs = {}
            if ext != ".weft":
                try:  # output shapes by inference (dynamic dims as -1), for the metadata
                    outs = {n: (str(t), list(s)) for n, t, s in self._session.infer(graph)}
                except (ValueError, RuntimeError, KeyError):
                    outs = {}
            self.outputs = [(n, str(t), outs.get(n, (str(t), list(s)))[1] or list(s)) for n, t, s in self._model.outputs]
            self._stateful = ext == ".tflite"
        else:
            raise ValueError(f"weft.serve: unknown backend '{backend}' (weft or onnxruntime)")
        if not self.inputs:
            raise ValueError(f"weft.serve: '{os.path.basename(path)}' has no inputs to serve")
        self.batched = bool(self.batch_sizes) or all(len(s) >= 1 and s[0] < 0 for _, _, s in self.inputs)
        self._dtypes = {n: np.dtype(t) for n, t, _ in self.inputs}

    def _compile_sizes(self, path, graph, shapes):
        for n, _, s in graph.inputs:
            if not s or s[0] >= 0:
                raise ValueError(f"weft.serve: batch_sizes needs a dynamic first dim on every input; input '{n}' "
                                 f"is {_shape_text(s)}")
            rest = shapes.get(n, s)[1:] if n in shapes else s[1:]
            if any(d < 0 for d in rest):
                raise ValueError(f"weft.serve: batch_sizes needs every other dim fixed; input '{n}' is "
                                 f"{_shape_text(s)} (fix it with input_shapes)")
        for b in self.batch_sizes:
            fixed = {n: [b] + list(shapes.get(n, s)[1:]) for n, _, s in graph.inputs}
            self._sized[b] = self._session.compile(weft.import_model(path, fixed))

    # --- what the model takes and gives ---------------------------------------------------------
    def identity(self):
        return {"name": self.name, "version": self.version, "engine": self.backend,
                "engine_version": weft.__version__ if self.backend == "weft" else _ort_version()}

    def metadata(self):
        return {"model": self.identity(), "sha256": self.sha256, "batched": self.batched,
                "batch_sizes": self.batch_sizes,
                "inputs": [{"name": n, "dtype": t, "shape": s} for n, t, s in self.inputs],
                "outputs": [{"name": n, "dtype": t, "shape": s} for n, t, s in self.outputs]}

    def _describe_inputs(self):
        return ", ".join(f"{n} ({t} {_shape_text(s)})" for n, t, s in self.inputs)

    # --- checking one request -------------------------------------------------------------------
    def validate(self, inputs):
        """Checks one request (a dict of input name -> array or nested list) against the model's
        inputs and returns (arrays in input order, batch count). Raises RequestError(422) naming the
        input on a wrong name, dtype or shape. A NumPy array must have the input's dtype; plain
        numbers (nested lists, JSON) convert to it when no value changes (any number to a float)."""
        if not isinstance(inputs, dict):
            raise RequestError(400, f"inputs must be an object of input name -> tensor, not {type(inputs).__name__}")
        names = [n for n, _, _ in self.inputs]
        for k in inputs:
            if k not in names:
                lower = {n.lower(): n for n in names}
                near = difflib.get_close_matches(str(k).lower(), list(lower), n=1)
                hint = f" (did you mean '{lower[near[0]]}'?)" if near else ""
                raise RequestError(422, f"unknown input '{k}'{hint}; model '{self.name}' takes: {self._describe_inputs()}")
        arrays, total = [], 0
        batch = None
        for n, t, shape in self.inputs:
            if n not in inputs:
                raise RequestError(422, f"missing input '{n}' ({t} {_shape_text(shape)})")
            a = self._as_array(n, inputs[n], self._dtypes[n])
            if a.ndim != len(shape):
                raise RequestError(422, f"input '{n}' has shape {list(a.shape)}; the model takes {_shape_text(shape)} "
                                        f"(rank {len(shape)}, not {a.ndim})")
            for k, (got, want) in enumerate(zip(a.shape, shape)):
                if want >= 0 and got != want:
                    raise RequestError(422, f"input '{n}' has shape {list(a.shape)}; the model takes "
                                            f"{_shape_text(shape)} (dim {k} must be {want})")
            if self.batched:
                if batch is not None and a.shape[0] != batch:
                    raise RequestError(422, f"input '{n}' has batch {a.shape[0]}, other inputs {batch}: the first dim "
                                            "of every input is the batch")
                batch = a.shape[0]
            total += a.nbytes
            if total > self.max_request_bytes:
                raise RequestError(413, f"request inputs exceed {self.max_request_bytes} bytes")
            arrays.append(np.ascontiguousarray(a))
        if self.batched:
            if batch == 0:
                raise RequestError(422, "empty batch: the first dim of the inputs is 0")
            if self.batch_sizes and batch > self.batch_sizes[-1]:
                raise RequestError(422, f"batch of {batch} exceeds the largest compiled batch size {self.batch_sizes[-1]}")
        return arrays, (batch if self.batched else 1)

    def _as_array(self, name, value, dtype):
        exact = isinstance(value, np.ndarray)
        if exact:
            a = value
        else:
            try:
                a = np.asarray(value)
            except (ValueError, TypeError) as e:
                raise RequestError(422, f"input '{name}' is not a rectangular array: {e}") from None
        if a.dtype == dtype:
            return a
        if a.dtype.kind not in "biuf" or a.dtype == object:
            raise RequestError(422, f"input '{name}' is not an array of numbers (got {a.dtype} values); "
                                    f"the model takes {dtype}")
        if exact:
            raise RequestError(422, f"input '{name}' is {a.dtype}; the model takes {dtype}")
        try:
            with np.errstate(all="ignore"):
                c = a.astype(dtype)
        except (ValueError, TypeError, OverflowError):
            c = None
        if c is None or (a.size and not np.array_equal(c.astype(a.dtype), a, equal_nan=a.dtype.kind == "f")):
            if dtype.kind in "f" and a.dtype.kind in "biuf":
                return a.astype(dtype)  # numbers to a float input: rounding is the meaning
            raise RequestError(422, f"input '{name}' holds values that are not {dtype} (e.g. fractions or values "
                                    f"out of range)")
        return c

    # --- running --------------------------------------------------------------------------------
    def infer(self, inputs):
        """Checks and runs one request: {input: array} -> {output: array}."""
        arrays, n = self.validate(inputs)
        return self.run_batch([(arrays, n)])[0]

    def run_batch(self, items):
        """Runs validated requests [(arrays, batch count), ...] together where the model allows, and
        returns one {output: array} per request, in order."""
        if not items:
            return []
        if not self.batched or len(items) == 1 and not self.batch_sizes:
            return [self._run(arrays) for arrays, _ in items]
        results = [None] * len(items)
        groups = {}  # requests whose non-batch dims agree run together
        for k, (arrays, _) in enumerate(items):
            groups.setdefault(tuple(a.shape[1:] for a in arrays), []).append(k)
        for ks in groups.values():
            start = 0
            while start < len(ks):
                chunk, rows = [], 0
                limit = self.batch_sizes[-1] if self.batch_sizes else None
                while start < len(ks) and (limit is None or rows + items[ks[start]][1] <= limit or not chunk):
                    chunk.append(ks[start])
                    rows += items[ks[start]][1]
                    start += 1
                for k, out in zip(chunk, self._run_rows([items[k] for k in chunk], rows)):
                    results[k] = out
        return results

    def _run_rows(self, group, rows):
        arrays = [np.concatenate([g[0][i] for g in group]) if len(group) > 1 else group[0][0][i]
                  for i in range(len(self.inputs))]
        model = self._model
        if self.batch_sizes:
            size = next(b for b in self.batch_sizes if b >= rows)
            model = self._sized[size]
            if size > rows:
                arrays = [np.concatenate([a, np.zeros((size - rows,) + a.shape[1:], a.dtype)]) for a in arrays]
        outs = self._call(model, arrays)
        if any(o.ndim == 0 or o.shape[0] != arrays[0].shape[0] for o in outs):
            if len(group) == 1 and not self.batch_sizes:
                return [self._named(outs)]
            # Outputs without the batch as their first dim: run the requests one by one.
            return [self._run(g[0]) for g in group]
        result, at = [], 0
        for _, n in group:
            result.append(self._named([o[at:at + n] for o in outs]))
            at += n
        return result

    def _run(self, arrays):
        if self.batch_sizes:
            return self._run_rows([(arrays, arrays[0].shape[0])], arrays[0].shape[0])[0]
        return self._named(self._call(self._model, arrays))

    def _call(self, model, arrays):
        try:
            if self._stateful:
                with self._lock:  # each request is a stream of its own: state starts from zeros
                    model.reset_state()
                    return model.run(arrays)
            return model.run(arrays)
        except (ValueError, KeyError) as e:
            # Checked shapes can still be refused by a shape rule deeper in the model.
            raise RequestError(422, f"model '{self.name}' refused the inputs: {e}") from None

    def _named(self, outs):
        return {n: np.asarray(o) for (n, _, _), o in zip(self.outputs, outs)}


def _ort_version():
    try:
        import onnxruntime
        return onnxruntime.__version__
    except ImportError:
        return "?"
