// TransposeConvBias: the operator behind a LiteRT custom op. The package's
// framework/litert/op_map.json maps the customCode "Convolution2DTransposeBias" to this op type;
// the importer hands the op the file's custom options as the uint8 tensor attribute
// "custom_options" (they are not a flexbuffer map).
//
//   OH = SAME ? H * stride_h : (H - 1) * stride_h + KH   (and OW likewise), padding as the
//   convolution this op transposes would have: (OH - 1 ... ) split evenly, the odd one after.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "transpose_conv_bias_proto.h"

namespace {

struct Options {
  int32_t padding, stride_w, stride_h;
};

// The three int32 of the custom options, checked.
bool ReadOptions(const gert::RuntimeAttrs* attrs, Options* o, std::string* err) {
  const gert::Tensor* t = attrs->GetAttrPointer<gert::Tensor>("custom_options");
  if (t == nullptr || t->GetDataType() != ge::DT_UINT8 || t->GetShapeSize() != 12) {
    *err = "custom_options must be 12 bytes: int32 padding, stride_w, stride_h";
    return false;
  }
  std::memcpy(o, t->GetAddr(), sizeof(Options));
  if ((o->padding != 1 && o->padding != 2) || o->stride_w < 1 || o->stride_h < 1 || o->stride_w > 1024 || o->stride_h > 1024) {
    *err = "custom_options hold padding " + std::to_string(o->padding) + ", strides " + std::to_string(o->stride_w) + "x" +
           std::to_string(o->stride_h) + "; padding must be 1 (SAME) or 2 (VALID), strides in [1, 1024]";
    return false;
  }
  return true;
}

int64_t OutSize(bool same, int64_t in, int64_t k, int64_t stride) { return same ? in * stride : (in - 1) * stride + k; }

}  // namespace

class TransposeConvBias : public ge::EagerExecuteOp, public ge::ShapeInferOp {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    Options o;
    std::string err;
    if (!ReadOptions(ctx->GetAttrs(), &o, &err)) return ctx->SetError(err), ge::GRAPH_FAILED;
    const ge::Shape& x = *ctx->GetInputShape(0);
    const ge::Shape& w = *ctx->GetInputShape(1);
    const ge::Shape& b = *ctx->GetInputShape(2);
    if (x.GetDimNum() != 4 || w.GetDimNum() != 4 || w.GetDim(3) != x.GetDim(3) || b.GetDimNum() != 1 || b.GetDim(0) != w.GetDim(0)) {
      ctx->SetError("input " + x.ToString() + ", weights " + w.ToString() + " and bias " + b.ToString() +
                    " must be NHWC, [OC, KH, KW, IC] and [OC] with matching channels");
      return ge::GRAPH_FAILED;
    }
    bool same = o.padding == 1;
    *ctx->GetOutputShape(0) = ge::Shape({x.GetDim(0), OutSize(same, x.GetDim(1), w.GetDim(1), o.stride_h),
                                         OutSize(same, x.GetDim(2), w.GetDim(2), o.stride_w), w.GetDim(0)});
    return ge::GRAPH_SUCCESS;
  }

  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    Options o;
    std::string err;
    if (!ReadOptions(ctx->GetAttrs(), &o, &err)) return ctx->SetError(err), ge::GRAPH_FAILED;
    const gert::Tensor* x = ctx->GetInputTensor(0);
    const gert::Tensor* w = ctx->GetInputTensor(1);
    const gert::Tensor* b = ctx->GetInputTensor(2);
    gert::Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), ge::DT_FLOAT);
    if (y == nullptr) return ge::GRAPH_FAILED;
    const ge::Shape& xs = x->GetShape();
    const ge::Shape& ws = w->GetShape();
    const ge::Shape& ys = y->GetShape();
    const int64_t n = xs.GetDim(0), ih = xs.GetDim(1), iw = xs.GetDim(2), ic = xs.GetDim(3);
    const int64_t oc = ws.GetDim(0), kh = ws.GetDim(1), kw = ws.GetDim(2), oh = ys.GetDim(1), ow = ys.GetDim(2);
    // Leading padding of the convolution that maps the output back onto the input.
    const int64_t ph = std::max<int64_t>((ih - 1) * o.stride_h + kh - oh, 0) / 2;
    const int64_t pw = std::max<int64_t>((iw - 1) * o.stride_w + kw - ow, 0) / 2;
    const float* px = x->GetData<float>();
    const float* pwt = w->GetData<float>();
    const float* pb = b->GetData<float>();
    float* py = y->GetData<float>();
    for (int64_t i = 0; i < y->GetShapeSize(); ++i) py[i] = pb[i % oc];
    for (int64_t bn = 0; bn < n; ++bn)
      for (int64_t iy = 0; iy < ih; ++iy)
        for (int64_t ix = 0; ix < iw; ++ix)
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t oy = iy * o.stride_h - ph + ky;
            if (oy < 0 || oy >= oh) continue;
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ox = ix * o.stride_w - pw + kx;
              if (ox < 0 || ox >= ow) continue;
              const float* in = px + ((bn * ih + iy) * iw + ix) * ic;
              float* out = py + ((bn * oh + oy) * ow + ox) * oc;
              for (int64_t c = 0; c < oc; ++c) {
                const float* f = pwt + ((c * kh + ky) * kw + kx) * ic;
                float s = 0.f;
                for (int64_t i = 0; i < ic; ++i) s += in[i] * f[i];
                out[c] += s;
              }
            }
          }
    return ge::GRAPH_SUCCESS;
  }
};

REG_AUTO_MAPPING_OP(TransposeConvBias);
