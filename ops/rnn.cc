// Recurrent layers: RNN, GRU and LSTM with ONNX semantics (directions, sequence_lens, initial
// states, peepholes, clip, custom activations, layout 0 and 1); float32 also as C for weft aot.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include <oneapi/dnnl/dnnl.h>

#include "aot_emit.h"
#include "dnnl_runner.h"
#include "op_util.h"
#include "rnn_activation.h"
#include "vector_math.h"

namespace weft::ops {
namespace {

enum class Kind { kRnn, kGru, kLstm };

using Activation = RnnActivation;

WEFT_VMATH_CLONES void SigmoidInPlace(float* v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) v[i] = vmath::Sigmoid(v[i]);
}
WEFT_VMATH_CLONES void TanhInPlace(float* v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) v[i] = vmath::Tanh(v[i]);
}

// Clips (when clip > 0) and applies `a` to n floats in place: vectorized for the activations
// the gates use by default, through the float64 formula for the others.
void ApplyActivation(const Activation& a, float clip, float* v, int64_t n) {
  if (clip > 0)
    for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], -clip, clip);
  if (a.name == "Sigmoid") return SigmoidInPlace(v, n);
  if (a.name == "Tanh") return TanhInPlace(v, n);
  if (a.name == "Relu") {
    for (int64_t i = 0; i < n; ++i) v[i] = std::max(v[i], 0.f);
    return;
  }
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(a(v[i]));
}

// C[M, N] = A[M, K] * B[N, K]^T (+ C when accumulate), row-major, on the session's threads.
bool GemmNT(const KernelContextBase* ctx, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
            float* c, int64_t ldc, bool accumulate = false) {
  return ParallelSgemm(ctx, 'T', m, n, k, a, lda, b, ldb, accumulate ? 1.f : 0.f, c, ldc);
}

// The fused float32 path (below): R of one direction packed as panels of kUnits hidden units,
// each panel [H][gates][kUnits], so one pass over a panel yields every gate of its units.
constexpr int64_t kUnits = 16;
typedef float V16 __attribute__((vector_size(kUnits * sizeof(float))));

// z[r][g][0..kUnits) = sum_k h[r * ldh + k] * panel[k][g][.] for RB rows of h. U consecutive k
// go to U separate sums (added at the end): with one sum per gate, each multiply-add waited for
// the previous one's result, and a step ran at a third of the FMA units' rate.
template <int NG, int RB>
WEFT_VMATH_CLONES void PanelGemv(const float* __restrict panel, const float* __restrict h, int64_t ldh, int64_t H,
                                 float* __restrict z) {
  constexpr int U = RB == 1 ? 4 : 2;
  V16 acc[U][RB][NG] = {};
  auto row = [&](int u, int64_t k) {
    const float* q = panel + k * NG * kUnits;
    V16 w[NG];
    for (int g = 0; g < NG; ++g) std::memcpy(&w[g], q + g * kUnits, sizeof(V16));
    for (int r = 0; r < RB; ++r) {
      const float hk = h[r * ldh + k];
      for (int g = 0; g < NG; ++g) acc[u][r][g] += hk * w[g];
    }
  };
  int64_t k = 0;
  for (; k + U <= H; k += U)
    for (int u = 0; u < U; ++u) row(u, k + u);
  for (; k < H; ++k) row(0, k);
  for (int r = 0; r < RB; ++r)
    for (int g = 0; g < NG; ++g) {
      V16 sum = acc[0][r][g];
      for (int u = 1; u < U; ++u) sum += acc[u][r][g];
      std::memcpy(z + (r * NG + g) * kUnits, &sum, sizeof(V16));
    }
}

// Clips (when clip > 0) and applies `a` to n <= kUnits floats: inlined into the fused gate
// functions, so Sigmoid and Tanh vectorize there.
[[gnu::always_inline]] inline void ActivateSpan(const Activation& a, float clip, float* v, int64_t n) {
  if (clip > 0)
    for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], -clip, clip);
  if (a.sigmoid) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) v[i] = vmath::Sigmoid(v[i]);
  } else if (a.tanh) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) v[i] = vmath::Tanh(v[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(a(v[i]));
  }
}

// One row and panel of a step after its GEMV: z holds the recurrent products of the panel's
// gates ([gates][kUnits]); x, c, h, hn, y, peep and rbh point at the panel's first unit (x at
// gate 0 of the input projection, gates H apart; y may be null); n units are real.
struct GateArgs {
  const Activation *f, *g, *h;
  float clip;
  int64_t H, n;
  const float* x;
  const float* hp;
  float* hn;
  float* c;
  float* y;
  const float* peep;  // LSTM peepholes i, o, f (H apart) or null
  const float* rbh;   // GRU (linear_before_reset): the candidate's recurrent bias
  bool input_forget;
};

WEFT_VMATH_CLONES void LstmGates(const GateArgs& a, float* z) {
  const int64_t H = a.H, n = a.n;
  float *i = z, *o = z + kUnits, *f = z + 2 * kUnits, *cc = z + 3 * kUnits;  // ONNX's gate order i, o, f, c
  for (int64_t j = 0; j < n; ++j) i[j] += a.x[j], o[j] += a.x[H + j], f[j] += a.x[2 * H + j], cc[j] += a.x[3 * H + j];
  if (a.peep)
    for (int64_t j = 0; j < n; ++j) i[j] += a.peep[j] * a.c[j], f[j] += a.peep[2 * H + j] * a.c[j];
  ActivateSpan(*a.f, a.clip, i, n);
  if (a.input_forget) {
    for (int64_t j = 0; j < n; ++j) f[j] = 1.f - i[j];
  } else {
    ActivateSpan(*a.f, a.clip, f, n);
  }
  ActivateSpan(*a.g, a.clip, cc, n);
  for (int64_t j = 0; j < n; ++j) a.c[j] = f[j] * a.c[j] + i[j] * cc[j];
  if (a.peep)
    for (int64_t j = 0; j < n; ++j) o[j] += a.peep[H + j] * a.c[j];
  ActivateSpan(*a.f, a.clip, o, n);
  float hc[kUnits];
  std::copy(a.c, a.c + n, hc);
  ActivateSpan(*a.h, 0.f, hc, n);
  for (int64_t j = 0; j < n; ++j) a.hn[j] = o[j] * hc[j];
  if (a.y) std::copy(a.hn, a.hn + n, a.y);
}

// GRU with linear_before_reset: h~ = g(x_h + r (.) (R_h h + Rb_h)).
WEFT_VMATH_CLONES void GruGates(const GateArgs& a, float* z) {
  const int64_t H = a.H, n = a.n;
  float *u = z, *r = z + kUnits, *cand = z + 2 * kUnits;
  for (int64_t j = 0; j < n; ++j) u[j] += a.x[j], r[j] += a.x[H + j];
  ActivateSpan(*a.f, a.clip, u, n);
  ActivateSpan(*a.f, a.clip, r, n);
  for (int64_t j = 0; j < n; ++j) cand[j] = a.x[2 * H + j] + r[j] * (cand[j] + a.rbh[j]);
  ActivateSpan(*a.g, a.clip, cand, n);
  for (int64_t j = 0; j < n; ++j) a.hn[j] = (1.f - u[j]) * cand[j] + u[j] * a.hp[j];
  if (a.y) std::copy(a.hn, a.hn + n, a.y);
}

WEFT_VMATH_CLONES void RnnGates(const GateArgs& a, float* z) {
  for (int64_t j = 0; j < a.n; ++j) z[j] += a.x[j];
  ActivateSpan(*a.f, a.clip, z, a.n);
  std::copy(z, z + a.n, a.hn);
  if (a.y) std::copy(a.hn, a.hn + a.n, a.y);
}

template <Kind K>
class Recurrent : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public CompilableOp, public RebuildOnLoad {
 public:
  static constexpr int kGates = K == Kind::kLstm ? 4 : K == Kind::kGru ? 3 : 1;

  struct Dims {
    int64_t seq, batch, input, hidden, dirs;
    bool batch_first;
    // Offsets under the layout: X's row of step t and batch entry b; Y's and Y_h's (Y_c's) first
    // element for (t, direction, b) and (direction, b).
    int64_t Row(int64_t t, int64_t b) const { return batch_first ? b * seq + t : t * batch + b; }
    int64_t YAt(int64_t t, int64_t dd, int64_t b) const {
      return batch_first ? ((b * seq + t) * dirs + dd) * hidden : ((t * dirs + dd) * batch + b) * hidden;
    }
    int64_t HAt(int64_t dd, int64_t b) const { return batch_first ? (b * dirs + dd) * hidden : (dd * batch + b) * hidden; }
  };
  // Every batch entry's length (seq when sequence_lens is absent); false if one is outside [0, seq].
  static bool ReadLens(const Dims& d, const Tensor* lens, std::vector<int64_t>* len) {
    len->assign(static_cast<size_t>(d.batch), d.seq);
    for (int64_t b = 0; b < d.batch && lens; ++b) {
      (*len)[b] = lens->GetDataType() == DT_INT64 ? lens->GetData<int64_t>()[b] : lens->GetData<int32_t>()[b];
      if ((*len)[b] < 0 || (*len)[b] > d.seq) return false;
    }
    return true;
  }
  static bool GetDims(const KernelContextBase* ctx, Dims* d, std::string* err) {
    const Shape& x = ctx->GetInputTensor(0)->GetShape();
    const Shape& w = ctx->GetInputTensor(1)->GetShape();
    if (x.GetDimNum() != 3 || w.GetDimNum() != 3) {
      *err = "X and W must be 3-D";
      return false;
    }
    d->batch_first = *ctx->GetAttrs()->GetInt("layout") != 0;
    d->seq = d->batch_first ? x.GetDim(1) : x.GetDim(0);
    d->batch = d->batch_first ? x.GetDim(0) : x.GetDim(1);
    d->input = x.GetDim(2);
    d->hidden = *ctx->GetAttrs()->GetInt("hidden_size");
    std::string dir = ctx->GetAttrs()->GetStr("direction");
    d->dirs = dir == "bidirectional" ? 2 : 1;
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional") {
      *err = "unknown direction '" + dir + "'";
      return false;
    }
    if (d->hidden <= 0) {
      *err = "hidden_size must be positive, not " + std::to_string(d->hidden);
      return false;
    }
    if (w.GetDim(0) != d->dirs || w.GetDim(1) != kGates * d->hidden || w.GetDim(2) != d->input) {
      *err = "W " + w.ToString() + " does not match hidden_size " + std::to_string(d->hidden) + ", input " + std::to_string(d->input) +
             " and " + std::to_string(d->dirs) + " direction(s)";
      return false;
    }
    // Every other parameter is read by index in Execute: its shape must be exactly the one
    // the dims imply.
    const int64_t G = kGates * d->hidden, H = d->hidden;
    auto expect = [&](const Tensor* t, const char* name, const Shape& want) {
      if (!t || t->GetShape() == want) return true;
      *err = std::string(name) + " " + t->GetShape().ToString() + " must be " + want.ToString() + " (" +
             std::to_string(d->dirs) + " direction(s), batch " + std::to_string(d->batch) + ", hidden_size " +
             std::to_string(H) + (d->batch_first ? ", layout 1)" : ")");
      return false;
    };
    Shape state = d->batch_first ? Shape({d->batch, d->dirs, H}) : Shape({d->dirs, d->batch, H});
    if (!expect(ctx->GetInputTensor(2), "R", Shape({d->dirs, G, H})) ||
        !expect(ctx->GetOptionalInputTensor(3), "B", Shape({d->dirs, 2 * G})) ||
        !expect(ctx->GetOptionalInputTensor(4), "sequence_lens", Shape({d->batch})) ||
        !expect(ctx->GetOptionalInputTensor(5), "initial_h", state))
      return false;
    if (K == Kind::kLstm &&
        (!expect(ctx->GetOptionalInputTensor(6), "initial_c", state) || !expect(ctx->GetOptionalInputTensor(7), "P", Shape({d->dirs, 3 * H}))))
      return false;
    return true;
  }

  // Activations: per direction f, g (and h for LSTM), with alpha/beta consumed in order.
  static bool GetActivations(const KernelContextBase* ctx, int64_t dirs, std::vector<Activation>* acts, std::string* err) {
    return ParseRnnActivations(ctx, K == Kind::kLstm ? 3 : K == Kind::kGru ? 2 : 1, dirs, K != Kind::kRnn, acts, err);
  }

  // float32 through weft_rnn_f32 (ops/aot/rnn.c), one row of the batch at a time; sequence_lens
  // must be constant.
  graphStatus Emit(EmitContext* ctx) override {
    Dims d;
    std::string err;
    if (!GetDims(ctx, &d, &err)) return Fail(ctx, err);
    if (ctx->GetInputTensor(0)->GetDataType() != DT_FLOAT)
      return Fail(ctx, std::string("the generated C takes float32 only, not ") + DataTypeName(ctx->GetInputTensor(0)->GetDataType()));
    if (d.seq > INT32_MAX || d.batch > INT32_MAX || d.input > INT32_MAX || kGates * d.hidden > INT32_MAX)
      return Fail(ctx, "too large for the generated C");
    std::vector<Activation> acts;
    if (!GetActivations(ctx, d.dirs, &acts, &err)) return Fail(ctx, err);
    auto code = [&](const Activation& act) { return RnnActivationCKind(act.name); };
    for (const Activation& act : acts)
      if (code(act) < 0) return Fail(ctx, "activation '" + act.name + "' has no C implementation");
    const int per_dir = K == Kind::kLstm ? 3 : K == Kind::kGru ? 2 : 1;
    std::string lens = "0";
    if (const Tensor* l = ctx->GetOptionalInputTensor(4)) {
      if (!l->GetAddr()) return Fail(ctx, "the generated C needs a constant sequence_lens");
      std::vector<int64_t> v(static_cast<size_t>(d.batch));
      for (int64_t b = 0; b < d.batch; ++b) {
        v[b] = l->GetDataType() == DT_INT64 ? l->GetData<int64_t>()[b] : l->GetData<int32_t>()[b];
        if (v[b] < 0 || v[b] > d.seq) return Fail(ctx, "sequence_lens values must lie in [0, " + std::to_string(d.seq) + "]");
      }
      lens = ctx->Const("seq_lens", DT_INT64, v);
    }
    auto in = [&](size_t ir) {
      return ctx->GetOptionalInputTensor(ir) ? ctx->Input(aot::InputAt(ctx, ir), "float") : std::string("0");
    };
    auto out = [&](size_t k) { return k < ctx->GetComputeNodeOutputNum() ? ctx->Output(k, "float") : std::string("0"); };
    const std::string dir = ctx->GetAttrs()->GetStr("direction");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_rnn_f32");
    std::ostringstream r;
    r << "{\n  weft_rnn_f32_args a;\n  a.kind = " << static_cast<int>(K) << ";\n  a.seq = " << d.seq << ";\n  a.batch = " << d.batch
      << ";\n  a.in = " << d.input << ";\n  a.hidden = " << d.hidden << ";\n  a.dirs = " << d.dirs << ";\n  a.batch_first = " << d.batch_first
      << ";\n  a.reverse = " << (dir == "reverse") << ";\n  a.linear_before_reset = "
      << (K == Kind::kGru && *ctx->GetAttrs()->GetInt("linear_before_reset") != 0)
      << ";\n  a.input_forget = " << (K == Kind::kLstm && *ctx->GetAttrs()->GetInt("input_forget") != 0)
      << ";\n  a.clip = " << aot::FloatLit(*ctx->GetAttrs()->GetFloat("clip")) << ";\n";
    for (int64_t dd = 0; dd < 2; ++dd)
      for (int k = 0; k < 3; ++k) {
        // Unused slots (RNN's g and h, GRU's h, a second direction) repeat the last used one.
        const Activation& act = acts[static_cast<size_t>(std::min(dd, d.dirs - 1) * per_dir + std::min(k, per_dir - 1))];
        r << "  a.act[" << dd << "][" << k << "].kind = " << code(act) << ";\n  a.act[" << dd << "][" << k << "].alpha = " << aot::FloatLit(act.alpha)
          << ";\n  a.act[" << dd << "][" << k << "].beta = " << aot::FloatLit(act.beta) << ";\n";
      }
    r << "  a.x = " << ctx->Input(0, "float") << ";\n  a.w = " << in(1) << ";\n  a.r = " << in(2) << ";\n  a.b = " << in(3) << ";\n  a.p = "
      << (K == Kind::kLstm ? in(7) : "0") << ";\n  a.h0 = " << in(5) << ";\n  a.c0 = " << (K == Kind::kLstm ? in(6) : "0")
      << ";\n  a.lens = " << lens << ";\n  a.y = " << out(0) << ";\n  a.y_h = " << out(1) << ";\n  a.y_c = " << out(2)
      << ";\n  weft_rnn_f32(&a, (float*)(void*)" << ctx->Scratch(static_cast<size_t>((kGates + 3) * d.hidden) * sizeof(float)) << ");\n}\n";
    ctx->Run(r.str());
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(InferShapeContext* ctx) override {
    Dims d;
    std::string err;
    std::vector<Activation> acts;  // checked here too, so a bad list fails at compile time
    if (!GetDims(ctx, &d, &err) || !GetActivations(ctx, d.dirs, &acts, &err)) return Fail(ctx, err);
    Shape y = d.batch_first ? Shape({d.batch, d.seq, d.dirs, d.hidden}) : Shape({d.seq, d.dirs, d.batch, d.hidden});
    Shape h = d.batch_first ? Shape({d.batch, d.dirs, d.hidden}) : Shape({d.dirs, d.batch, d.hidden});
    *ctx->GetOutputShape(0) = y;
    for (size_t k = 1; k < ctx->GetComputeNodeOutputNum(); ++k) *ctx->GetOutputShape(k) = h;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) ctx->SetOutputDataType(k, ctx->GetInputDataType(0));
    return GRAPH_SUCCESS;
  }

  // float32 with a constant R (and, for GRU, linear_before_reset): R packed into panels for the
  // fused path. Nothing else is prepared; the other cases run as before.
  graphStatus Compile(OpCompileContext* ctx) override {
    const Tensor* R = ctx->GetRequiredInputTensor(2);
    if (!R || R->GetDataType() != DT_FLOAT || !R->GetAddr() || ctx->GetInputTensor(0)->GetDataType() != DT_FLOAT) return GRAPH_SUCCESS;
    if (K == Kind::kGru && *ctx->GetAttrs()->GetInt("linear_before_reset") == 0) return GRAPH_SUCCESS;
    const Shape& rs = R->GetShape();
    const int64_t H = *ctx->GetAttrs()->GetInt("hidden_size");
    if (rs.GetDimNum() != 3 || H <= 0 || rs.GetDim(1) != kGates * H || rs.GetDim(2) != H) return GRAPH_SUCCESS;  // Execute reports it
    const int64_t dirs = rs.GetDim(0), panels = (H + kUnits - 1) / kUnits, per_panel = H * kGates * kUnits;
    packed_.assign(static_cast<size_t>(dirs * panels * per_panel), 0.f);
    const float* r = R->GetData<float>();
    for (int64_t dd = 0; dd < dirs; ++dd)
      for (int64_t p = 0; p < panels; ++p)
        for (int64_t k = 0; k < H; ++k)
          for (int64_t g = 0; g < kGates; ++g)
            for (int64_t l = 0; l < kUnits && p * kUnits + l < H; ++l)
              packed_[static_cast<size_t>((dd * panels + p) * per_panel + (k * kGates + g) * kUnits + l)] =
                  r[(dd * kGates * H + g * H + p * kUnits + l) * H + k];
    packed_dirs_ = dirs;
    packed_hidden_ = H;
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Dims d;
    std::string err;
    if (!GetDims(ctx, &d, &err)) return Fail(ctx, err);
    const RuntimeAttrs* a = ctx->GetAttrs();
    const int per_dir = K == Kind::kLstm ? 3 : K == Kind::kGru ? 2 : 1;
    std::vector<Activation> acts;
    if (!GetActivations(ctx, d.dirs, &acts, &err)) return Fail(ctx, err);
    float clip = *a->GetFloat("clip");
    bool input_forget = K == Kind::kLstm && *a->GetInt("input_forget") != 0;
    bool linear_before_reset = K == Kind::kGru && *a->GetInt("linear_before_reset") != 0;
    std::string dir = a->GetStr("direction");

    const Tensor* X = ctx->GetInputTensor(0);
    const Tensor* W = ctx->GetRequiredInputTensor(1);
    const Tensor* R = ctx->GetRequiredInputTensor(2);
    const Tensor* B = ctx->GetOptionalInputTensor(3);
    const Tensor* lens = ctx->GetOptionalInputTensor(4);
    const Tensor* h0 = ctx->GetOptionalInputTensor(5);
    const Tensor* c0 = K == Kind::kLstm ? ctx->GetOptionalInputTensor(6) : nullptr;
    const Tensor* P = K == Kind::kLstm ? ctx->GetOptionalInputTensor(7) : nullptr;
    Tensor* outs[3] = {nullptr, nullptr, nullptr};
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum() && k < 3; ++k) {
      outs[k] = ctx->MallocOutputTensor(k, ctx->GetOutputTensor(k)->GetShape(), X->GetDataType());
      if (!outs[k]) return GRAPH_FAILED;
    }
    if (X->GetDataType() == DT_FLOAT) {
      ApplyIntraOpThreads(ctx);
      if (!packed_.empty() && packed_dirs_ == d.dirs && packed_hidden_ == d.hidden)
        return FusedFloat(ctx, d, acts, clip, input_forget, dir, X, W, B, lens, h0, c0, P, outs);
      return FastFloat(ctx, d, acts, clip, input_forget, linear_before_reset, dir, X, W, R, B, lens, h0, c0, P, outs);
    }
    int64_t H = d.hidden, G = kGates * H;
    auto* state = static_cast<double*>(ctx->MallocWorkSpace(static_cast<size_t>(d.batch * (2 * H + 2 * G)) * sizeof(double)));
    if (!state) return GRAPH_FAILED;
    double* h = state;
    double* c = h + d.batch * H;
    double* gx = c + d.batch * H;      // X*W^T + Wb per batch
    double* gh = gx + d.batch * G;     // H*R^T + Rb per batch
    bool ok = true;
    DispatchFloat(X->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      auto at = [](const Tensor* t, int64_t i) { return static_cast<double>(Load(t->GetData<T>()[i])); };
      auto xi = [&](int64_t t, int64_t b, int64_t i) { return d.batch_first ? (b * d.seq + t) * d.input + i : (t * d.batch + b) * d.input + i; };
      auto yi = [&](int64_t t, int64_t dd, int64_t b, int64_t j) {
        return d.batch_first ? ((b * d.seq + t) * d.dirs + dd) * H + j : ((t * d.dirs + dd) * d.batch + b) * H + j;
      };
      auto hi = [&](int64_t dd, int64_t b, int64_t j) { return d.batch_first ? (b * d.dirs + dd) * H + j : (dd * d.batch + b) * H + j; };
      if (outs[0])
        for (int64_t i = 0; i < outs[0]->GetShapeSize(); ++i) outs[0]->GetData<T>()[i] = Store<T>(typename Compute<T>::type(0));
      for (int64_t dd = 0; dd < d.dirs; ++dd) {
        bool reverse = dir == "reverse" || (dir == "bidirectional" && dd == 1);
        const Activation& f = acts[static_cast<size_t>(dd * per_dir)];
        const Activation& g = acts[static_cast<size_t>(dd * per_dir + (per_dir > 1 ? 1 : 0))];
        const Activation& hact = acts[static_cast<size_t>(dd * per_dir + (per_dir > 2 ? 2 : 0))];
        for (int64_t b = 0; b < d.batch; ++b)
          for (int64_t j = 0; j < H; ++j) {
            h[b * H + j] = h0 ? at(h0, hi(dd, b, j)) : 0.0;  // initial states follow the layout too
            c[b * H + j] = c0 ? at(c0, hi(dd, b, j)) : 0.0;
          }
        for (int64_t step = 0; step < d.seq; ++step) {
          for (int64_t b = 0; b < d.batch; ++b) {
            int64_t len = lens ? (lens->GetDataType() == DT_INT64 ? lens->GetData<int64_t>()[b] : lens->GetData<int32_t>()[b]) : d.seq;
            if (len < 0 || len > d.seq) {
              ok = false;
              return;
            }
            if (step >= len) continue;
            int64_t t = reverse ? len - 1 - step : step;
            double* gxb = gx + b * G;
            double* ghb = gh + b * G;
            for (int64_t r = 0; r < G; ++r) {
              double sx = B ? at(B, dd * 2 * G + r) : 0.0, sh = B ? at(B, dd * 2 * G + G + r) : 0.0;
              for (int64_t i = 0; i < d.input; ++i) sx += at(X, xi(t, b, i)) * at(W, (dd * G + r) * d.input + i);
              for (int64_t i = 0; i < H; ++i) sh += h[b * H + i] * at(R, (dd * G + r) * H + i);
              gxb[r] = sx;
              ghb[r] = sh;
            }
            auto clipv = [&](double v) { return clip > 0 ? std::clamp(v, -static_cast<double>(clip), static_cast<double>(clip)) : v; };
            for (int64_t j = 0; j < H; ++j) {
              double hn, cn = 0;
              if constexpr (K == Kind::kRnn) {
                hn = f(clipv(gxb[j] + ghb[j]));
              } else if constexpr (K == Kind::kGru) {
                double z = f(clipv(gxb[j] + ghb[j]));
                double rr = f(clipv(gxb[H + j] + ghb[H + j]));
                double cand;
                if (linear_before_reset) {
                  cand = g(clipv(gxb[2 * H + j] + rr * ghb[2 * H + j]));
                } else {
                  double s = B ? at(B, dd * 2 * G + G + 2 * H + j) : 0.0;
                  for (int64_t i = 0; i < H; ++i) s += rr_h(rr, h, b, H, i, f, gxb, ghb, clipv) * at(R, (dd * G + 2 * H + j) * H + i);
                  cand = g(clipv(gxb[2 * H + j] + s));
                }
                hn = (1 - z) * cand + z * h[b * H + j];
              } else {
                double cp = c[b * H + j];
                double pi = P ? at(P, dd * 3 * H + j) : 0.0, po = P ? at(P, dd * 3 * H + H + j) : 0.0, pf = P ? at(P, dd * 3 * H + 2 * H + j) : 0.0;
                double ig = f(clipv(gxb[j] + ghb[j] + pi * cp));
                double fg = input_forget ? 1 - ig : f(clipv(gxb[2 * H + j] + ghb[2 * H + j] + pf * cp));
                double cc = g(clipv(gxb[3 * H + j] + ghb[3 * H + j]));
                cn = fg * cp + ig * cc;
                double og = f(clipv(gxb[H + j] + ghb[H + j] + po * cn));
                hn = og * hact(cn);
              }
              ghb[j] = hn;  // stage new h (old h still needed by other j for GRU reset gate)
              if constexpr (K == Kind::kLstm) gxb[j] = cn;
            }
            for (int64_t j = 0; j < H; ++j) {
              h[b * H + j] = ghb[j];
              if constexpr (K == Kind::kLstm) c[b * H + j] = gxb[j];
              if (outs[0]) outs[0]->GetData<T>()[yi(t, dd, b, j)] = Store<T>(static_cast<typename Compute<T>::type>(h[b * H + j]));
            }
          }
        }
        for (int64_t b = 0; b < d.batch; ++b)
          for (int64_t j = 0; j < H; ++j) {
            if (outs[1]) outs[1]->GetData<T>()[hi(dd, b, j)] = Store<T>(static_cast<typename Compute<T>::type>(h[b * H + j]));
            if (outs[2]) outs[2]->GetData<T>()[hi(dd, b, j)] = Store<T>(static_cast<typename Compute<T>::type>(c[b * H + j]));
          }
      }
    });
    if (!ok) return Fail(ctx, "sequence_lens values must lie in [0, " + std::to_string(d.seq) + "]");
    return GRAPH_SUCCESS;
  }

 private:
  // float32 with R packed (Compile): the input projections of every step and direction in one
  // GEMM; then per step, each panel of hidden units (of every direction) is one pass over its
  // packed weights for all its gates and up to two batch rows at a time, followed at once by the
  // gate arithmetic. Panels are split over the intra-op threads and visited in alternating order
  // from step to step, so the weights a core read last are still in its cache when it starts.
  graphStatus FusedFloat(EagerOpExecutionContext* ctx, const Dims& d, const std::vector<Activation>& acts, float clip,
                         bool input_forget, const std::string& dir, const Tensor* X, const Tensor* W, const Tensor* B,
                         const Tensor* lens, const Tensor* h0, const Tensor* c0, const Tensor* P, Tensor* const* outs) const {
    const int per_dir = K == Kind::kLstm ? 3 : K == Kind::kGru ? 2 : 1;
    const int threads = ApplyIntraOpThreads(ctx);
    const int64_t H = d.hidden, G = kGates * H, nb = d.batch, rows = d.seq * nb, DG = d.dirs * G;
    const int64_t panels = (H + kUnits - 1) / kUnits, per_panel = H * kGates * kUnits, state = d.dirs * nb * H;
    auto* ws = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(rows * DG + 3 * state + d.dirs * G) * sizeof(float)));
    if (!ws) return GRAPH_FAILED;
    float* gx = ws;              // [rows, dirs * G]: X W^T + biases
    float* h = gx + rows * DG;   // [dirs, batch, H]
    float* hn = h + state;       // next h
    float* c = hn + state;       // [dirs, batch, H] (LSTM)
    float* rbh = c + state;      // [dirs, G] recurrent bias kept apart (GRU)
    std::vector<int64_t> len;
    if (!ReadLens(d, lens, &len)) return Fail(ctx, "sequence_lens values must lie in [0, " + std::to_string(d.seq) + "]");
    auto row = [&](int64_t t, int64_t b) { return d.Row(t, b); };
    auto yi = [&](int64_t t, int64_t dd, int64_t b) { return d.YAt(t, dd, b); };
    auto hi = [&](int64_t dd, int64_t b) { return d.HAt(dd, b); };
    float* y = outs[0] ? outs[0]->GetData<float>() : nullptr;
    if (y) std::fill(y, y + outs[0]->GetShapeSize(), 0.f);
    // W is [dirs, G, input]: every direction's projection at once.
    if (!GemmNT(ctx, rows, DG, d.input, X->GetData<float>(), d.input, W->GetData<float>(), d.input, gx, DG))
      return Fail(ctx, "oneDNN sgemm failed");
    std::fill(rbh, rbh + d.dirs * G, 0.f);
    if (B) {
      const float* bd = B->GetData<float>();
      for (int64_t dd = 0; dd < d.dirs; ++dd)
        for (int64_t j = 2 * H; K == Kind::kGru && j < G; ++j) rbh[dd * G + j] = bd[dd * 2 * G + G + j];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t dd = 0; dd < d.dirs; ++dd) {
          float* gr = gx + r * DG + dd * G;
          const float* bw = bd + dd * 2 * G;
          const int64_t both = K == Kind::kGru ? 2 * H : G;  // a GRU's candidate takes Rb inside r (.) (...)
          for (int64_t j = 0; j < both; ++j) gr[j] += bw[j] + bw[G + j];
          for (int64_t j = both; j < G; ++j) gr[j] += bw[j];
        }
    }
    for (int64_t dd = 0; dd < d.dirs; ++dd)
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t j = 0; j < H; ++j) {
          h[(dd * nb + b) * H + j] = h0 ? h0->GetData<float>()[hi(dd, b) + j] : 0.f;
          c[(dd * nb + b) * H + j] = c0 ? c0->GetData<float>()[hi(dd, b) + j] : 0.f;
        }
    // Small layers run inline: a parallel step costs a fork and a join.
    // Each direction's state alternates between its h and hn rows from step to step.
    std::vector<float*> cur(static_cast<size_t>(d.dirs)), nxt(static_cast<size_t>(d.dirs));
    for (int64_t dd = 0; dd < d.dirs; ++dd) cur[dd] = h + dd * nb * H, nxt[dd] = hn + dd * nb * H;
    bool dir_reverse[2] = {dir == "reverse", dir == "bidirectional" || dir == "reverse"};
    // One panel of direction dd at `step`: its GEMV over every batch row, then its gates.
    auto panel_step = [&](int64_t step, int64_t dd, int64_t p, float* z) {
      const int64_t u0 = p * kUnits;
      const bool reverse = dir_reverse[dd];
      const float* panel = packed_.data() + (dd * panels + p) * per_panel;
      const float* hd = cur[dd];
      float* hnd = nxt[dd];
      GateArgs a;
      a.f = &acts[static_cast<size_t>(dd * per_dir)];
      a.g = &acts[static_cast<size_t>(dd * per_dir + (per_dir > 1 ? 1 : 0))];
      a.h = &acts[static_cast<size_t>(dd * per_dir + (per_dir > 2 ? 2 : 0))];
      a.clip = clip;
      a.H = H;
      a.n = std::min(kUnits, H - u0);
      a.peep = P ? P->GetData<float>() + dd * 3 * H + u0 : nullptr;
      a.rbh = rbh + dd * G + 2 * H + u0;
      a.input_forget = input_forget;
      for (int64_t b = 0; b < nb; b += 2) {
        const int64_t rb = std::min<int64_t>(2, nb - b);
        if (rb == 2) PanelGemv<kGates, 2>(panel, hd + b * H, H, H, z);
        else PanelGemv<kGates, 1>(panel, hd + b * H, H, H, z);
        for (int64_t r = 0; r < rb; ++r) {
          const int64_t bb = b + r, at = bb * H + u0;
          if (step >= len[bb]) {  // finished rows keep their state
            std::copy(hd + at, hd + at + a.n, hnd + at);
            continue;
          }
          const int64_t t = reverse ? len[bb] - 1 - step : step;
          a.x = gx + row(t, bb) * DG + dd * G + u0;
          a.hp = hd + at;
          a.hn = hnd + at;
          a.c = c + dd * nb * H + at;
          a.y = y ? y + yi(t, dd, bb) + u0 : nullptr;
          float* zr = z + r * kGates * kUnits;
          if constexpr (K == Kind::kLstm) LstmGates(a, zr);
          else if constexpr (K == Kind::kGru) GruGates(a, zr);
          else RnnGates(a, zr);
        }
      }
    };
    // Panels are visited in alternating order from step to step: the weights a core read last
    // are still in its cache when the next step starts.
    auto panels_of = [&](int64_t step, int64_t dd, int64_t begin, int64_t end) {
      alignas(64) float z[2 * kGates * kUnits];
      for (int64_t it = 0; it < end - begin; ++it) panel_step(step, dd, step % 2 == 0 ? begin + it : end - 1 - it, z);
    };
    graphStatus st = GRAPH_SUCCESS;
    if (d.dirs > 1 && threads <= d.dirs) {
      // Directions are independent: one thread each, no synchronisation between steps.
      st = ctx->ParallelFor(d.dirs, 1, [&](int64_t lo, int64_t hi_dir) {
        for (int64_t dd = lo; dd < hi_dir; ++dd)
          for (int64_t step = 0; step < d.seq; ++step) {
            panels_of(step, dd, 0, panels);
            std::swap(cur[dd], nxt[dd]);
          }
      });
    } else {
      // Every step's panels cut into one equal range per thread (the same ranges every step,
      // so each stays with the cache that read it last as far as the pool allows); small layers
      // run inline (a parallel step costs a fork and a join).
      const int64_t total = d.dirs * panels;
      const int64_t parts = per_panel * nb * total < (int64_t{1} << 17) ? 1 : std::min<int64_t>(threads, total);
      for (int64_t step = 0; step < d.seq && st == GRAPH_SUCCESS; ++step) {
        st = ctx->ParallelFor(parts, 1, [&](int64_t lo_part, int64_t hi_part) {
          for (int64_t part = lo_part; part < hi_part; ++part) {
            const int64_t lo = total * part / parts, hi_idx = total * (part + 1) / parts;
            for (int64_t dd = lo / panels; lo < hi_idx && dd <= (hi_idx - 1) / panels; ++dd)
              panels_of(step, dd, std::max(lo, dd * panels) - dd * panels, std::min(hi_idx, (dd + 1) * panels) - dd * panels);
          }
        });
        for (int64_t dd = 0; dd < d.dirs; ++dd) std::swap(cur[dd], nxt[dd]);
      }
    }
    if (st != GRAPH_SUCCESS) return GRAPH_FAILED;
    for (int64_t dd = 0; dd < d.dirs; ++dd)
      for (int64_t b = 0; b < nb; ++b) {
        const float* hs = cur[dd] + b * H;
        const float* cs = c + (dd * nb + b) * H;
        if (outs[1]) std::copy(hs, hs + H, outs[1]->GetData<float>() + hi(dd, b));
        if (outs[2]) std::copy(cs, cs + H, outs[2]->GetData<float>() + hi(dd, b));
      }
    return GRAPH_SUCCESS;
  }

  std::vector<float> packed_;  // per direction, panels of [H][gates][kUnits] (Compile)
  int64_t packed_dirs_ = 0, packed_hidden_ = 0;

  // float32: the input projections of every step in one GEMM per direction, the recurrent ones
  // in one GEMM per step over the whole batch, the gates in vectorized loops.
  static graphStatus FastFloat(EagerOpExecutionContext* ctx, const Dims& d, const std::vector<Activation>& acts, float clip,
                               bool input_forget, bool linear_before_reset, const std::string& dir, const Tensor* X,
                               const Tensor* W, const Tensor* R, const Tensor* B, const Tensor* lens, const Tensor* h0,
                               const Tensor* c0, const Tensor* P, Tensor* const* outs) {
    const int per_dir = K == Kind::kLstm ? 3 : K == Kind::kGru ? 2 : 1;
    const int64_t H = d.hidden, G = kGates * H, rows = d.seq * d.batch, nb = d.batch;
    // GRU without linear_before_reset multiplies r (.) h by R's candidate rows after r is known.
    const bool split_candidate = K == Kind::kGru && !linear_before_reset;
    const int64_t gh_cols = split_candidate ? 2 * H : G;
    size_t floats = static_cast<size_t>(rows * G + nb * (4 * H + G + H) + G);
    auto* ws = static_cast<float*>(ctx->MallocWorkSpace(floats * sizeof(float)));
    if (!ws) return GRAPH_FAILED;
    float* gx = ws;                    // [rows, G]: X W^T + biases folded in
    float* h = gx + rows * G;          // [batch, H]
    float* c = h + nb * H;             // [batch, H]
    float* hn = c + nb * H;            // [batch, H] next h
    float* rh = hn + nb * H;           // [batch, H] r (.) h (GRU)
    float* gh = rh + nb * H;           // [batch, G] h R^T
    float* ghh = gh + nb * G;          // [batch, H] (r (.) h) R_h^T (GRU)
    float* rb_h = ghh + nb * H;        // [G] recurrent bias kept apart (GRU linear_before_reset)
    std::vector<int64_t> len;
    if (!ReadLens(d, lens, &len)) return Fail(ctx, "sequence_lens values must lie in [0, " + std::to_string(d.seq) + "]");
    auto row = [&](int64_t t, int64_t b) { return d.Row(t, b); };
    auto yi = [&](int64_t t, int64_t dd, int64_t b) { return d.YAt(t, dd, b); };
    auto hi = [&](int64_t dd, int64_t b) { return d.HAt(dd, b); };
    float* y = outs[0] ? outs[0]->GetData<float>() : nullptr;
    if (y) std::fill(y, y + outs[0]->GetShapeSize(), 0.f);
    for (int64_t dd = 0; dd < d.dirs; ++dd) {
      bool reverse = dir == "reverse" || (dir == "bidirectional" && dd == 1);
      const Activation& f = acts[static_cast<size_t>(dd * per_dir)];
      const Activation& g = acts[static_cast<size_t>(dd * per_dir + (per_dir > 1 ? 1 : 0))];
      const Activation& hact = acts[static_cast<size_t>(dd * per_dir + (per_dir > 2 ? 2 : 0))];
      const float* wd = W->GetData<float>() + dd * G * d.input;
      const float* rd = R->GetData<float>() + dd * G * H;
      const float* bd = B ? B->GetData<float>() + dd * 2 * G : nullptr;
      if (!GemmNT(ctx, rows, G, d.input, X->GetData<float>(), d.input, wd, d.input, gx, G)) return Fail(ctx, "oneDNN sgemm failed");
      std::fill(rb_h, rb_h + G, 0.f);
      if (bd)
        for (int64_t r = 0; r < rows; ++r) {
          float* gr = gx + r * G;
          for (int64_t j = 0; j < G; ++j) {
            bool apart = K == Kind::kGru && linear_before_reset && j >= 2 * H;  // inside r (.) (...)
            gr[j] += bd[j] + (apart ? 0.f : bd[G + j]);
          }
        }
      if (bd && K == Kind::kGru && linear_before_reset)
        for (int64_t j = 2 * H; j < G; ++j) rb_h[j] = bd[G + j];
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t j = 0; j < H; ++j) {
          h[b * H + j] = h0 ? h0->GetData<float>()[hi(dd, b) + j] : 0.f;
          c[b * H + j] = c0 ? c0->GetData<float>()[hi(dd, b) + j] : 0.f;
        }
      const float* pd = P ? P->GetData<float>() + dd * 3 * H : nullptr;
      for (int64_t step = 0; step < d.seq; ++step) {
        if (!GemmNT(ctx, nb, gh_cols, H, h, H, rd, H, gh, G)) return Fail(ctx, "oneDNN sgemm failed");
        for (int64_t b = 0; b < nb; ++b) {
          if (step >= len[b]) continue;
          int64_t t = reverse ? len[b] - 1 - step : step;
          float* z = gh + b * G;  // pre-activations in place: gx + gh
          const float* x = gx + row(t, b) * G;
          const int64_t summed = K == Kind::kGru ? 2 * H : G;  // a GRU's candidate row is added below
          for (int64_t j = 0; j < summed; ++j) z[j] += x[j];
          const float* hb = h + b * H;
          float* cb = c + b * H;
          float* out = hn + b * H;
          if constexpr (K == Kind::kRnn) {
            ApplyActivation(f, clip, z, H);
            std::copy(z, z + H, out);
          } else if constexpr (K == Kind::kGru) {
            ApplyActivation(f, clip, z, 2 * H);  // z, r
            if (linear_before_reset) {
              for (int64_t j = 0; j < H; ++j) z[2 * H + j] = x[2 * H + j] + z[H + j] * (z[2 * H + j] + rb_h[2 * H + j]);
            } else {
              for (int64_t j = 0; j < H; ++j) rh[b * H + j] = z[H + j] * hb[j];
            }
          } else {
            if (pd)
              for (int64_t j = 0; j < H; ++j) z[j] += pd[j] * cb[j], z[2 * H + j] += pd[2 * H + j] * cb[j];
            ApplyActivation(f, clip, z, H);  // i
            if (input_forget) {
              for (int64_t j = 0; j < H; ++j) z[2 * H + j] = 1.f - z[j];
            } else {
              ApplyActivation(f, clip, z + 2 * H, H);  // f
            }
            ApplyActivation(g, clip, z + 3 * H, H);  // c~
            for (int64_t j = 0; j < H; ++j) cb[j] = z[2 * H + j] * cb[j] + z[j] * z[3 * H + j];
            if (pd)
              for (int64_t j = 0; j < H; ++j) z[H + j] += pd[H + j] * cb[j];
            ApplyActivation(f, clip, z + H, H);  // o
            std::copy(cb, cb + H, out);
            ApplyActivation(hact, 0.f, out, H);
            for (int64_t j = 0; j < H; ++j) out[j] *= z[H + j];
          }
        }
        if constexpr (K == Kind::kGru) {
          if (!linear_before_reset) {
            for (int64_t b = 0; b < nb; ++b)
              if (step >= len[b]) std::fill(rh + b * H, rh + (b + 1) * H, 0.f);
            if (!GemmNT(ctx, nb, H, H, rh, H, rd + 2 * H * H, H, ghh, H)) return Fail(ctx, "oneDNN sgemm failed");
          }
          for (int64_t b = 0; b < nb; ++b) {
            if (step >= len[b]) continue;
            int64_t t = reverse ? len[b] - 1 - step : step;
            float* z = gh + b * G;
            float* cand = z + 2 * H;
            if (!linear_before_reset) {
              const float* x = gx + row(t, b) * G;
              for (int64_t j = 0; j < H; ++j) cand[j] = x[2 * H + j] + ghh[b * H + j];
            }
            ApplyActivation(g, clip, cand, H);
            const float* hb = h + b * H;
            float* out = hn + b * H;
            for (int64_t j = 0; j < H; ++j) out[j] = (1.f - z[j]) * cand[j] + z[j] * hb[j];
          }
        }
        for (int64_t b = 0; b < nb; ++b) {
          if (step >= len[b]) continue;
          int64_t t = reverse ? len[b] - 1 - step : step;
          std::copy(hn + b * H, hn + (b + 1) * H, h + b * H);
          if (y) std::copy(h + b * H, h + (b + 1) * H, y + yi(t, dd, b));
        }
      }
      for (int64_t b = 0; b < nb; ++b) {
        if (outs[1]) std::copy(h + b * H, h + (b + 1) * H, outs[1]->GetData<float>() + hi(dd, b));
        if (outs[2]) std::copy(c + b * H, c + (b + 1) * H, outs[2]->GetData<float>() + hi(dd, b));
      }
    }
    return GRAPH_SUCCESS;
  }

  // GRU (linear_before_reset = 0): element i of r (.) H_{t-1}, where r is recomputed for row i.
  template <typename F, typename C>
  static double rr_h(double, const double* h, int64_t b, int64_t H, int64_t i, const F& f, const double* gxb, const double* ghb, C clipv) {
    double r_i = f(clipv(gxb[H + i] + ghb[H + i]));
    return r_i * h[b * H + i];
  }
};

OpEntry Make(const char* name, Kind k) {
  OpDefBuilder b(name);
  b.INPUT(X, "T").INPUT(W, "T").INPUT(R, "T").OPTIONAL_INPUT(B, "T").OPTIONAL_INPUT(sequence_lens, IndexTypes())
      .OPTIONAL_INPUT(initial_h, "T");
  if (k == Kind::kLstm) b.OPTIONAL_INPUT(initial_c, "T").OPTIONAL_INPUT(P, "T");
  b.OUTPUT(Y, "T").OUTPUT(Y_h, "T");
  if (k == Kind::kLstm) b.OUTPUT(Y_c, "T");
  b.DATATYPE(T, TensorType({DT_FLOAT, DT_DOUBLE, DT_FLOAT16}))
      .ATTR(activation_alpha, ListFloat, {})
      .ATTR(activation_beta, ListFloat, {})
      .ATTR(activations, ListString, {})
      .ATTR(clip, Float, 0.0)
      .ATTR(direction, String, "forward")
      .REQUIRED_ATTR(hidden_size, Int)
      .ATTR(layout, Int, 0);
  if (k == Kind::kLstm) b.ATTR(input_forget, Int, 0);
  if (k == Kind::kGru) b.ATTR(linear_before_reset, Int, 0);
  if (k == Kind::kRnn) return {b.Build(), MakeOpImpl<Recurrent<Kind::kRnn>>(name)};
  if (k == Kind::kGru) return {b.Build(), MakeOpImpl<Recurrent<Kind::kGru>>(name)};
  return {b.Build(), MakeOpImpl<Recurrent<Kind::kLstm>>(name)};
}

}  // namespace

void WeftRegister_rnn(std::vector<OpEntry>& out) {
  out.push_back(Make("RNN", Kind::kRnn));
  out.push_back(Make("GRU", Kind::kGru));
  out.push_back(Make("LSTM", Kind::kLstm));
}

}  // namespace weft::ops
