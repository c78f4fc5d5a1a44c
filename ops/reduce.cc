// Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare), ArgMax/ArgMin,
// Softmax/LogSoftmax/Hardmax, CumSum, TopK.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "aot_emit.h"
#include "op_util.h"
#include "vector_math.h"

namespace weft::ops {
namespace {

// Which axes to reduce; false when the axes input is not known yet.
bool ReduceAxes(const KernelContextBase* ctx, size_t rank, std::vector<bool>* mask, std::string* err) {
  std::vector<int64_t> axes;
  const Tensor* at = ctx->GetOptionalInputTensor(1);
  if (at && at->GetShape().GetDimNum() != 1) {
    *err = "axes must be a 1-D tensor, got shape " + at->GetShape().ToString();
    return true;
  }
  if (at && !ReadInts(at, &axes)) return false;
  mask->assign(rank, false);
  if (axes.empty()) {
    if (*ctx->GetAttrs()->GetInt("noop_with_empty_axes")) return true;
    mask->assign(rank, true);
    return true;
  }
  for (int64_t a : axes) {
    int64_t n;
    if (!NormalizeAxis(a, static_cast<int64_t>(rank), &n)) {
      *err = AxesError("axes", a, static_cast<int64_t>(rank));
      return true;
    }
    (*mask)[n] = true;
  }
  return true;
}

Shape ReducedShape(const Shape& in, const std::vector<bool>& mask, bool keep) {
  Shape out;
  for (size_t k = 0; k < in.GetDimNum(); ++k) {
    if (!mask[k]) out.AppendDim(in.GetDim(k));
    else if (keep) out.AppendDim(1);
  }
  return out;
}

enum class Red { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

template <Red R>
class Reduce : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // float32 reductions over constant axes (weft_reduce_f32, accumulating in double as Execute does).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    std::vector<bool> mask;
    std::string err;
    const DataType dt = x->GetDataType();
    const bool int_ok = (dt == DT_INT8 || dt == DT_INT16 || dt == DT_INT32 || dt == DT_INT64 || dt == DT_UINT8 || dt == DT_UINT16 || dt == DT_UINT32) &&
                        (R == Red::kMax || R == Red::kMin || R == Red::kSum || R == Red::kProd);
    if (dt != DT_FLOAT && !int_ok)
      return Fail(ctx, "the generated C reduces float32 (and integers with Max, Min, Sum, Prod) only, not " + std::string(DataTypeName(dt)));
    if (!ReduceAxes(ctx, in.GetDimNum(), &mask, &err) || !err.empty()) return Fail(ctx, err.empty() ? "the axes must be constants" : err);
    const size_t r = in.GetDimNum();
    if (r > 8) return Fail(ctx, "the generated C reduces at most 8 dims");
    std::vector<int64_t> dims, ost(r, 0);
    int64_t acc = 1;
    for (size_t k = r; k-- > 0;)
      if (!mask[k]) ost[k] = acc, acc *= in.GetDim(k);
    for (size_t k = 0; k < r; ++k) dims.push_back(in.GetDim(k));
    if (r == 0) dims.push_back(1), ost.push_back(0);
    const int64_t total = in.GetShapeSize(), outs = acc;
    const int64_t count = outs ? total / std::max<int64_t>(outs, 1) : 0;
    if (dt != DT_FLOAT) {  // integers, wrapping as Execute (through uint64 arithmetic)
      const std::string t = aot::CType(dt);
      int64_t lo = 0, hi = 0;
      switch (dt) {
        case DT_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
        case DT_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
        case DT_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
        case DT_INT64: lo = INT64_MIN, hi = INT64_MAX; break;
        case DT_UINT8: hi = UINT8_MAX; break;
        case DT_UINT16: hi = UINT16_MAX; break;
        default: hi = UINT32_MAX; break;
      }
      const int64_t init = R == Red::kMax ? lo : R == Red::kMin ? hi : R == Red::kProd ? 1 : 0;
      const std::string step = R == Red::kMax ? "v > y[at] ? v : y[at]" : R == Red::kMin ? "v < y[at] ? v : y[at]"
                             : R == Red::kSum ? "(" + t + ")((uint64_t)y[at] + (uint64_t)v)" : "(" + t + ")((uint64_t)y[at] * (uint64_t)v)";
      ctx->Run("{\n  const " + t + "* x = " + ctx->Input(0, t.c_str()) + ";\n  " + t + "* y = " + ctx->Output(0, t.c_str()) +
               ";\n  const int64_t* dims = " + ctx->Const("dims", DT_INT64, dims) + ";\n  const int64_t* ost = " + ctx->Const("out_stride", DT_INT64, ost) +
               ";\n  int64_t i, o;\n  for (o = 0; o < " + aot::IntLit(outs) + "; ++o) y[o] = (" + t + ")" + aot::IntLit(init) +
               ";\n  for (i = 0; i < " + aot::IntLit(total) + "; ++i) {\n    int64_t rest = i, at = 0;\n    int32_t d;\n    const " + t +
               " v = x[i];\n    for (d = " + std::to_string(dims.size()) + " - 1; d >= 0; --d) {\n      at += (rest % dims[d]) * ost[d];\n" +
               "      rest /= dims[d];\n    }\n    y[at] = " + step + ";\n  }\n}\n");
      return GRAPH_SUCCESS;
    }
    static const int kKind[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};  // Red's order
    const std::string scratch = ctx->Scratch(static_cast<size_t>(std::max<int64_t>(outs, 1)) * 2 * sizeof(double));
    aot::EmitHelper(ctx, aot::Kernels(), "weft_reduce_f32");
    ctx->Run("weft_reduce_f32(" + std::to_string(kKind[static_cast<int>(R)]) + ", " + std::to_string(dims.size()) + ", " +
             ctx->Const("dims", DT_INT64, dims) + ", " + ctx->Const("out_stride", DT_INT64, ost) + ", " + aot::IntLit(total) + ", " +
             aot::IntLit(outs) + ", " + std::to_string(count) + ".0, " + ctx->Input(0, "float") + ", " + ctx->Output(0, "float") +
             ", (double*)(void*)" + scratch + ", (double*)(void*)" + scratch + " + " + std::to_string(std::max<int64_t>(outs, 1)) + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    std::vector<bool> mask;
    std::string err;
    bool keep = *ctx->GetAttrs()->GetInt("keepdims") != 0;
    if (!ReduceAxes(ctx, in.GetDimNum(), &mask, &err)) {
      // The axes' values come at run time, their count now: without keepdims each one drops a
      // dim (ONNX forbids repeated axes).
      size_t rank = in.GetDimNum();
      const Shape* axes = ctx->GetInputShape(1);
      if (!keep) {
        int64_t n = axes && axes->GetDimNum() == 1 ? axes->GetDim(0) : -1;
        rank = n >= 1 && static_cast<size_t>(n) <= rank ? rank - static_cast<size_t>(n) : 1;
      }
      MarkUnknown(ctx->GetOutputShape(0), rank);
      return GRAPH_SUCCESS;
    }
    if (!err.empty()) return Fail(ctx, err);
    *ctx->GetOutputShape(0) = ReducedShape(in, mask, keep);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    std::vector<bool> mask;
    std::string err;
    ReduceAxes(ctx, in.GetDimNum(), &mask, &err);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    // Output index of each input element: strides of the kept dims (0 for reduced ones).
    size_t r = in.GetDimNum();
    int64_t ost[WEFT_MAX_DIMS], acc = 1;
    for (size_t k = r; k-- > 0;) {
      ost[k] = mask[k] ? 0 : acc;
      if (!mask[k]) acc *= in.GetDim(k);
    }
    int64_t out_n = acc, count = out_n ? in.GetShapeSize() / std::max<int64_t>(out_n, 1) : 0;
    // bool (ReduceMax, ReduceMin): as uint8, then any non-zero is true (Min's empty set is true).
    const bool is_bool = x->GetDataType() == DT_BOOL;
    DispatchNumeric(is_bool ? DT_UINT8 : x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = std::conditional_t<std::is_integral<T>::value, T, double>;
      C* a = static_cast<C*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(out_n, 1)) * sizeof(C)));
      if (!a) return;
      C init = R == Red::kMax ? std::numeric_limits<C>::lowest() : R == Red::kMin ? std::numeric_limits<C>::max()
             : R == Red::kProd ? C(1) : C(0);
      if constexpr (!std::is_integral<C>::value) {
        if (R == Red::kMax) init = -std::numeric_limits<C>::infinity();
        if (R == Red::kMin) init = std::numeric_limits<C>::infinity();
      }
      std::fill(a, a + out_n, init);
      C mx_init = init;
      (void)mx_init;
      // LogSumExp: subtract the max for stability (first pass).
      C* mx = nullptr;
      if constexpr (R == Red::kLogSumExp) {
        mx = static_cast<C*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(out_n, 1)) * sizeof(C)));
        if (!mx) return;
        std::fill(mx, mx + out_n, -std::numeric_limits<C>::infinity());
      }
      const T* px = x->GetData<T>();
      int64_t idx[WEFT_MAX_DIMS] = {0}, o = 0, total = in.GetShapeSize();
      auto walk = [&](auto&& f) {
        std::fill(idx, idx + WEFT_MAX_DIMS, 0);
        o = 0;
        for (int64_t i = 0; i < total; ++i) {
          f(o, static_cast<C>(Load(px[i])));
          for (size_t k = r; k-- > 0;) {
            o += ost[k];
            if (++idx[k] < in.GetDim(k)) break;
            o -= ost[k] * idx[k];
            idx[k] = 0;
          }
        }
      };
      if constexpr (R == Red::kLogSumExp) walk([&](int64_t j, C v) { mx[j] = std::max(mx[j], v); });
      // The reduced dims are the innermost ones (a spatial mean, a row sum): each output reads
      // one contiguous run, in four interleaved partial results instead of the index walk.
      size_t lead = r;
      while (lead > 0 && mask[lead - 1]) --lead;
      bool inner = std::none_of(mask.begin(), mask.begin() + static_cast<std::ptrdiff_t>(lead), [](bool b) { return b; });
      if constexpr (R == Red::kSum || R == Red::kMean || R == Red::kMax || R == Red::kMin) {
        if (inner && count > 0) {
          for (int64_t j = 0; j < out_n; ++j) {
            const T* p = px + j * count;
            C part[4] = {init, init, init, init};
            int64_t i = 0;
            auto step = [&](C& acc, C v) {
              if constexpr (R == Red::kSum || R == Red::kMean) acc = WrapAdd(acc, v);
              else if constexpr (R == Red::kMax) acc = (v > acc || v != v) ? v : acc;
              else acc = (v < acc || v != v) ? v : acc;
            };
            for (; i + 4 <= count; i += 4)
              for (int l = 0; l < 4; ++l) step(part[l], static_cast<C>(Load(p[i + l])));
            for (; i < count; ++i) step(part[0], static_cast<C>(Load(p[i])));
            C total_j = part[0];
            for (int l = 1; l < 4; ++l) step(total_j, part[l]);
            a[j] = total_j;
          }
          inner = true;
        } else {
          inner = false;
        }
      } else {
        inner = false;
      }
      if (!inner) walk([&](int64_t j, C v) {
        switch (R) {
          case Red::kSum: case Red::kMean: a[j] = WrapAdd(a[j], v); break;
          case Red::kMax: a[j] = (v > a[j] || v != v) ? v : a[j]; break;
          case Red::kMin: a[j] = (v < a[j] || v != v) ? v : a[j]; break;
          case Red::kProd: a[j] = WrapMul(a[j], v); break;
          case Red::kL1: a[j] = WrapAdd(a[j], v < C(0) ? WrapNeg(v) : v); break;
          case Red::kL2: case Red::kSumSquare: a[j] = WrapAdd(a[j], WrapMul(v, v)); break;
          case Red::kLogSum: a[j] = WrapAdd(a[j], v); break;
          case Red::kLogSumExp: a[j] += static_cast<C>(std::exp(static_cast<double>(v - mx[j]))); break;
        }
      });
      T* py = y->GetData<T>();
      for (int64_t j = 0; j < out_n; ++j) {
        C v = a[j];
        if constexpr (R == Red::kMean) v = count ? static_cast<C>(v / static_cast<C>(count)) : v;
        if constexpr (R == Red::kL2) v = static_cast<C>(std::sqrt(static_cast<double>(v)));
        if constexpr (R == Red::kLogSum) v = static_cast<C>(std::log(static_cast<double>(v)));
        if constexpr (R == Red::kLogSumExp) v = static_cast<C>(std::log(static_cast<double>(v)) + static_cast<double>(mx[j]));
        py[j] = Store<T>(static_cast<typename Compute<T>::type>(v));
      }
    });
    if (is_bool)
      for (int64_t j = 0; j < out_n; ++j) y->GetData<uint8_t>()[j] = y->GetData<uint8_t>()[j] != 0;
    return GRAPH_SUCCESS;
  }
};

template <Red R>
OpEntry ReduceEntry(const char* name) {
  TensorType types = NumericTypes();
  if (R == Red::kMax || R == Red::kMin) {  // and bool (opset 20)
    std::vector<DataType> t = types.types();
    t.push_back(DT_BOOL);
    types = TensorType(std::move(t));
  }
  return {OpDefBuilder(name).INPUT(data, "T").OPTIONAL_INPUT(axes, TensorType({DT_INT64})).OUTPUT(reduced, "T")
              .DATATYPE(T, types).ATTR(keepdims, Int, 1).ATTR(noop_with_empty_axes, Int, 0).Build(),
          MakeOpImpl<Reduce<R>>(name)};
}

// ArgMax / ArgMin along one axis.
template <bool kMax>
class ArgReduce : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The runtime's scan: the first element, replaced by each strictly better one (or equal one,
  // with select_last_index), so a NaN never wins and ties keep the runtime's index.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    const std::string t = aot::CType(x->GetDataType());
    if (t.empty()) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(x->GetDataType()) + " " + ctx->GetNodeType());
    int64_t axis = 0, outer = 1, inner = 1;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(in.GetDimNum()), &axis);
    for (int64_t k = 0; k < axis; ++k) outer *= in.GetDim(static_cast<size_t>(k));
    for (size_t k = static_cast<size_t>(axis) + 1; k < in.GetDimNum(); ++k) inner *= in.GetDim(k);
    const int64_t n = in.GetDim(static_cast<size_t>(axis));
    const bool last = *ctx->GetAttrs()->GetInt("select_last_index") != 0;
    const std::string better = std::string("v ") + (kMax ? (last ? ">=" : ">") : (last ? "<=" : "<")) + " bv";
    const std::string N = aot::IntLit(n), I = aot::IntLit(inner);
    ctx->Run("{\n  const " + t + "* px = " + ctx->Input(0, t.c_str()) + ";\n  int64_t* py = " + ctx->Output(0, "int64_t") +
             ";\n  int64_t o, i, j;\n  for (o = 0; o < " + aot::IntLit(outer) + "; ++o)\n    for (i = 0; i < " + I +
             "; ++i) {\n      int64_t best = 0;\n      " + t + " bv = px[o * " + N + " * " + I + " + i];\n      for (j = 1; j < " + N +
             "; ++j) {\n        const " + t + " v = px[(o * " + N + " + j) * " + I + " + i];\n        if (" + better +
             ") {\n          best = j;\n          bv = v;\n        }\n      }\n      py[o * " + I + " + i] = best;\n    }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    int64_t axis = 0;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(in.GetDimNum()), &axis))
      return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), in.GetDimNum()));
    if (in.GetDim(static_cast<size_t>(axis)) == 0)
      return Fail(ctx, "axis " + std::to_string(axis) + " has size 0: there is no element to take the index of");
    std::vector<bool> mask(in.GetDimNum(), false);
    mask[axis] = true;
    *ctx->GetOutputShape(0) = ReducedShape(in, mask, *ctx->GetAttrs()->GetInt("keepdims") != 0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_INT64); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), DT_INT64);
    if (!y) return GRAPH_FAILED;
    const Shape& in = x->GetShape();
    int64_t axis = 0;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(in.GetDimNum()), &axis);
    bool last = *ctx->GetAttrs()->GetInt("select_last_index") != 0;
    int64_t outer = 1, inner = 1, n = in.GetDim(static_cast<size_t>(axis));
    for (int64_t k = 0; k < axis; ++k) outer *= in.GetDim(k);
    for (size_t k = static_cast<size_t>(axis) + 1; k < in.GetDimNum(); ++k) inner *= in.GetDim(k);
    DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t best = 0;
          auto bv = Load(px[o * n * inner + i]);
          for (int64_t j = 1; j < n; ++j) {
            auto v = Load(px[(o * n + j) * inner + i]);
            bool better = kMax ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
            if (better) best = j, bv = v;
          }
          y->GetData<int64_t>()[o * inner + i] = best;
        }
    });
    return GRAPH_SUCCESS;
  }
};

template <bool kMax>
OpEntry ArgEntry(const char* name) {
  return {OpDefBuilder(name).INPUT(data, NumericTypes()).OUTPUT(reduced, TensorType({DT_INT64})).ATTR(axis, Int, 0)
              .ATTR(keepdims, Int, 1).ATTR(select_last_index, Int, 0).Build(),
          MakeOpImpl<ArgReduce<kMax>>(name)};
}

// One contiguous float32 softmax row, compiled for AVX-512, AVX2 and the baseline and picked at
// load time for the CPU it runs on (an ifunc). Sanitizer builds get the baseline only: the ifunc
// resolver would run before ThreadSanitizer's runtime is up.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define WEFT_CPU_CLONES
#else
#define WEFT_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
WEFT_CPU_CLONES void SoftmaxRow(const float* in, float* out, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j) m = in[j] > m ? in[j] : m;
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < n; ++j) {
    float e = vmath::Exp(in[j] - m);
    out[j] = e;
    s += e;
  }
  // Probabilities below FLT_MIN become 0 rather than subnormal: masked positions (a large
  // negative addend) would otherwise hand subnormals to the next MatMul, which runs many times
  // slower on them (absolute error < 1.2e-38).
  float r = 1.0f / s;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    float v = out[j] * r;
    out[j] = v < std::numeric_limits<float>::min() ? 0.f : v;
  }
}

// Softmax family over one axis (opset 13), or over the flattened trailing dims when coerce_2d is
// set (how opsets < 13 defined it; the ONNX importer sets it).
enum class Sm { kSoftmax, kLogSoftmax, kHardmax };
template <Sm S>
class SoftmaxOp : public EagerExecuteOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    int64_t r = static_cast<int64_t>(in.GetDimNum()), axis;
    if (S == Sm::kHardmax || x->GetDataType() != DT_FLOAT) return Fail(ctx, "the generated C has float32 Softmax and LogSoftmax only");
    if (r == 0) return Fail(ctx, "input must have rank >= 1");
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), r, &axis)) return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), r));
    int64_t outer = 1, inner = 1, n = in.GetDim(static_cast<size_t>(axis));
    for (int64_t k = 0; k < axis; ++k) outer *= in.GetDim(k);
    for (size_t k = static_cast<size_t>(axis) + 1; k < in.GetDimNum(); ++k) inner *= in.GetDim(k);
    if (*ctx->GetAttrs()->GetInt("coerce_2d")) n *= inner, inner = 1;
    ctx->Include("<math.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_softmax_axis_f32");
    ctx->Run("weft_softmax_axis_f32(" + aot::IntLit(outer) + ", " + aot::IntLit(n) + ", " + aot::IntLit(inner) + ", " +
             (S == Sm::kLogSoftmax ? "1" : "0") + ", " + ctx->Input(0, "float") + ", " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const Shape& in = x->GetShape();
    int64_t r = static_cast<int64_t>(in.GetDimNum()), axis;
    if (r == 0) return Fail(ctx, "input must have rank >= 1");
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), r, &axis)) return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), r));
    int64_t outer = 1, inner = 1, n = in.GetDim(static_cast<size_t>(axis));
    for (int64_t k = 0; k < axis; ++k) outer *= in.GetDim(k);
    for (size_t k = static_cast<size_t>(axis) + 1; k < in.GetDimNum(); ++k) inner *= in.GetDim(k);
    if (*ctx->GetAttrs()->GetInt("coerce_2d")) {
      for (size_t k = static_cast<size_t>(axis) + 1; k < in.GetDimNum(); ++k) n *= in.GetDim(k);
      inner = 1;
    }
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      ForRows(ctx, outer, n * inner, [&](int64_t lo, int64_t hi) {
      if constexpr (S == Sm::kSoftmax && std::is_same<T, float>::value) {
        if (inner == 1) {  // contiguous rows: the vectorized kernel
          for (int64_t o = lo; o < hi; ++o) SoftmaxRow(px + o * n, py + o * n, n);
          return;
        }
      }
      for (int64_t o = lo; o < hi; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
          C mx = -std::numeric_limits<C>::infinity();
          int64_t arg = 0;
          for (int64_t j = 0; j < n; ++j) {
            C v = Load(px[at(j)]);
            if (v > mx) mx = v, arg = j;
          }
          if constexpr (S == Sm::kHardmax) {
            for (int64_t j = 0; j < n; ++j) py[at(j)] = Store<T>(C(j == arg ? 1 : 0));
            continue;
          }
          C sum = 0;
          for (int64_t j = 0; j < n; ++j) sum += std::exp(C(Load(px[at(j)])) - mx);
          for (int64_t j = 0; j < n; ++j) {
            C v = C(Load(px[at(j)])) - mx;
            py[at(j)] = Store<T>(S == Sm::kSoftmax ? C(std::exp(v) / sum) : C(v - std::log(sum)));
          }
        }
      });
    });
    return GRAPH_SUCCESS;
  }
};

template <Sm S>
OpEntry SoftmaxEntry(const char* name) {
  return {OpDefBuilder(name).INPUT(input, FloatTypes()).OUTPUT(output, FloatTypes()).SAME_AS_INPUT(input).ATTR(axis, Int, -1)
              .ATTR(coerce_2d, Int, 0).Build(),
          MakeOpImpl<SoftmaxOp<S>>(name)};
}

// CumSum, and CumProd (opset 26) with kProduct: running sums or products along an axis.
template <bool kProduct>
class Cumulative : public EagerExecuteOp, public EmittableOp {
 public:
  // Sums (products) in the element type (float in float, as the runtime); integer ones wrap.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType dt = x->GetDataType();
    const std::string t = aot::CType(dt);
    if (t.empty() || dt == DT_BOOL) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " " + std::string(ctx->GetNodeType()));
    std::vector<int64_t> ax;
    if (!ReadInts(ctx->GetInputTensor(1), &ax) || ax.size() != 1) return Fail(ctx, std::string("the generated C needs ") + ctx->GetNodeType() + "'s axis as a constant scalar");
    const Shape& in = x->GetShape();
    int64_t axis = 0, outer = 1, inner = 1;
    if (!NormalizeAxis(ax[0], static_cast<int64_t>(in.GetDimNum()), &axis)) return Fail(ctx, AxisError(ax[0], in.GetDimNum()));
    for (int64_t k = 0; k < axis; ++k) outer *= in.GetDim(static_cast<size_t>(k));
    for (size_t k = static_cast<size_t>(axis) + 1; k < in.GetDimNum(); ++k) inner *= in.GetDim(k);
    const int64_t n = in.GetDim(static_cast<size_t>(axis));
    const bool excl = *ctx->GetAttrs()->GetInt("exclusive") != 0, rev = *ctx->GetAttrs()->GetInt("reverse") != 0;
    const bool integer = dt != DT_FLOAT && dt != DT_DOUBLE;
    const char* op = kProduct ? " * " : " + ";
    const std::string add = integer ? "(" + t + ")((uint64_t)acc" + op + "(uint64_t)v)" : std::string("acc") + op + "v";
    const std::string N = aot::IntLit(n), I = aot::IntLit(inner);
    ctx->Run("{\n  const " + t + "* px = " + ctx->Input(0, t.c_str()) + ";\n  " + t + "* py = " + ctx->Output(0, t.c_str()) +
             ";\n  int64_t o, i, s;\n  for (o = 0; o < " + aot::IntLit(outer) + "; ++o)\n    for (i = 0; i < " + I + "; ++i) {\n      " + t +
             " acc = " + std::string(kProduct ? "1" : "0") + ";\n      for (s = 0; s < " + N + "; ++s) {\n        const int64_t at = (o * " + N + " + " + (rev ? "(" + N + " - 1 - s)" : "s") +
             ") * " + I + " + i;\n        const " + t + " v = px[at];\n" +
             (excl ? "        py[at] = acc;\n        acc = " + add + ";\n" : "        acc = " + add + ";\n        py[at] = acc;\n") +
             "      }\n    }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    std::vector<int64_t> ax;
    if (!ReadInts(ctx->GetInputTensor(1), &ax) || ax.size() != 1) return Fail(ctx, "axis must be a scalar");
    const Shape& in = x->GetShape();
    int64_t axis = 0;
    if (!NormalizeAxis(ax[0], static_cast<int64_t>(in.GetDimNum()), &axis)) return Fail(ctx, AxisError(ax[0], in.GetDimNum()));
    bool excl = *ctx->GetAttrs()->GetInt("exclusive") != 0, rev = *ctx->GetAttrs()->GetInt("reverse") != 0;
    Tensor* y = ctx->MallocOutputTensor(0, in, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t outer = 1, inner = 1, n = in.GetDim(static_cast<size_t>(axis));
    for (int64_t k = 0; k < axis; ++k) outer *= in.GetDim(k);
    for (size_t k = static_cast<size_t>(axis) + 1; k < in.GetDimNum(); ++k) inner *= in.GetDim(k);
    DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          C acc = kProduct ? C(1) : C(0);
          for (int64_t s = 0; s < n; ++s) {
            int64_t j = rev ? n - 1 - s : s, at = (o * n + j) * inner + i;
            C v = Load(x->GetData<T>()[at]);
            if (excl) {
              y->GetData<T>()[at] = Store<T>(acc);
              acc = kProduct ? WrapMul(acc, v) : WrapAdd(acc, v);
            } else {
              acc = kProduct ? WrapMul(acc, v) : WrapAdd(acc, v);
              y->GetData<T>()[at] = Store<T>(acc);
            }
          }
        }
    });
    return GRAPH_SUCCESS;
  }
};

class TopK : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // k rounds of selection per row (O(k*n), no sort): the first of equal values (lowest index)
  // wins, as Execute's stable sort gives; a scratch byte per element marks those taken.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    const std::string t = aot::CType(x->GetDataType());
    if (t.empty() || x->GetDataType() == DT_BOOL) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(x->GetDataType()) + " TopK");
    int64_t axis = 0;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(in.GetDimNum()), &axis);
    const bool largest = *ctx->GetAttrs()->GetInt("largest") != 0;
    const int64_t k = ctx->GetOutputTensor(0)->GetShape().GetDim(static_cast<size_t>(axis)), n = in.GetDim(static_cast<size_t>(axis));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in.GetDim(static_cast<size_t>(d));
    for (size_t d = static_cast<size_t>(axis) + 1; d < in.GetDimNum(); ++d) inner *= in.GetDim(d);
    if (k == 0 || outer * inner == 0) return GRAPH_SUCCESS;
    const std::string taken = ctx->Scratch(static_cast<size_t>(n));
    const std::string N = aot::IntLit(n), K = aot::IntLit(k), I = aot::IntLit(inner);
    ctx->Include("<string.h>");
    ctx->Run("{\n  const " + t + "* px = " + ctx->Input(0, t.c_str()) + ";\n  " + t + "* pv = " + ctx->Output(0, t.c_str()) +
             ";\n  int64_t* pi = " + ctx->Output(1, "int64_t") + ";\n  uint8_t* taken = (uint8_t*)(void*)" + taken +
             ";\n  int64_t o, i, j, c;\n  for (o = 0; o < " + aot::IntLit(outer) + "; ++o)\n    for (i = 0; i < " + I +
             "; ++i) {\n      const " + t + "* row = px + o * " + N + " * " + I + " + i;\n      memset(taken, 0, " + std::to_string(n) +
             "u);\n      for (j = 0; j < " + K + "; ++j) {\n        int64_t best = -1;\n        for (c = 0; c < " + N +
             "; ++c)\n          if (!taken[c] && (best < 0 || row[c * " + I + "] " + (largest ? ">" : "<") + " row[best * " + I +
             "]))\n            best = c;\n        taken[best] = 1;\n        pv[(o * " + K + " + j) * " + I + " + i] = row[best * " + I +
             "];\n        pi[(o * " + K + " + j) * " + I + " + i] = best;\n      }\n    }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    int64_t axis = 0;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(in.GetDimNum()), &axis))
      return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), in.GetDimNum()));
    std::vector<int64_t> k;
    Shape out = in;
    if (!ReadInts(ctx->GetInputTensor(1), &k)) {
      out.SetDim(static_cast<size_t>(axis), -1);
    } else {
      if (k.size() != 1 || k[0] < 0 || k[0] > in.GetDim(static_cast<size_t>(axis)))
        return Fail(ctx, "K must be a single value in [0, " + std::to_string(in.GetDim(static_cast<size_t>(axis))) + "]");
      out.SetDim(static_cast<size_t>(axis), k[0]);
    }
    *ctx->GetOutputShape(0) = out;
    *ctx->GetOutputShape(1) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
    return ctx->SetOutputDataType(1, DT_INT64);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    int64_t axis = 0;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(in.GetDimNum()), &axis);
    const Shape& os = ctx->GetOutputTensor(0)->GetShape();
    Tensor* vals = ctx->MallocOutputTensor(0, os, x->GetDataType());
    Tensor* idxs = ctx->MallocOutputTensor(1, os, DT_INT64);
    if (!vals || !idxs) return GRAPH_FAILED;
    bool largest = *ctx->GetAttrs()->GetInt("largest") != 0;
    int64_t k = os.GetDim(static_cast<size_t>(axis)), n = in.GetDim(static_cast<size_t>(axis)), outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= in.GetDim(d);
    for (size_t d = static_cast<size_t>(axis) + 1; d < in.GetDimNum(); ++d) inner *= in.GetDim(d);
    auto* order = static_cast<int64_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(int64_t)));
    if (!order) return GRAPH_FAILED;
    DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto v = [&](int64_t j) { return Load(px[(o * n + j) * inner + i]); };
          std::iota(order, order + n, 0);
          // Ties keep the lower index first, as ONNX requires.
          std::stable_sort(order, order + n, [&](int64_t a, int64_t b) { return largest ? v(a) > v(b) : v(a) < v(b); });
          for (int64_t j = 0; j < k; ++j) {
            vals->GetData<T>()[(o * k + j) * inner + i] = px[(o * n + order[j]) * inner + i];
            idxs->GetData<int64_t>()[(o * k + j) * inner + i] = order[j];
          }
        }
    });
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_reduce(std::vector<OpEntry>& out) {
  out.push_back(ReduceEntry<Red::kSum>("ReduceSum"));
  out.push_back(ReduceEntry<Red::kMean>("ReduceMean"));
  out.push_back(ReduceEntry<Red::kMax>("ReduceMax"));
  out.push_back(ReduceEntry<Red::kMin>("ReduceMin"));
  out.push_back(ReduceEntry<Red::kProd>("ReduceProd"));
  out.push_back(ReduceEntry<Red::kL1>("ReduceL1"));
  out.push_back(ReduceEntry<Red::kL2>("ReduceL2"));
  out.push_back(ReduceEntry<Red::kLogSum>("ReduceLogSum"));
  out.push_back(ReduceEntry<Red::kLogSumExp>("ReduceLogSumExp"));
  out.push_back(ReduceEntry<Red::kSumSquare>("ReduceSumSquare"));
  out.push_back(ArgEntry<true>("ArgMax"));
  out.push_back(ArgEntry<false>("ArgMin"));
  out.push_back(SoftmaxEntry<Sm::kSoftmax>("Softmax"));
  out.push_back(SoftmaxEntry<Sm::kLogSoftmax>("LogSoftmax"));
  out.push_back(SoftmaxEntry<Sm::kHardmax>("Hardmax"));
  out.push_back({OpDefBuilder("CumSum").INPUT(x, NumericTypes()).INPUT(axis, IndexTypes()).OUTPUT(y, NumericTypes()).SAME_AS_INPUT(x)
                     .ATTR(exclusive, Int, 0).ATTR(reverse, Int, 0).Build(), MakeOpImpl<Cumulative<false>>("CumSum")});
  out.push_back({OpDefBuilder("CumProd").INPUT(x, NumericTypes()).INPUT(axis, IndexTypes()).OUTPUT(y, NumericTypes()).SAME_AS_INPUT(x)
                     .ATTR(exclusive, Int, 0).ATTR(reverse, Int, 0).Build(), MakeOpImpl<Cumulative<true>>("CumProd")});
  out.push_back({OpDefBuilder("TopK").INPUT(X, NumericTypes()).INPUT(K, TensorType({DT_INT64})).OUTPUT(Values, NumericTypes())
                     .OUTPUT(Indices, TensorType({DT_INT64})).ATTR(axis, Int, -1).ATTR(largest, Int, 1).ATTR(sorted, Int, 1).Build(),
                 MakeOpImpl<TopK>("TopK")});
}

}  // namespace weft::ops
