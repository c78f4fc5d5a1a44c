// Built-in operators against float64 re-computations on random inputs, across data types and
// broadcasting patterns.
#include "test_util.h"

namespace weft {
namespace {

using test::Contains;
using test::MakeSession;

// Random tensor of any numeric type, values kept small so integer results do not overflow.
HostTensor Random(DataType dt, const Shape& shape, uint32_t seed, bool nonzero = false) {
  HostTensor t(dt, shape);
  std::mt19937 g(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = std::uniform_real_distribution<double>(-4, 4)(g);
    if (dt != DT_FLOAT && dt != DT_DOUBLE && dt != DT_FLOAT16) v = std::round(v);
    if (nonzero && std::fabs(v) < 0.5) v = v < 0 ? -1 : 1;
    switch (dt) {
      case DT_FLOAT: t.data_as<float>()[i] = static_cast<float>(v); break;
      case DT_DOUBLE: t.data_as<double>()[i] = v; break;
      case DT_FLOAT16: t.data_as<float16>()[i] = float16(static_cast<float>(v)); break;
      case DT_INT32: t.data_as<int32_t>()[i] = static_cast<int32_t>(v); break;
      case DT_INT64: t.data_as<int64_t>()[i] = static_cast<int64_t>(v); break;
      case DT_INT8: t.data_as<int8_t>()[i] = static_cast<int8_t>(v); break;
      default: ADD_FAILURE() << "unsupported";
    }
  }
  return t;
}

double At(const HostTensor& t, int64_t i) {
  switch (t.dtype()) {
    case DT_FLOAT: return t.data_as<float>()[i];
    case DT_DOUBLE: return t.data_as<double>()[i];
    case DT_FLOAT16: return static_cast<float>(t.data_as<float16>()[i]);
    case DT_INT32: return t.data_as<int32_t>()[i];
    case DT_INT64: return static_cast<double>(t.data_as<int64_t>()[i]);
    case DT_INT8: return t.data_as<int8_t>()[i];
    default: return NAN;
  }
}

double Tolerance(DataType dt, double ref) {
  switch (dt) {
    case DT_FLOAT: return 1e-6 * std::max(1.0, std::fabs(ref));
    case DT_FLOAT16: return 1e-3 * std::max(1.0, std::fabs(ref));
    default: return 1e-12 * std::max(1.0, std::fabs(ref));
  }
}

std::vector<HostTensor> RunOne(const std::string& op, const std::vector<HostTensor>& ins) {
  auto s = MakeSession();
  Graph g;
  std::vector<std::string> names;
  for (size_t k = 0; k < ins.size(); ++k) {
    names.push_back("in" + std::to_string(k));
    g.AddInput(names.back(), ins[k].dtype(), ins[k].shape());
  }
  g.AddNode(op, "node", names, {"out"}).AddOutput("out");
  auto m = s->Compile(g);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return {};
  auto r = m.value()->Run(ins);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? std::move(r).value() : std::vector<HostTensor>{};
}

// Reference broadcast index of out index i into `in`.
int64_t SourceIndex(const Shape& in, const Shape& out, int64_t i) {
  int64_t idx = 0, stride = 1;
  size_t off = out.GetDimNum() - in.GetDimNum();
  for (size_t k = out.GetDimNum(); k-- > 0;) {
    int64_t coord = i % out.GetDim(k);
    i /= out.GetDim(k);
    if (k >= off) {
      int64_t d = in.GetDim(k - off);
      if (d != 1) idx += coord * stride;
      stride *= d;
    }
  }
  return idx;
}

struct BinCase {
  const char* op;
  double (*f)(double, double);
};

TEST(BuiltinBinary, MatchFloat64ReferenceWithBroadcasting) {
  const BinCase cases[] = {{"Add", [](double a, double b) { return a + b; }},
                           {"Sub", [](double a, double b) { return a - b; }},
                           {"Mul", [](double a, double b) { return a * b; }},
                           {"Div", [](double a, double b) { return a / b; }}};
  const std::pair<Shape, Shape> shapes[] = {{{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{4, 1, 5}, {3, 1}},
                                            {{1}, {2, 2}},    {{}, {3}},     {{2, 1, 3, 1}, {1, 4, 1, 2}}};
  uint32_t seed = 1;
  for (auto& c : cases)
    for (DataType dt : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_INT32, DT_INT64, DT_INT8})
      for (auto& [sa, sb] : shapes) {
        auto a = Random(dt, sa, seed++), b = Random(dt, sb, seed++, /*nonzero=*/true);
        auto out = RunOne(c.op, {a, b});
        ASSERT_EQ(out.size(), 1u);
        const Shape& so = out[0].shape();
        for (int64_t i = 0; i < out[0].numel(); ++i) {
          double ref = c.f(At(a, SourceIndex(sa, so, i)), At(b, SourceIndex(sb, so, i)));
          if (dt == DT_INT32 || dt == DT_INT64 || dt == DT_INT8) ref = std::trunc(ref);  // C integer division
          ASSERT_NEAR(At(out[0], i), ref, Tolerance(dt, ref))
              << c.op << " " << DataTypeName(dt) << " " << sa.ToString() << " x " << sb.ToString() << " at " << i;
        }
      }
}

TEST(BuiltinBinary, IntegerDivisionByZeroIsAnError) {
  auto a = HostTensor::FromVector<int32_t>(DT_INT32, {3}, {1, 2, 3});
  auto b = HostTensor::FromVector<int32_t>(DT_INT32, {3}, {1, 0, 3});
  auto s = MakeSession();
  Graph g;
  g.AddInput("a", DT_INT32, {3}).AddInput("b", DT_INT32, {3}).AddNode("Div", "d", {"a", "b"}, {"c"}).AddOutput("c");
  auto r = s->Compile(g).value()->Run({a, b});
  EXPECT_TRUE(Contains(r.status().message(), "[Div 'd'] Execute failed: Div: integer division by zero (input B, element 1)"));
}

// The vectorized float32 Exp, Sigmoid, Tanh and Erf against float64 over the whole float range: a
// dense sweep of [-100, 100], powers of two from the smallest denormal up, the points where
// the kernels switch method, and inf, -inf, NaN and -0.
TEST(BuiltinUnary, VectorizedExpSigmoidTanhErfAreWithinAFewUlp) {
  std::vector<float> xs;
  for (int i = 0; i <= 400000; ++i) xs.push_back(-100.0f + 200.0f * static_cast<float>(i) / 400000.0f);
  for (float p = std::numeric_limits<float>::denorm_min(); std::isfinite(p); p *= 2) {
    xs.push_back(p);
    xs.push_back(-p);
  }
  for (float c : {0.4f, 0.9f, 88.7228394f, 88.75f, -87.5f, -87.3365f, -103.9f, 44.36f, 12582912.0f, 1e-30f})
    for (float d : {std::nextafter(c, -1e30f), c, std::nextafter(c, 1e30f)}) {
      xs.push_back(d);
      xs.push_back(-d);
    }
  for (float v : {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    xs.push_back(v);
  HostTensor x(DT_FLOAT, Shape({static_cast<int64_t>(xs.size())}));
  std::copy(xs.begin(), xs.end(), x.data_as<float>());
  const std::pair<const char*, double (*)(double)> ops[] = {
      {"Exp", [](double v) { return std::exp(v); }},
      {"Sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"Tanh", [](double v) { return std::tanh(v); }},
      {"Erf", [](double v) { return std::erf(v); }},
  };
  for (auto& [op, ref] : ops) {
    auto out = RunOne(op, {x});
    const float* y = out[0].data_as<float>();
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      double want = ref(static_cast<double>(xs[i]));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << op << "(" << xs[i] << ")";
        continue;
      }
      if (std::fabs(want) > std::numeric_limits<float>::max()) {  // beyond float: inf (or the largest float)
        EXPECT_TRUE(std::isinf(y[i]) || std::fabs(y[i]) == std::numeric_limits<float>::max()) << op << "(" << xs[i] << ") = " << y[i];
        EXPECT_EQ(std::signbit(y[i]), std::signbit(want)) << op << "(" << xs[i] << ")";
        continue;
      }
      // Relative error, in float32 ulps of the true value; results below FLT_MIN are held to
      // an absolute error of FLT_MIN.
      double err = std::fabs(static_cast<double>(y[i]) - want);
      if (std::fabs(want) < std::numeric_limits<float>::min()) {
        EXPECT_LE(err, std::numeric_limits<float>::min()) << op << "(" << xs[i] << ")";
        continue;
      }
      double ulps = err / (std::fabs(want) * std::numeric_limits<float>::epsilon());
      if (ulps > worst) worst = ulps, worst_at = i;
    }
    EXPECT_LE(worst, 4.0) << op << ": " << worst << " ulp at x = " << xs[worst_at];
  }
}

TEST(BuiltinRelu, MatchesReference) {
  for (DataType dt : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_INT32, DT_INT64, DT_INT8}) {
    auto x = Random(dt, {3, 7}, 77);
    auto out = RunOne("Relu", {x});
    ASSERT_EQ(out.size(), 1u);
    for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(At(out[0], i), std::max(0.0, At(x, i))) << DataTypeName(dt);
  }
}

// NaN through Relu stays NaN (PyTorch's and NumPy's max(x, 0)); Clip with min above max gives
// max everywhere (ONNX: min(max(x, min), max)).
TEST(BuiltinRelu, NaNPropagatesAndClipOrdersItsBounds) {
  HostTensor x(DT_FLOAT, Shape({3}));
  const float xs[] = {1.0f, std::numeric_limits<float>::quiet_NaN(), -2.0f};
  std::copy(xs, xs + 3, x.data_as<float>());
  auto r = RunOne("Relu", {x});
  EXPECT_EQ(r[0].data_as<float>()[0], 1.0f);
  EXPECT_TRUE(std::isnan(r[0].data_as<float>()[1]));
  EXPECT_EQ(r[0].data_as<float>()[2], 0.0f);
  HostTensor v(DT_FLOAT, Shape({3})), lo(DT_FLOAT, Shape()), hi(DT_FLOAT, Shape());
  const float vs[] = {-3.0f, 0.0f, 3.0f};
  std::copy(vs, vs + 3, v.data_as<float>());
  lo.data_as<float>()[0] = 1.0f;
  hi.data_as<float>()[0] = -1.0f;
  auto c = RunOne("Clip", {v, lo, hi});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c[0].data_as<float>()[i], -1.0f) << i;
}

TEST(BuiltinIdentity, CopiesEveryType) {
  for (DataType dt : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_INT32, DT_INT64, DT_INT8}) {
    auto x = Random(dt, {5, 2}, 5);
    auto out = RunOne("Identity", {x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(std::memcmp(out[0].data(), x.data(), x.bytes()), 0);
  }
}

TEST(BuiltinMatMul, MatchesFloat64ReferenceForNumpyShapes) {
  struct Case { Shape a, b; };
  const Case cases[] = {{{3, 4}, {4, 5}}, {{4}, {4, 2}}, {{3, 4}, {4}}, {{4}, {4}}, {{2, 3, 4}, {4, 5}},
                        {{2, 1, 3, 4}, {5, 4, 2}}, {{1, 17}, {17, 33}}};
  uint32_t seed = 100;
  for (DataType dt : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_INT32})
    for (auto& c : cases) {
      auto a = Random(dt, c.a, seed++), b = Random(dt, c.b, seed++);
      auto out = RunOne("MatMul", {a, b});
      ASSERT_EQ(out.size(), 1u);
      // Reference: promote 1-D, broadcast batch dims, float64 accumulation.
      Shape pa = c.a, pb = c.b;
      if (pa.GetDimNum() == 1) pa = Shape({1, c.a.GetDim(0)});
      if (pb.GetDimNum() == 1) pb = Shape({c.b.GetDim(0), 1});
      int64_t m = pa.GetDim(pa.GetDimNum() - 2), k = pa.GetDim(pa.GetDimNum() - 1), n = pb.GetDim(pb.GetDimNum() - 1);
      Shape ba, bb, batch;
      for (size_t d = 0; d + 2 < pa.GetDimNum(); ++d) ba.AppendDim(pa.GetDim(d));
      for (size_t d = 0; d + 2 < pb.GetDimNum(); ++d) bb.AppendDim(pb.GetDim(d));
      size_t nb = std::max(ba.GetDimNum(), bb.GetDimNum());
      for (size_t d = 0; d < nb; ++d) {
        int64_t x = d < nb - ba.GetDimNum() ? 1 : ba.GetDim(d - (nb - ba.GetDimNum()));
        int64_t y = d < nb - bb.GetDimNum() ? 1 : bb.GetDim(d - (nb - bb.GetDimNum()));
        batch.AppendDim(std::max(x, y));
      }
      ASSERT_EQ(out[0].numel(), batch.GetShapeSize() * m * n) << out[0].shape().ToString();
      for (int64_t bi = 0; bi < batch.GetShapeSize(); ++bi) {
        int64_t ia = ba.GetDimNum() ? SourceIndex(ba, batch, bi) : 0, ib = bb.GetDimNum() ? SourceIndex(bb, batch, bi) : 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double ref = 0;
            for (int64_t p = 0; p < k; ++p) ref += At(a, ia * m * k + i * k + p) * At(b, ib * k * n + p * n + j);
            double got = At(out[0], bi * m * n + i * n + j);
            double tol = dt == DT_FLOAT16 ? 2e-3 * std::max(1.0, std::fabs(ref)) : dt == DT_FLOAT ? 1e-5 * std::max(1.0, std::fabs(ref)) : 1e-9;
            ASSERT_NEAR(got, ref, tol) << DataTypeName(dt) << " " << c.a.ToString() << " x " << c.b.ToString();
          }
      }
    }
}

TEST(BuiltinMatMul, InnerDimensionMismatchIsNamed) {
  auto s = MakeSession();
  Graph g;
  g.AddInput("a", DT_FLOAT, {2, 3}).AddInput("b", DT_FLOAT, {4, 5}).AddNode("MatMul", "mm", {"a", "b"}, {"c"}).AddOutput("c");
  auto m = s->Compile(g);
  EXPECT_TRUE(Contains(m.status().message(), "[MatMul 'mm'] InferShape failed: MatMul: inner dimensions differ: A [2,3] has K=3, B [4,5] has K=4"));
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Activations the ONNX node tests of this suite's version do not cover.
TEST(BuiltinActivations, GeluAndMishMatchFloat64) {
  auto x = test::RandomFloat({4, 33}, 31, -6.f, 6.f);
  for (const char* approx : {"none", "tanh"}) {
    auto s = test::MakeSession();
    Graph g;
    g.AddInput("x", DT_FLOAT, {4, 33}).AddNode("Gelu", "gelu", {"x"}, {"y"}, {{"approximate", AttrValue::String(approx)}}).AddOutput("y");
    auto out = s->Compile(g).value()->Run({x}).value();
    for (int64_t i = 0; i < x.numel(); ++i) {
      double v = x.data_as<float>()[i];
      double want = std::string(approx) == "none" ? 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))
                                                  : 0.5 * v * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
      ASSERT_NEAR(out[0].data_as<float>()[i], want, 1e-5 * std::max(1.0, std::fabs(want))) << approx << " " << v;
    }
  }
  auto mish = RunOne("Mish", {x});
  ASSERT_EQ(mish.size(), 1u);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.data_as<float>()[i];
    double want = v * std::tanh(std::log1p(std::exp(v)));
    ASSERT_NEAR(mish[0].data_as<float>()[i], want, 1e-5 * std::max(1.0, std::fabs(want))) << v;
  }
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// Softmax, LayerNormalization and Transpose split their rows over the intra-op threads once the
// tensor is large: the threaded path against float64 re-computations.
TEST(BuiltinThreaded, RowSplitKernelsMatchReferences) {
  auto s = test::MakeSession({}, false, /*threads=*/2);
  const int64_t rows = 96, n = 700;  // 67,200 elements: above the split threshold
  Graph g;
  g.AddInput("x", DT_FLOAT, {rows, n}).AddConstant("g", test::RandomFloat({n}, 2)).AddConstant("b", test::RandomFloat({n}, 3));
  g.AddNode("Softmax", "sm", {"x"}, {"sm"}, {{"axis", AttrValue::Int(-1)}});
  g.AddNode("LayerNormalization", "ln", {"x", "g", "b"}, {"ln"}, {{"axis", AttrValue::Int(-1)}});
  g.AddNode("Transpose", "tr", {"x"}, {"tr"}, {{"perm", AttrValue::ListInt({1, 0})}});
  g.AddOutput("sm").AddOutput("ln").AddOutput("tr");
  auto m = s->Compile(g);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto x = test::RandomFloat({rows, n}, 1, -8.f, 8.f);
  auto out = m.value()->Run({x}).value();
  const float* px = x.data_as<float>();
  const float* gam = g.constants()[0].second.data_as<float>();
  const float* bet = g.constants()[1].second.data_as<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = px + r * n;
    double mx = *std::max_element(row, row + n), sum = 0, mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(double(row[j]) - mx), mean += row[j];
    mean /= n;
    for (int64_t j = 0; j < n; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= n;
    for (int64_t j = 0; j < n; ++j) {
      double sm = std::exp(double(row[j]) - mx) / sum;
      ASSERT_NEAR(out[0].data_as<float>()[r * n + j], sm, 1e-5 * std::max(1e-3, sm)) << r << "," << j;
      double ln = (row[j] - mean) / std::sqrt(var + 1e-5) * gam[j] + bet[j];
      ASSERT_NEAR(out[1].data_as<float>()[r * n + j], ln, 1e-4 * std::max(1.0, std::fabs(ln))) << r << "," << j;
      ASSERT_EQ(out[2].data_as<float>()[j * rows + r], row[j]);
    }
  }
}

}  // namespace
}  // namespace weft
