// A GE custom-operator source ported by changing only its include line: namespaces ge/gert,
// graphStatus, GRAPH_SUCCESS/GRAPH_FAILED, InferShape/InferDataType with gert contexts.
#include "weft/compat/ge.h"

namespace ge {
REG_OP(GeStyleMul)
    .INPUT(x1, TensorType({DT_FLOAT}))
    .INPUT(x2, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .ATTR(alpha, Float, 1.0)
    .OP_END_FACTORY_REG(GeStyleMul);
}  // namespace ge

class GeStyleMul : public ge::EagerExecuteOp, public ge::ShapeInferOp {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* context) override {
    const gert::Shape* s = context->GetInputShape(0);
    gert::Shape* out = context->GetOutputShape(0);
    if (s == nullptr || out == nullptr) return ge::GRAPH_FAILED;
    *out = *s;
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus InferDataType(gert::InferDataTypeContext* context) override {
    return context->SetOutputDataType(0, context->GetInputDataType(0));
  }
  ge::graphStatus Execute(gert::EagerOpExecutionContext* context) override {
    const gert::Tensor* a = context->GetInputTensor(0);
    const gert::Tensor* b = context->GetInputTensor(1);
    const float* alpha = context->GetAttrs()->GetFloat(0);
    gert::StorageShape shape = a->GetShape();
    gert::Tensor* y = context->MallocOutputTensor(0, shape, ge::FORMAT_ND, ge::DT_FLOAT);
    if (y == nullptr || alpha == nullptr) return ge::GRAPH_FAILED;
    for (int64_t i = 0; i < a->GetShapeSize(); ++i)
      y->GetData<float>()[i] = *alpha * a->GetData<float>()[i] * b->GetData<float>()[i];
    return ge::GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(GeStyleMul);
