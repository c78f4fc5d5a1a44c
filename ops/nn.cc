// Gemm, normalizations (BatchNormalization, InstanceNormalization, LayerNormalization, LRN,
// MeanVarianceNormalization) and PRelu.
#include <algorithm>

#include "aot_emit.h"
#include "dnnl_matmul.h"
#include "op_util.h"

namespace weft::ops {
namespace {

class Gemm : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public FusibleOp, public EmittableOp {
 public:
  // float32 through weft_gemm_f32; C broadcast as [1 or M, 1 or N] (or [N]).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    const Tensor* c = ctx->GetOptionalInputTensor(2);
    int64_t m, k, n;
    std::string err;
    if (!Dims(ctx, a->GetShape(), b->GetShape(), &m, &k, &n, &err)) return Fail(ctx, err);
    if (a->GetDataType() != DT_FLOAT || ctx->GetEpilogue().activation != WEFT_ACT_NONE)
      return Fail(ctx, "the generated C takes float32 Gemm without a fused activation only");
    int64_t c_rows = 1, c_cols = 1;
    if (c) {
      const Shape& cs = c->GetShape();
      if (cs.GetDimNum() == 2) c_rows = cs.GetDim(0), c_cols = cs.GetDim(1);
      else if (cs.GetDimNum() == 1) c_cols = cs.GetDim(0);
      if ((c_rows != 1 && c_rows != m) || (c_cols != 1 && c_cols != n)) return Fail(ctx, "C " + cs.ToString() + " does not broadcast to the output");
    }
    for (int64_t v : {m, k, n})
      if (v > INT32_MAX / 4) return Fail(ctx, "too large for the generated C");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_gemm_f32");
    ctx->Run("weft_gemm_f32(" + std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) + ", " +
             std::to_string(*ctx->GetAttrs()->GetInt("transA") != 0) + ", " + std::to_string(*ctx->GetAttrs()->GetInt("transB") != 0) + ", " +
             aot::FloatLit(*ctx->GetAttrs()->GetFloat("alpha")) + ", " + aot::FloatLit(*ctx->GetAttrs()->GetFloat("beta")) + ", " +
             ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " + (c ? ctx->Input(2, "float") : std::string("0")) + ", " +
             std::to_string(c_rows) + ", " + std::to_string(c_cols) + ", " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  // Gemm [+ activation on floats].
  graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& s) override {
    if (IsFloating(ctx->GetInputDataType(0))) AbsorbAllActivations(s);
    return GRAPH_SUCCESS;
  }

  // float32 fast path through oneDNN matmul when C is absent or a [N] / [1, N] bias with beta 1.
  graphStatus Compile(OpCompileContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    const Tensor* c = ctx->GetOptionalInputTensor(2);
    int64_t m, k, n;
    std::string err;
    if (a->GetDataType() != DT_FLOAT || !Dims(ctx, a->GetShape(), b->GetShape(), &m, &k, &n, &err)) return GRAPH_SUCCESS;
    if (m == 0 || k == 0 || n == 0) return GRAPH_SUCCESS;  // nothing for oneDNN to do: the loops handle it
    float beta = *ctx->GetAttrs()->GetFloat("beta");
    // oneDNN scales the bias with alpha; ONNX adds beta * C after alpha * A * B.
    bool bias_ok = !c || (beta == 1.0f && *ctx->GetAttrs()->GetFloat("alpha") == 1.0f && c->GetAddr() && c->GetShapeSize() == n && (c->GetShape().GetDimNum() == 1 || c->GetShape().GetDim(0) == 1));
    if (!bias_ok) return GRAPH_SUCCESS;
    MatmulSpec spec;
    spec.a_dims = {m, k};
    spec.b_dims = {k, n};
    spec.y_dims = {m, n};
    spec.trans_a = *ctx->GetAttrs()->GetInt("transA") != 0;
    spec.trans_b = *ctx->GetAttrs()->GetInt("transB") != 0;
    spec.b_const = b->GetAddr();
    spec.bias = c ? c->GetData<float>() : nullptr;
    spec.alpha = *ctx->GetAttrs()->GetFloat("alpha");
    spec.post_ops = FusedPostOps(ctx->GetEpilogue(), false);
    int threads = ApplyIntraOpThreads(ctx);
    try {
      BuildMatmul(runner_, spec, keep_, threads);
      b_const_ = b->GetAddr() != nullptr;
    } catch (const dnnl::error&) {
      // not ready: the reference loops run instead
    }
    return GRAPH_SUCCESS;
  }

  static bool Dims(const KernelContextBase* ctx, const Shape& a, const Shape& b, int64_t* m, int64_t* k, int64_t* n, std::string* err) {
    if (a.GetDimNum() != 2 || b.GetDimNum() != 2) {
      *err = "A and B must be 2-D, got " + a.ToString() + " and " + b.ToString();
      return false;
    }
    bool ta = *ctx->GetAttrs()->GetInt("transA") != 0, tb = *ctx->GetAttrs()->GetInt("transB") != 0;
    *m = ta ? a.GetDim(1) : a.GetDim(0);
    *k = ta ? a.GetDim(0) : a.GetDim(1);
    int64_t kb = tb ? b.GetDim(1) : b.GetDim(0);
    *n = tb ? b.GetDim(0) : b.GetDim(1);
    if (*k != kb) {
      *err = "inner dimensions differ: A " + a.ToString() + ", B " + b.ToString();
      return false;
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t m, k, n;
    std::string err;
    if (!Dims(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), &m, &k, &n, &err)) return Fail(ctx, err);
    Shape out({m, n}), tmp;
    if (const Shape* c = ctx->GetOptionalInputShape(2))
      if (!BroadcastShape(*c, out, &tmp) || tmp != out) return Fail(ctx, "C " + c->ToString() + " does not broadcast to " + out.ToString());
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    const Tensor* c = ctx->GetOptionalInputTensor(2);
    int64_t m, k, n;
    std::string err;
    if (!Dims(ctx, a->GetShape(), b->GetShape(), &m, &k, &n, &err)) return Fail(ctx, err);
    Tensor* y = ctx->MallocOutputTensor(0, Shape({m, n}), a->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (runner_.ready()) {
      void* ptrs[3] = {const_cast<void*>(a->GetAddr()), const_cast<void*>(b->GetAddr()), y->GetAddr()};
      if (b_const_) ptrs[1] = y->GetAddr();  // bound slots are A, Y when B is prepacked
      return runner_.Run(ctx, ptrs) ? GRAPH_SUCCESS : GRAPH_FAILED;
    }
    FusedActivation act(ctx);
    bool ta = *ctx->GetAttrs()->GetInt("transA") != 0, tb = *ctx->GetAttrs()->GetInt("transB") != 0;
    float alpha = *ctx->GetAttrs()->GetFloat("alpha"), beta = *ctx->GetAttrs()->GetFloat("beta");
    DispatchNumeric(a->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = std::conditional_t<std::is_integral<T>::value, T, std::conditional_t<std::is_same<T, double>::value, double, float>>;
      const T* pa = a->GetData<T>();
      const T* pb = b->GetData<T>();
      C* row = static_cast<C*>(ctx->MallocWorkSpace(static_cast<size_t>(n) * sizeof(C)));
      if (!row) return;
      int64_t sc[2] = {0, 0};
      if (c) BroadcastStrides(c->GetShape(), y->GetShape(), sc);
      for (int64_t i = 0; i < m; ++i) {
        std::fill(row, row + n, C(0));
        for (int64_t p = 0; p < k; ++p) {
          C av = Load(pa[ta ? p * m + i : i * k + p]);
          if (tb) for (int64_t j = 0; j < n; ++j) row[j] += av * C(Load(pb[j * k + p]));
          else for (int64_t j = 0; j < n; ++j) row[j] += av * C(Load(pb[p * n + j]));
        }
        for (int64_t j = 0; j < n; ++j) {
          C v = static_cast<C>(C(alpha) * row[j]);
          if (c) v = static_cast<C>(v + C(beta) * C(Load(c->GetData<T>()[i * sc[0] + j * sc[1]])));
          y->GetData<T>()[i * n + j] = Store<T>(static_cast<typename Compute<T>::type>(act(v)));
        }
      }
    });
    return GRAPH_SUCCESS;
  }

 private:
  DnnlRunner runner_;
  std::vector<dnnl::memory> keep_;
  bool b_const_ = false;
};

// y = scale * (x - mean) / sqrt(var + eps) + B, per channel (axis 1).
class BatchNormalization : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public CompilableOp, public RebuildOnLoad,
                           public FusibleOp, public LayoutAwareOp {
 public:
  // BatchNormalization [+ activation] on floating types: every path applies the fused activation.
  graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& s) override {
    if (IsFloating(ctx->GetInputDataType(0)) && !Training(ctx)) AbsorbAllActivations(s);
    return GRAPH_SUCCESS;
  }
  static bool Training(const KernelContextBase* ctx) { return *ctx->GetAttrs()->GetInt("training_mode") != 0; }
  // float32 [N, C, H, W] with constant parameters reads and writes the channel-blocked layout
  // as readily as the plain one (a per-channel scale and shift), so the pre-activation blocks of
  // DenseNet-style models (Concat, BatchNormalization, Relu, Conv) stay blocked.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (x->GetDataType() != DT_FLOAT || x->GetShape().GetDimNum() != 4 || x->GetShape().IsUnknown() || Training(ctx)) return GRAPH_SUCCESS;
    for (size_t i = 1; i < 5; ++i)
      if (!ctx->GetInputTensor(i)->GetAddr() || ctx->GetInputTensor(i)->GetDataType() != DT_FLOAT) return GRAPH_SUCCESS;
    s.Format(FORMAT_NC1HWC0).Input(0).Output(0).Together();
    return GRAPH_SUCCESS;
  }
  // float32 with constant parameters: scale and shift per channel folded once (in double, as
  // the reference path does), padded with zeros to a multiple of 16 channels.
  graphStatus Compile(OpCompileContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    bool constant = x->GetDataType() == DT_FLOAT && x->GetShape().GetDimNum() >= 2 && x->GetShape().GetDim(1) >= 0 &&  // batch may vary
                    !Training(ctx);
    for (size_t i = 1; i < 5 && constant; ++i)
      constant = ctx->GetInputTensor(i)->GetAddr() && ctx->GetInputTensor(i)->GetDataType() == DT_FLOAT;
    if (constant) {
      const double eps = *ctx->GetAttrs()->GetFloat("epsilon");
      const int64_t c = x->GetShape().GetDim(1);
      scale_.assign(static_cast<size_t>((c + 15) / 16 * 16), 0.f);
      shift_.assign(scale_.size(), 0.f);
      auto val = [&](size_t in, int64_t ch) { return static_cast<double>(ctx->GetInputTensor(in)->GetData<float>()[ch]); };
      for (int64_t ch = 0; ch < c; ++ch) {
        const double sc = val(1, ch) / std::sqrt(val(4, ch) + eps);
        scale_[static_cast<size_t>(ch)] = static_cast<float>(sc);
        shift_[static_cast<size_t>(ch)] = static_cast<float>(val(2, ch) - val(3, ch) * sc);
      }
    }
    return SetBlockedOutputStorage(ctx);
  }
  // Training mode: normalizes with the batch's own statistics per channel (mean and population
  // variance over N and the spatial dims, in double) and returns the running statistics
  // input * momentum + batch * (1 - momentum); outputs 3 and 4 (opsets before 14) are the batch's.
  graphStatus ExecuteTraining(EagerOpExecutionContext* ctx, const Tensor* x, Tensor* y) {
    const Shape& xs = x->GetShape();
    if (xs.GetDimNum() < 2) return Fail(ctx, "X must be [N, C, ...], not " + xs.ToString());
    const int64_t n = xs.GetDim(0), c = xs.GetDim(1), sp = xs.GetShapeSize() / std::max<int64_t>(n * c, 1);
    for (size_t i = 1; i < 5; ++i)
      if (ctx->GetInputTensor(i)->GetShapeSize() != c) return Fail(ctx, "scale, B, input_mean and input_var must have C=" + std::to_string(c) + " elements");
    const double eps = *ctx->GetAttrs()->GetFloat("epsilon"), momentum = *ctx->GetAttrs()->GetFloat("momentum");
    auto val = [&](size_t in, int64_t ch) {
      double r = 0;
      const Tensor* t = ctx->GetInputTensor(in);
      DispatchFloat(t->GetDataType(), [&](auto tag) { r = Load(t->GetData<decltype(tag)>()[ch]); });
      return r;
    };
    const size_t outs = ctx->GetComputeNodeOutputNum();
    std::vector<Tensor*> stats(outs, nullptr);
    for (size_t k = 1; k < outs; ++k) {
      const DataType dt = k < 3 ? ctx->GetInputDataType(k + 2) : x->GetDataType();
      if (!(stats[k] = ctx->MallocOutputTensor(k, Shape({c}), dt))) return GRAPH_FAILED;
    }
    auto put = [&](size_t k, int64_t ch, double v) {
      if (k < outs) DispatchFloat(stats[k]->GetDataType(), [&](auto tag) {
          using T = decltype(tag);
          stats[k]->GetData<T>()[ch] = Store<T>(static_cast<typename Compute<T>::type>(v));
        });
    };
    const double count = static_cast<double>(n * sp);  // none: NaN statistics, as ONNX Runtime gives
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t ch = 0; ch < c; ++ch) {
        double mean = 0, var = 0;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < sp; ++i) mean += double(Load(x->GetData<T>()[(b * c + ch) * sp + i]));
        mean /= count;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < sp; ++i) {
            const double d = double(Load(x->GetData<T>()[(b * c + ch) * sp + i])) - mean;
            var += d * d;
          }
        var /= count;
        const double scale = val(1, ch) / std::sqrt(var + eps), shift = val(2, ch) - mean * scale;
        for (int64_t b = 0; b < n; ++b)
          for (int64_t i = 0; i < sp; ++i) {
            const int64_t at = (b * c + ch) * sp + i;
            y->GetData<T>()[at] = Store<T>(static_cast<typename Compute<T>::type>(double(Load(x->GetData<T>()[at])) * scale + shift));
          }
        put(1, ch, val(3, ch) * momentum + mean * (1 - momentum));
        put(2, ch, val(4, ch) * momentum + var * (1 - momentum));
        put(3, ch, mean);
        put(4, ch, var);
      }
    });
    return GRAPH_SUCCESS;
  }
  // The prepared path: plain [N][C][spatial] or blocked [N][C/16][H*W][16] (padded lanes stay
  // zero), split over (image, channel or channel block), the activation applied per piece.
  graphStatus ExecutePrepared(EagerOpExecutionContext* ctx, const Tensor* x, Tensor* y) {
    const Shape& xs = x->GetShape();
    const int64_t n = xs.GetDim(0), c = xs.GetDim(1), sp = xs.GetShapeSize() / std::max<int64_t>(n * c, 1);
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    const WeftEpilogue act = ctx->GetEpilogue();
    if (x->GetFormat() == FORMAT_NC1HWC0) {
      const int64_t cb = (c + 15) / 16;
      return ctx->ParallelFor(n * cb, 1, [&](int64_t lo, int64_t hi) {
        for (int64_t blk = lo; blk < hi; ++blk) {
          const float* sc = scale_.data() + (blk % cb) * 16;
          const float* sh = shift_.data() + (blk % cb) * 16;
          const float* src = px + blk * sp * 16;
          float* dst = py + blk * sp * 16;
          for (int64_t p = 0; p < sp; ++p)
#pragma omp simd
            for (int k = 0; k < 16; ++k) dst[p * 16 + k] = src[p * 16 + k] * sc[k] + sh[k];
          ActivateInPlace(act, dst, sp * 16);
          const int64_t live = std::min<int64_t>(16, c - (blk % cb) * 16);
          if (live < 16 && act.activation != WEFT_ACT_NONE)  // an activation may move the padded zeros
            for (int64_t p = 0; p < sp; ++p) std::fill(dst + p * 16 + live, dst + p * 16 + 16, 0.f);
        }
      });
    }
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(sp, 1));
    return ctx->ParallelFor(n * c, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t plane = lo; plane < hi; ++plane) {
        const float sc = scale_[static_cast<size_t>(plane % c)], sh = shift_[static_cast<size_t>(plane % c)];
        const float* src = px + plane * sp;
        float* dst = py + plane * sp;
#pragma omp simd
        for (int64_t i = 0; i < sp; ++i) dst[i] = src[i] * sc + sh;
        ActivateInPlace(act, dst, sp);
      }
    });
  }
  // Inference: y = x * scale[c] + shift[c], the two folded from constant parameters in double as
  // Execute folds them.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (x->GetDataType() != DT_FLOAT) return Fail(ctx, "the generated C normalizes float32 only");
    if (Training(ctx)) return Fail(ctx, "the generated C normalizes with the given mean and variance only (training_mode=0)");
    for (size_t i = 1; i < 5; ++i)
      if (!ctx->GetInputTensor(i)->GetAddr() || ctx->GetInputTensor(i)->GetDataType() != DT_FLOAT)
        return Fail(ctx, "the generated C needs float32 constant scale, B, mean and var");
    const float eps = *ctx->GetAttrs()->GetFloat("epsilon");
    const int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1), sp = x->GetShapeSize() / std::max<int64_t>(n * c, 1);
    std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
    auto val = [&](size_t in, int64_t ch) { return static_cast<double>(ctx->GetInputTensor(in)->GetData<float>()[ch]); };
    for (int64_t ch = 0; ch < c; ++ch) {
      scale[static_cast<size_t>(ch)] = static_cast<float>(val(1, ch) / std::sqrt(val(4, ch) + eps));
      shift[static_cast<size_t>(ch)] = static_cast<float>(val(2, ch) - val(3, ch) * scale[static_cast<size_t>(ch)]);
    }
    const std::string sc = ctx->Const("scale", DT_FLOAT, scale), sh = ctx->Const("shift", DT_FLOAT, shift);
    ctx->Run("{\n  const float* x = " + ctx->Input(0, "float") + ";\n  float* y = " + ctx->Output(0, "float") + ";\n  int64_t b, ch, i;\n  for (b = 0; b < " +
             std::to_string(n) + "; ++b)\n    for (ch = 0; ch < " + std::to_string(c) + "; ++ch)\n      for (i = 0; i < " + std::to_string(sp) +
             "; ++i) {\n        const int64_t at = (b * " + std::to_string(c) + " + ch) * " + std::to_string(sp) + " + i;\n        y[at] = x[at] * " + sc +
             "[ch] + " + sh + "[ch];\n      }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    if (x.GetDimNum() < 2) return Fail(ctx, "X must be [N, C, ...]");
    for (size_t i = 1; i < 5; ++i)
      if (ctx->GetInputShape(i)->GetShapeSize() != x.GetDim(1)) {
        static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
        return Fail(ctx, std::string(kNames[i]) + " " + ctx->GetInputShape(i)->ToString() + " must have C=" + std::to_string(x.GetDim(1)) +
                             " elements");
      }
    const size_t outs = ctx->GetComputeNodeOutputNum();
    if (!Training(ctx) && outs > 1) return Fail(ctx, "running mean/var outputs exist only in training mode");
    if (outs > 5) return Fail(ctx, "has at most 5 outputs (Y, running_mean, running_var, saved_mean, saved_var), not " + std::to_string(outs));
    *ctx->GetOutputShape(0) = x;
    for (size_t k = 1; k < outs; ++k) *ctx->GetOutputShape(k) = Shape({x.GetDim(1)});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    // The running statistics take the type of input_mean and input_var; the rest X's.
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) ctx->SetOutputDataType(k, ctx->GetInputDataType(k == 1 || k == 2 ? k + 2 : 0));
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (Training(ctx)) return ExecuteTraining(ctx, x, y);
    if (!scale_.empty() && x->GetDataType() == DT_FLOAT) return ExecutePrepared(ctx, x, y);
    float eps = *ctx->GetAttrs()->GetFloat("epsilon");
    int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1), sp = x->GetShapeSize() / std::max<int64_t>(n * c, 1);
    FusedActivation act(ctx);
    auto val = [&](size_t in, int64_t ch) {
      double r = 0;
      const Tensor* t = ctx->GetInputTensor(in);
      DispatchFloat(t->GetDataType(), [&](auto tag) { r = Load(t->GetData<decltype(tag)>()[ch]); });
      return r;
    };
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = std::conditional_t<std::is_same<T, double>::value, double, float>;
      for (int64_t ch = 0; ch < c; ++ch) {
        C scale = static_cast<C>(val(1, ch) / std::sqrt(val(4, ch) + eps));
        C shift = static_cast<C>(val(2, ch) - val(3, ch) * scale);
        for (int64_t in = 0; in < n; ++in) {
          const T* px = x->GetData<T>() + (in * c + ch) * sp;
          T* py = y->GetData<T>() + (in * c + ch) * sp;
          for (int64_t i = 0; i < sp; ++i) py[i] = Store<T>(static_cast<typename Compute<T>::type>(act(C(Load(px[i])) * scale + shift)));
        }
      }
    });
    return GRAPH_SUCCESS;
  }

 private:
  std::vector<float> scale_, shift_;  // per channel, padded to a multiple of 16 (the prepared path)
};

// Normalizes groups of `count` contiguous elements: y = (x - mean) / sqrt(var + eps) * s + b,
// with s/b indexed by `param_index(group, i)`.
template <typename T, typename ParamF>
void NormalizeGroups(const T* px, T* py, int64_t groups, int64_t count, double eps, ParamF&& param, double* mean_out = nullptr,
                     double* inv_out = nullptr, bool rms = false) {
  for (int64_t g = 0; g < groups; ++g) {
    const T* gx = px + g * count;
    double mean = 0, var = 0;
    if (!rms)
      for (int64_t i = 0; i < count; ++i) mean += static_cast<double>(Load(gx[i]));
    mean /= static_cast<double>(std::max<int64_t>(count, 1));
    for (int64_t i = 0; i < count; ++i) {
      double d = static_cast<double>(Load(gx[i])) - mean;
      var += d * d;
    }
    var /= static_cast<double>(std::max<int64_t>(count, 1));
    double inv = 1.0 / std::sqrt(var + eps);
    if (mean_out) mean_out[g] = mean;
    if (inv_out) inv_out[g] = inv;
    for (int64_t i = 0; i < count; ++i) {
      double s, b;
      param(g, i, &s, &b);
      py[g * count + i] = Store<T>(static_cast<typename Compute<T>::type>((static_cast<double>(Load(gx[i])) - mean) * inv * s + b));
    }
  }
}

double ParamAt(const Tensor* t, int64_t i) {
  double r = 0;
  DispatchFloat(t->GetDataType(), [&](auto tag) { r = Load(t->GetData<decltype(tag)>()[i]); });
  return r;
}

// GroupNormalization(X, scale, bias): X [N, C, spatial...] in num_groups groups of C / num_groups
// channels, each group of each image normalized by its own mean and variance (over its channels
// and positions), then y = x_hat * scale[c] + bias[c]. Opset 21 gives scale and bias per channel;
// opsets 18-20 gave them per group, which the importer spreads to the channels (attribute
// per_group_affine). Sums in double; float16/bfloat16 compute in float.
class GroupNormalization : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, ctx->GetInputDataType(0)); }
  graphStatus Check(const KernelContextBase* ctx, int64_t* groups) const {
    const Shape& x = ctx->GetInputTensor(0)->GetShape();
    if (x.GetDimNum() < 2) return Fail(ctx, "X must be [N, C, ...], got " + x.ToString());
    const int64_t c = x.GetDim(1), g = *ctx->GetAttrs()->GetInt("num_groups");
    if (g < 1 || c % g != 0)
      return Fail(ctx, "num_groups is " + std::to_string(g) + "; it must be positive and divide the " + std::to_string(c) + " channels");
    const bool per_group = *ctx->GetAttrs()->GetInt("per_group_affine") != 0;
    const int64_t want = per_group ? g : c;
    for (size_t k = 1; k <= 2; ++k)
      if (ctx->GetInputTensor(k)->GetShapeSize() != want)
        return Fail(ctx, std::string(k == 1 ? "scale" : "bias") + " has " + std::to_string(ctx->GetInputTensor(k)->GetShapeSize()) +
                             " values; it needs one per " + (per_group ? "group (" : "channel (") + std::to_string(want) + ")");
    *groups = g;
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t g = 0;
    if (Check(ctx, &g) != GRAPH_SUCCESS) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = ctx->GetInputTensor(0)->GetShape();
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    int64_t g = 0;
    if (Check(ctx, &g) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* scale = ctx->GetInputTensor(1);
    const Tensor* bias = ctx->GetInputTensor(2);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1);
    const int64_t sp = n > 0 && c > 0 ? x->GetShapeSize() / (n * c) : 0, per = c / g, count = per * sp;
    const double eps = *ctx->GetAttrs()->GetFloat("epsilon");
    const bool per_group = *ctx->GetAttrs()->GetInt("per_group_affine") != 0;
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      const T* ps = scale->GetData<T>();
      const T* pb = bias->GetData<T>();
      T* py = y->GetData<T>();
      auto d = [](T v) { if constexpr (std::is_same_v<T, double>) return v; else return static_cast<double>(static_cast<float>(v)); };
      ForRows(ctx, n * g, count, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          const T* row = px + r * count;
          double sum = 0, sq = 0;
          for (int64_t i = 0; i < count; ++i) sum += d(row[i]);
          const double mu = count ? sum / static_cast<double>(count) : 0.0;
          for (int64_t i = 0; i < count; ++i) {
            const double dev = d(row[i]) - mu;
            sq += dev * dev;
          }
          const double iv = 1.0 / std::sqrt((count ? sq / static_cast<double>(count) : 0.0) + eps);
          const int64_t grp = r % g;
          for (int64_t ch = 0; ch < per; ++ch) {
            const int64_t cc = grp * per + ch, a = per_group ? grp : cc;
            const double sc = d(ps[a]) * iv, b = d(pb[a]);
            for (int64_t i = 0; i < sp; ++i) {
              const int64_t at = ch * sp + i;
              py[r * count + at] = static_cast<T>((d(row[at]) - mu) * sc + b);
            }
          }
        }
      });
    });
    return GRAPH_SUCCESS;
  }
};

class InstanceNormalization : public EagerExecuteOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const int64_t c = x->GetShape().GetDimNum() >= 3 ? x->GetShape().GetDim(1) : -1;
    if (x->GetDataType() != DT_FLOAT || ctx->GetInputTensor(1)->GetDataType() != DT_FLOAT || ctx->GetInputTensor(2)->GetDataType() != DT_FLOAT)
      return Fail(ctx, "the generated C normalizes float32 only");
    if (c < 0 || ctx->GetInputTensor(1)->GetShapeSize() != c || ctx->GetInputTensor(2)->GetShapeSize() != c)
      return Fail(ctx, "needs [N, C, spatial...] with C-element scale and B");
    const int64_t groups = x->GetShape().GetDim(0) * c, count = x->GetShapeSize() / std::max<int64_t>(groups, 1);
    ctx->Include("<math.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_instance_norm_f32");
    ctx->Run("weft_instance_norm_f32(" + aot::IntLit(groups) + ", " + aot::IntLit(c) + ", " + aot::IntLit(count) + ", " +
             aot::FloatLit(*ctx->GetAttrs()->GetFloat("epsilon")) + ", " + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " +
             ctx->Input(2, "float") + ", " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* scale = ctx->GetInputTensor(1);
    const Tensor* bias = ctx->GetInputTensor(2);
    if (x->GetShape().GetDimNum() < 3) return Fail(ctx, "input must be [N, C, spatial...]");
    int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1);
    if (scale->GetShapeSize() != c || bias->GetShapeSize() != c) return Fail(ctx, "scale and B must have C elements");
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t sp = x->GetShapeSize() / std::max<int64_t>(n * c, 1);
    const double eps = *ctx->GetAttrs()->GetFloat("epsilon");
    if (x->GetDataType() == DT_FLOAT && scale->GetDataType() == DT_FLOAT && bias->GetDataType() == DT_FLOAT) {
      // float32: each (image, channel) plane's mean and variance as float64 sums in vector
      // lanes, then one vectorized pass; planes split over the threads.
      const float* px = x->GetData<float>();
      const float* ps = scale->GetData<float>();
      const float* pb = bias->GetData<float>();
      float* py = y->GetData<float>();
      ForRows(ctx, n * c, sp, [&](int64_t lo, int64_t hi) {
        for (int64_t g = lo; g < hi; ++g) {
          const float* row = px + g * sp;
          double sum = 0, sq = 0;
#pragma omp simd reduction(+ : sum)
          for (int64_t i = 0; i < sp; ++i) sum += row[i];
          const double mu = sum / static_cast<double>(std::max<int64_t>(sp, 1));
#pragma omp simd reduction(+ : sq)
          for (int64_t i = 0; i < sp; ++i) sq += (row[i] - mu) * (row[i] - mu);
          const double iv = 1.0 / std::sqrt(sq / static_cast<double>(std::max<int64_t>(sp, 1)) + eps);
          // x - fm is exact wherever x lies within a factor of two of the float32 mean fm (a
          // plane with a large offset); fm's rounding is put back through df = fm - mean.
          const float fm = static_cast<float>(mu), df = static_cast<float>(static_cast<double>(fm) - mu);
          const float fa = static_cast<float>(iv * ps[g % c]), fb = pb[g % c];
          float* out = py + g * sp;
#pragma omp simd
          for (int64_t i = 0; i < sp; ++i) out[i] = ((row[i] - fm) + df) * fa + fb;
        }
      });
      return GRAPH_SUCCESS;
    }
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      NormalizeGroups(x->GetData<T>(), y->GetData<T>(), n * c, sp, eps, [&](int64_t g, int64_t, double* s, double* b) {
        *s = ParamAt(scale, g % c);
        *b = ParamAt(bias, g % c);
      });
    });
    return GRAPH_SUCCESS;
  }
};

// LayerNormalization, and with kRms ONNX Runtime's SimplifiedLayerNormalization (RMS
// normalization: x / sqrt(mean(x^2) + epsilon) * Scale, no mean subtracted, no B; its one
// optional statistic output is the inverse deviation).
template <bool kRms>
class LayerNormalizationT : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // float32 with Scale and B one value per element of the normalized row (the common form).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* scale = ctx->GetInputTensor(1);
    const Tensor* bias = ctx->GetOptionalInputTensor(2);
    const Shape& s = x->GetShape();
    int64_t axis = 0, outer = 1, inner = 1;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(s.GetDimNum()), &axis);
    for (size_t k = 0; k < s.GetDimNum(); ++k) (static_cast<int64_t>(k) < axis ? outer : inner) *= s.GetDim(k);
    auto per_row = [&](const Tensor* p) {
      if (p->GetDataType() != DT_FLOAT || p->GetShapeSize() != inner) return false;
      for (size_t k = 0; k < p->GetShape().GetDimNum(); ++k)
        if (p->GetShape().GetDim(k) != 1 && p->GetShape().GetDimNum() - k > s.GetDimNum() - static_cast<size_t>(axis)) return false;
      return true;
    };
    if (x->GetDataType() != DT_FLOAT || !per_row(scale) || (bias && !per_row(bias)))
      return Fail(ctx, "the generated C normalizes float32 with Scale and B of one value per element of the normalized dims only");
    const size_t outs = ctx->GetComputeNodeOutputNum();
    ctx->Include("<math.h>");
    if (kRms) {
      aot::EmitHelper(ctx, aot::Kernels(), "weft_rms_norm_f32");
      ctx->Run("weft_rms_norm_f32(" + aot::IntLit(outer) + ", " + aot::IntLit(inner) + ", " + aot::FloatLit(*ctx->GetAttrs()->GetFloat("epsilon")) +
               ", " + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " + ctx->Output(0, "float") + ", " +
               (outs > 1 ? ctx->Output(1, "float") : std::string("0")) + ");\n");
      return GRAPH_SUCCESS;
    }
    aot::EmitHelper(ctx, aot::Kernels(), "weft_layer_norm_f32");
    ctx->Run("weft_layer_norm_f32(" + aot::IntLit(outer) + ", " + aot::IntLit(inner) + ", " + aot::FloatLit(*ctx->GetAttrs()->GetFloat("epsilon")) +
             ", " + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " + (bias ? ctx->Input(2, "float") : std::string("0")) + ", " +
             ctx->Output(0, "float") + ", " + (outs > 1 ? ctx->Output(1, "float") : std::string("0")) + ", " +
             (outs > 2 ? ctx->Output(2, "float") : std::string("0")) + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    int64_t axis = 0;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(x.GetDimNum()), &axis))
      return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), x.GetDimNum()));
    // Scale and B broadcast to X (unidirectionally: each dim equal or 1), never wider.
    for (size_t in = 1; in <= 2; ++in) {
      const Shape* p = in == 1 ? ctx->GetInputShape(1) : ctx->GetOptionalInputShape(2);
      if (!p) continue;
      bool fits = p->GetDimNum() <= x.GetDimNum();
      for (size_t k = 0; fits && k < p->GetDimNum(); ++k) {
        int64_t d = p->GetDim(k), want = x.GetDim(x.GetDimNum() - p->GetDimNum() + k);
        fits = d == want || d == 1;
      }
      if (!fits) return Fail(ctx, std::string(in == 1 ? "Scale " : "B ") + p->ToString() + " does not broadcast to X " + x.ToString());
    }
    *ctx->GetOutputShape(0) = x;
    Shape stat;
    for (size_t k = 0; k < x.GetDimNum(); ++k) stat.AppendDim(static_cast<int64_t>(k) < axis ? x.GetDim(k) : 1);
    for (size_t k = 1; k < ctx->GetComputeNodeOutputNum(); ++k) *ctx->GetOutputShape(k) = stat;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
    for (size_t k = 1; k < ctx->GetComputeNodeOutputNum(); ++k) ctx->SetOutputDataType(k, DT_FLOAT);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* scale = ctx->GetInputTensor(1);
    const Tensor* bias = ctx->GetOptionalInputTensor(2);
    const Shape& s = x->GetShape();
    int64_t axis = 0;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(s.GetDimNum()), &axis);
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < s.GetDimNum(); ++k) (static_cast<int64_t>(k) < axis ? outer : inner) *= s.GetDim(k);
    Tensor* y = ctx->MallocOutputTensor(0, s, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    Tensor* mean_t = nullptr;
    Tensor* inv_t = nullptr;
    for (size_t k = 1; k < ctx->GetComputeNodeOutputNum(); ++k) {
      Tensor* t = ctx->MallocOutputTensor(k, ctx->GetOutputTensor(k)->GetShape(), DT_FLOAT);
      if (!t) return GRAPH_FAILED;
      (k == 1 && !kRms ? mean_t : inv_t) = t;
    }
    // Scale/B broadcast against X.
    int64_t ss[WEFT_MAX_DIMS], sb[WEFT_MAX_DIMS];
    BroadcastStrides(scale->GetShape(), s, ss);
    if (bias) BroadcastStrides(bias->GetShape(), s, sb);
    auto* mean = static_cast<double*>(ctx->MallocWorkSpace(static_cast<size_t>(outer) * sizeof(double)));
    auto* inv = static_cast<double*>(ctx->MallocWorkSpace(static_cast<size_t>(outer) * sizeof(double)));
    if (!mean || !inv) return GRAPH_FAILED;
    // Common case: float32 with per-channel Scale/B over a contiguous row (the same for every row).
    auto per_row = [&](const Tensor* p) {
      if (p->GetShapeSize() != inner) return false;
      for (size_t k = 0; k < p->GetShape().GetDimNum(); ++k)
        if (p->GetShape().GetDim(k) != 1 && p->GetShape().GetDimNum() - k > s.GetDimNum() - static_cast<size_t>(axis)) return false;
      return true;
    };
    if (x->GetDataType() == DT_FLOAT && scale->GetDataType() == DT_FLOAT && per_row(scale) &&
        (!bias || (bias->GetDataType() == DT_FLOAT && per_row(bias)))) {
      const float* px = x->GetData<float>();
      const float* ps = scale->GetData<float>();
      const float* pb = bias ? bias->GetData<float>() : nullptr;
      float* py = y->GetData<float>();
      double eps = *ctx->GetAttrs()->GetFloat("epsilon");
      ForRows(ctx, outer, inner, [&](int64_t lo, int64_t hi) {
      for (int64_t g = lo; g < hi; ++g) {
        const float* row = px + g * inner;
        double sum = 0, sq = 0;  // float64 sums, in vector lanes
        if (!kRms) {
#pragma omp simd reduction(+ : sum)
          for (int64_t i = 0; i < inner; ++i) sum += row[i];
        }
        double mu = sum / static_cast<double>(inner);
#pragma omp simd reduction(+ : sq)
        for (int64_t i = 0; i < inner; ++i) sq += (row[i] - mu) * (row[i] - mu);
        double iv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
        float fm = static_cast<float>(mu), fi = static_cast<float>(iv);
        float* out = py + g * inner;
        if (pb) {
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) out[i] = (row[i] - fm) * fi * ps[i] + pb[i];
        } else {
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) out[i] = (row[i] - fm) * fi * ps[i];
        }
        mean[g] = mu;
        inv[g] = iv;
      }
      });
    } else {
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      NormalizeGroups(x->GetData<T>(), y->GetData<T>(), outer, inner, *ctx->GetAttrs()->GetFloat("epsilon"),
                      [&](int64_t g, int64_t i, double* sv, double* bv) {
                        int64_t rem = g * inner + i, is = 0, ib = 0;
                        for (size_t k = s.GetDimNum(); k-- > 0;) {
                          int64_t c = rem % s.GetDim(k);
                          rem /= s.GetDim(k);
                          is += c * ss[k];
                          ib += c * sb[k];
                        }
                        *sv = ParamAt(scale, is);
                        *bv = bias ? ParamAt(bias, ib) : 0.0;
                      },
                      mean, inv, kRms);
    });
    }
    for (int64_t g = 0; g < outer; ++g) {
      if (mean_t) mean_t->GetData<float>()[g] = static_cast<float>(mean[g]);
      if (inv_t) inv_t->GetData<float>()[g] = static_cast<float>(inv[g]);
    }
    return GRAPH_SUCCESS;
  }
};

class MeanVarianceNormalization : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The runtime's arithmetic: per kept index, sums of x and x^2 in double, then
  // (x - mean) / sqrt(E[x^2] - mean^2 + 1e-9).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType dt = x->GetDataType();
    if (dt != DT_FLOAT && dt != DT_DOUBLE) return Fail(ctx, "the generated C has float32 and float64 MeanVarianceNormalization only");
    const Shape& s = x->GetShape();
    const size_t r = s.GetDimNum();
    std::vector<bool> red(r, false);
    ListView<int64_t> axes = ctx->GetAttrs()->GetListInt("axes");
    for (int64_t a : axes) {
      int64_t n;
      if (!NormalizeAxis(a, static_cast<int64_t>(r), &n)) return Fail(ctx, AxesError("axes", a, r));
      red[static_cast<size_t>(n)] = true;
    }
    std::vector<int64_t> dims(std::max<size_t>(r, 1), 1), ost(std::max<size_t>(r, 1), 0);
    int64_t groups = 1;
    for (size_t k = r; k-- > 0;) {
      dims[k] = s.GetDim(k);
      ost[k] = red[k] ? 0 : groups;
      if (!red[k]) groups *= s.GetDim(k);
    }
    const int64_t total = s.GetShapeSize();
    if (total == 0) return GRAPH_SUCCESS;
    const int64_t count = total / std::max<int64_t>(groups, 1);
    const std::string t = aot::CType(dt), R = std::to_string(std::max<size_t>(r, 1));
    const std::string sum = ctx->Scratch(static_cast<size_t>(groups) * 2 * sizeof(double));
    std::string dl, ol;
    for (size_t k = 0; k < dims.size(); ++k) {
      dl += (k ? ", " : "") + aot::IntLit(dims[k]);
      ol += (k ? ", " : "") + aot::IntLit(ost[k]);
    }
    ctx->Include("<math.h>");
    ctx->Run("{\n  static const int64_t dims[" + R + "] = {" + dl + "}, ost[" + R + "] = {" + ol + "};\n  const " + t + "* px = " + ctx->Input(0, t.c_str()) +
             ";\n  " + t + "* py = " + ctx->Output(0, t.c_str()) + ";\n  double* sum = (double*)(void*)" + sum + ";\n  double* sq = sum + " +
             aot::IntLit(groups) + ";\n  int64_t i, g, k, rem;\n  for (g = 0; g < " + aot::IntLit(2 * groups) + "; ++g) sum[g] = 0;\n  for (i = 0; i < " +
             aot::IntLit(total) + "; ++i) {\n    const double v = (double)px[i];\n    for (g = 0, rem = i, k = " + R +
             "; k-- > 0;) {\n      g += (rem % dims[k]) * ost[k];\n      rem /= dims[k];\n    }\n    sum[g] += v;\n    sq[g] += v * v;\n  }\n  for (i = 0; i < " +
             aot::IntLit(total) + "; ++i) {\n    double mean, var;\n    for (g = 0, rem = i, k = " + R +
             "; k-- > 0;) {\n      g += (rem % dims[k]) * ost[k];\n      rem /= dims[k];\n    }\n    mean = sum[g] / " + aot::IntLit(count) +
             ";\n    var = sq[g] / " + aot::IntLit(count) + " - mean * mean;\n    py[i] = (" + t + ")(((double)px[i] - mean) / sqrt(var + 1e-9));\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s = *ctx->GetInputShape(0);
    ListView<int64_t> axes = ctx->GetAttrs()->GetListInt("axes");
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t n, a = axes[k];
      if (!NormalizeAxis(a, static_cast<int64_t>(s.GetDimNum()), &n)) return Fail(ctx, AxesError("axes", a, s.GetDimNum()));
    }
    *ctx->GetOutputShape(0) = s;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& s = x->GetShape();
    ListView<int64_t> axes = ctx->GetAttrs()->GetListInt("axes");
    std::vector<bool> red(s.GetDimNum(), false);
    for (int64_t a : axes) {
      int64_t n;
      if (!NormalizeAxis(a, static_cast<int64_t>(s.GetDimNum()), &n)) return Fail(ctx, AxesError("axes", a, s.GetDimNum()));
      red[n] = true;
    }
    Tensor* y = ctx->MallocOutputTensor(0, s, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    // Statistic index of every element (kept dims only).
    int64_t ost[WEFT_MAX_DIMS], acc = 1;
    for (size_t k = s.GetDimNum(); k-- > 0;) {
      ost[k] = red[k] ? 0 : acc;
      if (!red[k]) acc *= s.GetDim(k);
    }
    int64_t groups = acc, total = s.GetShapeSize(), count = total / std::max<int64_t>(groups, 1);
    auto* sum = static_cast<double*>(ctx->MallocWorkSpace(static_cast<size_t>(groups) * 2 * sizeof(double)));
    if (!sum) return GRAPH_FAILED;
    double* sq = sum + groups;
    std::fill(sum, sum + 2 * groups, 0.0);
    auto stat = [&](int64_t i) {
      int64_t rem = i, o = 0;
      for (size_t k = s.GetDimNum(); k-- > 0;) {
        o += (rem % s.GetDim(k)) * ost[k];
        rem /= s.GetDim(k);
      }
      return o;
    };
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < total; ++i) {
        double v = Load(x->GetData<T>()[i]);
        sum[stat(i)] += v;
        sq[stat(i)] += v * v;
      }
      for (int64_t i = 0; i < total; ++i) {
        int64_t g = stat(i);
        double mean = sum[g] / count, var = sq[g] / count - mean * mean;
        y->GetData<T>()[i] = Store<T>(static_cast<typename Compute<T>::type>((Load(x->GetData<T>()[i]) - mean) / std::sqrt(var + 1e-9)));
      }
    });
    return GRAPH_SUCCESS;
  }
};

class LRN : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The runtime's arithmetic: squares summed in double over the channel window, then pow.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& s = x->GetShape();
    if (x->GetDataType() != DT_FLOAT || s.GetDimNum() < 3) return Fail(ctx, "the generated C has float32 [N, C, ...] LRN only");
    const int64_t size = *ctx->GetAttrs()->GetInt("size"), n = s.GetDim(0), c = s.GetDim(1);
    const int64_t sp = n * c != 0 ? s.GetShapeSize() / (n * c) : 0, lo = (size - 1) / 2, hi = size - 1 - lo;
    const double alpha = *ctx->GetAttrs()->GetFloat("alpha"), beta = *ctx->GetAttrs()->GetFloat("beta"), bias = *ctx->GetAttrs()->GetFloat("bias");
    char k[160];
    std::snprintf(k, sizeof(k), "const double bias = %.17g, scale = %.17g, beta = %.17g;", bias, alpha / double(size), beta);
    ctx->Include("<math.h>");
    ctx->Run("{\n  const float* px = " + ctx->Input(0, "float") + ";\n  float* py = " + ctx->Output(0, "float") + ";\n  " + k +
             "\n  int64_t b, ch, i, j;\n  for (b = 0; b < " + aot::IntLit(n) + "; ++b)\n    for (ch = 0; ch < " + aot::IntLit(c) +
             "; ++ch)\n      for (i = 0; i < " + aot::IntLit(sp) + "; ++i) {\n        double sq = 0;\n        const int64_t j0 = ch - " +
             aot::IntLit(lo) + " < 0 ? 0 : ch - " + aot::IntLit(lo) + ", j1 = ch + " + aot::IntLit(hi) + " > " + aot::IntLit(c - 1) + " ? " +
             aot::IntLit(c - 1) + " : ch + " + aot::IntLit(hi) + ";\n        for (j = j0; j <= j1; ++j) {\n          const double v = px[(b * " +
             aot::IntLit(c) + " + j) * " + aot::IntLit(sp) + " + i];\n          sq += v * v;\n        }\n        py[(b * " + aot::IntLit(c) +
             " + ch) * " + aot::IntLit(sp) + " + i] = (float)(px[(b * " + aot::IntLit(c) + " + ch) * " + aot::IntLit(sp) +
             " + i] / pow(bias + scale * sq, beta));\n      }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s = *ctx->GetInputShape(0);
    if (s.GetDimNum() < 3) return Fail(ctx, "input must be [N, C, spatial...], got " + s.ToString());
    int64_t size = *ctx->GetAttrs()->GetInt("size");
    if (size <= 0) return Fail(ctx, "size must be positive, got " + std::to_string(size));
    *ctx->GetOutputShape(0) = s;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& s = x->GetShape();
    if (s.GetDimNum() < 3) return Fail(ctx, "input must be [N, C, spatial...]");
    int64_t size = *ctx->GetAttrs()->GetInt("size");
    double alpha = *ctx->GetAttrs()->GetFloat("alpha"), beta = *ctx->GetAttrs()->GetFloat("beta"), bias = *ctx->GetAttrs()->GetFloat("bias");
    Tensor* y = ctx->MallocOutputTensor(0, s, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t n = s.GetDim(0), c = s.GetDim(1), sp = s.GetShapeSize() / std::max<int64_t>(n * c, 1);
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      for (int64_t in = 0; in < n; ++in)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t i = 0; i < sp; ++i) {
            double sq = 0;
            for (int64_t j = std::max<int64_t>(0, ch - lo); j <= std::min(c - 1, ch + hi); ++j) {
              double v = Load(px[(in * c + j) * sp + i]);
              sq += v * v;
            }
            double v = Load(px[(in * c + ch) * sp + i]);
            y->GetData<T>()[(in * c + ch) * sp + i] = Store<T>(static_cast<typename Compute<T>::type>(v / std::pow(bias + alpha / size * sq, beta)));
          }
    });
    return GRAPH_SUCCESS;
  }
};

// PRelu: slope broadcasts to X.
class PRelu : public EagerExecuteOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const DataType dt = ctx->GetInputTensor(0)->GetDataType();
    if (dt != DT_FLOAT && dt != DT_DOUBLE && dt != DT_INT32 && dt != DT_INT64)
      return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " PRelu");
    const std::string t = aot::CType(dt);
    const bool integer = dt == DT_INT32 || dt == DT_INT64;  // products wrap as the runtime's
    return aot::EmitMap2(ctx, integer ? "a < 0 ? (" + t + ")((uint64_t)a * (uint64_t)b) : a" : "a < 0 ? a * b : a", t);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* slope = ctx->GetInputTensor(1);
    Shape b;
    if (!BroadcastShape(x->GetShape(), slope->GetShape(), &b) || b != x->GetShape())
      return Fail(ctx, "slope " + slope->GetShape().ToString() + " does not broadcast to X " + x->GetShape().ToString());
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      const T* ps = slope->GetData<T>();
      T* py = y->GetData<T>();
      ForEachBroadcast(x->GetShape(), slope->GetShape(), x->GetShape(), [&](int64_t i, int64_t ia, int64_t ib) {
        auto v = Load(px[ia]);
        py[i] = v < decltype(v)(0) ? Store<T>(static_cast<decltype(v)>(v * Load(ps[ib]))) : px[ia];
      });
    });
    return GRAPH_SUCCESS;
  }
};

// ONNX's RMSNormalization: SimplifiedLayerNormalization's maths under its opset-23 name.
class RMSNormalization : public LayerNormalizationT<true> {};

}  // namespace

void WeftRegister_nn(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("Gemm").INPUT(A, "T").INPUT(B, "T").OPTIONAL_INPUT(C, "T").OUTPUT(Y, "T")
                     .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT32, DT_INT64, DT_UINT32, DT_UINT64}))
                     .ATTR(alpha, Float, 1.0).ATTR(beta, Float, 1.0).ATTR(transA, Int, 0).ATTR(transB, Int, 0).Build(),
                 MakeOpImpl<Gemm>("Gemm")});
  out.push_back({OpDefBuilder("BatchNormalization").INPUT(X, FloatTypes()).INPUT(scale, FloatTypes()).INPUT(B, FloatTypes())
                     .INPUT(input_mean, FloatTypes()).INPUT(input_var, FloatTypes()).OUTPUT(Y, FloatTypes())
                     .DYNAMIC_OUTPUT(running, FloatTypes()).ATTR(epsilon, Float, 1e-5).ATTR(momentum, Float, 0.9)
                     .ATTR(training_mode, Int, 0).ATTR(spatial, Int, 1).Build(),
                 MakeOpImpl<BatchNormalization>("BatchNormalization")});
  out.push_back({OpDefBuilder("InstanceNormalization").INPUT(input, "T").INPUT(scale, "T").INPUT(B, "T").OUTPUT(output, "T")
                     .SAME_AS_INPUT(input).DATATYPE(T, FloatTypes()).ATTR(epsilon, Float, 1e-5).Build(),
                 MakeOpImpl<InstanceNormalization>("InstanceNormalization")});
  out.push_back({OpDefBuilder("GroupNormalization").INPUT(X, "T").INPUT(scale, "T").INPUT(bias, "T").OUTPUT(Y, "T")
                     .DATATYPE(T, FloatTypes()).ATTR(epsilon, Float, 1e-5).REQUIRED_ATTR(num_groups, Int).ATTR(stash_type, Int, 1)
                     .ATTR(per_group_affine, Int, 0).Build(),
                 MakeOpImpl<GroupNormalization>("GroupNormalization")});
  // ONNX's RMSNormalization (opset 23): the same maths as SimplifiedLayerNormalization below.
  out.push_back({OpDefBuilder("RMSNormalization").INPUT(X, "T").INPUT(scale, "T").OUTPUT(Y, "T")
                     .DATATYPE(T, FloatTypes()).ATTR(axis, Int, -1)
                     .ATTR(epsilon, Float, 1e-5).ATTR(stash_type, Int, 1).Build(),
                 MakeOpImpl<RMSNormalization>("RMSNormalization")});
  out.push_back({OpDefBuilder("LayerNormalization").INPUT(X, "T").INPUT(Scale, "T").OPTIONAL_INPUT(B, "T").OUTPUT(Y, "T")
                     .DYNAMIC_OUTPUT(stats, TensorType({DT_FLOAT})).DATATYPE(T, FloatTypes()).ATTR(axis, Int, -1)
                     .ATTR(epsilon, Float, 1e-5).ATTR(stash_type, Int, 1).Build(),
                 MakeOpImpl<LayerNormalizationT<false>>("LayerNormalization")});
  // ONNX Runtime registers SimplifiedLayerNormalization in the default domain; its optimizer
  // writes it into saved models (RMS normalization, as in T5-style models).
  out.push_back({OpDefBuilder("SimplifiedLayerNormalization").INPUT(X, "T").INPUT(scale, "T").OUTPUT(Y, "T")
                     .DYNAMIC_OUTPUT(inv_std_var, TensorType({DT_FLOAT})).DATATYPE(T, FloatTypes()).ATTR(axis, Int, -1)
                     .ATTR(epsilon, Float, 1e-5).ATTR(stash_type, Int, 1).Build(),
                 MakeOpImpl<LayerNormalizationT<true>>("SimplifiedLayerNormalization")});
  out.push_back({OpDefBuilder("MeanVarianceNormalization").INPUT(X, FloatTypes()).OUTPUT(Y, FloatTypes()).SAME_AS_INPUT(X)
                     .ATTR(axes, ListInt, {0, 2, 3}).Build(), MakeOpImpl<MeanVarianceNormalization>("MeanVarianceNormalization")});
  out.push_back({OpDefBuilder("LRN").INPUT(X, FloatTypes()).OUTPUT(Y, FloatTypes()).SAME_AS_INPUT(X).REQUIRED_ATTR(size, Int)
                     .ATTR(alpha, Float, 0.0001).ATTR(beta, Float, 0.75).ATTR(bias, Float, 1.0).Build(), MakeOpImpl<LRN>("LRN")});
  out.push_back({OpDefBuilder("PRelu").INPUT(X, "T").INPUT(slope, "T").OUTPUT(Y, "T").SAME_AS_INPUT(X)
                     .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT32, DT_INT64})).Build(), MakeOpImpl<PRelu>("PRelu")});
}

}  // namespace weft::ops
