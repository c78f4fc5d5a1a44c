// Shape manipulation: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Shape, Size, Expand, Tile,
// ConstantOfShape, Range. Ops whose output shape depends on an input value mark the shape unknown
// when that value is only known at run time; the engine then infers it per run.
#include <algorithm>
#include <numeric>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

// Ops whose output is the input bytes under a new shape.
class CopyExecute : public EagerExecuteOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override { return aot::EmitCopy(ctx); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    // The planner may place the output over an input that dies here (a view): nothing to copy.
    if (x->GetByteCount() && y->GetAddr() != x->GetAddr()) std::memcpy(y->GetAddr(), x->GetAddr(), x->GetByteCount());
    return GRAPH_SUCCESS;
  }
};

class Reshape : public CopyExecute, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    std::vector<int64_t> want;
    if (!ReadInts(ctx->GetInputTensor(1), &want)) {
      MarkUnknown(ctx->GetOutputShape(0), static_cast<size_t>(std::max<int64_t>(ctx->GetInputShape(1)->GetDim(0), 1)));
      return GRAPH_SUCCESS;
    }
    bool allowzero = *ctx->GetAttrs()->GetInt("allowzero") != 0;
    if (want.size() > WEFT_MAX_DIMS) return Fail(ctx, "target rank exceeds " + std::to_string(WEFT_MAX_DIMS));
    Shape out;
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < want.size(); ++k) {
      int64_t d = want[k];
      if (d == 0 && !allowzero) {
        if (k >= in.GetDimNum()) return Fail(ctx, "shape entry " + std::to_string(k) + " is 0 but the input has rank " + std::to_string(in.GetDimNum()));
        d = in.GetDim(k);
      }
      if (d == -1) {
        if (infer >= 0) return Fail(ctx, "more than one -1 in the target shape");
        infer = static_cast<int64_t>(k);
        d = 1;
      } else if (d < 0) {
        return Fail(ctx, "invalid target dim " + std::to_string(d));
      }
      out.AppendDim(d);
      if (__builtin_mul_overflow(known, d, &known)) return Fail(ctx, "the target shape " + Shape(want).ToString() + " overflows");
    }
    int64_t total = in.GetShapeSize();
    if (infer >= 0) {
      if (known == 0 || total % known != 0) return Fail(ctx, "cannot reshape " + in.ToString() + " with -1 in the target");
      out.SetDim(static_cast<size_t>(infer), total / known);
    } else if (known != total) {
      return Fail(ctx, "cannot reshape " + in.ToString() + " (" + std::to_string(total) + " elements) to " + out.ToString());
    }
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
};

class Flatten : public CopyExecute, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    int64_t r = static_cast<int64_t>(in.GetDimNum()), axis = *ctx->GetAttrs()->GetInt("axis");
    if (axis < -r || axis > r) return Fail(ctx, AxisError(axis, r));
    if (axis < 0) axis += r;
    int64_t a = 1, b = 1;
    for (int64_t k = 0; k < r; ++k) (k < axis ? a : b) *= in.GetDim(static_cast<size_t>(k));
    *ctx->GetOutputShape(0) = Shape({a, b});
    return GRAPH_SUCCESS;
  }
};

class Squeeze : public CopyExecute, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    int64_t r = static_cast<int64_t>(in.GetDimNum());
    std::vector<int64_t> axes;
    const Tensor* at = ctx->GetOptionalInputTensor(1);
    if (at && !ReadInts(at, &axes)) {
      MarkUnknown(ctx->GetOutputShape(0));
      return GRAPH_SUCCESS;
    }
    std::vector<bool> drop(static_cast<size_t>(r), false);
    if (!at) {
      for (int64_t k = 0; k < r; ++k) drop[k] = in.GetDim(k) == 1;
    } else {
      for (int64_t a : axes) {
        int64_t n;
        if (!NormalizeAxis(a, r, &n)) return Fail(ctx, AxisError(a, r));
        if (in.GetDim(n) != 1) return Fail(ctx, "cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(in.GetDim(n)));
        drop[n] = true;
      }
    }
    Shape out;
    for (int64_t k = 0; k < r; ++k)
      if (!drop[k]) out.AppendDim(in.GetDim(k));
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
};

class Unsqueeze : public CopyExecute, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    std::vector<int64_t> axes;
    if (!ReadInts(ctx->GetInputTensor(1), &axes)) {
      MarkUnknown(ctx->GetOutputShape(0));
      return GRAPH_SUCCESS;
    }
    int64_t r = static_cast<int64_t>(in.GetDimNum() + axes.size());
    if (r > WEFT_MAX_DIMS) return Fail(ctx, "result rank exceeds " + std::to_string(WEFT_MAX_DIMS));
    std::vector<bool> add(static_cast<size_t>(r), false);
    for (int64_t a : axes) {
      int64_t n;
      if (!NormalizeAxis(a, r, &n)) return Fail(ctx, AxisError(a, r));
      if (add[n]) return Fail(ctx, "axis " + std::to_string(a) + " repeated");
      add[n] = true;
    }
    Shape out;
    size_t src = 0;
    for (int64_t k = 0; k < r; ++k) out.AppendDim(add[k] ? 1 : in.GetDim(src++));
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
};

// A transpose whose input-contiguous dim b is not the output's last dim a (NCHW <-> NHWC, a
// matrix's transpose, heads swapped with tokens): for every index of the other dims, tiles of 32 x
// 32 elements, each read along b and written along a, so both sides stay in cache lines already
// loaded. False where it does not apply (no dim of input stride 1 among the others).
template <typename T>
void TransposeTiles(const KernelContextBase* ctx, const Shape& os, const int64_t* src_st, int a, int b, const T* px, T* py) {
  const int r = static_cast<int>(os.GetDimNum());
  int64_t out_st[WEFT_MAX_DIMS];
  Strides(os, out_st);
  const int64_t na = os.GetDim(static_cast<size_t>(a)), nb = os.GetDim(static_cast<size_t>(b));
  const int64_t sa = src_st[a], ob = out_st[b];
  constexpr int64_t kTile = 32;
  const int64_t tb = (nb + kTile - 1) / kTile, ta = (na + kTile - 1) / kTile;
  int64_t outer = 1;
  for (int k = 0; k < r; ++k)
    if (k != a && k != b) outer *= os.GetDim(static_cast<size_t>(k));
  ctx->ParallelFor(outer * tb * ta, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t w = lo; w < hi; ++w) {
      int64_t rest = w / (tb * ta);
      const int64_t ib = (w / ta) % tb, ia = w % ta;
      int64_t src = 0, dst = 0;
      for (int k = r - 1; k >= 0; --k) {  // the other dims' index, innermost first
        if (k == a || k == b) continue;
        const int64_t n = os.GetDim(static_cast<size_t>(k)), at = rest % n;
        rest /= n;
        src += at * src_st[k];
        dst += at * out_st[k];
      }
      const int64_t b0 = ib * kTile, b1 = std::min(nb, b0 + kTile), a0 = ia * kTile, a1 = std::min(na, a0 + kTile);
      for (int64_t i = b0; i < b1; ++i) {
        const T* s = px + src + i;
        T* d = py + dst + i * ob;
        for (int64_t j = a0; j < a1; ++j) d[j] = s[j * sa];
      }
    }
  });
}

bool TiledTranspose(const KernelContextBase* ctx, const Shape& os, const int64_t* src_st, size_t elem, const uint8_t* px, uint8_t* py) {
  const int r = static_cast<int>(os.GetDimNum());
  int b = -1;
  for (int k = 0; k < r - 1; ++k)
    if (src_st[k] == 1 && os.GetDim(static_cast<size_t>(k)) > 1) b = k;
  if (b < 0 || os.GetDim(static_cast<size_t>(r - 1)) < 4 || os.GetDim(static_cast<size_t>(b)) < 4) return false;
  switch (elem) {
    case 1: TransposeTiles(ctx, os, src_st, r - 1, b, px, py); return true;
    case 2: TransposeTiles(ctx, os, src_st, r - 1, b, reinterpret_cast<const uint16_t*>(px), reinterpret_cast<uint16_t*>(py)); return true;
    case 4: TransposeTiles(ctx, os, src_st, r - 1, b, reinterpret_cast<const uint32_t*>(px), reinterpret_cast<uint32_t*>(py)); return true;
    case 8: TransposeTiles(ctx, os, src_st, r - 1, b, reinterpret_cast<const uint64_t*>(px), reinterpret_cast<uint64_t*>(py)); return true;
    default: return false;
  }
}

class Transpose : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public LayoutAwareOp, public CompilableOp, public RebuildOnLoad {
 public:
  // 8-bit NCHW <-> NHWC transposes (the explicit permutes around a quantized model's convolutions):
  // NCHW data stored as pixel rows (the 8-bit convolutions' layout) is already the NHWC result, and
  // an NHWC input stored as pixel rows of its NCHW result, so those take the neighbours' layout and
  // copy bytes as they are.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (!x || x->GetShape().GetDimNum() != 4 || x->GetShape().IsUnknown() || (x->GetDataType() != DT_UINT8 && x->GetDataType() != DT_INT8))
      return GRAPH_SUCCESS;
    int64_t perm[WEFT_MAX_DIMS];
    std::string err;
    if (!Perm(ctx, 4, perm, &err)) return GRAPH_SUCCESS;
    if (perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1) s.Format(FORMAT_NHWC).Input(0);
    else if (perm[0] == 0 && perm[1] == 3 && perm[2] == 1 && perm[3] == 2) s.Format(FORMAT_NHWC).Output(0);
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override { return SetPlannedOutputStorage(ctx, DataTypeSize(ctx->GetOutputTensor(0)->GetDataType())); }
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    const size_t r = xs.GetDimNum();
    int64_t perm[WEFT_MAX_DIMS];
    std::string err;
    if (!Perm(ctx, r, perm, &err)) return Fail(ctx, err);
    std::vector<int64_t> dims, axis(perm, perm + r);
    for (size_t k = 0; k < r; ++k) dims.push_back(xs.GetDim(static_cast<size_t>(perm[k])));
    return aot::EmitStridedCopy(ctx, dims, axis, std::vector<int64_t>(r, 1), {});
  }
  static bool Perm(const KernelContextBase* ctx, size_t r, int64_t* perm, std::string* err) {
    ListView<int64_t> p = ctx->GetAttrs()->GetListInt("perm");
    if (p.size() == 0) {
      for (size_t k = 0; k < r; ++k) perm[k] = static_cast<int64_t>(r - 1 - k);
      return true;
    }
    if (p.size() != r) {
      *err = "perm has " + std::to_string(p.size()) + " entries for rank " + std::to_string(r);
      return false;
    }
    bool seen[WEFT_MAX_DIMS] = {false};
    for (size_t k = 0; k < r; ++k) {
      int64_t v = p[k];  // ONNX's perm has no negative entries
      if (v < 0 || v >= static_cast<int64_t>(r) || seen[v]) {
        *err = "perm is not a permutation of 0.." + std::to_string(r - 1);
        return false;
      }
      seen[v] = true;
      perm[k] = v;
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    int64_t perm[WEFT_MAX_DIMS];
    std::string err;
    if (!Perm(ctx, in.GetDimNum(), perm, &err)) return Fail(ctx, err);
    Shape out;
    for (size_t k = 0; k < in.GetDimNum(); ++k) out.AppendDim(in.GetDim(static_cast<size_t>(perm[k])));
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (x->GetFormat() == FORMAT_NHWC || y->GetFormat() == FORMAT_NHWC) {  // QueryLayout: the bytes are the result's
      std::memcpy(y->GetAddr(), x->GetAddr(), static_cast<size_t>(x->GetShapeSize()) * DataTypeSize(x->GetDataType()));
      return GRAPH_SUCCESS;
    }
    const Shape& in = x->GetShape();
    size_t r = in.GetDimNum();
    int64_t perm[WEFT_MAX_DIMS], st[WEFT_MAX_DIMS], src_st[WEFT_MAX_DIMS];
    std::string err;
    if (!Perm(ctx, r, perm, &err)) return Fail(ctx, err);
    Strides(in, st);
    for (size_t k = 0; k < r; ++k) src_st[k] = st[perm[k]];
    const Shape& os = y->GetShape();
    size_t elem = DataTypeSize(x->GetDataType());
    const uint8_t* px = x->GetData<uint8_t>();
    uint8_t* py = y->GetData<uint8_t>();
    int64_t total = os.GetShapeSize();
    if (total == 0) return GRAPH_SUCCESS;
    if (r == 0) {
      CopyElem(py, px, elem);
      return GRAPH_SUCCESS;
    }
    // Output rows (the last output dim) start at computed source offsets; a row whose source is
    // contiguous (the last dim stays last) is one memcpy.
    int64_t last = os.GetDim(r - 1), step = src_st[r - 1];
    if (step != 1 && TiledTranspose(ctx, os, src_st, elem, px, py)) return GRAPH_SUCCESS;
    ForRows(ctx, total / last, last, [&](int64_t lo, int64_t hi) {
      int64_t idx[WEFT_MAX_DIMS] = {0}, off = 0, rem = lo;
      for (size_t k = r - 1; k-- > 0;) {
        idx[k] = rem % os.GetDim(k);
        rem /= os.GetDim(k);
        off += idx[k] * src_st[k];
      }
      for (int64_t row = lo; row < hi; ++row) {
        uint8_t* dst = py + row * last * static_cast<int64_t>(elem);
        const uint8_t* src = px + off * static_cast<int64_t>(elem);
        if (step == 1) {
          std::memcpy(dst, src, static_cast<size_t>(last) * elem);
        } else if (elem == 4) {
          for (int64_t j = 0; j < last; ++j) std::memcpy(dst + 4 * j, src + 4 * j * step, 4);
        } else {
          for (int64_t j = 0; j < last; ++j) CopyElem(dst + j * static_cast<int64_t>(elem), src + j * step * static_cast<int64_t>(elem), elem);
        }
        for (size_t k = r - 1; k-- > 0;) {
          off += src_st[k];
          if (++idx[k] < os.GetDim(k)) break;
          off -= src_st[k] * idx[k];
          idx[k] = 0;
        }
      }
    });
    return GRAPH_SUCCESS;
  }
};

class ShapeOp : public EagerExecuteOp, public ShapeInferOp {
 public:
  static void Range(const KernelContextBase* ctx, int64_t r, int64_t* b, int64_t* e) {
    *b = *ctx->GetAttrs()->GetInt("start");
    const int64_t* end = ctx->GetAttrs()->GetInt("end");
    *e = *end == INT64_MAX ? r : *end;
    if (*b < 0) *b += r;
    if (*e < 0) *e += r;
    *b = std::clamp<int64_t>(*b, 0, r);
    *e = std::clamp<int64_t>(*e, 0, r);
    if (*e < *b) *e = *b;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t b, e;
    Range(ctx, static_cast<int64_t>(ctx->GetInputShape(0)->GetDimNum()), &b, &e);
    *ctx->GetOutputShape(0) = Shape({e - b});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_INT64); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Shape& in = ctx->GetInputTensor(0)->GetShape();
    int64_t b, e;
    Range(ctx, static_cast<int64_t>(in.GetDimNum()), &b, &e);
    Tensor* y = ctx->MallocOutputTensor(0, Shape({e - b}), DT_INT64);
    if (!y) return GRAPH_FAILED;
    for (int64_t k = b; k < e; ++k) y->GetData<int64_t>()[k - b] = in.GetDim(static_cast<size_t>(k));
    return GRAPH_SUCCESS;
  }
};

class Size : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override { *ctx->GetOutputShape(0) = Shape(); return GRAPH_SUCCESS; }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_INT64); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Tensor* y = ctx->MallocOutputTensor(0, Shape(), DT_INT64);
    if (!y) return GRAPH_FAILED;
    *y->GetData<int64_t>() = ctx->GetInputTensor(0)->GetShapeSize();
    return GRAPH_SUCCESS;
  }
};

// Broadcast-copies x into y (y's shape is a broadcast of x's).
void BroadcastCopy(const Tensor* x, Tensor* y) {
  size_t elem = DataTypeSize(x->GetDataType());
  const uint8_t* px = x->GetData<uint8_t>();
  uint8_t* py = y->GetData<uint8_t>();
  ForEachBroadcast(x->GetShape(), x->GetShape(), y->GetShape(),
                   [&](int64_t i, int64_t ia, int64_t) { CopyElem(py + i * elem, px + ia * elem, elem); });
}

class Expand : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // A gather whose broadcast axes step 0 through the input.
  graphStatus Emit(EmitContext* ctx) override {
    const Shape& xs = ctx->GetInputTensor(0)->GetShape();
    const Shape& ys = ctx->GetOutputTensor(0)->GetShape();
    const size_t rx = xs.GetDimNum(), ry = ys.GetDimNum();
    std::vector<int64_t> dims, src(ry, 0), in_stride(rx, 1);
    for (size_t k = rx; k-- > 1;) in_stride[k - 1] = in_stride[k] * xs.GetDim(k);
    for (size_t k = 0; k < ry; ++k) {
      dims.push_back(ys.GetDim(k));
      if (k + rx >= ry && xs.GetDim(k + rx - ry) != 1) src[k] = in_stride[k + rx - ry];
    }
    return aot::EmitGather(ctx, dims, src, 0);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    std::vector<int64_t> want;
    if (!ReadInts(ctx->GetInputTensor(1), &want)) {
      MarkUnknown(ctx->GetOutputShape(0), static_cast<size_t>(std::max<int64_t>(ctx->GetInputShape(1)->GetDim(0), 1)));
      return GRAPH_SUCCESS;
    }
    if (want.size() > WEFT_MAX_DIMS) return Fail(ctx, "target rank exceeds " + std::to_string(WEFT_MAX_DIMS));
    if (!BroadcastShape(*ctx->GetInputShape(0), Shape(want), ctx->GetOutputShape(0)))
      return Fail(ctx, "cannot expand " + ctx->GetInputShape(0)->ToString() + " to " + Shape(want).ToString() +
                           ": the shapes do not broadcast");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    BroadcastCopy(x, y);
    return GRAPH_SUCCESS;
  }
};

class Tile : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // A strided copy over [r0, d0, r1, d1, ...]: each repeat axis walks its input axis with step 0
  // (axes repeated once are left out).
  graphStatus Emit(EmitContext* ctx) override {
    const Shape& in = ctx->GetInputTensor(0)->GetShape();
    const Shape& os = ctx->GetOutputTensor(0)->GetShape();
    if (os.GetShapeSize() == 0) return GRAPH_SUCCESS;
    std::vector<int64_t> dims, axis, step;
    for (size_t a = 0; a < in.GetDimNum(); ++a) {
      const int64_t d = in.GetDim(a), r = d ? os.GetDim(a) / d : 0;
      if (r > 1) dims.push_back(r), axis.push_back(static_cast<int64_t>(a)), step.push_back(0);
      dims.push_back(d), axis.push_back(static_cast<int64_t>(a)), step.push_back(1);
    }
    if (dims.size() > 8) return Fail(ctx, "the generated C tiles at most 8 axes (input axes plus repeated ones); this Tile needs " +
                                     std::to_string(dims.size()));
    return aot::EmitStridedCopy(ctx, dims, axis, step, {});
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    std::vector<int64_t> rep;
    if (!ReadInts(ctx->GetInputTensor(1), &rep)) {
      MarkUnknown(ctx->GetOutputShape(0), std::max<size_t>(in.GetDimNum(), 1));
      return GRAPH_SUCCESS;
    }
    if (rep.size() != in.GetDimNum()) return Fail(ctx, "repeats has " + std::to_string(rep.size()) + " entries for rank " + std::to_string(in.GetDimNum()));
    Shape out;
    for (size_t k = 0; k < rep.size(); ++k) {
      if (rep[k] < 0) return Fail(ctx, "negative repeat");
      int64_t d = 0;
      if (__builtin_mul_overflow(in.GetDim(k), rep[k], &d))
        return Fail(ctx, "dim " + std::to_string(k) + " repeated " + std::to_string(rep[k]) + " times overflows");
      out.AppendDim(d);
    }
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const Shape& in = x->GetShape();
    const Shape& os = y->GetShape();
    size_t r = os.GetDimNum(), elem = DataTypeSize(x->GetDataType());
    int64_t st[WEFT_MAX_DIMS];
    Strides(in, st);
    for (int64_t i = 0; i < os.GetShapeSize(); ++i) {
      int64_t rem = i, src = 0;
      for (size_t k = r; k-- > 0;) {
        int64_t c = rem % os.GetDim(k);
        rem /= os.GetDim(k);
        src += (c % in.GetDim(k)) * st[k];
      }
      CopyElem(y->GetData<uint8_t>() + i * elem, x->GetData<uint8_t>() + src * elem, elem);
    }
    return GRAPH_SUCCESS;
  }
};

class ConstantOfShape : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    std::vector<int64_t> want;
    if (!ReadInts(ctx->GetInputTensor(0), &want)) {
      MarkUnknown(ctx->GetOutputShape(0), static_cast<size_t>(std::max<int64_t>(ctx->GetInputShape(0)->GetDim(0), 1)));
      return GRAPH_SUCCESS;
    }
    if (want.size() > WEFT_MAX_DIMS) return Fail(ctx, "rank exceeds " + std::to_string(WEFT_MAX_DIMS));
    for (int64_t d : want)
      if (d < 0) return Fail(ctx, "negative dim " + std::to_string(d));
    *ctx->GetOutputShape(0) = Shape(want);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const Tensor* v = ctx->GetAttrs()->GetTensor("value");
    return ctx->SetOutputDataType(0, v && v->GetShapeSize() == 1 ? v->GetDataType() : DT_FLOAT);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* v = ctx->GetAttrs()->GetTensor("value");
    bool has = v && v->GetShapeSize() == 1;
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), has ? v->GetDataType() : DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    size_t elem = DataTypeSize(y->GetDataType());
    uint8_t zero[8] = {0};
    const uint8_t* src = has ? v->GetData<uint8_t>() : zero;
    for (int64_t i = 0; i < y->GetShapeSize(); ++i) CopyElem(y->GetData<uint8_t>() + i * elem, src, elem);
    return GRAPH_SUCCESS;
  }
};

class Range : public EagerExecuteOp, public ShapeInferOp {
 public:
  static bool Count(const KernelContextBase* ctx, int64_t* n, std::string* err) {
    const Tensor* s = ctx->GetInputTensor(0);
    const Tensor* l = ctx->GetInputTensor(1);
    const Tensor* d = ctx->GetInputTensor(2);
    if (!s->GetAddr() || !l->GetAddr() || !d->GetAddr()) return false;
    double start = 0, limit = 0, delta = 0;
    DispatchNumeric(s->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      start = static_cast<double>(Load(s->GetData<T>()[0]));
      limit = static_cast<double>(Load(l->GetData<T>()[0]));
      delta = static_cast<double>(Load(d->GetData<T>()[0]));
    });
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) {
      *err = delta == 0 ? "delta is 0" : "start, limit and delta must be finite (got " + std::to_string(start) + ", " +
                                             std::to_string(limit) + ", " + std::to_string(delta) + ")";
      *n = -2;
      return true;
    }
    double count = std::ceil((limit - start) / delta);
    if (count > 4.0e18) {  // would not fit a dim (and casting it to int64 would be undefined)
      *err = "the range has " + std::to_string(count) + " elements";
      *n = -2;
      return true;
    }
    *n = std::max<int64_t>(0, static_cast<int64_t>(count));
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t n;
    std::string err;
    if (!Count(ctx, &n, &err)) {
      MarkUnknown(ctx->GetOutputShape(0));
      return GRAPH_SUCCESS;
    }
    if (n < 0) return Fail(ctx, err);
    *ctx->GetOutputShape(0) = Shape({n});
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* s = ctx->GetInputTensor(0);
    const Tensor* d = ctx->GetInputTensor(2);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), s->GetDataType());
    if (!y) return GRAPH_FAILED;
    DispatchNumeric(s->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      auto start = Load(s->GetData<T>()[0]);
      auto delta = Load(d->GetData<T>()[0]);
      for (int64_t i = 0; i < y->GetShapeSize(); ++i)
        y->GetData<T>()[i] = Store<T>(static_cast<decltype(start)>(start + static_cast<decltype(start)>(i) * delta));
    });
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_shape_ops(std::vector<OpEntry>& out) {
  TensorType all = TensorType::ALL();
  out.push_back({OpDefBuilder("Reshape").INPUT(data, all).INPUT(shape, TensorType({DT_INT64})).OUTPUT(reshaped, all)
                     .ATTR(allowzero, Int, 0).Build(), MakeOpImpl<Reshape>("Reshape")});
  out.push_back({OpDefBuilder("Flatten").INPUT(input, all).OUTPUT(output, all).ATTR(axis, Int, 1).Build(), MakeOpImpl<Flatten>("Flatten")});
  out.push_back({OpDefBuilder("Squeeze").INPUT(data, all).OPTIONAL_INPUT(axes, TensorType({DT_INT64})).OUTPUT(squeezed, all).Build(),
                 MakeOpImpl<Squeeze>("Squeeze")});
  out.push_back({OpDefBuilder("Unsqueeze").INPUT(data, all).INPUT(axes, TensorType({DT_INT64})).OUTPUT(expanded, all).Build(),
                 MakeOpImpl<Unsqueeze>("Unsqueeze")});
  out.push_back({OpDefBuilder("Transpose").INPUT(data, all).OUTPUT(transposed, all).ATTR(perm, ListInt, {}).Build(),
                 MakeOpImpl<Transpose>("Transpose")});
  out.push_back({OpDefBuilder("Shape").INPUT(data, all).OUTPUT(shape, TensorType({DT_INT64})).ATTR(start, Int, 0)
                     .ATTR(end, Int, INT64_MAX).Build(), MakeOpImpl<ShapeOp>("Shape")});
  out.push_back({OpDefBuilder("Size").INPUT(data, all).OUTPUT(size, TensorType({DT_INT64})).Build(), MakeOpImpl<Size>("Size")});
  out.push_back({OpDefBuilder("Expand").INPUT(input, all).INPUT(shape, TensorType({DT_INT64})).OUTPUT(output, all).Build(),
                 MakeOpImpl<Expand>("Expand")});
  out.push_back({OpDefBuilder("Tile").INPUT(input, all).INPUT(repeats, TensorType({DT_INT64})).OUTPUT(output, all).Build(),
                 MakeOpImpl<Tile>("Tile")});
  out.push_back({OpDefBuilder("ConstantOfShape").INPUT(input, TensorType({DT_INT64})).OUTPUT(output, all).ATTR(value, Tensor, {}).Build(),
                 MakeOpImpl<ConstantOfShape>("ConstantOfShape")});
  out.push_back({OpDefBuilder("Range").INPUT(start, "T").INPUT(limit, "T").INPUT(delta, "T").OUTPUT(output, "T")
                     .DATATYPE(T, TensorType({DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_BF16, DT_INT16, DT_INT32, DT_INT64}))
                     .ATTR(stash_type, Int, 1).Build(),  // opset 27; values are computed in float (or wider) either way
                 MakeOpImpl<Range>("Range")});
}

}  // namespace weft::ops
