// Operators for the compile-once/ship/run tests: a runtime-compiled op that counts its Compile
// calls, one whose generated source does not compile, and a data-dependent op that misreports
// its shape.
#include <atomic>
#include <string>

#include "weft/custom_op.h"

using namespace weft;  // NOLINT

namespace {
std::atomic<int> g_compile_calls{0};
std::atomic<int> g_deserialize_calls{0};
}  // namespace

extern "C" WEFT_PLUGIN_EXPORT int weft_test_rtc_compile_calls() { return g_compile_calls.load(); }
extern "C" WEFT_PLUGIN_EXPORT int weft_test_rtc_deserialize_calls() { return g_deserialize_calls.load(); }

// y = x * factor, with `factor` baked into runtime-compiled source.
REG_OP(RtcScale)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .ATTR(factor, Float, 2.0)
    .OP_END_FACTORY_REG(RtcScale);

class RtcScale : public EagerExecuteOp, public CompilableOp, public PortableOp {
 public:
  using Fn = void (*)(const float*, float*, long);
  graphStatus Compile(OpCompileContext* ctx) override {
    ++g_compile_calls;
    float f = *ctx->GetAttrs()->GetFloat("factor");
    std::string src = "void scale(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = x[i] * " +
                      std::to_string(f) + "f; }\n";
    auto k = ctx->CompileKernel(src, "scale");
    if (!k.symbol) return GRAPH_FAILED;
    fn_ = reinterpret_cast<Fn>(k.symbol);
    id_ = k.id;
    return GRAPH_SUCCESS;
  }
  graphStatus Serialize(std::vector<uint8_t>& buf) override {
    buf.assign(id_.begin(), id_.end());
    return GRAPH_SUCCESS;
  }
  graphStatus DeserializeKeyed(OpDeserializeContext* ctx) override {
    ++g_deserialize_calls;
    auto b = ctx->GetBlob("");
    id_.assign(b.begin(), b.end());
    fn_ = reinterpret_cast<Fn>(ctx->GetKernel(id_, "scale"));
    return fn_ ? GRAPH_SUCCESS : GRAPH_FAILED;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y || !fn_) return GRAPH_FAILED;
    fn_(x->GetData<float>(), y->GetData<float>(), static_cast<long>(x->GetShapeSize()));
    return GRAPH_SUCCESS;
  }

 private:
  Fn fn_ = nullptr;
  std::string id_;
};
REG_AUTO_MAPPING_OP(RtcScale);

// Generates C that does not compile.
REG_OP(RtcBroken)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(x)
    .OP_END_FACTORY_REG(RtcBroken);

class RtcBroken : public EagerExecuteOp, public CompilableOp {
 public:
  graphStatus Compile(OpCompileContext* ctx) override {
    auto k = ctx->CompileKernel("void broken(float* y) { y[0] = undeclared_identifier_xyz; }\n", "broken");
    return k.symbol ? GRAPH_SUCCESS : GRAPH_FAILED;
  }
  graphStatus Execute(EagerOpExecutionContext*) override { return GRAPH_FAILED; }
};
REG_AUTO_MAPPING_OP(RtcBroken);

// A data-dependent op that reports its real shape wrongly. mode 0: shape buffer beyond the bound,
// 1: SetOutputShape beyond the bound, 2: never reports, 3: correct (first `keep` elements).
REG_OP(BoundedPrefix)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .ATTR(mode, Int, 3)
    .ATTR(keep, Int, 1)
    .OP_END_FACTORY_REG(BoundedPrefix);

class BoundedPrefix : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t n = ctx->GetInputShape(0)->GetShapeSize();
    *ctx->GetOutputShape(0) = Shape({-1});
    return ctx->SetOutputShapeBound(0, Shape({n}));
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_FLOAT); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    int64_t n = x->GetShapeSize();
    int64_t mode = *ctx->GetAttrs()->GetInt("mode"), keep = *ctx->GetAttrs()->GetInt("keep");
    Tensor* y = ctx->MallocOutputTensor(0, Shape({-1}), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    int64_t m = keep < n ? keep : n;
    for (int64_t i = 0; i < m; ++i) y->GetData<float>()[i] = x->GetData<float>()[i];
    if (mode == 0 || mode == 3) {
      auto* buf = static_cast<uint64_t*>(ctx->MallocWorkSpace(2 * sizeof(uint64_t)));
      buf[0] = 1;
      buf[1] = static_cast<uint64_t>(mode == 0 ? n + 1 : m);
      return ctx->SetOutputShapeBuffer(0, buf);
    }
    if (mode == 1) return ctx->SetOutputShape(0, Shape({n + 5}));
    return GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(BoundedPrefix);
