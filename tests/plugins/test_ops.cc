// Operators that exercise the SDK in tests: attributes of every type, optional and dynamic
// inputs, workspace, failures and exceptions.
#include <cstring>
#include <stdexcept>
#include <string>

#include "weft/custom_op.h"

using namespace weft;  // NOLINT

// y = x * scale + bias, with every attribute type read back and checked.
REG_OP(ScaleAttrs)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .REQUIRED_ATTR(scale, Float)
    .ATTR(bias, Float, 0.0)
    .ATTR(repeat, Int, 1)
    .ATTR(enabled, Bool, true)
    .ATTR(mode, String, "plain")
    .ATTR(ints, ListInt, {1, 2, 3})
    .ATTR(floats, ListFloat, {0.5f})
    .ATTR(names, ListString, {"a", "b"})
    .ATTR(table, Tensor, {})
    .OP_END_FACTORY_REG(ScaleAttrs);

class ScaleAttrs : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const RuntimeAttrs* a = ctx->GetAttrs();
    // Index access (GE order) and name access must agree.
    if (a->GetFloat(0) == nullptr || a->GetFloat("scale") != a->GetFloat(0)) return Fail(ctx, "scale by index/name");
    if (a->GetInt(2) == nullptr || *a->GetInt(2) != *a->GetInt("repeat")) return Fail(ctx, "repeat");
    // Wrong-type access gives nullptr (by index silently: this op runs in the zero-allocation test).
    if (a->GetInt(0) != nullptr) return Fail(ctx, "wrong-type access must give nullptr");
    if (a->GetListInt("ints")->size() != 3 || a->GetListString("names")->size() != 2) return Fail(ctx, "lists");
    if (std::strcmp(a->GetStr("mode"), "plain") != 0 && std::strcmp(a->GetStr("mode"), "double") != 0)
      return Fail(ctx, std::string("bad mode ") + a->GetStr("mode"));
    float scale = *a->GetFloat("scale") * (std::strcmp(a->GetStr("mode"), "double") == 0 ? 2.f : 1.f);
    float bias = *a->GetFloat("bias");
    if (!*a->GetBool("enabled")) bias = 0;
    const Tensor* table = a->GetTensor("table");
    if (table && table->GetShapeSize() > 0 && table->GetDataType() == DT_FLOAT) bias += table->GetData<float>()[0];
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    for (int64_t r = 0; r < *a->GetInt("repeat"); ++r)
      for (int64_t i = 0; i < x->GetShapeSize(); ++i) y->GetData<float>()[i] = x->GetData<float>()[i] * scale + bias;
    return GRAPH_SUCCESS;
  }

 private:
  static graphStatus Fail(EagerOpExecutionContext* ctx, const std::string& m) {
    ctx->SetError(m);
    return GRAPH_FAILED;
  }
};
REG_AUTO_MAPPING_OP(ScaleAttrs);

// y = sum of all dynamic inputs (+ optional bias), with shape inference and workspace use.
REG_OP(SumN)
    .DYNAMIC_INPUT(xs, "T")
    .OPTIONAL_INPUT(bias, "T")
    .OUTPUT(y, "T")
    .DATATYPE(T, TensorType({DT_FLOAT, DT_DOUBLE}))
    .OP_END_FACTORY_REG(SumN);

class SumN : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape* s0 = ctx->GetDynamicInputShape(0, 0);
    for (size_t k = 1; k < ctx->GetIrInputInstanceNum(0); ++k)
      if (*ctx->GetDynamicInputShape(0, k) != *s0) {
        ctx->SetError("xs" + std::to_string(k) + " has shape " + ctx->GetDynamicInputShape(0, k)->ToString() +
                      ", xs0 has " + s0->ToString());
        return GRAPH_FAILED;
      }
    *ctx->GetOutputShape(0) = *s0;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    return ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x0 = ctx->GetDynamicInputTensor(0, 0);
    int64_t n = x0->GetShapeSize();
    auto* acc = static_cast<double*>(ctx->MallocWorkSpace(static_cast<size_t>(n) * sizeof(double)));
    if (!acc) return GRAPH_FAILED;
    std::memset(acc, 0, static_cast<size_t>(n) * sizeof(double));
    auto add = [&](const Tensor* t) {
      for (int64_t i = 0; i < n; ++i)
        acc[i] += t->GetDataType() == DT_FLOAT ? t->GetData<float>()[i] : t->GetData<double>()[i];
    };
    for (size_t k = 0; k < ctx->GetIrInputInstanceNum(0); ++k) add(ctx->GetDynamicInputTensor(0, k));
    if (const Tensor* b = ctx->GetOptionalInputTensor(1)) add(b);
    Tensor* y = ctx->MallocOutputTensor(0, x0->GetShape(), x0->GetDataType());
    if (!y) return GRAPH_FAILED;
    for (int64_t i = 0; i < n; ++i) {
      if (y->GetDataType() == DT_FLOAT) y->GetData<float>()[i] = static_cast<float>(acc[i]);
      else y->GetData<double>()[i] = acc[i];
    }
    return GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(SumN);

// Fails in the stage named by its attribute: by exception or by status.
REG_OP(Faulty)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .ATTR(where, String, "execute")
    .OP_END_FACTORY_REG(Faulty);

class Faulty : public EagerExecuteOp, public ShapeInferOp, public CompilableOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    if (Is(ctx, "infer_shape")) throw std::runtime_error("shape oracle unavailable");
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_FLOAT); }
  graphStatus Compile(OpCompileContext* ctx) override {
    if (Is(ctx, "compile")) {
      ctx->SetError("kernel source did not compile");
      return GRAPH_FAILED;
    }
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    if (Is(ctx, "execute")) throw std::runtime_error("boom at element 3");
    if (Is(ctx, "execute_int")) throw 42;
    if (Is(ctx, "wrong_shape")) return ctx->MallocOutputTensor(0, Shape({1, 2, 3}), DT_FLOAT) ? GRAPH_SUCCESS : GRAPH_FAILED;
    if (Is(ctx, "silent")) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    std::memcpy(y->GetAddr(), x->GetAddr(), x->GetByteCount());
    return GRAPH_SUCCESS;
  }

 private:
  static bool Is(const KernelContextBase* ctx, const char* w) { return std::strcmp(ctx->GetAttrs()->GetStr("where"), w) == 0; }
};
REG_AUTO_MAPPING_OP(Faulty);

// Reads an attribute wrongly on purpose, as `mistake` says: "typo" (a misspelt name), "type" (the
// wrong type) or "probe" (a missing name it recovers from); otherwise y = x.
REG_OP(AttrMistake)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .ATTR(epsilon, Float, 1e-5)
    .ATTR(axes, ListInt, {0})
    .ATTR(mistake, String, "none")
    .OP_END_FACTORY_REG(AttrMistake);

class AttrMistake : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const RuntimeAttrs* a = ctx->GetAttrs();
    std::string mistake = a->GetStr("mistake");
    if (mistake == "typo" && a->GetFloat("epsilom") == nullptr) return GRAPH_FAILED;
    if (mistake == "type" && a->GetInt("epsilon") == nullptr) return GRAPH_FAILED;
    if (mistake == "probe" && a->GetFloat("momentum") != nullptr) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    std::memcpy(y->GetAddr(), x->GetAddr(), x->GetByteCount());
    return GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(AttrMistake);

// No ShapeInferOp and no SAME_AS_INPUT: compiling a graph with it must fail clearly.
REG_OP(NoShape)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .OP_END_FACTORY_REG(NoShape);
class NoShape : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext*) override { return GRAPH_SUCCESS; }
};
REG_AUTO_MAPPING_OP(NoShape);

// y = x * x, computed through the engine's intra-op threads.
REG_OP(ParallelSquare)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .OP_END_FACTORY_REG(ParallelSquare);
class ParallelSquare : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    return ctx->ParallelFor(x->GetShapeSize(), 1024, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) py[i] = px[i] * px[i];
    });
  }
};
REG_AUTO_MAPPING_OP(ParallelSquare);

// z = x * y, and its backward as an op of its own: MulCustomGrad(x, y, dz) -> (dx, dy).
REG_OP(MulCustom)
    .INPUT(x, TensorType({DT_FLOAT}))
    .INPUT(y, TensorType({DT_FLOAT}))
    .OUTPUT(z, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .OP_END_FACTORY_REG(MulCustom);

class MulCustom : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* y = ctx->GetInputTensor(1);
    if (x->GetShape() != y->GetShape()) {
      ctx->SetError("x and y must have the same shape");
      return GRAPH_FAILED;
    }
    Tensor* z = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!z) return GRAPH_FAILED;
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) z->GetData<float>()[i] = x->GetData<float>()[i] * y->GetData<float>()[i];
    return GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(MulCustom);

REG_OP(MulCustomGrad)
    .INPUT(x, TensorType({DT_FLOAT}))
    .INPUT(y, TensorType({DT_FLOAT}))
    .INPUT(dz, TensorType({DT_FLOAT}))
    .OUTPUT(dx, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .OUTPUT(dy, TensorType({DT_FLOAT})).SAME_AS_INPUT(y)
    .OP_END_FACTORY_REG(MulCustomGrad);

class MulCustomGrad : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* y = ctx->GetInputTensor(1);
    const Tensor* dz = ctx->GetInputTensor(2);
    Tensor* dx = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    Tensor* dy = ctx->MallocOutputTensor(1, y->GetShape(), DT_FLOAT);
    if (!dx || !dy) return GRAPH_FAILED;
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) {
      dx->GetData<float>()[i] = dz->GetData<float>()[i] * y->GetData<float>()[i];
      dy->GetData<float>()[i] = dz->GetData<float>()[i] * x->GetData<float>()[i];
    }
    return GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(MulCustomGrad);
