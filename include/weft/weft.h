// The Weft runtime API: build or load a graph, compile it in a session, run it.
//
//   auto session = weft::Session::Create().value();          // built-ins + WEFT_CUSTOM_OPP_PATH
//   weft::Graph g("demo");
//   g.AddInput("x", weft::DT_FLOAT, {2, 3}).AddInput("y", weft::DT_FLOAT, {2, 3});
//   g.AddNode("AddCustom", "add0", {"x", "y"}, {"z"}).AddOutput("z");
//   auto model = session->Compile(g).value();
//   auto out = model->Run({x, y}).value();                    // std::vector<HostTensor>
//
// Errors are returned as Status/Expected and name the node, op type and file involved.
#ifndef WEFT_WEFT_H_
#define WEFT_WEFT_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weft/attr_value.h"
#include "weft/types.h"

#if defined(WEFT_BUILDING_LIBRARY)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

namespace weft {

class WEFT_API Status {
 public:
  enum class Code { kOk = 0, kInvalidArgument, kNotFound, kAlreadyExists, kFailedPrecondition, kInternal, kIo };
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return Status(Status::Code::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(Status::Code::kNotFound, std::move(m)); }
inline Status AlreadyExists(std::string m) { return Status(Status::Code::kAlreadyExists, std::move(m)); }
inline Status FailedPrecondition(std::string m) { return Status(Status::Code::kFailedPrecondition, std::move(m)); }
inline Status Internal(std::string m) { return Status(Status::Code::kInternal, std::move(m)); }
inline Status IoError(std::string m) { return Status(Status::Code::kIo, std::move(m)); }

#define WEFT_RETURN_IF_ERROR(expr)             \
  do {                                         \
    ::weft::Status weft_status_ = (expr);      \
    if (!weft_status_.ok()) return weft_status_; \
  } while (0)

// A value or the Status saying why there is none. value() on an error throws
// std::runtime_error with the message (the convenience edge; engine code checks ok()).
template <typename T>
class Expected {
 public:
  Expected(T v) : value_(std::move(v)) {}  // NOLINT
  Expected(Status s) : status_(std::move(s)) {}  // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { Check(); return *value_; }
  T&& value() && { Check(); return std::move(*value_); }
  T* operator->() { Check(); return &*value_; }

 private:
  void Check() const;
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] WEFT_API void ThrowStatus(const Status& s);
template <typename T>
void Expected<T>::Check() const {
  if (!status_.ok()) ThrowStatus(status_);
}

#define WEFT_ASSIGN_OR_RETURN(lhs, expr)                    \
  auto WEFT_CONCAT_AOR(weft_e_, __LINE__) = (expr);         \
  if (!WEFT_CONCAT_AOR(weft_e_, __LINE__).ok()) return WEFT_CONCAT_AOR(weft_e_, __LINE__).status(); \
  lhs = std::move(WEFT_CONCAT_AOR(weft_e_, __LINE__)).value()
#define WEFT_CONCAT_AOR_I(a, b) a##b
#define WEFT_CONCAT_AOR(a, b) WEFT_CONCAT_AOR_I(a, b)

// An owned, 64-byte aligned host tensor. Copies are deep.
class WEFT_API HostTensor {
 public:
  HostTensor() = default;
  // Zero-filled tensor.
  HostTensor(DataType dtype, const Shape& shape);
  HostTensor(const HostTensor& o);
  HostTensor& operator=(const HostTensor& o);
  HostTensor(HostTensor&&) noexcept = default;
  HostTensor& operator=(HostTensor&&) noexcept = default;
  ~HostTensor() = default;

  // Copies `bytes` bytes from `data`; bytes must equal the tensor's byte count.
  static Expected<HostTensor> FromBytes(DataType dtype, const Shape& shape, const void* data, size_t bytes);
  template <typename T>
  static HostTensor FromVector(DataType dtype, const Shape& shape, const std::vector<T>& v) {
    HostTensor t(dtype, shape);
    size_t n = std::min(t.bytes(), v.size() * sizeof(T));
    if (n) std::memcpy(t.data(), v.data(), n);  // an empty vector's data() may be null
    return t;
  }

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.GetShapeSize(); }
  size_t bytes() const { return bytes_; }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <typename T> T* data_as() { return static_cast<T*>(data()); }
  template <typename T> const T* data_as() const { return static_cast<const T*>(data()); }

 private:
  struct Free { void operator()(uint8_t* p) const; };
  DataType dtype_ = DT_UNDEFINED;
  Shape shape_;
  size_t bytes_ = 0;
  std::unique_ptr<uint8_t, Free> data_;
};

// A non-owning tensor: caller's memory, for zero-copy runs.
struct TensorRef {
  DataType dtype = DT_UNDEFINED;
  Shape shape;
  void* data = nullptr;
  size_t bytes = 0;
  static TensorRef Of(HostTensor& t) { return {t.dtype(), t.shape(), t.data(), t.bytes()}; }
  static TensorRef Of(const HostTensor& t) {
    return {t.dtype(), t.shape(), const_cast<void*>(t.data()), t.bytes()};
  }
};

struct ValueInfo {
  std::string name;
  DataType dtype = DT_UNDEFINED;
  Shape shape;
  // Session::InferShapes only: for a data-dependent output (-1 dims), the largest shape it can
  // take, when its op declares one (InferShapeContext::SetOutputShapeBound).
  bool bounded = false;
  Shape bound;
};

// One operator application. An empty input name marks an absent optional input. When the op has
// more than one dynamic input or output, input_counts/output_counts give the number of tensors
// per IR input/output in REG_OP order; otherwise they may be left empty.
struct Node {
  std::string name;
  std::string op_type;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, AttrValue> attrs;
  std::vector<uint32_t> input_counts;
  std::vector<uint32_t> output_counts;
  // Where the node came from, for messages and op mapping: e.g. ONNX domain and opset.
  std::string domain;
  int64_t opset = 0;
  // Conditional execution (the branches of an ONNX If): the node runs only when each named
  // boolean scalar holds the paired value; otherwise it is skipped and its outputs stay unset,
  // so only the op "If" may read them. A condition known at compile time drops the branch
  // not taken before its shapes are inferred.
  std::vector<std::pair<std::string, bool>> when;
};

// A dataflow graph. Nodes may be added in any order; Compile sorts them.
class WEFT_API Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  Graph& AddInput(const std::string& name, DataType dtype, const Shape& shape);
  Graph& AddConstant(const std::string& name, HostTensor value);
  Graph& AddNode(const std::string& op_type, const std::string& name, std::vector<std::string> inputs,
                 std::vector<std::string> outputs, std::map<std::string, AttrValue> attrs = {});
  Graph& AddNode(Node node);
  Graph& AddOutput(const std::string& name);

  const std::string& name() const { return name_; }
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<std::pair<std::string, HostTensor>>& constants() const { return constants_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // For passes that edit nodes in place (attribute rules, rewrites).
  std::vector<Node>& mutable_nodes() { return nodes_; }
  const std::vector<std::string>& outputs() const { return outputs_; }

  // Reads the JSON graph format (docs/graph_format.md). Relative "file" paths of constants are
  // resolved against the file's directory.
  static Expected<Graph> FromJsonFile(const std::string& path);
  static Expected<Graph> FromJsonText(const std::string& text, const std::string& base_dir = ".");
  // The graph in the same format, constants inline ("base64": their raw bytes), so that
  // FromJsonText gives back an equal graph. Fails on a name or string that is not UTF-8, or a
  // non-finite float attribute.
  Expected<std::string> ToJsonText() const;

 private:
  std::string name_;
  std::vector<ValueInfo> inputs_;
  std::vector<std::pair<std::string, HostTensor>> constants_;
  std::vector<Node> nodes_;
  std::vector<std::string> outputs_;
};

// Where a registered operator came from and what it can do.
struct OpInfo {
  std::string op_type;
  uint32_t version = 1;
  std::string origin;  // "built-in" or the library path
  uint64_t capabilities = 0;
  bool overridden_builtin = false;
  uint32_t abi_version = WEFT_ABI_VERSION;  // the plugin ABI level its library was built against
};

// An op's REG_OP prototype, for frontends that generate bindings (schemas, signatures).
struct OpSchema {
  struct Io {
    std::string name;
    WeftIoKind kind = WEFT_IO_REQUIRED;
    std::vector<DataType> dtypes;
    int same_as_input = -1;
    std::string dtype_symbol;  // the DATATYPE symbol it shares, or ""
  };
  struct Attr {
    std::string name;
    WeftAttrType type = WEFT_ATTR_INT;
    bool required = false;
    AttrValue default_value;
  };
  std::string op_type;
  uint32_t version = 1;
  std::vector<Io> inputs, outputs;
  std::vector<Attr> attrs;
  uint64_t capabilities = 0;
  std::string origin;
};

// Capability names ("EagerExecute", "ShapeInfer", ...) of a WEFT_CAP_* mask.
WEFT_API std::vector<std::string> CapabilityNames(uint64_t caps);

// ---- tool support: what the `weft` command and the benchmarks are built on ------------------
// The plugin libraries of an operator package root (<root>/op_graph/lib/linux/<arch>/*.so),
// sorted; errors say what to give instead (a library file, a directory above packages, ...).
WEFT_API Expected<std::vector<std::string>> PackageLibraries(const std::string& root);
// Package roots from the environment: WEFT_CUSTOM_OPP_PATH, then GE's ASCEND_CUSTOM_OPP_PATH
// (colon-separated; a root on both once).
WEFT_API std::vector<std::string> PackagePathFromEnvironment();
// "xxh3-64:<16 hex digits>" of a file: the identity model files record for plugin libraries.
WEFT_API Expected<std::string> LibraryHash(const std::string& path);
// NumPy .npy files (C order; the dtypes HostTensor holds).
// Sequence and optional values (weft/sequence.h), built from and taken apart into tensors:
// a model's sequence input takes MakeSequence's result, and a sequence output comes back as one.
//   MakeSequence(elem, items): a SequenceOf(elem) value; every item must be an `elem` tensor.
//   MakeOptional(type, value): an OptionalOf(type) value holding *value (a tensor of type `type`,
//     or a SequenceOf value when `type` is a sequence type), or empty when value is null.
//   ValueItems(value): a sequence's tensors in order, or an optional's 0 or 1 held value.
WEFT_API Expected<HostTensor> MakeSequence(DataType elem, const std::vector<HostTensor>& items);
WEFT_API Expected<HostTensor> MakeOptional(DataType type, const HostTensor* value);
WEFT_API Expected<std::vector<HostTensor>> ValueItems(const HostTensor& value);
WEFT_API Expected<HostTensor> ReadNpy(const std::string& path);
WEFT_API Status WriteNpy(const std::string& path, const HostTensor& tensor);
// Up to `limit` of `candidates` near a misspelt `word` (edit distance, ignoring case), nearest
// first, and the message for them ("did you mean 'a' or 'b'?"; empty when there are none).
WEFT_API std::vector<std::string> NearestNames(const std::string& word, const std::vector<std::string>& candidates,
                                               size_t limit = 3);
WEFT_API std::string DidYouMean(const std::vector<std::string>& names);

// The most intra-op threads a session may ask for.
constexpr int kMaxIntraOpThreads = 1024;

struct SessionOptions {
  bool load_builtins = true;
  // Read WEFT_CUSTOM_OPP_PATH (colon-separated package roots, after package_paths), then GE's
  // ASCEND_CUSTOM_OPP_PATH (its entries not already on WEFT_CUSTOM_OPP_PATH).
  bool use_env_path = true;
  // Package roots, ahead of the environment's: the package path is these in order, then
  // WEFT_CUSTOM_OPP_PATH's entries in order, then ASCEND_CUSTOM_OPP_PATH's.
  std::vector<std::string> package_paths;
  // Without it an op type registered twice is an error naming both origins. With it a package
  // replaces a built-in; among package path entries the earlier entry wins; and LoadPackage /
  // LoadLibrary on a created session replace what is registered.
  bool allow_override = false;
  // Intra-op threads offered to operators through ParallelFor (1 = run inline), 1 to
  // kMaxIntraOpThreads.
  int intra_op_threads = 1;
  // Values operators read with GetOption(key).
  std::map<std::string, std::string> options;
  // Let model files run the native code they carry — plugin libraries embedded with
  // `--embed-plugins` and kernels compiled at graph-compile time (CompilableOp) — for every
  // LoadModel of this session. Off by default; see docs/security.md.
  bool trust_embedded_code = false;
  // The most bytes one compiled model's planned intermediates may take; a larger plan fails at
  // compile or load time, naming the largest tensor. 0: this machine's physical memory.
  uint64_t memory_budget_bytes = 0;
  // Plugin checking mode, for operator authors and tests (also WEFT_CHECK_PLUGINS=1): every
  // Execute runs with red zones after its outputs and workspace blocks, its outputs poisoned
  // beforehand and checked fully written afterwards (a suspect step runs a second time with a
  // different poison), and its inputs checked unmodified. A violation is an error naming the
  // op, the node and the tensor. Slower; graph outputs written into caller buffers get no red zone.
  bool check_plugins = false;
};

struct MemoryReport {
  size_t arena_bytes = 0;        // what the plan allocates per run context
  size_t lower_bound_bytes = 0;  // the largest sum of simultaneously live tensors
  size_t constant_bytes = 0;
  size_t num_planned_tensors = 0;
};

class CompiledModel;

// One step of a compiled model as the compiler left it (CompiledModel::DescribeSteps).
struct StepInfo {
  std::string node;
  std::string op_type;
  std::string origin;            // "built-in" or the operator library's path
  std::string fused_activation;  // "" or the activation fused into it ("Relu", "Clip", ...)
  struct Io {
    std::string name;
    DataType dtype = DT_UNDEFINED;
    Shape shape;
    Format format = FORMAT_ND;  // FORMAT_NC1HWC0 where the layout pass chose the blocked layout
  };
  std::vector<Io> inputs, outputs;  // present tensors, in IR order
};

// Time spent in one step of a compiled model (CompiledModel::Profile).
struct StepProfile {
  std::string node;
  std::string op_type;
  double mean_us = 0;    // per run
  double median_us = 0;  // over the runs in which the step executed
  int runs = 0;          // how many runs executed it (fewer for a branch of an If not always taken)
};

// Writing a compiled model to a file (`weft compile`).
struct SaveOptions {
  // Also store each plugin library the model needs; loading then uses it from memory when the
  // loading session lacks the package.
  bool embed_plugins = false;
  // Record each plugin library's exact build (XXH3-64 of its file) as a requirement. By default a
  // loading session only needs the same op types and versions from a plugin of at least the same
  // ABI level, so rebuilding a package keeps its model files loadable.
  bool pin_plugin_hashes = false;
};

// Reading a model file.
struct LoadOptions {
  // Check the file's checksum (reads every byte once). Off only for trusted files or fuzzing;
  // the structure is validated either way.
  bool verify_checksum = true;
  // Run the native code the file carries: embedded plugin libraries (used when the session lacks
  // the ops) and runtime-compiled kernels. Only for files you trust (docs/security.md). Embedded
  // libraries' bytes are always checked against the hash recorded for them before loading.
  bool trust_embedded_code = false;
};

// What a model file holds, without loading it (`weft inspect model.weft`).
struct ModelFileInfo {
  uint32_t format_version = 0;
  uint64_t file_bytes = 0;
  std::string graph_name;
  size_t num_nodes = 0, num_constants = 0, num_kernels = 0, num_blobs = 0;
  uint64_t weight_bytes = 0;
  struct Plugin {
    std::string op_type;
    uint32_t version = 0;
    std::string library;  // file name, "" for built-ins
    std::string package;  // package root name, "" when loaded by path or built-in
    std::string hash;     // XXH3-64 of the library
    bool embedded = false;
  };
  std::vector<Plugin> plugins;
  std::vector<ValueInfo> inputs, outputs;
};

// Counters of the runtime-compilation kernel cache (process-wide).
struct KernelCacheStats {
  uint64_t memory_hits = 0;  // served from kernels already loaded in this process
  uint64_t disk_hits = 0;    // served from WEFT_CACHE_DIR
  uint64_t compiles = 0;     // compiler invocations that succeeded
  uint64_t failures = 0;     // compiler invocations that failed
  std::string directory;
};
WEFT_API KernelCacheStats GetKernelCacheStats();
// Forgets the kernels loaded in this process (the disk cache stays): what a new process sees.
WEFT_API void ClearKernelMemoryCache();

// One step of a run, as a StepObserver sees it. Everything it points to is valid only during
// OnStep.
struct StepEvent {
  size_t index = 0;  // position in execution order, below CompiledModel::num_steps()
  std::string_view node;
  std::string_view op_type;
  std::chrono::steady_clock::time_point start;  // when the op's Execute was called
  std::chrono::nanoseconds duration{0};          // how long it took
  // The step's tensors after it ran, shapes as produced (absent optional inputs left out).
  const WeftTensor* const* inputs = nullptr;
  size_t num_inputs = 0;
  const WeftTensor* const* outputs = nullptr;
  size_t num_outputs = 0;
  const Tensor& input(size_t k) const { return *Tensor::View(inputs[k]); }
  const Tensor& output(size_t k) const { return *Tensor::View(outputs[k]); }
};

// Told of every step a RunContext runs (RunContext::SetStepObserver): tracing, profiling.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // Called on the running thread right after each step that succeeded, in execution order. It
  // must not throw; the run waits for it, so it should be quick.
  virtual void OnStep(const StepEvent& step) = 0;
};

// Per-thread run state (arena, scratch, bound contexts). Reusing one makes runs allocation-free.
class WEFT_API RunContext {
 public:
  virtual ~RunContext() = default;
  // Reports every step that Run, RunViews or Profile runs with this context to `observer`,
  // which the caller owns and keeps alive while set. nullptr (the default) turns it off, and
  // then nothing is timed. The convenience runs (Run on HostTensors, RunNamed) report nothing.
  //   auto ctx = model->CreateRunContext();
  //   ctx->SetStepObserver(&my_tracer);
  //   model->RunViews(*ctx, inputs.data(), inputs.size());
  void SetStepObserver(StepObserver* observer) { step_observer_ = observer; }
  StepObserver* step_observer() const { return step_observer_; }
  // Stateful models (LiteRT variable tensors: SVDF, sequence LSTMs; LiteRT resource variables)
  // keep their state in the run context, carried from one run to the next: runs with one context
  // form one stream. This puts every op's state back where a new context starts (zeros, or what
  // the op defines as its initial state) and every variable to its initial value. The convenience runs (Run on HostTensors, RunNamed) start from the initial
  // state on every call.
  virtual void ResetState() {}

 private:
  StepObserver* step_observer_ = nullptr;
};

class WEFT_API CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  virtual const std::vector<ValueInfo>& inputs() const = 0;
  virtual const std::vector<ValueInfo>& outputs() const = 0;
  virtual MemoryReport memory() const = 0;
  virtual size_t num_steps() const = 0;
  // Every step in execution order: which op runs it, what was fused into it, the layout of each
  // tensor (`weft inspect --steps`).
  virtual std::vector<StepInfo> DescribeSteps() const = 0;
  // True when some shape is only known at run time (inputs with -1 dims, or shapes that depend
  // on input values). Such models infer shapes and size buffers on every run; output shapes in
  // outputs() are then empty.
  virtual bool has_dynamic_shapes() const = 0;

  virtual std::unique_ptr<RunContext> CreateRunContext() const = 0;
  // Runs with caller memory: inputs and outputs in declaration order. For a static-shape model it
  // makes no heap allocation once `ctx` has served one run. Safe to call from many threads with
  // one context each. Output buffers must match the shapes the run produces.
  virtual Status Run(RunContext& ctx, const TensorRef* inputs, size_t num_inputs, const TensorRef* outputs,
                     size_t num_outputs) const = 0;
  // Convenience: inputs in declaration order, fresh output tensors. Thread-safe.
  virtual Expected<std::vector<HostTensor>> Run(const std::vector<HostTensor>& inputs) const = 0;
  // Runs `runs` times (after one warm-up run) timing every step; steps in execution order.
  virtual Expected<std::vector<StepProfile>> Profile(RunContext& ctx, const TensorRef* inputs, size_t num_inputs,
                                                     int runs) const = 0;
  // Runs and returns views of the outputs inside `ctx` (valid until its next run): for callers
  // that cannot size output buffers before a run (dynamic shapes).
  virtual Expected<std::vector<TensorRef>> RunViews(RunContext& ctx, const TensorRef* inputs, size_t num_inputs) const = 0;
  // Convenience: inputs by name, outputs by name.
  virtual Expected<std::map<std::string, HostTensor>> RunNamed(const std::map<std::string, HostTensor>& inputs) const = 0;

  // Writes the model file: graph, weights (64-byte aligned), every node's PortableOp blobs, the
  // runtime-compiled kernels and the identity of each plugin it needs. Every node whose op has
  // a Compile callback must be a PortableOp.
  virtual Status Save(const std::string& path, const SaveOptions& options = {}) const = 0;
  // How many times an ArgsUpdater op was told of new buffers (for measurements and tests).
  virtual uint64_t args_updates() const = 0;
  // Models whose inputs have -1 dims compile a static plan per input-shape signature on first
  // use and reuse it (up to 16 signatures; others run with per-run shape inference). How many
  // such plans exist now.
  virtual size_t cached_plans() const = 0;
};

class WEFT_API Session {
 public:
  virtual ~Session() = default;
  static Expected<std::unique_ptr<Session>> Create(const SessionOptions& options = {});
  // The process-wide session every binding shares (Python's weft.default_session(), the ops
  // libweft_torch.so registers when loaded): created on first use with default options
  // (built-ins + WEFT_CUSTOM_OPP_PATH) unless SetDefault gave one before.
  static Expected<std::shared_ptr<Session>> Default();
  // Makes `session` the process-wide one (nullptr: the next Default() creates a fresh one).
  static void SetDefault(std::shared_ptr<Session> session);

  // Loads an operator package root (op_graph/lib/<os>/<arch>/*.so).
  virtual Status LoadPackage(const std::string& root) = 0;
  // Loads one operator library.
  virtual Status LoadLibrary(const std::string& path) = 0;
  virtual std::vector<OpInfo> ListOps() const = 0;
  // The prototype of a registered op.
  virtual Expected<OpSchema> GetOpSchema(const std::string& op_type) const = 0;
  // Output types and shapes of a graph by InferDataType/InferShape alone: no Compile callback,
  // no kernel runs (except constant folding of Shape/Size-like nodes is not done either). -1
  // dims stay where a shape depends on values.
  virtual Expected<std::vector<ValueInfo>> InferShapes(const Graph& graph) = 0;
  virtual Expected<std::shared_ptr<CompiledModel>> Compile(const Graph& graph) = 0;
  // Loads a model file written by CompiledModel::Save. Never calls an op's Compile: ops restore
  // their state with Deserialize. The file is mapped and its weights are used in place.
  virtual Expected<std::shared_ptr<CompiledModel>> LoadModel(const std::string& path, const LoadOptions& options = {}) = 0;
  // The same from a buffer (copied).
  virtual Expected<std::shared_ptr<CompiledModel>> LoadModelFromMemory(const void* data, size_t size,
                                                                      const LoadOptions& options = {}) = 0;
};

// Reads a model file's header and metadata (checksum verified) without loading any op.
WEFT_API Expected<ModelFileInfo> InspectModelFile(const std::string& path);

}  // namespace weft

#endif  // WEFT_WEFT_H_
