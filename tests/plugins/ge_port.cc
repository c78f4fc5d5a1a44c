// A GE custom-operator source ported by changing only its include line: namespaces ge/gert,
// graphStatus, GRAPH_SUCCESS/GRAPH_FAILED, InferShape/InferDataType with gert contexts, and the
// GE names a port meets (ge::Status, GRAPH_PARAM_INVALID, GetAttrPointer, TypedContinuousVector,
// GetComputeNodeInfo, CompileTimeTensorDesc, StorageFormat). Building this package (-Werror)
// proves they compile as GE spells them.
#include "weft/compat/ge.h"

namespace ge {
REG_OP(GeStyleMul)
    .INPUT(x1, TensorType({DT_FLOAT}))
    .INPUT(x2, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .ATTR(alpha, Float, 1.0)
    .ATTR(offsets, ListInt, {})  // their sum is added to every element
    .OP_END_FACTORY_REG(GeStyleMul);
}  // namespace ge

namespace {
constexpr size_t kAttrAlpha = 0;
constexpr size_t kAttrOffsets = 1;

// Both inputs in the plain layout, as GE code checks with the node's tensor descriptions.
ge::Status CheckInputs(const gert::ComputeNodeInfo* node) {
  if (node == nullptr || node->GetInputsNum() != 2 || node->GetOutputsNum() != 1) return ge::FAILED;
  for (size_t i = 0; i < node->GetInputsNum(); ++i) {
    const gert::CompileTimeTensorDesc* td = node->GetInputTdInfo(i);
    if (td == nullptr || td->GetDataType() != ge::DT_FLOAT) return ge::FAILED;
    const gert::StorageFormat format = td->GetFormat();
    if (format.GetStorageFormat() != td->GetOriginFormat()) return ge::FAILED;
  }
  return ge::SUCCESS;
}
}  // namespace

class GeStyleMul : public ge::EagerExecuteOp, public ge::ShapeInferOp {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* context) override {
    const gert::Shape* s = context->GetInputShape(0);
    const gert::Shape* s2 = context->GetInputShape(1);
    gert::Shape* out = context->GetOutputShape(0);
    if (s == nullptr || s2 == nullptr || out == nullptr) return ge::GRAPH_FAILED;
    if (*s != *s2) return ge::GRAPH_PARAM_INVALID;
    *out = *s;
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus InferDataType(gert::InferDataTypeContext* context) override {
    return context->SetOutputDataType(0, context->GetInputDataType(0));
  }
  ge::graphStatus Execute(gert::EagerOpExecutionContext* context) override {
    if (CheckInputs(context->GetComputeNodeInfo()) != ge::SUCCESS) return ge::GRAPH_FAILED;
    const gert::Tensor* a = context->GetInputTensor(0);
    const gert::Tensor* b = context->GetInputTensor(1);
    if (a->GetStorageFormat() != a->GetOriginFormat()) return ge::GRAPH_FAILED;
    const gert::RuntimeAttrs* attrs = context->GetComputeNodeInfo()->GetAttrs();
    const float* alpha = attrs->GetAttrPointer<float>(kAttrAlpha);
    const gert::TypedContinuousVector<int64_t>* offsets = attrs->GetListInt(kAttrOffsets);
    auto* same = attrs->GetAttrPointer<gert::TypedContinuousVector<int64_t>>(kAttrOffsets);
    if (alpha == nullptr || offsets == nullptr || same != offsets) return ge::GRAPH_FAILED;
    int64_t shift = 0;
    for (size_t i = 0; i < offsets->GetSize(); ++i) shift += offsets->GetData()[i];
    gert::StorageShape shape = a->GetShape();
    gert::Tensor* y = context->MallocOutputTensor(0, shape, ge::FORMAT_ND, ge::DT_FLOAT);
    if (y == nullptr) return ge::GRAPH_FAILED;
    for (int64_t i = 0; i < a->GetShapeSize(); ++i)
      y->GetData<float>()[i] = *alpha * a->GetData<float>()[i] * b->GetData<float>()[i] + static_cast<float>(shift);
    return ge::GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(GeStyleMul);
