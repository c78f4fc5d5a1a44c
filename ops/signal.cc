// TFLM's signal library, the audio front end of keyword-spotting models (LiteRT custom operators
// by customCode, so each op type is the code's canonical key): SignalWindow, SignalFftAutoScale,
// SignalRfft, SignalEnergy, SignalFilterBank, SignalFilterBankSquareRoot,
// SignalFilterBankSpectralSubtraction, SignalPCAN, SignalFilterBankLog. The arithmetic is the
// C text in aot/signal.c, which these ops compile and weft aot writes into modules, so the
// runtime and a generated module give the same bits.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace sig {
#include "aot/signal.c"
}  // namespace sig

namespace {

int64_t Int(const KernelContextBase* ctx, const char* name) {
  const int64_t* v = ctx->GetAttrs()->GetInt(name);
  return v ? *v : 0;
}

bool Bool(const KernelContextBase* ctx, const char* name) {
  const bool* v = ctx->GetAttrs()->GetBool(name);
  return v && *v;
}

// An int attribute used as a shift: 0..max, or an error naming it.
bool Shift(const KernelContextBase* ctx, const char* name, int64_t max, int64_t* out) {
  *out = Int(ctx, name);
  if (*out < 0 || *out > max) {
    Fail(ctx, "option '" + std::string(name) + "' is " + std::to_string(*out) + "; it must be 0 to " + std::to_string(max));
    return false;
  }
  return true;
}

std::string S(int64_t v) { return aot::IntLit(v); }

// Rank-1 input of `n` elements, or an error naming the input.
bool Vector(const KernelContextBase* ctx, size_t i, const char* what, int64_t* n) {
  const Shape& s = ctx->GetInputTensor(i)->GetShape();
  if (s.GetDimNum() != 1) {
    Fail(ctx, std::string(what) + " (input " + std::to_string(i) + ") must be 1-D, got " + s.ToString());
    return false;
  }
  *n = s.GetDim(0);
  return true;
}

// ---- SignalWindow: y = sat16((x * w) >> shift), w along the innermost axis --------------------

class Window : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_INT16);
    return GRAPH_SUCCESS;
  }
  static bool Check(const KernelContextBase* ctx, int64_t* n, int64_t* shift) {
    const Shape& x = ctx->GetInputTensor(0)->GetShape();
    if (!Vector(ctx, 1, "weights", n) || !Shift(ctx, "shift", 31, shift)) return false;
    if (x.GetDimNum() == 0 || x.GetDim(x.GetDimNum() - 1) != *n || *n <= 0) {
      Fail(ctx, "the window has " + std::to_string(*n) + " weights; the input's innermost dim must match, got " + x.ToString());
      return false;
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t n, shift;
    if (!Check(ctx, &n, &shift)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    int64_t n, shift;
    if (!Check(ctx, &n, &shift)) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_INT16);
    if (!y) return GRAPH_FAILED;
    sig::weft_sig_window(x->GetShapeSize(), static_cast<int32_t>(n), x->GetData<int16_t>(), ctx->GetInputTensor(1)->GetData<int16_t>(),
                         static_cast<int32_t>(shift), y->GetData<int16_t>());
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    int64_t n, shift;
    if (!Check(ctx, &n, &shift)) return GRAPH_FAILED;
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_window");
    ctx->Run("weft_sig_window(" + S(ctx->GetInputTensor(0)->GetShapeSize()) + ", " + S(n) + ", " + ctx->Input(0, "int16_t") + ", " +
             ctx->Input(1, "int16_t") + ", " + S(shift) + ", " + ctx->Output(0, "int16_t") + ");\n");
    return GRAPH_SUCCESS;
  }
};

// ---- SignalFftAutoScale: (x << bits, bits), bits bringing the largest magnitude to 15 bits -----

class FftAutoScale : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_INT16);
    ctx->SetOutputDataType(1, DT_INT32);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    *ctx->GetOutputShape(1) = Shape();
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_INT16);
    Tensor* bits = ctx->MallocOutputTensor(1, Shape(), DT_INT32);
    if (!y || !bits) return GRAPH_FAILED;
    sig::weft_sig_fft_auto_scale(x->GetShapeSize(), x->GetData<int16_t>(), y->GetData<int16_t>(), bits->GetData<int32_t>());
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_fft_auto_scale");
    ctx->Run("weft_sig_fft_auto_scale(" + S(ctx->GetInputTensor(0)->GetShapeSize()) + ", " + ctx->Input(0, "int16_t") + ", " +
             ctx->Output(0, "int16_t") + ", " + ctx->Output(1, "int32_t") + ");\n");
    return GRAPH_SUCCESS;
  }
};

// ---- SignalRfft: int16 real FFT of fft_length points (rows zero-padded), fft_length/2+1 bins --

struct RfftPlan {
  int32_t fft_length = 0, n = 0, max_radix = 1;
  std::vector<int16_t> tw, stw;  // (re, im) pairs, Q15
  std::vector<int32_t> factors;  // (radix, remaining length) pairs
};

int16_t Q15(double v) { return static_cast<int16_t>(std::floor(0.5 + 32767.0 * v)); }

// The twiddles and the radix order (4 first, then 2, 3, 5, 7, ...; a remainder with no factor up
// to its square root is one stage).
RfftPlan MakeRfftPlan(int32_t fft_length) {
  RfftPlan p;
  p.fft_length = fft_length;
  p.n = fft_length / 2;
  const double pi = 3.14159265358979323846264338327;
  for (int32_t i = 0; i < p.n; ++i) {
    const double phase = ((-2.0 * pi) * i) / p.n;
    p.tw.push_back(Q15(std::cos(phase)));
    p.tw.push_back(Q15(std::sin(phase)));
  }
  for (int32_t i = 0; i < p.n / 2; ++i) {
    const double phase = -pi * (static_cast<double>(i + 1) / p.n + 0.5);
    p.stw.push_back(Q15(std::cos(phase)));
    p.stw.push_back(Q15(std::sin(phase)));
  }
  if (p.stw.empty()) p.stw = {0, 0};
  int32_t r = p.n, radix = 4;
  const double lim = std::floor(std::sqrt(static_cast<double>(p.n)));
  do {
    while (r % radix) {
      radix = radix == 4 ? 2 : radix == 2 ? 3 : radix + 2;
      if (radix > lim) radix = r;
    }
    r /= radix;
    p.factors.push_back(radix);
    p.factors.push_back(r);
    p.max_radix = std::max(p.max_radix, radix);
  } while (r > 1);
  return p;
}

class Rfft : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The rows: every dim but the innermost (a row of 0 samples is all padding: its bins are 0).
  static int64_t Rows(const Shape& s) {
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < s.GetDimNum(); ++d) rows *= s.GetDim(d);
    return rows;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_INT16);
    return GRAPH_SUCCESS;
  }
  static bool Check(const KernelContextBase* ctx, const Shape& in, int64_t* len) {
    const int64_t t = Int(ctx, "T");
    *len = Int(ctx, "fft_length");
    if (t != 7) {
      Fail(ctx, "T = " + std::to_string(t) + ": only int16 (7) is implemented (float32 and int32 FFTs are not)");
      return false;
    }
    if (*len < 4 || *len > 65536 || *len % 2) {
      Fail(ctx, "fft_length " + std::to_string(*len) + " must be even and 4 to 65536");
      return false;
    }
    if (in.GetDimNum() == 0 || in.GetDim(in.GetDimNum() - 1) > *len) {
      Fail(ctx, "the input's rows (innermost dim of " + in.ToString() + ") must be at most fft_length " + std::to_string(*len));
      return false;
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    int64_t len;
    if (!Check(ctx, in, &len)) return GRAPH_FAILED;
    Shape out = in;
    out.SetDim(out.GetDimNum() - 1, 2 * (len / 2 + 1));
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    int64_t len;
    if (!Check(ctx, x->GetShape(), &len)) return GRAPH_FAILED;
    if (plan_.fft_length != len) plan_ = MakeRfftPlan(static_cast<int32_t>(len));
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), DT_INT16);
    auto* scratch = static_cast<uint8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(plan_.n + (plan_.max_radix > 5 ? plan_.max_radix : 0)) * 4));
    if (!y || !scratch) return GRAPH_FAILED;
    const int64_t row = x->GetShape().GetDim(x->GetShape().GetDimNum() - 1), rows = Rows(x->GetShape());
    sig::weft_sig_rfft(rows, static_cast<int32_t>(row), plan_.fft_length, x->GetData<int16_t>(), y->GetData<int16_t>(), plan_.tw.data(),
                       plan_.stw.data(), plan_.factors.data(), plan_.max_radix, scratch);
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    int64_t len;
    if (!Check(ctx, x->GetShape(), &len)) return GRAPH_FAILED;
    RfftPlan p = MakeRfftPlan(static_cast<int32_t>(len));
    const int64_t row = x->GetShape().GetDim(x->GetShape().GetDimNum() - 1), rows = Rows(x->GetShape());
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_rfft");
    const std::string scratch = ctx->Scratch(static_cast<size_t>(p.n + (p.max_radix > 5 ? p.max_radix : 0)) * 4);
    ctx->Run("weft_sig_rfft(" + S(rows) + ", " + S(row) + ", " + S(len) + ", " + ctx->Input(0, "int16_t") + ", " + ctx->Output(0, "int16_t") + ", " +
             ctx->Const("tw", DT_INT16, p.tw) + ", " + ctx->Const("stw", DT_INT16, p.stw) + ", " + ctx->Const("factors", DT_INT32, p.factors) +
             ", " + S(p.max_radix) + ", " + scratch + ");\n");
    return GRAPH_SUCCESS;
  }

 private:
  RfftPlan plan_;
};

// ---- SignalEnergy: re^2 + im^2 of bins [start_index, end_index); 0 elsewhere -----------------

class Energy : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_UINT32);
    return GRAPH_SUCCESS;
  }
  static bool Check(const KernelContextBase* ctx, int64_t values, int64_t* start, int64_t* end) {
    *start = Int(ctx, "start_index");
    *end = Int(ctx, "end_index");
    if (values % 2) return Fail(ctx, "the input holds interleaved (re, im) pairs; it has an odd count " + std::to_string(values)), false;
    if (*start < 0 || *end < *start || *end > values / 2)
      return Fail(ctx, "bins [" + std::to_string(*start) + ", " + std::to_string(*end) + ") are not within the input's " + std::to_string(values / 2)), false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    if (in.GetDimNum() != 1) return Fail(ctx, "the input must be 1-D interleaved complex values, got " + in.ToString());
    int64_t s, e;
    if (!Check(ctx, in.GetDim(0), &s, &e)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({in.GetDim(0) / 2});
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    int64_t s, e;
    if (!Check(ctx, x->GetShapeSize(), &s, &e)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({x->GetShapeSize() / 2}), DT_UINT32);
    if (!y) return GRAPH_FAILED;
    sig::weft_sig_energy(static_cast<int32_t>(x->GetShapeSize() / 2), static_cast<int32_t>(s), static_cast<int32_t>(e), x->GetData<int16_t>(),
                         y->GetData<uint32_t>());
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    int64_t s, e;
    if (!Check(ctx, x->GetShapeSize(), &s, &e)) return GRAPH_FAILED;
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_energy");
    ctx->Run("weft_sig_energy(" + S(x->GetShapeSize() / 2) + ", " + S(s) + ", " + S(e) + ", " + ctx->Input(0, "int16_t") + ", " +
             ctx->Output(0, "uint32_t") + ");\n");
    return GRAPH_SUCCESS;
  }
};

// ---- SignalFilterBank: triangular bands over the energies, uint64 ----------------------------

class FilterBank : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_UINT64);
    return GRAPH_SUCCESS;
  }
  // The band tables must keep every read inside the energies and the weights.
  static bool Check(const KernelContextBase* ctx, bool need_values) {
    const int64_t c = Int(ctx, "num_channels");
    int64_t k, w, uw, fs, ws, wd;
    if (!Vector(ctx, 0, "energies", &k) || !Vector(ctx, 1, "weights", &w) || !Vector(ctx, 2, "unweights", &uw) ||
        !Vector(ctx, 3, "channel_frequency_starts", &fs) || !Vector(ctx, 4, "channel_weight_starts", &ws) || !Vector(ctx, 5, "channel_widths", &wd))
      return false;
    if (c < 1 || c > 65535) return Fail(ctx, "num_channels " + std::to_string(c) + " must be 1 to 65535"), false;
    if (uw != w) return Fail(ctx, "weights (" + std::to_string(w) + ") and unweights (" + std::to_string(uw) + ") differ in length"), false;
    if (fs <= c || ws <= c || wd <= c)
      return Fail(ctx, "the band tables need num_channels + 1 = " + std::to_string(c + 1) + " entries each, got " + std::to_string(fs) + ", " +
                           std::to_string(ws) + ", " + std::to_string(wd)), false;
    const int16_t* f = ctx->GetInputTensor(3)->GetData<int16_t>();
    const int16_t* s = ctx->GetInputTensor(4)->GetData<int16_t>();
    const int16_t* n = ctx->GetInputTensor(5)->GetData<int16_t>();
    if (!f || !s || !n) return need_values ? (Fail(ctx, "the band tables (inputs 3 to 5) must be constants"), false) : true;
    for (int64_t ch = 0; ch <= c; ++ch)
      if (n[ch] < 0 || f[ch] < 0 || s[ch] < 0 || f[ch] + n[ch] > k || s[ch] + n[ch] > w)
        return Fail(ctx, "band " + std::to_string(ch) + " (start " + std::to_string(f[ch]) + ", weights from " + std::to_string(s[ch]) + ", width " +
                             std::to_string(n[ch]) + ") reaches past the " + std::to_string(k) + " energies or " + std::to_string(w) + " weights"),
               false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const int64_t c = Int(ctx, "num_channels");
    if (!Check(ctx, false)) return GRAPH_FAILED;  // constant band tables are checked now
    *ctx->GetOutputShape(0) = Shape({c});
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    if (!Check(ctx, true)) return GRAPH_FAILED;
    const int64_t c = Int(ctx, "num_channels");
    Tensor* y = ctx->MallocOutputTensor(0, Shape({c}), DT_UINT64);
    if (!y) return GRAPH_FAILED;
    auto in = [&](size_t i) { return ctx->GetInputTensor(i)->GetData<int16_t>(); };
    sig::weft_sig_filter_bank(static_cast<int32_t>(c), ctx->GetInputTensor(0)->GetData<uint32_t>(), in(1), in(2), in(3), in(4), in(5),
                              y->GetData<uint64_t>());
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    if (!Check(ctx, true)) return GRAPH_FAILED;
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_filter_bank");
    ctx->Run("weft_sig_filter_bank(" + S(Int(ctx, "num_channels")) + ", " + ctx->Input(0, "uint32_t") + ", " + ctx->Input(1, "int16_t") + ", " +
             ctx->Input(2, "int16_t") + ", " + ctx->Input(3, "int16_t") + ", " + ctx->Input(4, "int16_t") + ", " + ctx->Input(5, "int16_t") + ", " +
             ctx->Output(0, "uint64_t") + ");\n");
    return GRAPH_SUCCESS;
  }
};

// ---- SignalFilterBankSquareRoot: round(sqrt(x)) >> scale_bits --------------------------------

class FilterBankSquareRoot : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_UINT32);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    if (ctx->GetInputShape(1)->GetShapeSize() != 1) return Fail(ctx, "scale_bits (input 1) must hold one value, got " + ctx->GetInputShape(1)->ToString());
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const int32_t shift = ctx->GetInputTensor(1)->GetData<int32_t>()[0];
    if (shift < 0 || shift > 31) return Fail(ctx, "scale_bits is " + std::to_string(shift) + "; it must be 0 to 31");
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_UINT32);
    if (!y) return GRAPH_FAILED;
    sig::weft_sig_fb_sqrt(static_cast<int32_t>(x->GetShapeSize()), x->GetData<uint64_t>(), shift, y->GetData<uint32_t>());
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_sqrt");
    ctx->Run("{\n  const int32_t shift = *" + ctx->Input(1, "int32_t") + ";\n  if (shift < 0 || shift > 31) return 1;\n  weft_sig_fb_sqrt(" +
             S(ctx->GetInputTensor(0)->GetShapeSize()) + ", " + ctx->Input(0, "uint64_t") + ", shift, " + ctx->Output(0, "uint32_t") + ");\n}\n");
    return GRAPH_SUCCESS;
  }
};

// ---- SignalFilterBankSpectralSubtraction: a running noise estimate (state) taken off ----------

class SpectralSubtraction : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_UINT32);
    ctx->SetOutputDataType(1, DT_UINT32);
    return GRAPH_SUCCESS;
  }
  struct Opts {
    int64_t c, smoothing, one_minus, alt, alt_one_minus, smoothing_bits, min_remaining, bits;
    bool clamping;
  };
  static bool Read(const KernelContextBase* ctx, Opts* o) {
    o->c = Int(ctx, "num_channels");
    const Shape& in = ctx->GetInputTensor(0)->GetShape();
    if (in.GetShapeSize() != o->c || o->c < 1)
      return Fail(ctx, "num_channels " + std::to_string(o->c) + " does not match the input " + in.ToString()), false;
    if (!Shift(ctx, "smoothing_bits", 31, &o->smoothing_bits) || !Shift(ctx, "spectral_subtraction_bits", 63, &o->bits)) return false;
    for (const char* name : {"smoothing", "one_minus_smoothing", "alternate_smoothing", "alternate_one_minus_smoothing", "min_signal_remaining"})
      if (Int(ctx, name) < 0 || Int(ctx, name) > 0xFFFFFFFFll)
        return Fail(ctx, "option '" + std::string(name) + "' is " + std::to_string(Int(ctx, name)) + "; it must fit in 32 unsigned bits"), false;
    o->smoothing = Int(ctx, "smoothing");
    o->one_minus = Int(ctx, "one_minus_smoothing");
    o->alt = Int(ctx, "alternate_smoothing");
    o->alt_one_minus = Int(ctx, "alternate_one_minus_smoothing");
    o->min_remaining = Int(ctx, "min_signal_remaining");
    o->clamping = Bool(ctx, "clamping");
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Opts o;
    if (!Read(ctx, &o)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    *ctx->GetOutputShape(1) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Opts o;
    if (!Read(ctx, &o)) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_UINT32);
    Tensor* noise_out = ctx->MallocOutputTensor(1, x->GetShape(), DT_UINT32);
    // The noise estimate, kept per run context: zero in a new context and after ResetState.
    auto* noise = static_cast<uint32_t*>(ctx->GetHostArgs(static_cast<size_t>(o.c) * sizeof(uint32_t)));
    if (!y || !noise_out || !noise) return GRAPH_FAILED;
    sig::weft_sig_spectral_subtraction(static_cast<int32_t>(o.c), x->GetData<uint32_t>(), static_cast<uint32_t>(o.smoothing),
                                       static_cast<uint32_t>(o.one_minus), static_cast<uint32_t>(o.alt), static_cast<uint32_t>(o.alt_one_minus),
                                       static_cast<uint32_t>(o.smoothing_bits), static_cast<uint32_t>(o.min_remaining), static_cast<uint32_t>(o.bits),
                                       o.clamping ? 1 : 0, noise, y->GetData<uint32_t>(), noise_out->GetData<uint32_t>());
    return GRAPH_SUCCESS;
  }
  // The estimate lives in the node's state in the module's context: zero after <prefix>_init.
  graphStatus Emit(EmitContext* ctx) override {
    Opts o;
    if (!Read(ctx, &o)) return GRAPH_FAILED;
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_spectral_subtraction");
    ctx->DeclareState("uint32_t noise[" + std::to_string(o.c) + "];\n");
    ctx->Run("weft_sig_spectral_subtraction(" + S(o.c) + ", " + ctx->Input(0, "uint32_t") + ", " + S(o.smoothing) + "u, " + S(o.one_minus) + "u, " +
             S(o.alt) + "u, " + S(o.alt_one_minus) + "u, " + S(o.smoothing_bits) + "u, " + S(o.min_remaining) + "u, " + S(o.bits) + "u, " +
             (o.clamping ? "1" : "0") + ", " + ctx->State() + "->noise, " + ctx->Output(0, "uint32_t") + ", " + ctx->Output(1, "uint32_t") + ");\n");
    return GRAPH_SUCCESS;
  }
};

// ---- SignalPCAN: per-channel energy normalization ---------------------------------------------

class Pcan : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_UINT32);
    return GRAPH_SUCCESS;
  }
  static constexpr int64_t kLutSize = 125;
  static bool Check(const KernelContextBase* ctx, int64_t* shift) {
    int64_t lut;
    if (!Vector(ctx, 2, "gain_lut", &lut) || !Shift(ctx, "snr_shift", 63, shift)) return false;
    if (lut < kLutSize) return Fail(ctx, "gain_lut has " + std::to_string(lut) + " entries; it needs " + std::to_string(kLutSize)), false;
    const int64_t n = ctx->GetInputTensor(0)->GetShapeSize();
    if (n < 1 || ctx->GetInputTensor(1)->GetShapeSize() != n)
      return Fail(ctx, "the input " + ctx->GetInputTensor(0)->GetShape().ToString() + " and the noise estimate " +
                           ctx->GetInputTensor(1)->GetShape().ToString() + " must have the same, non-zero count"), false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t shift;
    if (!Check(ctx, &shift)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    int64_t shift;
    if (!Check(ctx, &shift)) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_UINT32);
    if (!y) return GRAPH_FAILED;
    sig::weft_sig_pcan(static_cast<int32_t>(x->GetShapeSize()), x->GetData<uint32_t>(), ctx->GetInputTensor(1)->GetData<uint32_t>(),
                       ctx->GetInputTensor(2)->GetData<int16_t>(), static_cast<int32_t>(shift), y->GetData<uint32_t>());
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    int64_t shift;
    if (!Check(ctx, &shift)) return GRAPH_FAILED;
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_pcan");
    ctx->Run("weft_sig_pcan(" + S(ctx->GetInputTensor(0)->GetShapeSize()) + ", " + ctx->Input(0, "uint32_t") + ", " + ctx->Input(1, "uint32_t") +
             ", " + ctx->Input(2, "int16_t") + ", " + S(shift) + ", " + ctx->Output(0, "uint32_t") + ");\n");
    return GRAPH_SUCCESS;
  }
};

// ---- SignalFilterBankLog: output_scale * ln(x << input_correction_bits), int16 ---------------

class FilterBankLog : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, DT_INT16);
    return GRAPH_SUCCESS;
  }
  static bool Check(const KernelContextBase* ctx, int64_t* bits, int64_t* scale) {
    if (!Shift(ctx, "input_correction_bits", 31, bits)) return false;
    *scale = Int(ctx, "output_scale");
    if (*scale < 0 || *scale > 0xFFFFFFFFll) return Fail(ctx, "output_scale " + std::to_string(*scale) + " must fit in 32 unsigned bits"), false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t bits, scale;
    if (!Check(ctx, &bits, &scale)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    int64_t bits, scale;
    if (!Check(ctx, &bits, &scale)) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_INT16);
    if (!y) return GRAPH_FAILED;
    sig::weft_sig_fb_log(static_cast<int32_t>(x->GetShapeSize()), x->GetData<uint32_t>(), static_cast<uint32_t>(bits), static_cast<uint32_t>(scale),
                         y->GetData<int16_t>());
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    int64_t bits, scale;
    if (!Check(ctx, &bits, &scale)) return GRAPH_FAILED;
    aot::EmitHelper(ctx, aot::Kernels(), "weft_sig_fb_log");
    ctx->Run("weft_sig_fb_log(" + S(ctx->GetInputTensor(0)->GetShapeSize()) + ", " + ctx->Input(0, "uint32_t") + ", " + S(bits) + "u, " + S(scale) +
             "u, " + ctx->Output(0, "int16_t") + ");\n");
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_signal(std::vector<OpEntry>& out) {
  const TensorType i16({DT_INT16}), u32({DT_UINT32}), u64({DT_UINT64}), i32({DT_INT32});
  out.push_back({OpDefBuilder("SIGNALWINDOW").Input("input", i16).Input("weights", i16).Output("output", i16).AttrInt("shift", 0).Build(),
                 MakeOpImpl<Window>("SIGNALWINDOW")});
  out.push_back({OpDefBuilder("SIGNALFFTAUTOSCALE").Input("input", i16).Output("output", i16).Output("scale_bits", i32).Build(),
                 MakeOpImpl<FftAutoScale>("SIGNALFFTAUTOSCALE")});
  out.push_back({OpDefBuilder("SIGNALRFFT").Input("input", i16).Output("output", i16).AttrInt("T", 7).AttrInt("fft_length", 0).Build(),
                 MakeOpImpl<Rfft>("SIGNALRFFT")});
  out.push_back({OpDefBuilder("SIGNALENERGY").Input("input", i16).Output("output", u32).AttrInt("start_index", 0).AttrInt("end_index", 0).Build(),
                 MakeOpImpl<Energy>("SIGNALENERGY")});
  out.push_back({OpDefBuilder("SIGNALFILTERBANK").Input("input", u32).Input("weights", i16).Input("unweights", i16)
                     .Input("channel_frequency_starts", i16).Input("channel_weight_starts", i16).Input("channel_widths", i16)
                     .Output("output", u64).AttrInt("num_channels", 0).Build(),
                 MakeOpImpl<FilterBank>("SIGNALFILTERBANK")});
  out.push_back({OpDefBuilder("SIGNALFILTERBANKSQUAREROOT").Input("input", u64).Input("scale_bits", i32).Output("output", u32).Build(),
                 MakeOpImpl<FilterBankSquareRoot>("SIGNALFILTERBANKSQUAREROOT")});
  out.push_back({OpDefBuilder("SIGNALFILTERBANKSPECTRALSUBTRACTION").Input("input", u32).Output("output", u32).Output("noise_estimate", u32)
                     .AttrInt("num_channels", 0).AttrInt("smoothing", 0).AttrInt("one_minus_smoothing", 0).AttrInt("alternate_smoothing", 0)
                     .AttrInt("alternate_one_minus_smoothing", 0).AttrInt("smoothing_bits", 0).AttrInt("min_signal_remaining", 0)
                     .AttrInt("spectral_subtraction_bits", 0).AttrBool("clamping", false).Build(),
                 MakeOpImpl<SpectralSubtraction>("SIGNALFILTERBANKSPECTRALSUBTRACTION")});
  out.push_back({OpDefBuilder("SIGNALPCAN").Input("input", u32).Input("noise_estimate", u32).Input("gain_lut", i16).Output("output", u32)
                     .AttrInt("snr_shift", 0).Build(),
                 MakeOpImpl<Pcan>("SIGNALPCAN")});
  out.push_back({OpDefBuilder("SIGNALFILTERBANKLOG").Input("input", u32).Output("output", i16).AttrInt("input_correction_bits", 0)
                     .AttrInt("output_scale", 1).Build(),
                 MakeOpImpl<FilterBankLog>("SIGNALFILTERBANKLOG")});
}

}  // namespace weft::ops
