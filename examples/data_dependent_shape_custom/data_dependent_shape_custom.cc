// GE scenario 4: an operator whose output shape depends on its input's values.
//
//   InferShape  y = [-1, rank]: the count is unknown until run time, but can never exceed the
//               element count, so the bound is [numel, rank].
//   Execute     allocates y at the bound, allocates a shape buffer with MallocWorkSpace, runs the
//               kernel (which writes the indices and the real shape [2, count, rank] into the
//               buffer), and hands the buffer to the engine, which reads it once the stream is
//               synchronized, checks it against the bound and re-infers everything downstream.
#include <cstdint>

#include "data_dependent_shape_custom_proto.h"

namespace {

// The "device kernel": writes the coordinates of non-zero elements and the shape buffer.
template <typename T>
void WhereKernel(const T* x, const int64_t* dims, int64_t rank, int64_t n, int64_t* y, uint64_t* shape_buf) {
  int64_t count = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (x[k] == T(0)) continue;
    for (int64_t d = rank - 1, rem = k; d >= 0; --d) {
      y[count * rank + d] = rem % dims[d];
      rem /= dims[d];
    }
    ++count;
  }
  shape_buf[0] = 2;
  shape_buf[1] = static_cast<uint64_t>(count);
  shape_buf[2] = static_cast<uint64_t>(rank);
}

}  // namespace

class WhereIndicesCustom : public ge::EagerExecuteOp, public ge::ShapeInferOp {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    const ge::Shape* x = ctx->GetInputShape(0);
    int64_t rank = static_cast<int64_t>(x->GetDimNum());
    ge::Shape* y = ctx->GetOutputShape(0);
    *y = ge::Shape({-1, rank});
    if (x->IsUnknown()) return ge::GRAPH_SUCCESS;  // no bound until the input shape is known
    return ctx->SetOutputShapeBound(0, ge::Shape({x->GetShapeSize(), rank}));
  }
  ge::graphStatus InferDataType(gert::InferDataTypeContext* ctx) override {
    return ctx->SetOutputDataType(0, ge::DT_INT64);
  }

  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    const ge::Shape& xs = x->GetShape();
    int64_t rank = static_cast<int64_t>(xs.GetDimNum()), n = xs.GetShapeSize();
    // Output at the upper bound; the real shape comes back through the shape buffer.
    gert::Tensor* y = ctx->MallocOutputTensor(0, ge::Shape({n, rank}), ge::DT_INT64);
    if (y == nullptr) return ge::GRAPH_FAILED;
    auto* shape_buf = static_cast<uint64_t*>(ctx->MallocWorkSpace((1 + 2) * sizeof(uint64_t)));
    if (shape_buf == nullptr) return ge::GRAPH_FAILED;
    const int64_t* dims = xs.dims;
    switch (x->GetDataType()) {
      case ge::DT_FLOAT: WhereKernel(x->GetData<float>(), dims, rank, n, y->GetData<int64_t>(), shape_buf); break;
      case ge::DT_INT32: WhereKernel(x->GetData<int32_t>(), dims, rank, n, y->GetData<int64_t>(), shape_buf); break;
      case ge::DT_BOOL: WhereKernel(x->GetData<uint8_t>(), dims, rank, n, y->GetData<int64_t>(), shape_buf); break;
      default: ctx->SetError("unsupported data type"); return ge::GRAPH_FAILED;
    }
    return ctx->SetOutputShapeBuffer(0, shape_buf);
  }
};

REG_AUTO_MAPPING_OP(WhereIndicesCustom);
