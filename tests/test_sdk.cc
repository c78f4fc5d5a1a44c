// The header-only SDK: 16-bit floats, prototypes, attributes, capability detection, contexts.
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"
#include "weft/custom_op.h"

namespace weft {
namespace {

TEST(Float16, MatchesCompilerHalfForEveryBitPattern) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    _Float16 h;
    uint16_t b16 = static_cast<uint16_t>(bits);
    std::memcpy(&h, &b16, 2);
    float ref = static_cast<float>(h);
    float got = float16::ToFloat(b16);
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(got)) << bits;
      continue;
    }
    ASSERT_EQ(std::memcmp(&ref, &got, 4), 0) << "bits " << bits;
  }
}

TEST(Float16, RoundsLikeTheCompilerOnRandomFloats) {
  std::mt19937 g(3);
  std::uniform_int_distribution<uint32_t> d;
  for (int k = 0; k < 200000; ++k) {
    uint32_t x = d(g);
    float f;
    std::memcpy(&f, &x, 4);
    if (std::isnan(f)) continue;
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(float16::FromFloat(f), rb) << "float " << f;
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  std::mt19937 g(5);
  std::uniform_real_distribution<float> d(-1e6f, 1e6f);
  for (int k = 0; k < 100000; ++k) {
    float f = d(g);
    float got = static_cast<float>(bfloat16(f));
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t lo_bits = x & 0xFFFF0000u, hi_bits = lo_bits + 0x10000u;
    float lo, hi;
    std::memcpy(&lo, &lo_bits, 4);
    std::memcpy(&hi, &hi_bits, 4);
    double dl = std::fabs(static_cast<double>(f) - lo), dh = std::fabs(static_cast<double>(f) - hi);
    float want = dl < dh ? lo : dh < dl ? hi : ((lo_bits >> 16) & 1 ? hi : lo);
    ASSERT_EQ(got, want) << f;
  }
}

TEST(OpDefBuilder, BuildsTheCPrototype) {
  auto def = OpDefBuilder("Thing")
                 .INPUT(a, "T")
                 .OPTIONAL_INPUT(b, TensorType({DT_INT64}))
                 .DYNAMIC_INPUT(rest, "T")
                 .OUTPUT(y, "T").SAME_AS_INPUT(a)
                 .DYNAMIC_OUTPUT(extra, TensorType({DT_BOOL}))
                 .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16}))
                 .REQUIRED_ATTR(k, Int)
                 .ATTR(alpha, Float, 0.25)
                 .ATTR(axes, ListInt, {0, 2})
                 .ATTR(tag, String, "x")
                 .OP_VERSION(3)
                 .Build();
  ASSERT_TRUE(def->error().empty()) << def->error();
  const WeftOpPrototype* p = def->c();
  EXPECT_STREQ(p->op_type, "Thing");
  EXPECT_EQ(p->version, 3u);
  ASSERT_EQ(p->num_inputs, 3u);
  EXPECT_EQ(p->inputs[1]->kind, WEFT_IO_OPTIONAL);
  EXPECT_EQ(p->inputs[2]->kind, WEFT_IO_DYNAMIC);
  EXPECT_STREQ(p->inputs[0]->dtype_symbol, "T");
  EXPECT_EQ(p->inputs[1]->dtypes[0], WEFT_DT_INT64);
  ASSERT_EQ(p->num_outputs, 2u);
  EXPECT_EQ(p->outputs[0]->same_as_input, 0);
  EXPECT_EQ(p->outputs[1]->same_as_input, -1);
  ASSERT_EQ(p->num_attrs, 4u);
  EXPECT_TRUE(p->attrs[0]->required);
  EXPECT_EQ(p->attrs[0]->default_value, nullptr);
  EXPECT_FLOAT_EQ(p->attrs[1]->default_value->f, 0.25f);
  ASSERT_EQ(p->attrs[2]->default_value->count, 2u);
  EXPECT_EQ(p->attrs[2]->default_value->ints[1], 2);
  EXPECT_STREQ(p->attrs[3]->default_value->s, "x");
  ASSERT_EQ(p->num_dtype_symbols, 1u);
  EXPECT_EQ(p->dtype_symbols[0]->num_dtypes, 2u);
}

TEST(OpDefBuilder, ReportsMalformedPrototypes) {
  auto dup = OpDefBuilder("Dup").INPUT(x, TensorType({DT_FLOAT})).OUTPUT(x, TensorType({DT_FLOAT})).Build();
  EXPECT_TRUE(test::Contains(dup->error(), "REG_OP(Dup): name 'x' is declared twice"));
  auto same = OpDefBuilder("Same").INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).SAME_AS_INPUT(q).Build();
  EXPECT_TRUE(test::Contains(same->error(), "SAME_AS_INPUT(q) but there is no input named 'q'"));
  auto sym = OpDefBuilder("Sym").INPUT(x, "T").OUTPUT(y, "T").Build();
  EXPECT_TRUE(test::Contains(sym->error(), "type symbol 'T' with no DATATYPE(T, ...)"));
  auto none = OpDefBuilder("None").INPUT(x, TensorType({DT_FLOAT})).Build();
  EXPECT_TRUE(test::Contains(none->error(), "no OUTPUT declared"));
}

class EagerOnly : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext*) override { return GRAPH_SUCCESS; }
};
class Everything : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public PortableOp, public ArgsUpdater {
 public:
  graphStatus Execute(EagerOpExecutionContext*) override { return GRAPH_SUCCESS; }
  graphStatus InferShape(InferShapeContext*) override { return GRAPH_SUCCESS; }
  graphStatus InferDataType(InferDataTypeContext*) override { return GRAPH_SUCCESS; }
  graphStatus Compile(OpCompileContext*) override { return GRAPH_SUCCESS; }
  graphStatus Serialize(std::vector<uint8_t>&) override { return GRAPH_SUCCESS; }
  graphStatus Deserialize(const std::vector<uint8_t>&) override { return GRAPH_SUCCESS; }
  graphStatus UpdateHostArgs(UpdateArgsContext*) override { return GRAPH_SUCCESS; }
};

TEST(Capabilities, AreDetectedFromTheClass) {
  const WeftOpImpl* e = MakeOpImpl<EagerOnly>("EagerOnly");
  EXPECT_EQ(e->capabilities, WEFT_CAP_EAGER_EXECUTE);
  EXPECT_NE(e->execute, nullptr);
  EXPECT_EQ(e->infer_shape, nullptr);
  EXPECT_EQ(e->compile, nullptr);
  EXPECT_EQ(e->serialize, nullptr);
  EXPECT_EQ(e->emit, nullptr);
  const WeftOpImpl* all = MakeOpImpl<Everything>("Everything");
  EXPECT_EQ(all->capabilities, WEFT_CAP_EAGER_EXECUTE | WEFT_CAP_SHAPE_INFER | WEFT_CAP_COMPILABLE |
                                   WEFT_CAP_PORTABLE | WEFT_CAP_ARGS_UPDATER);
  EXPECT_NE(all->update_host_args, nullptr);
  EXPECT_EQ(CapabilityNames(all->capabilities),
            (std::vector<std::string>{"EagerExecute", "ShapeInfer", "Compilable", "Portable", "ArgsUpdater"}));
}

TEST(Contexts, MapIrIndicesAndAttributes) {
  // Instances: a, (b absent), rest0, rest1.
  Tensor t[3];
  for (int k = 0; k < 3; ++k) t[k].dtype = DT_FLOAT, t[k].shape.ndim = 1, t[k].shape.dims[0] = k + 1;
  WeftTensor* ins[] = {&t[0], &t[1], &t[2]};
  uint32_t start[] = {0, 1, 1}, count[] = {1, 0, 2};
  AttrValue alpha = AttrValue::Float(1.5f), axes = AttrValue::ListInt({4, 5});
  const WeftAttrValue* attrs[] = {alpha.c(), axes.c()};
  const char* names[] = {"alpha", "axes"};
  WeftKernelContext c{};
  c.struct_size = sizeof c;
  c.num_inputs = 3;
  c.inputs = ins;
  c.num_ir_inputs = 3;
  c.ir_input_start = start;
  c.ir_input_count = count;
  c.num_attrs = 2;
  c.attrs = attrs;
  c.attr_names = names;
  InferShapeContext ctx(&c);
  EXPECT_EQ(ctx.GetRequiredInputTensor(0), &t[0]);
  EXPECT_EQ(ctx.GetOptionalInputTensor(1), nullptr);
  EXPECT_EQ(ctx.GetDynamicInputTensor(2, 1), &t[2]);
  EXPECT_EQ(ctx.GetDynamicInputTensor(2, 2), nullptr);
  EXPECT_EQ(ctx.GetIrInputInstanceNum(2), 2u);
  EXPECT_EQ(ctx.GetInputShape(2)->GetDim(0), 3);
  EXPECT_EQ(ctx.GetInputTensor(7), nullptr);
  EXPECT_FLOAT_EQ(*ctx.GetAttrs()->GetFloat(0), 1.5f);
  EXPECT_EQ(ctx.GetAttrs()->GetFloat("alpha"), ctx.GetAttrs()->GetFloat(0));
  EXPECT_EQ((*ctx.GetAttrs()->GetListInt("axes"))[1], 5);
  EXPECT_EQ(ctx.GetAttrs()->GetInt("alpha"), nullptr);
  EXPECT_EQ(ctx.GetAttrs()->GetFloat("nope"), nullptr);
  EXPECT_EQ(ctx.GetAttrs()->GetFloat(9), nullptr);
}

// A context over three attributes whose host API only records errors.
struct AttrContext {
  AttrValue epsilon = AttrValue::Float(0.5f), axes = AttrValue::ListInt({4, 5}), mode = AttrValue::String("fast");
  const WeftAttrValue* attrs[3] = {epsilon.c(), axes.c(), mode.c()};
  const char* names[3] = {"epsilon", "axes", "mode"};
  std::string error;
  WeftHostApi api{};
  WeftKernelContext c{};
  AttrContext() {
    api.struct_size = sizeof api;
    api.set_error = [](WeftKernelContext* k, const char* m) { static_cast<AttrContext*>(k->engine)->error = m; };
    c.struct_size = sizeof c;
    c.api = &api;
    c.engine = this;
    c.num_attrs = 3;
    c.attrs = attrs;
    c.attr_names = names;
  }
};

TEST(Attributes, NameGetterRecordsWhyItGaveNullptr) {
  AttrContext t;
  RuntimeAttrs a(&t.c);
  EXPECT_EQ(a.GetFloat("epsilom"), nullptr);
  EXPECT_EQ(t.error,
            "the op has no attribute 'epsilom' (read as Float); did you mean 'epsilon'? "
            "Its attributes: epsilon (Float), axes (ListInt), mode (String)");
  EXPECT_EQ(a.GetInt("epsilon"), nullptr);
  EXPECT_EQ(t.error,
            "attribute 'epsilon' is Float, read as Int. Its attributes: epsilon (Float), axes (ListInt), mode (String)");
  EXPECT_EQ(a.GetAttrPointer<TypedContinuousVector<float>>("Axes"), nullptr);  // the case-only slip
  EXPECT_TRUE(test::Contains(t.error, "no attribute 'Axes' (read as ListFloat); did you mean 'axes'?"));
  EXPECT_EQ(a.GetStr("temperature"), nullptr);  // nothing near: no suggestion
  EXPECT_EQ(t.error.find("did you mean"), std::string::npos) << t.error;
  EXPECT_TRUE(test::Contains(t.error, "no attribute 'temperature' (read as String). Its attributes: "));

  // Index getters (GE) and IndexOf stay silent; a good name records nothing.
  t.error.clear();
  EXPECT_EQ(a.GetInt(0), nullptr);
  EXPECT_EQ(a.GetFloat(7), nullptr);
  EXPECT_EQ(a.IndexOf("momentum"), 3u);
  ASSERT_NE(a.GetFloat("epsilon"), nullptr);
  EXPECT_EQ(t.error, "");

  WeftKernelContext none{};  // an op without attributes
  none.api = &t.api;
  none.engine = &t;
  EXPECT_EQ(RuntimeAttrs(&none).GetBool("enabled"), nullptr);
  EXPECT_EQ(t.error, "the op has no attribute 'enabled' (read as Bool); it takes no attributes");
}

TEST(Attributes, TypedAccessAsGeSpellsIt) {
  AttrContext t;
  RuntimeAttrs a(&t.c);
  EXPECT_EQ(*a.GetAttrPointer<float>(0), 0.5f);
  EXPECT_EQ(a.GetAttrPointer<float>("epsilon"), a.GetFloat(0));
  EXPECT_STREQ(a.GetAttrPointer<char>(2), "fast");
  EXPECT_EQ(a.GetAttrPointer<int64_t>(0), nullptr);
  const TypedContinuousVector<int64_t>* axes = a.GetListInt(1);
  ASSERT_NE(axes, nullptr);
  EXPECT_EQ(axes->GetSize(), 2u);
  EXPECT_EQ(axes->GetData()[1], 5);
  EXPECT_EQ(a.GetAttrPointer<TypedContinuousVector<int64_t>>("axes"), axes);
  EXPECT_EQ(axes->ToVector(), (std::vector<int64_t>{4, 5}));
  int64_t sum = 0;
  for (int64_t v : *axes) sum += v;
  EXPECT_EQ(sum, 9);
  // A ListView takes what the getters return; a missing list is an empty view.
  ListView<int64_t> view = a.GetListInt("axes");
  EXPECT_EQ(view.size(), 2u);
  ListView<float> missing = a.GetListFloat(1);
  EXPECT_EQ(missing.size(), 0u);
  EXPECT_EQ(t.error, "");
}

TEST(Contexts, ComputeNodeInfoDescribesTheNode) {
  Tensor x, w, y;
  x.dtype = DT_FLOAT, x.format = FORMAT_NC1HWC0;
  w.dtype = DT_FLOAT16;
  y.dtype = DT_FLOAT;
  WeftTensor* ins[] = {&x, &w};
  WeftTensor* outs[] = {&y};
  uint32_t start[] = {0, 1, 2}, count[] = {1, 1, 0};
  AttrContext t;
  t.c.op_type = "Conv";
  t.c.node_name = "stem/conv1";
  t.c.num_inputs = 2;
  t.c.inputs = ins;
  t.c.num_outputs = 1;
  t.c.outputs = outs;
  t.c.num_ir_inputs = 3;
  t.c.ir_input_start = start;
  t.c.ir_input_count = count;
  t.c.num_ir_outputs = 1;
  EagerOpExecutionContext ctx(&t.c);
  const ComputeNodeInfo* node = ctx.GetComputeNodeInfo();
  EXPECT_STREQ(node->GetNodeType(), "Conv");
  EXPECT_STREQ(node->GetNodeName(), "stem/conv1");
  EXPECT_EQ(node->GetIrInputsNum(), 3u);
  EXPECT_EQ(node->GetInputsNum(), 2u);
  EXPECT_EQ(node->GetOutputsNum(), 1u);
  EXPECT_EQ(node->GetAttrs(), ctx.GetAttrs());
  EXPECT_EQ(node->GetInputTdInfo(1)->GetDataType(), DT_FLOAT16);
  EXPECT_EQ(node->GetInputTdInfo(2), nullptr);
  EXPECT_EQ(node->GetOutputTdInfo(0)->GetStorageFormat(), FORMAT_ND);
  // A blocked tensor: stored NC1HWC0, standing for NCHW.
  EXPECT_EQ(node->GetInputTdInfo(0)->GetFormat(), StorageFormat(FORMAT_NCHW, FORMAT_NC1HWC0));
  EXPECT_EQ(x.GetStorageFormat(), FORMAT_NC1HWC0);
  EXPECT_EQ(x.GetOriginFormat(), FORMAT_NCHW);
  EXPECT_EQ(y.GetOriginFormat(), FORMAT_ND);
  // A copy of a context describes the same node.
  EagerOpExecutionContext copy = ctx;
  EXPECT_EQ(copy.GetComputeNodeInfo()->GetAttrs(), copy.GetAttrs());
  EXPECT_STREQ(copy.GetComputeNodeInfo()->GetNodeName(), "stem/conv1");
}

// One AttrMistake node (tests/plugins/test_ops.cc) making `mistake` in its Execute.
std::string AttrMistakeError(const std::string& mistake) {
  auto s = test::MakeSession({"test_ops"});
  Graph g;
  g.AddInput("x", DT_FLOAT, {4})
      .AddNode("AttrMistake", "norm1", {"x"}, {"y"}, {{"mistake", AttrValue::String(mistake)}})
      .AddOutput("y");
  auto r = s->Compile(g).value()->Run({test::RandomFloat({4}, 1)});
  return r.ok() ? "(ran)" : r.status().message();
}

TEST(Attributes, TypoInExecuteNamesTheAttributeAndSuggests) {
  EXPECT_EQ(AttrMistakeError("typo"),
            "[AttrMistake 'norm1'] Execute failed: the op has no attribute 'epsilom' (read as Float); did you mean "
            "'epsilon'? Its attributes: epsilon (Float), axes (ListInt), mistake (String)");
}

TEST(Attributes, WrongTypeInExecuteSaysBothTypes) {
  EXPECT_EQ(AttrMistakeError("type"),
            "[AttrMistake 'norm1'] Execute failed: attribute 'epsilon' is Float, read as Int. Its attributes: "
            "epsilon (Float), axes (ListInt), mistake (String)");
}

TEST(Attributes, ARecoveredProbeLeavesNoErrorBehind) {
  EXPECT_EQ(AttrMistakeError("probe"), "(ran)");
  // The next node fails without a message: the probe's message must not be blamed on it.
  auto s = test::MakeSession({"test_ops"});
  Graph g;
  g.AddInput("x", DT_FLOAT, {4})
      .AddNode("AttrMistake", "p", {"x"}, {"t"}, {{"mistake", AttrValue::String("probe")}})
      .AddNode("Faulty", "f", {"t"}, {"y"}, {{"where", AttrValue::String("silent")}})
      .AddOutput("y");
  auto model = s->Compile(g).value();
  for (int run = 0; run < 2; ++run)
    EXPECT_EQ(model->Run({test::RandomFloat({4}, 2)}).status().message(),
              "[Faulty 'f'] Execute failed: returned failure without a message");
}

}  // namespace
}  // namespace weft
