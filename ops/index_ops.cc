// Index and selection operators exported models use around their main layers: OneHot, EyeLike,
// Compress, ReverseSequence, Shrink, NonMaxSuppression (the box selection of detection models),
// MaxUnpool, Det and Unique.
// Semantics are ONNX's; where the specification leaves a choice, ONNX Runtime's is taken and said.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <type_traits>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

// A scalar (or one-element tensor) of any numeric type as double; false when absent or not one element.
bool ScalarValue(const Tensor* t, double* v) {
  if (!t || !t->GetAddr() || t->GetShapeSize() != 1) return false;
  bool ok = DispatchAll(t->GetDataType(), [&](auto tag) {
    using T = decltype(tag);
    *v = static_cast<double>(Load(t->GetData<T>()[0]));
  });
  return ok;
}

// A tensor as slices along an axis attribute, or (the attribute INT64_MIN: not given) as the
// elements of the flattened tensor: slice k holds elements (o, k, i), o < outer, i < inner.
struct AxisSlices {
  bool flat = true;
  int64_t axis = 0, outer = 1, len = 0, inner = 1;
  bool Make(const KernelContextBase* ctx, const Shape& s) {
    const int64_t a = *ctx->GetAttrs()->GetInt("axis"), rank = static_cast<int64_t>(s.GetDimNum());
    flat = a == INT64_MIN;
    if (flat) {
      len = s.GetShapeSize();
      return true;
    }
    if (!NormalizeAxis(a, rank, &axis)) return Fail(ctx, AxisError(a, rank)), false;
    for (int64_t d = 0; d < axis; ++d) outer *= s.GetDim(static_cast<size_t>(d));
    len = s.GetDim(static_cast<size_t>(axis));
    for (int64_t d = axis + 1; d < rank; ++d) inner *= s.GetDim(static_cast<size_t>(d));
    return true;
  }
  // The tensor with `n` slices: [n] when flattened.
  Shape With(const Shape& s, int64_t n) const {
    if (flat) return Shape({n});
    Shape o = s;
    o.SetDim(static_cast<size_t>(axis), n);
    return o;
  }
};

// ---- OneHot(indices, depth, values) -> one-hot along `axis` ------------------------------------
// indices of any numeric type (fractions truncated, negative ones count from depth); an index
// outside [-depth, depth) gives a row of off values, as ONNX Runtime does.
class OneHot : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Indices and the off/on values read at run time; depth fixed (the output's shape holds it).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* ind = ctx->GetInputTensor(0);
    const Tensor* y = ctx->GetOutputTensor(0);
    const std::string ti = aot::CType(ind->GetDataType());
    if (ti.empty()) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(ind->GetDataType()) + " indices");
    const Shape& out = y->GetShape();
    int64_t axis = *ctx->GetAttrs()->GetInt("axis");
    NormalizeAxis(axis, static_cast<int64_t>(out.GetDimNum()), &axis);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out.GetDim(static_cast<size_t>(d));
    for (size_t d = static_cast<size_t>(axis) + 1; d < out.GetDimNum(); ++d) inner *= out.GetDim(d);
    const int64_t depth = out.GetDim(static_cast<size_t>(axis));
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;
    const std::string elem = std::to_string(DataTypeSize(y->GetDataType())), D = aot::IntLit(depth), I = aot::IntLit(inner);
    ctx->Include("<string.h>");
    ctx->Run("{\n  const " + ti + "* pi = " + ctx->Input(0, ti.c_str()) + ";\n  const uint8_t* off = " + ctx->Input(2, "uint8_t") +
             ";\n  const uint8_t* on = off + " + elem + ";\n  uint8_t* py = " + ctx->Output(0, "uint8_t") +
             ";\n  int64_t o, d, i;\n  for (o = 0; o < " + aot::IntLit(outer) + "; ++o)\n    for (i = 0; i < " + I +
             "; ++i) {\n      const double v = (double)pi[o * " + I + " + i];\n      int64_t hot = -1;\n      if (!(v != v || v >= (double)" + D +
             " || v <= -(double)" + D + " - 1)) {\n        hot = (int64_t)v; /* toward zero */\n        if (hot < 0) hot += " + D +
             ";\n      }\n      for (d = 0; d < " + D + "; ++d)\n        memcpy(py + ((o * " + D + " + d) * " + I + " + i) * " + elem +
             ", d == hot ? on : off, " + elem + ");\n    }\n}\n");
    return GRAPH_SUCCESS;
  }
  static bool Depth(const KernelContextBase* ctx, const Tensor* t, int64_t* depth) {
    double d = 0;
    if (!ScalarValue(t, &d)) return false;
    if (!(d >= 1) || d > double(int64_t(1) << 40)) {
      Fail(ctx, "depth must be a positive number (at most 2^40), not " + std::to_string(d));
      *depth = -1;
      return true;
    }
    *depth = static_cast<int64_t>(d);
    return true;
  }
  static bool OutputShape(const KernelContextBase* ctx, const Shape& in, int64_t depth, Shape* out) {
    const int64_t rank = static_cast<int64_t>(in.GetDimNum()) + 1;
    int64_t axis = *ctx->GetAttrs()->GetInt("axis");
    if (!NormalizeAxis(axis, rank, &axis)) return Fail(ctx, AxisError(axis, rank)), false;
    if (rank > WEFT_MAX_DIMS) return Fail(ctx, "the output would have more than " + std::to_string(WEFT_MAX_DIMS) + " dims"), false;
    std::vector<int64_t> dims = in.ToVector();
    dims.insert(dims.begin() + axis, depth);
    *out = Shape(dims);
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& values = *ctx->GetInputShape(2);
    if (values.GetShapeSize() != 2 && !values.IsUnknown()) return Fail(ctx, "values must hold two elements [off, on], not " + values.ToString());
    int64_t depth = -1;
    if (Depth(ctx, ctx->GetInputTensor(1), &depth) && depth < 0) return GRAPH_FAILED;
    Shape out;
    if (!OutputShape(ctx, *ctx->GetInputShape(0), depth, &out)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, ctx->GetInputDataType(2)); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* ind = ctx->GetInputTensor(0);
    const Tensor* values = ctx->GetInputTensor(2);
    int64_t depth = -1;
    if (!Depth(ctx, ctx->GetInputTensor(1), &depth)) return Fail(ctx, "depth must hold one number");
    if (depth < 0) return GRAPH_FAILED;
    if (values->GetShapeSize() != 2) return Fail(ctx, "values must hold two elements [off, on], not " + values->GetShape().ToString());
    Shape out;
    if (!OutputShape(ctx, ind->GetShape(), depth, &out)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, out, values->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t axis = *ctx->GetAttrs()->GetInt("axis");
    NormalizeAxis(axis, static_cast<int64_t>(out.GetDimNum()), &axis);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out.GetDim(static_cast<size_t>(d));
    for (size_t d = static_cast<size_t>(axis) + 1; d < out.GetDimNum(); ++d) inner *= out.GetDim(d);
    std::vector<int64_t> idx(static_cast<size_t>(ind->GetShapeSize()));
    bool ok = DispatchNumeric(ind->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* p = ind->GetData<T>();
      for (size_t k = 0; k < idx.size(); ++k) {
        const double v = static_cast<double>(Load(p[k]));
        if (v != v || v >= double(depth) || v <= -double(depth) - 1) {
          idx[k] = -1;  // outside [-depth, depth): a row of off values
          continue;
        }
        const int64_t i = static_cast<int64_t>(v);  // toward zero, as ONNX Runtime reads a fractional index
        idx[k] = i < 0 ? i + depth : i;
      }
    });
    if (!ok) return Fail(ctx, std::string("indices of type ") + DataTypeName(ind->GetDataType()) + " are not supported");
    const size_t elem = DataTypeSize(values->GetDataType());
    const uint8_t* off = values->GetData<uint8_t>();
    const uint8_t* on = off + elem;
    uint8_t* py = y->GetData<uint8_t>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t d = 0; d < depth; ++d)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t at = (o * depth + d) * inner + i;
          std::memcpy(py + at * elem, idx[static_cast<size_t>(o * inner + i)] == d ? on : off, elem);
        }
    return GRAPH_SUCCESS;
  }
};

// ---- EyeLike(input) -> ones on the diagonal shifted by k, of the input's shape -----------------
class EyeLike : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s = *ctx->GetInputShape(0);
    if (s.GetDimNum() != 2) return Fail(ctx, "the input must be 2-D, not " + s.ToString());
    *ctx->GetOutputShape(0) = s;
    return GRAPH_SUCCESS;
  }
  static DataType OutType(const KernelContextBase* ctx, DataType in) {
    const DataType* t = ctx->GetAttrs()->GetDataType("dtype");
    return t && *t != DT_UNDEFINED ? *t : in;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType dt = OutType(ctx, ctx->GetInputDataType(0));
    if (!DispatchAll(dt, [](auto) {})) return Fail(ctx, std::string("dtype ") + DataTypeName(dt) + " is not a numeric or bool type");
    return ctx->SetOutputDataType(0, dt);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (x->GetShape().GetDimNum() != 2) return Fail(ctx, "the input must be 2-D, not " + x->GetShape().ToString());
    const DataType dt = OutType(ctx, x->GetDataType());
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), dt);
    if (!y) return GRAPH_FAILED;
    const int64_t rows = x->GetShape().GetDim(0), cols = x->GetShape().GetDim(1), k = *ctx->GetAttrs()->GetInt("k");
    std::memset(y->GetAddr(), 0, y->GetByteCount());
    bool ok = DispatchAll(dt, [&](auto tag) {
      using T = decltype(tag);
      T* p = y->GetData<T>();
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t c = r + k;
        if (c >= 0 && c < cols) p[r * cols + c] = Store<T>(static_cast<typename Compute<T>::type>(1));
      }
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("output type ") + DataTypeName(dt) + " is not supported");
  }
};

// ---- Compress(input, condition) -> the slices along `axis` (or elements of the flattened input)
// whose condition is true. A condition shorter than the axis leaves the rest out; the output's
// size depends on the condition's values (bounded by the input's). Without `axis`, the flattened
// input.
class Compress : public EagerExecuteOp, public ShapeInferOp {
 public:
  using Plan = AxisSlices;
  static bool MakePlan(const KernelContextBase* ctx, const Shape& s, int64_t cond_len, Plan* p) {
    if (!p->Make(ctx, s)) return false;
    if (cond_len > p->len && p->len >= 0)
      return Fail(ctx, "condition has " + std::to_string(cond_len) + " elements, more than the " + std::to_string(p->len) +
                           (p->flat ? " of the flattened input" : " along axis " + std::to_string(p->axis))),
             false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s = *ctx->GetInputShape(0);
    const Shape& c = *ctx->GetInputShape(1);
    if (c.GetDimNum() != 1) return Fail(ctx, "condition must be 1-D, not " + c.ToString());
    Plan p;
    if (!MakePlan(ctx, s, c.GetDim(0), &p)) return GRAPH_FAILED;
    const Tensor* ct = ctx->GetInputTensor(1);
    if (ct && ct->GetAddr()) {  // a constant condition: the exact size
      int64_t kept = 0;
      for (int64_t k = 0; k < ct->GetShapeSize(); ++k) kept += ct->GetData<uint8_t>()[k] != 0;
      *ctx->GetOutputShape(0) = p.With(s, kept);
      return GRAPH_SUCCESS;
    }
    Shape out = p.With(s, -1);
    *ctx->GetOutputShape(0) = out;
    if (s.IsUnknown()) return GRAPH_SUCCESS;
    return ctx->SetOutputShapeBound(0, p.With(s, c.GetDim(0) >= 0 ? std::min(c.GetDim(0), p.len) : p.len));
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* c = ctx->GetInputTensor(1);
    if (c->GetShape().GetDimNum() != 1) return Fail(ctx, "condition must be 1-D, not " + c->GetShape().ToString());
    Plan p;
    if (!MakePlan(ctx, x->GetShape(), c->GetShapeSize(), &p)) return GRAPH_FAILED;
    const uint8_t* cond = c->GetData<uint8_t>();
    std::vector<int64_t> kept;
    for (int64_t k = 0; k < c->GetShapeSize(); ++k)
      if (cond[k]) kept.push_back(k);
    Tensor* y = ctx->MallocOutputTensor(0, p.With(x->GetShape(), static_cast<int64_t>(kept.size())), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const size_t elem = DataTypeSize(x->GetDataType());
    const uint8_t* px = x->GetData<uint8_t>();
    uint8_t* py = y->GetData<uint8_t>();
    const size_t run = static_cast<size_t>(p.inner) * elem;
    for (int64_t o = 0; o < p.outer; ++o)
      for (int64_t k : kept) {
        std::memcpy(py, px + static_cast<size_t>(o * p.len + k) * run, run);
        py += run;
      }
    return GRAPH_SUCCESS;
  }
};

// ---- ReverseSequence(input, sequence_lens) -> each batch entry's first sequence_lens[b] steps
// along time_axis reversed, the rest copied.
class ReverseSequence : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Lengths read at run time; one outside [0, steps] fails the run (status 1) before anything is written.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& s = x->GetShape();
    int64_t ba, ta;
    if (!Axes(ctx, s, &ba, &ta)) return GRAPH_FAILED;
    const int64_t batch = s.GetDim(static_cast<size_t>(ba)), steps = s.GetDim(static_cast<size_t>(ta)), d1 = s.GetDim(1);
    int64_t inner = 1;
    for (size_t d = 2; d < s.GetDimNum(); ++d) inner *= s.GetDim(d);
    const std::string run = std::to_string(static_cast<uint64_t>(inner) * DataTypeSize(x->GetDataType())) + "u";
    const std::string at = ba == 0 ? "(b * " + aot::IntLit(d1) + " + STEP)" : "(STEP * " + aot::IntLit(d1) + " + b)";
    auto at_step = [&](const std::string& step) {
      std::string a = at;
      a.replace(a.find("STEP"), 4, step);
      return a;
    };
    ctx->Include("<string.h>");
    ctx->Run("{\n  const int64_t* lens = " + ctx->Input(1, "int64_t") + ";\n  const uint8_t* px = " + ctx->Input(0, "uint8_t") + ";\n  uint8_t* py = " +
             ctx->Output(0, "uint8_t") + ";\n  int64_t b, t;\n  for (b = 0; b < " + aot::IntLit(batch) + "; ++b)\n    if (lens[b] < 0 || lens[b] > " +
             aot::IntLit(steps) + ") return 1; /* a length outside [0, steps] */\n  for (b = 0; b < " + aot::IntLit(batch) + "; ++b)\n    for (t = 0; t < " +
             aot::IntLit(steps) + "; ++t) {\n      const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;\n      memcpy(py + " + at_step("t") + " * " + run +
             ", px + " + at_step("from") + " * " + run + ", " + run + ");\n    }\n}\n");
    return GRAPH_SUCCESS;
  }
  static bool Axes(const KernelContextBase* ctx, const Shape& s, int64_t* batch_axis, int64_t* time_axis) {
    *batch_axis = *ctx->GetAttrs()->GetInt("batch_axis");
    *time_axis = *ctx->GetAttrs()->GetInt("time_axis");
    if (s.GetDimNum() < 2) return Fail(ctx, "the input must have at least 2 dims, not " + s.ToString()), false;
    if (!(*batch_axis == 0 || *batch_axis == 1) || !(*time_axis == 0 || *time_axis == 1) || *batch_axis == *time_axis)
      return Fail(ctx, "batch_axis and time_axis must be 0 and 1 in either order, not " + std::to_string(*batch_axis) + " and " +
                           std::to_string(*time_axis)),
             false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s = *ctx->GetInputShape(0);
    int64_t ba, ta;
    if (!Axes(ctx, s, &ba, &ta)) return GRAPH_FAILED;
    const Shape& l = *ctx->GetInputShape(1);
    if (l.GetDimNum() != 1 || (l.GetDim(0) >= 0 && s.GetDim(static_cast<size_t>(ba)) >= 0 && l.GetDim(0) != s.GetDim(static_cast<size_t>(ba))))
      return Fail(ctx, "sequence_lens " + l.ToString() + " must hold one length per batch entry of " + s.ToString());
    *ctx->GetOutputShape(0) = s;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* l = ctx->GetInputTensor(1);
    const Shape& s = x->GetShape();
    int64_t ba, ta;
    if (!Axes(ctx, s, &ba, &ta)) return GRAPH_FAILED;
    const int64_t batch = s.GetDim(static_cast<size_t>(ba)), steps = s.GetDim(static_cast<size_t>(ta));
    std::vector<int64_t> lens;
    if (!ReadInts(l, &lens) || static_cast<int64_t>(lens.size()) != batch)
      return Fail(ctx, "sequence_lens " + l->GetShape().ToString() + " must hold one length per batch entry (" + std::to_string(batch) + ")");
    for (size_t b = 0; b < lens.size(); ++b)
      if (lens[b] < 0 || lens[b] > steps)
        return Fail(ctx, "sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) + " is outside [0, " + std::to_string(steps) + "]");
    Tensor* y = ctx->MallocOutputTensor(0, s, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t inner = 1;
    for (size_t d = 2; d < s.GetDimNum(); ++d) inner *= s.GetDim(d);
    const size_t run = static_cast<size_t>(inner) * DataTypeSize(x->GetDataType());
    const uint8_t* px = x->GetData<uint8_t>();
    uint8_t* py = y->GetData<uint8_t>();
    const int64_t d1 = s.GetDim(1);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t from = t < lens[static_cast<size_t>(b)] ? lens[static_cast<size_t>(b)] - 1 - t : t;
        auto at = [&](int64_t step) { return static_cast<size_t>(ba == 0 ? b * d1 + step : step * d1 + b) * run; };
        std::memcpy(py + at(t), px + at(from), run);
      }
    return GRAPH_SUCCESS;
  }
};

// ---- Shrink(input): x < -lambd ? x + bias : x > lambd ? x - bias : 0 ------------------------------
// Compared and added in floating point, then stored in the input's type, as ONNX Runtime and the
// ONNX reference compute it (an integer result truncated toward zero and, beyond ONNX Runtime,
// clamped to the type's range instead of an undefined conversion).
class Shrink : public EagerExecuteOp, public EmittableOp {
 public:
  // The runtime's arithmetic: float in float, double in double, integers in double clamped.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType dt = x->GetDataType();
    const std::string t = aot::CType(dt);
    if (t.empty() || dt == DT_BOOL) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " Shrink");
    if (x->GetShapeSize() == 0) return GRAPH_SUCCESS;
    const float bias = *ctx->GetAttrs()->GetFloat("bias"), lambd = *ctx->GetAttrs()->GetFloat("lambd");
    ctx->Include("<math.h>");
    ctx->Include("<stdint.h>");
    std::string body;
    if (dt == DT_FLOAT || dt == DT_DOUBLE) {
      const std::string cast = dt == DT_FLOAT ? "" : "(double)";
      body = "const " + t + " b = " + cast + aot::FloatLit(bias) + ", lam = " + cast + aot::FloatLit(lambd) +
             ";\n    const " + t + " v = px[i];\n    py[i] = v < -lam ? v + b : v > lam ? v - b : (" + t + ")0;";
    } else {
      static const std::map<DataType, std::pair<const char*, const char*>> kRange = {
          {DT_INT8, {"INT8_MIN", "INT8_MAX"}},     {DT_UINT8, {"0", "UINT8_MAX"}},   {DT_INT16, {"INT16_MIN", "INT16_MAX"}},
          {DT_UINT16, {"0", "UINT16_MAX"}},        {DT_INT32, {"INT32_MIN", "INT32_MAX"}}, {DT_UINT32, {"0", "UINT32_MAX"}},
          {DT_INT64, {"INT64_MIN", "INT64_MAX"}},  {DT_UINT64, {"0", "UINT64_MAX"}}};
      const auto& [lo, hi] = kRange.at(dt);
      body = "const double b = (double)" + aot::FloatLit(bias) + ", lam = (double)" + aot::FloatLit(lambd) +
             ";\n    const double d = (double)px[i];\n    const double r = d < -lam ? d + b : d > lam ? d - b : 0.0;\n    py[i] = r != r ? (" + t +
             ")0 : r <= (double)" + lo + " ? (" + t + ")" + lo + " : r >= (double)" + hi + " ? (" + t + ")" + hi + " : (" + t + ")r;";
    }
    ctx->Run("{\n  const " + t + "* px = " + ctx->Input(0, t.c_str()) + ";\n  " + t + "* py = " + ctx->Output(0, t.c_str()) +
             ";\n  int64_t i;\n  for (i = 0; i < " + aot::IntLit(x->GetShapeSize()) + "; ++i) {\n    " + body + "\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const float bias = *ctx->GetAttrs()->GetFloat("bias"), lambd = *ctx->GetAttrs()->GetFloat("lambd");
    const int64_t n = x->GetShapeSize();
    bool ok = DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const T* p = x->GetData<T>();
      T* q = y->GetData<T>();
      for (int64_t k = 0; k < n; ++k) {
        const C v = Load(p[k]);
        if constexpr (std::is_integral<C>::value) {
          const double d = static_cast<double>(v);
          const double r = d < -double(lambd) ? d + double(bias) : d > double(lambd) ? d - double(bias) : 0.0;
          const double lo = static_cast<double>(std::numeric_limits<C>::lowest()), hi = static_cast<double>(std::numeric_limits<C>::max());
          q[k] = r != r ? C(0) : r <= lo ? std::numeric_limits<C>::lowest() : r >= hi ? std::numeric_limits<C>::max() : static_cast<C>(r);
        } else {
          const C b = static_cast<C>(bias), lam = static_cast<C>(lambd);
          q[k] = Store<T>(static_cast<C>(v < -lam ? v + b : v > lam ? v - b : C(0)));
        }
      }
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("type ") + DataTypeName(x->GetDataType()) + " is not supported");
  }
};

// ---- NonMaxSuppression(boxes, scores, max_output_boxes_per_class?, iou_threshold?, score_threshold?)
// -> selected_indices int64 [n, 3] of (batch, class, box). Per batch and class: the boxes whose
// score exceeds score_threshold (when given), highest score first (ties: the lower box index), each
// kept unless its IoU with a box already kept exceeds iou_threshold, at most
// max_output_boxes_per_class of them (absent or 0: none). Boxes are corners [y1, x1, y2, x2] in
// either order (center_point_box 0) or [x_center, y_center, width, height] (1). A box of no area
// suppresses nothing. float32 arithmetic, as ONNX Runtime's.
class NonMaxSuppression : public EagerExecuteOp, public ShapeInferOp {
 public:
  struct Dims {
    int64_t batches = 0, classes = 0, boxes = 0;
  };
  static bool Check(const KernelContextBase* ctx, const Shape& b, const Shape& s, Dims* d) {
    if (b.GetDimNum() != 3 || (b.GetDim(2) != 4 && b.GetDim(2) >= 0))
      return Fail(ctx, "boxes must be [num_batches, spatial_dimension, 4], not " + b.ToString()), false;
    if (s.GetDimNum() != 3) return Fail(ctx, "scores must be [num_batches, num_classes, spatial_dimension], not " + s.ToString()), false;
    if ((b.GetDim(0) >= 0 && s.GetDim(0) >= 0 && b.GetDim(0) != s.GetDim(0)) || (b.GetDim(1) >= 0 && s.GetDim(2) >= 0 && b.GetDim(1) != s.GetDim(2)))
      return Fail(ctx, "boxes " + b.ToString() + " and scores " + s.ToString() + " disagree on the batches or the boxes"), false;
    const int64_t cpb = *ctx->GetAttrs()->GetInt("center_point_box");
    if (cpb != 0 && cpb != 1) return Fail(ctx, "center_point_box must be 0 or 1, not " + std::to_string(cpb)), false;
    d->batches = b.GetDim(0), d->boxes = b.GetDim(1), d->classes = s.GetDim(1);
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Dims d;
    if (!Check(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), &d)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({-1, 3});
    if (d.batches < 0 || d.boxes < 0 || d.classes < 0) return GRAPH_SUCCESS;
    int64_t per_class = d.boxes;
    double m = 0;
    if (ScalarValue(ctx->GetOptionalInputTensor(2), &m)) per_class = std::min<int64_t>(per_class, m > 0 ? static_cast<int64_t>(std::min(m, 9e18)) : 0);
    int64_t bound = 0;
    if (__builtin_mul_overflow(d.batches * d.classes, per_class, &bound)) return Fail(ctx, "too many boxes");
    return ctx->SetOutputShapeBound(0, Shape({bound, 3}));
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_INT64); }

  // Corners of box k as (y_min, x_min, y_max, x_max).
  static void Corners(const float* b, bool center, float* c) {
    if (center) {
      const float hw = b[2] / 2, hh = b[3] / 2;
      c[0] = b[1] - hh, c[1] = b[0] - hw, c[2] = b[1] + hh, c[3] = b[0] + hw;
    } else {
      c[0] = std::min(b[0], b[2]), c[1] = std::min(b[1], b[3]), c[2] = std::max(b[0], b[2]), c[3] = std::max(b[1], b[3]);
    }
  }
  static bool Suppresses(const float* a, const float* b, float iou_threshold) {
    const float ix0 = std::max(a[1], b[1]), ix1 = std::min(a[3], b[3]);
    if (ix1 <= ix0) return false;
    const float iy0 = std::max(a[0], b[0]), iy1 = std::min(a[2], b[2]);
    if (iy1 <= iy0) return false;
    const float inter = (ix1 - ix0) * (iy1 - iy0);
    if (inter <= 0.f) return false;
    const float area_a = (a[3] - a[1]) * (a[2] - a[0]), area_b = (b[3] - b[1]) * (b[2] - b[0]);
    const float uni = area_a + area_b - inter;
    if (area_a <= 0.f || area_b <= 0.f || uni <= 0.f) return false;
    return inter / uni > iou_threshold;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* boxes = ctx->GetInputTensor(0);
    const Tensor* scores = ctx->GetInputTensor(1);
    Dims d;
    if (!Check(ctx, boxes->GetShape(), scores->GetShape(), &d)) return GRAPH_FAILED;
    if (boxes->GetDataType() != DT_FLOAT || scores->GetDataType() != DT_FLOAT) return Fail(ctx, "boxes and scores must be float32");
    auto optional = [&](size_t k, const char* name, double* v) -> int {  // 1: given, 0: absent, -1: malformed
      const Tensor* t = ctx->GetOptionalInputTensor(k);
      if (!t || t->GetShapeSize() == 0) return 0;
      if (!ScalarValue(t, v)) return Fail(ctx, std::string(name) + " must hold one value, not " + t->GetShape().ToString()), -1;
      return 1;
    };
    double max_out = 0, iou = 0, score_min = 0;
    int has_max = optional(2, "max_output_boxes_per_class", &max_out), has_iou = optional(3, "iou_threshold", &iou),
        has_score = optional(4, "score_threshold", &score_min);
    if (has_max < 0 || has_iou < 0 || has_score < 0) return GRAPH_FAILED;
    if (has_iou && !(iou >= 0.0 && iou <= 1.0)) return Fail(ctx, "iou_threshold must be in [0, 1], not " + std::to_string(iou));
    const int64_t per_class = has_max && max_out > 0 ? static_cast<int64_t>(std::min(max_out, 9e18)) : 0;
    const bool center = *ctx->GetAttrs()->GetInt("center_point_box") == 1;
    const float iou_f = static_cast<float>(iou), score_f = static_cast<float>(score_min);
    const float* pb = boxes->GetData<float>();
    const float* ps = scores->GetData<float>();
    std::vector<int64_t> selected;  // (batch, class, box) triples
    std::vector<int64_t> order;
    std::vector<float> corners(d.batches > 0 && d.classes > 0 && per_class > 0 ? static_cast<size_t>(d.boxes) * 4 : 0);
    std::vector<int64_t> kept;
    for (int64_t b = 0; b < d.batches && per_class > 0; ++b) {
      for (int64_t k = 0; k < d.boxes; ++k) Corners(pb + (b * d.boxes + k) * 4, center, &corners[static_cast<size_t>(k) * 4]);
      for (int64_t c = 0; c < d.classes; ++c) {
        const float* sc = ps + (b * d.classes + c) * d.boxes;
        order.clear();
        for (int64_t k = 0; k < d.boxes; ++k)
          if (!has_score || sc[k] > score_f) order.push_back(k);
        // Highest first; a NaN score ranks below every number (a consistent order for the sort).
        auto key = [&](int64_t k) { return sc[k] != sc[k] ? -std::numeric_limits<float>::infinity() : sc[k]; };
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return key(x) > key(y); });
        kept.clear();
        for (int64_t k : order) {
          if (static_cast<int64_t>(kept.size()) >= per_class) break;
          bool keep = true;
          for (int64_t j : kept)
            if (Suppresses(&corners[static_cast<size_t>(k) * 4], &corners[static_cast<size_t>(j) * 4], iou_f)) {
              keep = false;
              break;
            }
          if (!keep) continue;
          kept.push_back(k);
          selected.insert(selected.end(), {b, c, k});
        }
      }
    }
    Tensor* y = ctx->MallocOutputTensor(0, Shape({static_cast<int64_t>(selected.size() / 3), 3}), DT_INT64);
    if (!y) return GRAPH_FAILED;
    if (!selected.empty()) std::memcpy(y->GetAddr(), selected.data(), selected.size() * sizeof(int64_t));
    return GRAPH_SUCCESS;
  }
};

// ---- MaxUnpool(X, I, output_shape?) -> zeros with X's values at the flat positions I names
// (MaxPool's Indices: positions in the whole output, batch and channels included). The output
// shape is output_shape when given (at least the computed one), else (in - 1) * stride - pads +
// kernel per spatial dim.
class MaxUnpool : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Zeros, then each element at its index; an index outside the output fails the run (status 1).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* y = ctx->GetOutputTensor(0);
    const size_t elem = DataTypeSize(x->GetDataType());
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;
    const std::string e = std::to_string(elem);
    ctx->Include("<string.h>");
    ctx->Run("{\n  const uint8_t* px = " + ctx->Input(0, "uint8_t") + ";\n  const int64_t* pi = " + ctx->Input(1, "int64_t") + ";\n  uint8_t* py = " +
             ctx->Output(0, "uint8_t") + ";\n  int64_t k;\n  memset(py, 0, " + aot::IntLit(y->GetShapeSize()) + " * " + e + ");\n  for (k = 0; k < " +
             aot::IntLit(x->GetShapeSize()) + "; ++k) {\n    if (pi[k] < 0 || pi[k] >= " + aot::IntLit(y->GetShapeSize()) +
             ") return 1;\n    memcpy(py + pi[k] * " + e + ", px + k * " + e + ", " + e + ");\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  static bool OutShape(const KernelContextBase* ctx, const Shape& x, const Tensor* given, Shape* out) {
    const size_t r = x.GetDimNum();
    if (r < 3) return Fail(ctx, "X must be [N, C, spatial...], not " + x.ToString()), false;
    const size_t sp = r - 2;
    ListView<int64_t> k = ctx->GetAttrs()->GetListInt("kernel_shape"), s = ctx->GetAttrs()->GetListInt("strides"),
                      p = ctx->GetAttrs()->GetListInt("pads");
    if (k.size() != sp) return Fail(ctx, "kernel_shape must have one entry per spatial dim of " + x.ToString()), false;
    if ((s.size() && s.size() != sp) || (p.size() && p.size() != 2 * sp))
      return Fail(ctx, "strides must have " + std::to_string(sp) + " entries and pads " + std::to_string(2 * sp)), false;
    std::vector<int64_t> d{x.GetDim(0), x.GetDim(1)};
    for (size_t i = 0; i < sp; ++i) {
      const int64_t st = s.size() ? s[i] : 1, pb = p.size() ? p[i] : 0, pe = p.size() ? p[i + sp] : 0, in = x.GetDim(2 + i);
      if (k[i] <= 0 || st <= 0 || pb < 0 || pe < 0 || k[i] > (1 << 20) || st > (1 << 20) || pb > (1 << 20) || pe > (1 << 20))
        return Fail(ctx, "kernel_shape and strides must be positive and pads not negative (at most 2^20)"), false;
      if (pb >= k[i] || pe >= k[i]) return Fail(ctx, "pads must be smaller than the kernel (" + std::to_string(k[i]) + ") along spatial dim " + std::to_string(i)), false;
      d.push_back(in < 0 ? -1 : (in - 1) * st - pb - pe + k[i]);
      if (in >= 0 && d.back() < 0) return Fail(ctx, "the computed output dim " + std::to_string(i) + " is negative"), false;
    }
    if (given) {
      std::vector<int64_t> g;
      if (!ReadInts(given, &g)) {
        MarkUnknown(out, r);
        return true;
      }
      if (g.size() != r) return Fail(ctx, "output_shape must have " + std::to_string(r) + " entries, not " + std::to_string(g.size())), false;
      for (size_t i = 0; i < r; ++i)
        if (g[i] < 0 || (i < 2 && d[i] >= 0 && g[i] != d[i]) || (i >= 2 && d[i] >= 0 && g[i] < d[i]))
          return Fail(ctx, "output_shape dim " + std::to_string(i) + " (" + std::to_string(g[i]) + ") must keep N and C and not be smaller than the computed " +
                               std::to_string(d[i])), false;
      d = g;
    }
    *out = Shape(d);
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    const Shape& i = *ctx->GetInputShape(1);
    if (!x.IsUnknown() && !i.IsUnknown() && !(x == i)) return Fail(ctx, "I " + i.ToString() + " must have X's shape " + x.ToString());
    Shape out;
    if (!OutShape(ctx, x, ctx->GetOptionalInputTensor(2), &out)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* ind = ctx->GetInputTensor(1);
    if (!(x->GetShape() == ind->GetShape())) return Fail(ctx, "I " + ind->GetShape().ToString() + " must have X's shape " + x->GetShape().ToString());
    Shape out;
    if (!OutShape(ctx, x->GetShape(), ctx->GetOptionalInputTensor(2), &out)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, out, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    std::memset(y->GetAddr(), 0, y->GetByteCount());
    // An index is a flat position in the output (MaxPool's Indices over the tensor this one
    // restores), as ONNX Runtime reads it; with an output_shape larger than the computed one the
    // ONNX reference instead keeps coordinates in the computed shape.
    const int64_t total = y->GetShapeSize(), n = x->GetShapeSize();
    const size_t elem = DataTypeSize(x->GetDataType());
    const int64_t* pi = ind->GetData<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      if (pi[k] < 0 || pi[k] >= total)
        return Fail(ctx, "index " + std::to_string(pi[k]) + " (element " + std::to_string(k) + " of I) is outside the output's " +
                             std::to_string(total) + " elements " + out.ToString());
      std::memcpy(y->GetData<uint8_t>() + pi[k] * static_cast<int64_t>(elem), x->GetData<uint8_t>() + k * static_cast<int64_t>(elem), elem);
    }
    return GRAPH_SUCCESS;
  }
};

// ---- Det(X [..., M, M]) -> the determinants [...]: LU with partial pivoting in double.
class Det : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The runtime's LU with partial pivoting in double, one matrix at a time in scratch.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType dt = x->GetDataType();
    if (dt != DT_FLOAT && dt != DT_DOUBLE) return Fail(ctx, "the generated C has float32 and float64 Det only");
    const Shape& xs = x->GetShape();
    const size_t r = xs.GetDimNum();
    if (r < 2 || xs.GetDim(r - 1) != xs.GetDim(r - 2)) return Fail(ctx, "X must be [..., M, M], not " + xs.ToString());
    const int64_t m = xs.GetDim(r - 1), count = ctx->GetOutputTensor(0)->GetShapeSize();
    if (count == 0) return GRAPH_SUCCESS;
    const std::string t = aot::CType(dt), M = aot::IntLit(m);
    const std::string a = ctx->Scratch(static_cast<size_t>(std::max<int64_t>(m * m, 1)) * sizeof(double));
    ctx->Include("<math.h>");
    ctx->Run("{\n  const " + t + "* px = " + ctx->Input(0, t.c_str()) + ";\n  " + t + "* py = " + ctx->Output(0, t.c_str()) +
             ";\n  double* a = (double*)(void*)" + a + ";\n  int64_t b, i, j, c;\n  for (b = 0; b < " + aot::IntLit(count) +
             "; ++b) {\n    int nan = 0;\n    double det = 1;\n    for (i = 0; i < " + M + " * " + M + "; ++i) {\n      a[i] = (double)px[b * " + M +
             " * " + M + " + i];\n      if (a[i] != a[i]) nan = 1;\n    }\n    if (nan) det = NAN;\n    for (c = 0; c < " + M +
             " && det != 0 && !nan; ++c) {\n      int64_t piv = c;\n      double p;\n      for (i = c + 1; i < " + M +
             "; ++i)\n        if (fabs(a[i * " + M + " + c]) > fabs(a[piv * " + M + " + c])) piv = i;\n      if (a[piv * " + M +
             " + c] == 0) {\n        det = 0;\n        break;\n      }\n      if (piv != c) {\n        for (j = 0; j < " + M +
             "; ++j) {\n          const double s = a[c * " + M + " + j];\n          a[c * " + M + " + j] = a[piv * " + M + " + j];\n          a[piv * " +
             M + " + j] = s;\n        }\n        det = -det;\n      }\n      p = a[c * " + M + " + c];\n      det *= p;\n      for (i = c + 1; i < " + M +
             "; ++i) {\n        const double f = a[i * " + M + " + c] / p;\n        for (j = c; j < " + M + "; ++j) a[i * " + M + " + j] -= f * a[c * " + M +
             " + j];\n      }\n    }\n    py[b] = (" + t + ")det;\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    const size_t r = x.GetDimNum();
    if (r < 2 || (x.GetDim(r - 1) >= 0 && x.GetDim(r - 2) >= 0 && x.GetDim(r - 1) != x.GetDim(r - 2)))
      return Fail(ctx, "X must be [..., M, M], not " + x.ToString());
    std::vector<int64_t> d = x.ToVector();
    d.resize(r - 2);
    *ctx->GetOutputShape(0) = Shape(d);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    const size_t r = xs.GetDimNum();
    if (r < 2 || xs.GetDim(r - 1) != xs.GetDim(r - 2)) return Fail(ctx, "X must be [..., M, M], not " + xs.ToString());
    std::vector<int64_t> d = xs.ToVector();
    d.resize(r - 2);
    Tensor* y = ctx->MallocOutputTensor(0, Shape(d), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const int64_t m = xs.GetDim(r - 1), count = y->GetShapeSize();
    if (count == 0) return GRAPH_SUCCESS;
    std::vector<double> a(static_cast<size_t>(m * m));
    bool ok = DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      for (int64_t b = 0; b < count; ++b) {
        bool nan = false;
        for (int64_t i = 0; i < m * m; ++i) {
          a[static_cast<size_t>(i)] = static_cast<double>(Load(px[b * m * m + i]));
          nan = nan || a[static_cast<size_t>(i)] != a[static_cast<size_t>(i)];
        }
        double det = nan ? std::numeric_limits<double>::quiet_NaN() : 1;  // NaN in, NaN out (as ONNX Runtime)
        for (int64_t c = 0; c < m && det != 0 && !nan; ++c) {
          int64_t piv = c;
          for (int64_t i = c + 1; i < m; ++i)
            if (std::fabs(a[static_cast<size_t>(i * m + c)]) > std::fabs(a[static_cast<size_t>(piv * m + c)])) piv = i;
          if (a[static_cast<size_t>(piv * m + c)] == 0) {
            det = 0;
            break;
          }
          if (piv != c) {
            for (int64_t j = 0; j < m; ++j) std::swap(a[static_cast<size_t>(c * m + j)], a[static_cast<size_t>(piv * m + j)]);
            det = -det;
          }
          const double p = a[static_cast<size_t>(c * m + c)];
          det *= p;
          for (int64_t i = c + 1; i < m; ++i) {
            const double f = a[static_cast<size_t>(i * m + c)] / p;
            for (int64_t j = c; j < m; ++j) a[static_cast<size_t>(i * m + j)] -= f * a[static_cast<size_t>(c * m + j)];
          }
        }
        py[b] = Store<T>(static_cast<typename Compute<T>::type>(det));
      }
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("type ") + DataTypeName(x->GetDataType()) + " is not supported");
  }
};

// ---- Unique(X) -> (Y, indices, inverse_indices, counts): the distinct elements of the flattened
// X, or the distinct slices along `axis`; ascending (sorted = 1; slices compared element by
// element) or in order of first appearance. indices: where each first appears; inverse_indices:
// for each element or slice of X, its position in Y; counts: how often each appears. Floats
// compare by value (-0.0 equals 0.0); NaNs are equal to each other and sort last.
class Unique : public EagerExecuteOp, public ShapeInferOp {
 public:
  using Plan = AxisSlices;
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s = *ctx->GetInputShape(0);
    Plan p;
    if (!p.Make(ctx, s)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = p.With(s, -1);
    for (size_t k = 1; k < 4 && k < ctx->GetComputeNodeOutputNum(); ++k) *ctx->GetOutputShape(k) = Shape({k == 2 ? p.len : -1});
    if (s.IsUnknown()) return GRAPH_SUCCESS;
    if (ctx->SetOutputShapeBound(0, p.With(s, p.len)) != GRAPH_SUCCESS) return GRAPH_FAILED;
    for (size_t k : {size_t(1), size_t(3)})
      if (k < ctx->GetComputeNodeOutputNum() && ctx->SetOutputShapeBound(k, Shape({p.len})) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (ctx->SetOutputDataType(0, ctx->GetInputDataType(0)) != GRAPH_SUCCESS) return GRAPH_FAILED;
    for (size_t k = 1; k < ctx->GetComputeNodeOutputNum(); ++k)
      if (ctx->SetOutputDataType(k, DT_INT64) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Plan p;
    if (!p.Make(ctx, x->GetShape())) return GRAPH_FAILED;
    const bool sorted = *ctx->GetAttrs()->GetInt("sorted") != 0;
    // Slice k of X: elements (o, k, i) for o < outer, i < inner.
    std::vector<int64_t> order(static_cast<size_t>(p.len));  // slice indices, sorted as the output wants
    std::vector<int64_t> group(static_cast<size_t>(p.len));  // each slice's position in Y
    std::vector<int64_t> firsts, counts;
    bool ok = DispatchAll(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      auto val = [&](int64_t k, int64_t e) {  // element e (of outer * inner) of slice k
        const int64_t o = e / p.inner, i = e % p.inner;
        return Load(px[(o * p.len + k) * p.inner + i]);
      };
      const int64_t per = p.outer * p.inner;
      auto cmp = [&](int64_t a, int64_t b) -> int {  // total order: NaN last and equal to NaN
        for (int64_t e = 0; e < per; ++e) {
          const auto va = val(a, e), vb = val(b, e);
          const bool na = va != va, nb = vb != vb;
          if (na || nb) {
            if (na && nb) continue;
            return na ? 1 : -1;
          }
          if (va < vb) return -1;
          if (vb < va) return 1;
        }
        return 0;
      };
      std::iota(order.begin(), order.end(), int64_t(0));
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
      // Runs of equal slices in sorted order; each run's first (lowest) index is where it first appears.
      std::vector<int64_t> run_of(static_cast<size_t>(p.len));
      std::vector<int64_t> run_first, run_count;
      for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || cmp(order[i - 1], order[i]) != 0) run_first.push_back(order[i]), run_count.push_back(0);
        run_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(run_first.size()) - 1;
        ++run_count.back();
      }
      std::vector<int64_t> pos(run_first.size());  // run -> position in Y
      std::iota(pos.begin(), pos.end(), int64_t(0));
      if (!sorted) std::sort(pos.begin(), pos.end(), [&](int64_t a, int64_t b) { return run_first[static_cast<size_t>(a)] < run_first[static_cast<size_t>(b)]; });
      std::vector<int64_t> at(pos.size());
      for (size_t k = 0; k < pos.size(); ++k) at[static_cast<size_t>(pos[k])] = static_cast<int64_t>(k);
      firsts.resize(pos.size());
      counts.resize(pos.size());
      for (size_t r = 0; r < pos.size(); ++r) {
        firsts[static_cast<size_t>(at[r])] = run_first[r];
        counts[static_cast<size_t>(at[r])] = run_count[r];
      }
      for (int64_t k = 0; k < p.len; ++k) group[static_cast<size_t>(k)] = at[static_cast<size_t>(run_of[static_cast<size_t>(k)])];
    });
    if (!ok) return Fail(ctx, std::string("type ") + DataTypeName(x->GetDataType()) + " is not supported");
    const int64_t n = static_cast<int64_t>(firsts.size());
    Tensor* y = ctx->MallocOutputTensor(0, p.With(x->GetShape(), n), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const size_t elem = DataTypeSize(x->GetDataType()), run = static_cast<size_t>(p.inner) * elem;
    for (int64_t o = 0; o < p.outer; ++o)
      for (int64_t k = 0; k < n; ++k)
        std::memcpy(y->GetData<uint8_t>() + static_cast<size_t>(o * n + k) * run,
                    x->GetData<uint8_t>() + static_cast<size_t>(o * p.len + firsts[static_cast<size_t>(k)]) * run, run);
    const std::vector<int64_t>* lists[3] = {&firsts, &group, &counts};
    for (size_t k = 1; k < 4 && k < ctx->GetComputeNodeOutputNum(); ++k) {
      Tensor* t = ctx->MallocOutputTensor(k, Shape({static_cast<int64_t>(lists[k - 1]->size())}), DT_INT64);
      if (!t) return GRAPH_FAILED;
      if (!lists[k - 1]->empty()) std::memcpy(t->GetAddr(), lists[k - 1]->data(), lists[k - 1]->size() * sizeof(int64_t));
    }
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_index_ops(std::vector<OpEntry>& out) {
  const TensorType all = TensorType::ALL();
  out.push_back({OpDefBuilder("OneHot").INPUT(indices, NumericTypes()).INPUT(depth, NumericTypes()).INPUT(values, all)
                     .OUTPUT(output, all).ATTR(axis, Int, -1).Build(), MakeOpImpl<OneHot>("OneHot")});
  out.push_back({OpDefBuilder("EyeLike").INPUT(input, all).OUTPUT(output, all).ATTR(dtype, Type, DT_UNDEFINED).ATTR(k, Int, 0).Build(),
                 MakeOpImpl<EyeLike>("EyeLike")});
  out.push_back({OpDefBuilder("Compress").INPUT(input, all).INPUT(condition, TensorType({DT_BOOL})).OUTPUT(output, all)
                     .SAME_AS_INPUT(input).ATTR(axis, Int, INT64_MIN).Build(), MakeOpImpl<Compress>("Compress")});
  out.push_back({OpDefBuilder("ReverseSequence").INPUT(input, all).INPUT(sequence_lens, TensorType({DT_INT64})).OUTPUT(Y, all)
                     .SAME_AS_INPUT(input).ATTR(batch_axis, Int, 1).ATTR(time_axis, Int, 0).Build(),
                 MakeOpImpl<ReverseSequence>("ReverseSequence")});
  out.push_back({OpDefBuilder("Shrink").INPUT(input, NumericTypes()).OUTPUT(output, NumericTypes()).SAME_AS_INPUT(input)
                     .ATTR(bias, Float, 0.0).ATTR(lambd, Float, 0.5).Build(), MakeOpImpl<Shrink>("Shrink")});
  out.push_back({OpDefBuilder("NonMaxSuppression").INPUT(boxes, TensorType({DT_FLOAT})).INPUT(scores, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(max_output_boxes_per_class, TensorType({DT_INT64})).OPTIONAL_INPUT(iou_threshold, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(score_threshold, TensorType({DT_FLOAT})).OUTPUT(selected_indices, TensorType({DT_INT64}))
                     .ATTR(center_point_box, Int, 0).Build(), MakeOpImpl<NonMaxSuppression>("NonMaxSuppression")});
  out.push_back({OpDefBuilder("MaxUnpool").INPUT(X, NumericTypes()).INPUT(I, TensorType({DT_INT64})).OPTIONAL_INPUT(output_shape, TensorType({DT_INT64}))
                     .OUTPUT(output, NumericTypes()).SAME_AS_INPUT(X).REQUIRED_ATTR(kernel_shape, ListInt).ATTR(pads, ListInt, {})
                     .ATTR(strides, ListInt, {}).Build(), MakeOpImpl<MaxUnpool>("MaxUnpool")});
  out.push_back({OpDefBuilder("Unique").INPUT(X, all).OUTPUT(Y, all).SAME_AS_INPUT(X).OUTPUT(indices, TensorType({DT_INT64}))
                     .OUTPUT(inverse_indices, TensorType({DT_INT64})).OUTPUT(counts, TensorType({DT_INT64})).ATTR(axis, Int, INT64_MIN)
                     .ATTR(sorted, Int, 1).Build(), MakeOpImpl<Unique>("Unique")});
  out.push_back({OpDefBuilder("Det").INPUT(X, FloatTypes()).OUTPUT(Y, FloatTypes()).SAME_AS_INPUT(X).Build(), MakeOpImpl<Det>("Det")});
}

}  // namespace weft::ops
