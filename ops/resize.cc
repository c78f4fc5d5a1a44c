// Resize (ONNX opsets 11-18 semantics): nearest / linear / cubic on any number of dims, every
// coordinate_transformation_mode and nearest_mode, roi for tf_crop_and_resize, sizes or scales,
// axes and keep_aspect_ratio_policy. The importer rewrites opset 10 Resize and Upsample to it.
// float32 emits C (weft aot) through the same taps.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <limits>
#include <cstring>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

bool ReadFloats(const Tensor* t, std::vector<double>* out) {
  out->clear();
  if (!t || !t->GetAddr()) return false;
  bool ok = DispatchFloat(t->GetDataType(), [&](auto tag) {
    for (int64_t i = 0; i < t->GetShapeSize(); ++i) out->push_back(static_cast<double>(Load(t->GetData<decltype(tag)>()[i])));
  });
  return ok;
}

struct Plan {
  Shape out;
  std::vector<double> scale;          // per dim
  std::vector<double> roi_lo, roi_hi;  // per dim
};

// false: a value needed is not known yet. Errors go to *err.
bool MakePlan(const KernelContextBase* ctx, const Shape& in, Plan* p, std::string* err) {
  size_t r = in.GetDimNum();
  const Tensor* roi_t = ctx->GetOptionalInputTensor(1);
  const Tensor* scales_t = ctx->GetOptionalInputTensor(2);
  const Tensor* sizes_t = ctx->GetOptionalInputTensor(3);
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
  if (roi_t && roi_t->GetShapeSize() && !ReadFloats(roi_t, &roi)) return false;
  if (scales_t && scales_t->GetShapeSize() && !ReadFloats(scales_t, &scales)) return false;
  if (sizes_t && sizes_t->GetShapeSize() && !ReadInts(sizes_t, &sizes)) return false;
  std::vector<int64_t> axes;
  ListView<int64_t> ax = ctx->GetAttrs()->GetListInt("axes");
  for (int64_t a : ax) {
    int64_t n;
    if (!NormalizeAxis(a, static_cast<int64_t>(r), &n)) {
      *err = AxesError("axes", a, static_cast<int64_t>(r));
      return true;
    }
    if (std::find(axes.begin(), axes.end(), n) != axes.end()) {
      *err = "axes names dim " + std::to_string(n) + " twice";
      return true;
    }
    axes.push_back(n);
  }
  if (axes.empty())
    for (size_t k = 0; k < r; ++k) axes.push_back(static_cast<int64_t>(k));
  if (scales.empty() == sizes.empty()) {
    *err = "exactly one of scales and sizes must be given";
    return true;
  }
  size_t na = axes.size();
  if ((!scales.empty() && scales.size() != na) || (!sizes.empty() && sizes.size() != na) || (!roi.empty() && roi.size() != 2 * na)) {
    *err = "scales/sizes/roi do not match " + std::to_string(na) + " axes";
    return true;
  }
  p->out = in;
  p->scale.assign(r, 1.0);
  p->roi_lo.assign(r, 0.0);
  p->roi_hi.assign(r, 1.0);
  for (size_t i = 0; i < na; ++i)
    if (!roi.empty()) p->roi_lo[axes[i]] = roi[i], p->roi_hi[axes[i]] = roi[i + na];
  if (!scales.empty()) {
    for (size_t i = 0; i < na; ++i) {
      if (scales[i] <= 0) {
        *err = "scales must be positive";
        return true;
      }
      p->scale[axes[i]] = scales[i];
      p->out.SetDim(static_cast<size_t>(axes[i]), static_cast<int64_t>(std::floor(static_cast<double>(in.GetDim(axes[i])) * scales[i])));
    }
  } else {
    for (size_t i = 0; i < na; ++i)
      if (sizes[i] < 0) {
        *err = "sizes must not be negative, got " + std::to_string(sizes[i]);
        return true;
      }
    std::string policy = ctx->GetAttrs()->GetStr("keep_aspect_ratio_policy");
    double common = policy == "not_larger" ? 1e300 : 0;
    for (size_t i = 0; i < na; ++i) {
      double s = static_cast<double>(sizes[i]) / static_cast<double>(in.GetDim(axes[i]));
      common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
    }
    for (size_t i = 0; i < na; ++i) {
      double s = policy == "stretch" ? static_cast<double>(sizes[i]) / static_cast<double>(in.GetDim(axes[i])) : common;
      int64_t o = policy == "stretch" ? sizes[i] : static_cast<int64_t>(std::round(static_cast<double>(in.GetDim(axes[i])) * common));
      p->scale[axes[i]] = s;
      p->out.SetDim(static_cast<size_t>(axes[i]), o);
    }
  }
  return true;
}

struct Tap {
  int64_t index;
  double weight;
};

// Per dim and output coordinate: the input indices and weights that make the output (1 tap for
// nearest, up to 2 for linear, up to 4 for cubic), or an empty list meaning "extrapolate"
// (tf_crop_and_resize outside the input). False with *err on attributes it cannot take. Execute
// and the emitter (weft aot) both resize through these taps.
bool MakeTaps(const RuntimeAttrs* a, const Shape& in, const Plan& p, std::vector<std::vector<std::vector<Tap>>>* taps, std::string* err) {
  std::string mode = a->GetStr("mode"), ctm = a->GetStr("coordinate_transformation_mode"), nm = a->GetStr("nearest_mode");
  double cubic_a = *a->GetFloat("cubic_coeff_a");
  bool exclude = *a->GetInt("exclude_outside") != 0;
  if (mode != "nearest" && mode != "linear" && mode != "cubic") return *err = "unknown mode '" + mode + "'", false;
  // antialias: a linear or cubic filter stretched by 1 / scale where it downsamples (nearest
  // ignores it), its weights normalized to sum to 1.
  const bool antialias = *a->GetInt("antialias") != 0 && mode != "nearest";
  auto cubic = [cubic_a](double z) {
    z = std::fabs(z);
    return z <= 1 ? ((cubic_a + 2) * z - (cubic_a + 3)) * z * z + 1 : z < 2 ? ((cubic_a * z - 5 * cubic_a) * z + 8 * cubic_a) * z - 4 * cubic_a : 0.0;
  };
  size_t r = in.GetDimNum();
  taps->assign(r, {});
  for (size_t d = 0; d < r; ++d) {
    int64_t n_in = in.GetDim(d), n_out = p.out.GetDim(d);
    double s = p.scale[d];
    (*taps)[d].resize(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      double xo = static_cast<double>(o), xi;
      // The unrounded resized length, as ONNX's reference implementation and node tests have it
      // (ONNX Runtime takes the output length; the two differ only when scale * n_in is fractional).
      double len = static_cast<double>(n_in) * s;
      if (ctm == "half_pixel") xi = (xo + 0.5) / s - 0.5;
      else if (ctm == "pytorch_half_pixel") xi = len > 1 ? (xo + 0.5) / s - 0.5 : 0.0;
      else if (ctm == "align_corners") xi = len == 1 ? 0.0 : xo * static_cast<double>(n_in - 1) / (len - 1);
      else if (ctm == "asymmetric") xi = xo / s;
      // TensorFlow's half-pixel nearest resizes only the axes it scales: as ONNX Runtime, an axis
      // of scale 1 (batch, channels) keeps its indices instead of moving by half a pixel.
      else if (ctm == "tf_half_pixel_for_nn") xi = s == 1.0 ? xo : (xo + 0.5) / s;
      else if (ctm == "half_pixel_symmetric") {
        double adj = static_cast<double>(n_out) / (s * static_cast<double>(n_in));
        double center = static_cast<double>(n_in) / 2.0;
        xi = center * (1 - adj) + (xo + 0.5) / s - 0.5;
      } else if (ctm == "tf_crop_and_resize") {
        double lo = p.roi_lo[d], hi = p.roi_hi[d];
        xi = n_out > 1 ? lo * static_cast<double>(n_in - 1) + xo * (hi - lo) * static_cast<double>(n_in - 1) / static_cast<double>(n_out - 1)
                       : 0.5 * (lo + hi) * static_cast<double>(n_in - 1);
        if (xi < 0 || xi > static_cast<double>(n_in - 1)) continue;  // extrapolated
      } else {
        return *err = "unknown coordinate_transformation_mode '" + ctm + "'", false;
      }
      auto& t = (*taps)[d][static_cast<size_t>(o)];
      if (antialias) {
        // Taps at base + start + k for k in [0, 2 - 2 * start), base + ratio = xi with ratio in
        // (0, 1]; indices outside the input take its edge.
        const double sc = std::min(s, 1.0);
        double base = std::floor(xi), ratio = xi - base;
        if (ratio == 0.0) ratio = 1.0, base -= 1.0;
        const double reach = mode == "linear" ? 1.0 : 2.0;
        const double first = std::floor(-reach / sc) + 1;
        const double count = 2 - 2 * first;
        if (!(count <= 4194304.0)) return *err = "antialias over a scale of " + std::to_string(s) + " needs too wide a filter", false;
        double sum = 0;
        for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
          const double arg = sc * (first + static_cast<double>(k) - ratio);
          const double w = mode == "linear" ? std::max(0.0, 1.0 - std::fabs(arg)) : cubic(arg);
          const double idx = base + first + static_cast<double>(k);
          if (exclude && (idx < 0 || idx >= static_cast<double>(n_in))) continue;
          sum += w;
          if (w != 0.0) t.push_back({std::clamp<int64_t>(static_cast<int64_t>(idx), 0, n_in - 1), w});
        }
        if (sum != 0)
          for (auto& tp : t) tp.weight /= sum;
        if (t.empty()) t.push_back({std::clamp<int64_t>(static_cast<int64_t>(std::llround(xi)), 0, n_in - 1), 0.0});
        continue;
      }
      if (mode == "nearest") {
        double f = std::floor(xi);
        int64_t idx;
        if (nm == "floor") idx = static_cast<int64_t>(f);
        else if (nm == "ceil") idx = static_cast<int64_t>(std::ceil(xi));
        else if (nm == "round_prefer_ceil") idx = static_cast<int64_t>(xi - f == 0.5 ? f + 1 : std::round(xi));
        else idx = static_cast<int64_t>(xi - f == 0.5 ? f : std::round(xi));  // round_prefer_floor
        t.push_back({std::clamp<int64_t>(idx, 0, n_in - 1), 1.0});
      } else if (mode == "linear") {
        double xc = std::clamp(xi, 0.0, static_cast<double>(n_in - 1));
        int64_t i0 = static_cast<int64_t>(std::floor(xc));
        int64_t i1 = std::min(i0 + 1, n_in - 1);
        double w1 = xc - static_cast<double>(i0);
        t.push_back({i0, 1.0 - w1});
        if (w1 > 0) t.push_back({i1, w1});
      } else {  // cubic
        int64_t i0 = static_cast<int64_t>(std::floor(xi));
        double frac = xi - static_cast<double>(i0);
        double dist[4] = {1 + frac, frac, 1 - frac, 2 - frac};
        double sum = 0;
        for (int k = 0; k < 4; ++k) {
          double z = std::fabs(dist[k]);
          double w = z <= 1 ? ((cubic_a + 2) * z - (cubic_a + 3)) * z * z + 1
                            : ((cubic_a * z - 5 * cubic_a) * z + 8 * cubic_a) * z - 4 * cubic_a;
          int64_t idx = i0 - 1 + k;
          if (exclude && (idx < 0 || idx >= n_in)) continue;
          t.push_back({std::clamp<int64_t>(idx, 0, n_in - 1), w});
          sum += w;
        }
        if (exclude && sum != 0)
          for (auto& tp : t) tp.weight /= sum;
      }
    }
  }
  return true;
}

// The form ResizeLastTwo takes: planes of hi x wi resized to ho x wo through up to 4 taps per output
// coordinate and axis (flattened, unused ones weight 0), or a copy by index (nearest).
struct LastTwo {
  int64_t planes = 1, hi = 0, wi = 0, ho = 0, wo = 0;
  std::vector<int64_t> ix, iy;
  std::vector<float> wx, wy;
  size_t nx = 0, ny = 0;
  bool nearest = false;
  bool Make(const Shape& in, const Shape& out, const std::vector<std::vector<std::vector<Tap>>>& taps) {
    size_t r = in.GetDimNum();
    if (r < 2) return false;
    planes = 1;
    for (size_t d = 0; d + 2 < r; ++d) {
      if (in.GetDim(d) != out.GetDim(d)) return false;
      for (int64_t o = 0; o < out.GetDim(d); ++o) {  // index o with weight 1 (cubic adds taps of weight 0)
        bool self = false;
        for (const Tap& tp : taps[d][static_cast<size_t>(o)]) {
          if (tp.index == o && tp.weight == 1.0 && !self) self = true;
          else if (tp.weight != 0.0) return false;
        }
        if (!self) return false;
      }
      planes *= in.GetDim(d);
    }
    hi = in.GetDim(r - 2), wi = in.GetDim(r - 1), ho = out.GetDim(r - 2), wo = out.GetDim(r - 1);
    for (size_t d = r - 2; d < r; ++d)
      for (auto& t : taps[d])
        if (t.empty() || t.size() > 4) return false;
    auto flatten = [](const std::vector<std::vector<Tap>>& t, std::vector<int64_t>* idx, std::vector<float>* w) {
      idx->assign(t.size() * 4, 0);
      w->assign(t.size() * 4, 0.f);
      for (size_t o = 0; o < t.size(); ++o)
        for (size_t k = 0; k < t[o].size(); ++k) (*idx)[o * 4 + k] = t[o][k].index, (*w)[o * 4 + k] = static_cast<float>(t[o][k].weight);
    };
    flatten(taps[r - 1], &ix, &wx);
    flatten(taps[r - 2], &iy, &wy);
    nx = ny = 0;
    for (auto& t : taps[r - 1]) nx = std::max(nx, t.size());
    for (auto& t : taps[r - 2]) ny = std::max(ny, t.size());
    nearest = nx == 1 && ny == 1;  // single taps of weight 1: a copy by index
    for (size_t d = r - 2; d < r && nearest; ++d)
      for (auto& t : taps[d]) nearest = nearest && t[0].weight == 1.0;
    return true;
  }
};

// float32 (and 8-bit) when only the last two dims change (every other dim maps each index to itself) and no
// output falls outside the input: per plane, a horizontal pass over the input rows, then a
// vertical one, each over precomputed taps; planes split over the intra-op threads. False when
// the resize is not of that form (the general loops run instead).
// 8-bit data too: the passes in float, each output rounded half away from zero (as the general
// loops round) and saturated. This file is built without multiply-add contraction, so that the
// generated C (weft_resize_planes_q8) gives the same bytes.
template <typename T>
bool ResizeLastTwo(const KernelContextBase* ctx, const Shape& in, const Shape& out, const std::vector<std::vector<std::vector<Tap>>>& taps,
                   const T* x, T* y) {
  LastTwo lt;
  if (!lt.Make(in, out, taps)) return false;
  const int64_t planes = lt.planes, hi = lt.hi, wi = lt.wi, ho = lt.ho, wo = lt.wo;
  const std::vector<int64_t>&ix = lt.ix, &iy = lt.iy;
  const std::vector<float>&wx = lt.wx, &wy = lt.wy;
  const size_t nx = lt.nx, ny = lt.ny;
  const bool nearest = lt.nearest;
  // Nearest: rows copy by index. Otherwise each plane needs hi * wo floats of scratch (and 8-bit
  // data a row of wo floats more).
  constexpr bool kFloat = std::is_same_v<T, float>;
  float* scratch = nullptr;
  if (!nearest) {
    scratch = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(planes * (hi + (kFloat ? 0 : 1)) * wo) * sizeof(float)));
    if (!scratch) return false;
  }
  ctx->ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const T* src = x + pl * hi * wi;
      T* dst = y + pl * ho * wo;
      if (nearest) {
        for (int64_t oy = 0; oy < ho; ++oy) {
          const T* row = src + iy[static_cast<size_t>(oy * 4)] * wi;
          T* o = dst + oy * wo;
          for (int64_t ox = 0; ox < wo; ++ox) o[ox] = row[ix[static_cast<size_t>(ox * 4)]];
        }
        continue;
      }
      float* tmp = scratch + pl * (hi + (kFloat ? 0 : 1)) * wo;
      for (int64_t yy = 0; yy < hi; ++yy) {  // horizontal pass over every input row
        const T* row = src + yy * wi;
        float* t = tmp + yy * wo;
        for (int64_t ox = 0; ox < wo; ++ox) {
          const int64_t* id = &ix[static_cast<size_t>(ox * 4)];
          const float* w = &wx[static_cast<size_t>(ox * 4)];
          float v = w[0] * static_cast<float>(row[id[0]]);
          for (size_t k = 1; k < nx; ++k) v += w[k] * static_cast<float>(row[id[k]]);
          t[ox] = v;
        }
      }
      for (int64_t oy = 0; oy < ho; ++oy) {  // vertical pass
        const int64_t* id = &iy[static_cast<size_t>(oy * 4)];
        const float* w = &wy[static_cast<size_t>(oy * 4)];
        float* o;
        if constexpr (kFloat) o = dst + oy * wo;
        else o = tmp + hi * wo;
        const float* r0 = tmp + id[0] * wo;
        for (int64_t ox = 0; ox < wo; ++ox) o[ox] = w[0] * r0[ox];
        for (size_t k = 1; k < ny; ++k) {
          const float* rk = tmp + id[k] * wo;
          const float wk = w[k];
          for (int64_t ox = 0; ox < wo; ++ox) o[ox] += wk * rk[ox];
        }
        if constexpr (!kFloat) {
          constexpr float lo = static_cast<float>(std::numeric_limits<T>::min()), top = static_cast<float>(std::numeric_limits<T>::max());
          T* d = dst + oy * wo;
          for (int64_t ox = 0; ox < wo; ++ox) d[ox] = static_cast<T>(std::min(std::max(std::round(o[ox]), lo), top));
        }
      }
    }
  });
  return true;
}

// The taps of a 4-D float Resize that keeps N and C and resizes H and W from inside the input
// (no extrapolation; up to 4 taps per axis): false when it is anything else.
bool SpatialTaps(const KernelContextBase* ctx, const Shape& in, Plan* p, std::vector<std::vector<std::vector<Tap>>>* taps) {
  std::string err;
  if (in.GetDimNum() != 4 || in.IsUnknown() || !MakePlan(ctx, in, p, &err) || !err.empty() || p->out.GetShapeSize() == 0) return false;
  if (!MakeTaps(ctx->GetAttrs(), in, *p, taps, &err)) return false;
  for (size_t d = 0; d < 2; ++d) {
    if (p->out.GetDim(d) != in.GetDim(d)) return false;
    for (int64_t o = 0; o < p->out.GetDim(d); ++o) {
      const auto& t = (*taps)[d][static_cast<size_t>(o)];
      if (t.size() != 1 || t[0].index != o || t[0].weight != 1.0) return false;
    }
  }
  for (size_t d = 2; d < 4; ++d)
    for (const auto& t : (*taps)[d])
      if (t.empty() || t.size() > 4) return false;
  return true;
}

class Resize : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public LayoutAwareOp, public CompilableOp,
               public RebuildOnLoad {
 public:
  // Spatial resizes of float32 NCHW (the upsampling of FPN/YOLO/U-Net decoders) run in the
  // channel-blocked layout between blocked convolutions.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Plan p;
    std::vector<std::vector<std::vector<Tap>>> taps;
    if (x->GetDataType() == DT_FLOAT && SpatialTaps(ctx, x->GetShape(), &p, &taps)) s.Format(FORMAT_NC1HWC0).Input(0).Output(0).Together();
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override { return SetBlockedOutputStorage(ctx); }
  // [N][C/16][H][W][16]: the plain path's two passes (horizontal into scratch, then vertical) on
  // 16 channels at a time, with the same float weights and order, so the values are the same.
  graphStatus ExecuteBlocked(EagerOpExecutionContext* ctx, const Tensor* x, Tensor* y) {
    const Shape& in = x->GetShape();
    Plan p;
    std::vector<std::vector<std::vector<Tap>>> taps;
    if (!SpatialTaps(ctx, in, &p, &taps)) return Fail(ctx, "this Resize cannot run in the channel-blocked layout");
    const int64_t planes = in.GetDim(0) * ((in.GetDim(1) + 15) / 16), hi = in.GetDim(2), wi = in.GetDim(3);
    const int64_t ho = p.out.GetDim(2), wo = p.out.GetDim(3);
    const auto& ty = taps[2];
    const auto& tx = taps[3];
    bool nearest = true;
    for (size_t d = 2; d < 4; ++d)
      for (const auto& t : taps[d]) nearest = nearest && t.size() == 1 && t[0].weight == 1.0;
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    float* scratch = nullptr;
    if (!nearest) {
      scratch = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(planes * hi * wo * 16) * sizeof(float)));
      if (!scratch) return GRAPH_FAILED;
    }
    return ctx->ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        const float* src = px + pl * hi * wi * 16;
        float* dst = py + pl * ho * wo * 16;
        if (nearest) {
          for (int64_t oy = 0; oy < ho; ++oy) {
            const float* row = src + ty[static_cast<size_t>(oy)][0].index * wi * 16;
            float* o = dst + oy * wo * 16;
            for (int64_t ox = 0; ox < wo; ++ox) std::memcpy(o + ox * 16, row + tx[static_cast<size_t>(ox)][0].index * 16, 16 * sizeof(float));
          }
          continue;
        }
        float* tmp = scratch + pl * hi * wo * 16;
        for (int64_t yy = 0; yy < hi; ++yy) {
          const float* row = src + yy * wi * 16;
          float* t = tmp + yy * wo * 16;
          for (int64_t ox = 0; ox < wo; ++ox) {
            const auto& tp = tx[static_cast<size_t>(ox)];
            const float w0 = static_cast<float>(tp[0].weight);
            const float* r0 = row + tp[0].index * 16;
            float v[16];
#pragma omp simd
            for (int l = 0; l < 16; ++l) v[l] = w0 * r0[l];
            for (size_t k = 1; k < tp.size(); ++k) {
              const float wk = static_cast<float>(tp[k].weight);
              const float* rk = row + tp[k].index * 16;
#pragma omp simd
              for (int l = 0; l < 16; ++l) v[l] += wk * rk[l];
            }
            std::memcpy(t + ox * 16, v, sizeof v);
          }
        }
        for (int64_t oy = 0; oy < ho; ++oy) {
          const auto& tp = ty[static_cast<size_t>(oy)];
          float* o = dst + oy * wo * 16;
          const float w0 = static_cast<float>(tp[0].weight);
          const float* r0 = tmp + tp[0].index * wo * 16;
#pragma omp simd
          for (int64_t i = 0; i < wo * 16; ++i) o[i] = w0 * r0[i];
          for (size_t k = 1; k < tp.size(); ++k) {
            const float wk = static_cast<float>(tp[k].weight);
            const float* rk = tmp + tp[k].index * wo * 16;
#pragma omp simd
            for (int64_t i = 0; i < wo * 16; ++i) o[i] += wk * rk[i];
          }
        }
      }
    });
  }
  // float32, uint8 and int8 of any rank (1 to 8) through weft_resize (ops/aot/resize.c): the
  // per-axis taps of MakeTaps as constant tables, so the C computes what Execute's general loop
  // computes; 8-bit resizes of the last two dims through weft_resize_planes_q8, Execute's
  // separable path, byte for byte.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    const Shape& want = ctx->GetOutputTensor(0)->GetShape();
    const size_t r = in.GetDimNum();
    const DataType t = x->GetDataType();
    if ((t != DT_FLOAT && t != DT_UINT8 && t != DT_INT8) || ctx->GetOutputTensor(0)->GetDataType() != t)
      return Fail(ctx, "the generated C resizes float32, uint8 and int8 tensors only");
    if (r < 1 || r > 8) return Fail(ctx, "the generated C resizes tensors of rank 1 to 8 only");
    const RuntimeAttrs* a = ctx->GetAttrs();
    Plan p;
    std::string err;
    if (!MakePlan(ctx, in, &p, &err)) {
      // A value is not constant. Only sizes with the stretch policy can be read off the output
      // shape (scale = size / input, as MakePlan has it); roi matters to tf_crop_and_resize only.
      const Tensor* scales_t = ctx->GetOptionalInputTensor(2);
      const Tensor* sizes_t = ctx->GetOptionalInputTensor(3);
      if (std::string(a->GetStr("coordinate_transformation_mode")) == "tf_crop_and_resize")
        return Fail(ctx, "the generated C needs tf_crop_and_resize's roi and the scales or sizes as constants");
      if ((scales_t && scales_t->GetShapeSize()) || !sizes_t || std::string(a->GetStr("keep_aspect_ratio_policy")) != "stretch" ||
          want.IsUnknown() || want.GetDimNum() != r)
        return Fail(ctx, "the generated C needs Resize's scales (or sizes with keep_aspect_ratio_policy other than stretch) as constants");
      p.out = want;
      p.scale.assign(r, 1.0);
      p.roi_lo.assign(r, 0.0);
      p.roi_hi.assign(r, 1.0);
      for (size_t d = 0; d < r; ++d)
        if (want.GetDim(d) != in.GetDim(d)) p.scale[d] = static_cast<double>(want.GetDim(d)) / static_cast<double>(in.GetDim(d));
    }
    if (!err.empty()) return Fail(ctx, err);
    if (p.out != want) return Fail(ctx, "the output shape " + want.ToString() + " differs from Resize's plan " + p.out.ToString());
    std::vector<std::vector<std::vector<Tap>>> taps;
    if (!MakeTaps(a, in, p, &taps, &err)) return Fail(ctx, err);
    if (p.out.GetShapeSize() == 0) return GRAPH_SUCCESS;
    LastTwo lt;
    if (t != DT_FLOAT && lt.Make(in, p.out, taps)) {  // Execute's separable 8-bit path, in the same float operations
      aot::EmitHelper(ctx, aot::Kernels(), "weft_resize_planes_q8");
      ctx->Include("<math.h>");
      const std::string tmp = lt.nearest ? std::string("0") : "(float*)(void*)" + ctx->Scratch(static_cast<size_t>((lt.hi + 1) * lt.wo) * sizeof(float));
      ctx->Run("weft_resize_planes_q8(" + aot::IntLit(lt.planes) + ", " + aot::IntLit(lt.hi) + ", " + aot::IntLit(lt.wi) + ", " + aot::IntLit(lt.ho) +
               ", " + aot::IntLit(lt.wo) + ", " + ctx->Const("ix", DT_INT64, lt.ix) + ", " + ctx->Const("wx", DT_FLOAT, lt.wx) + ", " +
               std::to_string(lt.nx) + ", " + ctx->Const("iy", DT_INT64, lt.iy) + ", " + ctx->Const("wy", DT_FLOAT, lt.wy) + ", " +
               std::to_string(lt.ny) + ", " + (lt.nearest ? "1" : "0") + ", " + (t == DT_INT8 ? "1" : "0") + ", " + ctx->Input(0, "uint8_t") +
               ", " + ctx->Output(0, "uint8_t") + ", " + tmp + ");\n");
      return GRAPH_SUCCESS;
    }
    int64_t st[WEFT_MAX_DIMS];
    Strides(in, st);
    std::vector<int64_t> dims, off;
    std::vector<int32_t> start;
    std::vector<double> w;
    for (size_t d = 0; d < r; ++d) {
      dims.push_back(p.out.GetDim(d));
      for (const auto& t : taps[d]) {
        start.push_back(static_cast<int32_t>(off.size()));
        for (const Tap& tp : t) off.push_back(tp.index * st[d]), w.push_back(tp.weight);
      }
      start.push_back(static_cast<int32_t>(off.size()));
      if (off.size() > static_cast<size_t>(INT32_MAX / 2)) return Fail(ctx, "the generated C takes fewer taps");
    }
    if (off.empty()) off.push_back(0), w.push_back(0.0);  // every output extrapolated: no C array is empty
    const float extrap = static_cast<float>(*a->GetFloat("extrapolation_value"));
    ctx->Include("<math.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_resize");
    ctx->Run("weft_resize(" + std::to_string(r) + ", " + ctx->Const("out_dims", DT_INT64, dims) + ", " +
             ctx->Const("tap_start", DT_INT32, start) + ", " + ctx->Const("tap_offset", DT_INT64, off) + ", " +
             ctx->Const("tap_weight", DT_DOUBLE, w) + ", " + aot::FloatLit(extrap) + ", " + (t == DT_FLOAT ? "0" : t == DT_UINT8 ? "1" : "2") +
             ", " + ctx->Input(0, "void") + ", " + ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(InferShapeContext* ctx) override {
    if (CheckOneOf(ctx, "mode", {"nearest", "linear", "cubic"}) != GRAPH_SUCCESS ||
        CheckOneOf(ctx, "coordinate_transformation_mode", {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                                           "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"}) != GRAPH_SUCCESS ||
        CheckOneOf(ctx, "nearest_mode", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) != GRAPH_SUCCESS ||
        CheckOneOf(ctx, "keep_aspect_ratio_policy", {"stretch", "not_larger", "not_smaller"}) != GRAPH_SUCCESS)
      return GRAPH_FAILED;
    Plan p;
    std::string err;
    if (!MakePlan(ctx, *ctx->GetInputShape(0), &p, &err)) {
      MarkUnknown(ctx->GetOutputShape(0), ctx->GetInputShape(0)->GetDimNum());
      return GRAPH_SUCCESS;
    }
    if (!err.empty()) return Fail(ctx, err);
    *ctx->GetOutputShape(0) = p.out;
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    Plan p;
    std::string err;
    MakePlan(ctx, in, &p, &err);
    if (!err.empty()) return Fail(ctx, err);
    Tensor* y = ctx->MallocOutputTensor(0, p.out, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (x->GetFormat() == FORMAT_NC1HWC0 || y->GetFormat() == FORMAT_NC1HWC0) return ExecuteBlocked(ctx, x, y);
    const RuntimeAttrs* a = ctx->GetAttrs();
    const double extrap = *a->GetFloat("extrapolation_value");
    std::vector<std::vector<std::vector<Tap>>> taps;
    if (!MakeTaps(a, in, p, &taps, &err)) return Fail(ctx, err);
    size_t r = in.GetDimNum();
    if (x->GetDataType() == DT_FLOAT && ResizeLastTwo(ctx, in, p.out, taps, x->GetData<float>(), y->GetData<float>()))
      return GRAPH_SUCCESS;
    if (x->GetDataType() == DT_UINT8 && ResizeLastTwo(ctx, in, p.out, taps, x->GetData<uint8_t>(), y->GetData<uint8_t>()))
      return GRAPH_SUCCESS;
    if (x->GetDataType() == DT_INT8 && ResizeLastTwo(ctx, in, p.out, taps, x->GetData<int8_t>(), y->GetData<int8_t>()))
      return GRAPH_SUCCESS;
    int64_t st[WEFT_MAX_DIMS];
    Strides(in, st);
    DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      int64_t total = p.out.GetShapeSize();
      int64_t coord[WEFT_MAX_DIMS];
      for (int64_t i = 0; i < total; ++i) {
        int64_t rem = i;
        bool outside = false;
        for (size_t d = r; d-- > 0;) {
          coord[d] = rem % p.out.GetDim(d);
          rem /= p.out.GetDim(d);
          if (taps[d][static_cast<size_t>(coord[d])].empty()) outside = true;
        }
        double v = 0;
        if (outside) {
          v = extrap;
        } else {
          // Tensor product of the per-dim taps.
          size_t pos[WEFT_MAX_DIMS] = {0};
          for (;;) {
            double w = 1;
            int64_t off = 0;
            for (size_t d = 0; d < r; ++d) {
              const Tap& tp = taps[d][static_cast<size_t>(coord[d])][pos[d]];
              w *= tp.weight;
              off += tp.index * st[d];
            }
            v += w * static_cast<double>(Load(px[off]));
            size_t d = r;
            while (d-- > 0) {
              if (++pos[d] < taps[d][static_cast<size_t>(coord[d])].size()) break;
              pos[d] = 0;
            }
            if (d == static_cast<size_t>(-1)) break;
          }
        }
        if constexpr (std::is_integral<T>::value && sizeof(T) < 8)  // rounded, saturated to the type (cubic overshoots)
          py[i] = static_cast<T>(std::clamp(std::round(v), static_cast<double>(std::numeric_limits<T>::min()),
                                            static_cast<double>(std::numeric_limits<T>::max())));
        else if constexpr (std::is_integral<T>::value)
          py[i] = static_cast<T>(std::clamp(std::round(v), -9.2233720368547748e18, 9.2233720368547748e18 - 2048.0));
        else py[i] = Store<T>(static_cast<typename Compute<T>::type>(v));
      }
    });
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_resize(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("Resize")
                     .INPUT(X, NumericTypes())
                     .OPTIONAL_INPUT(roi, FloatTypes())
                     .OPTIONAL_INPUT(scales, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(sizes, TensorType({DT_INT64}))
                     .OUTPUT(Y, NumericTypes())
                     .ATTR(mode, String, "nearest")
                     .ATTR(coordinate_transformation_mode, String, "half_pixel")
                     .ATTR(nearest_mode, String, "round_prefer_floor")
                     .ATTR(cubic_coeff_a, Float, -0.75)
                     .ATTR(exclude_outside, Int, 0)
                     .ATTR(extrapolation_value, Float, 0.0)
                     .ATTR(antialias, Int, 0)
                     .ATTR(axes, ListInt, {})
                     .ATTR(keep_aspect_ratio_policy, String, "stretch")
                     .Build(),
                 MakeOpImpl<Resize>("Resize")});
}

}  // namespace weft::ops
