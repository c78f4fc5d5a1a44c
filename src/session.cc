#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/suggest.h"
#include "registry/registry.h"
#include "compile/compiler.h"
#include "runtime/engine.h"
#include "runtime/omp_scope.h"
#include "weft/weft.h"

namespace weft {
namespace {

uint64_t PhysicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}

// Runs one public entry point so that nothing escapes it as an exception: running out of memory
// (or any exception from below) becomes an error naming what was being done.
template <typename F>
auto Guarded(const std::string& what, F&& f) -> decltype(f()) {
  internal::OmpThreadsScope omp_threads;  // compiling runs kernels' setup (e.g. weight reorders)
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return IoError(what + ": out of memory");
  } catch (const std::exception& e) {
    return Internal(what + ": " + e.what());
  }
}

class SessionImpl : public Session {
 public:
  explicit SessionImpl(const SessionOptions& o)
      : registry_(o.allow_override), trust_embedded_code_(o.trust_embedded_code) {
    auto env = std::make_shared<internal::EngineEnv>();
    env->options = o.options;
    env->options["weft.intra_op_threads"] = std::to_string(std::max(1, o.intra_op_threads));
    env->options["weft.target"] = internal::RtcTarget();  // what Compile builds for
    env->options["weft.device"] = "cpu";
    if (o.intra_op_threads > 1) env->pool = std::make_unique<internal::ThreadPool>(o.intra_op_threads);
    env->memory_budget = o.memory_budget_bytes ? o.memory_budget_bytes : PhysicalMemoryBytes();
    const char* check = std::getenv("WEFT_CHECK_PLUGINS");
    env->check_plugins = o.check_plugins || (check && std::string(check) == "1");
    env_ = env;
  }

  Status Init(const SessionOptions& o) {
    if (o.load_builtins) WEFT_RETURN_IF_ERROR(registry_.AddBuiltinLibrary(WeftBuiltinOpLibrary(WEFT_ABI_VERSION)));
    // Earlier entries win: load from the last entry to the first so earlier ones override
    // (when override is allowed; otherwise any duplicate is an error either way).
    std::vector<std::string> roots;
    for (auto& p : o.package_paths) roots.push_back(p);
    if (o.use_env_path)
      for (auto& p : internal::EnvPackagePath()) roots.push_back(p);
    for (auto it = roots.rbegin(); it != roots.rend(); ++it) {
      Status s = registry_.LoadPackage(*it);
      if (!s.ok()) return Status(s.code(), "operator package path entry '" + *it + "': " + s.message());
    }
    return Status::Ok();
  }

  Status LoadPackage(const std::string& root) override {
    return Guarded("loading package '" + root + "'", [&] { return registry_.LoadPackage(root); });
  }
  Status LoadLibrary(const std::string& path) override {
    return Guarded("loading library '" + path + "'", [&] { return registry_.LoadLibrary(path); });
  }
  std::vector<OpInfo> ListOps() const override { return registry_.List(); }
  Expected<std::shared_ptr<CompiledModel>> Compile(const Graph& graph) override {
    auto r = Guarded("compiling", [&] { return internal::CompileGraph(graph, registry_, env_); });
    if (!r.ok()) return Status(r.status().code(), "graph '" + graph.name() + "': " + r.status().message());
    return r;
  }
  Expected<OpSchema> GetOpSchema(const std::string& op_type) const override {
    auto op = registry_.Find(op_type);
    if (!op) return NotFound(registry_.DescribeMissing(op_type));
    OpSchema s;
    s.op_type = op->op_type;
    s.version = op->proto.version;
    s.capabilities = op->impl->capabilities;
    s.origin = op->origin;
    for (int io = 0; io < 2; ++io)
      for (auto& spec : io ? op->proto.outputs : op->proto.inputs)
        (io ? s.outputs : s.inputs).push_back({spec.name, spec.kind, spec.dtypes, spec.same_as_input, spec.symbol});
    for (auto& a : op->proto.attrs) s.attrs.push_back({a.name, a.type, a.required, a.default_value});
    return s;
  }
  Expected<std::vector<ValueInfo>> InferShapes(const Graph& graph) override {
    auto r = Guarded("inferring shapes", [&] { return internal::InferGraphShapes(graph, registry_, env_); });
    if (!r.ok()) return Status(r.status().code(), "graph '" + graph.name() + "': " + r.status().message());
    return r;
  }
  Expected<std::shared_ptr<CompiledModel>> LoadModel(const std::string& path, const LoadOptions& options) override {
    return Guarded("loading model file '" + path + "'",
                   [&] { return internal::LoadModelFile(path, WithSessionTrust(options), registry_, env_); });
  }
  Expected<std::shared_ptr<CompiledModel>> LoadModelFromMemory(const void* data, size_t size,
                                                              const LoadOptions& options) override {
    return Guarded("loading a model from memory",
                   [&] { return internal::LoadModelMemory(data, size, WithSessionTrust(options), registry_, env_); });
  }

 private:
  LoadOptions WithSessionTrust(LoadOptions o) const {
    o.trust_embedded_code = o.trust_embedded_code || trust_embedded_code_;
    return o;
  }

  internal::OpRegistry registry_;
  bool trust_embedded_code_ = false;
  std::shared_ptr<const internal::EngineEnv> env_;
};

}  // namespace

namespace {

// The engine's own options ("weft." keys) and the values each takes (docs/runtime.md). Keys with
// no values are set by the session itself. Other keys belong to plugins and pass through.
Status CheckEngineOptions(const std::map<std::string, std::string>& options) {
  struct Known {
    const char* key;
    std::vector<std::string> values;
    const char* set_from;
  };
  static const Known kKnown[] = {
      {"weft.graph_passes", {"all", "none"}, nullptr},
      {"weft.conv_algorithm", {"auto", "winograd", "direct"}, nullptr},
      {"weft.conv_transpose_path", {"auto", "gemm", "matmul", "onednn"}, nullptr},
      {"weft.intra_op_threads", {}, "SessionOptions::intra_op_threads (Python: threads=)"},
      {"weft.target", {}, "the platform the session runs on"},
      {"weft.device", {}, "the device the session runs on"},
  };
  std::vector<std::string> keys;
  for (const Known& k : kKnown) keys.push_back(k.key);
  for (const auto& [key, value] : options) {
    if (key.rfind("weft.", 0) != 0) continue;
    const Known* known = nullptr;
    for (const Known& k : kKnown) known = key == k.key ? &k : known;
    if (!known) {
      std::string msg = "session option '" + key + "' is not one of Weft's";
      std::string near = internal::DidYouMean(internal::NearestNames(key, keys));
      return InvalidArgument(msg + (near.empty() ? "" : " (" + near + ")") + "; Weft's are " +
                             "weft.graph_passes, weft.conv_algorithm and weft.conv_transpose_path, and a plugin's own options "
                             "take a prefix other than 'weft.'");
    }
    if (known->set_from) return InvalidArgument("session option '" + key + "' is set by the session from " + known->set_from);
    if (std::find(known->values.begin(), known->values.end(), value) == known->values.end()) {
      std::string list;
      for (size_t i = 0; i < known->values.size(); ++i)
        list += (i ? (i + 1 == known->values.size() ? " or " : ", ") : "") + known->values[i];
      return InvalidArgument("session option '" + key + "' is '" + value + "'; it takes " + list);
    }
  }
  return Status::Ok();
}

}  // namespace

Expected<std::unique_ptr<Session>> Session::Create(const SessionOptions& options) {
  if (options.intra_op_threads < 1 || options.intra_op_threads > kMaxIntraOpThreads)
    return InvalidArgument("SessionOptions::intra_op_threads is " + std::to_string(options.intra_op_threads) + "; it must be 1 to " +
                           std::to_string(kMaxIntraOpThreads));
  WEFT_RETURN_IF_ERROR(CheckEngineOptions(options.options));
  auto s = std::make_unique<SessionImpl>(options);
  WEFT_RETURN_IF_ERROR(s->Init(options));
  return std::unique_ptr<Session>(std::move(s));
}

namespace {
std::mutex g_default_mu;
std::shared_ptr<Session> g_default;
}  // namespace

Expected<std::shared_ptr<Session>> Session::Default() {
  std::lock_guard<std::mutex> lock(g_default_mu);
  if (!g_default) {
    auto created = Create();
    if (!created.ok()) return created.status();
    g_default = std::move(created).value();
  }
  return g_default;
}

void Session::SetDefault(std::shared_ptr<Session> session) {
  std::lock_guard<std::mutex> lock(g_default_mu);
  g_default = std::move(session);
}

}  // namespace weft
