// Helpers shared by built-in operators: axes, int lists from tensors, unknown shapes, type
// dispatch for float kernels. Uses only the public SDK.
#ifndef WEFT_OPS_OP_UTIL_H_
#define WEFT_OPS_OP_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "elementwise.h"

// On a hot loop: one copy per instruction set (AVX-512 with its 64-bit and byte lanes, AVX2, the
// baseline), picked when the library loads. Not under the sanitizers or clang: an ifunc resolver
// runs before the sanitizers' runtimes are set up.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(WEFT_SANITIZED) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WEFT_ISA_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define WEFT_ISA_CLONES
#endif

namespace weft::ops {

// nearbyint in the default rounding mode (half to even) without a library call, for quantizing
// loops: adding and taking off 1.5 * 2^23 rounds |v| < 2^22; larger values (which those loops
// clamp to 8 bits whatever their fraction) and NaN come back unchanged.
[[gnu::always_inline]] inline float RoundHalfEvenSmall(float v) {
  return std::fabs(v) < 4194304.f ? (v + 12582912.f) - 12582912.f : v;
}


// Records "<OpType>: <msg>" and returns GRAPH_FAILED (the engine adds the node name).
// The instance index (as GetInputTensor and EmitContext::Input count) of IR input `ir`'s first
// tensor: absent optional inputs before it take no index.
inline size_t InputInstance(const KernelContextBase* ctx, size_t ir) {
  size_t at = 0;
  for (size_t i = 0; i < ir; ++i) at += ctx->GetIrInputInstanceNum(i);
  return at;
}

inline graphStatus Fail(const KernelContextBase* ctx, const std::string& msg) {
  ctx->SetError(std::string(ctx->GetNodeType()) + ": " + msg);
  return GRAPH_FAILED;
}

// A string attribute that takes one of a fixed set of values; fails naming the attribute, the
// value and the choices otherwise.
inline graphStatus CheckOneOf(const KernelContextBase* ctx, const char* attr, std::initializer_list<const char*> choices) {
  const char* v = ctx->GetAttrs()->GetStr(attr);
  std::string value = v ? v : "";
  std::string list;
  for (const char* c : choices) {
    if (value == c) return GRAPH_SUCCESS;
    list += std::string(list.empty() ? "" : ", ") + "'" + c + "'";
  }
  return Fail(ctx, "attribute '" + std::string(attr) + "' is '" + value + "'; it must be one of " + list);
}

// Normalizes a possibly negative axis into [0, rank); false when out of range.
inline bool NormalizeAxis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

inline std::string AxisError(int64_t axis, int64_t rank) {
  return "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
}
// The same for an entry of a list of axes (an attribute or input named `what`).
inline std::string AxesError(const char* what, int64_t axis, int64_t rank) {
  return std::string(what) + " entry " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
}

// Values of an int32/int64 tensor; false when the tensor holds no data (value unknown at compile
// time) or has another type.
inline bool ReadInts(const Tensor* t, std::vector<int64_t>* out) {
  out->clear();
  if (!t || !t->GetAddr()) return false;
  int64_t n = t->GetShapeSize();
  if (t->GetDataType() == DT_INT64) {
    out->assign(t->GetData<int64_t>(), t->GetData<int64_t>() + n);
  } else if (t->GetDataType() == DT_INT32) {
    out->assign(t->GetData<int32_t>(), t->GetData<int32_t>() + n);
  } else {
    return false;
  }
  return true;
}

// Marks an output whose shape depends on a value only known at run time.
inline void MarkUnknown(Shape* s, size_t rank = 1) {
  s->SetDimNum(rank);
  for (size_t k = 0; k < rank; ++k) s->SetDim(k, -1);
}

// Row-major strides of a shape.
inline void Strides(const Shape& s, int64_t* st) {
  int64_t acc = 1;
  for (size_t k = s.GetDimNum(); k-- > 0;) {
    st[k] = acc;
    acc *= s.GetDim(k);
  }
}

// Invokes f(T{}) for floating types only.
template <typename F>
inline bool DispatchFloat(DataType dt, F&& f) {
  switch (dt) {
    case DT_FLOAT: f(float{}); return true;
    case DT_DOUBLE: f(double{}); return true;
    case DT_FLOAT16: f(float16{}); return true;
    case DT_BF16: f(bfloat16{}); return true;
    default: return false;
  }
}

// Invokes f(T{}) for every numeric type including unsigned and bool (as uint8_t).
template <typename F>
inline bool DispatchAll(DataType dt, F&& f) {
  switch (dt) {
    case DT_BOOL: f(uint8_t{}); return true;
    default: return DispatchNumeric(dt, f);
  }
}

inline const TensorType& FloatTypes() {
  static const TensorType t({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE});
  return t;
}
inline const TensorType& NumericTypes() {
  static const TensorType t({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT8, DT_UINT8, DT_INT16, DT_UINT16, DT_INT32,
                             DT_UINT32, DT_INT64, DT_UINT64});
  return t;
}
inline const TensorType& IndexTypes() {
  static const TensorType t({DT_INT32, DT_INT64});
  return t;
}

// Copies elements of `elem` bytes: out[i] = in[src(i)] for a generic strided gather.
// Work below this many elements runs inline; above, kernels split it over ParallelFor.
constexpr int64_t kRowParallelGrain = 1 << 14;

// Runs rows(lo, hi) over [0, n) rows of `row_elems` elements each, split over the engine's
// intra-op threads when the whole job is large enough.
template <typename F>
inline void ForRows(const KernelContextBase* ctx, int64_t n, int64_t row_elems, F&& rows) {
  if (n <= 1 || n * row_elems < 2 * kRowParallelGrain) {
    if (n > 0) rows(int64_t{0}, n);
    return;
  }
  int64_t grain = std::max<int64_t>(1, kRowParallelGrain / std::max<int64_t>(1, row_elems));
  ctx->ParallelFor(n, grain, rows);
}

inline void CopyElem(uint8_t* dst, const uint8_t* src, size_t elem) {
  switch (elem) {
    case 1: *dst = *src; break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    default: std::memcpy(dst, src, elem);
  }
}

inline bool IsFloating(DataType dt) { return dt == DT_FLOAT || dt == DT_FLOAT16 || dt == DT_BF16 || dt == DT_DOUBLE; }

// A producer that can apply every activation the engine fuses (its reference loops use
// FusedActivation, its oneDNN path FusedPostOps).
inline void AbsorbAllActivations(FusionSupport& s) {
  for (int a = WEFT_ACT_RELU; a < WEFT_ACT_COUNT; ++a) s.Absorb(static_cast<WeftActivation>(a));
}

// The activation the engine fused into this node (GetEpilogue), for the reference loops.
struct FusedActivation {
  WeftEpilogue e;
  explicit FusedActivation(const KernelContextBase* ctx) : e(ctx->GetEpilogue()) {}
  explicit FusedActivation(const WeftEpilogue& ep) : e(ep) {}
  template <typename C>
  C operator()(C v) const {
    if constexpr (!std::is_floating_point<C>::value) {
      return v;  // only floating producers absorb
    } else {
      switch (e.activation) {
        case WEFT_ACT_RELU: return v > C(0) ? v : C(0);
        case WEFT_ACT_CLIP: return std::min(std::max(v, C(e.alpha)), C(e.beta));
        case WEFT_ACT_LEAKY_RELU: return v >= C(0) ? v : C(e.alpha) * v;
        case WEFT_ACT_SIGMOID: return v >= C(0) ? C(1) / (C(1) + std::exp(-v)) : std::exp(v) / (C(1) + std::exp(v));
        case WEFT_ACT_TANH: return std::tanh(v);
        case WEFT_ACT_HARD_SIGMOID: return std::max(C(0), std::min(C(1), C(e.alpha) * v + C(e.beta)));
        case WEFT_ACT_ELU: return v >= C(0) ? v : C(e.alpha) * (std::exp(v) - C(1));
        case WEFT_ACT_HARD_SWISH: return v * std::max(C(0), std::min(C(1), v / C(6) + C(0.5)));
        case WEFT_ACT_SWISH: return v * (v >= C(0) ? C(1) / (C(1) + std::exp(-v)) : std::exp(v) / (C(1) + std::exp(v)));
        case WEFT_ACT_GELU: return C(0.5) * v * (C(1) + std::erf(v * C(0.7071067811865476)));
        case WEFT_ACT_GELU_TANH: return C(0.5) * v * (C(1) + std::tanh(C(0.7978845608028654) * (v + C(0.044715) * v * v * v)));
        default: return v;
      }
    }
  }
};

// The fused activation over n floats in place; Relu, Sigmoid, Tanh, Swish and both Gelus in loops
// that vectorize (ops/conv_pool.cc).
void ActivateInPlace(const WeftEpilogue& e, float* p, int64_t n);

// Bytes of a float32 [N, C, H, W] tensor stored channel-blocked (FORMAT_NC1HWC0: C padded to 16).
inline size_t BlockedFloatBytes(const Shape& s) {
  return static_cast<size_t>(s.GetDim(0) * ((s.GetDim(1) + 15) / 16) * 16 * s.GetDim(2) * s.GetDim(3)) * sizeof(float);
}

// Compile for ops whose only compiled state is output 0's storage: its size when the layout pass
// made it channel-blocked.
inline graphStatus SetBlockedOutputStorage(OpCompileContext* ctx) {
  const Tensor* y = ctx->GetOutputTensor(0);
  if (y->GetFormat() != FORMAT_NC1HWC0) return GRAPH_SUCCESS;
  return ctx->SetOutputStorage(0, BlockedFloatBytes(y->GetShape()), FORMAT_NC1HWC0);
}

// Compile for ops that take any planned layout (LayoutSupport::AnyFormat) and whose only compiled
// state is output 0's storage: its size in the layout planned for it, `elem` bytes an element.
inline graphStatus SetPlannedOutputStorage(OpCompileContext* ctx, size_t elem) {
  const Tensor* y = ctx->GetOutputTensor(0);
  if (y->GetFormat() == FORMAT_NC1HWC0) return ctx->SetOutputStorage(0, BlockedFloatBytes(y->GetShape()) / sizeof(float) * elem, FORMAT_NC1HWC0);
  if (y->GetFormat() == FORMAT_NHWC) return ctx->SetOutputStorage(0, static_cast<uint64_t>(y->GetShapeSize()) * elem, FORMAT_NHWC);
  return GRAPH_SUCCESS;
}
// The elements a tensor's buffer holds in its planned layout (channel padding included).
inline int64_t PlannedElements(const Tensor* t) {
  return t->GetFormat() == FORMAT_NC1HWC0 ? static_cast<int64_t>(BlockedFloatBytes(t->GetShape()) / sizeof(float)) : t->GetShapeSize();
}

// For built-ins whose Compile only derives state from metadata and constant inputs (prepacked
// weights, primitives): a loaded model file restores that state in Deserialize from the same
// metadata and the stored weights, so nothing but the weights needs storing.
class RebuildOnLoad : public PortableOp {
 public:
  graphStatus DeserializeKeyed(OpDeserializeContext* ctx) override {
    auto* self = dynamic_cast<CompilableOp*>(this);
    if (!self) return GRAPH_FAILED;
    OpCompileContext c(ctx->raw());
    return self->Compile(&c);
  }
};

// Byte copies (memcpy's) spread over the intra-op threads: each cut into pieces of kCopyPiece
// bytes, so that a large copy, or a few of them, keeps every core busy (data another core just
// wrote is also read faster by two cores than by one). Below 2 pieces in all, inline. The lists
// live in workspace memory (AllocCopies): a run allocates nothing.
struct ByteCopy {
  uint8_t* dst;
  const uint8_t* src;
  size_t bytes;
};
constexpr size_t kCopyPiece = size_t{32} << 10;
inline ByteCopy* AllocCopies(const KernelContextBase* ctx, size_t count) {
  return static_cast<ByteCopy*>(ctx->MallocWorkSpace(std::max<size_t>(count, 1) * sizeof(ByteCopy)));
}
inline graphStatus ParallelCopy(const KernelContextBase* ctx, const ByteCopy* copies, size_t count) {
  size_t total = 0, pieces = 0;
  for (size_t i = 0; i < count; ++i) total += copies[i].bytes, pieces += (copies[i].bytes + kCopyPiece - 1) / kCopyPiece;
  if (total < 2 * kCopyPiece) {
    for (size_t i = 0; i < count; ++i)
      if (copies[i].bytes) std::memcpy(copies[i].dst, copies[i].src, copies[i].bytes);
    return GRAPH_SUCCESS;
  }
  ByteCopy* piece = AllocCopies(ctx, pieces);
  if (!piece) return GRAPH_FAILED;
  size_t k = 0;
  for (size_t i = 0; i < count; ++i)
    for (size_t at = 0; at < copies[i].bytes; at += kCopyPiece)
      piece[k++] = {copies[i].dst + at, copies[i].src + at, std::min(kCopyPiece, copies[i].bytes - at)};
  return ctx->ParallelFor(static_cast<int64_t>(pieces), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) std::memcpy(piece[j].dst, piece[j].src, piece[j].bytes);
  });
}

}  // namespace weft::ops

#endif  // WEFT_OPS_OP_UTIL_H_
