// GE scenario 1: an operator with only EagerExecuteOp. The kernel is compiled into this library;
// Execute gets the inputs, allocates the output and runs it.
#include <string>

#include "add_custom_proto.h"

namespace {

template <typename T>
void AddKernel(const T* x, const T* y, T* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

void AddKernel(const ge::float16* x, const ge::float16* y, ge::float16* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = ge::float16(static_cast<float>(x[i]) + static_cast<float>(y[i]));
}

}  // namespace

class AddCustom : public ge::EagerExecuteOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    const gert::Tensor* y = ctx->GetInputTensor(1);
    if (x->GetShape() != y->GetShape()) {
      ctx->SetError("x " + x->GetShape().ToString() + " and y " + y->GetShape().ToString() + " must have the same shape");
      return ge::GRAPH_FAILED;
    }
    gert::Tensor* z = ctx->MallocOutputTensor(0, x->GetStorageShape(), x->GetDataType());
    if (z == nullptr) return ge::GRAPH_FAILED;
    int64_t n = x->GetShapeSize();
    switch (x->GetDataType()) {
      case ge::DT_FLOAT:
        AddKernel(x->GetData<float>(), y->GetData<float>(), z->GetData<float>(), n);
        break;
      case ge::DT_FLOAT16:
        AddKernel(x->GetData<ge::float16>(), y->GetData<ge::float16>(), z->GetData<ge::float16>(), n);
        break;
      default:
        ctx->SetError("unsupported data type");
        return ge::GRAPH_FAILED;
    }
    return ge::GRAPH_SUCCESS;
  }
};

REG_AUTO_MAPPING_OP(AddCustom);
