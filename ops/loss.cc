// Loss operators that exported training graphs and evaluation models carry:
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX opsets 12/13).
//
// input [N, C, d1.., dk] (scores, or log-probabilities for NegativeLogLikelihoodLoss), target
// [N, d1.., dk] of class indices, optional weight [C]. Each position's loss is
// -weight[t] * input[n, t, d...] with t its target; a target equal to `ignore_index` contributes
// nothing. reduction "none" keeps the per-position losses, "sum" adds them, "mean" divides the sum
// by the sum of the weights taken (the count of positions not ignored when there is no weight).
// SoftmaxCrossEntropyLoss takes log_softmax over C first and can return it as a second output.
// Sums run in double. A target outside [0, C) that is not ignore_index is an error naming it.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

constexpr int64_t kNoIgnore = INT64_MIN;  // ignore_index not given (a target of INT64_MIN is then refused like any other)

// The per-position shape ([N, d1.., dk]) of an input [N, C, d1.., dk].
Shape PositionsShape(const Shape& x) {
  std::vector<int64_t> d;
  for (size_t k = 0; k < x.GetDimNum(); ++k)
    if (k != 1) d.push_back(x.GetDim(k));
  return Shape(d);
}

template <bool kSoftmax>
class ClassLoss : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The runtime's arithmetic (log_softmax and the sums in double); a target outside [0, C) that
  // is not ignore_index fails the run (status 1).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* target = ctx->GetInputTensor(1);
    const Tensor* weight = ctx->GetOptionalInputTensor(2);
    const DataType dt = x->GetDataType();
    if (dt != DT_FLOAT && dt != DT_DOUBLE) return Fail(ctx, "the generated C has float32 and float64 losses only");
    if (weight && weight->GetDataType() != dt) return Fail(ctx, "weight must have the input's type");
    const Shape& xs = x->GetShape();
    if (xs.GetDimNum() < 2) return Fail(ctx, "input must have rank 2 or more ([N, C, ...]), not " + xs.ToString());
    if (CheckOneOf(ctx, "reduction", {"none", "sum", "mean"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const std::string reduction = ctx->GetAttrs()->GetStr("reduction");
    const int64_t ignore = *ctx->GetAttrs()->GetInt("ignore_index");
    const int64_t n = xs.GetDim(0), c = xs.GetDim(1), inner = n ? PositionsShape(xs).GetShapeSize() / n : 0;
    const std::string t = aot::CType(dt), tt = aot::CType(target->GetDataType()), C = aot::IntLit(c), I = aot::IntLit(inner);
    const bool logp = kSoftmax && ctx->GetComputeNodeOutputNum() > 1;
    std::string lp = "0";
    if (kSoftmax) lp = "(double*)(void*)" + ctx->Scratch(static_cast<size_t>(std::max<int64_t>(c, 1)) * sizeof(double));
    ctx->Include("<math.h>");
    std::string code = "{\n  const " + t + "* px = " + ctx->Input(0, t.c_str()) + ";\n  const " + tt + "* pt = " + ctx->Input(1, tt.c_str()) +
                       ";\n  const " + t + "* pw = " + (weight ? ctx->Input(2, t.c_str()) : std::string("0")) + ";\n  " + t + "* py = " +
                       ctx->Output(0, t.c_str()) + ";\n  " + t + "* pl = " + (logp ? ctx->Output(1, t.c_str()) : std::string("0")) +
                       ";\n  double* lp = " + lp + ";\n  double sum = 0, wsum = 0;\n  int64_t b, i;\n  (void)pw;\n  (void)pl;\n  (void)lp;\n  for (b = 0; b < " +
                       aot::IntLit(n) + "; ++b)\n    for (i = 0; i < " + I + "; ++i) {\n      const int64_t p = b * " + I + " + i, base = b * " + C + " * " + I +
                       " + i;\n      const int64_t tk = (int64_t)pt[p];\n      double loss = 0, w = 0;\n";
    if (kSoftmax)
      code += "      if (" + C + " > 0) {\n        double mx = -HUGE_VAL, s = 0, ls;\n        int64_t k;\n        for (k = 0; k < " + C +
              "; ++k) if ((double)px[base + k * " + I + "] > mx) mx = (double)px[base + k * " + I + "];\n        for (k = 0; k < " + C +
              "; ++k) s += exp((double)px[base + k * " + I + "] - mx);\n        ls = log(s) + mx;\n        for (k = 0; k < " + C +
              "; ++k) {\n          lp[k] = (double)px[base + k * " + I + "] - ls;\n          if (pl) pl[base + k * " + I + "] = (" + t + ")lp[k];\n        }\n      }\n";
    code += std::string("      ") + (ignore == kNoIgnore ? "" : "if (tk != " + aot::IntLit(ignore) + ") ") + "{\n        if (tk < 0 || tk >= " + C +
            ") return 1;\n        w = pw ? (double)pw[tk] : 1.0;\n        loss = -w * " +
            (kSoftmax ? std::string("lp[tk]") : "(double)px[base + tk * " + I + "]") + ";\n      }\n";
    if (reduction == "none") code += "      py[p] = (" + t + ")loss;\n";
    code += "      sum += loss;\n      wsum += w;\n    }\n";
    if (reduction == "sum") code += "  py[0] = (" + t + ")sum;\n";
    if (reduction == "mean") code += "  py[0] = (" + t + ")(sum / wsum);\n";
    else code += "  (void)sum;\n  (void)wsum;\n";
    ctx->Run(code + "}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    if (x.GetDimNum() < 2) return Fail(ctx, "input must have rank 2 or more ([N, C, ...]), not " + x.ToString());
    if (CheckOneOf(ctx, "reduction", {"none", "sum", "mean"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const bool none = std::string(ctx->GetAttrs()->GetStr("reduction")) == "none";
    *ctx->GetOutputShape(0) = none ? PositionsShape(x) : Shape(std::vector<int64_t>{});
    if (ctx->GetComputeNodeOutputNum() > 1) *ctx->GetOutputShape(1) = x;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k)
      if (ctx->SetOutputDataType(k, ctx->GetInputDataType(0)) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* target = ctx->GetInputTensor(1);
    const Tensor* weight = ctx->GetOptionalInputTensor(2);
    const Shape& xs = x->GetShape();
    if (xs.GetDimNum() < 2) return Fail(ctx, "input must have rank 2 or more ([N, C, ...]), not " + xs.ToString());
    const Shape pos = PositionsShape(xs);
    if (target->GetShape() != pos)
      return Fail(ctx, "target must be " + pos.ToString() + " (input " + xs.ToString() + " without its class dim), not " +
                           target->GetShape().ToString());
    const int64_t n = xs.GetDim(0), c = xs.GetDim(1), inner = n ? pos.GetShapeSize() / n : 0;
    if (weight && weight->GetShape() != Shape({c}))
      return Fail(ctx, "weight must be [" + std::to_string(c) + "] (one per class), not " + weight->GetShape().ToString());
    if (weight && weight->GetDataType() != x->GetDataType())
      return Fail(ctx, std::string("weight must have the input's type ") + DataTypeName(x->GetDataType()) + ", not " +
                           DataTypeName(weight->GetDataType()));
    const std::string reduction = ctx->GetAttrs()->GetStr("reduction");
    if (reduction != "none" && reduction != "sum" && reduction != "mean")
      return Fail(ctx, "reduction must be none, sum or mean, not '" + reduction + "'");
    const int64_t ignore = *ctx->GetAttrs()->GetInt("ignore_index");

    // Targets as int64, each checked against [0, C).
    std::vector<int64_t> t(static_cast<size_t>(pos.GetShapeSize()));
    for (size_t i = 0; i < t.size(); ++i) {
      t[i] = target->GetDataType() == DT_INT32 ? target->GetData<int32_t>()[i] : target->GetData<int64_t>()[i];
      if ((ignore == kNoIgnore || t[i] != ignore) && (t[i] < 0 || t[i] >= c))
        return Fail(ctx, "target " + std::to_string(t[i]) + " (element " + std::to_string(i) + ") is not a class index in [0, " +
                             std::to_string(c) + ")" + (ignore == kNoIgnore ? "" : " nor ignore_index " + std::to_string(ignore)));
    }

    Tensor* y = ctx->MallocOutputTensor(0, reduction == "none" ? pos : Shape(std::vector<int64_t>{}), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    Tensor* logp = nullptr;
    if (kSoftmax && ctx->GetComputeNodeOutputNum() > 1) {
      logp = ctx->MallocOutputTensor(1, xs, x->GetDataType());
      if (!logp) return GRAPH_FAILED;
    }
    bool ok = DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const T* px = x->GetData<T>();
      const T* pw = weight ? weight->GetData<T>() : nullptr;
      T* py = y->GetData<T>();
      T* pl = logp ? logp->GetData<T>() : nullptr;
      std::vector<double> lp;  // log_softmax over C at one position
      if (kSoftmax) lp.resize(static_cast<size_t>(c));
      double sum = 0, wsum = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t p = b * inner + i, base = b * c * inner + i;
          if (kSoftmax && c > 0) {
            double mx = -std::numeric_limits<double>::infinity();
            for (int64_t k = 0; k < c; ++k) mx = std::max(mx, double(Load(px[base + k * inner])));
            double s = 0;
            for (int64_t k = 0; k < c; ++k) s += std::exp(double(Load(px[base + k * inner])) - mx);
            const double ls = std::log(s) + mx;
            for (int64_t k = 0; k < c; ++k) {
              lp[static_cast<size_t>(k)] = double(Load(px[base + k * inner])) - ls;
              if (pl) pl[base + k * inner] = Store<T>(static_cast<C>(lp[static_cast<size_t>(k)]));
            }
          }
          const int64_t tk = t[static_cast<size_t>(p)];
          double loss = 0, w = 0;
          if (tk != ignore) {
            w = pw ? double(Load(pw[tk])) : 1.0;
            loss = -w * (kSoftmax ? lp[static_cast<size_t>(tk)] : double(Load(px[base + tk * inner])));
          }
          if (reduction == "none") py[p] = Store<T>(static_cast<C>(loss));
          sum += loss;
          wsum += w;
        }
      if (reduction == "sum") py[0] = Store<T>(static_cast<C>(sum));
      if (reduction == "mean") py[0] = Store<T>(static_cast<C>(sum / wsum));  // 0/0 (nothing counted) is NaN
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("type ") + DataTypeName(x->GetDataType()) + " is not supported");
  }
};
using NllLoss = ClassLoss<false>;
using SoftmaxCrossEntropy = ClassLoss<true>;

}  // namespace

void WeftRegister_loss(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("NegativeLogLikelihoodLoss").INPUT(input, FloatTypes()).INPUT(target, IndexTypes())
                     .OPTIONAL_INPUT(weight, FloatTypes()).OUTPUT(loss, FloatTypes()).SAME_AS_INPUT(input)
                     .ATTR(ignore_index, Int, kNoIgnore).ATTR(reduction, String, "mean").Build(),
                 MakeOpImpl<NllLoss>("NegativeLogLikelihoodLoss")});
  out.push_back({OpDefBuilder("SoftmaxCrossEntropyLoss").INPUT(scores, FloatTypes()).INPUT(labels, IndexTypes())
                     .OPTIONAL_INPUT(weights, FloatTypes()).OUTPUT(output, FloatTypes()).SAME_AS_INPUT(scores)
                     .DYNAMIC_OUTPUT(log_prob, FloatTypes()).ATTR(ignore_index, Int, kNoIgnore).ATTR(reduction, String, "mean").Build(),
                 MakeOpImpl<SoftmaxCrossEntropy>("SoftmaxCrossEntropyLoss")});
}

}  // namespace weft::ops
