// TFLITE_DETECTION_POSTPROCESS: the LiteRT custom operator (customCode "TFLite_Detection_PostProcess")
// that ends the SSD-style detection models the TensorFlow Object Detection API exports. It decodes
// box encodings against anchors and keeps the best non-overlapping boxes:
//
//   inputs   box_encodings [1, boxes, >=4] (y, x, h, w per anchor, scaled by y/x/h/w_scale),
//            class_predictions [1, boxes, classes (+1 with a background column first)],
//            anchors [boxes, 4] (y center, x center, h, w); float32, or uint8/int8 with the
//            quantization LiteRT gives them (input_scale, input_zero_point)
//   outputs  detection_boxes [1, D, 4] (ymin, xmin, ymax, xmax), detection_classes [1, D],
//            detection_scores [1, D], num_detections [1], all float32, with
//            D = max_detections * max_classes_per_detection; rows past the detections are zeros
//
// Decoding runs in double and rounds to float, as LiteRT's kernel does. The fast form (default)
// ranks each box by its best class and runs one non-maximum suppression over all boxes, then lists
// each kept box's top max_classes_per_detection classes (a box's best class is the first of its
// highest; several come out of a heap selection, whose order of equal scores is LiteRT's);
// use_regular_nms runs one suppression per
// class (up to detections_per_class each) and keeps the max_detections best overall. Candidates
// are scores >= nms_score_threshold in decreasing score order (equal scores in box order), and a
// box is dropped when its IoU with a kept one exceeds nms_iou_threshold.
#include <math.h>
#include <stdint.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

#include "aot/detection.c"

struct Params {
  int64_t max_detections, max_classes, per_class, num_classes;
  bool regular;
  float score_threshold, iou_threshold;
  double y_scale, x_scale, h_scale, w_scale;
};

class DetectionPostProcess : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  static graphStatus ReadParams(const KernelContextBase* ctx, Params* p) {
    const RuntimeAttrs* a = ctx->GetAttrs();
    p->max_detections = *a->GetInt("max_detections");
    p->max_classes = *a->GetInt("max_classes_per_detection");
    p->per_class = *a->GetInt("detections_per_class");
    p->num_classes = *a->GetInt("num_classes");
    p->regular = *a->GetBool("use_regular_nms");
    p->score_threshold = *a->GetFloat("nms_score_threshold");
    p->iou_threshold = *a->GetFloat("nms_iou_threshold");
    p->y_scale = *a->GetFloat("y_scale");
    p->x_scale = *a->GetFloat("x_scale");
    p->h_scale = *a->GetFloat("h_scale");
    p->w_scale = *a->GetFloat("w_scale");
    if (p->max_detections < 0 || p->max_detections > (int64_t(1) << 20))
      return Fail(ctx, "max_detections is " + std::to_string(p->max_detections) + "; it must lie in [0, 2^20]");
    if (p->max_classes < 1 || p->max_classes > 4096)
      return Fail(ctx, "max_classes_per_detection is " + std::to_string(p->max_classes) + "; it must lie in [1, 4096]");
    if (p->max_detections * p->max_classes > (int64_t(1) << 24))
      return Fail(ctx, "max_detections * max_classes_per_detection is " + std::to_string(p->max_detections * p->max_classes) +
                           " output rows; at most 2^24 are supported");
    if (p->regular && p->per_class < 1)
      return Fail(ctx, "detections_per_class is " + std::to_string(p->per_class) + "; regular NMS needs at least 1");
    if (p->num_classes < 1) return Fail(ctx, "num_classes is " + std::to_string(p->num_classes) + "; it must be at least 1");
    if (!(p->iou_threshold > 0.f && p->iou_threshold <= 1.f))
      return Fail(ctx, "nms_iou_threshold is " + std::to_string(p->iou_threshold) + "; it must lie in (0, 1]");
    for (double s : {p->y_scale, p->x_scale, p->h_scale, p->w_scale})
      if (!std::isfinite(s) || s == 0.0) return Fail(ctx, "y_scale, x_scale, h_scale and w_scale must be finite and non-zero");
    return GRAPH_SUCCESS;
  }
  static graphStatus CheckShapes(const KernelContextBase* ctx, const Params& p, int64_t* boxes, int64_t* with_bg) {
    const Shape& e = ctx->GetInputTensor(0)->GetShape();
    const Shape& c = ctx->GetInputTensor(1)->GetShape();
    const Shape& a = ctx->GetInputTensor(2)->GetShape();
    if (e.GetDimNum() != 3 || e.GetDim(0) != 1 || e.GetDim(2) < 4)
      return Fail(ctx, "box_encodings must be [1, boxes, 4 or more], got " + e.ToString());
    if (c.GetDimNum() != 3 || c.GetDim(0) != 1 || c.GetDim(1) != e.GetDim(1))
      return Fail(ctx, "class_predictions must be [1, " + std::to_string(e.GetDim(1)) + ", classes], got " + c.ToString());
    if (a.GetDimNum() != 2 || a.GetDim(0) != e.GetDim(1) || a.GetDim(1) != 4)
      return Fail(ctx, "anchors must be [" + std::to_string(e.GetDim(1)) + ", 4], got " + a.ToString());
    if (c.GetDim(2) != p.num_classes && c.GetDim(2) != p.num_classes + 1)
      return Fail(ctx, "class_predictions has " + std::to_string(c.GetDim(2)) + " columns; with num_classes " +
                           std::to_string(p.num_classes) + " it needs that many, or one more for the background");
    if (e.GetDim(1) > (int64_t(1) << 30)) return Fail(ctx, "more than 2^30 boxes");
    *boxes = e.GetDim(1);
    *with_bg = c.GetDim(2);
    return GRAPH_SUCCESS;
  }

  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    for (size_t k = 0; k < 4; ++k) ctx->SetOutputDataType(k, DT_FLOAT);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Params p;
    int64_t boxes = 0, with_bg = 0;
    if (ReadParams(ctx, &p) != GRAPH_SUCCESS || CheckShapes(ctx, p, &boxes, &with_bg) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const int64_t d = p.max_detections * p.max_classes;
    *ctx->GetOutputShape(0) = Shape({1, d, 4});
    *ctx->GetOutputShape(1) = Shape({1, d});
    *ctx->GetOutputShape(2) = Shape({1, d});
    *ctx->GetOutputShape(3) = Shape({1});
    return GRAPH_SUCCESS;
  }

  // Input `k` as float: dequantized with its scale and zero point when it is 8-bit.
  static graphStatus Floats(const KernelContextBase* ctx, size_t k, std::vector<float>* out) {
    const Tensor* t = ctx->GetInputTensor(k);
    const int64_t n = t->GetShapeSize();
    out->resize(static_cast<size_t>(n));
    if (t->GetDataType() == DT_FLOAT) {
      std::memcpy(out->data(), t->GetAddr(), static_cast<size_t>(n) * sizeof(float));
      return GRAPH_SUCCESS;
    }
    ListView<float> scales = ctx->GetAttrs()->GetListFloat("input_scale");
    ListView<int64_t> zps = ctx->GetAttrs()->GetListInt("input_zero_point");
    if (scales.size() <= k || !(scales[k] > 0.f))
      return Fail(ctx, "input " + std::to_string(k) + " is " + DataTypeName(t->GetDataType()) + " without a quantization scale");
    const float s = scales[k];
    const float z = zps.size() > k ? static_cast<float>(zps[k]) : 0.f;
    for (int64_t i = 0; i < n; ++i) {
      float v = t->GetDataType() == DT_UINT8 ? static_cast<float>(t->GetData<uint8_t>()[i]) : static_cast<float>(t->GetData<int8_t>()[i]);
      (*out)[static_cast<size_t>(i)] = (v - z) * s;
    }
    return GRAPH_SUCCESS;
  }

  static weft_detpp_params CParams(const Params& p, int64_t n, int64_t cb, int64_t enc) {
    weft_detpp_params c;
    c.n = n, c.cb = cb, c.num_classes = p.num_classes, c.enc_len = enc;
    // A class keeps at most every box: a larger detections_per_class changes nothing (and must not
    // size the scratch).
    c.max_det = p.max_detections, c.max_cls = p.max_classes, c.per_class = p.regular ? std::min(p.per_class, n) : 0;
    c.regular = p.regular ? 1 : 0;
    c.score_thr = p.score_threshold, c.iou_thr = p.iou_threshold;
    c.ys = p.y_scale, c.xs = p.x_scale, c.hs = p.h_scale, c.ws = p.w_scale;
    return c;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Params p;
    int64_t n = 0, cb = 0;
    if (ReadParams(ctx, &p) != GRAPH_SUCCESS || CheckShapes(ctx, p, &n, &cb) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const int64_t d = p.max_detections * p.max_classes, enc = ctx->GetInputTensor(0)->GetShape().GetDim(2);
    Tensor* ob = ctx->MallocOutputTensor(0, Shape({1, d, 4}), DT_FLOAT);
    Tensor* oc = ctx->MallocOutputTensor(1, Shape({1, d}), DT_FLOAT);
    Tensor* os = ctx->MallocOutputTensor(2, Shape({1, d}), DT_FLOAT);
    Tensor* on = ctx->MallocOutputTensor(3, Shape({1}), DT_FLOAT);
    if (!ob || !oc || !os || !on) return GRAPH_FAILED;
    std::vector<float> e, scores, a;
    if (Floats(ctx, 0, &e) != GRAPH_SUCCESS || Floats(ctx, 1, &scores) != GRAPH_SUCCESS || Floats(ctx, 2, &a) != GRAPH_SUCCESS)
      return GRAPH_FAILED;
    const weft_detpp_params c = CParams(p, n, cb, enc);
    std::vector<uint64_t> scratch(static_cast<size_t>(weft_detpp_scratch_bytes(&c) / 8 + 1));
    if (weft_detpp_run(&c, e.data(), scores.data(), a.data(), ob->GetData<float>(), oc->GetData<float>(), os->GetData<float>(),
                       on->GetData<float>(), scratch.data()) != 0)
      return Fail(ctx, "a box decodes with its minimum past its maximum (a negative anchor height or width)");
    return GRAPH_SUCCESS;
  }

  // In C: 8-bit inputs dequantized into scratch, then the same weft_detpp_run. A box that decodes
  // inverted fails the run with status 1.
  graphStatus Emit(EmitContext* ctx) override {
    Params p;
    int64_t n = 0, cb = 0;
    if (ReadParams(ctx, &p) != GRAPH_SUCCESS || CheckShapes(ctx, p, &n, &cb) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const int64_t enc = ctx->GetInputTensor(0)->GetShape().GetDim(2);
    const weft_detpp_params c = CParams(p, n, cb, enc);
    ctx->Include("<math.h>");
    ctx->Include("<stdint.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_detection_postprocess");
    const int64_t counts[3] = {n * enc, n * cb, n * 4};
    uint64_t bytes = static_cast<uint64_t>(weft_detpp_scratch_bytes(&c));
    std::vector<uint64_t> at(3, 0);
    for (size_t k = 0; k < 3; ++k)
      if (ctx->GetInputTensor(k)->GetDataType() != DT_FLOAT) {
        at[k] = bytes;
        bytes += static_cast<uint64_t>(weft_detpp_align8(4 * counts[k]));
      }
    const std::string scratch = ctx->Scratch(static_cast<size_t>(bytes));
    ListView<float> scales = ctx->GetAttrs()->GetListFloat("input_scale");
    ListView<int64_t> zps = ctx->GetAttrs()->GetListInt("input_zero_point");
    std::string code = "{\n  static const weft_detpp_params p = {" + aot::IntLit(c.n) + ", " + aot::IntLit(c.cb) + ", " +
                       aot::IntLit(c.num_classes) + ", " + aot::IntLit(c.enc_len) + ", " + aot::IntLit(c.max_det) + ", " +
                       aot::IntLit(c.max_cls) + ", " + aot::IntLit(c.per_class) + ", " + std::to_string(c.regular) + ", " +
                       aot::FloatLit(c.score_thr) + ", " + aot::FloatLit(c.iou_thr) + ", (double)" + aot::FloatLit(p.y_scale) +
                       ", (double)" + aot::FloatLit(p.x_scale) + ", (double)" + aot::FloatLit(p.h_scale) + ", (double)" +
                       aot::FloatLit(p.w_scale) + "};\n  uint8_t* const s = " + scratch + ";\n  int64_t i;\n";
    std::string in[3];
    for (size_t k = 0; k < 3; ++k) {
      const DataType t = ctx->GetInputTensor(k)->GetDataType();
      if (t == DT_FLOAT) {
        in[k] = ctx->Input(k, "float");
        continue;
      }
      if (scales.size() <= k || !(scales[k] > 0.f))
        return Fail(ctx, "input " + std::to_string(k) + " is " + DataTypeName(t) + " without a quantization scale");
      in[k] = "in" + std::to_string(k);
      const char* ct = t == DT_UINT8 ? "uint8_t" : "int8_t";
      const float z = zps.size() > k ? static_cast<float>(zps[k]) : 0.f;
      code += "  float* const " + in[k] + " = (float*)(void*)(s + " + std::to_string(at[k]) + "u);\n  for (i = 0; i < " +
              aot::IntLit(counts[k]) + "; ++i) " + in[k] + "[i] = ((float)" + ctx->Input(k, ct) + "[i] - " + aot::FloatLit(z) + ") * " +
              aot::FloatLit(scales[k]) + ";\n";
    }
    code += "  (void)i;\n  if (weft_detpp_run(&p, " + in[0] + ", " + in[1] + ", " + in[2] + ", " + ctx->Output(0, "float") + ", " +
            ctx->Output(1, "float") + ", " + ctx->Output(2, "float") + ", " + ctx->Output(3, "float") + ", s)) return 1;\n}\n";
    ctx->Run(code);
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_detection_postprocess(std::vector<OpEntry>& out) {
  const TensorType in({DT_FLOAT, DT_UINT8, DT_INT8});
  out.push_back({OpDefBuilder("TFLITE_DETECTION_POSTPROCESS")
                     .INPUT(box_encodings, in)
                     .INPUT(class_predictions, in)
                     .INPUT(anchors, in)
                     .OUTPUT(detection_boxes, TensorType({DT_FLOAT}))
                     .OUTPUT(detection_classes, TensorType({DT_FLOAT}))
                     .OUTPUT(detection_scores, TensorType({DT_FLOAT}))
                     .OUTPUT(num_detections, TensorType({DT_FLOAT}))
                     .REQUIRED_ATTR(max_detections, Int)
                     .REQUIRED_ATTR(max_classes_per_detection, Int)
                     .ATTR(detections_per_class, Int, 100)
                     .ATTR(use_regular_nms, Bool, false)
                     .REQUIRED_ATTR(nms_score_threshold, Float)
                     .REQUIRED_ATTR(nms_iou_threshold, Float)
                     .REQUIRED_ATTR(num_classes, Int)
                     .REQUIRED_ATTR(y_scale, Float)
                     .REQUIRED_ATTR(x_scale, Float)
                     .REQUIRED_ATTR(h_scale, Float)
                     .REQUIRED_ATTR(w_scale, Float)
                     .ATTR(input_scale, ListFloat, {})
                     .ATTR(input_zero_point, ListInt, {})
                     .Build(),
                 MakeOpImpl<DetectionPostProcess>("TFLITE_DETECTION_POSTPROCESS")});
}

}  // namespace weft::ops
