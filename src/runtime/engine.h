// Engine internals shared by the compiler and the runtime: compiled nodes and values, the
// host API given to operators, per-run state.
#ifndef WEFT_SRC_RUNTIME_ENGINE_H_
#define WEFT_SRC_RUNTIME_ENGINE_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <atomic>
#include <functional>

#include "registry/registry.h"
#include "rtc/kernel_cache.h"
#include "runtime/thread_pool.h"
#include "weft/custom_op.h"
#include "weft/weft.h"

namespace weft::internal {

// Session-wide settings operators can reach through the host API.
struct EngineEnv {
  std::map<std::string, std::string> options;
  uint64_t memory_budget = UINT64_MAX;  // bytes a model's arena may take (SessionOptions)
  bool check_plugins = false;            // plugin checking mode (SessionOptions::check_plugins)
  std::unique_ptr<ThreadPool> pool;
};

enum class ValueKind { kInput, kConstant, kIntermediate };

struct Value {
  std::string name;
  ValueKind kind = ValueKind::kIntermediate;
  DataType dtype = DT_UNDEFINED;
  Shape shape;
  size_t bytes = 0;
  int producer = -1;   // step index
  int last_use = -1;   // step index of the last consumer
  bool is_output = false;
  size_t offset = 0;   // arena offset (intermediates)
  int alias_of = -1;   // a view's input that dies at the view: this value takes its bytes (the plan)
  int32_t format = WEFT_FORMAT_ND;  // storage layout: the layout pass's choice (WeftLayoutSupport)
  bool storage_given = false;       // the producer's Compile called set_output_storage
  int index = -1;      // input index or constant index
  bool bounded = false;  // data-dependent: shape has -1 dims, `bound` is the largest it can be
  Shape bound;
};

// A data-dependent output's bound as InferShape reported it.
struct OutputBound {
  bool set = false;
  Shape shape;
};

struct CompiledNode {
  std::string name;
  std::string op_type;
  std::shared_ptr<const RegisteredOp> op;
  void* instance = nullptr;
  std::vector<int> in_values;  // flattened instances; absent optionals excluded
  std::vector<int> out_values;
  std::vector<uint32_t> ir_in_start, ir_in_count, ir_out_start, ir_out_count;
  std::vector<AttrValue> attrs;  // prototype order; never resized after compile
  std::vector<const WeftAttrValue*> attr_ptrs;
  std::vector<const char*> attr_names;
  bool folded = false;  // computed at compile time; its outputs are constants
  bool pruned = false;  // in a branch its condition, known at compile time, does not take
  // Runs only when each value (a bool scalar) holds the paired value (Node::when).
  std::vector<std::pair<int, bool>> guards;
  WeftEpilogue epilogue{sizeof(WeftEpilogue), WEFT_ACT_NONE, 0.f, 0.f};  // fused activation
  std::map<std::string, std::shared_ptr<RtcKernel>> kernels;  // runtime-compiled, by id
  CompiledNode() = default;
  CompiledNode(const CompiledNode&) = delete;
  ~CompiledNode() {
    if (instance) op->impl->destroy(instance);
  }
};

// 64-byte aligned bump allocator for MallocWorkSpace. Grows by adding chunks; once warm it
// serves the same pattern of requests without allocating.
class Scratch {
 public:
  void Reset() {
    chunk_ = 0;
    used_ = 0;
    guards.clear();
  }
  void* Alloc(size_t bytes);
  // Plugin checking mode: every block gets a red zone of kGuardByte, listed in `guards` (start,
  // bytes) until Reset.
  bool guarded = false;
  std::vector<std::pair<uint8_t*, size_t>> guards;

 private:
  struct Chunk {
    std::unique_ptr<uint8_t, void (*)(void*)> mem{nullptr, nullptr};
    size_t size = 0;
  };
  std::vector<Chunk> chunks_;
  size_t chunk_ = 0, used_ = 0;
};

// The AOT C generator's side of the emit_* host functions (src/aot/): one node at a time.
class EmitSink {
 public:
  virtual ~EmitSink() = default;
  virtual Status Code(int32_t part, const char* key, const char* text) = 0;
  virtual Status Name(int32_t what, uint32_t index, std::string* out) = 0;
  virtual Status Const(const char* hint, int32_t dtype, const void* data, uint64_t count, std::string* out) = 0;
  virtual Status Scratch(uint64_t bytes, std::string* out) = 0;
  // Writes `model` (a Loop or Scan body, compiled for fixed shapes) into the module being
  // generated as a module of its own under `prefix`: <prefix>_context, <prefix>_init (which takes
  // an external arena of <prefix>_ARENA_BYTES), <prefix>_run and <prefix>_inputs/_outputs, with
  // its includes and helpers merged into the module's. Its inputs stay intact across runs.
  virtual Status EmbedModel(const CompiledModel& model, const std::string& prefix, uint64_t* arena_bytes) = 0;
};

// What the host API functions find behind WeftKernelContext::engine.
struct CallState {
  const CompiledNode* node = nullptr;
  std::string* error = nullptr;
  Scratch* scratch = nullptr;
  const EngineEnv* env = nullptr;
  std::map<std::string, std::vector<uint8_t>>* blobs = nullptr;  // Serialize
  std::vector<Value>* values = nullptr;                          // Compile: set_output_storage
  // Deserialize: the node's blobs in the model file.
  const std::map<std::string, std::pair<const uint8_t*, uint64_t>>* in_blobs = nullptr;
  std::map<std::string, std::shared_ptr<RtcKernel>>* kernels = nullptr;  // Compile: rtc_compile
  std::vector<OutputBound>* bounds = nullptr;          // InferShape: set_output_bound; Execute: checks
  std::vector<const uint64_t*>* shape_buffers = nullptr;  // Execute: set_output_shape_buffer
  std::vector<uint8_t>* host_args = nullptr;              // UpdateHostArgs/Execute
  // Constant folding: set when the op asks for per-context memory, which only a run has (the
  // op keeps state between runs, so it must not be folded).
  bool* asked_host_args = nullptr;
  const OpRegistry* registry = nullptr;  // compile and load stages: the ops a subgraph may use
  // Execute in a dynamic-shape model: where outputs whose size only the run decides are placed
  // (MallocOutputTensor with their real shape; ops that size outputs in Execute, Loop and Scan).
  Scratch* dynamic_arena = nullptr;
  EmitSink* emit = nullptr;  // Emit: where the node's C goes
  // Execute: the run context's variables (ReadVariable, AssignVariable; src/runtime/variable_ops.cc).
  std::shared_ptr<std::map<std::string, std::vector<uint8_t>>>* variables = nullptr;
};

// Loop and Scan (src/runtime/subgraph_ops.cc): ops of the engine that run a subgraph and may
// learn an output's shape only by running it.
bool SizesOutputsInExecute(const CompiledNode& node);

const WeftHostApi* HostApi();

// Fills `c` for `node` over the given tensor pointer arrays.
void BindContext(WeftKernelContext& c, const CompiledNode& node, WeftStage stage, WeftTensor* const* ins,
                 WeftTensor* const* outs, CallState* st);

// Names of the WeftActivation values, as model files and messages spell them. Inline: the model
// file parser uses them and is built alone for fuzzing.
inline constexpr const char* kActivationNames[WEFT_ACT_COUNT] = {"None", "Relu", "Clip", "LeakyRelu", "Sigmoid",
                                                                  "Tanh", "HardSigmoid", "Elu", "HardSwish", "Swish",
                                                                  "Gelu", "GeluTanh"};
// "Relu", "Clip", ... for a WeftActivation; "" for an unknown one.
inline const char* ActivationName(int32_t a) { return a >= 0 && a < WEFT_ACT_COUNT ? kActivationNames[a] : ""; }
// The WeftActivation called `name`, or -1.
inline int32_t ActivationFromName(const std::string& name) {
  for (int32_t a = 0; a < WEFT_ACT_COUNT; ++a)
    if (name == kActivationNames[a]) return a;
  return -1;
}

// "[Op 'node'] <what> failed: <message>"
std::string NodeError(const CompiledNode& n, const std::string& what, const std::string& message);

// Bytes of the guard after each planned tensor and workspace block in plugin checking mode.
inline constexpr size_t kRedZoneBytes = 64;
inline constexpr uint8_t kGuardByte = 0xCB;

class ModelImpl;

struct Step {
  WeftKernelContext c{};
  CallState st;
  WeftOpFn exec = nullptr;
  WeftOpFn update_args = nullptr;  // ArgsUpdater ops
  void* instance = nullptr;
  std::vector<WeftTensor*> ins, outs;
  bool has_bounds = false;  // some output is data-dependent
  std::vector<OutputBound> bounds;
  std::vector<const uint64_t*> shape_buffers;
  std::vector<uint8_t> host_args;
  std::vector<void*> bound_ptrs;  // addresses UpdateHostArgs last saw
  bool deferred = false;  // some output is placed by Execute itself (SizesOutputsInExecute)
};

// After Execute: takes the real shapes of data-dependent outputs (shape buffers) and checks them
// against their bounds.
Status FinishBoundedOutputs(Step& s, std::string& error);

class RunContextImpl : public RunContext {
 public:
  explicit RunContextImpl(const ModelImpl& m);
  void ResetState() override;
  const ModelImpl* model;
  std::unique_ptr<uint8_t, void (*)(void*)> arena{nullptr, nullptr};
  std::vector<Tensor> tensors;  // one per value
  std::vector<Step> steps;
  Scratch scratch;
  Scratch dynamic_arena;  // intermediates of dynamic-shape models, reset per run
  std::string error;
  std::map<const CompiledModel*, std::unique_ptr<RunContext>> specialized;  // run contexts of cached plans
  // Variables by name (ReadVariable, AssignVariable), shared with the contexts in `specialized`.
  std::shared_ptr<std::map<std::string, std::vector<uint8_t>>> variables = std::make_shared<std::map<std::string, std::vector<uint8_t>>>();
  std::vector<double>* step_ns = nullptr;  // set while profiling: time per step accumulates here
  std::string signature;                   // input-shape signature buffer (input-dynamic models)
};

class ModelImpl : public CompiledModel {
 public:
  const std::vector<ValueInfo>& inputs() const override { return inputs_; }
  const std::vector<ValueInfo>& outputs() const override { return outputs_; }
  MemoryReport memory() const override { return memory_; }
  size_t num_steps() const override { return nodes.size(); }
  std::vector<StepInfo> DescribeSteps() const override;
  bool has_dynamic_shapes() const override { return dynamic; }
  std::unique_ptr<RunContext> CreateRunContext() const override;
  Status Run(RunContext& ctx, const TensorRef* inputs, size_t num_inputs, const TensorRef* outputs,
             size_t num_outputs) const override;
  Expected<std::vector<HostTensor>> Run(const std::vector<HostTensor>& inputs) const override;
  Expected<std::map<std::string, HostTensor>> RunNamed(const std::map<std::string, HostTensor>& inputs) const override;

  // Runs the steps over bound inputs; outputs stay in the context's tensors.
  Status Execute(RunContextImpl& rc, const TensorRef* inputs, size_t num_inputs, const TensorRef* outputs) const;
  Status CheckedExecute(Step& s, RunContextImpl& rc, WeftStatus* status) const;
  Status Save(const std::string& path, const SaveOptions& options) const override;
  Expected<std::vector<TensorRef>> RunViews(RunContext& ctx, const TensorRef* inputs, size_t num_inputs) const override;
  Expected<std::vector<StepProfile>> Profile(RunContext& ctx, const TensorRef* inputs, size_t num_inputs, int runs) const override;
  uint64_t args_updates() const override { return args_updates_.load(std::memory_order_relaxed); }
  size_t cached_plans() const override;
  // For input-dynamic models: the static plan for these input shapes (compiled on first use), or
  // null when there is none (not input-dynamic, cache full, or still dynamic after specializing).
  // `sig` is a scratch buffer for the input-shape signature.
  std::shared_ptr<const CompiledModel> Specialize(const TensorRef* in, size_t n, std::string& sig) const;
  // Specialize, plus the plan's run context inside `rc` (created on first use) in *sub.
  std::shared_ptr<const CompiledModel> SpecializedPlan(RunContextImpl& rc, const TensorRef* in, size_t n, RunContext** sub) const;

  std::shared_ptr<const EngineEnv> env;
  bool dynamic = false;
  // Why the model is dynamic, for messages: the first value whose shape compile time could not
  // know, and what made it so (empty when not dynamic or not recorded).
  std::string dynamic_reason;
  std::vector<Value> values;
  std::vector<std::unique_ptr<CompiledNode>> nodes;  // execution order
  std::vector<HostTensor> constants;
  std::vector<int> input_ids, output_ids;
  std::vector<ValueInfo> inputs_, outputs_;
  MemoryReport memory_;
  std::string graph_name;
  // Constant data by constant index: into `constants`, or into the mapped model file.
  std::vector<const void*> const_data;
  std::vector<size_t> const_bytes;
  std::shared_ptr<const void> file_mapping;  // keeps a loaded model file mapped
  std::vector<std::shared_ptr<LoadedLibrary>> embedded_libraries;
  mutable std::atomic<uint64_t> args_updates_{0};
  // Input-dynamic models: compiles the static plan for concrete input shapes (set by the
  // compiler, which keeps the source graph and a registry snapshot in it).
  std::function<Expected<std::shared_ptr<CompiledModel>>(const std::vector<Shape>&)> specialize;
  mutable std::mutex plans_mu_;
  mutable std::map<std::string, std::shared_ptr<const CompiledModel>> plans_;

 private:
  std::unique_ptr<RunContextImpl> Acquire() const;
  void Release(std::unique_ptr<RunContextImpl> rc) const;
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<RunContextImpl>> pool_;
};

// What a model file yields before ops are bound (src/model/model_file.cc fills it).
struct LoadedNode {
  std::string name, op_type;
  uint32_t version = 1;
  std::string library_hash, library_name, package;  // identity of the plugin
  std::vector<int> in_values, out_values;
  std::vector<uint32_t> ir_in_start, ir_in_count, ir_out_start, ir_out_count;
  std::vector<std::pair<std::string, AttrValue>> attrs;
  WeftEpilogue epilogue{sizeof(WeftEpilogue), WEFT_ACT_NONE, 0.f, 0.f};
  std::vector<std::pair<int, bool>> guards;  // CompiledNode::guards
  std::map<std::string, std::pair<const uint8_t*, uint64_t>> blobs;
  std::vector<std::pair<std::string, std::pair<const uint8_t*, uint64_t>>> kernels;  // id → shared object
};
struct LoadedGraph {
  std::string name;
  bool dynamic = false;
  std::vector<Value> values;
  std::vector<LoadedNode> nodes;
  std::vector<std::pair<const void*, size_t>> constants;  // in place
  std::vector<int> input_ids, output_ids;
};
// Session::LoadModel / LoadModelFromMemory (src/model/model_file.cc).
Expected<std::shared_ptr<CompiledModel>> LoadModelFile(const std::string& path, const LoadOptions& options,
                                                      const OpRegistry& reg, std::shared_ptr<const EngineEnv> env);
Expected<std::shared_ptr<CompiledModel>> LoadModelMemory(const void* data, size_t size, const LoadOptions& options,
                                                        const OpRegistry& reg, std::shared_ptr<const EngineEnv> env);

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_ENGINE_H_
