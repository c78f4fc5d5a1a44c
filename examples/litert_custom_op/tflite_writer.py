"""Writes small LiteRT (.tflite) models: float32/int tensors and operators in a main subgraph,
and more subgraphs for control flow (IF) and composites (STABLEHLO_COMPOSITE).

    from tflite_writer import Model
    m = Model()
    x = m.tensor("x", [1, 4], "float32")                         # an input or intermediate
    w = m.tensor("w", [4, 4], "float32", data=np.ones((4, 4)))   # a constant
    y = m.tensor("y", [1, 4], "float32")
    m.builtin(9, [x, w, -1], [y])                                # FULLY_CONNECTED (no bias)
    m.custom("my-op", [y], [z], options=b"...")                  # a CUSTOM operator
    open("model.tflite", "wb").write(m.finish(inputs=[x], outputs=[z]))

    def branch(s):                                               # another subgraph
        a = s.tensor("a", [1, 4], "float32"); r = s.tensor("r", [1, 4], "float32")
        s.builtin(18, [a, a], [r])                               # MUL
        return [a], [r]
    index = m.subgraph(branch)                                   # 1, 2, ...

Field ids follow the format's schema (Model, OperatorCode, SubGraph, Tensor, Operator, Buffer);
only what these examples and tests need is written. Uses the `flatbuffers` package.
"""
import flatbuffers
import numpy as np

TYPES = {"float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "bool": 6, "int16": 7, "int8": 9, "uint64": 12, "resource": 13, "uint32": 15,
         "int4": 17}


def pack_int4(values):
    """INT4 data: two values in [-8, 7] per byte, the one of even index in the low nibble."""
    v = (np.asarray(values, dtype=np.int64).ravel() & 0xF).astype(np.uint8)
    if v.size % 2:
        v = np.append(v, np.uint8(0))
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8).tobytes()
CUSTOM = 32


class Model:
    def __init__(self):
        self.tensors = []     # (name, shape, type, buffer index)
        self.buffers = [b""]  # buffer 0: the empty sentinel
        self.codes = []       # (builtin code, custom code)
        self.ops = []         # (code index, inputs, outputs, custom options)
        self.subgraphs = []   # the other subgraphs: (tensors, ops, inputs, outputs, name)

    def tensor(self, name, shape, dtype, data=None, scale=None, zero_point=0, variable=False, quantized_dimension=0, blockwise=None,
               raw=None):
        """A tensor; `scale` (and `zero_point`) make it quantized: per tensor when they are numbers,
        per channel along `quantized_dimension` when they are lists; `blockwise` = (scales tensor,
        zero-point tensor or -1, block size) quantizes it block-wise instead; `variable` marks an
        operator's state (a variable tensor, updated in place by the operator that reads it).
        "int4" data is packed two values a byte; `raw` gives the buffer's bytes as they are."""
        buf = 0
        if raw is not None or data is not None:
            if raw is not None:
                self.buffers.append(bytes(raw))
            elif dtype == "int4":
                self.buffers.append(pack_int4(data))
            else:
                self.buffers.append(np.ascontiguousarray(data, dtype=np.dtype(dtype)).tobytes())
            buf = len(self.buffers) - 1
        quant = None
        if scale is not None:
            scales = [float(v) for v in (scale if isinstance(scale, (list, tuple, np.ndarray)) else [scale])]
            zps = [int(v) for v in (zero_point if isinstance(zero_point, (list, tuple, np.ndarray)) else [zero_point])]
            quant = (scales, zps, quantized_dimension)
        if blockwise is not None:
            quant = ("blockwise",) + tuple(int(v) for v in blockwise)
        self.tensors.append((name, list(shape), TYPES[dtype], buf, quant, variable))
        return len(self.tensors) - 1

    def _code(self, builtin, custom=None):
        key = (builtin, custom)
        if key not in self.codes:
            self.codes.append(key)
        return self.codes.index(key)

    def builtin(self, code, inputs, outputs, options=None, intermediates=None, options2=None):
        """options: (BuiltinOptions type, [(field id, "bool" | "byte" | "int32" | "float" | "string", value), ...]);
        options2: the same for the second options union (BuiltinOptions2, e.g. a composite's);
        intermediates: tensors that only carry quantization (the integer LSTM's)."""
        self.ops.append((self._code(code), inputs, outputs, (options, options2), intermediates))

    def subgraph(self, build, name="sub"):
        """Another subgraph: build(s) adds tensors and operators to `s` (a Model sharing this one's
        buffers and operator codes) and returns (inputs, outputs). Returns the subgraph's index."""
        sub = Model()
        sub.buffers, sub.codes, sub.subgraphs = self.buffers, self.codes, self.subgraphs
        ins, outs = build(sub)
        self.subgraphs.append((sub.tensors, sub.ops, ins, outs, name))
        return len(self.subgraphs)

    def custom(self, custom_code, inputs, outputs, options=b""):
        self.ops.append((self._code(CUSTOM, custom_code), inputs, outputs, (options, None), None))

    def finish(self, inputs, outputs):
        b = flatbuffers.Builder(1024)

        def ints(values):
            b.StartVector(4, len(values), 4)
            for v in reversed(values):
                b.PrependInt32(v)
            return b.EndVector()

        def table_vector(offsets):
            b.StartVector(4, len(offsets), 4)
            for o in reversed(offsets):
                b.PrependUOffsetTRelative(o)
            return b.EndVector()

        buffers = []
        for data in self.buffers:
            vec = b.CreateByteVector(data) if data else None
            b.StartObject(3)
            if vec is not None:
                b.PrependUOffsetTRelativeSlot(0, vec, 0)
            buffers.append(b.EndObject())

        def options_table(fields):
            strings = {fid: b.CreateString(value) for fid, kind, value in fields if kind == "string"}
            b.StartObject(max([f[0] for f in fields] + [0]) + 1)
            for fid, kind, value in fields:
                if kind == "bool":
                    b.PrependBoolSlot(fid, bool(value), not bool(value))  # always written (some defaults are true)
                elif kind == "byte":
                    b.PrependInt8Slot(fid, int(value), -1)  # default -1: always written
                elif kind == "int32":
                    b.PrependInt32Slot(fid, int(value), 0)
                elif kind == "string":
                    b.PrependUOffsetTRelativeSlot(fid, strings[fid], 0)
                else:
                    b.PrependFloat32Slot(fid, float(value), 0.0)
            return b.EndObject()

        def write_subgraph(tensor_list, op_list, inputs, outputs, sg_name):
            tensors = []
            for name, shape, ttype, buf, quant, variable in tensor_list:
                q = None
                if quant is not None and quant[0] == "blockwise":  # BlockwiseQuantization (QuantizationDetails 2)
                    b.StartObject(3)
                    b.PrependInt32Slot(0, quant[1], -99)  # written even when 0
                    b.PrependInt32Slot(1, quant[2], -99)
                    b.PrependInt32Slot(2, quant[3], -99)
                    details = b.EndObject()
                    b.StartObject(7)
                    b.PrependUint8Slot(4, 2, 0)
                    b.PrependUOffsetTRelativeSlot(5, details, 0)
                    q = b.EndObject()
                elif quant is not None:
                    scales, zps, qdim = quant
                    b.StartVector(4, len(scales), 4)
                    for v in reversed(scales):
                        b.PrependFloat32(v)
                    sv = b.EndVector()
                    b.StartVector(8, len(zps), 8)
                    for v in reversed(zps):
                        b.PrependInt64(v)
                    zv = b.EndVector()
                    b.StartObject(7)
                    b.PrependUOffsetTRelativeSlot(2, sv, 0)
                    b.PrependUOffsetTRelativeSlot(3, zv, 0)
                    b.PrependInt32Slot(6, qdim, 0)
                    q = b.EndObject()
                n, s = b.CreateString(name), ints(shape)
                b.StartObject(10)
                if q is not None:
                    b.PrependUOffsetTRelativeSlot(4, q, 0)
                b.PrependUOffsetTRelativeSlot(0, s, 0)
                b.PrependInt8Slot(1, ttype, 0)
                b.PrependUint32Slot(2, buf, 0)
                b.PrependUOffsetTRelativeSlot(3, n, 0)
                b.PrependBoolSlot(5, variable, False)
                tensors.append(b.EndObject())
            ops = []
            for code, ins, outs, options, intermediates in op_list:
                i, o = ints(ins), ints(outs)
                im = ints(intermediates) if intermediates else None
                options, options2 = options
                opt = b.CreateByteVector(bytes(options)) if isinstance(options, (bytes, bytearray)) and options else None
                table = options_table(options[1]) if isinstance(options, tuple) else None
                table2 = options_table(options2[1]) if options2 is not None else None
                b.StartObject(14)
                b.PrependUint32Slot(0, code, 0)
                b.PrependUOffsetTRelativeSlot(1, i, 0)
                b.PrependUOffsetTRelativeSlot(2, o, 0)
                if table is not None:
                    b.PrependUint8Slot(3, options[0], 0)
                    b.PrependUOffsetTRelativeSlot(4, table, 0)
                if opt is not None:
                    b.PrependUOffsetTRelativeSlot(5, opt, 0)
                if im is not None:
                    b.PrependUOffsetTRelativeSlot(8, im, 0)
                if table2 is not None:
                    b.PrependUint8Slot(11, options2[0], 0)
                    b.PrependUOffsetTRelativeSlot(12, table2, 0)
                ops.append(b.EndObject())
            tv, iv, ov, opv = table_vector(tensors), ints(inputs), ints(outputs), table_vector(ops)
            name = b.CreateString(sg_name)
            b.StartObject(5)
            b.PrependUOffsetTRelativeSlot(0, tv, 0)
            b.PrependUOffsetTRelativeSlot(1, iv, 0)
            b.PrependUOffsetTRelativeSlot(2, ov, 0)
            b.PrependUOffsetTRelativeSlot(3, opv, 0)
            b.PrependUOffsetTRelativeSlot(4, name, 0)
            return b.EndObject()

        subgraphs = [write_subgraph(self.tensors, self.ops, inputs, outputs, "main")]
        subgraphs += [write_subgraph(*sg) for sg in self.subgraphs]
        codes = []
        for builtin, custom in self.codes:
            c = b.CreateString(custom) if custom is not None else None
            b.StartObject(4)
            b.PrependInt8Slot(0, min(builtin, 127), 0)
            if c is not None:
                b.PrependUOffsetTRelativeSlot(1, c, 0)
            b.PrependInt32Slot(2, 1, 1)
            b.PrependInt32Slot(3, builtin, 0)
            codes.append(b.EndObject())
        cv, sv, bv = table_vector(codes), table_vector(subgraphs), table_vector(buffers)
        b.StartObject(8)
        b.PrependUint32Slot(0, 3, 0)
        b.PrependUOffsetTRelativeSlot(1, cv, 0)
        b.PrependUOffsetTRelativeSlot(2, sv, 0)
        b.PrependUOffsetTRelativeSlot(4, bv, 0)
        model = b.EndObject()
        b.Finish(model, file_identifier=b"TFL3")
        return bytes(b.Output())
