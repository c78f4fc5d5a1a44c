// The Weft operator SDK: capability interfaces, callback contexts and REG_AUTO_MAPPING_OP.
// (One header on purpose: a plugin includes it alone; splitting it would only move the length.)
//
// An operator is a class deriving from one or more capability interfaces:
//
//   class AddCustom : public weft::EagerExecuteOp {
//    public:
//     weft::graphStatus Execute(weft::EagerOpExecutionContext* ctx) override;
//   };
//   REG_AUTO_MAPPING_OP(AddCustom);
//
// The engine asks which capabilities a class has; every one is optional. Callbacks return
// GRAPH_SUCCESS or GRAPH_FAILED; an exception escaping a callback is caught here and reported
// with the op type and node name. Header-only, C++17; a plugin links nothing of Weft.
#ifndef WEFT_CUSTOM_OP_H_
#define WEFT_CUSTOM_OP_H_

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "weft/c/weft_plugin.h"
#include "weft/op_def.h"
#include "weft/runtime_attrs.h"
#include "weft/types.h"

namespace weft {

// A tensor's data type and layouts (GE's gert::CompileTimeTensorDesc), over an input or output
// of the node; valid while the callback runs.
class CompileTimeTensorDesc : private WeftTensor {
 public:
  DataType GetDataType() const { return Tensor::View(this)->GetDataType(); }
  Format GetStorageFormat() const { return Tensor::View(this)->GetStorageFormat(); }
  Format GetOriginFormat() const { return Tensor::View(this)->GetOriginFormat(); }
  StorageFormat GetFormat() const { return StorageFormat(GetOriginFormat(), GetStorageFormat()); }

  static const CompileTimeTensorDesc* View(const WeftTensor* t) { return static_cast<const CompileTimeTensorDesc*>(t); }
};

// The node a callback runs for (GE's gert::ComputeNodeInfo): type, name, input/output counts,
// tensor descriptions and attributes. From KernelContextBase::GetComputeNodeInfo(); valid while
// the callback runs.
//   const ComputeNodeInfo* node = ctx->GetComputeNodeInfo();
//   Format f = node->GetInputTdInfo(0)->GetStorageFormat();
class ComputeNodeInfo {
 public:
  explicit ComputeNodeInfo(const WeftKernelContext* c) : c_(c), attrs_(c) {}
  const char* GetNodeType() const { return c_->op_type; }
  const char* GetNodeName() const { return c_->node_name; }
  // Inputs/outputs declared in REG_OP.
  size_t GetIrInputsNum() const { return c_->num_ir_inputs; }
  size_t GetIrOutputsNum() const { return c_->num_ir_outputs; }
  // Tensors the node has: absent optional inputs not counted, dynamic ones once per instance.
  size_t GetInputsNum() const { return c_->num_inputs; }
  size_t GetOutputsNum() const { return c_->num_outputs; }
  // Input/output instance `i` (as GetInputTensor counts them), or nullptr out of range.
  const CompileTimeTensorDesc* GetInputTdInfo(size_t i) const {
    return i < c_->num_inputs ? CompileTimeTensorDesc::View(c_->inputs[i]) : nullptr;
  }
  const CompileTimeTensorDesc* GetOutputTdInfo(size_t i) const {
    return i < c_->num_outputs ? CompileTimeTensorDesc::View(c_->outputs[i]) : nullptr;
  }
  const RuntimeAttrs* GetAttrs() const { return &attrs_; }

 private:
  const WeftKernelContext* c_;
  RuntimeAttrs attrs_;
};

// What every callback context offers: node identity, inputs and outputs by instance index or
// by IR index (REG_OP order), attributes, and error reporting.
class KernelContextBase {
 public:
  explicit KernelContextBase(WeftKernelContext* c) : c_(c), node_(c) {}

  const char* GetNodeName() const { return c_->node_name; }
  const char* GetNodeType() const { return c_->op_type; }
  const RuntimeAttrs* GetAttrs() const { return node_.GetAttrs(); }
  // The node as GE describes it (type, name, counts, tensor descriptions, attributes).
  const ComputeNodeInfo* GetComputeNodeInfo() const { return &node_; }

  size_t GetComputeNodeInputNum() const { return c_->num_inputs; }
  size_t GetComputeNodeOutputNum() const { return c_->num_outputs; }
  const Tensor* GetInputTensor(size_t i) const {
    return i < c_->num_inputs ? Tensor::View(c_->inputs[i]) : nullptr;
  }
  const Tensor* GetRequiredInputTensor(size_t ir) const { return IrInput(ir, 0); }
  // nullptr when the optional input is absent.
  const Tensor* GetOptionalInputTensor(size_t ir) const { return IrInput(ir, 0); }
  const Tensor* GetDynamicInputTensor(size_t ir, size_t rel) const { return IrInput(ir, rel); }
  // How many tensors IR input `ir` has (0 for an absent optional, n for a dynamic input).
  size_t GetIrInputInstanceNum(size_t ir) const {
    return ir < c_->num_ir_inputs ? c_->ir_input_count[ir] : 0;
  }
  size_t GetIrOutputInstanceNum(size_t ir) const {
    return ir < c_->num_ir_outputs ? c_->ir_output_count[ir] : 0;
  }
  const Shape* GetInputShape(size_t i) const {
    auto t = GetInputTensor(i);
    return t ? &t->GetShape() : nullptr;
  }
  DataType GetInputDataType(size_t i) const {
    auto t = GetInputTensor(i);
    return t ? t->GetDataType() : DT_UNDEFINED;
  }
  DataType GetOutputDataType(size_t i) const {
    return i < c_->num_outputs ? Tensor::View(c_->outputs[i])->GetDataType() : DT_UNDEFINED;
  }
  // Records why the callback fails; return GRAPH_FAILED after calling it.
  void SetError(const std::string& message) const { c_->api->set_error(c_, message.c_str()); }
  // A session/compile option, or nullptr. Always set: "weft.intra_op_threads", "weft.target"
  // (the platform Compile builds kernels for, e.g. "x86_64-linux") and "weft.device" ("cpu").
  const char* GetOption(const char* key) const { return c_->api->get_option(c_, key); }
  // Scratch memory, 64-byte aligned, valid until this callback returns; nullptr on failure.
  void* MallocWorkSpace(size_t bytes) const { return c_->api->malloc_workspace(c_, bytes); }
  void* GetStream() const { return c_->stream; }
  // Runs fn(begin, end) over [0, n) on the engine's intra-op threads; plugins never spawn threads.
  // An exception thrown by fn fails the call (GRAPH_FAILED, with its message as the error)
  // instead of unwinding through the engine.
  template <typename F>
  graphStatus ParallelFor(int64_t n, int64_t grain, F&& fn) const {
    using Fn = std::remove_reference_t<F>;
    struct Call {
      Fn* fn;
      std::mutex mu;
      bool threw = false;
      std::string what;
    } call{std::addressof(fn), {}, false, {}};
    auto tramp = [](void* user, int64_t b, int64_t e) {
      auto* c = static_cast<Call*>(user);
      try {
        (*c->fn)(b, e);
      } catch (const std::exception& ex) {
        std::lock_guard<std::mutex> l(c->mu);
        if (!c->threw) c->threw = true, c->what = ex.what();
      } catch (...) {
        std::lock_guard<std::mutex> l(c->mu);
        if (!c->threw) c->threw = true, c->what = "an exception that is not a std::exception";
      }
    };
    bool ok = c_->api->parallel_for(c_, n, grain, tramp, &call) == WEFT_STATUS_OK;
    if (call.threw) {
      SetError("a ParallelFor body threw: " + call.what);
      return GRAPH_FAILED;
    }
    return ok ? GRAPH_SUCCESS : GRAPH_FAILED;
  }
  WeftKernelContext* raw() const { return c_; }
  // The activation the engine fused into output 0 (FusibleOp), available from Compile on;
  // `activation` is WEFT_ACT_NONE when nothing was fused.
  WeftEpilogue GetEpilogue() const {
    WeftEpilogue none{sizeof(WeftEpilogue), WEFT_ACT_NONE, 0.f, 0.f};
    if (!WEFT_HOST_API_HAS(c_->api, get_epilogue)) return none;
    const WeftEpilogue* e = c_->api->get_epilogue(c_);
    return e ? *e : none;
  }
  // The address of `symbol` in a runtime-compiled kernel of this node (see
  // OpCompileContext::CompileKernel), also after loading a model file; nullptr if unknown.
  void* GetKernel(const std::string& kernel_id, const char* symbol) const {
    if (!WEFT_HOST_API_HAS(c_->api, rtc_lookup)) return nullptr;
    return c_->api->rtc_lookup(c_, kernel_id.c_str(), symbol);
  }

 protected:
  Tensor* Output(size_t i) const { return i < c_->num_outputs ? Tensor::View(c_->outputs[i]) : nullptr; }
  const Tensor* IrInput(size_t ir, size_t rel) const {
    if (ir >= c_->num_ir_inputs || rel >= c_->ir_input_count[ir]) return nullptr;
    return Tensor::View(c_->inputs[c_->ir_input_start[ir] + rel]);
  }
  WeftKernelContext* c_;
  ComputeNodeInfo node_;
};

// Execute: real data. Outputs are obtained with MallocOutputTensor.
class EagerOpExecutionContext : public KernelContextBase {
 public:
  using KernelContextBase::KernelContextBase;
  // Returns output `i` with memory for `shape` x `dt`, or nullptr if it does not fit what
  // compilation planned (the error is recorded; return GRAPH_FAILED).
  Tensor* MallocOutputTensor(size_t i, const Shape& shape, DataType dt) const {
    return Tensor::View(c_->api->malloc_output(c_, static_cast<uint32_t>(i), &shape, dt, FORMAT_ND));
  }
  Tensor* MallocOutputTensor(size_t i, const StorageShape& shape, Format fmt, DataType dt) const {
    return Tensor::View(c_->api->malloc_output(c_, static_cast<uint32_t>(i), &shape.GetStorageShape(), dt, fmt));
  }
  // The output as planned (data may be unset before MallocOutputTensor).
  Tensor* GetOutputTensor(size_t i) const { return Output(i); }
  // Data-dependent shapes: the real shape of output `i`, whose buffer was sized for the bound
  // InferShape gave. The engine checks it lies within the bound.
  graphStatus SetOutputShape(size_t i, const Shape& shape) const {
    if (!WEFT_HOST_API_HAS(c_->api, set_output_shape)) return GRAPH_FAILED;
    return c_->api->set_output_shape(c_, static_cast<uint32_t>(i), &shape) == WEFT_STATUS_OK ? GRAPH_SUCCESS : GRAPH_FAILED;
  }
  // Data-dependent shapes, GE style: `buffer` (e.g. from MallocWorkSpace) holds uint64
  // [ndim, d0, d1, ...] once the kernel has run; the engine reads it after Execute returns.
  graphStatus SetOutputShapeBuffer(size_t i, const uint64_t* buffer) const {
    if (!WEFT_HOST_API_HAS(c_->api, set_output_shape_buffer)) return GRAPH_FAILED;
    return c_->api->set_output_shape_buffer(c_, static_cast<uint32_t>(i), buffer) == WEFT_STATUS_OK ? GRAPH_SUCCESS : GRAPH_FAILED;
  }
  // The per-run-context argument block UpdateHostArgs filled (same size), or nullptr.
  void* GetHostArgs(size_t bytes) const {
    return WEFT_HOST_API_HAS(c_->api, host_args) ? c_->api->host_args(c_, bytes) : nullptr;
  }
  template <typename T>
  T* GetHostArgs() const { return static_cast<T*>(GetHostArgs(sizeof(T))); }
};

// InferShape: input shapes (and values of constant inputs); write output shapes.
class InferShapeContext : public KernelContextBase {
 public:
  using KernelContextBase::KernelContextBase;
  Shape* GetOutputShape(size_t i) const { auto t = Output(i); return t ? &t->MutableShape() : nullptr; }
  const Shape* GetOptionalInputShape(size_t ir) const {
    auto t = GetOptionalInputTensor(ir);
    return t ? &t->GetShape() : nullptr;
  }
  const Shape* GetDynamicInputShape(size_t ir, size_t rel) const {
    auto t = GetDynamicInputTensor(ir, rel);
    return t ? &t->GetShape() : nullptr;
  }
  // Data-dependent shapes: output `i` keeps -1 dims in GetOutputShape(i); `bound` is the largest
  // shape it can take. Execute then reports the real shape (SetOutputShape/SetOutputShapeBuffer).
  graphStatus SetOutputShapeBound(size_t i, const Shape& bound) const {
    if (!WEFT_HOST_API_HAS(c_->api, set_output_bound)) return GRAPH_FAILED;
    return c_->api->set_output_bound(c_, static_cast<uint32_t>(i), &bound) == WEFT_STATUS_OK ? GRAPH_SUCCESS : GRAPH_FAILED;
  }
};

// InferDataType: input types; set output types.
class InferDataTypeContext : public KernelContextBase {
 public:
  using KernelContextBase::KernelContextBase;
  graphStatus SetOutputDataType(size_t i, DataType dt) const {
    auto t = Output(i);
    if (!t) return GRAPH_FAILED;
    t->dtype = dt;
    return GRAPH_SUCCESS;
  }
};

// Compile: full input/output metadata (shape, type, format). Constant inputs (weights) also carry
// their data, so kernels can prepack them; other inputs have no data.
class OpCompileContext : public KernelContextBase {
 public:
  using KernelContextBase::KernelContextBase;
  const Tensor* GetOutputTensor(size_t i) const { return Output(i); }
  // Stores output `i` in another layout that needs `bytes` (e.g. channel-blocked). Only for
  // outputs whose every consumer reads that layout. Needs an engine with this service.
  graphStatus SetOutputStorage(size_t i, size_t bytes, Format format) const {
    if (c_->api->struct_size < offsetof(WeftHostApi, set_output_storage) + sizeof(void*)) return GRAPH_FAILED;
    return c_->api->set_output_storage(c_, static_cast<uint32_t>(i), bytes, format) == WEFT_STATUS_OK ? GRAPH_SUCCESS : GRAPH_FAILED;
  }
  // A kernel compiled from source at graph-compile time.
  struct CompiledKernel {
    void* symbol = nullptr;  // the requested function, nullptr on failure (error recorded)
    std::string id;          // finds it again with GetKernel, also in a loaded model file
  };
  // Compiles C (`language` "c") or C++ ("c++") source with the system compiler into native code
  // loaded in-process, through the runtime's kernel cache (WEFT_CACHE_DIR), and returns the
  // address of `symbol`. On failure the compiler's diagnostics are in the recorded error.
  CompiledKernel CompileKernel(const std::string& source, const char* symbol, const char* language = "c",
                               const char* options = nullptr, const char* tag = nullptr) const {
    CompiledKernel k;
    if (!WEFT_HOST_API_HAS(c_->api, rtc_compile)) {
      SetError("this engine offers no runtime compilation service");
      return k;
    }
    WeftRtcSource src{sizeof(WeftRtcSource), language, source.c_str(), options, tag};
    char id[65] = {0};
    if (!c_->api->rtc_compile(c_, &src, id, sizeof(id))) return k;
    k.id = id;
    k.symbol = c_->api->rtc_lookup(c_, id, symbol);
    if (!k.symbol) SetError(std::string("the compiled kernel has no symbol '") + symbol + "'");
    return k;
  }
};

// Serialize: writes one or more keyed blobs into the model file.
class OpSerializeContext : public KernelContextBase {
 public:
  using KernelContextBase::KernelContextBase;
  graphStatus WriteBlob(const std::string& key, const void* data, size_t size) const {
    return c_->api->write_blob(c_, key.c_str(), data, size) == WEFT_STATUS_OK ? GRAPH_SUCCESS : GRAPH_FAILED;
  }
  graphStatus WriteBlob(const std::string& key, const std::vector<uint8_t>& b) const { return WriteBlob(key, b.data(), b.size()); }
};

// Deserialize: the blobs a model file stored for this node, with the same input/output metadata
// Compile saw (constant inputs carry their data). Kernels it compiled are reachable by id.
class OpDeserializeContext : public KernelContextBase {
 public:
  OpDeserializeContext(WeftKernelContext* c, const uint8_t* d, uint64_t n) : KernelContextBase(c), data_(d), size_(n) {}
  const Tensor* GetOutputTensor(size_t i) const { return Output(i); }
  // The blob under `key` ("" is what Serialize(buffer) wrote); empty when there is none.
  std::vector<uint8_t> GetBlob(const std::string& key) const {
    if (key.empty()) return std::vector<uint8_t>(data_, data_ + size_);
    uint64_t n = 0;
    const uint8_t* p = WEFT_HOST_API_HAS(c_->api, read_blob) ? c_->api->read_blob(c_, key.c_str(), &n) : nullptr;
    return p ? std::vector<uint8_t>(p, p + n) : std::vector<uint8_t>();
  }
  bool HasBlob(const std::string& key) const {
    if (key.empty()) return true;
    uint64_t n = 0;
    return WEFT_HOST_API_HAS(c_->api, read_blob) && c_->api->read_blob(c_, key.c_str(), &n) != nullptr;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
};

// UpdateHostArgs: the new input/output addresses of a compiled node.
class UpdateArgsContext : public KernelContextBase {
 public:
  using KernelContextBase::KernelContextBase;
  const Tensor* GetOutputTensor(size_t i) const { return Output(i); }
  // Memory this node keeps per run context between runs (zeroed at first use), for the
  // arguments Execute reads back with GetHostArgs.
  void* GetHostArgs(size_t bytes) const {
    return WEFT_HOST_API_HAS(c_->api, host_args) ? c_->api->host_args(c_, bytes) : nullptr;
  }
  template <typename T>
  T* GetHostArgs() const { return static_cast<T*>(GetHostArgs(sizeof(T))); }
};

// Fusion and layout queries (stage WEFT_STAGE_QUERY): input/output types and shapes as inference
// left them; constant inputs carry their data.
class OpQueryContext : public KernelContextBase {
 public:
  using KernelContextBase::KernelContextBase;
  const Tensor* GetOutputTensor(size_t i) const { return Output(i); }
};

// Thrown by an SDK call whose failure the engine has already explained (set_error): a callback
// that lets it escape fails with the engine's message, not the exception's.
class ErrorRecorded : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Emit (EmittableOp, for `weft aot`): the node's metadata as the compiled model has it — types,
// static shapes, attributes, constant inputs with their data — plus the parts of the generated
// C module the op writes to. Generated code reaches tensors through the expressions Input() and
// Output() return; its init and run bodies see `ctx` (the module's context pointer) and return
// an int32_t: 0, or a code from CustomStatus() that the module hands to its caller unchanged.
// The methods throw ErrorRecorded when the engine refuses (the callback then fails with the
// engine's reason, naming the node); an emitter need not catch it.
class EmitContext : public KernelContextBase {
 public:
  using KernelContextBase::KernelContextBase;
  const Tensor* GetOutputTensor(size_t i) const { return KernelContextBase::Output(i); }
  // "((const T*)<expr>)" for input instance i; T is a C type such as "int8_t".
  std::string Input(size_t i, const char* ctype) const { return "((const " + std::string(ctype) + "*)" + Name(WEFT_EMIT_NAME_INPUT, i) + ")"; }
  // "((T*)<expr>)" for output instance i.
  std::string Output(size_t i, const char* ctype) const { return "((" + std::string(ctype) + "*)" + Name(WEFT_EMIT_NAME_OUTPUT, i) + ")"; }
  std::string Prefix() const { return Name(WEFT_EMIT_NAME_PREFIX, 0); }
  // A C identifier unique to this node (for helper names that depend on the node).
  std::string NodeId() const { return Name(WEFT_EMIT_NAME_NODE, 0); }
  // A pointer to the node's persistent state struct (declare its members with DeclareState).
  std::string State() const { return Name(WEFT_EMIT_NAME_STATE, 0); }
  // `#include header` (with its <> or ""), once per module.
  void Include(const std::string& header) const { Code(WEFT_EMIT_INCLUDE, header.c_str(), header); }
  // File-scope C under `key` (static functions, tables), once per module however many nodes ask.
  void Helper(const std::string& key, const std::string& code) const { Code(WEFT_EMIT_HELPER, key.c_str(), code); }
  // Members of the node's state struct, kept in the module's context between runs.
  void DeclareState(const std::string& members) const { Code(WEFT_EMIT_STATE, nullptr, members); }
  // State shared by every node that declares the same `key` with the same members (a variable one
  // node reads and another writes): State() then points at it. A node's state is its own or shared.
  void DeclareSharedState(const std::string& key, const std::string& members) const { Code(WEFT_EMIT_STATE, key.c_str(), members); }
  // Statements of the node's init (called once by <prefix>_init) and run functions.
  void Init(const std::string& code) const { Code(WEFT_EMIT_INIT, nullptr, code); }
  void Run(const std::string& code) const { Code(WEFT_EMIT_RUN, nullptr, code); }
  // A read-only array holding `count` elements of `dt`; returns its name.
  std::string Const(const std::string& hint, DataType dt, const void* data, size_t count) const {
    char buf[256];
    if (!WEFT_HOST_API_HAS(c_->api, emit_const) ||
        c_->api->emit_const(c_, hint.c_str(), dt, data, count, buf, sizeof(buf)) != WEFT_STATUS_OK)
      throw ErrorRecorded("emit_const('" + hint + "') was refused");
    return buf;
  }
  template <typename T>
  std::string Const(const std::string& hint, DataType dt, const std::vector<T>& v) const { return Const(hint, dt, v.data(), v.size()); }
  // `bytes` of arena scratch for this node's run function, 16-byte aligned: a uint8_t* expression.
  std::string Scratch(size_t bytes) const {
    char buf[256];
    if (!WEFT_HOST_API_HAS(c_->api, emit_scratch) || c_->api->emit_scratch(c_, bytes, buf, sizeof(buf)) != WEFT_STATUS_OK)
      throw ErrorRecorded("emit_scratch(" + std::to_string(bytes) + ") was refused");
    return buf;
  }
  // The status code n (0 to 999) of this op's own failures, in the range the module reserves for
  // them (1000 + n); the caller of <prefix>_run sees it unchanged.
  static int32_t CustomStatus(int32_t n) { return 1000 + (n < 0 ? 0 : n > 999 ? 999 : n); }

 private:
  std::string Name(int32_t what, size_t index) const {
    char buf[256];
    if (!WEFT_HOST_API_HAS(c_->api, emit_name) ||
        c_->api->emit_name(c_, what, static_cast<uint32_t>(index), buf, sizeof(buf)) != WEFT_STATUS_OK)
      throw ErrorRecorded("emit_name(" + std::to_string(what) + ", " + std::to_string(index) + ") was refused");
    return buf;
  }
  void Code(int32_t part, const char* key, const std::string& text) const {
    if (!WEFT_HOST_API_HAS(c_->api, emit_code) || c_->api->emit_code(c_, part, key, text.c_str()) != WEFT_STATUS_OK)
      throw ErrorRecorded("emit_code(part " + std::to_string(part) + ") was refused");
  }
};

// What a node can fuse; see WeftFusionSupport in weft/c/weft_plugin.h for the rules.
class FusionSupport {
 public:
  explicit FusionSupport(WeftFusionSupport* s) : s_(s) {}
  // As a producer: this node can apply activation `a` to its output 0 itself.
  FusionSupport& Absorb(WeftActivation a) { s_->absorbs |= WEFT_ACT_BIT(a); return *this; }
  // As a producer: optional IR input `ir` takes a residual addend (out = op(...) + addend).
  FusionSupport& SumInput(int32_t ir) { s_->sum_input = ir; return *this; }
  // As a producer: optional IR input `ir` takes a bias along the last dimension.
  FusionSupport& BiasInput(int32_t ir) { s_->bias_input = ir; return *this; }
  // As a consumer: this node computes activation `a` of its input 0 with these parameters.
  FusionSupport& IsActivation(WeftActivation a, float alpha = 0.f, float beta = 0.f) {
    s_->activation = a;
    s_->alpha = alpha;
    s_->beta = beta;
    return *this;
  }
  // As a consumer: this node computes input 0 + input 1 (ONNX Add).
  FusionSupport& IsAdd() { s_->is_add = 1; return *this; }
  // As a consumer: this node computes input 0 * input 1 (ONNX Mul). Ignored by an engine older
  // than the field.
  FusionSupport& IsMul() {
    if (s_->struct_size >= offsetof(WeftFusionSupport, is_mul) + sizeof(int32_t)) s_->is_mul = 1;
    return *this;
  }
  WeftFusionSupport* raw() const { return s_; }

 private:
  WeftFusionSupport* s_;
};

// Which tensors of a node may use a blocked layout; see WeftLayoutSupport.
class LayoutSupport {
 public:
  explicit LayoutSupport(WeftLayoutSupport* s) : s_(s) {}
  LayoutSupport& Format(::weft::Format f) { s_->format = f; return *this; }
  LayoutSupport& Input(uint32_t ir) { s_->inputs |= 1ull << ir; return *this; }
  LayoutSupport& Output(uint32_t ir) { s_->outputs |= 1ull << ir; return *this; }
  // The listed inputs and outputs are all blocked or all plain.
  LayoutSupport& Together() { s_->flags |= WEFT_LAYOUT_TOGETHER; return *this; }
  // Valid but slower than plain here: never chosen, still accepted from a model file.
  LayoutSupport& Slow() { s_->flags |= WEFT_LAYOUT_SLOW; return *this; }
  // Any layout the neighbours settle on, the same for every listed tensor (WEFT_LAYOUT_ANY);
  // after Format(f), plain or f only.
  LayoutSupport& AnyFormat() { s_->flags |= WEFT_LAYOUT_ANY | WEFT_LAYOUT_TOGETHER; return *this; }
  WeftLayoutSupport* raw() const { return s_; }

 private:
  WeftLayoutSupport* s_;
};

// ---- capability interfaces (virtual inheritance, as in GE) ----------------------------------
class BaseCustomOp {
 public:
  virtual ~BaseCustomOp() = default;
};
class EagerExecuteOp : public virtual BaseCustomOp {
 public:
  // Runs the kernel. Called concurrently from several threads on one compiled model: must not
  // modify the op object.
  virtual graphStatus Execute(EagerOpExecutionContext* ctx) = 0;
};
class ShapeInferOp : public virtual BaseCustomOp {
 public:
  virtual graphStatus InferShape(InferShapeContext* ctx) = 0;
  // Default: every output takes input 0's type (the common case for elementwise, layout and
  // normalisation ops). Override when an output's type differs.
  virtual graphStatus InferDataType(InferDataTypeContext* ctx) {
    DataType t = ctx->GetInputDataType(0);
    for (size_t i = 0; i < ctx->GetComputeNodeOutputNum(); ++i)
      if (ctx->SetOutputDataType(i, t) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return GRAPH_SUCCESS;
  }
};
class CompilableOp : public virtual BaseCustomOp {
 public:
  // Called once per node at graph compile time; may keep its artifacts in the object.
  virtual graphStatus Compile(OpCompileContext* ctx) = 0;
};
// Saves what Compile produced into the model file and restores it on load (Compile is not called
// then). Override the buffer pair (GE's form, one blob) or the keyed pair (several blobs, access
// to the node's metadata and its runtime-compiled kernels); the keyed defaults call the buffer
// pair with the default key "".
class PortableOp : public virtual BaseCustomOp {
 public:
  virtual graphStatus Serialize(std::vector<uint8_t>& buffer) { (void)buffer; return GRAPH_SUCCESS; }
  virtual graphStatus Deserialize(const std::vector<uint8_t>& buffer) { (void)buffer; return GRAPH_SUCCESS; }
  virtual graphStatus SerializeKeyed(OpSerializeContext* ctx) {
    std::vector<uint8_t> buf;
    graphStatus s = Serialize(buf);
    if (s != GRAPH_SUCCESS) return s;
    return ctx->WriteBlob("", buf);
  }
  virtual graphStatus DeserializeKeyed(OpDeserializeContext* ctx) { return Deserialize(ctx->GetBlob("")); }
};
// Called when a compiled node's input/output buffers change between runs (before Execute), so
// the op refreshes the arguments it prepared instead of being compiled again.
class ArgsUpdater : public virtual BaseCustomOp {
 public:
  virtual graphStatus UpdateHostArgs(UpdateArgsContext* ctx) = 0;
};

// Declares what the node can fuse (called at graph compile time, after inference, on the node's
// own object; answer from its attributes, types, shapes and constant inputs). The engine then
// tells Compile, Deserialize and Execute what it fused through GetEpilogue() and the sum/bias
// inputs it connected.
class FusibleOp : public virtual BaseCustomOp {
 public:
  virtual graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& support) = 0;
};
// Declares which inputs and outputs of the node may be exchanged in a blocked layout. The
// engine's choice arrives as the tensors' GetFormat(); an output chosen blocked gets its size
// from OpCompileContext::SetOutputStorage.
class LayoutAwareOp : public virtual BaseCustomOp {
 public:
  virtual graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& support) = 0;
};

// Writes the node's C for `weft aot` (docs/aot.md): helpers, state, init and run code through the
// EmitContext. Called once per node of the model being converted, after shapes are known.
class EmittableOp : public virtual BaseCustomOp {
 public:
  virtual graphStatus Emit(EmitContext* ctx) = 0;
};

// Hidden: each shared library keeps its own instantiations even when two libraries define
// classes with the same name.
namespace detail __attribute__((visibility("hidden"))) {

struct AttrErrors {
  // A callback that succeeded withdraws the error a name getter recorded on the way (a probe it
  // recovered from), so the message cannot surface in a later, unrelated failure.
  static void Withdraw(WeftKernelContext* ctx, const KernelContextBase* w) {
    if (w && w->GetAttrs()->reported_) ctx->api->set_error(ctx, "");
  }
};

// Runs a callback: exceptions become errors; `w` is the context the callback was given.
template <typename F>
inline WeftStatus Guard(WeftKernelContext* ctx, const char* what, F&& f,
                        const KernelContextBase* w = nullptr) noexcept {
  try {
    graphStatus s = f();
    if (s == GRAPH_SUCCESS) {
      AttrErrors::Withdraw(ctx, w);
      return WEFT_STATUS_OK;
    }
    return WEFT_STATUS_FAILED;
  } catch (const ErrorRecorded&) {
    // the engine's own message stands
  } catch (const std::exception& e) {
    ctx->api->set_error(ctx, (std::string(what) + " threw: " + e.what()).c_str());
  } catch (...) {
    ctx->api->set_error(ctx, (std::string(what) + " threw a non-standard exception").c_str());
  }
  return WEFT_STATUS_FAILED;
}

// Builds the C implementation table for class C from the capabilities it derives from.
template <typename C>
struct ImplAdapter {
  static_assert(std::is_base_of<BaseCustomOp, C>::value, "an operator class must derive from a capability interface");
  static void* Create(WeftKernelContext* ctx) {
    void* p = nullptr;
    Guard(ctx, "constructor", [&] { p = new C(); return GRAPH_SUCCESS; });
    return p;
  }
  static void Destroy(void* p) { delete static_cast<C*>(p); }
  static WeftStatus Execute(void* p, WeftKernelContext* c) {
    if constexpr (std::is_base_of<EagerExecuteOp, C>::value) {
      EagerOpExecutionContext w(c);
      return Guard(c, "Execute", [&] { return static_cast<C*>(p)->Execute(&w); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }
  static WeftStatus InferShape(void* p, WeftKernelContext* c) {
    if constexpr (std::is_base_of<ShapeInferOp, C>::value) {
      InferShapeContext w(c);
      return Guard(c, "InferShape", [&] { return static_cast<C*>(p)->InferShape(&w); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }
  static WeftStatus InferDataType(void* p, WeftKernelContext* c) {
    if constexpr (std::is_base_of<ShapeInferOp, C>::value) {
      InferDataTypeContext w(c);
      return Guard(c, "InferDataType", [&] { return static_cast<C*>(p)->InferDataType(&w); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }
  static WeftStatus Compile(void* p, WeftKernelContext* c) {
    if constexpr (std::is_base_of<CompilableOp, C>::value) {
      OpCompileContext w(c);
      return Guard(c, "Compile", [&] { return static_cast<C*>(p)->Compile(&w); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }
  static WeftStatus UpdateHostArgs(void* p, WeftKernelContext* c) {
    if constexpr (std::is_base_of<ArgsUpdater, C>::value) {
      UpdateArgsContext w(c);
      return Guard(c, "UpdateHostArgs", [&] { return static_cast<C*>(p)->UpdateHostArgs(&w); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }
  static WeftStatus Serialize(void* p, WeftKernelContext* c) {
    if constexpr (std::is_base_of<PortableOp, C>::value) {
      OpSerializeContext w(c);
      return Guard(c, "Serialize", [&] { return static_cast<PortableOp*>(static_cast<C*>(p))->SerializeKeyed(&w); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }
  static WeftStatus Deserialize(void* p, WeftKernelContext* c, const uint8_t* d, uint64_t n) {
    if constexpr (std::is_base_of<PortableOp, C>::value) {
      OpDeserializeContext w(c, d, n);
      return Guard(c, "Deserialize", [&] { return static_cast<PortableOp*>(static_cast<C*>(p))->DeserializeKeyed(&w); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }

  static WeftStatus QueryFusion(void* p, WeftKernelContext* c, WeftFusionSupport* out) {
    if constexpr (std::is_base_of<FusibleOp, C>::value) {
      OpQueryContext w(c);
      FusionSupport s(out);
      return Guard(c, "QueryFusion", [&] { return static_cast<C*>(p)->QueryFusion(&w, s); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }
  static WeftStatus QueryLayout(void* p, WeftKernelContext* c, WeftLayoutSupport* out) {
    if constexpr (std::is_base_of<LayoutAwareOp, C>::value) {
      OpQueryContext w(c);
      LayoutSupport s(out);
      return Guard(c, "QueryLayout", [&] { return static_cast<C*>(p)->QueryLayout(&w, s); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }

  static WeftStatus Emit(void* p, WeftKernelContext* c) {
    if constexpr (std::is_base_of<EmittableOp, C>::value) {
      EmitContext w(c);
      return Guard(c, "Emit", [&] { return static_cast<C*>(p)->Emit(&w); }, &w);
    } else { return WEFT_STATUS_FAILED; }
  }

  static const WeftOpImpl* Get(const char* class_name) {
    static const WeftOpImpl impl = [class_name] {
      WeftOpImpl t{};
      t.struct_size = sizeof(WeftOpImpl);
      t.class_name = class_name;
      t.create = &Create;
      t.destroy = &Destroy;
      if (std::is_base_of<EagerExecuteOp, C>::value) { t.capabilities |= WEFT_CAP_EAGER_EXECUTE; t.execute = &Execute; }
      if (std::is_base_of<ShapeInferOp, C>::value) {
        t.capabilities |= WEFT_CAP_SHAPE_INFER;
        t.infer_shape = &InferShape;
        t.infer_dtype = &InferDataType;
      }
      if (std::is_base_of<CompilableOp, C>::value) { t.capabilities |= WEFT_CAP_COMPILABLE; t.compile = &Compile; }
      if (std::is_base_of<PortableOp, C>::value) {
        t.capabilities |= WEFT_CAP_PORTABLE;
        t.serialize = &Serialize;
        t.deserialize = &Deserialize;
      }
      if (std::is_base_of<ArgsUpdater, C>::value) { t.capabilities |= WEFT_CAP_ARGS_UPDATER; t.update_host_args = &UpdateHostArgs; }
      if (std::is_base_of<FusibleOp, C>::value) { t.capabilities |= WEFT_CAP_FUSIBLE; t.query_fusion = &QueryFusion; }
      if (std::is_base_of<LayoutAwareOp, C>::value) { t.capabilities |= WEFT_CAP_LAYOUT; t.query_layout = &QueryLayout; }
      if (std::is_base_of<EmittableOp, C>::value) { t.capabilities |= WEFT_CAP_EMITTABLE; t.emit = &Emit; }
      return t;
    }();
    return &impl;
  }
};

// The per-library list REG_OP and REG_AUTO_MAPPING_OP fill. Hidden so that each shared library
// keeps its own even when several are loaded into one process.
class LibraryList {
 public:
  static LibraryList& Get() {
    static LibraryList list;
    return list;
  }
  void AddDef(std::unique_ptr<OpDef> def) { defs_.push_back(std::move(def)); }
  void AddImpl(const WeftOpImpl* impl) { impls_.push_back(impl); }
  void AddError(const std::string& e) { error_ += (error_.empty() ? "" : "; ") + e; }
  const WeftOpLibrary* Publish() {
    std::call_once(once_, [this] {
      for (auto& d : defs_) {
        if (!d->error().empty()) AddError(d->error());
        protos_.push_back(d->c());
      }
      lib_ = WeftOpLibrary{};
      lib_.struct_size = sizeof(WeftOpLibrary);
      lib_.abi_version = WEFT_ABI_VERSION;
      lib_.num_prototypes = static_cast<uint32_t>(protos_.size());
      lib_.prototypes = protos_.data();
      lib_.num_impls = static_cast<uint32_t>(impls_.size());
      lib_.impls = impls_.data();
      lib_.error = error_.empty() ? nullptr : error_.c_str();
    });
    return &lib_;
  }

 private:
  std::vector<std::unique_ptr<OpDef>> defs_;
  std::vector<const WeftOpImpl*> impls_;
  std::vector<const WeftOpPrototype*> protos_;
  std::string error_;
  std::once_flag once_;
  WeftOpLibrary lib_{};
};

template <typename C>
struct ImplRegistrar {
  explicit ImplRegistrar(const char* class_name) {
    LibraryList::Get().AddImpl(ImplAdapter<C>::Get(class_name));
  }
};

}  // namespace detail

template <typename Tag>
bool OpDefBuilder::End(const char* end_name, Tag*) {
  std::string type = def_->op_type();
  auto def = Build();
  if (type != end_name)
    detail::LibraryList::Get().AddError("REG_OP(" + type + ") is closed by OP_END_FACTORY_REG(" + end_name + ")");
  detail::LibraryList::Get().AddDef(std::move(def));
  return true;
}

// A prototype with its implementation: what a built-in op file hands to the engine.
struct OpEntry {
  std::unique_ptr<OpDef> def;
  const WeftOpImpl* impl = nullptr;
};

// The implementation table for class C, for registering built-ins explicitly.
template <typename C>
const WeftOpImpl* MakeOpImpl(const char* class_name) {
  return detail::ImplAdapter<C>::Get(class_name);
}

}  // namespace weft

#define WEFT_CONCAT_INNER(a, b) a##b
#define WEFT_CONCAT(a, b) WEFT_CONCAT_INNER(a, b)
// Binds class C to the REG_OP prototype of the same name. The key is the spelling of C as
// written, so REG_AUTO_MAPPING_OP(ns::Foo) binds to type "ns::Foo", not "Foo".
#define REG_AUTO_MAPPING_OP(C)                                                    \
  [[maybe_unused]] static const ::weft::detail::ImplRegistrar<C> WEFT_CONCAT( \
      weft_impl_registrar_, __COUNTER__)(#C)

// The library entry point, defined once per shared library (weak: every translation unit that
// includes this header may emit it). The engine itself defines WEFT_NO_PLUGIN_ENTRY.
#ifndef WEFT_NO_PLUGIN_ENTRY
extern "C" WEFT_PLUGIN_EXPORT __attribute__((weak)) const WeftOpLibrary* WeftGetOpLibrary(
    uint32_t engine_abi_version) {
  (void)engine_abi_version;
  return ::weft::detail::LibraryList::Get().Publish();
}
#endif

#endif  // WEFT_CUSTOM_OP_H_
