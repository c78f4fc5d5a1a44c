// The weft command-line tool, run as a user would.
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/npy.h"
#include "test_util.h"

namespace weft {
namespace {

using test::Contains;
using test::Pkg;

struct Result {
  int code;
  std::string out;
};

Result Sh(const std::string& cmd) {
  std::string full = cmd + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

const std::string kWeft = std::string("env -u WEFT_CUSTOM_OPP_PATH -u ASCEND_CUSTOM_OPP_PATH ") + WEFT_CLI_PATH;

std::string Dir() {
  auto d = std::filesystem::temp_directory_path() / ("weft_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(Cli, HelpOnEveryCommand) {
  for (const char* sub : {"", " run", " plugins", " manifest", " check-op"}) {
    Result r = Sh(kWeft + sub + " --help");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_TRUE(Contains(r.out, "Usage")) << sub;
  }
  EXPECT_TRUE(Contains(Sh(kWeft + " run --help").out, "--input"));
}

TEST(Cli, RunsAGraphWithBuiltinsAndAPackage) {
  std::string d = Dir();
  std::ofstream(d + "/g.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [3]}],
    "constants": [{"name": "k", "dtype": "float32", "shape": [3], "data": [1, -2, 3]}],
    "nodes": [{"op": "Mul", "inputs": ["x", "k"], "outputs": ["m"]},
              {"op": "ScaleAttrs", "inputs": ["m"], "outputs": ["out/y"], "attrs": {"scale": 2}}],
    "outputs": ["out/y"]})";
  auto x = HostTensor::FromVector<float>(DT_FLOAT, {3}, {0.5f, 1.f, -1.f});
  ASSERT_TRUE(internal::WriteNpy(d + "/x.npy", x).ok());
  Result r = Sh(kWeft + " run " + d + "/g.json --input x=" + d + "/x.npy -o " + d + "/out --package " + Pkg("test_ops"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "out/y: float32[3]"));
  auto y = internal::ReadNpy(d + "/out/out_y.npy");
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_EQ(y.value().data_as<float>()[0], 1.f);
  EXPECT_EQ(y.value().data_as<float>()[1], -4.f);
  EXPECT_EQ(y.value().data_as<float>()[2], -6.f);
}

TEST(Cli, ErrorsAreOneLineWithNonZeroExit) {
  std::string d = Dir();
  std::ofstream(d + "/u.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [3]}],
    "nodes": [{"name": "n1", "op": "Nope", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})";
  for (const std::string& args : std::vector<std::string>{" run /nonexistent.json", " run " + d + "/u.json", " run " + d + "/u.json --input x",
                                  " run " + d + "/u.json --package /nonexistent"}) {
    Result r = Sh(kWeft + args);
    EXPECT_EQ(r.code, 1) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("weft: error: ", 0), 0u) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
  EXPECT_TRUE(Contains(Sh(kWeft + " run " + d + "/u.json").out, "[Nope 'n1'] op type 'Nope' is not registered"));
  Result bad = Sh(kWeft + " frobnicate");
  EXPECT_NE(bad.code, 0);
}

TEST(Cli, ShapeSpecsTakeWholeNonNegativeDimsOnly) {
  std::string d = Dir();
  std::ofstream(d + "/s.onnx.json") << "";
  for (const char* spec : {"x=2e3,3.9", "x=2,3,", "x=-1,3", "x=2,,3", "x=0x10", "=2"}) {
    Result r = Sh(kWeft + " inspect --shape " + std::string(spec) + " " + d + "/s.onnx.json");
    EXPECT_EQ(r.code, 1) << spec << ": " << r.out;
    EXPECT_TRUE(Contains(r.out, "must be NAME=D0,D1,...")) << spec << ": " << r.out;
  }
}

TEST(Cli, RepeatReportsLatencyAndProfileReportsMedians) {
  std::string d = Dir();
  std::ofstream(d + "/r.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
    "nodes": [{"name": "relu", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})";
  ASSERT_TRUE(WriteNpy(d + "/x.npy", HostTensor(DT_FLOAT, Shape({4}))).ok());
  Result r = Sh(kWeft + " run " + d + "/r.json -i x=" + d + "/x.npy -o " + d + "/out --repeat 5 --profile 3");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "repeat: 5 runs after a warm-up: median ")) << r.out;
  EXPECT_TRUE(Contains(r.out, " p90 ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "mean and median per run")) << r.out;
  Result bad = Sh(kWeft + " run " + d + "/r.json -i x=" + d + "/x.npy -o " + d + "/out --repeat 0");
  EXPECT_NE(bad.code, 0) << bad.out;
}

TEST(Cli, MissingInputsAreListed) {
  std::string d = Dir();
  std::ofstream(d + "/m.json") << R"({"inputs": [{"name": "a", "dtype": "float32", "shape": [2]}, {"name": "b", "dtype": "int64", "shape": [1]}],
    "nodes": [{"op": "Relu", "inputs": ["a"], "outputs": ["y"]}], "outputs": ["y"]})";
  Result r = Sh(kWeft + " run " + d + "/m.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Contains(r.out, "missing --input for: a (float32[2]), b (int64[1])"));
}

TEST(Cli, UnknownAndRepeatedInputsAreErrors) {
  std::string d = Dir();
  std::ofstream(d + "/u.json") << R"({"inputs": [{"name": "a", "dtype": "float32", "shape": [2]}],
    "nodes": [{"op": "Relu", "inputs": ["a"], "outputs": ["y"]}], "outputs": ["y"]})";
  ASSERT_TRUE(internal::WriteNpy(d + "/a.npy", HostTensor(DT_FLOAT, Shape({2}))).ok());
  Result unknown = Sh(kWeft + " run " + d + "/u.json --input a=" + d + "/a.npy --input b=" + d + "/a.npy");
  EXPECT_EQ(unknown.code, 1);
  EXPECT_TRUE(Contains(unknown.out, "--input 'b': the model has no input of that name (its inputs: a)")) << unknown.out;
  Result twice = Sh(kWeft + " run " + d + "/u.json --input a=" + d + "/a.npy --input a=" + d + "/a.npy");
  EXPECT_EQ(twice.code, 1);
  EXPECT_TRUE(Contains(twice.out, "--input 'a' is given twice")) << twice.out;
}

TEST(Cli, UnknownInputSuggestsTheNearestName) {
  std::string d = Dir();
  std::ofstream(d + "/s.json") << R"({"inputs": [{"name": "input", "dtype": "float32", "shape": [2]},
                                              {"name": "mask", "dtype": "float32", "shape": [2]}],
    "nodes": [{"op": "Mul", "inputs": ["input", "mask"], "outputs": ["y"]}], "outputs": ["y"]})";
  ASSERT_TRUE(internal::WriteNpy(d + "/a.npy", HostTensor(DT_FLOAT, Shape({2}))).ok());
  Result r = Sh(kWeft + " run " + d + "/s.json -i imput=" + d + "/a.npy -i mask=" + d + "/a.npy");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Contains(r.out, "--input 'imput': the model has no input of that name; did you mean 'input'? "
                              "(its inputs: input, mask)")) << r.out;
}

// Each -p/-i/-s takes one value, so positionals may follow them; repeating them still adds up.
TEST(Cli, RepeatableOptionsTakeOneValueEach) {
  std::string d = Dir();
  std::ofstream(d + "/r.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [3]}],
    "nodes": [{"op": "ScaleAttrs", "inputs": ["x"], "outputs": ["y"], "attrs": {"scale": 2}}], "outputs": ["y"]})";
  ASSERT_TRUE(internal::WriteNpy(d + "/rx.npy", HostTensor::FromVector<float>(DT_FLOAT, {3}, {1, 2, 3})).ok());
  const std::string g = d + "/r.json", x = " -i x=" + d + "/rx.npy", out = " -o " + d + "/rout";
  for (const std::string& args : {" run -p " + Pkg("test_ops") + " " + g + x + out,
                                  " run -p " + Pkg("ge_port") + " -p " + Pkg("test_ops") + " " + g + x + out,
                                  " run" + x + " " + g + " --package " + Pkg("test_ops") + out,
                                  " compile -p " + Pkg("test_ops") + " -s x=3 " + g + " -o " + d + "/r.weft",
                                  " inspect -p " + Pkg("test_ops") + " -s x=3 " + g + " --memory"}) {
    Result r = Sh(kWeft + args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  }
  auto y = internal::ReadNpy(d + "/rout/y.npy");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y.value().data_as<float>()[2], 6.f);
  // Two values after one -p: the second is the graph, the real graph an extra argument.
  Result two = Sh(kWeft + " run -p " + Pkg("test_ops") + " " + Pkg("ge_port") + " " + g + x);
  EXPECT_NE(two.code, 0);
  EXPECT_TRUE(Contains(two.out, "not expected")) << two.out;
}

TEST(Cli, DuplicateOpTypesSayWhatOverrideDoes) {
  std::string d = Dir();
  std::ofstream(d + "/relu.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2]}],
    "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})";
  ASSERT_TRUE(internal::WriteNpy(d + "/rx.npy", HostTensor::FromVector<float>(DT_FLOAT, {2}, {-1, 2})).ok());
  const std::string run = kWeft + " run " + d + "/relu.json -i x=" + d + "/rx.npy -o " + d + "/relu_out";
  const std::string rule = ": with override allowed, a package replaces a built-in; among package path entries "
                           "(--package in order, then WEFT_CUSTOM_OPP_PATH) the earlier entry wins";
  Result strict = Sh(run + " -p " + Pkg("relu_override"));
  EXPECT_EQ(strict.code, 1);
  EXPECT_TRUE(
      Contains(strict.out, "op type 'Relu' is registered twice: by built-in and by " + test::PkgLib("relu_override")));
  EXPECT_TRUE(Contains(strict.out, "to use the one from " + test::PkgLib("relu_override") + rule)) << strict.out;
  Result replaced = Sh(run + " -p " + Pkg("relu_override") + " --allow-override");
  ASSERT_EQ(replaced.code, 0) << replaced.out;
  auto y = internal::ReadNpy(d + "/relu_out/y.npy");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y.value().data_as<float>()[0], 1000.f);  // the package's Relu, not the built-in
  // Between two entries the message names the earlier one, whichever order they come in.
  for (auto [first, second] : {std::pair<std::string, std::string>{"dup_ops", "test_ops"}, {"test_ops", "dup_ops"}}) {
    Result r = Sh(run + " -p " + Pkg(first) + " -p " + Pkg(second));
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(Contains(r.out, "op type 'SumN' is registered twice")) << r.out;
    EXPECT_TRUE(Contains(r.out, "to use the one from " + test::PkgLib(first) + rule)) << r.out;
  }
  for (const char* sub : {" run", " compile"}) {
    Result help = Sh(kWeft + sub + " --help");
    EXPECT_TRUE(Contains(help.out, "a package replaces a built-in, and among package path entries")) << sub;
    EXPECT_TRUE(Contains(help.out, "the earlier entry wins")) << sub;
  }
}

TEST(Cli, PackagePathThatIsALibraryPointsAtThePackage) {
  std::string d = Dir();
  std::ofstream(d + "/l.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2]}],
    "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})";
  Result r = Sh(kWeft + " run " + d + "/l.json -p " + test::PkgLib("test_ops"));
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Contains(r.out, "'" + test::PkgLib("test_ops") + "' is a library, not an operator package root"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "It lies inside the package '" + Pkg("test_ops") + "': use that directory instead"));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(Cli, TraceWritesOneSlicePerStep) {
  std::string d = Dir();
  const std::string graph = R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2, 3]}],
    "constants": [{"name": "k", "dtype": "float32", "shape": [3], "data": [1, -2, 3]}],
    "nodes": [{"name": "mul", "op": "Mul", "inputs": ["x", "k"], "outputs": ["m"]},
              {"name": "scale", "op": "ScaleAttrs", "inputs": ["m"], "outputs": ["s"], "attrs": {"scale": 2}},
              {"name": "act", "op": "Tanh", "inputs": ["s"], "outputs": ["y"]}],
    "outputs": ["y"]})";
  std::ofstream(d + "/t.json") << graph;
  ASSERT_TRUE(internal::WriteNpy(d + "/tx.npy", test::RandomFloat({2, 3}, 7)).ok());
  std::filesystem::remove(d + "/trace.json");
  Result r = Sh(kWeft + " run " + d + "/t.json -i x=" + d + "/tx.npy -o " + d + "/tout -p " + Pkg("test_ops") +
                " --trace " + d + "/trace.json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "trace: 3 steps -> " + d + "/trace.json")) << r.out;
  std::ifstream f(d + "/trace.json");
  nlohmann::json trace = nlohmann::json::parse(f);
  const nlohmann::json& events = trace.at("traceEvents");
  const nlohmann::json nodes = nlohmann::json::parse(graph).at("nodes");
  ASSERT_EQ(events.size(), nodes.size()) << trace.dump(1);
  double last_ts = -1;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const nlohmann::json& e = events[k];
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_EQ(e.at("name"), nodes[k].at("op"));
    EXPECT_EQ(e.at("args").at("op_type"), nodes[k].at("op"));
    EXPECT_EQ(e.at("args").at("node"), nodes[k].at("name"));
    EXPECT_EQ(e.at("args").at("step"), k);
    for (const char* field : {"ts", "dur", "pid", "tid"}) EXPECT_TRUE(e.at(field).is_number()) << field;
    EXPECT_GE(e.at("dur").get<double>(), 0);
    EXPECT_GE(e.at("ts").get<double>(), last_ts);  // in execution order
    last_ts = e.at("ts").get<double>();
    EXPECT_EQ(e.at("args").at("outputs"), nlohmann::json::array({"float32[2,3]"}));
  }
  EXPECT_EQ(events[0].at("args").at("inputs"), nlohmann::json::array({"float32[2,3]", "float32[3]"}));
  EXPECT_EQ(events[1].at("args").at("inputs"), nlohmann::json::array({"float32[2,3]"}));
  EXPECT_TRUE(Contains(Sh(kWeft + " run --help").out, "--trace"));
  // An unwritable trace file fails before the run.
  Result bad = Sh(kWeft + " run " + d + "/t.json -i x=" + d + "/tx.npy -o " + d + "/tout -p " + Pkg("test_ops") +
                  " --trace /nonexistent/dir/trace.json");
  EXPECT_EQ(bad.code, 1);
  EXPECT_TRUE(Contains(bad.out, "--trace: cannot write '/nonexistent/dir/trace.json'")) << bad.out;
}

TEST(Cli, CompileKeepsOnlyFilesThatLoadBack) {
  std::string d = Dir();
  std::ofstream(d + "/neg.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [-5, 2]}],
    "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"]}], "outputs": ["y"]})";
  Result r = Sh(kWeft + " compile " + d + "/neg.json -o " + d + "/neg.weft");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Contains(r.out, "does not load back, so it was removed")) << r.out;
  EXPECT_FALSE(std::filesystem::exists(d + "/neg.weft"));
}

TEST(Cli, AJsonNumberOutOfRangeIsAnError) {
  std::string d = Dir();
  std::ofstream(d + "/big.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2]}],
    "nodes": [{"op": "Relu", "inputs": ["x"], "outputs": ["y"], "attrs": {"alpha": 1e400}}], "outputs": ["y"]})";
  Result r = Sh(kWeft + " run " + d + "/big.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Contains(r.out, "number overflow")) << r.out;
}

TEST(Cli, PluginsReadsManifestsWithoutLoading) {
  Result r = Sh("WEFT_CUSTOM_OPP_PATH=" + Pkg("test_ops") + ":" + Pkg("ge_port") + " " + WEFT_CLI_PATH + " plugins");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "(package 'test_ops')"));
  EXPECT_TRUE(Contains(r.out, "libtest_ops.so  ABI 1  xxh3-64:"));
  EXPECT_TRUE(Contains(r.out, "[ok]"));
  EXPECT_TRUE(Contains(r.out, "SumN  v1  EagerExecute,ShapeInfer"));
  EXPECT_TRUE(Contains(r.out, "GeStyleMul  v1"));
  Result j = Sh("WEFT_CUSTOM_OPP_PATH=" + Pkg("test_ops") + " " + WEFT_CLI_PATH + " plugins --json --builtins");
  EXPECT_EQ(j.code, 0) << j.out;
  EXPECT_TRUE(Contains(j.out, "\"type\": \"MatMul\""));
  EXPECT_TRUE(Contains(j.out, "\"type\": \"ScaleAttrs\""));
  // GE's variable is an alias, read after WEFT_CUSTOM_OPP_PATH.
  Result a =
      Sh("env -u WEFT_CUSTOM_OPP_PATH ASCEND_CUSTOM_OPP_PATH=" + Pkg("ge_port") + " " + WEFT_CLI_PATH + " plugins");
  EXPECT_EQ(a.code, 0) << a.out;
  EXPECT_TRUE(Contains(a.out, "GeStyleMul  v1"));
}

TEST(Cli, PluginsFlagsBadEntriesAndStaleManifests) {
  std::string d = Dir() + "/pkgcopy";
  std::filesystem::remove_all(d);
  std::filesystem::copy(Pkg("ge_port"), d, std::filesystem::copy_options::recursive);
  // Change the library after the manifest was written.
  std::ofstream(d + "/" WEFT_TEST_LIBSUB "/libge_port.so", std::ios::app) << "x";
  Result r = Sh("WEFT_CUSTOM_OPP_PATH=" + d + ":" + Pkg("ge_port") + "/op_graph " + WEFT_CLI_PATH + " plugins");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Contains(r.out, "stale manifest (library changed)"));
  EXPECT_TRUE(Contains(r.out, "is not an operator package root"));
}

}  // namespace
}  // namespace weft

#include "weft/onnx.h"

namespace weft {
namespace {

TEST(Cli, RunsAndInspectsAnOnnxModel) {
  const std::string dir = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::string d = Dir();
  auto x = ReadOnnxTensor(dir + "/test_data_set_0/input_0.pb");
  auto w = ReadOnnxTensor(dir + "/test_data_set_0/input_1.pb");
  auto want = ReadOnnxTensor(dir + "/test_data_set_0/output_0.pb");
  ASSERT_TRUE(x.ok() && w.ok() && want.ok());
  ASSERT_TRUE(internal::WriteNpy(d + "/cx.npy", x.value()).ok());
  ASSERT_TRUE(internal::WriteNpy(d + "/cw.npy", w.value()).ok());
  Result r = Sh(kWeft + " run " + dir + "/model.onnx -i x=" + d + "/cx.npy -i W=" + d + "/cw.npy -o " + d + "/conv");
  ASSERT_EQ(r.code, 0) << r.out;
  auto y = internal::ReadNpy(d + "/conv/y.npy");
  ASSERT_TRUE(y.ok());
  ASSERT_EQ(y.value().shape(), want.value().shape());
  for (int64_t i = 0; i < y.value().numel(); ++i) EXPECT_NEAR(y.value().data_as<float>()[i], want.value().data_as<float>()[i], 1e-5);
  Result ins = Sh(kWeft + " inspect " + dir + "/model.onnx --memory");
  EXPECT_EQ(ins.code, 0) << ins.out;
  EXPECT_TRUE(Contains(ins.out, "input  x: float32[1,1,7,5]"));
  EXPECT_TRUE(Contains(ins.out, "Conv x1"));
  EXPECT_TRUE(Contains(ins.out, "memory: arena"));
}

TEST(OnnxImport, UnsupportedModelListsEveryUnsupportedNode) {
  // Two ops no session registers, in one model built by hand.
  Graph g("two_bad");
  g.AddInput("x", DT_FLOAT, {2});
  Node a;
  a.op_type = "FancyOp";
  a.name = "first";
  a.domain = "com.example";
  a.opset = 3;
  a.inputs = {"x"};
  a.outputs = {"y"};
  Node b = a;
  b.op_type = "OtherOp";
  b.name = "second";
  b.inputs = {"y"};
  b.outputs = {"z"};
  g.AddNode(a).AddNode(b).AddOutput("z");
  auto s = test::MakeSession();
  auto m = s->Compile(g);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "2 nodes use op types not registered in this session: 'first' (FancyOp, domain com.example, opset 3), 'second' (OtherOp, domain com.example, opset 3)"));
}

TEST(OnnxImport, CorruptModelsAreErrors) {
  EXPECT_TRUE(Contains(ImportOnnxBytes("not a protobuf at all \x01\x02", ".").status().message(), "not a valid ONNX model"));
  EXPECT_TRUE(Contains(ImportOnnx("/nonexistent/model.onnx").status().message(), "cannot open ONNX model"));
  const std::string path = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx";
  if (!std::filesystem::exists(path)) GTEST_SKIP();
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (size_t n = 0; n < bytes.size(); n += 7) {
    auto g = ImportOnnxBytes(bytes.substr(0, n), ".");
    if (g.ok()) test::MakeSession()->Compile(g.value());  // must not crash either way
  }
}

TEST(Cli, CompilesToAModelFileThatRunsAndInspects) {
  std::string d = Dir();
  std::ofstream(d + "/c.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2, 3]}],
    "constants": [{"name": "k", "dtype": "float32", "shape": [3], "data": [1, -2, 0.5]}],
    "nodes": [{"op": "Mul", "inputs": ["x", "k"], "outputs": ["m"]},
              {"op": "RtcScale", "name": "scale", "inputs": ["m"], "outputs": ["y"], "attrs": {"factor": 3}}],
    "outputs": ["y"]})";
  std::string env = "WEFT_CACHE_DIR=" + d + "/cache ";
  Result c = Sh(env + kWeft + " compile " + d + "/c.json -o " + d + "/c.weft -p " + Pkg("rtc_ops"));
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_TRUE(Contains(c.out, "wrote " + d + "/c.weft"));
  Result i = Sh(kWeft + " inspect " + d + "/c.weft");
  ASSERT_EQ(i.code, 0) << i.out;
  EXPECT_TRUE(Contains(i.out, "checksum ok"));
  EXPECT_TRUE(Contains(i.out, "compiled kernels: 1"));
  EXPECT_TRUE(Contains(i.out, "RtcScale v1  package rtc_ops, librtc_ops.so xxh3-64:"));
  EXPECT_TRUE(Contains(i.out, "Mul v1  built-in"));
  auto x = HostTensor::FromVector<float>(DT_FLOAT, {2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(internal::WriteNpy(d + "/cx.npy", x).ok());
  // The file's compiled kernel is native code: it runs only on an explicit trust decision.
  Result untrusted = Sh(kWeft + " run " + d + "/c.weft -i x=" + d + "/cx.npy -o " + d + "/cout -p " + Pkg("rtc_ops"));
  EXPECT_EQ(untrusted.code, 1);
  EXPECT_TRUE(Contains(untrusted.out, "holds 1 runtime-compiled kernel(s)")) << untrusted.out;
  EXPECT_TRUE(Contains(untrusted.out, "--trust-embedded-code")) << untrusted.out;
  Result r = Sh(kWeft + " run " + d + "/c.weft --trust-embedded-code -i x=" + d + "/cx.npy -o " + d + "/cout -p " +
                Pkg("rtc_ops"));
  ASSERT_EQ(r.code, 0) << r.out;
  auto y = internal::ReadNpy(d + "/cout/y.npy");
  ASSERT_TRUE(y.ok());
  const float k[3] = {1, -2, 0.5f};
  for (int j = 0; j < 6; ++j) EXPECT_EQ(y.value().data_as<float>()[j], x.data_as<float>()[j] * k[j % 3] * 3.0f);
  // Without the package: one line naming the package to install.
  Result miss = Sh(kWeft + " run " + d + "/c.weft -i x=" + d + "/cx.npy -o " + d + "/cout");
  EXPECT_EQ(miss.code, 1);
  EXPECT_TRUE(Contains(miss.out, "install package 'rtc_ops'"));
  EXPECT_EQ(std::count(miss.out.begin(), miss.out.end(), '\n'), 1) << miss.out;
  // A truncated file: one-line error, no crash.
  std::filesystem::resize_file(d + "/c.weft", std::filesystem::file_size(d + "/c.weft") / 2);
  Result bad = Sh(kWeft + " run " + d + "/c.weft -i x=" + d + "/cx.npy -p " + Pkg("rtc_ops"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_TRUE(Contains(bad.out, "truncated")) << bad.out;
  EXPECT_EQ(Sh(kWeft + " compile --help").code, 0);
}

TEST(Cli, ConcurrentProcessesShareTheKernelCache) {
  std::string d = Dir() + "/shared";
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  std::ofstream(d + "/g.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [7, 3]}],
    "nodes": [{"op": "RtcScale", "inputs": ["x"], "outputs": ["y"], "attrs": {"factor": 1.25}}], "outputs": ["y"]})";
  // Four processes compile the same kernel into one cache directory at once.
  std::string cmd;
  for (int k = 0; k < 4; ++k)
    cmd += "(WEFT_CACHE_DIR=" + d + "/cache " + kWeft + " compile " + d + "/g.json -o " + d + "/m" + std::to_string(k) +
           ".weft -p " + Pkg("rtc_ops") + " > " + d + "/log" + std::to_string(k) + " 2>&1; echo $? > " + d + "/rc" +
           std::to_string(k) + ") & ";
  Result r = Sh(cmd + "wait");
  ASSERT_EQ(r.code, 0) << r.out;
  int sos = 0, temps = 0;
  for (auto& e : std::filesystem::directory_iterator(d + "/cache")) {
    std::string name = e.path().filename().string();
    sos += e.path().extension() == ".so" && name[0] != '.';
    temps += name[0] == '.';
  }
  EXPECT_EQ(sos, 1);    // one kernel, whoever renamed it last
  EXPECT_EQ(temps, 0);  // no half-written files left behind
  for (int k = 0; k < 4; ++k) {
    std::ifstream rc(d + "/rc" + std::to_string(k));
    int code = -1;
    rc >> code;
    EXPECT_EQ(code, 0) << k;
    EXPECT_EQ(Sh(kWeft + " inspect " + d + "/m" + std::to_string(k) + ".weft").code, 0);
  }
}

TEST(Cli, ProfileShowsWhereTheTimeGoes) {
  std::string d = Dir();
  std::ofstream(d + "/p.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [64, 64]}],
    "nodes": [{"name": "mm", "op": "MatMul", "inputs": ["x", "x"], "outputs": ["m"]},
              {"name": "act", "op": "Exp", "inputs": ["m"], "outputs": ["y"]}], "outputs": ["y"]})";
  HostTensor x(DT_FLOAT, {64, 64});
  ASSERT_TRUE(internal::WriteNpy(d + "/px.npy", x).ok());
  Result r = Sh(kWeft + " run " + d + "/p.json -i x=" + d + "/px.npy -o " + d + "/pout --profile 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "profile: 3 runs"));
  EXPECT_TRUE(Contains(r.out, "MatMul"));
  EXPECT_TRUE(Contains(r.out, "act"));
  EXPECT_NE(Sh(kWeft + " run " + d + "/p.json -i x=" + d + "/px.npy --profile 0").code, 0);
}

// `weft check-op` output: op type -> check -> its line ("PASS  name: ..."), plus the exit code.
struct CheckReport {
  int code = -1;
  std::string out;
  std::map<std::string, std::map<std::string, std::string>> lines;
  std::set<std::string> Verdicts(const std::string& op, const std::string& verdict) const {
    std::set<std::string> checks;
    if (auto it = lines.find(op); it != lines.end())
      for (auto& [check, line] : it->second)
        if (line.rfind(verdict + "  ", 0) == 0) checks.insert(check);
    return checks;
  }
};

CheckReport CheckOp(const std::string& args) {
  CheckReport rep;
  Result r = Sh(kWeft + " check-op " + args);
  rep.code = r.code;
  rep.out = r.out;
  std::istringstream in(r.out);
  std::string op;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  ", 0) != 0) {  // "Op (v1, caps...)" opens an op's block
      size_t v = line.find(" (v");
      op = v == std::string::npos ? "" : line.substr(0, v);
      continue;
    }
    if (op.empty() || line.size() < 8) continue;
    std::string body = line.substr(2);            // "PASS  name: detail"
    std::string rest = body.substr(6);            // "name: detail"
    rep.lines[op][rest.substr(0, rest.find(": "))] = body;
  }
  return rep;
}

const std::vector<std::string> kAllChecks = {
    "prototype", "dtype sweep", "InferShape vs Execute", "red zones", "outputs fully written", "inputs unmodified",
    "determinism", "concurrent Execute", "Serialize/Deserialize round trip", "ArgsUpdater rebinding",
    "data-dependent bounds"};

// Each op of tests/plugins/defects_ops.cc seeds one defect; it must fail that check and no other.
TEST(CheckOp, EachSeededDefectFailsExactlyItsCheck) {
  CheckReport r = CheckOp(Pkg("defects_ops"));
  EXPECT_EQ(r.code, 1) << r.out;
  const std::map<std::string, std::pair<std::string, std::string>> seeded = {
      {"WrongInferShape",
       {"InferShape vs Execute", "MallocOutputTensor(0, [2,3], float32) differs from the inferred [3,3]"}},
      {"WritesPastOutput", {"red zones", "[WritesPastOutput 'probe'] wrote past the end of output #0 ('y')"}},
      {"LeavesOutputUnwritten", {"outputs fully written", "left elements of output #0 ('y') unwritten: 1 of 6"}},
      {"MutatesInput", {"inputs unmodified", "[MutatesInput 'probe'] modified its input #0 ('x')"}},
      {"NonDeterministic", {"determinism", "two runs on the same inputs: output #0 ('y') differs"}},
      {"DeserializeRestoresWrongState",
       {"Serialize/Deserialize round trip", "the loaded model's output #0 ('y') differs"}},
      {"DeserializeFails", {"Serialize/Deserialize round trip", "Deserialize failed: blob format 2 is not supported"}},
  };
  for (auto& [op, check] : seeded) {
    EXPECT_EQ(r.Verdicts(op, "FAIL"), std::set<std::string>{check.first}) << op << "\n" << r.out;
    EXPECT_TRUE(Contains(r.lines[op][check.first], check.second)) << op;
    EXPECT_EQ(r.Verdicts(op, "PASS").count("prototype"), 1u) << op;
  }
  // The sound op passes everything that applies to it, over both its types.
  std::set<std::string> passed = r.Verdicts("SoundScale", "PASS");
  for (auto& check : kAllChecks)
    if (check != "data-dependent bounds") EXPECT_EQ(passed.count(check), 1u) << check << "\n" << r.out;
  EXPECT_EQ(r.Verdicts("SoundScale", "FAIL").size(), 0u);
  EXPECT_TRUE(Contains(r.lines["SoundScale"]["dtype sweep"], "float32, float64 on [2,3]"));
  EXPECT_TRUE(Contains(r.lines["SoundScale"]["ArgsUpdater rebinding"], "args_updates() grew"));
  EXPECT_TRUE(Contains(r.lines["SoundScale"]["data-dependent bounds"], "SKIP  data-dependent bounds: no output"));
  // What cannot run is skipped with the reason, never failed.
  for (const char* op : {"NeedsAttr", "OnlyRank7", "OnlyRank4", "CompiledNotPortable"})
    EXPECT_EQ(r.Verdicts(op, "FAIL").size(), 0u) << op << "\n" << r.out;
  const std::string rest = "dtype sweep and the checks that run the op";
  EXPECT_TRUE(Contains(r.lines["NeedsAttr"][rest], "SKIP  " + rest + ": needs attribute 'offset' (Float)"));
  EXPECT_TRUE(Contains(r.lines["OnlyRank7"][rest], "SKIP  " + rest + ": InferShape rejects the probe shapes"));
  EXPECT_TRUE(Contains(r.lines["OnlyRank4"]["dtype sweep"], "PASS  dtype sweep: float32 on [1,2,4,4]"));
  EXPECT_TRUE(Contains(r.lines["CompiledNotPortable"]["Serialize/Deserialize round trip"],
                       "SKIP  Serialize/Deserialize round trip: Save refuses the model: [CompiledNotPortable 'probe'] "
                       "cannot be saved"));
  EXPECT_TRUE(Contains(r.out, "12 op types checked: 5 passed, 7 failed (7 failed checks)"));
}

TEST(CheckOp, OneOpAttributesAndErrors) {
  CheckReport needs = CheckOp(Pkg("defects_ops") + " --op NeedsAttr --attr offset=0.5");
  EXPECT_EQ(needs.code, 0) << needs.out;
  EXPECT_EQ(needs.lines.size(), 1u);
  EXPECT_EQ(needs.Verdicts("NeedsAttr", "PASS").count("Serialize/Deserialize round trip"), 1u) << needs.out;
  CheckReport sound = CheckOp(Pkg("defects_ops") + " --op SoundScale --attr scale=3");
  EXPECT_EQ(sound.code, 0) << sound.out;
  Result typo = Sh(kWeft + " check-op " + Pkg("defects_ops") + " --op SoundScal");
  EXPECT_EQ(typo.code, 1);
  EXPECT_TRUE(Contains(typo.out, "--op 'SoundScal': '" + Pkg("defects_ops") +
                                     "' registers no op type of that name; did you mean 'SoundScale'?"));
  Result no_attr = Sh(kWeft + " check-op " + Pkg("defects_ops") + " --op SoundScale --attr offset=1");
  EXPECT_EQ(no_attr.code, 1);
  EXPECT_TRUE(Contains(no_attr.out, "--attr 'offset': no op being checked has an attribute of that name"));
  Result bad_value = Sh(kWeft + " check-op " + Pkg("defects_ops") + " --op NeedsAttr --attr offset=1.5x");
  EXPECT_EQ(bad_value.code, 1);
  EXPECT_TRUE(Contains(bad_value.out, "'1.5x' is not a valid Float"));
  EXPECT_EQ(Sh(kWeft + " check-op /nonexistent").code, 1);
}

// The examples are what op authors copy: they pass every check that applies to them.
TEST(CheckOp, ExamplePackagesPass) {
  for (const char* pkg :
       {"add_custom", "compilable_add_custom", "data_dependent_shape_custom", "args_refresh_add_custom"}) {
    CheckReport r = CheckOp(Pkg(pkg));
    EXPECT_EQ(r.code, 0) << pkg << "\n" << r.out;
    ASSERT_EQ(r.lines.size(), 1u) << r.out;
    const std::string& op = r.lines.begin()->first;
    EXPECT_EQ(r.Verdicts(op, "FAIL").size(), 0u) << r.out;
    EXPECT_EQ(r.lines[op].size(), kAllChecks.size()) << r.out;
    for (const char* check : {"dtype sweep", "InferShape vs Execute", "determinism", "concurrent Execute"})
      EXPECT_EQ(r.Verdicts(op, "PASS").count(check), 1u) << pkg << ": " << check << "\n" << r.out;
  }
  CheckReport compilable = CheckOp(Pkg("compilable_add_custom"));
  EXPECT_EQ(compilable.Verdicts("CompilableAddCustom", "PASS").count("Serialize/Deserialize round trip"), 1u);
  CheckReport bounded = CheckOp(Pkg("data_dependent_shape_custom"));
  EXPECT_TRUE(Contains(bounded.out, "PASS  data-dependent bounds"));
}

// One operator library works as well as a package root.
TEST(CheckOp, TakesALibraryPath) {
  CheckReport r = CheckOp(test::PkgLib("add_custom") + " --op AddCustom");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.Verdicts("AddCustom", "PASS").count("dtype sweep"), 1u) << r.out;
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(Cli, InspectStepsShowsFusionAndLayouts) {
  std::string d = Dir();
  ASSERT_TRUE(internal::WriteNpy(d + "/sw.npy", test::RandomFloat({16, 16, 3, 3}, 1)).ok());
  ASSERT_TRUE(internal::WriteNpy(d + "/sv.npy", test::RandomFloat({16, 16, 3, 3}, 2)).ok());
  std::ofstream(d + "/steps.json") << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [1, 16, 8, 8]}],
    "constants": [{"name": "w", "file": "sw.npy"}, {"name": "v", "file": "sv.npy"}],
    "nodes": [{"name": "c1", "op": "Conv", "inputs": ["x", "w"], "outputs": ["a"], "attrs": {"pads": [1, 1, 1, 1]}},
              {"name": "r1", "op": "Relu", "inputs": ["a"], "outputs": ["b"]},
              {"name": "c2", "op": "Conv", "inputs": ["b", "v"], "outputs": ["y"], "attrs": {"pads": [1, 1, 1, 1]}}],
    "outputs": ["y"]})";
  Result r = Sh(kWeft + " inspect " + d + "/steps.json --steps");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "steps: 2")) << r.out;
  const std::string blk = test::BlockedOrPlain() == FORMAT_NC1HWC0 ? "@NC1HWC0" : "";  // the machine's layout
  EXPECT_TRUE(Contains(r.out, "0 Conv 'c1' +Relu (x:float32[1,16,8,8], w:float32[16,16,3,3]) -> (b:float32[1,16,8,8]" + blk + ")")) << r.out;
  EXPECT_TRUE(Contains(r.out, "1 Conv 'c2' (b:float32[1,16,8,8]" + blk + ", v:float32[16,16,3,3]) -> (y:float32[1,16,8,8])")) << r.out;
}

}  // namespace
}  // namespace weft
