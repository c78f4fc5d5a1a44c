// Spectral operators of audio front ends (ONNX opsets 17 and 20): DFT, STFT, the HannWindow,
// HammingWindow and BlackmanWindow generators and MelWeightMatrix. Transforms run in double: a
// radix-2 FFT for power-of-two lengths, Bluestein's chirp transform over it for the others (the
// 400-point frames of 16 kHz speech models as fast as the 512-point ones).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace cfft {
#include "aot/spectral.c"
}  // namespace cfft

namespace {

using Cx = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

bool IsPow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// The forward DFT of one length, prepared once (the twiddle factors and Bluestein's chirp) and
// run on every signal of a node by the C text of aot/spectral.c, which weft aot writes into
// modules with these tables as constants.
class Dft {
 public:
  explicit Dft(int64_t n) : n_(n) {
    if (n <= 1) return;
    int64_t fft = n;
    if (!IsPow2(n)) {
      m_ = 1;
      while (m_ < 2 * n - 1) m_ <<= 1;
      fft = m_;
    }
    twiddle_.resize(static_cast<size_t>(fft / 2));  // e^(-2 pi i k / fft)
    for (int64_t k = 0; k < fft / 2; ++k) {
      const double a = -2 * kPi * static_cast<double>(k) / static_cast<double>(fft);
      twiddle_[static_cast<size_t>(k)] = Cx(std::cos(a), std::sin(a));
    }
    if (!m_) return;
    chirp_.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {  // e^(i pi k^2 / n), the exponent reduced mod 2n first
      const double a = kPi * static_cast<double>((k * k) % (2 * n)) / static_cast<double>(n);
      chirp_[static_cast<size_t>(k)] = Cx(std::cos(a), std::sin(a));
    }
    b_.assign(static_cast<size_t>(m_), Cx(0));
    for (int64_t k = 0; k < n; ++k) {
      b_[static_cast<size_t>(k)] = chirp_[static_cast<size_t>(k)];
      if (k) b_[static_cast<size_t>(m_ - k)] = chirp_[static_cast<size_t>(k)];
    }
    cfft::weft_fft_radix2(Doubles(b_), m_, Doubles(twiddle_), 0);
  }
  // out[k] = sum_j in[j] e^(-2 pi i jk / n); `work` is scratch.
  void Forward(const Cx* in, Cx* out, std::vector<Cx>& work) const {
    work.resize(static_cast<size_t>(std::max(n_, m_)));
    cfft::weft_dft(n_, m_, Doubles(twiddle_), Doubles(chirp_), Doubles(b_), reinterpret_cast<const double*>(in), reinterpret_cast<double*>(out),
                   Doubles(work));
  }
  int64_t n() const { return n_; }
  int64_t m() const { return m_; }  // Bluestein's FFT size; 0 for a power-of-two n
  // The tables as interleaved (real, imaginary) doubles.
  const std::vector<Cx>& twiddle() const { return twiddle_; }
  const std::vector<Cx>& chirp() const { return chirp_; }
  const std::vector<Cx>& b() const { return b_; }

 private:
  // std::complex<double> is laid out as double[2] (the standard guarantees it).
  static double* Doubles(std::vector<Cx>& v) { return reinterpret_cast<double*>(v.data()); }
  static const double* Doubles(const std::vector<Cx>& v) { return reinterpret_cast<const double*>(v.data()); }

  int64_t n_, m_ = 0;
  std::vector<Cx> twiddle_, chirp_, b_;
};

// Declares what a module needs to run Dft(n) and returns the C call prefix
// "weft_dft(n, m, tw, chirp, b, " (the caller appends in, out, work).
std::string EmitDftTables(const EmitContext* ctx, const Dft& d) {
  aot::EmitHelper(ctx, aot::Kernels(), "weft_dft");
  auto table = [&](const char* hint, const std::vector<Cx>& v) {
    return v.empty() ? std::string("0") : ctx->Const(hint, DT_DOUBLE, reinterpret_cast<const double*>(v.data()), v.size() * 2);
  };
  return "weft_dft(" + aot::IntLit(d.n()) + ", " + aot::IntLit(d.m()) + ", " + table("twiddle", d.twiddle()) + ", " + table("chirp", d.chirp()) +
         ", " + table("chirp_fft", d.b()) + ", ";
}

bool ScalarInt(const Tensor* t, int64_t* v) {
  std::vector<int64_t> x;
  if (!ReadInts(t, &x) || x.size() != 1) return false;
  *v = x[0];
  return true;
}

// ---- DFT(input [batch, ..., n, 1|2], dft_length?, axis? (opset 20)) -> [..., bins, 2] ----------
class DftOp : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  struct Plan {
    int64_t axis = 1, length = -1, bins = -1;
    bool inverse = false, onesided = false, complex_in = false;
    bool irfft() const { return onesided && inverse; }  // a one-sided spectrum back to a real signal
  };
  static bool MakePlan(const KernelContextBase* ctx, const Shape& x, const Tensor* len_t, const Tensor* axis_t, Plan* p) {
    const int64_t r = static_cast<int64_t>(x.GetDimNum());
    if (r < 2 || (x.GetDim(static_cast<size_t>(r - 1)) != 1 && x.GetDim(static_cast<size_t>(r - 1)) != 2))
      return Fail(ctx, "input must end in a dim of 1 (real) or 2 (complex), not " + x.ToString()), false;
    p->complex_in = x.GetDim(static_cast<size_t>(r - 1)) == 2;
    int64_t axis = *ctx->GetAttrs()->GetInt("axis");
    p->inverse = *ctx->GetAttrs()->GetInt("inverse") != 0;
    p->onesided = *ctx->GetAttrs()->GetInt("onesided") != 0;
    if (axis_t && !ScalarInt(axis_t, &axis)) {
      if (axis_t->GetAddr()) return Fail(ctx, "axis must hold one integer"), false;
      p->axis = -1;  // an input known when it runs: every signal dim of the output stays unknown
      return true;
    }
    // Signal dims are those before the last: axis in [-r, -2] or [0, r - 2].
    if (axis < -r || axis > r - 2 || axis == -1) return Fail(ctx, "axis " + std::to_string(axis) + " is not a signal dim of " + x.ToString()), false;
    p->axis = axis < 0 ? axis + r : axis;
    if (p->onesided && !p->inverse && p->complex_in) return Fail(ctx, "onesided takes a real input (its last dim 1)"), false;
    p->length = x.GetDim(static_cast<size_t>(p->axis));
    if (p->irfft() && p->length >= 0) p->length = 2 * (p->length - 1);  // bins 0..n/2 of an even-length signal
    if (len_t) {
      if (!ScalarInt(len_t, &p->length)) {
        p->length = -1;
        if (len_t->GetAddr()) return Fail(ctx, "dft_length must hold one integer"), false;
      } else if (p->length <= 0 || p->length > (int64_t(1) << 30)) {
        return Fail(ctx, "dft_length must be positive (at most 2^30), not " + std::to_string(p->length)), false;
      }
    }
    if (p->irfft() && p->length == 0 && !len_t) return Fail(ctx, "an inverse onesided transform needs dft_length or at least 2 bins"), false;
    p->bins = p->length < 0 ? -1 : p->onesided && !p->inverse ? p->length / 2 + 1 : p->length;
    return true;
  }
  static Shape OutShape(const Shape& x, const Plan& p) {
    Shape o = x;
    if (p.axis < 0) {
      for (size_t d = 0; d + 1 < x.GetDimNum(); ++d) o.SetDim(d, -1);
      o.SetDim(x.GetDimNum() - 1, p.irfft() ? 1 : 2);
      return o;
    }
    o.SetDim(static_cast<size_t>(p.axis), p.bins);
    o.SetDim(x.GetDimNum() - 1, p.irfft() ? 1 : 2);
    return o;
  }
  // An inverse onesided transform's input bins 0..L/2 (truncated or zero-padded) extended to the
  // whole spectrum by conjugate symmetry: the signal whose real part is the real inverse.
  static void Hermitian(Cx* sig, int64_t length) {
    for (int64_t k = length / 2 + 1; k < length; ++k) sig[k] = std::conj(sig[length - k]);
  }
  // Opset 20 gives the axis as input 2 (a constant, or a value known when it runs), opset 17 as
  // the attribute.
  const Tensor* AxisInput(const KernelContextBase* ctx) const { return ctx->GetOptionalInputTensor(2); }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Plan p;
    if (!MakePlan(ctx, *ctx->GetInputShape(0), ctx->GetOptionalInputTensor(1), AxisInput(ctx), &p)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = OutShape(*ctx->GetInputShape(0), p);
    return GRAPH_SUCCESS;
  }
  // Each signal through weft_dft with the runtime's tables as constants, in double as Execute.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const std::string t = aot::CType(x->GetDataType());
    if (t != "float" && t != "double") return Fail(ctx, std::string("the generated C has no ") + DataTypeName(x->GetDataType()) + " DFT");
    Plan p;
    if (!MakePlan(ctx, x->GetShape(), ctx->GetOptionalInputTensor(1), AxisInput(ctx), &p)) return GRAPH_FAILED;
    if (p.axis < 0) return Fail(ctx, "the generated C needs axis as a constant");
    if (p.length < 0) return Fail(ctx, "the generated C needs dft_length as a constant");
    const Shape& xs = x->GetShape();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < p.axis; ++d) outer *= xs.GetDim(static_cast<size_t>(d));
    for (size_t d = static_cast<size_t>(p.axis) + 1; d + 1 < xs.GetDimNum(); ++d) inner *= xs.GetDim(d);
    if (outer * inner == 0) return GRAPH_SUCCESS;
    const Dft dft(p.length);
    const int64_t n_in = xs.GetDim(static_cast<size_t>(p.axis)), comps = p.complex_in ? 2 : 1, L = p.length;
    const std::string call = EmitDftTables(ctx, dft);
    const std::string scratch = ctx->Scratch(static_cast<size_t>(2 * (2 * L + std::max(L, dft.m()))) * sizeof(double));
    const std::string I = aot::IntLit(inner), LL = aot::IntLit(L), B = aot::IntLit(p.bins);
    const int64_t taken = std::min(n_in, p.irfft() ? L / 2 + 1 : L), out_comps = p.irfft() ? 1 : 2;
    std::string load = "      sig[2 * j] = (double)e[0];\n      sig[2 * j + 1] = " + std::string(comps == 2 ? (p.inverse ? "-(double)e[1]" : "(double)e[1]") : "0.0") + ";\n";
    // The rest of the spectrum by conjugate symmetry (sig holds conjugates already when inverse).
    const std::string extend = p.irfft() ? "    for (j = " + aot::IntLit(L / 2 + 1) + "; j < " + LL + "; ++j) {\n      sig[2 * j] = sig[2 * (" + LL +
                                             " - j)];\n      sig[2 * j + 1] = -sig[2 * (" + LL + " - j) + 1];\n    }\n"
                                       : std::string();
    std::string store = p.inverse ? "      e[0] = (" + t + ")(spec[2 * k] / (double)" + LL + ");\n" +
                                        (p.irfft() ? std::string() : "      e[1] = (" + t + ")(-spec[2 * k + 1] / (double)" + LL + ");\n")
                                  : "      e[0] = (" + t + ")spec[2 * k];\n      e[1] = (" + t + ")spec[2 * k + 1];\n";
    ctx->Run("{\n  const " + t + "* px = " + ctx->Input(0, t.c_str()) + ";\n  " + t + "* py = " + ctx->Output(0, t.c_str()) +
             ";\n  double* sig = (double*)(void*)" + scratch + ";\n  double* spec = sig + 2 * " + LL + ";\n  double* work = spec + 2 * " + LL +
             ";\n  int64_t row, j, k;\n  for (row = 0; row < " + aot::IntLit(outer * inner) + "; ++row) {\n    const int64_t o = row / " + I +
             ", i = row % " + I + ";\n    for (j = 0; j < 2 * " + LL + "; ++j) sig[j] = 0;\n    for (j = 0; j < " + aot::IntLit(taken) +
             "; ++j) {\n      const " + t + "* e = px + ((o * " + aot::IntLit(n_in) + " + j) * " + I + " + i) * " + std::to_string(comps) + ";\n" + load +
             "    }\n" + extend + "    " + call + "sig, spec, work);\n    for (k = 0; k < " + B + "; ++k) {\n      " + t + "* e = py + ((o * " + B + " + k) * " + I +
             " + i) * " + std::to_string(out_comps) + ";\n" + store + "    }\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Plan p;
    if (!MakePlan(ctx, x->GetShape(), ctx->GetOptionalInputTensor(1), AxisInput(ctx), &p)) return GRAPH_FAILED;
    if (p.length < 0) return Fail(ctx, "dft_length must hold one integer");
    Tensor* y = ctx->MallocOutputTensor(0, OutShape(x->GetShape(), p), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const Shape& xs = x->GetShape();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < p.axis; ++d) outer *= xs.GetDim(static_cast<size_t>(d));
    for (size_t d = static_cast<size_t>(p.axis) + 1; d + 1 < xs.GetDimNum(); ++d) inner *= xs.GetDim(d);
    const int64_t n_in = xs.GetDim(static_cast<size_t>(p.axis)), comps = p.complex_in ? 2 : 1;
    if (outer * inner == 0) return GRAPH_SUCCESS;  // no signals: no transform to prepare
    bool ok = DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      const Dft dft(p.length);
      ctx->ParallelFor(outer * inner, 1, [&](int64_t r0, int64_t r1) {
        std::vector<Cx> sig(static_cast<size_t>(p.length)), spec(static_cast<size_t>(p.length)), work;
        for (int64_t row = r0; row < r1; ++row) {
          const int64_t o = row / inner, i = row % inner;
          std::fill(sig.begin(), sig.end(), Cx(0));
          const int64_t taken = std::min(n_in, p.irfft() ? p.length / 2 + 1 : p.length);  // truncated or zero-padded
          for (int64_t j = 0; j < taken; ++j) {
            const T* e = px + ((o * n_in + j) * inner + i) * comps;
            sig[static_cast<size_t>(j)] = Cx(static_cast<double>(Load(e[0])), comps == 2 ? static_cast<double>(Load(e[1])) : 0.0);
          }
          if (p.irfft()) Hermitian(sig.data(), p.length);
          if (p.inverse)
            for (Cx& v : sig) v = std::conj(v);
          dft.Forward(sig.data(), spec.data(), work);
          const int64_t out_comps = p.irfft() ? 1 : 2;
          for (int64_t k = 0; k < p.bins; ++k) {
            Cx v = spec[static_cast<size_t>(k)];
            if (p.inverse) v = std::conj(v) / static_cast<double>(p.length);
            T* e = py + ((o * p.bins + k) * inner + i) * out_comps;
            e[0] = Store<T>(static_cast<typename Compute<T>::type>(v.real()));
            if (!p.irfft()) e[1] = Store<T>(static_cast<typename Compute<T>::type>(v.imag()));
          }
        }
      });
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("type ") + DataTypeName(x->GetDataType()) + " is not supported");
  }
};

// ---- STFT(signal [batch, length, 1|2], frame_step, window?, frame_length?) -> [batch, frames, bins, 2]
class Stft : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  struct Plan {
    int64_t step = -1, frame = -1, frames = -1, bins = -1;
    bool onesided = true, complex_in = false;
  };
  static bool MakePlan(const KernelContextBase* ctx, const Shape& s, const Tensor* step_t, const Shape* window, const Tensor* frame_t, Plan* p) {
    if (s.GetDimNum() != 3 || (s.GetDim(2) != 1 && s.GetDim(2) != 2))
      return Fail(ctx, "signal must be [batch, signal_length, 1 (real) or 2 (complex)], not " + s.ToString()), false;
    p->complex_in = s.GetDim(2) == 2;
    p->onesided = *ctx->GetAttrs()->GetInt("onesided") != 0;
    if (p->onesided && p->complex_in) return Fail(ctx, "onesided takes a real signal (its last dim 1)"), false;
    if (step_t && step_t->GetAddr()) {
      if (!ScalarInt(step_t, &p->step) || p->step <= 0) return Fail(ctx, "frame_step must be one positive integer"), false;
    }
    if (window) {
      if (window->GetDimNum() != 1) return Fail(ctx, "window must be 1-D, not " + window->ToString()), false;
      p->frame = window->GetDim(0);
    }
    if (frame_t && frame_t->GetAddr()) {
      int64_t f = -1;
      if (!ScalarInt(frame_t, &f) || f <= 0) return Fail(ctx, "frame_length must be one positive integer"), false;
      if (p->frame >= 0 && f != p->frame) return Fail(ctx, "frame_length " + std::to_string(f) + " differs from the window's length " + std::to_string(p->frame)), false;
      p->frame = f;
    }
    if (!window && !frame_t) return Fail(ctx, "needs a window or a frame_length"), false;
    const int64_t len = s.GetDim(1);
    if (p->frame > 0 && len >= 0 && p->frame > len)
      return Fail(ctx, "frame length " + std::to_string(p->frame) + " exceeds the signal's " + std::to_string(len) + " samples"), false;
    if (p->frame > (int64_t(1) << 24)) return Fail(ctx, "frame length " + std::to_string(p->frame) + " is larger than 2^24"), false;
    p->frames = p->frame > 0 && p->step > 0 && len >= 0 ? (len - p->frame) / p->step + 1 : -1;
    p->bins = p->frame > 0 ? (p->onesided ? p->frame / 2 + 1 : p->frame) : -1;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Plan p;
    if (!MakePlan(ctx, *ctx->GetInputShape(0), ctx->GetInputTensor(1), ctx->GetOptionalInputShape(2), ctx->GetOptionalInputTensor(3), &p))
      return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({ctx->GetInputShape(0)->GetDim(0), p.frames, p.bins, 2});
    return GRAPH_SUCCESS;
  }
  // Each frame, windowed in double, through weft_dft with the runtime's tables as constants.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* s = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetOptionalInputTensor(2);
    if (w && w->GetShapeSize() < 0) w = nullptr;
    const std::string t = aot::CType(s->GetDataType());
    if (t != "float" && t != "double") return Fail(ctx, std::string("the generated C has no ") + DataTypeName(s->GetDataType()) + " STFT");
    Plan p;
    if (!MakePlan(ctx, s->GetShape(), ctx->GetInputTensor(1), w ? &w->GetShape() : nullptr, ctx->GetOptionalInputTensor(3), &p)) return GRAPH_FAILED;
    if (p.frames < 0 || p.bins < 0) return Fail(ctx, "the generated C needs frame_step and frame_length as constants");
    if (w && w->GetDataType() != s->GetDataType()) return Fail(ctx, "window must have the signal's type");
    const int64_t batch = s->GetShape().GetDim(0), len = s->GetShape().GetDim(1), comps = p.complex_in ? 2 : 1, L = p.frame;
    if (batch * p.frames == 0) return GRAPH_SUCCESS;
    const Dft dft(L);
    const std::string call = EmitDftTables(ctx, dft);
    const std::string scratch = ctx->Scratch(static_cast<size_t>(2 * (2 * L + std::max(L, dft.m()))) * sizeof(double));
    const std::string win = w ? " * (double)pw[j]" : "";
    const std::string F = aot::IntLit(p.frames), LL = aot::IntLit(L), B = aot::IntLit(p.bins);
    ctx->Run("{\n  const " + t + "* ps = " + ctx->Input(0, t.c_str()) + ";\n" +
             (w ? "  const " + t + "* pw = " + ctx->Input(aot::InputAt(ctx, 2), t.c_str()) + ";\n" : std::string()) + "  " + t + "* py = " +
             ctx->Output(0, t.c_str()) + ";\n  double* sig = (double*)(void*)" + scratch + ";\n  double* spec = sig + 2 * " + LL +
             ";\n  double* work = spec + 2 * " + LL + ";\n  int64_t r, j, k;\n  for (r = 0; r < " + aot::IntLit(batch * p.frames) +
             "; ++r) {\n    const int64_t b = r / " + F + ", f = r % " + F + ";\n    " + t + "* o = py + r * " + B + " * 2;\n    for (j = 0; j < " + LL +
             "; ++j) {\n      const " + t + "* e = ps + (b * " + aot::IntLit(len) + " + f * " + aot::IntLit(p.step) + " + j) * " + std::to_string(comps) +
             ";\n      sig[2 * j] = (double)e[0]" + win + ";\n      sig[2 * j + 1] = " + (comps == 2 ? "(double)e[1]" + win : std::string("0.0")) +
             ";\n    }\n    " + call + "sig, spec, work);\n    for (k = 0; k < " + B + "; ++k) {\n      o[2 * k] = (" + t + ")spec[2 * k];\n      o[2 * k + 1] = (" +
             t + ")spec[2 * k + 1];\n    }\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* s = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetOptionalInputTensor(2);
    Plan p;
    if (!MakePlan(ctx, s->GetShape(), ctx->GetInputTensor(1), w ? &w->GetShape() : nullptr, ctx->GetOptionalInputTensor(3), &p)) return GRAPH_FAILED;
    if (p.frames < 0 || p.bins < 0) return Fail(ctx, "frame_step and frame_length must be known when it runs");
    if (w && w->GetDataType() != s->GetDataType()) return Fail(ctx, "window must have the signal's type");
    const int64_t batch = s->GetShape().GetDim(0), len = s->GetShape().GetDim(1), comps = p.complex_in ? 2 : 1;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({batch, p.frames, p.bins, 2}), s->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (batch * p.frames == 0) return GRAPH_SUCCESS;
    bool ok = DispatchFloat(s->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* ps = s->GetData<T>();
      const T* pw = w ? w->GetData<T>() : nullptr;
      T* py = y->GetData<T>();
      const Dft dft(p.frame);
      ctx->ParallelFor(batch * p.frames, 1, [&](int64_t r0, int64_t r1) {
        std::vector<Cx> sig(static_cast<size_t>(p.frame)), spec(static_cast<size_t>(p.frame)), work;
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t b = r / p.frames, f = r % p.frames;
          for (int64_t j = 0; j < p.frame; ++j) {
            const T* e = ps + (b * len + f * p.step + j) * comps;
            const double win = pw ? static_cast<double>(Load(pw[j])) : 1.0;
            sig[static_cast<size_t>(j)] = Cx(static_cast<double>(Load(e[0])) * win, comps == 2 ? static_cast<double>(Load(e[1])) * win : 0.0);
          }
          dft.Forward(sig.data(), spec.data(), work);
          T* o = py + r * p.bins * 2;
          for (int64_t k = 0; k < p.bins; ++k) {
            o[2 * k] = Store<T>(static_cast<typename Compute<T>::type>(spec[static_cast<size_t>(k)].real()));
            o[2 * k + 1] = Store<T>(static_cast<typename Compute<T>::type>(spec[static_cast<size_t>(k)].imag()));
          }
        }
      });
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("type ") + DataTypeName(s->GetDataType()) + " is not supported");
  }
};

// ONNX's output_datatype values for the generators (TensorProto's element types) that we produce.
bool OutputType(const KernelContextBase* ctx, DataType* dt) {
  const int64_t t = *ctx->GetAttrs()->GetInt("output_datatype");
  switch (t) {
    case 1: *dt = DT_FLOAT; return true;
    case 11: *dt = DT_DOUBLE; return true;
    case 10: *dt = DT_FLOAT16; return true;
    case 16: *dt = DT_BF16; return true;
    case 6: *dt = DT_INT32; return true;
    case 7: *dt = DT_INT64; return true;
    case 3: *dt = DT_INT8; return true;
    case 2: *dt = DT_UINT8; return true;
    case 4: *dt = DT_UINT16; return true;
    case 5: *dt = DT_INT16; return true;
    case 12: *dt = DT_UINT32; return true;
    case 13: *dt = DT_UINT64; return true;
    default: return Fail(ctx, "output_datatype " + std::to_string(t) + " is not a numeric type this op writes"), false;
  }
}

graphStatus SetOutputType(InferDataTypeContext* ctx) {
  DataType dt;
  if (!OutputType(ctx, &dt)) return GRAPH_FAILED;
  return ctx->SetOutputDataType(0, dt);
}

template <typename F>
bool WriteValues(Tensor* y, int64_t n, F&& value) {
  return DispatchNumeric(y->GetDataType(), [&](auto tag) {
    using T = decltype(tag);
    T* p = y->GetData<T>();
    for (int64_t i = 0; i < n; ++i) {
      double v = value(i);
      if (std::is_integral<T>::value && v != v) v = 0;  // NaN has no integer value
      p[i] = Store<T>(static_cast<typename Compute<T>::type>(v));
    }
  });
}

// ---- HannWindow / HammingWindow / BlackmanWindow(size) -> [size] --------------------------------
// Hann sin^2(pi n / N), Hamming 25/46 - 21/46 cos(2 pi n / N), Blackman 0.42 - 0.5 cos(2 pi n / N) +
// 0.08 cos(4 pi n / N), with N = size (periodic) or size - 1 (symmetric).
enum class WindowKind { kHann, kHamming, kBlackman };
template <WindowKind kKind>
class WindowOp : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t n = -1;
    const Tensor* t = ctx->GetInputTensor(0);
    if (t && t->GetAddr() && (!ScalarInt(t, &n) || n < 0 || n > (int64_t(1) << 30))) return Fail(ctx, "size must be one integer in [0, 2^30]");
    *ctx->GetOutputShape(0) = Shape({n});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetOutputType(ctx); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    int64_t n = -1;
    if (!ScalarInt(ctx->GetInputTensor(0), &n) || n < 0 || n > (int64_t(1) << 30)) return Fail(ctx, "size must be one integer in [0, 2^30]");
    DataType dt;
    if (!OutputType(ctx, &dt)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({n}), dt);
    if (!y) return GRAPH_FAILED;
    // In double, in the ONNX reference's order of operations (so an integer output type truncates
    // the same values: Blackman's centre is exactly 1).
    const bool periodic = *ctx->GetAttrs()->GetInt("periodic") != 0;
    const double N = static_cast<double>(periodic ? n : n - 1);  // a symmetric window of one sample: 0 / 0, NaN, as ONNX defines it
    WriteValues(y, n, [&](int64_t i) {
      const double k = static_cast<double>(i);
      if (kKind == WindowKind::kHann) {
        const double v = std::sin(k * kPi / N);
        return v * v;
      }
      if (kKind == WindowKind::kHamming) return 25.0 / 46.0 - std::cos(k * kPi * 2 / N) * (1 - 25.0 / 46.0);
      return std::cos(k * (kPi * 2) / N) * -0.5 + std::cos(k * (kPi * 4) / N) * 0.08 + 0.42;
    });
    return GRAPH_SUCCESS;
  }
};

// ---- MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
// -> [dft_length / 2 + 1, num_mel_bins]: triangular filters between mel-spaced band edges
// (mel = 2595 log10(1 + hz / 700)), each edge placed on bin floor((dft_length + 1) hz / sample_rate)
// (an edge past the last bin on the last one).
class MelWeightMatrix : public EagerExecuteOp, public ShapeInferOp {
 public:
  static bool Ints(const KernelContextBase* ctx, int64_t* mel, int64_t* dft, int64_t* rate) {
    if (!ScalarInt(ctx->GetInputTensor(0), mel) || !ScalarInt(ctx->GetInputTensor(1), dft) || !ScalarInt(ctx->GetInputTensor(2), rate)) return false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t mel = -1, dft = -1, rate = -1;
    if (Ints(ctx, &mel, &dft, &rate)) {
      if (mel <= 0 || dft <= 0 || rate <= 0 || mel > (1 << 20) || dft > (1 << 26))
        return Fail(ctx, "num_mel_bins, dft_length and sample_rate must be positive (and moderate)");
      *ctx->GetOutputShape(0) = Shape({dft / 2 + 1, mel});
      return GRAPH_SUCCESS;
    }
    *ctx->GetOutputShape(0) = Shape({-1, -1});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetOutputType(ctx); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    int64_t mel = -1, dft = -1, rate = -1;
    if (!Ints(ctx, &mel, &dft, &rate)) return Fail(ctx, "num_mel_bins, dft_length and sample_rate must each hold one integer");
    if (mel <= 0 || dft <= 0 || rate <= 0 || mel > (1 << 20) || dft > (1 << 26))
      return Fail(ctx, "num_mel_bins, dft_length and sample_rate must be positive (and moderate)");
    double lo = 0, hi = 0;
    auto scalar = [&](size_t k, double* v) {
      const Tensor* t = ctx->GetInputTensor(k);
      if (!t || t->GetShapeSize() != 1) return false;
      return DispatchFloat(t->GetDataType(), [&](auto tag) { *v = static_cast<double>(Load(t->GetData<decltype(tag)>()[0])); });
    };
    if (!scalar(3, &lo) || !scalar(4, &hi)) return Fail(ctx, "lower_edge_hertz and upper_edge_hertz must each hold one number");
    if (!(lo >= 0 && hi >= lo && hi <= static_cast<double>(rate))) return Fail(ctx, "the band edges must satisfy 0 <= lower <= upper <= sample_rate");
    DataType dt;
    if (!OutputType(ctx, &dt)) return GRAPH_FAILED;
    const int64_t bins = dft / 2 + 1;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({bins, mel}), dt);
    if (!y) return GRAPH_FAILED;
    // The ONNX reference's arithmetic: mel_num_bins + 2 points, the band split into that many
    // steps (the last point short of the upper edge), each placed on bin
    // floor((dft_length + 1) * hz / sample_rate).
    const double lo_mel = 2595.0 * std::log1p(lo / 700.0) / std::log(10.0), hi_mel = 2595.0 * std::log1p(hi / 700.0) / std::log(10.0);
    const double step = (hi_mel - lo_mel) / static_cast<double>(mel + 2);
    std::vector<int64_t> edge(static_cast<size_t>(mel + 2));
    for (int64_t i = 0; i < mel + 2; ++i) {
      const double hz = 700.0 * std::expm1((static_cast<double>(i) * step + lo_mel) / 2595.0 * std::log(10.0));
      const int64_t e = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
      edge[static_cast<size_t>(i)] = std::min<int64_t>(std::max<int64_t>(e, 0), bins - 1);
    }
    std::vector<double> w(static_cast<size_t>(bins * mel), 0.0);
    for (int64_t i = 0; i < mel; ++i) {
      const int64_t a = edge[static_cast<size_t>(i)], c = edge[static_cast<size_t>(i + 1)], b = edge[static_cast<size_t>(i + 2)];
      if (c == a) w[static_cast<size_t>(c * mel + i)] = 1.0;
      else
        for (int64_t j = a; j <= c; ++j) w[static_cast<size_t>(j * mel + i)] = static_cast<double>(j - a) / static_cast<double>(c - a);
      if (b > c)
        for (int64_t j = c; j < b; ++j) w[static_cast<size_t>(j * mel + i)] = static_cast<double>(b - j) / static_cast<double>(b - c);
    }
    WriteValues(y, bins * mel, [&](int64_t i) { return w[static_cast<size_t>(i)]; });
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_spectral(std::vector<OpEntry>& out) {
  const TensorType ints = IndexTypes();
  out.push_back({OpDefBuilder("DFT").INPUT(input, FloatTypes()).OPTIONAL_INPUT(dft_length, ints).OPTIONAL_INPUT(axis_input, TensorType({DT_INT64}))
                     .OUTPUT(output, FloatTypes()).SAME_AS_INPUT(input).ATTR(axis, Int, 1).ATTR(inverse, Int, 0).ATTR(onesided, Int, 0).Build(),
                 MakeOpImpl<DftOp>("DFT")});
  out.push_back({OpDefBuilder("STFT").INPUT(signal, FloatTypes()).INPUT(frame_step, ints).OPTIONAL_INPUT(window, FloatTypes())
                     .OPTIONAL_INPUT(frame_length, ints).OUTPUT(output, FloatTypes()).SAME_AS_INPUT(signal).ATTR(onesided, Int, 1).Build(),
                 MakeOpImpl<Stft>("STFT")});
  auto window = [&](const char* name) {
    return OpDefBuilder(name).INPUT(size, ints).OUTPUT(output, NumericTypes()).ATTR(output_datatype, Int, 1).ATTR(periodic, Int, 1).Build();
  };
  out.push_back({window("HannWindow"), MakeOpImpl<WindowOp<WindowKind::kHann>>("HannWindow")});
  out.push_back({window("HammingWindow"), MakeOpImpl<WindowOp<WindowKind::kHamming>>("HammingWindow")});
  out.push_back({window("BlackmanWindow"), MakeOpImpl<WindowOp<WindowKind::kBlackman>>("BlackmanWindow")});
  out.push_back({OpDefBuilder("MelWeightMatrix").INPUT(num_mel_bins, ints).INPUT(dft_length, ints).INPUT(sample_rate, ints)
                     .INPUT(lower_edge_hertz, FloatTypes()).INPUT(upper_edge_hertz, FloatTypes()).OUTPUT(output, NumericTypes())
                     .ATTR(output_datatype, Int, 1).Build(), MakeOpImpl<MelWeightMatrix>("MelWeightMatrix")});
}

}  // namespace weft::ops
