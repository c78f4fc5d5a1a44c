// ONNX ModelProto → Graph. Rewrites old opset forms to the form the built-ins implement (the
// newest), folds Constant nodes into graph constants.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>
#include <onnx/onnx-data_pb.h>

#include "frontends/model_hooks.h"
#include "frontends/onnx/onnx_contrib.h"
#include "core/file_io.h"
#include "weft/onnx.h"

namespace fs = std::filesystem;

namespace weft {
namespace {

// The newest default-domain opset whose operator forms the importer knows (ONNX 1.23 defines 28).
constexpr int64_t kNewestOpset = 28;

// The opset that first defines each default-domain operator not in opset 1 (ONNX's operator
// changelog). A node older than its operator is an error, as ONNX's checker makes it. Not
// LayerNormalization: ONNX Runtime defines its own in the ONNX domain from opset 1 and writes it
// into the files it saves optimized, whatever their opset (its LayerNormFusion).
int64_t FirstOpset(const std::string& op) {
  static const std::map<std::string, int64_t> kFirst = [] {
    const std::pair<int64_t, const char*> since[] = {
        {7, "Acos Asin Atan Cos Multinomial Sin Tan"},
        {8, "Expand Scan"},
        {9, "Acosh Asinh Atanh Compress ConstantOfShape Cosh Erf EyeLike IsNaN MaxUnpool MeanVarianceNormalization "
            "NonZero OneHot Scatter Shrink Sign Sinh TfIdfVectorizer Where"},
        {10, "ConvInteger DequantizeLinear IsInf MatMulInteger Mod NonMaxSuppression QLinearConv QLinearMatMul "
             "QuantizeLinear Resize ReverseSequence RoiAlign StringNormalizer ThresholdedRelu"},
        {11, "BitShift ConcatFromSequence CumSum Det DynamicQuantizeLinear GatherElements GatherND Range Round "
             "ScatterElements ScatterND SequenceAt SequenceConstruct SequenceEmpty SequenceErase SequenceInsert "
             "SequenceLength SplitToSequence Unique"},
        {12, "Celu Einsum GreaterOrEqual LessOrEqual NegativeLogLikelihoodLoss SoftmaxCrossEntropyLoss"},
        {14, "HardSwish Trilu"},
        {15, "Bernoulli CastLike Optional OptionalGetElement OptionalHasElement"},
        {16, "GridSample"},
        {17, "BlackmanWindow DFT HammingWindow HannWindow MelWeightMatrix STFT SequenceMap"},
        {18, "BitwiseAnd BitwiseNot BitwiseOr BitwiseXor CenterCropPad Col2Im GroupNormalization Mish"},
        {19, "DeformConv"},
        {20, "AffineGrid Gelu ImageDecoder RegexFullMatch StringConcat StringSplit"},
        {23, "Attention RMSNormalization RotaryEmbedding"},
        {24, "Swish TensorScatter"},
        {26, "BitCast CumProd"},
        {27, "CausalConvWithState LinearAttention"},
        {28, "SwiGLU"}};
    std::map<std::string, int64_t> m;
    for (const auto& [v, names] : since) {
      std::istringstream in(names);
      for (std::string name; in >> name;) m[name] = v;
    }
    return m;
  }();
  auto it = kFirst.find(op);
  return it == kFirst.end() ? 1 : it->second;
}

DataType FromOnnx(int32_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DT_FLOAT;
    case onnx::TensorProto::UINT8: return DT_UINT8;
    case onnx::TensorProto::INT8: return DT_INT8;
    case onnx::TensorProto::UINT16: return DT_UINT16;
    case onnx::TensorProto::INT16: return DT_INT16;
    case onnx::TensorProto::INT32: return DT_INT32;
    case onnx::TensorProto::INT64: return DT_INT64;
    case onnx::TensorProto::BOOL: return DT_BOOL;
    case onnx::TensorProto::FLOAT16: return DT_FLOAT16;
    case onnx::TensorProto::DOUBLE: return DT_DOUBLE;
    case onnx::TensorProto::UINT32: return DT_UINT32;
    case onnx::TensorProto::UINT64: return DT_UINT64;
    case onnx::TensorProto::BFLOAT16: return DT_BF16;
    default: return DT_UNDEFINED;
  }
}

// An ONNX value type as Weft's: a tensor's element type, or a sequence or optional of tensors
// (weft/sequence.h). DT_UNDEFINED, with the reason in *why, for anything else (maps, sequences
// of sequences, element types Weft does not hold).
DataType FromOnnxType(const onnx::TypeProto& t, std::string* why);

std::string OnnxTypeName(int32_t t) {
  return onnx::TensorProto::DataType_IsValid(t) ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t))
                                               : "type " + std::to_string(t);
}

DataType FromOnnxType(const onnx::TypeProto& t, std::string* why) {
  if (t.has_tensor_type()) {
    DataType dt = FromOnnx(t.tensor_type().elem_type());
    if (dt == DT_UNDEFINED) *why = "unsupported element type " + OnnxTypeName(t.tensor_type().elem_type());
    return dt;
  }
  if (t.has_sequence_type()) {
    const onnx::TypeProto& e = t.sequence_type().elem_type();
    if (!e.has_tensor_type()) {
      *why = "a sequence of non-tensors (only sequences of tensors are supported)";
      return DT_UNDEFINED;
    }
    DataType dt = FromOnnxType(e, why);
    return dt == DT_UNDEFINED ? dt : SequenceOf(dt);
  }
  if (t.has_optional_type()) {
    const onnx::TypeProto& e = t.optional_type().elem_type();
    if (!e.has_tensor_type() && !e.has_sequence_type()) {
      *why = std::string("an optional of ") + (e.has_optional_type() ? "an optional" : e.has_map_type() ? "a map" : "a non-tensor") +
             " (only optional tensors and sequences are supported)";
      return DT_UNDEFINED;
    }
    DataType dt = FromOnnxType(e, why);
    return dt == DT_UNDEFINED ? dt : OptionalOf(dt);
  }
  *why = t.has_map_type() ? "a map (not supported)" : t.has_sparse_tensor_type() ? "a sparse tensor (not supported)" : "of no type";
  return DT_UNDEFINED;
}

Expected<HostTensor> TensorFromProto(const onnx::TensorProto& p, const std::string& base_dir) {
  std::string what = "tensor '" + p.name() + "'";
  DataType dt = FromOnnx(p.data_type());
  if (dt == DT_UNDEFINED) return InvalidArgument(what + " has unsupported element type " + OnnxTypeName(p.data_type()));
  if (p.dims_size() > WEFT_MAX_DIMS) return InvalidArgument(what + " has more than " + std::to_string(WEFT_MAX_DIMS) + " dims");
  Shape shape;
  int64_t n = 1;  // checked in the order Shape::GetShapeSize multiplies
  for (int64_t d : p.dims()) {
    if (d < 0) return InvalidArgument(what + " has a negative dim");
    if (__builtin_mul_overflow(n, d, &n)) return InvalidArgument(what + " has more elements than fit in 64 bits");
    shape.AppendDim(d);
  }
  size_t elem = DataTypeSize(dt);
  if (static_cast<uint64_t>(n) > (uint64_t(1) << 40) / elem) return InvalidArgument(what + " is implausibly large");
  size_t bytes = static_cast<size_t>(n) * elem;
  // The data's size is checked against the shape before the tensor is allocated, so a small
  // file cannot make the importer allocate what its dims claim.
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (auto& kv : p.external_data()) {
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset" || kv.key() == "length") {
        if (!internal::ParseNonNegativeInt64(kv.value(), kv.key() == "offset" ? &offset : &length))
          return InvalidArgument(what + ": external data " + kv.key() + " '" + kv.value().substr(0, 40) +
                                 "' is not a non-negative integer");
      }
    }
    if (location.empty()) return InvalidArgument(what + ": external data without a location");
    auto file = internal::ConfinedPath(base_dir, location, what + ": external data");
    if (!file.ok()) return file.status();
    if (length >= 0 && static_cast<size_t>(length) != bytes)
      return InvalidArgument(what + ": external data length " + std::to_string(length) + " != " + std::to_string(bytes));
    // The tensor is allocated only once the file is known to hold its bytes.
    HostTensor t;
    WEFT_RETURN_IF_ERROR(internal::ReadRegularFileRange(file.value(), what + " external data file",
                                                        static_cast<uint64_t>(offset), bytes, [&] {
                                                          t = HostTensor(dt, shape);
                                                          return t.data();
                                                        }));
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes)
      return InvalidArgument(what + ": raw_data has " + std::to_string(p.raw_data().size()) + " bytes, shape " +
                             shape.ToString() + " needs " + std::to_string(bytes));
    HostTensor t(dt, shape);
    if (bytes) std::memcpy(t.data(), p.raw_data().data(), bytes);
    return t;
  }
  int count = dt == DT_FLOAT ? p.float_data_size() : dt == DT_DOUBLE ? p.double_data_size()
              : dt == DT_INT64 ? p.int64_data_size() : dt == DT_UINT32 || dt == DT_UINT64 ? p.uint64_data_size()
              : p.int32_data_size();
  if (count != n) return InvalidArgument(what + ": has " + std::to_string(count) + " values, shape needs " + std::to_string(n));
  HostTensor t(dt, shape);
  switch (dt) {
    case DT_FLOAT:
      for (int64_t i = 0; i < n; ++i) t.data_as<float>()[i] = p.float_data(static_cast<int>(i));
      break;
    case DT_DOUBLE:
      for (int64_t i = 0; i < n; ++i) t.data_as<double>()[i] = p.double_data(static_cast<int>(i));
      break;
    case DT_INT64:
      for (int64_t i = 0; i < n; ++i) t.data_as<int64_t>()[i] = p.int64_data(static_cast<int>(i));
      break;
    case DT_UINT32:
    case DT_UINT64:
      for (int64_t i = 0; i < n; ++i) {
        if (dt == DT_UINT32) t.data_as<uint32_t>()[i] = static_cast<uint32_t>(p.uint64_data(static_cast<int>(i)));
        else t.data_as<uint64_t>()[i] = p.uint64_data(static_cast<int>(i));
      }
      break;
    default:  // int32_data carries int32, int16, int8, uint16, uint8, bool, float16, bfloat16
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = p.int32_data(static_cast<int>(i));
        std::memcpy(static_cast<uint8_t*>(t.data()) + i * elem, &v, elem);  // little-endian low bytes
      }
  }
  return t;
}

AttrValue TensorAttr(const HostTensor& h) {
  const uint8_t* p = static_cast<const uint8_t*>(h.data());
  return AttrValue::TensorValue(h.dtype(), h.shape(), std::vector<uint8_t>(p, p + h.bytes()));
}

Expected<AttrValue> AttrFromProto(const onnx::AttributeProto& a, const std::string& base_dir) {
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT: return AttrValue::Float(a.f());
    case onnx::AttributeProto::INT: return AttrValue::Int(a.i());
    case onnx::AttributeProto::STRING: return AttrValue::String(a.s());
    case onnx::AttributeProto::FLOATS: return AttrValue::ListFloat(std::vector<float>(a.floats().begin(), a.floats().end()));
    case onnx::AttributeProto::INTS: return AttrValue::ListInt(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case onnx::AttributeProto::STRINGS: return AttrValue::ListString(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case onnx::AttributeProto::TENSOR: {
      auto t = TensorFromProto(a.t(), base_dir);
      if (!t.ok()) return t.status();
      return TensorAttr(t.value());
    }
    case onnx::AttributeProto::TYPE_PROTO: {  // Optional's 'type'
      std::string why;
      DataType dt = FromOnnxType(a.tp(), &why);
      if (dt == DT_UNDEFINED) return InvalidArgument("attribute '" + a.name() + "' names " + why);
      return AttrValue::Type(dt);
    }
    default:
      return InvalidArgument("attribute '" + a.name() + "' has unsupported type " +
                             onnx::AttributeProto::AttributeType_Name(a.type()));
  }
}

// Context for rewriting one node.
struct Lowering {
  Graph& g;
  Node& n;
  int64_t opset;
  std::vector<std::string>& problems;  // unsupported forms, reported with the node's name
  // Moves attribute `attr` (if present) to input position `pos` as an int64 constant.
  // ONNX encodes element types as TensorProto codes in INT attributes; built-ins take Type.
  void IntToType(const std::string& attr) {
    auto it = n.attrs.find(attr);
    if (it != n.attrs.end() && it->second.type() == WEFT_ATTR_INT) {
      const int64_t code = it->second.i();
      DataType dt = code >= INT32_MIN && code <= INT32_MAX ? FromOnnx(static_cast<int32_t>(code)) : DT_UNDEFINED;
      if (dt == DT_UNDEFINED) {  // a type Weft does not hold (STRING, complex, float8, ...): refused by name
        // Codes of the newer opsets that an older onnx library does not name.
        static const char* const kNewer[] = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",
                                             "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0", "UINT2",          "INT2"};
        std::string onnx_name;
        if (code >= INT32_MIN && code <= INT32_MAX && onnx::TensorProto_DataType_IsValid(static_cast<int>(code)))
          onnx_name = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code));
        else if (code >= 17 && code <= 26)
          onnx_name = kNewer[code - 17];
        if (onnx_name.empty())
          problems.push_back("'" + n.name + "' (" + n.op_type + "): attribute '" + attr + "' is " + std::to_string(code) +
                             ", which is not an ONNX element type code");
        else
          problems.push_back("'" + n.name + "' (" + n.op_type + "): attribute '" + attr + "' names ONNX type " + onnx_name + " (" +
                             std::to_string(code) + "), which Weft does not hold");
        return;
      }
      it->second = AttrValue::Type(dt);
    }
  }
  // Before opset 13 the softmax family worked on the input flattened to 2-D at `axis` (default 1).
  void LegacySoftmax() {
    if (opset >= 13) return;
    if (!n.attrs.count("axis")) n.attrs["axis"] = AttrValue::Int(1);
    n.attrs["coerce_2d"] = AttrValue::Int(1);
  }
  void AttrToInput(const std::string& attr, size_t pos, DataType dt = DT_INT64) {
    auto it = n.attrs.find(attr);
    if (n.inputs.size() > pos && !n.inputs[pos].empty()) {
      problems.push_back("'" + n.name + "' (" + n.op_type + "): at opset " + std::to_string(opset) + " '" + attr +
                         "' is an attribute, but the node has an input #" + std::to_string(pos) + " ('" + n.inputs[pos] +
                         "') that this opset does not define");
      return;
    }
    if (n.inputs.size() < pos) n.inputs.resize(pos);
    if (it == n.attrs.end()) return;
    std::string name = n.name + "/" + attr;
    HostTensor t;
    if (it->second.type() == WEFT_ATTR_LIST_INT) {
      t = HostTensor(DT_INT64, Shape({static_cast<int64_t>(it->second.ints().size())}));
      if (t.bytes()) std::memcpy(t.data(), it->second.ints().data(), t.bytes());
    } else if (it->second.type() == WEFT_ATTR_LIST_FLOAT) {
      t = HostTensor(DT_FLOAT, Shape({static_cast<int64_t>(it->second.floats().size())}));
      if (t.bytes()) std::memcpy(t.data(), it->second.floats().data(), t.bytes());
    } else if (it->second.type() == WEFT_ATTR_FLOAT && (dt == DT_FLOAT || dt == DT_DOUBLE || dt == DT_FLOAT16)) {
      t = HostTensor(dt, Shape());
      float v = it->second.f();
      if (dt == DT_FLOAT) *t.data_as<float>() = v;
      else if (dt == DT_DOUBLE) *t.data_as<double>() = v;
      else if (dt == DT_FLOAT16) *t.data_as<float16>() = float16(v);
    } else {
      problems.push_back("'" + n.name + "' (" + n.op_type + "): attribute '" + attr + "' must be a list of " +
                         (dt == DT_INT64 ? "ints" : "numbers or a float") + " to become input " + std::to_string(pos));
      return;
    }
    g.AddConstant(name, t);
    if (n.inputs.size() <= pos) n.inputs.resize(pos + 1);
    n.inputs[pos] = name;
    n.attrs.erase(it);
  }
};

// Old opset form → the form built-ins implement. Keyed by op type; called with the node's opset.
const std::map<std::string, std::function<void(Lowering&)>>& Lowerings() {
  static const std::map<std::string, std::function<void(Lowering&)>> kTable = {
      {"Squeeze", [](Lowering& l) { if (l.opset < 13) l.AttrToInput("axes", 1); }},
      {"Cast", [](Lowering& l) { l.IntToType("to"); }},
      {"BitCast", [](Lowering& l) { l.IntToType("to"); }},
      {"Resize", [](Lowering& l) {
         if (l.opset < 11) {  // opset 10: Resize(X, scales), asymmetric coordinates, floor rounding
           l.n.inputs.resize(2);
           l.n.inputs.insert(l.n.inputs.begin() + 1, "");
           l.n.attrs["coordinate_transformation_mode"] = AttrValue::String("asymmetric");
           l.n.attrs["nearest_mode"] = AttrValue::String("floor");
         }
       }},
      {"Upsample", [](Lowering& l) {  // Upsample(X, scales) is opset-10 Resize
         l.n.op_type = "Resize";
         if (l.n.attrs.count("scales")) l.AttrToInput("scales", 1);
         l.n.inputs.resize(2);
         l.n.inputs.insert(l.n.inputs.begin() + 1, "");
         l.n.attrs["coordinate_transformation_mode"] = AttrValue::String("asymmetric");
         l.n.attrs["nearest_mode"] = AttrValue::String("floor");
       }},
      {"Softmax", [](Lowering& l) { l.LegacySoftmax(); }},
      {"LogSoftmax", [](Lowering& l) { l.LegacySoftmax(); }},
      {"Hardmax", [](Lowering& l) { l.LegacySoftmax(); }},
      {"Dropout", [](Lowering& l) {  // the old ratio/is_test attributes: inference (training mode came with opset 12)
         l.n.attrs.erase("ratio");
         l.n.attrs.erase("is_test");
         if (l.opset < 10) l.n.attrs["legacy_mask"] = AttrValue::Int(1);  // the mask had the data's type
       }},
      {"EyeLike", [](Lowering& l) { l.IntToType("dtype"); }},
      {"QuantizeLinear", [](Lowering& l) {  // opset 21's output_dtype; 0 leaves it to the zero point (or uint8)
         if (auto it = l.n.attrs.find("output_dtype"); it != l.n.attrs.end() && it->second.type() == WEFT_ATTR_INT && it->second.i() == 0)
           l.n.attrs.erase(it);
         l.IntToType("output_dtype");
       }},
      {"SequenceEmpty", [](Lowering& l) { l.IntToType("dtype"); }},
      // Opsets 18-20 give GroupNormalization's scale and bias per group; 21 per channel.
      {"GroupNormalization", [](Lowering& l) { if (l.opset < 21) l.n.attrs["per_group_affine"] = AttrValue::Int(1); }},
      {"BatchNormalization", [](Lowering& l) {  // before opset 14 more than one output meant training mode
         bool stats = false;
         for (size_t k = 1; k < l.n.outputs.size(); ++k) stats = stats || !l.n.outputs[k].empty();
         if (l.opset < 14 && stats) l.n.attrs["training_mode"] = AttrValue::Int(1);
         l.n.attrs.erase("is_test");
       }},
      {"Unique", [](Lowering& l) { l.n.outputs.resize(4); }},  // the optional outputs left out: unnamed ones
      {"DFT", [](Lowering& l) {  // opset 20 moved axis to an input, whose default is -2 (the attribute's was 1)
         if (l.opset >= 20 && (l.n.inputs.size() < 3 || l.n.inputs[2].empty())) l.n.attrs["axis"] = AttrValue::Int(-2);
       }},
      {"RoiAlign", [](Lowering& l) {  // before opset 16 regions were not shifted by half a pixel
         if (l.opset < 16) l.n.attrs["coordinate_transformation_mode"] = AttrValue::String("output_half_pixel");
       }},
      {"RandomUniform", [](Lowering& l) { l.IntToType("dtype"); }},
      {"RandomNormal", [](Lowering& l) { l.IntToType("dtype"); }},
      {"RandomUniformLike", [](Lowering& l) { l.IntToType("dtype"); }},
      {"RandomNormalLike", [](Lowering& l) { l.IntToType("dtype"); }},
      {"Bernoulli", [](Lowering& l) { l.IntToType("dtype"); }},
      {"Multinomial", [](Lowering& l) { l.IntToType("dtype"); }},
      {"Unsqueeze", [](Lowering& l) { if (l.opset < 13) l.AttrToInput("axes", 1); }},
      {"ReduceSum", [](Lowering& l) { if (l.opset < 13) l.AttrToInput("axes", 1); }},
      {"ReduceMean", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"ReduceMax", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"ReduceMin", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"ReduceProd", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"ReduceL1", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"ReduceL2", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"ReduceLogSumExp", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"ReduceLogSum", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"ReduceSumSquare", [](Lowering& l) { if (l.opset < 18) l.AttrToInput("axes", 1); }},
      {"Split", [](Lowering& l) { if (l.opset < 13) l.AttrToInput("split", 1); }},
      {"Slice", [](Lowering& l) {
         if (l.opset < 10) {
           l.AttrToInput("starts", 1);
           l.AttrToInput("ends", 2);
           l.AttrToInput("axes", 3);
         }
       }},
      {"Clip", [](Lowering& l) {
         if (l.opset < 11) {
           l.AttrToInput("min", 1, DT_FLOAT);
           l.AttrToInput("max", 2, DT_FLOAT);
         }
       }},
      {"Pad", [](Lowering& l) {
         if (l.opset < 11) {
           l.AttrToInput("pads", 1);
           l.AttrToInput("value", 2, DT_FLOAT);
         }
       }},
  };
  return kTable;
}

// Imports the nodes of a graph or subgraph. Names defined inside a subgraph get `prefix` (so
// branches cannot collide with each other or the outer graph); references to outer names stay.
struct NodeImporter {
  Graph& g;
  std::map<std::string, int64_t>& opsets;
  const std::string& base_dir;
  std::vector<std::string> problems;
  std::map<std::string, int> ranks;  // values whose rank is known: declared, or derived on import
  std::map<std::string, size_t> constant_index;  // g's constants by name
  size_t constants_indexed = 0;                  // how many of g's constants constant_index covers
  int counter = 0;

  static std::string Map(const std::map<std::string, std::string>& rename, const std::string& name) {
    auto it = rename.find(name);
    return it == rename.end() ? name : it->second;
  }

  Status Import(const onnx::GraphProto& gp, const std::string& prefix, std::map<std::string, std::string>& rename) {
    if (!prefix.empty())
      for (auto& init : gp.initializer()) {
        auto t = TensorFromProto(init, base_dir);
        if (!t.ok()) return Status(t.status().code(), "initializer: " + t.status().message());
        rename[init.name()] = prefix + init.name();
        g.AddConstant(prefix + init.name(), std::move(t).value());
      }
    for (auto& np : gp.node()) WEFT_RETURN_IF_ERROR(ImportNode(np, prefix, rename));
    return Status::Ok();
  }

  Status ImportNode(const onnx::NodeProto& np, const std::string& prefix, std::map<std::string, std::string>& rename) {
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.opset = opsets.count(n.domain) ? opsets[n.domain] : 1;
    n.name = prefix + (np.name().empty() ? np.op_type() + "_" + std::to_string(counter) : np.name());
    ++counter;
    if (n.domain.empty()) {
      if (const int64_t first = FirstOpset(n.op_type); first > n.opset) {
        problems.push_back("'" + n.name + "' (" + n.op_type + "): ONNX defines " + n.op_type + " from opset " + std::to_string(first) +
                           "; the model imports opset " + std::to_string(n.opset) + " (raise the model's opset_import)");
        return Status::Ok();
      }
    }
    for (auto& i : np.input()) n.inputs.push_back(i.empty() ? i : Map(rename, i));
    for (auto& o : np.output()) {
      if (!prefix.empty() && !o.empty()) rename[o] = prefix + o;
      n.outputs.push_back(o.empty() ? o : Map(rename, o));
    }
    bool bad = false;
    const onnx::GraphProto* then_g = nullptr;
    const onnx::GraphProto* else_g = nullptr;
    const onnx::GraphProto* body_g = nullptr;
    for (auto& a : np.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS) {
        // If branches are imported inline below; Loop and Scan bodies become graphs of their own.
        if (a.name() == "then_branch") then_g = &a.g();
        if (a.name() == "else_branch") else_g = &a.g();
        if (a.name() == "body") body_g = &a.g();
        continue;
      }
      auto v = AttrFromProto(a, base_dir);
      if (!v.ok()) {
        problems.push_back("'" + n.name + "' (" + n.op_type + "): " + v.status().message());
        bad = true;
        continue;
      }
      n.attrs[a.name()] = std::move(v).value();
    }
    if (bad) return Status::Ok();
    if (n.domain.empty() && n.op_type == "If" && then_g && else_g) return ImportIf(n, *then_g, *else_g, rename);
    if (n.domain.empty() && (n.op_type == "Loop" || n.op_type == "Scan" || n.op_type == "SequenceMap")) {
      if (!body_g) {
        problems.push_back("'" + n.name + "' (" + n.op_type + "): needs the graph attribute 'body'");
        return Status::Ok();
      }
      return ImportLoopOrScan(std::move(n), *body_g, rename);
    }
    // Constant nodes become graph constants.
    if (n.domain.empty() && n.op_type == "Constant" && n.outputs.size() == 1) {
      HostTensor t;
      auto& a = n.attrs;
      // The value attribute must have the type its name says (a mutated file may say otherwise).
      auto typed = [&](const char* key, WeftAttrType type) {
        auto it = a.find(key);
        if (it == a.end()) return false;
        if (it->second.type() != type)
          problems.push_back("'" + n.name + "' (Constant): attribute '" + key + "' has the wrong type");
        return true;
      };
      size_t known = problems.size();
      if (typed("value", WEFT_ATTR_TENSOR)) {
        if (problems.size() > known) return Status::Ok();
        const AttrValue& v = a["value"];
        auto h = HostTensor::FromBytes(v.tensor().GetDataType(), v.tensor().GetShape(), v.tensor_bytes().data(), v.tensor_bytes().size());
        if (!h.ok()) return h.status();
        t = std::move(h).value();
      } else if (typed("value_float", WEFT_ATTR_FLOAT)) {
        t = HostTensor(DT_FLOAT, Shape());
        *t.data_as<float>() = a["value_float"].f();
      } else if (typed("value_int", WEFT_ATTR_INT)) {
        t = HostTensor(DT_INT64, Shape());
        *t.data_as<int64_t>() = a["value_int"].i();
      } else if (typed("value_floats", WEFT_ATTR_LIST_FLOAT)) {
        const auto& v = a["value_floats"].floats();
        t = HostTensor(DT_FLOAT, Shape({static_cast<int64_t>(v.size())}));
        if (t.bytes()) std::memcpy(t.data(), v.data(), t.bytes());
      } else if (typed("value_ints", WEFT_ATTR_LIST_INT)) {
        const auto& v = a["value_ints"].ints();
        t = HostTensor(DT_INT64, Shape({static_cast<int64_t>(v.size())}));
        if (t.bytes()) std::memcpy(t.data(), v.data(), t.bytes());
      } else {
        problems.push_back("'" + n.name + "' (Constant): only tensor, float and int values are supported");
        return Status::Ok();
      }
      if (problems.size() > known) return Status::Ok();
      g.AddConstant(n.outputs[0], std::move(t));
      return Status::Ok();
    }
    if (n.domain == "com.microsoft" || n.domain == "com.microsoft.nchwc") {  // ONNX Runtime's fused float operators and NCHWc graphs: their standard parts
      n.when = when;
      std::vector<Node> parts;
      internal::OnnxContribContext cc{g, [this](const std::string& v) { return ConstantOf(v); }, ranks, problems};
      if (internal::LowerOnnxRuntimeContribOp(n, cc, &parts) || internal::LowerOnnxRuntimeNchwcOp(n, cc, &parts)) {
        for (Node& p : parts) AddNode(std::move(p));
        return Status::Ok();
      }
    }
    if (n.domain.empty() && internal::IsStandardFunctionOp(n.op_type)) {  // defined by its parts
      n.when = when;
      std::vector<Node> parts;
      internal::OnnxContribContext cc{g, [this](const std::string& v) { return ConstantOf(v); }, ranks, problems};
      if (internal::LowerOnnxStandardFunctionOp(n, cc, &parts)) {
        for (Node& p : parts) AddNode(std::move(p));
        return Status::Ok();
      }
    }
    if (n.domain.empty())
      if (auto it = Lowerings().find(n.op_type); it != Lowerings().end()) {
        Lowering l{g, n, n.opset, problems};
        it->second(l);
      }
    n.when = when;
    AddNode(std::move(n));
    return Status::Ok();
  }

  // Adds a node, noting its outputs' ranks where they follow from its inputs' (for the rewrites
  // above that need a value's rank, in files that do not declare it).
  void AddNode(Node n) {
    if (n.domain.empty() || n.domain == "com.microsoft") NoteRanks(n);
    g.AddNode(std::move(n));
  }
  int RankOf(const std::string& v) {
    if (v.empty()) return -1;
    if (auto it = ranks.find(v); it != ranks.end()) return it->second;
    const HostTensor* t = ConstantOf(v);
    return t ? static_cast<int>(t->shape().GetDimNum()) : -1;
  }
  const HostTensor* ConstantOf(const std::string& v) {
    // Constants are only appended: index the new ones.
    for (; constants_indexed < g.constants().size(); ++constants_indexed) constant_index[g.constants()[constants_indexed].first] = constants_indexed;
    auto it = constant_index.find(v);
    return it == constant_index.end() ? nullptr : &g.constants()[it->second].second;
  }
  void NoteRanks(const Node& n) {
    static const std::set<std::string> kSameAsFirst = {
        "Abs", "BatchNormalization", "Cast", "CastLike", "Ceil", "Clip", "Conv", "ConvTranspose", "Cos", "CumSum", "Dropout", "Elu",
        "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "Identity", "InstanceNormalization",
        "LayerNormalization", "LeakyRelu", "Log", "LogSoftmax", "LRN", "Mish", "Neg", "Not", "PRelu", "QuickGelu", "Reciprocal",
        "Relu", "Round", "Selu", "Sigmoid", "Sign", "SimplifiedLayerNormalization", "Sin", "Slice", "Softmax", "Softplus",
        "Softsign", "Sqrt", "Tanh", "ThresholdedRelu", "Tile", "Pad", "Resize", "Split", "Concat", "MaxPool", "AveragePool",
        "GlobalAveragePool", "GlobalMaxPool", "Swish", "RMSNormalization", "GroupNormalization", "BitwiseNot", "CumProd",
        "TensorScatter", "CausalConvWithState", "BitCast", "DeformConv"};
    static const std::set<std::string> kBroadcast = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Where", "Equal", "Less",
                                                     "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Mod",
                                                     "Sum", "Mean", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift"};
    int r = -1;
    const int r0 = n.inputs.empty() ? -1 : RankOf(n.inputs[0]);
    auto ints = [&](size_t input) -> const HostTensor* {
      const HostTensor* t = input < n.inputs.size() ? ConstantOf(n.inputs[input]) : nullptr;
      return t && t->dtype() == DT_INT64 && t->shape().GetDimNum() == 1 ? t : nullptr;
    };
    if (kSameAsFirst.count(n.op_type)) {
      r = r0;
    } else if (kBroadcast.count(n.op_type)) {
      for (const std::string& in : n.inputs) {
        const int k = RankOf(in);
        if (k < 0) return;
        r = std::max(r, k);
      }
    } else if (n.op_type == "MatMul") {
      const int r1 = n.inputs.size() > 1 ? RankOf(n.inputs[1]) : -1;
      if (r0 >= 2 && r1 >= 2) r = std::max(r0, r1);
    } else if (n.op_type == "Gemm" || n.op_type == "Flatten") {
      r = 2;
    } else if (n.op_type == "Attention" && n.domain.empty()) {  // Y as Q; the caches and scores 4-D
      for (size_t k = 1; k < n.outputs.size(); ++k)
        if (!n.outputs[k].empty() && !ranks.count(n.outputs[k])) ranks[n.outputs[k]] = 4;
      if (!n.outputs.empty() && r0 >= 0 && !ranks.count(n.outputs[0])) ranks[n.outputs[0]] = r0;
      return;
    } else if (n.op_type == "Transpose") {
      auto it = n.attrs.find("perm");
      r = it != n.attrs.end() && it->second.type() == WEFT_ATTR_LIST_INT ? static_cast<int>(it->second.ints().size()) : r0;
    } else if (n.op_type == "Reshape") {
      if (const HostTensor* t = ints(1)) r = static_cast<int>(t->shape().GetDim(0));
    } else if (n.op_type == "Unsqueeze" || n.op_type == "Squeeze") {
      const HostTensor* t = ints(1);
      auto it = n.attrs.find("axes");
      const int k = t ? static_cast<int>(t->shape().GetDim(0))
                      : it != n.attrs.end() && it->second.type() == WEFT_ATTR_LIST_INT ? static_cast<int>(it->second.ints().size()) : -1;
      if (r0 >= 0 && k >= 0) r = n.op_type == "Unsqueeze" ? r0 + k : r0 - k;
    } else if (n.op_type == "Gather") {
      const int ri = n.inputs.size() > 1 ? RankOf(n.inputs[1]) : -1;
      if (r0 >= 1 && ri >= 0) r = r0 - 1 + ri;
    } else if (n.op_type == "Shape") {
      r = 1;
    } else if (n.op_type.rfind("Reduce", 0) == 0 || n.op_type == "ArgMax" || n.op_type == "ArgMin") {
      // keepdims (default 1) keeps the rank; without it the rank drops by the axes named (an
      // attribute, or a constant input from opset 13/18), or to 0 when none are (all of them).
      auto kd = n.attrs.find("keepdims");
      const bool keep = kd == n.attrs.end() || kd->second.i() != 0;
      auto ax = n.attrs.find("axes");
      const HostTensor* t = ints(1);
      const bool arg = n.op_type == "ArgMax" || n.op_type == "ArgMin";
      const int k = arg ? 1 : t ? static_cast<int>(t->shape().GetDim(0))
                        : ax != n.attrs.end() && ax->second.type() == WEFT_ATTR_LIST_INT ? static_cast<int>(ax->second.ints().size())
                        : n.inputs.size() > 1 && !n.inputs[1].empty() ? -1 : r0;
      auto noop = n.attrs.find("noop_with_empty_axes");
      const bool none = !t && ax == n.attrs.end() && (n.inputs.size() < 2 || n.inputs[1].empty());
      if (r0 >= 0 && (keep || k >= 0)) r = keep || (none && noop != n.attrs.end() && noop->second.i() != 0) ? r0 : r0 - k;
    }
    if (r < 0) return;
    const bool all = n.op_type == "Split";  // every output; else the first
    for (size_t k = 0; k < (all ? n.outputs.size() : std::min<size_t>(1, n.outputs.size())); ++k)
      if (!n.outputs[k].empty() && !ranks.count(n.outputs[k])) ranks[n.outputs[k]] = r;
  }

  // Loop and Scan: the body becomes a graph of its own, carried as JSON text in the node's
  // "body" attribute (src/runtime/subgraph_ops.cc runs it). Values of enclosing graphs that the
  // body reads become extra inputs of both the node and the body ("captures").
  Status ImportLoopOrScan(Node n, const onnx::GraphProto& bp, std::map<std::string, std::string>& rename) {
    if (depth >= 16) {
      problems.push_back("'" + n.name + "' (" + n.op_type + "): subgraphs nested more than 16 deep");
      return Status::Ok();
    }
    auto fail = [&](const std::string& why) {
      problems.push_back("'" + n.name + "' (" + n.op_type + "): " + why);
      return Status::Ok();
    };
    Graph body(n.name + "/body");
    std::set<std::string> defined;
    for (auto& in : bp.input()) {
      // A body input may leave its type out (ONNX infers it from the value bound): a tensor then.
      DataType dt = DT_UNDEFINED;
      if (in.has_type() && in.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) {
        std::string why;
        dt = FromOnnxType(in.type(), &why);
        if (dt == DT_UNDEFINED && !in.type().has_tensor_type()) return fail("body input '" + in.name() + "' is " + why);
      }
      // The type and shape used are those of the value bound at run time; the declared ones
      // only fill the graph format's fields.
      body.AddInput(in.name(), dt == DT_UNDEFINED ? DT_FLOAT : dt, Shape());
      defined.insert(in.name());
    }
    for (auto& init : bp.initializer()) {
      auto t = TensorFromProto(init, base_dir);
      if (!t.ok()) return fail("body initializer '" + init.name() + "': " + t.status().message());
      body.AddConstant(init.name(), std::move(t).value());
      defined.insert(init.name());
    }
    NodeImporter sub{body, opsets, base_dir};
    sub.depth = depth + 1;
    std::map<std::string, std::string> inner;
    WEFT_RETURN_IF_ERROR(sub.Import(bp, "", inner));
    for (auto& p : sub.problems) problems.push_back("in the body of '" + n.name + "': " + p);
    if (!sub.problems.empty()) return Status::Ok();
    for (auto& c : body.constants()) defined.insert(c.first);
    for (auto& node : body.nodes())
      for (auto& o : node.outputs) defined.insert(o);
    std::vector<std::string> captures;
    std::set<std::string> seen;
    auto need = [&](const std::string& name) {
      if (!name.empty() && !defined.count(name) && seen.insert(name).second) captures.push_back(name);
    };
    for (auto& node : body.nodes()) {
      for (auto& i : node.inputs) need(i);
      for (auto& w : node.when) need(w.first);
    }
    for (auto& o : bp.output()) need(o.name());
    for (auto& c : captures) body.AddInput(c, DT_FLOAT, Shape());  // typed by the bound value
    for (auto& o : bp.output()) body.AddOutput(o.name());
    auto text = body.ToJsonText();
    if (!text.ok()) return fail(text.status().message());

    Node out;
    out.op_type = n.op_type;
    out.name = n.name;
    out.opset = n.opset;
    out.outputs = n.outputs;
    out.when = when;
    out.attrs["body"] = AttrValue::String(std::move(text).value());
    uint32_t ncap = static_cast<uint32_t>(captures.size());
    if (n.op_type == "Loop") {
      if (n.inputs.size() < 2) return fail("needs the inputs M and cond (either may be empty)");
      size_t carried = n.inputs.size() - 2;
      if (static_cast<size_t>(bp.input_size()) != 2 + carried)
        return fail("the body takes " + std::to_string(bp.input_size()) + " inputs; with " + std::to_string(carried) +
                    " loop-carried values it needs " + std::to_string(2 + carried));
      if (n.outputs.size() < carried || static_cast<size_t>(bp.output_size()) != 1 + n.outputs.size())
        return fail("the body gives " + std::to_string(bp.output_size()) + " outputs; the node has " + std::to_string(n.outputs.size()) +
                    " and the body needs one more, the condition");
      out.inputs = n.inputs;
      out.input_counts = {1, 1, static_cast<uint32_t>(carried), ncap};
      out.output_counts = {static_cast<uint32_t>(carried), static_cast<uint32_t>(n.outputs.size() - carried)};
    } else if (n.op_type == "SequenceMap") {
      if (n.inputs.empty() || n.inputs[0].empty()) return fail("needs input_sequence");
      if (static_cast<size_t>(bp.input_size()) != n.inputs.size() || static_cast<size_t>(bp.output_size()) != n.outputs.size())
        return fail("the body takes " + std::to_string(bp.input_size()) + " inputs and gives " + std::to_string(bp.output_size()) +
                    "; the node has " + std::to_string(n.inputs.size()) + " and " + std::to_string(n.outputs.size()));
      out.inputs = n.inputs;
      out.input_counts = {1, static_cast<uint32_t>(n.inputs.size() - 1), ncap};
      out.output_counts = {static_cast<uint32_t>(n.outputs.size())};
    } else {
      auto it = n.attrs.find("num_scan_inputs");
      if (it == n.attrs.end() || it->second.type() != WEFT_ATTR_INT) return fail("needs the int attribute 'num_scan_inputs'");
      int64_t scans = it->second.i();
      std::vector<std::string> ins = n.inputs;
      bool scan8 = n.opset < 9;
      if (scan8) {  // Scan 8: (sequence_lens?, states..., scans...) with a leading batch axis
        if (ins.empty()) return fail("needs its inputs");
        if (!ins[0].empty()) return fail("sequence_lens is not supported; every sequence must have the full length");
        ins.erase(ins.begin());
        out.attrs["batch_major"] = AttrValue::Bool(true);
        if (auto d = n.attrs.find("directions"); d != n.attrs.end()) out.attrs["scan_input_directions"] = d->second;
      }
      if (scans < 1 || static_cast<size_t>(scans) > ins.size())
        return fail("num_scan_inputs is " + std::to_string(scans) + " with " + std::to_string(ins.size()) + " state and scan inputs");
      size_t states = ins.size() - static_cast<size_t>(scans);
      if (n.outputs.size() < states) return fail("has fewer outputs than states");
      for (const char* key : {"scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"})
        if (auto a = n.attrs.find(key); a != n.attrs.end()) out.attrs[key] = a->second;
      out.inputs = ins;
      out.input_counts = {static_cast<uint32_t>(states), static_cast<uint32_t>(scans), ncap};
      out.output_counts = {static_cast<uint32_t>(states), static_cast<uint32_t>(n.outputs.size() - states)};
    }
    for (auto& c : captures) out.inputs.push_back(Map(rename, c));
    g.AddNode(std::move(out));
    return Status::Ok();
  }
  int depth = 0;

  // The conditions of the If branches being imported (outermost first).
  std::vector<std::pair<std::string, bool>> when;

  // If: the nodes of each branch are imported inline, each guarded by the condition (Node::when),
  // and Weft's op "If" picks every output from the branch taken: If(cond, then..., else...).
  // Only the taken branch runs; a condition known at compile time drops the other branch.
  Status ImportIf(const Node& n, const onnx::GraphProto& then_g, const onnx::GraphProto& else_g,
                  std::map<std::string, std::string>& rename) {
    if (n.inputs.size() != 1 || n.inputs[0].empty()) {
      problems.push_back("'" + n.name + "' (If): needs exactly one input, the condition; it has " +
                         std::to_string(n.inputs.size()));
      return Status::Ok();
    }
    if (then_g.output_size() != static_cast<int>(n.outputs.size()) || else_g.output_size() != static_cast<int>(n.outputs.size())) {
      problems.push_back("'" + n.name + "' (If): branches must produce the node's " + std::to_string(n.outputs.size()) + " outputs");
      return Status::Ok();
    }
    if (when.size() >= 64) {
      problems.push_back("'" + n.name + "' (If): nested more than 64 deep");
      return Status::Ok();
    }
    std::map<std::string, std::string> then_names = rename, else_names = rename;
    when.emplace_back(n.inputs[0], true);
    Status st = Import(then_g, n.name + "/then/", then_names);
    when.back().second = false;
    if (st.ok()) st = Import(else_g, n.name + "/else/", else_names);
    when.pop_back();
    WEFT_RETURN_IF_ERROR(st);
    Node pick;
    pick.op_type = "If";
    pick.name = n.name;
    pick.opset = n.opset;
    pick.inputs = {n.inputs[0]};
    for (int k = 0; k < then_g.output_size(); ++k) pick.inputs.push_back(Map(then_names, then_g.output(k).name()));
    for (int k = 0; k < else_g.output_size(); ++k) pick.inputs.push_back(Map(else_names, else_g.output(k).name()));
    pick.input_counts = {1, static_cast<uint32_t>(2 * n.outputs.size())};
    pick.outputs = n.outputs;
    pick.when = when;
    g.AddNode(std::move(pick));
    return Status::Ok();
  }
};

}  // namespace

Expected<HostTensor> ReadOnnxTensor(const std::string& path) {
  auto bytes = internal::ReadRegularFile(path, "ONNX tensor file");
  if (!bytes.ok()) return bytes.status();
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes.value())) return InvalidArgument("'" + path + "' is not a serialized ONNX TensorProto");
  auto t = TensorFromProto(p, fs::path(path).parent_path().string());
  if (!t.ok()) return Status(t.status().code(), path + ": " + t.status().message());
  return t;
}

namespace {

Expected<HostTensor> SequenceFromProto(const onnx::SequenceProto& p, DataType type, const std::string& base_dir) {
  if (p.elem_type() != onnx::SequenceProto::TENSOR && !(p.elem_type() == onnx::SequenceProto::UNDEFINED && p.tensor_values_size() == 0))
    return InvalidArgument("sequence '" + p.name() + "' holds non-tensors (only sequences of tensors are supported)");
  std::vector<HostTensor> items;
  for (auto& t : p.tensor_values()) {
    auto h = TensorFromProto(t, base_dir);
    if (!h.ok()) return Status(h.status().code(), "sequence '" + p.name() + "': " + h.status().message());
    items.push_back(std::move(h).value());
  }
  return MakeSequence(ElementTypeOf(type), items);
}

}  // namespace

Expected<HostTensor> ReadOnnxValue(const std::string& path, DataType type) {
  if (IsTensorType(type)) return ReadOnnxTensor(path);
  auto bytes = internal::ReadRegularFile(path, "ONNX value file");
  if (!bytes.ok()) return bytes.status();
  std::string dir = fs::path(path).parent_path().string();
  Expected<HostTensor> r = InvalidArgument(std::string("cannot read a value of type ") + DataTypeName(type));
  if (IsSequenceType(type)) {
    onnx::SequenceProto p;
    if (!p.ParseFromString(bytes.value())) return InvalidArgument("'" + path + "' is not a serialized ONNX SequenceProto");
    r = SequenceFromProto(p, type, dir);
  } else if (IsOptionalType(type)) {
    onnx::OptionalProto p;
    if (!p.ParseFromString(bytes.value())) return InvalidArgument("'" + path + "' is not a serialized ONNX OptionalProto");
    DataType inner = ElementTypeOf(type);
    if (p.has_tensor_value() && IsTensorType(inner)) {
      auto t = TensorFromProto(p.tensor_value(), dir);
      r = t.ok() ? MakeOptional(inner, &t.value()) : Expected<HostTensor>(t.status());
    } else if (p.has_sequence_value() && IsSequenceType(inner)) {
      auto t = SequenceFromProto(p.sequence_value(), inner, dir);
      r = t.ok() ? MakeOptional(inner, &t.value()) : Expected<HostTensor>(t.status());
    } else if (!p.has_tensor_value() && !p.has_sequence_value() && !p.has_map_value() && !p.has_optional_value() &&
               !p.has_sparse_tensor_value()) {
      r = MakeOptional(inner, nullptr);
    } else {
      r = InvalidArgument(std::string("it holds a value that is not a ") + DataTypeName(inner));
    }
  }
  if (!r.ok()) return Status(r.status().code(), path + ": " + r.status().message());
  return r;
}

namespace {
Expected<Graph> ImportModelProto(const std::string& bytes, const std::string& base_dir, const OnnxImportOptions& options);
}  // namespace

// Nothing escapes as an exception, whatever the bytes (running out of memory included).
Expected<Graph> ImportOnnxBytes(const std::string& bytes, const std::string& base_dir, const OnnxImportOptions& options) {
  try {
    std::string hooked;
    auto applied = internal::ApplyModelHooks(options.registry.get(), false, bytes, &hooked, "ONNX model");
    if (!applied.ok()) return applied.status();
    return ImportModelProto(applied.value() ? hooked : bytes, base_dir, options);
  } catch (const std::bad_alloc&) {
    return IoError("ONNX import: out of memory");
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("ONNX import: ") + e.what());
  }
}

namespace {
// Statically quantized models in the QDQ format (onnxruntime.quantization's default) write each
// integer convolution as DequantizeLinear (activation), DequantizeLinear (constant weights) and
// DequantizeLinear (constant int32 bias) into a float Conv whose output goes only to a
// QuantizeLinear. Where the parts fit QLinearConv exactly (scalar activation scales and zero
// points, weight scales per tensor or per output channel along axis 0, a bias whose scale is
// x_scale * w_scale and whose zero point is 0), the Conv and the QuantizeLinear become one
// QLinearConv on the quantized tensors: the integer sums are exact and the one rounding is the
// output's, as ONNX Runtime runs such files. The DequantizeLinear nodes no longer read are dropped
// when the graph compiles. (Other operators between such pairs: below.)
void FuseQdqConvs(Graph& g, bool other_ops) {
  std::map<std::string, const HostTensor*> consts;
  for (auto& [name, t] : g.constants()) consts[name] = &t;
  std::map<std::string, size_t> producer;
  std::map<std::string, int> readers;
  std::vector<Node>& nodes = g.mutable_nodes();
  for (size_t k = 0; k < nodes.size(); ++k) {
    for (auto& o : nodes[k].outputs) producer[o] = k;
    for (auto& i : nodes[k].inputs) ++readers[i];
  }
  for (auto& o : g.outputs()) ++readers[o];
  auto constant = [&](const std::string& name) -> const HostTensor* {
    auto it = consts.find(name);
    return it == consts.end() ? nullptr : it->second;
  };
  auto scalar = [&](const std::string& name, DataType a, DataType b = DT_UNDEFINED) {
    const HostTensor* t = constant(name);
    return t && t->numel() == 1 && (t->dtype() == a || t->dtype() == b);
  };
  auto dq = [&](const std::string& value) -> const Node* {  // the DequantizeLinear (3 inputs) that writes `value`
    auto it = producer.find(value);
    if (it == producer.end()) return nullptr;
    const Node& n = nodes[it->second];
    return n.op_type == "DequantizeLinear" && n.domain.empty() && n.inputs.size() == 3 && !n.inputs[2].empty() && n.when.empty() ? &n : nullptr;
  };
  auto axis = [](const Node& n) {
    auto it = n.attrs.find("axis");
    return it == n.attrs.end() ? int64_t{1} : it->second.i();
  };
  std::set<size_t> drop;
  std::vector<Node> fused;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& conv = nodes[k];
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() < 2 || !conv.when.empty()) continue;
    if (readers[conv.outputs[0]] != 1) continue;
    size_t qk = nodes.size();
    for (size_t j = 0; j < nodes.size(); ++j)
      if (!nodes[j].inputs.empty() && nodes[j].inputs[0] == conv.outputs[0]) qk = j;
    if (qk == nodes.size()) continue;
    const Node& q = nodes[qk];
    if (q.op_type != "QuantizeLinear" || !q.domain.empty() || q.inputs.size() != 3 || q.outputs.size() != 1 || !q.when.empty() ||
        !scalar(q.inputs[1], DT_FLOAT) || !scalar(q.inputs[2], DT_INT8, DT_UINT8))
      continue;
    const Node* dx = dq(conv.inputs[0]);
    const Node* dw = dq(conv.inputs[1]);
    if (!dx || !dw || !scalar(dx->inputs[1], DT_FLOAT) || !scalar(dx->inputs[2], DT_INT8, DT_UINT8)) continue;
    const HostTensor *wq = constant(dw->inputs[0]), *ws = constant(dw->inputs[1]), *wz = constant(dw->inputs[2]);
    if (!wq || !ws || !wz || (wq->dtype() != DT_INT8 && wq->dtype() != DT_UINT8) || ws->dtype() != DT_FLOAT || wz->dtype() != wq->dtype() ||
        wq->shape().GetDimNum() < 3 || ws->numel() != wz->numel())
      continue;
    const int64_t m = wq->shape().GetDim(0);
    if (ws->numel() != 1 && !(ws->numel() == m && ws->shape().GetDimNum() == 1 && axis(*dw) == 0)) continue;
    std::string bias;
    if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) {
      const Node* db = dq(conv.inputs[2]);
      if (!db) continue;
      const HostTensor *bq = constant(db->inputs[0]), *bs = constant(db->inputs[1]), *bz = constant(db->inputs[2]);
      if (!bq || !bs || !bz || bq->dtype() != DT_INT32 || bq->numel() != m || bs->dtype() != DT_FLOAT || bz->dtype() != DT_INT32 ||
          (bs->numel() != 1 && bs->numel() != m) || (bz->numel() != 1 && bz->numel() != m))
        continue;
      const float xs = *static_cast<const float*>(constant(dx->inputs[1])->data());
      bool fits = true;
      for (int64_t c = 0; c < m && fits; ++c) {
        const float w_scale = static_cast<const float*>(ws->data())[ws->numel() == 1 ? 0 : c];
        fits = static_cast<const float*>(bs->data())[bs->numel() == 1 ? 0 : c] == xs * w_scale &&
               static_cast<const int32_t*>(bz->data())[bz->numel() == 1 ? 0 : c] == 0;
      }
      if (!fits) continue;
      bias = db->inputs[0];
    }
    Node n;
    n.name = conv.name;
    n.op_type = "QLinearConv";
    n.inputs = {dx->inputs[0], dx->inputs[1], dx->inputs[2], dw->inputs[0], dw->inputs[1], dw->inputs[2], q.inputs[1], q.inputs[2]};
    if (!bias.empty()) n.inputs.push_back(bias);
    n.outputs = q.outputs;
    n.attrs = conv.attrs;
    n.opset = conv.opset;
    fused.push_back(std::move(n));
    drop.insert(k);
    drop.insert(qk);
  }
  // The other operators ONNX Runtime runs on the quantized tensors of such files (it rewrites the
  // same patterns), all quantized per tensor: DequantizeLinear -> Add or Mul -> QuantizeLinear
  // becomes QLinearAdd or QLinearMul; -> GlobalAveragePool, AveragePool, Sigmoid, LeakyRelu ->
  // QuantizeLinear becomes QLinearGlobalAveragePool, QLinearAveragePool, QLinearSigmoid, QLinearLeakyRelu (their arithmetic is ONNX
  // Runtime's; Concat -> QLinearConcat, Gemm -> QGemm and MatMul -> QLinearMatMul further down); and a MaxPool (or a Transpose, Reshape, Squeeze, Unsqueeze, Flatten) between a DequantizeLinear and a QuantizeLinear of the same scale
  // and zero point runs on the 8-bit values as they are (the maximum commutes with both maps, and
  // quantizing a dequantized value gives it back).
  // A scale the QLinear ops take: positive and finite (others stay on the float path, which
  // defines them; a negative scale also reverses the order MaxPool relies on).
  auto positive = [&](const std::string& name) {
    const HostTensor* t = constant(name);
    if (!t || t->dtype() != DT_FLOAT) return false;
    for (int64_t i = 0; i < t->numel(); ++i) {
      const float v = static_cast<const float*>(t->data())[i];
      if (!(v > 0.f) || !std::isfinite(v)) return false;
    }
    return true;
  };
  auto q_of = [&](const Node& n) -> size_t {  // the QuantizeLinear alone reading n's only output
    if (!other_ops) return nodes.size();  // none: the loops below then leave every node
    if (n.outputs.size() != 1 || readers[n.outputs[0]] != 1) return nodes.size();
    for (size_t j = 0; j < nodes.size(); ++j) {
      const Node& q = nodes[j];
      if (q.inputs.empty() || q.inputs[0] != n.outputs[0]) continue;
      const bool ok = q.op_type == "QuantizeLinear" && q.domain.empty() && q.inputs.size() == 3 && q.outputs.size() == 1 && q.when.empty() &&
                      scalar(q.inputs[1], DT_FLOAT) && positive(q.inputs[1]) && scalar(q.inputs[2], DT_INT8, DT_UINT8) && !drop.count(j);
      return ok ? j : nodes.size();
    }
    return nodes.size();
  };
  auto per_tensor = [&](const std::string& value) -> const Node* {
    const Node* d = dq(value);
    return d && scalar(d->inputs[1], DT_FLOAT) && positive(d->inputs[1]) && scalar(d->inputs[2], DT_INT8, DT_UINT8) ? d : nullptr;
  };
  auto type_of = [&](const std::string& zp) { return constant(zp)->dtype(); };
  auto same = [&](const std::string& a, const std::string& b) {
    const HostTensor *x = constant(a), *y = constant(b);
    return x->dtype() == y->dtype() && std::memcmp(x->data(), y->data(), x->bytes()) == 0;
  };
  static const std::map<std::string, std::string> kQLinear = {{"Add", "QLinearAdd"},
                                                              {"Mul", "QLinearMul"},
                                                              {"GlobalAveragePool", "QLinearGlobalAveragePool"},
                                                              {"Sigmoid", "QLinearSigmoid"},
                                                              {"LeakyRelu", "QLinearLeakyRelu"},
                                                              {"AveragePool", "QLinearAveragePool"},
                                                              {"MaxPool", ""},
                                                              // moves of values (the quantizer's "direct 8-bit" ops)
                                                              {"Transpose", ""},
                                                              {"Reshape", ""},
                                                              {"Squeeze", ""},
                                                              {"Unsqueeze", ""},
                                                              {"Flatten", ""}};
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& op = nodes[k];
    auto rule = kQLinear.find(op.op_type);
    if (rule == kQLinear.end() || !op.domain.empty() || !op.when.empty() || drop.count(k)) continue;
    // the values moved: input 0 (the others, a shape or axes, as they are)
    const bool moves = op.op_type == "Transpose" || op.op_type == "Reshape" || op.op_type == "Squeeze" || op.op_type == "Unsqueeze" ||
                       op.op_type == "Flatten";
    const size_t arity = op.op_type == "Add" || op.op_type == "Mul" ? 2 : 1;
    if (moves ? op.inputs.empty() || op.outputs.size() != 1 : op.inputs.size() != arity) continue;
    if (auto d = op.attrs.find("dilations"); op.op_type == "AveragePool" && d != op.attrs.end()) {
      bool ones = true;  // QLinearAveragePool has no dilations
      for (int64_t v : d->second.ints()) ones = ones && v == 1;
      if (!ones) continue;
    }
    const size_t qk = q_of(op);
    if (qk == nodes.size()) continue;
    const Node& q = nodes[qk];
    std::vector<const Node*> in;
    for (size_t i = 0; i < (moves ? 1 : op.inputs.size()); ++i) in.push_back(per_tensor(op.inputs[i]));
    bool fits = true;
    for (const Node* d : in) fits = fits && d && type_of(d->inputs[2]) == type_of(q.inputs[2]);
    if (!fits) continue;
    Node n;
    n.name = op.name;
    n.outputs = q.outputs;
    n.attrs = op.attrs;
    n.opset = op.opset;
    if (rule->second.empty()) {  // MaxPool and the moves: on the 8-bit values, the same parameters either side
      if (!same(in[0]->inputs[1], q.inputs[1]) || !same(in[0]->inputs[2], q.inputs[2])) continue;
      n.op_type = op.op_type;
      n.inputs = op.inputs;
      n.inputs[0] = in[0]->inputs[0];
    } else {
      n.op_type = rule->second;
      n.domain = "com.microsoft";
      n.opset = 1;
      for (const Node* d : in) n.inputs.insert(n.inputs.end(), d->inputs.begin(), d->inputs.end());
      n.inputs.push_back(q.inputs[1]);
      n.inputs.push_back(q.inputs[2]);
    }
    fused.push_back(std::move(n));
    drop.insert(k);
    drop.insert(qk);
  }
  // Concat of per-tensor dequantized inputs into a QuantizeLinear -> QLinearConcat.
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& op = nodes[k];
    if (op.op_type != "Concat" || !op.domain.empty() || !op.when.empty() || drop.count(k) || op.inputs.empty()) continue;
    const size_t qk = q_of(op);
    if (qk == nodes.size()) continue;
    const Node& q = nodes[qk];
    Node n;
    n.inputs = {q.inputs[1], q.inputs[2]};
    bool fits = true;
    for (auto& v : op.inputs) {
      const Node* d = per_tensor(v);
      fits = fits && d && type_of(d->inputs[2]) == type_of(q.inputs[2]);
      if (fits) n.inputs.insert(n.inputs.end(), d->inputs.begin(), d->inputs.end());
    }
    if (!fits) continue;
    n.name = op.name;
    n.op_type = "QLinearConcat";
    n.domain = "com.microsoft";
    n.opset = 1;
    n.outputs = q.outputs;
    n.attrs = op.attrs;
    fused.push_back(std::move(n));
    drop.insert(k);
    drop.insert(qk);
  }
  // Gemm -> QGemm: A dequantized per tensor, B a constant 8-bit matrix dequantized per tensor or
  // per column (axis 0 of a transposed B, 1 of a plain one), an optional int32 bias whose scale is
  // a_scale * b_scale and whose zero point is 0, alpha and beta 1, into a QuantizeLinear.
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& op = nodes[k];
    if (op.op_type != "Gemm" || !op.domain.empty() || !op.when.empty() || drop.count(k) || op.inputs.size() < 2 || op.inputs.size() > 3)
      continue;
    bool unit = true;
    for (const char* a : {"alpha", "beta"})
      if (auto it = op.attrs.find(a); it != op.attrs.end()) unit = unit && it->second.f() == 1.0f;
    auto trans = [&](const char* a) {
      auto it = op.attrs.find(a);
      return it != op.attrs.end() && it->second.i() != 0;
    };
    const size_t qk = q_of(op);
    const Node* da = per_tensor(op.inputs[0]);
    const Node* db = dq(op.inputs[1]);
    if (!unit || qk == nodes.size() || !da || !db || type_of(da->inputs[2]) != type_of(nodes[qk].inputs[2])) continue;
    const Node& q = nodes[qk];
    const HostTensor *wq = constant(db->inputs[0]), *ws = constant(db->inputs[1]), *wz = constant(db->inputs[2]);
    if (!wq || !ws || !wz || (wq->dtype() != DT_INT8 && wq->dtype() != DT_UINT8) || wq->shape().GetDimNum() != 2 || ws->dtype() != DT_FLOAT ||
        wz->dtype() != wq->dtype() || ws->numel() != wz->numel() || ws->shape().GetDimNum() > 1 || !positive(db->inputs[1]))
      continue;
    const bool tb = trans("transB");
    const int64_t n_cols = wq->shape().GetDim(tb ? 0 : 1);
    if (ws->numel() != 1 && (ws->numel() != n_cols || axis(*db) != (tb ? 0 : 1))) continue;
    std::string bias;
    if (op.inputs.size() == 3 && !op.inputs[2].empty()) {
      const Node* dc = dq(op.inputs[2]);
      if (!dc) continue;
      const HostTensor *bq = constant(dc->inputs[0]), *bs = constant(dc->inputs[1]), *bz = constant(dc->inputs[2]);
      if (!bq || !bs || !bz || bq->dtype() != DT_INT32 || bq->shape().GetDimNum() != 1 || bq->numel() != n_cols || bs->dtype() != DT_FLOAT ||
          bz->dtype() != DT_INT32 || (bs->numel() != 1 && bs->numel() != n_cols) || (bz->numel() != 1 && bz->numel() != n_cols))
        continue;
      const float xs = *static_cast<const float*>(constant(da->inputs[1])->data());
      bool fits = true;
      for (int64_t c = 0; c < n_cols && fits; ++c)
        fits = static_cast<const float*>(bs->data())[bs->numel() == 1 ? 0 : c] ==
                   xs * static_cast<const float*>(ws->data())[ws->numel() == 1 ? 0 : c] &&
               static_cast<const int32_t*>(bz->data())[bz->numel() == 1 ? 0 : c] == 0;
      if (!fits) continue;
      bias = dc->inputs[0];
    }
    Node n;
    n.name = op.name;
    n.op_type = "QGemm";
    n.domain = "com.microsoft";
    n.opset = 1;
    n.inputs = {da->inputs[0], da->inputs[1], da->inputs[2], db->inputs[0], db->inputs[1], db->inputs[2], bias, q.inputs[1], q.inputs[2]};
    n.outputs = q.outputs;
    for (const char* a : {"transA", "transB"})
      if (auto it = op.attrs.find(a); it != op.attrs.end()) n.attrs[a] = it->second;
    fused.push_back(std::move(n));
    drop.insert(k);
    drop.insert(qk);
  }
  // MatMul -> QLinearMatMul (as ONNX Runtime fuses it): A dequantized per tensor; B dequantized
  // per tensor, or a constant 2-D 8-bit matrix dequantized per column (axis 1); into a QuantizeLinear.
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& op = nodes[k];
    if (op.op_type != "MatMul" || !op.domain.empty() || !op.when.empty() || drop.count(k) || op.inputs.size() != 2) continue;
    const size_t qk = q_of(op);
    const Node* da = per_tensor(op.inputs[0]);
    const Node* db = dq(op.inputs[1]);
    if (qk == nodes.size() || !da || !db) continue;
    if (!per_tensor(op.inputs[1])) {
      const HostTensor *wq = constant(db->inputs[0]), *ws = constant(db->inputs[1]), *wz = constant(db->inputs[2]);
      if (!wq || !ws || !wz || (wq->dtype() != DT_INT8 && wq->dtype() != DT_UINT8) || wq->shape().GetDimNum() != 2 || ws->dtype() != DT_FLOAT ||
          wz->dtype() != wq->dtype() || ws->numel() != wz->numel() || ws->shape().GetDimNum() != 1 || !positive(db->inputs[1]) ||
          ws->numel() != wq->shape().GetDim(1) || (axis(*db) != 1 && axis(*db) != -1))
        continue;
    }
    const Node& q = nodes[qk];
    Node n;
    n.name = op.name;
    n.op_type = "QLinearMatMul";
    n.opset = op.opset;
    n.inputs = {da->inputs[0], da->inputs[1], da->inputs[2], db->inputs[0], db->inputs[1], db->inputs[2], q.inputs[1], q.inputs[2]};
    n.outputs = q.outputs;
    fused.push_back(std::move(n));
    drop.insert(k);
    drop.insert(qk);
  }
  // quantize_dynamic's MatMul: MatMulInteger -> Cast to float -> Mul by (a_scale * b_scale) [-> Add
  // of a constant bias] becomes com.microsoft's MatMulIntegerToFloat, as ONNX Runtime fuses it (the
  // same floats: the sums times the scales' product, plus the bias), one pass over the output.
  auto single_reader = [&](const std::string& v, const char* op) -> size_t {  // the node of type op alone reading v
    if (readers[v] != 1) return nodes.size();
    for (size_t j = 0; j < nodes.size(); ++j)
      if (!drop.count(j) && nodes[j].op_type == op && nodes[j].domain.empty() && nodes[j].when.empty() &&
          std::find(nodes[j].inputs.begin(), nodes[j].inputs.end(), v) != nodes[j].inputs.end())
        return j;
    return nodes.size();
  };
  for (size_t k = 0; other_ops && k < nodes.size(); ++k) {
    const Node& mm = nodes[k];
    if (mm.op_type != "MatMulInteger" || !mm.domain.empty() || !mm.when.empty() || drop.count(k) || mm.inputs.size() < 2 || mm.outputs.size() != 1)
      continue;
    const size_t ck = single_reader(mm.outputs[0], "Cast");
    if (ck == nodes.size()) continue;
    auto to = nodes[ck].attrs.find("to");
    if (to == nodes[ck].attrs.end() || to->second.i() != DT_FLOAT || nodes[ck].outputs.size() != 1) continue;
    const size_t mk = single_reader(nodes[ck].outputs[0], "Mul");
    if (mk == nodes.size() || nodes[mk].inputs.size() != 2) continue;
    const Node& mul = nodes[mk];
    const std::string scale = mul.inputs[0] == nodes[ck].outputs[0] ? mul.inputs[1] : mul.inputs[0];
    auto sp = producer.find(scale);
    if (sp == producer.end()) continue;
    const Node& sm = nodes[sp->second];
    if (sm.op_type != "Mul" || !sm.domain.empty() || sm.inputs.size() != 2) continue;
    const bool first_const = constant(sm.inputs[0]) != nullptr;
    const std::string b_scale = first_const ? sm.inputs[0] : sm.inputs[1], a_scale = first_const ? sm.inputs[1] : sm.inputs[0];
    const HostTensor* bs = constant(b_scale);
    if (!bs || bs->dtype() != DT_FLOAT || bs->shape().GetDimNum() > 1) continue;
    std::string bias, out = mul.outputs[0];
    size_t ak = single_reader(mul.outputs[0], "Add");
    if (ak != nodes.size() && nodes[ak].inputs.size() == 2) {
      const std::string c = nodes[ak].inputs[0] == mul.outputs[0] ? nodes[ak].inputs[1] : nodes[ak].inputs[0];
      const HostTensor* ct = constant(c);
      if (ct && ct->dtype() == DT_FLOAT && ct->shape().GetDimNum() == 1) bias = c, out = nodes[ak].outputs[0];
      else ak = nodes.size();
    } else {
      ak = nodes.size();
    }
    Node n;
    n.name = mm.name;
    n.op_type = "MatMulIntegerToFloat";
    n.domain = "com.microsoft";
    n.opset = 1;
    n.inputs = {mm.inputs[0], mm.inputs[1], a_scale, b_scale, mm.inputs.size() > 2 ? mm.inputs[2] : "", mm.inputs.size() > 3 ? mm.inputs[3] : "", bias};
    while (!n.inputs.empty() && n.inputs.back().empty()) n.inputs.pop_back();
    n.outputs = {out};
    fused.push_back(std::move(n));
    drop.insert(k);
    drop.insert(ck);
    drop.insert(mk);
    if (ak != nodes.size()) drop.insert(ak);
  }
  // Gather of a dequantized constant (an embedding table) -> the Gather on the 8-bit values, then
  // DequantizeLinear of the rows it took (per tensor: the same floats), as ONNX Runtime runs it:
  // the table is not dequantized whole on every run.
  for (size_t k = 0; k < nodes.size(); ++k) {
    Node& op = nodes[k];
    if (op.op_type != "Gather" || !op.domain.empty() || !op.when.empty() || drop.count(k) || op.inputs.size() != 2 || op.outputs.size() != 1)
      continue;
    const Node* d = per_tensor(op.inputs[0]);
    if (!d || !constant(d->inputs[0])) continue;
    const std::string out = op.outputs[0];
    Node deq = *d;
    deq.name = op.name + "/DequantizeLinear";
    deq.inputs[0] = out + "/quantized";
    deq.outputs = {out};
    op.inputs[0] = d->inputs[0];
    op.outputs[0] = out + "/quantized";
    fused.push_back(std::move(deq));
  }
  if (drop.empty() && fused.empty()) return;
  std::vector<Node> kept;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (!drop.count(k)) kept.push_back(std::move(nodes[k]));
  for (auto& n : fused) kept.push_back(std::move(n));
  nodes = std::move(kept);
}

Expected<Graph> ImportModelProto(const std::string& bytes, const std::string& base_dir, const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return InvalidArgument("not a valid ONNX model (protobuf parse failed)");
  if (!model.has_graph()) return InvalidArgument("the ONNX model has no graph");
  std::map<std::string, int64_t> opsets;
  if (model.ir_version() < 1)
    return InvalidArgument("the model's ir_version is " + std::to_string(model.ir_version()) + "; ONNX models have 1 or more");
  for (auto& o : model.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  if (model.opset_import_size() == 0) opsets[""] = 1;
  if (opsets.count("") && (opsets[""] < 1 || opsets[""] > kNewestOpset))
    return InvalidArgument("the model imports ONNX opset " + std::to_string(opsets[""]) + "; this importer reads opsets 1 to " +
                           std::to_string(kNewestOpset));
  const onnx::GraphProto& gp = model.graph();
  Graph g(gp.name().empty() ? "onnx_model" : gp.name());
  std::set<std::string> initializers;
  for (auto& init : gp.initializer()) {
    auto t = TensorFromProto(init, base_dir);
    if (!t.ok()) return Status(t.status().code(), "initializer: " + t.status().message());
    g.AddConstant(init.name(), std::move(t).value());
    initializers.insert(init.name());
  }
  if (gp.sparse_initializer_size() > 0) return InvalidArgument("sparse initializers are not supported");
  for (auto& in : gp.input()) {
    if (initializers.count(in.name())) continue;
    if (!in.type().has_tensor_type()) {
      std::string why;
      DataType dt = FromOnnxType(in.type(), &why);
      if (dt == DT_UNDEFINED) return InvalidArgument("graph input '" + in.name() + "' is " + why);
      g.AddInput(in.name(), dt, Shape({-1}));  // its encoded bytes (weft/sequence.h)
      continue;
    }
    const auto& tt = in.type().tensor_type();
    DataType dt = FromOnnx(tt.elem_type());
    if (dt == DT_UNDEFINED) return InvalidArgument("graph input '" + in.name() + "' has unsupported element type " + OnnxTypeName(tt.elem_type()));
    Shape shape;
    if (auto it = options.input_shapes.find(in.name()); it != options.input_shapes.end()) {
      shape = it->second;
      // The given shape fills the model's dynamic dims; it may not contradict the fixed ones.
      if (tt.has_shape()) {
        bool fits = tt.shape().dim_size() == static_cast<int>(shape.GetDimNum());
        for (int k = 0; fits && k < tt.shape().dim_size(); ++k)
          fits = !tt.shape().dim(k).has_dim_value() || tt.shape().dim(k).dim_value() <= 0 ||
                 tt.shape().dim(k).dim_value() == shape.GetDim(static_cast<size_t>(k));
        if (!fits) {
          std::string declared = "[";
          for (int k = 0; k < tt.shape().dim_size(); ++k)
            declared += (k ? "," : "") + (tt.shape().dim(k).has_dim_value() ? std::to_string(tt.shape().dim(k).dim_value())
                                                                              : std::string("?"));
          return InvalidArgument("graph input '" + in.name() + "' is declared " + declared + "]; the shape given for it, " +
                                 shape.ToString() + ", does not match");
        }
      }
    } else {
      if (!tt.has_shape()) return InvalidArgument("graph input '" + in.name() + "' has no shape; give it in OnnxImportOptions::input_shapes");
      if (tt.shape().dim_size() > WEFT_MAX_DIMS) return InvalidArgument("graph input '" + in.name() + "' has too many dims");
      for (auto& d : tt.shape().dim()) shape.AppendDim(d.has_dim_value() ? d.dim_value() : -1);
    }
    g.AddInput(in.name(), dt, shape);
  }
  NodeImporter imp{g, opsets, base_dir};
  for (auto* list : {&gp.input(), &gp.value_info(), &gp.output()})
    for (auto& v : *list)
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) imp.ranks[v.name()] = v.type().tensor_type().shape().dim_size();
  for (auto& init : gp.initializer()) imp.ranks[init.name()] = init.dims_size();
  std::map<std::string, std::string> rename;
  WEFT_RETURN_IF_ERROR(imp.Import(gp, "", rename));
  std::vector<std::string>& problems = imp.problems;
  if (!problems.empty()) {
    std::string msg = std::to_string(problems.size()) + " unsupported node(s): ";
    for (size_t k = 0; k < problems.size(); ++k) msg += (k ? "; " : "") + problems[k];
    return InvalidArgument(msg);
  }
  for (auto& o : gp.output()) g.AddOutput(o.name());
  if (options.fuse_qdq) FuseQdqConvs(g, options.fuse_qdq_ops);
  return g;
}

}  // namespace

Expected<Graph> ImportOnnx(const std::string& path, const OnnxImportOptions& options) {
  auto bytes = internal::ReadRegularFile(path, "ONNX model", uint64_t(2) << 30);  // protobuf's limit
  if (!bytes.ok()) return bytes.status();
  auto g = ImportOnnxBytes(bytes.value(), fs::path(path).parent_path().string(), options);
  if (!g.ok()) return Status(g.status().code(), path + ": " + g.status().message());
  return g;
}

}  // namespace weft
