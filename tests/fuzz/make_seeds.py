"""Writes fuzz seeds that are generated rather than checked in (scripts/fuzz.sh runs this).

  python tests/fuzz/make_seeds.py npy DIR    # small .npy files: several dtypes, shapes, versions
  python tests/fuzz/make_seeds.py json DIR   # the JSON graphs embedded in tests/*.cc as raw strings
  python tests/fuzz/make_seeds.py plugin_table DIR   # byte strings for the table decoder
  python tests/fuzz/make_seeds.py onnx_qdq DIR   # QDQ convolutions (the importer fuses them)
  python tests/fuzz/make_seeds.py onnx_contrib DIR   # ONNX Runtime's fused operators (rewritten on import)
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def npy_seeds(out):
    import numpy as np
    from numpy.lib import format as npformat

    rng = np.random.default_rng(0)
    arrays = {
        "f4_2x3": rng.standard_normal((2, 3)).astype("<f4"),
        "f2_4": rng.standard_normal(4).astype("<f2"),
        "f8_scalar": np.array(3.5, dtype="<f8"),
        "i1_5": rng.integers(-100, 100, 5).astype("i1"),
        "u1_2x2x2": rng.integers(0, 255, (2, 2, 2)).astype("u1"),
        "i2_3": rng.integers(-1000, 1000, 3).astype("<i2"),
        "u2_3": rng.integers(0, 1000, 3).astype("<u2"),
        "i4_1x4": rng.integers(-9, 9, (1, 4)).astype("<i4"),
        "u4_2": rng.integers(0, 9, 2).astype("<u4"),
        "i8_0": np.zeros((0,), dtype="<i8"),
        "u8_3x0": np.zeros((3, 0), dtype="<u8"),
        "b1_6": rng.integers(0, 2, 6).astype("?"),
        "f4_8d": rng.standard_normal((1, 1, 2, 1, 1, 2, 1, 1)).astype("<f4"),
        "f4_fortran": np.asfortranarray(rng.standard_normal((2, 3)).astype("<f4")),
        "f4_bigendian": rng.standard_normal(3).astype(">f4"),
    }
    for name, a in arrays.items():
        for version in ((1, 0), (2, 0), (3, 0)):
            if version != (1, 0) and name not in ("f4_2x3", "b1_6", "f8_scalar"):
                continue
            with open(out / f"{name}_v{version[0]}.npy", "wb") as f:
                npformat.write_array(f, a, version=version)


def json_seeds(out):
    raw = re.compile(r'R"(\w*)\((.*?)\)\1"', re.S)
    n = 0
    for src in sorted((ROOT / "tests").glob("*.cc")):
        for m in raw.finditer(src.read_text()):
            text = m.group(2)
            if '"nodes"' not in text and '"inputs"' not in text:
                continue
            (out / f"{src.stem}_{n}.json").write_text(text)
            n += 1
    for p in [*sorted((ROOT / "examples").glob("*/*.json")), ROOT / "tests/fuzz/seed_cnn.json"]:
        json.loads(p.read_text())  # the seeds are valid graphs
        (out / f"{p.parent.name}_{p.name}").write_text(p.read_text())
    # One graph with every kind of value the reader knows: a constant read from w.npy (the fuzz
    # target's directory holds one), tensor and type attributes, lists, optional inputs, counts.
    every_kind = {
        "name": "every_kind",
        "inputs": [{"name": "x", "dtype": "float16", "shape": [2, -1]}],
        "constants": [
            {"name": "w", "file": "w.npy"},
            {"name": "b", "dtype": "bool", "shape": [3], "data": [True, 0, 1.5]},
            {"name": "h", "dtype": "bfloat16", "shape": [], "data": [0.25]},
            {"name": "u", "dtype": "uint64", "shape": [2, 1], "data": [0, 18446744073709551615]},
        ],
        "nodes": [{"op": "Custom", "name": "n", "inputs": ["x", None, "w"], "outputs": ["y", "z"],
                   "attrs": {"i": -3, "f": 0.5, "s": "text", "b": False, "ints": [1, 2], "floats": [1, 2.5],
                             "strs": ["a"], "bools": [True], "empty": [],
                             "t": {"tensor": {"dtype": "int32", "shape": [2], "data": [7, 8]}},
                             "tf": {"tensor": {"file": "w.npy"}}, "ty": {"type": "int8"}},
                   "input_counts": [1, 2], "output_counts": [2]}],
        "outputs": ["y", "z"],
    }
    (out / "every_kind.json").write_text(json.dumps(every_kind))


def plugin_table_seeds(out):
    # The decoder reads a byte per choice; mostly-small bytes make plausible tables (exact struct
    # sizes, few entries, known names), random ones the rest.
    import random
    rng = random.Random(7)
    for k in range(24):
        n = rng.choice([64, 256, 1024, 4096])
        if k % 2:
            body = bytes(rng.choice([3, 4, 5, 1, 2, 16, 17, 20, 40, 100, 200]) for _ in range(n))
        else:
            body = bytes(rng.randrange(256) for _ in range(n))
        (out / f"table_{k:02d}.bin").write_bytes(body)


def onnx_qdq_seeds(out):
    # DequantizeLinear -> Conv -> QuantizeLinear chains as onnxruntime.quantization writes them:
    # per-tensor and per-channel weights, with and without an int32 bias, and one whose bias scale
    # does not match (left unfused), so that mutations reach every check of the fusion.
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    for k, (per_channel, bias, matching) in enumerate([(False, False, True), (True, True, True), (True, True, False)]):
        m = 4
        ws = rng.uniform(0.01, 0.02, m if per_channel else 1).astype(np.float32)
        inits = {"xs": np.float32(0.05), "xz": np.uint8(128), "wq": rng.integers(-127, 128, [m, 2, 3, 3]).astype(np.int8),
                 "ws": ws if per_channel else ws[0], "wz": np.zeros(m if per_channel else 1, np.int8) if per_channel else np.int8(0),
                 "ys": np.float32(0.1), "yz": np.uint8(100)}
        nodes = [helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["x"]),
                 helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0)]
        conv_in = ["x", "w"]
        if bias:
            inits.update({"bq": rng.integers(-500, 500, m).astype(np.int32), "bz": np.zeros(m, np.int32),
                          "bs": (np.float32(0.05) * ws * (1 if matching else 2)).astype(np.float32)})
            nodes.append(helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], axis=0))
            conv_in.append("b")
        nodes += [helper.make_node("Conv", conv_in, ["c"], pads=[1, 1, 1, 1]),
                  helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"])]
        g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        (out / f"qdq_conv_{k}.onnx").write_bytes(model.SerializeToString())


def onnx_contrib_seeds(out):
    # One node each of the com.microsoft operators the importer rewrites, with the inputs and
    # attributes that steer the rewrite (activations, transposes, masks), so mutations reach them.
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    ms = "com.microsoft"
    f32 = np.float32
    cases = {
        "fused_conv": ([helper.make_node("FusedConv", ["x", "w", "b", "x"], ["y"], domain=ms, activation="Clip", activation_params=[0.0, 6.0],
                                         pads=[1, 1, 1, 1])], {"x": [1, 2, 4, 4]}, {"w": np.ones([2, 2, 3, 3], f32), "b": np.ones(2, f32)}),
        "fused_matmul": ([helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain=ms, alpha=0.5, transA=1, transBatchB=1)],
                         {"x": [2, 3, 3]}, {}),
        "skip_ln": ([helper.make_node("SkipLayerNormalization", ["x", "x", "g", "g", "g"], ["y", "m", "v", "s"], domain=ms)],
                    {"x": [1, 2, 4]}, {"g": np.ones(4, f32)}),
        "attention": ([helper.make_node("Attention", ["x", "w", "b", "mask"], ["y"], domain=ms, num_heads=2, unidirectional=1)],
                      {"x": [1, 3, 4], "mask": [2]}, {"w": np.ones([4, 12], f32), "b": np.ones(12, f32)}),
        "embed_ln": ([helper.make_node("EmbedLayerNormalization", ["ids", "ids", "e", "e", "e", "g", "g", "ids"], ["y", "mi", "s"], domain=ms)],
                     {"ids": [1, 3]}, {"e": np.ones([4, 4], f32), "g": np.ones(4, f32)}),
        "attention_past": ([helper.make_node("Attention", ["x", "w", "b", "", "past"], ["y", "present"], domain=ms, num_heads=2, unidirectional=1)],
                           {"x": [1, 3, 4], "past": [2, 1, 2, 2, 2]}, {"w": np.ones([4, 12], f32), "b": np.ones(12, f32)}),
        "mha": ([helper.make_node("MultiHeadAttention", ["x", "x", "x", "b", "mask"], ["y"], domain=ms, num_heads=2)],
                {"x": [1, 3, 4], "mask": [1, 3]}, {"b": np.ones(12, f32)}),
        "rotary": ([helper.make_node("RotaryEmbedding", ["x", "ids", "c", "c"], ["y"], domain=ms, num_heads=2, interleaved=1)],
                   {"x": [1, 3, 8], "ids": [1, 3]}, {"c": np.ones([4, 2], f32)}),
    }
    for name, (nodes, ins, inits) in cases.items():
        ints = {"mask", "ids"}
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(k, TensorProto.INT32 if k in ints else TensorProto.FLOAT, s)
                                            for k, s in ins.items()],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in nodes[-1].output],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)], ir_version=8)
        (out / f"contrib_{name}.onnx").write_bytes(model.SerializeToString())


if __name__ == "__main__":
    kind, out = sys.argv[1], pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    {"npy": npy_seeds, "json": json_seeds, "plugin_table": plugin_table_seeds, "onnx_qdq": onnx_qdq_seeds,
     "onnx_contrib": onnx_contrib_seeds}[kind](out)
