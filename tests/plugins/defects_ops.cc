// One op per defect `weft check-op` must find, plus a sound op that passes every check and ops
// the checker must skip for a stated reason. Unless noted, an op takes x (float32) and writes y
// with x's shape. tests/test_cli.cc holds the check each defect must fail.
#include <atomic>
#include <cstring>

#include "weft/compat/ge.h"

namespace ge {
#define WEFT_DEFECT_UNARY(Name)                                                                      \
  REG_OP(Name).INPUT(x, "T").OUTPUT(y, "T").SAME_AS_INPUT(x).DATATYPE(T, TensorType({DT_FLOAT})) \
      .OP_END_FACTORY_REG(Name)
// Sound: y = x * scale in float32 or float64, with every capability a checker can exercise.
REG_OP(SoundScale)
    .INPUT(x, "T")
    .OUTPUT(y, "T")
    .DATATYPE(T, TensorType({DT_FLOAT, DT_DOUBLE}))
    .ATTR(scale, Float, 2.0)
    .OP_END_FACTORY_REG(SoundScale);
REG_OP(WrongInferShape).INPUT(x, "T").OUTPUT(y, "T").DATATYPE(T, TensorType({DT_FLOAT}))
    .OP_END_FACTORY_REG(WrongInferShape);
WEFT_DEFECT_UNARY(WritesPastOutput);
WEFT_DEFECT_UNARY(LeavesOutputUnwritten);
WEFT_DEFECT_UNARY(MutatesInput);
WEFT_DEFECT_UNARY(NonDeterministic);
WEFT_DEFECT_UNARY(DeserializeRestoresWrongState);
WEFT_DEFECT_UNARY(DeserializeFails);
// Not defects: the checker skips what it cannot run, saying why.
REG_OP(NeedsAttr).INPUT(x, "T").OUTPUT(y, "T").SAME_AS_INPUT(x).DATATYPE(T, TensorType({DT_FLOAT}))
    .REQUIRED_ATTR(offset, Float).OP_END_FACTORY_REG(NeedsAttr);
REG_OP(OnlyRank4).INPUT(x, "T").OUTPUT(y, "T").DATATYPE(T, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(OnlyRank4);
REG_OP(OnlyRank7).INPUT(x, "T").OUTPUT(y, "T").DATATYPE(T, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(OnlyRank7);
WEFT_DEFECT_UNARY(CompiledNotPortable);
}  // namespace ge

namespace {

// y = x * factor + offset over float32 (or float64) data.
ge::graphStatus Affine(gert::EagerOpExecutionContext* ctx, double factor, double offset) {
  const gert::Tensor* x = ctx->GetInputTensor(0);
  gert::Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
  if (y == nullptr) return ge::GRAPH_FAILED;
  int64_t n = x->GetShapeSize();
  if (x->GetDataType() == ge::DT_DOUBLE) {
    for (int64_t i = 0; i < n; ++i) y->GetData<double>()[i] = x->GetData<double>()[i] * factor + offset;
  } else {
    for (int64_t i = 0; i < n; ++i)
      y->GetData<float>()[i] = x->GetData<float>()[i] * static_cast<float>(factor) + static_cast<float>(offset);
  }
  return ge::GRAPH_SUCCESS;
}

// y's shape and type are x's.
class SameShape : public virtual ge::ShapeInferOp {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus InferDataType(gert::InferDataTypeContext* ctx) override {
    return ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
  }
};

// Compile keeps `offset_ = 1`, Serialize saves it: y = x + offset_.
class OffsetState : public ge::EagerExecuteOp, public ge::CompilableOp, public ge::PortableOp {
 public:
  ge::graphStatus Compile(gert::OpCompileContext*) override {
    offset_ = 1.0f;
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus Serialize(std::vector<uint8_t>& buffer) override {
    buffer.resize(sizeof(offset_));
    std::memcpy(buffer.data(), &offset_, sizeof(offset_));
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override { return Affine(ctx, 1.0, offset_); }

 protected:
  float offset_ = 0.0f;
};

}  // namespace

class SoundScale : public ge::EagerExecuteOp, public SameShape, public ge::CompilableOp, public ge::PortableOp,
                   public ge::ArgsUpdater {
 public:
  ge::graphStatus Compile(gert::OpCompileContext* ctx) override {
    factor_ = *ctx->GetAttrs()->GetFloat("scale");
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus Serialize(std::vector<uint8_t>& buffer) override {
    buffer.resize(sizeof(factor_));
    std::memcpy(buffer.data(), &factor_, sizeof(factor_));
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus Deserialize(const std::vector<uint8_t>& buffer) override {
    if (buffer.size() != sizeof(factor_)) return ge::GRAPH_FAILED;
    std::memcpy(&factor_, buffer.data(), sizeof(factor_));
    return ge::GRAPH_SUCCESS;
  }
  // Remembers the addresses; Execute refuses to run on stale ones.
  ge::graphStatus UpdateHostArgs(gert::UpdateArgsContext* ctx) override {
    auto* args = ctx->GetHostArgs<Args>();
    if (args == nullptr) return ge::GRAPH_FAILED;
    args->x = ctx->GetInputTensor(0)->GetAddr();
    args->y = ctx->GetOutputTensor(0)->GetAddr();
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const Args* args = ctx->GetHostArgs<Args>();
    if (args && (args->x != ctx->GetInputTensor(0)->GetAddr() || args->y != ctx->GetOutputTensor(0)->GetAddr())) {
      ctx->SetError("UpdateHostArgs was not told of the current buffers");
      return ge::GRAPH_FAILED;
    }
    return Affine(ctx, factor_, 0.0);
  }

 private:
  struct Args {
    const void* x;
    const void* y;
  };
  float factor_ = 0.0f;
};

// Declares one more row than Execute writes.
class WrongInferShape : public ge::EagerExecuteOp, public SameShape {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    ge::Shape s = *ctx->GetInputShape(0);
    s.SetDim(0, s.GetDim(0) + 1);
    *ctx->GetOutputShape(0) = s;
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override { return Affine(ctx, 1.0, 0.0); }
};

class WritesPastOutput : public ge::EagerExecuteOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    if (Affine(ctx, 1.0, 0.0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    gert::Tensor* y = ctx->GetOutputTensor(0);
    y->GetData<float>()[y->GetShapeSize()] = 0.0f;  // one element past the end
    return ge::GRAPH_SUCCESS;
  }
};

class LeavesOutputUnwritten : public ge::EagerExecuteOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    gert::Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), ge::DT_FLOAT);
    if (y == nullptr) return ge::GRAPH_FAILED;
    // Every element but the last.
    for (int64_t i = 0; i + 1 < x->GetShapeSize(); ++i) y->GetData<float>()[i] = x->GetData<float>()[i];
    return ge::GRAPH_SUCCESS;
  }
};

class MutatesInput : public ge::EagerExecuteOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    if (Affine(ctx, 1.0, 0.0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    const_cast<float*>(ctx->GetInputTensor(0)->GetData<float>())[0] += 1.0f;  // inputs are read-only
    return ge::GRAPH_SUCCESS;
  }
};

// y = x + the number of earlier calls.
class NonDeterministic : public ge::EagerExecuteOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    static std::atomic<int> calls{0};
    return Affine(ctx, 1.0, calls++);
  }
};

// Restores nothing: a loaded model adds 0 where the compiled one added 1.
class DeserializeRestoresWrongState : public OffsetState {
 public:
  ge::graphStatus Deserialize(const std::vector<uint8_t>&) override { return ge::GRAPH_SUCCESS; }
};

class DeserializeFails : public OffsetState {
 public:
  ge::graphStatus DeserializeKeyed(gert::OpDeserializeContext* ctx) override {
    ctx->SetError("blob format 2 is not supported");
    return ge::GRAPH_FAILED;
  }
};

class NeedsAttr : public ge::EagerExecuteOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    return Affine(ctx, 1.0, *ctx->GetAttrs()->GetFloat("offset"));
  }
};

// Accepts rank-4 inputs only (the checker's second probe shape).
class OnlyRank4 : public ge::EagerExecuteOp, public SameShape {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    if (ctx->GetInputShape(0)->GetDimNum() != 4) {
      ctx->SetError("x must have rank 4, got " + ctx->GetInputShape(0)->ToString());
      return ge::GRAPH_FAILED;
    }
    return SameShape::InferShape(ctx);
  }
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override { return Affine(ctx, 1.0, 0.0); }
};

// Accepts rank-7 inputs only: no probe shape fits.
class OnlyRank7 : public ge::EagerExecuteOp, public SameShape {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    if (ctx->GetInputShape(0)->GetDimNum() != 7) {
      ctx->SetError("x must have rank 7, got " + ctx->GetInputShape(0)->ToString());
      return ge::GRAPH_FAILED;
    }
    return SameShape::InferShape(ctx);
  }
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override { return Affine(ctx, 1.0, 0.0); }
};

// Compile without PortableOp: models using it cannot be saved, by rule.
class CompiledNotPortable : public ge::EagerExecuteOp, public ge::CompilableOp {
 public:
  ge::graphStatus Compile(gert::OpCompileContext*) override { return ge::GRAPH_SUCCESS; }
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override { return Affine(ctx, 1.0, 0.0); }
};

REG_AUTO_MAPPING_OP(SoundScale);
REG_AUTO_MAPPING_OP(WrongInferShape);
REG_AUTO_MAPPING_OP(WritesPastOutput);
REG_AUTO_MAPPING_OP(LeavesOutputUnwritten);
REG_AUTO_MAPPING_OP(MutatesInput);
REG_AUTO_MAPPING_OP(NonDeterministic);
REG_AUTO_MAPPING_OP(DeserializeRestoresWrongState);
REG_AUTO_MAPPING_OP(DeserializeFails);
REG_AUTO_MAPPING_OP(NeedsAttr);
REG_AUTO_MAPPING_OP(OnlyRank4);
REG_AUTO_MAPPING_OP(OnlyRank7);
REG_AUTO_MAPPING_OP(CompiledNotPortable);
