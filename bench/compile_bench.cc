// Compile once, ship, run — what each step costs:
//   1. kernel cache: compiling a graph whose op generates and compiles C source (cache miss),
//      the same again in this process (memory hit) and in a new process (disk hit);
//   2. model file: full compile of a resnet18-sized graph vs loading its model file;
//   3. rebinding: runs with unchanged buffers, new buffers every run (ArgsUpdater), and the
//      re-setup an op without ArgsUpdater needs (compile + new run context).
// Usage: weft_bench_compile <compilable_add_custom package> <args_refresh_add_custom package>
//        [model.onnx]   (default: a resnet18-shaped graph with random weights, 11.7M parameters)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "weft/onnx.h"
#include "weft/weft.h"

using namespace weft;  // NOLINT
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

[[noreturn]] void Die(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  std::exit(1);
}
template <typename T>
T Check(Expected<T> e) {
  if (!e.ok()) Die(e.status());
  return std::move(e).value();
}

HostTensor Random(const Shape& s, uint32_t seed, float scale) {
  HostTensor t(DT_FLOAT, s);
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = d(g);
  return t;
}

// resnet18's topology (batch-norm folded into conv bias), random weights.
Graph Resnet18Shaped() {
  Graph g("resnet18_shaped");
  g.AddInput("x", DT_FLOAT, {1, 3, 224, 224});
  int id = 0;
  uint32_t seed = 1;
  auto conv = [&](const std::string& in, int64_t cin, int64_t cout, int64_t k, int64_t stride, bool relu) {
    std::string n = "conv" + std::to_string(id++);
    g.AddConstant(n + ".w", Random({cout, cin, k, k}, seed++, std::sqrt(2.f / static_cast<float>(cin * k * k))));
    g.AddConstant(n + ".b", Random({cout}, seed++, 0.01f));
    int64_t p = k / 2;
    g.AddNode("Conv", n, {in, n + ".w", n + ".b"}, {n + ".y"},
              {{"pads", AttrValue::ListInt({p, p, p, p})}, {"strides", AttrValue::ListInt({stride, stride})}});
    if (!relu) return n + ".y";
    g.AddNode("Relu", n + ".relu", {n + ".y"}, {n + ".r"});
    return n + ".r";
  };
  std::string t = conv("x", 3, 64, 7, 2, true);
  g.AddNode("MaxPool", "pool", {t}, {"pool.y"},
            {{"kernel_shape", AttrValue::ListInt({3, 3})}, {"strides", AttrValue::ListInt({2, 2})}, {"pads", AttrValue::ListInt({1, 1, 1, 1})}});
  t = "pool.y";
  int64_t c = 64;
  for (int64_t stage = 0; stage < 4; ++stage) {
    int64_t cout = 64 << stage;
    for (int block = 0; block < 2; ++block) {
      int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      std::string a = conv(t, c, cout, 3, stride, true);
      std::string b = conv(a, cout, cout, 3, 1, false);
      std::string skip = (stride != 1 || c != cout) ? conv(t, c, cout, 1, stride, false) : t;
      std::string n = "add" + std::to_string(id++);
      g.AddNode("Add", n, {b, skip}, {n + ".y"}).AddNode("Relu", n + ".relu", {n + ".y"}, {n + ".r"});
      t = n + ".r";
      c = cout;
    }
  }
  g.AddNode("GlobalAveragePool", "gap", {t}, {"gap.y"}).AddNode("Flatten", "flat", {"gap.y"}, {"flat.y"});
  g.AddConstant("fc.w", Random({1000, 512}, seed++, 0.05f)).AddConstant("fc.b", Random({1000}, seed++, 0.01f));
  g.AddNode("Gemm", "fc", {"flat.y", "fc.w", "fc.b"}, {"logits"}, {{"transB", AttrValue::Int(1)}});
  g.AddOutput("logits");
  return g;
}

Graph AddChain(int64_t cols, int nodes) {
  Graph g("rtc_chain");
  g.AddInput("x", DT_FLOAT, {4, cols}).AddInput("y", DT_FLOAT, {4, cols});
  std::string prev = "x";
  for (int k = 0; k < nodes; ++k) {
    std::string out = "s" + std::to_string(k);
    g.AddNode("CompilableAddCustom", "add" + std::to_string(k), {prev, "y"}, {out});
    prev = out;
  }
  g.AddOutput(prev);
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <compilable_add_custom package> <args_refresh_add_custom package> [model.onnx]\n", argv[0]);
    return 2;
  }
  auto dir = std::filesystem::temp_directory_path() / ("weft_bench_compile_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  setenv("WEFT_CACHE_DIR", (dir / "cache").c_str(), 1);
  SessionOptions o;
  o.use_env_path = false;
  o.package_paths = {argv[1], argv[2]};
  auto session = Check(Session::Create(o));

  // 1. Kernel cache. One graph = 1 kernel shared by its nodes (one shape).
  std::printf("== kernel cache: a graph of 8 CompilableAddCustom nodes (one generated C kernel)\n");
  std::vector<double> miss, mem, disk;
  for (int r = 0; r < 7; ++r) {
    Graph g = AddChain(1000 + r, 8);  // a new shape each round: a new cache key
    auto t0 = Clock::now();
    Check(session->Compile(g));
    auto t1 = Clock::now();
    Check(session->Compile(g));
    auto t2 = Clock::now();
    ClearKernelMemoryCache();  // what a second process sees: only the disk cache
    auto t3 = Clock::now();
    Check(session->Compile(g));
    auto t4 = Clock::now();
    miss.push_back(Ms(t0, t1));
    mem.push_back(Ms(t1, t2));
    disk.push_back(Ms(t3, t4));
  }
  KernelCacheStats st = GetKernelCacheStats();
  std::printf("  compile, cache miss (runs the C compiler): %9.3f ms\n", Median(miss));
  std::printf("  compile, memory hit:                       %9.3f ms  (%.0fx faster)\n", Median(mem), Median(miss) / Median(mem));
  std::printf("  compile, disk hit (new process):           %9.3f ms  (%.0fx faster)\n", Median(disk), Median(miss) / Median(disk));
  std::printf("  cache counters: %llu compiles, %llu memory hits, %llu disk hits\n", static_cast<unsigned long long>(st.compiles),
              static_cast<unsigned long long>(st.memory_hits), static_cast<unsigned long long>(st.disk_hits));

  // 2. Model file.
  Graph big = argc > 3 ? Check(ImportOnnx(argv[3])) : Resnet18Shaped();
  size_t params = 0;
  for (auto& [n, t] : big.constants()) params += static_cast<size_t>(t.numel());
  std::printf("== model file: %s (%zu nodes, %.1fM parameters)\n", big.name().c_str(), big.nodes().size(), params / 1e6);
  std::vector<double> compile_ms, load_ms, load_nv_ms;
  std::shared_ptr<CompiledModel> compiled;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    compiled = Check(session->Compile(big));
    compile_ms.push_back(Ms(t0, Clock::now()));
  }
  std::string path = (dir / "model.weft").string();
  auto ts = Clock::now();
  Status s = compiled->Save(path);
  double save_ms = Ms(ts, Clock::now());
  if (!s.ok()) Die(s);
  std::shared_ptr<CompiledModel> loaded;
  LoadOptions trusted;  // this process wrote the file: its compiled kernels may run
  trusted.trust_embedded_code = true;
  LoadOptions nv = trusted;
  nv.verify_checksum = false;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    loaded = Check(session->LoadModel(path, trusted));
    load_ms.push_back(Ms(t0, Clock::now()));
    t0 = Clock::now();
    Check(session->LoadModel(path, nv));
    load_nv_ms.push_back(Ms(t0, Clock::now()));
  }
  HostTensor x = Random(compiled->inputs()[0].shape, 99, 1.f);
  auto a = Check(compiled->Run({x}));
  auto b = Check(loaded->Run({x}));
  bool same = a[0].bytes() == b[0].bytes() && std::memcmp(a[0].data(), b[0].data(), a[0].bytes()) == 0;
  std::printf("  full compile:                    %9.2f ms\n", Median(compile_ms));
  std::printf("  save (%6.1f MB):                 %9.2f ms\n", std::filesystem::file_size(path) / 1e6, save_ms);
  std::printf("  load, checksum verified:         %9.2f ms  (%.1fx faster than compiling)\n", Median(load_ms),
              Median(compile_ms) / Median(load_ms));
  std::printf("  load, checksum skipped:          %9.2f ms  (%.1fx)\n", Median(load_nv_ms), Median(compile_ms) / Median(load_nv_ms));
  std::printf("  outputs of compiled and loaded model identical: %s\n", same ? "yes" : "NO");

  // 3. Rebinding.
  const int64_t n = 4096;
  Graph rg("rebind");
  rg.AddInput("x", DT_FLOAT, {n}).AddInput("y", DT_FLOAT, {n});
  rg.AddNode("ArgsRefreshAddCustom", "add", {"x", "y"}, {"z"}).AddOutput("z");
  auto model = Check(session->Compile(rg));
  auto ctx = model->CreateRunContext();
  HostTensor xs[2] = {Random({n}, 1, 1), Random({n}, 2, 1)}, ys[2] = {Random({n}, 3, 1), Random({n}, 4, 1)};
  HostTensor zs[2] = {HostTensor(DT_FLOAT, {n}), HostTensor(DT_FLOAT, {n})};
  auto run = [&](const CompiledModel& m, RunContext& c, int k) {
    TensorRef in[2] = {TensorRef::Of(xs[k]), TensorRef::Of(ys[k])};
    TensorRef out[1] = {TensorRef::Of(zs[k])};
    Status r = m.Run(c, in, 2, out, 1);
    if (!r.ok()) Die(r);
  };
  auto per_run_ns = [&](int runs, const std::function<void(int)>& f) {
    std::vector<double> rounds;
    for (int round = 0; round < 5; ++round) {
      auto t0 = Clock::now();
      for (int r = 0; r < runs; ++r) f(r);
      rounds.push_back(Ms(t0, Clock::now()) * 1e6 / runs);
    }
    return Median(rounds);
  };
  double same_ns = per_run_ns(4000, [&](int) { run(*model, *ctx, 0); });
  double rebind_ns = per_run_ns(4000, [&](int r) { run(*model, *ctx, r & 1); });
  double resetup_ns = per_run_ns(200, [&](int r) {
    auto m = Check(session->Compile(rg));
    auto c = m->CreateRunContext();
    run(*m, *c, r & 1);
  });
  std::printf("== rebinding: ArgsRefreshAddCustom on %lld float32 elements\n", static_cast<long long>(n));
  std::printf("  same buffers every run:                  %9.0f ns/run\n", same_ns);
  std::printf("  new buffers every run, ArgsUpdater:      %9.0f ns/run  (+%.0f ns per rebinding)\n", rebind_ns, rebind_ns - same_ns);
  std::printf("  new buffers every run, re-setup instead: %9.0f ns/run  (+%.0f ns per rebinding, %.0fx the ArgsUpdater cost)\n",
              resetup_ns, resetup_ns - same_ns, (resetup_ns - same_ns) / std::max(1.0, rebind_ns - same_ns));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return same ? 0 : 1;
}
