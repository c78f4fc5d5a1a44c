// Files written by an attacker: paths inside a model never leave the model's directory, and
// devices, FIFOs and directories are refused instead of read without end.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"
#include "core/file_io.h"
#include "core/npy.h"
#include "weft/onnx.h"
#include "weft/weft.h"

namespace weft {
namespace {
namespace fs = std::filesystem;
using test::Contains;

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("weft_hostile_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "model");
    fs::create_directories(root_ / "outside");
    // Six floats 1..6, the weights the model may read.
    float w[6] = {1, 2, 3, 4, 5, 6};
    Write(root_ / "model" / "w.bin", std::string(reinterpret_cast<char*>(w), sizeof(w)));
    Write(root_ / "outside" / "secret.bin", std::string(reinterpret_cast<char*>(w), sizeof(w)));
  }
  void TearDown() override { fs::remove_all(root_); }

  static void Write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

  // y = x + w, with w [2, 3] float32 stored as external data at `location`.
  std::string OnnxModel(const std::string& location, const std::string& offset = "0",
                        const std::string& length = "24") {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("ext");
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(2);
    tt->mutable_shape()->add_dim()->set_dim_value(3);
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(2);
    w->add_dims(3);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto kv = [&](const std::string& k, const std::string& v) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    kv("location", location);
    kv("offset", offset);
    kv("length", length);
    auto* n = g->add_node();
    n->set_op_type("Add");
    n->add_input("x");
    n->add_input("w");
    n->add_output("y");
    g->add_output()->set_name("y");
    fs::path p = root_ / "model" / "m.onnx";
    Write(p, m.SerializeAsString());
    return p.string();
  }

  fs::path root_;
};

TEST_F(HostileFiles, ExternalDataInsideTheModelDirectoryIsRead) {
  auto g = ImportOnnx(OnnxModel("w.bin"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto s = Session::Create().value();
  auto m = s->Compile(g.value());
  ASSERT_TRUE(m.ok()) << m.status().message();
  HostTensor x(DT_FLOAT, Shape({2, 3}));
  for (int i = 0; i < 6; ++i) x.data_as<float>()[i] = 10.f * static_cast<float>(i);
  auto y = m.value()->Run({x});
  ASSERT_TRUE(y.ok()) << y.status().message();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.value()[0].data_as<float>()[i], 10.f * static_cast<float>(i) + static_cast<float>(i + 1));
}

TEST_F(HostileFiles, ExternalDataCannotLeaveTheModelDirectory) {
  auto up = ImportOnnx(OnnxModel("../outside/secret.bin"));
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.status().message().find("leaves the model's directory"), std::string::npos) << up.status().message();
  EXPECT_NE(up.status().message().find("tensor 'w'"), std::string::npos) << up.status().message();

  auto abs = ImportOnnx(OnnxModel((root_ / "outside" / "secret.bin").string()));
  ASSERT_FALSE(abs.ok());
  EXPECT_NE(abs.status().message().find("is absolute"), std::string::npos) << abs.status().message();

  auto passwd = ImportOnnx(OnnxModel("/etc/passwd"));
  ASSERT_FALSE(passwd.ok());
  EXPECT_NE(passwd.status().message().find("is absolute"), std::string::npos) << passwd.status().message();

  fs::create_symlink(root_ / "outside", root_ / "model" / "link");
  auto link = ImportOnnx(OnnxModel("link/secret.bin"));
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.status().message().find("outside the model's directory"), std::string::npos) << link.status().message();
}

TEST_F(HostileFiles, BadExternalDataOffsetsAndLengthsAreErrors) {
  for (const char* bad : {"abc", "-1", "1e3", "99999999999999999999", " 1", ""}) {
    auto g = ImportOnnx(OnnxModel("w.bin", bad));
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_NE(g.status().message().find("not a non-negative integer"), std::string::npos) << g.status().message();
  }
  auto past = ImportOnnx(OnnxModel("w.bin", "8"));  // 24 bytes at offset 8 of a 24-byte file
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("do not fit"), std::string::npos) << past.status().message();
  auto huge = ImportOnnx(OnnxModel("w.bin", "9223372036854775807"));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("do not fit"), std::string::npos) << huge.status().message();
}

TEST_F(HostileFiles, DevicesFifosAndDirectoriesAreRefused) {
  fs::path fifo = root_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Each would read forever (/dev/zero), block forever (a FIFO with no writer) or fail oddly.
  for (const std::string path : {std::string("/dev/zero"), fifo.string(), root_.string()}) {
    auto g = Graph::FromJsonFile(path);
    ASSERT_FALSE(g.ok()) << path;
    EXPECT_NE(g.status().message().find("only regular files are read"), std::string::npos) << g.status().message();
    auto o = ImportOnnx(path);
    ASSERT_FALSE(o.ok()) << path;
    EXPECT_NE(o.status().message().find("only regular files are read"), std::string::npos) << o.status().message();
    auto n = internal::ReadNpy(path);
    ASSERT_FALSE(n.ok()) << path;
    EXPECT_NE(n.status().message().find("only regular files are read"), std::string::npos) << n.status().message();
  }
  auto ext = ImportOnnx(OnnxModel("../fifo"));
  ASSERT_FALSE(ext.ok());
  ASSERT_EQ(::mkfifo((root_ / "model" / "wfifo").c_str(), 0600), 0);
  auto ext_fifo = ImportOnnx(OnnxModel("wfifo"));
  ASSERT_FALSE(ext_fifo.ok());
  EXPECT_NE(ext_fifo.status().message().find("a FIFO"), std::string::npos) << ext_fifo.status().message();
}

TEST_F(HostileFiles, JsonGraphConstantFilesStayNextToTheGraph) {
  HostTensor w(DT_FLOAT, Shape({3}));
  ASSERT_TRUE(internal::WriteNpy((root_ / "outside" / "w.npy").string(), w).ok());
  for (const std::string file : {std::string("../outside/w.npy"), (root_ / "outside" / "w.npy").string()}) {
    std::string text = R"({"name": "g", "inputs": [{"name": "x", "dtype": "float32", "shape": [3]}],
      "constants": [{"name": "w", "file": ")" + file + R"("}],
      "nodes": [{"op": "Add", "name": "a", "inputs": ["x", "w"], "outputs": ["y"]}], "outputs": ["y"]})";
    Write(root_ / "model" / "g.json", text);
    auto g = Graph::FromJsonFile((root_ / "model" / "g.json").string());
    ASSERT_FALSE(g.ok()) << file;
    EXPECT_NE(g.status().message().find("constant"), std::string::npos) << g.status().message();
  }
}

// ONNX graphs built in memory for the degenerate-node cases below.
onnx::ValueInfoProto FloatInput(const std::string& name, std::vector<int64_t> dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return v;
}

onnx::ModelProto NewModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  return m;
}

TEST(DegenerateNodes, IfWithoutAConditionIsAnError) {
  onnx::ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  *g->add_input() = FloatInput("x", {2});
  auto* n = g->add_node();
  n->set_op_type("If");
  n->set_name("cond");
  n->add_output("y");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* b = a->mutable_g();
    auto* id = b->add_node();
    id->set_op_type("Identity");
    id->add_input("x");
    id->add_output(std::string(branch) + "_out");
    b->add_output()->set_name(std::string(branch) + "_out");
  }
  g->add_output()->set_name("y");
  auto r = ImportOnnxBytes(m.SerializeAsString(), ".");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'cond' (If): needs exactly one input"), std::string::npos) << r.status().message();
}

TEST(DegenerateNodes, MatMulWithAnEmptyInnerDimensionGivesZeros) {
  // [3, 0] x [0, 4]: every output element is an empty sum.
  onnx::ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  *g->add_input() = FloatInput("a", {3, 0});
  *g->add_input() = FloatInput("b", {0, 4});
  auto* n = g->add_node();
  n->set_op_type("MatMul");
  n->add_input("a");
  n->add_input("b");
  n->add_output("y");
  g->add_output()->set_name("y");
  auto graph = ImportOnnxBytes(m.SerializeAsString(), ".");
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  auto model = Session::Create().value()->Compile(graph.value());
  ASSERT_TRUE(model.ok()) << model.status().message();
  auto y = model.value()->Run({HostTensor(DT_FLOAT, Shape({3, 0})), HostTensor(DT_FLOAT, Shape({0, 4}))});
  ASSERT_TRUE(y.ok()) << y.status().message();
  ASSERT_EQ(y.value()[0].shape().ToVector(), (std::vector<int64_t>{3, 4}));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y.value()[0].data_as<float>()[i], 0.f);
}

TEST(DegenerateNodes, AGivenShapeMayNotContradictTheModelsFixedDims) {
  onnx::ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  *g->add_input() = FloatInput("x", {3, 4});
  auto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  OnnxImportOptions bad;
  bad.input_shapes["x"] = Shape({5, 4});
  auto r = ImportOnnxBytes(m.SerializeAsString(), ".", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("graph input 'x' is declared [3,4]"), std::string::npos) << r.status().message();
  OnnxImportOptions same;
  same.input_shapes["x"] = Shape({3, 4});
  EXPECT_TRUE(ImportOnnxBytes(m.SerializeAsString(), ".", same).ok());
}

TEST(ParseNonNegativeInt64, AcceptsOnlyWholeDecimals) {
  int64_t v = -1;
  EXPECT_TRUE(internal::ParseNonNegativeInt64("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(internal::ParseNonNegativeInt64("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  for (const char* bad : {"", "-0", "+1", "9223372036854775808", "12a", "0x10", "1 "})
    EXPECT_FALSE(internal::ParseNonNegativeInt64(bad, &v)) << bad;
}

// Regression cases found by the libFuzzer targets in tests/fuzz/ (scripts/fuzz.sh).

bool Has(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

std::string NpyBytes(const std::string& header, const std::string& data = "") {
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header + data;
}

TEST(FuzzFindings, NpyShapeWhoseElementCountOverflowsIsAnError) {
  // The element count overflowed int64 in Shape::GetShapeSize (undefined behaviour).
  auto r = internal::ParseNpy(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"), "o");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status(), "more elements than fit in 64 bits")) << r.status().message();
  auto zero = internal::ParseNpy(NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0), }"), "z");
  ASSERT_FALSE(zero.ok());
  EXPECT_TRUE(Has(zero.status(), "more elements than fit in 64 bits")) << zero.status().message();
}

TEST(FuzzFindings, NpyHeaderFieldsAreValidated) {
  const char* bad[] = {"{'descr': '<f4', 'fortran_order': False, 'shape': 5, }",
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (3abc,), }",
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (1,,2), }",
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (+1,), }",
                       "{'descr': '<f4', 'shape': (1,), }"};
  for (const char* h : bad) EXPECT_FALSE(internal::ParseNpy(NpyBytes(h, std::string(64, '\0')), "h").ok()) << h;
  for (const char* h : {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }",
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                        "{'descr': '<f4', 'fortran_order': False, 'shape': ( 2 , ), }",
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"}) {
    auto r = internal::ParseNpy(NpyBytes(h, std::string(8, '\0')), "h");
    EXPECT_TRUE(r.ok()) << h << ": " << r.status().message();
  }
}

TEST(FuzzFindings, HostTensorSizesThatOverflowAreRefused) {
  Shape huge({int64_t(1) << 32, int64_t(1) << 32});
  auto r = HostTensor::FromBytes(DT_FLOAT, huge, nullptr, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status(), "more bytes than fit in 64 bits")) << r.status().message();
  // 2^62 floats is 2^64 bytes: the byte count used to wrap to 0 and allocate 64 bytes.
  EXPECT_THROW((void)HostTensor(DT_FLOAT, Shape({int64_t(1) << 62})), std::bad_alloc);
  EXPECT_EQ(HostTensor(DT_FLOAT, Shape({-1, 3})).bytes(), 0u);  // unknown dims: an empty tensor, as before
}

TEST(FuzzFindings, JsonGraphNameMustBeAString) {
  // j.value("name", ...) threw nlohmann::type_error out of FromJsonText.
  auto r = Graph::FromJsonText(R"({"name": 0.5, "nodes": []})");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status(), "graph \"name\" must be a string")) << r.status().message();
}

TEST(FuzzFindings, JsonConstantValuesMustFitTheirDtype) {
  // 1e10 as int8 was an undefined float-to-int conversion; true as float64 threw type_error.
  auto r = Graph::FromJsonText(R"({"nodes": [], "constants": [{"name": "c", "dtype": "int8", "shape": [2], "data": [1, 1e10]}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status(), "constant 'c': \"data\" value #1 (10000000000.0) does not fit int8")) << r.status().message();
  for (const char* bad : {R"([{"name": "c", "dtype": "uint8", "shape": [1], "data": [-1]}])",
                          R"([{"name": "c", "dtype": "int64", "shape": [1], "data": [18446744073709551615]}])",
                          R"([{"name": "c", "dtype": "float32", "shape": [1], "data": [1e300]}])",
                          R"([{"name": "c", "dtype": "float16", "shape": [1], "data": [-1e300]}])"}) {
    auto b = Graph::FromJsonText(std::string(R"({"nodes": [], "constants": )") + bad + "}");
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_TRUE(Has(b.status(), "does not fit")) << b.status().message();
  }
  auto ok = Graph::FromJsonText(R"({"nodes": [], "constants": [
    {"name": "d", "dtype": "float64", "shape": [3], "data": [true, 2, 1e300]},
    {"name": "i", "dtype": "int32", "shape": [2], "data": [false, -2.7]},
    {"name": "u", "dtype": "uint64", "shape": [1], "data": [18446744073709551615]}]})");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  const double* d = ok.value().constants()[0].second.data_as<double>();
  EXPECT_EQ(d[0], 1.0);
  EXPECT_EQ(d[2], 1e300);
  EXPECT_EQ(ok.value().constants()[1].second.data_as<int32_t>()[1], -2);
  EXPECT_EQ(ok.value().constants()[2].second.data_as<uint64_t>()[0], UINT64_MAX);
}

TEST(FuzzFindings, JsonConstantShapeWhoseElementCountOverflowsIsAnError) {
  auto r = Graph::FromJsonText(
      R"({"nodes": [], "constants": [{"name": "c", "dtype": "float32", "shape": [4294967296, 4294967296, 0], "data": []}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status(), "constant 'c': shape [4294967296,4294967296,0] has more elements than fit in 64 bits"))
      << r.status().message();
}

TEST(FuzzFindings, DeeplyNestedJsonIsRefusedBeforeParsing) {
  // Copying or printing a json value recurses once per level: 200,000 levels overflowed the stack.
  const size_t depth = 200000;
  for (auto [prefix, suffix] : {std::pair{R"({"nodes": [{"op": "A", "attrs": {"a": {"x": )", "}}}]}"},
                                std::pair{R"({"nodes": [], "constants": [{"name": "c", "dtype": "float32", "shape": [1], "data": )", "}]}"}}) {
    std::string text = prefix + std::string(depth, '[') + std::string(depth, ']') + suffix;
    auto r = Graph::FromJsonText(text);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Has(r.status(), "more than 64 levels deep")) << r.status().message();
  }
  // Brackets inside strings do not count.
  auto s = Graph::FromJsonText(R"({"name": ")" + std::string(1000, '[') + R"(", "nodes": []})");
  EXPECT_TRUE(s.ok()) << s.status().message();
}

TEST(FuzzFindings, JsonAttributeNumbersAndCountsMustFitTheirTypes) {
  for (const char* attrs : {R"({"a": 18446744073709551615})", R"({"a": 1e300})", R"({"a": [1, 18446744073709551615]})",
                            R"({"a": [1, 1e300]})"}) {
    auto r = Graph::FromJsonText(std::string(R"({"nodes": [{"op": "A", "name": "n", "attrs": )") + attrs + "}]}");
    ASSERT_FALSE(r.ok()) << attrs;
    EXPECT_TRUE(Has(r.status(), "node 'n' attribute 'a': value")) << r.status().message();
    EXPECT_TRUE(Has(r.status(), "is out of range")) << r.status().message();
  }
  auto counts = Graph::FromJsonText(R"({"nodes": [{"op": "A", "name": "n", "input_counts": [4294967296]}]})");
  ASSERT_FALSE(counts.ok());
  EXPECT_TRUE(Has(counts.status(), "node 'n': \"input_counts\" must hold integers in [0, 2^32)")) << counts.status().message();
  auto obj = Graph::FromJsonText(R"({"nodes": [{"op": "A", "name": "n", "attrs": {"a": {"b": 1}}}]})");
  ASSERT_FALSE(obj.ok());
  EXPECT_TRUE(Has(obj.status(), "unsupported attribute value (a JSON object")) << obj.status().message();
}

onnx::ModelProto ModelWithInitializer(std::vector<int64_t> dims) {
  onnx::ModelProto m = NewModel();
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) w->add_dims(d);
  g->add_output()->set_name("w");
  return m;
}

TEST(FuzzFindings, OnnxTensorWhoseElementCountOverflowsIsAnError) {
  auto r = ImportOnnxBytes(ModelWithInitializer({98025113143737801, 104}).SerializeAsString(), ".");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status(), "tensor 'w' has more elements than fit in 64 bits")) << r.status().message();
}

TEST(FuzzFindings, OnnxTensorDataIsCheckedBeforeTheTensorIsAllocated) {
  // [2^28, 4] floats with no data: 4 GiB was allocated (and zeroed) before the count was checked.
  auto none = ImportOnnxBytes(ModelWithInitializer({int64_t(1) << 28, 4}).SerializeAsString(), ".");
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Has(none.status(), "tensor 'w': has 0 values, shape needs 1073741824")) << none.status().message();
  onnx::ModelProto raw = ModelWithInitializer({int64_t(1) << 28, 4});
  raw.mutable_graph()->mutable_initializer(0)->set_raw_data("abcd");
  auto r = ImportOnnxBytes(raw.SerializeAsString(), ".");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status(), "tensor 'w': raw_data has 4 bytes")) << r.status().message();
  // External data: the file's size bounds the allocation; a missing file is reported as such.
  fs::path dir = fs::temp_directory_path() / ("weft_fuzz_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "small.bin", std::ios::binary) << std::string(16, '\0');
  for (const char* location : {"small.bin", "missing.bin"}) {
    onnx::ModelProto ext = ModelWithInitializer({int64_t(1) << 28, 4});
    auto* w = ext.mutable_graph()->mutable_initializer(0);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = w->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    auto e = ImportOnnxBytes(ext.SerializeAsString(), dir.string());
    ASSERT_FALSE(e.ok()) << location;
    EXPECT_TRUE(Has(e.status(), std::string(location) == "small.bin" ? "has 16 bytes; 4294967296 bytes at offset 0 do not fit"
                                                                     : "No such file"))
        << e.status().message();
  }
  fs::remove_all(dir);
}

TEST(FuzzFindings, OnnxOldOpsetAttributesBecomeInputsOnlyWhenTheyHaveAListType) {
  // Squeeze-11 with an empty axes list passed a null pointer to memcpy; a string axes became an
  // untyped, empty constant.
  for (bool as_string : {false, true}) {
    onnx::ModelProto m = NewModel();
    m.mutable_opset_import(0)->set_version(11);
    auto* g = m.mutable_graph();
    *g->add_input() = FloatInput("x", {1, 2});
    auto* n = g->add_node();
    n->set_op_type("Squeeze");
    n->set_name("sq");
    n->add_input("x");
    n->add_output("y");
    auto* a = n->add_attribute();
    a->set_name("axes");
    if (as_string) {
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s("0");
    } else {
      a->set_type(onnx::AttributeProto::INTS);
    }
    g->add_output()->set_name("y");
    auto r = ImportOnnxBytes(m.SerializeAsString(), ".");
    if (as_string) {
      ASSERT_FALSE(r.ok());
      EXPECT_TRUE(Has(r.status(), "'sq' (Squeeze): attribute 'axes' must be a list of ints to become input 1"))
          << r.status().message();
    } else {
      ASSERT_TRUE(r.ok()) << r.status().message();
      ASSERT_EQ(r.value().constants().size(), 1u);
      EXPECT_EQ(r.value().constants()[0].second.shape(), Shape({0}));
      EXPECT_EQ(r.value().constants()[0].second.dtype(), DT_INT64);
    }
  }
}

TEST(FuzzFindings, OnnxConstantValuesMustHaveTheTypeTheirNameSays) {
  auto constant = [](const std::string& attr, onnx::AttributeProto::AttributeType type) {
    onnx::ModelProto m = NewModel();
    auto* g = m.mutable_graph();
    auto* n = g->add_node();
    n->set_op_type("Constant");
    n->set_name("c");
    n->add_output("y");
    auto* a = n->add_attribute();
    a->set_name(attr);
    a->set_type(type);  // no values: an empty list, or a zero scalar
    g->add_output()->set_name("y");
    return ImportOnnxBytes(m.SerializeAsString(), ".");
  };
  // Empty lists passed a null pointer to memcpy.
  for (auto [attr, type, dt] : {std::tuple{"value_floats", onnx::AttributeProto::FLOATS, DT_FLOAT},
                                std::tuple{"value_ints", onnx::AttributeProto::INTS, DT_INT64}}) {
    auto r = constant(attr, type);
    ASSERT_TRUE(r.ok()) << attr << ": " << r.status().message();
    EXPECT_EQ(r.value().constants()[0].second.shape(), Shape({0}));
    EXPECT_EQ(r.value().constants()[0].second.dtype(), dt);
  }
  for (auto [attr, type] : {std::pair{"value", onnx::AttributeProto::INT}, std::pair{"value_ints", onnx::AttributeProto::FLOAT},
                            std::pair{"value_float", onnx::AttributeProto::STRING}}) {
    auto r = constant(attr, type);
    ASSERT_FALSE(r.ok()) << attr;
    EXPECT_TRUE(Has(r.status(), "'c' (Constant): attribute '" + std::string(attr) + "' has the wrong type")) << r.status().message();
  }
}

TEST(FuzzFindings, JsonConstantShapeCheckedLikeTheTensorItBecomes) {
  // Elements fit in int64 (a dim of 0 makes the count 0) but the running byte count does not:
  // rejected here, not by an exception where the tensor is allocated.
  auto g = Graph::FromJsonText(R"({"nodes": [], "constants": [{"name": "c", "dtype": "float64",
      "shape": [4294967296, 42949, 7296, 0], "data": []}]})");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("has more elements than fit in 64 bits"), std::string::npos) << g.status().message();
}

// A JSON constant read from a file may state its dtype and shape; the file must agree.
TEST(ProbeFindings, JsonConstantFileMustMatchAStatedDtypeAndShape) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "weft_probe_constfile";
  fs::create_directories(dir);
  HostTensor t(DT_FLOAT, Shape({2, 3}));
  ASSERT_TRUE(WriteNpy((dir / "c.npy").string(), t).ok());
  auto load = [&](const std::string& extra) {
    std::ofstream((dir / "g.json").string())
        << R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2, 3]}],
               "constants": [{"name": "c", "file": "c.npy")" << extra << R"(}],
               "nodes": [{"op": "Add", "inputs": ["x", "c"], "outputs": ["y"]}], "outputs": ["y"]})";
    return Graph::FromJsonFile((dir / "g.json").string());
  };
  EXPECT_TRUE(load("").ok());
  EXPECT_TRUE(load(R"(, "dtype": "float32", "shape": [2, 3])").ok());
  auto dtype = load(R"(, "dtype": "int64")");
  ASSERT_FALSE(dtype.ok());
  EXPECT_TRUE(Contains(dtype.status().message(), "\"dtype\" is 'int64' but the file holds float32")) << dtype.status().message();
  auto shape = load(R"(, "shape": [3, 2])");
  ASSERT_FALSE(shape.ok());
  EXPECT_TRUE(Contains(shape.status().message(), "\"shape\" is [3,2] but the file holds [2,3]")) << shape.status().message();
  auto both = load(R"(, "data": [1, 2, 3, 4, 5, 6])");
  ASSERT_FALSE(both.ok());
  fs::remove_all(dir);
}

// Graph inputs whose size overflows and sessions asking for absurd thread counts are refused.
TEST(ProbeFindings, OversizedInputsAndThreadCountsAreErrors) {
  SessionOptions o;
  o.use_env_path = false;
  Graph g("big");
  g.AddInput("x", DT_FLOAT, {int64_t(1) << 32, int64_t(1) << 32});
  g.AddNode("Relu", "r", {"x"}, {"y"}).AddOutput("y");
  auto m = Session::Create(o).value()->Compile(g);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "graph input 'x' has the shape [4294967296,4294967296]")) << m.status().message();
  o.intra_op_threads = 1 << 30;
  auto s = Session::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.status().message(), "intra_op_threads")) << s.status().message();
}

}  // namespace
}  // namespace weft
