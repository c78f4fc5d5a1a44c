// Column operators: Col2Im (ONNX opset 18), the inverse of the im2col unfold, and DeformConv
// (opset 19), a convolution whose kernel taps sample the input at learned offsets.
//
// Col2Im(input [N, C * prod(block), L], image_shape [nd], block_shape [nd]) -> [N, C, image...]:
// column l of channel c's block tap k adds into the image at l's block origin (l_d * stride_d -
// pad_begin_d) plus k_d * dilation_d; taps that land in the padding are dropped. L must be the
// number of block positions, prod over d of (image_d + pads - dilation_d * (block_d - 1) - 1) /
// stride_d + 1. Any numeric type; sums in the type's compute precision.
//
// DeformConv(X [N, C, H, W], W [M, C / group, kH, kW], offset [N, og * 2 * kH * kW, oH, oW],
// B [M]?, mask [N, og * kH * kW, oH, oW]?) -> [N, M, oH, oW], og = offset_group: the tap (i, j)
// of output (y, x) reads channel c at (y * sH - pad_top + i * dH + dy, x * sW - pad_left + j * dW
// + dx), (dy, dx) being offset[n, g * 2kHkW + 2 (i kW + j) + {0, 1}, y, x] for c's offset group
// g = c / (C / og), bilinearly interpolated with zeros outside the image (a point whose
// coordinates are not finite reads zero), times mask[n, g kHkW + i kW + j, y, x] (1 without a
// mask). 2-D only, as ONNX's reference. Each (image, group) works in blocks of output positions
// (at most 32 MiB of scratch): it locates each (offset group, tap, position) once, since all the
// offset group's channels share its offsets; builds the block's sampled columns from those over the
// intra-op threads; then one GEMM with the group's weights: float32 through oneDNN's sgemm
// (float16 and bfloat16 widened to it), float64 in double. A sample's integer position is kept apart from the offset's fraction, so it
// stays exact on images of any size.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

std::string Dims(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The geometry of a Col2Im node; `known` is false while image_shape or block_shape is not a
// constant yet (then only the rank is known).
struct ColPlan {
  bool known = false;
  size_t nd = 0;
  std::vector<int64_t> image, block, s, d, pb, pe, blocks;  // blocks: positions per dim
  int64_t taps = 1, positions = 1, channels = 0;
};

bool MakeColPlan(const KernelContextBase* ctx, ColPlan* p) {
  const Tensor* x = ctx->GetInputTensor(0);
  const Tensor* is = ctx->GetInputTensor(1);
  const Tensor* bs = ctx->GetInputTensor(2);
  const Shape& xs = x->GetShape();
  if (!xs.IsUnknown() && xs.GetDimNum() != 3)
    return Fail(ctx, "input must be [N, C * prod(block_shape), L], got " + xs.ToString()), false;
  for (const Tensor* t : {is, bs})
    if (!t->GetShape().IsUnknown() && t->GetShape().GetDimNum() != 1)
      return Fail(ctx, std::string(t == is ? "image_shape" : "block_shape") + " must be 1-D, got " + t->GetShape().ToString()), false;
  const int64_t nd = is->GetShape().IsUnknown() ? -1 : is->GetShape().GetDim(0);
  const int64_t nb = bs->GetShape().IsUnknown() ? -1 : bs->GetShape().GetDim(0);
  if (nd >= 0 && nb >= 0 && nd != nb)
    return Fail(ctx, "image_shape has " + std::to_string(nd) + " dims, block_shape " + std::to_string(nb)), false;
  if (nd == 0 || nd > static_cast<int64_t>(WEFT_MAX_DIMS) - 2)
    return Fail(ctx, "image_shape must hold 1 to " + std::to_string(WEFT_MAX_DIMS - 2) + " dims, got " + std::to_string(nd)), false;
  p->nd = nd > 0 ? static_cast<size_t>(nd) : static_cast<size_t>(nb > 0 ? nb : 0);
  if (!ReadInts(is, &p->image) || !ReadInts(bs, &p->block)) return true;  // known when it runs
  if (p->image.size() != p->block.size())
    return Fail(ctx, "image_shape " + Dims(p->image) + " and block_shape " + Dims(p->block) + " differ in length"), false;
  p->nd = p->image.size();
  const RuntimeAttrs* a = ctx->GetAttrs();
  ListView<int64_t> strides = a->GetListInt("strides"), dil = a->GetListInt("dilations"), pads = a->GetListInt("pads");
  if ((strides.size() && strides.size() != p->nd) || (dil.size() && dil.size() != p->nd) || (pads.size() && pads.size() != 2 * p->nd))
    return Fail(ctx, "strides/dilations need " + std::to_string(p->nd) + " values and pads " + std::to_string(2 * p->nd) +
                         " for a " + std::to_string(p->nd) + "-D image"),
           false;
  uint64_t taps = 1, positions = 1, pixels = 1;
  for (size_t i = 0; i < p->nd; ++i) {
    const int64_t s = strides.size() ? strides[i] : 1, d = dil.size() ? dil[i] : 1;
    const int64_t pb = pads.size() ? pads[i] : 0, pe = pads.size() ? pads[i + p->nd] : 0;
    const int64_t img = p->image[i], blk = p->block[i];
    if (img < 0 || blk <= 0 || s <= 0 || d <= 0 || pb < 0 || pe < 0)
      return Fail(ctx, "spatial dim " + std::to_string(i) + ": image " + std::to_string(img) + ", block " + std::to_string(blk) +
                           ", stride " + std::to_string(s) + ", dilation " + std::to_string(d) + ", pads (" + std::to_string(pb) + ", " +
                           std::to_string(pe) + "): blocks, strides and dilations must be positive, the rest not negative"),
             false;
    const int64_t limit = int64_t{1} << 40;
    const char* big = img > limit ? "image_shape" : blk > limit ? "block_shape" : s > limit ? "strides" : d > limit ? "dilations" : pb > limit || pe > limit ? "pads" : nullptr;
    if (big)
      return Fail(ctx, std::string(big) + " in spatial dim " + std::to_string(i) + " is above 2^40 (image " + std::to_string(img) + ", block " +
                           std::to_string(blk) + ", stride " + std::to_string(s) + ", dilation " + std::to_string(d) + ", pads " + std::to_string(pb) +
                           ", " + std::to_string(pe) + ")"),
             false;
    const int64_t room = img + pb + pe;  // below 2^42; the dilated block is checked against it before it is formed
    if (room == 0 || (blk - 1) > (room - 1) / d)
      return Fail(ctx, "spatial dim " + std::to_string(i) + ": the block of " + std::to_string(blk) + " with dilation " + std::to_string(d) +
                           " does not fit the padded image (" + std::to_string(room) + ")"),
             false;
    const int64_t span = d * (blk - 1) + 1;
    const int64_t count = (room - span) / s + 1;
    p->s.push_back(s), p->d.push_back(d), p->pb.push_back(pb), p->pe.push_back(pe), p->blocks.push_back(count);
    if (taps > (uint64_t{1} << 40) / static_cast<uint64_t>(blk))
      return Fail(ctx, "block_shape " + Dims(p->block) + " holds more than 2^40 taps"), false;
    if (positions > (uint64_t{1} << 40) / static_cast<uint64_t>(count))
      return Fail(ctx, "image_shape " + Dims(p->image) + " with these pads and strides has more than 2^40 block positions"), false;
    if (img > 0 && pixels > (uint64_t{1} << 62) / static_cast<uint64_t>(img))
      return Fail(ctx, "image_shape " + Dims(p->image) + " holds more than 2^62 pixels"), false;
    taps *= static_cast<uint64_t>(blk), positions *= static_cast<uint64_t>(count), pixels *= static_cast<uint64_t>(img);
  }
  p->taps = static_cast<int64_t>(taps), p->positions = static_cast<int64_t>(positions);
  if (!xs.IsUnknown()) {
    if (xs.GetDim(1) >= 0 && xs.GetDim(1) % p->taps != 0)
      return Fail(ctx, "input's dim 1 (" + std::to_string(xs.GetDim(1)) + ") is not a multiple of prod(block_shape) = " + std::to_string(p->taps)),
             false;
    if (xs.GetDim(2) >= 0 && xs.GetDim(2) != p->positions)
      return Fail(ctx, "input has " + std::to_string(xs.GetDim(2)) + " columns; image " + Dims(p->image) + " with block " + Dims(p->block) +
                           " and these strides, dilations and pads has " + std::to_string(p->positions) + " block positions"),
             false;
    p->channels = xs.GetDim(1) >= 0 ? xs.GetDim(1) / p->taps : -1;
  } else {
    p->channels = -1;
  }
  p->known = true;
  return true;
}

class Col2Im : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The runtime's loops in C, summing in the element type in the same order (float16 and bfloat16
  // have no C type here).
  graphStatus Emit(EmitContext* ctx) override {
    ColPlan p;
    if (!MakeColPlan(ctx, &p)) return GRAPH_FAILED;
    if (!p.known) return Fail(ctx, "the generated C needs image_shape and block_shape as constants");
    const Tensor* x = ctx->GetInputTensor(0);
    const std::string t = aot::CType(x->GetDataType());
    if (t.empty() || x->GetDataType() == DT_FLOAT16 || x->GetDataType() == DT_BF16)
      return Fail(ctx, std::string("the generated C has no ") + DataTypeName(x->GetDataType()) + " Col2Im");
    const int64_t rows = x->GetShape().GetDim(0) * p.channels;
    int64_t plane = 1;
    for (int64_t v : p.image) plane *= v;
    if (rows * plane == 0) return GRAPH_SUCCESS;
    std::vector<int64_t> istride(p.nd, 1);
    for (size_t dd = p.nd - 1; dd-- > 0;) istride[dd] = istride[dd + 1] * p.image[dd + 1];
    const std::string img = ctx->Const("image", DT_INT64, p.image), blk = ctx->Const("block", DT_INT64, p.block),
                      cnt = ctx->Const("blocks", DT_INT64, p.blocks), st = ctx->Const("strides", DT_INT64, p.s),
                      dl = ctx->Const("dilations", DT_INT64, p.d), pb = ctx->Const("pads", DT_INT64, p.pb),
                      is = ctx->Const("istride", DT_INT64, istride);
    const std::string ND = std::to_string(p.nd), PLANE = aot::IntLit(plane);
    ctx->Run("{\n  const " + t + "* src = " + ctx->Input(0, t.c_str()) + ";\n  " + t + "* out = " + ctx->Output(0, t.c_str()) +
             ";\n  int64_t r, i, tap, pos, k[" + ND + "], l[" + ND + "];\n  int dd;\n  for (r = 0; r < " + aot::IntLit(rows) + "; ++r) {\n    " + t +
             "* dst = out + r * " + PLANE + ";\n    for (i = 0; i < " + PLANE + "; ++i) dst[i] = 0;\n    for (dd = 0; dd < " + ND +
             "; ++dd) k[dd] = 0;\n    for (tap = 0; tap < " + aot::IntLit(p.taps) + "; ++tap) {\n      for (dd = 0; dd < " + ND +
             "; ++dd) l[dd] = 0;\n      for (pos = 0; pos < " + aot::IntLit(p.positions) + "; ++pos, ++src) {\n        int64_t o = 0;\n" +
             "        int inside = 1;\n        for (dd = 0; dd < " + ND + " && inside; ++dd) {\n          const int64_t v = l[dd] * " + st +
             "[dd] - " + pb + "[dd] + k[dd] * " + dl + "[dd];\n          inside = v >= 0 && v < " + img + "[dd];\n          o += v * " + is +
             "[dd];\n        }\n        if (inside) dst[o] = (" + t + ")(dst[o] + *src);\n        for (dd = " + ND + " - 1; dd >= 0; --dd) {\n" +
             "          if (++l[dd] < " + cnt + "[dd]) break;\n          l[dd] = 0;\n        }\n      }\n      for (dd = " + ND +
             " - 1; dd >= 0; --dd) {\n        if (++k[dd] < " + blk + "[dd]) break;\n        k[dd] = 0;\n      }\n    }\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, ctx->GetInputDataType(0)); }
  graphStatus InferShape(InferShapeContext* ctx) override {
    ColPlan p;
    if (!MakeColPlan(ctx, &p)) return GRAPH_FAILED;
    const Shape& xs = ctx->GetInputTensor(0)->GetShape();
    Shape* out = ctx->GetOutputShape(0);
    if (!p.known) {
      if (p.nd == 0) return MarkUnknown(out), GRAPH_SUCCESS;
      MarkUnknown(out, p.nd + 2);
      if (!xs.IsUnknown()) out->SetDim(0, xs.GetDim(0));
      return GRAPH_SUCCESS;
    }
    std::vector<int64_t> dims{xs.IsUnknown() ? -1 : xs.GetDim(0), p.channels};
    dims.insert(dims.end(), p.image.begin(), p.image.end());
    *out = Shape(dims);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    ColPlan p;
    if (!MakeColPlan(ctx, &p)) return GRAPH_FAILED;
    if (!p.known) return Fail(ctx, "image_shape and block_shape must be int64 tensors");
    const Tensor* x = ctx->GetInputTensor(0);
    const int64_t n = x->GetShape().GetDim(0), c = p.channels;
    std::vector<int64_t> dims{n, c};
    dims.insert(dims.end(), p.image.begin(), p.image.end());
    Shape ys(dims);
    uint64_t bytes = 0;
    if (!ys.GetCheckedBytes(DataTypeSize(x->GetDataType()), &bytes)) return Fail(ctx, "the output " + ys.ToString() + " is too large");
    Tensor* y = ctx->MallocOutputTensor(0, ys, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;
    int64_t plane = 1;
    for (int64_t v : p.image) plane *= v;
    // Each tap's per-dim image coordinate, precomputed for the outer dims: at[d][k_d][l_d] (-1 in
    // the padding). Along the last dim a tap's positions land on a strided run of the image row,
    // from l_lo to l_hi, summed in one loop (contiguous for stride 1). The order of the sums is the
    // positions' order, as the generated C has it.
    const size_t nd = p.nd, last = nd - 1;
    std::vector<std::vector<int64_t>> at(nd);
    for (size_t dd = 0; dd < last; ++dd)
      for (int64_t k = 0; k < p.block[dd]; ++k)
        for (int64_t l = 0; l < p.blocks[dd]; ++l) {
          const int64_t v = l * p.s[dd] - p.pb[dd] + k * p.d[dd];
          at[dd].push_back(v >= 0 && v < p.image[dd] ? v : -1);
        }
    std::vector<int64_t> istride(nd, 1);
    for (size_t dd = nd - 1; dd-- > 0;) istride[dd] = istride[dd + 1] * p.image[dd + 1];
    const int64_t run = p.blocks[last], ls = p.s[last], limg = p.image[last];
    int64_t outer = 1;  // block positions over the outer dims
    for (size_t dd = 0; dd < last; ++dd) outer *= p.blocks[dd];
    DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const T* in = x->GetData<T>();
      T* out = y->GetData<T>();
      constexpr bool kInPlace = std::is_same_v<C, T>;  // sums straight into the output, else in a float plane
      ForRows(ctx, n * c, p.taps * p.positions, [&](int64_t r0, int64_t r1) {
        std::vector<C> plane_acc(kInPlace ? 0 : static_cast<size_t>(plane));
        std::vector<int64_t> k(nd), l(nd);
        for (int64_t r = r0; r < r1; ++r) {
          C* acc = kInPlace ? reinterpret_cast<C*>(out + r * plane) : plane_acc.data();
          std::fill(acc, acc + plane, C{});
          const T* src = in + r * p.taps * p.positions;
          std::fill(k.begin(), k.end(), 0);
          for (int64_t tap = 0; tap < p.taps; ++tap) {
            // the last dim's run for this tap: image column l * ls + v0 for l in [lo, hi)
            const int64_t v0 = k[last] * p.d[last] - p.pb[last];
            const int64_t lo = v0 >= 0 ? 0 : (-v0 + ls - 1) / ls;
            const int64_t hi = v0 > limg - 1 ? 0 : std::min(run, (limg - 1 - v0) / ls + 1);
            std::fill(l.begin(), l.end(), 0);
            for (int64_t op = 0; op < outer; ++op, src += run) {
              int64_t o = 0;
              bool inside = lo < hi;
              for (size_t dd = 0; dd < last && inside; ++dd) {
                const int64_t v = at[dd][static_cast<size_t>(k[dd] * p.blocks[dd] + l[dd])];
                inside = v >= 0;
                o += v * istride[dd];
              }
              if (inside) {
                C* row = acc + (o + v0 + lo * ls);  // the first image column the run reaches
                const T* from = src + lo;
                const int64_t len = hi - lo;
                if (ls == 1)
                  for (int64_t q = 0; q < len; ++q) row[q] = static_cast<C>(row[q] + Load(from[q]));
                else
                  for (int64_t q = 0; q < len; ++q) row[q * ls] = static_cast<C>(row[q * ls] + Load(from[q]));
              }
              for (size_t dd = last; dd-- > 0;) {  // next outer block position
                if (++l[dd] < p.blocks[dd]) break;
                l[dd] = 0;
              }
            }
            for (size_t dd = nd; dd-- > 0;) {  // next tap
              if (++k[dd] < p.block[dd]) break;
              k[dd] = 0;
            }
          }
          if constexpr (!kInPlace) {
            T* dst = out + r * plane;
            for (int64_t i = 0; i < plane; ++i) dst[i] = Store<T>(acc[i]);
          }
        }
      });
    });
    return GRAPH_SUCCESS;
  }
};

// The geometry of a DeformConv node, from X, W and the attributes.
struct DeformPlan {
  int64_t n = 0, c = 0, h = 0, w = 0, m = 0, cg = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t group = 1, og = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
};

// Fills *p; false (with the error set) on a mismatch. Dims still unknown are -1 and not checked.
bool MakeDeformPlan(const KernelContextBase* ctx, DeformPlan* p) {
  const Shape& xs = ctx->GetInputTensor(0)->GetShape();
  const Shape& ws = ctx->GetInputTensor(1)->GetShape();
  const Shape& os = ctx->GetInputTensor(2)->GetShape();
  if (!xs.IsUnknown() && xs.GetDimNum() != 4)
    return Fail(ctx, "X must be [N, C, H, W] (DeformConv is 2-D here, as in ONNX's reference), got " + xs.ToString()), false;
  if (!ws.IsUnknown() && ws.GetDimNum() != 4) return Fail(ctx, "W must be [M, C / group, kH, kW], got " + ws.ToString()), false;
  if (!os.IsUnknown() && os.GetDimNum() != 4)
    return Fail(ctx, "offset must be [N, offset_group * 2 * kH * kW, oH, oW], got " + os.ToString()), false;
  const RuntimeAttrs* a = ctx->GetAttrs();
  p->group = *a->GetInt("group"), p->og = *a->GetInt("offset_group");
  ListView<int64_t> strides = a->GetListInt("strides"), dil = a->GetListInt("dilations"), pads = a->GetListInt("pads"),
                    ks = a->GetListInt("kernel_shape");
  if ((strides.size() && strides.size() != 2) || (dil.size() && dil.size() != 2) || (pads.size() && pads.size() != 4) || (ks.size() && ks.size() != 2))
    return Fail(ctx, "strides, dilations and kernel_shape need 2 values and pads 4 for a 2-D DeformConv"), false;
  if (strides.size()) p->sh = strides[0], p->sw = strides[1];
  if (dil.size()) p->dh = dil[0], p->dw = dil[1];
  if (pads.size()) p->pt = pads[0], p->pl = pads[1], p->pb = pads[2], p->pr = pads[3];
  const int64_t limit = int64_t{1} << 30;
  const struct {
    const char* what;
    int64_t v;
    bool positive;
  } checks[] = {{"strides[0]", p->sh, true},  {"strides[1]", p->sw, true}, {"dilations[0]", p->dh, true}, {"dilations[1]", p->dw, true},
                {"pads[0]", p->pt, false},    {"pads[1]", p->pl, false},   {"pads[2]", p->pb, false},      {"pads[3]", p->pr, false},
                {"group", p->group, true},    {"offset_group", p->og, true}};
  for (const auto& c : checks)
    if ((c.positive ? c.v <= 0 : c.v < 0) || c.v > limit)
      return Fail(ctx, std::string(c.what) + " is " + std::to_string(c.v) + "; it must be " + (c.positive ? "positive" : "at least 0") +
                           " and at most 2^30"),
             false;
  for (size_t i = 0; i < ks.size(); ++i)
    if (ks[i] <= 0 || ks[i] > (1 << 15))
      return Fail(ctx, "kernel_shape[" + std::to_string(i) + "] is " + std::to_string(ks[i]) + "; it must be 1 to 32768"), false;
  auto dim = [](const Shape& s, size_t i) { return s.IsUnknown() ? int64_t{-1} : s.GetDim(i); };
  p->n = dim(xs, 0), p->c = dim(xs, 1), p->h = dim(xs, 2), p->w = dim(xs, 3);
  p->m = dim(ws, 0), p->cg = dim(ws, 1), p->kh = dim(ws, 2), p->kw = dim(ws, 3);
  if (ks.size()) {
    if ((p->kh >= 0 && ks[0] != p->kh) || (p->kw >= 0 && ks[1] != p->kw))
      return Fail(ctx, "kernel_shape [" + std::to_string(ks[0]) + ", " + std::to_string(ks[1]) + "] differs from W's " + ws.ToString()), false;
    p->kh = ks[0], p->kw = ks[1];
  }
  if ((p->kh >= 0 && (p->kh == 0 || p->kh > (1 << 15))) || (p->kw >= 0 && (p->kw == 0 || p->kw > (1 << 15))))
    return Fail(ctx, "the kernel " + ws.ToString() + " must have spatial dims of 1 to 32768"), false;
  if (p->c >= 0 && p->cg >= 0 && p->c != p->cg * p->group)
    return Fail(ctx, "X has " + std::to_string(p->c) + " channels; W " + ws.ToString() + " with group " + std::to_string(p->group) + " takes " +
                         std::to_string(p->cg * p->group)),
           false;
  if (p->m >= 0 && p->m % p->group != 0)
    return Fail(ctx, "W's " + std::to_string(p->m) + " output channels are not a multiple of group " + std::to_string(p->group)), false;
  if (p->c >= 0 && p->c % p->og != 0)
    return Fail(ctx, "X's " + std::to_string(p->c) + " channels are not a multiple of offset_group " + std::to_string(p->og)), false;
  p->oh = p->ow = -1;
  if (p->h >= 0 && p->kh > 0) {
    const int64_t span = p->dh * (p->kh - 1) + 1, room = p->h + p->pt + p->pb;
    if (room < span) return Fail(ctx, "the dilated kernel's height " + std::to_string(span) + " exceeds the padded input's " + std::to_string(room)), false;
    p->oh = (room - span) / p->sh + 1;
  }
  if (p->w >= 0 && p->kw > 0) {
    const int64_t span = p->dw * (p->kw - 1) + 1, room = p->w + p->pl + p->pr;
    if (room < span) return Fail(ctx, "the dilated kernel's width " + std::to_string(span) + " exceeds the padded input's " + std::to_string(room)), false;
    p->ow = (room - span) / p->sw + 1;
  }
  auto check4 = [&](const Shape& s, const char* name, int64_t channels) {
    if (s.IsUnknown()) return true;
    const int64_t want[4] = {p->n, channels, p->oh, p->ow};
    for (size_t i = 0; i < 4; ++i)
      if (want[i] >= 0 && s.GetDim(i) >= 0 && s.GetDim(i) != want[i])
        return Fail(ctx, std::string(name) + " " + s.ToString() + " should be " + Shape({p->n, channels, p->oh, p->ow}).ToString() + " for X " +
                             xs.ToString() + ", W " + ws.ToString() +
                             " and offset_group " + std::to_string(p->og)),
               false;
    return true;
  };
  const int64_t taps = p->kh >= 0 && p->kw >= 0 ? p->kh * p->kw : -1;
  if (!check4(os, "offset", taps >= 0 ? p->og * 2 * taps : -1)) return false;
  const Tensor* mask = ctx->GetOptionalInputTensor(4);
  if (mask && !mask->GetShape().IsUnknown() && mask->GetShape().GetDimNum() != 4)
    return Fail(ctx, "mask must be [N, offset_group * kH * kW, oH, oW], got " + mask->GetShape().ToString()), false;
  if (mask && !check4(mask->GetShape(), "mask", taps >= 0 ? p->og * taps : -1)) return false;
  const Tensor* bias = ctx->GetOptionalInputTensor(3);
  if (bias && !bias->GetShape().IsUnknown() &&
      (bias->GetShape().GetDimNum() != 1 || (p->m >= 0 && bias->GetShape().GetDim(0) >= 0 && bias->GetShape().GetDim(0) != p->m)))
    return Fail(ctx, "B must be [" + std::to_string(p->m) + "], got " + bias->GetShape().ToString()), false;
  if (p->oh < 0 && !os.IsUnknown()) p->oh = os.GetDim(2);
  if (p->ow < 0 && !os.IsUnknown()) p->ow = os.GetDim(3);
  return true;
}

// out [M, N] (row stride ldo) = a [M, K] x b [K, N] (row stride ldb), row-major, in C's precision.
bool Gemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, int64_t ldb, float* out, int64_t ldo) {
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(out + i * ldo, out + i * ldo + n, 0.f);
    return true;
  }
  return dnnl_sgemm('N', 'N', m, n, k, 1.f, a, k, b, ldb, 0.f, out, ldo) == dnnl_success;
}
bool Gemm(int64_t m, int64_t n, int64_t k, const double* a, const double* b, int64_t ldb, double* out, int64_t ldo) {
  for (int64_t i = 0; i < m; ++i) {
    double* row = out + i * ldo;
    std::fill(row, row + n, 0.0);
    for (int64_t t = 0; t < k; ++t) {
      const double av = a[i * k + t];
      const double* br = b + t * ldb;
      for (int64_t j = 0; j < n; ++j) row[j] += av * br[j];
    }
  }
  return true;
}

class DeformConv : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Portable C for float32 and float64: each (image, group, output position) samples every
  // (channel, tap) of the group once, as the runtime does (the same corners, fractions and
  // mask), and adds it into each of the group's outputs times its weight. The sums run in
  // another order than the runtime's GEMM, so they agree within rounding, not to the bit.
  graphStatus Emit(EmitContext* ctx) override {
    DeformPlan p;
    if (!MakeDeformPlan(ctx, &p)) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType dt = x->GetDataType();
    if (dt != DT_FLOAT && dt != DT_DOUBLE) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " DeformConv");
    if (p.n < 0 || p.c < 0 || p.h < 0 || p.w < 0 || p.m < 0 || p.kh < 0 || p.kw < 0 || p.oh < 0 || p.ow < 0)
      return Fail(ctx, "the generated C needs X's, W's and offset's shapes known");
    if (p.n * p.m * p.oh * p.ow == 0) return GRAPH_SUCCESS;
    const Tensor* bias = ctx->GetOptionalInputTensor(3);
    const Tensor* mask = ctx->GetOptionalInputTensor(4);
    if (bias && bias->GetShapeSize() == 0) bias = nullptr;
    if (mask && mask->GetShapeSize() == 0) mask = nullptr;
    ctx->Include("<math.h>");
    const std::string t = dt == DT_FLOAT ? "float" : "double";
    auto L = [](int64_t v) { return aot::IntLit(v); };
    const int64_t taps = p.kh * p.kw, cols = p.oh * p.ow, mg = p.m / p.group, per_og = std::max<int64_t>(p.c / p.og, 1);  // 0 channels: no channel reads it
    std::string c = "{\n  const " + t + "* xd = " + ctx->Input(0, t.c_str()) + ";\n  const " + t + "* wd = " + ctx->Input(1, t.c_str()) +
                    ";\n  const " + t + "* od = " + ctx->Input(2, t.c_str()) + ";\n";
    c += "  const " + t + "* bd = " + (bias ? ctx->Input(aot::InputAt(ctx, 3), t.c_str()) : "0") + ";\n";
    c += "  const " + t + "* md = " + (mask ? ctx->Input(aot::InputAt(ctx, 4), t.c_str()) : "0") + ";\n";
    c += "  " + t + "* yd = " + ctx->Output(0, t.c_str()) + ";\n";
    c += "  int64_t b, g, pos, ci, tap, o;\n"
         "  for (b = 0; b < " + L(p.n) + "; ++b)\n"
         "    for (g = 0; g < " + L(p.group) + "; ++g)\n"
         "      for (pos = 0; pos < " + L(cols) + "; ++pos) {\n"
         "        const int64_t oy = pos / " + L(p.ow) + ", ox = pos % " + L(p.ow) + ";\n"
         "        " + t + "* y = yd + (b * " + L(p.m) + " + g * " + L(mg) + ") * " + L(cols) + " + pos;\n"
         "        for (o = 0; o < " + L(mg) + "; ++o) y[o * " + L(cols) + "] = bd ? bd[g * " + L(mg) + " + o] : (" + t + ")0;\n"
         "        for (ci = 0; ci < " + L(p.cg) + "; ++ci) {\n"
         "          const int64_t ch = g * " + L(p.cg) + " + ci, ogi = ch / " + L(per_og) + ";\n"
         "          const " + t + "* plane = xd + (b * " + L(p.c) + " + ch) * " + L(p.h * p.w) + ";\n"
         "          for (tap = 0; tap < " + L(taps) + "; ++tap) {\n"
         "            const int64_t i = tap / " + L(p.kw) + ", j = tap % " + L(p.kw) + ";\n"
         "            const " + t + " dy = od[((b * " + L(p.og) + " + ogi) * " + L(2 * taps) + " + 2 * tap) * " + L(cols) + " + pos];\n"
         "            const " + t + " dx = od[((b * " + L(p.og) + " + ogi) * " + L(2 * taps) + " + 2 * tap + 1) * " + L(cols) + " + pos];\n"
         "            " + t + " v = 0;\n"
         "            /* each coordinate: the tap's integer position plus floor(offset), and the fraction;\n"
         "               a point outside (-1, size), or not finite, reads zero */\n"
         "            if (dy > -4e18 && dy < 4e18 && dx > -4e18 && dx < 4e18) {\n"
         "              const " + t + " fy = (" + t + ")floor(dy), fx = (" + t + ")floor(dx);\n"
         "              const int64_t y0 = oy * " + L(p.sh) + " - " + L(p.pt) + " + i * " + L(p.dh) + " + (int64_t)fy;\n"
         "              const int64_t x0 = ox * " + L(p.sw) + " - " + L(p.pl) + " + j * " + L(p.dw) + " + (int64_t)fx;\n"
         "              const " + t + " ly = dy - fy, lx = dx - fx;\n"
         "              if (y0 <= " + L(p.h - 1) + " && (y0 >= 0 || (y0 == -1 && ly > 0)) && x0 <= " + L(p.w - 1) +
         " && (x0 >= 0 || (x0 == -1 && lx > 0))) {\n"
         "                const int yi0 = y0 >= 0, yi1 = y0 + 1 < " + L(p.h) + ", xi0 = x0 >= 0, xi1 = x0 + 1 < " + L(p.w) + ";\n"
         "                const " + t + " p00 = yi0 && xi0 ? plane[y0 * " + L(p.w) + " + x0] : (" + t + ")0;\n"
         "                const " + t + " p01 = yi0 && xi1 ? plane[y0 * " + L(p.w) + " + x0 + 1] : (" + t + ")0;\n"
         "                const " + t + " p10 = yi1 && xi0 ? plane[(y0 + 1) * " + L(p.w) + " + x0] : (" + t + ")0;\n"
         "                const " + t + " p11 = yi1 && xi1 ? plane[(y0 + 1) * " + L(p.w) + " + x0 + 1] : (" + t + ")0;\n"
         "                v = (1 - ly) * ((1 - lx) * p00 + lx * p01) + ly * ((1 - lx) * p10 + lx * p11);\n"
         "              }\n"
         "            }\n"
         "            if (md) v *= md[((b * " + L(p.og) + " + ogi) * " + L(taps) + " + tap) * " + L(cols) + " + pos];\n"
         "            for (o = 0; o < " + L(mg) + "; ++o)\n"
         "              y[o * " + L(cols) + "] += wd[((g * " + L(mg) + " + o) * " + L(p.cg) + " + ci) * " + L(taps) + " + tap] * v;\n"
         "          }\n"
         "        }\n"
         "      }\n"
         "}\n";
    ctx->Run(c);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, ctx->GetInputDataType(0)); }
  graphStatus InferShape(InferShapeContext* ctx) override {
    DeformPlan p;
    if (!MakeDeformPlan(ctx, &p)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({p.n, p.m, p.oh, p.ow});
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    DeformPlan p;
    if (!MakeDeformPlan(ctx, &p)) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    Shape ys({p.n, p.m, p.oh, p.ow});
    uint64_t bytes = 0;
    if (!ys.GetCheckedBytes(DataTypeSize(x->GetDataType()), &bytes)) return Fail(ctx, "the output " + ys.ToString() + " is too large");
    Tensor* y = ctx->MallocOutputTensor(0, ys, x->GetDataType());
    if (!y || y->GetShapeSize() == 0) return y ? GRAPH_SUCCESS : GRAPH_FAILED;
    graphStatus st = GRAPH_SUCCESS;
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      st = Run<T, C>(ctx, p, y);
    });
    return st;
  }

 private:
  template <typename T, typename C>
  static graphStatus Run(EagerOpExecutionContext* ctx, const DeformPlan& p, Tensor* y) {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wt = ctx->GetInputTensor(1);
    const Tensor* off = ctx->GetInputTensor(2);
    const Tensor* bias = ctx->GetOptionalInputTensor(3);
    const Tensor* mask = ctx->GetOptionalInputTensor(4);
    if (bias && bias->GetShapeSize() == 0) bias = nullptr;
    if (mask && mask->GetShapeSize() == 0) mask = nullptr;
    const int64_t taps = p.kh * p.kw, rows = p.cg * taps, cols = p.oh * p.ow, mg = p.m / p.group;
    const int64_t per_og = std::max<int64_t>(p.c / p.og, 1);  // 0 channels: no channel reads it
    // A sample's place in the plane: its four corners' offsets (-1 for a corner outside the
    // image, or for all four where the point reads nothing), fractions and mask value. The
    // offsets are shared by every channel of an offset group, so each (offset group, tap,
    // position) is located once and read by each of its channels.
    struct Sample {
      int64_t at[4];
      C ly, lx, m;
    };
    // The offset groups group g's channels belong to: [og0, og0 + nog).
    int64_t nog_max = 0;
    for (int64_t g = 0; g < p.group; ++g) nog_max = std::max(nog_max, ((g + 1) * p.cg - 1) / per_og - (g * p.cg) / per_og + 1);
    // Scratch: the weights in C (float16 and bfloat16 widened; float32 and float64 read in place),
    // then a block of whole output positions: its sampled columns, its samples and, for narrow T,
    // the GEMM's output (at most kBlockBytes with the columns).
    constexpr uint64_t kBlockBytes = uint64_t{32} << 20;
    const uint64_t per_pos = static_cast<uint64_t>(std::max<int64_t>(rows, 1)) * sizeof(C) +
                             static_cast<uint64_t>(nog_max) * static_cast<uint64_t>(taps) * sizeof(Sample);
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(cols, static_cast<int64_t>(kBlockBytes / per_pos)));
    const uint64_t wn = std::is_same_v<T, C> ? 0 : static_cast<uint64_t>(p.m) * static_cast<uint64_t>(rows);
    const uint64_t cn = static_cast<uint64_t>(rows) * static_cast<uint64_t>(chunk);
    const uint64_t on = std::is_same_v<T, C> ? 0 : static_cast<uint64_t>(mg) * static_cast<uint64_t>(chunk);
    const uint64_t sn = static_cast<uint64_t>(nog_max) * static_cast<uint64_t>(taps) * static_cast<uint64_t>(chunk);
    const uint64_t cap = (uint64_t{1} << 40) / sizeof(Sample);
    if (wn > cap || cn > cap || on > cap || sn > cap || wn + cn + on > cap)
      return Fail(ctx, "the weights (" + std::to_string(p.m) + " x " + std::to_string(rows) + ") and a block of sampled columns are too large");
    const uint64_t bytes = (wn + cn + on) * sizeof(C) + sn * sizeof(Sample) + alignof(Sample);
    C* wbuf = static_cast<C*>(ctx->MallocWorkSpace(bytes));
    if (!wbuf) return Fail(ctx, "could not allocate " + std::to_string(bytes) + " bytes of scratch for the sampled columns");
    C* colbuf = wbuf + wn;
    C* obuf = colbuf + cn;
    const uintptr_t after = reinterpret_cast<uintptr_t>(obuf + on);
    Sample* samples = reinterpret_cast<Sample*>((after + alignof(Sample) - 1) / alignof(Sample) * alignof(Sample));
    const T* wsrc = wt->GetData<T>();
    for (uint64_t i = 0; i < wn; ++i) wbuf[i] = static_cast<C>(Load(wsrc[i]));
    const C* weights = std::is_same_v<T, C> ? reinterpret_cast<const C*>(wsrc) : wbuf;
    const char* tv = ctx->GetOption("weft.intra_op_threads");
    const int64_t threads = tv ? std::max(1, std::atoi(tv)) : 1;
    const T* xd = x->GetData<T>();
    const T* od = off->GetData<T>();
    const T* md = mask ? mask->GetData<T>() : nullptr;
    const T* bd = bias ? bias->GetData<T>() : nullptr;
    T* yd = y->GetData<T>();
    // One coordinate: the tap's integer position plus a learned offset, split so that the integer
    // part stays exact however large the image: *lo = base + floor(off), *frac in [0, 1). False
    // where the point reads nothing (outside (-1, size) or not finite).
    auto locate = [](int64_t base, C off, int64_t size, int64_t* lo, C* frac) {
      if (!(off > C(-4e18) && off < C(4e18))) return false;  // NaN, infinities and far outside alike
      const C f = std::floor(off);
      *lo = base + static_cast<int64_t>(f);
      *frac = off - f;
      return *lo <= size - 1 && (*lo >= 0 || (*lo == -1 && *frac > 0));
    };
    for (int64_t b = 0; b < p.n; ++b)
      for (int64_t g = 0; g < p.group; ++g) {
        const int64_t og0 = (g * p.cg) / per_og, nog = ((g + 1) * p.cg - 1) / per_og - og0 + 1;
        for (int64_t c0 = 0; c0 < cols; c0 += chunk) {
          const int64_t cw = std::min(chunk, cols - c0);
          // samples: row (offset group og0 + q, tap), column (output position c0 + k)
          ForRows(ctx, nog * taps, cw * 8, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
              const int64_t ogi = og0 + r / taps, tap = r % taps, i = tap / p.kw, j = tap % p.kw;
              const T* dy = od + ((b * p.og + ogi) * 2 * taps + 2 * tap) * cols;
              const T* dx = dy + cols;
              const T* mk = md ? md + ((b * p.og + ogi) * taps + tap) * cols : nullptr;
              Sample* row = samples + r * cw;
              for (int64_t k = 0; k < cw; ++k) {
                const int64_t at = c0 + k, oy = at / p.ow, ox = at % p.ow;
                Sample& sm = row[k];
                int64_t y0 = 0, x0 = 0;
                sm.ly = sm.lx = 0;
                sm.m = mk ? static_cast<C>(Load(mk[at])) : C(1);
                sm.at[0] = sm.at[1] = sm.at[2] = sm.at[3] = -1;
                if (locate(oy * p.sh - p.pt + i * p.dh, static_cast<C>(Load(dy[at])), p.h, &y0, &sm.ly) &&
                    locate(ox * p.sw - p.pl + j * p.dw, static_cast<C>(Load(dx[at])), p.w, &x0, &sm.lx)) {
                  const bool y_in[2] = {y0 >= 0, y0 + 1 < p.h}, x_in[2] = {x0 >= 0, x0 + 1 < p.w};
                  for (int q = 0; q < 4; ++q)
                    if (y_in[q / 2] && x_in[q % 2]) sm.at[q] = (y0 + q / 2) * p.w + x0 + q % 2;
                }
              }
            }
          });
          // columns: row (channel ci of the group, tap), column (output position c0 + k)
          ForRows(ctx, rows, cw * 4, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
              const int64_t ci = g * p.cg + r / taps, tap = r % taps;
              const T* plane = xd + (b * p.c + ci) * p.h * p.w;
              const Sample* row = samples + ((ci / per_og - og0) * taps + tap) * cw;
              C* out = colbuf + r * cw;
              for (int64_t k = 0; k < cw; ++k) {
                const Sample& sm = row[k];
                auto pick = [&](int q) -> C { return sm.at[q] >= 0 ? static_cast<C>(Load(plane[sm.at[q]])) : C(0); };
                const C ly = sm.ly, lx = sm.lx;
                const C v = (1 - ly) * ((1 - lx) * pick(0) + lx * pick(1)) + ly * ((1 - lx) * pick(2) + lx * pick(3));
                out[k] = md ? v * sm.m : v;
              }
            }
          });
          T* dst = yd + (b * p.m + g * mg) * cols + c0;
          C* gout = std::is_same_v<T, C> ? reinterpret_cast<C*>(dst) : obuf;
          const int64_t ldo = std::is_same_v<T, C> ? cols : cw;
          // The block's columns in slices over the intra-op threads, one single-threaded GEMM each
          // (oneDNN's own OpenMP threads on top would only contend for the same cores).
          const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, cw / 64));
          std::atomic<bool> gemm_ok{true};
          graphStatus gst = ctx->ParallelFor(parts, 1, [&](int64_t p0, int64_t p1) {
            const int omp_before = omp_get_max_threads();
            if (parts > 1) omp_set_num_threads(1);
            for (int64_t part = p0; part < p1; ++part) {
              const int64_t k0 = cw * part / parts, k1 = cw * (part + 1) / parts;
              if (!Gemm(mg, k1 - k0, rows, weights + g * mg * rows, colbuf + k0, cw, gout + k0, ldo)) gemm_ok = false;
            }
            if (parts > 1) omp_set_num_threads(omp_before);
          });
          if (gst != GRAPH_SUCCESS) return gst;
          if (!gemm_ok) return Fail(ctx, "oneDNN's sgemm failed");
          for (int64_t o = 0; o < mg; ++o) {
            const C add = bd ? static_cast<C>(Load(bd[g * mg + o])) : C(0);
            for (int64_t k = 0; k < cw; ++k) dst[o * cols + k] = Store<T>(gout[o * ldo + k] + add);
          }
        }
      }
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_deform_conv(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("Col2Im").INPUT(input, "T").INPUT(image_shape, TensorType({DT_INT64})).INPUT(block_shape, TensorType({DT_INT64}))
                     .OUTPUT(output, "T").DATATYPE(T, NumericTypes()).ATTR(dilations, ListInt, {}).ATTR(pads, ListInt, {})
                     .ATTR(strides, ListInt, {}).Build(),
                 MakeOpImpl<Col2Im>("Col2Im")});
  out.push_back({OpDefBuilder("DeformConv").INPUT(X, "T").INPUT(W, "T").INPUT(offset, "T").OPTIONAL_INPUT(B, "T").OPTIONAL_INPUT(mask, "T")
                     .OUTPUT(Y, "T").DATATYPE(T, FloatTypes()).ATTR(dilations, ListInt, {}).ATTR(group, Int, 1)
                     .ATTR(kernel_shape, ListInt, {}).ATTR(offset_group, Int, 1).ATTR(pads, ListInt, {}).ATTR(strides, ListInt, {}).Build(),
                 MakeOpImpl<DeformConv>("DeformConv")});
}

}  // namespace weft::ops
