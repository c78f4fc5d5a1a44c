// Runs one compiled model against alternating caller buffers and measures what rebinding costs:
//   rebind        new input/output addresses every run: the runtime calls UpdateHostArgs
//   same buffers  the addresses never change: no UpdateHostArgs at all
//   re-setup      what an engine without ArgsUpdater has to do for new addresses: compile the
//                 model again and build a new run context
// Every result is checked against x + y computed here.
// Usage: args_refresh_demo <package root> [elements] [runs]
#include <weft/weft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

double NsPerRun(int runs, const std::chrono::steady_clock::time_point& t0) {
  auto dt = std::chrono::steady_clock::now() - t0;
  return std::chrono::duration<double, std::nano>(dt).count() / runs;
}

struct Buffers {
  weft::HostTensor x, y, z;
};

bool Check(const Buffers& b, const char* what) {
  const float* x = b.x.data_as<float>();
  const float* y = b.y.data_as<float>();
  const float* z = b.z.data_as<float>();
  for (int64_t i = 0; i < b.x.numel(); ++i)
    if (z[i] != x[i] + y[i]) {
      std::fprintf(stderr, "%s: z[%lld] = %g, expected %g\n", what, static_cast<long long>(i), z[i], x[i] + y[i]);
      return false;
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <package root> [elements] [runs]\n", argv[0]);
    return 2;
  }
  int64_t n = argc > 2 ? std::atoll(argv[2]) : 4096;
  int runs = argc > 3 ? std::atoi(argv[3]) : 2000;
  weft::SessionOptions o;
  o.package_paths = {argv[1]};
  auto session = weft::Session::Create(o);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", session.status().message().c_str());
    return 1;
  }
  weft::Graph g("args_refresh");
  g.AddInput("x", weft::DT_FLOAT, {n}).AddInput("y", weft::DT_FLOAT, {n});
  g.AddNode("ArgsRefreshAddCustom", "add", {"x", "y"}, {"z"}).AddOutput("z");
  auto model = session.value()->Compile(g);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().message().c_str());
    return 1;
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  Buffers sets[2];
  for (auto& b : sets) {
    b.x = weft::HostTensor(weft::DT_FLOAT, {n});
    b.y = weft::HostTensor(weft::DT_FLOAT, {n});
    b.z = weft::HostTensor(weft::DT_FLOAT, {n});
    for (int64_t i = 0; i < n; ++i) b.x.data_as<float>()[i] = dist(rng), b.y.data_as<float>()[i] = dist(rng);
  }
  auto run = [&](const weft::CompiledModel& m, weft::RunContext& ctx, Buffers& b) {
    weft::TensorRef in[2] = {weft::TensorRef::Of(b.x), weft::TensorRef::Of(b.y)};
    weft::TensorRef out[1] = {weft::TensorRef::Of(b.z)};
    return m.Run(ctx, in, 2, out, 1);
  };
  auto ctx = model.value()->CreateRunContext();
  for (auto& b : sets)
    if (!run(*model.value(), *ctx, b).ok() || !Check(b, "warm-up")) return 1;

  uint64_t updates0 = model.value()->args_updates();
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r)
    if (!run(*model.value(), *ctx, sets[r & 1]).ok()) return 1;
  double rebind = NsPerRun(runs, t0);
  uint64_t rebind_updates = model.value()->args_updates() - updates0;
  if (!Check(sets[0], "rebind") || !Check(sets[1], "rebind")) return 1;

  if (!run(*model.value(), *ctx, sets[0]).ok()) return 1;  // settle on one buffer set
  updates0 = model.value()->args_updates();
  t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r)
    if (!run(*model.value(), *ctx, sets[0]).ok()) return 1;
  double same = NsPerRun(runs, t0);
  uint64_t same_updates = model.value()->args_updates() - updates0;
  if (!Check(sets[0], "same buffers")) return 1;

  int setups = std::max(1, runs / 20);
  t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < setups; ++r) {
    auto m = session.value()->Compile(g);
    if (!m.ok()) return 1;
    auto c = m.value()->CreateRunContext();
    if (!run(*m.value(), *c, sets[r & 1]).ok()) return 1;
  }
  double resetup = NsPerRun(setups, t0);
  if (!Check(sets[0], "re-setup") || !Check(sets[1], "re-setup")) return 1;

  std::printf("ArgsRefreshAddCustom, %lld float32 elements, results checked against x + y\n", static_cast<long long>(n));
  std::printf("  rebind every run (UpdateHostArgs): %10.0f ns/run  (%llu UpdateHostArgs calls in %d runs)\n", rebind,
              static_cast<unsigned long long>(rebind_updates), runs);
  std::printf("  same buffers every run:            %10.0f ns/run  (%llu UpdateHostArgs calls)\n", same,
              static_cast<unsigned long long>(same_updates));
  std::printf("  re-setup per new buffers:          %10.0f ns/run  (Compile + new run context)\n", resetup);
  std::printf("  rebinding through ArgsUpdater costs %.2fx a run with unchanged buffers; re-setup costs %.1fx\n",
              rebind / same, resetup / same);
  if (rebind_updates != static_cast<uint64_t>(runs) || same_updates != 0) {
    std::fprintf(stderr, "UpdateHostArgs was called %llu/%llu times, expected %d/0\n",
                 static_cast<unsigned long long>(rebind_updates), static_cast<unsigned long long>(same_updates), runs);
    return 1;
  }
  return 0;
}
