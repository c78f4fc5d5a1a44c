// Per-node dispatch cost: a chain of 1,000 nodes alternating Add (with a constant) and Relu on a
// [1,16] float tensor, against the same arithmetic as a hand-written loop. Reported per node.
// Also compile time against graph size (BM_CompileReluChain).
//
//   build/bench/weft_bench_dispatch            (see bench/README.md for the reference figures)
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "weft/weft.h"

namespace {

constexpr int kNodes = 1000;
constexpr int kWidth = 16;

std::shared_ptr<weft::CompiledModel> BuildChain() {
  weft::SessionOptions o;
  o.use_env_path = false;
  auto s = weft::Session::Create(o).value();
  weft::Graph g("chain");
  g.AddInput("x", weft::DT_FLOAT, {1, kWidth});
  weft::HostTensor c(weft::DT_FLOAT, {1, kWidth});
  for (int i = 0; i < kWidth; ++i) c.data_as<float>()[i] = 0.01f * static_cast<float>(i % 5) - 0.02f;
  g.AddConstant("c", c);
  std::string prev = "x";
  for (int k = 0; k < kNodes; ++k) {
    std::string out = "t" + std::to_string(k);
    if (k % 2 == 0) g.AddNode("Add", "add" + std::to_string(k), {prev, "c"}, {out});
    else g.AddNode("Relu", "relu" + std::to_string(k), {prev}, {out});
    prev = out;
  }
  g.AddOutput(prev);
  auto m = s->Compile(g);
  if (!m.ok()) {
    fprintf(stderr, "%s\n", m.status().message().c_str());
    std::abort();
  }
  return m.value();
}

void BM_WeftChain(benchmark::State& state) {
  auto model = BuildChain();
  auto ctx = model->CreateRunContext();
  weft::HostTensor x(weft::DT_FLOAT, {1, kWidth}), y(weft::DT_FLOAT, {1, kWidth});
  std::mt19937 g(1);
  for (int i = 0; i < kWidth; ++i) x.data_as<float>()[i] = std::uniform_real_distribution<float>(-1, 1)(g);
  weft::TensorRef in = weft::TensorRef::Of(x), out = weft::TensorRef::Of(y);
  for (auto _ : state) {
    weft::Status s = model->Run(*ctx, &in, 1, &out, 1);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["ns_per_node"] =
      benchmark::Counter(static_cast<double>(kNodes), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WeftChain)->Unit(benchmark::kMicrosecond);

// The same computation with no engine: 1,000 loops over 16 floats, buffers ping-ponged.
void BM_HandWrittenLoop(benchmark::State& state) {
  alignas(64) float a[kWidth], b[kWidth], c[kWidth];
  std::mt19937 g(1);
  for (int i = 0; i < kWidth; ++i) {
    a[i] = std::uniform_real_distribution<float>(-1, 1)(g);
    c[i] = 0.01f * static_cast<float>(i % 5) - 0.02f;
  }
  for (auto _ : state) {
    float* src = a;
    float* dst = b;
    for (int k = 0; k < kNodes; ++k) {
      if (k % 2 == 0)
        for (int i = 0; i < kWidth; ++i) dst[i] = src[i] + c[i];
      else
        for (int i = 0; i < kWidth; ++i) dst[i] = src[i] > 0 ? src[i] : 0.f;
      benchmark::ClobberMemory();
      std::swap(src, dst);
    }
    benchmark::DoNotOptimize(src);
  }
  state.counters["ns_per_node"] =
      benchmark::Counter(static_cast<double>(kNodes), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_HandWrittenLoop)->Unit(benchmark::kMicrosecond);

}  // namespace

// Compile time against graph size: a chain of N Relu nodes, compiled from scratch. Linear in N
// is the goal (the memory planner and every pass); the time per node should stay flat.
void BM_CompileReluChain(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  weft::SessionOptions o;
  o.use_env_path = false;
  auto s = weft::Session::Create(o).value();
  weft::Graph g("relu_chain");
  g.AddInput("x", weft::DT_FLOAT, {1, kWidth});
  std::string prev = "x";
  for (int k = 0; k < n; ++k) {
    std::string out = "t" + std::to_string(k);
    g.AddNode("Relu", "relu" + std::to_string(k), {prev}, {out});
    prev = out;
  }
  g.AddOutput(prev);
  for (auto _ : state) {
    auto m = s->Compile(g);
    if (!m.ok()) state.SkipWithError(m.status().message().c_str());
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_CompileReluChain)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
