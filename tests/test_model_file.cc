// Compile once, ship, run: runtime compilation and the kernel cache, model files (save, load,
// plugin identity, embedded plugins, corruption), ArgsUpdater rebinding, data-dependent shapes.
// Long because these tests share the private kernel-cache environment set up below.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "rtc/kernel_cache.h"
#include "test_util.h"

namespace weft {
namespace {

using test::Contains;
using test::MakeSession;
using test::PkgLib;
using test::RandomFloat;

std::string TempDir(const std::string& tag) {
  auto d = std::filesystem::temp_directory_path() / ("weft_mf_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

// Every test in this file compiles kernels into a private cache directory.
class ModelFileEnv : public ::testing::Environment {
 public:
  void SetUp() override { setenv("WEFT_CACHE_DIR", (TempDir("cache")).c_str(), 1); }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(TempDir("cache"), ec);
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new ModelFileEnv);

// Counters exported by the rtc_ops test package.
int PluginCounter(const char* name) {
  void* h = dlopen(PkgLib("rtc_ops").c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!h) return -1;
  auto f = reinterpret_cast<int (*)()>(dlsym(h, name));
  int v = f ? f() : -1;
  dlclose(h);
  return v;
}

Graph AddGraph(int64_t rows, int64_t cols, const char* op = "CompilableAddCustom") {
  Graph g("add");
  g.AddInput("x", DT_FLOAT, {rows, cols}).AddInput("y", DT_FLOAT, {rows, cols});
  g.AddNode(op, "add0", {"x", "y"}, {"s"}).AddNode(op, "add1", {"s", "y"}, {"z"}).AddOutput("z");
  return g;
}

void ExpectAddResult(const HostTensor& x, const HostTensor& y, const HostTensor& z) {
  ASSERT_EQ(z.numel(), x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    float ref = (x.data_as<float>()[i] + y.data_as<float>()[i]) + y.data_as<float>()[i];
    ASSERT_EQ(z.data_as<float>()[i], ref) << "element " << i;
  }
}

TEST(Rtc, CompiledKernelRunsAndASecondCompileIsACacheHit) {
  auto s = MakeSession({"compilable_add_custom"});
  KernelCacheStats before = GetKernelCacheStats();
  auto m1 = s->Compile(AddGraph(3, 77));
  ASSERT_TRUE(m1.ok()) << m1.status().message();
  KernelCacheStats mid = GetKernelCacheStats();
  EXPECT_EQ(mid.compiles, before.compiles + 1);  // both nodes share one shape: one kernel
  auto x = RandomFloat({3, 77}, 1), y = RandomFloat({3, 77}, 2);
  auto out = m1.value()->Run({x, y});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectAddResult(x, y, out.value()[0]);
  auto m2 = s->Compile(AddGraph(3, 77));
  ASSERT_TRUE(m2.ok());
  KernelCacheStats after = GetKernelCacheStats();
  EXPECT_EQ(after.compiles, mid.compiles);
  EXPECT_GE(after.memory_hits, mid.memory_hits + 2);
  // A kernel compiled by another process (here: forgotten by this one) comes from the disk.
  internal::RtcDropMemoryCache();
  auto m3 = s->Compile(AddGraph(3, 77));
  ASSERT_TRUE(m3.ok());
  KernelCacheStats disk = GetKernelCacheStats();
  EXPECT_EQ(disk.compiles, after.compiles);
  EXPECT_GE(disk.disk_hits, after.disk_hits + 1);
  out = m3.value()->Run({x, y});
  ASSERT_TRUE(out.ok());
  ExpectAddResult(x, y, out.value()[0]);
}

TEST(Rtc, DifferentShapesGetDifferentKernels) {
  auto s = MakeSession({"compilable_add_custom"});
  KernelCacheStats before = GetKernelCacheStats();
  ASSERT_TRUE(s->Compile(AddGraph(2, 31)).ok());
  ASSERT_TRUE(s->Compile(AddGraph(2, 32)).ok());
  EXPECT_EQ(GetKernelCacheStats().compiles, before.compiles + 2);
}

TEST(Rtc, ConcurrentCompilesOfOneKeyCompileOnce) {
  auto s = MakeSession({"compilable_add_custom"});
  KernelCacheStats before = GetKernelCacheStats();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto sess = MakeSession({"compilable_add_custom"});
      auto m = sess->Compile(AddGraph(5, 123));
      ok[t] = m.ok();
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << t;
  EXPECT_EQ(GetKernelCacheStats().compiles, before.compiles + 1);
}

TEST(Rtc, CompilerDiagnosticsNameTheNode) {
  auto s = MakeSession({"rtc_ops"});
  Graph g("broken");
  g.AddInput("x", DT_FLOAT, {4}).AddNode("RtcBroken", "bad_node", {"x"}, {"y"}).AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "[RtcBroken 'bad_node'] Compile failed"));
  EXPECT_TRUE(Contains(m.status().message(), "undeclared_identifier_xyz"));  // the compiler's own words
  EXPECT_TRUE(Contains(m.status().message(), "command:"));
}

TEST(Rtc, MissingCompilerIsAClearError) {
  const char* old = std::getenv("WEFT_CC");
  setenv("WEFT_CC", "/nonexistent/weft-cc", 1);
  auto s = MakeSession({"rtc_ops"});
  Graph g("scale");
  g.AddInput("x", DT_FLOAT, {4}).AddNode("RtcScale", "sc", {"x"}, {"y"}, {{"factor", AttrValue::Float(3.25f)}}).AddOutput("y");
  auto m = s->Compile(g);
  if (old) setenv("WEFT_CC", old, 1);
  else unsetenv("WEFT_CC");
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "[RtcScale 'sc']"));
  EXPECT_TRUE(Contains(m.status().message(), "WEFT_CC"));
}

// ---- model files ----------------------------------------------------------------------------

TEST(ModelFile, LoadingRestoresKernelsWithoutCallingCompile) {
  std::string dir = TempDir("load");
  Graph g("scale");
  g.AddInput("x", DT_FLOAT, {64}).AddNode("RtcScale", "sc", {"x"}, {"y"}, {{"factor", AttrValue::Float(-1.5f)}}).AddOutput("y");
  auto keep = MakeSession({"rtc_ops"});  // keeps the library (and its counters) loaded
  {
    auto s = MakeSession({"rtc_ops"});
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ASSERT_TRUE(m.value()->Save(dir + "/scale.weft").ok());
  }
  int compiles = PluginCounter("weft_test_rtc_compile_calls");
  int deserializes = PluginCounter("weft_test_rtc_deserialize_calls");
  ASSERT_GE(compiles, 1);
  auto s = MakeSession({"rtc_ops"});
  auto untrusted = s->LoadModel(dir + "/scale.weft");  // the kernel is native code from the file
  ASSERT_FALSE(untrusted.ok());
  EXPECT_TRUE(Contains(untrusted.status().message(), "runtime-compiled kernel(s) for node(s) 'sc' (RtcScale)"))
      << untrusted.status().message();
  LoadOptions trust;
  trust.trust_embedded_code = true;
  auto loaded = s->LoadModel(dir + "/scale.weft", trust);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(PluginCounter("weft_test_rtc_compile_calls"), compiles);  // never Compile
  EXPECT_EQ(PluginCounter("weft_test_rtc_deserialize_calls"), deserializes + 1);
  auto x = RandomFloat({64}, 9);
  auto out = loaded.value()->Run({x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out.value()[0].data_as<float>()[i], x.data_as<float>()[i] * -1.5f);
}

// A CNN-like graph of built-ins (Conv, fused Relu, MaxPool, Flatten, Gemm) with weights.
Graph SmallCnn() {
  Graph g("cnn");
  g.AddInput("x", DT_FLOAT, {1, 3, 16, 16});
  g.AddConstant("w", RandomFloat({8, 3, 3, 3}, 11, -0.5f, 0.5f)).AddConstant("b", RandomFloat({8}, 12));
  g.AddConstant("fw", RandomFloat({10, 8 * 8 * 8}, 13, -0.1f, 0.1f)).AddConstant("fb", RandomFloat({10}, 14));
  g.AddNode("Conv", "conv", {"x", "w", "b"}, {"c"}, {{"pads", AttrValue::ListInt({1, 1, 1, 1})}});
  g.AddNode("Relu", "relu", {"c"}, {"r"});
  g.AddNode("MaxPool", "pool", {"r"}, {"p"}, {{"kernel_shape", AttrValue::ListInt({2, 2})}, {"strides", AttrValue::ListInt({2, 2})}});
  g.AddNode("Flatten", "flat", {"p"}, {"f"});
  g.AddNode("Gemm", "fc", {"f", "fw", "fb"}, {"y"}, {{"transB", AttrValue::Int(1)}});
  g.AddOutput("y");
  return g;
}

TEST(ModelFile, BuiltinModelRoundTripsExactly) {
  std::string dir = TempDir("cnn");
  auto s = MakeSession();
  auto m = s->Compile(SmallCnn());
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m.value()->Save(dir + "/cnn.weft").ok());
  auto loaded = s->LoadModel(dir + "/cnn.weft");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded.value()->num_steps(), m.value()->num_steps());
  EXPECT_EQ(loaded.value()->memory().arena_bytes, m.value()->memory().arena_bytes);
  auto x = RandomFloat({1, 3, 16, 16}, 15);
  auto a = m.value()->Run({x});
  auto b = loaded.value()->Run({x});
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().message();
  ASSERT_EQ(a.value()[0].bytes(), b.value()[0].bytes());
  EXPECT_EQ(std::memcmp(a.value()[0].data(), b.value()[0].data(), a.value()[0].bytes()), 0);
  auto info = InspectModelFile(dir + "/cnn.weft");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info.value().num_constants, 4u);
  EXPECT_EQ(info.value().inputs.size(), 1u);
  // Loading from memory gives the same.
  std::ifstream f(dir + "/cnn.weft", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto mem = s->LoadModelFromMemory(bytes.data(), bytes.size());
  ASSERT_TRUE(mem.ok()) << mem.status().message();
  auto c = mem.value()->Run({x});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(std::memcmp(a.value()[0].data(), c.value()[0].data(), a.value()[0].bytes()), 0);
}

TEST(ModelFile, MissingPluginNamesThePackage) {
  std::string dir = TempDir("missing");
  {
    auto s = MakeSession({"compilable_add_custom"});
    auto m = s->Compile(AddGraph(2, 8));
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(m.value()->Save(dir + "/add.weft").ok());
  }
  auto s = MakeSession();
  auto loaded = s->LoadModel(dir + "/add.weft");
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(Contains(loaded.status().message(), "CompilableAddCustom"));
  EXPECT_TRUE(Contains(loaded.status().message(), "package 'compilable_add_custom'"));
  EXPECT_TRUE(Contains(loaded.status().message(), "--embed-plugins"));
}

TEST(ModelFile, MismatchedPluginIsRejected) {
  // Saved with the built-in Relu, loaded where a package replaces Relu.
  std::string dir = TempDir("mismatch");
  Graph g("relu");
  g.AddInput("x", DT_FLOAT, {4}).AddNode("Relu", "r", {"x"}, {"y"}).AddOutput("y");
  auto s = MakeSession();
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m.value()->Save(dir + "/relu.weft").ok());
  auto other = MakeSession({"relu_override"}, /*allow_override=*/true);
  auto loaded = other->LoadModel(dir + "/relu.weft");
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(Contains(loaded.status().message(), "op 'Relu' version 1 (built-in)"));
  EXPECT_TRUE(Contains(loaded.status().message(), "relu_override"));
}

// Compiles the compilable_add_custom graph and saves it with the plugin library embedded.
void SaveEmbeddedAddModel(const std::string& path) {
  auto s = MakeSession({"compilable_add_custom"});
  auto m = s->Compile(AddGraph(4, 16));
  ASSERT_TRUE(m.ok()) << m.status().message();
  SaveOptions o;
  o.embed_plugins = true;
  ASSERT_TRUE(m.value()->Save(path, o).ok());
}

TEST(ModelFile, EmbeddedPluginsLoadFromMemory) {
  std::string dir = TempDir("embed");
  SaveEmbeddedAddModel(dir + "/add.weft");
  auto info = InspectModelFile(dir + "/add.weft");
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info.value().plugins.size(), 1u);
  EXPECT_TRUE(info.value().plugins[0].embedded);
  EXPECT_EQ(info.value().plugins[0].package, "compilable_add_custom");
  auto s = MakeSession();  // no package at all
  auto untrusted = s->LoadModel(dir + "/add.weft");  // native code from a file needs a trust decision
  ASSERT_FALSE(untrusted.ok());
  EXPECT_TRUE(Contains(untrusted.status().message(), "runs only when trusted")) << untrusted.status().message();
  EXPECT_TRUE(Contains(untrusted.status().message(), "compilable_add_custom")) << untrusted.status().message();
  LoadOptions trust;
  trust.trust_embedded_code = true;
  auto loaded = s->LoadModel(dir + "/add.weft", trust);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto x = RandomFloat({4, 16}, 21), y = RandomFloat({4, 16}, 22);
  auto out = loaded.value()->Run({x, y});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ExpectAddResult(x, y, out.value()[0]);
  EXPECT_TRUE(s->ListOps().size() > 0);
  for (auto& op : s->ListOps()) EXPECT_NE(op.op_type, "CompilableAddCustom");  // the session is untouched
}

TEST(ModelFile, ATamperedEmbeddedLibraryIsRefusedBeforeItIsLoaded) {
  std::string dir = TempDir("tamper");
  SaveEmbeddedAddModel(dir + "/add.weft");
  // Find the embedded library's bytes in the file (its ELF header) and change one byte past it,
  // as an attacker swapping the code would; the file checksum is rewritten by skipping it.
  std::ifstream in(dir + "/add.weft", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t elf = bytes.find("\x7f" "ELF");
  ASSERT_NE(elf, std::string::npos);
  bytes[elf + 200] = static_cast<char>(bytes[elf + 200] ^ 0x5a);
  std::ofstream(dir + "/tampered.weft", std::ios::binary) << bytes;
  LoadOptions o;
  o.trust_embedded_code = true;
  o.verify_checksum = false;  // an attacker rewrites the checksum too: the library's own hash still holds
  auto s = MakeSession();
  auto loaded = s->LoadModel(dir + "/tampered.weft", o);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(Contains(loaded.status().message(), "('libcompilable_add_custom.so') does not match its recorded hash"))
      << loaded.status().message();
}

TEST(ModelFile, CompilableOpsWithoutPortableCannotBeSaved) {
  auto s = MakeSession({"args_refresh_add_custom"});
  Graph g("ar");
  g.AddInput("x", DT_FLOAT, {8}).AddInput("y", DT_FLOAT, {8});
  g.AddNode("ArgsRefreshAddCustom", "add", {"x", "y"}, {"z"}).AddOutput("z");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Status st = m.value()->Save(TempDir("np") + "/x.weft");
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "[ArgsRefreshAddCustom 'add'] cannot be saved"));
  EXPECT_TRUE(Contains(st.message(), "PortableOp"));
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

TEST(ModelFile, CorruptAndTruncatedFilesAreErrors) {
  std::string dir = TempDir("corrupt");
  auto s = MakeSession({"compilable_add_custom"});
  auto m = s->Compile(SmallCnn());
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m.value()->Save(dir + "/cnn.weft").ok());
  std::string good = ReadAll(dir + "/cnn.weft");
  // Truncations.
  for (size_t n : {size_t(0), size_t(10), size_t(63), size_t(64), size_t(100), good.size() / 2, good.size() - 1}) {
    auto r = s->LoadModelFromMemory(good.data(), n);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_TRUE(Contains(r.status().message(), "model file")) << r.status().message();
  }
  std::ofstream(dir + "/trunc.weft", std::ios::binary) << good.substr(0, good.size() - 7);
  auto t = s->LoadModel(dir + "/trunc.weft");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(t.status().message(), "truncated"));
  // Flipped bytes: the checksum catches every one.
  std::mt19937 rng(3);
  for (int k = 0; k < 50; ++k) {
    std::string bad = good;
    size_t pos = rng() % bad.size();
    bad[pos] = static_cast<char>(bad[pos] ^ (1 + rng() % 255));
    auto r = s->LoadModelFromMemory(bad.data(), bad.size());
    EXPECT_FALSE(r.ok()) << "flip at " << pos;
  }
  // With the checksum off the structure checks still hold: never a crash, only errors (or a
  // model that runs, when the flip hit weights or padding).
  LoadOptions unchecked;
  unchecked.verify_checksum = false;
  auto x = RandomFloat({1, 3, 16, 16}, 4);
  int errors = 0;
  for (int k = 0; k < 300; ++k) {
    std::string bad = good;
    size_t meta_end = std::min(bad.size(), size_t(64) + 4096);
    size_t pos = k < 200 ? 64 + rng() % (meta_end - 64) : rng() % bad.size();
    bad[pos] = static_cast<char>(bad[pos] ^ (1 + rng() % 255));
    auto r = s->LoadModelFromMemory(bad.data(), bad.size(), unchecked);
    if (!r.ok()) {
      ++errors;
      EXPECT_TRUE(Contains(r.status().message(), "model file")) << r.status().message();
      continue;
    }
    (void)r.value()->Run({x});
  }
  EXPECT_GT(errors, 100);
  // Not a model file at all; an empty file.
  std::ofstream(dir + "/text.weft") << "hello, this is not a model";
  EXPECT_TRUE(Contains(s->LoadModel(dir + "/text.weft").status().message(), "not a Weft model file"));
  std::ofstream(dir + "/empty.weft");
  EXPECT_TRUE(Contains(s->LoadModel(dir + "/empty.weft").status().message(), "empty"));
  EXPECT_TRUE(Contains(s->LoadModel(dir + "/nope.weft").status().message(), "cannot open"));
}

TEST(ModelFile, NewerFormatIsRejectedWithAHint) {
  std::string dir = TempDir("newer");
  auto s = MakeSession();
  auto m = s->Compile(SmallCnn());
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m.value()->Save(dir + "/cnn.weft").ok());
  std::string bytes = ReadAll(dir + "/cnn.weft");
  bytes[8] = 9;  // format version
  LoadOptions unchecked;
  unchecked.verify_checksum = false;
  auto r = s->LoadModelFromMemory(bytes.data(), bytes.size(), unchecked);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "upgrade Weft"));
}

// ---- ArgsUpdater -------------------------------------------------------------------------------

TEST(ArgsUpdater, NewBuffersCallUpdateHostArgsOnly) {
  auto s = MakeSession({"args_refresh_add_custom"});
  Graph g("ar");
  g.AddInput("x", DT_FLOAT, {1000}).AddInput("y", DT_FLOAT, {1000});
  g.AddNode("ArgsRefreshAddCustom", "add", {"x", "y"}, {"z"}, {{"tile", AttrValue::Int(128)}}).AddOutput("z");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto ctx = m.value()->CreateRunContext();
  HostTensor xs[2] = {RandomFloat({1000}, 1), RandomFloat({1000}, 2)};
  HostTensor ys[2] = {RandomFloat({1000}, 3), RandomFloat({1000}, 4)};
  HostTensor zs[2] = {HostTensor(DT_FLOAT, {1000}), HostTensor(DT_FLOAT, {1000})};
  auto run = [&](int k) {
    TensorRef in[2] = {TensorRef::Of(xs[k]), TensorRef::Of(ys[k])};
    TensorRef out[1] = {TensorRef::Of(zs[k])};
    return m.value()->Run(*ctx, in, 2, out, 1);
  };
  ASSERT_TRUE(run(0).ok());
  EXPECT_EQ(m.value()->args_updates(), 1u);
  ASSERT_TRUE(run(0).ok());
  EXPECT_EQ(m.value()->args_updates(), 1u);  // same buffers: nothing to update
  for (int r = 0; r < 6; ++r) ASSERT_TRUE(run(r & 1).ok());
  EXPECT_EQ(m.value()->args_updates(), 6u);  // 0, 1, 0, 1, 0, 1: five switches
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < 1000; ++i)
      ASSERT_EQ(zs[k].data_as<float>()[i], xs[k].data_as<float>()[i] + ys[k].data_as<float>()[i]) << k << " " << i;
  // The convenience path works too (its own arena buffers).
  auto out = m.value()->Run({xs[1], ys[0]});
  ASSERT_TRUE(out.ok()) << out.status().message();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(out.value()[0].data_as<float>()[i], xs[1].data_as<float>()[i] + ys[0].data_as<float>()[i]);
}

// ---- data-dependent shapes ----------------------------------------------------------------------

TEST(DataDependent, ShapeBufferReportsTheRealShapeAndDownstreamFollows) {
  auto s = MakeSession({"data_dependent_shape_custom"});
  Graph g("where");
  g.AddInput("x", DT_FLOAT, {7, 9});
  g.AddNode("WhereIndicesCustom", "where", {"x"}, {"idx"});
  g.AddNode("Shape", "shape", {"idx"}, {"n"});
  g.AddNode("Cast", "cast", {"idx"}, {"f"}, {{"to", AttrValue::Type(DT_FLOAT)}});
  g.AddNode("ReduceSum", "sum", {"f"}, {"total"}, {{"keepdims", AttrValue::Int(0)}});
  g.AddOutput("idx").AddOutput("n").AddOutput("total");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  for (uint32_t seed : {1u, 2u, 3u}) {
    HostTensor x = RandomFloat({7, 9}, seed);
    std::mt19937 rng(seed);
    int zeros_every = 1 + seed;
    for (int64_t i = 0; i < 63; ++i)
      if (rng() % zeros_every == 0) x.data_as<float>()[i] = 0;
    if (seed == 3) std::memset(x.data(), 0, x.bytes());  // all zero: an empty result
    std::vector<int64_t> ref;
    double ref_sum = 0;
    for (int64_t i = 0; i < 63; ++i)
      if (x.data_as<float>()[i] != 0) {
        ref.push_back(i / 9);
        ref.push_back(i % 9);
        ref_sum += i / 9 + i % 9;
      }
    auto out = m.value()->Run({x});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const HostTensor& idx = out.value()[0];
    ASSERT_EQ(idx.shape(), Shape({static_cast<int64_t>(ref.size() / 2), 2}));
    for (size_t k = 0; k < ref.size(); ++k) ASSERT_EQ(idx.data_as<int64_t>()[k], ref[k]);
    EXPECT_EQ(out.value()[1].data_as<int64_t>()[0], static_cast<int64_t>(ref.size() / 2));
    EXPECT_EQ(out.value()[2].data_as<float>()[0], static_cast<float>(ref_sum));
  }
}

TEST(DataDependent, ReportsOutsideTheBoundAreErrorsNamingTheNode) {
  auto s = MakeSession({"rtc_ops"});
  const char* expect[] = {"outside its bound", "outside its bound", "did not report its real shape"};
  for (int mode = 0; mode < 3; ++mode) {
    Graph g("bad");
    g.AddInput("x", DT_FLOAT, {5}).AddNode("BoundedPrefix", "prefix", {"x"}, {"y"}, {{"mode", AttrValue::Int(mode)}}).AddOutput("y");
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    auto out = m.value()->Run({RandomFloat({5}, 1)});
    ASSERT_FALSE(out.ok()) << mode;
    EXPECT_TRUE(Contains(out.status().message(), "[BoundedPrefix 'prefix']")) << mode;
    EXPECT_TRUE(Contains(out.status().message(), expect[mode])) << mode;
  }
  Graph g("good");
  g.AddInput("x", DT_FLOAT, {5}).AddNode("BoundedPrefix", "prefix", {"x"}, {"y"}, {{"keep", AttrValue::Int(3)}}).AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok());
  HostTensor x = RandomFloat({5}, 2);
  auto out = m.value()->Run({x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out.value()[0].shape(), Shape({3}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out.value()[0].data_as<float>()[i], x.data_as<float>()[i]);
}

TEST(DataDependent, BuiltinNonZeroMatchesAReference) {
  auto s = MakeSession();
  Graph g("nz");
  g.AddInput("x", DT_INT32, {3, 4, 5}).AddNode("NonZero", "nz", {"x"}, {"y"}).AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m.value()->has_dynamic_shapes());
  HostTensor x(DT_INT32, {3, 4, 5});
  std::mt19937 rng(8);
  for (int i = 0; i < 60; ++i) x.data_as<int32_t>()[i] = (rng() % 3 == 0) ? static_cast<int32_t>(rng() % 7) - 3 : 0;
  std::vector<int64_t> coords[3];
  for (int i = 0; i < 60; ++i)
    if (x.data_as<int32_t>()[i]) {
      coords[0].push_back(i / 20);
      coords[1].push_back(i / 5 % 4);
      coords[2].push_back(i % 5);
    }
  auto out = m.value()->Run({x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  int64_t n = static_cast<int64_t>(coords[0].size());
  ASSERT_EQ(out.value()[0].shape(), Shape({3, n}));
  for (int d = 0; d < 3; ++d)
    for (int64_t k = 0; k < n; ++k) ASSERT_EQ(out.value()[0].data_as<int64_t>()[d * n + k], coords[d][k]);
}

TEST(DataDependent, ModelFileKeepsBoundsAndRunsFromAFile) {
  std::string dir = TempDir("dds");
  auto s = MakeSession({"data_dependent_shape_custom"});
  Graph g("where");
  g.AddInput("x", DT_FLOAT, {4, 4}).AddNode("WhereIndicesCustom", "where", {"x"}, {"idx"}).AddOutput("idx");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m.value()->Save(dir + "/w.weft").ok());
  auto loaded = s->LoadModel(dir + "/w.weft");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  HostTensor x = RandomFloat({4, 4}, 5);
  x.data_as<float>()[3] = 0;
  auto out = loaded.value()->Run({x});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out.value()[0].shape(), Shape({15, 2}));
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(DynamicInputs, PlansAreCachedPerInputShapeSignature) {
  auto s = MakeSession({"data_dependent_shape_custom"});
  Graph g("dyn");
  g.AddInput("x", DT_FLOAT, {-1, 4});
  g.AddConstant("w", RandomFloat({4, 3}, 7));
  g.AddNode("MatMul", "mm", {"x", "w"}, {"h"}).AddNode("Relu", "relu", {"h"}, {"y"}).AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m.value()->has_dynamic_shapes());
  EXPECT_EQ(m.value()->cached_plans(), 0u);
  auto ctx = m.value()->CreateRunContext();
  for (int64_t rows : {3, 3, 5, 3, 5, 1}) {
    HostTensor x = RandomFloat({rows, 4}, static_cast<uint32_t>(rows));
    HostTensor y(DT_FLOAT, {rows, 3});
    TensorRef in[1] = {TensorRef::Of(x)};
    TensorRef out[1] = {TensorRef::Of(y)};
    ASSERT_TRUE(m.value()->Run(*ctx, in, 1, out, 1).ok());
    const float* w = g.constants()[0].second.data_as<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int c = 0; c < 3; ++c) {
        double acc = 0;
        for (int k = 0; k < 4; ++k) acc += double(x.data_as<float>()[r * 4 + k]) * w[k * 3 + c];
        ASSERT_NEAR(y.data_as<float>()[r * 3 + c], std::max(acc, 0.0), 1e-5);
      }
  }
  EXPECT_EQ(m.value()->cached_plans(), 3u);  // [3,4], [5,4], [1,4]
  // A shape the declaration does not admit is still an error naming the input.
  HostTensor bad = RandomFloat({2, 5}, 1);
  auto r = m.value()->Run({bad});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "input 'x'"));
  // Graphs that stay dynamic after specializing (data-dependent) run with per-run inference.
  Graph w("dd");
  w.AddInput("x", DT_FLOAT, {-1}).AddNode("WhereIndicesCustom", "where", {"x"}, {"idx"}).AddOutput("idx");
  auto m2 = s->Compile(w);
  ASSERT_TRUE(m2.ok()) << m2.status().message();
  auto o = m2.value()->Run({HostTensor::FromVector<float>(DT_FLOAT, {4}, {0.f, 1.f, 0.f, 2.f})});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o.value()[0].shape(), Shape({2, 1}));
  EXPECT_EQ(m2.value()->cached_plans(), 0u);
}

}  // namespace
}  // namespace weft

#include <nlohmann/json.hpp>
#include "model/model_format.h"

namespace weft {
namespace {

// Rewrites a model file's metadata with `edit`, keeping its data section byte for byte (what an
// attacker or a stale writer could produce; the checksum is recomputed, so only the loader's own
// checks stand in the way).
void RewriteMetadata(const std::string& in, const std::string& out, const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream f(in, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  internal::ModelHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  auto meta = nlohmann::json::parse(bytes.substr(h.meta_offset, h.meta_bytes));
  edit(meta);
  internal::DataSection data;
  data.Add(bytes.data() + h.data_offset, h.data_bytes);
  auto file = internal::AssembleModelFile(meta.dump(), data);
  std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
}

nlohmann::json& NodeNamed(nlohmann::json& meta, const std::string& name) {
  for (auto& n : meta["nodes"])
    if (n["name"] == name) return n;
  throw std::runtime_error("no node " + name);
}

// Conv -> Relu -> MaxPool -> Conv -> Exp: a fused activation and two blocked values.
Graph FusedCnn() {
  std::map<std::string, AttrValue> pads{{"pads", AttrValue::ListInt({1, 1, 1, 1})}};
  Graph g("fused");
  g.AddInput("x", DT_FLOAT, {1, 16, 8, 8});
  g.AddConstant("wa", RandomFloat({16, 16, 3, 3}, 80, -0.2f, 0.2f)).AddConstant("wb", RandomFloat({16, 16, 3, 3}, 81, -0.2f, 0.2f));
  g.AddNode("Conv", "a", {"x", "wa"}, {"a0"}, pads).AddNode("Relu", "ra", {"a0"}, {"a1"});
  g.AddNode("MaxPool", "pool", {"a1"}, {"p"}, {{"kernel_shape", AttrValue::ListInt({2, 2})}, {"strides", AttrValue::ListInt({2, 2})}});
  g.AddNode("Conv", "b", {"p", "wb"}, {"b0"}, pads).AddNode("Exp", "e", {"b0"}, {"y"}).AddOutput("y");
  return g;
}

TEST(ModelFile, FusionAndLayoutsRoundTripAndAreCheckedAgainstTheOps) {
  std::string dir = TempDir("fused");
  auto s = MakeSession();
  auto m = s->Compile(FusedCnn());
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m.value()->Save(dir + "/f.weft").ok());
  auto loaded = s->LoadModel(dir + "/f.weft");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto a = m.value()->DescribeSteps(), b = loaded.value()->DescribeSteps();
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), a.size());
  EXPECT_EQ(b[0].fused_activation, "Relu");
  EXPECT_EQ(b[0].outputs[0].format, test::BlockedOrPlain());
  EXPECT_EQ(b[1].outputs[0].format, test::BlockedOrPlain());
  EXPECT_EQ(b[2].outputs[0].format, FORMAT_ND);  // read by Exp, which declares no blocked layout
  auto x = RandomFloat({1, 16, 8, 8}, 82);
  auto ya = m.value()->Run({x}), yb = loaded.value()->Run({x});
  ASSERT_TRUE(ya.ok() && yb.ok());
  EXPECT_EQ(std::memcmp(ya.value()[0].data(), yb.value()[0].data(), ya.value()[0].bytes()), 0);

  auto expect_refused = [&](const std::string& tag, const std::function<void(nlohmann::json&)>& edit, const std::string& message) {
    std::string path = dir + "/" + tag + ".weft";
    RewriteMetadata(dir + "/f.weft", path, edit);
    auto r = s->LoadModel(path);
    ASSERT_FALSE(r.ok()) << tag;
    EXPECT_TRUE(Contains(r.status().message(), message)) << tag << ": " << r.status().message();
  };
  // An activation fused into an op that does not declare it can apply one (MaxPool).
  expect_refused("act_on_pool", [](nlohmann::json& j) { NodeNamed(j, "pool")["epilogue"] = {"Relu", 0, 0}; },
                 "[MaxPool 'pool'] the model file fuses activation Relu into this node, which the op (from built-in) does not declare");
  expect_refused("unknown_act", [](nlohmann::json& j) { NodeNamed(j, "a")["epilogue"] = {"Mish", 0, 0}; },
                 "epilogue names an unknown activation 'Mish'");
  // An attribute the op does not declare (what a file from another build of the op carries).
  expect_refused("stale_attr", [](nlohmann::json& j) {
    auto& attrs = NodeNamed(j, "a")["attrs"];
    auto extra = attrs[0];
    extra[0] = "fused_activation";
    attrs.push_back(extra);
  }, "[Conv 'a'] the model file sets attribute 'fused_activation', which the op (from built-in) does not declare");
  // A blocked value read by an op that cannot read it (Exp), and a graph output made blocked.
  auto set_format = [](const std::string& value, int format) {
    return [value, format](nlohmann::json& j) {
      for (auto& v : j["values"])
        if (v["name"] == value) {
          v["format"] = format;
          v["bytes"] = v["bytes"].get<int64_t>() * 2;
        }
    };
  };
  expect_refused("blocked_into_exp", set_format("b0", 3), "its reader [Exp 'e'] does not declare reading it in that format");
  expect_refused("blocked_output", set_format("y", 3), "'y' in blocked format 3, but it is a graph input, output or constant");
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// A rebuilt package: the same ops and versions in a library whose bytes (hash) differ.
std::string RebuiltPackage(const std::string& name, const std::string& dir) {
  std::string root = dir + "/" + name;
  std::filesystem::remove_all(root);
  std::filesystem::copy(test::Pkg(name), root, std::filesystem::copy_options::recursive);
  std::string lib = root + "/" WEFT_TEST_LIBSUB "/lib" + name + ".so";
  std::ofstream(lib, std::ios::binary | std::ios::app) << "rebuilt";  // trailing bytes: same code, new hash
  return root;
}

TEST(ModelFile, ARebuiltPluginLoadsUnlessTheFilePinsTheBuild) {
  std::string dir = TempDir("rebuilt");
  auto s = MakeSession({"compilable_add_custom"});
  auto m = s->Compile(AddGraph(4, 16));
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m.value()->Save(dir + "/loose.weft").ok());
  SaveOptions pin;
  pin.pin_plugin_hashes = true;
  ASSERT_TRUE(m.value()->Save(dir + "/pinned.weft", pin).ok());

  SessionOptions o;
  o.use_env_path = false;
  o.package_paths = {RebuiltPackage("compilable_add_custom", dir)};
  auto rebuilt = Session::Create(o).value();
  auto x = RandomFloat({4, 16}, 90), y = RandomFloat({4, 16}, 91);
  LoadOptions trusted;  // the op compiles kernels at graph compile time; the files carry them
  trusted.trust_embedded_code = true;
  auto loose = rebuilt->LoadModel(dir + "/loose.weft", trusted);
  ASSERT_TRUE(loose.ok()) << loose.status().message();
  auto z = loose.value()->Run({x, y});
  ASSERT_TRUE(z.ok()) << z.status().message();
  ExpectAddResult(x, y, z.value()[0]);
  auto pinned = rebuilt->LoadModel(dir + "/pinned.weft", trusted);
  ASSERT_FALSE(pinned.ok());
  EXPECT_TRUE(Contains(pinned.status().message(), "needs the pinned build of op 'CompilableAddCustom' version 1"))
      << pinned.status().message();
  EXPECT_TRUE(Contains(pinned.status().message(), "the file was saved with --pin-plugins and the library was rebuilt since: "
                                                  "recompile the model with this build (weft compile)"))
      << pinned.status().message();
  // The session that wrote it still loads the pinned file.
  EXPECT_TRUE(s->LoadModel(dir + "/pinned.weft", trusted).ok());
}

// A constant whose shape's size wraps around 64 bits (to the size of its stored data, 0) is a
// corrupt file, not a tensor that later reads gigabytes past the mapping.
TEST(ModelFile, ShapesWhoseSizeWrapsAreCorrupt) {
  std::string dir = TempDir("wrap");
  auto s = MakeSession();
  Graph g("wrap");
  g.AddInput("x", DT_FLOAT, {2});
  g.AddConstant("c", HostTensor(DT_FLOAT, Shape({0})));
  g.AddNode("Concat", "cat", {"x", "c"}, {"y"}, {{"axis", AttrValue::Int(0)}}).AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(m.value()->Save(dir + "/ok.weft").ok());
  RewriteMetadata(dir + "/ok.weft", dir + "/wrap.weft", [](nlohmann::json& meta) {
    for (auto& v : meta["values"])
      if (v["name"] == "c") v["shape"] = nlohmann::json::array({int64_t(1) << 33, int64_t(1) << 31});  // 2^66 bytes
  });
  auto bad = s->LoadModel(dir + "/wrap.weft");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "whose size does not fit in 64 bits")) << bad.status().message();
}

// Saving never replaces something that is not a regular file (the save renames a new file over
// the path), and a path with a NUL byte is not silently cut short.
TEST(ModelFile, SavingRefusesSpecialFilesAndNulBytes) {
  std::string dir = TempDir("special");
  auto s = MakeSession();
  Graph g("g");
  g.AddInput("x", DT_FLOAT, {2});
  g.AddNode("Relu", "r", {"x"}, {"y"}).AddOutput("y");
  auto m = s->Compile(g).value();
  std::string fifo = dir + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Status st = m->Save(fifo);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.message(), "is not a regular file")) << st.message();
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  Status dir_st = m->Save(dir);
  EXPECT_FALSE(dir_st.ok());
  std::string cut = dir + "/cut";
  cut.push_back('\0');
  cut += ".weft";
  Status nul = m->Save(cut);
  ASSERT_FALSE(nul.ok());
  EXPECT_TRUE(Contains(nul.message(), "NUL")) << nul.message();
  EXPECT_FALSE(std::filesystem::exists(dir + "/cut"));
  // Loading a FIFO fails at once instead of waiting for a writer.
  auto loaded = s->LoadModel(fifo);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(Contains(loaded.status().message(), "not a regular file")) << loaded.status().message();
}

}  // namespace
}  // namespace weft
