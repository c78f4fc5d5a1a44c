// Plugin discovery and loading: packages, environment path, manifests, every load error.
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <unistd.h>

#include "core/suggest.h"
#include "registry/registry.h"
#include "test_util.h"

namespace weft {
namespace {

using test::Contains;
using test::MakeSession;
using test::Pkg;
using test::PkgLib;

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::optional<OpInfo> FindOp(const std::vector<OpInfo>& ops, const std::string& type) {
  for (auto& o : ops)
    if (o.op_type == type) return o;
  return std::nullopt;
}

TEST(Registry, LoadsAPackageWithProvenanceAndCapabilities) {
  auto s = MakeSession({"test_ops"});
  auto ops = s->ListOps();
  auto sum = FindOp(ops, "SumN");
  ASSERT_TRUE(sum);
  EXPECT_TRUE(Contains(sum->origin, "libtest_ops.so"));
  EXPECT_EQ(sum->capabilities, WEFT_CAP_EAGER_EXECUTE | WEFT_CAP_SHAPE_INFER);
  auto add = FindOp(ops, "Add");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->origin, "built-in");
}

TEST(Registry, LoadsALibraryByPath) {
  auto s = MakeSession();
  ASSERT_TRUE(s->LoadLibrary(PkgLib("ge_port")).ok());
  EXPECT_TRUE(FindOp(s->ListOps(), "GeStyleMul"));
}

TEST(Registry, RegistriesArePerSession) {
  auto a = MakeSession({"test_ops"});
  auto b = MakeSession();
  EXPECT_TRUE(FindOp(a->ListOps(), "SumN"));
  EXPECT_FALSE(FindOp(b->ListOps(), "SumN"));
}

TEST(Registry, PathInsideAPackageIsNotARoot) {
  auto s = MakeSession();
  Status st = s->LoadPackage(Pkg("test_ops") + "/" WEFT_TEST_LIBSUB);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "is not an operator package root"));
  EXPECT_TRUE(Contains(st.message(), "use that directory instead"));
  EXPECT_TRUE(Contains(st.message(), Pkg("test_ops") + "'"));
}

TEST(Registry, LibraryGivenAsAPackagePointsAtItsPackage) {
  auto s = MakeSession();
  Status st = s->LoadPackage(PkgLib("test_ops"));
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "'" + PkgLib("test_ops") + "' is a library, not an operator package root"));
  EXPECT_TRUE(Contains(st.message(), "give the directory that contains op_graph/"));
  EXPECT_TRUE(
      Contains(st.message(), "It lies inside the package '" + Pkg("test_ops") + "': use that directory instead"));
  // A library outside any package.
  auto dir = std::filesystem::temp_directory_path() / ("weft_lone_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(PkgLib("test_ops"), dir / "libtest_ops.so",
                             std::filesystem::copy_options::overwrite_existing);
  st = s->LoadPackage((dir / "libtest_ops.so").string());
  EXPECT_TRUE(Contains(st.message(), "is a library, not an operator package root"));
  EXPECT_TRUE(Contains(st.message(), "A lone library belongs in a package's op_graph/lib/linux/"));
  EXPECT_TRUE(Contains(st.message(), "Session::LoadLibrary loads one by itself")) << st.message();
  std::filesystem::remove_all(dir);
}

TEST(Registry, DirectoryAbovePackagesNamesThem) {
  auto dir = std::filesystem::temp_directory_path() / ("weft_above_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "empty");
  std::filesystem::copy(Pkg("test_ops"), dir / "test_ops", std::filesystem::copy_options::recursive);
  auto s = MakeSession();
  Status st = s->LoadPackage(dir.string());
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "is not an operator package root: it has no op_graph/ directory"));
  EXPECT_TRUE(Contains(st.message(), "It holds the package root(s) '" + (dir / "test_ops").string() +
                                         "': give those instead (one --package each, or colon-separated in "
                                         "WEFT_CUSTOM_OPP_PATH)"))
      << st.message();
  // Many packages below: the first three by name, and the count.
  Status many = s->LoadPackage(WEFT_TEST_PKG_DIR);
  EXPECT_TRUE(Contains(many.message(), "It holds the package root(s) '" + Pkg("abi_future") + "', '" + Pkg("abi_v1") +
                                           "', '" + Pkg("add_custom") + "', ... ("))
      << many.message();
  std::filesystem::remove_all(dir);
}

TEST(Registry, MissingPathIsNamed) {
  auto s = MakeSession();
  Status st = s->LoadPackage("/nonexistent/weft/pkg");
  EXPECT_TRUE(Contains(st.message(), "'/nonexistent/weft/pkg' does not exist"));
}

TEST(Registry, LibraryThatFailsToLoadGivesDlerror) {
  auto s = MakeSession();
  Status st = s->LoadPackage(Pkg("broken"));
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "failed to load operator library"));
  EXPECT_TRUE(Contains(st.message(), "libbroken.so"));
  EXPECT_TRUE(Contains(st.message(), "invalid ELF header"));
}

TEST(Registry, LibraryWithoutEntryPoint) {
  auto s = MakeSession();
  Status st = s->LoadPackage(Pkg("not_a_plugin"));
  EXPECT_TRUE(Contains(st.message(), "is not a Weft operator library: it exports no WeftGetOpLibrary"));
}

TEST(Registry, NewerAbiIsRejected) {
  auto s = MakeSession();
  Status st = s->LoadPackage(Pkg("abi_future"));
  EXPECT_TRUE(Contains(st.message(), "built for Weft plugin ABI 99, newer than this engine's ABI 1"));
  EXPECT_TRUE(Contains(st.message(), "libabi_future.so"));
}

TEST(Registry, NameMismatchNamesAllThree) {
  auto s = MakeSession();
  Status st = s->LoadPackage(Pkg("mismatch_ops"));
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "REG_OP(MyAdd) has no REG_AUTO_MAPPING_OP class named 'MyAdd'"));
  EXPECT_TRUE(Contains(st.message(), "REG_AUTO_MAPPING_OP(MyAddImpl) has no REG_OP(MyAddImpl) prototype"));
  EXPECT_TRUE(Contains(st.message(), "REG_AUTO_MAPPING_OP(mine::Scaled)"));
  EXPECT_TRUE(Contains(st.message(), "write REG_AUTO_MAPPING_OP(Scaled) inside its namespace"));
  EXPECT_TRUE(Contains(st.message(), "the op type used in graphs must be identical"));
}

TEST(Registry, GraphOpTypeMismatchPointsAtTheRegisteredName) {
  auto s = MakeSession({"test_ops"});
  Graph g;
  g.AddInput("x", DT_FLOAT, {2}).AddNode("sumn", "n0", {"x"}, {"y"}).AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "[sumn 'n0'] op type 'sumn' is not registered"));
  EXPECT_TRUE(Contains(m.status().message(), "did you mean 'SumN' (REG_OP and REG_AUTO_MAPPING_OP in"));
  EXPECT_TRUE(Contains(m.status().message(), "must be identical"));
}

TEST(Registry, UnknownOpTypeSuggestsTheNearestRegisteredOnes) {
  auto s = MakeSession({"test_ops"});
  auto compile = [&](const std::string& op) {
    Graph g;
    g.AddInput("x", DT_FLOAT, {2}).AddNode(op, "n0", {"x"}, {"y"}).AddOutput("y");
    return s->Compile(g).status().message();
  };
  // A typo of a built-in: suggested as a built-in, without the plugin naming advice.
  std::string relu = compile("Rleu");
  EXPECT_TRUE(Contains(relu, "[Rleu 'n0'] op type 'Rleu' is not registered in this session; "
                             "did you mean 'Relu' (built-in)"))
      << relu;
  EXPECT_FALSE(Contains(relu, "REG_OP"));
  // A typo of a plugin op: where it comes from, and the naming rule.
  std::string sum = compile("SunN");
  EXPECT_TRUE(Contains(sum, "did you mean 'SumN' (REG_OP and REG_AUTO_MAPPING_OP in " + PkgLib("test_ops") + ")"))
      << sum;
  EXPECT_TRUE(Contains(sum, "must be identical"));
  // Nothing near: where to look instead.
  std::string none = compile("Frobnicate");
  EXPECT_TRUE(Contains(none, "not registered in this session; load the package that provides it")) << none;
  EXPECT_FALSE(Contains(none, "did you mean"));
}

TEST(Suggest, NearestNamesWithinAThirdOfTheLength) {
  using internal::EditDistance;
  using internal::NearestNames;
  EXPECT_EQ(EditDistance("input", "input"), 0u);
  EXPECT_EQ(EditDistance("Input", "iNPUT"), 0u);
  EXPECT_EQ(EditDistance("imput", "input"), 1u);
  EXPECT_EQ(EditDistance("inptu", "input"), 1u);  // a swap is one edit
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(NearestNames("imput", {"mask", "input", "inputs"}), (std::vector<std::string>{"input", "inputs"}));
  EXPECT_EQ(NearestNames("RELU", {"Relu", "Elu", "Selu"}), (std::vector<std::string>{"Relu", "Elu", "Selu"}));
  EXPECT_EQ(NearestNames("RELU", {"Relu", "Elu", "Selu"}, 1), (std::vector<std::string>{"Relu"}));
  EXPECT_TRUE(NearestNames("b", {"a", "c"}).empty());  // one letter off a one-letter name is no hint
  EXPECT_TRUE(NearestNames("x", {"x"}).empty());
  EXPECT_EQ(internal::DidYouMean({"a"}), "did you mean 'a'?");
  EXPECT_EQ(internal::DidYouMean({"a", "b", "c"}), "did you mean 'a', 'b' or 'c'?");
  EXPECT_EQ(internal::DidYouMean({}), "");
}

TEST(Registry, DuplicateAcrossLibrariesNamesBoth) {
  auto s = MakeSession({"test_ops"});
  Status st = s->LoadPackage(Pkg("dup_ops"));
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "op type 'SumN' is registered twice"));
  EXPECT_TRUE(Contains(st.message(), "libtest_ops.so"));
  EXPECT_TRUE(Contains(st.message(), "libdup_ops.so"));
  // What override would do, stated as the loader does it.
  EXPECT_TRUE(Contains(st.message(), "or allow override (SessionOptions::allow_override, --allow-override) to use the "
                                     "one from " + PkgLib("dup_ops") + ": with override allowed, a package replaces a "
                                     "built-in; among package path entries (--package in order, then "
                                     "WEFT_CUSTOM_OPP_PATH) the earlier entry wins; and Session::LoadPackage/"
                                     "LoadLibrary on a created session replaces what is registered."))
      << st.message();
  EXPECT_FALSE(Contains(st.message(), "later one replace the earlier"));
}

TEST(Registry, ReplacingABuiltinNeedsOverride) {
  auto strict = MakeSession();
  Status st = strict->LoadPackage(Pkg("relu_override"));
  EXPECT_TRUE(Contains(st.message(), "op type 'Relu' is registered twice: by built-in and by"));

  auto s = MakeSession({"relu_override"}, /*allow_override=*/true);
  auto relu = FindOp(s->ListOps(), "Relu");
  ASSERT_TRUE(relu);
  EXPECT_TRUE(relu->overridden_builtin);
  Graph g;
  g.AddInput("x", DT_FLOAT, {3}).AddNode("Relu", "r", {"x"}, {"y"}).AddOutput("y");
  auto out = s->Compile(g).value()->Run({HostTensor::FromVector<float>(DT_FLOAT, {3}, {-1.f, 0.5f, 2.f})}).value();
  EXPECT_EQ(out[0].data_as<float>()[0], 1000.f);
  EXPECT_EQ(out[0].data_as<float>()[2], 1002.f);
}

TEST(Registry, EnvironmentPathLoadsPackages) {
  ScopedEnv env("WEFT_CUSTOM_OPP_PATH", Pkg("test_ops") + "::" + Pkg("ge_port"));
  auto s = Session::Create();
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(FindOp(s.value()->ListOps(), "SumN"));
  EXPECT_TRUE(FindOp(s.value()->ListOps(), "GeStyleMul"));
}

TEST(Registry, EnvironmentPathEarlierEntryWins) {
  ScopedEnv env("WEFT_CUSTOM_OPP_PATH", Pkg("dup_ops") + ":" + Pkg("test_ops"));
  SessionOptions o;
  o.allow_override = true;
  auto s = Session::Create(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(Contains(FindOp(s.value()->ListOps(), "SumN")->origin, "libdup_ops.so"));
  // Without override the same path is a duplicate error, and it names the entry that would win.
  auto strict = Session::Create();
  ASSERT_FALSE(strict.ok());
  EXPECT_TRUE(Contains(strict.status().message(), "registered twice"));
  EXPECT_TRUE(Contains(strict.status().message(), "to use the one from " + PkgLib("dup_ops") + ":"))
      << strict.status().message();
}

TEST(Registry, AscendCustomOppPathLoadsPackages) {
  ScopedEnv weft("WEFT_CUSTOM_OPP_PATH", "");
  ScopedEnv ascend("ASCEND_CUSTOM_OPP_PATH", Pkg("ge_port"));
  auto s = Session::Create();
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(FindOp(s.value()->ListOps(), "GeStyleMul"));
}

TEST(Registry, WeftPathComesBeforeTheAscendAlias) {
  ScopedEnv weft("WEFT_CUSTOM_OPP_PATH", Pkg("dup_ops"));
  ScopedEnv ascend("ASCEND_CUSTOM_OPP_PATH", Pkg("test_ops") + ":" + Pkg("dup_ops"));
  EXPECT_EQ(internal::EnvPackagePath(), (std::vector<std::string>{Pkg("dup_ops"), Pkg("test_ops")}));
  SessionOptions o;
  o.allow_override = true;
  auto s = Session::Create(o);  // dup_ops once (both name it), then test_ops: the earlier wins
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(Contains(FindOp(s.value()->ListOps(), "SumN")->origin, "libdup_ops.so"));
  EXPECT_TRUE(FindOp(s.value()->ListOps(), "ScaleAttrs"));
}

TEST(Registry, BadEnvironmentEntryIsNamed) {
  ScopedEnv env("WEFT_CUSTOM_OPP_PATH", Pkg("test_ops") + "/op_graph");
  auto s = Session::Create();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.status().message(), "operator package path entry '" + Pkg("test_ops") + "/op_graph'"));
  EXPECT_TRUE(Contains(s.status().message(), "not an operator package root"));
}

TEST(Registry, FrozenAbiV1PluginWrittenInCLoadsAndRuns) {
  auto s = MakeSession({"abi_v1"});
  Graph g;
  g.AddInput("x", DT_FLOAT, {4}).AddNode("CScale", "c", {"x"}, {"y"}, {{"factor", AttrValue::Float(-3.f)}}).AddOutput("y");
  auto x = test::RandomFloat({4}, 1);
  auto out = s->Compile(g).value()->Run({x}).value();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].data_as<float>()[i], x.data_as<float>()[i] * -3.f);
  // The default attribute declared in C applies when the graph gives none.
  Graph g2;
  g2.AddInput("x", DT_FLOAT, {4}).AddNode("CScale", "c", {"x"}, {"y"}).AddOutput("y");
  auto out2 = s->Compile(g2).value()->Run({x}).value();
  EXPECT_EQ(out2[0].data_as<float>()[1], x.data_as<float>()[1] * 2.f);
}

TEST(Registry, HashIsStableAndDistinguishesFiles) {
  auto a = internal::HashFile(PkgLib("test_ops"));
  auto b = internal::HashFile(PkgLib("test_ops"));
  auto c = internal::HashFile(PkgLib("dup_ops"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a.value(), b.value());
  EXPECT_NE(a.value(), c.value());
  EXPECT_EQ(a.value().rfind("xxh3-64:", 0), 0u);
}

}  // namespace
TEST(Registry, MalformedPluginTablesAreRefusedWithoutCrashing) {
  auto sound = MakeSession({"bad_tables_0"});
  ASSERT_TRUE(sound);
  EXPECT_TRUE(sound->GetOpSchema("BadTable").ok());  // the same library with sound tables loads
  const std::pair<int, const char*> cases[] = {
      {1, "malformed input descriptor #0"},
      {2, "'x' types: 3 entries but a null array"},
      {3, "'x' has an unknown kind 7"},
      {4, "default of attribute 'sizes': 1000000 entries but a null array"},
      {5, "inputs: 2147483648 entries, more than 4096"},
      {6, "attributes: 2 entries but a null array"},
      {7, "prototypes: 3 entries but a null array"},
      {8, "default of attribute 'table': tensor default [2,3] needs 24 bytes; its data holds 8"},
  };
  for (auto& [n, message] : cases) {
    SessionOptions o;
    o.use_env_path = false;
    auto s = Session::Create(o).value();
    Status st = s->LoadPackage(Pkg("bad_tables_" + std::to_string(n)));
    ASSERT_FALSE(st.ok()) << n;
    EXPECT_TRUE(Contains(st.message(), message)) << n << ": " << st.message();
    EXPECT_TRUE(Contains(st.message(), "libbad_tables_" + std::to_string(n) + ".so")) << st.message();
  }
}

}  // namespace weft
