// weft aot: the arena planner, generated modules built and run with the host C compiler, and the
// errors of emitters that misbehave.
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "aot/arena_plan.h"
#include "test_util.h"
#include "weft/aot.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using internal::ArenaBuffer;
using internal::ArenaPlanValid;
using internal::PlanArenaBuffers;
using test::Contains;
using test::Sh;
using test::Shell;

// ---- the planner ---------------------------------------------------------------------------

TEST(ArenaPlan, RandomInstancesAreValidAtLeastTheBoundAndTheBestTrial) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const int steps = 1 + static_cast<int>(rng() % 40), n = static_cast<int>(rng() % 60);
    std::vector<ArenaBuffer> bufs(static_cast<size_t>(n));
    for (auto& b : bufs) {
      b.first = static_cast<int>(rng() % static_cast<unsigned>(steps));
      b.last = b.first + static_cast<int>(rng() % static_cast<unsigned>(steps - b.first));
      b.bytes = rng() % 5 == 0 ? 0 : 1 + rng() % 5000;
    }
    auto plan = PlanArenaBuffers(bufs, 16);
    ASSERT_TRUE(ArenaPlanValid(bufs, plan.arena_bytes)) << "instance " << trial;
    EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes);
    ASSERT_FALSE(n > 0 && plan.trials.empty());
    for (auto& t : plan.trials) EXPECT_LE(plan.arena_bytes, t.bytes) << t.algorithm;
    for (auto& b : bufs) EXPECT_EQ(b.offset % 16, 0u);
  }
}

TEST(ArenaPlan, EqualSizesMeetTheLowerBound) {
  // Interval graphs colour optimally in order of their start: equal sizes then pack exactly.
  std::mt19937 rng(9);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<ArenaBuffer> bufs(40);
    for (auto& b : bufs) {
      b.first = static_cast<int>(rng() % 30);
      b.last = b.first + static_cast<int>(rng() % 6);
      b.bytes = 64;
    }
    auto plan = PlanArenaBuffers(bufs, 16);
    EXPECT_EQ(plan.arena_bytes, plan.lower_bound_bytes) << "instance " << trial;
  }
}

TEST(ArenaPlan, ReusesMemoryAlongAChain) {
  // x -> a -> b -> c: each tensor lives two steps; two buffers' worth suffices.
  std::vector<ArenaBuffer> bufs = {{1000, 0, 1, 0}, {1000, 1, 2, 0}, {1000, 2, 3, 0}, {1000, 3, 4, 0}};
  auto plan = PlanArenaBuffers(bufs, 16);
  EXPECT_EQ(plan.arena_bytes, 2016u);
  EXPECT_EQ(plan.lower_bound_bytes, 2016u);
}

// ---- generated modules --------------------------------------------------------------------


std::string TempDir(const std::string& tag) {
  auto d = fs::temp_directory_path() / ("weft_aot_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::unique_ptr<Session> AotSession() {
  SessionOptions o;
  o.use_env_path = false;
  o.package_paths.push_back(test::Pkg("emit_ops"));
  o.options["weft.graph_passes"] = "none";
  auto s = Session::Create(o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(s).value() : nullptr;
}

std::shared_ptr<CompiledModel> CompileOrDie(Session& s, const Graph& g) {
  auto m = s.Compile(g);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? m.value() : nullptr;
}

std::string Build(const std::string& dir, const std::string& prefix, const std::string& main_c) {
  std::ofstream(dir + "/main.c") << main_c;
  std::string exe = dir + "/main";
  Sh r = Shell("cc -std=c99 -Wall -Wextra -Werror -pedantic -O1 -I" + dir + "/includes-api -I" + dir + "/src " + dir + "/src/" + prefix +
             ".c " + dir + "/src/" + prefix + "_constants.c " + dir + "/main.c -o " + exe + " -lm");
  EXPECT_EQ(r.code, 0) << r.out;
  return exe;
}

// Two EmitCounter nodes: state, init, scratch and a helper shared by both, through the C module.
// Node k adds (its runs so far) + 100 * (its inits) to its input.
Graph CounterGraph(const std::string& in = "x", const std::string& mid = "t", const std::string& out = "y") {
  Graph g;
  g.AddInput(in, DT_FLOAT, Shape({5}));
  g.AddNode("EmitCounter", "first", {in}, {mid});
  g.AddNode("EmitCounter", "second", {mid}, {out});
  g.AddOutput(out);
  return g;
}

TEST(Aot, StateInitScratchAndSharedHelpersWorkInTheModule) {
  auto s = AotSession();
  auto m = CompileOrDie(*s, CounterGraph());
  ASSERT_TRUE(m);
  std::string dir = TempDir("counter");
  AotOptions o;
  o.prefix = "cnt";
  o.output_dir = dir;
  auto r = GenerateC(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().num_ops, 2u);
  EXPECT_GE(r.value().arena_bytes, r.value().lower_bound_bytes);
  std::stringstream src;
  src << std::ifstream(dir + "/src/cnt.c").rdbuf();
  size_t first = src.str().find("static void emit_counter_add");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(src.str().find("static void emit_counter_add", first + 1), std::string::npos) << "the helper is emitted once";
  std::string exe = Build(dir, "cnt", R"(#include <stdio.h>
#include <string.h>
#include "cnt.h"
static cnt_context ctx;
int main(void) {
  const float x[5] = {1, 2, 3, 4, 5};
  int run, i;
  if (cnt_init(&ctx, 0, 0) != cnt_status_ok) return 10;
  for (run = 0; run < 3; ++run) {
    const float* y;
    memcpy(ctx.tensor_ptrs[cnt_inputs[0].index], x, sizeof x);
    if (cnt_run(&ctx) != cnt_status_ok) return 11;
    y = (const float*)ctx.tensor_ptrs[cnt_outputs[0].index];
    for (i = 0; i < 5; ++i)
      if (y[i] != x[i] + 2.f * (float)run + 200.f) { printf("run %d: y[%d] = %g\n", run, i, y[i]); return 12; }
  }
  printf("ok\n");
  return 0;
}
)");
  Sh res = Shell(exe);
  EXPECT_EQ(res.code, 0) << res.out;
  fs::remove_all(dir);
}

TEST(Aot, ExternalArenaAndStatusCodes) {
  auto s = AotSession();
  auto m = CompileOrDie(*s, CounterGraph());
  ASSERT_TRUE(m);
  std::string dir = TempDir("ext");
  AotOptions o;
  o.prefix = "ext";
  o.output_dir = dir;
  o.external_arena = true;
  auto r = GenerateC(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string exe = Build(dir, "ext", R"(#include <stdio.h>
#include "ext.h"
static ext_context ctx;
static union { unsigned char bytes[ext_ARENA_BYTES + 32]; double align[1]; } arena;
int main(void) {
  if (ext_init(0, arena.bytes, sizeof arena.bytes) != ext_status_null_context) return 1;
  if (ext_run(0) != ext_status_null_context) return 2;
  ctx.initialized = 0;
  if (ext_run(&ctx) != ext_status_not_initialized) return 3;
  if (ext_init(&ctx, 0, 0) != ext_status_arena_too_small) return 4;
  if (ext_init(&ctx, arena.bytes, ext_ARENA_BYTES - 1) != ext_status_arena_too_small) return 5;
  if (ext_init(&ctx, arena.bytes + 1, ext_ARENA_BYTES) != ext_status_arena_misaligned) return 6;
  if (ext_init(&ctx, arena.bytes + 16, ext_ARENA_BYTES) != ext_status_ok) return 7;
  if (ext_run(&ctx) != ext_status_ok) return 8;
  if (ext_op_name(1) == 0 || ext_op_name(2) != 0 || ext_op_name(-1) != 0) return 9;
  printf("ok\n");
  return 0;
}
)");
  Sh res = Shell(exe);
  EXPECT_EQ(res.code, 0) << res.out;
  std::stringstream h;
  h << std::ifstream(dir + "/includes-api/ext.h").rdbuf();
  EXPECT_FALSE(Contains(h.str(), "arena_storage")) << "an external arena leaves the context without storage";
  fs::remove_all(dir);
}

TEST(Aot, HostileNamesAreEscapedInTheGeneratedC) {
  auto s = AotSession();
  const std::string in = "in */ #error \"x\" ?\?= \\", mid = "mid\n#include <nothing.h>", out = "out\"; int evil = 1; /*";
  auto m = CompileOrDie(*s, CounterGraph(in, mid, out));
  ASSERT_TRUE(m);
  std::string dir = TempDir("names");
  AotOptions o;
  o.prefix = "nm";
  o.output_dir = dir;
  o.test = true;
  auto r = GenerateC(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The names reach the module only inside escaped strings and comments: it builds clean and the
  // tensor table gives them back byte for byte.
  std::string exe = Build(dir, "nm", R"(#include <stdio.h>
#include <string.h>
#include "nm.h"
int main(void) {
  if (strcmp(nm_inputs[0].name, "in */ #error \"x\" ?\?= \\") != 0) return 1;
  if (strcmp(nm_outputs[0].name, "out\"; int evil = 1; /*") != 0) return 2;
  printf("ok\n");
  return 0;
}
)");
  Sh res = Shell(exe);
  EXPECT_EQ(res.code, 0) << res.out;
  fs::remove_all(dir);
}

TEST(Aot, EmitterFailuresNameTheNodeAndWriteNothing) {
  auto s = AotSession();
  struct Case {
    std::string mode, want;
  } cases[] = {{"bad_include", "an include must be <header>"},
               {"helper_clash", "already emitted with different text"},
               {"state_first", "declared no state"},
               {"throws", "the emitter gave up"},
               {"fails", "this node cannot be emitted"},
               {"out_of_range", "the node has no input 5"}};
  for (const Case& c : cases) {
    Graph g;
    g.AddInput("x", DT_FLOAT, Shape({3}));
    g.AddNode("EmitBroken", "b1", {"x"}, {"t"}, {{"mode", AttrValue::String(c.mode)}});
    g.AddNode("EmitBroken", "b2", {"t"}, {"y"}, {{"mode", AttrValue::String(c.mode)}});
    g.AddOutput("y");
    auto m = CompileOrDie(*s, g);
    ASSERT_TRUE(m);
    std::string dir = TempDir("broken");
    AotOptions o;
    o.output_dir = dir;
    auto r = GenerateC(*m, o);
    ASSERT_FALSE(r.ok()) << c.mode;
    EXPECT_TRUE(Contains(r.status().message(), c.want)) << c.mode << ": " << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "[EmitBroken 'b")) << c.mode << ": " << r.status().message();
    EXPECT_FALSE(fs::exists(dir + "/src")) << c.mode << ": nothing is written when an emitter fails";
    fs::remove_all(dir);
  }
}

TEST(Aot, ModelsItCannotEmitAreRefusedWithTheReason) {
  auto s = AotSession();
  std::string dir = TempDir("refused");
  AotOptions o;
  o.output_dir = dir;
  {  // ops without an emitter, all listed
    Graph g;
    g.AddInput("x", DT_FLOAT, Shape({3}));
    g.AddNode("EmitCounter", "c", {"x"}, {"a"});
    g.AddNode("IsNaN", "n1", {"a"}, {"b"});
    g.AddNode("IsInf", "n2", {"a"}, {"y"});
    g.AddOutput("b");
    g.AddOutput("y");
    auto m = CompileOrDie(*s, g);
    ASSERT_TRUE(m);
    auto r = GenerateC(*m, o);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(r.status().message(), "2 node(s)")) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "[IsNaN 'n1']")) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "[IsInf 'n2']")) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "EmittableOp")) << r.status().message();
  }
  {  // dynamic shapes
    Graph g;
    g.AddInput("x", DT_FLOAT, Shape({-1}));
    g.AddNode("EmitCounter", "c", {"x"}, {"y"});
    g.AddOutput("y");
    auto m = CompileOrDie(*s, g);
    ASSERT_TRUE(m);
    auto r = GenerateC(*m, o);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(r.status().message(), "known only at run time")) << r.status().message();
    EXPECT_TRUE(Contains(r.status().message(), "graph input 'x' has the shape")) << r.status().message();
  }
  {  // bad prefixes
    auto m = CompileOrDie(*s, CounterGraph());
    ASSERT_TRUE(m);
    for (const char* p : {"", "9lives", "has space", "x;y", "a_name_that_is_far_longer_than_thirty_two_chars"}) {
      AotOptions bad = o;
      bad.prefix = p;
      auto r = GenerateC(*m, bad);
      ASSERT_FALSE(r.ok()) << p;
      EXPECT_TRUE(Contains(r.status().message(), "--prefix")) << r.status().message();
    }
    AotOptions test_in = o;
    test_in.test = true;
    test_in.test_inputs["nope"] = HostTensor(DT_FLOAT, Shape({5}));
    auto r = GenerateC(*m, test_in);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(r.status().message(), "test input 'nope'")) << r.status().message();
    test_in.test_inputs.clear();
    test_in.test_inputs["x"] = HostTensor(DT_FLOAT, Shape({4}));
    r = GenerateC(*m, test_in);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Contains(r.status().message(), "the model takes float32[5]")) << r.status().message();
  }
  fs::remove_all(dir);
}

TEST(Aot, FusedWorkFromAModelCompiledWithPassesIsWrittenAfterTheOp) {
  // Compiled with the graph passes (as `weft compile` does), the bias Add and the Relu fuse into
  // the MatMul: the module writes the MatMul's own C, then adds the bias and applies the Relu.
  SessionOptions so;
  so.use_env_path = false;
  auto s = Session::Create(so);
  ASSERT_TRUE(s.ok());
  Graph g;
  g.AddInput("x", DT_FLOAT, Shape({2, 3}));
  HostTensor w(DT_FLOAT, Shape({3, 4})), b(DT_FLOAT, Shape({4}));
  for (int k = 0; k < 12; ++k) w.data_as<float>()[k] = static_cast<float>(k % 5) - 2.f;
  for (int k = 0; k < 4; ++k) b.data_as<float>()[k] = static_cast<float>(k) - 1.5f;
  g.AddConstant("w", w);
  g.AddConstant("b", b);
  g.AddNode("MatMul", "mm", {"x", "w"}, {"t"});
  g.AddNode("Add", "bias", {"t", "b"}, {"u"});
  g.AddNode("Relu", "r", {"u"}, {"y"});
  g.AddOutput("y");
  auto m = CompileOrDie(*s.value(), g);
  ASSERT_TRUE(m);
  std::string dir = TempDir("fused");
  AotOptions o;
  o.prefix = "fz";
  o.output_dir = dir;
  auto r = GenerateC(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r.value().num_ops, 1u) << "the Add and the Relu are the MatMul's";
  std::stringstream src;
  src << std::ifstream(dir + "/src/fz.c").rdbuf();
  EXPECT_NE(src.str().find("/* fused: + bias, Relu */"), std::string::npos) << src.str();
  // x = [[1, 2, 3], [-1, 0, 2]]: y = max(x W + b, 0), computed here in the test.
  std::string exe = Build(dir, "fz", R"(#include <stdio.h>
#include <string.h>
#include "fz.h"
static fz_context ctx;
int main(void) {
  const float x[6] = {1, 2, 3, -1, 0, 2};
  float w[12], b[4], want;
  int i, j, k;
  for (k = 0; k < 12; ++k) w[k] = (float)(k % 5) - 2.f;
  for (k = 0; k < 4; ++k) b[k] = (float)k - 1.5f;
  if (fz_init(&ctx, 0, 0) != fz_status_ok) return 10;
  memcpy(ctx.tensor_ptrs[fz_inputs[0].index], x, sizeof x);
  if (fz_run(&ctx) != fz_status_ok) return 11;
  for (i = 0; i < 2; ++i)
    for (j = 0; j < 4; ++j) {
      const float y = ((const float*)ctx.tensor_ptrs[fz_outputs[0].index])[i * 4 + j];
      want = b[j];
      for (k = 0; k < 3; ++k) want += x[i * 3 + k] * w[k * 4 + j];
      want = want < 0.f ? 0.f : want;
      if (y != want) { printf("y[%d][%d] = %g, want %g\n", i, j, y, want); return 12; }
    }
  printf("ok\n");
  return 0;
}
)");
  Sh res = Shell(exe);
  EXPECT_EQ(res.code, 0) << res.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weft
