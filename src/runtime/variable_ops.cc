// ReadVariable and AssignVariable: variables that live in the run context, as LiteRT's resource
// variables do in its interpreter (VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE, set up by a
// CALL_ONCE subgraph; the LiteRT importer turns them into these). A variable is named by the
// attribute `variable`; until something assigns it in a run context it holds `initial`. Values
// carry from run to run of one context; RunContext::ResetState() (Python: reset_state()) returns
// every variable to its initial value, and a context created for another input shape shares its
// parent's variables. Both ask for per-context memory, so neither is ever constant-folded.
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "weft/custom_op.h"

namespace weft::ops {
namespace {

using internal::CallState;

CallState* StateOf(const KernelContextBase* ctx) { return static_cast<CallState*>(ctx->raw()->engine); }

graphStatus Fail(const KernelContextBase* ctx, const std::string& msg) {
  ctx->SetError(std::string(ctx->GetNodeType()) + ": " + msg);
  return GRAPH_FAILED;
}

// The attribute `initial`, or nullptr with the error set.
const Tensor* Initial(const KernelContextBase* ctx) {
  const Tensor* t = ctx->GetAttrs()->GetTensor("initial");
  if (!t) Fail(ctx, "needs the attribute 'initial' (a tensor)");
  return t;
}

// The variable's name and initial value.
bool Declared(const KernelContextBase* ctx, std::string* name, const Tensor** initial) {
  const char* n = ctx->GetAttrs()->GetAttrPointer<char>("variable");
  *initial = ctx->GetAttrs()->GetTensor("initial");
  if (!n || !*n || !*initial) return Fail(ctx, "needs the attributes 'variable' (a name) and 'initial' (a tensor)"), false;
  *name = n;
  return true;
}

// The context's store, or nullptr (with the error set) outside a compiled model's run.
std::map<std::string, std::vector<uint8_t>>* Store(EagerOpExecutionContext* ctx) {
  // Per-context memory: marks the node as stateful (never folded) and fails outside a run.
  if (!ctx->GetHostArgs(1)) return nullptr;
  CallState* st = StateOf(ctx);
  if (!st || !st->variables || !*st->variables) {
    Fail(ctx, "variables exist only in a compiled model's run context");
    return nullptr;
  }
  return st->variables->get();
}

// weft aot: a variable is state the module's context holds, shared by the nodes that read and
// assign it: a flag (0 after <prefix>_init: the initial value holds) and the value's bytes.
std::string SharedMembers(size_t bytes) { return "int32_t assigned;\nuint8_t value[" + std::to_string(bytes ? bytes : 1) + "];\n"; }
std::string SharedKey(const std::string& name) { return "variable:" + name; }

class ReadVariable : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The assigned value, or the initial one (a constant).
  graphStatus Emit(EmitContext* ctx) override {
    std::string name;
    const Tensor* initial;
    if (!Declared(ctx, &name, &initial)) return GRAPH_FAILED;
    const size_t bytes = initial->GetSize();
    ctx->DeclareSharedState(SharedKey(name), SharedMembers(bytes));
    if (!bytes) return GRAPH_SUCCESS;
    const std::string init = ctx->Const("initial", DT_UINT8, initial->GetAddr(), bytes);
    ctx->Include("<string.h>");
    ctx->Run("memcpy(" + ctx->Output(0, "uint8_t") + ", " + ctx->State() + "->assigned ? " + ctx->State() + "->value : " + init + ", " +
             std::to_string(bytes) + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    std::string name;
    const Tensor* initial;
    if (!Declared(ctx, &name, &initial)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = initial->GetShape();
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const Tensor* initial = Initial(ctx);
    return initial ? ctx->SetOutputDataType(0, initial->GetDataType()) : GRAPH_FAILED;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    std::string name;
    const Tensor* initial;
    if (!Declared(ctx, &name, &initial)) return GRAPH_FAILED;
    auto* store = Store(ctx);
    if (!store) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, initial->GetShape(), initial->GetDataType());
    if (!y) return GRAPH_FAILED;
    const size_t bytes = y->GetSize();
    auto it = store->find(name);
    const void* src = it == store->end() ? initial->GetAddr() : it->second.data();
    if (it != store->end() && it->second.size() != bytes) return Fail(ctx, "variable '" + name + "' holds a value of another size");
    if (bytes) std::memcpy(y->GetAddr(), src, bytes);
    return GRAPH_SUCCESS;
  }
};

// AssignVariable(value, after...) -> done: stores value as the variable's value (of `dtype` and
// `shape`); `after` (the reads and the assignment before it that must see the old value) only
// orders it. `done` is a bool scalar: the compiler keeps the node for its effect.
class AssignVariable : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    std::string name;
    DataType t;
    Shape shape;
    if (!Declared(ctx, &name, &t, &shape)) return GRAPH_FAILED;
    const size_t bytes = static_cast<size_t>(shape.GetShapeSize()) * DataTypeSize(t);
    ctx->DeclareSharedState(SharedKey(name), SharedMembers(bytes));
    ctx->Include("<string.h>");
    if (bytes) ctx->Run("memcpy(" + ctx->State() + "->value, " + ctx->Input(0, "uint8_t") + ", " + std::to_string(bytes) + ");\n");
    ctx->Run(ctx->State() + "->assigned = 1;\n*" + ctx->Output(0, "uint8_t") + " = 1;\n");
    return GRAPH_SUCCESS;
  }
  static bool Declared(const KernelContextBase* ctx, std::string* name, DataType* dtype, Shape* shape) {
    const char* n = ctx->GetAttrs()->GetAttrPointer<char>("variable");
    const DataType* t = ctx->GetAttrs()->GetAttrPointer<DataType>("dtype");
    ListView<int64_t> dims = ctx->GetAttrs()->GetListInt("shape");
    if (!n || !*n || !t) return Fail(ctx, "needs the attributes 'variable' (a name), 'dtype' and 'shape'"), false;
    *name = n, *dtype = *t;
    if (dims.size() > WEFT_MAX_DIMS)
      return Fail(ctx, "its 'shape' has " + std::to_string(dims.size()) + " dims; tensors have at most " + std::to_string(WEFT_MAX_DIMS)), false;
    *shape = Shape();
    for (size_t d = 0; d < dims.size(); ++d) shape->AppendDim(dims[d]);
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    std::string name;
    DataType t;
    Shape shape;
    if (!Declared(ctx, &name, &t, &shape)) return GRAPH_FAILED;
    const Shape& v = *ctx->GetInputShape(0);
    if (v != shape) return Fail(ctx, "variable '" + name + "' is " + shape.ToString() + "; the value assigned is " + v.ToString());
    *ctx->GetOutputShape(0) = Shape();
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    std::string name;
    DataType t;
    Shape shape;
    if (!Declared(ctx, &name, &t, &shape)) return GRAPH_FAILED;
    if (ctx->GetInputDataType(0) != t)
      return Fail(ctx, std::string("the value assigned is ") + DataTypeName(ctx->GetInputDataType(0)) + "; the variable is " + DataTypeName(t));
    return ctx->SetOutputDataType(0, DT_BOOL);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    std::string name;
    DataType t;
    Shape shape;
    if (!Declared(ctx, &name, &t, &shape)) return GRAPH_FAILED;
    auto* store = Store(ctx);
    if (!store) return GRAPH_FAILED;
    const Tensor* v = ctx->GetInputTensor(0);
    if (v->GetShape() != shape || v->GetDataType() != t)
      return Fail(ctx, "variable '" + name + "' is " + shape.ToString() + "; the value assigned is " + v->GetShape().ToString());
    auto* bytes = static_cast<const uint8_t*>(v->GetAddr());
    (*store)[name].assign(bytes, bytes + v->GetSize());
    Tensor* done = ctx->MallocOutputTensor(0, Shape(), DT_BOOL);
    if (!done) return GRAPH_FAILED;
    *done->GetData<bool>() = true;
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_variable(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("ReadVariable")
                     .OUTPUT(value, TensorType::ALL())
                     .REQUIRED_ATTR(variable, String)
                     .REQUIRED_ATTR(initial, Tensor)
                     .Build(),
                 MakeOpImpl<ReadVariable>("ReadVariable")});
  out.push_back({OpDefBuilder("AssignVariable")
                     .INPUT(value, TensorType::ALL())
                     .DYNAMIC_INPUT(after, TensorType::ALL())
                     .OUTPUT(done, TensorType({DT_BOOL}))
                     .REQUIRED_ATTR(variable, String)
                     .REQUIRED_ATTR(dtype, Type)
                     .REQUIRED_ATTR(shape, ListInt)
                     .Build(),
                 MakeOpImpl<AssignVariable>("AssignVariable")});
}

}  // namespace weft::ops
