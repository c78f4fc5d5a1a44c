// Fused kernels (Conv + residual Add + Relu/Clip, Gemm + Relu) against float64 re-computations,
// and the fusion itself (fewer steps).
#include "test_util.h"

namespace weft {
namespace {

// Reference 2-D convolution, stride 1, pad 1, 3x3, float64.
std::vector<double> Conv3x3(const HostTensor& x, const HostTensor& w, const HostTensor& b) {
  int64_t c = x.shape().GetDim(1), h = x.shape().GetDim(2), wd = x.shape().GetDim(3), m = w.shape().GetDim(0);
  std::vector<double> y(static_cast<size_t>(m * h * wd));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < wd; ++j) {
        double acc = b.data_as<float>()[o];
        for (int64_t ci = 0; ci < c; ++ci)
          for (int64_t ki = 0; ki < 3; ++ki)
            for (int64_t kj = 0; kj < 3; ++kj) {
              int64_t ii = i + ki - 1, jj = j + kj - 1;
              if (ii < 0 || jj < 0 || ii >= h || jj >= wd) continue;
              acc += double(x.data_as<float>()[(ci * h + ii) * wd + jj]) * w.data_as<float>()[((o * c + ci) * 3 + ki) * 3 + kj];
            }
        y[static_cast<size_t>((o * h + i) * wd + j)] = acc;
      }
  return y;
}

class FusionTest : public ::testing::TestWithParam<int> {};

TEST_P(FusionTest, ConvResidualActivationMatchesReference) {
  int channels = GetParam();  // 4: reference loops; 32: oneDNN path
  auto s = test::MakeSession();
  auto w = test::RandomFloat({channels, channels, 3, 3}, 1, -0.3f, 0.3f);
  auto b = test::RandomFloat({channels}, 2);
  for (const char* act : {"Relu", "Clip"}) {
    Graph g;
    g.AddInput("x", DT_FLOAT, {1, channels, 9, 7}).AddConstant("w", w).AddConstant("b", b);
    g.AddConstant("lo", HostTensor::FromVector<float>(DT_FLOAT, {}, {0.f}));
    g.AddConstant("hi", HostTensor::FromVector<float>(DT_FLOAT, {}, {1.5f}));
    g.AddNode("Conv", "conv", {"x", "w", "b"}, {"c"}, {{"pads", AttrValue::ListInt({1, 1, 1, 1})}});
    g.AddNode("Add", "res", {"c", "x"}, {"s"});
    if (std::string(act) == "Relu") g.AddNode("Relu", "act", {"s"}, {"y"});
    else g.AddNode("Clip", "act", {"s", "lo", "hi"}, {"y"});
    g.AddOutput("y");
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m.value()->num_steps(), 1u) << act << ": Conv, Add and the activation should be one step";
    auto x = test::RandomFloat({1, channels, 9, 7}, 3);
    auto out = m.value()->Run({x}).value();
    std::vector<double> ref = Conv3x3(x, w, b);
    for (size_t i = 0; i < ref.size(); ++i) {
      double v = ref[i] + x.data_as<float>()[i];
      v = std::string(act) == "Relu" ? std::max(0.0, v) : std::min(1.5, std::max(0.0, v));
      ASSERT_NEAR(out[0].data_as<float>()[i], v, 1e-4 * std::max(1.0, std::fabs(v))) << act << " at " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, FusionTest, ::testing::Values(4, 32));

TEST(Fusion, GemmReluAndUnfusableCases) {
  auto s = test::MakeSession();
  auto w = test::RandomFloat({64, 96}, 5, -0.2f, 0.2f);
  auto bias = test::RandomFloat({64}, 6);
  Graph g;
  g.AddInput("x", DT_FLOAT, {16, 96}).AddConstant("w", w).AddConstant("bias", bias);
  g.AddNode("Gemm", "fc", {"x", "w", "bias"}, {"h"}, {{"transB", AttrValue::Int(1)}});
  g.AddNode("Relu", "relu", {"h"}, {"y"});
  g.AddOutput("y").AddOutput("h");  // h is also an output: Relu must not be fused away
  auto m = s->Compile(g).value();
  EXPECT_EQ(m->num_steps(), 2u);
  auto x = test::RandomFloat({16, 96}, 7);
  auto out = m->Run({x}).value();
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 64; ++j) {
      double h = bias.data_as<float>()[j];
      for (int k = 0; k < 96; ++k) h += double(x.data_as<float>()[i * 96 + k]) * w.data_as<float>()[j * 96 + k];
      ASSERT_NEAR(out[1].data_as<float>()[i * 64 + j], h, 1e-4);
      ASSERT_NEAR(out[0].data_as<float>()[i * 64 + j], std::max(0.0, h), 1e-4);
    }
  Graph g2 = g;
  Graph fused("fused");
  fused.AddInput("x", DT_FLOAT, {16, 96}).AddConstant("w", w).AddConstant("bias", bias);
  fused.AddNode("Gemm", "fc", {"x", "w", "bias"}, {"h"}, {{"transB", AttrValue::Int(1)}}).AddNode("Relu", "relu", {"h"}, {"y"}).AddOutput("y");
  auto mf = s->Compile(fused).value();
  EXPECT_EQ(mf->num_steps(), 1u);
  auto outf = mf->Run({x}).value();
  EXPECT_EQ(std::memcmp(outf[0].data(), out[0].data(), out[0].bytes()), 0);
}

// The erf GELU as exporters write it, in both nestings of its two Muls, becomes one Gelu step;
// a pattern whose intermediate is read elsewhere is left as it is.
TEST(Fusion, DecomposedGeluBecomesOneNode) {
  auto s = test::MakeSession();
  auto x = test::RandomFloat({3, 50}, 31);
  for (int form = 0; form < 3; ++form) {
    Graph g;
    g.AddInput("x", DT_FLOAT, {3, 50});
    g.AddConstant("root2", HostTensor::FromVector<float>(DT_FLOAT, {}, {1.41421356f}));
    g.AddConstant("rroot2", HostTensor::FromVector<float>(DT_FLOAT, {}, {0.70710678f}));
    g.AddConstant("one", HostTensor::FromVector<float>(DT_FLOAT, {}, {1.f}));
    g.AddConstant("half", HostTensor::FromVector<float>(DT_FLOAT, {}, {0.5f}));
    if (form == 1) g.AddNode("Mul", "scale", {"rroot2", "x"}, {"d"});
    else g.AddNode("Div", "scale", {"x", "root2"}, {"d"});
    g.AddNode("Erf", "erf", {"d"}, {"e"});
    g.AddNode("Add", "plus1", {"one", "e"}, {"a"});
    if (form == 1) {  // (0.5 * x) * (1 + erf)
      g.AddNode("Mul", "halfx", {"half", "x"}, {"h"});
      g.AddNode("Mul", "gelu", {"h", "a"}, {"y"});
    } else {  // (x * (1 + erf)) * 0.5
      g.AddNode("Mul", "xa", {"x", "a"}, {"t"});
      g.AddNode("Mul", "gelu", {"t", "half"}, {"y"});
    }
    g.AddOutput("y");
    if (form == 2) g.AddOutput("e");  // read outside the pattern: no rewrite
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    auto steps = m.value()->DescribeSteps();
    if (form < 2) {
      ASSERT_EQ(steps.size(), 1u) << form;
      EXPECT_EQ(steps[0].op_type, "Gelu");
    } else {
      EXPECT_EQ(steps.size(), 5u);
    }
    auto out = m.value()->Run({x}).value();
    for (int64_t i = 0; i < 150; ++i) {
      double v = x.data_as<float>()[i], want = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      ASSERT_NEAR(out[0].data_as<float>()[i], want, 2e-6 * std::max(1.0, std::fabs(want))) << form << " " << i;
    }
  }
}

// A zero spatial Pad read only by a Conv becomes the Conv's padding; a Pad with a non-zero value,
// or one whose output is also a graph output, stays. The result matches a float64 convolution of
// the explicitly padded input either way.
TEST(Fusion, ZeroPadFoldsIntoConvPadding) {
  auto s = test::MakeSession();
  auto x = test::RandomFloat({1, 3, 9, 8}, 41);
  auto w = test::RandomFloat({4, 3, 3, 3}, 42);
  const std::vector<int64_t> pad = {0, 0, 1, 2, 0, 0, 2, 1};  // H +1/+2, W +2/+1
  const std::vector<int64_t> cpads = {1, 0, 0, 1};            // the Conv's own: H begin 1, W end 1
  for (int form = 0; form < 3; ++form) {
    const float value = form == 1 ? 0.5f : 0.f;
    Graph g;
    g.AddInput("x", DT_FLOAT, {1, 3, 9, 8});
    g.AddConstant("w", w);
    g.AddConstant("pads", HostTensor::FromVector<int64_t>(DT_INT64, {8}, pad));
    g.AddConstant("value", HostTensor::FromVector<float>(DT_FLOAT, {}, {value}));
    g.AddNode("Pad", "pad", {"x", "pads", "value"}, {"p"});
    g.AddNode("Conv", "conv", {"p", "w"}, {"y"}, {{"pads", AttrValue::ListInt(cpads)}});
    g.AddOutput("y");
    if (form == 2) g.AddOutput("p");
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m.value()->DescribeSteps().size(), form == 0 ? 1u : 2u) << form;
    auto out = m.value()->Run({x}).value();
    // float64: pad explicitly (value), then convolve with the Conv's own zero padding.
    const int64_t H = 9 + 3, W = 8 + 3, OH = H + 1 - 2, OW = W + 1 - 2;
    auto padded = [&](int64_t c, int64_t h, int64_t ww) -> double {  // h, w in the padded image
      int64_t ih = h - 1, iw = ww - 2;
      if (h < 0 || h >= H || ww < 0 || ww >= W) return 0.0;  // the Conv's zero padding
      if (ih < 0 || ih >= 9 || iw < 0 || iw >= 8) return value;
      return x.data_as<float>()[(c * 9 + ih) * 8 + iw];
    };
    ASSERT_EQ(out[0].shape(), Shape({1, 4, OH, OW}));
    for (int64_t o = 0; o < 4; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0;
          for (int64_t c = 0; c < 3; ++c)
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 3; ++kw)
                acc += padded(c, oh - 1 + kh, ow + kw) * w.data_as<float>()[((o * 3 + c) * 3 + kh) * 3 + kw];
          ASSERT_NEAR(out[0].data_as<float>()[(o * OH + oh) * OW + ow], acc, 1e-4) << form << " " << o << " " << oh << " " << ow;
        }
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

TEST(Fusion, ConvChainsExchangeTheBlockedLayout) {
  // 24 channels: not a multiple of 16, so the blocked buffers carry padding.
  const int c = 24;
  auto s = test::MakeSession();
  auto wa = test::RandomFloat({c, c, 3, 3}, 11, -0.2f, 0.2f), wb = test::RandomFloat({c, c, 3, 3}, 12, -0.2f, 0.2f);
  auto wc = test::RandomFloat({c, c, 3, 3}, 13, -0.2f, 0.2f);
  auto ba = test::RandomFloat({c}, 14), bb = test::RandomFloat({c}, 15), bc = test::RandomFloat({c}, 16);
  Graph g;
  g.AddInput("x", DT_FLOAT, {1, c, 10, 6});
  for (auto& [n, t] : std::vector<std::pair<std::string, HostTensor>>{{"wa", wa}, {"wb", wb}, {"wc", wc}, {"ba", ba}, {"bb", bb}, {"bc", bc}})
    g.AddConstant(n, t);
  std::map<std::string, AttrValue> pads{{"pads", AttrValue::ListInt({1, 1, 1, 1})}};
  g.AddNode("Conv", "a", {"x", "wa", "ba"}, {"a0"}, pads).AddNode("Relu", "ra", {"a0"}, {"a1"});
  g.AddNode("Conv", "b", {"a1", "wb", "bb"}, {"b0"}, pads).AddNode("Add", "res", {"b0", "a1"}, {"b1"}).AddNode("Relu", "rb", {"b1"}, {"b2"});
  g.AddNode("Conv", "c", {"b2", "wc", "bc"}, {"y"}, pads).AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m.value()->num_steps(), 3u);
  auto x = test::RandomFloat({1, c, 10, 6}, 17);
  auto out = m.value()->Run({x}).value();
  auto relu = [](std::vector<double> v) {
    for (auto& e : v) e = std::max(0.0, e);
    return v;
  };
  auto to_tensor = [&](const std::vector<double>& v) {
    HostTensor t(DT_FLOAT, {1, c, 10, 6});
    for (size_t i = 0; i < v.size(); ++i) t.data_as<float>()[i] = static_cast<float>(v[i]);
    return t;
  };
  std::vector<double> a1 = relu(Conv3x3(x, wa, ba));
  std::vector<double> b0 = Conv3x3(to_tensor(a1), wb, bb);
  for (size_t i = 0; i < b0.size(); ++i) b0[i] += a1[i];
  std::vector<double> y = Conv3x3(to_tensor(relu(b0)), wc, bc);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(out[0].data_as<float>()[i], y[i], 1e-3 * std::max(1.0, std::fabs(y[i]))) << i;
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// 3x3, stride 2, pad 1 max pooling, float64.
std::vector<double> MaxPool3x3s2(const std::vector<double>& x, int64_t c, int64_t h, int64_t w, int64_t* oh, int64_t* ow) {
  *oh = (h + 2 - 3) / 2 + 1;
  *ow = (w + 2 - 3) / 2 + 1;
  std::vector<double> y(static_cast<size_t>(c * *oh * *ow), -INFINITY);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t i = 0; i < *oh; ++i)
      for (int64_t j = 0; j < *ow; ++j)
        for (int64_t ki = 0; ki < 3; ++ki)
          for (int64_t kj = 0; kj < 3; ++kj) {
            int64_t ii = i * 2 + ki - 1, jj = j * 2 + kj - 1;
            if (ii < 0 || jj < 0 || ii >= h || jj >= w) continue;
            double& o = y[static_cast<size_t>((ch * *oh + i) * *ow + j)];
            o = std::max(o, x[static_cast<size_t>((ch * h + ii) * w + jj)]);
          }
  return y;
}

TEST(Fusion, PoolingBetweenConvsStaysBlocked) {
  // Conv -> Relu -> MaxPool -> Conv (+ the pooled tensor as residual) -> Relu, and a MaxPool that
  // reads a graph input (its input cannot be blocked, so neither is its output).
  const int c = 24;
  auto s = test::MakeSession();
  auto wa = test::RandomFloat({c, c, 3, 3}, 21, -0.2f, 0.2f), wb = test::RandomFloat({c, c, 3, 3}, 22, -0.2f, 0.2f);
  auto ba = test::RandomFloat({c}, 23), bb = test::RandomFloat({c}, 24);
  std::map<std::string, AttrValue> pads{{"pads", AttrValue::ListInt({1, 1, 1, 1})}};
  std::map<std::string, AttrValue> pool{{"kernel_shape", AttrValue::ListInt({3, 3})}, {"strides", AttrValue::ListInt({2, 2})},
                                        {"pads", AttrValue::ListInt({1, 1, 1, 1})}};
  for (bool from_input : {false, true}) {
    Graph g;
    g.AddInput("x", DT_FLOAT, {1, c, 10, 6}).AddConstant("wa", wa).AddConstant("wb", wb).AddConstant("ba", ba).AddConstant("bb", bb);
    if (from_input) {
      g.AddNode("MaxPool", "pool", {"x"}, {"p"}, pool);
    } else {
      g.AddNode("Conv", "a", {"x", "wa", "ba"}, {"a0"}, pads).AddNode("Relu", "ra", {"a0"}, {"a1"});
      g.AddNode("MaxPool", "pool", {"a1"}, {"p"}, pool);
    }
    g.AddNode("Conv", "b", {"p", "wb", "bb"}, {"b0"}, pads).AddNode("Add", "res", {"b0", "p"}, {"b1"}).AddNode("Relu", "rb", {"b1"}, {"y"});
    g.AddOutput("y");
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    auto x = test::RandomFloat({1, c, 10, 6}, 25);
    auto out = m.value()->Run({x}).value();
    std::vector<double> a1(x.data_as<float>(), x.data_as<float>() + x.numel());
    if (!from_input) {
      a1 = Conv3x3(x, wa, ba);
      for (auto& e : a1) e = std::max(0.0, e);
    }
    int64_t oh = 0, ow = 0;
    std::vector<double> p = MaxPool3x3s2(a1, c, 10, 6, &oh, &ow);
    HostTensor pt(DT_FLOAT, {1, c, oh, ow});
    for (size_t i = 0; i < p.size(); ++i) pt.data_as<float>()[i] = static_cast<float>(p[i]);
    std::vector<double> y = Conv3x3(pt, wb, bb);
    ASSERT_EQ(out[0].numel(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < y.size(); ++i) {
      double v = std::max(0.0, y[i] + p[i]);
      ASSERT_NEAR(out[0].data_as<float>()[i], v, 1e-3 * std::max(1.0, std::fabs(v))) << from_input << " at " << i;
    }
  }
}

// auto takes Winograd for the 32-channel layer and the direct kernels for the 3-channel one
// (where the transforms cost more than they save); every choice gives the reference's result.
TEST(Fusion, WinogradAndDirectConvolutionsBothMatchTheReference) {
  for (const int c : {32, 3})
  for (const char* algo : {"direct", "winograd", "auto"}) {
    auto w = test::RandomFloat({c, c, 3, 3}, 31, -0.2f, 0.2f);
    auto b = test::RandomFloat({c}, 32);
    auto x = test::RandomFloat({1, c, 14, 14}, 33);
    std::vector<double> ref = Conv3x3(x, w, b);
    SessionOptions o;
    o.use_env_path = false;
    o.options["weft.conv_algorithm"] = algo;
    auto s = Session::Create(o).value();
    Graph g;
    g.AddInput("x", DT_FLOAT, {1, c, 14, 14}).AddConstant("w", w).AddConstant("b", b);
    g.AddNode("Conv", "conv", {"x", "w", "b"}, {"y"}, {{"pads", AttrValue::ListInt({1, 1, 1, 1})}}).AddOutput("y");
    auto out = s->Compile(g).value()->Run({x}).value();
    for (size_t i = 0; i < ref.size(); ++i)
      ASSERT_NEAR(out[0].data_as<float>()[i], ref[i], 1e-4 * std::max(1.0, std::fabs(ref[i]))) << algo << " at " << i;
  }
}

TEST(Fusion, MatMulBiasAndReluBecomeOneStep) {
  // [2, 5, K] x [K, N] + bias[N] -> Relu, large enough for oneDNN and small enough for the loops.
  for (int64_t k : {64, 3}) {
    const int64_t n = 48;
    auto s = test::MakeSession();
    auto w = test::RandomFloat({k, n}, 41), bias = test::RandomFloat({n}, 42);
    Graph g;
    g.AddInput("x", DT_FLOAT, {2, 5, k}).AddConstant("w", w).AddConstant("b", bias);
    g.AddNode("MatMul", "mm", {"x", "w"}, {"m"}).AddNode("Add", "add", {"m", "b"}, {"a"}).AddNode("Relu", "relu", {"a"}, {"y"});
    g.AddOutput("y");
    auto m = s->Compile(g);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m.value()->num_steps(), 1u);
    auto x = test::RandomFloat({2, 5, k}, 43);
    auto out = m.value()->Run({x}).value();
    for (int64_t r = 0; r < 10; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double acc = bias.data_as<float>()[c];
        for (int64_t i = 0; i < k; ++i) acc += double(x.data_as<float>()[r * k + i]) * w.data_as<float>()[i * n + c];
        ASSERT_NEAR(out[0].data_as<float>()[r * n + c], std::max(0.0, acc), 1e-4 * std::max(1.0, std::fabs(acc))) << k;
      }
  }
}

TEST(Fusion, DecomposedLayerNormBecomesOneNode) {
  auto s = test::MakeSession();
  const int64_t rows = 6, c = 40;
  auto gamma = test::RandomFloat({c}, 21), beta = test::RandomFloat({c}, 22);
  Graph g;
  g.AddInput("x", DT_FLOAT, {2, rows, c}).AddConstant("gamma", gamma).AddConstant("beta", beta);
  g.AddConstant("axes", HostTensor::FromVector<int64_t>(DT_INT64, {1}, {-1}));
  g.AddConstant("two", HostTensor::FromVector<float>(DT_FLOAT, {}, {2.f}));
  g.AddConstant("eps", HostTensor::FromVector<float>(DT_FLOAT, {}, {1e-5f}));
  g.AddNode("ReduceMean", "mean", {"x", "axes"}, {"mu"});
  g.AddNode("Sub", "sub", {"x", "mu"}, {"d"});
  g.AddNode("Pow", "pow", {"d", "two"}, {"d2"});
  g.AddNode("ReduceMean", "var", {"d2", "axes"}, {"v"});
  g.AddNode("Add", "addeps", {"v", "eps"}, {"ve"});
  g.AddNode("Sqrt", "sqrt", {"ve"}, {"sd"});
  g.AddNode("Div", "div", {"d", "sd"}, {"n"});
  g.AddNode("Mul", "scale", {"n", "gamma"}, {"ng"});
  g.AddNode("Add", "shift", {"ng", "beta"}, {"y"});
  g.AddOutput("y");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m.value()->num_steps(), 1u);
  auto x = test::RandomFloat({2, rows, c}, 23);
  auto out = m.value()->Run({x}).value();
  for (int64_t r = 0; r < 2 * rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < c; ++j) mean += x.data_as<float>()[r * c + j];
    mean /= c;
    for (int64_t j = 0; j < c; ++j) var += std::pow(x.data_as<float>()[r * c + j] - mean, 2);
    var /= c;
    for (int64_t j = 0; j < c; ++j) {
      double want = (x.data_as<float>()[r * c + j] - mean) / std::sqrt(var + 1e-5) * gamma.data_as<float>()[j] + beta.data_as<float>()[j];
      ASSERT_NEAR(out[0].data_as<float>()[r * c + j], want, 1e-4 * std::max(1.0, std::fabs(want)));
    }
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Conv -> Relu -> MaxPool -> Conv + residual -> Sigmoid -> Conv: fusion and blocked layouts
// throughout, with only the last output plain.
Graph ConvPoolChain(const std::vector<HostTensor>& w) {
  std::map<std::string, AttrValue> pads{{"pads", AttrValue::ListInt({1, 1, 1, 1})}};
  std::map<std::string, AttrValue> pool{{"kernel_shape", AttrValue::ListInt({3, 3})}, {"strides", AttrValue::ListInt({2, 2})},
                                        {"pads", AttrValue::ListInt({1, 1, 1, 1})}};
  Graph g;
  g.AddInput("x", DT_FLOAT, {1, 24, 10, 6});
  for (size_t k = 0; k < w.size(); ++k) g.AddConstant("w" + std::to_string(k), w[k]);
  g.AddNode("Conv", "a", {"x", "w0", "w1"}, {"a0"}, pads).AddNode("Relu", "ra", {"a0"}, {"a1"});
  g.AddNode("MaxPool", "pool", {"a1"}, {"p"}, pool);
  g.AddNode("Conv", "b", {"p", "w2", "w3"}, {"b0"}, pads).AddNode("Add", "res", {"b0", "p"}, {"b1"});
  g.AddNode("Sigmoid", "sb", {"b1"}, {"b2"});
  g.AddNode("Conv", "c", {"b2", "w4", "w5"}, {"y"}, pads).AddOutput("y");
  return g;
}

TEST(Fusion, APackageOverridingConvIsFusedAndLaidOutLikeTheBuiltIn) {
  const int c = 24;
  std::vector<HostTensor> w;
  for (int k = 0; k < 3; ++k) {
    w.push_back(test::RandomFloat({c, c, 3, 3}, 40 + k, -0.2f, 0.2f));
    w.push_back(test::RandomFloat({c}, 50 + k));
  }
  Graph g = ConvPoolChain(w);
  auto builtin = test::MakeSession();
  auto package = test::MakeSession({"conv_override"}, /*allow_override=*/true);
  auto mb = builtin->Compile(g);
  auto mp = package->Compile(g);
  ASSERT_TRUE(mb.ok()) << mb.status().message();
  ASSERT_TRUE(mp.ok()) << mp.status().message();
  std::vector<StepInfo> sb = mb.value()->DescribeSteps(), sp = mp.value()->DescribeSteps();
  ASSERT_EQ(sb.size(), 4u);  // a (+Relu), pool, b (+Add +Sigmoid), c
  ASSERT_EQ(sp.size(), sb.size());
  EXPECT_EQ(sb[0].fused_activation, "Relu");
  EXPECT_EQ(sb[2].fused_activation, "Sigmoid");
  EXPECT_EQ(sb[2].inputs.size(), 4u) << "the residual operand is connected as Conv's Sum input";
  for (int k : {0, 1, 2}) EXPECT_EQ(sb[k].outputs[0].format, test::BlockedOrPlain()) << sb[k].node;
  EXPECT_EQ(sb[3].outputs[0].format, FORMAT_ND);
  for (size_t k = 0; k < sb.size(); ++k) {
    EXPECT_EQ(sb[k].origin, "built-in");
    EXPECT_EQ(sp[k].origin, test::PkgLib("conv_override")) << sp[k].node;
    EXPECT_EQ(sp[k].op_type, sb[k].op_type);
    EXPECT_EQ(sp[k].fused_activation, sb[k].fused_activation) << sb[k].node;
    ASSERT_EQ(sp[k].inputs.size(), sb[k].inputs.size()) << sb[k].node;
    for (size_t i = 0; i < sb[k].inputs.size(); ++i) EXPECT_EQ(sp[k].inputs[i].format, sb[k].inputs[i].format) << sb[k].node;
    for (size_t i = 0; i < sb[k].outputs.size(); ++i) EXPECT_EQ(sp[k].outputs[i].format, sb[k].outputs[i].format) << sb[k].node;
  }
  // Same code, same plan: the same bits; and both right (float64 reference).
  auto x = test::RandomFloat({1, c, 10, 6}, 60);
  auto yb = mb.value()->Run({x}).value();
  auto yp = mp.value()->Run({x}).value();
  ASSERT_EQ(yb[0].bytes(), yp[0].bytes());
  EXPECT_EQ(std::memcmp(yb[0].data(), yp[0].data(), yb[0].bytes()), 0);
  auto to_tensor = [&](const std::vector<double>& v, int64_t h, int64_t wd) {
    HostTensor t(DT_FLOAT, {1, c, h, wd});
    for (size_t i = 0; i < v.size(); ++i) t.data_as<float>()[i] = static_cast<float>(v[i]);
    return t;
  };
  std::vector<double> a1 = Conv3x3(x, w[0], w[1]);
  for (auto& e : a1) e = std::max(0.0, e);
  int64_t oh = 0, ow = 0;
  std::vector<double> p = MaxPool3x3s2(a1, c, 10, 6, &oh, &ow);
  std::vector<double> b = Conv3x3(to_tensor(p, oh, ow), w[2], w[3]);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 1.0 / (1.0 + std::exp(-(b[i] + p[i])));
  std::vector<double> y = Conv3x3(to_tensor(b, oh, ow), w[4], w[5]);
  ASSERT_EQ(yb[0].numel(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(yb[0].data_as<float>()[i], y[i], 1e-3 * std::max(1.0, std::fabs(y[i]))) << i;
}

// Every activation an op can declare itself as, fused into Conv (reference loops at 4 channels,
// oneDNN at 32), Gemm and MatMul, against the same graph with the activation kept separate (its
// input is also a graph output, so nothing fuses and the activation's own kernel runs).
TEST(Fusion, EveryDeclaredActivationFusesAndMatchesTheUnfusedGraph) {
  struct Act {
    const char* op;
    std::map<std::string, AttrValue> attrs;
    const char* name;
  };
  std::vector<Act> acts = {
      {"Relu", {}, "Relu"},
      {"LeakyRelu", {{"alpha", AttrValue::Float(0.2f)}}, "LeakyRelu"},
      {"Sigmoid", {}, "Sigmoid"},
      {"Tanh", {}, "Tanh"},
      {"HardSigmoid", {{"alpha", AttrValue::Float(0.3f)}, {"beta", AttrValue::Float(0.4f)}}, "HardSigmoid"},
      {"Elu", {{"alpha", AttrValue::Float(0.7f)}}, "Elu"},
      {"HardSwish", {}, "HardSwish"},
      {"Clip", {}, "Clip"},
      {"Gelu", {}, "Gelu"},
      {"Gelu", {{"approximate", AttrValue::String("tanh")}}, "GeluTanh"},
  };
  auto s = test::MakeSession();
  for (const char* producer : {"Conv4", "Conv32", "Gemm", "MatMul"}) {
    for (const Act& a : acts) {
      std::string p = producer;
      auto build = [&](bool keep_separate) {
        Graph g;
        std::vector<std::string> ins;
        if (p.rfind("Conv", 0) == 0) {
          int ch = p == "Conv4" ? 4 : 32;
          g.AddInput("x", DT_FLOAT, {1, ch, 7, 5}).AddConstant("w", test::RandomFloat({ch, ch, 3, 3}, 70, -0.3f, 0.3f));
          g.AddConstant("b", test::RandomFloat({ch}, 71));
          g.AddNode("Conv", "prod", {"x", "w", "b"}, {"h"}, {{"pads", AttrValue::ListInt({1, 1, 1, 1})}});
        } else if (p == "Gemm") {
          g.AddInput("x", DT_FLOAT, {8, 64}).AddConstant("w", test::RandomFloat({64, 48}, 72, -0.3f, 0.3f));
          g.AddNode("Gemm", "prod", {"x", "w"}, {"h"});
        } else {
          g.AddInput("x", DT_FLOAT, {2, 8, 64}).AddConstant("w", test::RandomFloat({64, 48}, 73, -0.3f, 0.3f));
          g.AddNode("MatMul", "prod", {"x", "w"}, {"h"});
        }
        std::vector<std::string> act_in{"h"};
        if (std::string(a.op) == "Clip") {
          g.AddConstant("lo", HostTensor::FromVector<float>(DT_FLOAT, {}, {-0.25f}));
          g.AddConstant("hi", HostTensor::FromVector<float>(DT_FLOAT, {}, {0.5f}));
          act_in = {"h", "lo", "hi"};
        }
        g.AddNode(a.op, "act", act_in, {"y"}, a.attrs).AddOutput("y");
        if (keep_separate) g.AddOutput("h");
        return g;
      };
      auto fused = s->Compile(build(false));
      auto plain = s->Compile(build(true));
      ASSERT_TRUE(fused.ok() && plain.ok()) << producer << "+" << a.op << ": " << fused.status().message() << plain.status().message();
      auto steps = fused.value()->DescribeSteps();
      ASSERT_EQ(steps.size(), 1u) << producer << "+" << a.op << " should be one step";
      EXPECT_EQ(steps[0].fused_activation, a.name);
      EXPECT_EQ(plain.value()->num_steps(), 2u);
      HostTensor x = test::RandomFloat(fused.value()->inputs()[0].shape, 74, -2.f, 2.f);
      auto yf = fused.value()->Run({x}).value();
      auto yp = plain.value()->Run({x}).value();
      ASSERT_EQ(yf[0].numel(), yp[0].numel());
      for (int64_t i = 0; i < yf[0].numel(); ++i) {
        float r = yp[0].data_as<float>()[i];
        ASSERT_NEAR(yf[0].data_as<float>()[i], r, 2e-5 * std::max(1.f, std::fabs(r))) << producer << "+" << a.op << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace weft
