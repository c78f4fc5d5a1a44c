// RoiAlign (ONNX opsets 10 and 16): the region pooling of two-stage detectors (Mask R-CNN-style
// heads). X [N, C, H, W], rois [R, 4] as (x1, y1, x2, y2) in input coordinates, batch_indices [R]
// -> Y [R, C, output_height, output_width].
//
// Each output bin averages (mode avg) or takes the maximum of (mode max) a grid of bilinear
// samples: sampling_ratio per side, or ceil(bin size) when it is 0. Coordinates are scaled by
// spatial_scale and shifted by half a pixel (half_pixel, opset 16's default) or not
// (output_half_pixel, opset 10's behaviour, where a region is also at least one pixel wide). A
// sample more than one pixel outside the input contributes 0. In max mode a sample's value is the
// largest of its four weighted corners, as the operator's reference and ONNX Runtime define it.
// Sums run in double. A region whose sample grid would exceed kMaxSamplesPerBin, a non-finite
// coordinate, or a batch index outside [0, N) is an error naming the region.
#include <cmath>
#include <string>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

constexpr double kMaxSamplesPerBin = double(1 << 20);

struct Sample {  // a bilinear sample: four positions in one H x W plane and their weights
  int64_t pos[4];
  double w[4];
};

// The kernel weft aot writes for one element type and index type: the runtime's loop (each
// region checked, then its bins), the samples of a bin walked once for all channels with a double
// accumulator per channel, so each channel adds the same terms in the same order as the runtime.
// Returns 1 for a region the runtime refuses.
std::string RoiAlignC(const std::string& fn, const std::string& t, const std::string& it) {
  return "static int " + fn + "(const " + t + "* x, const " + t + "* rois, const " + it + "* bidx, " + t +
         "* y, double* acc, int64_t n, int64_t c, int64_t h, int64_t w, int64_t r, int64_t oh, int64_t ow, int64_t sampling, double scale, "
         "int half_pixel, int max_mode) {\n"
         "  const int64_t plane = h * w;\n"
         "  int64_t k, ph, pw, iy, ix, ch;\n"
         "  int j;\n"
         "  if (h == 0 || w == 0) return 1;\n"
         "  for (k = 0; k < r; ++k) {\n"
         "    const int64_t b = (int64_t)bidx[k];\n"
         "    double v[4], rw, rh, bin_h, bin_w, gh, gw;\n"
         "    int64_t grid_h, grid_w, count;\n"
         "    if (b < 0 || b >= n) return 1;\n"
         "    for (j = 0; j < 4; ++j) {\n"
         "      v[j] = (double)rois[k * 4 + j] * scale - (half_pixel ? 0.5 : 0.0);\n"
         "      if (!isfinite(v[j])) return 1;\n"
         "    }\n"
         "    rw = v[2] - v[0];\n"
         "    rh = v[3] - v[1];\n"
         "    if (!half_pixel) {\n"
         "      if (rw < 1.0) rw = 1.0;\n"
         "      if (rh < 1.0) rh = 1.0;\n"
         "    }\n"
         "    bin_h = rh / (double)oh;\n"
         "    bin_w = rw / (double)ow;\n"
         "    gh = sampling > 0 ? (double)sampling : ceil(bin_h);\n"
         "    gw = sampling > 0 ? (double)sampling : ceil(bin_w);\n"
         "    if (!(gh > 0) || !(gw > 0)) gh = gw = 0;\n"
         "    if (gh > 1048576.0 || gw > 1048576.0 || gh * gw > 1048576.0) return 1;\n"
         "    grid_h = (int64_t)gh;\n"
         "    grid_w = (int64_t)gw;\n"
         "    count = grid_h * grid_w < 1 ? 1 : grid_h * grid_w;\n"
         "    for (ph = 0; ph < oh; ++ph)\n"
         "      for (pw = 0; pw < ow; ++pw) {\n"
         "        int first = 1;\n"
         "        for (ch = 0; ch < c; ++ch) acc[ch] = 0;\n"
         "        for (iy = 0; iy < grid_h; ++iy) {\n"
         "          const double yy = v[1] + (double)ph * bin_h + ((double)iy + 0.5) * bin_h / (double)grid_h;\n"
         "          for (ix = 0; ix < grid_w; ++ix) {\n"
         "            const double xx = v[0] + (double)pw * bin_w + ((double)ix + 0.5) * bin_w / (double)grid_w;\n"
         "            int64_t pos[4] = {0, 0, 0, 0};\n"
         "            double wt[4] = {0, 0, 0, 0};\n"
         "            if (!(yy < -1.0 || yy > (double)h || xx < -1.0 || xx > (double)w)) {\n"
         "              double sy = yy > 0.0 ? yy : 0.0, sx = xx > 0.0 ? xx : 0.0, ly, lx;\n"
         "              int64_t y0 = (int64_t)sy, x0 = (int64_t)sx, y1, x1;\n"
         "              if (y0 >= h - 1) {\n"
         "                y0 = y1 = h - 1;\n"
         "                sy = (double)y0;\n"
         "              } else {\n"
         "                y1 = y0 + 1;\n"
         "              }\n"
         "              if (x0 >= w - 1) {\n"
         "                x0 = x1 = w - 1;\n"
         "                sx = (double)x0;\n"
         "              } else {\n"
         "                x1 = x0 + 1;\n"
         "              }\n"
         "              ly = sy - (double)y0;\n"
         "              lx = sx - (double)x0;\n"
         "              pos[0] = y0 * w + x0;\n"
         "              pos[1] = y0 * w + x1;\n"
         "              pos[2] = y1 * w + x0;\n"
         "              pos[3] = y1 * w + x1;\n"
         "              wt[0] = (1 - ly) * (1 - lx);\n"
         "              wt[1] = (1 - ly) * lx;\n"
         "              wt[2] = ly * (1 - lx);\n"
         "              wt[3] = ly * lx;\n"
         "            }\n"
         "            for (ch = 0; ch < c; ++ch) {\n"
         "              const " + t + "* src = x + (b * c + ch) * plane;\n"
         "              if (max_mode) {\n"
         "                double val = wt[0] * (double)src[pos[0]];\n"
         "                for (j = 1; j < 4; ++j) {\n"
         "                  const double u = wt[j] * (double)src[pos[j]];\n"
         "                  if (val < u) val = u;\n"
         "                }\n"
         "                acc[ch] = first ? val : (acc[ch] < val ? val : acc[ch]);\n"
         "              } else {\n"
         "                for (j = 0; j < 4; ++j) acc[ch] += wt[j] * (double)src[pos[j]];\n"
         "              }\n"
         "            }\n"
         "            first = 0;\n"
         "          }\n"
         "        }\n"
         "        for (ch = 0; ch < c; ++ch) y[((k * c + ch) * oh + ph) * ow + pw] = (" + t + ")(max_mode ? acc[ch] : acc[ch] / (double)count);\n"
         "      }\n"
         "  }\n"
         "  return 0;\n"
         "}\n";
}

class RoiAlign : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // A call of the kernel above; a region the runtime refuses fails the run (status 1).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* rois = ctx->GetInputTensor(1);
    const Tensor* bi = ctx->GetInputTensor(2);
    const DataType dt = x->GetDataType();
    if ((dt != DT_FLOAT && dt != DT_DOUBLE) || rois->GetDataType() != dt)
      return Fail(ctx, "the generated C has float32 and float64 RoiAlign only, with rois of X's type");
    const Shape& xs = x->GetShape();
    if (xs.GetDimNum() != 4 || rois->GetShape().GetDimNum() != 2 || rois->GetShape().GetDim(1) != 4)
      return Fail(ctx, "needs X [N, C, H, W] and rois [num_rois, 4]");
    if (ctx->GetOutputTensor(0)->GetShapeSize() == 0) return GRAPH_SUCCESS;
    const auto* a = ctx->GetAttrs();
    const int64_t sampling = *a->GetInt("sampling_ratio");
    if (sampling < 0) return Fail(ctx, "sampling_ratio must be 0 (adaptive) or positive, not " + std::to_string(sampling));
    const std::string t = aot::CType(dt), it = aot::CType(bi->GetDataType());
    const std::string fn = std::string("weft_roi_align_") + (dt == DT_FLOAT ? "f32" : "f64") + "_" + (bi->GetDataType() == DT_INT32 ? "i32" : "i64");
    ctx->Include("<math.h>");
    ctx->Helper(fn, RoiAlignC(fn, t, it));
    const std::string acc = ctx->Scratch(static_cast<size_t>(std::max<int64_t>(xs.GetDim(1), 1)) * sizeof(double));
    char scale[40];
    std::snprintf(scale, sizeof(scale), "%.17g", static_cast<double>(*a->GetFloat("spatial_scale")));
    ctx->Run("if (" + fn + "(" + ctx->Input(0, t.c_str()) + ", " + ctx->Input(1, t.c_str()) + ", " + ctx->Input(2, it.c_str()) + ", " +
             ctx->Output(0, t.c_str()) + ", (double*)(void*)" + acc + ", " + aot::IntLit(xs.GetDim(0)) + ", " + aot::IntLit(xs.GetDim(1)) + ", " +
             aot::IntLit(xs.GetDim(2)) + ", " + aot::IntLit(xs.GetDim(3)) + ", " + aot::IntLit(rois->GetShape().GetDim(0)) + ", " +
             aot::IntLit(*a->GetInt("output_height")) + ", " + aot::IntLit(*a->GetInt("output_width")) + ", " + aot::IntLit(sampling) + ", " + scale +
             ", " + (std::string(a->GetStr("coordinate_transformation_mode")) == "half_pixel" ? "1" : "0") + ", " +
             (std::string(a->GetStr("mode")) == "max" ? "1" : "0") + ")) return 1;\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    const Shape& rois = *ctx->GetInputShape(1);
    if (x.GetDimNum() != 4) return Fail(ctx, "X must be [N, C, H, W], not " + x.ToString());
    if (rois.GetDimNum() != 2) return Fail(ctx, "rois must be [num_rois, 4], not " + rois.ToString());
    if (CheckOneOf(ctx, "mode", {"avg", "max"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (CheckOneOf(ctx, "coordinate_transformation_mode", {"half_pixel", "output_half_pixel"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const int64_t oh = *ctx->GetAttrs()->GetInt("output_height"), ow = *ctx->GetAttrs()->GetInt("output_width");
    if (oh < 1 || ow < 1 || oh > (int64_t(1) << 20) || ow > (int64_t(1) << 20))
      return Fail(ctx, "output_height and output_width must be in [1, 2^20], not " + std::to_string(oh) + " and " + std::to_string(ow));
    *ctx->GetOutputShape(0) = Shape({rois.GetDim(0), x.GetDim(1), oh, ow});
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* rois = ctx->GetInputTensor(1);
    const Tensor* bi = ctx->GetInputTensor(2);
    const Shape& xs = x->GetShape();
    if (xs.GetDimNum() != 4) return Fail(ctx, "X must be [N, C, H, W], not " + xs.ToString());
    const int64_t r = rois->GetShape().GetDimNum() == 2 ? rois->GetShape().GetDim(0) : -1;
    if (r < 0 || rois->GetShape().GetDim(1) != 4) return Fail(ctx, "rois must be [num_rois, 4], not " + rois->GetShape().ToString());
    if (bi->GetShape() != Shape({r})) return Fail(ctx, "batch_indices must be [" + std::to_string(r) + "], not " + bi->GetShape().ToString());
    if (rois->GetDataType() != x->GetDataType())
      return Fail(ctx, std::string("rois must have X's type ") + DataTypeName(x->GetDataType()) + ", not " + DataTypeName(rois->GetDataType()));
    const auto* a = ctx->GetAttrs();
    const int64_t oh = *a->GetInt("output_height"), ow = *a->GetInt("output_width");
    if (oh < 1 || ow < 1 || oh > (int64_t(1) << 20) || ow > (int64_t(1) << 20))
      return Fail(ctx, "output_height and output_width must be in [1, 2^20], not " + std::to_string(oh) + " and " + std::to_string(ow));
    const int64_t sampling = *a->GetInt("sampling_ratio");
    if (sampling < 0) return Fail(ctx, "sampling_ratio must be 0 (adaptive) or positive, not " + std::to_string(sampling));
    const double scale = *a->GetFloat("spatial_scale");
    const bool half_pixel = std::string(a->GetStr("coordinate_transformation_mode")) == "half_pixel";
    const bool max_mode = std::string(a->GetStr("mode")) == "max";
    const int64_t n = xs.GetDim(0), c = xs.GetDim(1), h = xs.GetDim(2), w = xs.GetDim(3);
    Tensor* y = ctx->MallocOutputTensor(0, Shape({r, c, oh, ow}), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;
    if (h == 0 || w == 0) return Fail(ctx, "X " + xs.ToString() + " has no pixels to sample");

    // Each region's geometry, checked before any work.
    struct Region {
      int64_t batch, grid_h, grid_w;
      double start_h, start_w, bin_h, bin_w;
    };
    std::vector<Region> regions(static_cast<size_t>(r));
    std::string error;
    bool ok = DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* pr = rois->GetData<T>();
      for (int64_t k = 0; k < r && error.empty(); ++k) {
        Region& g = regions[static_cast<size_t>(k)];
        g.batch = bi->GetDataType() == DT_INT32 ? bi->GetData<int32_t>()[k] : bi->GetData<int64_t>()[k];
        if (g.batch < 0 || g.batch >= n) {
          error = "batch index " + std::to_string(g.batch) + " of roi " + std::to_string(k) + " is outside [0, " + std::to_string(n) + ")";
          break;
        }
        double v[4];
        for (int j = 0; j < 4; ++j) v[j] = double(Load(pr[k * 4 + j])) * scale - (half_pixel ? 0.5 : 0.0);
        if (!std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2]) || !std::isfinite(v[3])) {
          error = "roi " + std::to_string(k) + " has a coordinate that is not finite after spatial_scale";
          break;
        }
        double rw = v[2] - v[0], rh = v[3] - v[1];
        if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
        g.start_w = v[0], g.start_h = v[1], g.bin_h = rh / double(oh), g.bin_w = rw / double(ow);
        double gh = sampling > 0 ? double(sampling) : std::ceil(g.bin_h), gw = sampling > 0 ? double(sampling) : std::ceil(g.bin_w);
        if (!(gh > 0) || !(gw > 0)) gh = gw = 0;  // an empty side: no samples at all (each bin 0)
        if (gh > kMaxSamplesPerBin || gw > kMaxSamplesPerBin || gh * gw > kMaxSamplesPerBin) {
          error = "roi " + std::to_string(k) + " would take " + std::to_string(gh) + " x " + std::to_string(gw) +
                  " samples per output bin (at most 2^20); check its coordinates, spatial_scale and sampling_ratio";
          break;
        }
        g.grid_h = static_cast<int64_t>(gh);
        g.grid_w = static_cast<int64_t>(gw);
      }
    });
    if (!ok) return Fail(ctx, std::string("type ") + DataTypeName(x->GetDataType()) + " is not supported");
    if (!error.empty()) return Fail(ctx, error);

    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using Cm = typename Compute<T>::type;
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      const int64_t plane = h * w, bins = oh * ow;
      ForRows(ctx, r, c * bins * 4, [&](int64_t lo, int64_t hi) {
        std::vector<Sample> samples;
        for (int64_t k = lo; k < hi; ++k) {
          const Region& g = regions[static_cast<size_t>(k)];
          const int64_t count = std::max<int64_t>(g.grid_h * g.grid_w, 1);
          for (int64_t ph = 0; ph < oh; ++ph)
            for (int64_t pw = 0; pw < ow; ++pw) {
              samples.clear();
              for (int64_t iy = 0; iy < g.grid_h; ++iy) {
                double yy = g.start_h + double(ph) * g.bin_h + (double(iy) + 0.5) * g.bin_h / double(g.grid_h);
                for (int64_t ix = 0; ix < g.grid_w; ++ix) {
                  double xx = g.start_w + double(pw) * g.bin_w + (double(ix) + 0.5) * g.bin_w / double(g.grid_w);
                  Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
                  if (!(yy < -1.0 || yy > double(h) || xx < -1.0 || xx > double(w))) {
                    double sy = std::max(yy, 0.0), sx = std::max(xx, 0.0);
                    int64_t y0 = static_cast<int64_t>(sy), x0 = static_cast<int64_t>(sx), y1, x1;
                    if (y0 >= h - 1) y0 = y1 = h - 1, sy = double(y0);
                    else y1 = y0 + 1;
                    if (x0 >= w - 1) x0 = x1 = w - 1, sx = double(x0);
                    else x1 = x0 + 1;
                    const double ly = sy - double(y0), lx = sx - double(x0), hy = 1 - ly, hx = 1 - lx;
                    s = Sample{{y0 * w + x0, y0 * w + x1, y1 * w + x0, y1 * w + x1}, {hy * hx, hy * lx, ly * hx, ly * lx}};
                  }
                  samples.push_back(s);
                }
              }
              for (int64_t ch = 0; ch < c; ++ch) {
                const T* src = px + (g.batch * c + ch) * plane;
                double out = 0;
                bool first = true;
                for (const Sample& s : samples) {
                  if (max_mode) {
                    double v = s.w[0] * double(Load(src[s.pos[0]]));
                    for (int j = 1; j < 4; ++j) v = std::max(v, s.w[j] * double(Load(src[s.pos[j]])));
                    out = first ? v : std::max(out, v);
                    first = false;
                  } else {
                    for (int j = 0; j < 4; ++j) out += s.w[j] * double(Load(src[s.pos[j]]));
                  }
                }
                if (!max_mode) out /= double(count);
                py[((k * c + ch) * oh + ph) * ow + pw] = Store<T>(static_cast<Cm>(out));
              }
            }
        }
      });
    });
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_roi_align(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("RoiAlign").INPUT(X, FloatTypes()).INPUT(rois, FloatTypes()).INPUT(batch_indices, IndexTypes())
                     .OUTPUT(Y, FloatTypes()).SAME_AS_INPUT(X).ATTR(coordinate_transformation_mode, String, "half_pixel")
                     .ATTR(mode, String, "avg").ATTR(output_height, Int, 1).ATTR(output_width, Int, 1)
                     .ATTR(sampling_ratio, Int, 0).ATTR(spatial_scale, Float, 1.0).Build(),
                 MakeOpImpl<RoiAlign>("RoiAlign")});
}

}  // namespace weft::ops
