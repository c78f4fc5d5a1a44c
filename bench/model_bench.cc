// Median latency of one model in Weft:
//   weft_bench_models MODEL.onnx INPUT.npy THREADS ITERATIONS [OUTPUT.npy]
// Prints "median_ms=<x> arena_bytes=<a> lower_bound_bytes=<b>": Weft alone, without Python
// (bench/compare_ort.py measures the same through the weft module, next to ONNX Runtime).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "weft/onnx.h"
#include "weft/weft.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s MODEL.onnx INPUT.npy THREADS ITERATIONS [OUTPUT.npy]\n", argv[0]);
    return 2;
  }
  auto x = weft::ReadNpy(argv[2]);
  if (!x.ok()) return std::fprintf(stderr, "%s\n", x.status().message().c_str()), 1;
  weft::OnnxImportOptions io;
  auto probe = weft::ImportOnnx(argv[1]);
  if (!probe.ok()) return std::fprintf(stderr, "%s\n", probe.status().message().c_str()), 1;
  io.input_shapes[probe.value().inputs()[0].name] = x.value().shape();
  auto g = weft::ImportOnnx(argv[1], io);
  if (!g.ok()) return std::fprintf(stderr, "%s\n", g.status().message().c_str()), 1;
  weft::SessionOptions so;
  so.use_env_path = false;
  so.intra_op_threads = std::stoi(argv[3]);
  auto s = weft::Session::Create(so);
  if (!s.ok()) return std::fprintf(stderr, "%s\n", s.status().message().c_str()), 1;
  auto m = s.value()->Compile(g.value());
  if (!m.ok()) return std::fprintf(stderr, "%s\n", m.status().message().c_str()), 1;
  auto model = m.value();
  auto ctx = model->CreateRunContext();
  std::vector<weft::HostTensor> outs;
  for (auto& o : model->outputs()) outs.emplace_back(o.dtype, o.shape);
  weft::TensorRef in = weft::TensorRef::Of(x.value());
  std::vector<weft::TensorRef> out_refs;
  for (auto& o : outs) out_refs.push_back(weft::TensorRef::Of(o));
  int iters = std::stoi(argv[4]);
  std::vector<double> times;
  for (int i = 0; i < iters + 2; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    weft::Status st = model->Run(*ctx, &in, 1, out_refs.data(), out_refs.size());
    auto t1 = std::chrono::steady_clock::now();
    if (!st.ok()) return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
    if (i >= 2) times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());  // 2 warm-up runs
  }
  std::sort(times.begin(), times.end());
  if (argc > 5) {
    weft::Status st = weft::WriteNpy(argv[5], outs[0]);
    if (!st.ok()) return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
  }
  weft::MemoryReport r = model->memory();
  std::printf("median_ms=%.4f arena_bytes=%zu lower_bound_bytes=%zu\n", times[times.size() / 2], r.arena_bytes, r.lower_bound_bytes);
  return 0;
}
