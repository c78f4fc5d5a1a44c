// The JSON graph format and .npy files.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/npy.h"
#include "test_util.h"

namespace weft {
namespace {

using test::Contains;

std::string TempDir() {
  auto d = std::filesystem::temp_directory_path() / ("weft_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(GraphJson, ParsesInputsConstantsNodesAndTypedAttributes) {
  auto g = Graph::FromJsonText(R"({
    "name": "g",
    "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 2]}],
    "constants": [{"name": "w", "dtype": "float32", "shape": [2], "data": [1, 2.5]}],
    "nodes": [{"name": "n", "op": "Op", "inputs": ["x", null, "w"], "outputs": ["y"],
               "attrs": {"i": 3, "f": 0.5, "b": true, "s": "hi", "li": [1, 2], "lf": [1, 0.5], "ls": ["a"],
                         "t": {"tensor": {"dtype": "int64", "shape": [2], "data": [7, 8]}}, "ty": {"type": "float16"}},
               "input_counts": [1, 1, 1]}],
    "outputs": ["y"]})");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Graph& gr = g.value();
  EXPECT_EQ(gr.name(), "g");
  ASSERT_EQ(gr.constants().size(), 1u);
  EXPECT_EQ(gr.constants()[0].second.data_as<float>()[1], 2.5f);
  const Node& n = gr.nodes()[0];
  EXPECT_EQ(n.inputs[1], "");
  EXPECT_EQ(n.attrs.at("i").type(), WEFT_ATTR_INT);
  EXPECT_EQ(n.attrs.at("f").type(), WEFT_ATTR_FLOAT);
  EXPECT_EQ(n.attrs.at("b").type(), WEFT_ATTR_BOOL);
  EXPECT_EQ(n.attrs.at("li").ints(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n.attrs.at("lf").type(), WEFT_ATTR_LIST_FLOAT);
  EXPECT_EQ(n.attrs.at("ls").strings()[0], "a");
  EXPECT_EQ(n.attrs.at("t").tensor().GetDataType(), DT_INT64);
  EXPECT_EQ(n.attrs.at("ty").i(), DT_FLOAT16);
  EXPECT_EQ(n.input_counts, (std::vector<uint32_t>{1, 1, 1}));
}

TEST(GraphJson, ToJsonTextRoundTripsEveryAttributeTypeAndConstantBytes) {
  Graph g("round trip");
  g.AddInput("x", DT_FLOAT16, Shape({2, -1}));
  HostTensor c(DT_FLOAT, Shape({5}));
  const float vals[5] = {0.1f, -1e-30f, 3.0f, 1e30f, -0.0f};  // not exact in short decimals
  std::memcpy(c.data(), vals, sizeof(vals));
  g.AddConstant("c", c);
  g.AddConstant("empty", HostTensor(DT_INT8, Shape({0, 3})));
  Node n;
  n.name = "n\"quoted\"";
  n.op_type = "Op";
  n.domain = "com.example";
  n.inputs = {"x", "", "c"};
  n.outputs = {"y", ""};
  n.input_counts = {1, 1, 1};
  n.when = {{"cond", false}};
  n.attrs["i"] = AttrValue::Int(INT64_MIN);
  n.attrs["f"] = AttrValue::Float(1.0f);
  n.attrs["f2"] = AttrValue::Float(0.1f);
  n.attrs["b"] = AttrValue::Bool(true);
  n.attrs["s"] = AttrValue::String("line\nbreak");
  n.attrs["ty"] = AttrValue::Type(DT_BF16);
  n.attrs["li"] = AttrValue::ListInt({1, -2});
  n.attrs["lf"] = AttrValue::ListFloat({1.0f, 2.0f, 0.3f});
  n.attrs["ls"] = AttrValue::ListString({"a", ""});
  n.attrs["lb"] = AttrValue::ListBool({true, false});
  n.attrs["t"] = AttrValue::TensorValue(DT_UINT8, Shape({3}), {0, 255, 7});
  g.AddNode(n);
  g.AddOutput("y");
  auto text = g.ToJsonText();
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto back = Graph::FromJsonText(text.value());
  ASSERT_TRUE(back.ok()) << back.status().message();
  const Graph& r = back.value();
  EXPECT_EQ(r.name(), "round trip");
  ASSERT_EQ(r.inputs().size(), 1u);
  EXPECT_EQ(r.inputs()[0].dtype, DT_FLOAT16);
  EXPECT_EQ(r.inputs()[0].shape, Shape({2, -1}));
  ASSERT_EQ(r.constants().size(), 2u);
  EXPECT_EQ(std::memcmp(r.constants()[0].second.data(), vals, sizeof(vals)), 0);
  EXPECT_EQ(r.constants()[1].second.shape(), Shape({0, 3}));
  const Node& m = r.nodes().at(0);
  EXPECT_EQ(m.name, n.name);
  EXPECT_EQ(m.domain, "com.example");
  EXPECT_EQ(m.inputs, n.inputs);
  EXPECT_EQ(m.outputs, n.outputs);
  EXPECT_EQ(m.input_counts, n.input_counts);
  EXPECT_EQ(m.when, n.when);
  ASSERT_EQ(m.attrs.size(), n.attrs.size());
  for (auto& [key, v] : n.attrs) {
    const AttrValue& w = m.attrs.at(key);
    EXPECT_EQ(w.type(), v.type()) << key;
    EXPECT_EQ(w.i(), v.i()) << key;
    EXPECT_EQ(w.f(), v.f()) << key;
    EXPECT_EQ(w.s(), v.s()) << key;
    EXPECT_EQ(w.ints(), v.ints()) << key;
    EXPECT_EQ(w.floats(), v.floats()) << key;
    EXPECT_EQ(w.strings(), v.strings()) << key;
    EXPECT_EQ(w.bools(), v.bools()) << key;
    EXPECT_EQ(w.tensor_bytes(), v.tensor_bytes()) << key;
  }
  // Bad base64 and a byte count that does not match the shape are errors.
  EXPECT_TRUE(Contains(Graph::FromJsonText(R"({"constants": [{"name": "c", "dtype": "float32", "shape": [1], "base64": "AAA*"}], "nodes": []})")
                           .status().message(), "not valid base64"));
  EXPECT_TRUE(Contains(Graph::FromJsonText(R"({"constants": [{"name": "c", "dtype": "float32", "shape": [2], "base64": "AAAAAA=="}], "nodes": []})")
                           .status().message(), "needs 8 bytes, \"base64\" holds 4"));
  // Non-finite float attributes have no JSON form.
  Graph bad;
  bad.AddNode("Op", "nan", {}, {"y"}, {{"f", AttrValue::Float(NAN)}});
  EXPECT_TRUE(Contains(bad.ToJsonText().status().message(), "node 'nan' attribute 'f'"));
}

TEST(GraphJson, ErrorsNameTheProblem) {
  EXPECT_TRUE(Contains(Graph::FromJsonText("{nope").status().message(), "graph JSON does not parse"));
  EXPECT_TRUE(Contains(Graph::FromJsonText(R"({"inputs": []})").status().message(), "needs a \"nodes\" array"));
  EXPECT_TRUE(Contains(Graph::FromJsonText(R"({"inputs": [{"name": "x", "dtype": "float99", "shape": []}], "nodes": []})").status().message(),
                       "graph input 'x': unknown dtype 'float99'"));
  EXPECT_TRUE(Contains(Graph::FromJsonText(R"({"constants": [{"name": "c", "dtype": "float32", "shape": [3], "data": [1]}], "nodes": []})").status().message(),
                       "constant 'c': shape [3] needs 3 values, \"data\" has 1"));
  EXPECT_TRUE(Contains(Graph::FromJsonText(R"({"nodes": [{"name": "n"}]})").status().message(), "node #0: needs \"op\""));
  EXPECT_TRUE(Contains(Graph::FromJsonFile("/nonexistent.json").status().message(), "cannot open graph file '/nonexistent.json'"));
}

TEST(Npy, RoundTripsEveryType) {
  std::string dir = TempDir();
  for (DataType dt : {DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_INT8, DT_UINT8, DT_INT16, DT_INT32, DT_INT64, DT_BOOL}) {
    HostTensor t(dt, {3, 2});
    for (size_t b = 0; b < t.bytes(); ++b) static_cast<uint8_t*>(t.data())[b] = static_cast<uint8_t>(b * 37 + 1);
    if (dt == DT_BOOL)
      for (size_t b = 0; b < t.bytes(); ++b) static_cast<uint8_t*>(t.data())[b] &= 1;
    std::string path = dir + "/t.npy";
    ASSERT_TRUE(internal::WriteNpy(path, t).ok());
    auto r = internal::ReadNpy(path);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r.value().dtype(), dt);
    EXPECT_EQ(r.value().shape(), t.shape());
    EXPECT_EQ(std::memcmp(r.value().data(), t.data(), t.bytes()), 0);
  }
}

TEST(Npy, CorruptFilesAreErrorsNotCrashes) {
  EXPECT_TRUE(Contains(internal::ParseNpy("hello", "a.npy").status().message(), "'a.npy' is not a valid .npy file"));
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }";
  std::string f = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size()) + '\0' + h + "abcd";
  EXPECT_TRUE(Contains(internal::ParseNpy(f, "b.npy").status().message(), "data is truncated"));
  std::string big = "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }";
  std::string fb = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(big.size()) + '\0' + big + "abcd";
  EXPECT_TRUE(Contains(internal::ParseNpy(fb, "c.npy").status().message(), "unsupported dtype '>f4'"));
  // Every truncation of a valid file is rejected cleanly.
  HostTensor t(DT_FLOAT, {4});
  std::string dir = TempDir();
  ASSERT_TRUE(internal::WriteNpy(dir + "/v.npy", t).ok());
  std::ifstream in(dir + "/v.npy", std::ios::binary);
  std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t n = 0; n < full.size(); ++n) EXPECT_FALSE(internal::ParseNpy(full.substr(0, n), "v").ok()) << n;
}

}  // namespace
}  // namespace weft
