// Control flow: nodes guarded by a condition (Node::when, as an imported ONNX If writes them) and
// the op If that picks each output from the branch taken. Only the taken branch runs; a
// condition known at compile time drops the other branch before its shapes are inferred.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "test_util.h"
#include "weft/weft.h"

namespace weft {
namespace {
using test::Contains;
using test::RandomFloat;

// Records the nodes each run executes.
struct Ran : StepObserver {
  std::set<std::string> nodes;
  void OnStep(const StepEvent& e) override { nodes.insert(std::string(e.node)); }
};

std::shared_ptr<Session> NewSession() {
  SessionOptions o;
  o.use_env_path = false;
  return Session::Create(o).value();
}

// Adds a node that runs only under `when` (and, for If, with its input counts).
void Guarded(Graph& g, const std::string& op, const std::string& name, std::vector<std::string> ins, std::vector<std::string> outs,
             std::vector<std::pair<std::string, bool>> when, std::vector<uint32_t> input_counts = {}) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  n.when = std::move(when);
  n.input_counts = std::move(input_counts);
  g.AddNode(std::move(n));
}

HostTensor Bool(bool v) {
  HostTensor t(DT_BOOL, Shape());
  *t.data_as<uint8_t>() = v;
  return t;
}

// y = c ? Sigmoid(Relu(x)) : Neg(x), with c a run-time input.
Graph RuntimeBranches() {
  Graph g("branches");
  g.AddInput("c", DT_BOOL, {}).AddInput("x", DT_FLOAT, {2, 3});
  Guarded(g, "Relu", "then_relu", {"x"}, {"t1"}, {{"c", true}});
  Guarded(g, "Sigmoid", "then_sigmoid", {"t1"}, {"t2"}, {{"c", true}});
  Guarded(g, "Neg", "else_neg", {"x"}, {"e1"}, {{"c", false}});
  Guarded(g, "If", "pick", {"c", "t2", "e1"}, {"y"}, {}, {1, 2});
  g.AddOutput("y");
  return g;
}

TEST(ControlFlow, OnlyTheTakenBranchRuns) {
  auto model = NewSession()->Compile(RuntimeBranches());
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto ctx = model.value()->CreateRunContext();
  HostTensor x = RandomFloat({2, 3}, 11);
  for (bool c : {true, false, true}) {
    Ran ran;
    ctx->SetStepObserver(&ran);
    HostTensor cond = Bool(c);
    TensorRef in[2] = {TensorRef::Of(cond), TensorRef::Of(x)};
    auto out = model.value()->RunViews(*ctx, in, 2);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const float* y = static_cast<const float*>(out.value()[0].data);
    for (int i = 0; i < 6; ++i) {
      double v = x.data_as<float>()[i];
      double want = c ? 1.0 / (1.0 + std::exp(-std::max(0.0, v))) : -v;
      EXPECT_NEAR(y[i], want, 1e-6) << i;
    }
    std::set<std::string> want = c ? std::set<std::string>{"then_relu", "then_sigmoid", "pick"}
                                   : std::set<std::string>{"else_neg", "pick"};
    EXPECT_EQ(ran.nodes, want);
  }
}

// Profiles count the runs that executed each step: the branch not taken shows none.
TEST(ControlFlow, TheProfileShowsOnlyTheTakenBranch) {
  auto model = NewSession()->Compile(RuntimeBranches());
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto ctx = model.value()->CreateRunContext();
  HostTensor cond = Bool(true), x = RandomFloat({2, 3}, 15);
  TensorRef in[2] = {TensorRef::Of(cond), TensorRef::Of(x)};
  auto prof = model.value()->Profile(*ctx, in, 2, 7);
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  std::map<std::string, StepProfile> by_node;
  for (auto& p : prof.value()) by_node[p.node] = p;
  EXPECT_EQ(by_node.at("then_relu").runs, 7);
  EXPECT_EQ(by_node.at("then_sigmoid").runs, 7);
  EXPECT_EQ(by_node.at("pick").runs, 7);
  EXPECT_EQ(by_node.at("else_neg").runs, 0);
  EXPECT_EQ(by_node.at("else_neg").mean_us, 0.0);
  EXPECT_GE(by_node.at("then_relu").median_us, 0.0);
}

// The guards survive a model file: the loaded model skips the same steps.
TEST(ControlFlow, ModelFilesKeepTheGuards) {
  auto s = NewSession();
  auto model = s->Compile(RuntimeBranches());
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::string path = (std::filesystem::temp_directory_path() / "weft_control_flow.weft").string();
  ASSERT_TRUE(model.value()->Save(path).ok());
  auto loaded = s->LoadModel(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto ctx = loaded.value()->CreateRunContext();
  Ran ran;
  ctx->SetStepObserver(&ran);
  HostTensor cond = Bool(false), x = RandomFloat({2, 3}, 12);
  TensorRef in[2] = {TensorRef::Of(cond), TensorRef::Of(x)};
  auto out = loaded.value()->RunViews(*ctx, in, 2);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(ran.nodes, (std::set<std::string>{"else_neg", "pick"}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<const float*>(out.value()[0].data)[i], -x.data_as<float>()[i]);
}

// The pattern PyTorch exports for rank-dependent code: the then branch adds a batch dim
// (Unsqueeze), the else branch keeps x, chosen by x's rank. Computing both and selecting with
// Where broadcast them into one shape; here the condition folds at compile time, the other
// branch is dropped, and the graph is as if the branch were written inline.
TEST(ControlFlow, AConditionKnownAtCompileTimeDropsTheOtherBranch) {
  for (int rank : {2, 3}) {
    Graph g("rank_dependent");
    Shape xs = rank == 2 ? Shape({4, 5}) : Shape({1, 4, 5});
    g.AddInput("x", DT_FLOAT, xs);
    HostTensor two(DT_INT64, Shape());
    *two.data_as<int64_t>() = 2;
    HostTensor axes(DT_INT64, Shape({1}));
    *axes.data_as<int64_t>() = 0;
    g.AddConstant("two", two).AddConstant("axes", axes);
    g.AddNode("Shape", "shape", {"x"}, {"s"}).AddNode("Size", "rank", {"s"}, {"r"}).AddNode("Equal", "is2d", {"r", "two"}, {"c"});
    Guarded(g, "Unsqueeze", "then_unsqueeze", {"x", "axes"}, {"t"}, {{"c", true}});
    Guarded(g, "Identity", "else_keep", {"x"}, {"e"}, {{"c", false}});
    Guarded(g, "If", "pick", {"c", "t", "e"}, {"b"}, {}, {1, 2});
    g.AddNode("Softmax", "after", {"b"}, {"y"}).AddOutput("y");
    auto model = NewSession()->Compile(g);
    ASSERT_TRUE(model.ok()) << model.status().message();
    EXPECT_FALSE(model.value()->has_dynamic_shapes());
    EXPECT_EQ(model.value()->outputs()[0].shape, Shape({1, 4, 5}));
    std::set<std::string> steps;
    for (auto& s : model.value()->DescribeSteps()) steps.insert(s.node);
    EXPECT_EQ(steps.count(rank == 2 ? "else_keep" : "then_unsqueeze"), 0u) << "the branch not taken is compiled in";
    auto out = model.value()->Run({RandomFloat(xs, 13)});
    ASSERT_TRUE(out.ok()) << out.status().message();
  }
}

// A run-time condition whose branches disagree in rank: the branch not taken would fail shape
// inference (Squeeze of a dim that is not 1), so shapes are inferred when the taken one runs.
TEST(ControlFlow, BranchesOfDifferentRankWithARunTimeCondition) {
  Graph g("ranks");
  g.AddInput("c", DT_BOOL, {}).AddInput("x", DT_FLOAT, {3, 4});
  HostTensor axes(DT_INT64, Shape({1}));
  *axes.data_as<int64_t>() = 0;
  g.AddConstant("axes", axes);
  Guarded(g, "Squeeze", "then_squeeze", {"x", "axes"}, {"t"}, {{"c", true}});  // fails: dim 0 is 3
  Guarded(g, "Relu", "else_relu", {"x"}, {"e"}, {{"c", false}});
  Guarded(g, "If", "pick", {"c", "t", "e"}, {"y"}, {}, {1, 2});
  g.AddOutput("y");
  auto model = NewSession()->Compile(g);
  ASSERT_TRUE(model.ok()) << model.status().message();
  HostTensor x = RandomFloat({3, 4}, 14);
  auto out = model.value()->Run({Bool(false), x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out.value()[0].shape(), Shape({3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out.value()[0].data_as<float>()[i], std::max(0.f, x.data_as<float>()[i]));
  // Taking the branch that cannot run is an error naming its node, not a crash.
  auto bad = model.value()->Run({Bool(true), x});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "then_squeeze")) << bad.status().message();
}

TEST(ControlFlow, AConditionMustBeABool) {
  Graph g("bad");
  g.AddInput("c", DT_FLOAT, {}).AddInput("x", DT_FLOAT, {2});
  Guarded(g, "Relu", "guarded", {"x"}, {"y"}, {{"c", true}});
  g.AddOutput("y");
  auto model = NewSession()->Compile(g);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(Contains(model.status().message(), "must be a bool")) << model.status().message();
  Graph missing("missing");
  missing.AddInput("x", DT_FLOAT, {2});
  Guarded(missing, "Relu", "guarded", {"x"}, {"y"}, {{"nowhere", true}});
  missing.AddOutput("y");
  auto m2 = NewSession()->Compile(missing);
  ASSERT_FALSE(m2.ok());
  EXPECT_TRUE(Contains(m2.status().message(), "'nowhere'")) << m2.status().message();
}


// A Loop built by hand through the graph API: the body is a Graph, carried as JSON text.
Graph CountingLoop(const Graph& body, int64_t trips) {
  Graph g("loop");
  g.AddInput("x", DT_FLOAT, Shape({3}));
  HostTensor m(DT_INT64, Shape());
  *m.data_as<int64_t>() = trips;
  g.AddConstant("M", m);
  Node n;
  n.op_type = "Loop";
  n.name = "loop";
  n.inputs = {"M", "", "x"};
  n.input_counts = {1, 1, 1, 0};
  n.outputs = {"y", "ys"};
  n.output_counts = {1, 1};
  n.attrs["body"] = AttrValue::String(body.ToJsonText().value());
  g.AddNode(n);
  g.AddOutput("y").AddOutput("ys");
  return g;
}

TEST(ControlFlow, ALoopBodyBuiltThroughTheGraphApiRunsEachIteration) {
  Graph body("double");
  body.AddInput("i", DT_INT64, Shape()).AddInput("c", DT_BOOL, Shape()).AddInput("v", DT_FLOAT, Shape({3}));
  body.AddNode("Add", "twice", {"v", "v"}, {"v2"});
  body.AddNode("Identity", "keep", {"c"}, {"c2"});
  body.AddOutput("c2").AddOutput("v2").AddOutput("v2");
  auto model = NewSession()->Compile(CountingLoop(body, 4));
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_FALSE(model.value()->has_dynamic_shapes());
  HostTensor x(DT_FLOAT, Shape({3}));
  for (int k = 0; k < 3; ++k) x.data_as<float>()[k] = float(k) - 1.5f;
  auto out = model.value()->Run({x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out.value()[1].shape(), Shape({4, 3}));
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out.value()[0].data_as<float>()[k], x.data_as<float>()[k] * 16);
    for (int it = 0; it < 4; ++it) EXPECT_EQ(out.value()[1].data_as<float>()[it * 3 + k], x.data_as<float>()[k] * float(2 << it));
  }
}

TEST(ControlFlow, ALoopBodyMayNotReadFiles) {
  // A body with a "file" constant: a model file could otherwise make the loader read any path.
  std::string body = R"({"inputs": [{"name": "i", "dtype": "int64", "shape": []}, {"name": "c", "dtype": "bool", "shape": []},
      {"name": "v", "dtype": "float32", "shape": [3]}],
    "constants": [{"name": "w", "file": "w.npy"}],
    "nodes": [{"op": "Add", "inputs": ["v", "w"], "outputs": ["v2"]}], "outputs": ["c", "v2", "v2"]})";
  Graph g = CountingLoop(Graph(), 2);
  Graph h("loop");
  for (auto& in : g.inputs()) h.AddInput(in.name, in.dtype, in.shape);
  for (auto& [name, t] : g.constants()) h.AddConstant(name, t);
  Node n = g.nodes()[0];
  n.attrs["body"] = AttrValue::String(body);
  h.AddNode(n).AddOutput("y").AddOutput("ys");
  auto model = NewSession()->Compile(h);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(Contains(model.status().message(), "'loop'")) << model.status().message();
  EXPECT_TRUE(Contains(model.status().message(), "must be inline")) << model.status().message();
}
}  // namespace
}  // namespace weft
