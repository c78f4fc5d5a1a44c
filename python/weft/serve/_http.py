"""Request and response bodies of weft.serve's HTTP API (docs/serving.md, "HTTP"):

JSON  {"inputs": {"x": [[1.0, 2.0]]}}  or  {"inputs": {"x": {"dtype": "float32", "shape": [1, 2],
      "data": [1.0, 2.0]}}}  ->  {"model": {...}, "outputs": {"y": {"dtype", "shape", "data"}}}
NPZ   a NumPy .npz of named arrays (Content-Type application/x-npz) -> an .npz of the outputs, the
      model's identity in the X-Weft-Model / X-Weft-Model-Version headers.
"""
import io
import json
import zipfile

import numpy as np

from ._engine import RequestError

NPZ_TYPES = ("application/x-npz", "application/octet-stream")
# curl -d sends a JSON body as x-www-form-urlencoded unless told otherwise: read as JSON too.
JSON_TYPES = ("application/json", "text/json", "application/x-www-form-urlencoded", "")


def content_kind(content_type):
    t = (content_type or "").split(";")[0].strip().lower()
    if t in JSON_TYPES:
        return "json"
    if t in NPZ_TYPES:
        return "npz"
    raise RequestError(415, f"content type '{t}' is not served: send application/json or application/x-npz")


def decode_json(body):
    """-> {input name: array or nested list}."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise RequestError(400, f"the body is not JSON: {e}") from None
    if not isinstance(doc, dict) or "inputs" not in doc:
        raise RequestError(400, 'the body must be a JSON object with "inputs": {"<input name>": tensor, ...}')
    unknown = sorted(set(doc) - {"inputs"})
    if unknown:
        raise RequestError(400, f"unknown field '{unknown[0]}' in the request: only \"inputs\" is read")
    inputs = doc["inputs"]
    if not isinstance(inputs, dict):
        raise RequestError(400, '"inputs" must be an object of input name -> tensor')
    return {name: _typed_tensor(name, v) if isinstance(v, dict) else v for name, v in inputs.items()}


def _typed_tensor(name, v):
    extra = sorted(set(v) - {"dtype", "shape", "data"})
    if extra or "data" not in v or "dtype" not in v:
        raise RequestError(400, f"input '{name}': a typed tensor is {{\"dtype\", \"shape\", \"data\"}}"
                                + (f" (unknown field '{extra[0]}')" if extra else ""))
    try:
        dtype = np.dtype(str(v["dtype"]))
    except TypeError:
        raise RequestError(422, f"input '{name}': unknown dtype '{v['dtype']}'") from None
    if dtype.kind not in "biuf":
        raise RequestError(422, f"input '{name}': dtype '{v['dtype']}' is not a numeric tensor type")
    try:
        a = np.asarray(v["data"])
    except (ValueError, TypeError) as e:
        raise RequestError(422, f"input '{name}': data is not a rectangular array: {e}") from None
    if a.dtype.kind not in "biuf":
        raise RequestError(422, f"input '{name}': data must be numbers")
    with np.errstate(all="ignore"):
        c = a.astype(dtype)
    if dtype.kind != "f" and a.size and not np.array_equal(c.astype(np.float64), a.astype(np.float64)):
        raise RequestError(422, f"input '{name}': data holds values that are not {dtype}")
    if "shape" in v:
        shape = v["shape"]
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise RequestError(422, f"input '{name}': shape must be a list of non-negative integers")
        count = 1
        for d in shape:
            count *= d
        if count != c.size:
            raise RequestError(422, f"input '{name}': shape {shape} holds {count} values, data has {c.size}")
        c = c.reshape(shape)
    return c


def encode_json(identity, outputs):
    body = {"model": identity,
            "outputs": {n: {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.tolist()} for n, a in outputs.items()}}
    return json.dumps(body).encode()


def decode_npz(body, max_bytes):
    try:
        z = np.load(io.BytesIO(body), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise RequestError(400, f"the body is not a NumPy .npz archive: {e}") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise RequestError(400, "the body is a single .npy array; send an .npz of named arrays (numpy.savez)")
    out = {}
    with z:
        # The sizes the archive declares bound what reading it inflates.
        declared = sum(i.file_size for i in z.zip.infolist())
        if declared > max_bytes + 4096 * len(z.files):
            raise RequestError(413, f"request inputs exceed {max_bytes} bytes")
        for name in z.files:
            try:
                out[name] = z[name]
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
                raise RequestError(400, f"array '{name}' of the .npz is unreadable: {e}") from None
    return out


def encode_npz(outputs):
    buf = io.BytesIO()
    np.savez(buf, **outputs)
    return buf.getvalue()
