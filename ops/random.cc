// Sampling operators: RandomUniform, RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli
// and Multinomial. Their draws come from the node's stream in the run context (random.h): a new
// value each run, the same sequence in every new context when the node has a seed, and never
// constant-folded.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "op_util.h"
#include "random.h"

namespace weft::ops {
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per parallel piece

// The output type: the `dtype` attribute, else `fallback`.
DataType OutType(const KernelContextBase* ctx, DataType fallback) {
  const DataType* t = ctx->GetAttrs()->GetDataType("dtype");
  return t && *t != DT_UNDEFINED ? *t : fallback;
}

// The largest value of type T below `high` (the uniform samplers' values lie in [low, high): one
// that rounds up to high in T becomes this).
template <typename T>
T Below(double high) {
  using C = typename Compute<T>::type;
  T v = Store<T>(static_cast<C>(high));
  if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
    return std::nextafter(v, -std::numeric_limits<T>::infinity());
  } else {  // float16, bfloat16: step the bit pattern toward -inf until below
    for (int guard = 0; guard < 4 && double(Load(v)) >= high; ++guard) {
      uint16_t b = v.bits;
      if (b == 0) b = 0x8001;             // +0 -> the smallest negative
      else if (b & 0x8000) b = b + 1;    // negative: away from zero
      else b = b - 1;                    // positive: toward zero
      v.bits = b;
    }
    return v;
  }
}

// RandomUniform / RandomNormal (shape from the `shape` attribute) and their -Like forms (the
// input's shape; its type unless `dtype` is given). Uniform: low + (high - low) * u, u in [0, 1),
// in [low, high) after rounding to the output type too (when low < high); normal: mean + scale * z.
template <bool kNormal, bool kLike>
class RandomFill : public EagerExecuteOp, public ShapeInferOp {
 public:
  static bool OutShape(const KernelContextBase* ctx, const Shape* like, Shape* out) {
    if (kLike) {
      *out = *like;
      return true;
    }
    ListView<int64_t> s = ctx->GetAttrs()->GetListInt("shape");
    std::vector<int64_t> d(s.begin(), s.end());
    if (d.size() > WEFT_MAX_DIMS)
      return Fail(ctx, "shape has " + std::to_string(d.size()) + " dims; tensors have at most " + std::to_string(WEFT_MAX_DIMS)), false;
    for (size_t k = 0; k < d.size(); ++k)
      if (d[k] < 0) return Fail(ctx, "shape[" + std::to_string(k) + "] is " + std::to_string(d[k]) + "; dims must not be negative"), false;
    *out = Shape(d);
    return true;
  }
  static DataType Type(const KernelContextBase* ctx, DataType in) { return OutType(ctx, kLike ? in : DT_FLOAT); }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Shape s;
    if (!OutShape(ctx, kLike ? ctx->GetInputShape(0) : nullptr, &s)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = s;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType dt = Type(ctx, kLike ? ctx->GetInputDataType(0) : DT_FLOAT);
    if (!IsFloating(dt)) return Fail(ctx, std::string("dtype must be a floating type, not ") + DataTypeName(dt));
    return ctx->SetOutputDataType(0, dt);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* like = kLike ? ctx->GetInputTensor(0) : nullptr;
    Shape s;
    if (!OutShape(ctx, like ? &like->GetShape() : nullptr, &s)) return GRAPH_FAILED;
    const DataType dt = Type(ctx, like ? like->GetDataType() : DT_FLOAT);
    if (!IsFloating(dt)) return Fail(ctx, std::string("dtype must be a floating type, not ") + DataTypeName(dt));
    const int64_t n = s.GetShapeSize();
    uint64_t first;
    const rnd::Stream* st = rnd::Take(ctx, static_cast<uint64_t>(n) * (kNormal ? 2 : 1), &first);
    if (!st) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, s, dt);
    if (!y) return GRAPH_FAILED;
    const double a = *ctx->GetAttrs()->GetFloat(kNormal ? "mean" : "low"), b = *ctx->GetAttrs()->GetFloat(kNormal ? "scale" : "high");
    const uint64_t key = st->key;
    DispatchFloat(dt, [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      T* py = y->GetData<T>();
      const bool bounded = !kNormal && a < b;
      const T top = bounded ? Below<T>(b) : T{};
      ctx->ParallelFor(n, kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const uint64_t at = first + static_cast<uint64_t>(i) * (kNormal ? 2 : 1);
          const double v = kNormal ? a + b * rnd::Normal(key, at) : a + (b - a) * rnd::Unit(rnd::Draw(key, at));
          py[i] = Store<T>(static_cast<C>(v));
          if (bounded && double(Load(py[i])) >= b) py[i] = top;
        }
      });
    });
    return GRAPH_SUCCESS;
  }
};

// Bernoulli(p) -> 1 with probability p, else 0, per element, in `dtype` (default: p's type).
// A p outside [0, 1] (or NaN) is an error naming its position.
class Bernoulli : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType dt = OutType(ctx, ctx->GetInputDataType(0));
    if (!DispatchAll(dt, [](auto) {})) return Fail(ctx, std::string("dtype ") + DataTypeName(dt) + " is not a numeric or bool type");
    return ctx->SetOutputDataType(0, dt);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* p = ctx->GetInputTensor(0);
    const int64_t n = p->GetShapeSize();
    std::vector<double> prob(static_cast<size_t>(n));
    if (!DispatchFloat(p->GetDataType(), [&](auto tag) {
          for (int64_t i = 0; i < n; ++i) prob[static_cast<size_t>(i)] = double(Load(p->GetData<decltype(tag)>()[i]));
        }))
      return Fail(ctx, std::string("input must be a floating type, not ") + DataTypeName(p->GetDataType()));
    for (int64_t i = 0; i < n; ++i)
      if (!(prob[static_cast<size_t>(i)] >= 0 && prob[static_cast<size_t>(i)] <= 1))
        return Fail(ctx, "probability " + std::to_string(prob[static_cast<size_t>(i)]) + " (element " + std::to_string(i) + ") is not in [0, 1]");
    const DataType dt = OutType(ctx, p->GetDataType());
    uint64_t first;
    const rnd::Stream* st = rnd::Take(ctx, static_cast<uint64_t>(n), &first);
    if (!st) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, p->GetShape(), dt);
    if (!y) return GRAPH_FAILED;
    const uint64_t key = st->key;
    const bool ok = DispatchAll(dt, [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      T* py = y->GetData<T>();
      ctx->ParallelFor(n, kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i)
          py[i] = Store<T>(static_cast<C>(rnd::Unit(rnd::Draw(key, first + static_cast<uint64_t>(i))) < prob[static_cast<size_t>(i)] ? 1 : 0));
      });
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("dtype ") + DataTypeName(dt) + " is not supported");
  }
};

// Multinomial(input [batch, classes] of unnormalized log-probabilities) -> [batch, sample_size]
// class indices (int32 or int64), each drawn with probability softmax(input[b]). A row with a NaN
// or +inf, or with every entry -inf, is an error naming the row.
class Multinomial : public EagerExecuteOp, public ShapeInferOp {
 public:
  static bool Check(const KernelContextBase* ctx, const Shape& x, int64_t* samples) {
    *samples = *ctx->GetAttrs()->GetInt("sample_size");
    if (*samples < 0) return Fail(ctx, "sample_size must not be negative, not " + std::to_string(*samples)), false;
    if (x.GetDimNum() != 2) return Fail(ctx, "input must be [batch_size, class_size], not " + x.ToString()), false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    int64_t samples;
    if (!Check(ctx, x, &samples)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({x.GetDim(0), samples});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType dt = OutType(ctx, DT_INT32);
    if (dt != DT_INT32 && dt != DT_INT64) return Fail(ctx, std::string("dtype must be int32 or int64, not ") + DataTypeName(dt));
    return ctx->SetOutputDataType(0, dt);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    int64_t samples;
    if (!Check(ctx, x->GetShape(), &samples)) return GRAPH_FAILED;
    const int64_t batch = x->GetShape().GetDim(0), classes = x->GetShape().GetDim(1);
    // Per row: cumulative exp(x - max), in double.
    std::vector<double> cum(static_cast<size_t>(batch * classes));
    if (!DispatchFloat(x->GetDataType(), [&](auto tag) {
          const auto* px = x->GetData<decltype(tag)>();
          for (int64_t i = 0; i < batch * classes; ++i) cum[static_cast<size_t>(i)] = double(Load(px[i]));
        }))
      return Fail(ctx, std::string("input must be a floating type, not ") + DataTypeName(x->GetDataType()));
    for (int64_t b = 0; b < batch && samples > 0; ++b) {
      double* row = cum.data() + b * classes;
      double mx = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) {
        if (std::isnan(row[c]) || row[c] == INFINITY)
          return Fail(ctx, "row " + std::to_string(b) + " holds " + std::to_string(row[c]) + " at class " + std::to_string(c) +
                               "; log-probabilities must be finite or -inf");
        mx = std::max(mx, row[c]);
      }
      if (mx == -INFINITY) return Fail(ctx, "row " + std::to_string(b) + " gives every class probability 0 (all -inf, or no class)");
      double acc = 0;
      for (int64_t c = 0; c < classes; ++c) row[c] = acc += std::exp(row[c] - mx);
    }
    const DataType dt = OutType(ctx, DT_INT32);
    if (dt != DT_INT32 && dt != DT_INT64) return Fail(ctx, std::string("dtype must be int32 or int64, not ") + DataTypeName(dt));
    uint64_t first;
    const rnd::Stream* st = rnd::Take(ctx, static_cast<uint64_t>(batch * samples), &first);
    if (!st) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({batch, samples}), dt);
    if (!y) return GRAPH_FAILED;
    const uint64_t key = st->key;
    for (int64_t b = 0; b < batch; ++b) {
      const double* row = cum.data() + b * classes;
      for (int64_t k = 0; k < samples; ++k) {
        const double u = rnd::Unit(rnd::Draw(key, first + static_cast<uint64_t>(b * samples + k))) * row[classes - 1];
        // The first class whose cumulative weight exceeds u (a class of weight 0 is never chosen).
        int64_t c = std::upper_bound(row, row + classes, u) - row;
        c = std::min(c, classes - 1);
        if (dt == DT_INT32) y->GetData<int32_t>()[b * samples + k] = static_cast<int32_t>(c);
        else y->GetData<int64_t>()[b * samples + k] = c;
      }
    }
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_random(std::vector<OpEntry>& out) {
  const float no_seed = rnd::NoSeed();
  out.push_back({OpDefBuilder("RandomUniform").OUTPUT(output, FloatTypes()).ATTR(dtype, Type, DT_FLOAT).ATTR(high, Float, 1.0)
                     .ATTR(low, Float, 0.0).ATTR(seed, Float, no_seed).REQUIRED_ATTR(shape, ListInt).Build(),
                 MakeOpImpl<RandomFill<false, false>>("RandomUniform")});
  out.push_back({OpDefBuilder("RandomNormal").OUTPUT(output, FloatTypes()).ATTR(dtype, Type, DT_FLOAT).ATTR(mean, Float, 0.0)
                     .ATTR(scale, Float, 1.0).ATTR(seed, Float, no_seed).REQUIRED_ATTR(shape, ListInt).Build(),
                 MakeOpImpl<RandomFill<true, false>>("RandomNormal")});
  out.push_back({OpDefBuilder("RandomUniformLike").INPUT(input, TensorType::ALL()).OUTPUT(output, FloatTypes()).ATTR(dtype, Type, DT_UNDEFINED)
                     .ATTR(high, Float, 1.0).ATTR(low, Float, 0.0).ATTR(seed, Float, no_seed).Build(),
                 MakeOpImpl<RandomFill<false, true>>("RandomUniformLike")});
  out.push_back({OpDefBuilder("RandomNormalLike").INPUT(input, TensorType::ALL()).OUTPUT(output, FloatTypes()).ATTR(dtype, Type, DT_UNDEFINED)
                     .ATTR(mean, Float, 0.0).ATTR(scale, Float, 1.0).ATTR(seed, Float, no_seed).Build(),
                 MakeOpImpl<RandomFill<true, true>>("RandomNormalLike")});
  out.push_back({OpDefBuilder("Bernoulli").INPUT(input, FloatTypes()).OUTPUT(output, TensorType::ALL()).ATTR(dtype, Type, DT_UNDEFINED)
                     .ATTR(seed, Float, no_seed).Build(),
                 MakeOpImpl<Bernoulli>("Bernoulli")});
  out.push_back({OpDefBuilder("Multinomial").INPUT(input, FloatTypes()).OUTPUT(output, IndexTypes()).ATTR(dtype, Type, DT_INT32)
                     .ATTR(sample_size, Int, 1).ATTR(seed, Float, no_seed).Build(),
                 MakeOpImpl<Multinomial>("Multinomial")});
}

}  // namespace weft::ops
