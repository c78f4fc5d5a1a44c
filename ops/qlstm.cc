// ONNX Runtime's DynamicQuantizeLSTM (domain com.microsoft), which its dynamic quantizer
// (onnxruntime.quantization.quantize_dynamic) writes for every LSTM whose weights are constant:
// ONNX's LSTM with 8-bit weights stored transposed, W [directions, input_size, 4 * hidden] and
// R [directions, hidden, 4 * hidden] (gates i, o, f, c along the last axis), each with a scale and
// zero point per direction ([D]) or per gate row ([D, 4 * hidden]). The float operands of each
// product are quantized when the product is taken, as ONNX Runtime does on x86-64:
//   - every step's input projection at once: X (all steps and batch rows of a direction) quantized
//     as DynamicQuantizeLinear does (uint8, one scale and zero point), multiplied with W in int32,
//     each sum times (x_scale * w_scale[row]) in float;
//   - per step, H(t-1) (all batch rows) quantized the same way, multiplied with R, and its
//     sums times (h_scale * r_scale[row]) added to the step's projection;
//   - then, per gate: + P (.) C for the peepholes, + (Wb + Rb), clipped to [-clip, clip] where clip
//     is set, the activation; C = C(t-1) * f + i * c~, H = o * h(C), each multiply and add
//     rounded on its own (this file is built without multiply-add contraction).
// sequence_lens: rows past their length keep their state and give zeros in Y. layout 0 only (the
// quantizer drops the attribute).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "aot_emit.h"
#include "dnnl_runner.h"
#include "int8_conv.h"
#include "op_util.h"
#include "rnn_activation.h"
#include "vector_math.h"

namespace weft::ops {
namespace {

constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kLens = 4, kH0 = 5, kC0 = 6, kP = 7, kWScale = 8, kWZero = 9, kRScale = 10, kRZero = 11;

WEFT_VMATH_CLONES void SigmoidSpan(float* v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) v[i] = vmath::Sigmoid(v[i]);
}
WEFT_VMATH_CLONES void TanhSpan(float* v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) v[i] = vmath::Tanh(v[i]);
}
void Activate(const RnnActivation& a, float* v, int64_t n) {
  if (a.sigmoid) return SigmoidSpan(v, n);
  if (a.tanh) return TanhSpan(v, n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(a(v[i]));
}

// Whether the AVX-512 VNNI product below runs: the CPU has it and WEFT_DISABLE_VNNI is not 1 (the
// switch the other 8-bit kernels take too).
bool Vnni() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool ok = [] {
    const char* off = std::getenv("WEFT_DISABLE_VNNI");
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") && !(off && std::string(off) == "1");
  }();
  return ok;
#else
  return false;
#endif
}

// The few-row product (a step's H(t-1) times R: one row per batch entry) with AVX-512 VNNI: the
// weights' rows in panels of kPanel * 16 rows, per group of 4 k the panel's rows' 4 bytes each (what
// vpdpbusd multiplies with one broadcast 4-byte word of the uint8 operand), so a panel is read as
// one stream; rows past n are zeros.
constexpr int64_t kPanel = 8;

struct QWeights {
  int64_t k = 0, n = 0;
  std::vector<int8_t> rows;     // [n][k], uint8 values less 128
  std::vector<int32_t> offset;  // per row: 128 (uint8 weights) - the weight zero point
  std::vector<float> scale;     // per row
  std::shared_ptr<const Int8PackedB> packed;  // rows for Int8GemmSums
  std::vector<int8_t> panels;   // rows for GemvVnni (empty without VNNI)
  std::vector<int32_t> rowsum;  // sum over k of rows
  int64_t groups() const { return (k + 3) / 4; }
  int64_t npanels() const { return (n + kPanel * 16 - 1) / (kPanel * 16); }
};

void PackPanels(QWeights* q) {
  const int64_t G = q->groups(), P = q->npanels();
  q->panels.assign(static_cast<size_t>(P * G * kPanel * 64), 0);
  q->rowsum.assign(static_cast<size_t>(q->n), 0);
  for (int64_t j = 0; j < q->n; ++j) {
    const int64_t p = j / (kPanel * 16), b = j / 16 % kPanel, l = j % 16;
    for (int64_t k = 0; k < q->k; ++k) {
      const int8_t v = q->rows[static_cast<size_t>(j * q->k + k)];
      q->panels[static_cast<size_t>(((p * G + k / 4) * kPanel + b) * 64 + l * 4 + k % 4)] = v;
      q->rowsum[static_cast<size_t>(j)] += v;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// out[r][j] = sum over k of a[r][k] * row j (exact int32), for RB rows of a (uint8, each padded with
// zeros to a multiple of 4 bytes, `lda` apart), the panels [p0, p1) and in each the blocks [b0, b0 + NB)
// of 16 rows. RB * NB accumulators; each 64 bytes of the weights loaded feed RB of them.
template <int RB, int NB>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void GemvVnni(const uint8_t* a, int64_t lda, const QWeights& w, int64_t p0, int64_t p1,
                                                                    int b0, int32_t* out, int64_t ldo) {
  const int64_t G = w.groups();
  for (int64_t p = p0; p < p1; ++p) {
    __m512i acc[RB][NB];
    for (int r = 0; r < RB; ++r)
      for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_setzero_si512();
    const int8_t* src = w.panels.data() + p * G * kPanel * 64 + b0 * 64;
    for (int64_t g = 0; g < G; ++g, src += kPanel * 64) {
      __m512i av[RB];
#pragma GCC unroll 8
      for (int r = 0; r < RB; ++r) {
        int32_t word;
        std::memcpy(&word, a + r * lda + 4 * g, 4);
        av[r] = _mm512_set1_epi32(word);
      }
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) {
        const __m512i bv = _mm512_loadu_si512(src + b * 64);
#pragma GCC unroll 8
        for (int r = 0; r < RB; ++r) acc[r][b] = _mm512_dpbusd_epi32(acc[r][b], av[r], bv);
      }
    }
    for (int r = 0; r < RB; ++r)
      for (int b = 0; b < NB; ++b) {
        const int64_t j = (p * kPanel + b0 + b) * 16;
        if (j >= w.n) break;
        if (j + 16 <= w.n) {
          _mm512_storeu_si512(out + r * ldo + j, acc[r][b]);
        } else {
          alignas(64) int32_t t[16];
          _mm512_store_si512(t, acc[r][b]);
          std::memcpy(out + r * ldo + j, t, static_cast<size_t>(w.n - j) * sizeof(int32_t));
        }
      }
  }
}

// The same for m <= 4 rows, the weights read once.
void GemvRowsVnni(const uint8_t* a, int64_t lda, int64_t m, const QWeights& w, int64_t p0, int64_t p1, int32_t* out, int64_t ldo) {
  if (m == 4) {
    GemvVnni<4, 4>(a, lda, w, p0, p1, 0, out, ldo);
    GemvVnni<4, 4>(a, lda, w, p0, p1, 4, out, ldo);
  } else if (m == 3) {
    GemvVnni<3, 4>(a, lda, w, p0, p1, 0, out, ldo);
    GemvVnni<3, 4>(a, lda, w, p0, p1, 4, out, ldo);
  } else if (m == 2) {
    GemvVnni<2, 8>(a, lda, w, p0, p1, 0, out, ldo);
  } else {
    GemvVnni<1, 8>(a, lda, w, p0, p1, 0, out, ldo);
  }
}
#endif

struct Dims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 0;
};

std::string ShapeOf(const Tensor* t) { return t ? t->GetShape().ToString() : std::string("absent"); }

// The dims, with every input's shape and type checked against them (at compile time with
// unknown dims skipped).
bool GetDims(const KernelContextBase* ctx, Dims* d, std::string* err) {
  const Tensor* x = ctx->GetRequiredInputTensor(kX);
  const Tensor* w = ctx->GetRequiredInputTensor(kW);
  const Tensor* r = ctx->GetRequiredInputTensor(kR);
  if (!x || !w || !r) return *err = "X, W and R are required", false;
  const Shape &xs = x->GetShape(), &ws = w->GetShape(), &rs = r->GetShape();
  const std::string dir = ctx->GetAttrs()->GetStr("direction");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") return *err = "unknown direction '" + dir + "'", false;
  d->dirs = dir == "bidirectional" ? 2 : 1;
  d->hidden = *ctx->GetAttrs()->GetInt("hidden_size");
  if (d->hidden <= 0) return *err = "hidden_size must be positive, not " + std::to_string(d->hidden), false;
  if (xs.GetDimNum() != 3) return *err = "X must be 3-D [seq, batch, input], not " + xs.ToString(), false;
  d->seq = xs.GetDim(0), d->batch = xs.GetDim(1), d->input = xs.GetDim(2);
  const int64_t H = d->hidden, G = 4 * H;
  auto is8 = [](const Tensor* t) { return t->GetDataType() == DT_INT8 || t->GetDataType() == DT_UINT8; };
  if (!is8(w) || !is8(r))
    return *err = std::string("W and R must be int8 or uint8, not ") + DataTypeName(w->GetDataType()) + " and " + DataTypeName(r->GetDataType()), false;
  if (ws.GetDimNum() != 3 || ws.GetDim(0) != d->dirs || ws.GetDim(2) != G || (d->input >= 0 && ws.GetDim(1) != d->input))
    return *err = "W " + ws.ToString() + " must be [" + std::to_string(d->dirs) + ", input " + std::to_string(d->input) + ", 4 * hidden_size " +
                  std::to_string(G) + "]",
           false;
  d->input = ws.GetDim(1);
  if (rs != Shape({d->dirs, H, G}))
    return *err = "R " + rs.ToString() + " must be " + Shape({d->dirs, H, G}).ToString() + " (directions, hidden_size, 4 * hidden_size)", false;
  auto expect = [&](size_t ir, const char* name, const Shape& want) {
    const Tensor* t = ctx->GetOptionalInputTensor(ir);
    if (!t) return true;
    if (t->GetDataType() != DT_FLOAT) return *err = std::string(name) + " must be float32", false;
    const Shape& s = t->GetShape();
    bool ok = s.GetDimNum() == want.GetDimNum();
    for (size_t i = 0; ok && i < s.GetDimNum(); ++i) ok = s.GetDim(i) < 0 || want.GetDim(i) < 0 || s.GetDim(i) == want.GetDim(i);
    if (!ok) *err = std::string(name) + " " + s.ToString() + " must be " + want.ToString();
    return ok;
  };
  const Shape state({d->dirs, d->batch, H});
  if (!expect(kB, "B", Shape({d->dirs, 2 * G})) || !expect(kH0, "initial_h", state) || !expect(kC0, "initial_c", state) ||
      !expect(kP, "P", Shape({d->dirs, 3 * H})))
    return false;
  if (x->GetDataType() != DT_FLOAT) return *err = std::string("X must be float32, not ") + DataTypeName(x->GetDataType()), false;
  if (const Tensor* l = ctx->GetOptionalInputTensor(kLens)) {
    const Shape& s = l->GetShape();
    if (s.GetDimNum() != 1 || (d->batch >= 0 && s.GetDim(0) >= 0 && s.GetDim(0) != d->batch))
      return *err = "sequence_lens " + s.ToString() + " must be [batch " + std::to_string(d->batch) + "]", false;
  }
  for (size_t ir : {kWScale, kRScale}) {
    const Tensor* s = ctx->GetRequiredInputTensor(ir);
    const Tensor* z = ctx->GetRequiredInputTensor(ir + 1);
    const Tensor* q = ctx->GetRequiredInputTensor(ir == kWScale ? kW : kR);
    const std::string what = ir == kWScale ? "W" : "R";
    if (!s || !z) return *err = what + "_scale and " + what + "_zero_point are required", false;
    const int64_t n = s->GetShapeSize();
    if (s->GetDataType() != DT_FLOAT || (n != d->dirs && n != d->dirs * G))
      return *err = what + "_scale " + ShapeOf(s) + " must be float32 with one value per direction ([" + std::to_string(d->dirs) + "]) or per gate row ([" +
                    std::to_string(d->dirs) + ", " + std::to_string(G) + "])",
             false;
    if (z->GetDataType() != q->GetDataType() || z->GetShapeSize() != n)
      return *err = what + "_zero_point (" + DataTypeName(z->GetDataType()) + " " + ShapeOf(z) + ") must match " + what + "'s type (" +
                    DataTypeName(q->GetDataType()) + ") and " + what + "_scale's shape " + ShapeOf(s),
             false;
  }
  return true;
}

// Direction dd of W or R (ir kW or kR) prepared for the GEMM; false (with err) for a scale that is
// not positive and finite.
bool Prepare(const KernelContextBase* ctx, size_t ir, int64_t dd, const Dims& d, QWeights* q, std::string* err) {
  const Tensor* w = ctx->GetRequiredInputTensor(ir);
  const Tensor* s = ctx->GetRequiredInputTensor(ir == kW ? kWScale : kRScale);
  const Tensor* z = ctx->GetRequiredInputTensor(ir == kW ? kWZero : kRZero);
  const int64_t G = 4 * d.hidden, K = ir == kW ? d.input : d.hidden;
  const bool u8 = w->GetDataType() == DT_UINT8;
  q->k = K, q->n = G;
  q->rows.resize(static_cast<size_t>(G * K));
  q->offset.resize(static_cast<size_t>(G));
  q->scale.resize(static_cast<size_t>(G));
  const auto* src = static_cast<const uint8_t*>(w->GetAddr()) + dd * K * G;
  const uint8_t flip = u8 ? 0x80 : 0;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < G; ++j) q->rows[static_cast<size_t>(j * K + k)] = static_cast<int8_t>(src[k * G + j] ^ flip);
  const bool per_row = s->GetShapeSize() != d.dirs;
  for (int64_t j = 0; j < G; ++j) {
    const int64_t at = per_row ? dd * G + j : dd;
    const float sc = s->GetData<float>()[at];
    if (!(sc > 0.f) || !std::isfinite(sc))
      return *err = std::string(ir == kW ? "W" : "R") + "_scale[" + std::to_string(at) + "] is " + std::to_string(sc) + "; it must be positive and finite", false;
    q->scale[static_cast<size_t>(j)] = sc;
    const int32_t zp = u8 ? static_cast<int32_t>(z->GetData<uint8_t>()[at]) : static_cast<int32_t>(z->GetData<int8_t>()[at]);
    q->offset[static_cast<size_t>(j)] = (u8 ? 128 : 0) - zp;
  }
  if (Vnni()) PackPanels(q);
  if (Int8PackB) q->packed = Int8PackB(q->rows.data(), G, K);
  return true;
}

class DynamicQuantizeLstm : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public EmittableOp {
 public:
  // Execute's arithmetic through weft_dq_lstm (ops/aot/qlstm.c): the same quantization points and
  // exact integer sums; the activations are C's. sequence_lens must be constant.
  graphStatus Emit(EmitContext* ctx) override {
    Dims d;
    std::string err;
    std::vector<RnnActivation> acts;
    if (!GetDims(ctx, &d, &err) || !ParseRnnActivations(ctx, 3, d.dirs, true, &acts, &err)) return Fail(ctx, err);
    if (d.seq > INT32_MAX || d.batch > INT32_MAX || d.input > INT32_MAX || 4 * d.hidden > INT32_MAX) return Fail(ctx, "too large for the generated C");
    for (size_t ir : {kWScale, kRScale}) {  // the runtime's check, ahead of time
      const Tensor* sc = ctx->GetRequiredInputTensor(ir);
      if (!sc->GetAddr()) continue;
      for (int64_t k = 0; k < sc->GetShapeSize(); ++k)
        if (!(sc->GetData<float>()[k] > 0.f) || !std::isfinite(sc->GetData<float>()[k]))
          return Fail(ctx, std::string(ir == kWScale ? "W" : "R") + "_scale[" + std::to_string(k) + "] is " + std::to_string(sc->GetData<float>()[k]) +
                               "; it must be positive and finite");
    }
    auto code = [&](const RnnActivation& act) { return RnnActivationCKind(act.name); };
    std::string lens = "0";
    if (const Tensor* l = ctx->GetOptionalInputTensor(kLens)) {
      if (!l->GetAddr()) return Fail(ctx, "the generated C needs a constant sequence_lens");
      if (l->GetShapeSize() != d.batch) return Fail(ctx, "sequence_lens " + l->GetShape().ToString() + " must hold one length per batch row");
      std::vector<int64_t> v(static_cast<size_t>(d.batch));
      for (int64_t b = 0; b < d.batch; ++b) {
        v[b] = l->GetDataType() == DT_INT64 ? l->GetData<int64_t>()[b] : l->GetData<int32_t>()[b];
        if (v[b] < 0 || v[b] > d.seq) return Fail(ctx, "sequence_lens values must lie in [0, " + std::to_string(d.seq) + "]");
      }
      lens = ctx->Const("seq_lens", DT_INT64, v);
    }
    auto in = [&](size_t ir, const char* ct) {
      return ctx->GetOptionalInputTensor(ir) ? ctx->Input(aot::InputAt(ctx, ir), ct) : std::string("0");
    };
    auto out = [&](size_t k) { return k < ctx->GetComputeNodeOutputNum() ? ctx->Output(k, "float") : std::string("0"); };
    auto per_row = [&](size_t ir) { return ctx->GetRequiredInputTensor(ir)->GetShapeSize() != d.dirs; };
    auto is_signed = [&](size_t ir) { return ctx->GetRequiredInputTensor(ir)->GetDataType() == DT_INT8; };
    const RuntimeAttrs* a = ctx->GetAttrs();
    const int64_t T = d.seq, Bn = d.batch, H = d.hidden, G = 4 * H;
    const size_t floats = static_cast<size_t>((T * Bn + Bn) * G + 3 * Bn * H);
    const size_t bytes = static_cast<size_t>(std::max(T * Bn * d.input, Bn * H));
    ctx->Include("<math.h>");
    ctx->Include("<string.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_dq_lstm");
    std::ostringstream r;
    r << "{\n  weft_dq_lstm_args a;\n  a.seq = " << T << ";\n  a.batch = " << Bn << ";\n  a.in = " << d.input << ";\n  a.hidden = " << H
      << ";\n  a.dirs = " << d.dirs << ";\n  a.reverse = " << (std::string(a->GetStr("direction")) == "reverse")
      << ";\n  a.input_forget = " << (*a->GetInt("input_forget") != 0) << ";\n  a.clip = " << aot::FloatLit(*a->GetFloat("clip")) << ";\n";
    for (int64_t dd = 0; dd < 2; ++dd)
      for (int k = 0; k < 3; ++k) {
        const RnnActivation& act = acts[static_cast<size_t>(std::min<int64_t>(dd, d.dirs - 1) * 3 + k)];
        if (code(act) < 0) return Fail(ctx, "activation '" + act.name + "' has no C implementation");
        r << "  a.act[" << dd << "][" << k << "].kind = " << code(act) << ";\n  a.act[" << dd << "][" << k << "].alpha = " << aot::FloatLit(act.alpha)
          << ";\n  a.act[" << dd << "][" << k << "].beta = " << aot::FloatLit(act.beta) << ";\n";
      }
    r << "  a.x = " << in(kX, "float") << ";\n  a.w = " << in(kW, "uint8_t") << ";\n  a.r = " << in(kR, "uint8_t") << ";\n  a.w_signed = "
      << is_signed(kW) << ";\n  a.r_signed = " << is_signed(kR) << ";\n  a.w_scale = " << in(kWScale, "float") << ";\n  a.w_zero = "
      << in(kWZero, "uint8_t") << ";\n  a.w_per_row = " << per_row(kWScale) << ";\n  a.r_scale = " << in(kRScale, "float")
      << ";\n  a.r_zero = " << in(kRZero, "uint8_t") << ";\n  a.r_per_row = " << per_row(kRScale) << ";\n  a.b = " << in(kB, "float")
      << ";\n  a.p = " << in(kP, "float") << ";\n  a.h0 = " << in(kH0, "float") << ";\n  a.c0 = " << in(kC0, "float") << ";\n  a.lens = " << lens
      << ";\n  a.y = " << out(0) << ";\n  a.y_h = " << out(1) << ";\n  a.y_c = " << out(2) << ";\n  if (weft_dq_lstm(&a, (float*)(void*)"
      << ctx->Scratch(floats * sizeof(float) + bytes) << ")) return 1; /* a value to quantize is not finite */\n}\n";
    ctx->Run(r.str());
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Dims d;
    std::string err;
    std::vector<RnnActivation> acts;
    if (!GetDims(ctx, &d, &err) || !ParseRnnActivations(ctx, 3, d.dirs, true, &acts, &err)) return Fail(ctx, err);
    *ctx->GetOutputShape(0) = Shape({d.seq, d.dirs, d.batch, d.hidden});
    for (size_t k = 1; k < ctx->GetComputeNodeOutputNum(); ++k) *ctx->GetOutputShape(k) = Shape({d.dirs, d.batch, d.hidden});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) ctx->SetOutputDataType(k, DT_FLOAT);
    return GRAPH_SUCCESS;
  }

  // Constant weights (the quantizer's output always has them) are laid out once.
  graphStatus Compile(OpCompileContext* ctx) override {
    prepared_.clear();
    Dims d;
    std::string err;
    if (!GetDims(ctx, &d, &err)) return GRAPH_SUCCESS;  // Execute reports it
    for (size_t ir : {kW, kR, kWScale, kWZero, kRScale, kRZero})
      if (!ctx->GetRequiredInputTensor(ir)->GetAddr()) return GRAPH_SUCCESS;
    std::vector<QWeights> q(static_cast<size_t>(2 * d.dirs));
    for (int64_t dd = 0; dd < d.dirs; ++dd)
      if (!Prepare(ctx, kW, dd, d, &q[2 * dd], &err) || !Prepare(ctx, kR, dd, d, &q[2 * dd + 1], &err)) return Fail(ctx, err);
    prepared_ = std::move(q);
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Dims d;
    std::string err;
    std::vector<RnnActivation> acts;
    if (!GetDims(ctx, &d, &err) || !ParseRnnActivations(ctx, 3, d.dirs, true, &acts, &err)) return Fail(ctx, err);
    if (!Int8GemmSums || !DynamicQuantizeUint8) return Fail(ctx, "this build lacks the int8 GEMM (ops/litert.cc) or ops/quantize.cc");
    const int64_t T = d.seq, Bn = d.batch, I = d.input, H = d.hidden, G = 4 * H;
    std::vector<QWeights> local;
    const std::vector<QWeights>* q = &prepared_;
    if (q->size() != static_cast<size_t>(2 * d.dirs) || (*q)[0].k != I || (*q)[1].k != H) {
      local.resize(static_cast<size_t>(2 * d.dirs));
      for (int64_t dd = 0; dd < d.dirs; ++dd)
        if (!Prepare(ctx, kW, dd, d, &local[2 * dd], &err) || !Prepare(ctx, kR, dd, d, &local[2 * dd + 1], &err)) return Fail(ctx, err);
      q = &local;
    }
    const RuntimeAttrs* a = ctx->GetAttrs();
    const float clip = *a->GetFloat("clip");
    const bool input_forget = *a->GetInt("input_forget") != 0;
    const std::string dir = a->GetStr("direction");
    const float* x = ctx->GetRequiredInputTensor(kX)->GetData<float>();
    const Tensor* B = ctx->GetOptionalInputTensor(kB);
    const Tensor* lens_t = ctx->GetOptionalInputTensor(kLens);
    const Tensor* h0 = ctx->GetOptionalInputTensor(kH0);
    const Tensor* c0 = ctx->GetOptionalInputTensor(kC0);
    const Tensor* P = ctx->GetOptionalInputTensor(kP);
    std::vector<int64_t> len(static_cast<size_t>(Bn), T);
    if (lens_t) {
      if (lens_t->GetShapeSize() != Bn) return Fail(ctx, "sequence_lens " + lens_t->GetShape().ToString() + " must hold one length per batch row (" + std::to_string(Bn) + ")");
      for (int64_t b = 0; b < Bn; ++b) {
        len[b] = lens_t->GetDataType() == DT_INT64 ? lens_t->GetData<int64_t>()[b] : lens_t->GetData<int32_t>()[b];
        if (len[b] < 0 || len[b] > T) return Fail(ctx, "sequence_lens[" + std::to_string(b) + "] is " + std::to_string(len[b]) + "; it must lie in [0, " + std::to_string(T) + "]");
      }
    }
    Tensor* outs[3] = {nullptr, nullptr, nullptr};
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum() && k < 3; ++k) {
      outs[k] = ctx->MallocOutputTensor(k, ctx->GetOutputTensor(k)->GetShape(), DT_FLOAT);
      if (!outs[k]) return GRAPH_FAILED;
    }
    ApplyIntraOpThreads(ctx);
    const int64_t rows = T * Bn;
    const int64_t widest = std::max(rows * (I + 3), Bn * (H + 3));
    auto* q8 = static_cast<uint8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(widest, 1))));
    auto* a8 = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(widest, 1))));
    auto* rowsum = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(rows, Bn) + 1) * sizeof(int32_t)));
    auto* acc = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(rows, Bn) * G + 1) * sizeof(int32_t)));
    auto* gx = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(rows * G + 1) * sizeof(float)));
    auto* st = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(2 * Bn * H + G + 1) * sizeof(float)));
    auto* mult = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(G) * sizeof(float)));
    auto* zs = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(Bn * G + 1) * sizeof(float)));
    auto* hz = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(Bn * H + 1) * sizeof(float)));
    if (!q8 || !a8 || !rowsum || !acc || !gx || !st || !mult || !zs || !hz) return GRAPH_FAILED;
    float* h = st;
    float* c = h + Bn * H;
    float* tmp = c + Bn * H;
    float* y = outs[0] ? outs[0]->GetData<float>() : nullptr;
    if (y) std::fill(y, y + T * d.dirs * Bn * H, 0.f);

    // a [m][k] floats quantized; the sums of (a - a_zero)(w - w_zero) times a_scale * w_scale into
    // out [m][G] (added to it when `add`).
    auto product = [&](const float* src, int64_t m, int64_t k, const QWeights& w, float* out, bool add) -> bool {
      float sa = 1.f;
      uint8_t za = 0;
      if (int64_t bad = DynamicQuantizeUint8(src, m * k, q8, &sa, &za); bad >= 0)
        return err = "a value to quantize is " + std::to_string(src[bad]) + " (element " + std::to_string(bad) + "); it must be finite", false;
      for (int64_t i = 0; i < m; ++i) {
        int32_t s = 0;
        for (int64_t p = 0; p < k; ++p) s += static_cast<int32_t>(q8[i * k + p]) - za;
        rowsum[i] = s;
      }
#if defined(__x86_64__) && defined(__GNUC__)
      if (!w.panels.empty() && m <= 4) {  // more rows: the GEMM (on AMX where there is one) is faster
        // uint8 rows padded to whole words; the sums of a * w less za * (the row's sum of w).
        const int64_t lda = w.groups() * 4;
        for (int64_t i = m - 1; i >= 0; --i) {
          std::memmove(q8 + i * lda, q8 + i * k, static_cast<size_t>(k));
          std::memset(q8 + i * lda + k, 0, static_cast<size_t>(lda - k));
        }
        const int64_t panels = w.npanels();
        ctx->ParallelFor(panels, 4, [&](int64_t p0, int64_t p1) { GemvRowsVnni(q8, lda, m, w, p0, p1, acc, G); });
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < G; ++j) acc[i * G + j] -= static_cast<int32_t>(za) * w.rowsum[j];
      } else
#endif
      {
        for (int64_t i = 0; i < m * k; ++i) a8[i] = static_cast<int8_t>(q8[i] ^ 0x80);
        if (!Int8GemmSums(ctx, m, G, k, a8, static_cast<int32_t>(za) - 128, w.rows.data(), acc, w.packed.get()))
          return err = "the int8 GEMM failed", false;
      }
      for (int64_t j = 0; j < G; ++j) mult[j] = sa * w.scale[j];
      for (int64_t i = 0; i < m; ++i) {
        float* o = out + i * G;
        const int32_t* ai = acc + i * G;
        for (int64_t j = 0; j < G; ++j) {
          const float v = static_cast<float>(ai[j] + w.offset[j] * rowsum[i]) * mult[j];
          o[j] = add ? o[j] + v : v;
        }
      }
      return true;
    };

    for (int64_t dd = 0; dd < d.dirs; ++dd) {
      const bool reverse = dir == "reverse" || (dir == "bidirectional" && dd == 1);
      const RnnActivation &f = acts[static_cast<size_t>(3 * dd)], &g = acts[static_cast<size_t>(3 * dd + 1)], &ha = acts[static_cast<size_t>(3 * dd + 2)];
      const QWeights &wq = (*q)[2 * dd], &rq = (*q)[2 * dd + 1];
      if (rows > 0 && !product(x, rows, I, wq, gx, false)) return Fail(ctx, err);
      std::vector<float> bias;
      if (B) {
        const float* pb = B->GetData<float>() + dd * 2 * G;
        bias.resize(static_cast<size_t>(G));
        for (int64_t j = 0; j < G; ++j) bias[j] = pb[j] + pb[G + j];
      }
      const float* peep = P ? P->GetData<float>() + dd * 3 * H : nullptr;
      const bool plain = !peep && !input_forget && f.sigmoid && g.tanh && ha.tanh;
      for (int64_t b = 0; b < Bn; ++b)
        for (int64_t j = 0; j < H; ++j) {
          h[b * H + j] = h0 ? h0->GetData<float>()[(dd * Bn + b) * H + j] : 0.f;
          c[b * H + j] = c0 ? c0->GetData<float>()[(dd * Bn + b) * H + j] : 0.f;
        }
      // The gates of row b at step t: the projection's row, plus bias, clipped.
      auto finish = [&](float* v, int64_t n, int64_t gate) {
        if (!bias.empty())
          for (int64_t j = 0; j < n; ++j) v[j] = v[j] + bias[gate * H + j];
        if (clip > 0)
          for (int64_t j = 0; j < n; ++j) v[j] = std::max(std::min(v[j], clip), -clip);
      };
      for (int64_t step = 0; step < T; ++step) {
        // zs [Bn][G]: the step's projections, gathered per row (rows past their length idle).
        std::fill(zs, zs + Bn * G, 0.f);
        for (int64_t b = 0; b < Bn; ++b) {
          if (step >= len[b]) continue;
          const int64_t t = reverse ? len[b] - 1 - step : step;
          std::memcpy(zs + b * G, gx + (t * Bn + b) * G, static_cast<size_t>(G) * sizeof(float));
        }
        // Rows whose sequence ended before the previous step enter the product as zeros.
        const float* hq = h;
        if (lens_t) {
          std::copy(h, h + Bn * H, hz);
          for (int64_t b = 0; b < Bn; ++b)
            if (step > len[b]) std::fill(hz + b * H, hz + (b + 1) * H, 0.f);
          hq = hz;
        }
        if (Bn > 0 && !product(hq, Bn, H, rq, zs, true)) return Fail(ctx, err);
        for (int64_t b = 0; b < Bn; ++b) {
          if (step >= len[b]) continue;
          const int64_t t = reverse ? len[b] - 1 - step : step;
          float *zi = zs + b * G, *zo = zi + H, *zf = zi + 2 * H, *zc = zi + 3 * H;
          float *cb = c + b * H, *hb = h + b * H;
          if (plain) {  // the default activations, no peepholes: the gates in two passes
            finish(zi, G, 0);
            SigmoidSpan(zi, 3 * H);
            TanhSpan(zc, H);
            for (int64_t j = 0; j < H; ++j) cb[j] = cb[j] * zf[j] + zi[j] * zc[j];
            std::copy(cb, cb + H, tmp);
            TanhSpan(tmp, H);
            for (int64_t j = 0; j < H; ++j) hb[j] = tmp[j] * zo[j];
            if (y) std::copy(hb, hb + H, y + ((t * d.dirs + dd) * Bn + b) * H);
            continue;
          }
          if (peep)
            for (int64_t j = 0; j < H; ++j) {
              zi[j] = zi[j] + peep[j] * cb[j];
              zf[j] = zf[j] + peep[2 * H + j] * cb[j];
            }
          finish(zi, H, 0);
          Activate(f, zi, H);
          if (input_forget) {
            for (int64_t j = 0; j < H; ++j) zf[j] = 1.f - zi[j];
          } else {
            finish(zf, H, 2);
            Activate(f, zf, H);
          }
          finish(zc, H, 3);
          Activate(g, zc, H);
          for (int64_t j = 0; j < H; ++j) cb[j] = cb[j] * zf[j] + zi[j] * zc[j];
          if (peep)
            for (int64_t j = 0; j < H; ++j) zo[j] = zo[j] + peep[H + j] * cb[j];
          finish(zo, H, 1);
          Activate(f, zo, H);
          std::copy(cb, cb + H, tmp);
          Activate(ha, tmp, H);
          for (int64_t j = 0; j < H; ++j) hb[j] = tmp[j] * zo[j];
          if (y) std::copy(hb, hb + H, y + ((t * d.dirs + dd) * Bn + b) * H);
        }
      }
      for (int64_t b = 0; b < Bn; ++b) {
        if (outs[1]) std::copy(h + b * H, h + (b + 1) * H, outs[1]->GetData<float>() + (dd * Bn + b) * H);
        if (outs[2]) std::copy(c + b * H, c + (b + 1) * H, outs[2]->GetData<float>() + (dd * Bn + b) * H);
      }
    }
    return GRAPH_SUCCESS;
  }

 private:
  std::vector<QWeights> prepared_;  // per direction: W, R
};

}  // namespace

void WeftRegister_qlstm(std::vector<OpEntry>& out) {
  const TensorType q8({DT_INT8, DT_UINT8});
  OpDefBuilder b("DynamicQuantizeLSTM");
  b.INPUT(X, TensorType({DT_FLOAT}))
      .INPUT(W, q8)
      .INPUT(R, q8)
      .OPTIONAL_INPUT(B, TensorType({DT_FLOAT}))
      .OPTIONAL_INPUT(sequence_lens, TensorType({DT_INT32, DT_INT64}))
      .OPTIONAL_INPUT(initial_h, TensorType({DT_FLOAT}))
      .OPTIONAL_INPUT(initial_c, TensorType({DT_FLOAT}))
      .OPTIONAL_INPUT(P, TensorType({DT_FLOAT}))
      .INPUT(W_scale, TensorType({DT_FLOAT}))
      .INPUT(W_zero_point, q8)
      .INPUT(R_scale, TensorType({DT_FLOAT}))
      .INPUT(R_zero_point, q8)
      .OUTPUT(Y, TensorType({DT_FLOAT}))
      .OUTPUT(Y_h, TensorType({DT_FLOAT}))
      .OUTPUT(Y_c, TensorType({DT_FLOAT}))
      .ATTR(activation_alpha, ListFloat, {})
      .ATTR(activation_beta, ListFloat, {})
      .ATTR(activations, ListString, {})
      .ATTR(clip, Float, 0.0)
      .ATTR(direction, String, "forward")
      .REQUIRED_ATTR(hidden_size, Int)
      .ATTR(input_forget, Int, 0);
  out.push_back({b.Build(), MakeOpImpl<DynamicQuantizeLstm>("DynamicQuantizeLSTM")});
}

}  // namespace weft::ops
