// GridSample (ONNX opsets 16-22): samples X [N, C, d1..dr] at the normalized positions of
// grid [N, D1..Dr, r] (x first: the last spatial dim's coordinate), for 2 or 3 spatial dims.
//   mode: linear ("bilinear" before opset 20), nearest (rounding half to even), cubic ("bicubic":
//         Keys' kernel with a = -0.75 over 4 x 4 pixels; 2 spatial dims only);
//   padding_mode: zeros (pixels outside read 0), border (the nearest edge pixel), reflection
//         (indices mirrored at the borders: the pixel edges, or the centres with align_corners);
//   align_corners: -1 and 1 are the centres of the corner pixels (1), or their outer edges (0).
// As ONNX Runtime computes it: the position denormalized in the input's type, the padding mode
// applied to each pixel index the interpolation reads.
#include <cmath>
#include <string>
#include <vector>

#include "op_util.h"

namespace weft::ops {
namespace {

enum class Mode { kLinear, kNearest, kCubic };
enum class Pad { kZeros, kBorder, kReflection };

template <typename C>
C Denormalize(C n, int64_t len, bool align) {
  return align ? static_cast<C>((n + 1) / 2 * static_cast<C>(len - 1)) : static_cast<C>(((n + 1) * static_cast<C>(len) - 1) / 2);
}

// x mirrored into [lo, hi] as many times as it takes.
template <typename C>
C Reflect(C x, C lo, C hi) {
  const C range = hi - lo;
  if (!(range > 0)) return lo;  // one pixel with align_corners: every index is that pixel
  if (x < lo) {
    const C d = lo - x;
    const int64_t n = static_cast<int64_t>(d / range);
    const C r = d - static_cast<C>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const C d = x - hi;
    const int64_t n = static_cast<int64_t>(d / range);
    const C r = d - static_cast<C>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void CubicWeights(double t, double w[4]) {
  constexpr double a = -0.75;
  t = std::fabs(t);
  w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  w[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

class GridSample : public EagerExecuteOp, public ShapeInferOp {
 public:
  static bool Options(const KernelContextBase* ctx, Mode* mode, Pad* pad) {
    const std::string m = ctx->GetAttrs()->GetStr("mode"), p = ctx->GetAttrs()->GetStr("padding_mode");
    if (m == "linear" || m == "bilinear") *mode = Mode::kLinear;
    else if (m == "nearest") *mode = Mode::kNearest;
    else if (m == "cubic" || m == "bicubic") *mode = Mode::kCubic;
    else return Fail(ctx, "mode must be linear (bilinear), nearest or cubic (bicubic), not '" + m + "'"), false;
    if (p == "zeros") *pad = Pad::kZeros;
    else if (p == "border") *pad = Pad::kBorder;
    else if (p == "reflection") *pad = Pad::kReflection;
    else return Fail(ctx, "padding_mode must be zeros, border or reflection, not '" + p + "'"), false;
    return true;
  }
  static bool Check(const KernelContextBase* ctx, const Shape& x, const Shape& g, Mode mode, Shape* out) {
    const size_t r = x.GetDimNum();
    if (r != 4 && r != 5) return Fail(ctx, "X must have 2 or 3 spatial dims ([N, C, H, W] or [N, C, D, H, W]), not " + x.ToString()), false;
    if (g.GetDimNum() != r || (g.GetDim(r - 1) >= 0 && g.GetDim(r - 1) != static_cast<int64_t>(r - 2)))
      return Fail(ctx, "grid must be [N, " + std::string(r == 4 ? "H_out, W_out, 2" : "D_out, H_out, W_out, 3") + "] for X " + x.ToString() +
                           ", not " + g.ToString()),
             false;
    if (x.GetDim(0) >= 0 && g.GetDim(0) >= 0 && x.GetDim(0) != g.GetDim(0))
      return Fail(ctx, "grid " + g.ToString() + " and X " + x.ToString() + " have different batch sizes"), false;
    if (r == 5 && mode == Mode::kCubic) return Fail(ctx, "cubic mode samples 2 spatial dims only"), false;
    for (size_t k = 2; k < r; ++k)
      if (x.GetDim(k) == 0) return Fail(ctx, "X " + x.ToString() + " has an empty spatial dim: there is nothing to sample"), false;
    std::vector<int64_t> d{x.GetDim(0), x.GetDim(1)};
    for (size_t k = 1; k + 1 < r; ++k) d.push_back(g.GetDim(k));
    *out = Shape(d);
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Mode mode;
    Pad pad;
    Shape out;
    if (!Options(ctx, &mode, &pad) || !Check(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), mode, &out)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* grid = ctx->GetInputTensor(1);
    Mode mode;
    Pad pad;
    Shape out;
    if (!Options(ctx, &mode, &pad) || !Check(ctx, x->GetShape(), grid->GetShape(), mode, &out)) return GRAPH_FAILED;
    if (grid->GetDataType() != x->GetDataType()) return Fail(ctx, "grid must have X's type");
    Tensor* y = ctx->MallocOutputTensor(0, out, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;
    const bool align = *ctx->GetAttrs()->GetInt("align_corners") != 0;
    const bool ok = DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      Run<T, C>(ctx, x, grid, y, mode, pad, align);
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("type ") + DataTypeName(x->GetDataType()) + " is not supported");
  }

 private:
  template <typename T, typename C>
  static void Run(const KernelContextBase* ctx, const Tensor* x, const Tensor* grid, Tensor* y, Mode mode, Pad pad, bool align) {
    const Shape& xs = x->GetShape();
    const size_t sp = xs.GetDimNum() - 2;  // 2 or 3
    const int64_t n = xs.GetDim(0), c = xs.GetDim(1);
    int64_t in[3] = {1, 1, 1}, outd[3] = {1, 1, 1};  // (D,) H, W with D = 1 for 2-D
    for (size_t k = 0; k < sp; ++k) in[3 - sp + k] = xs.GetDim(2 + k), outd[3 - sp + k] = y->GetShape().GetDim(2 + k);
    const int64_t plane_in = in[0] * in[1] * in[2], plane_out = outd[0] * outd[1] * outd[2];
    // Per spatial axis (x, y, z order): the reflection borders.
    C lo[3], hi[3];
    const int64_t len_xyz[3] = {in[2], in[1], in[0]};
    for (int a = 0; a < 3; ++a) {
      lo[a] = align ? C(0) : C(-0.5);
      hi[a] = align ? static_cast<C>(len_xyz[a] - 1) : static_cast<C>(static_cast<double>(len_xyz[a]) - 0.5);
    }
    // The pixel index along axis a after padding, or -1 for a zero.
    auto index = [&](int64_t i, int a) -> int64_t {
      const int64_t len = len_xyz[a];
      switch (pad) {
        case Pad::kZeros: return i >= 0 && i < len ? i : -1;
        case Pad::kBorder: return i < 0 ? 0 : i >= len ? len - 1 : i;
        case Pad::kReflection: {
          const int64_t r = static_cast<int64_t>(Reflect(static_cast<C>(i), lo[a], hi[a]));
          return r < 0 ? 0 : r >= len ? len - 1 : r;
        }
      }
      return -1;
    };
    const T* pg = grid->GetData<T>();
    const T* px = x->GetData<T>();
    T* py = y->GetData<T>();
    ctx->ParallelFor(n * c, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t bc = b0; bc < b1; ++bc) {
        const int64_t b = bc / c;
        const T* img = px + bc * plane_in;
        T* o = py + bc * plane_out;
        const T* gb = pg + b * plane_out * static_cast<int64_t>(sp);
        auto pixel = [&](int64_t zi, int64_t yi, int64_t xi) -> C {
          const int64_t X = index(xi, 0), Y = index(yi, 1), Z = sp == 3 ? index(zi, 2) : 0;
          if (X < 0 || Y < 0 || Z < 0) return C(0);
          return Load(img[(Z * in[1] + Y) * in[2] + X]);
        };
        for (int64_t p = 0; p < plane_out; ++p) {
          const T* gp = gb + p * static_cast<int64_t>(sp);
          // Positions beyond +-2^40 pixels are as far outside as any (and convert to integers safely).
          auto pos = [&](int k, int64_t len) {
            const C v = Denormalize<C>(Load(gp[k]), len, align);
            return v < C(-1099511627776.0) ? C(-1099511627776.0) : v > C(1099511627776.0) ? C(1099511627776.0) : v;
          };
          const C fx = pos(0, in[2]), fy = pos(1, in[1]), fz = sp == 3 ? pos(2, in[0]) : C(0);
          if (fx != fx || fy != fy || fz != fz) {  // a NaN position samples nothing: NaN
            o[p] = Store<T>(static_cast<C>(NAN));
            continue;
          }
          C v = 0;
          if (mode == Mode::kNearest) {
            v = pixel(static_cast<int64_t>(std::nearbyint(fz)), static_cast<int64_t>(std::nearbyint(fy)), static_cast<int64_t>(std::nearbyint(fx)));
          } else if (mode == Mode::kLinear) {
            const int64_t x1 = static_cast<int64_t>(std::floor(fx)), y1 = static_cast<int64_t>(std::floor(fy));
            const C dx1 = fx - static_cast<C>(x1), dx2 = static_cast<C>(x1 + 1) - fx;
            const C dy1 = fy - static_cast<C>(y1), dy2 = static_cast<C>(y1 + 1) - fy;
            auto plane = [&](int64_t z) {
              return dy2 * (dx2 * pixel(z, y1, x1) + dx1 * pixel(z, y1, x1 + 1)) + dy1 * (dx2 * pixel(z, y1 + 1, x1) + dx1 * pixel(z, y1 + 1, x1 + 1));
            };
            if (sp == 2) {
              v = plane(0);
            } else {
              const int64_t z1 = static_cast<int64_t>(std::floor(fz));
              const C dz1 = fz - static_cast<C>(z1), dz2 = static_cast<C>(z1 + 1) - fz;
              v = dz2 * plane(z1) + dz1 * plane(z1 + 1);
            }
          } else {  // cubic, 2-D
            const int64_t x0 = static_cast<int64_t>(std::floor(fx)) - 1, y0 = static_cast<int64_t>(std::floor(fy)) - 1;
            double wx[4], wy[4];
            CubicWeights(static_cast<double>(fx - static_cast<C>(x0) - 1), wx);
            CubicWeights(static_cast<double>(fy - static_cast<C>(y0) - 1), wy);
            C rows[4];
            for (int h = 0; h < 4; ++h) {
              rows[h] = 0;
              for (int w = 0; w < 4; ++w) rows[h] += static_cast<C>(wx[w]) * pixel(0, y0 + h, x0 + w);
            }
            v = static_cast<C>(wy[0]) * rows[0] + static_cast<C>(wy[1]) * rows[1] + static_cast<C>(wy[2]) * rows[2] + static_cast<C>(wy[3]) * rows[3];
          }
          o[p] = Store<T>(v);
        }
      }
    });
  }
};

}  // namespace

void WeftRegister_grid_sample(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("GridSample").INPUT(X, FloatTypes()).INPUT(grid, FloatTypes()).OUTPUT(Y, FloatTypes())
                     .ATTR(mode, String, "linear").ATTR(padding_mode, String, "zeros").ATTR(align_corners, Int, 0).Build(),
                 MakeOpImpl<GridSample>("GridSample")});
}

}  // namespace weft::ops
