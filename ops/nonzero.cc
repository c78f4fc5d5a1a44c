// NonZero: the indices of the non-zero elements, int64 [rank, count]. The count depends on the
// input's values, so InferShape gives the bound [rank, numel] and Execute reports the real
// shape (GE scenario 4). With a constant input the shape is exact at compile time.
#include <cstring>

#include "op_util.h"

namespace weft::ops {
namespace {

// Whether element k of `x` is non-zero (floating types compare by value, so -0.0 is zero).
inline bool IsNonZero(const uint8_t* p, DataType dt, int64_t k) {
  switch (dt) {
    case DT_FLOAT: return reinterpret_cast<const float*>(p)[k] != 0.0f;
    case DT_DOUBLE: return reinterpret_cast<const double*>(p)[k] != 0.0;
    case DT_FLOAT16:
    case DT_BF16: return (reinterpret_cast<const uint16_t*>(p)[k] & 0x7fff) != 0;
    default: {
      size_t n = DataTypeSize(dt);
      for (size_t b = 0; b < n; ++b)
        if (p[k * n + b]) return true;
      return false;
    }
  }
}

int64_t CountNonZero(const Tensor* x) {
  const auto* p = static_cast<const uint8_t*>(x->GetAddr());
  int64_t n = x->GetShapeSize(), c = 0;
  for (int64_t k = 0; k < n; ++k) c += IsNonZero(p, x->GetDataType(), k);
  return c;
}

class NonZero : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    Shape* y = ctx->GetOutputShape(0);
    int64_t rank = static_cast<int64_t>(xs.GetDimNum());
    // A scalar behaves as a one-element vector (rank 1), as in NumPy.
    int64_t out_rank = rank == 0 ? 1 : rank;
    y->SetDimNum(2);
    y->SetDim(0, out_rank);
    if (xs.IsUnknown()) {
      y->SetDim(1, -1);
      return GRAPH_SUCCESS;  // bound follows once the input shape is known
    }
    if (x->GetAddr()) {  // constant input: the exact count
      y->SetDim(1, CountNonZero(x));
      return GRAPH_SUCCESS;
    }
    y->SetDim(1, -1);
    return ctx->SetOutputShapeBound(0, Shape({out_rank, xs.GetShapeSize()}));
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_INT64); }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    int64_t rank = static_cast<int64_t>(xs.GetDimNum());
    int64_t out_rank = rank == 0 ? 1 : rank;
    int64_t count = CountNonZero(x);
    Tensor* y = ctx->MallocOutputTensor(0, Shape({out_rank, count}), DT_INT64);
    if (!y) return GRAPH_FAILED;
    auto* out = y->GetData<int64_t>();
    const auto* p = static_cast<const uint8_t*>(x->GetAddr());
    int64_t strides[WEFT_MAX_DIMS];
    Strides(xs, strides);
    int64_t n = xs.GetShapeSize(), j = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (!IsNonZero(p, x->GetDataType(), k)) continue;
      if (rank == 0) out[j] = 0;
      for (int64_t d = 0, rem = k; d < rank; ++d) {
        out[d * count + j] = rem / strides[d];
        rem %= strides[d];
      }
      ++j;
    }
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_nonzero(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("NonZero").INPUT(X, TensorType::ALL()).OUTPUT(Y, TensorType({DT_INT64})).Build(),
                 MakeOpImpl<NonZero>("NonZero")});
}

}  // namespace weft::ops
