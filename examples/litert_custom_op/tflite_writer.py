"""Writes small LiteRT (.tflite) models: one subgraph of float32/int tensors and operators.

    from tflite_writer import Model
    m = Model()
    x = m.tensor("x", [1, 4], "float32")                         # an input or intermediate
    w = m.tensor("w", [4, 4], "float32", data=np.ones((4, 4)))   # a constant
    y = m.tensor("y", [1, 4], "float32")
    m.builtin(9, [x, w, -1], [y])                                # FULLY_CONNECTED (no bias)
    m.custom("my-op", [y], [z], options=b"...")                  # a CUSTOM operator
    open("model.tflite", "wb").write(m.finish(inputs=[x], outputs=[z]))

Field ids follow the format's schema (Model, OperatorCode, SubGraph, Tensor, Operator, Buffer);
only what these examples and tests need is written. Uses the `flatbuffers` package.
"""
import flatbuffers
import numpy as np

TYPES = {"float32": 0, "int32": 2, "uint8": 3, "int64": 4, "bool": 6, "int16": 7, "int8": 9}
CUSTOM = 32


class Model:
    def __init__(self):
        self.tensors = []     # (name, shape, type, buffer index)
        self.buffers = [b""]  # buffer 0: the empty sentinel
        self.codes = []       # (builtin code, custom code)
        self.ops = []         # (code index, inputs, outputs, custom options)

    def tensor(self, name, shape, dtype, data=None, scale=None, zero_point=0, variable=False, quantized_dimension=0):
        """A tensor; `scale` (and `zero_point`) make it quantized: per tensor when they are numbers,
        per channel along `quantized_dimension` when they are lists; `variable` marks an operator's
        state (a variable tensor, updated in place by the operator that reads it)."""
        buf = 0
        if data is not None:
            self.buffers.append(np.ascontiguousarray(data, dtype=np.dtype(dtype)).tobytes())
            buf = len(self.buffers) - 1
        quant = None
        if scale is not None:
            scales = [float(v) for v in (scale if isinstance(scale, (list, tuple, np.ndarray)) else [scale])]
            zps = [int(v) for v in (zero_point if isinstance(zero_point, (list, tuple, np.ndarray)) else [zero_point])]
            quant = (scales, zps, quantized_dimension)
        self.tensors.append((name, list(shape), TYPES[dtype], buf, quant, variable))
        return len(self.tensors) - 1

    def _code(self, builtin, custom=None):
        key = (builtin, custom)
        if key not in self.codes:
            self.codes.append(key)
        return self.codes.index(key)

    def builtin(self, code, inputs, outputs, options=None, intermediates=None):
        """options: (BuiltinOptions type, [(field id, "bool" | "byte" | "int32" | "float", value), ...]);
        intermediates: tensors that only carry quantization (the integer LSTM's)."""
        self.ops.append((self._code(code), inputs, outputs, options, intermediates))

    def custom(self, custom_code, inputs, outputs, options=b""):
        self.ops.append((self._code(CUSTOM, custom_code), inputs, outputs, options, None))

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
        tensors = []
        for name, shape, ttype, buf, quant, variable in self.tensors:
            q = None
            if quant is not None:
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
        for code, ins, outs, options, intermediates in self.ops:
            i, o = ints(ins), ints(outs)
            im = ints(intermediates) if intermediates else None
            opt = b.CreateByteVector(bytes(options)) if isinstance(options, (bytes, bytearray)) and options else None
            table = None
            if isinstance(options, tuple):
                fields = options[1]
                b.StartObject(max([f[0] for f in fields] + [0]) + 1)
                for fid, kind, value in fields:
                    if kind == "bool":
                        b.PrependBoolSlot(fid, bool(value), False)
                    elif kind == "byte":
                        b.PrependInt8Slot(fid, int(value), -1)  # default -1: always written
                    elif kind == "int32":
                        b.PrependInt32Slot(fid, int(value), 0)
                    else:
                        b.PrependFloat32Slot(fid, float(value), 0.0)
                table = b.EndObject()
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
            ops.append(b.EndObject())
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
        tv, iv, ov, opv = table_vector(tensors), ints(inputs), ints(outputs), table_vector(ops)
        name = b.CreateString("main")
        b.StartObject(5)
        b.PrependUOffsetTRelativeSlot(0, tv, 0)
        b.PrependUOffsetTRelativeSlot(1, iv, 0)
        b.PrependUOffsetTRelativeSlot(2, ov, 0)
        b.PrependUOffsetTRelativeSlot(3, opv, 0)
        b.PrependUOffsetTRelativeSlot(4, name, 0)
        subgraph = b.EndObject()
        cv, sv, bv = table_vector(codes), table_vector([subgraph]), table_vector(buffers)
        b.StartObject(8)
        b.PrependUint32Slot(0, 3, 0)
        b.PrependUOffsetTRelativeSlot(1, cv, 0)
        b.PrependUOffsetTRelativeSlot(2, sv, 0)
        b.PrependUOffsetTRelativeSlot(4, bv, 0)
        model = b.EndObject()
        b.Finish(model, file_identifier=b"TFL3")
        return bytes(b.Output())
