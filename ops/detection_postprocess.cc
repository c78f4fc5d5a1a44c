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
// each kept box's top max_classes_per_detection classes; use_regular_nms runs one suppression per
// class (up to detections_per_class each) and keeps the max_detections best overall. Candidates
// are scores >= nms_score_threshold in decreasing score order (equal scores in box order), and a
// box is dropped when its IoU with a kept one exceeds nms_iou_threshold.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "op_util.h"

namespace weft::ops {
namespace {

struct Box {
  float ymin, xmin, ymax, xmax;
};

struct Params {
  int64_t max_detections, max_classes, per_class, num_classes;
  bool regular;
  float score_threshold, iou_threshold;
  double y_scale, x_scale, h_scale, w_scale;
};

float IoU(const Box& a, const Box& b) {
  const float area_a = (a.ymax - a.ymin) * (a.xmax - a.xmin);
  const float area_b = (b.ymax - b.ymin) * (b.xmax - b.xmin);
  if (area_a <= 0 || area_b <= 0) return 0.f;
  const float h = std::max(std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin), 0.f);
  const float w = std::max(std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin), 0.f);
  const float inter = h * w;
  return inter / (area_a + area_b - inter);
}

class DetectionPostProcess : public EagerExecuteOp, public ShapeInferOp {
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

  // Greedy non-maximum suppression over `scores` (one per box): the kept boxes, best first.
  static std::vector<int64_t> Suppress(const Params& p, const std::vector<Box>& boxes, const std::vector<float>& scores, int64_t limit) {
    std::vector<int64_t> cand;
    for (int64_t i = 0; i < static_cast<int64_t>(scores.size()); ++i)
      if (scores[static_cast<size_t>(i)] >= p.score_threshold) cand.push_back(i);
    std::stable_sort(cand.begin(), cand.end(), [&](int64_t a, int64_t b) { return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b)]; });
    const size_t keep = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(cand.size()), limit));
    std::vector<uint8_t> active(cand.size(), 1);
    std::vector<int64_t> kept;
    for (size_t i = 0; i < cand.size() && kept.size() < keep; ++i) {
      if (!active[i]) continue;
      kept.push_back(cand[i]);
      const Box& bi = boxes[static_cast<size_t>(cand[i])];
      for (size_t j = i + 1; j < cand.size(); ++j)
        if (active[j] && IoU(bi, boxes[static_cast<size_t>(cand[j])]) > p.iou_threshold) active[j] = 0;
    }
    return kept;
  }

  // The indices of the `k` largest of `v[0..n)`, largest first (equal values in index order).
  static void TopK(const float* v, int64_t n, int64_t k, int64_t* idx) {
    std::vector<int64_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    std::partial_sort(all.begin(), all.begin() + k, all.end(), [&](int64_t a, int64_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
    std::copy(all.begin(), all.begin() + k, idx);
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Params p;
    int64_t n = 0, cb = 0;
    if (ReadParams(ctx, &p) != GRAPH_SUCCESS || CheckShapes(ctx, p, &n, &cb) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const int64_t d = p.max_detections * p.max_classes, offset = cb - p.num_classes, enc = ctx->GetInputTensor(0)->GetShape().GetDim(2);
    Tensor* ob = ctx->MallocOutputTensor(0, Shape({1, d, 4}), DT_FLOAT);
    Tensor* oc = ctx->MallocOutputTensor(1, Shape({1, d}), DT_FLOAT);
    Tensor* os = ctx->MallocOutputTensor(2, Shape({1, d}), DT_FLOAT);
    Tensor* on = ctx->MallocOutputTensor(3, Shape({1}), DT_FLOAT);
    if (!ob || !oc || !os || !on) return GRAPH_FAILED;
    std::vector<float> e, scores, a;
    if (Floats(ctx, 0, &e) != GRAPH_SUCCESS || Floats(ctx, 1, &scores) != GRAPH_SUCCESS || Floats(ctx, 2, &a) != GRAPH_SUCCESS)
      return GRAPH_FAILED;
    std::vector<Box> boxes(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const float* b = &e[static_cast<size_t>(i * enc)];
      const float* an = &a[static_cast<size_t>(i * 4)];
      const double yc = b[0] / p.y_scale * an[2] + an[0], xc = b[1] / p.x_scale * an[3] + an[1];
      const double hh = 0.5 * std::exp(b[2] / p.h_scale) * an[2], hw = 0.5 * std::exp(b[3] / p.w_scale) * an[3];
      const float fyc = static_cast<float>(yc), fxc = static_cast<float>(xc), fhh = static_cast<float>(hh), fhw = static_cast<float>(hw);
      Box& box = boxes[static_cast<size_t>(i)];
      box = {fyc - fhh, fxc - fhw, fyc + fhh, fxc + fhw};
      if (box.ymin > box.ymax || box.xmin > box.xmax)
        return Fail(ctx, "box " + std::to_string(i) + " decodes with its minimum past its maximum (a negative anchor height or width)");
    }
    float* out_boxes = ob->GetData<float>();
    float* out_classes = oc->GetData<float>();
    float* out_scores = os->GetData<float>();
    std::fill(out_boxes, out_boxes + d * 4, 0.f);
    std::fill(out_classes, out_classes + d, 0.f);
    std::fill(out_scores, out_scores + d, 0.f);
    auto put = [&](int64_t row, int64_t box, int64_t cls, float score) {
      const Box& b = boxes[static_cast<size_t>(box)];
      float* o = out_boxes + row * 4;
      o[0] = b.ymin, o[1] = b.xmin, o[2] = b.ymax, o[3] = b.xmax;
      out_classes[row] = static_cast<float>(cls);
      out_scores[row] = score;
    };
    std::vector<float> column(static_cast<size_t>(n));
    if (!p.regular) {
      const int64_t per_box = std::min(p.max_classes, p.num_classes);
      std::vector<int64_t> top(static_cast<size_t>(n * per_box));
      for (int64_t i = 0; i < n; ++i) {
        const float* row = &scores[static_cast<size_t>(i * cb + offset)];
        TopK(row, p.num_classes, per_box, &top[static_cast<size_t>(i * per_box)]);
        column[static_cast<size_t>(i)] = row[top[static_cast<size_t>(i * per_box)]];
      }
      std::vector<int64_t> kept = Suppress(p, boxes, column, p.max_detections);
      for (size_t k = 0; k < kept.size(); ++k)
        for (int64_t c = 0; c < per_box; ++c) {
          const int64_t cls = top[static_cast<size_t>(kept[k] * per_box + c)];
          put(static_cast<int64_t>(k) * p.max_classes + c, kept[k], cls, scores[static_cast<size_t>(kept[k] * cb + offset + cls)]);
        }
      *on->GetData<float>() = static_cast<float>(kept.size());
      return GRAPH_SUCCESS;
    }
    // Regular: per class, then the best max_detections of everything kept so far.
    std::vector<std::pair<int64_t, int64_t>> best;  // (box, class)
    std::vector<float> best_scores;
    for (int64_t c = 0; c < p.num_classes; ++c) {
      for (int64_t i = 0; i < n; ++i) column[static_cast<size_t>(i)] = scores[static_cast<size_t>(i * cb + offset + c)];
      for (int64_t i : Suppress(p, boxes, column, p.per_class)) {
        best.emplace_back(i, c);
        best_scores.push_back(column[static_cast<size_t>(i)]);
      }
      const int64_t keep = std::min<int64_t>(static_cast<int64_t>(best.size()), p.max_detections);
      std::vector<int64_t> order(static_cast<size_t>(keep));
      TopK(best_scores.data(), static_cast<int64_t>(best.size()), keep, order.data());
      std::vector<std::pair<int64_t, int64_t>> b2;
      std::vector<float> s2;
      for (int64_t k : order) {
        b2.push_back(best[static_cast<size_t>(k)]);
        s2.push_back(best_scores[static_cast<size_t>(k)]);
      }
      best.swap(b2);
      best_scores.swap(s2);
    }
    for (size_t k = 0; k < best.size(); ++k) put(static_cast<int64_t>(k), best[k].first, best[k].second, best_scores[k]);
    *on->GetData<float>() = static_cast<float>(best.size());
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
