// The JSON graph format and .npy files.
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
