// Operators that misbehave the ways plugin checking mode must catch, ops that throw from their
// intra-op threads, plus one that behaves. Each takes x (float) and writes y with x's shape.
#include <cstring>
#include <stdexcept>

#include "weft/compat/ge.h"

namespace ge {
#define WEFT_TEST_UNARY(Name) \
  REG_OP(Name).INPUT(x, "T").OUTPUT(y, "T").SAME_AS_INPUT(x).DATATYPE(T, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(Name)
WEFT_TEST_UNARY(GoodCopy);
WEFT_TEST_UNARY(OverrunOutput);
WEFT_TEST_UNARY(NeverWrites);
WEFT_TEST_UNARY(HalfWrites);
WEFT_TEST_UNARY(WritesInput);
WEFT_TEST_UNARY(OverrunWorkspace);
WEFT_TEST_UNARY(ThrowsInParallelFor);
WEFT_TEST_UNARY(ThrowsThroughRawParallelFor);
WEFT_TEST_UNARY(RunningSum);
}  // namespace ge

namespace {

// y = x over the first `count(n)` elements, then `extra` for the op's misbehaviour.
template <typename Derived>
class Base : public ge::EagerExecuteOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    gert::Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), ge::DT_FLOAT);
    if (y == nullptr) return ge::GRAPH_FAILED;
    int64_t n = x->GetShapeSize();
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    for (int64_t i = 0; i < static_cast<Derived*>(this)->Count(n); ++i) py[i] = px[i];
    return static_cast<Derived*>(this)->Extra(ctx, const_cast<float*>(px), py, n);
  }
  int64_t Count(int64_t n) { return n; }
  ge::graphStatus Extra(gert::EagerOpExecutionContext*, float*, float*, int64_t) { return ge::GRAPH_SUCCESS; }
};

}  // namespace

class GoodCopy : public Base<GoodCopy> {};
class OverrunOutput : public Base<OverrunOutput> {
 public:
  ge::graphStatus Extra(gert::EagerOpExecutionContext*, float*, float* py, int64_t n) {
    py[n] = 1.0f;  // one element past the end
    return ge::GRAPH_SUCCESS;
  }
};
class NeverWrites : public Base<NeverWrites> {
 public:
  int64_t Count(int64_t) { return 0; }
};
class HalfWrites : public Base<HalfWrites> {
 public:
  int64_t Count(int64_t n) { return n / 2; }
};
class WritesInput : public Base<WritesInput> {
 public:
  ge::graphStatus Extra(gert::EagerOpExecutionContext*, float* px, float*, int64_t) {
    px[0] += 1.0f;  // inputs are read-only
    return ge::GRAPH_SUCCESS;
  }
};
class OverrunWorkspace : public Base<OverrunWorkspace> {
 public:
  ge::graphStatus Extra(gert::EagerOpExecutionContext* ctx, float*, float*, int64_t) {
    auto* w = static_cast<uint8_t*>(ctx->MallocWorkSpace(16));
    if (w == nullptr) return ge::GRAPH_FAILED;
    std::memset(w, 0, 20);  // 4 bytes too many
    return ge::GRAPH_SUCCESS;
  }
};
// Throws from a ParallelFor body (on the pool's threads too) through the SDK's wrapper.
class ThrowsInParallelFor : public Base<ThrowsInParallelFor> {
 public:
  ge::graphStatus Extra(gert::EagerOpExecutionContext* ctx, float*, float*, int64_t n) {
    return ctx->ParallelFor(n, 1, [](int64_t b, int64_t) {
      if (b >= 0) throw std::runtime_error("chunk failed on purpose");
    });
  }
};
// The same through the C host API directly, as a plugin built without the SDK's guard does:
// the exception reaches the engine's ParallelFor.
class ThrowsThroughRawParallelFor : public Base<ThrowsThroughRawParallelFor> {
 public:
  ge::graphStatus Extra(gert::EagerOpExecutionContext* ctx, float*, float*, int64_t n) {
    WeftKernelContext* c = ctx->raw();
    auto body = [](void*, int64_t, int64_t) { throw std::runtime_error("raw chunk failed on purpose"); };
    return c->api->parallel_for(c, n, 1, body, nullptr) == WEFT_STATUS_OK ? ge::GRAPH_SUCCESS : ge::GRAPH_FAILED;
  }
};
// A well-behaved stateful op: y = the sum of every x this run context has seen (its state, kept
// in the per-context block). Plugin checking may run a step twice; the state must advance once.
class RunningSum : public ge::EagerExecuteOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    gert::Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), ge::DT_FLOAT);
    if (y == nullptr) return ge::GRAPH_FAILED;
    int64_t n = x->GetShapeSize();
    auto* sum = static_cast<float*>(ctx->GetHostArgs(static_cast<size_t>(n) * sizeof(float)));
    if (sum == nullptr) return ge::GRAPH_FAILED;
    for (int64_t i = 0; i < n; ++i) y->GetData<float>()[i] = sum[i] += x->GetData<float>()[i];
    return ge::GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(RunningSum);
REG_AUTO_MAPPING_OP(GoodCopy);
REG_AUTO_MAPPING_OP(OverrunOutput);
REG_AUTO_MAPPING_OP(NeverWrites);
REG_AUTO_MAPPING_OP(HalfWrites);
REG_AUTO_MAPPING_OP(WritesInput);
REG_AUTO_MAPPING_OP(OverrunWorkspace);
REG_AUTO_MAPPING_OP(ThrowsInParallelFor);
REG_AUTO_MAPPING_OP(ThrowsThroughRawParallelFor);
