// The conversion's registry context from C++: the registries' rules, typed options, transforms,
// ONNX model hooks, and emitters that replace or wrap an op's own C in a module built and run here.
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "test_util.h"
#include "weft/aot.h"
#include "weft/custom_op.h"
#include "weft/onnx.h"
#include "weft/registry_context.h"

namespace weft {
namespace {

namespace fs = std::filesystem;
using test::Contains;
using test::Sh;
using test::Shell;

TEST(RegistryContext, KeysNeedOverwriteAndBuiltinsNeedAllowOverride) {
  auto ctx = BuildDefaultRegistryContext().value();
  EXPECT_TRUE(ctx->litert_parsers.IsBuiltin("FULLY_CONNECTED"));
  EXPECT_FALSE(ctx->litert_parsers.Has("CUSTOM"));
  EXPECT_TRUE(ctx->emitters.IsBuiltin("TflConv2D"));
  EXPECT_FALSE(ctx->emitters.Has("IsNaN"));  // an op with no C of its own
  EXPECT_EQ(ctx->transforms.Keys(), std::vector<std::string>{"remove_identity"});

  const LiteRtParser p = [](const LiteRtOperator&, Node*) { return Status::Ok(); };
  ASSERT_TRUE(ctx->litert_parsers.Register("MY_OP", p).ok());
  Status again = ctx->litert_parsers.Register("MY_OP", p);
  EXPECT_EQ(again.code(), Status::Code::kAlreadyExists);
  EXPECT_TRUE(Contains(again.message(), "litert_parsers: 'MY_OP' is already registered; pass overwrite=true"));
  EXPECT_TRUE(ctx->litert_parsers.Register("MY_OP", p, /*overwrite=*/true).ok());
  Status builtin = ctx->litert_parsers.Register("CONV_2D", p, true);
  EXPECT_EQ(builtin.code(), Status::Code::kFailedPrecondition);
  EXPECT_TRUE(Contains(builtin.message(), "'CONV_2D' is a built-in; replacing it needs allow_override=true"));
  EXPECT_FALSE(ctx->litert_parsers.Remove("CONV_2D").ok());
  EXPECT_TRUE(ctx->litert_parsers.IsBuiltin("CONV_2D"));
  EXPECT_TRUE(ctx->litert_parsers.Remove("MY_OP").ok());
  EXPECT_EQ(ctx->litert_parsers.Remove("MY_OP").code(), Status::Code::kNotFound);

  auto open = BuildDefaultRegistryContext({}, /*allow_override=*/true).value();
  ASSERT_TRUE(open->litert_parsers.Register("CONV_2D", p, true).ok());
  EXPECT_FALSE(open->litert_parsers.IsBuiltin("CONV_2D"));
  ASSERT_TRUE(open->emitters.Remove("TflConv2D").ok());
  // Registration order is kept.
  auto keys = open->litert_parsers.Keys();
  EXPECT_EQ(keys.front(), "ADD");
}

TEST(RegistryContext, CustomizerErrorsAndExceptionsFailTheConstruction) {
  auto bad = BuildDefaultRegistryContext({[](RegistryContext*) { return Status::Ok(); },
                                          [](RegistryContext* c) { return c->emitters.Register("Relu", {}, true); }});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "registry customizer #2: emitters: 'Relu' is a built-in; replacing it needs allow_override"));
  auto throws = BuildDefaultRegistryContext({[](RegistryContext*) -> Status { throw std::runtime_error("half done"); }});
  ASSERT_FALSE(throws.ok());
  EXPECT_TRUE(Contains(throws.status().message(), "registry customizer #1 threw: half done"));
}

TEST(RegistryContext, CheckOptionsTypesFillsDefaultsAndNamesTheNearest) {
  OptionSchema s;
  s.fields.push_back({"alpha", WEFT_ATTR_FLOAT, true, {}, ""});
  s.fields.push_back({"stride", WEFT_ATTR_INT, false, AttrValue::Int(1), ""});
  s.fields.push_back({"bias", WEFT_ATTR_BOOL, false, AttrValue::Bool(true), ""});
  s.fields.push_back({"sizes", WEFT_ATTR_LIST_FLOAT, false, {}, ""});
  std::map<std::string, AttrValue> a = {{"alpha", AttrValue::Int(3)}, {"bias", AttrValue::Int(0)}, {"sizes", AttrValue::ListInt({1, 2})},
                                        {"version", AttrValue::Int(1)}};
  ASSERT_TRUE(CheckOptions(s, "op", &a, {"version"}).ok());
  EXPECT_EQ(a.at("alpha").type(), WEFT_ATTR_FLOAT);
  EXPECT_EQ(a.at("alpha").f(), 3.0f);
  EXPECT_EQ(a.at("stride").i(), 1);
  EXPECT_EQ(a.at("bias").type(), WEFT_ATTR_BOOL);
  EXPECT_FALSE(a.at("bias").b());
  EXPECT_EQ(a.at("sizes").floats(), (std::vector<float>{1.f, 2.f}));

  std::map<std::string, AttrValue> typo = {{"alpha", AttrValue::Float(1)}, {"strid", AttrValue::Int(2)}};
  Status st = CheckOptions(s, "op #3", &typo);
  EXPECT_TRUE(Contains(st.message(), "op #3: option 'strid' is not declared; did you mean 'stride'? (declared: alpha, stride, bias, sizes)"));
  std::map<std::string, AttrValue> wrong = {{"alpha", AttrValue::String("x")}};
  EXPECT_TRUE(Contains(CheckOptions(s, "op", &wrong).message(), "option 'alpha' must be Float, got String"));
  std::map<std::string, AttrValue> notbool = {{"alpha", AttrValue::Float(1)}, {"bias", AttrValue::Int(2)}};
  EXPECT_TRUE(Contains(CheckOptions(s, "op", &notbool).message(), "option 'bias' must be Bool"));
  std::map<std::string, AttrValue> missing;
  EXPECT_TRUE(Contains(CheckOptions(s, "op", &missing).message(), "option 'alpha' (Float) is required"));
  OptionSchema none;
  std::map<std::string, AttrValue> any = {{"k", AttrValue::Int(1)}};
  EXPECT_TRUE(Contains(CheckOptions(none, "t", &any).message(), "option 'k' is not declared (it takes no options)"));
  none.allow_extra = true;
  EXPECT_TRUE(CheckOptions(none, "t", &any).ok());
}

Graph IdentityChain() {
  Graph g;
  g.AddInput("x", DT_FLOAT, Shape({3}));
  g.AddNode("Identity", "i1", {"x"}, {"a"});
  g.AddNode("Identity", "i2", {"a"}, {"b"});
  g.AddNode("Relu", "r", {"b"}, {"c"});
  g.AddNode("Identity", "out", {"c"}, {"y"});  // a graph output: kept
  g.AddOutput("y");
  return g;
}

TEST(RegistryContext, TransformsRunCheckedAndAFailureLeavesTheGraph) {
  auto ctx = BuildDefaultRegistryContext().value();
  Graph g = IdentityChain();
  ASSERT_TRUE(ctx->ApplyTransform("remove_identity", {}, &g).ok());
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].name, "r");
  EXPECT_EQ(g.nodes()[0].inputs, std::vector<std::string>{"x"});
  // Same outputs as before.
  auto s = Session::Create().value();
  auto before = s->Compile(IdentityChain()).value(), after = s->Compile(g).value();
  HostTensor x = HostTensor::FromVector<float>(DT_FLOAT, Shape({3}), {-1.f, 0.5f, 2.f});
  auto y0 = before->Run({x}).value(), y1 = after->Run({x}).value();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(y0[0].data_as<float>()[i], y1[0].data_as<float>()[i]);

  EXPECT_TRUE(Contains(ctx->ApplyTransform("remove_identiy", {}, &g).message(), "did you mean 'remove_identity'?"));
  EXPECT_TRUE(Contains(ctx->ApplyTransform("remove_identity", {{"x", AttrValue::Int(1)}}, &g).message(), "it takes no options"));

  GraphTransform half;
  half.options.fields.push_back({"keep", WEFT_ATTR_INT, false, AttrValue::Int(1), ""});
  half.run = [](Graph* graph, const std::map<std::string, AttrValue>& o) -> Status {
    graph->mutable_nodes().resize(static_cast<size_t>(o.at("keep").i()));
    return InvalidArgument("gave up halfway");
  };
  ASSERT_TRUE(ctx->transforms.Register("half", half).ok());
  Graph h = IdentityChain();
  Status st = ctx->ApplyTransform("half", {}, &h);
  EXPECT_TRUE(Contains(st.message(), "transform 'half': gave up halfway"));
  EXPECT_EQ(h.nodes().size(), 4u) << "a failing transform leaves the graph as it was";
}

TEST(RegistryContext, OnnxModelHooksRewriteTheBytes) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  for (auto* vi : {g->add_input(), g->add_output()}) {
    vi->set_name(vi == &g->input(0) ? "x" : "y");
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(2);
  }
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  auto ctx = BuildDefaultRegistryContext({[](RegistryContext* c) {
    return c->onnx_model_hooks.Register("to_neg", [](std::string* b) {
      onnx::ModelProto mp;
      if (!mp.ParseFromString(*b)) return InvalidArgument("not a model");
      mp.mutable_graph()->mutable_node(0)->set_op_type("Neg");
      return mp.SerializeToString(b) ? Status::Ok() : Internal("serialize");
    });
  }}).value();
  OnnxImportOptions o;
  o.registry = ctx;
  auto graph = ImportOnnxBytes(bytes, ".", o);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_EQ(graph.value().nodes()[0].op_type, "Neg");
  EXPECT_EQ(ImportOnnxBytes(bytes, ".").value().nodes()[0].op_type, "Relu");

  auto failing = BuildDefaultRegistryContext({[](RegistryContext* c) {
    return c->onnx_model_hooks.Register("strict", [](std::string*) { return InvalidArgument("refused: unsigned model"); });
  }}).value();
  o.registry = failing;
  EXPECT_TRUE(Contains(ImportOnnxBytes(bytes, ".", o).status().message(), "ONNX model: onnx_model_hooks['strict']: refused: unsigned model"));
}

// ---- emitters --------------------------------------------------------------------------------


std::shared_ptr<CompiledModel> AotModel(const Graph& g) {
  SessionOptions so;
  so.use_env_path = false;
  so.options["weft.graph_passes"] = "none";
  auto s = Session::Create(so).value();
  auto m = s->Compile(g);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? m.value() : nullptr;
}

TEST(RegistryContext, AnEmitterWrapsTheOpsOwnCAndTheModuleRuns) {
  Graph g;
  g.AddInput("x", DT_FLOAT, Shape({4}));
  g.AddNode("Relu", "r", {"x"}, {"y"});
  g.AddOutput("y");
  auto m = AotModel(g);
  ASSERT_TRUE(m);
  auto ctx = BuildDefaultRegistryContext({[](RegistryContext* c) {
    return c->emitters.Register("Relu", [](AotEmitCall& call) -> Status {
      EmitContext& e = call.ctx();
      e.DeclareState("uint32_t runs;");
      e.Init(e.State() + "->runs = 0;");
      WEFT_RETURN_IF_ERROR(call.EmitOwn());
      e.Run(e.State() + "->runs++;");
      return Status::Ok();
    }, true);
  }}, /*allow_override=*/true).value();
  auto dir = fs::temp_directory_path() / ("weft_reg_emit_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  AotOptions o;
  o.prefix = "rl";
  o.output_dir = dir.string();
  o.registry = ctx;
  auto r = GenerateC(*m, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::ofstream(dir / "main.c") << R"(#include <stdio.h>
#include <string.h>
#include "rl.h"
static rl_context ctx;
int main(void) {
  const float x[4] = {-2.f, -0.5f, 0.5f, 3.f};
  int run, i;
  if (rl_init(&ctx, 0, 0) != rl_status_ok) return 10;
  for (run = 0; run < 3; ++run) {
    const float* y;
    memcpy(ctx.tensor_ptrs[rl_inputs[0].index], x, sizeof x);
    if (rl_run(&ctx) != rl_status_ok) return 11;
    y = (const float*)ctx.tensor_ptrs[rl_outputs[0].index];
    for (i = 0; i < 4; ++i)
      if (y[i] != (x[i] > 0.f ? x[i] : 0.f)) { printf("y[%d] = %g\n", i, y[i]); return 12; }
  }
  if (ctx.state.rl_n0.runs != 3u) { printf("runs = %u\n", (unsigned)ctx.state.rl_n0.runs); return 13; }
  printf("ok\n");
  return 0;
}
)";
  const std::string d = dir.string();
  Sh b = Shell("cc -std=c99 -Wall -Wextra -Werror -pedantic -I" + d + "/includes-api -I" + d + "/src " + d + "/src/rl.c " + d +
               "/src/rl_constants.c " + d + "/main.c -o " + d + "/main -lm");
  ASSERT_EQ(b.code, 0) << b.out;
  Sh run = Shell(d + "/main");
  EXPECT_EQ(run.code, 0) << run.out;
  fs::remove_all(dir);
}

TEST(RegistryContext, EmitterErrorsNameTheNodeAndWriteNothing) {
  Graph g;
  g.AddInput("x", DT_FLOAT, Shape({4}));
  g.AddNode("IsNaN", "check", {"x"}, {"m"});
  g.AddOutput("m");
  auto m = AotModel(g);
  ASSERT_TRUE(m);
  auto dir = fs::temp_directory_path() / ("weft_reg_err_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  AotOptions o;
  o.prefix = "nn";
  o.output_dir = dir.string();
  auto none = GenerateC(*m, o);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Contains(none.status().message(), "through an emitter registered for its type"));

  auto ctx = BuildDefaultRegistryContext({[](RegistryContext* c) {
    return c->emitters.Register("IsNaN", [](AotEmitCall& call) -> Status {
      if (call.HasOwn()) return Internal("IsNaN has no C of its own");
      Status own = call.EmitOwn();
      if (own.ok()) return Internal("EmitOwn should fail");
      throw std::out_of_range("no kernel for " + call.node_name() + ": " + own.message());
    });
  }}).value();
  o.registry = ctx;
  auto r = GenerateC(*m, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "[IsNaN 'check'] emitters['IsNaN']: threw: no kernel for check: the op IsNaN (from built-in) emits no C of its own"));
  EXPECT_FALSE(fs::exists(dir / "src"));
}

}  // namespace
}  // namespace weft
