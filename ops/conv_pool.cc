// Convolution and pooling (N-d spatial): Conv, ConvTranspose, MaxPool, AveragePool,
// GlobalAveragePool, GlobalMaxPool. Attributes follow ONNX, including auto_pad, dilations,
// groups and ceil_mode.
// Over 600 lines because the ops share one window geometry (MakeWindow, taps) and each has a
// oneDNN path beside its reference loops; tests/plugins/conv_override.cc builds this file alone.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <limits>

#include <oneapi/dnnl/dnnl.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "aot_emit.h"
#include "dnnl_runner.h"
#include "int8_conv.h"
#include "op_util.h"
#include "vector_math.h"

namespace weft::ops {

// A fused activation over n floats in place; the common ones in loops that vectorize.
WEFT_VMATH_CLONES void ActivateInPlace(const WeftEpilogue& e, float* p, int64_t n) {
  switch (e.activation) {
    case WEFT_ACT_NONE: return;
    case WEFT_ACT_RELU:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] > 0.f ? p[i] : 0.f;
      return;
    case WEFT_ACT_SIGMOID:
      for (int64_t i = 0; i < n; ++i) p[i] = vmath::Sigmoid(p[i]);
      return;
    case WEFT_ACT_TANH:
      for (int64_t i = 0; i < n; ++i) p[i] = vmath::Tanh(p[i]);
      return;
    case WEFT_ACT_SWISH:
      for (int64_t i = 0; i < n; ++i) p[i] = p[i] * vmath::Sigmoid(p[i]);
      return;
    case WEFT_ACT_GELU:
      for (int64_t i = 0; i < n; ++i) p[i] = 0.5f * p[i] * (1.f + vmath::Erf(p[i] * 0.70710678118654752f));
      return;
    case WEFT_ACT_GELU_TANH:
      for (int64_t i = 0; i < n; ++i) p[i] = 0.5f * p[i] * (1.f + vmath::Tanh(0.79788456080286536f * (p[i] + 0.044715f * p[i] * p[i] * p[i])));
      return;
    default: {
      FusedActivation act(e);
      for (int64_t i = 0; i < n; ++i) p[i] = act(p[i]);
    }
  }
}

namespace {

// Spatial geometry shared by conv and pooling.
struct Window {
  size_t nd = 0;  // spatial rank
  int64_t in[WEFT_MAX_DIMS], out[WEFT_MAX_DIMS], k[WEFT_MAX_DIMS], s[WEFT_MAX_DIMS], d[WEFT_MAX_DIMS];
  int64_t pb[WEFT_MAX_DIMS], pe[WEFT_MAX_DIMS];
};

// Fills `w` from attributes for input spatial dims `in` and kernel dims `kernel`.
bool MakeWindow(const KernelContextBase* ctx, const Shape& x, const int64_t* kernel, bool ceil_mode, bool transpose,
                Window* w, std::string* err) {
  const RuntimeAttrs* a = ctx->GetAttrs();
  if (x.GetDimNum() < 3) {
    *err = "input must be [N, C, spatial...], got " + x.ToString();
    return false;
  }
  w->nd = x.GetDimNum() - 2;
  ListView<int64_t> strides = a->GetListInt("strides"), dil = a->GetListInt("dilations"), pads = a->GetListInt("pads");
  std::string auto_pad = a->GetStr("auto_pad") ? a->GetStr("auto_pad") : "NOTSET";
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    *err = "attribute 'auto_pad' is '" + auto_pad + "'; it must be one of 'NOTSET', 'VALID', 'SAME_UPPER', 'SAME_LOWER'";
    return false;
  }
  // Pooling follows ONNX's output-size formula down to an empty output; ORT and ONNX refuse
  // pads as large as the kernel there.
  const bool pool = std::string(ctx->GetNodeType()).find("Pool") != std::string::npos;
  if ((strides.size() && strides.size() != w->nd) || (dil.size() && dil.size() != w->nd) || (pads.size() && pads.size() != 2 * w->nd)) {
    *err = "strides/dilations/pads do not match " + std::to_string(w->nd) + " spatial dims";
    return false;
  }
  for (size_t i = 0; i < w->nd; ++i) {
    w->in[i] = x.GetDim(i + 2);
    w->k[i] = kernel[i];
    w->s[i] = strides.size() ? strides[i] : 1;
    w->d[i] = dil.size() ? dil[i] : 1;
    w->pb[i] = pads.size() ? pads[i] : 0;
    w->pe[i] = pads.size() ? pads[i + w->nd] : 0;
    if (w->k[i] <= 0 || w->s[i] <= 0 || w->d[i] <= 0) {
      *err = std::string(w->k[i] <= 0 ? "kernel_shape (or W's spatial dims)" : w->s[i] <= 0 ? "strides" : "dilations") +
             " must be positive, got " + std::to_string(w->k[i] <= 0 ? w->k[i] : w->s[i] <= 0 ? w->s[i] : w->d[i]) +
             " for spatial dim " + std::to_string(i);
      return false;
    }
    if (w->pb[i] < 0 || w->pe[i] < 0) {
      *err = "pads must not be negative, got " + std::to_string(std::min(w->pb[i], w->pe[i])) + " for spatial dim " + std::to_string(i);
      return false;
    }
    if (pool && auto_pad == "NOTSET" && (w->pb[i] >= w->k[i] || w->pe[i] >= w->k[i])) {
      *err = "pads (" + std::to_string(w->pb[i]) + ", " + std::to_string(w->pe[i]) + ") must be smaller than kernel_shape (" +
             std::to_string(w->k[i]) + ") in spatial dim " + std::to_string(i);
      return false;
    }
    // Every window parameter within 2^31 keeps the arithmetic below far from overflow.
    constexpr int64_t kMaxWindow = int64_t(1) << 31;
    if (w->k[i] > kMaxWindow || w->s[i] > kMaxWindow || w->d[i] > kMaxWindow || std::abs(w->pb[i]) > kMaxWindow ||
        std::abs(w->pe[i]) > kMaxWindow || w->in[i] > (int64_t(1) << 40)) {
      *err = "kernel, strides, dilations, pads or the input size of spatial dim " + std::to_string(i) + " are implausibly large";
      return false;
    }
    int64_t ext = (w->k[i] - 1) * w->d[i] + 1;
    if (transpose) continue;
    if (auto_pad == "VALID") {
      w->pb[i] = w->pe[i] = 0;
      w->out[i] = (w->in[i] - ext) / w->s[i] + 1;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w->out[i] = (w->in[i] + w->s[i] - 1) / w->s[i];
      int64_t total = std::max<int64_t>(0, (w->out[i] - 1) * w->s[i] + ext - w->in[i]);
      w->pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w->pe[i] = total - w->pb[i];
    } else if (auto_pad == "NOTSET" || auto_pad.empty()) {
      int64_t span = w->in[i] + w->pb[i] + w->pe[i] - ext;
      if (ceil_mode) {
        w->out[i] = (span + w->s[i] - 1) / w->s[i] + 1;
        if ((w->out[i] - 1) * w->s[i] >= w->in[i] + w->pb[i]) --w->out[i];
      } else {
        w->out[i] = span / w->s[i] + 1;
      }
    }
    if (pool && w->in[i] + w->pb[i] + w->pe[i] < ext) {
      w->out[i] = 0;  // the window never fits: an empty output, as ONNX's formula gives
      continue;
    }
    if (w->out[i] <= 0 || w->in[i] + w->pb[i] + w->pe[i] < ext) {
      *err = "kernel larger than the padded input";
      return false;
    }
  }
  return true;
}

// Calls f(out_offset, in_spatial_index_of_window_origin...) over every output position;
// iterates kernel taps with g(tap_offset_in_input or -1 when in padding).
template <typename F>
void ForEachOutput(const Window& w, F&& f) {
  int64_t total = 1;
  for (size_t i = 0; i < w.nd; ++i) total *= w.out[i];
  int64_t idx[WEFT_MAX_DIMS] = {0};
  for (int64_t o = 0; o < total; ++o) {
    f(o, idx);
    for (size_t i = w.nd; i-- > 0;) {
      if (++idx[i] < w.out[i]) break;
      idx[i] = 0;
    }
  }
}

// Visits kernel taps of the window at output index `oidx`: t(kernel_linear, input_linear or -1).
template <typename T>
void ForEachTap(const Window& w, const int64_t* oidx, T&& t) {
  int64_t ktotal = 1;
  for (size_t i = 0; i < w.nd; ++i) ktotal *= w.k[i];
  int64_t kidx[WEFT_MAX_DIMS] = {0};
  for (int64_t kk = 0; kk < ktotal; ++kk) {
    int64_t lin = 0;
    bool inside = true;
    for (size_t i = 0; i < w.nd; ++i) {
      int64_t p = oidx[i] * w.s[i] - w.pb[i] + kidx[i] * w.d[i];
      if (p < 0 || p >= w.in[i]) inside = false;
      lin = lin * w.in[i] + p;
    }
    t(kk, inside ? lin : -1);
    for (size_t i = w.nd; i-- > 0;) {
      if (++kidx[i] < w.k[i]) break;
      kidx[i] = 0;
    }
  }
}

int64_t Prod(const int64_t* v, size_t n) {
  int64_t p = 1;
  for (size_t i = 0; i < n; ++i) p *= v[i];
  return p;
}

// The optional bias B (input 2) of Conv/ConvTranspose: one value per output channel.
bool BiasFits(const InferShapeContext* ctx, int64_t out_channels, std::string* err) {
  const Shape* b = ctx->GetOptionalInputShape(2);
  if (b && (b->GetDimNum() != 1 || b->GetDim(0) != out_channels)) {
    *err = "bias B " + b->ToString() + " must be 1-D with one value per output channel (" + std::to_string(out_channels) + ")";
    return false;
  }
  return true;
}

// "static const weft_nchw g = {...};" for a 1-D or 2-D window over x (1-D as a height of 1), with
// m output channels; "" when the window has more spatial dims.
std::string NchwGeometry(const Shape& x, const Window& w, int64_t m, int64_t group) {
  if (w.nd != 1 && w.nd != 2) return "";
  const bool one = w.nd == 1;
  const int64_t v[] = {x.GetDim(0), x.GetDim(1), one ? 1 : w.in[0], w.in[one ? 0 : 1], m, one ? 1 : w.out[0], w.out[one ? 0 : 1],
                       one ? 1 : w.k[0], w.k[one ? 0 : 1], one ? 1 : w.s[0], w.s[one ? 0 : 1], one ? 1 : w.d[0], w.d[one ? 0 : 1],
                       one ? 0 : w.pb[0], w.pb[one ? 0 : 1], group, one ? 0 : w.pe[0], w.pe[one ? 0 : 1]};
  std::string g = "static const weft_nchw g = {";
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); ++i) {
    if (v[i] > INT32_MAX / 4 || v[i] < -(INT32_MAX / 4)) return "";
    g += (i ? ", " : "") + std::to_string(v[i]);
  }
  return g + "};\n";
}

// A window of 1 to 3 spatial dims as three (leading ones of size 1 for 1-D and 2-D).
struct Geometry3 {
  int64_t I[3], O[3], K[3], S[3], D[3], P[3];
  explicit Geometry3(const Window& w) {
    for (size_t d = 0; d < 3; ++d) {
      const bool real = d >= 3 - w.nd;
      const size_t r = real ? d - (3 - w.nd) : 0;
      I[d] = real ? w.in[r] : 1, O[d] = real ? w.out[r] : 1, K[d] = real ? w.k[r] : 1;
      S[d] = real ? w.s[r] : 1, D[d] = real ? w.d[r] : 1, P[d] = real ? w.pb[r] : 0;
    }
  }
  // ConvTranspose's col2im: the input positions along dim d whose tap t lands inside the output: [lo, hi).
  void Range(size_t d, int64_t t, int64_t* lo, int64_t* hi) const {
    const int64_t first = P[d] - t * D[d], last = O[d] - 1 + P[d] - t * D[d];
    *lo = first <= 0 ? 0 : (first + S[d] - 1) / S[d];
    *hi = last < 0 ? 0 : std::min(I[d], last / S[d] + 1);
  }
};

class Conv : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public EmittableOp,
             public FusibleOp, public LayoutAwareOp {
 public:
  // Conv [+ Add] [+ activation]: input Sum takes the residual addend; any activation on float.
  graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& s) override {
    s.SumInput(3);
    if (IsFloating(ctx->GetInputDataType(0))) AbsorbAllActivations(s);
    return GRAPH_SUCCESS;
  }
  // The oneDNN path of a float32 2-D convolution with constant weights reads X and Sum and
  // writes Y in the channel-blocked layout as readily as the plain one.
  // The channel-blocked layout (nChw16c) is chosen only where oneDNN has a fast kernel for this
  // convolution with it: where only its reference kernel takes the layout (grouped and
  // depthwise convolutions on some CPUs) it is declared slow, and keeping the tensors plain lets
  // oneDNN pick the layout of its own fast kernel.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetRequiredInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    if (x->GetDataType() != DT_FLOAT || x->GetShape().GetDimNum() != 4 || !wt || !wt->GetAddr() || (b && b->GetAddr() == nullptr))
      return GRAPH_SUCCESS;
    auto fast = [&](bool in, bool out) {
      try {
        Plan p;
        return MakePlan(ctx, in, out, &p) && std::string(p.pd.impl_info_str()).rfind("ref", 0) != 0;
      } catch (const dnnl::error&) {
        return false;
      }
    };
    const bool both = fast(true, true), in_only = fast(true, false), out_only = fast(false, true);
    if (!both && out_only) {
      // Fast writing the blocked layout from a plain input, not reading it (a first layer with
      // three input channels): the output and the residual operand may be blocked, the input not.
      s.Format(FORMAT_NC1HWC0).Input(3).Output(0);
      return GRAPH_SUCCESS;
    }
    s.Format(FORMAT_NC1HWC0).Input(0).Input(3).Output(0);
    if (!both) s.Together().Slow();  // runs, through oneDNN's reference kernel
    else if (!in_only || !out_only) s.Together();  // fast only with both sides blocked
    return GRAPH_SUCCESS;
  }

  // The oneDNN convolution for this node, with src/dst in the blocked layout or as oneDNN likes.
  struct Plan {
    size_t nd = 0;
    int64_t m = 0, group = 1;
    dnnl::memory::dims src, dst, wd;
    dnnl::memory::desc src_md, dst_md, bias_md;
    dnnl::convolution_forward::primitive_desc pd;
    bool activation_after = false;  // the fused activation runs as its own step after pd
    bool winograd_by_default = false;  // Winograd chosen by weft.conv_algorithm=auto (Compile times it)
    std::string key;                   // everything the choice between kernels depends on
  };
  static bool MakePlan(const KernelContextBase* ctx, bool blocked_in, bool blocked_out, Plan* p, bool allow_winograd = true) {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetRequiredInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    bool sum = ctx->GetOptionalInputTensor(3) != nullptr;
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), wt->GetShape(), &w, &err) || w.nd < 1 || w.nd > 3) return false;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    // A 1-D convolution runs as 2-D with a height of 1 (the same memory): oneDNN's fast kernels
    // for 1-D shapes are few, and its 2-D ones cover every stride, dilation and group.
    const bool lift = w.nd == 1;
    p->nd = lift ? 2 : w.nd;
    p->group = *ctx->GetAttrs()->GetInt("group");
    const Shape& xs = x->GetShape();
    const Shape& ws = wt->GetShape();
    p->m = ws.GetDim(0);
    dnnl::memory::dims strides, dil, pl, pr;
    p->src = {xs.GetDim(0), xs.GetDim(1)};
    p->dst = {xs.GetDim(0), p->m};
    if (p->group > 1) p->wd = {p->group, p->m / p->group, ws.GetDim(1)};
    else p->wd = {p->m, ws.GetDim(1)};
    if (lift) {
      p->src.push_back(1);
      p->dst.push_back(1);
      p->wd.push_back(1);
      strides.push_back(1);
      dil.push_back(0);
      pl.push_back(0);
      pr.push_back(0);
    }
    for (size_t i = 0; i < w.nd; ++i) {
      p->src.push_back(w.in[i]);
      p->dst.push_back(w.out[i]);
      p->wd.push_back(w.k[i]);
      strides.push_back(w.s[i]);
      dil.push_back(w.d[i] - 1);
      pl.push_back(w.pb[i]);
      pr.push_back(w.pe[i]);
    }
    const tag act_tags[] = {tag::ncw, tag::nchw, tag::ncdhw};
    // Let oneDNN choose blocked layouts; plain NCHW is reordered in and out around the kernel,
    // except where the layout pass found that neighbours can exchange the channel-blocked
    // layout (nChw16c) directly.
    dnnl::memory::desc src_blk(p->src, dt::f32, tag::nChw16c), dst_blk(p->dst, dt::f32, tag::nChw16c);
    p->src_md = blocked_in ? src_blk : dnnl::memory::desc(p->src, dt::f32, act_tags[p->nd - 1]);
    p->dst_md = blocked_out ? dst_blk : dnnl::memory::desc(p->dst, dt::f32, act_tags[p->nd - 1]);
    dnnl::memory::desc src_k = blocked_in ? src_blk : dnnl::memory::desc(p->src, dt::f32, tag::any);
    dnnl::memory::desc dst_k = blocked_out ? dst_blk : dnnl::memory::desc(p->dst, dt::f32, tag::any);
    dnnl::memory::desc w_any(p->wd, dt::f32, tag::any);
    p->bias_md = dnnl::memory::desc({p->m}, dt::f32, tag::x);
    auto make_desc = [&](dnnl::algorithm algo) {
      return b ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algo, src_k, w_any, p->bias_md, dst_k,
                                                 strides, dil, pl, pr)
               : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algo, src_k, w_any, dst_k, strides,
                                                 dil, pl, pr);
    };
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_post_ops(FusedPostOps(ctx->GetEpilogue(), sum));
    // 3x3, stride 1, undilated 2-D convolutions use oneDNN's Winograd kernels (about twice the
    // throughput of the direct ones at batch 1; the transform costs ~1e-6 relative accuracy)
    // unless the session option weft.conv_algorithm is "direct". Others, and configurations
    // Winograd cannot run, use the direct kernels. With "auto" (the default) Winograd is also
    // left out where it does not pay: its input and output transforms cost in proportion to
    // C + M per tile against C * M for the product, so with fewer than 16 input or output
    // channels (a network's first layer) the direct kernels are 1.5-3x faster; and a plane of
    // fewer than 16 outputs fills a fraction of its 4x4 output tiles.
    for (const auto* dims : {&p->src, &p->dst, &p->wd, &strides, &dil, &pl, &pr})
      for (int64_t d : *dims) p->key += std::to_string(d) + ",";
    const WeftEpilogue ep = ctx->GetEpilogue();
    p->key += std::to_string(blocked_in) + std::to_string(blocked_out) + std::to_string(sum) + "," + std::to_string(ep.activation) + "," +
              std::to_string(omp_get_max_threads());
    const char* algo_opt = ctx->GetOption("weft.conv_algorithm");
    const std::string algo = algo_opt ? algo_opt : "auto";
    bool three = w.nd == 2 && ws.GetDim(2) == 3 && ws.GetDim(3) == 3;
    for (size_t i = 0; i < w.nd; ++i) three = three && w.s[i] == 1 && w.d[i] == 1;
    const bool pays = std::min(ws.GetDim(0), ws.GetDim(1)) >= 16 && w.nd == 2 && w.out[0] * w.out[1] >= 16;
    bool wino = allow_winograd && three && p->group == 1 && algo != "direct" && (algo == "winograd" || pays);
    if (wino) {
      // oneDNN's Winograd kernels apply a transcendental post-op (tanh, sigmoid, ...) slowly
      // (a tanh made a 64->32 channel 224x224 layer twice as slow); those run as a separate
      // eltwise step instead.
      const bool after = !CheapActivation(ctx->GetEpilogue());
      dnnl::primitive_attr wattr;
      wattr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      wattr.set_post_ops(FusedPostOps(ctx->GetEpilogue(), sum, !after));
      try {
        p->pd = dnnl::convolution_forward::primitive_desc(make_desc(dnnl::algorithm::convolution_winograd), wattr, CpuEngine());
        p->activation_after = after;
        p->winograd_by_default = algo != "winograd";
      } catch (const dnnl::error&) {
        wino = false;
      }
    }
    if (!wino) p->pd = dnnl::convolution_forward::primitive_desc(make_desc(dnnl::algorithm::convolution_direct), attr, CpuEngine());
    return true;
  }

  // float32 fast path: a oneDNN convolution with weights prepacked once, bias, the fused residual
  // sum and activation as post-ops. Anything else runs the reference loops below.
  graphStatus Compile(OpCompileContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetRequiredInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    bool sum = ctx->GetOptionalInputTensor(3) != nullptr;
    if (x->GetDataType() != DT_FLOAT || !wt->GetAddr() || (b && !b->GetAddr())) return GRAPH_SUCCESS;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    int threads = ApplyIntraOpThreads(ctx);
    try {
      const Tensor* sum_t = ctx->GetOptionalInputTensor(3);
      bool blocked_in = x->GetFormat() == FORMAT_NC1HWC0, blocked_out = ctx->GetOutputTensor(0)->GetFormat() == FORMAT_NC1HWC0;
      bool blocked_sum = sum_t && sum_t->GetFormat() == FORMAT_NC1HWC0;
      Plan plan;
      if (!MakePlan(ctx, blocked_in, blocked_out, &plan)) return GRAPH_SUCCESS;
      // Winograd is not faster for every shape it takes (on one CPU, a 448->384 channel layer on
      // an 8x8 plane ran 1.6x slower than the direct kernel, while 256->256 on 14x14 ran 1.3x
      // faster): where weft.conv_algorithm leaves the choice, both run here and the faster stays.
      if (plan.winograd_by_default) {
        Plan direct;
        if (MakePlan(ctx, blocked_in, blocked_out, &direct, false) && DirectIsFaster(direct, plan)) plan = std::move(direct);
      }
      const size_t nd = plan.nd;
      const int64_t group = plan.group, m = plan.m;
      const dnnl::memory::dims& wd = plan.wd;
      const dnnl::memory::dims& dst = plan.dst;
      const dnnl::memory::desc& src_md = plan.src_md;
      const dnnl::memory::desc& dst_md = plan.dst_md;
      const dnnl::memory::desc& bias_md = plan.bias_md;
      const dnnl::memory::desc dst_blk(dst, dt::f32, tag::nChw16c);
      const dnnl::convolution_forward::primitive_desc& pd = plan.pd;
      const tag act_tags[] = {tag::ncw, tag::nchw, tag::ncdhw};
      const tag w_tags[] = {tag::oiw, tag::oihw, tag::oidhw};
      const tag gw_tags[] = {tag::goiw, tag::goihw, tag::goidhw};
      dnnl::memory w_plain({wd, dt::f32, group > 1 ? gw_tags[nd - 1] : w_tags[nd - 1]}, CpuEngine(), const_cast<void*>(wt->GetAddr()));
      weights_ = PackedWeights(pd.weights_desc(), CpuEngine());
      dnnl::stream st(CpuEngine());
      dnnl::reorder(w_plain, weights_).execute(st, w_plain, weights_);
      st.wait();
      if (blocked_out && ctx->SetOutputStorage(0, dst_blk.get_size(), FORMAT_NC1HWC0) != GRAPH_SUCCESS) return GRAPH_FAILED;
      int x_slot = runner_.AddBound(src_md);
      int y_slot = runner_.AddBound(dst_md);
      int src_slot = Relayout(runner_, x_slot, src_md, pd.src_desc());
      int dst_slot = pd.dst_desc() == dst_md ? y_slot : runner_.AddTemp(pd.dst_desc());
      if (sum) {  // the sum post-op accumulates into dst: copy the residual operand there first
        dnnl::memory::desc sum_md = blocked_sum ? dnnl::memory::desc(dst, dt::f32, tag::nChw16c)
                                                : dnnl::memory::desc(dst, dt::f32, act_tags[nd - 1]);
        int sum_slot = runner_.AddBound(sum_md);
        dnnl::reorder::primitive_desc rp(CpuEngine(), sum_md, CpuEngine(), pd.dst_desc());
        runner_.AddStep(dnnl::reorder(rp), {{DNNL_ARG_FROM, sum_slot}, {DNNL_ARG_TO, dst_slot}});
      }
      std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, src_slot}, {DNNL_ARG_WEIGHTS, runner_.AddFixed(weights_)}, {DNNL_ARG_DST, dst_slot}};
      if (b) {
        bias_ = dnnl::memory(bias_md, CpuEngine());
        std::memcpy(bias_.get_data_handle(), b->GetAddr(), static_cast<size_t>(m) * sizeof(float));
        args.push_back({DNNL_ARG_BIAS, runner_.AddFixed(bias_)});
      }
      runner_.AddStep(dnnl::convolution_forward(pd), args, pd.scratchpad_desc());
      if (plan.activation_after)
        for (const EltwiseOp& op : ActivationEltwise(ctx->GetEpilogue())) {
          dnnl::eltwise_forward::primitive_desc epd(
              dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, op.alg, pd.dst_desc(), op.alpha, op.beta), CpuEngine());
          runner_.AddStep(dnnl::eltwise_forward(epd), {{DNNL_ARG_SRC, dst_slot}, {DNNL_ARG_DST, dst_slot}});
        }
      if (dst_slot != y_slot) {
        dnnl::reorder::primitive_desc rp(CpuEngine(), pd.dst_desc(), CpuEngine(), dst_md);
        runner_.AddStep(dnnl::reorder(rp), {{DNNL_ARG_FROM, dst_slot}, {DNNL_ARG_TO, y_slot}});
      }
      runner_.Finish(threads);
    } catch (const dnnl::error& e) {
      // Unsupported configuration: the reference path runs instead, unless the graph relies on
      // this node exchanging the blocked layout.
      const Tensor* sum_t = ctx->GetOptionalInputTensor(3);
      if (x->GetFormat() == FORMAT_NC1HWC0 || ctx->GetOutputTensor(0)->GetFormat() == FORMAT_NC1HWC0 ||
          (sum_t && sum_t->GetFormat() == FORMAT_NC1HWC0)) {
        ctx->SetError(std::string("oneDNN cannot run this convolution in the blocked layout: ") + e.what());
        return GRAPH_FAILED;
      }
    }
    return GRAPH_SUCCESS;
  }

  // Whether the direct plan should replace the Winograd one: direct runs at least 10% faster (the
  // margin keeps near ties from flipping between compiles). The answer is kept per configuration
  // for the process, so a layer compiled again (a model file loaded, a second session) runs the
  // same kernel and gives the same bits.
  static bool DirectIsFaster(const Plan& direct, const Plan& winograd) {
    static std::mutex mu;
    static std::unordered_map<std::string, bool> decided;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (auto it = decided.find(winograd.key); it != decided.end()) return it->second;
    }
    double t[2];
    Time(direct, winograd, t);
    const bool faster = t[0] < 0.9 * t[1];
    std::lock_guard<std::mutex> lock(mu);
    return decided.emplace(winograd.key, faster).first->second;
  }
  // The time of plan a's and b's convolutions: the fastest of up to five interleaved runs each
  // (fewer for slow layers: about 50 ms of timing in all), after one untimed run each, on zeroed
  // buffers in the layouts each primitive reads and writes (the reorders around it are the same
  // for both), on the session's intra-op threads.
  static void Time(const Plan& a, const Plan& b, double* seconds) {
    using clock = std::chrono::steady_clock;
    struct Bench {
      dnnl::convolution_forward prim;
      std::unordered_map<int, dnnl::memory> args;
      double best = 1e300;
    };
    Bench run[2];
    const Plan* plans[2] = {&a, &b};
    for (int k = 0; k < 2; ++k) {
      const auto& pd = plans[k]->pd;
      run[k].prim = dnnl::convolution_forward(pd);
      auto zeroed = [](const dnnl::memory::desc& d) {
        dnnl::memory mem(d, CpuEngine());
        if (d.get_size()) std::memset(mem.get_data_handle(), 0, d.get_size());
        return mem;
      };
      run[k].args = {{DNNL_ARG_SRC, zeroed(pd.src_desc())}, {DNNL_ARG_WEIGHTS, zeroed(pd.weights_desc())},
                     {DNNL_ARG_DST, zeroed(pd.dst_desc())}, {DNNL_ARG_SCRATCHPAD, zeroed(pd.scratchpad_desc())}};
      if (!pd.bias_desc().is_zero()) run[k].args[DNNL_ARG_BIAS] = zeroed(pd.bias_desc());
    }
    dnnl::stream st(CpuEngine());
    int rounds = 6;
    for (int round = 0; round < rounds; ++round) {
      double took = 0;
      for (Bench& r : run) {
        auto t0 = clock::now();
        r.prim.execute(st, r.args);
        st.wait();
        const double t = std::chrono::duration<double>(clock::now() - t0).count();
        took += t;
        if (round) r.best = std::min(r.best, t);
      }
      if (!round) rounds = 1 + static_cast<int>(std::clamp(0.05 / std::max(took, 1e-9), 1.0, 5.0));
    }
    seconds[0] = run[0].best;
    seconds[1] = run[1].best;
  }

  static bool Geometry(const KernelContextBase* ctx, const Shape& x, const Shape& wt, Window* w, std::string* err) {
    if (wt.GetDimNum() != x.GetDimNum()) {
      *err = "W " + wt.ToString() + " and X " + x.ToString() + " differ in rank";
      return false;
    }
    int64_t group = *ctx->GetAttrs()->GetInt("group"), channels = 0;
    if (group <= 0 || __builtin_mul_overflow(wt.GetDim(1), group, &channels) || x.GetDim(1) != channels || wt.GetDim(0) % group) {
      *err = "channels do not match: X " + x.ToString() + ", W " + wt.ToString() + ", group " + std::to_string(group);
      return false;
    }
    int64_t kernel[WEFT_MAX_DIMS];
    ListView<int64_t> ks = ctx->GetAttrs()->GetListInt("kernel_shape");
    for (size_t i = 2; i < wt.GetDimNum(); ++i) {
      kernel[i - 2] = wt.GetDim(i);
      if (ks.size() && (ks.size() != wt.GetDimNum() - 2 || ks[i - 2] != wt.GetDim(i))) {
        *err = "kernel_shape disagrees with W";
        return false;
      }
    }
    return MakeWindow(ctx, x, kernel, false, false, w, err);
  }
  // float32 1-D and 2-D convolutions with groups through weft_conv_nchw_f32 (no fused sum or
  // activation: weft aot compiles without fusion).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(1);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), wt->GetShape(), &w, &err)) return Fail(ctx, err);
    if (x->GetDataType() != DT_FLOAT || ctx->GetOptionalInputTensor(3) || ctx->GetEpilogue().activation != WEFT_ACT_NONE)
      return Fail(ctx, "the generated C takes float32 convolutions without fused operations");
    const std::string g = NchwGeometry(x->GetShape(), w, wt->GetShape().GetDim(0), *ctx->GetAttrs()->GetInt("group"));
    if (g.empty()) return Fail(ctx, "the generated C convolves 1-D and 2-D inputs of moderate size only");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_conv_nchw_f32");
    ctx->Run(g + "weft_conv_nchw_f32(&g, " + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " +
             (ctx->GetOptionalInputTensor(2) ? ctx->Input(2, "float") : std::string("0")) + ", " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Window w;
    std::string err;
    if (!Geometry(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), &w, &err)) return Fail(ctx, err);
    int64_t m = ctx->GetInputShape(1)->GetDim(0);
    if (!BiasFits(ctx, m, &err)) return Fail(ctx, err);
    Shape out({ctx->GetInputShape(0)->GetDim(0), m});
    for (size_t i = 0; i < w.nd; ++i) out.AppendDim(w.out[i]);
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), wt->GetShape(), &w, &err)) return Fail(ctx, err);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const Tensor* sum = ctx->GetOptionalInputTensor(3);
    if (sum && sum->GetShape() != y->GetShape()) return Fail(ctx, "fused sum operand shape differs from the output");
    if (runner_.ready()) {
      void* ptrs[3] = {const_cast<void*>(x->GetAddr()), y->GetAddr(), sum ? const_cast<void*>(sum->GetAddr()) : nullptr};
      return runner_.Run(ctx, ptrs) ? GRAPH_SUCCESS : GRAPH_FAILED;
    }
    FusedActivation act(ctx);
    int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1), m = wt->GetShape().GetDim(0);
    int64_t group = *ctx->GetAttrs()->GetInt("group"), cg = c / group, mg = m / group;
    int64_t in_sp = Prod(w.in, w.nd), out_sp = Prod(w.out, w.nd), k_sp = Prod(w.k, w.nd);
    // Tap table: for each output position and kernel tap, the input offset or -1.
    auto* taps = static_cast<int64_t*>(ctx->MallocWorkSpace(static_cast<size_t>(out_sp * k_sp) * sizeof(int64_t)));
    if (!taps) return GRAPH_FAILED;
    ForEachOutput(w, [&](int64_t o, const int64_t* oidx) { ForEachTap(w, oidx, [&](int64_t kk, int64_t lin) { taps[o * k_sp + kk] = lin; }); });
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = std::conditional_t<std::is_same<T, double>::value, double, float>;
      const T* px = x->GetData<T>();
      const T* pw = wt->GetData<T>();
      T* py = y->GetData<T>();
      for (int64_t in = 0; in < n; ++in)
        for (int64_t g = 0; g < group; ++g)
          for (int64_t om = 0; om < mg; ++om) {
            int64_t mm = g * mg + om;
            C bias = b ? C(Load(b->GetData<T>()[mm])) : C(0);
            for (int64_t o = 0; o < out_sp; ++o) {
              C acc = bias;
              const int64_t* t = taps + o * k_sp;
              for (int64_t ic = 0; ic < cg; ++ic) {
                const T* xc = px + (in * c + g * cg + ic) * in_sp;
                const T* wc = pw + (mm * cg + ic) * k_sp;
                for (int64_t kk = 0; kk < k_sp; ++kk)
                  if (t[kk] >= 0) acc += C(Load(xc[t[kk]])) * C(Load(wc[kk]));
              }
              int64_t at = (in * m + mm) * out_sp + o;
              if (sum) acc += C(Load(sum->GetData<T>()[at]));
              py[at] = Store<T>(static_cast<typename Compute<T>::type>(act(acc)));
            }
          }
    });
    return GRAPH_SUCCESS;
  }

 private:
  DnnlRunner runner_;
  dnnl::memory weights_, bias_;
};

class ConvTranspose : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public EmittableOp,
                      public FusibleOp {
 public:
  // float32 1-D, 2-D and 3-D transposed convolutions with groups, dilations, pads, output_padding
  // and output_shape through weft_conv_transpose_f32 (ops/aot/conv_transpose.c), on the geometry
  // InferShape and Execute take (Geometry).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), wt->GetShape(), &w, &err)) return Fail(ctx, err);
    if (x->GetDataType() != DT_FLOAT || wt->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT) ||
        ctx->GetEpilogue().activation != WEFT_ACT_NONE)
      return Fail(ctx, "the generated C takes float32 transposed convolutions without fused operations");
    if (w.nd < 1 || w.nd > 3) return Fail(ctx, "the generated C takes transposed convolutions of 1 to 3 spatial dims only");
    const int64_t group = *ctx->GetAttrs()->GetInt("group");
    const Shape& xs = x->GetShape();
    const size_t lead = 3 - w.nd;  // 1-D and 2-D as leading spatial dims of 1
    bool fits = true;
    auto lit = [&](int64_t v) {
      fits = fits && v <= INT32_MAX / 4 && v >= -(INT32_MAX / 4);
      return std::to_string(v);
    };
    auto dims = [&](const int64_t* a, int64_t one) {
      std::string t;
      for (size_t i = 0; i < 3; ++i) t += (i ? ", " : "") + lit(i < lead ? one : a[i - lead]);
      return ", {" + t + "}";
    };
    std::string g = "static const weft_convt g = {" + lit(xs.GetDim(0)) + ", " + lit(xs.GetDim(1)) + ", " +
                    lit(wt->GetShape().GetDim(1) * group) + ", " + lit(group) + dims(w.in, 1) + dims(w.out, 1) + dims(w.k, 1) +
                    dims(w.s, 1) + dims(w.d, 1) + dims(w.pb, 0) + "};\n";
    for (size_t i = 0; i < w.nd; ++i)  // the numerators o + p - t * d stay within int32
      lit(w.out[i] + std::abs(w.pb[i]) + (w.k[i] - 1) * w.d[i]);
    if (!fits) return Fail(ctx, "the generated C takes transposed convolutions of moderate size only");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_conv_transpose_f32");
    ctx->Run(g + "weft_conv_transpose_f32(&g, " + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " +
             (b ? ctx->Input(2, "float") : std::string("0")) + ", " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  // ConvTranspose [+ activation] on float: every path applies the fused activation.
  graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& s) override {
    if (IsFloating(ctx->GetInputDataType(0))) AbsorbAllActivations(s);
    return GRAPH_SUCCESS;
  }
  // float32 with constant weights has two fast paths, both prepared here:
  // - GEMM + col2im: Z[g][M/g * KK, HW] = W_g^T X_g per image and group, then each output
  //   channel's plane is its bias plus the sum of its taps' planes placed at their strides;
  // - oneDNN's deconvolution (1-3 spatial dims, pads not negative), weights reordered once.
  // Where both are ready the faster one on this machine and shape is kept (timed once, here).
  // Anything else runs the reference loops below.
  graphStatus Compile(OpCompileContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetRequiredInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    if (x->GetDataType() != DT_FLOAT || !wt->GetAddr() || (b && !b->GetAddr()) || x->GetShape().IsUnknown()) return GRAPH_SUCCESS;
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), wt->GetShape(), &w, &err) || w.nd < 1 || w.nd > 3) return GRAPH_SUCCESS;
    PrepareGemm(ctx, wt, b, w);
    CompileDnnl(ctx, x, wt, b, w);
    if (gemm_) CompileMatmul(ctx, x, w);
    // The session option weft.conv_transpose_path = gemm | matmul | onednn keeps that path where it
    // is ready (docs/runtime.md; Session::Create checks the value); auto times the ready ones.
    const char* force = ctx->GetOption("weft.conv_transpose_path");
    const std::string forced = force ? force : "";
    const int ready = (gemm_ ? 1 : 0) + (runner_.ready() ? 1 : 0) + (mm_runner_.ready() ? 1 : 0);
    if (forced == "gemm" && gemm_) path_ = kGemm;
    else if (forced == "onednn" && runner_.ready()) path_ = kDnnl;
    else if (forced == "matmul" && mm_runner_.ready()) path_ = kMatmul;
    else if (ready > 1) path_ = kUndecided;
    else path_ = gemm_ ? kGemm : runner_.ready() ? kDnnl : kReference;
    return GRAPH_SUCCESS;
  }
  // The matmul path (one group only): per image Z^T[HW, M * KK] = X^T W' through oneDNN's matmul
  // with W' [C, M * KK] (ONNX's W as it is) prepacked once in the layout the primitive reads
  // fastest; X^T is X read with transposed strides. Products with few input positions (the first
  // layers of generators and decoders) stream the packed weights once, where sgemm repacks them
  // on every call. Kept only where oneDNN has an optimized kernel for it.
  void CompileMatmul(OpCompileContext* ctx, const Tensor* x, const Window& w) {
    using dt = dnnl::memory::data_type;
    const Tensor* wt = ctx->GetRequiredInputTensor(1);
    const int64_t group = *ctx->GetAttrs()->GetInt("group");
    const int64_t c = x->GetShape().GetDim(1), mk = wt->GetShape().GetDim(1) * Prod(w.k, w.nd), in_sp = Prod(w.in, w.nd);
    if (group != 1 || c == 0 || mk == 0 || in_sp == 0) return;
    int threads = ApplyIntraOpThreads(ctx);
    try {
      dnnl::memory::desc src({in_sp, c}, dt::f32, dnnl::memory::dims{1, in_sp});
      dnnl::memory::desc w_plain_md({c, mk}, dt::f32, dnnl::memory::format_tag::ab);
      dnnl::memory::desc dst({in_sp, mk}, dt::f32, dnnl::memory::format_tag::ab);
      dnnl::memory::desc w_any({c, mk}, dt::f32, dnnl::memory::format_tag::any);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, w_any, dst), attr, CpuEngine());
      if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) return;
      dnnl::memory w_plain(w_plain_md, CpuEngine(), const_cast<void*>(wt->GetAddr()));
      mm_weights_ = PackedWeights(pd.weights_desc(), CpuEngine());
      dnnl::stream st(CpuEngine());
      dnnl::reorder(w_plain, mm_weights_).execute(st, w_plain, mm_weights_);
      st.wait();
      int x_slot = mm_runner_.AddBound(src);
      int z_slot = mm_runner_.AddBound(dst);
      mm_runner_.AddStep(dnnl::matmul(pd), {{DNNL_ARG_SRC, x_slot}, {DNNL_ARG_WEIGHTS, mm_runner_.AddFixed(mm_weights_)}, {DNNL_ARG_DST, z_slot}},
                         pd.scratchpad_desc());
      mm_runner_.Finish(threads);
    } catch (const dnnl::error&) {
      // Not ready: the other paths run instead.
    }
  }
  // The GEMM + col2im path's weights: per group [M/g * KK, C/g] (ONNX's W is [C, M/g, k...]).
  // Skipped when its column buffer would exceed 256 MiB.
  void PrepareGemm(OpCompileContext* ctx, const Tensor* wt, const Tensor* b, const Window& w) {
    const Shape& ws = wt->GetShape();
    const int64_t group = *ctx->GetAttrs()->GetInt("group");
    const int64_t c = ws.GetDim(0), mg = ws.GetDim(1), m = mg * group, cg = c / group, kk = Prod(w.k, w.nd);
    const int64_t in_sp = Prod(w.in, w.nd);
    if (static_cast<double>(m) * kk * in_sp * sizeof(float) > 256.0 * 1024 * 1024) return;
    gemm_w_.assign(static_cast<size_t>(m * kk * cg), 0.f);
    const float* pw = wt->GetData<float>();
    for (int64_t g = 0; g < group; ++g)
      for (int64_t ic = 0; ic < cg; ++ic)  // [cg, mg*KK] -> [mg*KK, cg]
        for (int64_t r = 0; r < mg * kk; ++r)
          gemm_w_[static_cast<size_t>((g * mg * kk + r) * cg + ic)] = pw[(g * cg + ic) * mg * kk + r];
    gemm_b_.assign(static_cast<size_t>(m), 0.f);
    if (b) std::memcpy(gemm_b_.data(), b->GetAddr(), static_cast<size_t>(m) * sizeof(float));
    gemm_ = true;
  }
  void CompileDnnl(OpCompileContext* ctx, const Tensor* x, const Tensor* wt, const Tensor* b, const Window& w) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const Shape& xs = x->GetShape();
    const Shape& ws = wt->GetShape();
    int64_t group = *ctx->GetAttrs()->GetInt("group");
    int64_t c = xs.GetDim(1), mg = ws.GetDim(1), m = mg * group, cg = c / group;
    dnnl::memory::dims src{xs.GetDim(0), c}, dst{xs.GetDim(0), m}, strides, dil, pl, pr, wd;
    if (group > 1) wd = {group, mg, cg};
    else wd = {m, c};
    int64_t k_sp = 1;
    for (size_t i = 0; i < w.nd; ++i) {
      int64_t ext = (w.k[i] - 1) * w.d[i] + 1;
      int64_t right = (w.in[i] - 1) * w.s[i] + ext - w.pb[i] - w.out[i];  // output_padding included
      if (w.pb[i] < 0 || right < 0) return;
      src.push_back(w.in[i]);
      dst.push_back(w.out[i]);
      wd.push_back(w.k[i]);
      strides.push_back(w.s[i]);
      dil.push_back(w.d[i] - 1);
      pl.push_back(w.pb[i]);
      pr.push_back(right);
      k_sp *= w.k[i];
    }
    int threads = ApplyIntraOpThreads(ctx);
    try {
      const tag act_tags[] = {tag::ncw, tag::nchw, tag::ncdhw};
      const tag w_tags[] = {tag::oiw, tag::oihw, tag::oidhw};
      const tag gw_tags[] = {tag::goiw, tag::goihw, tag::goidhw};
      dnnl::memory::desc src_md(src, dt::f32, act_tags[w.nd - 1]), dst_md(dst, dt::f32, act_tags[w.nd - 1]);
      dnnl::memory::desc bias_md({m}, dt::f32, tag::x);
      dnnl::memory::desc src_any(src, dt::f32, tag::any), dst_any(dst, dt::f32, tag::any), w_any(wd, dt::f32, tag::any);
      auto d = b ? dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, src_any,
                                                     w_any, bias_md, dst_any, strides, dil, pl, pr)
                 : dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, src_any,
                                                     w_any, dst_any, strides, dil, pl, pr);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::deconvolution_forward::primitive_desc pd(d, attr, CpuEngine());
      // ONNX's W is [C, M/group, k...] (input channel first); oneDNN's is [g, out, in, k...].
      std::vector<float> w_oi(static_cast<size_t>(m * cg * k_sp));
      const float* pw = wt->GetData<float>();
      for (int64_t g = 0; g < group; ++g)
        for (int64_t ic = 0; ic < cg; ++ic)
          for (int64_t om = 0; om < mg; ++om)
            std::memcpy(&w_oi[static_cast<size_t>(((g * mg + om) * cg + ic) * k_sp)], pw + ((g * cg + ic) * mg + om) * k_sp,
                        static_cast<size_t>(k_sp) * sizeof(float));
      dnnl::memory w_plain({wd, dt::f32, group > 1 ? gw_tags[w.nd - 1] : w_tags[w.nd - 1]}, CpuEngine(), w_oi.data());
      weights_ = PackedWeights(pd.weights_desc(), CpuEngine());
      dnnl::stream st(CpuEngine());
      dnnl::reorder(w_plain, weights_).execute(st, w_plain, weights_);
      st.wait();
      int x_slot = runner_.AddBound(src_md);
      int y_slot = runner_.AddBound(dst_md);
      int src_slot = Relayout(runner_, x_slot, src_md, pd.src_desc());
      int dst_slot = pd.dst_desc() == dst_md ? y_slot : runner_.AddTemp(pd.dst_desc());
      std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, src_slot}, {DNNL_ARG_WEIGHTS, runner_.AddFixed(weights_)}, {DNNL_ARG_DST, dst_slot}};
      if (b) {
        bias_ = dnnl::memory(bias_md, CpuEngine());
        std::memcpy(bias_.get_data_handle(), b->GetAddr(), static_cast<size_t>(m) * sizeof(float));
        args.push_back({DNNL_ARG_BIAS, runner_.AddFixed(bias_)});
      }
      runner_.AddStep(dnnl::deconvolution_forward(pd), args, pd.scratchpad_desc());
      if (dst_slot != y_slot) {
        dnnl::reorder::primitive_desc rp(CpuEngine(), pd.dst_desc(), CpuEngine(), dst_md);
        runner_.AddStep(dnnl::reorder(rp), {{DNNL_ARG_FROM, dst_slot}, {DNNL_ARG_TO, y_slot}});
      }
      runner_.Finish(threads);
    } catch (const dnnl::error&) {
      // Finish was not reached: the runner stays unready and another path runs instead.
    }
  }
  // Output spatial dims and begin pads per ONNX ConvTranspose.
  static bool Geometry(const KernelContextBase* ctx, const Shape& x, const Shape& wt, Window* w, std::string* err) {
    int64_t group = *ctx->GetAttrs()->GetInt("group");
    if (wt.GetDimNum() != x.GetDimNum() || group <= 0 || x.GetDim(1) != wt.GetDim(0) || x.GetDim(1) % group) {
      *err = "channels do not match: X " + x.ToString() + ", W " + wt.ToString() + ", group " + std::to_string(group) +
             " (W is [C, M/group, k...] and C must divide by group)";
      return false;
    }
    int64_t kernel[WEFT_MAX_DIMS];
    ListView<int64_t> ks = ctx->GetAttrs()->GetListInt("kernel_shape");
    if (ks.size() && ks.size() + 2 != wt.GetDimNum()) {
      *err = "kernel_shape has " + std::to_string(ks.size()) + " entries for W " + wt.ToString();
      return false;
    }
    for (size_t i = 2; i < wt.GetDimNum(); ++i) {
      kernel[i - 2] = wt.GetDim(i);
      if (ks.size() && ks[i - 2] != wt.GetDim(i)) {
        *err = "kernel_shape disagrees with W " + wt.ToString();
        return false;
      }
    }
    if (!MakeWindow(ctx, x, kernel, false, true, w, err)) return false;
    const RuntimeAttrs* a = ctx->GetAttrs();
    ListView<int64_t> out_pad = a->GetListInt("output_padding"), out_shape = a->GetListInt("output_shape");
    std::string auto_pad = a->GetStr("auto_pad");
    if (out_pad.size() && out_pad.size() != w->nd) {
      *err = "output_padding has " + std::to_string(out_pad.size()) + " entries for " + std::to_string(w->nd) + " spatial dims";
      return false;
    }
    if (out_shape.size() && out_shape.size() != w->nd && out_shape.size() != w->nd + 2) {
      *err = "output_shape has " + std::to_string(out_shape.size()) + " entries for " + std::to_string(w->nd) + " spatial dims";
      return false;
    }
    for (size_t i = 0; i < w->nd; ++i) {
      int64_t op = out_pad.size() > i ? out_pad[i] : 0;
      if (op < 0 || (op >= w->s[i] && op >= w->d[i])) {
        *err = "output_padding " + std::to_string(op) + " of spatial dim " + std::to_string(i) +
               " must be non-negative and smaller than the stride or the dilation";
        return false;
      }
      int64_t ext = (w->k[i] - 1) * w->d[i] + 1;
      if (out_shape.size()) {
        int64_t want = out_shape[out_shape.size() - w->nd + i];
        int64_t total = w->s[i] * (w->in[i] - 1) + op + ext - want;
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor division
        w->pb[i] = auto_pad == "SAME_UPPER" ? half : total - half;
        w->pe[i] = total - w->pb[i];
        w->out[i] = want;
      } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        w->out[i] = w->in[i] * w->s[i];
        int64_t total = std::max<int64_t>(0, w->s[i] * (w->in[i] - 1) + op + ext - w->out[i]);
        w->pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        w->pe[i] = total - w->pb[i];
      } else {
        if (auto_pad == "VALID") w->pb[i] = w->pe[i] = 0;
        w->out[i] = w->s[i] * (w->in[i] - 1) + op + ext - w->pb[i] - w->pe[i];
      }
      if (w->out[i] <= 0) {
        *err = "output would be empty";
        return false;
      }
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Window w;
    std::string err;
    const Shape& x = *ctx->GetInputShape(0);
    const Shape& wt = *ctx->GetInputShape(1);
    if (!Geometry(ctx, x, wt, &w, &err)) return Fail(ctx, err);
    int64_t m = wt.GetDim(1) * *ctx->GetAttrs()->GetInt("group");
    if (!BiasFits(ctx, m, &err)) return Fail(ctx, err);
    Shape out({x.GetDim(0), m});
    for (size_t i = 0; i < w.nd; ++i) out.AppendDim(w.out[i]);
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), wt->GetShape(), &w, &err)) return Fail(ctx, err);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (path_ == kUndecided) {
      graphStatus st = GRAPH_SUCCESS;
      std::call_once(pick_, [&] { st = PickPath(ctx, x, w, y); });
      if (st != GRAPH_SUCCESS) return st;
    }
    if (path_ == kGemm) return ExecuteGemm(ctx, x, w, y);
    if (path_ == kMatmul) return ExecuteMatmul(ctx, x, w, y);
    if (path_ == kDnnl) return ExecuteDnnl(ctx, x, y);
    int64_t group = *ctx->GetAttrs()->GetInt("group");
    int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1), mg = wt->GetShape().GetDim(1), m = mg * group, cg = c / group;
    int64_t in_sp = Prod(w.in, w.nd), out_sp = Prod(w.out, w.nd), k_sp = Prod(w.k, w.nd);
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = std::conditional_t<std::is_same<T, double>::value, double, float>;
      C* acc = static_cast<C*>(ctx->MallocWorkSpace(static_cast<size_t>(n * m * out_sp) * sizeof(C)));
      if (!acc) return;
      for (int64_t in = 0; in < n; ++in)
        for (int64_t mm = 0; mm < m; ++mm)
          for (int64_t o = 0; o < out_sp; ++o) acc[(in * m + mm) * out_sp + o] = b ? C(Load(b->GetData<T>()[mm])) : C(0);
      // Scatter: each input position contributes to the outputs its kernel taps reach.
      int64_t iidx[WEFT_MAX_DIMS] = {0};
      for (int64_t ip = 0; ip < in_sp; ++ip) {
        int64_t kidx[WEFT_MAX_DIMS] = {0};
        for (int64_t kk = 0; kk < k_sp; ++kk) {
          int64_t lin = 0;
          bool inside = true;
          for (size_t i = 0; i < w.nd; ++i) {
            int64_t p = iidx[i] * w.s[i] - w.pb[i] + kidx[i] * w.d[i];
            if (p < 0 || p >= w.out[i]) inside = false;
            lin = lin * w.out[i] + p;
          }
          if (inside)
            for (int64_t in = 0; in < n; ++in)
              for (int64_t g = 0; g < group; ++g)
                for (int64_t ic = 0; ic < cg; ++ic) {
                  C xv = Load(x->GetData<T>()[(in * c + g * cg + ic) * in_sp + ip]);
                  for (int64_t om = 0; om < mg; ++om)
                    acc[(in * m + g * mg + om) * out_sp + lin] += xv * C(Load(wt->GetData<T>()[((g * cg + ic) * mg + om) * k_sp + kk]));
                }
          for (size_t i = w.nd; i-- > 0;) {
            if (++kidx[i] < w.k[i]) break;
            kidx[i] = 0;
          }
        }
        for (size_t i = w.nd; i-- > 0;) {
          if (++iidx[i] < w.in[i]) break;
          iidx[i] = 0;
        }
      }
      FusedActivation act(ctx);
      for (int64_t i = 0; i < n * m * out_sp; ++i) y->GetData<T>()[i] = Store<T>(static_cast<typename Compute<T>::type>(act(acc[i])));
    });
    return GRAPH_SUCCESS;
  }

 private:
  graphStatus ExecuteDnnl(EagerOpExecutionContext* ctx, const Tensor* x, Tensor* y) {
    void* ptrs[2] = {const_cast<void*>(x->GetAddr()), y->GetAddr()};
    if (!runner_.Run(ctx, ptrs)) return GRAPH_FAILED;
    const WeftEpilogue act = ctx->GetEpilogue();
    if (act.activation == WEFT_ACT_NONE) return GRAPH_SUCCESS;
    const Shape& ys = y->GetShape();
    const int64_t planes = ys.GetDim(0) * ys.GetDim(1), plane = ys.GetShapeSize() / std::max<int64_t>(1, planes);
    return ctx->ParallelFor(planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) ActivateInPlace(act, y->GetData<float>() + p * plane, plane);
    });
  }
  // Where more than one fast path is ready, the first run times each on its own input (the fastest
  // of four interleaved runs each, after one untimed run each), keeps the fastest for every later run,
  // and leaves the kept path's result in Y, so that every run's output comes from that path.
  graphStatus PickPath(EagerOpExecutionContext* ctx, const Tensor* x, const Window& w, Tensor* y) {
    using clock = std::chrono::steady_clock;
    const Path paths[3] = {kGemm, kMatmul, kDnnl};
    const bool ready[3] = {gemm_, mm_runner_.ready(), runner_.ready()};
    double best[3] = {1e300, 1e300, 1e300};
    auto run = [&](Path p) {
      return p == kGemm ? ExecuteGemm(ctx, x, w, y) : p == kMatmul ? ExecuteMatmul(ctx, x, w, y) : ExecuteDnnl(ctx, x, y);
    };
    for (int round = 0; round < 5; ++round)
      for (int p = 0; p < 3; ++p) {
        if (!ready[p]) continue;
        auto t0 = clock::now();
        graphStatus st = run(paths[p]);
        if (st != GRAPH_SUCCESS) return st;
        if (round) best[p] = std::min(best[p], std::chrono::duration<double>(clock::now() - t0).count());
      }
    int pick = 0;
    for (int p = 0; p < 3; ++p)
      if (ready[p] && (!ready[pick] || best[p] < best[pick])) pick = p;
    path_ = paths[pick];
    return pick == 2 ? GRAPH_SUCCESS : run(paths[pick]);  // oneDNN's result is the last one in Y
  }
  // The matmul path per image: Z^T = X^T W' (CompileMatmul), then per output channel (in
  // parallel) the plane starts at the bias and each input position's KK taps, one contiguous run
  // of Z^T, are added where they land; the fused activation runs over the finished plane.
  graphStatus ExecuteMatmul(EagerOpExecutionContext* ctx, const Tensor* x, const Window& w, Tensor* y) {
    const Shape& xs = x->GetShape();
    const int64_t n = xs.GetDim(0), c = xs.GetDim(1), m = static_cast<int64_t>(gemm_b_.size());
    const int64_t kk = Prod(w.k, w.nd), in_sp = Prod(w.in, w.nd), out_sp = Prod(w.out, w.nd), mk = m * kk;
    float* z = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(mk * in_sp) * sizeof(float)));
    if (!z) return GRAPH_FAILED;
    Geometry3 g(w);
    const WeftEpilogue act = ctx->GetEpilogue();
    for (int64_t i = 0; i < n; ++i) {
      void* ptrs[2] = {const_cast<float*>(x->GetData<float>() + i * c * in_sp), z};
      if (!mm_runner_.Run(ctx, ptrs)) return GRAPH_FAILED;
      float* py = y->GetData<float>() + i * m * out_sp;
      graphStatus st = ctx->ParallelFor(m, 1, [&](int64_t lo_m, int64_t hi_m) {
        for (int64_t mm = lo_m; mm < hi_m; ++mm) {
          float* dst = py + mm * out_sp;
          std::fill(dst, dst + out_sp, gemm_b_[static_cast<size_t>(mm)]);
          const float* zc = z + mm * kk;
          for (int64_t t0 = 0; t0 < g.K[0]; ++t0)
            for (int64_t t1 = 0; t1 < g.K[1]; ++t1)
              for (int64_t t2 = 0; t2 < g.K[2]; ++t2) {
                int64_t l0, h0, l1, h1, l2, h2;
                g.Range(0, t0, &l0, &h0), g.Range(1, t1, &l1, &h1), g.Range(2, t2, &l2, &h2);
                const int64_t t = (t0 * g.K[1] + t1) * g.K[2] + t2, s2 = g.S[2];
                for (int64_t a = l0; a < h0; ++a)
                  for (int64_t b = l1; b < h1; ++b) {
                    const float* sr = zc + (a * g.I[1] + b) * g.I[2] * mk + t;
                    float* o = dst + ((a * g.S[0] - g.P[0] + t0 * g.D[0]) * g.O[1] + (b * g.S[1] - g.P[1] + t1 * g.D[1])) * g.O[2] - g.P[2] +
                               t2 * g.D[2];
                    for (int64_t j = l2; j < h2; ++j) o[j * s2] += sr[j * mk];
                  }
              }
          ActivateInPlace(act, dst, out_sp);
        }
      });
      if (st != GRAPH_SUCCESS) return st;
    }
    return GRAPH_SUCCESS;
  }
  // Per image and group Z = W_g^T X_g ([M/g * KK, HW]); then per output channel (in parallel):
  // the plane starts at the bias, each tap's plane of Z is added at its place (input position p
  // and tap t land on output p * s - pad_begin + t * d where that is inside), and the fused
  // activation runs over the finished plane while it is in cache.
  graphStatus ExecuteGemm(EagerOpExecutionContext* ctx, const Tensor* x, const Window& w, Tensor* y) {
    const Shape& xs = x->GetShape();
    const int64_t group = *ctx->GetAttrs()->GetInt("group");
    const int64_t n = xs.GetDim(0), c = xs.GetDim(1), m = static_cast<int64_t>(gemm_b_.size()), mg = m / group, cg = c / group;
    const int64_t kk = Prod(w.k, w.nd), in_sp = Prod(w.in, w.nd), out_sp = Prod(w.out, w.nd);
    // Empty input channels or input positions: Z is all zeros (no product to take).
    const bool no_product = cg == 0 || in_sp == 0 || mg * kk == 0;
    const size_t z_count = static_cast<size_t>(m * kk * in_sp);
    float* z = static_cast<float*>(ctx->MallocWorkSpace(std::max<size_t>(z_count, 1) * sizeof(float)));
    if (!z) return GRAPH_FAILED;
    if (no_product) std::fill(z, z + z_count, 0.f);
    const Geometry3 geo(w);
    const int64_t *I = geo.I, *O = geo.O, *K = geo.K, *S = geo.S, *D = geo.D, *P = geo.P;
    auto range = [&](size_t d, int64_t t, int64_t* lo, int64_t* hi) { geo.Range(d, t, lo, hi); };
    const WeftEpilogue act = ctx->GetEpilogue();
    ApplyIntraOpThreads(ctx);  // sgemm's OpenMP threads: the session's, set on the thread that runs
    for (int64_t i = 0; i < n; ++i) {
      const float* px = x->GetData<float>() + i * c * in_sp;
      float* py = y->GetData<float>() + i * m * out_sp;
      for (int64_t g = 0; g < group && !no_product; ++g)
        if (!ParallelSgemm(ctx, 'N', mg * kk, in_sp, cg, gemm_w_.data() + g * mg * kk * cg, cg, px + g * cg * in_sp, in_sp, 0.f,
                           z + g * mg * kk * in_sp, in_sp))
          return Fail(ctx, "oneDNN sgemm failed");
      graphStatus st = ctx->ParallelFor(m, 1, [&](int64_t lo_m, int64_t hi_m) {
        for (int64_t mm = lo_m; mm < hi_m; ++mm) {
          float* dst = py + mm * out_sp;
          std::fill(dst, dst + out_sp, gemm_b_[static_cast<size_t>(mm)]);
          for (int64_t t0 = 0; t0 < K[0]; ++t0)
            for (int64_t t1 = 0; t1 < K[1]; ++t1)
              for (int64_t t2 = 0; t2 < K[2]; ++t2) {
                const float* src = z + (mm * kk + (t0 * K[1] + t1) * K[2] + t2) * in_sp;
                int64_t l0, h0, l1, h1, l2, h2;
                range(0, t0, &l0, &h0), range(1, t1, &l1, &h1), range(2, t2, &l2, &h2);
                if (l2 >= h2) continue;
                const int64_t s2 = S[2];
                for (int64_t a = l0; a < h0; ++a)
                  for (int64_t b = l1; b < h1; ++b) {
                    const float* sr = src + (a * I[1] + b) * I[2];
                    float* o = dst + ((a * S[0] - P[0] + t0 * D[0]) * O[1] + (b * S[1] - P[1] + t1 * D[1])) * O[2] - P[2] + t2 * D[2];
                    if (s2 == 1)
                      for (int64_t j = l2; j < h2; ++j) o[j] += sr[j];
                    else
                      for (int64_t j = l2; j < h2; ++j) o[j * s2] += sr[j];
                  }
              }
          ActivateInPlace(act, dst, out_sp);
        }
      });
      if (st != GRAPH_SUCCESS) return st;
    }
    return GRAPH_SUCCESS;
  }

  DnnlRunner runner_, mm_runner_;
  dnnl::memory weights_, bias_, mm_weights_;
  bool gemm_ = false;
  std::vector<float> gemm_w_, gemm_b_;
  enum Path { kReference, kGemm, kDnnl, kUndecided, kMatmul };
  std::atomic<int> path_{kReference};
  std::once_flag pick_;
};

template <bool kMax>
class Pool : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public LayoutAwareOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), &w, &err)) return Fail(ctx, err);
    const bool bytes = kMax && Is8Bit(x->GetDataType());
    if ((x->GetDataType() != DT_FLOAT && !bytes) || ctx->GetComputeNodeOutputNum() > 1)
      return Fail(ctx, "the generated C pools float32 (and max-pools int8 and uint8) without an Indices output");
    const bool include_pad = !kMax && *ctx->GetAttrs()->GetInt("count_include_pad") != 0;
    const std::string g = NchwGeometry(x->GetShape(), w, x->GetShape().GetDim(1), 1);
    if (g.empty()) return Fail(ctx, "the generated C pools 1-D and 2-D inputs of moderate size only");
    if (bytes) {
      aot::EmitHelper(ctx, aot::Kernels(), "weft_maxpool_nchw_q8");
      ctx->Run(g + "weft_maxpool_nchw_q8(&g, " + (x->GetDataType() == DT_INT8 ? "1" : "0") + ", " + ctx->Input(0, "void") + ", " +
               ctx->Output(0, "void") + ");\n");
      return GRAPH_SUCCESS;
    }
    ctx->Include("<math.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_pool_nchw_f32");
    ctx->Run(g + "weft_pool_nchw_f32(&g, " + (kMax ? "1" : "0") + ", " + (include_pad ? "1" : "0") + ", " + ctx->Input(0, "float") + ", " +
             ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  // Between channel-blocked Convs a float32 2-D pooling (oneDNN path) keeps the blocked layout:
  // it reads and writes it, or neither.
  // An 8-bit 2-D max pooling (between 8-bit convolutions) keeps their pixel rows the same way.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    bool include_pad = !kMax && *ctx->GetAttrs()->GetInt("count_include_pad") != 0;
    if (x->GetDataType() == DT_FLOAT && x->GetShape().GetDimNum() == 4 && ctx->GetComputeNodeOutputNum() == 1 &&
        !(include_pad && *ctx->GetAttrs()->GetInt("ceil_mode")))
      s.Format(FORMAT_NC1HWC0).Input(0).Output(0).Together();
    if (kMax && Is8Bit(x->GetDataType()) && x->GetShape().GetDimNum() == 4 && !x->GetShape().IsUnknown() && ctx->GetComputeNodeOutputNum() == 1)
      s.Format(FORMAT_NHWC).Input(0).Output(0).Together();
    return GRAPH_SUCCESS;
  }
  static bool Is8Bit(DataType t) { return t == DT_INT8 || t == DT_UINT8; }
  // Fast path: oneDNN pooling (no Indices output), float32, and int8/uint8 for MaxPool.
  graphStatus Compile(OpCompileContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Window w;
    std::string err;
    const bool bytes = kMax && Is8Bit(x->GetDataType());
    if ((x->GetDataType() != DT_FLOAT && !bytes) || ctx->GetComputeNodeOutputNum() > 1 || !Geometry(ctx, x->GetShape(), &w, &err) || w.nd > 3)
      return GRAPH_SUCCESS;
    // An empty input or output (a window larger than the padded input fits nowhere): nothing for
    // oneDNN to build (it divides by the empty sizes), the loops below run.
    if (x->GetShape().GetShapeSize() == 0) return GRAPH_SUCCESS;
    for (size_t i = 0; i < w.nd; ++i)
      if (w.out[i] <= 0 || w.in[i] <= 0) return GRAPH_SUCCESS;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const dt type = x->GetDataType() == DT_INT8 ? dt::s8 : x->GetDataType() == DT_UINT8 ? dt::u8 : dt::f32;
    int threads = ApplyIntraOpThreads(ctx);
    try {
      const Shape& xs = x->GetShape();
      dnnl::memory::dims src{xs.GetDim(0), xs.GetDim(1)}, dst{xs.GetDim(0), xs.GetDim(1)}, k, st, dil, pl, pr;
      // 1-D pooling runs as 2-D with a height of 1 (the same memory; oneDNN's 1-D kernels are slow).
      const size_t nd = w.nd == 1 ? 2 : w.nd;
      if (w.nd == 1) {
        src.push_back(1);
        dst.push_back(1);
        k.push_back(1);
        st.push_back(1);
        dil.push_back(0);
        pl.push_back(0);
        pr.push_back(0);
      }
      for (size_t i = 0; i < w.nd; ++i) {
        src.push_back(w.in[i]);
        dst.push_back(w.out[i]);
        k.push_back(w.k[i]);
        st.push_back(w.s[i]);
        dil.push_back(w.d[i] - 1);
        pl.push_back(w.pb[i]);
        // Ceil mode: extend the end padding so the last (partial) window exists.
        pr.push_back((w.out[i] - 1) * w.s[i] + (w.k[i] - 1) * w.d[i] + 1 - w.in[i] - w.pb[i]);
      }
      const tag tags[] = {tag::ncw, tag::nchw, tag::ncdhw};
      dnnl::memory::desc src_md(src, type, tags[nd - 1]), dst_md(dst, type, tags[nd - 1]);
      // Between channel-blocked Convs (the layout pass decides) pooling reads and writes nChw16c;
      // between 8-bit ones, pixel rows (nhwc).
      const Format fin = x->GetFormat(), fout = ctx->GetOutputTensor(0)->GetFormat();
      bool blocked_in = fin == FORMAT_NC1HWC0 || fin == FORMAT_NHWC, blocked_out = fout == FORMAT_NC1HWC0 || fout == FORMAT_NHWC;
      if ((blocked_in || blocked_out) && w.nd != 2) {
        ctx->SetError("the blocked layout needs 2-D pooling");
        return GRAPH_FAILED;
      }
      if (blocked_in) src_md = dnnl::memory::desc(src, type, fin == FORMAT_NHWC ? tag::nhwc : tag::nChw16c);
      if (blocked_out) dst_md = dnnl::memory::desc(dst, type, fout == FORMAT_NHWC ? tag::nhwc : tag::nChw16c);
      bool include_pad = !kMax && *ctx->GetAttrs()->GetInt("count_include_pad") != 0;
      if (include_pad && *ctx->GetAttrs()->GetInt("ceil_mode")) return GRAPH_SUCCESS;  // padding rule differs: reference path
      auto alg = kMax ? dnnl::algorithm::pooling_max
                      : include_pad ? dnnl::algorithm::pooling_avg_include_padding : dnnl::algorithm::pooling_avg_exclude_padding;
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      auto make_pd = [&](const dnnl::memory::desc& s_md, const dnnl::memory::desc& d_md) {
        dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, s_md, d_md, st, k, dil, pl, pr);
        return dnnl::pooling_v2_forward::primitive_desc(d, attr, CpuEngine());
      };
      dnnl::pooling_v2_forward::primitive_desc pd = make_pd(src_md, dst_md);
      // Where oneDNN has only a simple loop for the plain layout (e.g. a height of 1, or any plain
      // NCHW pooling on CPUs without AVX-512), a layout its vectorized kernels take, with reorders
      // around them, is faster: 16-channel blocks (AVX-512), 8-channel blocks (AVX2), channels last.
      bool relayout = false;
      if (!blocked_in && !blocked_out && nd == 2 && std::string(pd.impl_info_str()).rfind("jit", 0) != 0) {
        for (tag t : {tag::nChw16c, tag::nChw8c, tag::nhwc}) {
          auto alt = make_pd(dnnl::memory::desc(src, type, t), dnnl::memory::desc(dst, type, t));
          if (std::string(alt.impl_info_str()).rfind("jit", 0) == 0) {
            pd = alt, relayout = true;
            break;
          }
        }
      }
      if (blocked_out && ctx->SetOutputStorage(0, dst_md.get_size(), fout) != GRAPH_SUCCESS) return GRAPH_FAILED;
      int xs_slot = runner_.AddBound(src_md), ys_slot = runner_.AddBound(dst_md);
      int in_slot = relayout ? Relayout(runner_, xs_slot, src_md, pd.src_desc()) : xs_slot;
      int out_slot = relayout ? runner_.AddTemp(pd.dst_desc()) : ys_slot;
      runner_.AddStep(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, in_slot}, {DNNL_ARG_DST, out_slot}}, pd.scratchpad_desc());
      if (relayout) {
        dnnl::reorder::primitive_desc rp(CpuEngine(), pd.dst_desc(), CpuEngine(), dst_md);
        runner_.AddStep(dnnl::reorder(rp), {{DNNL_ARG_FROM, out_slot}, {DNNL_ARG_TO, ys_slot}});
      }
      runner_.Finish(threads);
    } catch (const dnnl::error& e) {
      // not ready: the reference loops run instead, unless the graph relies on the blocked layout
      if (x->GetFormat() != FORMAT_ND || ctx->GetOutputTensor(0)->GetFormat() != FORMAT_ND) {
        ctx->SetError(std::string("oneDNN cannot run this pooling in the blocked layout: ") + e.what());
        return GRAPH_FAILED;
      }
    }
    return GRAPH_SUCCESS;
  }

  static bool Geometry(const KernelContextBase* ctx, const Shape& x, Window* w, std::string* err) {
    ListView<int64_t> ks = ctx->GetAttrs()->GetListInt("kernel_shape");
    if (x.GetDimNum() < 3 || ks.size() != x.GetDimNum() - 2) {
      *err = "kernel_shape must have one entry per spatial dim of " + x.ToString();
      return false;
    }
    if (const int64_t* so = ctx->GetAttrs()->GetInt("storage_order"); so && *so != 0 && *so != 1) {
      *err = "storage_order must be 0 (row major) or 1 (column major), got " + std::to_string(*so);
      return false;
    }
    return MakeWindow(ctx, x, ks.data(), *ctx->GetAttrs()->GetInt("ceil_mode") != 0, false, w, err);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Window w;
    std::string err;
    const Shape& x = *ctx->GetInputShape(0);
    if (!Geometry(ctx, x, &w, &err)) return Fail(ctx, err);
    Shape out({x.GetDim(0), x.GetDim(1)});
    for (size_t i = 0; i < w.nd; ++i) out.AppendDim(w.out[i]);
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) *ctx->GetOutputShape(k) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
    if (ctx->GetComputeNodeOutputNum() > 1) ctx->SetOutputDataType(1, DT_INT64);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), &w, &err)) return Fail(ctx, err);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (runner_.ready()) {
      void* ptrs[2] = {const_cast<void*>(x->GetAddr()), y->GetAddr()};
      return runner_.Run(ctx, ptrs) ? GRAPH_SUCCESS : GRAPH_FAILED;
    }
    Tensor* ind = nullptr;
    if (kMax && ctx->GetComputeNodeOutputNum() > 1) {
      ind = ctx->MallocOutputTensor(1, y->GetShape(), DT_INT64);
      if (!ind) return GRAPH_FAILED;
    }
    bool include_pad = !kMax && *ctx->GetAttrs()->GetInt("count_include_pad") != 0;
    int64_t nc = x->GetShape().GetDim(0) * x->GetShape().GetDim(1);
    int64_t in_sp = Prod(w.in, w.nd), out_sp = Prod(w.out, w.nd);
    DispatchAll(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      for (int64_t p = 0; p < nc; ++p) {
        const T* px = x->GetData<T>() + p * in_sp;
        T* py = y->GetData<T>() + p * out_sp;
        ForEachOutput(w, [&](int64_t o, const int64_t* oidx) {
          C best = std::numeric_limits<C>::lowest();
          if constexpr (!std::is_integral<C>::value) best = -std::numeric_limits<C>::infinity();
          double sum = 0;
          int64_t count = 0, arg = -1;
          ForEachTap(w, oidx, [&](int64_t, int64_t lin) {
            if (lin < 0) return;
            C v = Load(px[lin]);
            if (kMax) {
              if (v > best || arg < 0) best = v, arg = lin;
            } else {
              sum += static_cast<double>(v);
              ++count;
            }
          });
          if (kMax) {
            py[o] = Store<T>(best);
            if (ind) {
              int64_t sp_index = arg;
              if (*ctx->GetAttrs()->GetInt("storage_order") != 0) {  // column-major spatial index
                int64_t rem = arg, col = 0, mul = 1;
                int64_t coord[WEFT_MAX_DIMS];
                for (size_t i = w.nd; i-- > 0;) coord[i] = rem % w.in[i], rem /= w.in[i];
                for (size_t i = 0; i < w.nd; ++i) col += coord[i] * mul, mul *= w.in[i];
                sp_index = col;
              }
              ind->GetData<int64_t>()[p * out_sp + o] = p * in_sp + sp_index;
            }
          } else {
            if (include_pad) {
              // Padding counts, but not the part of a ceil-mode window beyond the explicit pads.
              count = 1;
              for (size_t i = 0; i < w.nd; ++i) {
                int64_t start = oidx[i] * w.s[i] - w.pb[i];
                int64_t end = std::min(start + (w.k[i] - 1) * w.d[i] + 1, w.in[i] + w.pe[i]);
                count *= (end - start + w.d[i] - 1) / w.d[i];
              }
            }
            py[o] = Store<T>(static_cast<C>(count ? sum / static_cast<double>(count) : 0.0));
          }
        });
      }
    });
    return GRAPH_SUCCESS;
  }

 private:
  DnnlRunner runner_;
};

template <bool kMax>
class GlobalPool : public EagerExecuteOp, public ShapeInferOp, public LayoutAwareOp, public EmittableOp {
 public:
  // A pooling window over the whole 1-D or 2-D extent.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    if (x->GetDataType() != DT_FLOAT || (xs.GetDimNum() != 3 && xs.GetDimNum() != 4))
      return Fail(ctx, "the generated C pools float32 1-D and 2-D inputs only");
    Window w;
    w.nd = xs.GetDimNum() - 2;
    for (size_t i = 0; i < w.nd; ++i) w.in[i] = w.k[i] = xs.GetDim(i + 2), w.out[i] = w.s[i] = w.d[i] = 1, w.pb[i] = w.pe[i] = 0;
    const std::string g = NchwGeometry(xs, w, xs.GetDim(1), 1);
    if (g.empty()) return Fail(ctx, "too large for the generated C");
    ctx->Include("<math.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_pool_nchw_f32");
    ctx->Run(g + "weft_pool_nchw_f32(&g, " + (kMax ? "1" : "0") + ", 0, " + ctx->Input(0, "float") + ", " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  // A float32 4-D input may arrive channel-blocked (the output, [N, C, 1, 1], stays plain): the
  // squeeze-and-excitation blocks of mobile networks read a blocked depthwise convolution's
  // output both here and in the Mul that applies the gate.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (x->GetDataType() == DT_FLOAT && x->GetShape().GetDimNum() == 4) s.Format(FORMAT_NC1HWC0).Input(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    if (x.GetDimNum() < 3) return Fail(ctx, "input must be [N, C, spatial...]");
    Shape out({x.GetDim(0), x.GetDim(1)});
    for (size_t i = 2; i < x.GetDimNum(); ++i) out.AppendDim(1);
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t nc = x->GetShape().GetDim(0) * x->GetShape().GetDim(1), sp = x->GetShapeSize() / std::max<int64_t>(nc, 1);
    if (x->GetFormat() == FORMAT_NC1HWC0) {  // [N][C/16][H*W][16]
      const int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1), cb = (c + 15) / 16;
      const float* px = x->GetData<float>();
      float* py = y->GetData<float>();
      for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < cb; ++b) {
          float acc[16];
          for (int k = 0; k < 16; ++k) acc[k] = kMax ? -std::numeric_limits<float>::infinity() : 0.f;
          const float* blk = px + (i * cb + b) * sp * 16;
          for (int64_t p = 0; p < sp; ++p)
#pragma omp simd
            for (int k = 0; k < 16; ++k) acc[k] = kMax ? std::max(acc[k], blk[p * 16 + k]) : acc[k] + blk[p * 16 + k];
          for (int k = 0; k < 16 && b * 16 + k < c; ++k) py[i * c + b * 16 + k] = kMax ? acc[k] : acc[k] / static_cast<float>(sp);
        }
      return GRAPH_SUCCESS;
    }
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t p = 0; p < nc; ++p) {
        double acc = kMax ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t i = 0; i < sp; ++i) {
          double v = Load(x->GetData<T>()[p * sp + i]);
          acc = kMax ? std::max(acc, v) : acc + v;
        }
        y->GetData<T>()[p] = Store<T>(static_cast<typename Compute<T>::type>(kMax ? acc : acc / static_cast<double>(sp)));
      }
    });
    return GRAPH_SUCCESS;
  }
};

// ConvInteger (x, w, x_zero_point?, w_zero_point?: int32 sums) and QLinearConv (x, x_scale,
// x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?: the int32 sums plus B, times
// x_scale * w_scale / y_scale in float, rounded half to even, plus y_zero_point, saturated), on
// Conv's geometry; w_zero_point and w_scale per tensor or per output channel. Direct loops.
// QLinearConv's rescaling of n wrapped sums (sums[i * stride], less z * minus[i * stride] when
// minus is given, plus the bias `add`), as whole floats already clamped to [lo, hi]: times the
// scale in float, rounded half to even without a library call (adding and taking off 1.5 * 2^23
// rounds |v| < 2^22; larger values clamp whatever their fraction, |lo| and |hi| being <= 255), plus
// the output zero point.
WEFT_ISA_CLONES void RequantToFloat(const uint32_t* __restrict sums, const uint32_t* __restrict minus, int64_t stride, int64_t n, uint32_t z,
                                     uint32_t add, float scale, float y_zero, float lo, float hi, float* __restrict out) {
  auto finish = [&](uint32_t s) {
    float v = static_cast<float>(static_cast<int32_t>(s + add)) * scale;
    v = RoundHalfEvenSmall(v);
    return std::min(std::max(v + y_zero, lo), hi);
  };
  if (!minus && stride == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = finish(sums[i]);
  } else if (!minus) {
    for (int64_t i = 0; i < n; ++i) out[i] = finish(sums[i * stride]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = finish(sums[i * stride] - z * minus[i * stride]);
  }
}

// dst[c * ld_dst + r] = src[r * cols + c] for r < rows (at most ld_dst), c < cols: 16 x 16 tiles
// transposed in registers on AVX-512, element by element elsewhere and at the edges.
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers start results undefined
__attribute__((target("avx512f"))) void TransposeBlock512(const uint32_t* src, int64_t cols, int64_t rows, uint32_t* dst, int64_t ld_dst) {
  const int64_t rt = rows / 16 * 16, ct = cols / 16 * 16;
  for (int64_t r = 0; r < rt; r += 16)
    for (int64_t c = 0; c < ct; c += 16) {
      __m512i v[16], t[16];
      for (int i = 0; i < 16; ++i) v[i] = _mm512_loadu_si512(src + (r + i) * cols + c);
      for (int i = 0; i < 8; ++i) {  // per 128-bit lane L: rows 2i, 2i+1 at columns 4L, 4L+1 / 4L+2, 4L+3
        t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
      }
      for (int i = 0; i < 4; ++i) {  // v[4i + j], lane L: rows 4i .. 4i+3 at column 4L + j
        v[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        v[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        v[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        v[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
      }
      for (int j = 0; j < 4; ++j) {  // column 4L + j: lane L of v[j], v[4 + j], v[8 + j], v[12 + j]
        const __m512i x01 = _mm512_shuffle_i32x4(v[j], v[4 + j], 0x44), y01 = _mm512_shuffle_i32x4(v[8 + j], v[12 + j], 0x44);
        const __m512i x23 = _mm512_shuffle_i32x4(v[j], v[4 + j], 0xEE), y23 = _mm512_shuffle_i32x4(v[8 + j], v[12 + j], 0xEE);
        _mm512_storeu_si512(dst + (c + j) * ld_dst + r, _mm512_shuffle_i32x4(x01, y01, 0x88));
        _mm512_storeu_si512(dst + (c + 4 + j) * ld_dst + r, _mm512_shuffle_i32x4(x01, y01, 0xDD));
        _mm512_storeu_si512(dst + (c + 8 + j) * ld_dst + r, _mm512_shuffle_i32x4(x23, y23, 0x88));
        _mm512_storeu_si512(dst + (c + 12 + j) * ld_dst + r, _mm512_shuffle_i32x4(x23, y23, 0xDD));
      }
    }
  for (int64_t r = 0; r < rows; ++r)  // the edges
    for (int64_t c = r < rt ? ct : 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * cols + c];
}
#pragma GCC diagnostic pop
#endif
void TransposeBlock(const uint32_t* src, int64_t cols, int64_t rows, uint32_t* dst, int64_t ld_dst) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return TransposeBlock512(src, cols, rows, dst, ld_dst);
#endif
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * cols + c];
}

// One output plane of a one-channel-per-group integer convolution, modulo 2^32: out[oy][ox] = sum
// over the taps inside the input of x[iy][ix] * w[ky][kx] (x already less its zero point, w less
// its), tap by tap over whole output rows; built for AVX-512 and AVX2 too, where the rows vectorize.
struct DwPlane {
  int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
};
WEFT_ISA_CLONES void DepthwisePlane(const DwPlane& p, const int32_t* __restrict x, const uint32_t* __restrict w, uint32_t* __restrict out) {
  for (int64_t i = 0; i < p.oh * p.ow; ++i) out[i] = 0;
  for (int64_t ky = 0; ky < p.kh; ++ky)
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const uint32_t wv = w[ky * p.kw + kx];
      // output columns whose tap lies inside the row: 0 <= ox * sw - pw + kx * dw < iw
      const int64_t off = kx * p.dw - p.pw;
      const int64_t ox0 = off >= 0 ? 0 : (-off + p.sw - 1) / p.sw;
      const int64_t ox1 = std::min(p.ow, p.iw - off <= 0 ? 0 : (p.iw - off + p.sw - 1) / p.sw);
      if (ox1 <= ox0) continue;
      for (int64_t oy = 0; oy < p.oh; ++oy) {
        const int64_t iy = oy * p.sh - p.ph + ky * p.dh;
        if (iy < 0 || iy >= p.ih) continue;  // padding holds the zero point: it adds nothing
        const int32_t* src = x + iy * p.iw + off;
        uint32_t* dst = out + oy * p.ow;
        if (p.sw == 1) {
          for (int64_t ox = ox0; ox < ox1; ++ox) dst[ox] += static_cast<uint32_t>(src[ox]) * wv;
        } else {
          for (int64_t ox = ox0; ox < ox1; ++ox) dst[ox] += static_cast<uint32_t>(src[ox * p.sw]) * wv;
        }
      }
    }
}

// Every image of a 4-D tensor between its channel planes [c][hw] and pixel rows [hw][c] (to NHWC,
// each value xor-ed with `flip`, or back), in 64 x 64 tiles so that both sides stay in cache;
// images and runs of 256 pixels split over the threads.
template <typename T>
void Relayout(const KernelContextBase* ctx, bool to_nhwc, const T* src, int64_t n, int64_t c, int64_t hw, T* dst, T flip = 0) {
  const int64_t tiles = (hw + 255) / 256;
  ctx->ParallelFor(n * tiles, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t in = r / tiles, q0 = (r % tiles) * 256, len = std::min<int64_t>(256, hw - q0);
      const T* s = src + in * c * hw;
      T* d = dst + in * c * hw;
      if (to_nhwc) {
        for (int64_t q = q0; q < q0 + len; q += 64)
          for (int64_t c0 = 0; c0 < c; c0 += 64) {
            const int64_t q1 = std::min(q0 + len, q + 64), c1 = std::min(c, c0 + 64);
            for (int64_t p = q; p < q1; ++p)
              for (int64_t ch = c0; ch < c1; ++ch) d[p * c + ch] = static_cast<T>(s[ch * hw + p] ^ flip);
          }
      } else {
        for (int64_t c0 = 0; c0 < c; c0 += 64)
          for (int64_t q = q0; q < q0 + len; q += 64) {
            const int64_t q1 = std::min(q0 + len, q + 64), c1 = std::min(c, c0 + 64);
            for (int64_t ch = c0; ch < c1; ++ch)
              for (int64_t p = q; p < q1; ++p) d[ch * hw + p] = s[p * c + ch];
          }
      }
    }
  });
}

// QLinearConv's rescaling of one pixel's sums over n consecutive output channels (per-channel
// arrays already offset to the first): sums[i] less wz[i] * minus (when wz is given) plus add[i],
// as int32, times scale[i] in float, rounded half to even, plus y_zero, clamped to [lo, hi] and
// stored as a byte (an int8 output as its two's complement bits).
WEFT_ISA_CLONES void RequantRow(const uint32_t* __restrict sums, const uint32_t* __restrict wz, uint32_t minus, const uint32_t* __restrict add,
                                const float* __restrict scale, float y_zero, float lo, float hi, uint8_t* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t s = sums[i] - (wz ? wz[i] * minus : 0u) + add[i];
    float v = RoundHalfEvenSmall(static_cast<float>(static_cast<int32_t>(s)) * scale[i]);
    v = std::min(std::max(v + y_zero, lo), hi);
    out[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
  }
}

// RequantRow for npix pixels: pixel p's sums at sums + p * stride (less wz[i] times the sum at
// sums + p * stride + minus_at, where wz is given), its bytes at out + p * out_stride. AVX-512
// where the CPU has it: 16 channels a vector, the last ones masked; the rounding to nearest even
// of roundscale equals RequantRow's (values past 2^22 clamp either way).
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers start results undefined
// 16 channels' sums stored as int32 (sums32), or rescaled as RequantRow does: plus the bias (vadd),
// times the scales, rounded half to even by roundscale, plus the zero point, clamped, stored as
// bytes (k: the channels present).
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline void RescaleStore512(__m512i acc, __mmask16 k, __m512i vadd, __m512 vscale,
                                                                                          __m512 vz, __m512 vlo, __m512 vhi, uint8_t* out,
                                                                                          int32_t* sums32) {
  if (sums32) {
    _mm512_mask_storeu_epi32(sums32, k, acc);
    return;
  }
  __m512 f = _mm512_cvtepi32_ps(_mm512_add_epi32(acc, vadd));
  f = _mm512_roundscale_ps(_mm512_mul_ps(f, vscale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  f = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(f, vz), vlo), vhi);
  _mm512_mask_cvtepi32_storeu_epi8(out, k, _mm512_cvtps_epi32(f));
}
__attribute__((target("avx512f,avx512bw,avx512vl"))) void RequantPixels512(const uint32_t* sums, int64_t stride, int64_t npix, int64_t count,
                                                                  const uint32_t* wz, int64_t minus_at, const uint32_t* add, const float* scale,
                                                                  float y_zero, float lo, float hi, uint8_t* out, int64_t out_stride) {
  const __m512 vz = _mm512_set1_ps(y_zero), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (int64_t p = 0; p < npix; ++p) {
    const uint32_t* sp = sums + p * stride;
    const __m512i minus = _mm512_set1_epi32(wz ? static_cast<int32_t>(sp[minus_at]) : 0);
    uint8_t* op = out + p * out_stride;
    for (int64_t i = 0; i < count; i += 16) {
      const __mmask16 k = count - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (count - i)) - 1);
      __m512i v = _mm512_maskz_loadu_epi32(k, sp + i);
      if (wz) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(k, wz + i), minus));
      RescaleStore512(v, k, _mm512_maskz_loadu_epi32(k, add + i), _mm512_maskz_loadu_ps(k, scale + i), vz, vlo, vhi, op + i, nullptr);
    }
  }
}
#pragma GCC diagnostic pop
#endif
// Whether the AVX-512 kernels of the 8-bit convolutions run: the CPU has AVX-512 F, BW and VL,
// and WEFT_DISABLE_VNNI is not 1 (the switch that also turns the LiteRT kernels' VNNI paths off,
// so that the portable loops can be tested on any machine).
bool Avx512Int8() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool ok = [] {
    const char* off = std::getenv("WEFT_DISABLE_VNNI");
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           !(off && std::string(off) == "1");
  }();
  return ok;
#else
  return false;
#endif
}
// And AVX-512 VNNI (vpdpbusd) besides.
bool Avx512Vnni() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool ok = Avx512Int8() && __builtin_cpu_supports("avx512vnni");
  return ok;
#else
  return false;
#endif
}
void RequantPixels(const uint32_t* sums, int64_t stride, int64_t npix, int64_t count, const uint32_t* wz, int64_t minus_at, const uint32_t* add,
                   const float* scale, float y_zero, float lo, float hi, uint8_t* out, int64_t out_stride) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (Avx512Int8()) return RequantPixels512(sums, stride, npix, count, wz, minus_at, add, scale, y_zero, lo, hi, out, out_stride);
#endif
  for (int64_t p = 0; p < npix; ++p)
    RequantRow(sums + p * stride, wz, wz ? sums[p * stride + minus_at] : 0u, add, scale, y_zero, lo, hi, out + p * out_stride, count);
}
// dst[i] = src[i] ^ flip.
WEFT_ISA_CLONES void XorBytes(const uint8_t* __restrict src, int64_t n, uint8_t flip, uint8_t* __restrict dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] ^ flip;
}

// A one-channel-per-group convolution with one filter per channel, over pixel rows: acc[ox][ch]
// for one output row, modulo 2^32, the sum over the taps inside the input of (x - xz) * w[tap][ch]
// (w already less its zero point, in the low 16 bits of each value). x: one image, [ih][iw][c].
struct DwNhwc {
  int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, c;
};
template <typename T>
[[gnu::always_inline]] inline void DwRowBody(const DwNhwc& p, const T* __restrict x, int32_t xz, const uint32_t* __restrict w, int64_t oy,
                                             uint32_t* __restrict acc) {
  const int64_t c = p.c;
  for (int64_t i = 0; i < p.ow * c; ++i) acc[i] = 0;
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = oy * p.sh - p.ph + ky * p.dh;
    if (iy < 0 || iy >= p.ih) continue;  // padding holds the zero point: it adds nothing
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const uint32_t* wt = w + (ky * p.kw + kx) * c;
      const int64_t off = kx * p.dw - p.pw;
      const int64_t ox0 = off >= 0 ? 0 : (-off + p.sw - 1) / p.sw;
      const int64_t ox1 = std::min(p.ow, p.iw - off <= 0 ? 0 : (p.iw - off + p.sw - 1) / p.sw);
      const T* row = x + iy * p.iw * c;
      for (int64_t ox = ox0; ox < ox1; ++ox) {
        const T* s = row + (ox * p.sw + off) * c;
        uint32_t* a = acc + ox * c;
        for (int64_t ch = 0; ch < c; ++ch)
          a[ch] += static_cast<uint32_t>(static_cast<int32_t>(s[ch]) - xz) * static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(wt[ch])));
      }
    }
  }
}
// With AVX-512 VNNI, where every weight less its zero point fits int8: vpdpbusd multiplies four
// byte pairs and adds them into each int32 lane, so the taps of a filter row go four to a lane.
// Each input row is first laid out per output column as those lanes (DwInterleave512): for
// channel ch, the dword of bytes x[ix + j * dw][ch], j = 0..3, of the column's taps 4g..4g+3 (int8
// values flipped to uint8 by adding 128; the taps outside the image hold the zero point, so every
// window sums all its taps; past the filter's width, 0). A pixel's sum over all taps of x * w, less
// zero point * (sum of the channel's weights), is then sum (x - zero point) * w.
struct DwVnniPack {
  int64_t groups = 0;         // dwords per filter row: ceil(kw / 4)
  int64_t cpad = 0;           // channels rounded up to 16
  std::vector<uint32_t> w;    // [ky][g][cpad] the four int8 weights of taps 4g..4g+3 of row ky (0 past kw and for padded channels)
  std::vector<int32_t> wsum;  // [cpad] each channel's weights summed
};
// The same row on AVX-512, 16 channels at a time, each pixel's sums kept in a register over its
// taps and rescaled there (RescaleStore512): bytes at out[ox * c + ch], or with
// sums32 given, the int32 sums there instead.
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// One tap of 16 channels: x less its zero point as int32 lanes whose low halves hold it as int16;
// the weights' low halves hold them as int16 and their high halves 0, so vpmaddwd makes one
// product per lane.
template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512i DwTap512(__mmask16 k, const uint8_t* at, __m512i wv, __m512i vxz) {
  const __m128i b = _mm_maskz_loadu_epi8(k, at);
  return _mm512_madd_epi16(_mm512_sub_epi32(kSigned ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b), vxz), wv);
}
template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void DwRow512(const DwNhwc& p, const uint8_t* x, int32_t xz, const uint32_t* w, int64_t oy,
                                                          const uint32_t* add, const float* scale, float y_zero, float lo, float hi, uint8_t* out,
                                                          int32_t* sums32) {
  const int64_t c = p.c;
  int64_t ky0 = 0, ky1 = p.kh;
  while (ky0 < p.kh && oy * p.sh - p.ph + ky0 * p.dh < 0) ++ky0;
  while (ky1 > ky0 && oy * p.sh - p.ph + (ky1 - 1) * p.dh >= p.ih) --ky1;
  const __m512i vxz = _mm512_set1_epi32(xz);
  const __m512 vz = _mm512_set1_ps(y_zero), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const int64_t tap_step = p.dw * c;
  const uint8_t* row0 = x + (oy * p.sh - p.ph) * p.iw * c;
  for (int64_t cb = 0; cb < c; cb += 16) {
    const __mmask16 k = c - cb >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (c - cb)) - 1);
    const __m512i vadd = _mm512_maskz_loadu_epi32(k, add + cb);
    const __m512 vscale = _mm512_maskz_loadu_ps(k, scale + cb);
#define tap(at, wv) DwTap512<kSigned>(k, at, wv, vxz)
#define finish(acc, ox) RescaleStore512(acc, k, vadd, vscale, vz, vlo, vhi, out + (ox) * c + cb, sums32 ? sums32 + (ox) * c + cb : nullptr)
    for (int64_t ox = 0; ox < p.ow;) {
      int64_t kx0 = 0, kx1 = p.kw;
      while (kx0 < p.kw && ox * p.sw - p.pw + kx0 * p.dw < 0) ++kx0;
      while (kx1 > kx0 && ox * p.sw - p.pw + (kx1 - 1) * p.dw >= p.iw) --kx1;
      const uint8_t* px = row0 + (ox * p.sw - p.pw) * c + cb;
      // Four pixels at once where all their taps are inside: four sums in flight, one weight load.
      if (kx0 == 0 && kx1 == p.kw && ox + 3 < p.ow && (ox + 3) * p.sw - p.pw + (p.kw - 1) * p.dw < p.iw) {
        __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
        const int64_t st = p.sw * c;
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          const uint8_t* r = px + ky * p.dh * p.iw * c;
          const uint32_t* wr = w + ky * p.kw * c + cb;
          for (int64_t kx = 0; kx < p.kw; ++kx, r += tap_step) {
            const __m512i wv = _mm512_maskz_loadu_epi32(k, wr + kx * c);
            a0 = _mm512_add_epi32(a0, tap(r, wv));
            a1 = _mm512_add_epi32(a1, tap(r + st, wv));
            a2 = _mm512_add_epi32(a2, tap(r + 2 * st, wv));
            a3 = _mm512_add_epi32(a3, tap(r + 3 * st, wv));
          }
        }
        finish(a0, ox), finish(a1, ox + 1), finish(a2, ox + 2), finish(a3, ox + 3);
        ox += 4;
        continue;
      }
      __m512i acc = _mm512_setzero_si512();
      for (int64_t ky = ky0; ky < ky1; ++ky) {
        const uint8_t* r = px + ky * p.dh * p.iw * c;
        const uint32_t* wr = w + ky * p.kw * c + cb;
        for (int64_t kx = kx0; kx < kx1; ++kx) acc = _mm512_add_epi32(acc, tap(r + kx * tap_step, _mm512_maskz_loadu_epi32(k, wr + kx * c)));
      }
      finish(acc, ox);
      ++ox;
    }
#undef tap
#undef finish
  }
}
bool Vbmi() {
  static const bool ok = __builtin_cpu_supports("avx512vbmi");
  return ok;
}
// The dwords of `taps` (1 to 4) taps `step` bytes apart, all inside the image, for every channel.
template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi"))) void DwInterleaveInside(const uint8_t* at, int64_t step, int64_t taps, int64_t c,
                                                                                int64_t cpad, uint32_t* dst) {
  // Byte 4 * ch + j of the result is byte ch of lane j (tap j); bytes of taps past `taps` are 0.
  alignas(64) static const uint8_t kIndex[64] = {
      0, 16, 32, 48, 1, 17, 33, 49, 2, 18, 34, 50, 3, 19, 35, 51, 4, 20, 36, 52, 5, 21, 37, 53, 6, 22, 38, 54, 7, 23, 39, 55,
      8, 24, 40, 56, 9, 25, 41, 57, 10, 26, 42, 58, 11, 27, 43, 59, 12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};
  const __m512i index = _mm512_load_si512(kIndex);
  const __mmask64 keep = taps >= 4 ? ~0ull : taps == 3 ? 0x7777777777777777ull : taps == 2 ? 0x3333333333333333ull : 0x1111111111111111ull;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t cb = 0; cb < cpad; cb += 16) {
    const __mmask16 k = c - cb >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (c - cb)) - 1);
    __m512i v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(k, at + cb));
    if (taps > 1) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, at + step + cb), 1);
    if (taps > 2) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, at + 2 * step + cb), 2);
    if (taps > 3) v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(k, at + 3 * step + cb), 3);
    if (kSigned) v = _mm512_xor_si512(v, flip);
    _mm512_storeu_si512(dst + cb, _mm512_maskz_permutexvar_epi8(keep, index, v));
  }
}
// One input row iy (any row: outside the image, all zero point) as out[ox][g][cpad].
template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void DwInterleave512(const DwNhwc& p, const uint8_t* img, int64_t iy, const DwVnniPack& pk,
                                                                  uint8_t xzu, uint32_t* out) {
  const int64_t c = p.c, cpad = pk.cpad;
  const __m512i pad = _mm512_set1_epi32(xzu);
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  const bool row_in = iy >= 0 && iy < p.ih;
  for (int64_t ox = 0; ox < p.ow; ++ox)
    for (int64_t g = 0; g < pk.groups; ++g) {
      // All four taps (or all the filter has) inside the image: one byte permutation (VBMI) of
      // their 16-channel loads, placed in the four 128-bit lanes, makes the dwords.
      const int64_t taps = std::min<int64_t>(4, p.kw - 4 * g), ix0 = ox * p.sw - p.pw + 4 * g * p.dw;
      if (Vbmi() && row_in && ix0 >= 0 && ix0 + (taps - 1) * p.dw < p.iw) {
        DwInterleaveInside<kSigned>(img + (iy * p.iw + ix0) * c, p.dw * c, taps, c, cpad, out + (ox * pk.groups + g) * cpad);
        continue;
      }
      uint32_t* dst = out + (ox * pk.groups + g) * cpad;
      for (int64_t cb = 0; cb < cpad; cb += 16) {
        const __mmask16 k = c - cb >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (c - cb)) - 1);
        __m512i v = _mm512_setzero_si512();
        for (int64_t j = 0; j < 4 && 4 * g + j < p.kw; ++j) {
          const int64_t ix = ox * p.sw - p.pw + (4 * g + j) * p.dw;
          __m512i b = pad;
          if (row_in && ix >= 0 && ix < p.iw) {
            __m128i raw = _mm_maskz_loadu_epi8(k, img + (iy * p.iw + ix) * c + cb);
            if (kSigned) raw = _mm_xor_si128(raw, flip);
            b = _mm512_cvtepu8_epi32(raw);
          }
          v = _mm512_or_si512(v, _mm512_slli_epi32(b, static_cast<unsigned>(8 * j)));
        }
        _mm512_storeu_si512(dst + cb, v);
      }
    }
}
// One output row from its kh interleaved input rows, four pixels at a time, rescaled as DwRow512.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void DwRowVnni512(const DwNhwc& p, const uint32_t* const* rows,
                                                                           const DwVnniPack& pk, int32_t xzu, const uint32_t* add,
                                                                           const float* scale, float y_zero, float lo, float hi,
                                                                           uint8_t* out, int32_t* sums32) {
  const int64_t c = p.c, cpad = pk.cpad, gs = pk.groups;
  const __m512 vz = _mm512_set1_ps(y_zero), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  const __m512i vxz = _mm512_set1_epi32(xzu);
  for (int64_t cb = 0; cb < c; cb += 16) {
    const __mmask16 k = c - cb >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (c - cb)) - 1);
    const __m512i vadd = _mm512_maskz_loadu_epi32(k, add + cb);
    const __m512 vscale = _mm512_maskz_loadu_ps(k, scale + cb);
    const __m512i init = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_mullo_epi32(vxz, _mm512_loadu_si512(pk.wsum.data() + cb)));
    int64_t ox = 0;
    for (; ox + 4 <= p.ow; ox += 4) {
      __m512i a0 = init, a1 = init, a2 = init, a3 = init;
      for (int64_t ky = 0; ky < p.kh; ++ky)
        for (int64_t g = 0; g < gs; ++g) {
          const __m512i wv = _mm512_loadu_si512(pk.w.data() + (ky * gs + g) * cpad + cb);
          const uint32_t* r = rows[ky] + (ox * gs + g) * cpad + cb;
          const int64_t st = gs * cpad;
          a0 = _mm512_dpbusd_epi32(a0, _mm512_loadu_si512(r), wv);
          a1 = _mm512_dpbusd_epi32(a1, _mm512_loadu_si512(r + st), wv);
          a2 = _mm512_dpbusd_epi32(a2, _mm512_loadu_si512(r + 2 * st), wv);
          a3 = _mm512_dpbusd_epi32(a3, _mm512_loadu_si512(r + 3 * st), wv);
        }
      const __m512i acc[4] = {a0, a1, a2, a3};
      for (int q = 0; q < 4; ++q)
        RescaleStore512(acc[q], k, vadd, vscale, vz, vlo, vhi, out + (ox + q) * c + cb, sums32 ? sums32 + (ox + q) * c + cb : nullptr);
    }
    for (; ox < p.ow; ++ox) {
      __m512i a = init;
      for (int64_t ky = 0; ky < p.kh; ++ky)
        for (int64_t g = 0; g < gs; ++g)
          a = _mm512_dpbusd_epi32(a, _mm512_loadu_si512(rows[ky] + (ox * gs + g) * cpad + cb), _mm512_loadu_si512(pk.w.data() + (ky * gs + g) * cpad + cb));
      RescaleStore512(a, k, vadd, vscale, vz, vlo, vhi, out + ox * c + cb, sums32 ? sums32 + ox * c + cb : nullptr);
    }
  }
}
#pragma GCC diagnostic pop
#endif
WEFT_ISA_CLONES void DwRowU8(const DwNhwc& p, const uint8_t* x, int32_t xz, const uint32_t* w, int64_t oy, uint32_t* acc) {
  DwRowBody(p, x, xz, w, oy, acc);
}
WEFT_ISA_CLONES void DwRowS8(const DwNhwc& p, const int8_t* x, int32_t xz, const uint32_t* w, int64_t oy, uint32_t* acc) {
  DwRowBody(p, x, xz, w, oy, acc);
}

template <bool kLinear>
class IntegerConv : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public CompilableOp, public RebuildOnLoad, public LayoutAwareOp {
 public:
  static constexpr size_t kW = kLinear ? 3 : 1;
  // Pixel rows (NHWC) for the 2-D convolutions whose fast kernels work on them: several input
  // channels per group or one input channel to many filters (the 8-bit GEMM kernels, where linked
  // in) and one channel and one filter per group (DepthwiseRows). The input and the output independently: a layer between two that
  // take pixel rows exchanges them with both, one beside another op converts on its side.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(kW);
    const int64_t* group = ctx->GetAttrs()->GetInt("group");
    if (!x || !wt || !group || *group <= 0 || x->GetShape().GetDimNum() != 4 || wt->GetShape().GetDimNum() != 4) return GRAPH_SUCCESS;
    const int64_t c = x->GetShape().GetDim(1), m = wt->GetShape().GetDim(0), cg = wt->GetShape().GetDim(1);
    if (c <= 0 || m <= 0 || cg <= 0) return GRAPH_SUCCESS;
    s.Format(FORMAT_NHWC).Input(0).Output(0);
    const bool rows = (cg == 1 && m == *group) || ((cg > 1 || (*group == 1 && m >= 16)) && Int8ConvSums);  // as Execute picks
    if (!rows) s.Slow();  // runs, through plain-layout copies
    return GRAPH_SUCCESS;
  }
  // Constant filters laid out once: for Grouped (several input channels per group) or for
  // DepthwiseRows (one filter per channel). An output planned as pixel rows gets its size.
  graphStatus Compile(OpCompileContext* ctx) override {
    wpack_.clear();
    wpre_.clear();
    dwpack_.clear();
    dwvnni_ = DwVnniPack();
    const Tensor* yt = ctx->GetOutputTensor(0);
    if (yt && yt->GetFormat() == FORMAT_NHWC &&
        ctx->SetOutputStorage(0, static_cast<uint64_t>(yt->GetShapeSize()) * (kLinear ? 1u : 4u), FORMAT_NHWC) != GRAPH_SUCCESS)
      return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(kW);
    const Tensor* wzp = kLinear ? ctx->GetInputTensor(5) : ctx->GetOptionalInputTensor(3);
    const int64_t* group = ctx->GetAttrs()->GetInt("group");
    if (x && wt && wt->GetAddr() && group && *group > 0 && wt->GetShape().GetDimNum() >= 3 && wt->GetShape().GetDim(1) == 1 &&
        wt->GetShape().GetDim(0) == *group && (!wzp || wzp->GetAddr()) &&
        (!wzp || wzp->GetShapeSize() == 1 || wzp->GetShapeSize() == wt->GetShape().GetDim(0)))
    {
      PackDepthwise(wt, wzp, &dwpack_);
      const size_t r = wt->GetShape().GetDimNum();
      if (r == 3 || r == 4)
        PackDepthwiseVnni(dwpack_, wt->GetShape().GetDim(0), r == 4 ? wt->GetShape().GetDim(2) : 1, wt->GetShape().GetDim(r - 1), &dwvnni_);
    }
    if (!Int8ConvSums || !x || !wt || !wt->GetAddr() || !group || *group <= 0 || x->GetShape().GetDimNum() < 3 || wt->GetShape().GetDimNum() < 3 ||
        (wzp && !wzp->GetAddr()))
      return GRAPH_SUCCESS;
    const int64_t c = x->GetShape().GetDim(1), m = wt->GetShape().GetDim(0), cg = wt->GetShape().GetDim(1);
    if (c <= 0 || m <= 0 || cg <= 1 || c != cg * *group || m % *group) return GRAPH_SUCCESS;
    int64_t k_sp = 1;
    for (size_t d = 2; d < wt->GetShape().GetDimNum(); ++d) k_sp *= wt->GetShape().GetDim(d);
    if (wzp && wzp->GetShapeSize() != 1 && wzp->GetShapeSize() != m) return GRAPH_SUCCESS;
    wpack_key_ = {m, cg, k_sp, *group};
    PackFilters(wt, wzp, m, cg, k_sp, *group, &wpack_);
    const int64_t k = k_sp * cg, cols = static_cast<int64_t>(wpack_.size()) / (*group * k);
    for (int64_t g = 0; Int8PackB && g < *group; ++g) wpre_.push_back(Int8PackB(wpack_.data() + g * cols * k, cols, k));
    return GRAPH_SUCCESS;
  }
  // Execute's loops in C for 1 to 3 spatial dims (fewer as leading dims of 1); the same int64
  // sums, wrapped to int32, and for QLinearConv the same float rescaling.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(kW);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), wt->GetShape(), &w, &err)) return Fail(ctx, err);
    if (w.nd < 1 || w.nd > 3) return Fail(ctx, "the generated C takes 1 to 3 spatial dims");
    const int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1), m = wt->GetShape().GetDim(0);
    const int64_t group = *ctx->GetAttrs()->GetInt("group"), cg = c / group, mg = m / group;
    const Tensor* xzp = kLinear ? ctx->GetInputTensor(2) : ctx->GetOptionalInputTensor(2);
    const Tensor* wzp = kLinear ? ctx->GetInputTensor(5) : ctx->GetOptionalInputTensor(3);
    if (xzp && xzp->GetShapeSize() != 1) return Fail(ctx, "the input zero point must be a scalar");
    if (wzp && wzp->GetShapeSize() != 1 && wzp->GetShapeSize() != m) return Fail(ctx, "the weight zero point must be a scalar or one per output channel");
    int64_t I[3], O[3], K[3], S[3], D[3], P[3];
    for (size_t d = 0; d < 3; ++d) {
      const bool real = d >= 3 - w.nd;
      const size_t r = real ? d - (3 - w.nd) : 0;
      I[d] = real ? w.in[r] : 1, O[d] = real ? w.out[r] : 1, K[d] = real ? w.k[r] : 1;
      S[d] = real ? w.s[r] : 1, D[d] = real ? w.d[r] : 1, P[d] = real ? w.pb[r] : 0;
    }
    auto L = [](int64_t v) { return aot::IntLit(v); };
    const std::string tx = aot::CType(x->GetDataType()), tw = aot::CType(wt->GetDataType());
    std::string r = "{\n  const " + tx + "* X = " + ctx->Input(0, tx.c_str()) + ";\n  const " + tw + "* W = " + ctx->Input(kLinear ? 3 : 1, tw.c_str()) + ";\n";
    r += "  int64_t in, oc, o0, o1, o2, k0, k1, k2, ic;\n";
    const std::string xz = xzp ? "(int64_t)" + ctx->Input(kLinear ? 2 : 2, aot::CType(xzp->GetDataType()).c_str()) + "[0]" : std::string("0");
    const size_t iwz = kLinear ? 5 : (xzp ? 3 : 2);
    const std::string wz = wzp ? "(int64_t)" + ctx->Input(iwz, aot::CType(wzp->GetDataType()).c_str()) + (wzp->GetShapeSize() == 1 ? "[0]" : "[oc]") : std::string("0");
    std::string ty;
    int64_t lo = -128, hi = 127;
    if (kLinear) {
      const Tensor* yzp = ctx->GetInputTensor(7);
      const Tensor* ws = ctx->GetInputTensor(4);
      const Tensor* b = ctx->GetOptionalInputTensor(8);
      if (ctx->GetInputTensor(1)->GetShapeSize() != 1 || ctx->GetInputTensor(6)->GetShapeSize() != 1 || yzp->GetShapeSize() != 1 ||
          (ws->GetShapeSize() != 1 && ws->GetShapeSize() != m) || (b && (b->GetDataType() != DT_INT32 || b->GetShapeSize() != m)))
        return Fail(ctx, "x_scale, y_scale and y_zero_point must be scalars, w_scale a scalar or one per output channel, B int32 per output channel");
      ty = aot::CType(yzp->GetDataType());
      if (yzp->GetDataType() == DT_UINT8) lo = 0, hi = 255;
      ctx->Include("<math.h>");
      r += "  const float* xs = " + ctx->Input(1, "float") + ";\n  const float* ws = " + ctx->Input(4, "float") + ";\n  const float* ys = " +
           ctx->Input(6, "float") + ";\n  const float yz = (float)" + ctx->Input(7, ty.c_str()) + "[0];\n  " + ty + "* Y = " + ctx->Output(0, ty.c_str()) + ";\n";
      r += "  const int32_t* B = " + (b ? ctx->Input(8, "int32_t") : std::string("0")) + ";\n";
      r += "  for (oc = 0; oc < " + L(ws->GetShapeSize()) + "; ++oc) {\n    const float sc = xs[0] * ws[oc] / ys[0];\n    if (!(sc >= 0.f) || sc > 3.402823466e38f) return 1;\n  }\n";
    } else {
      r += "  int32_t* Y = " + ctx->Output(0, "int32_t") + ";\n";
    }
    r += "  for (in = 0; in < " + L(n) + "; ++in)\n  for (oc = 0; oc < " + L(m) + "; ++oc) {\n    const int64_t g = oc / " + L(mg) + ", wz = " + wz +
         ", xz = " + xz + ";\n";
    r += "    for (o0 = 0; o0 < " + L(O[0]) + "; ++o0) for (o1 = 0; o1 < " + L(O[1]) + "; ++o1) for (o2 = 0; o2 < " + L(O[2]) + "; ++o2) {\n";
    r += "      int64_t acc = 0;\n      const int64_t at = ((in * " + L(m) + " + oc) * " + L(O[0]) + " + o0) * " + L(O[1] * O[2]) + " + o1 * " + L(O[2]) + " + o2;\n";
    r += "      for (k0 = 0; k0 < " + L(K[0]) + "; ++k0) for (k1 = 0; k1 < " + L(K[1]) + "; ++k1) for (k2 = 0; k2 < " + L(K[2]) + "; ++k2) {\n";
    r += "        const int64_t p0 = o0 * " + L(S[0]) + " - " + L(P[0]) + " + k0 * " + L(D[0]) + ", p1 = o1 * " + L(S[1]) + " - " + L(P[1]) +
         " + k1 * " + L(D[1]) + ", p2 = o2 * " + L(S[2]) + " - " + L(P[2]) + " + k2 * " + L(D[2]) + ";\n";
    r += "        if (p0 < 0 || p0 >= " + L(I[0]) + " || p1 < 0 || p1 >= " + L(I[1]) + " || p2 < 0 || p2 >= " + L(I[2]) + ") continue;\n";
    r += "        for (ic = 0; ic < " + L(cg) + "; ++ic)\n          acc += ((int64_t)X[((in * " + L(c) + " + g * " + L(cg) + " + ic) * " + L(I[0]) +
         " + p0) * " + L(I[1] * I[2]) + " + p1 * " + L(I[2]) + " + p2] - xz) * ((int64_t)W[((oc * " + L(cg) + " + ic) * " + L(K[0]) + " + k0) * " +
         L(K[1] * K[2]) + " + k1 * " + L(K[2]) + " + k2] - wz);\n      }\n";
    if (kLinear) {
      r += "      {\n        const int32_t sum = (int32_t)(uint32_t)(uint64_t)(acc + (B ? B[oc] : 0));\n";
      r += "        float v = nearbyintf((float)sum * (xs[0] * ws[" + std::string(ctx->GetInputTensor(4)->GetShapeSize() == 1 ? "0" : "oc") +
           "] / ys[0])) + yz;\n";
      r += "        v = v < " + L(lo) + ".f ? " + L(lo) + ".f : v > " + L(hi) + ".f ? " + L(hi) + ".f : v;\n        Y[at] = (" + ty + ")v;\n      }\n";
    } else {
      r += "      Y[at] = (int32_t)(uint32_t)(uint64_t)acc;\n";
    }
    r += "    }\n  }\n}\n";
    ctx->Run(r);
    return GRAPH_SUCCESS;
  }
  // Conv's geometry: the same attributes and checks.
  static bool Geometry(const KernelContextBase* ctx, const Shape& x, const Shape& wt, Window* w, std::string* err) {
    return Conv::Geometry(ctx, x, wt, w, err);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    const Shape& wt = *ctx->GetInputShape(kW);
    Window w;
    std::string err;
    if (!Geometry(ctx, x, wt, &w, &err)) return Fail(ctx, err);
    Shape y({x.GetDim(0), wt.GetDim(0)});
    for (size_t i = 0; i < w.nd; ++i) y.AppendDim(w.out[i]);
    *ctx->GetOutputShape(0) = y;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    auto eight = [](DataType t) { return t == DT_INT8 || t == DT_UINT8; };
    if (!eight(ctx->GetInputDataType(0)) || !eight(ctx->GetInputDataType(kW))) return Fail(ctx, "x and w must be int8 or uint8");
    if (const Tensor* xz = ctx->GetOptionalInputTensor(2); xz && xz->GetDataType() != ctx->GetInputDataType(0))
      return Fail(ctx, std::string("x_zero_point is ") + DataTypeName(xz->GetDataType()) + " but x is " + DataTypeName(ctx->GetInputDataType(0)));
    if (!kLinear) return ctx->SetOutputDataType(0, DT_INT32);
    if (!eight(ctx->GetInputDataType(7))) return Fail(ctx, "y_zero_point must be int8 or uint8");
    return ctx->SetOutputDataType(0, ctx->GetInputDataType(7));
  }
  static int64_t At(const Tensor* t, int64_t i) {
    return t->GetDataType() == DT_INT8 ? int64_t{t->GetData<int8_t>()[i]} : int64_t{t->GetData<uint8_t>()[i]};
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(kW);
    const Tensor* xzp = kLinear ? ctx->GetInputTensor(2) : ctx->GetOptionalInputTensor(2);
    const Tensor* wzp = kLinear ? ctx->GetInputTensor(5) : ctx->GetOptionalInputTensor(3);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), wt->GetShape(), &w, &err)) return Fail(ctx, err);
    const int64_t n = x->GetShape().GetDim(0), c = x->GetShape().GetDim(1), m = wt->GetShape().GetDim(0);
    const int64_t group = *ctx->GetAttrs()->GetInt("group"), cg = c / group, mg = m / group;
    if (xzp && xzp->GetShapeSize() != 1) return Fail(ctx, "the input zero point must be a scalar, not " + xzp->GetShape().ToString());
    if (wzp && wzp->GetShapeSize() != 1 && wzp->GetShapeSize() != m)
      return Fail(ctx, "the weight zero point " + wzp->GetShape().ToString() + " must be a scalar or hold one value per output channel (" + std::to_string(m) + ")");
    const Tensor *xs = nullptr, *ws = nullptr, *ys = nullptr, *yzp = nullptr, *b = nullptr;
    if (kLinear) {
      xs = ctx->GetInputTensor(1), ws = ctx->GetInputTensor(4), ys = ctx->GetInputTensor(6), yzp = ctx->GetInputTensor(7), b = ctx->GetOptionalInputTensor(8);
      if (xs->GetShapeSize() != 1 || ys->GetShapeSize() != 1 || yzp->GetShapeSize() != 1 || (ws->GetShapeSize() != 1 && ws->GetShapeSize() != m))
        return Fail(ctx, "x_scale, y_scale and y_zero_point must be scalars and w_scale a scalar or one per output channel");
      if (b && (b->GetDataType() != DT_INT32 || b->GetShapeSize() != m)) return Fail(ctx, "B must be int32 with one value per output channel");
      for (int64_t k = 0; k < ws->GetShapeSize(); ++k) {
        const float scale = xs->GetData<float>()[0] * ws->GetData<float>()[k] / ys->GetData<float>()[0];
        if (!std::isfinite(scale) || scale < 0.f)
          return Fail(ctx, "x_scale * w_scale / y_scale is " + std::to_string(scale) + "; the scales must be positive and finite");
      }
    }
    Shape ys_shape({n, m});
    int64_t out_sp = 1, in_sp = 1, k_sp = 1;
    for (size_t i = 0; i < w.nd; ++i) ys_shape.AppendDim(w.out[i]), out_sp *= w.out[i], in_sp *= w.in[i], k_sp *= w.k[i];
    Tensor* y = ctx->MallocOutputTensor(0, ys_shape, kLinear ? yzp->GetDataType() : DT_INT32);
    if (!y) return GRAPH_FAILED;
    const int64_t x_zero = xzp ? At(xzp, 0) : 0;
    int64_t lo = -128, hi = 127;
    if (kLinear && yzp->GetDataType() == DT_UINT8) lo = 0, hi = 255;
    // The wrapped sums of output elements stored: as they are, or with the bias, rescaled in float
    // and rounded to even, plus the output zero point, clamped.
    Requant store;
    store.y = y->GetAddr();
    store.lo = static_cast<float>(lo), store.hi = static_cast<float>(hi);
    if (kLinear) {
      store.kind = yzp->GetDataType() == DT_INT8 ? 1 : 2;
      for (int64_t k = 0; k < ws->GetShapeSize(); ++k)
        store.scales.push_back(xs->GetData<float>()[0] * ws->GetData<float>()[k] / ys->GetData<float>()[0]);
      store.y_zero = static_cast<float>(At(yzp, 0));
      store.bias = b ? b->GetData<int32_t>() : nullptr;
    }
    store.PerChannel(m);
    // Where the layout pass planned pixel rows (NHWC) for the input or the output.
    const bool x_nhwc = w.nd == 2 && x->GetFormat() == FORMAT_NHWC, y_nhwc = w.nd == 2 && y->GetFormat() == FORMAT_NHWC;
    if (w.nd <= 2 && cg == 1 && mg == 1) return DepthwiseRows(ctx, w, x, wt, wzp, x_zero, n, c, x_nhwc, y_nhwc, store);
    // A single input channel feeding many filters (a first layer over one channel: spectrograms,
    // grey images) is a GEMM of k = kh * kw too, far faster than a plane per filter.
    if (w.nd <= 2 && (cg > 1 || (group == 1 && m >= 16)) && Int8ConvSums) {
      const int fast = Grouped(ctx, w, x, wt, wzp, x_zero, n, c, m, group, x_nhwc, y_nhwc, store);
      if (fast != kNotApplicable) return fast;
    }
    // The other kernels read and write channel planes: pixel rows are converted on either side.
    const auto* xraw = static_cast<const uint8_t*>(x->GetAddr());
    if (x_nhwc) {
      auto* t = static_cast<uint8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n * c * in_sp)));
      if (!t) return GRAPH_FAILED;
      Relayout<uint8_t>(ctx, false, xraw, n, c, in_sp, t);
      xraw = t;
    }
    const size_t esize = kLinear ? 1 : 4;
    if (y_nhwc && !(store.y = ctx->MallocWorkSpace(static_cast<size_t>(n * m * out_sp) * esize))) return GRAPH_FAILED;
    const graphStatus st = PlainKernels(ctx, w, xraw, x->GetDataType() == DT_INT8, wt, wzp, x_zero, n, c, m, mg, cg, k_sp, in_sp, out_sp, store);
    if (st != GRAPH_SUCCESS || !y_nhwc) return st;
    if (esize == 1)
      Relayout<uint8_t>(ctx, true, static_cast<const uint8_t*>(store.y), n, m, out_sp, static_cast<uint8_t*>(y->GetAddr()));
    else
      Relayout<uint32_t>(ctx, true, static_cast<const uint32_t*>(store.y), n, m, out_sp, static_cast<uint32_t*>(y->GetAddr()));
    return GRAPH_SUCCESS;
  }

  // Stores wrapped int32 sums of one output channel: int32 as they are (kind 0), or int8 (1) /
  // uint8 (2) as QLinearConv's rescaling gives them (ONNX Runtime's arithmetic: the sum plus the
  // bias, wrapped, times x_scale * w_scale[oc] / y_scale in float, rounded half to even, plus the
  // output zero point, clamped).
  struct Requant {
    void* y = nullptr;
    int kind = 0;
    std::vector<float> scales;
    const int32_t* bias = nullptr;
    float y_zero = 0.f, lo = 0.f, hi = 0.f;
    std::vector<float> scale_c;     // per output channel (PerChannel)
    std::vector<uint32_t> add_c;    // the bias per output channel, or 0
    void PerChannel(int64_t m) {
      scale_c.assign(static_cast<size_t>(m), 0.f);
      add_c.assign(static_cast<size_t>(m), 0u);
      for (int64_t oc = 0; oc < m; ++oc) {
        if (!scales.empty()) scale_c[static_cast<size_t>(oc)] = scales[scales.size() == 1 ? 0 : static_cast<size_t>(oc)];
        if (bias) add_c[static_cast<size_t>(oc)] = static_cast<uint32_t>(bias[oc]);
      }
    }
    // One pixel's sums of output channels oc0 .. oc0 + count - 1 (less wz[q] * minus where wz is
    // given), stored at `out` (channels consecutive) as int32 (kind 0) or rescaled bytes.
    void RowNhwc(int64_t oc0, const uint32_t* sums, int64_t count, const uint32_t* wz, uint32_t minus, void* out) const {
      if (kind == 0) {
        auto* o = static_cast<int32_t*>(out);
        for (int64_t q = 0; q < count; ++q) o[q] = static_cast<int32_t>(sums[q] - (wz ? wz[q] * minus : 0u));
        return;
      }
      RequantRow(sums, wz, minus, add_c.data() + oc0, scale_c.data() + oc0, y_zero, lo, hi, static_cast<uint8_t*>(out), count);
    }
    // RowNhwc for npix pixels: pixel p's sums at sums + p * stride (its inputs' sum, which wz
    // multiplies, at sums + p * stride + minus_at), its outputs at out + p * out_stride elements.
    void PixelsNhwc(int64_t oc0, const uint32_t* sums, int64_t stride, int64_t npix, int64_t count, const uint32_t* wz, int64_t minus_at,
                    void* out, int64_t out_stride) const {
      if (kind == 0) {
        for (int64_t p = 0; p < npix; ++p)
          RowNhwc(oc0, sums + p * stride, count, wz, wz ? sums[p * stride + minus_at] : 0u, static_cast<int32_t*>(out) + p * out_stride);
        return;
      }
      RequantPixels(sums, stride, npix, count, wz, minus_at, add_c.data() + oc0, scale_c.data() + oc0, y_zero, lo, hi, static_cast<uint8_t*>(out),
                    out_stride);
    }
    // y[at + q] for q < count from sums[q * stride], less z * minus[q * stride] when minus is given.
    void Run(int64_t at, int64_t oc, const uint32_t* sums, int64_t stride, int64_t count, const uint32_t* minus = nullptr,
             uint32_t z = 0) const {
      if (kind == 0) {
        auto* out = static_cast<int32_t*>(y) + at;
        for (int64_t q = 0; q < count; ++q) out[q] = static_cast<int32_t>(sums[q * stride] - (minus ? z * minus[q * stride] : 0u));
        return;
      }
      const uint32_t add = static_cast<uint32_t>(bias ? bias[oc] : 0);
      const float scale = scales[scales.size() == 1 ? 0 : static_cast<size_t>(oc)];
      if (kind == 1) Store(static_cast<int8_t*>(y) + at, sums, stride, count, minus, z, add, scale);
      else Store(static_cast<uint8_t*>(y) + at, sums, stride, count, minus, z, add, scale);
    }
    template <typename T>
    void Store(T* out, const uint32_t* sums, int64_t stride, int64_t count, const uint32_t* minus, uint32_t z, uint32_t add, float scale) const {
      float f[1024];
      for (int64_t q0 = 0; q0 < count; q0 += 1024) {
        const int64_t len = std::min<int64_t>(1024, count - q0);
        RequantToFloat(sums + q0 * stride, minus ? minus + q0 * stride : nullptr, stride, len, z, add, scale, y_zero, lo, hi, f);
        for (int64_t q = 0; q < len; ++q) out[q0 + q] = static_cast<T>(static_cast<int32_t>(f[q]));
      }
    }
  };

 private:
  static constexpr int kNotApplicable = -1;
  // Channel planes in, channel planes out (x: the input's bytes): the depthwise kernel with
  // several filters per channel, else direct loops.
  graphStatus PlainKernels(EagerOpExecutionContext* ctx, const Window& w, const uint8_t* xraw, bool x8, const Tensor* wt, const Tensor* wzp,
                           int64_t x_zero, int64_t n, int64_t c, int64_t m, int64_t mg, int64_t cg, int64_t k_sp, int64_t in_sp, int64_t out_sp,
                           const Requant& store) const {
    if (w.nd <= 2 && cg == 1) {
      const int fast = Depthwise(ctx, w, xraw, x8, wt, wzp, x_zero, n, m, mg, store);
      if (fast != kNotApplicable) return fast;
    }
    auto X = [&](int64_t i) { return x8 ? int64_t{reinterpret_cast<const int8_t*>(xraw)[i]} : int64_t{xraw[i]}; };
    return ctx->ParallelFor(n * m, 1, [&](int64_t r0, int64_t r1) {
      int64_t oi[WEFT_MAX_DIMS], ki[WEFT_MAX_DIMS];
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t in = r / m, oc = r % m, g = oc / mg;
        const int64_t w_zero = wzp ? At(wzp, wzp->GetShapeSize() == 1 ? 0 : oc) : 0;
        for (int64_t o = 0; o < out_sp; ++o) {
          for (size_t i = w.nd, rest = static_cast<size_t>(o); i-- > 0;) oi[i] = static_cast<int64_t>(rest % static_cast<size_t>(w.out[i])), rest /= static_cast<size_t>(w.out[i]);
          int64_t acc = 0;
          for (int64_t kk = 0; kk < k_sp; ++kk) {
            for (size_t i = w.nd, rest = static_cast<size_t>(kk); i-- > 0;) ki[i] = static_cast<int64_t>(rest % static_cast<size_t>(w.k[i])), rest /= static_cast<size_t>(w.k[i]);
            int64_t lin = 0;
            bool inside = true;
            for (size_t i = 0; i < w.nd && inside; ++i) {
              const int64_t p = oi[i] * w.s[i] - w.pb[i] + ki[i] * w.d[i];
              inside = p >= 0 && p < w.in[i];
              lin = lin * w.in[i] + p;
            }
            if (!inside) continue;  // padding holds the zero point: (x_zero - x_zero) * w adds nothing
            for (int64_t icg = 0; icg < cg; ++icg)
              acc += (X((in * c + g * cg + icg) * in_sp + lin) - x_zero) * (At(wt, (oc * cg + icg) * k_sp + kk) - w_zero);
          }
          const uint32_t sum = static_cast<uint32_t>(static_cast<uint64_t>(acc));
          store.Run(r * out_sp + o, oc, &sum, 1, 1);
        }
      }
    });
  }

  // 1 or 2 spatial dims as H x W (a 1-D window as 1 x W).
  struct Plane {
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
    explicit Plane(const Window& w) {
      const bool two = w.nd == 2;
      ih = two ? w.in[0] : 1, iw = w.in[w.nd - 1], oh = two ? w.out[0] : 1, ow = w.out[w.nd - 1];
      kh = two ? w.k[0] : 1, kw = w.k[w.nd - 1], sh = two ? w.s[0] : 1, sw = w.s[w.nd - 1];
      dh = two ? w.d[0] : 1, dw = w.d[w.nd - 1], ph = two ? w.pb[0] : 0, pw = w.pb[w.nd - 1];
    }
  };
  static int64_t Shift(const Tensor* t) { return t->GetDataType() == DT_UINT8 ? 128 : 0; }
  // Grouped's filters: per group, [filters][taps][channels] as int8 (uint8 less 128), then a filter
  // of ones when some weight zero point (less the same 128) is not 0.
  static void PackFilters(const Tensor* wt, const Tensor* wzp, int64_t m, int64_t cg, int64_t k_sp, int64_t group, std::vector<int8_t>* out) {
    bool any_wz = false;
    for (int64_t oc = 0; oc < m; ++oc) any_wz = any_wz || (wzp ? At(wzp, wzp->GetShapeSize() == 1 ? 0 : oc) : 0) - Shift(wt) != 0;
    const int64_t mg = m / group, k = k_sp * cg, cols = mg + (any_wz ? 1 : 0);
    out->assign(static_cast<size_t>(group * cols * k), 1);
    const auto* wb = static_cast<const uint8_t*>(wt->GetAddr());
    const uint8_t flip = Shift(wt) ? 0x80 : 0;
    for (int64_t g = 0; g < group; ++g)
      for (int64_t o = 0; o < mg; ++o)
        for (int64_t icg = 0; icg < cg; ++icg)
          for (int64_t kk = 0; kk < k_sp; ++kk)
            (*out)[static_cast<size_t>((g * cols + o) * k + kk * cg + icg)] = static_cast<int8_t>(wb[((g * mg + o) * cg + icg) * k_sp + kk] ^ flip);
  }
  std::vector<int8_t> wpack_;
  std::array<int64_t, 4> wpack_key_{};
  std::vector<std::shared_ptr<const Int8PackedB>> wpre_;  // wpack_'s groups laid out for the kernel (Int8PackB)
  // DepthwiseRows' filters: [tap][channel], each weight less its zero point (within +-255) in the
  // low 16 bits, the high 16 bits 0 (what vpmaddwd takes).
  static void PackDepthwise(const Tensor* wt, const Tensor* wzp, std::vector<uint32_t>* out) {
    const int64_t m = wt->GetShape().GetDim(0), k_sp = wt->GetShapeSize() / std::max<int64_t>(1, m);
    out->assign(static_cast<size_t>(m * k_sp), 0);
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t wz = wzp ? At(wzp, wzp->GetShapeSize() == 1 ? 0 : oc) : 0;
      for (int64_t t = 0; t < k_sp; ++t) (*out)[static_cast<size_t>(t * m + oc)] = static_cast<uint32_t>(At(wt, oc * k_sp + t) - wz) & 0xFFFFu;
    }
  }
  std::vector<uint32_t> dwpack_;
  // The same filters for DwRowVnni512, where the CPU has VNNI and they fit int8; else empty.
  static void PackDepthwiseVnni(const std::vector<uint32_t>& dw, int64_t c, int64_t kh, int64_t kw, DwVnniPack* pk) {
    *pk = DwVnniPack();
    if (!Avx512Vnni() || c <= 0 || kh <= 0 || kw <= 0 || static_cast<int64_t>(dw.size()) != c * kh * kw) return;
    const int64_t gs = (kw + 3) / 4, cpad = (c + 15) / 16 * 16;
    std::vector<uint32_t> w(static_cast<size_t>(kh * gs * cpad), 0);
    std::vector<int32_t> sum(static_cast<size_t>(cpad), 0);
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t kx = 0; kx < kw; ++kx)
        for (int64_t ch = 0; ch < c; ++ch) {
          const int v = static_cast<int16_t>(dw[static_cast<size_t>((ky * kw + kx) * c + ch)] & 0xFFFFu);
          if (v < -128 || v > 127) return;
          w[static_cast<size_t>((ky * gs + kx / 4) * cpad + ch)] |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * (kx % 4));
          sum[static_cast<size_t>(ch)] += v;
        }
    pk->groups = gs, pk->cpad = cpad, pk->w = std::move(w), pk->wsum = std::move(sum);
  }
  DwVnniPack dwvnni_;
  // One channel and one filter per group, over pixel rows: each output row's sums for every
  // channel at once (DwRowU8/DwRowS8, which vectorize across channels), rescaled as they come.
  // Channel planes are converted to pixel rows first, and the output row scattered back to planes,
  // where the layout pass did not plan pixel rows.
  graphStatus DepthwiseRows(EagerOpExecutionContext* ctx, const Window& w, const Tensor* x, const Tensor* wt, const Tensor* wzp, int64_t x_zero,
                            int64_t n, int64_t c, bool x_nhwc, bool y_nhwc, const Requant& store) const {
    const Plane p(w);
    const int64_t in_sp = p.ih * p.iw, out_sp = p.oh * p.ow, k_sp = p.kh * p.kw;
    const bool s8 = x->GetDataType() == DT_INT8;
    const auto* xb = static_cast<const uint8_t*>(x->GetAddr());
    if (!x_nhwc) {
      auto* t = static_cast<uint8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n * c * in_sp)));
      if (!t) return GRAPH_FAILED;
      Relayout<uint8_t>(ctx, true, xb, n, c, in_sp, t);
      xb = t;
    }
    const uint32_t* wv = dwpack_.data();
    if (dwpack_.size() != static_cast<size_t>(c * k_sp)) {  // filters not constant at Compile
      std::vector<uint32_t> tmp;
      PackDepthwise(wt, wzp, &tmp);
      auto* ws = static_cast<uint32_t*>(ctx->MallocWorkSpace(tmp.size() * sizeof(uint32_t)));
      if (!ws) return GRAPH_FAILED;
      std::memcpy(ws, tmp.data(), tmp.size() * sizeof(uint32_t));
      wv = ws;
    }
    const DwNhwc d{p.ih, p.iw, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.ph, p.pw, c};
    const size_t esize = store.kind == 0 ? 4 : 1;
    const auto xz = static_cast<int32_t>(x_zero);
    const bool avx512 = Avx512Int8();
    // VNNI: the constant filters packed at Compile for this geometry.
    const bool vnni = avx512 && wv == dwpack_.data() && dwvnni_.cpad == (c + 15) / 16 * 16 &&
                      static_cast<int64_t>(dwvnni_.w.size()) == p.kh * ((p.kw + 3) / 4) * dwvnni_.cpad && dwvnni_.groups == (p.kw + 3) / 4;
    const int32_t xzu = s8 ? xz + 128 : xz;
    // Rows a window reaches span (kh - 1) * dh + 1 input rows; with a large dilation, one slot per
    // filter row instead (fewer rows kept, rebuilt when they change).
    const int64_t reach = (p.kh - 1) * p.dh + 1, span = reach <= 4 * p.kh ? reach : p.kh;
    const int64_t row_words = p.ow * dwvnni_.groups * dwvnni_.cpad;
    return ctx->ParallelFor(n * p.oh, 1, [&](int64_t r0, int64_t r1) {
      std::vector<uint32_t> acc(avx512 ? 0 : static_cast<size_t>(p.ow * c));
      std::vector<uint32_t> rowbuf(y_nhwc ? 0 : static_cast<size_t>(p.ow * c));
      auto* row = reinterpret_cast<uint8_t*>(rowbuf.data());
      // VNNI: the interleaved input rows the last output rows read, in slots by row modulo `span`.
      std::vector<uint32_t> ring(vnni ? static_cast<size_t>(span * row_words) : 0);
      std::vector<int64_t> ring_img(vnni ? static_cast<size_t>(span) : 0, -1), ring_row(ring_img.size(), 0);
      std::vector<const uint32_t*> rows(vnni ? static_cast<size_t>(p.kh) : 0);
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t in = r / p.oh, oy = r % p.oh;
        const uint8_t* img = xb + in * in_sp * c;
        auto* dst = y_nhwc ? static_cast<uint8_t*>(store.y) + static_cast<size_t>((in * p.oh + oy) * p.ow * c) * esize : row;
#if defined(__x86_64__) && defined(__GNUC__)
        if (vnni) {
          for (int64_t ky = 0; ky < p.kh; ++ky) {
            const int64_t iy = oy * p.sh - p.ph + ky * p.dh, slot = span == reach ? ((iy % span) + span) % span : ky;
            uint32_t* buf = ring.data() + slot * row_words;
            if (ring_img[static_cast<size_t>(slot)] != in || ring_row[static_cast<size_t>(slot)] != iy) {
              (s8 ? DwInterleave512<true> : DwInterleave512<false>)(d, img, iy, dwvnni_, static_cast<uint8_t>(xzu), buf);
              ring_img[static_cast<size_t>(slot)] = in, ring_row[static_cast<size_t>(slot)] = iy;
            }
            rows[static_cast<size_t>(ky)] = buf;
          }
          auto* s32 = store.kind == 0 ? reinterpret_cast<int32_t*>(dst) : nullptr;
          DwRowVnni512(d, rows.data(), dwvnni_, xzu, store.add_c.data(), store.scale_c.data(), store.y_zero, store.lo, store.hi, dst, s32);
        } else if (avx512) {
          auto* s32 = store.kind == 0 ? reinterpret_cast<int32_t*>(dst) : nullptr;
          (s8 ? DwRow512<true> : DwRow512<false>)(d, img, xz, wv, oy, store.add_c.data(), store.scale_c.data(), store.y_zero, store.lo, store.hi,
                                                  dst, s32);
        } else
#endif
        {
          if (s8) DwRowS8(d, reinterpret_cast<const int8_t*>(img), xz, wv, oy, acc.data());
          else DwRowU8(d, img, xz, wv, oy, acc.data());
          store.PixelsNhwc(0, acc.data(), c, p.ow, c, nullptr, 0, dst, c);
        }
        if (y_nhwc) continue;
        const int64_t at = in * c * out_sp + oy * p.ow;  // channel ch's row starts at at + ch * out_sp
        if (esize == 1) {
          auto* y = static_cast<uint8_t*>(store.y);
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t ox = 0; ox < p.ow; ++ox) y[at + ch * out_sp + ox] = row[static_cast<size_t>(ox * c + ch)];
        } else {
          auto* y = static_cast<int32_t*>(store.y);
          const auto* rw = reinterpret_cast<const int32_t*>(rowbuf.data());
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t ox = 0; ox < p.ow; ++ox) y[at + ch * out_sp + ox] = rw[ox * c + ch];
        }
      }
    });
  }
  // One input channel per group: per output channel, whole output rows accumulated tap by tap.
  int Depthwise(EagerOpExecutionContext* ctx, const Window& w, const uint8_t* xraw, bool x8, const Tensor* wt, const Tensor* wzp, int64_t x_zero,
                int64_t n, int64_t m, int64_t mg, const Requant& store) const {
    const Plane p(w);
    const int64_t in_sp = p.ih * p.iw, out_sp = p.oh * p.ow, k_sp = p.kh * p.kw;
    const DwPlane dp{p.ih, p.iw, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.ph, p.pw};
    return ctx->ParallelFor(n * m, 1, [&](int64_t r0, int64_t r1) {
      std::vector<uint32_t> plane_out(static_cast<size_t>(out_sp)), wv(static_cast<size_t>(k_sp));
      std::vector<int32_t> xp(static_cast<size_t>(in_sp));  // the input channel less its zero point
      int64_t converted = -1;
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t in = r / m, oc = r % m, ch = oc / mg;
        const int64_t w_zero = wzp ? At(wzp, wzp->GetShapeSize() == 1 ? 0 : oc) : 0;
        const int64_t plane = (in * (m / mg) + ch) * in_sp;
        if (converted != plane) {  // a multiplier's filters share their input channel
          if (x8) {
            const int8_t* src = reinterpret_cast<const int8_t*>(xraw) + plane;
            for (int64_t i = 0; i < in_sp; ++i) xp[static_cast<size_t>(i)] = static_cast<int32_t>(src[i] - x_zero);
          } else {
            const uint8_t* src = xraw + plane;
            for (int64_t i = 0; i < in_sp; ++i) xp[static_cast<size_t>(i)] = static_cast<int32_t>(src[i] - x_zero);
          }
          converted = plane;
        }
        for (int64_t t = 0; t < k_sp; ++t) wv[static_cast<size_t>(t)] = static_cast<uint32_t>(At(wt, oc * k_sp + t) - w_zero);
        DepthwisePlane(dp, xp.data(), wv.data(), plane_out.data());
        store.Run((in * m + oc) * out_sp, oc, plane_out.data(), 1, out_sp);
      }
    });
  }
  // Several input channels per group: per group, the input as NHWC int8 and the group's filters as
  // [filters][kh][kw][channels] int8, their sums by Int8ConvSums (a filter of ones besides when a
  // weight zero point is not 0, whose sums are those of the inputs less theirs, to take it off).
  // Pixel rows (x_nhwc, y_nhwc) are read and written as they are.
  int Grouped(EagerOpExecutionContext* ctx, const Window& w, const Tensor* x, const Tensor* wt, const Tensor* wzp, int64_t x_zero,
              int64_t n, int64_t c, int64_t m, int64_t group, bool x_nhwc, bool y_nhwc, const Requant& store) const {
    const Plane p(w);
    const int64_t cg = c / group, mg = m / group, in_sp = p.ih * p.iw, out_sp = p.oh * p.ow, k_sp = p.kh * p.kw, k = k_sp * cg;
    const int64_t xz = x_zero - Shift(x);
    std::vector<int32_t> wz(static_cast<size_t>(m), 0);
    bool any_wz = false;
    for (int64_t oc = 0; oc < m; ++oc) {
      wz[static_cast<size_t>(oc)] = static_cast<int32_t>((wzp ? At(wzp, wzp->GetShapeSize() == 1 ? 0 : oc) : 0) - Shift(wt));
      any_wz = any_wz || wz[static_cast<size_t>(oc)] != 0;
    }
    const int64_t cols = mg + (any_wz ? 1 : 0);
    std::vector<uint32_t> wzu(wz.begin(), wz.end());
    const bool packed = !wpack_.empty() && wpack_key_ == std::array<int64_t, 4>{m, cg, k_sp, group} &&
                        wpack_.size() == static_cast<size_t>(group * cols * k);
    // The input as it is where it is int8 pixel rows of one group.
    const bool direct = x_nhwc && group == 1 && !Shift(x);
    auto* xg = direct ? const_cast<int8_t*>(static_cast<const int8_t*>(x->GetAddr()))
                      : static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n * in_sp * cg)));
    int8_t* all = nullptr;
    if (!packed) {
      std::vector<int8_t> tmp;
      PackFilters(wt, wzp, m, cg, k_sp, group, &tmp);
      all = static_cast<int8_t*>(ctx->MallocWorkSpace(tmp.size()));
      if (all) std::memcpy(all, tmp.data(), tmp.size());
    }
    const int8_t* filters = packed ? wpack_.data() : all;
    if (!packed && !all) return GRAPH_FAILED;
    if (!xg) return GRAPH_FAILED;
    // QLinearConv's rescaling fused into the kernel where it can be (no weight zero point to take
    // off): bytes as pixel rows, converted to planes at the end where the output is planes.
    // Otherwise the int32 sums (acc), rescaled after.
    bool fused = store.kind != 0 && !any_wz && Int8ConvRescaled;
    uint8_t* ybytes = !fused ? nullptr
                      : y_nhwc ? static_cast<uint8_t*>(store.y)
                               : static_cast<uint8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n * out_sp * m)));
    fused = fused && ybytes;
    int32_t* acc = nullptr;
    const Int8ConvDims d{n, p.ih, p.iw, cg, p.oh, p.ow, cols, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.ph, p.pw};
    // 8-bit values as int8: uint8 ones less 128 (their zero points too), which keeps every difference.
    const auto* xb = static_cast<const uint8_t*>(x->GetAddr());
    const uint8_t xflip = Shift(x) ? 0x80 : 0;
    for (int64_t g = 0; g < group; ++g) {
      if (x_nhwc && !direct && group == 1) {  // uint8 rows as int8
        ctx->ParallelFor(n * in_sp * c, 1 << 16, [&](int64_t q0, int64_t q1) { XorBytes(xb + q0, q1 - q0, xflip, reinterpret_cast<uint8_t*>(xg) + q0); });
      } else if (x_nhwc && !direct) {  // the group's channels of each pixel row, as int8
        ctx->ParallelFor(n * in_sp, 1024, [&](int64_t q0, int64_t q1) {
          for (int64_t q = q0; q < q1; ++q) {
            const uint8_t* src = xb + q * c + g * cg;
            uint8_t* dst = reinterpret_cast<uint8_t*>(xg) + q * cg;
            for (int64_t icg = 0; icg < cg; ++icg) dst[icg] = src[icg] ^ xflip;
          }
        });
      } else if (!x_nhwc) ctx->ParallelFor(n * in_sp, 1024, [&](int64_t q0, int64_t q1) {  // NCHW planes into NHWC, in tiles
        for (int64_t in = q0 / in_sp; in * in_sp < q1; ++in) {
          const int64_t a = std::max(q0, in * in_sp) - in * in_sp, e = std::min(q1, (in + 1) * in_sp) - in * in_sp;
          uint8_t* dst = reinterpret_cast<uint8_t*>(xg) + in * in_sp * cg;
          const uint8_t* src = xb + (in * c + g * cg) * in_sp;
          for (int64_t c0 = 0; c0 < cg; c0 += 16)
            for (int64_t t0 = a; t0 < e; t0 += 64) {
              const int64_t c1 = std::min(cg, c0 + 16), t1 = std::min(e, t0 + 64);
              for (int64_t q = t0; q < t1; ++q)
                for (int64_t icg = c0; icg < c1; ++icg) dst[q * cg + icg] = src[icg * in_sp + q] ^ xflip;
            }
        }
      });
      const Int8PackedB* pre = packed && wpre_.size() == static_cast<size_t>(group) ? wpre_[static_cast<size_t>(g)].get() : nullptr;
      if (fused) {
        Int8FloatRescale r;
        r.bias = store.bias ? store.bias + g * mg : nullptr;
        r.scale = store.scale_c.data() + g * mg;
        r.y_zero = store.y_zero, r.lo = store.lo, r.hi = store.hi;
        r.y = ybytes + g * mg;
        r.ldy = m;
        if (Int8ConvRescaled(ctx, d, xg, static_cast<int32_t>(xz), filters + g * cols * k, r, pre)) continue;
        if (g != 0) return Fail(ctx, "the 8-bit convolution kernel failed for group " + std::to_string(g) + " after it ran the first");
        ctx->SetError("");
        fused = false;
      }
      if (!acc && !(acc = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n * out_sp * cols) * sizeof(int32_t)))))
        return GRAPH_FAILED;
      if (!Int8ConvSums(ctx, d, xg, static_cast<int32_t>(xz), filters + g * cols * k, acc, pre)) {
        if (g == 0) {
          ctx->SetError("");
          return kNotApplicable;
        }
        return Fail(ctx, "the 8-bit convolution kernel failed for group " + std::to_string(g) + " after it ran the first");
      }
      if (y_nhwc) {  // each pixel's sums rescaled into its row
        const size_t esize = store.kind == 0 ? 4 : 1;
        ctx->ParallelFor(n * out_sp, 256, [&](int64_t q0, int64_t q1) {
          store.PixelsNhwc(g * mg, reinterpret_cast<const uint32_t*>(acc) + q0 * cols, cols, q1 - q0, mg, any_wz ? wzu.data() + g * mg : nullptr, mg,
                           static_cast<uint8_t*>(store.y) + static_cast<size_t>(q0 * m + g * mg) * esize, m);
        });
        continue;
      }
      // Pixel-major sums to channel-major outputs: a block of pixels' sums transposed at a time
      // (TransposeBlock), so that each channel's run is stored from contiguous sums.
      constexpr int64_t kBlock = 256;
      const int64_t blocks = (out_sp + kBlock - 1) / kBlock;
      ctx->ParallelFor(n * blocks, 1, [&](int64_t r0, int64_t r1) {
        std::vector<uint32_t> t(static_cast<size_t>(cols * kBlock));
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t in = r / blocks, q0 = (r % blocks) * kBlock, len = std::min(kBlock, out_sp - q0);
          TransposeBlock(reinterpret_cast<const uint32_t*>(acc) + (in * out_sp + q0) * cols, cols, len, t.data(), kBlock);
          for (int64_t o = 0; o < mg; ++o) {
            const int64_t oc = g * mg + o;
            store.Run((in * m + oc) * out_sp + q0, oc, t.data() + o * kBlock, 1, len, any_wz ? t.data() + mg * kBlock : nullptr,
                      static_cast<uint32_t>(wz[static_cast<size_t>(oc)]));
          }
        }
      });
    }
    if (fused && !y_nhwc) Relayout<uint8_t>(ctx, false, ybytes, n, m, out_sp, static_cast<uint8_t*>(store.y));
    return GRAPH_SUCCESS;
  }
};

// com.microsoft's QLinearAveragePool (X, x_scale, x_zero_point?, y_scale, y_zero_point?; the
// attributes of AveragePool, channels-first), as ONNX Runtime computes it: a window covering the
// whole image without padding averages in integers (QLinearGlobalAveragePool's arithmetic);
// otherwise each element dequantized (x_scale * (x - zero point)), summed in float row by row,
// divided by the count (the kernel's size with count_include_pad, else the window's part inside
// the image), and quantized as y / y_scale + y_zero_point rounded half to even, saturated.
class QLinearAveragePool : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Execute's two forms in C99 for 1 to 3 spatial dims: the integer sums of a whole-image window,
  // else the float sums of the dequantized taps in the same order (a table of the 256 values).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), &w, &err)) return Fail(ctx, err);
    if (w.nd < 1 || w.nd > 3) return Fail(ctx, "the generated C pools 1 to 3 spatial dims");
    for (size_t i : {1, 2, 3, 4})
      if (const Tensor* t = ctx->GetOptionalInputTensor(i); t && !t->GetAddr())
        return Fail(ctx, "the generated C takes constant scales and zero points (as quantizers write them)");
    float xs, ys;
    int32_t xz, yz;
    if (!Param(ctx, 1, 2, "x", &xs, &xz) || !Param(ctx, 3, 4, "y", &ys, &yz)) return GRAPH_FAILED;
    const bool s8 = x->GetDataType() == DT_INT8;
    const std::string ct = s8 ? "int8_t" : "uint8_t";
    const float lo = s8 ? -128.f : 0.f, hi = s8 ? 127.f : 255.f;
    const int64_t nc = x->GetShape().GetDim(0) * x->GetShape().GetDim(1), in_sp = Prod(w.in, w.nd), out_sp = Prod(w.out, w.nd);
    auto L = [](int64_t v) { return aot::IntLit(v); };
    bool global = true;
    for (size_t i = 0; i < w.nd; ++i) global = global && w.k[i] == w.in[i] && w.pb[i] == 0 && w.pe[i] == 0 && w.out[i] == 1;
    ctx->Include("<math.h>");
    std::string r = "{\n  const " + ct + "* x = " + ctx->Input(0, ct.c_str()) + ";\n  " + ct + "* y = " + ctx->Output(0, ct.c_str()) + ";\n";
    if (global) {
      if (in_sp >= (int64_t{1} << 24)) return Fail(ctx, "windows of 2^24 or more elements are not supported");
      const float scale = xs / (ys * static_cast<float>(in_sp));
      const std::string zl = aot::FloatLit(lo - static_cast<float>(yz)), zh = aot::FloatLit(hi - static_cast<float>(yz));
      r += "  int64_t c, i;\n  for (c = 0; c < " + L(nc) + "; ++c) {\n    int64_t sum = " + L(-int64_t{xz} * in_sp) + ";\n    float v;\n";
      r += "    for (i = 0; i < " + L(in_sp) + "; ++i) sum += x[c * " + L(in_sp) + " + i];\n    v = (float)sum * " + aot::FloatLit(scale) + ";\n";
      r += "    v = v > " + zl + " ? v : " + zl + ";\n    v = v < " + zh + " ? v : " + zh + ";\n    y[c] = (" + ct + ")((int32_t)nearbyintf(v) + " +
           L(yz) + ");\n  }\n}\n";
      ctx->Run(r);
      return GRAPH_SUCCESS;
    }
    const int64_t* cip = ctx->GetAttrs()->GetInt("count_include_pad");
    const bool include_pad = cip && *cip;
    std::vector<float> deq(256);
    for (int b = 0; b < 256; ++b) deq[static_cast<size_t>(b)] = xs * static_cast<float>((s8 ? static_cast<int8_t>(b) : b) - xz);
    const Geometry3 geo(w);
    const int64_t *I = geo.I, *O = geo.O, *K = geo.K, *S = geo.S, *P = geo.P;
    r += "  const float* deq = " + ctx->Const("deq", DT_FLOAT, deq) + ";\n  int64_t c, o0, o1, o2, k0, k1, k2;\n";
    r += "  for (c = 0; c < " + L(nc) + "; ++c)\n  for (o0 = 0; o0 < " + L(O[0]) + "; ++o0) for (o1 = 0; o1 < " + L(O[1]) + "; ++o1) for (o2 = 0; o2 < " +
         L(O[2]) + "; ++o2) {\n";
    r += "    const int64_t s0 = o0 * " + L(S[0]) + " - " + L(P[0]) + ", s1 = o1 * " + L(S[1]) + " - " + L(P[1]) + ", s2 = o2 * " + L(S[2]) + " - " + L(P[2]) + ";\n";
    r += "    float sum = 0.f, avg, q;\n    int64_t count;\n";
    r += "    for (k0 = 0; k0 < " + L(K[0]) + "; ++k0) for (k1 = 0; k1 < " + L(K[1]) + "; ++k1) for (k2 = 0; k2 < " + L(K[2]) + "; ++k2) {\n";
    r += "      const int64_t p0 = s0 + k0, p1 = s1 + k1, p2 = s2 + k2;\n";
    r += "      if (p0 < 0 || p0 >= " + L(I[0]) + " || p1 < 0 || p1 >= " + L(I[1]) + " || p2 < 0 || p2 >= " + L(I[2]) + ") continue;\n";
    r += "      sum += deq[(uint8_t)x[c * " + L(in_sp) + " + (p0 * " + L(I[1]) + " + p1) * " + L(I[2]) + " + p2]];\n    }\n";
    if (include_pad) {
      r += "    count = " + L(Prod(w.k, w.nd)) + ";\n";
    } else {
      r += "    count = 1;\n";
      for (int d = 0; d < 3; ++d) {
        const std::string sd = "s" + std::to_string(d);
        r += "    {\n      const int64_t e = " + sd + " + " + L(K[d]) + " < " + L(I[d]) + " ? " + sd + " + " + L(K[d]) + " : " + L(I[d]) +
             ";\n      count *= e - (" + sd + " > 0 ? " + sd + " : 0);\n    }\n";
      }
    }
    r += "    avg = count > 0 ? sum / (float)count : 0.f;\n    q = avg / " + aot::FloatLit(ys) + ";\n    q = nearbyintf(q + " +
         aot::FloatLit(static_cast<float>(yz)) + ");\n";
    r += "    q = q > " + aot::FloatLit(lo) + " ? q : " + aot::FloatLit(lo) + ";\n    q = q < " + aot::FloatLit(hi) + " ? q : " + aot::FloatLit(hi) +
         ";\n    y[c * " + L(out_sp) + " + (o0 * " + L(O[1]) + " + o1) * " + L(O[2]) + " + o2] = (" + ct + ")(int32_t)q;\n  }\n}\n";
    ctx->Run(r);
    return GRAPH_SUCCESS;
  }
  static bool Geometry(const KernelContextBase* ctx, const Shape& x, Window* w, std::string* err) {
    ListView<int64_t> ks = ctx->GetAttrs()->GetListInt("kernel_shape");
    if (x.GetDimNum() < 3 || ks.size() != x.GetDimNum() - 2) {
      *err = "kernel_shape must have one entry per spatial dim of " + x.ToString();
      return false;
    }
    if (const int64_t* cl = ctx->GetAttrs()->GetInt("channels_last"); cl && *cl) {
      *err = "channels_last = 1 is not supported (channels-first inputs only)";
      return false;
    }
    ListView<int64_t> dil = ctx->GetAttrs()->GetListInt("dilations");
    for (size_t i = 0; i < dil.size(); ++i)
      if (dil.data()[i] != 1) {
        *err = "dilations other than 1 are not supported";
        return false;
      }
    const int64_t* ceil = ctx->GetAttrs()->GetInt("ceil_mode");
    return MakeWindow(ctx, x, ks.data(), ceil && *ceil, false, w, err);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Window w;
    std::string err;
    const Shape& x = *ctx->GetInputShape(0);
    if (!Geometry(ctx, x, &w, &err)) return Fail(ctx, err);
    Shape out({x.GetDim(0), x.GetDim(1)});
    for (size_t i = 0; i < w.nd; ++i) out.AppendDim(w.out[i]);
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType t = ctx->GetInputDataType(0);
    if (t != DT_INT8 && t != DT_UINT8) return Fail(ctx, std::string("X must be int8 or uint8, not ") + DataTypeName(t));
    for (size_t ir : {2, 4})
      if (const Tensor* z = ctx->GetOptionalInputTensor(ir); z && z->GetDataType() != t) return Fail(ctx, "the zero points must have X's type");
    return ctx->SetOutputDataType(0, t);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Window w;
    std::string err;
    if (!Geometry(ctx, x->GetShape(), &w, &err)) return Fail(ctx, err);
    float xs, ys;
    int32_t xz, yz;
    if (!Param(ctx, 1, 2, "x", &xs, &xz) || !Param(ctx, 3, 4, "y", &ys, &yz)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const bool s8 = x->GetDataType() == DT_INT8;
    const float lo = s8 ? -128.f : 0.f, hi = s8 ? 127.f : 255.f;
    const int64_t nc = x->GetShape().GetDim(0) * x->GetShape().GetDim(1), in_sp = Prod(w.in, w.nd), out_sp = Prod(w.out, w.nd);
    const auto* px = static_cast<const uint8_t*>(x->GetAddr());
    auto* py = static_cast<uint8_t*>(y->GetAddr());
    auto value = [&](const uint8_t* p, int64_t i) { return s8 ? static_cast<int32_t>(static_cast<int8_t>(p[i])) : static_cast<int32_t>(p[i]); };
    bool global = true;
    for (size_t i = 0; i < w.nd; ++i) global = global && w.k[i] == w.in[i] && w.pb[i] == 0 && w.pe[i] == 0 && w.out[i] == 1;
    if (global) {
      if (in_sp >= (int64_t{1} << 24)) return Fail(ctx, "windows of 2^24 or more elements are not supported");
      const float scale = xs / (ys * static_cast<float>(in_sp));
      const float zl = lo - static_cast<float>(yz), zh = hi - static_cast<float>(yz);
      return ctx->ParallelFor(nc, 16, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          int64_t sum = -int64_t{xz} * in_sp;  // exact (ONNX Runtime's int32 would wrap beyond 2^31 / 255 elements)
          for (int64_t i = 0; i < in_sp; ++i) sum += value(px + c * in_sp, i);
          float v = static_cast<float>(sum) * scale;
          v = v > zl ? v : zl;
          v = v < zh ? v : zh;
          py[c] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(v)) + yz);
        }
      });
    }
    const bool include_pad = [&] {
      const int64_t* v = ctx->GetAttrs()->GetInt("count_include_pad");
      return v && *v;
    }();
    float deq[256];  // each byte's value, dequantized
    for (int b = 0; b < 256; ++b) deq[b] = xs * static_cast<float>((s8 ? static_cast<int8_t>(b) : b) - xz);
    const int64_t k_sp = Prod(w.k, w.nd);
    return ctx->ParallelFor(nc, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const uint8_t* plane = px + c * in_sp;
        uint8_t* out = py + c * out_sp;
        ForEachOutput(w, [&](int64_t o, const int64_t* oidx) {
          float sum = 0.f;
          ForEachTap(w, oidx, [&](int64_t, int64_t lin) {
            if (lin >= 0) sum += deq[plane[lin]];
          });
          int64_t count = k_sp;
          if (!include_pad) {
            count = 1;
            for (size_t i = 0; i < w.nd; ++i) {
              const int64_t start = oidx[i] * w.s[i] - w.pb[i], end = std::min(start + w.k[i], w.in[i]);
              count *= end - std::max<int64_t>(start, 0);
            }
          }
          const float avg = count > 0 ? sum / static_cast<float>(count) : 0.f;
          float q = std::nearbyint(avg / ys + static_cast<float>(yz));
          q = q > lo ? q : lo;  // NaN (infinite sums of both signs) to the bottom
          q = q < hi ? q : hi;
          out[o] = static_cast<uint8_t>(static_cast<int32_t>(q));
        });
      }
    });
  }

 private:
  static bool Param(const KernelContextBase* ctx, size_t is, size_t iz, const char* what, float* scale, int32_t* zp) {
    const Tensor* s = ctx->GetOptionalInputTensor(is);
    const Tensor* z = ctx->GetOptionalInputTensor(iz);
    if (!s || s->GetDataType() != DT_FLOAT || s->GetShapeSize() != 1 || !(*s->GetData<float>() > 0.f) || !std::isfinite(*s->GetData<float>()))
      return Fail(ctx, std::string(what) + "_scale must be one positive, finite float32 value"), false;
    if (z && z->GetShapeSize() != 1) return Fail(ctx, std::string(what) + "_zero_point must be one value"), false;
    *scale = *s->GetData<float>();
    *zp = !z ? 0 : z->GetDataType() == DT_INT8 ? *z->GetData<int8_t>() : *z->GetData<uint8_t>();
    return true;
  }
};

void WindowAttrs(OpDefBuilder& b) {
  b.ATTR(auto_pad, String, "NOTSET").ATTR(dilations, ListInt, {}).ATTR(pads, ListInt, {}).ATTR(strides, ListInt, {});
}

}  // namespace

void WeftRegister_conv_pool(std::vector<OpEntry>& out) {
  {
    const TensorType q8({DT_INT8, DT_UINT8});
    OpDefBuilder b("QLinearAveragePool");
    b.INPUT(X, q8).INPUT(x_scale, TensorType({DT_FLOAT})).OPTIONAL_INPUT(x_zero_point, q8).INPUT(y_scale, TensorType({DT_FLOAT}))
        .OPTIONAL_INPUT(y_zero_point, q8).OUTPUT(Y, q8).REQUIRED_ATTR(kernel_shape, ListInt).ATTR(ceil_mode, Int, 0)
        .ATTR(count_include_pad, Int, 0).ATTR(channels_last, Int, 0);
    WindowAttrs(b);
    out.push_back({b.Build(), MakeOpImpl<QLinearAveragePool>("QLinearAveragePool")});
  }
  {
    const TensorType q8({DT_INT8, DT_UINT8});
    OpDefBuilder b("ConvInteger");
    b.INPUT(x, q8).INPUT(w, q8).OPTIONAL_INPUT(x_zero_point, q8).OPTIONAL_INPUT(w_zero_point, q8).OUTPUT(y, TensorType({DT_INT32}))
        .ATTR(group, Int, 1).ATTR(kernel_shape, ListInt, {});
    WindowAttrs(b);
    out.push_back({b.Build(), MakeOpImpl<IntegerConv<false>>("ConvInteger")});
    OpDefBuilder l("QLinearConv");
    l.INPUT(x, q8).INPUT(x_scale, TensorType({DT_FLOAT})).INPUT(x_zero_point, q8).INPUT(w, q8).INPUT(w_scale, TensorType({DT_FLOAT}))
        .INPUT(w_zero_point, q8).INPUT(y_scale, TensorType({DT_FLOAT})).INPUT(y_zero_point, q8).OPTIONAL_INPUT(B, TensorType({DT_INT32}))
        .OUTPUT(y, q8).ATTR(group, Int, 1).ATTR(kernel_shape, ListInt, {});
    WindowAttrs(l);
    out.push_back({l.Build(), MakeOpImpl<IntegerConv<true>>("QLinearConv")});
  }
  {
    OpDefBuilder b("Conv");
    // Sum: a residual addend, Y = conv(X, W) + B + Sum (what epilogue fusion connects).
    b.INPUT(X, "T").INPUT(W, "T").OPTIONAL_INPUT(B, "T").OPTIONAL_INPUT(Sum, "T").OUTPUT(Y, "T").DATATYPE(T, FloatTypes())
        .ATTR(group, Int, 1).ATTR(kernel_shape, ListInt, {});
    WindowAttrs(b);
    out.push_back({b.Build(), MakeOpImpl<Conv>("Conv")});
  }
  {
    OpDefBuilder b("ConvTranspose");
    b.INPUT(X, "T").INPUT(W, "T").OPTIONAL_INPUT(B, "T").OUTPUT(Y, "T").DATATYPE(T, FloatTypes()).ATTR(group, Int, 1)
        .ATTR(kernel_shape, ListInt, {}).ATTR(output_padding, ListInt, {}).ATTR(output_shape, ListInt, {});
    WindowAttrs(b);
    out.push_back({b.Build(), MakeOpImpl<ConvTranspose>("ConvTranspose")});
  }
  {
    OpDefBuilder b("MaxPool");
    b.INPUT(X, TensorType({DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_INT8, DT_UINT8})).OUTPUT(Y, TensorType({DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_INT8, DT_UINT8}))
        .DYNAMIC_OUTPUT(Indices, TensorType({DT_INT64})).REQUIRED_ATTR(kernel_shape, ListInt).ATTR(ceil_mode, Int, 0).ATTR(storage_order, Int, 0);
    WindowAttrs(b);
    out.push_back({b.Build(), MakeOpImpl<Pool<true>>("MaxPool")});
  }
  {
    OpDefBuilder b("AveragePool");
    b.INPUT(X, FloatTypes()).OUTPUT(Y, FloatTypes()).REQUIRED_ATTR(kernel_shape, ListInt).ATTR(ceil_mode, Int, 0)
        .ATTR(count_include_pad, Int, 0);
    WindowAttrs(b);
    out.push_back({b.Build(), MakeOpImpl<Pool<false>>("AveragePool")});
  }
  out.push_back({OpDefBuilder("GlobalAveragePool").INPUT(X, FloatTypes()).OUTPUT(Y, FloatTypes()).Build(), MakeOpImpl<GlobalPool<false>>("GlobalAveragePool")});
  out.push_back({OpDefBuilder("GlobalMaxPool").INPUT(X, FloatTypes()).OUTPUT(Y, FloatTypes()).Build(), MakeOpImpl<GlobalPool<true>>("GlobalMaxPool")});
}

}  // namespace weft::ops
