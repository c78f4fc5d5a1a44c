// `weft check-op`: an operator author's checker. Each op type a package registers runs as a
// one-node graph per declared input type, in plugin checking mode, and is held to the rules of
// docs/writing_ops.md; one PASS/FAIL/SKIP line per check. Built on the public API (weft/weft.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <latch>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "commands.h"

namespace fs = std::filesystem;

namespace weft::cli {
namespace {

enum Check : int {
  kPrototype,
  kSweep,
  kInferShape,
  kRedZones,
  kFullyWritten,
  kInputsUnmodified,
  kDeterminism,
  kConcurrent,
  kRoundTrip,
  kRebinding,
  kBounds,
  kNumChecks
};
// The line texts tests and scripts match on: keep them stable.
const char* const kCheckNames[kNumChecks] = {"prototype",
                                             "dtype sweep",
                                             "InferShape vs Execute",
                                             "red zones",
                                             "outputs fully written",
                                             "inputs unmodified",
                                             "determinism",
                                             "concurrent Execute",
                                             "Serialize/Deserialize round trip",
                                             "ArgsUpdater rebinding",
                                             "data-dependent bounds"};

constexpr int kThreads = 4, kRunsPerThread = 8;
constexpr size_t kGuardBytes = 64;
constexpr uint8_t kGuardByte = 0xCD;

const std::vector<Shape>& ProbeShapes() {
  static const std::vector<Shape> shapes = {Shape({2, 3}), Shape({1, 2, 4, 4})};
  return shapes;
}

// ---- crash reporting: a plugin that crashes still gets its FAIL line ----------------------
char g_crash_line[1024];

extern "C" void OnCrash(int sig) {
  const char* sig_name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                         : sig == SIGILL ? "SIGILL" : "SIGABRT";
  ssize_t r = ::write(STDOUT_FILENO, g_crash_line, std::strlen(g_crash_line));
  r = ::write(STDOUT_FILENO, sig_name, std::strlen(sig_name));
  r = ::write(STDOUT_FILENO, ")\n", 2);
  (void)r;
  _exit(1);
}

void InstallCrashHandlers() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    struct sigaction sa {};
    sa.sa_handler = OnCrash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, nullptr);
  }
}

// What is running now, for the crash line.
void Phase(Check c, const std::string& label) {
  std::snprintf(g_crash_line, sizeof(g_crash_line), "  FAIL  %s: %s: the op crashed (", kCheckNames[c], label.c_str());
}

// ---- results --------------------------------------------------------------------------------
enum class Verdict { kNone, kPass, kSkip, kFail };
struct Mark {
  Verdict verdict = Verdict::kNone;
  std::string text;
};

// The checks' results for one input-type configuration.
struct ConfigResult {
  std::string label;
  Mark marks[kNumChecks];
  void Pass(Check c, std::string note = "") {
    if (marks[c].verdict == Verdict::kNone) marks[c] = {Verdict::kPass, std::move(note)};
  }
  void Skip(Check c, std::string reason) {
    if (marks[c].verdict == Verdict::kNone) marks[c] = {Verdict::kSkip, std::move(reason)};
  }
  void Fail(Check c, std::string message) {
    if (marks[c].verdict != Verdict::kFail) marks[c] = {Verdict::kFail, std::move(message)};
  }
  bool failed(Check c) const { return marks[c].verdict == Verdict::kFail; }
};

std::string FirstLine(const std::string& s) {
  size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl) + " ...";
}

bool Has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The check a run error belongs to: plugin checking mode's violations and the runtime's own
// InferShape and bound checks; -1 for anything else.
int Classify(const std::string& m) {
  if (Has(m, "] wrote past the end of")) return kRedZones;
  if (Has(m, "] left elements of output")) return kFullyWritten;
  if (Has(m, "] modified its input")) return kInputsUnmodified;
  if (Has(m, "differs from the inferred")) return kInferShape;
  if (Has(m, "outside its bound") || Has(m, "did not report its real shape")) return kBounds;
  return -1;
}

void RecordError(ConfigResult& r, Check fallback, const std::string& where, const std::string& message) {
  int c = Classify(message);
  r.Fail(c >= 0 ? static_cast<Check>(c) : fallback, (where.empty() ? "" : where + ": ") + FirstLine(message));
}

// ---- inputs, graphs, runs -------------------------------------------------------------------
HostTensor RandomTensor(DataType dt, const Shape& shape, uint32_t seed) {
  HostTensor t(dt, shape);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> real(-2.f, 2.f);
  std::uniform_int_distribution<int> small(0, 1);  // valid as an index into every probe dim
  for (int64_t i = 0; i < t.numel(); ++i) {
    float f = real(g);
    if (f > -1e-3f && f < 1e-3f) f = 0.5f;
    int v = small(g);
    switch (dt) {
      case DT_FLOAT: t.data_as<float>()[i] = f; break;
      case DT_DOUBLE: t.data_as<double>()[i] = f; break;
      case DT_FLOAT16: t.data_as<float16>()[i] = float16(f); break;
      case DT_BF16: t.data_as<bfloat16>()[i] = bfloat16(f); break;
      case DT_INT8: t.data_as<int8_t>()[i] = static_cast<int8_t>(v); break;
      case DT_UINT8: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DT_BOOL: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DT_INT16: t.data_as<int16_t>()[i] = static_cast<int16_t>(v); break;
      case DT_UINT16: t.data_as<uint16_t>()[i] = static_cast<uint16_t>(v); break;
      case DT_INT32: t.data_as<int32_t>()[i] = v; break;
      case DT_UINT32: t.data_as<uint32_t>()[i] = static_cast<uint32_t>(v); break;
      case DT_INT64: t.data_as<int64_t>()[i] = v; break;
      case DT_UINT64: t.data_as<uint64_t>()[i] = static_cast<uint64_t>(v); break;
      default: break;
    }
  }
  return t;
}

// One type per IR input (DT_UNDEFINED: an absent optional input).
struct Config {
  std::vector<DataType> dtypes;
  std::string label;
};

// Every declared input type at least once: for each type any input allows, the inputs that allow
// it take it and the others their first type. Optional inputs stay absent.
std::vector<Config> DtypeConfigs(const OpSchema& s) {
  std::vector<DataType> all;
  for (auto& io : s.inputs)
    if (io.kind != WEFT_IO_OPTIONAL)
      for (DataType d : io.dtypes)
        if (std::find(all.begin(), all.end(), d) == all.end()) all.push_back(d);
  std::vector<Config> configs;
  if (all.empty()) all.push_back(DT_UNDEFINED);  // no inputs to vary: one configuration
  for (DataType d : all) {
    Config c;
    std::vector<std::string> names;
    bool uniform = true;
    for (auto& io : s.inputs) {
      DataType t = DT_UNDEFINED;
      if (io.kind != WEFT_IO_OPTIONAL && !io.dtypes.empty())
        t = std::find(io.dtypes.begin(), io.dtypes.end(), d) != io.dtypes.end() ? d : io.dtypes[0];
      if (t != DT_UNDEFINED) {
        uniform = uniform && t == d;
        names.push_back(io.name + "=" + DataTypeName(t));
      }
      c.dtypes.push_back(t);
    }
    bool seen = false;
    for (auto& o : configs) seen = seen || o.dtypes == c.dtypes;
    if (seen) continue;
    if (names.empty()) c.label = "no inputs";
    else if (uniform) c.label = DataTypeName(d);
    else for (auto& n : names) c.label += (c.label.empty() ? "" : ",") + n;
    configs.push_back(c);
  }
  return configs;
}

// The op alone: the graph's inputs feed it (one tensor per dynamic input), its outputs are the
// graph's.
Graph ProbeGraph(const OpSchema& s, const Config& c, const Shape& shape,
                 const std::map<std::string, AttrValue>& attrs) {
  Graph g("check-op " + s.op_type);
  Node n;
  n.name = "probe";
  n.op_type = s.op_type;
  n.attrs = attrs;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    if (c.dtypes[i] == DT_UNDEFINED) {
      n.input_counts.push_back(0);
      continue;
    }
    g.AddInput(s.inputs[i].name, c.dtypes[i], shape);
    n.inputs.push_back(s.inputs[i].name);
    n.input_counts.push_back(1);
  }
  for (auto& o : s.outputs) {
    n.outputs.push_back(o.name);
    n.output_counts.push_back(1);
  }
  g.AddNode(n);
  for (auto& o : s.outputs) g.AddOutput(o.name);
  return g;
}

std::vector<TensorRef> Refs(const std::vector<HostTensor>& ts) {
  std::vector<TensorRef> r;
  for (auto& t : ts) r.push_back(TensorRef::Of(t));
  return r;
}

// A run into the context's own memory (red zones after every output), copied out.
Expected<std::vector<HostTensor>> RunOnce(const CompiledModel& m, RunContext& ctx, const std::vector<HostTensor>& in) {
  auto refs = Refs(in);
  auto views = m.RunViews(ctx, refs.data(), refs.size());
  if (!views.ok()) return views.status();
  std::vector<HostTensor> out;
  for (const TensorRef& v : views.value()) {
    auto t = HostTensor::FromBytes(v.dtype, v.shape, v.data, v.bytes);
    if (!t.ok()) return t.status();
    out.push_back(std::move(t).value());
  }
  return out;
}

// "" when equal, else what differs first.
std::string Diff(const OpSchema& s, const std::vector<HostTensor>& want, const std::vector<HostTensor>& got) {
  if (want.size() != got.size())
    return std::to_string(got.size()) + " outputs instead of " + std::to_string(want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    std::string name = "output #" + std::to_string(k) + " ('" + (k < s.outputs.size() ? s.outputs[k].name : "?") + "')";
    if (want[k].dtype() != got[k].dtype() || want[k].shape() != got[k].shape())
      return name + " is " + DataTypeName(got[k].dtype()) + got[k].shape().ToString() + ", not " +
             DataTypeName(want[k].dtype()) + want[k].shape().ToString();
    const auto* a = static_cast<const uint8_t*>(want[k].data());
    const auto* b = static_cast<const uint8_t*>(got[k].data());
    for (size_t i = 0; i < want[k].bytes(); ++i)
      if (a[i] != b[i])
        return name + " differs at byte " + std::to_string(i) + " of " + std::to_string(want[k].bytes());
  }
  return "";
}

// Whether `real` is a shape `declared` (with -1 for data-dependent dims) admits.
bool Admits(const Shape& declared, const Shape& real) {
  if (declared.GetDimNum() != real.GetDimNum()) return false;
  for (size_t d = 0; d < declared.GetDimNum(); ++d)
    if (declared.GetDim(d) >= 0 && declared.GetDim(d) != real.GetDim(d)) return false;
  return true;
}

// ---- the checks that run the op, for one configuration ----------------------------------------
struct OpUnderTest {
  Session& session;
  const OpSchema& schema;
  std::map<std::string, AttrValue> attrs;
  std::string temp_dir;
};

void Concurrent(const OpUnderTest& op, const CompiledModel& m, const std::vector<HostTensor>& in,
                const std::vector<HostTensor>& want, ConfigResult& r) {
  Phase(kConcurrent, r.label);
  std::vector<std::string> errors(kThreads), diffs(kThreads);
  std::vector<std::thread> threads;
  std::latch start(kThreads);  // all threads run at once
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto ctx = m.CreateRunContext();
      start.arrive_and_wait();
      for (int k = 0; k < kRunsPerThread && errors[t].empty() && diffs[t].empty(); ++k) {
        auto got = RunOnce(m, *ctx, in);
        if (!got.ok()) errors[t] = got.status().message();
        else diffs[t] = Diff(op.schema, want, got.value());
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    if (!errors[t].empty()) return RecordError(r, kConcurrent, "thread " + std::to_string(t), errors[t]);
    if (!diffs[t].empty())
      return r.Fail(kConcurrent, "thread " + std::to_string(t) + ": " + diffs[t] + " from the single-threaded run");
  }
  r.Pass(kConcurrent, std::to_string(kThreads) + " threads, each with its own RunContext, " +
                         std::to_string(kRunsPerThread) + " runs each: the single-threaded run's bytes");
}

void RoundTrip(const OpUnderTest& op, const CompiledModel& m, const std::vector<HostTensor>& in,
               const std::vector<HostTensor>& want, ConfigResult& r) {
  Phase(kRoundTrip, r.label);
  std::string name = op.schema.op_type + "_" + r.label + ".weft";
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_') ch = '_';
  std::string path = (fs::path(op.temp_dir) / name).string();
  Status saved = m.Save(path);
  if (!saved.ok()) {
    std::error_code ec;
    fs::remove(path, ec);
    // Refused by rule (docs/writing_ops.md): a Compile callback without PortableOp.
    if (saved.code() == Status::Code::kFailedPrecondition && Has(saved.message(), "cannot be saved"))
      return r.Skip(kRoundTrip, "Save refuses the model: " + FirstLine(saved.message()));
    return RecordError(r, kRoundTrip, "CompiledModel::Save", saved.message());
  }
  LoadOptions lo;
  lo.trust_embedded_code = true;  // the kernels in the file were compiled by this process
  auto loaded = op.session.LoadModel(path, lo);
  std::error_code ec;
  fs::remove(path, ec);
  if (!loaded.ok()) return RecordError(r, kRoundTrip, "Session::LoadModel", loaded.status().message());
  auto ctx = loaded.value()->CreateRunContext();
  auto got = RunOnce(*loaded.value(), *ctx, in);
  if (!got.ok()) return RecordError(r, kRoundTrip, "running the loaded model", got.status().message());
  std::string d = Diff(op.schema, want, got.value());
  if (!d.empty()) return r.Fail(kRoundTrip, "the loaded model's " + d + " from the compiled model's");
  r.Pass(kRoundTrip, "CompiledModel::Save, Session::LoadModel: identical outputs");
}

// Caller-owned buffers: inputs copied, outputs sized as the first run produced them with a
// guard after each (the engine puts no red zone after caller buffers).
struct BufferSet {
  std::vector<HostTensor> in;
  std::vector<HostTensor> out_storage;
  std::vector<TensorRef> in_refs, out_refs;
  BufferSet(const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& like) : in(inputs) {
    in_refs = Refs(in);
    for (auto& t : like) {
      HostTensor s(DT_UINT8, Shape({static_cast<int64_t>(t.bytes() + kGuardBytes)}));
      std::memset(s.data(), kGuardByte, s.bytes());
      out_refs.push_back({t.dtype(), t.shape(), s.data(), t.bytes()});
      out_storage.push_back(std::move(s));
    }
  }
  // The first output whose guard was overwritten, or -1.
  int Overrun() const {
    for (size_t k = 0; k < out_refs.size(); ++k) {
      const auto* g = static_cast<const uint8_t*>(out_refs[k].data) + out_refs[k].bytes;
      for (size_t b = 0; b < kGuardBytes; ++b)
        if (g[b] != kGuardByte) return static_cast<int>(k);
    }
    return -1;
  }
  std::vector<HostTensor> Outputs() const {
    std::vector<HostTensor> o;
    for (auto& r : out_refs) o.push_back(HostTensor::FromBytes(r.dtype, r.shape, r.data, r.bytes).value());
    return o;
  }
};

void Rebinding(const OpUnderTest& op, const CompiledModel& m, const std::vector<HostTensor>& in,
               const std::vector<HostTensor>& want, ConfigResult& r) {
  Phase(kRebinding, r.label);
  BufferSet a(in, want), b(in, want);
  auto ctx = m.CreateRunContext();
  const bool updater = op.schema.capabilities & WEFT_CAP_ARGS_UPDATER;
  uint64_t updates = m.args_updates();
  // A, B, then A again: an op that kept the first addresses fails the third run.
  BufferSet* order[] = {&a, &b, &a};
  for (int k = 0; k < 3; ++k) {
    BufferSet& s = *order[k];
    std::string run = "run " + std::to_string(k + 1) + " (buffer set " + (k == 1 ? "B" : "A") + ")";
    Status st = m.Run(*ctx, s.in_refs.data(), s.in_refs.size(), s.out_refs.data(), s.out_refs.size());
    if (!st.ok()) return RecordError(r, kRebinding, run, st.message());
    if (int o = s.Overrun(); o >= 0)
      return r.Fail(kRedZones, run + ": wrote past the end of output #" + std::to_string(o) + " ('" +
                                   op.schema.outputs[static_cast<size_t>(o)].name + "') in a caller's buffer");
    std::string d = Diff(op.schema, want, s.Outputs());
    if (!d.empty()) return r.Fail(kRebinding, run + ": " + d + " from the first run");
    uint64_t now = m.args_updates();
    if (updater && now <= updates)
      return r.Fail(kRebinding,
                    run + ": new buffers, but CompiledModel::args_updates() stayed at " + std::to_string(now));
    updates = now;
  }
  r.Pass(kRebinding, std::string("caller buffer sets A, B, A give identical outputs") +
                         (updater ? "; args_updates() grew with each new set" : ""));
}

void RunConfig(const OpUnderTest& op, const Config& c, const Shape& shape, ConfigResult& r) {
  const OpSchema& s = op.schema;
  Graph g = ProbeGraph(s, c, shape, op.attrs);
  Phase(kSweep, r.label);
  auto compiled = op.session.Compile(g);
  if (!compiled.ok()) return RecordError(r, kSweep, "Compile", compiled.status().message());
  const CompiledModel& m = *compiled.value();
  std::vector<HostTensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    in.push_back(RandomTensor(g.inputs()[i].dtype, g.inputs()[i].shape, 1234u + 77u * static_cast<uint32_t>(i)));
  auto ctx = m.CreateRunContext();
  auto first = RunOnce(m, *ctx, in);
  if (!first.ok()) {
    // A violation seen on the first run belongs to its own check; the op did compile and run.
    if (Classify(first.status().message()) >= 0) r.Pass(kSweep);
    return RecordError(r, kSweep, "", first.status().message());
  }
  r.Pass(kSweep);
  r.Pass(kRedZones, "nothing written past an output or a MallocWorkSpace block");
  r.Pass(kInputsUnmodified, "inputs hashed before and after every Execute");

  // What inference declared (with -1 where a dim depends on data) against what Execute made.
  Phase(kInferShape, r.label);
  std::vector<ValueInfo> declared = m.outputs();
  if (m.has_dynamic_shapes()) {
    auto inferred = op.session.InferShapes(g);
    if (!inferred.ok()) return RecordError(r, kInferShape, "Session::InferShapes", inferred.status().message());
    declared = inferred.value();
  }
  bool data_dependent = false;
  for (size_t k = 0; k < declared.size() && k < first.value().size(); ++k) {
    const HostTensor& t = first.value()[k];
    data_dependent = data_dependent || declared[k].shape.IsUnknown();
    if (declared[k].dtype != t.dtype() || !Admits(declared[k].shape, t.shape()))
      r.Fail(kInferShape, "output #" + std::to_string(k) + " ('" + declared[k].name + "') was declared " +
                              DataTypeName(declared[k].dtype) + declared[k].shape.ToString() + ", Execute produced " +
                              DataTypeName(t.dtype()) + t.shape().ToString());
  }
  if (declared.size() != first.value().size())
    r.Fail(kInferShape, std::to_string(declared.size()) + " outputs declared, " + std::to_string(first.value().size()) +
                            " produced");
  r.Pass(kInferShape, m.has_dynamic_shapes()
                          ? "Execute's outputs lie within the shapes Session::InferShapes declares"
                          : "Execute's outputs have the types and shapes CompiledModel::outputs() declares");
  if (data_dependent) {
    std::string real;
    for (size_t k = 0; k < declared.size(); ++k)
      if (declared[k].shape.IsUnknown())
        real += (real.empty() ? "" : ", ") + declared[k].shape.ToString() + " -> " +
                first.value()[k].shape().ToString();
    r.Pass(kBounds, "real shapes within the declared ones: " + real);
    r.Skip(kFullyWritten, "the engine does not check data-dependent outputs for unwritten elements");
  } else {
    r.Skip(kBounds, "no output has data-dependent dims");
    r.Pass(kFullyWritten, "every element of every output written (poisoned beforehand)");
  }

  Phase(kDeterminism, r.label);
  auto second = RunOnce(m, *ctx, in);
  if (!second.ok()) return RecordError(r, kDeterminism, "second run", second.status().message());
  if (std::string d = Diff(s, first.value(), second.value()); !d.empty()) {
    r.Fail(kDeterminism, "two runs on the same inputs: " + d);
    const char* why = "outputs differ between runs (see determinism)";
    for (Check k : {kConcurrent, kRoundTrip, kRebinding}) r.Skip(k, why);
    return;
  }
  r.Pass(kDeterminism, "two runs on the same inputs give identical bytes");
  Concurrent(op, m, in, first.value(), r);
  RoundTrip(op, m, in, first.value(), r);
  Rebinding(op, m, in, first.value(), r);
}

// ---- one op ----------------------------------------------------------------------------------
void Line(const char* verdict, const std::string& check, const std::string& text) {
  std::printf("  %-4s  %s%s%s\n", verdict, check.c_str(), text.empty() ? "" : ": ", text.c_str());
  std::fflush(stdout);
}

std::string Plural(size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// Prints the op's lines; returns the number of failed checks.
int CheckOneOp(Session& session, const OpSchema& s, const std::map<std::string, AttrValue>& given,
               const std::string& temp_dir) {
  std::printf("%s (v%u", s.op_type.c_str(), s.version);
  for (auto& cap : CapabilityNames(s.capabilities)) std::printf(", %s", cap.c_str());
  std::printf(")\n");
  int failures = 0;

  // Prototype: the registry refused anything worse when the package loaded.
  std::vector<std::string> problems;
  for (int io = 0; io < 2; ++io)
    for (auto& x : io ? s.outputs : s.inputs)
      if (x.dtypes.empty())
        problems.push_back(std::string(io ? "output '" : "input '") + x.name + "' declares no data type");
  for (auto& a : s.attrs)
    if (!a.required && (a.default_value.empty() || a.default_value.type() != a.type))
      problems.push_back("attribute '" + a.name + "' has no " + AttrTypeName(a.type) + " default");
  if (!problems.empty()) {
    std::string all;
    for (auto& p : problems) all += (all.empty() ? "" : "; ") + p;
    Line("FAIL", kCheckNames[kPrototype], all);
    ++failures;
  } else {
    Line("PASS", kCheckNames[kPrototype],
         Plural(s.inputs.size(), "input") + ", " + Plural(s.outputs.size(), "output") + ", " +
             Plural(s.attrs.size(), "attribute") + "; data types and attribute defaults declared");
  }

  // What the op needs before anything can run.
  std::map<std::string, AttrValue> attrs;
  std::string cannot_run;
  for (auto& a : s.attrs) {
    auto it = given.find(a.name);
    if (it != given.end()) attrs[a.name] = it->second;
    else if (a.required && cannot_run.empty())
      cannot_run = std::string("needs attribute '") + a.name + "' (" + AttrTypeName(a.type) + "): give --attr " +
                   a.name + "=VALUE";
  }
  if (!(s.capabilities & WEFT_CAP_EAGER_EXECUTE)) cannot_run = "the op has no EagerExecuteOp, so it cannot run";
  const std::string kRest = "dtype sweep and the checks that run the op";
  if (!cannot_run.empty()) {
    Line("SKIP", kRest, cannot_run);
    return failures;
  }

  // The first probe shape inference accepts, per configuration.
  OpUnderTest op{session, s, attrs, temp_dir};
  std::vector<Config> configs = DtypeConfigs(s);
  std::vector<ConfigResult> results(configs.size());
  std::vector<Shape> shapes(configs.size());
  std::vector<bool> accepted(configs.size(), false);
  std::string rejection;
  for (size_t k = 0; k < configs.size(); ++k) {
    results[k].label = configs[k].label;
    Phase(kSweep, configs[k].label);
    for (const Shape& probe : ProbeShapes()) {
      auto inferred = session.InferShapes(ProbeGraph(s, configs[k], probe, attrs));
      if (inferred.ok()) {
        shapes[k] = probe;
        accepted[k] = true;
        break;
      }
      const std::string& m = inferred.status().message();
      if (!Has(m, "] InferShape failed") && !Has(m, "] InferDataType failed")) {
        results[k].Fail(kSweep, "Session::InferShapes: " + FirstLine(m));  // not the op's own verdict
        break;
      }
      if (rejection.empty()) rejection = FirstLine(m);
    }
  }
  bool any_failed = false, any_accepted = false;
  for (size_t k = 0; k < configs.size(); ++k) {
    any_failed = any_failed || results[k].failed(kSweep);
    any_accepted = any_accepted || accepted[k];
  }
  if (!any_accepted && !any_failed) {
    std::string probes;
    for (auto& p : ProbeShapes()) probes += (probes.empty() ? "" : " and ") + p.ToString();
    Line("SKIP", kRest, "InferShape rejects the probe shapes (" + probes + "): " + rejection);
    return failures;
  }
  for (size_t k = 0; k < configs.size(); ++k) {
    if (accepted[k]) RunConfig(op, configs[k], shapes[k], results[k]);
    else if (!results[k].failed(kSweep))
      results[k].Fail(kSweep, std::string("InferShape rejects the probe shapes") +
                                  (any_accepted ? " for this type, not for others: " : ": ") + rejection);
    std::string first_failure;
    for (int c = kSweep; c < kNumChecks && first_failure.empty(); ++c)
      if (results[k].failed(static_cast<Check>(c))) first_failure = kCheckNames[c];
    for (int c = kSweep; c < kNumChecks; ++c)
      results[k].Skip(static_cast<Check>(c),
                      first_failure.empty() ? "not run" : "not run after the failure in " + first_failure);
  }

  // One line per check across the configurations.
  for (int c = kSweep; c < kNumChecks; ++c) {
    std::vector<const ConfigResult*> failed, passed, skipped;
    for (auto& r : results) {
      switch (r.marks[c].verdict) {
        case Verdict::kFail: failed.push_back(&r); break;
        case Verdict::kPass: passed.push_back(&r); break;
        case Verdict::kSkip: skipped.push_back(&r); break;
        case Verdict::kNone: break;
      }
    }
    if (!failed.empty()) {
      std::string text = failed[0]->label + ": " + failed[0]->marks[c].text;
      if (failed.size() > 1) {
        std::string more;
        for (size_t k = 1; k < failed.size(); ++k) more += (more.empty() ? "" : ", ") + failed[k]->label;
        text += " (fails for " + more + " too)";
      }
      Line("FAIL", kCheckNames[c], text);
      ++failures;
    } else if (!passed.empty()) {
      std::string labels;
      for (auto* r : passed) labels += (labels.empty() ? "" : ", ") + r->label;
      std::string shape_note;
      for (size_t k = 0; k < results.size(); ++k)
        if (&results[k] == passed[0]) shape_note = shapes[k].ToString();
      std::string text = labels;
      if (c == kSweep) text += " on " + shape_note;
      if (!passed[0]->marks[c].text.empty()) text += ": " + passed[0]->marks[c].text;
      for (auto* r : skipped) text += "; skipped for " + r->label + ": " + r->marks[c].text;
      Line("PASS", kCheckNames[c], text);
    } else if (!skipped.empty()) {
      Line("SKIP", kCheckNames[c], skipped[0]->marks[c].text);
    } else {
      Line("SKIP", kCheckNames[c], "not run");
    }
  }
  return failures;
}

// --attr NAME=VALUE in the declared attribute type.
Expected<AttrValue> ParseAttr(WeftAttrType type, const std::string& text) {
  auto list = [&text]() {
    std::string t = text;
    if (!t.empty() && t.front() == '[') t = t.substr(1);
    if (!t.empty() && t.back() == ']') t.pop_back();
    std::vector<std::string> parts;
    std::stringstream ss(t);
    for (std::string p; std::getline(ss, p, ',');)
      if (!p.empty()) parts.push_back(p);
    return parts;
  };
  auto boolean = [](const std::string& v, bool* b) {
    if (v == "true" || v == "1") return *b = true, true;
    if (v == "false" || v == "0") return *b = false, true;
    return false;
  };
  // Whole-string numbers only ("1.5x" is an error, not 1.5).
  auto integer = [](const std::string& v) {
    size_t used = 0;
    long long n = std::stoll(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return static_cast<int64_t>(n);
  };
  auto real = [](const std::string& v) {
    size_t used = 0;
    float f = std::stof(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return f;
  };
  try {
    switch (type) {
      case WEFT_ATTR_INT: return AttrValue::Int(integer(text));
      case WEFT_ATTR_FLOAT: return AttrValue::Float(real(text));
      case WEFT_ATTR_STRING: return AttrValue::String(text);
      case WEFT_ATTR_BOOL: {
        bool b;
        if (boolean(text, &b)) return AttrValue::Bool(b);
        break;
      }
      case WEFT_ATTR_TYPE:
        for (int d = 0; d <= DT_BF16; ++d)
          if (DataTypeSize(static_cast<DataType>(d)) && text == DataTypeName(static_cast<DataType>(d)))
            return AttrValue::Type(static_cast<DataType>(d));
        break;
      case WEFT_ATTR_LIST_INT: {
        std::vector<int64_t> v;
        for (auto& p : list()) v.push_back(integer(p));
        return AttrValue::ListInt(v);
      }
      case WEFT_ATTR_LIST_FLOAT: {
        std::vector<float> v;
        for (auto& p : list()) v.push_back(real(p));
        return AttrValue::ListFloat(v);
      }
      case WEFT_ATTR_LIST_STRING: return AttrValue::ListString(list());
      case WEFT_ATTR_LIST_BOOL: {
        std::vector<bool> v;
        for (auto& p : list()) {
          bool b;
          if (!boolean(p, &b)) return InvalidArgument("'" + p + "' is not true, false, 1 or 0");
          v.push_back(b);
        }
        return AttrValue::ListBool(v);
      }
      default:
        return InvalidArgument(std::string(AttrTypeName(type)) + " attributes cannot be given on the command line");
    }
  } catch (const std::exception&) {
  }
  return InvalidArgument("'" + text + "' is not a valid " + AttrTypeName(type));
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "weft: error: %s\n", msg.c_str());
  return 1;
}

}  // namespace

int CheckOp(const CheckOpArgs& a) {
  SessionOptions o;
  o.use_env_path = false;
  o.allow_override = a.allow_override;
  o.check_plugins = true;
  std::error_code ec;
  const bool library = fs::is_regular_file(a.package, ec);
  if (!library) o.package_paths = {a.package};
  auto session = Session::Create(o);
  if (!session.ok()) return Fail(session.status().message());
  if (library)
    if (Status s = session.value()->LoadLibrary(a.package); !s.ok()) return Fail(s.message());

  std::vector<std::string> ops;
  for (const OpInfo& info : session.value()->ListOps())
    if (info.origin != "built-in") ops.push_back(info.op_type);
  if (ops.empty()) return Fail("'" + a.package + "' registers no op types");
  if (!a.op.empty()) {
    if (std::find(ops.begin(), ops.end(), a.op) == ops.end()) {
      std::string list;
      for (auto& n : ops) list += (list.empty() ? "" : ", ") + n;
      auto near = NearestNames(a.op, ops);
      return Fail("--op '" + a.op + "': '" + a.package + "' registers no op type of that name" +
                  (near.empty() ? "" : "; " + DidYouMean(near)) + " (it registers: " + list + ")");
    }
    ops = {a.op};
  }

  // --attr values, typed by the attribute's declaration in the ops being checked.
  std::vector<OpSchema> schemas;
  for (auto& name : ops) {
    auto s = session.value()->GetOpSchema(name);
    if (!s.ok()) return Fail(s.status().message());
    schemas.push_back(s.value());
  }
  std::map<std::string, std::string> attr_text;
  for (auto& spec : a.attrs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return Fail("--attr '" + spec + "' must be NAME=VALUE");
    attr_text[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  std::vector<std::map<std::string, AttrValue>> attrs(schemas.size());
  for (auto& [name, text] : attr_text) {
    bool used = false;
    for (size_t k = 0; k < schemas.size(); ++k)
      for (auto& decl : schemas[k].attrs) {
        if (decl.name != name) continue;
        auto v = ParseAttr(decl.type, text);
        if (!v.ok()) return Fail("--attr " + name + " of " + schemas[k].op_type + ": " + v.status().message());
        attrs[k][name] = v.value();
        used = true;
      }
    if (!used) return Fail("--attr '" + name + "': no op being checked has an attribute of that name");
  }

  fs::path temp = fs::temp_directory_path(ec) / ("weft-check-op-" + std::to_string(::getpid()));
  fs::create_directories(temp, ec);
  if (ec) return Fail("cannot create a temporary directory '" + temp.string() + "': " + ec.message());
  InstallCrashHandlers();
  std::printf("checking %zu op type%s from %s (plugin checking mode)\n", schemas.size(), schemas.size() == 1 ? "" : "s",
              a.package.c_str());
  int failed_checks = 0, failed_ops = 0;
  for (size_t k = 0; k < schemas.size(); ++k) {
    int f = CheckOneOp(*session.value(), schemas[k], attrs[k], temp.string());
    failed_checks += f;
    failed_ops += f > 0;
  }
  fs::remove_all(temp, ec);
  std::printf("%zu op type%s checked: %zu passed, %d failed (%d failed check%s)\n", schemas.size(),
              schemas.size() == 1 ? "" : "s", schemas.size() - static_cast<size_t>(failed_ops), failed_ops,
              failed_checks, failed_checks == 1 ? "" : "s");
  return failed_checks ? 1 : 0;
}

}  // namespace weft::cli
