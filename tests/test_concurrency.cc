// Many threads calling Run on one compiled model at once. CI also runs this under
// ThreadSanitizer (-DWEFT_SANITIZE=thread).
#include <thread>

#include "test_util.h"

namespace weft {
namespace {

std::shared_ptr<CompiledModel> Model(Session& s) {
  Graph g;
  g.AddInput("x", DT_FLOAT, {8, 32}).AddConstant("w", test::RandomFloat({32, 32}, 1));
  g.AddNode("MatMul", "mm", {"x", "w"}, {"h"});
  g.AddNode("Relu", "relu", {"h"}, {"r"});
  g.AddNode("SumN", "sum", {"r", "x"}, {"s"});
  g.AddNode("ParallelSquare", "sq", {"s"}, {"y"});
  g.AddOutput("y");
  return s.Compile(g).value();
}

TEST(Concurrency, ManyThreadsShareOneCompiledModel) {
  auto s = test::MakeSession({"test_ops"}, false, /*threads=*/2);
  auto m = Model(*s);
  constexpr int kThreads = 8, kRuns = 50;
  std::vector<HostTensor> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(test::RandomFloat({8, 32}, 100 + t));
    expected.push_back(m->Run({inputs.back()}).value()[0]);  // sequential reference
  }
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto ctx = m->CreateRunContext();  // half the threads use their own context, half the pool
      HostTensor y(DT_FLOAT, {8, 32});
      for (int r = 0; r < kRuns; ++r) {
        if (t % 2) {
          TensorRef in = TensorRef::Of(inputs[t]), out = TensorRef::Of(y);
          if (!m->Run(*ctx, &in, 1, &out, 1).ok()) ++failures;
        } else {
          auto res = m->Run({inputs[t]});
          if (!res.ok()) { ++failures; continue; }
          y = res.value()[0];
        }
        if (std::memcmp(y.data(), expected[t].data(), y.bytes()) != 0) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace weft
