// The weft command-line tool.
#include <fcntl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "weft/aot.h"
#include "weft/registry_context.h"
#include "weft/litert.h"
#include "weft/onnx.h"

namespace fs = std::filesystem;

namespace weft::cli {
namespace {

int Fail(const std::string& msg) {
  std::cerr << "weft: error: " << msg << "\n";
  return 1;
}

std::string SafeFileName(std::string s) {
  for (char& c : s)
    if (c == '/' || c == ':' || c == '\\' || c == ' ') c = '_';
  return s;
}

bool IsOnnx(const std::string& path) { return fs::path(path).extension() == ".onnx"; }
bool IsLiteRt(const std::string& path) { return fs::path(path).extension() == ".tflite"; }
// A compiled model file, recognized by its magic bytes (any extension).
bool IsModelFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;  // never open a FIFO or device just to peek
  // Non-blocking: some "regular" files (in /proc) block on read.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return false;
  char magic[8] = {0};
  ssize_t n = read(fd, magic, 8);
  close(fd);
  return n == 8 && std::memcmp(magic, "WEFTMDL", 8) == 0;
}

// --no-fuse-qdq (run, compile, inspect, aot): OnnxImportOptions::fuse_qdq off.
bool g_no_fuse_qdq = false;
constexpr const char* kNoFuseQdqHelp =
    "ONNX models: keep the float operators between DequantizeLinear and QuantizeLinear (ONNX's definition of a QDQ "
    "model) instead of running them on the quantized values as ONNX Runtime does";

// A JSON graph, an ONNX model or a LiteRT model; model inputs take the given concrete shapes.
Expected<Graph> LoadGraph(const std::string& path, const std::map<std::string, Shape>& shapes = {}) {
  if (fs::path(path).extension() == ".pt2")
    return InvalidArgument("'" + path + "' is a torch.export program: reading it needs PyTorch. Convert it with the "
                           "`weft` command of the Python package (pip install 'weft[torch]'): weft compile " + path +
                           " -o model.weft, or in Python with weft.torch.from_exported(torch.export.load(path))");
  if (IsLiteRt(path)) {
    LiteRtImportOptions o;
    o.input_shapes = shapes;
    return ImportLiteRt(path, o);
  }
  if (!IsOnnx(path)) return Graph::FromJsonFile(path);
  OnnxImportOptions o;
  o.input_shapes = shapes;
  o.fuse_qdq = !g_no_fuse_qdq;
  return ImportOnnx(path, o);
}

// "name=1,3,224,224" -> shape
bool ParseShapeSpec(const std::string& spec, std::string* name, Shape* shape) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  *name = spec.substr(0, eq);
  std::string dims = spec.substr(eq + 1);
  *shape = Shape();
  if (dims.empty()) return true;  // a scalar
  // Every entry is a whole non-negative decimal integer: no "2e3", "3.9", "-1" or empty entry.
  size_t pos = 0;
  for (;;) {
    size_t end = dims.find(',', pos);
    std::string tok = dims.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (tok.empty() || tok.size() > 18 || tok.find_first_not_of("0123456789") != std::string::npos) return false;
    if (!shape->AppendDim(std::stoll(tok))) return false;
    if (end == std::string::npos) return true;
    pos = end + 1;
  }
}

// Every --shape NAME=D0,D1,... into `shapes`; false (after printing the error) on a bad one.
bool ParseShapeSpecs(const std::vector<std::string>& specs, std::map<std::string, Shape>* shapes) {
  for (auto& spec : specs) {
    std::string name;
    Shape s;
    if (!ParseShapeSpec(spec, &name, &s)) {
      Fail("--shape '" + spec + "' must be NAME=D0,D1,... with whole non-negative dims (NAME= for a scalar), at most 8");
      return false;
    }
    (*shapes)[name] = s;
  }
  return true;
}

struct RunArgs {
  std::string graph;
  std::vector<std::string> inputs;
  std::string output_dir = ".";
  std::vector<std::string> packages;
  bool allow_override = false;
  bool trust_embedded_code = false;
  int threads = 1;
  int profile = 0;
  int repeat = 0;
  std::string trace;
};

// Records each step of a run as a Chrome trace "complete" event (ph "X", microseconds), for
// chrome://tracing and ui.perfetto.dev.
class TraceRecorder : public StepObserver {
 public:
  void OnStep(const StepEvent& e) override {
    auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count(); };
    auto shapes = [](const WeftTensor* const* ts, size_t n) {
      nlohmann::json a = nlohmann::json::array();
      for (size_t k = 0; k < n; ++k) {
        const Tensor& t = *Tensor::View(ts[k]);
        a.push_back(std::string(DataTypeName(t.GetDataType())) + t.GetShape().ToString());
      }
      return a;
    };
    const std::string op_type(e.op_type);
    events_.push_back({{"name", op_type},
                       {"cat", "step"},
                       {"ph", "X"},
                       {"ts", us(e.start - origin_)},
                       {"dur", us(e.duration)},
                       {"pid", pid_},
                       {"tid", 1},
                       {"args",
                        {{"step", e.index},
                         {"node", std::string(e.node)},
                         {"op_type", op_type},
                         {"inputs", shapes(e.inputs, e.num_inputs)},
                         {"outputs", shapes(e.outputs, e.num_outputs)}}}});
  }
  // Timestamps count from now.
  void Start() { origin_ = std::chrono::steady_clock::now(); }
  size_t size() const { return events_.size(); }
  bool Write(std::ostream& f) const {
    f << nlohmann::json{{"traceEvents", events_}, {"displayTimeUnit", "ns"}}.dump(1) << "\n";
    return f.flush().good();
  }

 private:
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  int pid_ = static_cast<int>(::getpid());
  nlohmann::json events_ = nlohmann::json::array();
};

// Splits "a.npy,b.npy" (an empty text: no files).
std::vector<std::string> FileList(const std::string& text) {
  std::vector<std::string> files;
  for (size_t at = 0; at < text.size();) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    files.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return files;
}

// A sequence input from its files in order, or an optional one from none (empty) or one file.
Expected<HostTensor> ReadValueInput(const ValueInfo& in, const std::string& files) {
  std::vector<HostTensor> items;
  for (const std::string& f : FileList(files)) {
    auto t = ReadNpy(f);
    if (!t.ok()) return t.status();
    items.push_back(std::move(t).value());
  }
  if (IsSequenceType(in.dtype)) return MakeSequence(ElementTypeOf(in.dtype), items);
  if (items.size() > 1) return InvalidArgument("an optional holds one value; " + std::to_string(items.size()) + " files given");
  DataType inner = ElementTypeOf(in.dtype);
  if (items.empty()) return MakeOptional(inner, nullptr);
  if (IsSequenceType(inner)) {
    auto s = MakeSequence(ElementTypeOf(inner), items);
    if (!s.ok()) return s.status();
    return MakeOptional(inner, &s.value());
  }
  return MakeOptional(inner, &items[0]);
}

int Run(const RunArgs& a) {
  std::map<std::string, HostTensor> feeds;
  std::map<std::string, std::string> value_specs;  // sequence and optional inputs: their files, read once the model is known
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : a.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return Fail("--input '" + spec + "' must be NAME=FILE.npy");
    if (feeds.count(spec.substr(0, eq)) || value_specs.count(spec.substr(0, eq)))
      return Fail("--input '" + spec.substr(0, eq) + "' is given twice");
    value_specs[spec.substr(0, eq)] = spec.substr(eq + 1);
    if (spec.size() == eq + 1 || spec.find(',', eq) != std::string::npos) continue;  // only a sequence or an optional
    auto t = ReadNpy(spec.substr(eq + 1));
    if (!t.ok()) return Fail("input '" + spec.substr(0, eq) + "': " + t.status().message());
    shapes[spec.substr(0, eq)] = t.value().shape();
    feeds[spec.substr(0, eq)] = std::move(t).value();
  }
  SessionOptions o;
  o.package_paths = a.packages;
  o.allow_override = a.allow_override;
  o.intra_op_threads = a.threads;
  o.trust_embedded_code = a.trust_embedded_code;
  auto session = Session::Create(o);
  if (!session.ok()) return Fail(session.status().message());
  Expected<std::shared_ptr<CompiledModel>> model = Status(Status::Code::kInternal, "no model");
  if (IsModelFile(a.graph)) {
    model = session.value()->LoadModel(a.graph);
  } else {
    auto graph = LoadGraph(a.graph, shapes);
    if (!graph.ok()) return Fail(graph.status().message());
    model = session.value()->Compile(graph.value());
  }
  if (!model.ok()) return Fail(model.status().message());
  std::vector<std::string> names;
  for (auto& in : model.value()->inputs()) names.push_back(in.name);
  for (auto& in : model.value()->inputs()) {
    auto spec = value_specs.find(in.name);
    if (spec == value_specs.end()) continue;
    if (IsSequenceType(in.dtype) || IsOptionalType(in.dtype)) {
      auto v = ReadValueInput(in, spec->second);
      if (!v.ok()) return Fail("input '" + in.name + "' (" + DataTypeName(in.dtype) + "): " + v.status().message());
      feeds[in.name] = std::move(v).value();
    } else if (!feeds.count(in.name)) {
      return Fail("--input '" + in.name + "=" + spec->second + "': the input is a " + DataTypeName(in.dtype) +
                  " tensor; give one .npy file (a list of files or none is for sequence and optional inputs)");
    }
  }
  for (auto& [name, spec] : value_specs)
    if (!feeds.count(name) && std::find(names.begin(), names.end(), name) == names.end()) feeds[name] = HostTensor();
  for (auto& [name, t] : feeds) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string list;
    for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
    std::vector<std::string> near = NearestNames(name, names);
    return Fail("--input '" + name + "': the model has no input of that name" +
                (near.empty() ? "" : "; " + DidYouMean(near)) + " (its inputs: " + list + ")");
  }
  std::string missing;
  for (auto& in : model.value()->inputs())
    if (!feeds.count(in.name))
      missing += (missing.empty() ? "" : ", ") + in.name + " (" + DataTypeName(in.dtype) + in.shape.ToString() + ")";
  if (!missing.empty()) return Fail("missing --input for: " + missing);
  std::vector<TensorRef> refs;
  for (auto& in : model.value()->inputs()) refs.push_back(TensorRef::Of(feeds.at(in.name)));
  auto ctx = model.value()->CreateRunContext();
  if (a.profile > 0) {
    auto prof = model.value()->Profile(*ctx, refs.data(), refs.size(), a.profile);
    if (!prof.ok()) return Fail(prof.status().message());
    std::vector<StepProfile> steps = prof.value();
    double total = 0;
    for (auto& p : steps) total += p.mean_us;
    std::map<std::string, double> by_op;
    for (auto& p : steps) by_op[p.op_type] += p.mean_us;
    std::stable_sort(steps.begin(), steps.end(), [](const StepProfile& x, const StepProfile& y) { return x.mean_us > y.mean_us; });
    std::printf("profile: %d runs, %.1f us per run in %zu steps\n", a.profile, total, steps.size());
    std::printf("  by op type:\n");
    std::vector<std::pair<double, std::string>> ops;
    for (auto& [op, us] : by_op) ops.push_back({us, op});
    std::sort(ops.rbegin(), ops.rend());
    for (auto& [us, op] : ops) std::printf("    %-28s %10.1f us %5.1f%%\n", op.c_str(), us, total > 0 ? 100 * us / total : 0.0);
    std::printf("  slowest steps (mean and median per run; runs: how many of the %d executed the step):\n", a.profile);
    for (size_t k = 0; k < steps.size() && k < 15; ++k)
      std::printf("    %-40s %-20s %10.1f us %10.1f us %6d\n", steps[k].node.c_str(), steps[k].op_type.c_str(), steps[k].mean_us,
                  steps[k].median_us, steps[k].runs);
    int skipped = 0;
    for (auto& p : steps) skipped += p.runs == 0;
    if (skipped) std::printf("  %d step(s) never ran (branches not taken)\n", skipped);
  }
  if (a.repeat > 0) {
    // Whole runs after one untimed warm-up: the latency a caller sees.
    auto warm = model.value()->RunViews(*ctx, refs.data(), refs.size());
    if (!warm.ok()) return Fail(warm.status().message());
    std::vector<double> ms;
    for (int r = 0; r < a.repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      auto o = model.value()->RunViews(*ctx, refs.data(), refs.size());
      auto t1 = std::chrono::steady_clock::now();
      if (!o.ok()) return Fail(o.status().message());
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * static_cast<double>(ms.size())))]; };
    double sum = 0;
    for (double x : ms) sum += x;
    std::printf("repeat: %d runs after a warm-up: median %.3f ms, p90 %.3f ms, min %.3f ms, mean %.3f ms\n", a.repeat, at(0.5), at(0.9),
                ms.front(), sum / static_cast<double>(ms.size()));
  }
  // The traced run is the one whose outputs are written; the file is opened first so that a bad
  // path fails before the run, and written even when the run fails (up to the failing step).
  TraceRecorder trace;
  std::ofstream trace_file;
  if (!a.trace.empty()) {
    trace_file.open(a.trace);
    if (!trace_file) return Fail("--trace: cannot write '" + a.trace + "'");
    ctx->SetStepObserver(&trace);
    trace.Start();
  }
  auto out = model.value()->RunViews(*ctx, refs.data(), refs.size());
  const bool traced = a.trace.empty() || trace.Write(trace_file);
  if (!out.ok()) return Fail(out.status().message());
  if (!traced) return Fail("--trace: cannot write '" + a.trace + "'");
  std::error_code ec;
  fs::create_directories(a.output_dir, ec);
  if (ec) return Fail("cannot create output directory '" + a.output_dir + "': " + ec.message());
  const std::vector<ValueInfo>& outputs = model.value()->outputs();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const TensorRef& v = out.value()[k];
    auto t = HostTensor::FromBytes(v.dtype, v.shape, v.data, v.bytes);
    if (!t.ok()) return Fail("output '" + outputs[k].name + "': " + t.status().message());
    if (IsSequenceType(v.dtype) || IsOptionalType(v.dtype)) {  // one file per item: <name>.<k>.npy, or <name>.npy
      auto items = ValueItems(t.value());
      if (!items.ok()) return Fail("output '" + outputs[k].name + "': " + items.status().message());
      if (IsOptionalType(v.dtype) && IsSequenceType(ElementTypeOf(v.dtype)) && !items.value().empty()) {
        auto inner = ValueItems(items.value()[0]);
        if (!inner.ok()) return Fail("output '" + outputs[k].name + "': " + inner.status().message());
        items = std::move(inner);
      }
      std::cout << outputs[k].name << ": " << DataTypeName(v.dtype) << " of " << items.value().size() << (items.value().empty() ? "\n" : " ->");
      for (size_t i = 0; i < items.value().size(); ++i) {
        std::string name = SafeFileName(outputs[k].name) + (IsOptionalType(v.dtype) && IsTensorType(ElementTypeOf(v.dtype)) ? "" : "." + std::to_string(i)) + ".npy";
        std::string path = (fs::path(a.output_dir) / name).string();
        Status s = WriteNpy(path, items.value()[i]);
        if (!s.ok()) return Fail(s.message());
        std::cout << " " << path << (i + 1 == items.value().size() ? "\n" : "");
      }
      continue;
    }
    std::string path = (fs::path(a.output_dir) / (SafeFileName(outputs[k].name) + ".npy")).string();
    Status s = WriteNpy(path, t.value());
    if (!s.ok()) return Fail(s.message());
    std::cout << outputs[k].name << ": " << DataTypeName(v.dtype) << v.shape.ToString() << " -> " << path << "\n";
  }
  if (!a.trace.empty()) std::cout << "trace: " << trace.size() << " steps -> " << a.trace << "\n";
  return 0;
}

struct CompileArgs {
  std::string graph, output;
  std::vector<std::string> shapes;
  std::vector<std::string> packages;
  bool allow_override = false;
  bool embed_plugins = false;
  bool pin_plugins = false;
};

// Offline compilation: graph → compiled model file.
int CompileCmd(const CompileArgs& a) {
  std::map<std::string, Shape> shapes;
  if (!ParseShapeSpecs(a.shapes, &shapes)) return 1;
  if (IsModelFile(a.graph)) return Fail("'" + a.graph + "' is already a compiled model file");
  auto graph = LoadGraph(a.graph, shapes);
  if (!graph.ok()) return Fail(graph.status().message());
  SessionOptions o;
  o.package_paths = a.packages;
  o.allow_override = a.allow_override;
  auto session = Session::Create(o);
  if (!session.ok()) return Fail(session.status().message());
  auto model = session.value()->Compile(graph.value());
  if (!model.ok()) return Fail(model.status().message());
  SaveOptions so;
  so.embed_plugins = a.embed_plugins;
  so.pin_plugin_hashes = a.pin_plugins;
  Status s = model.value()->Save(a.output, so);
  if (!s.ok()) return Fail(s.message());
  // A file is only reported written once it loads: what this tool writes, its loader accepts
  // (native code included: this process just compiled it).
  LoadOptions check;
  check.trust_embedded_code = true;
  auto reloaded = session.value()->LoadModel(a.output, check);
  if (!reloaded.ok()) {
    std::error_code rm;
    fs::remove(a.output, rm);
    return Fail("the model file written to '" + a.output + "' does not load back, so it was removed: " +
                reloaded.status().message());
  }
  std::error_code ec;
  std::cout << "wrote " << a.output << " (" << fs::file_size(a.output, ec) << " bytes, " << model.value()->num_steps()
            << " steps" << (a.embed_plugins ? ", plugins embedded" : "") << ")\n";
  return 0;
}

struct AotArgs {
  std::string graph, output, prefix;
  std::vector<std::string> shapes, packages, test_inputs, test_outputs, freeze;
  bool allow_override = false, test = false, external_arena = false, json = false, list_parts = false;
  std::string const_section, config;
  uint64_t seed = 1;
  int test_steps = 1;
  std::string test_layers = "auto";
  double atol = 1e-5, rtol = 1e-4;
};

// The model as a C99 module: every node emits its C (EmittableOp), the arena is planned here.
int AotCmd(const AotArgs& a) {
  if (a.list_parts) {  // the default registry context (weft/registry_context.h)
    auto ctx = DefaultRegistryContext();
    auto list = [](const char* title, const std::vector<std::string>& keys) {
      std::printf("%s (%zu):\n ", title, keys.size());
      size_t col = 1;
      for (const std::string& k : keys) {
        if (col + k.size() + 1 > 100) std::printf("\n "), col = 1;
        std::printf(" %s", k.c_str());
        col += k.size() + 1;
      }
      std::printf("\n");
    };
    list("litert_parsers: LiteRT builtin operators", ctx->litert_parsers.Keys());
    list("emitters: built-in op types that emit C", ctx->emitters.Keys());
    std::printf("transforms (a config file's `transforms:` names them):\n");
    for (const std::string& k : ctx->transforms.Keys()) {
      const GraphTransform* t = ctx->transforms.Get(k);
      std::printf("  %s: %s\n", k.c_str(), t->doc.c_str());
      for (const OptionField& f : t->options.fields) std::printf("    %s (%s): %s\n", f.name.c_str(), AttrTypeName(f.type), f.doc.c_str());
    }
    std::printf("A package op emits its own C (EmittableOp). Model hooks, parsers, option schemas, emitters and transforms of your own\n"
                "are registered from C++ or Python (weft.RegistryContext); see docs/aot.md, \"Registry\".\n");
    return 0;
  }
  if (a.graph.empty() || a.output.empty()) return Fail("weft aot needs a model and -o DIR (see weft aot --help)");
  std::map<std::string, Shape> shapes;
  if (!ParseShapeSpecs(a.shapes, &shapes)) return 1;
  SessionOptions o;
  o.package_paths = a.packages;
  o.allow_override = a.allow_override;
  o.options["weft.graph_passes"] = "none";  // every node as the model has it
  auto session = Session::Create(o);
  if (!session.ok()) return Fail(session.status().message());
  Expected<std::shared_ptr<CompiledModel>> model = Status(Status::Code::kInternal, "no model");
  AotOptions ao;
  AotConfig config;
  if (!a.config.empty()) {
    auto c = LoadAotConfig(a.config);
    if (!c.ok()) return Fail(c.status().message());
    config = std::move(c).value();
  }
  if (IsModelFile(a.graph)) {
    if (!shapes.empty() || !a.freeze.empty()) return Fail("--shape and --freeze apply to a graph, not to a compiled model file, whose shapes are fixed");
    if (!config.rules.empty())
      return Fail("--config: the attribute rules of " + a.config + " apply to a graph (.onnx, .tflite, .json), not to a compiled model file");
    model = session.value()->LoadModel(a.graph);
  } else {
    auto graph = LoadGraph(a.graph, shapes);
    if (!graph.ok()) return Fail(graph.status().message());
    // A C module has fixed shapes: unknown dims of inputs not given with --shape become 1 (said).
    std::map<std::string, Shape> fixed = shapes;
    for (const ValueInfo& in : graph.value().inputs()) {
      if (fixed.count(in.name) || !in.shape.IsUnknown()) continue;
      Shape s = in.shape;
      for (size_t d = 0; d < s.GetDimNum(); ++d)
        if (s.GetDim(d) < 0) s.SetDim(d, 1);
      std::cerr << "weft aot: input '" << in.name << "' has shape " << in.shape.ToString() << "; generating for " << s.ToString()
                << " (choose with --shape " << in.name << "=...)\n";
      fixed[in.name] = s;
    }
    if (fixed.size() != shapes.size()) {
      graph = LoadGraph(a.graph, fixed);
      if (!graph.ok()) return Fail(graph.status().message());
    }
    for (const std::string& spec : a.freeze) {
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) return Fail("--freeze '" + spec + "' must be NAME=FILE.npy");
      auto t = ReadNpy(spec.substr(eq + 1));
      if (!t.ok()) return Fail("--freeze '" + spec.substr(0, eq) + "': " + t.status().message());
      graph = FreezeInput(graph.value(), spec.substr(0, eq), std::move(t).value());
      if (!graph.ok()) return Fail("--freeze: " + graph.status().message());
    }
    if (!a.config.empty()) {
      Status st = ApplyAotConfig(config, *session.value(), &graph.value(), &ao);
      if (!st.ok()) return Fail(st.message());
    }
    model = session.value()->Compile(graph.value());
  }
  if (!model.ok()) return Fail(model.status().message());
  // Command-line options win over the config file's.
  ao.prefix = a.prefix.empty() ? config.prefix : a.prefix;
  if (ao.prefix.empty()) {  // from the file name: a C identifier starting with a letter
    std::string stem = fs::path(a.graph).stem().string(), p;
    for (char c : stem) p += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '_';
    if (p.empty() || !std::isalpha(static_cast<unsigned char>(p[0]))) p = "m_" + p;
    ao.prefix = p.substr(0, 32);
  }
  ao.output_dir = a.output;
  ao.const_section = a.const_section.empty() ? config.const_section : a.const_section;
  ao.external_arena = a.external_arena || config.external_arena == 1;
  ao.test = a.test || !a.test_inputs.empty() || !a.test_outputs.empty();
  ao.seed = a.seed;
  ao.test_steps = a.test_steps;
  ao.test_layers = a.test_layers == "on" ? 1 : a.test_layers == "off" ? 0 : -1;
  ao.atol = a.atol;
  ao.rtol = a.rtol;
  for (const std::string& spec : a.test_inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return Fail("--test-input '" + spec + "' must be NAME=FILE.npy");
    auto t = ReadNpy(spec.substr(eq + 1));
    if (!t.ok()) return Fail("--test-input '" + spec.substr(0, eq) + "': " + t.status().message());
    ao.test_inputs[spec.substr(0, eq)] = std::move(t).value();
  }
  for (const std::string& spec : a.test_outputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return Fail("--test-output '" + spec + "' must be NAME=FILE.npy");
    auto t = ReadNpy(spec.substr(eq + 1));
    if (!t.ok()) return Fail("--test-output '" + spec.substr(0, eq) + "': " + t.status().message());
    ao.test_outputs[spec.substr(0, eq)] = std::move(t).value();
  }
  auto r = GenerateC(*model.value(), ao);
  if (!r.ok()) return Fail(r.status().message());
  const AotReport& rep = r.value();
  if (a.json) {
    nlohmann::json trials = nlohmann::json::array();
    for (auto& t : rep.trials) trials.push_back({{"algorithm", t.algorithm}, {"bytes", t.bytes}});
    std::cout << nlohmann::json{{"prefix", ao.prefix},          {"output_dir", a.output},
                                {"ops", rep.num_ops},            {"tensors", rep.num_tensors},
                                {"arena_bytes", rep.arena_bytes}, {"lower_bound_bytes", rep.lower_bound_bytes},
                                {"algorithm", rep.algorithm},    {"trials", trials},
                                {"constant_bytes", rep.constant_bytes}, {"files", rep.files}}
                     .dump(1)
              << "\n";
    return 0;
  }
  std::printf("wrote %s: prefix %s, %zu operators, %zu tensors\n", a.output.c_str(), ao.prefix.c_str(), rep.num_ops, rep.num_tensors);
  std::printf("  arena %llu bytes (lower bound %llu, %.3fx; best of %zu plans: %s)\n", static_cast<unsigned long long>(rep.arena_bytes),
              static_cast<unsigned long long>(rep.lower_bound_bytes),
              rep.lower_bound_bytes ? static_cast<double>(rep.arena_bytes) / static_cast<double>(rep.lower_bound_bytes) : 1.0, rep.trials.size(),
              rep.algorithm.c_str());
  std::printf("  constants %llu bytes\n", static_cast<unsigned long long>(rep.constant_bytes));
  for (auto& f : rep.files) std::printf("  %s\n", f.c_str());
  if (ao.test)
    std::printf("build and run the test: cmake -S %s -B %s/build && cmake --build %s/build && %s/build/%s_test\n", a.output.c_str(), a.output.c_str(),
                a.output.c_str(), a.output.c_str(), ao.prefix.c_str());
  return 0;
}

int InspectModel(const std::string& path) {
  auto info = InspectModelFile(path);
  if (!info.ok()) return Fail(info.status().message());
  const ModelFileInfo& i = info.value();
  std::cout << "model file: " << path << " (format " << i.format_version << ", " << i.file_bytes << " bytes, checksum ok)\n";
  std::cout << "graph: " << i.graph_name << "\n";
  for (auto& in : i.inputs) std::cout << "input  " << in.name << ": " << DataTypeName(in.dtype) << in.shape.ToString() << "\n";
  for (auto& o : i.outputs) std::cout << "output " << o.name << ": " << DataTypeName(o.dtype) << o.shape.ToString() << "\n";
  std::cout << "nodes: " << i.num_nodes << ", constants: " << i.num_constants << " (" << i.weight_bytes
            << " bytes), op blobs: " << i.num_blobs << ", compiled kernels: " << i.num_kernels << "\n";
  std::cout << "ops:\n";
  for (auto& p : i.plugins) {
    std::cout << "  " << p.op_type << " v" << p.version;
    if (p.library.empty()) std::cout << "  built-in";
    else std::cout << "  " << (p.package.empty() ? "" : "package " + p.package + ", ") << p.library << " " << p.hash
                   << (p.embedded ? " (embedded)" : "");
    std::cout << "\n";
  }
  return 0;
}

// One line per compiled step: op, node, where the op comes from, what was fused into it, and each
// tensor with its layout where it is not plain.
void PrintSteps(const CompiledModel& m) {
  auto io = [](const std::vector<StepInfo::Io>& v) {
    std::string out;
    for (auto& t : v) {
      out += (out.empty() ? "" : ", ") + t.name + ":" + DataTypeName(t.dtype) + t.shape.ToString();
      if (t.format == FORMAT_NC1HWC0) out += "@NC1HWC0";
      if (t.format == FORMAT_NHWC) out += "@NHWC";
    }
    return out;
  };
  std::vector<StepInfo> steps = m.DescribeSteps();
  std::cout << "steps: " << steps.size() << "\n";
  for (size_t k = 0; k < steps.size(); ++k) {
    const StepInfo& s = steps[k];
    std::cout << "  " << k << " " << s.op_type << " '" << s.node << "'";
    if (!s.fused_activation.empty()) std::cout << " +" << s.fused_activation;
    if (s.origin != "built-in") std::cout << " [" << s.origin << "]";
    std::cout << " (" << io(s.inputs) << ") -> (" << io(s.outputs) << ")\n";
  }
}

struct InspectArgs {
  std::string model;
  bool memory = false;
  bool steps = false;
  std::vector<std::string> shapes;
  std::vector<std::string> packages;
  bool allow_override = false;
};

int Inspect(const InspectArgs& a) {
  if (IsModelFile(a.model)) return InspectModel(a.model);
  std::map<std::string, Shape> shapes;
  if (!ParseShapeSpecs(a.shapes, &shapes)) return 1;
  auto graph = LoadGraph(a.model, shapes);
  if (!graph.ok()) return Fail(graph.status().message());
  const Graph& g = graph.value();
  std::cout << "graph: " << g.name() << "\n";
  for (auto& in : g.inputs()) std::cout << "input  " << in.name << ": " << DataTypeName(in.dtype) << in.shape.ToString() << "\n";
  for (auto& o : g.outputs()) std::cout << "output " << o << "\n";
  size_t const_bytes = 0;
  for (auto& [name, t] : g.constants()) const_bytes += t.bytes();
  std::cout << "constants: " << g.constants().size() << " (" << const_bytes << " bytes)\n";
  std::map<std::string, int> hist;
  for (auto& n : g.nodes()) ++hist[(n.domain.empty() ? "" : n.domain + ":") + n.op_type];
  std::vector<std::pair<int, std::string>> sorted;
  for (auto& [op, count] : hist) sorted.push_back({-count, op});
  std::sort(sorted.begin(), sorted.end());
  std::cout << "nodes: " << g.nodes().size() << "\n";
  for (auto& [neg, op] : sorted) std::cout << "  " << op << " x" << -neg << "\n";
  if (a.memory || a.steps) {
    SessionOptions o;
    o.package_paths = a.packages;
    o.allow_override = a.allow_override;
    auto session = Session::Create(o);
    if (!session.ok()) return Fail(session.status().message());
    auto model = session.value()->Compile(g);
    if (!model.ok()) return Fail(model.status().message());
    if (a.steps) PrintSteps(*model.value());
    if (!a.memory) return 0;
    MemoryReport r = model.value()->memory();
    if (model.value()->has_dynamic_shapes()) {
      std::cout << "memory: shapes are only known at run time (give --shape NAME=DIMS for every input)\n";
    } else {
      std::cout << "memory: arena " << r.arena_bytes << " bytes, lower bound " << r.lower_bound_bytes << " bytes (ratio "
                << (r.lower_bound_bytes ? static_cast<double>(r.arena_bytes) / static_cast<double>(r.lower_bound_bytes) : 1.0)
                << "), " << r.num_planned_tensors << " planned tensors, " << model.value()->num_steps() << " steps\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace weft::cli

namespace {
// One value per occurrence (`-p A -p B`). CLI11's default for a vector option also takes the
// words after it, so `-p PKG graph.json` would swallow the graph.
CLI::Option* Repeatable(CLI::Option* o) { return o->allow_extra_args(false); }

constexpr const char* kAllowOverrideHelp =
    "Accept an op type registered twice: a package replaces a built-in, and among package path entries "
    "(-p in order, then WEFT_CUSTOM_OPP_PATH) the earlier entry wins. Without it that is an error";
}  // namespace

int main(int argc, char** argv) {
  using namespace weft::cli;
  CLI::App app{"weft: run graphs whose every operator is a plugin.\n"
               "Operator packages are found through WEFT_CUSTOM_OPP_PATH (colon-separated package roots)."};
  app.require_subcommand(1);
  app.footer(
      "The `weft` installed with the Python package also has `weft serve MODEL` (a Ray Serve app for a model: "
      "docs/serving.md) and `weft compile PROGRAM.pt2` (torch.export programs).");

  PluginsArgs pa;
  auto* plugins = app.add_subcommand("plugins", "List operator packages from their manifests, without loading them");
  Repeatable(plugins->add_option("--path", pa.paths,
                                 "Extra package root, searched before WEFT_CUSTOM_OPP_PATH (repeatable)"));
  plugins->add_flag("--builtins", pa.builtins, "Also list the built-in operators");
  plugins->add_flag("--load", pa.load, "Also load each package to verify it (dlopen)");
  plugins->add_flag("--json", pa.json, "Print JSON");

  RunArgs ra;
  auto* run = app.add_subcommand("run", "Run a graph file (compiled first) or a compiled model file on .npy inputs");
  run->add_option("graph", ra.graph, "Graph file (JSON, see docs/graph_format.md), ONNX model (.onnx), LiteRT model (.tflite) or model file (.weft)")->required();
  Repeatable(run->add_option("-i,--input", ra.inputs,
                             "NAME=FILE.npy for each graph input (repeatable); a sequence input takes NAME=A.npy,B.npy,... "
                             "(NAME= for an empty one), an optional input NAME= for none"));
  run->add_option("-o,--output-dir", ra.output_dir, "Directory for <output>.npy files")->capture_default_str();
  Repeatable(run->add_option("-p,--package", ra.packages,
                             "Operator package root to load (repeatable; before WEFT_CUSTOM_OPP_PATH)"));
  run->add_flag("--allow-override", ra.allow_override, kAllowOverrideHelp);
  run->add_flag("--no-fuse-qdq", g_no_fuse_qdq, kNoFuseQdqHelp);
  run->add_flag("--trust-embedded-code", ra.trust_embedded_code,
                "Run plugin libraries embedded in a .weft file (native code: only for files you trust)");
  run->add_option("-t,--threads", ra.threads, "Intra-op threads")->check(CLI::Range(1, 256))->capture_default_str();
  run->add_option("--repeat", ra.repeat, "Also time N whole runs after a warm-up and print the median and p90 latency")
      ->check(CLI::Range(1, 1000000));
  run->add_option("--profile", ra.profile, "Also time every step over N runs and print where the time goes")
      ->check(CLI::Range(1, 100000));
  run->add_option("--trace", ra.trace,
                  "Write a Chrome/Perfetto trace of the run to FILE (JSON, one slice per step with its op type, "
                  "node and tensor shapes; open in ui.perfetto.dev)")
      ->type_name("FILE");

  CompileArgs ca;
  auto* compile = app.add_subcommand("compile", "Compile a graph offline into a model file that loads without compiling");
  compile->add_option("graph", ca.graph, "Graph file (JSON), ONNX model (.onnx) or LiteRT model (.tflite)")->required();
  compile->add_option("-o,--output", ca.output, "Model file to write (e.g. model.weft)")->required();
  Repeatable(compile->add_option("-s,--shape", ca.shapes, "NAME=D0,D1,... concrete shape for an input (repeatable)"));
  Repeatable(compile->add_option("-p,--package", ca.packages,
                                 "Operator package root to load (repeatable; before WEFT_CUSTOM_OPP_PATH)"));
  compile->add_flag("--allow-override", ca.allow_override, kAllowOverrideHelp);
  compile->add_flag("--no-fuse-qdq", g_no_fuse_qdq, kNoFuseQdqHelp);
  compile->add_flag("--embed-plugins", ca.embed_plugins, "Store the plugin libraries in the file (loaded from memory)");
  compile->add_flag("--pin-plugins", ca.pin_plugins,
                    "Require the exact plugin library builds when loading (default: same op types, versions and ABI level)");

  AotArgs aa;
  auto* aot = app.add_subcommand("aot", "Generate a dependency-free C99 module for a model (docs/aot.md): <prefix>_init, <prefix>_run, "
                                        "a statically planned arena, constants in const arrays");
  aot->add_option("model", aa.graph, "LiteRT model (.tflite), ONNX model (.onnx), graph file (JSON) or compiled model file (.weft)");
  aot->add_option("-o,--output", aa.output, "Directory for includes-api/, src/, CMakeLists.txt (and test/)");
  aot->add_flag("--list-parts", aa.list_parts,
                "List the conversion's built-in parts (LiteRT parsers, emitters, transforms a config file may name) and exit");
  aot->add_option("--prefix", aa.prefix, "C identifier that starts every public name (default: from the file name)");
  Repeatable(aot->add_option("-s,--shape", aa.shapes, "NAME=D0,D1,... concrete shape for an input (default: unknown dims become 1)"));
  Repeatable(aot->add_option("-p,--package", aa.packages, "Operator package root to load (repeatable; before WEFT_CUSTOM_OPP_PATH)"));
  aot->add_flag("--allow-override", aa.allow_override, kAllowOverrideHelp);
  aot->add_flag("--no-fuse-qdq", g_no_fuse_qdq, kNoFuseQdqHelp);
  Repeatable(aot->add_option("--freeze", aa.freeze,
                             "NAME=FILE.npy: make an input a constant with this value (e.g. an output_shape input), so that the "
                             "shapes it decides are known"));
  aot->add_flag("--test", aa.test, "Also write test/: golden inputs and Weft's outputs, <prefix>_test_case_init/_run and a test program");
  Repeatable(aot->add_option("--test-input", aa.test_inputs, "NAME=FILE.npy: a test input (others are random; implies --test)"));
  Repeatable(aot->add_option("--test-output", aa.test_outputs,
                             "NAME=FILE.npy: the expected output (e.g. from another runtime; others are Weft's; implies --test)"));
  aot->add_option("--seed", aa.seed, "Seed of the random test inputs")->capture_default_str();
  aot->add_option("--test-steps", aa.test_steps,
                  "Runs in a row in the test case, on one context (a model with state gets at least 8)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  aot->add_option("--test-layers", aa.test_layers,
                  "Also compare every operator's outputs as it runs: on, off, or auto (when they take at most 1 MiB); integer ones "
                  "must match exactly, so 'off' for a model whose 8-bit values come from float arithmetic the C does in another order")
      ->check(CLI::IsMember({"auto", "on", "off"}))->capture_default_str();
  aot->add_option("--atol", aa.atol, "Test tolerance for float outputs: absolute part")->capture_default_str();
  aot->add_option("--rtol", aa.rtol, "Test tolerance for float outputs: relative part")->capture_default_str();
  aot->add_option("--const-section", aa.const_section, "Place the constant arrays in this linker section (GCC/Clang)");
  aot->add_flag("--external-arena", aa.external_arena, "The caller passes the arena to <prefix>_init (the context holds none)");
  aot->add_option("--config", aa.config,
                  "YAML file of attribute rules (operators: - type/name/attributes), checked against each op's schema, and module options "
                  "(docs/aot.md)");
  aot->add_flag("--json", aa.json, "Print the report as JSON");

  InspectArgs ia;
  auto* inspect = app.add_subcommand("inspect", "Show a model's inputs, outputs and op histogram (JSON graph, .onnx, .tflite or .weft)");
  inspect->add_option("model", ia.model, "Graph file, ONNX or LiteRT model, or compiled model file")->required();
  inspect->add_flag("--memory", ia.memory, "Compile and report the planned arena next to its lower bound");
  inspect->add_flag("--steps", ia.steps,
                    "Compile and list the steps: op, node, fused activation, plugin origin, tensors (@NC1HWC0, @NHWC: the layout a value is stored in, where not plain)");
  Repeatable(inspect->add_option("-s,--shape", ia.shapes, "NAME=D0,D1,... concrete shape for an input (repeatable)"));
  Repeatable(inspect->add_option("-p,--package", ia.packages, "Operator package root to load (repeatable)"));
  inspect->add_flag("--allow-override", ia.allow_override, kAllowOverrideHelp);
  inspect->add_flag("--no-fuse-qdq", g_no_fuse_qdq, kNoFuseQdqHelp);

  CheckOpArgs cka;
  auto* check_op = app.add_subcommand(
      "check-op", "Check the ops of an operator package: each runs as a one-node graph per declared input type, in "
                  "plugin checking mode, with one PASS/FAIL/SKIP line per check; exit status 1 when a check fails");
  check_op->add_option("package", cka.package, "Operator package root (or one operator library, .so)")->required();
  check_op->add_option("--op", cka.op, "Check only this op type");
  Repeatable(check_op->add_option("--attr", cka.attrs,
                                  "NAME=VALUE for an attribute the checker cannot invent (lists: 1,2,3; types: float32) "
                                  "(repeatable)"));
  check_op->add_flag("--allow-override", cka.allow_override,
                     "Let the package replace built-in ops of the same type (without it that is an error)");

  std::string mroot, mname;
  auto* manifest = app.add_subcommand("manifest", "Write <package>/weft_manifest.json (run by weft_add_op_package)");
  manifest->add_option("package", mroot, "Operator package root")->required();
  manifest->add_option("--name", mname, "Package name (default: the directory name)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Nothing escapes as a crash: an exception from anywhere below (out of memory included)
  // becomes an error message and exit status 1.
  try {
    if (*plugins) return Plugins(pa);
    if (*run) return Run(ra);
    if (*inspect) return Inspect(ia);
    if (*compile) return CompileCmd(ca);
    if (*aot) return AotCmd(aa);
    if (*check_op) return CheckOp(cka);
    if (*manifest) {
      if (mname.empty()) mname = fs::path(mroot).lexically_normal().filename().string();
      weft::Status s = WriteManifest(mroot, mname);
      if (!s.ok()) {
        std::cerr << "weft: error: " << s.message() << "\n";
        return 1;
      }
      return 0;
    }
  } catch (const std::bad_alloc&) {
    std::cerr << "weft: error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "weft: error: " << e.what() << "\n";
  }
  return 1;
}
