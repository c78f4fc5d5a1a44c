// Operators for the weft aot tests: one that emits well-formed C with state, init, scratch and a
// helper shared between nodes, and one whose emitter misbehaves in the way its "mode" says.
#include <stdexcept>
#include <string>

#include "weft/custom_op.h"

using namespace weft;  // NOLINT

// y = x + (the number of runs so far), counted in persistent state; a scratch block holds x
// before it is added.
REG_OP(EmitCounter)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .OP_END_FACTORY_REG(EmitCounter);

class EmitCounter : public EagerExecuteOp, public EmittableOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) y->GetData<float>()[i] = x->GetData<float>()[i];
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    const int64_t n = ctx->GetInputTensor(0)->GetShapeSize();
    ctx->Helper("emit_counter_add", "static void emit_counter_add(int64_t n, const float* x, float k, float* y) {\n"
                                    "  int64_t i;\n  for (i = 0; i < n; ++i) y[i] = x[i] + k;\n}\n");
    ctx->DeclareState("int32_t runs;\nint32_t inits;\n");
    ctx->Init(ctx->State() + "->inits += 1;\n");
    std::string tmp = ctx->Scratch(static_cast<size_t>(n) * sizeof(float));
    ctx->Run("{\n  float* tmp = (float*)(void*)" + tmp + ";\n  memcpy(tmp, " + ctx->Input(0, "float") + ", " + std::to_string(n * 4) +
             "u);\n  emit_counter_add(" + std::to_string(n) + ", tmp, (float)(" + ctx->State() + "->runs + " + ctx->State() +
             "->inits * 100), " + ctx->Output(0, "float") + ");\n  " + ctx->State() + "->runs += 1;\n}\n");
    ctx->Include("<string.h>");
    return GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(EmitCounter);

// An emitter that fails as "mode" says: bad_include, helper_clash (a second node's helper text
// differs), state_first (State() before DeclareState), throws, fails, out_of_range (Input(5)).
REG_OP(EmitBroken)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .ATTR(mode, String, "bad_include")
    .OP_END_FACTORY_REG(EmitBroken);

class EmitBroken : public EagerExecuteOp, public EmittableOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) y->GetData<float>()[i] = x->GetData<float>()[i];
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    std::string mode = ctx->GetAttrs()->GetStr("mode");
    if (mode == "bad_include") ctx->Include("stdio.h; system(\"rm -rf /\")");
    if (mode == "helper_clash") ctx->Helper("emit_broken", std::string("static int emit_broken_") + ctx->GetNodeName() + ";\n");
    if (mode == "state_first") ctx->Run(ctx->State() + "->x = 1;\n");
    if (mode == "throws") throw std::runtime_error("the emitter gave up");
    if (mode == "fails") return ctx->SetError("this node cannot be emitted"), GRAPH_FAILED;
    if (mode == "out_of_range") ctx->Run(ctx->Input(5, "float"));
    return GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(EmitBroken);
