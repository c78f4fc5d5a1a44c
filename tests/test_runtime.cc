// Running compiled graphs: plugin numerics, failures inside plugins, run-time input checks.
#include <omp.h>

#include <atomic>

#include "runtime/thread_pool.h"
#include "test_util.h"

namespace weft {
namespace {

using test::Contains;
using test::MakeSession;
using test::Pkg;
using test::RandomFloat;

std::shared_ptr<CompiledModel> FaultyModel(Session& s, const std::string& where) {
  Graph g;
  g.AddInput("x", DT_FLOAT, {4}).AddNode("Faulty", "f0", {"x"}, {"y"}, {{"where", AttrValue::String(where)}}).AddOutput("y");
  return s.Compile(g).value();
}

TEST(PluginFailure, ExceptionBecomesAnErrorNamingOpAndNode) {
  auto s = MakeSession({"test_ops"});
  auto m = FaultyModel(*s, "execute");
  auto r = m->Run({RandomFloat({4}, 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "[Faulty 'f0'] Execute failed: Execute threw: boom at element 3");
  // The process and the model survive: a second run fails the same way, not worse.
  EXPECT_EQ(m->Run({RandomFloat({4}, 2)}).status().message(), r.status().message());
}

TEST(PluginFailure, NonStandardExceptionAndSilentFailure) {
  auto s = MakeSession({"test_ops"});
  EXPECT_TRUE(Contains(FaultyModel(*s, "execute_int")->Run({RandomFloat({4}, 1)}).status().message(),
                       "[Faulty 'f0'] Execute failed: Execute threw a non-standard exception"));
  EXPECT_TRUE(Contains(FaultyModel(*s, "silent")->Run({RandomFloat({4}, 1)}).status().message(),
                       "[Faulty 'f0'] Execute failed: returned failure without a message"));
}

TEST(PluginFailure, OutputThatDisagreesWithInferenceIsCaught) {
  auto s = MakeSession({"test_ops"});
  auto msg = FaultyModel(*s, "wrong_shape")->Run({RandomFloat({4}, 1)}).status().message();
  EXPECT_TRUE(Contains(msg, "[Faulty 'f0'] Execute failed: MallocOutputTensor(0, [1,2,3], float32) differs from the inferred [4] float32"));
}

TEST(PluginFailure, AWorkingGraphStillRunsAfterAFailure) {
  auto s = MakeSession({"test_ops"});
  ASSERT_FALSE(FaultyModel(*s, "execute")->Run({RandomFloat({4}, 1)}).ok());
  auto x = RandomFloat({4}, 3);
  auto out = FaultyModel(*s, "none")->Run({x}).value();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].data_as<float>()[i], x.data_as<float>()[i]);
}

TEST(Run, InputsAreCheckedAgainstTheCompiledSignature) {
  auto s = MakeSession();
  Graph g;
  g.AddInput("x", DT_FLOAT, {2, 2}).AddNode("Relu", "r", {"x"}, {"y"}).AddOutput("y");
  auto m = s->Compile(g).value();
  EXPECT_TRUE(Contains(m->Run({RandomFloat({4}, 1)}).status().message(), "input 'x' must be float32[2,2], got float32[4]"));
  EXPECT_TRUE(Contains(m->Run(std::vector<HostTensor>{}).status().message(), "the model takes 1 inputs, got 0"));
  std::map<std::string, HostTensor> wrong{{"z", RandomFloat({2, 2}, 1)}};
  EXPECT_TRUE(Contains(m->RunNamed(wrong).status().message(), "missing input 'x'"));
  HostTensor out(DT_FLOAT, {2, 2});
  auto rc = m->CreateRunContext();
  TensorRef in = TensorRef::Of(RandomFloat({2, 2}, 1));
  TensorRef small{DT_FLOAT, Shape({2, 2}), out.data(), 8};
  EXPECT_TRUE(Contains(m->Run(*rc, &in, 1, &small, 1).message(), "output 'y' needs a buffer of 16 bytes, got 8"));
}

TEST(Run, AttributesReachThePluginByIndexAndName) {
  auto s = MakeSession({"test_ops"});
  std::vector<uint8_t> table(4);
  float t0 = 0.25f;
  std::memcpy(table.data(), &t0, 4);
  Graph g;
  g.AddInput("x", DT_FLOAT, {8});
  g.AddNode("ScaleAttrs", "s", {"x"}, {"y"},
            {{"scale", AttrValue::Float(1.5f)}, {"bias", AttrValue::Float(-1.f)}, {"mode", AttrValue::String("double")},
             {"table", AttrValue::TensorValue(DT_FLOAT, Shape({1}), table)}});
  g.AddOutput("y");
  auto x = RandomFloat({8}, 4);
  auto out = s->Compile(g).value()->Run({x}).value();
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], x.data_as<float>()[i] * 3.f - 0.75f);
}

TEST(Run, DynamicAndOptionalInputs) {
  auto s = MakeSession({"test_ops"});
  for (bool with_bias : {false, true}) {
    Graph g;
    g.AddInput("a", DT_DOUBLE, {5}).AddInput("b", DT_DOUBLE, {5}).AddInput("c", DT_DOUBLE, {5}).AddInput("bias", DT_DOUBLE, {5});
    g.AddNode("SumN", "s", {"a", "b", "c", with_bias ? "bias" : ""}, {"y"}).AddOutput("y");
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    std::vector<HostTensor> ins;
    std::mt19937 gen(9);
    for (int k = 0; k < 4; ++k) {
      HostTensor t(DT_DOUBLE, {5});
      for (int i = 0; i < 5; ++i) t.data_as<double>()[i] = std::uniform_real_distribution<double>(-1, 1)(gen);
      ins.push_back(t);
    }
    auto out = m.value()->Run(ins).value();
    for (int i = 0; i < 5; ++i) {
      double want = ins[0].data_as<double>()[i] + ins[1].data_as<double>()[i] + ins[2].data_as<double>()[i] +
                    (with_bias ? ins[3].data_as<double>()[i] : 0.0);
      EXPECT_DOUBLE_EQ(out[0].data_as<double>()[i], want);
    }
  }
}

TEST(Run, GePortedSourceRuns) {
  auto s = MakeSession({"ge_port"});
  Graph g;
  g.AddInput("a", DT_FLOAT, {3, 4}).AddInput("b", DT_FLOAT, {3, 4});
  g.AddNode("GeStyleMul", "m", {"a", "b"}, {"y"}, {{"alpha", AttrValue::Float(0.5f)}}).AddOutput("y");
  auto a = RandomFloat({3, 4}, 1), b = RandomFloat({3, 4}, 2);
  auto out = s->Compile(g).value()->Run({a, b}).value();
  for (int i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(out[0].data_as<float>()[i], 0.5f * a.data_as<float>()[i] * b.data_as<float>()[i]);
}

TEST(Run, ParallelForUsesTheSessionPool) {
  for (int threads : {1, 2, 4}) {
    auto s = MakeSession({"test_ops"}, false, threads);
    Graph g;
    g.AddInput("x", DT_FLOAT, {100000}).AddNode("ParallelSquare", "p", {"x"}, {"y"}).AddOutput("y");
    auto x = RandomFloat({100000}, 8);
    auto out = s->Compile(g).value()->Run({x}).value();
    for (int i = 0; i < 100000; ++i) ASSERT_EQ(out[0].data_as<float>()[i], x.data_as<float>()[i] * x.data_as<float>()[i]);
  }
}

// Every index of [0, n) in exactly one chunk, for small and large n and any grain; with one
// chunk per thread, chunk k runs on thread k on every call (what keeps a recurrent layer's
// weights in the cache of the core that read them the step before).
TEST(ThreadPool, ChunksCoverTheRangeOnceAndOneChunkPerThreadStaysPut) {
  internal::ThreadPool pool(2);
  struct Seen {
    std::vector<std::atomic<int>> hits;
    std::vector<int> thread_of;
  };
  auto run = [&](int64_t n, int64_t grain, Seen* seen) {
    pool.ParallelFor(n, grain, [](void* user, int64_t b, int64_t e) {
      auto* s = static_cast<Seen*>(user);
      for (int64_t i = b; i < e; ++i) {
        s->hits[static_cast<size_t>(i)].fetch_add(1);
        s->thread_of[static_cast<size_t>(i)] = omp_get_thread_num();
      }
    }, seen);
  };
  for (int64_t n : {1, 2, 3, 7, 8, 9, 100, 1001})
    for (int64_t grain : {1, 2, 5, 64}) {
      Seen seen{std::vector<std::atomic<int>>(static_cast<size_t>(n)), std::vector<int>(static_cast<size_t>(n), -1)};
      run(n, grain, &seen);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen.hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " grain " << grain << " index " << i;
    }
  if (omp_get_max_threads() < 2 && omp_get_dynamic()) GTEST_SKIP() << "OpenMP gives one thread here";
  for (int call = 0; call < 50; ++call) {
    Seen seen{std::vector<std::atomic<int>>(2), std::vector<int>(2, -1)};
    run(2, 1, &seen);
    ASSERT_EQ(seen.thread_of[0], 0) << "call " << call;
    ASSERT_EQ(seen.thread_of[1], 1) << "call " << call;
  }
}

TEST(Run, MixedBuiltinsAndPluginsWithConstants) {
  auto s = MakeSession({"test_ops"});
  auto w = RandomFloat({3, 2}, 5);
  Graph g;
  g.AddInput("x", DT_FLOAT, {4, 3}).AddConstant("w", w);
  g.AddNode("MatMul", "mm", {"x", "w"}, {"h"});
  g.AddNode("ScaleAttrs", "sc", {"h"}, {"h2"}, {{"scale", AttrValue::Float(2.f)}});
  g.AddNode("Relu", "relu", {"h2"}, {"y"});
  g.AddOutput("y").AddOutput("h");
  auto x = RandomFloat({4, 3}, 6);
  auto out = s->Compile(g).value()->Run({x}).value();
  ASSERT_EQ(out.size(), 2u);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      double h = 0;
      for (int k = 0; k < 3; ++k) h += double(x.data_as<float>()[i * 3 + k]) * w.data_as<float>()[k * 2 + j];
      EXPECT_NEAR(out[1].data_as<float>()[i * 2 + j], h, 1e-5);
      EXPECT_NEAR(out[0].data_as<float>()[i * 2 + j], std::max(0.0, 2 * h), 2e-5);
    }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(DynamicShapes, InputsWithUnknownDimsAreInferredPerRun) {
  auto s = test::MakeSession();
  Graph g;
  g.AddInput("x", DT_FLOAT, {-1, 4}).AddInput("b", DT_FLOAT, {4});
  g.AddNode("Add", "add", {"x", "b"}, {"h"}).AddNode("Relu", "relu", {"h"}, {"y"}).AddOutput("y");
  auto m = s->Compile(g).value();
  EXPECT_TRUE(m->has_dynamic_shapes());
  auto b = test::RandomFloat({4}, 2);
  for (int64_t rows : {1, 3, 7, 2}) {
    auto x = test::RandomFloat({rows, 4}, static_cast<uint32_t>(rows));
    auto out = m->Run({x, b}).value();
    ASSERT_EQ(out[0].shape(), Shape({rows, 4}));
    for (int64_t i = 0; i < rows * 4; ++i)
      ASSERT_EQ(out[0].data_as<float>()[i], std::max(0.f, x.data_as<float>()[i] + b.data_as<float>()[i % 4]));
  }
  auto bad = test::RandomFloat({3, 5}, 1);
  EXPECT_TRUE(test::Contains(m->Run({bad, b}).status().message(), "input 'x' must be float32[-1,4], got float32[3,5]"));
}

// Writes down what a StepObserver is told, one line per step.
class StepLog : public StepObserver {
 public:
  void OnStep(const StepEvent& e) override {
    std::string line = std::to_string(e.index) + " " + std::string(e.op_type) + " '" + std::string(e.node) + "'";
    for (size_t k = 0; k < e.num_inputs; ++k) line += " " + e.input(k).GetShape().ToString();
    line += " ->";
    for (size_t k = 0; k < e.num_outputs; ++k) line += " " + e.output(k).GetShape().ToString();
    EXPECT_GE(e.duration.count(), 0);
    EXPECT_GE(e.start, last_start_);
    last_start_ = e.start;
    lines.push_back(line);
  }
  std::vector<std::string> lines;

 private:
  std::chrono::steady_clock::time_point last_start_;
};

TEST(StepObserver, SeesEveryStepOfARunThroughItsContext) {
  auto s = MakeSession({"test_ops"});
  Graph g;
  g.AddInput("x", DT_FLOAT, {2, 3});
  g.AddNode("Tanh", "t", {"x"}, {"h"}).AddNode("ScaleAttrs", "scale", {"h"}, {"y"}, {{"scale", AttrValue::Float(2)}});
  g.AddOutput("y");
  auto m = s->Compile(g).value();
  auto x = RandomFloat({2, 3}, 1);
  HostTensor y(DT_FLOAT, {2, 3});
  TensorRef in = TensorRef::Of(x), out = TensorRef::Of(y);
  auto ctx = m->CreateRunContext();
  StepLog log;
  ctx->SetStepObserver(&log);
  ASSERT_TRUE(m->Run(*ctx, &in, 1, &out, 1).ok());
  EXPECT_EQ(log.lines, (std::vector<std::string>{"0 Tanh 't' [2,3] -> [2,3]", "1 ScaleAttrs 'scale' [2,3] -> [2,3]"}));
  ctx->SetStepObserver(nullptr);
  ASSERT_TRUE(m->Run(*ctx, &in, 1, &out, 1).ok());
  EXPECT_EQ(log.lines.size(), 2u);
}

TEST(StepObserver, FollowsTheSpecializedPlanOfAnInputDynamicModel) {
  auto s = MakeSession();
  Graph g;
  g.AddInput("x", DT_FLOAT, {-1, 4}).AddInput("b", DT_FLOAT, {4});
  // Sigmoid, which the Add cannot absorb (Relu would run inside it): two steps.
  g.AddNode("Add", "add", {"x", "b"}, {"h"}).AddNode("Sigmoid", "sig", {"h"}, {"y"}).AddOutput("y");
  auto m = s->Compile(g).value();
  auto x = RandomFloat({3, 4}, 1), b = RandomFloat({4}, 2);
  std::vector<TensorRef> in = {TensorRef::Of(x), TensorRef::Of(b)};
  auto ctx = m->CreateRunContext();
  StepLog log;
  ctx->SetStepObserver(&log);
  ASSERT_TRUE(m->RunViews(*ctx, in.data(), in.size()).ok());
  EXPECT_EQ(log.lines, (std::vector<std::string>{"0 Add 'add' [3,4] [4] -> [3,4]", "1 Sigmoid 'sig' [3,4] -> [3,4]"}));
}

}  // namespace
// Plugin checking mode catches each misbehaviour, naming op, node and tensor; without it the
// same runs "succeed".
TEST(PluginChecking, CatchesOverrunsUnwrittenOutputsAndWrittenInputs) {
  const std::pair<const char*, const char*> cases[] = {
      {"OverrunOutput", "[OverrunOutput 'n'] wrote past the end of output #0 ('h'): byte 0 after its 48 bytes"},
      {"NeverWrites", "[NeverWrites 'n'] left elements of output #0 ('h') unwritten: 12 of 12, the first at flat index 0"},
      {"HalfWrites", "[HalfWrites 'n'] left elements of output #0 ('h') unwritten: 6 of 12, the first at flat index 6"},
      {"WritesInput", "[WritesInput 'n'] modified its input #0 ('a') (inputs are read-only)"},
      {"OverrunWorkspace", "[OverrunWorkspace 'n'] wrote past the end of a MallocWorkSpace block (byte 0 after it)"},
  };
  for (bool check : {false, true}) {
    SessionOptions o;
    o.use_env_path = false;
    o.package_paths = {Pkg("bad_ops")};
    o.check_plugins = check;
    auto s = Session::Create(o).value();
    for (auto& [op, message] : cases) {
      // x -> Relu -> a -> op -> h -> Relu -> y: the op's input and output both live in the arena.
      Graph g("check");
      g.AddInput("x", DT_FLOAT, {3, 4});
      g.AddNode("Relu", "r0", {"x"}, {"a"}).AddNode(op, "n", {"a"}, {"h"}).AddNode("Relu", "r1", {"h"}, {"y"}).AddOutput("y");
      auto m = s->Compile(g);
      ASSERT_TRUE(m.ok()) << m.status().message();
      auto out = m.value()->Run({RandomFloat({3, 4}, 5)});
      if (!check) continue;  // unchecked, these run to the end (the overruns land in free arena slack)
      ASSERT_FALSE(out.ok()) << op;
      EXPECT_TRUE(Contains(out.status().message(), message)) << out.status().message();
    }
    Graph good("good");
    good.AddInput("x", DT_FLOAT, {3, 4});
    good.AddNode("Relu", "r0", {"x"}, {"a"}).AddNode("GoodCopy", "n", {"a"}, {"h"}).AddNode("Relu", "r1", {"h"}, {"y"}).AddOutput("y");
    auto x = RandomFloat({3, 4}, 6);
    auto y = s->Compile(good).value()->Run({x});
    ASSERT_TRUE(y.ok()) << y.status().message();
    for (int i = 0; i < 12; ++i) EXPECT_EQ(y.value()[0].data_as<float>()[i], std::max(0.f, x.data_as<float>()[i]));
  }
}

// State kept in an op's per-context block (GetHostArgs) forms one stream per run context: it
// carries from run to run, ResetState starts over, convenience runs always start fresh, a second
// context has its own, and plugin checking (which may run a step twice) advances it once.
TEST(StatefulOps, StatePerRunContextResetAndCheckedReruns) {
  // 0xA5A5A5A5 as a float: an output holding plugin checking's first poison pattern, so that the
  // checked run executes the step a second time.
  float poison;
  const uint32_t bits = 0xA5A5A5A5u;
  std::memcpy(&poison, &bits, 4);
  HostTensor x(DT_FLOAT, {2});
  x.data_as<float>()[0] = poison;
  x.data_as<float>()[1] = 1.5f;
  for (bool check : {false, true}) {
    SessionOptions o;
    o.use_env_path = false;
    o.package_paths = {Pkg("bad_ops")};
    o.check_plugins = check;
    auto s = Session::Create(o).value();
    Graph g("stream");
    g.AddInput("x", DT_FLOAT, {2}).AddNode("RunningSum", "sum", {"x"}, {"y"}).AddOutput("y");
    auto m = s->Compile(g).value();
    auto ctx = m->CreateRunContext();
    auto other = m->CreateRunContext();
    HostTensor y(DT_FLOAT, {2});
    TensorRef in = TensorRef::Of(x), out = TensorRef::Of(y);
    std::vector<float> seen;
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(m->Run(*ctx, &in, 1, &out, 1).ok());
      seen.push_back(y.data_as<float>()[1]);
    }
    EXPECT_EQ(seen, (std::vector<float>{1.5f, 3.f, 4.5f})) << "check_plugins=" << check;
    ASSERT_TRUE(m->Run(*other, &in, 1, &out, 1).ok());  // another context: its own stream
    EXPECT_EQ(y.data_as<float>()[1], 1.5f);
    for (int k = 0; k < 2; ++k) {  // convenience runs: always from the initial state
      auto r = m->Run({x});
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(r.value()[0].data_as<float>()[1], 1.5f);
    }
    ctx->ResetState();
    ASSERT_TRUE(m->Run(*ctx, &in, 1, &out, 1).ok());
    EXPECT_EQ(y.data_as<float>()[1], 1.5f);
    ASSERT_TRUE(m->Run(*ctx, &in, 1, &out, 1).ok());
    EXPECT_EQ(y.data_as<float>()[1], 3.f);
  }
}

// An exception thrown inside a ParallelFor body, on the caller's thread or a pool thread, fails
// the run with the exception's text; the process and the session go on.
TEST(PluginChecking, AnExceptionInAParallelForBodyFailsTheRun) {
  SessionOptions o;
  o.use_env_path = false;
  o.package_paths = {Pkg("bad_ops")};
  o.intra_op_threads = 2;
  auto s = Session::Create(o).value();
  const std::pair<const char*, const char*> cases[] = {
      {"ThrowsInParallelFor", "a ParallelFor body threw: chunk failed on purpose"},
      {"ThrowsThroughRawParallelFor", "a ParallelFor body threw: raw chunk failed on purpose"},
  };
  for (auto& [op, message] : cases) {
    Graph g("throws");
    g.AddInput("x", DT_FLOAT, {64, 64});
    g.AddNode(op, "n", {"x"}, {"y"}).AddOutput("y");
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    for (int round = 0; round < 3; ++round) {  // the pool is still usable after each failure
      auto out = m.value()->Run({RandomFloat({64, 64}, 7)});
      ASSERT_FALSE(out.ok()) << op;
      EXPECT_TRUE(Contains(out.status().message(), message)) << out.status().message();
      EXPECT_TRUE(Contains(out.status().message(), std::string("[") + op + " 'n']")) << out.status().message();
    }
  }
}

}  // namespace weft
