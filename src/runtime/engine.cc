// The runtime: the host API operators call, run contexts, the step loop with its checks
// (bounds, plugin checking mode), and input-dynamic plan caching.
// Over 600 lines because the host API services and the step loop that hands them to ops belong
// together: each service checks the call state the loop set up.
#include "runtime/engine.h"
#include "runtime/omp_scope.h"
#include "core/aligned_alloc.h"

#include <dlfcn.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace weft::internal {

namespace {

CallState* State(WeftKernelContext* c) { return static_cast<CallState*>(c->engine); }

void SetError(WeftKernelContext* c, const char* message) {
  CallState* st = State(c);
  if (st && st->error) *st->error = message ? message : "(null message)";
}

const char* StageName(int32_t stage) {
  switch (stage) {
    case WEFT_STAGE_CREATE: return "create";
    case WEFT_STAGE_INFER_DTYPE: return "InferDataType";
    case WEFT_STAGE_INFER_SHAPE: return "InferShape";
    case WEFT_STAGE_COMPILE: return "Compile";
    case WEFT_STAGE_EXECUTE: return "Execute";
    case WEFT_STAGE_UPDATE_ARGS: return "UpdateHostArgs";
    case WEFT_STAGE_SERIALIZE: return "Serialize";
    case WEFT_STAGE_DESERIALIZE: return "Deserialize";
    case WEFT_STAGE_QUERY: return "Query";
    default: return "?";
  }
}

WeftTensor* MallocOutput(WeftKernelContext* c, uint32_t index, const WeftShape* shape, int32_t dtype,
                         int32_t format) {
  if (c->stage != WEFT_STAGE_EXECUTE) {
    SetError(c, (std::string("MallocOutputTensor called during ") + StageName(c->stage) + "; only Execute may allocate outputs").c_str());
    return nullptr;
  }
  if (index >= c->num_outputs) {
    SetError(c, ("MallocOutputTensor(" + std::to_string(index) + "): the node has " + std::to_string(c->num_outputs) + " outputs").c_str());
    return nullptr;
  }
  WeftTensor* t = c->outputs[index];
  CallState* st = State(c);
  if (st && st->dynamic_arena && !t->data && Shape(t->shape).IsUnknown()) {
    // An output only this run sizes (SizesOutputsInExecute): placed now, at its real shape.
    Shape s = shape ? Shape(*shape) : Shape();
    uint64_t bytes = 0;
    if (!shape || dtype != t->dtype || s.IsUnknown() || !s.GetCheckedBytes(DataTypeSize(static_cast<DataType>(dtype)), &bytes)) {
      SetError(c, ("MallocOutputTensor(" + std::to_string(index) + "): needs a known shape of the inferred type " +
                   DataTypeName(static_cast<DataType>(t->dtype))).c_str());
      return nullptr;
    }
    t->data = st->dynamic_arena->Alloc(bytes ? static_cast<size_t>(bytes) : 1);
    if (!t->data) {
      SetError(c, ("out of memory for output " + std::to_string(index) + " (" + std::to_string(bytes) + " bytes)").c_str());
      return nullptr;
    }
    t->shape = *shape;
    t->size_bytes = bytes;
    return t;
  }
  if (st && st->bounds && index < st->bounds->size() && (*st->bounds)[index].set) {
    if (!shape || dtype != t->dtype) {
      SetError(c, ("MallocOutputTensor(" + std::to_string(index) + "): the data type must be the inferred " +
                   DataTypeName(static_cast<DataType>(t->dtype))).c_str());
      return nullptr;
    }
    // A data-dependent output: any shape within the bound (or the bound with -1 dims).
    Shape s(*shape);
    if (!s.IsUnknown() && c->api->set_output_shape(c, index, shape) != WEFT_STATUS_OK) return nullptr;
    return t;
  }
  bool same = shape && shape->ndim == t->shape.ndim;
  for (int64_t k = 0; same && k < shape->ndim; ++k) same = shape->dims[k] == t->shape.dims[k];
  if (!same || dtype != t->dtype) {
    std::string got = shape ? Shape(*shape).ToString() : "null";
    SetError(c, ("MallocOutputTensor(" + std::to_string(index) + ", " + got + ", " +
                 DataTypeName(static_cast<DataType>(dtype)) + ") differs from the inferred " +
                 Tensor::View(t)->GetShape().ToString() + " " + DataTypeName(static_cast<DataType>(t->dtype)) +
                 "; InferShape/InferDataType and Execute must agree").c_str());
    return nullptr;
  }
  if (format != WEFT_FORMAT_ND) t->format = format;  // a planned storage layout stays
  return t;
}

void* MallocWorkspace(WeftKernelContext* c, uint64_t bytes) {
  CallState* st = State(c);
  if (!st || !st->scratch) {
    SetError(c, (std::string("MallocWorkSpace is not available during ") + StageName(c->stage)).c_str());
    return nullptr;
  }
  return st->scratch->Alloc(static_cast<size_t>(bytes));
}

const uint8_t* ReadBlob(WeftKernelContext* c, const char* key, uint64_t* size) {
  CallState* st = State(c);
  if (size) *size = 0;
  std::string k = key ? key : "";
  if (st && st->in_blobs) {
    auto it = st->in_blobs->find(k);
    if (it == st->in_blobs->end()) return nullptr;
    if (size) *size = it->second.second;
    return it->second.first ? it->second.first : reinterpret_cast<const uint8_t*>("");
  }
  if (st && st->blobs) {
    auto it = st->blobs->find(k);
    if (it == st->blobs->end()) return nullptr;
    if (size) *size = it->second.size();
    return it->second.data() ? it->second.data() : reinterpret_cast<const uint8_t*>("");
  }
  return nullptr;
}

WeftStatus SetOutputBound(WeftKernelContext* c, uint32_t index, const WeftShape* bound) {
  CallState* st = State(c);
  if (c->stage != WEFT_STAGE_INFER_SHAPE || !st || !st->bounds || index >= c->num_outputs || !bound) {
    SetError(c, "SetOutputShapeBound is only available during InferShape, for an existing output");
    return WEFT_STATUS_FAILED;
  }
  const WeftShape& s = c->outputs[index]->shape;
  std::string why;
  if (bound->ndim != s.ndim || bound->ndim < 0 || bound->ndim > WEFT_MAX_DIMS) why = "its rank differs from the output shape's";
  for (int64_t k = 0; why.empty() && k < bound->ndim; ++k) {
    if (bound->dims[k] < 0) why = "it has an unknown dim";
    else if (s.dims[k] >= 0 && s.dims[k] != bound->dims[k]) why = "dim " + std::to_string(k) + " differs from the known extent";
  }
  if (!why.empty()) {
    SetError(c, ("SetOutputShapeBound(" + std::to_string(index) + ", " + Shape(*bound).ToString() + ") for output shape " +
                 Shape(s).ToString() + ": " + why).c_str());
    return WEFT_STATUS_FAILED;
  }
  if (st->bounds->size() < c->num_outputs) st->bounds->resize(c->num_outputs);
  (*st->bounds)[index].set = true;
  (*st->bounds)[index].shape = Shape(*bound);
  return WEFT_STATUS_OK;
}

// Checks `shape` against the bound of output `index` and makes it the output's shape.
WeftStatus SetOutputShape(WeftKernelContext* c, uint32_t index, const WeftShape* shape) {
  CallState* st = State(c);
  if (c->stage != WEFT_STAGE_EXECUTE || !st || index >= c->num_outputs || !shape) {
    SetError(c, "SetOutputShape is only available during Execute, for an existing output");
    return WEFT_STATUS_FAILED;
  }
  WeftTensor* t = c->outputs[index];
  Shape s(*shape);
  if (!st->bounds || index >= st->bounds->size() || !(*st->bounds)[index].set) {
    if (s == Shape(t->shape)) return WEFT_STATUS_OK;
    SetError(c, ("SetOutputShape(" + std::to_string(index) + ", " + s.ToString() + "): the output's shape " +
                 Shape(t->shape).ToString() + " is not data-dependent (InferShape gave it no bound)").c_str());
    return WEFT_STATUS_FAILED;
  }
  const Shape& b = (*st->bounds)[index].shape;
  bool ok = s.ndim == b.ndim;
  for (int64_t k = 0; ok && k < s.ndim; ++k) ok = s.dims[k] >= 0 && s.dims[k] <= b.dims[k];
  if (!ok) {
    SetError(c, ("output " + std::to_string(index) + " reported shape " + s.ToString() + ", outside its bound " +
                 b.ToString()).c_str());
    return WEFT_STATUS_FAILED;
  }
  t->shape = *shape;
  return WEFT_STATUS_OK;
}

WeftStatus SetOutputShapeBuffer(WeftKernelContext* c, uint32_t index, const uint64_t* buffer) {
  CallState* st = State(c);
  if (c->stage != WEFT_STAGE_EXECUTE || !st || !st->shape_buffers || index >= c->num_outputs || !buffer ||
      !st->bounds || index >= st->bounds->size() || !(*st->bounds)[index].set) {
    SetError(c, "SetOutputShapeBuffer is only available during Execute, for an output InferShape gave a bound");
    return WEFT_STATUS_FAILED;
  }
  if (st->shape_buffers->size() < c->num_outputs) st->shape_buffers->resize(c->num_outputs, nullptr);
  (*st->shape_buffers)[index] = buffer;
  return WEFT_STATUS_OK;
}

std::string KernelKeyPrefix(WeftKernelContext* c, const CompiledNode& n) {
  std::string key = "op=" + n.op_type + "\nversion=" + std::to_string(n.op->proto.version) + "\norigin=" +
                    (n.op->library ? n.op->library->hash : std::string("built-in"));
  for (size_t a = 0; a < n.attrs.size(); ++a) {
    key += "\nattr " + std::string(n.attr_names[a]) + "=" + n.attrs[a].ToString();
    if (n.attrs[a].type() == WEFT_ATTR_TENSOR) {
      auto& b = n.attrs[a].tensor_bytes();
      key += "#" + std::to_string(XXH3_64bits(b.data(), b.size()));
    }
  }
  auto meta = [&](const char* role, uint32_t k, const WeftTensor* t) {
    key += std::string("\n") + role + std::to_string(k) + "=" + DataTypeName(static_cast<DataType>(t->dtype)) +
           Shape(t->shape).ToString() + " fmt" + std::to_string(t->format);
  };
  for (uint32_t k = 0; k < c->num_inputs; ++k) meta("in", k, c->inputs[k]);
  for (uint32_t k = 0; k < c->num_outputs; ++k) meta("out", k, c->outputs[k]);
  return key;
}

void* RtcCompileApi(WeftKernelContext* c, const WeftRtcSource* src, char* kernel_id, uint32_t kernel_id_size) {
  CallState* st = State(c);
  if (c->stage != WEFT_STAGE_COMPILE || !st || !st->kernels || !st->node) {
    SetError(c, "runtime compilation (CompileKernel) is only available during Compile");
    return nullptr;
  }
  if (!src || !src->source || !kernel_id || kernel_id_size < 33) {
    SetError(c, "CompileKernel: missing source or a kernel id buffer smaller than 33 bytes");
    return nullptr;
  }
  RtcRequest req;
  req.language = src->language ? src->language : "c";
  req.source = src->source;
  req.options = src->options ? src->options : "";
  req.tag = src->tag && *src->tag ? src->tag : st->node->op_type + "/" + st->node->name;
  req.key_prefix = KernelKeyPrefix(c, *st->node);
  auto k = RtcCompile(req);
  if (!k.ok()) {
    SetError(c, k.status().message().c_str());
    return nullptr;
  }
  (*st->kernels)[k.value()->id] = k.value();
  std::snprintf(kernel_id, kernel_id_size, "%s", k.value()->id.c_str());
  return k.value()->handle;
}

void* RtcLookup(WeftKernelContext* c, const char* kernel_id, const char* symbol) {
  CallState* st = State(c);
  if (!st || !kernel_id || !symbol) return nullptr;
  const std::map<std::string, std::shared_ptr<RtcKernel>>* ks = st->kernels;
  if (!ks && st->node) ks = &st->node->kernels;
  if (!ks) return nullptr;
  auto it = ks->find(kernel_id);
  if (it == ks->end()) {
    SetError(c, (std::string("no runtime-compiled kernel with id '") + kernel_id + "' belongs to this node").c_str());
    return nullptr;
  }
  void* f = dlsym(it->second->handle, symbol);
  if (!f) SetError(c, (std::string("kernel '") + it->second->tag + "' has no symbol '" + symbol + "'").c_str());
  return f;
}

void* HostArgs(WeftKernelContext* c, uint64_t bytes) {
  CallState* st = State(c);
  if (st && st->asked_host_args) *st->asked_host_args = true;
  if ((c->stage != WEFT_STAGE_UPDATE_ARGS && c->stage != WEFT_STAGE_EXECUTE) || !st || !st->host_args || bytes == 0) {
    SetError(c, "GetHostArgs is only available during UpdateHostArgs and Execute of a compiled model, with a size > 0");
    return nullptr;
  }
  auto& a = *st->host_args;
  if (a.empty()) a.assign(static_cast<size_t>(bytes), 0);
  if (a.size() != bytes) {
    SetError(c, ("GetHostArgs(" + std::to_string(bytes) + "): this node's argument block has " + std::to_string(a.size()) +
                 " bytes").c_str());
    return nullptr;
  }
  return a.data();
}

WeftStatus WriteBlob(WeftKernelContext* c, const char* key, const void* data, uint64_t size) {
  CallState* st = State(c);
  if (c->stage != WEFT_STAGE_SERIALIZE || !st || !st->blobs) {
    SetError(c, "write_blob is only available during Serialize");
    return WEFT_STATUS_FAILED;
  }
  auto& blob = (*st->blobs)[key ? key : ""];
  const uint8_t* p = static_cast<const uint8_t*>(data);
  blob.insert(blob.end(), p, p + size);
  return WEFT_STATUS_OK;
}

const char* GetOption(WeftKernelContext* c, const char* key) {
  CallState* st = State(c);
  if (!st || !st->env || !key) return nullptr;
  auto it = st->env->options.find(key);
  return it == st->env->options.end() ? nullptr : it->second.c_str();
}

WeftStatus ParallelFor(WeftKernelContext* c, int64_t n, int64_t grain, WeftParallelFn fn, void* user) {
  CallState* st = State(c);
  if (!fn) return WEFT_STATUS_FAILED;
  // A C++ body that throws (a plugin built without the SDK's own guard) fails the call instead
  // of unwinding through the C ABI or ending a pool thread.
  try {
    if (st && st->env && st->env->pool) st->env->pool->ParallelFor(n, grain, fn, user);
    else if (n > 0) fn(user, 0, n);
  } catch (const std::exception& e) {
    SetError(c, (std::string("a ParallelFor body threw: ") + e.what()).c_str());
    return WEFT_STATUS_FAILED;
  } catch (...) {
    SetError(c, "a ParallelFor body threw an exception that is not a std::exception");
    return WEFT_STATUS_FAILED;
  }
  return WEFT_STATUS_OK;
}

WeftStatus SetOutputStorage(WeftKernelContext* c, uint32_t index, uint64_t bytes, int32_t format) {
  CallState* st = State(c);
  bool loading = c->stage == WEFT_STAGE_DESERIALIZE;
  if ((c->stage != WEFT_STAGE_COMPILE && !loading) || !st || !st->values || index >= c->num_outputs) {
    SetError(c, "SetOutputStorage is only available during Compile, for an existing output");
    return WEFT_STATUS_FAILED;
  }
  Value& v = (*st->values)[st->node->out_values[index]];
  if (loading) {  // the model file fixed the layout: only confirm it
    if (v.format == format && v.bytes >= bytes) return WEFT_STATUS_OK;
    SetError(c, ("SetOutputStorage: output '" + v.name + "' is stored as format " + std::to_string(v.format) + " (" +
                 std::to_string(v.bytes) + " bytes) in the model file, not " + std::to_string(format)).c_str());
    return WEFT_STATUS_FAILED;
  }
  if (v.kind != ValueKind::kIntermediate || v.is_output) {
    SetError(c, ("SetOutputStorage: output '" + v.name + "' is a graph output and must stay in the plain layout").c_str());
    return WEFT_STATUS_FAILED;
  }
  // The layout pass chose the format from what the producer and every consumer declared
  // (LayoutAwareOp); Compile only gives the size.
  if (format != v.format) {
    SetError(c, ("SetOutputStorage: output '" + v.name + "' was planned in format " + std::to_string(v.format) +
                 ", not " + std::to_string(format) + " (a blocked layout is chosen by the engine from QueryLayout; "
                 "read the planned one with GetOutputTensor(i)->GetFormat())").c_str());
    return WEFT_STATUS_FAILED;
  }
  v.bytes = std::max<size_t>(v.bytes, static_cast<size_t>(bytes));
  v.storage_given = true;
  return WEFT_STATUS_OK;
}

const WeftEpilogue* GetEpilogue(WeftKernelContext* c) {
  static const WeftEpilogue kNone{sizeof(WeftEpilogue), WEFT_ACT_NONE, 0.f, 0.f};
  CallState* st = State(c);
  return st && st->node ? &st->node->epilogue : &kNone;
}

// The emit_* functions: stage WEFT_STAGE_EMIT, forwarded to the generator's sink.
EmitSink* Emitting(WeftKernelContext* c, const char* fn) {
  CallState* st = State(c);
  if (c->stage != WEFT_STAGE_EMIT || !st || !st->emit) {
    SetError(c, (std::string(fn) + " is only available during Emit (weft aot)").c_str());
    return nullptr;
  }
  return st->emit;
}

WeftStatus Reported(WeftKernelContext* c, const Status& s) {
  if (s.ok()) return WEFT_STATUS_OK;
  SetError(c, s.message().c_str());
  return WEFT_STATUS_FAILED;
}

WeftStatus CopyName(WeftKernelContext* c, const std::string& name, char* buf, uint32_t size) {
  if (!buf || name.size() + 1 > size) {
    SetError(c, ("the name '" + name + "' does not fit the caller's buffer of " + std::to_string(size) + " bytes").c_str());
    return WEFT_STATUS_FAILED;
  }
  std::memcpy(buf, name.c_str(), name.size() + 1);
  return WEFT_STATUS_OK;
}

WeftStatus EmitCode(WeftKernelContext* c, int32_t part, const char* key, const char* text) {
  EmitSink* sink = Emitting(c, "emit_code");
  return sink ? Reported(c, sink->Code(part, key, text ? text : "")) : WEFT_STATUS_FAILED;
}

WeftStatus EmitName(WeftKernelContext* c, int32_t what, uint32_t index, char* buf, uint32_t size) {
  EmitSink* sink = Emitting(c, "emit_name");
  std::string name;
  if (!sink || Reported(c, sink->Name(what, index, &name)) != WEFT_STATUS_OK) return WEFT_STATUS_FAILED;
  return CopyName(c, name, buf, size);
}

WeftStatus EmitConst(WeftKernelContext* c, const char* hint, int32_t dtype, const void* data, uint64_t count, char* buf,
                     uint32_t size) {
  EmitSink* sink = Emitting(c, "emit_const");
  std::string name;
  if (!sink || Reported(c, sink->Const(hint, dtype, data, count, &name)) != WEFT_STATUS_OK) return WEFT_STATUS_FAILED;
  return CopyName(c, name, buf, size);
}

WeftStatus EmitScratch(WeftKernelContext* c, uint64_t bytes, char* buf, uint32_t size) {
  EmitSink* sink = Emitting(c, "emit_scratch");
  std::string name;
  if (!sink || Reported(c, sink->Scratch(bytes, &name)) != WEFT_STATUS_OK) return WEFT_STATUS_FAILED;
  return CopyName(c, name, buf, size);
}

const WeftHostApi kHostApi = {sizeof(WeftHostApi), WEFT_ABI_VERSION, &SetError,        &MallocOutput,
                              &MallocWorkspace,    &WriteBlob,       &GetOption,       &ParallelFor,
                              &SetOutputStorage,   &ReadBlob,        &SetOutputBound,  &SetOutputShape,
                              &SetOutputShapeBuffer, &RtcCompileApi, &RtcLookup,       &HostArgs,
                              &GetEpilogue,        &EmitCode,        &EmitName,        &EmitConst,
                              &EmitScratch};

void AlignedFree(void* p) { std::free(p); }

uint8_t* AlignedAlloc(size_t bytes) { return static_cast<uint8_t*>(internal::AlignedAllocLarge(bytes)); }

}  // namespace

const WeftHostApi* HostApi() { return &kHostApi; }

void* Scratch::Alloc(size_t bytes) {
  if (guarded) [[unlikely]] {
    guarded = false;  // the block itself is a plain one
    auto* block = static_cast<uint8_t*>(Alloc(bytes + kRedZoneBytes));
    guarded = true;
    if (!block) return nullptr;
    std::memset(block + bytes, kGuardByte, kRedZoneBytes);
    guards.push_back({block + bytes, kRedZoneBytes});
    return block;
  }
  bytes = (bytes + 63) / 64 * 64;
  while (chunk_ < chunks_.size()) {
    if (used_ + bytes <= chunks_[chunk_].size) {
      void* p = chunks_[chunk_].mem.get() + used_;
      used_ += bytes;
      return p;
    }
    ++chunk_;
    used_ = 0;
  }
  size_t size = std::max<size_t>(bytes, chunks_.empty() ? 64 * 1024 : chunks_.back().size * 2);
  Chunk ch;
  ch.mem = std::unique_ptr<uint8_t, void (*)(void*)>(AlignedAlloc(size), &AlignedFree);
  if (!ch.mem) return nullptr;
  ch.size = size;
  chunks_.push_back(std::move(ch));
  chunk_ = chunks_.size() - 1;
  used_ = bytes;
  return chunks_.back().mem.get();
}

void BindContext(WeftKernelContext& c, const CompiledNode& n, WeftStage stage, WeftTensor* const* ins,
                 WeftTensor* const* outs, CallState* st) {
  c = WeftKernelContext{};
  c.struct_size = sizeof(WeftKernelContext);
  c.stage = stage;
  c.api = &kHostApi;
  c.engine = st;
  c.op_type = n.op_type.c_str();
  c.node_name = n.name.c_str();
  c.num_inputs = static_cast<uint32_t>(n.in_values.size());
  c.inputs = ins;
  c.num_outputs = static_cast<uint32_t>(n.out_values.size());
  c.outputs = outs;
  c.num_ir_inputs = static_cast<uint32_t>(n.ir_in_start.size());
  c.ir_input_start = n.ir_in_start.data();
  c.ir_input_count = n.ir_in_count.data();
  c.num_ir_outputs = static_cast<uint32_t>(n.ir_out_start.size());
  c.ir_output_start = n.ir_out_start.data();
  c.ir_output_count = n.ir_out_count.data();
  c.num_attrs = static_cast<uint32_t>(n.attr_ptrs.size());
  c.attrs = n.attr_ptrs.data();
  c.attr_names = n.attr_names.data();
  c.stream = nullptr;
}

std::vector<StepInfo> ModelImpl::DescribeSteps() const {
  std::vector<StepInfo> out;
  for (auto& n : nodes) {
    StepInfo si;
    si.node = n->name;
    si.op_type = n->op_type;
    si.origin = n->op->origin;
    if (n->epilogue.activation != WEFT_ACT_NONE) si.fused_activation = ActivationName(n->epilogue.activation);
    for (int io = 0; io < 2; ++io)
      for (int id : io ? n->out_values : n->in_values) {
        const Value& v = values[id];
        (io ? si.outputs : si.inputs).push_back({v.name, v.dtype, v.shape, static_cast<Format>(v.format)});
      }
    out.push_back(std::move(si));
  }
  return out;
}

std::string NodeError(const CompiledNode& n, const std::string& what, const std::string& message) {
  return "[" + n.op_type + " '" + n.name + "'] " + what + " failed: " +
         (message.empty() ? "returned failure without a message" : message);
}

RunContextImpl::RunContextImpl(const ModelImpl& m) : model(&m) {
  arena = std::unique_ptr<uint8_t, void (*)(void*)>(AlignedAlloc(m.memory_.arena_bytes), &AlignedFree);
  if (!arena) throw std::bad_alloc();
  tensors.resize(m.values.size());
  for (size_t k = 0; k < m.values.size(); ++k) {
    const Value& v = m.values[k];
    Tensor& t = tensors[k];
    t.dtype = v.dtype;
    *Shape::View(&t.shape) = v.shape;
    t.size_bytes = v.bytes;
    t.format = v.format;
    if (v.kind == ValueKind::kIntermediate) t.data = arena.get() + v.offset;
    if (v.kind == ValueKind::kConstant) t.data = const_cast<void*>(m.const_data[v.index]);
  }
  steps.resize(m.nodes.size());
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    const CompiledNode& n = *m.nodes[k];
    Step& s = steps[k];
    for (int id : n.in_values) s.ins.push_back(&tensors[id]);
    for (int id : n.out_values) s.outs.push_back(&tensors[id]);
    s.st.node = &n;
    s.st.error = &error;
    s.st.scratch = &scratch;
    s.st.env = m.env.get();
    if (m.dynamic) s.st.dynamic_arena = &dynamic_arena;
    s.bounds.resize(n.out_values.size());
    s.shape_buffers.resize(n.out_values.size(), nullptr);
    s.st.bounds = &s.bounds;
    s.st.shape_buffers = &s.shape_buffers;
    s.st.host_args = &s.host_args;
    s.st.variables = &variables;
    BindContext(s.c, n, WEFT_STAGE_EXECUTE, s.ins.data(), s.outs.data(), &s.st);
    s.exec = n.op->impl->execute;
    if ((n.op->impl->capabilities & WEFT_CAP_ARGS_UPDATER) && n.op->impl->update_host_args) {
      s.update_args = n.op->impl->update_host_args;
      s.bound_ptrs.assign(s.ins.size() + s.outs.size(), nullptr);
    }
    s.instance = n.instance;
  }
}

std::unique_ptr<RunContext> ModelImpl::CreateRunContext() const { return std::make_unique<RunContextImpl>(*this); }

namespace {
// Checks a caller tensor against the declared info; -1 dims in `info` match any extent.
Status CheckRef(const char* role, const ValueInfo& info, const TensorRef& r) {
  bool match = r.dtype == info.dtype && r.shape.ndim == info.shape.ndim;
  for (int64_t k = 0; match && k < r.shape.ndim; ++k)
    match = r.shape.dims[k] >= 0 && (info.shape.dims[k] < 0 || info.shape.dims[k] == r.shape.dims[k]);
  if (!match)
    return InvalidArgument(std::string(role) + " '" + info.name + "' must be " + DataTypeName(info.dtype) +
                           info.shape.ToString() + ", got " + DataTypeName(r.dtype) + r.shape.ToString());
  uint64_t need = 0;
  if (!r.shape.GetCheckedBytes(DataTypeSize(info.dtype), &need))
    return InvalidArgument(std::string(role) + " '" + info.name + "' has shape " + r.shape.ToString() + ", larger than any tensor can be");
  if (r.bytes < need || (need && !r.data))
    return InvalidArgument(std::string(role) + " '" + info.name + "' needs a buffer of " + std::to_string(need) +
                           " bytes, got " + std::to_string(r.bytes));
  return Status::Ok();
}

// Run-time shape inference for one step of a dynamic-shape model, then output allocation.
Status InferAndAllocate(Step& s, RunContextImpl& rc) {
  const CompiledNode& n = *s.st.node;
  const WeftOpImpl* impl = n.op->impl;
  for (WeftTensor* t : s.outs) t->shape.ndim = 0;
  for (auto& b : s.bounds) b.set = false;
  if ((impl->capabilities & WEFT_CAP_SHAPE_INFER) && impl->infer_shape) {
    s.c.stage = WEFT_STAGE_INFER_SHAPE;
    WeftStatus st = impl->infer_shape(s.instance, &s.c);
    s.c.stage = WEFT_STAGE_EXECUTE;
    if (st != WEFT_STATUS_OK) {
      std::string msg = NodeError(n, "InferShape", rc.error);
      rc.error.clear();
      return InvalidArgument(msg);
    }
  } else {
    const Prototype& p = n.op->proto;
    for (size_t ir = 0; ir < p.outputs.size(); ++ir) {
      int src = p.outputs[ir].same_as_input;
      if (src < 0 || n.ir_in_count[src] == 0) continue;
      for (uint32_t r = 0; r < n.ir_out_count[ir]; ++r)
        s.outs[n.ir_out_start[ir] + r]->shape = s.ins[n.ir_in_start[src]]->shape;
    }
  }
  s.has_bounds = false;
  s.deferred = false;
  for (size_t k = 0; k < s.outs.size(); ++k) {
    WeftTensor* t = s.outs[k];
    const Tensor* v = Tensor::View(t);
    if (t->shape.ndim < 0 || t->shape.ndim > WEFT_MAX_DIMS)
      return InvalidArgument("[" + n.op_type + " '" + n.name + "'] InferShape produced rank " + std::to_string(t->shape.ndim));
    size_t bytes = 0;
    if (v->GetShape().IsUnknown() && !s.bounds[k].set && SizesOutputsInExecute(n)) {
      s.deferred = true;  // Execute places it (MallocOutput with st.dynamic_arena)
      t->data = nullptr;
      t->size_bytes = 0;
      continue;
    }
    if (v->GetShape().IsUnknown()) {
      if (!s.bounds[k].set)
        return InvalidArgument("[" + n.op_type + " '" + n.name + "'] InferShape left the output shape unknown (" +
                               v->GetShape().ToString() + ") although all input values are known, and gave no bound "
                               "(SetOutputShapeBound) for a data-dependent output");
      s.has_bounds = true;
      s.shape_buffers[k] = nullptr;
    } else {
      s.bounds[k].set = false;
    }
    // The size in bytes, checked: a shape computed from input values may not fit in memory or
    // even in 64 bits (its element count overflowing to a small number).
    const Shape& sized = v->GetShape().IsUnknown() ? s.bounds[k].shape : v->GetShape();
    uint64_t checked = 0;
    if (!sized.GetCheckedBytes(DataTypeSize(v->GetDataType()), &checked))
      return InvalidArgument("[" + n.op_type + " '" + n.name + "'] output " + std::to_string(k) + " would have shape " + sized.ToString() +
                             ", larger than any tensor can be");
    bytes = static_cast<size_t>(checked);
    t->data = rc.dynamic_arena.Alloc(bytes ? bytes : 1);
    t->size_bytes = bytes;
    if (!t->data) return Internal("[" + n.op_type + " '" + n.name + "'] out of memory for " + std::to_string(bytes) + " bytes");
  }
  return Status::Ok();
}
}  // namespace

Status FinishBoundedOutputs(Step& s, std::string& error) {
  const CompiledNode& n = *s.st.node;
  for (size_t k = 0; k < s.outs.size(); ++k) {
    if (!s.bounds[k].set) continue;
    WeftTensor* t = s.outs[k];
    if (const uint64_t* buf = s.shape_buffers[k]) {
      s.shape_buffers[k] = nullptr;
      uint64_t ndim = buf[0];
      const Shape& b = s.bounds[k].shape;
      if (ndim != static_cast<uint64_t>(b.ndim))
        return Internal(NodeError(n, "Execute", "the shape buffer of output " + std::to_string(k) + " reports rank " +
                                                    std::to_string(ndim) + ", its bound " + b.ToString() + " has rank " +
                                                    std::to_string(b.ndim)));
      WeftShape real{};
      real.ndim = static_cast<int64_t>(ndim);
      bool fits = true;
      for (uint64_t d = 0; d < ndim; ++d) {
        fits = fits && buf[1 + d] <= static_cast<uint64_t>(b.dims[d]);
        real.dims[d] = fits ? static_cast<int64_t>(buf[1 + d]) : -1;
      }
      if (!fits) {
        std::string got = "[";
        for (uint64_t d = 0; d < ndim; ++d) got += (d ? "," : "") + std::to_string(buf[1 + d]);
        return Internal(NodeError(n, "Execute", "output " + std::to_string(k) + " reported shape " + got + "] through its shape buffer, outside its bound " + b.ToString()));
      }
      t->shape = real;
    }
    if (Shape(t->shape).IsUnknown())
      return Internal(NodeError(n, "Execute", "output " + std::to_string(k) + " is data-dependent but Execute did not report its real shape "
                                "(SetOutputShape, SetOutputShapeBuffer, or MallocOutputTensor with the real shape)"));
    t->size_bytes = static_cast<uint64_t>(Shape(t->shape).GetShapeSize()) * DataTypeSize(static_cast<DataType>(t->dtype));
  }
  (void)error;
  return Status::Ok();
}

namespace {
// Tells an ArgsUpdater op about new input/output addresses before it runs.
inline Status RefreshArgs(Step& s, std::atomic<uint64_t>& counter) {
  size_t k = 0;
  bool changed = false;
  for (WeftTensor* t : s.ins) changed |= s.bound_ptrs[k++] != t->data;
  for (WeftTensor* t : s.outs) changed |= s.bound_ptrs[k++] != t->data;
  if (!changed) return Status::Ok();
  s.c.stage = WEFT_STAGE_UPDATE_ARGS;
  WeftStatus r = s.update_args(s.instance, &s.c);
  s.c.stage = WEFT_STAGE_EXECUTE;
  if (r != WEFT_STATUS_OK) {
    std::string msg = NodeError(*s.st.node, "UpdateHostArgs", *s.st.error);
    s.st.error->clear();
    return Internal(msg);
  }
  k = 0;
  for (WeftTensor* t : s.ins) s.bound_ptrs[k++] = t->data;
  for (WeftTensor* t : s.outs) s.bound_ptrs[k++] = t->data;
  counter.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}
}  // namespace

// Plugin checking mode: one step under watch. Returns a violation (with the step's own status
// in *status either way).
Status ModelImpl::CheckedExecute(Step& s, RunContextImpl& rc, WeftStatus* status) const {
  constexpr uint8_t kPoison[2] = {0xA5, 0x5A};
  const CompiledNode& n = *s.st.node;
  auto tag = [&](const char* what, size_t k, int id) {
    return "[" + n.op_type + " '" + n.name + "'] " + what + " #" + std::to_string(k) + " ('" + values[id].name + "')";
  };
  const uint8_t* arena_lo = rc.arena.get();
  const uint8_t* arena_hi = arena_lo + memory_.arena_bytes;
  auto in_arena = [&](const void* p) { return p >= arena_lo && p < arena_hi; };
  std::vector<uint64_t> in_hash(s.ins.size(), 0);
  for (size_t k = 0; k < s.ins.size(); ++k) {
    const Tensor* t = Tensor::View(s.ins[k]);
    if (t && t->data) in_hash[k] = XXH3_64bits(t->data, t->GetByteCount());
  }
  // Outputs: poisoned, with a red zone after each one the arena holds.
  auto arm = [&](uint8_t poison) {
    for (auto* w : s.outs) {
      Tensor* t = Tensor::View(w);
      if (!t || !t->data) continue;
      std::memset(t->data, poison, t->GetByteCount());
      if (in_arena(t->data)) std::memset(static_cast<uint8_t*>(t->data) + t->GetByteCount(), kGuardByte, kRedZoneBytes);
    }
    rc.scratch.Reset();
    rc.scratch.guarded = true;
  };
  auto check_guards = [&]() -> Status {
    for (size_t k = 0; k < s.outs.size(); ++k) {
      const Tensor* t = Tensor::View(s.outs[k]);
      if (!t || !t->data || !in_arena(t->data)) continue;
      const uint8_t* z = static_cast<const uint8_t*>(t->data) + t->GetByteCount();
      for (size_t b = 0; b < kRedZoneBytes; ++b)
        if (z[b] != kGuardByte)
          return Internal(tag("wrote past the end of output", k, n.out_values[k]) + ": byte " + std::to_string(b) +
                          " after its " + std::to_string(t->GetByteCount()) + " bytes");
    }
    for (auto& [z, len] : rc.scratch.guards)
      for (size_t b = 0; b < len; ++b)
        if (z[b] != kGuardByte)
          return Internal("[" + n.op_type + " '" + n.name + "'] wrote past the end of a MallocWorkSpace block (byte " +
                          std::to_string(b) + " after it)");
    return Status::Ok();
  };
  // A stateful op keeps its state in its per-context block (GetHostArgs): a second run of the
  // step must start from the state the first one started from.
  const std::vector<uint8_t> state_before = s.update_args ? std::vector<uint8_t>() : s.host_args;
  arm(kPoison[0]);
  *status = s.exec(s.instance, &s.c);
  rc.scratch.guarded = false;
  WEFT_RETURN_IF_ERROR(check_guards());
  for (size_t k = 0; k < s.ins.size(); ++k) {
    const Tensor* t = Tensor::View(s.ins[k]);
    if (t && t->data && XXH3_64bits(t->data, t->GetByteCount()) != in_hash[k])
      return Internal(tag("modified its input", k, n.in_values[k]) + " (inputs are read-only)");
  }
  if (*status != WEFT_STATUS_OK || s.has_bounds) return Status::Ok();
  // Elements still holding the poison may be unwritten: run again with the other poison; an
  // element that holds each poison after the run that wrote it was never written.
  std::vector<std::vector<int64_t>> suspects(s.outs.size());
  bool any = false;
  for (size_t k = 0; k < s.outs.size(); ++k) {
    const Tensor* t = Tensor::View(s.outs[k]);
    if (!t || !t->data) continue;
    size_t elem = DataTypeSize(t->GetDataType());
    const uint8_t* p = static_cast<const uint8_t*>(t->data);
    for (int64_t i = 0; elem && i < t->GetShapeSize(); ++i)
      if (std::all_of(p + i * elem, p + (i + 1) * elem, [&](uint8_t b) { return b == kPoison[0]; })) {
        suspects[k].push_back(i);
        any = true;
      }
  }
  if (!any) return Status::Ok();
  if (!s.update_args) {  // the state as the first run found it (a block first handed out is zeros)
    if (state_before.empty()) std::fill(s.host_args.begin(), s.host_args.end(), uint8_t{0});
    else if (s.host_args.size() == state_before.size()) s.host_args = state_before;
  }
  arm(kPoison[1]);
  *status = s.exec(s.instance, &s.c);
  rc.scratch.guarded = false;
  WEFT_RETURN_IF_ERROR(check_guards());
  if (*status != WEFT_STATUS_OK) return Status::Ok();
  for (size_t k = 0; k < s.outs.size(); ++k) {
    const Tensor* t = Tensor::View(s.outs[k]);
    size_t elem = DataTypeSize(t->GetDataType()), unwritten = 0;
    int64_t first = -1;
    const uint8_t* p = static_cast<const uint8_t*>(t->data);
    for (int64_t i : suspects[k])
      if (std::all_of(p + i * elem, p + (i + 1) * elem, [&](uint8_t b) { return b == kPoison[1]; })) {
        if (first < 0) first = i;
        ++unwritten;
      }
    if (unwritten)
      return Internal(tag("left elements of output", k, n.out_values[k]) + " unwritten: " + std::to_string(unwritten) +
                      " of " + std::to_string(t->GetShapeSize()) + ", the first at flat index " + std::to_string(first));
  }
  return Status::Ok();
}

Status ModelImpl::Execute(RunContextImpl& rc, const TensorRef* in, size_t num_in, const TensorRef* out) const {
  if (num_in != input_ids.size())
    return InvalidArgument("Run: the model takes " + std::to_string(input_ids.size()) + " inputs, got " + std::to_string(num_in));
  for (size_t k = 0; k < num_in; ++k) {
    WEFT_RETURN_IF_ERROR(CheckRef("input", inputs_[k], in[k]));
    Tensor& t = rc.tensors[input_ids[k]];
    t.data = in[k].data;
    t.size_bytes = in[k].bytes;
    t.shape = in[k].shape;
  }
  if (!dynamic)  // graph outputs go straight into the caller's buffers when given
    for (size_t k = 0; k < output_ids.size(); ++k) {
      const Value& v = values[output_ids[k]];
      if (v.kind == ValueKind::kIntermediate && v.producer >= 0)
        rc.tensors[output_ids[k]].data = out ? out[k].data : rc.arena.get() + v.offset;
    }
  rc.dynamic_arena.Reset();
  StepObserver* observer = rc.step_observer();
  const bool timed = rc.step_ns || observer;
  for (Step& s : rc.steps) {
    if (!s.st.node->guards.empty()) [[unlikely]] {
      bool taken = true;
      for (auto& [id, want] : s.st.node->guards) {
        const Tensor& c = rc.tensors[id];
        taken = taken && c.data && c.size_bytes > 0 && (*static_cast<const uint8_t*>(c.data) != 0) == want;
      }
      if (!taken) continue;  // a branch the condition does not take
    }
    rc.scratch.Reset();
    if (dynamic) [[unlikely]] WEFT_RETURN_IF_ERROR(InferAndAllocate(s, rc));
    if (s.update_args) [[unlikely]] WEFT_RETURN_IF_ERROR(RefreshArgs(s, args_updates_));
    std::chrono::steady_clock::time_point t0, t1;
    if (timed) [[unlikely]] t0 = std::chrono::steady_clock::now();
    WeftStatus status;
    if (env && env->check_plugins) [[unlikely]] {
      Status violation = CheckedExecute(s, rc, &status);
      if (!violation.ok()) return violation;
    } else {
      status = s.exec(s.instance, &s.c);
    }
    const size_t index = static_cast<size_t>(&s - rc.steps.data());
    if (timed) [[unlikely]] {
      t1 = std::chrono::steady_clock::now();
      if (rc.step_ns) (*rc.step_ns)[index] = std::max(0.0, (*rc.step_ns)[index]) + std::chrono::duration<double, std::nano>(t1 - t0).count();
    }
    if (status != WEFT_STATUS_OK) [[unlikely]] {
      std::string msg = NodeError(*s.st.node, "Execute", rc.error);
      rc.error.clear();
      return Internal(msg);
    }
    if (s.has_bounds) [[unlikely]] WEFT_RETURN_IF_ERROR(FinishBoundedOutputs(s, rc.error));
    if (s.deferred) [[unlikely]]
      for (size_t k = 0; k < s.outs.size(); ++k)
        if (!s.outs[k]->data)
          return Internal(NodeError(*s.st.node, "Execute", "output " + std::to_string(k) + " was never allocated (MallocOutputTensor)"));
    if (observer) [[unlikely]] {
      StepEvent e;
      e.index = index;
      e.node = s.st.node->name;
      e.op_type = s.st.node->op_type;
      e.start = t0;
      e.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0);
      e.inputs = s.ins.data();
      e.num_inputs = s.ins.size();
      e.outputs = s.outs.data();
      e.num_outputs = s.outs.size();
      observer->OnStep(e);
    }
  }
  return Status::Ok();
}

size_t ModelImpl::cached_plans() const {
  std::lock_guard<std::mutex> l(plans_mu_);
  size_t n = 0;
  for (auto& [sig, p] : plans_) n += p != nullptr;
  return n;
}

std::shared_ptr<const CompiledModel> ModelImpl::Specialize(const TensorRef* in, size_t n, std::string& sig) const {
  constexpr size_t kMaxPlans = 16;
  if (!specialize || n != input_ids.size()) return nullptr;
  sig.clear();  // the caller's buffer: no allocation once it has grown
  for (size_t k = 0; k < n; ++k) {
    // Only shapes the declaration admits; anything else gets its error on the generic path.
    if (!CheckRef("input", inputs_[k], in[k]).ok()) return nullptr;
    // A sequence's or optional's size follows its contents: a plan per size would not be reused.
    if (IsSequenceType(inputs_[k].dtype) || IsOptionalType(inputs_[k].dtype)) return nullptr;
    sig.append(reinterpret_cast<const char*>(&in[k].shape.ndim), sizeof(int64_t) * (1 + in[k].shape.ndim));
  }
  {
    std::lock_guard<std::mutex> l(plans_mu_);
    if (auto it = plans_.find(sig); it != plans_.end()) return it->second;
    if (plans_.size() >= kMaxPlans) return nullptr;
  }
  std::vector<Shape> shapes;
  for (size_t k = 0; k < n; ++k) shapes.push_back(in[k].shape);
  auto r = specialize(shapes);
  std::shared_ptr<const CompiledModel> plan;
  if (r.ok() && !r.value()->has_dynamic_shapes()) plan = r.value();
  std::lock_guard<std::mutex> l(plans_mu_);
  auto [it, fresh] = plans_.emplace(sig, plan);
  return it->second;
}

std::shared_ptr<const CompiledModel> ModelImpl::SpecializedPlan(RunContextImpl& rc, const TensorRef* in, size_t num_in,
                                                                RunContext** sub) const {
  if (!specialize) return nullptr;
  auto plan = Specialize(in, num_in, rc.signature);
  if (!plan) return nullptr;
  auto& ctx = rc.specialized[plan.get()];
  if (!ctx) {
    ctx = plan->CreateRunContext();
    if (auto* sub_rc = dynamic_cast<RunContextImpl*>(ctx.get())) sub_rc->variables = rc.variables;  // one set of variables
  }
  ctx->SetStepObserver(rc.step_observer());
  *sub = ctx.get();
  return plan;
}

Status ModelImpl::Run(RunContext& ctx, const TensorRef* in, size_t num_in, const TensorRef* out, size_t num_out) const {
  auto* rc = dynamic_cast<RunContextImpl*>(&ctx);
  if (!rc || rc->model != this) return InvalidArgument("Run: the RunContext belongs to a different model");
  OmpThreadsScope omp_threads;
  if (RunContext* sub = nullptr; auto plan = SpecializedPlan(*rc, in, num_in, &sub)) return plan->Run(*sub, in, num_in, out, num_out);
  if (num_in != input_ids.size() || num_out != output_ids.size())
    return InvalidArgument("Run: the model takes " + std::to_string(input_ids.size()) + " inputs and " +
                           std::to_string(output_ids.size()) + " outputs, got " + std::to_string(num_in) + " and " +
                           std::to_string(num_out));
  if (!dynamic)
    for (size_t k = 0; k < num_out; ++k) WEFT_RETURN_IF_ERROR(CheckRef("output", outputs_[k], out[k]));
  WEFT_RETURN_IF_ERROR(Execute(*rc, in, num_in, dynamic ? nullptr : out));
  for (size_t k = 0; k < num_out; ++k) {
    const Tensor& t = rc->tensors[output_ids[k]];
    if (dynamic) {
      ValueInfo actual{outputs_[k].name, t.GetDataType(), t.GetShape()};
      WEFT_RETURN_IF_ERROR(CheckRef("output", actual, out[k]));
    }
    if (t.data != out[k].data && t.GetByteCount()) std::memcpy(out[k].data, t.data, t.GetByteCount());
  }
  return Status::Ok();
}

Expected<std::vector<TensorRef>> ModelImpl::RunViews(RunContext& ctx, const TensorRef* in, size_t num_in) const {
  auto* rc = dynamic_cast<RunContextImpl*>(&ctx);
  if (!rc || rc->model != this) return InvalidArgument("Run: the RunContext belongs to a different model");
  OmpThreadsScope omp_threads;
  if (RunContext* sub = nullptr; auto plan = SpecializedPlan(*rc, in, num_in, &sub)) return plan->RunViews(*sub, in, num_in);
  WEFT_RETURN_IF_ERROR(Execute(*rc, in, num_in, nullptr));
  std::vector<TensorRef> out;
  for (int id : output_ids) {
    const Tensor& t = rc->tensors[id];
    out.push_back({t.GetDataType(), t.GetShape(), t.data, t.GetByteCount()});
  }
  return out;
}

Expected<std::vector<StepProfile>> ModelImpl::Profile(RunContext& ctx, const TensorRef* in, size_t num_in, int runs) const {
  auto* rc = dynamic_cast<RunContextImpl*>(&ctx);
  if (!rc || rc->model != this) return InvalidArgument("Profile: the RunContext belongs to a different model");
  if (runs < 1) return InvalidArgument("Profile: runs must be at least 1");
  if (RunContext* sub = nullptr; auto plan = SpecializedPlan(*rc, in, num_in, &sub)) return plan->Profile(*sub, in, num_in, runs);
  WEFT_RETURN_IF_ERROR(Execute(*rc, in, num_in, nullptr));  // warm-up
  // Per run, each step's time (negative: the step did not run, a branch not taken).
  std::vector<std::vector<double>> samples(rc->steps.size());
  std::vector<double> ns(rc->steps.size());
  rc->step_ns = &ns;
  Status st;
  for (int r = 0; r < runs && st.ok(); ++r) {
    std::fill(ns.begin(), ns.end(), -1.0);
    st = Execute(*rc, in, num_in, nullptr);
    for (size_t k = 0; k < ns.size(); ++k)
      if (ns[k] >= 0) samples[k].push_back(ns[k]);
  }
  rc->step_ns = nullptr;
  if (!st.ok()) return st;
  std::vector<StepProfile> out;
  for (size_t k = 0; k < nodes.size(); ++k) {
    StepProfile p{nodes[k]->name, nodes[k]->op_type};
    std::vector<double>& v = samples[k];
    p.runs = static_cast<int>(v.size());
    double sum = 0;
    for (double x : v) sum += x;
    p.mean_us = sum / runs / 1000.0;
    if (!v.empty()) {
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      p.median_us = v[v.size() / 2] / 1000.0;
    }
    out.push_back(p);
  }
  return out;
}

void RunContextImpl::ResetState() {
  // An ArgsUpdater's block caches its arguments, not state: UpdateHostArgs keeps it current.
  for (Step& s : steps)
    if (!s.update_args && !s.host_args.empty()) std::fill(s.host_args.begin(), s.host_args.end(), uint8_t{0});
  variables->clear();  // every variable back to its initial value
  for (auto& [plan, ctx] : specialized) ctx->ResetState();
}

std::unique_ptr<RunContextImpl> ModelImpl::Acquire() const {
  {
    std::lock_guard<std::mutex> l(pool_mu_);
    if (!pool_.empty()) {
      auto rc = std::move(pool_.back());
      pool_.pop_back();
      return rc;
    }
  }
  return std::make_unique<RunContextImpl>(*this);
}

void ModelImpl::Release(std::unique_ptr<RunContextImpl> rc) const {
  std::lock_guard<std::mutex> l(pool_mu_);
  pool_.push_back(std::move(rc));
}

Expected<std::vector<HostTensor>> ModelImpl::Run(const std::vector<HostTensor>& inputs) const {
  std::vector<TensorRef> in;
  for (auto& t : inputs) in.push_back(TensorRef::Of(t));
  if (specialize)
    if (std::string sig; auto plan = Specialize(in.data(), in.size(), sig)) return plan->Run(inputs);
  std::unique_ptr<RunContextImpl> rc;
  try {
    rc = Acquire();
  } catch (const std::bad_alloc&) {
    return IoError("Run: not enough memory for the model's " + std::to_string(memory_.arena_bytes) + "-byte arena");
  }
  rc->ResetState();  // a pooled context may carry another call's state: each call starts fresh
  Status s = Execute(*rc, in.data(), in.size(), nullptr);
  std::vector<HostTensor> results;
  try {
    if (s.ok())
      for (int id : output_ids) {
        const Tensor& t = rc->tensors[id];
        results.emplace_back(t.GetDataType(), t.GetShape());
        if (t.GetByteCount()) std::memcpy(results.back().data(), t.data, t.GetByteCount());
      }
  } catch (const std::bad_alloc&) {
    s = IoError("Run: not enough memory for the outputs");
  }
  Release(std::move(rc));
  if (!s.ok()) return s;
  return results;
}

Expected<std::map<std::string, HostTensor>> ModelImpl::RunNamed(const std::map<std::string, HostTensor>& inputs) const {
  std::vector<HostTensor> ordered;
  for (auto& info : inputs_) {
    auto it = inputs.find(info.name);
    if (it == inputs.end()) return InvalidArgument("Run: missing input '" + info.name + "'");
    ordered.push_back(it->second);
  }
  for (auto& [name, t] : inputs) {
    bool known = false;
    for (auto& info : inputs_) known = known || info.name == name;
    if (!known) return InvalidArgument("Run: the model has no input named '" + name + "'");
  }
  auto r = Run(ordered);
  if (!r.ok()) return r.status();
  std::map<std::string, HostTensor> out;
  for (size_t k = 0; k < outputs_.size(); ++k) out[outputs_[k].name] = std::move(r.value()[k]);
  return out;
}

}  // namespace weft::internal
