// ONNX's sequence and optional operators, over values encoded as in weft/sequence.h:
//   SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
//   ConcatFromSequence, SplitToSequence, Optional, OptionalHasElement, OptionalGetElement.
// A result's size follows from its inputs' shapes where the op only adds (SequenceConstruct,
// SequenceInsert, Optional), so those stay static; the others read the sequence's contents and
// infer their shapes when they run. Every input value is checked in full before it is read.
#include <cstring>

#include "op_util.h"
#include "weft/sequence.h"

namespace weft::ops {
namespace {

// Parses input instance `k` as a sequence or optional value.
graphStatus ParseValue(const KernelContextBase* ctx, size_t k, ValueView* v) {
  const Tensor* t = ctx->GetInputTensor(k);
  std::string why;
  if (!t || !t->GetAddr()) return Fail(ctx, "input " + std::to_string(k) + " has no data");
  if (t->GetShape().GetDimNum() != 1) return Fail(ctx, "input " + std::to_string(k) + " is not an encoded value (shape " + t->GetShape().ToString() + ")");
  if (!v->Parse(t->GetAddr(), static_cast<uint64_t>(t->GetByteCount()), t->GetDataType(), &why))
    return Fail(ctx, "input " + std::to_string(k) + ": " + why);
  return GRAPH_SUCCESS;
}

// The record size of a tensor input, or 0 when its shape is not known yet.
uint64_t RecordOf(const Tensor* t) {
  const Shape& s = t->GetShape();
  uint64_t bytes = 0;
  if (s.IsUnknown() || !s.GetCheckedBytes(DataTypeSize(t->GetDataType()), &bytes)) return 0;
  return ValueRecordBytes(static_cast<int64_t>(s.GetDimNum()), bytes);
}

// A one-element integer input (a position) into *out; false when absent or not yet known.
graphStatus ReadPosition(const KernelContextBase* ctx, const Tensor* t, int64_t* out) {
  std::vector<int64_t> v;
  if (!ReadInts(t, &v) || v.size() != 1)
    return Fail(ctx, "the position must be one int32 or int64 value, got shape " + t->GetShape().ToString());
  *out = v[0];
  return GRAPH_SUCCESS;
}

// Checks `pos` against a sequence of `n` elements ([-n, n-1], or [-n, n] for an insertion) and
// makes it non-negative.
graphStatus NormalizePosition(const KernelContextBase* ctx, int64_t* pos, int64_t n, bool insert) {
  int64_t hi = insert ? n : n - 1;
  if (*pos < -n || *pos > hi)
    return Fail(ctx, "position " + std::to_string(*pos) + " is outside [" + std::to_string(-n) + ", " + std::to_string(hi) +
                         "] for a sequence of " + std::to_string(n) + " tensor(s)");
  if (*pos < 0) *pos += n;
  return GRAPH_SUCCESS;
}

void SetBytes(Shape* s, uint64_t bytes) { *s = Shape({static_cast<int64_t>(bytes)}); }

Tensor* MallocBytes(EagerOpExecutionContext* ctx, size_t k, uint64_t bytes, DataType type) {
  return ctx->MallocOutputTensor(k, Shape({static_cast<int64_t>(bytes)}), type);
}

class SequenceEmpty : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType* t = ctx->GetAttrs()->GetDataType("dtype");
    if (!t || !IsTensorType(*t)) return Fail(ctx, "attribute 'dtype' must name a tensor element type");
    return ctx->SetOutputDataType(0, SequenceOf(*t));
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    SetBytes(ctx->GetOutputShape(0), kValueHeaderBytes);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    DataType type = SequenceOf(*ctx->GetAttrs()->GetDataType("dtype"));
    Tensor* y = MallocBytes(ctx, 0, kValueHeaderBytes, type);
    if (!y) return GRAPH_FAILED;
    WriteValueHeader(static_cast<uint8_t*>(y->GetAddr()), type, 0);
    return GRAPH_SUCCESS;
  }
};

class SequenceConstruct : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    size_t n = ctx->GetComputeNodeInputNum();
    if (n == 0) return Fail(ctx, "needs at least one tensor");
    DataType t = ctx->GetInputDataType(0);
    for (size_t k = 1; k < n; ++k)
      if (ctx->GetInputDataType(k) != t)
        return Fail(ctx, "a sequence holds tensors of one type: input 0 is " + std::string(DataTypeName(t)) + ", input " +
                             std::to_string(k) + " is " + DataTypeName(ctx->GetInputDataType(k)));
    return ctx->SetOutputDataType(0, SequenceOf(t));
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    uint64_t bytes = kValueHeaderBytes;
    for (size_t k = 0; k < ctx->GetComputeNodeInputNum(); ++k) {
      uint64_t r = RecordOf(ctx->GetInputTensor(k));
      if (r == 0) {
        MarkUnknown(ctx->GetOutputShape(0));
        return GRAPH_SUCCESS;
      }
      bytes += r;
    }
    SetBytes(ctx->GetOutputShape(0), bytes);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    size_t n = ctx->GetComputeNodeInputNum();
    uint64_t bytes = kValueHeaderBytes;
    for (size_t k = 0; k < n; ++k) bytes += RecordOf(ctx->GetInputTensor(k));
    DataType type = SequenceOf(ctx->GetInputDataType(0));
    Tensor* y = MallocBytes(ctx, 0, bytes, type);
    if (!y) return GRAPH_FAILED;
    uint8_t* p = WriteValueHeader(static_cast<uint8_t*>(y->GetAddr()), type, n);
    for (size_t k = 0; k < n; ++k) {
      const Tensor* x = ctx->GetInputTensor(k);
      p = WriteValueRecord(p, x->GetDataType(), x->GetShape(), x->GetAddr(), x->GetByteCount());
    }
    return GRAPH_SUCCESS;
  }
};

class SequenceInsert : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    DataType s = ctx->GetInputDataType(0), t = ctx->GetInputDataType(1);
    if (ElementTypeOf(s) != t)
      return Fail(ctx, "cannot insert a " + std::string(DataTypeName(t)) + " tensor into a " + DataTypeName(s));
    return ctx->SetOutputDataType(0, s);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s = ctx->GetInputTensor(0)->GetShape();
    uint64_t r = RecordOf(ctx->GetInputTensor(1));
    if (s.IsUnknown() || s.GetDimNum() != 1 || r == 0) MarkUnknown(ctx->GetOutputShape(0));
    else SetBytes(ctx->GetOutputShape(0), static_cast<uint64_t>(s.GetDim(0)) + r);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    ValueView seq;
    if (ParseValue(ctx, 0, &seq) != GRAPH_SUCCESS) return GRAPH_FAILED;
    int64_t n = static_cast<int64_t>(seq.size()), pos = n;
    if (ctx->GetComputeNodeInputNum() > 2) {
      if (ReadPosition(ctx, ctx->GetInputTensor(2), &pos) != GRAPH_SUCCESS) return GRAPH_FAILED;
      if (NormalizePosition(ctx, &pos, n, true) != GRAPH_SUCCESS) return GRAPH_FAILED;
    }
    const Tensor* x = ctx->GetInputTensor(1);
    const Tensor* in = ctx->GetInputTensor(0);
    Tensor* y = MallocBytes(ctx, 0, static_cast<uint64_t>(in->GetByteCount()) + RecordOf(x), seq.type());
    if (!y) return GRAPH_FAILED;
    uint8_t* p = WriteValueHeader(static_cast<uint8_t*>(y->GetAddr()), seq.type(), static_cast<uint64_t>(n + 1));
    for (int64_t k = 0; k <= n; ++k) {
      if (k == pos) p = WriteValueRecord(p, x->GetDataType(), x->GetShape(), x->GetAddr(), x->GetByteCount());
      if (k == n) break;
      std::memcpy(p, seq[k].begin, seq[k].record_bytes);
      p += seq[k].record_bytes;
    }
    return GRAPH_SUCCESS;
  }
};

// SequenceAt and SequenceErase: both pick an element by position.
template <bool kErase>
class SequencePick : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    DataType s = ctx->GetInputDataType(0);
    return ctx->SetOutputDataType(0, kErase ? s : ElementTypeOf(s));
  }
  // The element's index, reading the position input (or the last element for an erase without one).
  graphStatus Pick(const KernelContextBase* ctx, const ValueView& seq, int64_t* pos) const {
    int64_t n = static_cast<int64_t>(seq.size());
    if (n == 0) return Fail(ctx, kErase ? "cannot erase from an empty sequence" : "the sequence is empty");
    *pos = n - 1;
    if (ctx->GetComputeNodeInputNum() > 1 && ReadPosition(ctx, ctx->GetInputTensor(1), pos) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return NormalizePosition(ctx, pos, n, false);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Tensor* s = ctx->GetInputTensor(0);
    bool known = s->GetAddr() && (ctx->GetComputeNodeInputNum() < 2 || ctx->GetInputTensor(1)->GetAddr());
    if (!known) {
      MarkUnknown(ctx->GetOutputShape(0));  // the element's shape is known when it runs
      return GRAPH_SUCCESS;
    }
    ValueView seq;
    int64_t pos = 0;
    if (ParseValue(ctx, 0, &seq) != GRAPH_SUCCESS || Pick(ctx, seq, &pos) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (kErase) SetBytes(ctx->GetOutputShape(0), static_cast<uint64_t>(s->GetByteCount()) - seq[pos].record_bytes);
    else *ctx->GetOutputShape(0) = seq[pos].shape;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    ValueView seq;
    int64_t pos = 0;
    if (ParseValue(ctx, 0, &seq) != GRAPH_SUCCESS || Pick(ctx, seq, &pos) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const ValueRecord& r = seq[pos];
    if (!kErase) {
      Tensor* y = ctx->MallocOutputTensor(0, r.shape, r.dtype);
      if (!y) return GRAPH_FAILED;
      if (r.nbytes) std::memcpy(y->GetAddr(), r.data, r.nbytes);
      return GRAPH_SUCCESS;
    }
    uint64_t bytes = static_cast<uint64_t>(ctx->GetInputTensor(0)->GetByteCount()) - r.record_bytes;
    Tensor* y = MallocBytes(ctx, 0, bytes, seq.type());
    if (!y) return GRAPH_FAILED;
    uint8_t* p = WriteValueHeader(static_cast<uint8_t*>(y->GetAddr()), seq.type(), seq.size() - 1);
    for (size_t k = 0; k < seq.size(); ++k) {
      if (static_cast<int64_t>(k) == pos) continue;
      std::memcpy(p, seq[k].begin, seq[k].record_bytes);
      p += seq[k].record_bytes;
    }
    return GRAPH_SUCCESS;
  }
};

class SequenceLength : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_INT64); }
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = Shape();
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    ValueView seq;
    if (ParseValue(ctx, 0, &seq) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, Shape(), DT_INT64);
    if (!y) return GRAPH_FAILED;
    *y->GetData<int64_t>() = static_cast<int64_t>(seq.size());
    return GRAPH_SUCCESS;
  }
};

class ConcatFromSequence : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    return ctx->SetOutputDataType(0, ElementTypeOf(ctx->GetInputDataType(0)));
  }
  // The output shape and the axis (non-negative, in the output's rank).
  graphStatus Plan(const KernelContextBase* ctx, const ValueView& seq, Shape* out, int64_t* axis_out) const {
    if (seq.size() == 0) return Fail(ctx, "the sequence is empty; there is nothing to concatenate");
    bool new_axis = *ctx->GetAttrs()->GetInt("new_axis") != 0;
    int64_t axis = *ctx->GetAttrs()->GetInt("axis");
    const Shape& first = seq[0].shape;
    int64_t rank = static_cast<int64_t>(first.GetDimNum()) + (new_axis ? 1 : 0);
    if (rank == 0) return Fail(ctx, "cannot concatenate scalars without new_axis=1");
    if (rank > WEFT_MAX_DIMS) return Fail(ctx, "the result would have more than 8 dims");
    if (!NormalizeAxis(axis, rank, &axis)) return Fail(ctx, AxisError(axis, rank));
    *out = first;
    if (new_axis) {
      Shape s;
      for (int64_t d = 0; d < rank; ++d) s.AppendDim(d == axis ? 0 : first.GetDim(static_cast<size_t>(d < axis ? d : d - 1)));
      *out = s;
    } else {
      out->SetDim(static_cast<size_t>(axis), 0);
    }
    int64_t total = 0;
    for (size_t k = 0; k < seq.size(); ++k) {
      const Shape& s = seq[k].shape;
      bool same = s.GetDimNum() == first.GetDimNum();
      for (size_t d = 0; same && d < s.GetDimNum(); ++d)
        same = s.GetDim(d) == first.GetDim(d) || (!new_axis && static_cast<int64_t>(d) == axis);
      if (!same)
        return Fail(ctx, "tensor " + std::to_string(k) + " has shape " + s.ToString() + ", which does not " +
                             (new_axis ? "equal" : "match off the axis") + " tensor 0's " + first.ToString());
      if (__builtin_add_overflow(total, new_axis ? 1 : s.GetDim(static_cast<size_t>(axis)), &total))
        return Fail(ctx, "the concatenated axis would be longer than 2^63");
    }
    out->SetDim(static_cast<size_t>(axis), total);
    uint64_t bytes = 0;
    if (!out->GetCheckedBytes(DataTypeSize(seq[0].dtype), &bytes))
      return Fail(ctx, "the result would have shape " + out->ToString() + ", larger than any tensor can be");
    *axis_out = axis;
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    if (!ctx->GetInputTensor(0)->GetAddr()) {
      MarkUnknown(ctx->GetOutputShape(0));
      return GRAPH_SUCCESS;
    }
    ValueView seq;
    int64_t axis = 0;
    if (ParseValue(ctx, 0, &seq) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return Plan(ctx, seq, ctx->GetOutputShape(0), &axis);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    ValueView seq;
    Shape out;
    int64_t axis = 0;
    if (ParseValue(ctx, 0, &seq) != GRAPH_SUCCESS || Plan(ctx, seq, &out, &axis) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, out, seq[0].dtype);
    if (!y) return GRAPH_FAILED;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out.GetDim(static_cast<size_t>(d));
    uint64_t row = y->GetByteCount() / static_cast<uint64_t>(outer ? outer : 1);  // bytes per outer index
    auto* dst = static_cast<uint8_t*>(y->GetAddr());
    uint64_t at = 0;
    for (size_t k = 0; k < seq.size(); ++k) {
      uint64_t chunk = outer ? seq[k].nbytes / static_cast<uint64_t>(outer) : 0;  // this tensor's part of a row
      for (int64_t o = 0; o < outer && chunk; ++o) std::memcpy(dst + o * row + at, seq[k].data + o * chunk, chunk);
      at += chunk;
    }
    return GRAPH_SUCCESS;
  }
};

class SplitToSequence : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    return ctx->SetOutputDataType(0, SequenceOf(ctx->GetInputDataType(0)));
  }
  // The pieces' lengths along the axis, and whether the axis is dropped.
  graphStatus Plan(const KernelContextBase* ctx, std::vector<int64_t>* lens, int64_t* axis_out, bool* drop) const {
    const Shape& s = ctx->GetInputTensor(0)->GetShape();
    int64_t rank = static_cast<int64_t>(s.GetDimNum()), axis = *ctx->GetAttrs()->GetInt("axis");
    if (!NormalizeAxis(axis, rank, &axis)) return Fail(ctx, AxisError(axis, rank));
    int64_t dim = s.GetDim(static_cast<size_t>(axis));
    lens->clear();
    *drop = false;
    const Tensor* split = ctx->GetComputeNodeInputNum() > 1 ? ctx->GetInputTensor(1) : nullptr;
    if (!split || (split->GetShape().GetDimNum() == 1 && split->GetShape().GetDim(0) == 0)) {  // none, or empty: pieces of 1
      lens->assign(static_cast<size_t>(dim), 1);
      *drop = *ctx->GetAttrs()->GetInt("keepdims") == 0;
    } else {
      std::vector<int64_t> v;
      if (!ReadInts(split, &v)) return Fail(ctx, "input 'split' must be int32 or int64");
      if (split->GetShape().GetDimNum() == 0) {
        if (v[0] <= 0) return Fail(ctx, "a scalar 'split' must be positive, got " + std::to_string(v[0]));
        for (int64_t at = 0; at < dim; at += v[0]) lens->push_back(std::min(v[0], dim - at));
      } else if (split->GetShape().GetDimNum() == 1) {
        int64_t sum = 0;
        for (int64_t x : v) {
          if (x < 0) return Fail(ctx, "'split' has a negative length " + std::to_string(x));
          sum += x;
          if (sum > dim) break;
        }
        if (sum != dim)
          return Fail(ctx, "the lengths in 'split' must add up to the axis' extent " + std::to_string(dim));
        *lens = v;
      } else {
        return Fail(ctx, "'split' must be a scalar or 1-D, got shape " + split->GetShape().ToString());
      }
    }
    *axis_out = axis;
    return GRAPH_SUCCESS;
  }
  Shape PieceShape(const Shape& s, int64_t axis, int64_t len, bool drop) const {
    Shape p;
    for (size_t d = 0; d < s.GetDimNum(); ++d) {
      if (static_cast<int64_t>(d) != axis) p.AppendDim(s.GetDim(d));
      else if (!drop) p.AppendDim(len);
    }
    return p;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* split = ctx->GetComputeNodeInputNum() > 1 ? ctx->GetInputTensor(1) : nullptr;
    if (x->GetShape().IsUnknown() || (split && !split->GetAddr())) {
      MarkUnknown(ctx->GetOutputShape(0));
      return GRAPH_SUCCESS;
    }
    std::vector<int64_t> lens;
    int64_t axis = 0;
    bool drop = false;
    if (x->GetShape().GetDimNum() == 0) return Fail(ctx, "cannot split a scalar");
    if (Plan(ctx, &lens, &axis, &drop) != GRAPH_SUCCESS) return GRAPH_FAILED;
    uint64_t bytes = kValueHeaderBytes;
    size_t esize = DataTypeSize(x->GetDataType());
    for (int64_t len : lens) {
      Shape p = PieceShape(x->GetShape(), axis, len, drop);
      uint64_t nb = 0;
      p.GetCheckedBytes(esize, &nb);
      bytes += ValueRecordBytes(static_cast<int64_t>(p.GetDimNum()), nb);
    }
    SetBytes(ctx->GetOutputShape(0), bytes);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& s = x->GetShape();
    if (s.GetDimNum() == 0) return Fail(ctx, "cannot split a scalar");
    std::vector<int64_t> lens;
    int64_t axis = 0;
    bool drop = false;
    if (Plan(ctx, &lens, &axis, &drop) != GRAPH_SUCCESS) return GRAPH_FAILED;
    size_t esize = DataTypeSize(x->GetDataType());
    int64_t outer = 1, inner = 1, dim = s.GetDim(static_cast<size_t>(axis));
    for (int64_t d = 0; d < axis; ++d) outer *= s.GetDim(static_cast<size_t>(d));
    for (size_t d = static_cast<size_t>(axis) + 1; d < s.GetDimNum(); ++d) inner *= s.GetDim(d);
    uint64_t bytes = kValueHeaderBytes;
    for (int64_t len : lens)
      bytes += ValueRecordBytes(static_cast<int64_t>(PieceShape(s, axis, len, drop).GetDimNum()),
                                static_cast<uint64_t>(outer * len * inner) * esize);
    DataType type = SequenceOf(x->GetDataType());
    Tensor* y = MallocBytes(ctx, 0, bytes, type);
    if (!y) return GRAPH_FAILED;
    uint8_t* p = WriteValueHeader(static_cast<uint8_t*>(y->GetAddr()), type, lens.size());
    const auto* src = static_cast<const uint8_t*>(x->GetAddr());
    int64_t start = 0;
    for (int64_t len : lens) {
      Shape piece = PieceShape(s, axis, len, drop);
      uint64_t nb = static_cast<uint64_t>(outer * len * inner) * esize;
      // The record's header, then its rows gathered in place.
      uint8_t* data = WriteValueRecord(p, x->GetDataType(), piece, nullptr, 0) - 8;
      std::memcpy(data, &nb, 8);
      data += 8;
      uint64_t chunk = static_cast<uint64_t>(len * inner) * esize;
      for (int64_t o = 0; o < outer && chunk; ++o)
        std::memcpy(data + o * chunk, src + (static_cast<uint64_t>(o * dim + start) * inner) * esize, chunk);
      if (ValuePad8(nb) > nb) std::memset(data + nb, 0, ValuePad8(nb) - nb);
      p = data + ValuePad8(nb);
      start += len;
    }
    return GRAPH_SUCCESS;
  }
};

// Optional(input?) with attribute 'type' for an empty one.
class Optional : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (ctx->GetComputeNodeInputNum() > 0) return ctx->SetOutputDataType(0, OptionalOf(ctx->GetInputDataType(0)));
    const DataType* t = ctx->GetAttrs()->GetDataType("type");
    if (t && IsOptionalType(*t)) return Fail(ctx, std::string("attribute 'type' is ") + DataTypeName(*t) + "; an optional of an optional is not supported");
    if (!t || !(IsTensorType(*t) || IsSequenceType(*t)))
      return Fail(ctx, "an Optional without an input needs attribute 'type' (a tensor or sequence type)");
    return ctx->SetOutputDataType(0, OptionalOf(*t));
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    if (ctx->GetComputeNodeInputNum() == 0) {
      SetBytes(ctx->GetOutputShape(0), kValueHeaderBytes);
      return GRAPH_SUCCESS;
    }
    const Tensor* x = ctx->GetInputTensor(0);
    uint64_t r = IsSequenceType(x->GetDataType()) ? (x->GetShape().IsUnknown() ? 0 : ValueRecordBytes(1, x->GetByteCount()))
                                                   : RecordOf(x);
    if (r == 0) MarkUnknown(ctx->GetOutputShape(0));
    else SetBytes(ctx->GetOutputShape(0), kValueHeaderBytes + r);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    DataType type;
    if (ctx->GetComputeNodeInputNum() == 0) {
      type = OptionalOf(*ctx->GetAttrs()->GetDataType("type"));
      Tensor* y = MallocBytes(ctx, 0, kValueHeaderBytes, type);
      if (!y) return GRAPH_FAILED;
      WriteValueHeader(static_cast<uint8_t*>(y->GetAddr()), type, 0);
      return GRAPH_SUCCESS;
    }
    const Tensor* x = ctx->GetInputTensor(0);
    if (IsSequenceType(x->GetDataType())) {
      ValueView check;
      if (ParseValue(ctx, 0, &check) != GRAPH_SUCCESS) return GRAPH_FAILED;
    }
    type = OptionalOf(x->GetDataType());
    Tensor* y = MallocBytes(ctx, 0, kValueHeaderBytes + ValueRecordBytes(static_cast<int64_t>(x->GetShape().GetDimNum()), x->GetByteCount()), type);
    if (!y) return GRAPH_FAILED;
    uint8_t* p = WriteValueHeader(static_cast<uint8_t*>(y->GetAddr()), type, 1);
    WriteValueRecord(p, x->GetDataType(), x->GetShape(), x->GetAddr(), x->GetByteCount());
    return GRAPH_SUCCESS;
  }
};

class OptionalHasElement : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_BOOL); }
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = Shape();
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    bool has = false;
    if (ctx->GetComputeNodeInputNum() > 0) {
      has = true;  // a tensor or a sequence is there
      if (IsOptionalType(ctx->GetInputDataType(0))) {
        ValueView v;
        if (ParseValue(ctx, 0, &v) != GRAPH_SUCCESS) return GRAPH_FAILED;
        has = v.size() == 1;
      }
    }
    Tensor* y = ctx->MallocOutputTensor(0, Shape(), DT_BOOL);
    if (!y) return GRAPH_FAILED;
    *y->GetData<uint8_t>() = has ? 1 : 0;
    return GRAPH_SUCCESS;
  }
};

class OptionalGetElement : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    DataType t = ctx->GetInputDataType(0);
    return ctx->SetOutputDataType(0, IsOptionalType(t) ? ElementTypeOf(t) : t);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (!IsOptionalType(x->GetDataType())) {
      *ctx->GetOutputShape(0) = x->GetShape();
      return GRAPH_SUCCESS;
    }
    if (!x->GetAddr()) {
      MarkUnknown(ctx->GetOutputShape(0));
      return GRAPH_SUCCESS;
    }
    ValueView v;
    if (ParseValue(ctx, 0, &v) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (v.size() == 0) return Fail(ctx, "the optional input is empty; guard the read with OptionalHasElement");
    *ctx->GetOutputShape(0) = v[0].shape;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const void* src = x->GetAddr();
    Shape shape = x->GetShape();
    uint64_t bytes = x->GetByteCount();
    DataType type = x->GetDataType();
    ValueView v;
    if (IsOptionalType(type)) {
      if (ParseValue(ctx, 0, &v) != GRAPH_SUCCESS) return GRAPH_FAILED;
      if (v.size() == 0) return Fail(ctx, "the optional input is empty; guard the read with OptionalHasElement");
      src = v[0].data;
      shape = v[0].shape;
      bytes = v[0].nbytes;
      type = v[0].dtype;
    }
    Tensor* y = ctx->MallocOutputTensor(0, shape, type);
    if (!y) return GRAPH_FAILED;
    if (bytes && y->GetAddr() != src) std::memcpy(y->GetAddr(), src, bytes);
    return GRAPH_SUCCESS;
  }
};

TensorType TensorsAndSequences() {
  const TensorType seqs = TensorType::Sequences();
  std::vector<DataType> t = TensorType::ALL().types();
  t.insert(t.end(), seqs.types().begin(), seqs.types().end());
  return TensorType(std::move(t));
}

}  // namespace

void WeftRegister_sequence(std::vector<OpEntry>& out) {
  const TensorType pos({DT_INT32, DT_INT64});
  out.push_back({OpDefBuilder("SequenceEmpty").OUTPUT(output, TensorType::Sequences()).ATTR(dtype, Type, DT_FLOAT).Build(),
                 MakeOpImpl<SequenceEmpty>("SequenceEmpty")});
  out.push_back({OpDefBuilder("SequenceConstruct").DYNAMIC_INPUT(inputs, TensorType::ALL())
                     .OUTPUT(output_sequence, TensorType::Sequences()).Build(),
                 MakeOpImpl<SequenceConstruct>("SequenceConstruct")});
  out.push_back({OpDefBuilder("SequenceInsert").INPUT(input_sequence, TensorType::Sequences()).INPUT(tensor, TensorType::ALL())
                     .OPTIONAL_INPUT(position, pos).OUTPUT(output_sequence, TensorType::Sequences()).Build(),
                 MakeOpImpl<SequenceInsert>("SequenceInsert")});
  out.push_back({OpDefBuilder("SequenceAt").INPUT(input_sequence, TensorType::Sequences()).INPUT(position, pos)
                     .OUTPUT(tensor, TensorType::ALL()).Build(),
                 MakeOpImpl<SequencePick<false>>("SequenceAt")});
  out.push_back({OpDefBuilder("SequenceErase").INPUT(input_sequence, TensorType::Sequences()).OPTIONAL_INPUT(position, pos)
                     .OUTPUT(output_sequence, TensorType::Sequences()).Build(),
                 MakeOpImpl<SequencePick<true>>("SequenceErase")});
  out.push_back({OpDefBuilder("SequenceLength").INPUT(input_sequence, TensorType::Sequences())
                     .OUTPUT(length, TensorType({DT_INT64})).Build(),
                 MakeOpImpl<SequenceLength>("SequenceLength")});
  out.push_back({OpDefBuilder("ConcatFromSequence").INPUT(input_sequence, TensorType::Sequences())
                     .OUTPUT(concat_result, TensorType::ALL()).REQUIRED_ATTR(axis, Int).ATTR(new_axis, Int, 0).Build(),
                 MakeOpImpl<ConcatFromSequence>("ConcatFromSequence")});
  out.push_back({OpDefBuilder("SplitToSequence").INPUT(input, TensorType::ALL()).OPTIONAL_INPUT(split, pos)
                     .OUTPUT(output_sequence, TensorType::Sequences()).ATTR(axis, Int, 0).ATTR(keepdims, Int, 1).Build(),
                 MakeOpImpl<SplitToSequence>("SplitToSequence")});
  out.push_back({OpDefBuilder("Optional").OPTIONAL_INPUT(input, TensorsAndSequences()).OUTPUT(output, TensorType::Optionals())
                     .ATTR(type, Type, DT_UNDEFINED).Build(),
                 MakeOpImpl<Optional>("Optional")});
  out.push_back({OpDefBuilder("OptionalHasElement").OPTIONAL_INPUT(input, TensorType::AnyValue())
                     .OUTPUT(output, TensorType({DT_BOOL})).Build(),
                 MakeOpImpl<OptionalHasElement>("OptionalHasElement")});
  out.push_back({OpDefBuilder("OptionalGetElement").INPUT(input, TensorType::AnyValue()).OUTPUT(output, TensorsAndSequences()).Build(),
                 MakeOpImpl<OptionalGetElement>("OptionalGetElement")});
}

}  // namespace weft::ops
