// GridSample (ONNX opsets 16-22): samples X [N, C, d1..dr] at the normalized positions of
// grid [N, D1..Dr, r] (x first: the last spatial dim's coordinate), for 2 or 3 spatial dims.
//   mode: linear ("bilinear" before opset 20), nearest (rounding half to even), cubic ("bicubic":
//         Keys' kernel with a = -0.75 over 4 x 4 pixels; 2 spatial dims only);
//   padding_mode: zeros (pixels outside read 0), border (the nearest edge pixel), reflection
//         (indices mirrored at the borders: the pixel edges, or the centres with align_corners);
//   align_corners: -1 and 1 are the centres of the corner pixels (1), or their outer edges (0).
// As ONNX Runtime computes it: the position denormalized in the input's type, the padding mode
// applied to each pixel index the interpolation reads. The sampling is C text (aot/grid_sample.c)
// that weft aot writes into modules too; float16 and bfloat16 sample in float32.
#include <cmath>
#include <string>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace gs {
#include "aot/grid_sample.c"
}  // namespace gs

namespace {

enum class Mode { kLinear, kNearest, kCubic };
enum class Pad { kZeros, kBorder, kReflection };

class GridSample : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
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
    Geometry g(x->GetShape(), y->GetShape());
    const int32_t m = static_cast<int32_t>(mode), pd = static_cast<int32_t>(pad);
    const int64_t planes = g.n * g.c;
    switch (x->GetDataType()) {
      case DT_FLOAT:
        ctx->ParallelFor(planes, 1, [&](int64_t p0, int64_t p1) {
          gs::weft_grid_sample_f32(x->GetData<float>(), grid->GetData<float>(), y->GetData<float>(), g.c, g.sp, g.in, g.out, m, pd, align, p0, p1);
        });
        return GRAPH_SUCCESS;
      case DT_DOUBLE:
        ctx->ParallelFor(planes, 1, [&](int64_t p0, int64_t p1) {
          gs::weft_grid_sample_f64(x->GetData<double>(), grid->GetData<double>(), y->GetData<double>(), g.c, g.sp, g.in, g.out, m, pd, align, p0, p1);
        });
        return GRAPH_SUCCESS;
      default: break;
    }
    // float16 and bfloat16: in float32, as their arithmetic is.
    std::vector<float> xf(static_cast<size_t>(x->GetShapeSize())), gf(static_cast<size_t>(grid->GetShapeSize())), yf(static_cast<size_t>(y->GetShapeSize()));
    const bool ok = DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      for (size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>(Load(x->GetData<T>()[i]));
      for (size_t i = 0; i < gf.size(); ++i) gf[i] = static_cast<float>(Load(grid->GetData<T>()[i]));
      ctx->ParallelFor(planes, 1, [&](int64_t p0, int64_t p1) {
        gs::weft_grid_sample_f32(xf.data(), gf.data(), yf.data(), g.c, g.sp, g.in, g.out, m, pd, align, p0, p1);
      });
      for (size_t i = 0; i < yf.size(); ++i) y->GetData<T>()[i] = Store<T>(yf[i]);
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("type ") + DataTypeName(x->GetDataType()) + " is not supported");
  }
  // The same call in C, the sampling code a helper of the module.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* grid = ctx->GetInputTensor(1);
    const Tensor* y = ctx->GetOutputTensor(0);
    Mode mode;
    Pad pad;
    Shape out;
    if (!Options(ctx, &mode, &pad) || !Check(ctx, x->GetShape(), grid->GetShape(), mode, &out)) return GRAPH_FAILED;
    const std::string t = aot::CType(x->GetDataType());
    if ((t != "float" && t != "double") || grid->GetDataType() != x->GetDataType())
      return Fail(ctx, std::string("the generated C has no ") + DataTypeName(x->GetDataType()) + " GridSample");
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;
    Geometry g(x->GetShape(), y->GetShape());
    const std::string fn = t == "float" ? "weft_grid_sample_f32" : "weft_grid_sample_f64";
    ctx->Include("<math.h>");
    aot::EmitHelper(ctx, aot::Kernels(), fn);
    ctx->Run(fn + "(" + ctx->Input(0, t.c_str()) + ", " + ctx->Input(1, t.c_str()) + ", " + ctx->Output(0, t.c_str()) + ", " + aot::IntLit(g.c) + ", " +
             std::to_string(g.sp) + ", " + ctx->Const("in", DT_INT64, std::vector<int64_t>(g.in, g.in + 3)) + ", " +
             ctx->Const("out", DT_INT64, std::vector<int64_t>(g.out, g.out + 3)) + ", " + std::to_string(static_cast<int>(mode)) + ", " +
             std::to_string(static_cast<int>(pad)) + ", " + (*ctx->GetAttrs()->GetInt("align_corners") != 0 ? "1" : "0") + ", 0, " +
             aot::IntLit(g.n * g.c) + ");\n");
    return GRAPH_SUCCESS;
  }

 private:
  // (D,) H, W of X and Y with D = 1 for 2 spatial dims.
  struct Geometry {
    int64_t n, c, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
    int32_t sp;
    Geometry(const Shape& xs, const Shape& ys) : n(xs.GetDim(0)), c(xs.GetDim(1)), sp(static_cast<int32_t>(xs.GetDimNum()) - 2) {
      for (int32_t k = 0; k < sp; ++k) in[3 - sp + k] = xs.GetDim(static_cast<size_t>(2 + k)), out[3 - sp + k] = ys.GetDim(static_cast<size_t>(2 + k));
    }
  };
};

// AffineGrid (opset 20): the sampling grid of an affine transform for GridSample. theta
// [N, 2, 3] (or [N, 3, 4]) maps each output position's normalized coordinates (x, y, 1) (or
// (x, y, z, 1)) to where it samples: grid [N, H, W, 2] (or [N, D, H, W, 3]) for size
// [N, C, H, W] (or [N, C, D, H, W]). A dim of n positions spans -1 to 1: at -1 + 2i / (n - 1)
// with align_corners (0 where n is 1, as PyTorch's affine_grid and ONNX Runtime have it; ONNX's
// reference takes -1 there), else at -1 + (2i + 1) / n.
bool AffinePlan(const KernelContextBase* ctx, std::vector<int64_t>* size, int* spatial) {
  const Shape& ts = ctx->GetInputTensor(0)->GetShape();
  const Shape& ss = ctx->GetInputTensor(1)->GetShape();
  if (ss.GetDimNum() != 1 || (ss.GetDim(0) != 4 && ss.GetDim(0) != 5))
    return Fail(ctx, "size " + ss.ToString() + " must hold 4 values [N, C, H, W] or 5 [N, C, D, H, W]"), false;
  *spatial = static_cast<int>(ss.GetDim(0)) - 2;
  const int64_t rows = *spatial, cols = *spatial + 1;
  if (ts.GetDimNum() != 3 || (ts.GetDim(1) >= 0 && ts.GetDim(1) != rows) || (ts.GetDim(2) >= 0 && ts.GetDim(2) != cols))
    return Fail(ctx, "theta " + ts.ToString() + " must be [N, " + std::to_string(rows) + ", " + std::to_string(cols) + "] for a " +
                         std::to_string(rows) + "-D size"),
           false;
  if (ReadInts(ctx->GetInputTensor(1), size)) {
    for (size_t k = 2; k < size->size(); ++k)
      if ((*size)[k] < 0) return Fail(ctx, "size holds a negative dim " + std::to_string((*size)[k])), false;
    if (ts.GetDim(0) >= 0 && (*size)[0] != ts.GetDim(0))
      return Fail(ctx, "size's batch " + std::to_string((*size)[0]) + " differs from theta's " + std::to_string(ts.GetDim(0))), false;
  }
  return true;
}

class AffineGrid : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The runtime's arithmetic in C: the coordinates and each product sum in double.
  graphStatus Emit(EmitContext* ctx) override {
    std::vector<int64_t> size;
    int spatial = 0;
    if (!AffinePlan(ctx, &size, &spatial)) return GRAPH_FAILED;
    if (size.empty()) return Fail(ctx, "the generated C needs size as a constant");
    const DataType dt = ctx->GetInputTensor(0)->GetDataType();
    if (dt != DT_FLOAT && dt != DT_DOUBLE) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " AffineGrid");
    const std::string t = aot::CType(dt);
    const int64_t N = size[0], W = size.back(), H = size[size.size() - 2], D = spatial == 3 ? size[2] : 1;
    if (N * D * H * W == 0) return GRAPH_SUCCESS;
    const bool align = *ctx->GetAttrs()->GetInt("align_corners") != 0;
    // -1 + 2i / (n - 1) with align_corners (0 for n = 1), else -1 + (2i + 1) / n
    const std::string coord = align ? "(n > 1 ? -1.0 + 2.0 * (double)i / (double)(n - 1) : 0.0)" : "(-1.0 + (2.0 * (double)i + 1.0) / (double)n)";
    ctx->Helper("weft_affine_coord_" + std::string(align ? "a" : "h"),
                "static double weft_affine_coord_" + std::string(align ? "a" : "h") + "(int64_t i, int64_t n) { return " + coord + "; }\n");
    const std::string fn = std::string("weft_affine_coord_") + (align ? "a" : "h");
    const int cols = spatial + 1;
    ctx->Run("{\n  const " + t + "* th = " + ctx->Input(0, t.c_str()) + ";\n  " + t + "* out = " + ctx->Output(0, t.c_str()) +
             ";\n  int64_t b, z, r, c;\n  int k, j;\n  for (b = 0; b < " + aot::IntLit(N) + "; ++b)\n    for (z = 0; z < " + aot::IntLit(D) +
             "; ++z)\n      for (r = 0; r < " + aot::IntLit(H) + "; ++r)\n        for (c = 0; c < " + aot::IntLit(W) +
             "; ++c) {\n          double homo[4];\n          homo[0] = " + fn + "(c, " + aot::IntLit(W) + ");\n          homo[1] = " + fn + "(r, " +
             aot::IntLit(H) + ");\n          homo[2] = " + (spatial == 3 ? fn + "(z, " + aot::IntLit(D) + ")" : std::string("1.0")) +
             ";\n          homo[3] = 1.0;\n          for (k = 0; k < " + std::to_string(spatial) + "; ++k) {\n            double v = 0.0;\n" +
             "            for (j = 0; j < " + std::to_string(cols) + "; ++j) v += (double)th[(b * " + std::to_string(spatial) + " + k) * " +
             std::to_string(cols) + " + j] * homo[j];\n            *out++ = (" + t + ")v;\n          }\n        }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    std::vector<int64_t> size;
    int spatial = 0;
    if (!AffinePlan(ctx, &size, &spatial)) return GRAPH_FAILED;
    Shape* out = ctx->GetOutputShape(0);
    if (size.empty()) {  // known when it runs
      MarkUnknown(out, static_cast<size_t>(spatial) + 2);
      out->SetDim(0, ctx->GetInputTensor(0)->GetShape().GetDim(0));
      out->SetDim(static_cast<size_t>(spatial) + 1, spatial);
      return GRAPH_SUCCESS;
    }
    std::vector<int64_t> dims{size[0]};
    dims.insert(dims.end(), size.begin() + 2, size.end());
    dims.push_back(spatial);
    *out = Shape(dims);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, ctx->GetInputDataType(0)); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    std::vector<int64_t> size;
    int spatial = 0;
    if (!AffinePlan(ctx, &size, &spatial)) return GRAPH_FAILED;
    const Tensor* theta = ctx->GetInputTensor(0);
    if (size.empty()) return Fail(ctx, "size must be int64");
    std::vector<int64_t> dims{size[0]};
    dims.insert(dims.end(), size.begin() + 2, size.end());
    dims.push_back(spatial);
    Tensor* y = ctx->MallocOutputTensor(0, Shape(dims), theta->GetDataType());
    if (!y) return GRAPH_FAILED;
    const bool align = *ctx->GetAttrs()->GetInt("align_corners") != 0;
    // coordinates along each spatial dim, in the order (x, y, z): the last dim first
    std::vector<std::vector<double>> at(static_cast<size_t>(spatial));
    for (int d = 0; d < spatial; ++d) {
      const int64_t n = size[size.size() - 1 - static_cast<size_t>(d)];
      for (int64_t i = 0; i < n; ++i)
        at[d].push_back(align ? (n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : 0.0)
                              : -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n));
    }
    const int64_t N = size[0], W = size.back(), H = size[size.size() - 2], D = spatial == 3 ? size[2] : 1;
    DispatchFloat(theta->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* th = theta->GetData<T>();
      T* out = y->GetData<T>();
      const int cols = spatial + 1;
      for (int64_t b = 0; b < N; ++b)
        for (int64_t z = 0; z < D; ++z)
          for (int64_t r = 0; r < H; ++r)
            for (int64_t c = 0; c < W; ++c) {
              const double homo[4] = {at[0][c], at[1][r], spatial == 3 ? at[2][z] : 1.0, 1.0};
              for (int k = 0; k < spatial; ++k) {
                double v = 0.0;
                for (int j = 0; j < cols; ++j) v += static_cast<double>(Load(th[(b * spatial + k) * cols + j])) * homo[j];
                *out++ = Store<T>(static_cast<typename Compute<T>::type>(v));
              }
            }
    });
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_grid_sample(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("GridSample").INPUT(X, FloatTypes()).INPUT(grid, FloatTypes()).OUTPUT(Y, FloatTypes())
                     .ATTR(mode, String, "linear").ATTR(padding_mode, String, "zeros").ATTR(align_corners, Int, 0).Build(),
                 MakeOpImpl<GridSample>("GridSample")});
  out.push_back({OpDefBuilder("AffineGrid").INPUT(theta, FloatTypes()).INPUT(size, TensorType({DT_INT64})).OUTPUT(grid, FloatTypes())
                     .ATTR(align_corners, Int, 0).Build(),
                 MakeOpImpl<AffineGrid>("AffineGrid")});
}

}  // namespace weft::ops
