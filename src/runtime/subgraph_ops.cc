// Loop and Scan: the engine's ops that run a subgraph, the node's "body" attribute (the JSON
// graph format with inline constants, as Graph::ToJsonText writes it). The body is compiled with
// the ops of the session that compiled or loaded the model, for the types and shapes of the
// values bound to its inputs (what it declares for them is not used), once per distinct set of
// shapes. A body that reads values of the enclosing graph gets them as extra inputs ("captures",
// the importer's work), so a body is a graph of its own.
//
//   Loop(M?, cond?, v_initial..., captures...) -> (v_final..., scan_outputs...)
//     body(iter_num: int64 [], cond: bool [], v..., captures...) -> (cond, v..., scan slices...)
//     Runs while iter_num < M (when M is given) and cond holds (when cond is given); each scan
//     output stacks its per-iteration slices along a new axis 0.
//   Scan(states..., scan_inputs..., captures...) -> (final_states..., scan_outputs...)
//     body(states..., one slice of each scan input, captures...) -> (states..., output slices...)
//     Iterates over each scan input's axis (scan_input_axes, scan_input_directions: 1 reverses),
//     stacking slices along scan_output_axes (scan_output_directions: 1 prepends). batch_major
//     (ONNX Scan 8) adds a leading batch axis to every state and scan tensor, iterated outside.
//
// Output shapes are known when compiling where the body keeps each loop-carried shape and the
// iteration count is known (a constant M with no condition that can stop the loop early);
// otherwise the model infers them as it runs and the op places those outputs itself.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compile/compiler.h"
#include "runtime/engine.h"
#include "weft/custom_op.h"
#include "weft/sequence.h"

namespace weft::internal {

Expected<Graph> GraphFromInlineJson(const std::string& text);

namespace {

constexpr size_t kMaxCachedBodies = 16;
constexpr int64_t kMaxIterations = int64_t(1) << 40;  // Loop with neither M nor cond is an error anyway

graphStatus Fail(const KernelContextBase* ctx, const std::string& msg) {
  ctx->SetError(std::string(ctx->GetNodeType()) + ": " + msg);
  return GRAPH_FAILED;
}

CallState* StateOf(const KernelContextBase* ctx) { return static_cast<CallState*>(ctx->raw()->engine); }

std::string Signature(const std::vector<ValueInfo>& ins) {
  std::string sig;
  for (auto& v : ins) {
    sig += std::to_string(v.dtype) + ":";
    for (size_t d = 0; d < v.shape.GetDimNum(); ++d) sig += std::to_string(v.shape.GetDim(d)) + ",";
    sig += ";";
  }
  return sig;
}

// The body of one node: parsed once, compiled per distinct input signature.
class Body {
 public:
  // The first callback at compile or load time keeps the session's ops and settings.
  graphStatus Bind(const KernelContextBase* ctx) {
    std::lock_guard<std::mutex> l(mu_);
    if (parsed_) return GRAPH_SUCCESS;
    CallState* st = StateOf(ctx);
    if (!st || !st->registry) return Fail(ctx, "the body can only be prepared while the model is compiled or loaded");
    const char* text = ctx->GetAttrs()->GetAttrPointer<char>("body");
    if (!text) return Fail(ctx, "needs the attribute 'body' (a graph in Weft's JSON format)");
    auto g = GraphFromInlineJson(text);
    if (!g.ok()) return Fail(ctx, "attribute 'body': " + g.status().message());
    graph_ = std::make_unique<Graph>(std::move(g).value());
    registry_ = std::make_shared<const OpRegistry>(*st->registry);
    // The env outlives the model (the model holds it), and this object lives inside the model.
    env_ = std::shared_ptr<const EngineEnv>(std::shared_ptr<const EngineEnv>(), st->env);
    parsed_ = true;
    return GRAPH_SUCCESS;
  }
  size_t num_inputs() const { return graph_->inputs().size(); }
  size_t num_outputs() const { return graph_->outputs().size(); }

  // The body compiled for inputs of these types and shapes; null after recording an error.
  std::shared_ptr<const CompiledModel> Get(const KernelContextBase* ctx, const std::vector<ValueInfo>& given) {
    // A sequence or optional input is compiled for any size (its size follows its contents, which
    // a carried sequence changes every iteration): one plan serves them all.
    std::vector<ValueInfo> ins = given;
    for (auto& v : ins)
      if (IsSequenceType(v.dtype) || IsOptionalType(v.dtype)) v.shape = Shape({-1});
    std::string sig = Signature(ins);
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = plans_.find(sig); it != plans_.end()) return it->second;
    if (ins.size() != graph_->inputs().size()) {
      Fail(ctx, "the body takes " + std::to_string(graph_->inputs().size()) + " inputs; the node binds " + std::to_string(ins.size()));
      return nullptr;
    }
    Graph g(graph_->name());
    for (size_t k = 0; k < ins.size(); ++k) g.AddInput(graph_->inputs()[k].name, ins[k].dtype, ins[k].shape);
    for (auto& [name, t] : graph_->constants()) g.AddConstant(name, t);
    for (auto& n : graph_->nodes()) g.AddNode(n);
    for (auto& o : graph_->outputs()) g.AddOutput(o);
    auto r = CompileGraph(g, *registry_, env_);
    if (!r.ok()) {
      Fail(ctx, "compiling the body '" + graph_->name() + "': " + r.status().message());
      return nullptr;
    }
    std::shared_ptr<const CompiledModel> m = std::move(r).value();
    if (plans_.size() < kMaxCachedBodies) plans_[sig] = m;
    return m;
  }

  const std::string& name() const { return graph_->name(); }
  // Names of the body's outputs, for messages.
  const std::string& output_name(size_t k) const { return graph_->outputs()[k]; }
  // True when body output `out` is body input `in` passed through (directly or by Identity).
  bool PassesThrough(size_t out, size_t in) const {
    std::string name = graph_->outputs()[out];
    for (int hops = 0; hops < 64; ++hops) {
      if (name == graph_->inputs()[in].name) return true;
      const Node* producer = nullptr;
      for (auto& n : graph_->nodes())
        for (auto& o : n.outputs)
          if (o == name) producer = &n;
      if (!producer || producer->op_type != "Identity" || producer->inputs.size() != 1) return false;
      name = producer->inputs[0];
    }
    return false;
  }
  // True when body output `out` is a constant holding true.
  bool ConstantTrue(size_t out) const {
    for (auto& [name, t] : graph_->constants())
      if (name == graph_->outputs()[out])
        return t.dtype() == DT_BOOL && t.shape().GetShapeSize() == 1 && *static_cast<const uint8_t*>(t.data()) != 0;
    return false;
  }

 private:
  std::mutex mu_;
  bool parsed_ = false;
  std::unique_ptr<Graph> graph_;
  std::shared_ptr<const OpRegistry> registry_;
  std::shared_ptr<const EngineEnv> env_;
  std::map<std::string, std::shared_ptr<const CompiledModel>> plans_;
};

ValueInfo InfoOf(const Tensor* t) { return {"", t->GetDataType(), t->GetShape()}; }

// A tensor owned by the op while it iterates.
struct Buffer {
  DataType dtype = DT_UNDEFINED;
  Shape shape;
  std::vector<uint8_t> bytes;
  void Set(DataType dt, const Shape& s, const void* data, size_t n) {
    dtype = dt;
    shape = s;
    bytes.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + n);
  }
  TensorRef Ref() { return {dtype, shape, bytes.empty() ? nullptr : bytes.data(), bytes.size()}; }
};

TensorRef RefOf(const Tensor* t) { return {t->GetDataType(), t->GetShape(), const_cast<void*>(t->GetAddr()), t->GetByteCount()}; }

// Per-iteration slices stacked along `axis` of the result (a new axis), in iteration order or
// reversed.
struct Stack {
  DataType dtype = DT_UNDEFINED;
  Shape slice;
  std::vector<std::vector<uint8_t>> parts;
  // `extra`: dims the result adds besides the stacking axis (Scan's batch axis).
  bool Add(const TensorRef& r, std::string* why, size_t extra = 0) {
    if (parts.empty()) {
      if (static_cast<size_t>(r.shape.ndim) + 1 + extra > WEFT_MAX_DIMS) {
        *why = "a scan output of rank " + std::to_string(r.shape.ndim) + " would be stacked into rank " +
               std::to_string(r.shape.ndim + 1 + static_cast<int64_t>(extra)) + "; tensors have at most " + std::to_string(WEFT_MAX_DIMS) + " dims";
        return false;
      }
      dtype = r.dtype;
      slice = r.shape;
    } else if (r.shape != slice || r.dtype != dtype) {
      *why = "a scan output changed from " + slice.ToString() + " to " + r.shape.ToString() + " between iterations";
      return false;
    }
    parts.emplace_back(static_cast<const uint8_t*>(r.data), static_cast<const uint8_t*>(r.data) + r.bytes);
    return true;
  }
  Shape Stacked(int64_t axis) const {
    Shape s;
    for (size_t d = 0; d <= slice.GetDimNum(); ++d) {
      if (static_cast<int64_t>(d) == axis) s.AppendDim(static_cast<int64_t>(parts.size()));
      if (d < slice.GetDimNum()) s.AppendDim(slice.GetDim(d));
    }
    return s;
  }
  // Writes the stacked tensor: [outer, n, inner] with outer = prod(slice[:axis]).
  void Write(uint8_t* dst, int64_t axis, bool reverse) const {
    if (parts.empty()) return;
    size_t elem = DataTypeSize(dtype);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= slice.GetDim(static_cast<size_t>(d));
    size_t inner = parts[0].size() / static_cast<size_t>(std::max<int64_t>(outer, 1));
    if (outer == 0) return;
    (void)elem;
    size_t n = parts.size();
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < n; ++i) {
        const auto& p = parts[reverse ? n - 1 - i : i];
        std::memcpy(dst + (static_cast<size_t>(o) * n + i) * inner, p.data() + static_cast<size_t>(o) * inner, inner);
      }
  }
};

Status RunBody(const CompiledModel& body, RunContext& rc, const std::vector<TensorRef>& ins, std::vector<TensorRef>* outs) {
  auto r = body.RunViews(rc, ins.data(), ins.size());
  if (!r.ok()) return r.status();
  *outs = std::move(r).value();
  return Status::Ok();
}

// weft aot: writes a body compiled for fixed shapes into the module being generated as a module of
// its own, <node id>_body (EmitSink::EmbedModel); its prefix and its arena's bytes, rounded up to 16.
graphStatus EmbedBody(const EmitContext* ctx, const Body& body, const CompiledModel& model, std::string* prefix, uint64_t* arena) {
  CallState* st = StateOf(ctx);
  if (!st || !st->emit) return Fail(ctx, "Emit called outside weft aot");
  *prefix = ctx->NodeId() + "_body";
  Status es = st->emit->EmbedModel(model, *prefix, arena);
  if (!es.ok()) return Fail(ctx, "the body '" + body.name() + "': " + es.message());
  *arena = (*arena + 15) / 16 * 16;
  return GRAPH_SUCCESS;
}

// Places values of these byte sizes one after another, each at a multiple of 16: their offsets,
// and the bytes in all.
uint64_t Staging(const std::vector<uint64_t>& bytes, std::vector<uint64_t>* offset) {
  uint64_t at = 0;
  for (uint64_t b : bytes) offset->push_back(at), at += (b + 15) / 16 * 16;
  return at;
}

// ---- Loop -------------------------------------------------------------------------------------

class Loop : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  struct Counts {
    size_t has_m, has_cond, carried, captures, scans;
  };
  static graphStatus GetCounts(const KernelContextBase* ctx, Body& body, Counts* c) {
    c->has_m = ctx->GetIrInputInstanceNum(0);
    c->has_cond = ctx->GetIrInputInstanceNum(1);
    c->carried = ctx->GetIrInputInstanceNum(2);
    c->captures = ctx->GetIrInputInstanceNum(3);
    if (ctx->GetIrOutputInstanceNum(0) != c->carried)
      return Fail(ctx, std::to_string(c->carried) + " loop-carried inputs but " + std::to_string(ctx->GetIrOutputInstanceNum(0)) +
                           " final values");
    c->scans = ctx->GetIrOutputInstanceNum(1);
    if (body.num_inputs() != 2 + c->carried + c->captures)
      return Fail(ctx, "the body takes " + std::to_string(body.num_inputs()) + " inputs; it needs iteration number, condition, " +
                           std::to_string(c->carried) + " loop-carried and " + std::to_string(c->captures) + " captured values");
    if (body.num_outputs() != 1 + c->carried + c->scans)
      return Fail(ctx, "the body gives " + std::to_string(body.num_outputs()) + " outputs; it needs the condition, " +
                           std::to_string(c->carried) + " loop-carried values and " + std::to_string(c->scans) + " scan outputs");
    return GRAPH_SUCCESS;
  }
  std::vector<ValueInfo> BodyInputs(const KernelContextBase* ctx, const Counts& c, const std::vector<ValueInfo>* carried) {
    std::vector<ValueInfo> v{{"", DT_INT64, Shape()}, {"", DT_BOOL, Shape()}};
    size_t first = c.has_m + c.has_cond;
    for (size_t k = 0; k < c.carried; ++k) v.push_back(carried ? (*carried)[k] : InfoOf(ctx->GetInputTensor(first + k)));
    for (size_t k = 0; k < c.captures; ++k) v.push_back(InfoOf(ctx->GetInputTensor(first + c.carried + k)));
    return v;
  }
  // The trip count when known now: M given (value known) and no condition that can stop early.
  int64_t KnownTrips(const KernelContextBase* ctx, const Counts& c) {
    if (!c.has_m) return -1;
    const Tensor* m = ctx->GetInputTensor(0);
    if (!m->GetAddr() || m->GetShape().GetShapeSize() != 1) return -1;
    int64_t trips = std::max<int64_t>(0, m->GetData<int64_t>()[0]);
    if (c.has_cond) {
      const Tensor* cond = ctx->GetInputTensor(c.has_m);
      if (!cond->GetAddr()) return -1;
      if (!cond->GetData<uint8_t>()[0]) return 0;
      if (!body_.PassesThrough(0, 1) && !body_.ConstantTrue(0)) return -1;
    }
    return trips;
  }

  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (body_.Bind(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Counts c;
    if (GetCounts(ctx, body_, &c) != GRAPH_SUCCESS) return GRAPH_FAILED;
    size_t first = c.has_m + c.has_cond;
    bool optional_in = false;
    for (size_t k = 0; k < c.carried; ++k) {
      ctx->SetOutputDataType(k, ctx->GetInputDataType(first + k));
      optional_in |= IsOptionalType(ctx->GetInputDataType(first + k));
    }
    if (c.scans == 0 && !optional_in) return GRAPH_SUCCESS;
    auto model = body_.Get(ctx, BodyInputs(ctx, c, nullptr));
    if (!model) return GRAPH_FAILED;
    // A value carried in as optional(X) that the body gives back as X is X from then on.
    for (size_t k = 0; k < c.carried; ++k) {
      DataType in = ctx->GetInputDataType(first + k), out = model->outputs()[1 + k].dtype;
      if (IsOptionalType(in) && ElementTypeOf(in) == out) ctx->SetOutputDataType(k, out);
    }
    for (size_t k = 0; k < c.scans; ++k) ctx->SetOutputDataType(c.carried + k, model->outputs()[1 + c.carried + k].dtype);
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(InferShapeContext* ctx) override {
    if (body_.Bind(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Counts c;
    if (GetCounts(ctx, body_, &c) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (c.has_m && ctx->GetInputTensor(0)->GetShape().GetShapeSize() != 1)
      return Fail(ctx, "M, the trip count, must hold one element; it has shape " + ctx->GetInputTensor(0)->GetShape().ToString());
    if (c.has_cond && ctx->GetInputTensor(c.has_m)->GetShape().GetShapeSize() != 1)
      return Fail(ctx, "cond must hold one element; it has shape " + ctx->GetInputTensor(c.has_m)->GetShape().ToString());
    std::vector<ValueInfo> ins = BodyInputs(ctx, c, nullptr);
    for (auto& v : ins)
      if (v.shape.IsUnknown()) {  // known when it runs
        for (size_t k = 0; k < c.carried + c.scans; ++k) *ctx->GetOutputShape(k) = Shape({-1});
        return GRAPH_SUCCESS;
      }
    auto model = body_.Get(ctx, ins);
    if (!model) return GRAPH_FAILED;
    int64_t trips = KnownTrips(ctx, c);
    bool stable = !model->has_dynamic_shapes();
    for (size_t k = 0; stable && k < c.carried; ++k) stable = model->outputs()[1 + k].shape == ins[2 + k].shape;
    for (size_t k = 0; k < c.carried; ++k)
      *ctx->GetOutputShape(k) = stable || trips == 0 ? ins[2 + k].shape : Shape({-1});
    for (size_t k = 0; k < c.scans; ++k) {
      Shape s;
      const Shape& out_slice = model->outputs()[1 + c.carried + k].shape;
      if (out_slice.GetDimNum() + 1 > WEFT_MAX_DIMS)
        return Fail(ctx, "scan output " + std::to_string(k) + " ('" + body_.output_name(1 + c.carried + k) + "') has rank " +
                             std::to_string(out_slice.GetDimNum()) + "; stacked over the iterations it would have " +
                             std::to_string(out_slice.GetDimNum() + 1) + " dims, and tensors have at most " + std::to_string(WEFT_MAX_DIMS));
      if (stable && trips >= 0) {
        s.AppendDim(trips);
        for (size_t d = 0; d < out_slice.GetDimNum(); ++d) s.AppendDim(out_slice.GetDim(d));
      } else {
        s = Shape({-1});
      }
      *ctx->GetOutputShape(c.carried + k) = s;
    }
    return GRAPH_SUCCESS;
  }

  // In C: the body is a module of its own inside this one (EmitSink::EmbedModel), its context a
  // local of the run function and its arena this node's scratch. Loop-carried values go from the
  // body's outputs back to its inputs through a staging area (an output may be another input);
  // scan outputs are written into place each iteration. The shapes must be those planned: a loop
  // with scan outputs that runs a different number of times than its output holds fails the run
  // (status 1), as does the body's own failure (its custom codes pass through unchanged).
  graphStatus Emit(EmitContext* ctx) override {
    if (body_.Bind(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Counts c;
    if (GetCounts(ctx, body_, &c) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (!c.has_m && !c.has_cond) return Fail(ctx, "has neither a trip count (M) nor a condition: it would never end");
    const std::vector<ValueInfo> ins = BodyInputs(ctx, c, nullptr);
    auto model = body_.Get(ctx, ins);
    if (!model) return GRAPH_FAILED;
    if (model->has_dynamic_shapes()) return Fail(ctx, "the body has shapes known only at run time; a C module needs them fixed");
    if (model->outputs()[0].dtype != DT_BOOL || model->outputs()[0].shape.GetShapeSize() != 1)
      return Fail(ctx, "the body's condition output must be one bool");
    std::vector<uint64_t> bytes(c.carried), offset;
    for (size_t k = 0; k < c.carried; ++k) {
      const ValueInfo& o = model->outputs()[1 + k];
      if (o.dtype != ins[2 + k].dtype || o.shape != ins[2 + k].shape)
        return Fail(ctx, "loop-carried value " + std::to_string(k) + " ('" + body_.output_name(1 + k) + "') goes from " +
                             DataTypeName(ins[2 + k].dtype) + ins[2 + k].shape.ToString() + " to " + DataTypeName(o.dtype) + o.shape.ToString() +
                             " in one iteration; a C module needs it fixed");
      bytes[k] = static_cast<uint64_t>(o.shape.GetShapeSize()) * DataTypeSize(o.dtype);
    }
    const uint64_t staging = Staging(bytes, &offset);
    int64_t planned = -1;
    std::vector<uint64_t> slice(c.scans);
    for (size_t k = 0; k < c.scans; ++k) {
      const Tensor* y = ctx->GetOutputTensor(c.carried + k);
      const ValueInfo& o = model->outputs()[1 + c.carried + k];
      planned = y->GetShape().GetDimNum() ? y->GetShape().GetDim(0) : -1;
      slice[k] = static_cast<uint64_t>(o.shape.GetShapeSize()) * DataTypeSize(o.dtype);
      if (planned < 0 || y->GetByteCount() != static_cast<size_t>(planned) * slice[k])
        return Fail(ctx, "scan output " + std::to_string(k) + " has no fixed size; a C module needs the trip count known ahead of time");
    }
    std::string B;
    uint64_t arena = 0;
    if (EmbedBody(ctx, body_, *model, &B, &arena) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const std::string scratch = ctx->Scratch(std::max<uint64_t>(arena + staging, 16));
    auto in_ptr = [&](size_t k) { return "b.tensor_ptrs[" + B + "_inputs[" + std::to_string(k) + "].index]"; };
    auto out_ptr = [&](size_t k) { return "b.tensor_ptrs[" + B + "_outputs[" + std::to_string(k) + "].index]"; };
    const size_t first = c.has_m + c.has_cond;
    std::string code = "{\n  " + B + "_context b;\n  uint8_t* const arena = (uint8_t*)(void*)" + scratch + ";\n  uint8_t* const carry = arena + " +
                       std::to_string(arena) + "u;\n  const int64_t trips = " +
                       (c.has_m ? "*" + ctx->Input(0, "int64_t") : std::string("INT64_C(") + std::to_string(kMaxIterations) + ")") +
                       ";\n  int cond = " + (c.has_cond ? "*" + ctx->Input(c.has_m, "uint8_t") + " != 0" : std::string("1")) +
                       ";\n  int64_t it;\n  int32_t s;\n  (void)carry;\n  memset(&b, 0, sizeof b);\n  s = " + B + "_init(&b, arena, " + B +
                       "_ARENA_BYTES);\n  if (s) return s;\n";
    for (size_t k = 0; k < c.carried + c.captures; ++k) {
      const Tensor* t = ctx->GetInputTensor(first + k);
      if (t->GetByteCount())
        code += "  memcpy(" + in_ptr(2 + k) + ", " + ctx->Input(first + k, "uint8_t") + ", " + std::to_string(t->GetByteCount()) + "u);\n";
    }
    code += "  for (it = 0; it < trips && cond; ++it) {\n    *(int64_t*)" + in_ptr(0) + " = it;\n    *(uint8_t*)" + in_ptr(1) +
            " = (uint8_t)cond;\n    s = " + B + "_run(&b);\n    if (s) return s;\n";
    if (c.has_cond) code += "    cond = *(const uint8_t*)" + out_ptr(0) + " != 0;\n";
    for (size_t k = 0; k < c.scans; ++k) {
      if (k == 0) code += "    if (it >= " + std::to_string(planned) + ") return 1; /* more iterations than the planned output holds */\n";
      if (slice[k])
        code += "    memcpy(" + ctx->Output(c.carried + k, "uint8_t") + " + it * " + std::to_string(slice[k]) + ", " + out_ptr(1 + c.carried + k) + ", " +
                std::to_string(slice[k]) + "u);\n";
    }
    for (size_t k = 0; k < c.carried; ++k)
      if (bytes[k]) code += "    memcpy(carry + " + std::to_string(offset[k]) + ", " + out_ptr(1 + k) + ", " + std::to_string(bytes[k]) + "u);\n";
    for (size_t k = 0; k < c.carried; ++k)
      if (bytes[k]) code += "    memcpy(" + in_ptr(2 + k) + ", carry + " + std::to_string(offset[k]) + ", " + std::to_string(bytes[k]) + "u);\n";
    code += "  }\n";
    if (c.scans) code += "  if (it != " + std::to_string(planned) + ") return 1; /* fewer iterations than the planned output holds */\n";
    for (size_t k = 0; k < c.carried; ++k)
      if (bytes[k]) code += "  memcpy(" + ctx->Output(k, "uint8_t") + ", " + in_ptr(2 + k) + ", " + std::to_string(bytes[k]) + "u);\n";
    ctx->Include("<string.h>");
    ctx->Run(code + "}\n");
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Counts c;
    if (GetCounts(ctx, body_, &c) != GRAPH_SUCCESS) return GRAPH_FAILED;
    int64_t max_trips = c.has_m ? ctx->GetInputTensor(0)->GetData<int64_t>()[0] : kMaxIterations;
    bool cond = c.has_cond ? ctx->GetInputTensor(c.has_m)->GetData<uint8_t>()[0] != 0 : true;
    if (!c.has_m && !c.has_cond) return Fail(ctx, "has neither a trip count (M) nor a condition: it would never end");
    size_t first = c.has_m + c.has_cond;
    std::vector<Buffer> carried(c.carried);
    for (size_t k = 0; k < c.carried; ++k) {
      const Tensor* t = ctx->GetInputTensor(first + k);
      carried[k].Set(t->GetDataType(), t->GetShape(), t->GetAddr(), t->GetByteCount());
    }
    std::vector<Stack> scans(c.scans);
    int64_t iter = 0;
    uint8_t cond_byte = 1;
    // The body a context was made for, held: a plan the cache does not keep must outlive its context
    // (declared first, so it is released after it), and a new plan at a freed one's address must
    // not reuse that context.
    std::shared_ptr<const CompiledModel> last;
    std::unique_ptr<RunContext> rc;
    std::vector<TensorRef> ins(2 + c.carried + c.captures), outs;
    std::vector<Buffer> updated(c.carried);  // the next values; after the swap, last pass's buffers to reuse
    for (; iter < max_trips && (!c.has_cond || cond); ++iter) {
      std::vector<ValueInfo> info{{"", DT_INT64, Shape()}, {"", DT_BOOL, Shape()}};
      for (auto& b : carried) info.push_back({"", b.dtype, b.shape});
      for (size_t k = 0; k < c.captures; ++k) info.push_back(InfoOf(ctx->GetInputTensor(first + c.carried + k)));
      auto model = body_.Get(ctx, info);
      if (!model) return GRAPH_FAILED;
      if (model != last) {
        rc = model->CreateRunContext();
        last = model;
      }
      cond_byte = cond ? 1 : 0;
      ins[0] = {DT_INT64, Shape(), &iter, sizeof(iter)};
      ins[1] = {DT_BOOL, Shape(), &cond_byte, 1};
      for (size_t k = 0; k < c.carried; ++k) ins[2 + k] = carried[k].Ref();
      for (size_t k = 0; k < c.captures; ++k) ins[2 + c.carried + k] = RefOf(ctx->GetInputTensor(first + c.carried + k));
      Status st = RunBody(*model, *rc, ins, &outs);
      if (!st.ok()) return Fail(ctx, "iteration " + std::to_string(iter) + ": " + st.message());
      if (outs[0].bytes < 1 || outs[0].dtype != DT_BOOL) return Fail(ctx, "the body's condition output must be one bool");
      bool next = *static_cast<const uint8_t*>(outs[0].data) != 0;
      // An output may be an input passed through (the carried values' own buffers): every output
      // is copied before any carried value is replaced.
      std::string why;
      for (size_t k = 0; k < c.scans; ++k)
        if (!scans[k].Add(outs[1 + c.carried + k], &why)) return Fail(ctx, "scan output '" + body_.output_name(1 + c.carried + k) + "': " + why);
      for (size_t k = 0; k < c.carried; ++k) {
        bool unwrapped = IsOptionalType(carried[k].dtype) && ElementTypeOf(carried[k].dtype) == outs[1 + k].dtype &&
                         outs[1 + k].dtype == ctx->GetOutputDataType(k);
        if (outs[1 + k].dtype != carried[k].dtype && !unwrapped)
          return Fail(ctx, "loop-carried value " + std::to_string(k) + " ('" + body_.output_name(1 + k) + "') changed type to " +
                               DataTypeName(outs[1 + k].dtype));
        updated[k].Set(outs[1 + k].dtype, outs[1 + k].shape, outs[1 + k].data, outs[1 + k].bytes);
      }
      carried.swap(updated);
      cond = next;
    }
    for (size_t k = 0; k < c.carried; ++k) {
      if (carried[k].dtype != ctx->GetOutputDataType(k)) {  // still optional(X) (no iteration ran): X, if it holds one
        ValueView v;
        std::string why;
        if (!v.Parse(carried[k].bytes.data(), carried[k].bytes.size(), carried[k].dtype, &why)) return Fail(ctx, why);
        if (v.size() == 0) return Fail(ctx, "loop-carried value " + std::to_string(k) + " is an empty optional after no iterations");
        Buffer b;
        b.Set(v[0].dtype, v[0].shape, v[0].data, v[0].nbytes);
        carried[k] = std::move(b);
      }
      Tensor* y = ctx->MallocOutputTensor(k, carried[k].shape, carried[k].dtype);
      if (!y) return GRAPH_FAILED;
      if (!carried[k].bytes.empty()) std::memcpy(y->GetAddr(), carried[k].bytes.data(), carried[k].bytes.size());
    }
    for (size_t k = 0; k < c.scans; ++k) {
      Stack& s = scans[k];
      if (s.parts.empty()) {  // no iteration ran: [0] plus the slice shape the body would give, if known
        s.dtype = ctx->GetOutputDataType(c.carried + k);
        const Shape& planned = ctx->GetOutputTensor(c.carried + k)->GetShape();
        for (size_t d = 1; d < planned.GetDimNum(); ++d) s.slice.AppendDim(std::max<int64_t>(planned.GetDim(d), 0));
      }
      Tensor* y = ctx->MallocOutputTensor(c.carried + k, s.Stacked(0), s.dtype);
      if (!y) return GRAPH_FAILED;
      s.Write(static_cast<uint8_t*>(y->GetAddr()), 0, false);
    }
    return GRAPH_SUCCESS;
  }

 private:
  Body body_;
};

// ---- Scan -------------------------------------------------------------------------------------

class Scan : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  struct Layout {
    size_t states, scans, captures, outs;
    std::vector<int64_t> in_axes, in_rev, out_axes, out_rev;
    bool batch = false;
  };
  graphStatus GetLayout(const KernelContextBase* ctx, Layout* l) {
    l->states = ctx->GetIrInputInstanceNum(0);
    l->scans = ctx->GetIrInputInstanceNum(1);
    l->captures = ctx->GetIrInputInstanceNum(2);
    if (ctx->GetIrOutputInstanceNum(0) != l->states)
      return Fail(ctx, std::to_string(l->states) + " state inputs but " + std::to_string(ctx->GetIrOutputInstanceNum(0)) + " final states");
    l->outs = ctx->GetIrOutputInstanceNum(1);
    if (l->scans == 0) return Fail(ctx, "needs at least one scan input");
    if (body_.num_inputs() != l->states + l->scans + l->captures)
      return Fail(ctx, "the body takes " + std::to_string(body_.num_inputs()) + " inputs; the node binds " +
                           std::to_string(l->states) + " states, " + std::to_string(l->scans) + " scan inputs and " +
                           std::to_string(l->captures) + " captured values");
    if (body_.num_outputs() != l->states + l->outs)
      return Fail(ctx, "the body gives " + std::to_string(body_.num_outputs()) + " outputs; the node has " +
                           std::to_string(l->states + l->outs));
    const RuntimeAttrs* a = ctx->GetAttrs();
    l->batch = *a->GetAttrPointer<bool>("batch_major");
    auto list = [&](const char* name, size_t n, std::vector<int64_t>* out) -> graphStatus {
      const auto* v = a->GetAttrPointer<TypedContinuousVector<int64_t>>(name);
      out->assign(n, 0);
      if (!v || v->GetSize() == 0) return GRAPH_SUCCESS;
      if (v->GetSize() != n)
        return Fail(ctx, "attribute '" + std::string(name) + "' has " + std::to_string(v->GetSize()) + " entries; it needs " + std::to_string(n));
      for (size_t k = 0; k < n; ++k) (*out)[k] = v->GetData()[k];
      return GRAPH_SUCCESS;
    };
    if (list("scan_input_axes", l->scans, &l->in_axes) != GRAPH_SUCCESS || list("scan_input_directions", l->scans, &l->in_rev) != GRAPH_SUCCESS ||
        list("scan_output_axes", l->outs, &l->out_axes) != GRAPH_SUCCESS || list("scan_output_directions", l->outs, &l->out_rev) != GRAPH_SUCCESS)
      return GRAPH_FAILED;
    for (auto* dirs : {&l->in_rev, &l->out_rev})
      for (int64_t d : *dirs)
        if (d != 0 && d != 1) return Fail(ctx, "scan directions must be 0 (forward) or 1 (reverse), got " + std::to_string(d));
    size_t lead = l->batch ? 1 : 0;
    for (size_t k = 0; k < l->scans; ++k) {
      const Shape& s = ctx->GetInputTensor(l->states + k)->GetShape();
      int64_t r = static_cast<int64_t>(s.GetDimNum()) - static_cast<int64_t>(lead);
      int64_t ax = l->in_axes[k];
      if (ax < -r || ax >= r)
        return Fail(ctx, "scan_input_axes[" + std::to_string(k) + "] = " + std::to_string(ax) + " is out of range for scan input " +
                             s.ToString() + (l->batch ? " (after its batch axis)" : ""));
      l->in_axes[k] = (ax < 0 ? ax + r : ax) + static_cast<int64_t>(lead);
    }
    if (l->batch)
      for (size_t k = 0; k < l->states + l->scans; ++k)
        if (ctx->GetInputTensor(k)->GetShape().GetDimNum() < 1) return Fail(ctx, "with a batch axis every state and scan input needs rank >= 1");
    return GRAPH_SUCCESS;
  }
  // Shape of scan input k's slice (its scan axis removed; and the batch axis when batch_major).
  static Shape Slice(const Shape& s, int64_t axis, bool batch) {
    Shape out;
    for (size_t d = batch ? 1 : 0; d < s.GetDimNum(); ++d)
      if (static_cast<int64_t>(d) != axis) out.AppendDim(s.GetDim(d));
    return out;
  }
  static Shape Unbatched(const Shape& s, bool batch) {
    if (!batch) return s;
    Shape out;
    for (size_t d = 1; d < s.GetDimNum(); ++d) out.AppendDim(s.GetDim(d));
    return out;
  }
  std::vector<ValueInfo> BodyInputs(const KernelContextBase* ctx, const Layout& l) {
    std::vector<ValueInfo> v;
    for (size_t k = 0; k < l.states; ++k) v.push_back({"", ctx->GetInputDataType(k), Unbatched(ctx->GetInputTensor(k)->GetShape(), l.batch)});
    for (size_t k = 0; k < l.scans; ++k)
      v.push_back({"", ctx->GetInputDataType(l.states + k), Slice(ctx->GetInputTensor(l.states + k)->GetShape(), l.in_axes[k], l.batch)});
    for (size_t k = 0; k < l.captures; ++k) v.push_back(InfoOf(ctx->GetInputTensor(l.states + l.scans + k)));
    return v;
  }

  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (body_.Bind(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    size_t states = ctx->GetIrInputInstanceNum(0);
    for (size_t k = 0; k < states && k < ctx->GetComputeNodeOutputNum(); ++k) ctx->SetOutputDataType(k, ctx->GetInputDataType(k));
    Layout l;
    // Output types come from the body, compiled for the input shapes (known when compiling
    // unless they depend on values).
    if (GetLayout(ctx, &l) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (l.outs == 0) return GRAPH_SUCCESS;
    auto model = body_.Get(ctx, BodyInputs(ctx, l));
    if (!model) return GRAPH_FAILED;
    for (size_t k = 0; k < l.outs; ++k) ctx->SetOutputDataType(l.states + k, model->outputs()[l.states + k].dtype);
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(InferShapeContext* ctx) override {
    if (body_.Bind(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Layout l;
    if (GetLayout(ctx, &l) != GRAPH_SUCCESS) return GRAPH_FAILED;
    int64_t len = -1, batch = -1;
    for (size_t k = 0; k < l.scans; ++k) {
      const Shape& s = ctx->GetInputTensor(l.states + k)->GetShape();
      int64_t n = s.GetDim(static_cast<size_t>(l.in_axes[k]));
      if (len >= 0 && n != len)
        return Fail(ctx, "scan inputs differ in length along their scan axes (" + std::to_string(len) + " and " + std::to_string(n) + ")");
      len = n;
    }
    for (size_t k = 0; l.batch && k < l.states + l.scans; ++k) {
      int64_t b = ctx->GetInputTensor(k)->GetShape().GetDim(0);
      if (batch >= 0 && b != batch) return Fail(ctx, "states and scan inputs differ in batch size (" + std::to_string(batch) + " and " + std::to_string(b) + ")");
      batch = b;
    }
    auto model = body_.Get(ctx, BodyInputs(ctx, l));
    if (!model) return GRAPH_FAILED;
    if (model->has_dynamic_shapes()) {  // known when it runs
      for (size_t k = 0; k < l.states + l.outs; ++k) *ctx->GetOutputShape(k) = Shape({-1});
      return GRAPH_SUCCESS;
    }
    for (size_t k = 0; k < l.states; ++k) {
      if (model->outputs()[k].shape != Unbatched(ctx->GetInputTensor(k)->GetShape(), l.batch))
        return Fail(ctx, "state " + std::to_string(k) + " ('" + body_.output_name(k) + "') changes shape from " +
                             Unbatched(ctx->GetInputTensor(k)->GetShape(), l.batch).ToString() + " to " + model->outputs()[k].shape.ToString());
      *ctx->GetOutputShape(k) = ctx->GetInputTensor(k)->GetShape();
    }
    for (size_t k = 0; k < l.outs; ++k) {
      const Shape& slice = model->outputs()[l.states + k].shape;
      int64_t r = static_cast<int64_t>(slice.GetDimNum()) + 1;
      if (static_cast<size_t>(r) + (l.batch ? 1 : 0) > WEFT_MAX_DIMS)
        return Fail(ctx, "scan output " + std::to_string(k) + " ('" + body_.output_name(l.states + k) + "') has rank " +
                             std::to_string(slice.GetDimNum()) + "; stacked it would have " + std::to_string(r + (l.batch ? 1 : 0)) +
                             " dims, and tensors have at most " + std::to_string(WEFT_MAX_DIMS));
      int64_t ax = l.out_axes[k];
      if (ax < -r || ax >= r)
        return Fail(ctx, "scan_output_axes[" + std::to_string(k) + "] = " + std::to_string(ax) + " is out of range for rank " + std::to_string(r));
      if (ax < 0) ax += r;
      Shape s;
      if (l.batch) s.AppendDim(batch);
      for (int64_t d = 0; d <= static_cast<int64_t>(slice.GetDimNum()); ++d) {
        if (d == ax) s.AppendDim(len);
        if (d < static_cast<int64_t>(slice.GetDimNum())) s.AppendDim(slice.GetDim(static_cast<size_t>(d)));
      }
      *ctx->GetOutputShape(l.states + k) = s;
    }
    return GRAPH_SUCCESS;
  }

  // In C, as Loop's: the body a module of its own, its context a local and its arena this node's
  // scratch. Per batch (batch_major) and iteration: each scan input's slice copied row by row
  // into the body's input (forward or reversed), the body run, the states staged back into its
  // inputs, and each scan output's slice written into place along its axis.
  graphStatus Emit(EmitContext* ctx) override {
    if (body_.Bind(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Layout l;
    if (GetLayout(ctx, &l) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const std::vector<ValueInfo> info = BodyInputs(ctx, l);
    auto model = body_.Get(ctx, info);
    if (!model) return GRAPH_FAILED;
    if (model->has_dynamic_shapes()) return Fail(ctx, "the body has shapes known only at run time; a C module needs them fixed");
    const int64_t len = ctx->GetInputTensor(l.states)->GetShape().GetDim(static_cast<size_t>(l.in_axes[0]));
    const int64_t batches = l.batch ? ctx->GetInputTensor(0)->GetShape().GetDim(0) : 1;
    std::string B;
    uint64_t arena = 0;
    if (EmbedBody(ctx, body_, *model, &B, &arena) != GRAPH_SUCCESS) return GRAPH_FAILED;
    std::vector<uint64_t> sbytes(l.states), soff;
    for (size_t k = 0; k < l.states; ++k) sbytes[k] = static_cast<uint64_t>(info[k].shape.GetShapeSize()) * DataTypeSize(info[k].dtype);
    const uint64_t staging = Staging(sbytes, &soff);
    const std::string scratch = ctx->Scratch(std::max<uint64_t>(arena + staging, 16));
    auto in_ptr = [&](size_t k) { return "sb.tensor_ptrs[" + B + "_inputs[" + std::to_string(k) + "].index]"; };
    auto out_ptr = [&](size_t k) { return "sb.tensor_ptrs[" + B + "_outputs[" + std::to_string(k) + "].index]"; };
    auto u = [](uint64_t v) { return std::to_string(v) + "u"; };
    const std::string L = std::to_string(len);
    std::string code = "{\n  " + B + "_context sb;\n  uint8_t* const arena = (uint8_t*)(void*)" + scratch + ";\n  uint8_t* const carry = arena + " +
                       u(arena) + ";\n  int64_t bt, i, o;\n  int32_t s;\n  (void)carry;\n  (void)o;\n  memset(&sb, 0, sizeof sb);\n  s = " + B +
                       "_init(&sb, arena, " + B + "_ARENA_BYTES);\n  if (s) return s;\n";
    for (size_t k = 0; k < l.captures; ++k) {
      const Tensor* t = ctx->GetInputTensor(l.states + l.scans + k);
      if (t->GetByteCount())
        code += "  memcpy(" + in_ptr(l.states + l.scans + k) + ", " + ctx->Input(l.states + l.scans + k, "uint8_t") + ", " + u(t->GetByteCount()) + ");\n";
    }
    code += "  for (bt = 0; bt < " + std::to_string(batches) + "; ++bt) {\n";
    for (size_t k = 0; k < l.states; ++k)
      if (sbytes[k]) code += "    memcpy(" + in_ptr(k) + ", " + ctx->Input(k, "uint8_t") + " + bt * " + u(sbytes[k]) + ", " + u(sbytes[k]) + ");\n";
    code += "    for (i = 0; i < " + L + "; ++i) {\n";
    for (size_t k = 0; k < l.scans; ++k) {
      const Tensor* t = ctx->GetInputTensor(l.states + k);
      const Shape& sh = t->GetShape();
      const size_t axis = static_cast<size_t>(l.in_axes[k]);
      int64_t outer = 1, inner = 1;
      for (size_t d = l.batch ? 1 : 0; d < axis; ++d) outer *= sh.GetDim(d);
      for (size_t d = axis + 1; d < sh.GetDimNum(); ++d) inner *= sh.GetDim(d);
      const uint64_t row = static_cast<uint64_t>(inner) * DataTypeSize(t->GetDataType());
      if (row == 0 || outer == 0) continue;
      const std::string step = l.in_rev[k] ? "(" + L + " - 1 - i)" : "i";
      code += "      for (o = 0; o < " + std::to_string(outer) + "; ++o)\n        memcpy((uint8_t*)" + in_ptr(l.states + k) + " + o * " + u(row) + ", " +
              ctx->Input(l.states + k, "uint8_t") + " + bt * " + u(static_cast<uint64_t>(outer * len) * row) + " + (o * " + L + " + " + step + ") * " +
              u(row) + ", " + u(row) + ");\n";
    }
    code += "      s = " + B + "_run(&sb);\n      if (s) return s;\n";
    for (size_t k = 0; k < l.outs; ++k) {
      const ValueInfo& o = model->outputs()[l.states + k];
      const Shape& slice = o.shape;
      const int64_t r = static_cast<int64_t>(slice.GetDimNum()) + 1;
      const int64_t ax = l.out_axes[k] < 0 ? l.out_axes[k] + r : l.out_axes[k];
      int64_t outer = 1;
      for (int64_t d = 0; d < ax; ++d) outer *= slice.GetDim(static_cast<size_t>(d));
      const uint64_t bytes = static_cast<uint64_t>(slice.GetShapeSize()) * DataTypeSize(o.dtype);
      if (bytes == 0 || outer == 0) continue;
      const uint64_t inner = bytes / static_cast<uint64_t>(outer);
      const std::string pos = l.out_rev[k] ? "(" + L + " - 1 - i)" : "i";
      code += "      for (o = 0; o < " + std::to_string(outer) + "; ++o)\n        memcpy(" + ctx->Output(l.states + k, "uint8_t") + " + bt * " +
              u(bytes * static_cast<uint64_t>(len)) + " + (o * " + L + " + " + pos + ") * " + u(inner) + ", (const uint8_t*)" + out_ptr(l.states + k) +
              " + o * " + u(inner) + ", " + u(inner) + ");\n";
    }
    for (size_t k = 0; k < l.states; ++k)
      if (sbytes[k]) code += "      memcpy(carry + " + u(soff[k]) + ", " + out_ptr(k) + ", " + u(sbytes[k]) + ");\n";
    for (size_t k = 0; k < l.states; ++k)
      if (sbytes[k]) code += "      memcpy(" + in_ptr(k) + ", carry + " + u(soff[k]) + ", " + u(sbytes[k]) + ");\n";
    code += "    }\n";
    for (size_t k = 0; k < l.states; ++k)
      if (sbytes[k]) code += "    memcpy(" + ctx->Output(k, "uint8_t") + " + bt * " + u(sbytes[k]) + ", " + in_ptr(k) + ", " + u(sbytes[k]) + ");\n";
    code += "  }\n";
    ctx->Include("<string.h>");
    ctx->Run(code + "}\n");
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Layout l;
    if (GetLayout(ctx, &l) != GRAPH_SUCCESS) return GRAPH_FAILED;
    auto model = body_.Get(ctx, BodyInputs(ctx, l));
    if (!model) return GRAPH_FAILED;
    std::unique_ptr<RunContext> rc = model->CreateRunContext();
    int64_t len = ctx->GetInputTensor(l.states)->GetShape().GetDim(static_cast<size_t>(l.in_axes[0]));
    int64_t batches = l.batch ? ctx->GetInputTensor(0)->GetShape().GetDim(0) : 1;
    std::vector<std::vector<Buffer>> finals(static_cast<size_t>(batches), std::vector<Buffer>(l.states));
    std::vector<std::vector<Stack>> stacks(static_cast<size_t>(batches), std::vector<Stack>(l.outs));
    std::vector<ValueInfo> info = BodyInputs(ctx, l);
    std::vector<Buffer> slices(l.scans);
    std::vector<TensorRef> ins(l.states + l.scans + l.captures), outs;
    std::vector<Buffer> updated(l.states);  // the next states; after the swap, last step's buffers to reuse
    for (int64_t b = 0; b < batches; ++b) {
      std::vector<Buffer>& state = finals[static_cast<size_t>(b)];
      for (size_t k = 0; k < l.states; ++k) {
        const Tensor* t = ctx->GetInputTensor(k);
        size_t part = t->GetByteCount() / static_cast<size_t>(std::max<int64_t>(batches, 1));
        state[k].Set(t->GetDataType(), info[k].shape, static_cast<const uint8_t*>(t->GetAddr()) + static_cast<size_t>(b) * part, part);
      }
      for (int64_t i = 0; i < len; ++i) {
        for (size_t k = 0; k < l.scans; ++k) {
          const Tensor* t = ctx->GetInputTensor(l.states + k);
          const Shape& s = t->GetShape();
          size_t axis = static_cast<size_t>(l.in_axes[k]);
          int64_t step = l.in_rev[k] ? len - 1 - i : i;
          // [outer, len, inner] within batch b
          size_t elem = DataTypeSize(t->GetDataType());
          int64_t outer = 1, inner = 1;
          for (size_t d = l.batch ? 1 : 0; d < axis; ++d) outer *= s.GetDim(d);
          for (size_t d = axis + 1; d < s.GetDimNum(); ++d) inner *= s.GetDim(d);
          size_t row = static_cast<size_t>(inner) * elem;
          const uint8_t* src = static_cast<const uint8_t*>(t->GetAddr()) + static_cast<size_t>(b) * static_cast<size_t>(outer * len) * row;
          Buffer& sl = slices[k];
          sl.dtype = t->GetDataType();
          sl.shape = info[l.states + k].shape;
          sl.bytes.resize(static_cast<size_t>(outer) * row);
          for (int64_t o = 0; o < outer; ++o)
            std::memcpy(sl.bytes.data() + static_cast<size_t>(o) * row, src + (static_cast<size_t>(o * len + step)) * row, row);
        }
        for (size_t k = 0; k < l.states; ++k) ins[k] = state[k].Ref();
        for (size_t k = 0; k < l.scans; ++k) ins[l.states + k] = slices[k].Ref();
        for (size_t k = 0; k < l.captures; ++k) ins[l.states + l.scans + k] = RefOf(ctx->GetInputTensor(l.states + l.scans + k));
        Status st = RunBody(*model, *rc, ins, &outs);
        if (!st.ok()) return Fail(ctx, "iteration " + std::to_string(i) + ": " + st.message());
        // An output may be a state passed through (the states' own buffers): every output is
        // copied before any state is replaced.
        std::string why;
        for (size_t k = 0; k < l.outs; ++k)
          if (!stacks[static_cast<size_t>(b)][k].Add(outs[l.states + k], &why, l.batch ? 1 : 0))
            return Fail(ctx, "scan output '" + body_.output_name(l.states + k) + "': " + why);
        for (size_t k = 0; k < l.states; ++k) {
          if (outs[k].shape != state[k].shape || outs[k].dtype != state[k].dtype)
            return Fail(ctx, "state " + std::to_string(k) + " ('" + body_.output_name(k) + "') changed from " + state[k].shape.ToString() +
                                 " to " + outs[k].shape.ToString());
          updated[k].Set(outs[k].dtype, outs[k].shape, outs[k].data, outs[k].bytes);
        }
        state.swap(updated);
      }
    }
    for (size_t k = 0; k < l.states; ++k) {
      Tensor* y = ctx->MallocOutputTensor(k, ctx->GetInputTensor(k)->GetShape(), ctx->GetInputDataType(k));
      if (!y) return GRAPH_FAILED;
      uint8_t* dst = static_cast<uint8_t*>(y->GetAddr());
      for (auto& f : finals) {
        if (!f[k].bytes.empty()) std::memcpy(dst, f[k].bytes.data(), f[k].bytes.size());
        dst += f[k].bytes.size();
      }
    }
    for (size_t k = 0; k < l.outs; ++k) {
      const Shape& planned = ctx->GetOutputTensor(l.states + k)->GetShape();
      Shape shape = planned;
      Stack& first = stacks[0][k];
      int64_t r = static_cast<int64_t>(first.slice.GetDimNum()) + 1;
      int64_t ax = l.out_axes[k] < 0 ? l.out_axes[k] + r : l.out_axes[k];
      if (len > 0) {
        shape = first.Stacked(ax);
        if (l.batch) {
          Shape s({batches});
          for (size_t d = 0; d < shape.GetDimNum(); ++d) s.AppendDim(shape.GetDim(d));
          shape = s;
        }
      }
      DataType dt = len > 0 ? first.dtype : ctx->GetOutputDataType(l.states + k);
      Tensor* y = ctx->MallocOutputTensor(l.states + k, shape, dt);
      if (!y) return GRAPH_FAILED;
      uint8_t* dst = static_cast<uint8_t*>(y->GetAddr());
      if (len == 0) continue;
      size_t per_batch = y->GetByteCount() / static_cast<size_t>(batches);
      for (int64_t b = 0; b < batches; ++b)
        stacks[static_cast<size_t>(b)][k].Write(dst + static_cast<size_t>(b) * per_batch, ax, l.out_rev[k] != 0);
    }
    return GRAPH_SUCCESS;
  }

 private:
  Body body_;
};

// ---- SequenceMap -------------------------------------------------------------------------------
//
//   SequenceMap(input_sequence, additional_inputs..., captures...) -> (out_sequence...)
//     body(one element of each sequence input or the whole tensor input, captures...) -> (tensors...)
//     Runs the body once per element of input_sequence; every other sequence input must have as
//     many elements. Output k is the sequence of the body's k-th outputs.

class SequenceMap : public EagerExecuteOp, public ShapeInferOp {
 public:
  static graphStatus Check(const KernelContextBase* ctx, Body& body, size_t* mapped) {
    *mapped = 1 + ctx->GetIrInputInstanceNum(1);
    size_t captures = ctx->GetIrInputInstanceNum(2);
    if (body.num_inputs() != *mapped + captures)
      return Fail(ctx, "the body takes " + std::to_string(body.num_inputs()) + " inputs; the node maps " + std::to_string(*mapped) +
                           " and captures " + std::to_string(captures));
    if (body.num_outputs() != ctx->GetComputeNodeOutputNum())
      return Fail(ctx, "the body gives " + std::to_string(body.num_outputs()) + " outputs; the node has " +
                           std::to_string(ctx->GetComputeNodeOutputNum()));
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (body_.Bind(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    size_t mapped = 0;
    if (Check(ctx, body_, &mapped) != GRAPH_SUCCESS) return GRAPH_FAILED;
    std::vector<ValueInfo> ins;
    for (size_t k = 0; k < ctx->GetComputeNodeInputNum(); ++k) {
      DataType t = ctx->GetInputDataType(k);
      if (k < mapped && IsSequenceType(t)) ins.push_back({"", ElementTypeOf(t), Shape({-1})});  // an element: any shape
      else ins.push_back(InfoOf(ctx->GetInputTensor(k)));
    }
    auto model = body_.Get(ctx, ins);
    if (!model) return GRAPH_FAILED;
    for (size_t k = 0; k < model->outputs().size(); ++k) {
      DataType t = model->outputs()[k].dtype;
      if (!IsTensorType(t)) return Fail(ctx, "body output " + std::to_string(k) + " is " + DataTypeName(t) + "; it must be a tensor");
      ctx->SetOutputDataType(k, SequenceOf(t));
    }
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) *ctx->GetOutputShape(k) = Shape({-1});  // sized when it runs
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    size_t mapped = 0;
    if (Check(ctx, body_, &mapped) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const size_t n_in = ctx->GetComputeNodeInputNum(), n_out = ctx->GetComputeNodeOutputNum();
    std::vector<ValueView> views(mapped);
    size_t len = 0;
    for (size_t k = 0; k < mapped; ++k) {
      const Tensor* t = ctx->GetInputTensor(k);
      if (!IsSequenceType(t->GetDataType())) continue;
      std::string why;
      if (!views[k].Parse(t->GetAddr(), static_cast<uint64_t>(t->GetByteCount()), t->GetDataType(), &why))
        return Fail(ctx, "input " + std::to_string(k) + ": " + why);
      if (k == 0) len = views[k].size();
      else if (views[k].size() != len)
        return Fail(ctx, "input " + std::to_string(k) + " holds " + std::to_string(views[k].size()) + " tensors; input_sequence holds " +
                             std::to_string(len));
    }
    std::vector<std::vector<Buffer>> results(n_out);
    // The body a context was made for, held: a plan the cache does not keep must outlive its context
    // (declared first, so it is released after it), and a new plan at a freed one's address must
    // not reuse that context.
    std::shared_ptr<const CompiledModel> last;
    std::unique_ptr<RunContext> rc;
    std::vector<TensorRef> ins(n_in), outs;
    for (size_t i = 0; i < len; ++i) {
      std::vector<ValueInfo> info;
      for (size_t k = 0; k < n_in; ++k) {
        const Tensor* t = ctx->GetInputTensor(k);
        if (k < mapped && IsSequenceType(t->GetDataType())) {
          const ValueRecord& r = views[k][i];
          ins[k] = {r.dtype, r.shape, const_cast<uint8_t*>(r.data), static_cast<size_t>(r.nbytes)};
        } else {
          ins[k] = RefOf(t);
        }
        info.push_back({"", ins[k].dtype, ins[k].shape});
      }
      auto model = body_.Get(ctx, info);
      if (!model) return GRAPH_FAILED;
      if (model != last) {
        rc = model->CreateRunContext();
        last = model;
      }
      Status st = RunBody(*model, *rc, ins, &outs);
      if (!st.ok()) return Fail(ctx, "element " + std::to_string(i) + ": " + st.message());
      for (size_t k = 0; k < n_out; ++k) {
        if (outs[k].dtype != ElementTypeOf(ctx->GetOutputDataType(k)))
          return Fail(ctx, "body output " + std::to_string(k) + " changed type to " + DataTypeName(outs[k].dtype));
        results[k].emplace_back();
        results[k].back().Set(outs[k].dtype, outs[k].shape, outs[k].data, outs[k].bytes);
      }
    }
    for (size_t k = 0; k < n_out; ++k) {
      uint64_t bytes = kValueHeaderBytes;
      for (auto& b : results[k]) bytes += ValueRecordBytes(static_cast<int64_t>(b.shape.GetDimNum()), b.bytes.size());
      DataType type = ctx->GetOutputDataType(k);
      Tensor* y = ctx->MallocOutputTensor(k, Shape({static_cast<int64_t>(bytes)}), type);
      if (!y) return GRAPH_FAILED;
      uint8_t* p = WriteValueHeader(static_cast<uint8_t*>(y->GetAddr()), type, results[k].size());
      for (auto& b : results[k]) p = WriteValueRecord(p, b.dtype, b.shape, b.bytes.data(), b.bytes.size());
    }
    return GRAPH_SUCCESS;
  }

 private:
  Body body_;
};

}  // namespace

bool SizesOutputsInExecute(const CompiledNode& node) {
  return node.op && node.op->library == nullptr && (node.op_type == "Loop" || node.op_type == "Scan" || node.op_type == "SequenceMap");
}

}  // namespace weft::internal

namespace weft::ops {

void WeftRegister_subgraph(std::vector<OpEntry>& out) {
  using internal::Loop;
  using internal::Scan;
  using internal::SequenceMap;
  out.push_back({OpDefBuilder("Loop")
                     .OPTIONAL_INPUT(M, TensorType({DT_INT64}))
                     .OPTIONAL_INPUT(cond, TensorType({DT_BOOL}))
                     .DYNAMIC_INPUT(v_initial, TensorType::AnyValue())
                     .DYNAMIC_INPUT(captures, TensorType::AnyValue())
                     .DYNAMIC_OUTPUT(v_final, TensorType::AnyValue())
                     .DYNAMIC_OUTPUT(scan_outputs, TensorType::ALL())
                     .REQUIRED_ATTR(body, String)
                     .Build(),
                 MakeOpImpl<Loop>("Loop")});
  out.push_back({OpDefBuilder("Scan")
                     .DYNAMIC_INPUT(initial_states, TensorType::ALL())
                     .DYNAMIC_INPUT(scan_inputs, TensorType::ALL())
                     .DYNAMIC_INPUT(captures, TensorType::ALL())
                     .DYNAMIC_OUTPUT(final_states, TensorType::ALL())
                     .DYNAMIC_OUTPUT(scan_outputs, TensorType::ALL())
                     .REQUIRED_ATTR(body, String)
                     .ATTR(scan_input_axes, ListInt, {})
                     .ATTR(scan_input_directions, ListInt, {})
                     .ATTR(scan_output_axes, ListInt, {})
                     .ATTR(scan_output_directions, ListInt, {})
                     .ATTR(batch_major, Bool, false)
                     .Build(),
                 MakeOpImpl<Scan>("Scan")});
  TensorType mappable = TensorType::ALL();
  {
    const TensorType seqs = TensorType::Sequences();
    std::vector<DataType> t = mappable.types();
    t.insert(t.end(), seqs.types().begin(), seqs.types().end());
    mappable = TensorType(std::move(t));
  }
  out.push_back({OpDefBuilder("SequenceMap")
                     .INPUT(input_sequence, TensorType::Sequences())
                     .DYNAMIC_INPUT(additional_inputs, mappable)
                     .DYNAMIC_INPUT(captures, TensorType::AnyValue())
                     .DYNAMIC_OUTPUT(out_sequence, TensorType::Sequences())
                     .REQUIRED_ATTR(body, String)
                     .Build(),
                 MakeOpImpl<SequenceMap>("SequenceMap")});
}

}  // namespace weft::ops
