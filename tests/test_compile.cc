// The compile pipeline: verification against prototypes, inference, Compile callbacks, memory plan.
#include <set>

#include "compile/compiler.h"
#include "runtime/engine.h"
#include "test_util.h"

namespace weft {
namespace {

using test::Contains;
using test::MakeSession;

std::string CompileError(Session& s, const Graph& g) {
  auto m = s.Compile(g);
  EXPECT_FALSE(m.ok());
  return m.ok() ? "" : m.status().message();
}

Graph OneNode(const std::string& op, std::map<std::string, AttrValue> attrs = {}, DataType dt = DT_FLOAT) {
  Graph g("one");
  g.AddInput("x", dt, {2, 3}).AddNode(op, "n0", {"x"}, {"y"}, std::move(attrs)).AddOutput("y");
  return g;
}

TEST(Verify, MissingRequiredAttribute) {
  auto s = MakeSession({"test_ops"});
  EXPECT_TRUE(Contains(CompileError(*s, OneNode("ScaleAttrs")), "[ScaleAttrs 'n0'] missing required attribute 'scale' (Float)"));
}

TEST(Verify, UnknownAttributeListsTheKnownOnes) {
  auto s = MakeSession({"test_ops"});
  auto msg = CompileError(*s, OneNode("ScaleAttrs", {{"scale", AttrValue::Float(1)}, {"scael", AttrValue::Float(1)}}));
  EXPECT_TRUE(Contains(msg, "[ScaleAttrs 'n0'] has no attribute 'scael'; its attributes are: scale, bias"));
}

TEST(Verify, WrongAttributeType) {
  auto s = MakeSession({"test_ops"});
  auto msg = CompileError(*s, OneNode("ScaleAttrs", {{"scale", AttrValue::String("big")}}));
  EXPECT_TRUE(Contains(msg, "attribute 'scale' must be Float, got String \"big\""));
}

TEST(Verify, IntegerAttributeWidensToFloat) {
  auto s = MakeSession({"test_ops"});
  auto m = s->Compile(OneNode("ScaleAttrs", {{"scale", AttrValue::Int(3)}}));
  ASSERT_TRUE(m.ok()) << m.status().message();
}

TEST(Verify, InputTypeOutsideTheAllowedSet) {
  auto s = MakeSession();
  auto msg = CompileError(*s, OneNode("Relu", {}, DT_UINT8));
  EXPECT_TRUE(Contains(msg, "[Relu 'n0'] input 0 (X) 'x' has dtype uint8; allowed: float32"));
}

TEST(Verify, SharedTypeSymbolMustMatch) {
  auto s = MakeSession();
  Graph g;
  g.AddInput("a", DT_FLOAT, {2}).AddInput("b", DT_INT32, {2}).AddNode("Add", "add", {"a", "b"}, {"c"}).AddOutput("c");
  EXPECT_TRUE(Contains(CompileError(*s, g), "inputs 'A' (float32) and 'B' (int32) share type T and must match"));
}

TEST(Verify, InputCountsAndNames) {
  auto s = MakeSession();
  Graph few;
  few.AddInput("a", DT_FLOAT, {2}).AddNode("Add", "add", {"a"}, {"c"}).AddOutput("c");
  EXPECT_TRUE(Contains(CompileError(*s, few), "[Add 'add'] missing required input 'B' (input 1)"));
  Graph many;
  many.AddInput("a", DT_FLOAT, {2}).AddNode("Add", "add", {"a", "a", "a"}, {"c"}).AddOutput("c");
  EXPECT_TRUE(Contains(CompileError(*s, many), "has 3 inputs, the op declares at most 2"));
  Graph undefined;
  undefined.AddInput("a", DT_FLOAT, {2}).AddNode("Add", "add", {"a", "zz"}, {"c"}).AddOutput("c");
  EXPECT_TRUE(Contains(CompileError(*s, undefined), "input 'zz' is not a graph input, constant or node output"));
}

TEST(Verify, CyclesDuplicatesAndOutputs) {
  auto s = MakeSession();
  Graph cyc;
  cyc.AddInput("a", DT_FLOAT, {2}).AddNode("Add", "p", {"a", "q_out"}, {"p_out"}).AddNode("Relu", "q", {"p_out"}, {"q_out"}).AddOutput("q_out");
  EXPECT_TRUE(Contains(CompileError(*s, cyc), "the graph has a cycle through node"));
  Graph dup;
  dup.AddInput("a", DT_FLOAT, {2}).AddNode("Relu", "r1", {"a"}, {"y"}).AddNode("Relu", "r2", {"a"}, {"y"}).AddOutput("y");
  EXPECT_TRUE(Contains(CompileError(*s, dup), "tensor name 'y' is defined more than once"));
  Graph noout;
  noout.AddInput("a", DT_FLOAT, {2}).AddNode("Relu", "r1", {"a"}, {"y"}).AddOutput("nope");
  EXPECT_TRUE(Contains(CompileError(*s, noout), "graph output 'nope' is not produced"));
}

TEST(Verify, DynamicAndOptionalInputsMapByPosition) {
  auto s = MakeSession({"test_ops"});
  Graph g;
  g.AddInput("a", DT_FLOAT, {2}).AddInput("b", DT_FLOAT, {3});
  g.AddNode("SumN", "s", {"a", "b", ""}, {"y"}).AddOutput("y");
  EXPECT_TRUE(Contains(CompileError(*s, g), "[SumN 's'] InferShape failed: xs1 has shape [3], xs0 has [2]"));
}

TEST(Inference, OpWithoutShapeInferNeedsSameAsInput) {
  auto s = MakeSession({"test_ops"});
  auto msg = CompileError(*s, OneNode("NoShape"));
  EXPECT_TRUE(Contains(msg, "[NoShape 'n0'] cannot infer the shape of output 'y'"));
  EXPECT_TRUE(Contains(msg, "Implement ShapeInferOp, or add .SAME_AS_INPUT(x)"));
}

TEST(Inference, ExceptionInInferShapeNamesOpAndNode) {
  auto s = MakeSession({"test_ops"});
  auto msg = CompileError(*s, OneNode("Faulty", {{"where", AttrValue::String("infer_shape")}}));
  EXPECT_TRUE(Contains(msg, "[Faulty 'n0'] InferShape failed: InferShape threw: shape oracle unavailable"));
}

TEST(Inference, BroadcastMismatchIsAnError) {
  auto s = MakeSession();
  Graph g;
  g.AddInput("a", DT_FLOAT, {2, 3}).AddInput("b", DT_FLOAT, {4}).AddNode("Mul", "m", {"a", "b"}, {"c"}).AddOutput("c");
  EXPECT_TRUE(Contains(CompileError(*s, g), "[Mul 'm'] InferShape failed: Mul: shapes [2,3] and [4] do not broadcast"));
}

TEST(CompileCallback, FailureCarriesTheOpMessage) {
  auto s = MakeSession({"test_ops"});
  auto msg = CompileError(*s, OneNode("Faulty", {{"where", AttrValue::String("compile")}}));
  EXPECT_TRUE(Contains(msg, "[Faulty 'n0'] Compile failed: kernel source did not compile"));
}

TEST(MemoryPlan, ChainReusesTwoBuffers) {
  auto s = MakeSession();
  Graph g;
  g.AddInput("x", DT_FLOAT, {256});
  std::string prev = "x";
  for (int k = 0; k < 50; ++k) {
    std::string out = "t" + std::to_string(k);
    g.AddNode("Relu", "r" + std::to_string(k), {prev}, {out});
    prev = out;
  }
  g.AddOutput(prev);
  auto m = s->Compile(g).value();
  MemoryReport r = m->memory();
  EXPECT_EQ(r.lower_bound_bytes, 2u * 256 * 4);
  EXPECT_EQ(r.arena_bytes, 2u * 256 * 4);
  EXPECT_EQ(r.num_planned_tensors, 50u);
}

TEST(MemoryPlan, RandomDagsNeverShareLiveMemory) {
  std::mt19937 g(11);
  for (int trial = 0; trial < 200; ++trial) {
    int steps = 2 + static_cast<int>(g() % 30);
    std::vector<internal::Value> values;
    for (int s = 0; s < steps; ++s) {
      internal::Value v;
      v.kind = internal::ValueKind::kIntermediate;
      v.bytes = 1 + g() % 5000;
      v.producer = s;
      v.last_use = s + static_cast<int>(g() % 6);
      if (v.last_use >= steps) v.last_use = steps - 1;
      v.is_output = g() % 10 == 0;
      values.push_back(v);
    }
    auto plan = internal::PlanMemory(values, steps);
    size_t sum = 0;
    for (auto& v : values) sum += (v.bytes + 63) / 64 * 64;
    EXPECT_LE(plan.arena_bytes, sum);
    EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes);
    size_t most_live = 0;  // the lower bound, recomputed step by step
    for (int t = 0; t <= steps; ++t) {
      size_t live = 0;
      for (auto& v : values)
        if (v.producer <= t && t <= v.last_use) live += v.bytes;
      most_live = std::max(most_live, live);
    }
    EXPECT_EQ(plan.lower_bound_bytes, most_live) << "trial " << trial;
    for (size_t a = 0; a < values.size(); ++a) {
      EXPECT_EQ(values[a].offset % 64, 0u);
      EXPECT_LE(values[a].offset + values[a].bytes, plan.arena_bytes);
      for (size_t b = a + 1; b < values.size(); ++b) {
        const auto &x = values[a], &y = values[b];
        bool live_together = x.producer <= y.last_use && y.producer <= x.last_use;
        bool overlap = x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
        EXPECT_FALSE(live_together && overlap) << "trial " << trial << " values " << a << "," << b;
      }
    }
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(GraphPasses, ConstantFoldingMakesShapeChainsStaticAndDropsDeadNodes) {
  auto s = test::MakeSession();
  Graph g;
  g.AddInput("x", DT_FLOAT, {2, 3, 4});
  g.AddConstant("one", HostTensor::FromVector<int64_t>(DT_INT64, {1}, {-1}));
  g.AddNode("Shape", "shape", {"x"}, {"sh"});                  // [2,3,4], static
  g.AddNode("Slice", "first", {"sh", "zero", "one_i"}, {"n"});  // [2]
  g.AddConstant("zero", HostTensor::FromVector<int64_t>(DT_INT64, {1}, {0}));
  g.AddConstant("one_i", HostTensor::FromVector<int64_t>(DT_INT64, {1}, {1}));
  g.AddNode("Concat", "cat", {"n", "one"}, {"target"}, {{"axis", AttrValue::Int(0)}});  // [2,-1]
  g.AddNode("Reshape", "reshape", {"x", "target"}, {"y"});
  g.AddNode("Relu", "unused", {"x"}, {"dead"});  // not an output: removed
  g.AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_FALSE(m.value()->has_dynamic_shapes());
  EXPECT_EQ(m.value()->num_steps(), 1u);  // only the Reshape runs
  EXPECT_EQ(m.value()->outputs()[0].shape, Shape({2, 12}));
  auto x = test::RandomFloat({2, 3, 4}, 3);
  auto out = m.value()->Run({x}).value();
  EXPECT_EQ(std::memcmp(out[0].data(), x.data(), x.bytes()), 0);
}

}  // namespace
}  // namespace weft
