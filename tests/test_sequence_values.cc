// Sequence and optional values (weft/sequence.h): building and taking them apart, and what the
// runtime does with a value that is not well formed (a caller's or a file's bytes): a clear error
// naming the problem, never a read outside the value.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"
#include "weft/sequence.h"
#include "weft/weft.h"

namespace weft {
namespace {
using test::Contains;

std::shared_ptr<Session> NewSession() {
  SessionOptions o;
  o.use_env_path = false;
  return Session::Create(o).value();
}

HostTensor Floats(const Shape& s, float start) {
  HostTensor t(DT_FLOAT, s);
  for (int64_t k = 0; k < t.numel(); ++k) t.data_as<float>()[k] = start + static_cast<float>(k);
  return t;
}

TEST(SequenceValues, RoundTrip) {
  std::vector<HostTensor> items{Floats({2, 3}, 0), Floats({}, 7), Floats({0, 4}, 0), Floats({5}, -2)};
  HostTensor seq = MakeSequence(DT_FLOAT, items).value();
  EXPECT_EQ(seq.dtype(), SequenceOf(DT_FLOAT));
  EXPECT_STREQ(DataTypeName(seq.dtype()), "sequence(float32)");
  auto back = ValueItems(seq).value();
  ASSERT_EQ(back.size(), items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    EXPECT_EQ(back[k].shape(), items[k].shape());
    ASSERT_EQ(back[k].bytes(), items[k].bytes());
    if (items[k].bytes()) EXPECT_EQ(std::memcmp(back[k].data(), items[k].data(), items[k].bytes()), 0);
  }
  HostTensor opt = MakeOptional(SequenceOf(DT_FLOAT), &seq).value();
  EXPECT_STREQ(DataTypeName(opt.dtype()), "optional(sequence(float32))");
  auto held = ValueItems(opt).value();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(ValueItems(held[0]).value().size(), items.size());
  EXPECT_TRUE(ValueItems(MakeOptional(DT_INT64, nullptr).value()).value().empty());
}

TEST(SequenceValues, RefusesMixedTypes) {
  HostTensor i(DT_INT64, Shape({2}));
  auto r = MakeSequence(DT_FLOAT, {Floats({1}, 0), i});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "item 1 is int64")) << r.status().message();
  EXPECT_FALSE(MakeOptional(DT_FLOAT, &i).ok());
  EXPECT_FALSE(MakeSequence(SequenceOf(DT_FLOAT), {}).ok());  // no sequences of sequences
}

// Corrupts a well-formed sequence in one way; Parse must refuse it with `why`.
void ExpectRefused(std::vector<uint8_t> bytes, const char* why) {
  ValueView v;
  std::string error;
  EXPECT_FALSE(v.Parse(bytes.data(), bytes.size(), SequenceOf(DT_FLOAT), &error)) << why;
  EXPECT_TRUE(Contains(error, why)) << error;
}

TEST(SequenceValues, ParseRefusesMalformedBytes) {
  HostTensor seq = MakeSequence(DT_FLOAT, {Floats({2, 3}, 0), Floats({4}, 1)}).value();
  const auto* p = seq.data_as<uint8_t>();
  const std::vector<uint8_t> good(p, p + seq.bytes());
  ValueView ok;
  std::string error;
  ASSERT_TRUE(ok.Parse(good.data(), good.size(), SequenceOf(DT_FLOAT), &error)) << error;
  ASSERT_EQ(ok.size(), 2u);

  ExpectRefused(std::vector<uint8_t>(good.begin(), good.begin() + 8), "header");
  auto bad = good;
  bad[0] ^= 1;
  ExpectRefused(bad, "magic");
  bad = good;
  int32_t other = SequenceOf(DT_INT32);
  std::memcpy(bad.data() + 4, &other, 4);
  ExpectRefused(bad, "sequence(int32)");
  bad = good;
  uint64_t huge = uint64_t(1) << 60;
  std::memcpy(bad.data() + 8, &huge, 8);
  ExpectRefused(bad, "count");
  bad = good;
  int32_t ndim = 9;
  std::memcpy(bad.data() + 20, &ndim, 4);
  ExpectRefused(bad, "rank 9");
  bad = good;
  int64_t dim = int64_t(1) << 40;  // the first record's first dim: a shape its bytes do not hold
  std::memcpy(bad.data() + 24, &dim, 8);
  ExpectRefused(bad, "bytes");
  bad = good;
  dim = -3;
  std::memcpy(bad.data() + 24, &dim, 8);
  ExpectRefused(bad, "shape");
  bad = good;
  bad.resize(bad.size() - 8);
  ExpectRefused(bad, "truncated");
  bad = good;
  bad.resize(bad.size() + 8, 0);
  ExpectRefused(bad, "after its last record");
  int32_t wrong = DT_INT32;  // a record of another element type
  bad = good;
  std::memcpy(bad.data() + 16, &wrong, 4);
  ExpectRefused(bad, "has type");
}

// SequenceLength(seq) and SequenceAt(seq, pos): a model with a sequence input.
std::shared_ptr<CompiledModel> LengthAndAt() {
  Graph g("seq");
  g.AddInput("s", SequenceOf(DT_FLOAT), Shape({-1})).AddInput("pos", DT_INT64, Shape());
  Node len;
  len.op_type = "SequenceLength";
  len.name = "len";
  len.inputs = {"s"};
  len.outputs = {"n"};
  g.AddNode(len);
  Node at;
  at.op_type = "SequenceAt";
  at.name = "at";
  at.inputs = {"s", "pos"};
  at.outputs = {"y"};
  g.AddNode(at);
  g.AddOutput("n").AddOutput("y");
  return NewSession()->Compile(g).value();
}

HostTensor Int64(int64_t v) {
  HostTensor t(DT_INT64, Shape());
  *t.data_as<int64_t>() = v;
  return t;
}

TEST(SequenceValues, ModelReadsAndRefusesInputs) {
  auto m = LengthAndAt();
  HostTensor seq = MakeSequence(DT_FLOAT, {Floats({2, 3}, 0), Floats({4}, 10)}).value();
  auto out = m->Run({seq, Int64(-1)}).value();
  EXPECT_EQ(*out[0].data_as<int64_t>(), 2);
  ASSERT_EQ(out[1].shape(), Shape({4}));
  EXPECT_EQ(out[1].data_as<float>()[3], 13.0f);

  auto far = m->Run({seq, Int64(2)});
  ASSERT_FALSE(far.ok());
  EXPECT_TRUE(Contains(far.status().message(), "position 2 is outside [-2, 1]")) << far.status().message();
  EXPECT_TRUE(Contains(far.status().message(), "'at'")) << far.status().message();

  HostTensor broken = seq;
  broken.data_as<uint8_t>()[0] = 0;
  auto r = m->Run({broken, Int64(0)});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "magic")) << r.status().message();

  // Bytes of a plain tensor where the sequence goes: refused by type.
  HostTensor raw(DT_UINT8, seq.shape());
  auto t = m->Run({raw, Int64(0)});
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(Contains(t.status().message(), "sequence(float32)")) << t.status().message();
}

// An op that does not take sequences refuses one by name when the graph compiles.
TEST(SequenceValues, TensorOpsRefuseSequences) {
  Graph g("bad");
  g.AddInput("s", SequenceOf(DT_FLOAT), Shape({-1}));
  Node relu;
  relu.op_type = "Relu";
  relu.name = "relu";
  relu.inputs = {"s"};
  relu.outputs = {"y"};
  g.AddNode(relu);
  g.AddOutput("y");
  auto m = NewSession()->Compile(g);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Contains(m.status().message(), "sequence(float32)")) << m.status().message();
}

}  // namespace
}  // namespace weft
