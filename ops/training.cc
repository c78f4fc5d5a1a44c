// The optimizers of ONNX's training domain (ai.onnx.preview.training, opset 1), which exported
// training graphs carry as their update step: Adagrad, Momentum (standard and Nesterov) and Adam.
//
// Each takes the learning rate R and the update count T (scalars) and then groups of tensors, one
// tensor per optimized weight in each group: Adagrad (X..., G..., H...) -> (X_new..., H_new...),
// Momentum (X..., G..., V...) -> (X_new..., V_new...), Adam (X..., G..., V..., H...) ->
// (X_new..., V_new..., H_new...). X is the weight, G its gradient, V and H the accumulated first
// and second moments. Every group holds the same number of tensors; the tensors of one weight have
// one shape and one floating type. Arithmetic runs in double, element by element.
#include <cmath>
#include <string>
#include <vector>

#include "op_util.h"

namespace weft::ops {
namespace {

template <typename Derived, int kStates>
class Optimizer : public EagerExecuteOp, public ShapeInferOp {
 public:
  // Inputs: R, T, then (2 + kStates) groups; outputs: (1 + kStates) groups.
  static bool Groups(const KernelContextBase* ctx, size_t in, size_t out, size_t* n) {
    const size_t per_in = 2 + kStates, per_out = 1 + kStates;
    if (in < 2 || (in - 2) == 0 || (in - 2) % per_in != 0) {
      Fail(ctx, "takes R, T and " + std::to_string(per_in) + " groups of one tensor per weight (" + Derived::kInputs + "); got " +
                    std::to_string(in < 2 ? 0 : in - 2) + " tensors after R and T");
      return false;
    }
    *n = (in - 2) / per_in;
    if (out != per_out * *n) {
      Fail(ctx, "has " + std::to_string(*n) + " weight(s), so it must have " + std::to_string(per_out * *n) + " outputs (" + Derived::kOutputs +
                    "), not " + std::to_string(out));
      return false;
    }
    return true;
  }
  static bool CheckScalar(const KernelContextBase* ctx, const Shape& s, const char* name) {
    if (!s.IsUnknown() && s.GetShapeSize() != 1) {
      Fail(ctx, std::string(name) + " must be a scalar, not " + s.ToString());
      return false;
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    size_t n;
    if (!Groups(ctx, ctx->GetComputeNodeInputNum(), ctx->GetComputeNodeOutputNum(), &n)) return GRAPH_FAILED;
    typename Derived::Params p;
    if (!Derived::Read(ctx, &p)) return GRAPH_FAILED;  // attributes checked before any run
    if (!CheckScalar(ctx, *ctx->GetInputShape(0), "R") || !CheckScalar(ctx, *ctx->GetInputShape(1), "T")) return GRAPH_FAILED;
    for (size_t w = 0; w < n; ++w) {
      const Shape& x = *ctx->GetInputShape(2 + w);
      for (size_t g = 1; g < 2 + kStates; ++g) {
        const Shape& o = *ctx->GetInputShape(2 + g * n + w);
        if (!x.IsUnknown() && !o.IsUnknown() && !(x == o))
          return Fail(ctx, std::string(Derived::kGroupNames[g]) + "[" + std::to_string(w) + "] " + o.ToString() + " must have the shape of X[" +
                               std::to_string(w) + "] " + x.ToString());
      }
      for (size_t g = 0; g < 1 + kStates; ++g) *ctx->GetOutputShape(g * n + w) = x;
    }
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const size_t in = ctx->GetComputeNodeInputNum(), out = ctx->GetComputeNodeOutputNum();
    size_t n;
    if (!Groups(ctx, in, out, &n)) return GRAPH_FAILED;
    if (ctx->GetInputDataType(1) != DT_INT64) return Fail(ctx, "T must be int64");
    for (size_t w = 0; w < n; ++w) {
      const DataType dt = ctx->GetInputDataType(2 + w);
      for (size_t g = 1; g < 2 + kStates; ++g)
        if (ctx->GetInputDataType(2 + g * n + w) != dt)
          return Fail(ctx, std::string(Derived::kGroupNames[g]) + "[" + std::to_string(w) + "] must have the type of X[" + std::to_string(w) +
                               "] (" + DataTypeName(dt) + ")");
      for (size_t g = 0; g < 1 + kStates; ++g)
        if (ctx->SetOutputDataType(g * n + w, dt) != GRAPH_SUCCESS) return GRAPH_FAILED;
    }
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    size_t n;
    if (!Groups(ctx, ctx->GetComputeNodeInputNum(), ctx->GetComputeNodeOutputNum(), &n)) return GRAPH_FAILED;
    const Tensor* rt = ctx->GetInputTensor(0);
    const Tensor* tt = ctx->GetInputTensor(1);
    if (!CheckScalar(ctx, rt->GetShape(), "R") || !CheckScalar(ctx, tt->GetShape(), "T")) return GRAPH_FAILED;
    double r = 0;
    if (!DispatchFloat(rt->GetDataType(), [&](auto tag) { r = double(Load(rt->GetData<decltype(tag)>()[0])); }))
      return Fail(ctx, "R must be a floating type");
    const double t = static_cast<double>(tt->GetData<int64_t>()[0]);
    typename Derived::Params p;
    if (!Derived::Read(ctx, &p)) return GRAPH_FAILED;
    for (size_t w = 0; w < n; ++w) {
      const Tensor* x = ctx->GetInputTensor(2 + w);
      const Tensor* in[2 + kStates];
      Tensor* out[1 + kStates];
      for (size_t g = 0; g < 2 + kStates; ++g) {
        in[g] = ctx->GetInputTensor(2 + g * n + w);
        if (!(in[g]->GetShape() == x->GetShape()) || in[g]->GetDataType() != x->GetDataType())
          return Fail(ctx, std::string(Derived::kGroupNames[g]) + "[" + std::to_string(w) + "] " + DataTypeName(in[g]->GetDataType()) +
                               in[g]->GetShape().ToString() + " must match X[" + std::to_string(w) + "] " + DataTypeName(x->GetDataType()) +
                               x->GetShape().ToString());
      }
      for (size_t g = 0; g < 1 + kStates; ++g) {
        out[g] = ctx->MallocOutputTensor(g * n + w, x->GetShape(), x->GetDataType());
        if (!out[g]) return GRAPH_FAILED;
      }
      const int64_t count = x->GetShapeSize();
      const bool ok = DispatchFloat(x->GetDataType(), [&](auto tag) {
        using T = decltype(tag);
        using C = typename Compute<T>::type;
        double vin[2 + kStates], vout[1 + kStates];
        for (int64_t i = 0; i < count; ++i) {
          for (size_t g = 0; g < 2 + kStates; ++g) vin[g] = double(Load(in[g]->template GetData<T>()[i]));
          Derived::Step(p, r, t, vin, vout);
          for (size_t g = 0; g < 1 + kStates; ++g) out[g]->template GetData<T>()[i] = Store<T>(static_cast<C>(vout[g]));
        }
      });
      if (!ok) return Fail(ctx, std::string("X[") + std::to_string(w) + "] must be a floating type, not " + DataTypeName(x->GetDataType()));
    }
    return GRAPH_SUCCESS;
  }
};

// Adagrad: r' = R / (1 + T * decay_factor); g' = norm_coefficient * x + g; h' = h + g'^2;
// x' = x - r' * g' / (sqrt(h') + epsilon).
class Adagrad : public Optimizer<Adagrad, 1> {
 public:
  static constexpr const char* kInputs = "X..., G..., H...";
  static constexpr const char* kOutputs = "X_new..., H_new...";
  static constexpr const char* kGroupNames[] = {"X", "G", "H"};
  struct Params {
    double decay, eps, norm;
  };
  static bool Read(const KernelContextBase* ctx, Params* p) {
    *p = {*ctx->GetAttrs()->GetFloat("decay_factor"), *ctx->GetAttrs()->GetFloat("epsilon"), *ctx->GetAttrs()->GetFloat("norm_coefficient")};
    return true;
  }
  static void Step(const Params& p, double r, double t, const double* in, double* out) {
    const double rate = r / (1 + t * p.decay), g = p.norm * in[0] + in[1], h = in[2] + g * g;
    out[0] = in[0] - rate * g / (std::sqrt(h) + p.eps);
    out[1] = h;
  }
};

// Momentum: g' = norm_coefficient * x + g; v' = alpha * v + (T > 0 ? beta : 1) * g';
// standard x' = x - R * v'; nesterov x' = x - R * (g' + alpha * v').
class Momentum : public Optimizer<Momentum, 1> {
 public:
  static constexpr const char* kInputs = "X..., G..., V...";
  static constexpr const char* kOutputs = "X_new..., V_new...";
  static constexpr const char* kGroupNames[] = {"X", "G", "V"};
  struct Params {
    double alpha, beta, norm;
    bool nesterov;
  };
  static bool Read(const KernelContextBase* ctx, Params* p) {
    if (CheckOneOf(ctx, "mode", {"standard", "nesterov"}) != GRAPH_SUCCESS) return false;
    *p = {*ctx->GetAttrs()->GetFloat("alpha"), *ctx->GetAttrs()->GetFloat("beta"), *ctx->GetAttrs()->GetFloat("norm_coefficient"),
          std::string(ctx->GetAttrs()->GetStr("mode")) == "nesterov"};
    return true;
  }
  static void Step(const Params& p, double r, double t, const double* in, double* out) {
    const double g = p.norm * in[0] + in[1], v = p.alpha * in[2] + (t > 0 ? p.beta : 1.0) * g;
    out[0] = in[0] - r * (p.nesterov ? g + p.alpha * v : v);
    out[1] = v;
  }
};

// Adam: g' = norm_coefficient * x + g; v' = alpha * v + (1 - alpha) * g';
// h' = beta * h + (1 - beta) * g'^2; r' = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
// x' = (1 - norm_coefficient_post) * (x - r' * v' / (sqrt(h') + epsilon)).
class Adam : public Optimizer<Adam, 2> {
 public:
  static constexpr const char* kInputs = "X..., G..., V..., H...";
  static constexpr const char* kOutputs = "X_new..., V_new..., H_new...";
  static constexpr const char* kGroupNames[] = {"X", "G", "V", "H"};
  struct Params {
    double alpha, beta, eps, norm, post;
  };
  static bool Read(const KernelContextBase* ctx, Params* p) {
    const auto* a = ctx->GetAttrs();
    *p = {*a->GetFloat("alpha"), *a->GetFloat("beta"), *a->GetFloat("epsilon"), *a->GetFloat("norm_coefficient"),
          *a->GetFloat("norm_coefficient_post")};
    return true;
  }
  static void Step(const Params& p, double r, double t, const double* in, double* out) {
    const double g = p.norm * in[0] + in[1];
    const double v = p.alpha * in[2] + (1 - p.alpha) * g, h = p.beta * in[3] + (1 - p.beta) * g * g;
    const double rate = t > 0 ? r * std::sqrt(1 - std::pow(p.beta, t)) / (1 - std::pow(p.alpha, t)) : r;
    out[0] = (1 - p.post) * (in[0] - rate * v / (std::sqrt(h) + p.eps));
    out[1] = v;
    out[2] = h;
  }
};

}  // namespace

void WeftRegister_training(std::vector<OpEntry>& out) {
  const TensorType scalar = TensorType({DT_FLOAT, DT_DOUBLE});
  out.push_back({OpDefBuilder("Adagrad").INPUT(R, scalar).INPUT(T, TensorType({DT_INT64})).DYNAMIC_INPUT(inputs, FloatTypes())
                     .DYNAMIC_OUTPUT(outputs, FloatTypes()).ATTR(decay_factor, Float, 0.0).ATTR(epsilon, Float, 1e-6)
                     .ATTR(norm_coefficient, Float, 0.0).Build(),
                 MakeOpImpl<Adagrad>("Adagrad")});
  out.push_back({OpDefBuilder("Momentum").INPUT(R, scalar).INPUT(T, TensorType({DT_INT64})).DYNAMIC_INPUT(inputs, FloatTypes())
                     .DYNAMIC_OUTPUT(outputs, FloatTypes()).REQUIRED_ATTR(alpha, Float).REQUIRED_ATTR(beta, Float)
                     .REQUIRED_ATTR(mode, String).REQUIRED_ATTR(norm_coefficient, Float).Build(),
                 MakeOpImpl<Momentum>("Momentum")});
  out.push_back({OpDefBuilder("Adam").INPUT(R, scalar).INPUT(T, TensorType({DT_INT64})).DYNAMIC_INPUT(inputs, FloatTypes())
                     .DYNAMIC_OUTPUT(outputs, FloatTypes()).ATTR(alpha, Float, 0.9).ATTR(beta, Float, 0.999).ATTR(epsilon, Float, 1e-6)
                     .ATTR(norm_coefficient, Float, 0.0).ATTR(norm_coefficient_post, Float, 0.0).Build(),
                 MakeOpImpl<Adam>("Adam")});
}

}  // namespace weft::ops
