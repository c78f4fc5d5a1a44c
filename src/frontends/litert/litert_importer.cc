// LiteRT (.tflite) → Graph. The file is verified (flatbuffers verifier, then every index and size
// the importer follows) before a node is built, so a corrupt or hostile file is an error naming
// what is wrong. Operators keep TFLite's semantics and layouts (NHWC activations, OHWI filters):
// each becomes one node of the Tfl* op family (ops/litert.cc), whose kernels follow TFLite's
// reference arithmetic; quantization parameters travel as node attributes.
#include <cctype>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <flatbuffers/flatbuffers.h>
#include <flatbuffers/flexbuffers.h>

#include "core/file_io.h"
#include "frontends/model_hooks.h"
#include "litert_subset_generated.h"
#include "weft/litert.h"
#include "weft/registry_context.h"

namespace weft {
namespace {

namespace fb = weft::litert::fb;

// A construct of the format Weft does not implement (as opposed to a malformed file).
Status Unsupported(std::string m) { return FailedPrecondition(std::move(m)); }

// BuiltinOperator names by code, as the format numbers them.
const char* const kBuiltinNames[] = {
#include "litert_builtin_names.inc"
};
constexpr int32_t kNumBuiltins = static_cast<int32_t>(sizeof(kBuiltinNames) / sizeof(kBuiltinNames[0]));
constexpr int32_t kCustom = 32;

std::string BuiltinName(int32_t code) {
  if (code >= 0 && code < kNumBuiltins && kBuiltinNames[code][0]) return kBuiltinNames[code];
  return "builtin code " + std::to_string(code);
}

// LiteRT TensorType → Weft; DT_UNDEFINED for types Weft does not hold (string, complex, int4...).
DataType FromLiteRt(int8_t t, std::string* name) {
  static const char* const names[] = {"FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL",
                                      "INT16", "COMPLEX64", "INT8", "FLOAT64", "COMPLEX128", "UINT64",
                                      "RESOURCE", "VARIANT", "UINT32", "UINT16", "INT4", "BFLOAT16"};
  *name = t >= 0 && t < 19 ? names[t] : "type " + std::to_string(t);
  switch (t) {
    case 0: return DT_FLOAT;
    case 1: return DT_FLOAT16;
    case 2: return DT_INT32;
    case 3: return DT_UINT8;
    case 4: return DT_INT64;
    case 6: return DT_BOOL;
    case 7: return DT_INT16;
    case 9: return DT_INT8;
    case 10: return DT_DOUBLE;
    case 12: return DT_UINT64;
    case 15: return DT_UINT32;
    case 16: return DT_UINT16;
    case 18: return DT_BF16;
    default: return DT_UNDEFINED;
  }
}

// ---- builtin options ---------------------------------------------------------------------------
// Each options table the importer decodes, field by field: the attribute name (the format's field
// name), the field id, how it is stored and its default. Enum fields become strings.
enum class FieldKind { kInt, kBool, kFloat, kIntVector, kPadding, kActivation, kTensorType, kMirrorMode, kString };
struct OptionField {
  const char* name;
  int id;
  FieldKind kind;
  double def = 0;
};
struct OptionTable {
  int type;  // BuiltinOptions union type
  const char* name;
  std::vector<OptionField> fields;
};

const std::vector<OptionTable>& OptionTables() {
  using K = FieldKind;
  static const std::vector<OptionTable> tables = {
      {1, "Conv2DOptions", {{"padding", 0, K::kPadding}, {"stride_w", 1, K::kInt}, {"stride_h", 2, K::kInt},
                            {"fused_activation_function", 3, K::kActivation}, {"dilation_w_factor", 4, K::kInt, 1},
                            {"dilation_h_factor", 5, K::kInt, 1}, {"quantized_bias_type", 6, K::kTensorType}}},
      {2, "DepthwiseConv2DOptions", {{"padding", 0, K::kPadding}, {"stride_w", 1, K::kInt}, {"stride_h", 2, K::kInt},
                                     {"depth_multiplier", 3, K::kInt}, {"fused_activation_function", 4, K::kActivation},
                                     {"dilation_w_factor", 5, K::kInt, 1}, {"dilation_h_factor", 6, K::kInt, 1}}},
      {5, "Pool2DOptions", {{"padding", 0, K::kPadding}, {"stride_w", 1, K::kInt}, {"stride_h", 2, K::kInt},
                            {"filter_width", 3, K::kInt}, {"filter_height", 4, K::kInt},
                            {"fused_activation_function", 5, K::kActivation}}},
      {6, "SVDFOptions", {{"rank", 0, K::kInt}, {"fused_activation_function", 1, K::kActivation},
                          {"asymmetric_quantize_inputs", 2, K::kBool}}},
      {8, "FullyConnectedOptions", {{"fused_activation_function", 0, K::kActivation}, {"weights_format", 1, K::kInt},
                                    {"keep_num_dims", 2, K::kBool}, {"asymmetric_quantize_inputs", 3, K::kBool},
                                    {"quantized_bias_type", 4, K::kTensorType}}},
      {9, "SoftmaxOptions", {{"beta", 0, K::kFloat}}},
      {10, "ConcatenationOptions", {{"axis", 0, K::kInt}, {"fused_activation_function", 1, K::kActivation}}},
      {11, "AddOptions", {{"fused_activation_function", 0, K::kActivation}, {"pot_scale_int16", 1, K::kBool, 1}}},
      {12, "L2NormOptions", {{"fused_activation_function", 0, K::kActivation}}},
      {15, "ResizeBilinearOptions", {{"align_corners", 2, K::kBool}, {"half_pixel_centers", 3, K::kBool}}},
      {17, "ReshapeOptions", {{"new_shape", 0, K::kIntVector}}},
      {19, "SpaceToDepthOptions", {{"block_size", 0, K::kInt}}},
      {21, "MulOptions", {{"fused_activation_function", 0, K::kActivation}}},
      {23, "GatherOptions", {{"axis", 0, K::kInt}, {"batch_dims", 1, K::kInt}}},
      {27, "ReducerOptions", {{"keep_dims", 0, K::kBool}}},
      {28, "SubOptions", {{"fused_activation_function", 0, K::kActivation}, {"pot_scale_int16", 1, K::kBool, 1}}},
      {29, "DivOptions", {{"fused_activation_function", 0, K::kActivation}}},
      {30, "SqueezeOptions", {{"squeeze_dims", 0, K::kIntVector}}},
      {32, "StridedSliceOptions", {{"begin_mask", 0, K::kInt}, {"end_mask", 1, K::kInt}, {"ellipsis_mask", 2, K::kInt},
                                   {"new_axis_mask", 3, K::kInt}, {"shrink_axis_mask", 4, K::kInt}, {"offset", 5, K::kBool}}},
      {35, "SplitOptions", {{"num_splits", 0, K::kInt}}},
      {37, "CastOptions", {{"in_data_type", 0, K::kTensorType}, {"out_data_type", 1, K::kTensorType}}},
      {40, "ArgMaxOptions", {{"output_type", 0, K::kTensorType}}},
      {49, "TransposeConvOptions", {{"padding", 0, K::kPadding}, {"stride_w", 1, K::kInt}, {"stride_h", 2, K::kInt},
                                    {"fused_activation_function", 3, K::kActivation},
                                    {"quantized_bias_type", 4, K::kTensorType}}},
      {57, "ArgMinOptions", {{"output_type", 0, K::kTensorType}}},
      {59, "PackOptions", {{"values_count", 0, K::kInt}, {"axis", 1, K::kInt}}},
      {64, "UnpackOptions", {{"num", 0, K::kInt}, {"axis", 1, K::kInt}}},
      {71, "UnidirectionalSequenceLSTMOptions", {{"fused_activation_function", 0, K::kActivation}, {"cell_clip", 1, K::kFloat},
                                                 {"proj_clip", 2, K::kFloat}, {"time_major", 3, K::kBool},
                                                 {"asymmetric_quantize_inputs", 4, K::kBool},
                                                 {"diagonal_recurrent_tensors", 5, K::kBool}}},
      {31, "SequenceRNNOptions", {{"time_major", 0, K::kBool}, {"fused_activation_function", 1, K::kActivation},
                                  {"asymmetric_quantize_inputs", 2, K::kBool}}},
      {70, "BidirectionalSequenceRNNOptions", {{"time_major", 0, K::kBool}, {"fused_activation_function", 1, K::kActivation},
                                               {"merge_outputs", 2, K::kBool}, {"asymmetric_quantize_inputs", 3, K::kBool}}},
      {69, "BidirectionalSequenceLSTMOptions", {{"fused_activation_function", 0, K::kActivation}, {"cell_clip", 1, K::kFloat},
                                                {"proj_clip", 2, K::kFloat}, {"merge_outputs", 3, K::kBool}, {"time_major", 4, K::kBool, 1},
                                                {"asymmetric_quantize_inputs", 5, K::kBool}}},
      {74, "ResizeNearestNeighborOptions", {{"align_corners", 0, K::kBool}, {"half_pixel_centers", 1, K::kBool}}},
      {75, "LeakyReluOptions", {{"alpha", 0, K::kFloat}}},
      {77, "MirrorPadOptions", {{"mode", 0, K::kMirrorMode}}},
      {16, "CallOptions", {{"subgraph", 0, K::kInt}}},
      {92, "IfOptions", {{"then_subgraph_index", 0, K::kInt}, {"else_subgraph_index", 1, K::kInt}}},
      {93, "WhileOptions", {{"cond_subgraph_index", 0, K::kInt}, {"body_subgraph_index", 1, K::kInt}}},
      {94, "DepthToSpaceOptions", {{"block_size", 0, K::kInt}}},
      {101, "BatchMatMulOptions", {{"adj_x", 0, K::kBool}, {"adj_y", 1, K::kBool}, {"asymmetric_quantize_inputs", 2, K::kBool}}},
      {103, "CallOnceOptions", {{"init_subgraph_index", 0, K::kInt}}},
      {111, "VarHandleOptions", {{"container", 0, K::kString}, {"shared_name", 1, K::kString}}},
      {116, "GeluOptions", {{"approximate", 0, K::kBool}}},
  };
  return tables;
}

const char* ActivationName(int v) {
  static const char* const names[] = {"NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT"};
  return v >= 0 && v < 6 ? names[v] : nullptr;
}

// Decodes an options table into attributes; false (with *err) on a malformed field.
bool DecodeOptions(const flatbuffers::Table* t, int type, flatbuffers::Verifier& v, std::map<std::string, AttrValue>* attrs,
                   std::string* err) {
  const OptionTable* spec = nullptr;
  for (auto& s : OptionTables())
    if (s.type == type) spec = &s;
  if (!spec || !t) return true;  // options the importer does not decode: the op takes none of them
  for (const OptionField& f : spec->fields) {
    auto vo = static_cast<flatbuffers::voffset_t>(4 + 2 * f.id);
    bool ok = true;
    switch (f.kind) {
      case FieldKind::kInt:
        ok = t->VerifyField<int32_t>(v, vo, 4);
        if (ok) (*attrs)[f.name] = AttrValue::Int(t->GetField<int32_t>(vo, static_cast<int32_t>(f.def)));
        break;
      case FieldKind::kBool:
        ok = t->VerifyField<uint8_t>(v, vo, 1);
        if (ok) (*attrs)[f.name] = AttrValue::Bool(t->GetField<uint8_t>(vo, static_cast<uint8_t>(f.def)) != 0);
        break;
      case FieldKind::kFloat:
        ok = t->VerifyField<float>(v, vo, 4);
        if (ok) (*attrs)[f.name] = AttrValue::Float(t->GetField<float>(vo, static_cast<float>(f.def)));
        break;
      case FieldKind::kIntVector: {
        ok = t->VerifyOffset(v, vo);
        auto vec = ok ? t->GetPointer<const flatbuffers::Vector<int32_t>*>(vo) : nullptr;
        ok = ok && v.VerifyVector(vec);
        if (ok && vec) (*attrs)[f.name] = AttrValue::ListInt(std::vector<int64_t>(vec->begin(), vec->end()));
        break;
      }
      case FieldKind::kString: {
        ok = t->VerifyOffset(v, vo);
        auto str = ok ? t->GetPointer<const flatbuffers::String*>(vo) : nullptr;
        ok = ok && v.VerifyString(str);
        if (ok) (*attrs)[f.name] = AttrValue::String(str ? str->str() : std::string());
        break;
      }
      case FieldKind::kPadding: {
        ok = t->VerifyField<int8_t>(v, vo, 1);
        int p = ok ? t->GetField<int8_t>(vo, 0) : 0;
        if (ok && p != 0 && p != 1) return *err = std::string(spec->name) + ".padding has the unknown value " + std::to_string(p), false;
        if (ok) (*attrs)[f.name] = AttrValue::String(p == 0 ? "SAME" : "VALID");
        break;
      }
      case FieldKind::kActivation: {
        ok = t->VerifyField<int8_t>(v, vo, 1);
        int a = ok ? t->GetField<int8_t>(vo, 0) : 0;
        if (ok && !ActivationName(a))
          return *err = std::string(spec->name) + "." + f.name + " has the unknown value " + std::to_string(a), false;
        if (ok) (*attrs)[f.name] = AttrValue::String(ActivationName(a));
        break;
      }
      case FieldKind::kTensorType: {
        ok = t->VerifyField<int8_t>(v, vo, 1);
        std::string name;
        if (ok) FromLiteRt(t->GetField<int8_t>(vo, 0), &name);
        if (ok) (*attrs)[f.name] = AttrValue::String(name);
        break;
      }
      case FieldKind::kMirrorMode: {
        ok = t->VerifyField<int8_t>(v, vo, 1);
        int m = ok ? t->GetField<int8_t>(vo, 0) : 0;
        if (ok) (*attrs)[f.name] = AttrValue::String(m == 0 ? "REFLECT" : "SYMMETRIC");
        break;
      }
    }
    if (!ok) return *err = std::string(spec->name) + "." + f.name + " is malformed", false;
  }
  return true;
}

// flexbuffer map custom options → typed attributes; false when they are not a well-formed map of
// scalars, strings and scalar vectors (the caller then passes the raw bytes).
bool DecodeFlexbufferMap(const uint8_t* bytes, size_t size, std::map<std::string, AttrValue>* attrs) {
  // flexbuffers reads 8-byte scalars with plain loads; inside the model they may sit anywhere.
  std::vector<uint64_t> aligned((size + 7) / 8);
  if (size) std::memcpy(aligned.data(), bytes, size);
  const uint8_t* data = reinterpret_cast<const uint8_t*>(aligned.data());
  if (size == 0 || !flexbuffers::VerifyBuffer(data, size)) return false;
  auto root = flexbuffers::GetRoot(data, size);
  if (!root.IsMap()) return false;
  auto map = root.AsMap();
  auto keys = map.Keys();
  auto values = map.Values();
  std::map<std::string, AttrValue> out;
  const char* begin = reinterpret_cast<const char*>(data);
  for (size_t k = 0; k < keys.size(); ++k) {
    // A key is a NUL-terminated string; the verifier does not check that the NUL is inside.
    const char* kp = keys[k].AsKey();
    if (kp < begin || kp >= begin + size) return false;
    size_t room = static_cast<size_t>(begin + size - kp), len = strnlen(kp, room);
    if (len == room) return false;
    std::string key(kp, len);
    auto r = values[k];
    if (r.IsBool()) out[key] = AttrValue::Bool(r.AsBool());
    else if (r.IsInt() || r.IsUInt()) out[key] = AttrValue::Int(r.AsInt64());
    else if (r.IsFloat()) out[key] = AttrValue::Float(static_cast<float>(r.AsDouble()));
    else if (r.IsString()) out[key] = AttrValue::String(r.AsString().str());
    else if (r.IsTypedVector() || r.IsVector() || r.IsFixedTypedVector()) {
      auto vec = r.AsVector();
      std::vector<int64_t> ints;
      std::vector<float> floats;
      bool all_int = true, all_num = true;
      for (size_t i = 0; i < vec.size(); ++i) {
        auto e = vec[i];
        if (e.IsInt() || e.IsUInt() || e.IsBool()) ints.push_back(e.AsInt64()), floats.push_back(static_cast<float>(e.AsInt64()));
        else if (e.IsFloat()) all_int = false, floats.push_back(static_cast<float>(e.AsDouble()));
        else all_num = false;
      }
      if (!all_num) return false;
      out[key] = all_int ? AttrValue::ListInt(ints) : AttrValue::ListFloat(floats);
    } else {
      return false;
    }
  }
  attrs->insert(out.begin(), out.end());
  return true;
}

// ---- the model -------------------------------------------------------------------------------

class Importer {
 public:
  Importer(const uint8_t* data, size_t size, const LiteRtImportOptions& o) : data_(data), size_(size), opts_(o) {}

  Expected<Graph> Run() {
    if (size_ < 8) return InvalidArgument("LiteRT model: the file is " + std::to_string(size_) + " bytes, too short for a flatbuffer");
    if (!flatbuffers::BufferHasIdentifier(data_, "TFL3"))
      return InvalidArgument("LiteRT model: the file does not carry the TFLite identifier 'TFL3' (not a .tflite flatbuffer?)");
    // Files larger than 2 GiB keep their buffers after the flatbuffer, which itself stays below
    // the verifier's limit; verify that part.
    size_t fb_size = std::min<size_t>(size_, FLATBUFFERS_MAX_BUFFER_SIZE - 1);
    flatbuffers::Verifier v(data_, fb_size, /*max_depth=*/64, /*max_tables=*/4000000);
    if (!fb::VerifyModelBuffer(v))
      return InvalidArgument("LiteRT model: the flatbuffer fails verification (corrupt or truncated file, or not a TFLite model)");
    model_ = fb::GetModel(data_);
    if (model_->version() != 3)
      return InvalidArgument("LiteRT model: schema version " + std::to_string(model_->version()) + " is not supported (Weft reads version 3)");
    if (!model_->subgraphs() || model_->subgraphs()->size() == 0) return InvalidArgument("LiteRT model: the model has no subgraph");
    const fb::SubGraph* main = model_->subgraphs()->Get(0);
    Graph g(main->name() && main->name()->size() ? main->name()->str() : "main");
    WEFT_RETURN_IF_ERROR(ImportSubgraph(0, g, "", nullptr, nullptr));
    return g;
  }

 private:
  static std::vector<const fb::Operator*> Ops(const fb::SubGraph* sg) {
    std::vector<const fb::Operator*> out;
    if (sg->operators())
      for (const fb::Operator* op : *sg->operators()) out.push_back(op);
    return out;
  }

  // The builtin code of an operator, or -1 when its opcode index is out of range.
  int32_t OpCode(const fb::Operator* op) const {
    auto codes = model_->operator_codes();
    if (!codes || op->opcode_index() >= codes->size()) return -1;
    const fb::OperatorCode* c = codes->Get(op->opcode_index());
    return std::max<int32_t>(c->builtin_code(), c->deprecated_builtin_code());
  }

  // The bytes of a tensor's buffer: null with size 0 when it has none.
  // INT4 constant data: two values per byte, the element of even index in the low nibble, each
  // sign-extended to one int8.
  static Status UnpackInt4(const Shape& shape, const uint8_t* p, size_t n, const std::string& what, std::vector<uint8_t>* out) {
    uint64_t count = 1;
    for (size_t k = 0; k < shape.GetDimNum(); ++k)
      if (__builtin_mul_overflow(count, static_cast<uint64_t>(shape.GetDim(k)), &count) || count > (uint64_t(1) << 36))
        return InvalidArgument(what + " (INT4) has too many elements");
    if ((count + 1) / 2 != n)
      return InvalidArgument(what + " has shape " + shape.ToString() + " of INT4 (" + std::to_string(count) + " values, " +
                             std::to_string((count + 1) / 2) + " bytes packed) but its buffer holds " + std::to_string(n) + " bytes");
    out->resize(static_cast<size_t>(count));
    for (uint64_t e = 0; e < count; ++e) {
      const uint8_t nib = static_cast<uint8_t>(e % 2 ? p[e / 2] >> 4 : p[e / 2] & 0xF);
      (*out)[e] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int8_t>(nib << 4) >> 4));
    }
    return Status::Ok();
  }

  // A constant quantized block-wise (BlockwiseQuantization: the indices of a scales tensor and of
  // an optional zero-point tensor, and block_size): blocks of block_size values along its last
  // dim, block b of row r scaled by scales[r][b] (float16 or float32, shaped as the tensor with its
  // last dim divided by block_size) after its zero point (none: 0) is taken off. Becomes float32.
  Status DequantizeBlockwise(const fb::Tensor* t, size_t index, const Shape& shape, const uint8_t* p, size_t n, const std::string& what,
                             const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* tensors, std::vector<uint8_t>* out) {
    if (types_[index] != DT_INT8 && types_[index] != DT_UINT8 && types_[index] != DT_INT16)
      return Unsupported(what + " is quantized block-wise with values of another type than INT4, INT8, UINT8 or INT16");
    auto table = reinterpret_cast<const flatbuffers::Table*>(t->quantization()->details());
    flatbuffers::Verifier v(data_, std::min<size_t>(size_, FLATBUFFERS_MAX_BUFFER_SIZE - 1));
    if (!table || !table->VerifyField<int32_t>(v, 4, 4) || !table->VerifyField<int32_t>(v, 6, 4) || !table->VerifyField<int32_t>(v, 8, 4))
      return InvalidArgument(what + ": its block-wise quantization table is malformed");
    const int32_t scales_t = table->GetField<int32_t>(4, -1), zps_t = table->GetField<int32_t>(6, -1), block = table->GetField<int32_t>(8, 0);
    const size_t rank = shape.GetDimNum();
    const int64_t last = rank ? shape.GetDim(rank - 1) : 1;
    if (block <= 0 || last % block != 0)
      return InvalidArgument(what + ": block size " + std::to_string(block) + " does not divide its last dim (" + std::to_string(last) + ")");
    const size_t nt = tensors ? tensors->size() : 0;
    auto constant = [&](int32_t k, const char* role, std::vector<double>* vals) -> Status {
      if (k < 0 || static_cast<size_t>(k) >= nt) return InvalidArgument(what + ": its block-wise " + role + " tensor index " + std::to_string(k) + " is out of range");
      const fb::Tensor* st = tensors->Get(static_cast<uint32_t>(k));
      const uint8_t* sp;
      size_t sn;
      WEFT_RETURN_IF_ERROR(BufferBytes(st->buffer(), &sp, &sn, what + " block-wise " + role));
      std::string sname;
      const DataType dt = FromLiteRt(st->type(), &sname);
      Shape want;
      for (size_t d = 0; d + 1 < rank; ++d) want.AppendDim(shape.GetDim(d));
      want.AppendDim(last / block);
      Shape got;
      bool fits = true;  // a shape of more than WEFT_MAX_DIMS dims never matches
      if (st->shape())
        for (int32_t d : *st->shape()) fits = got.AppendDim(d) && fits;
      if (!sp || !fits || got != want)
        return InvalidArgument(what + ": its block-wise " + role + " must be a constant of shape " + want.ToString() + " (tensor " +
                               std::to_string(k) + " is " + (sp ? got.ToString() : std::string("not a constant")) + ")");
      const size_t count = static_cast<size_t>(want.GetShapeSize());
      if (dt == DT_UNDEFINED || sn != count * DataTypeSize(dt))
        return InvalidArgument(what + ": its block-wise " + role + " tensor holds " + std::to_string(sn) + " bytes of " + sname + " for " +
                               std::to_string(count) + " values");
      vals->resize(count);
      for (size_t e = 0; e < count; ++e) {
        const uint8_t* at = sp + e * DataTypeSize(dt);
        auto read = [&](auto tag) {
          decltype(tag) v;
          std::memcpy(&v, at, sizeof v);
          return v;
        };
        switch (dt) {
          case DT_FLOAT: (*vals)[e] = read(float()); break;
          case DT_FLOAT16: (*vals)[e] = float16::ToFloat(read(uint16_t())); break;
          case DT_BF16: {
            bfloat16 b;
            b.bits = read(uint16_t());
            (*vals)[e] = static_cast<float>(b);
            break;
          }
          case DT_INT8: (*vals)[e] = read(int8_t()); break;
          case DT_UINT8: (*vals)[e] = read(uint8_t()); break;
          case DT_INT16: (*vals)[e] = read(int16_t()); break;
          case DT_INT32: (*vals)[e] = read(int32_t()); break;
          case DT_INT64: (*vals)[e] = static_cast<double>(read(int64_t())); break;
          default: return InvalidArgument(what + ": its block-wise " + role + " tensor has the type " + sname);
        }
      }
      return Status::Ok();
    };
    std::vector<double> scales, zps;
    WEFT_RETURN_IF_ERROR(constant(scales_t, "scales", &scales));
    if (zps_t >= 0) WEFT_RETURN_IF_ERROR(constant(zps_t, "zero points", &zps));
    const size_t count = static_cast<size_t>(shape.GetShapeSize()), elem = DataTypeSize(types_[index]);
    if (n != count * elem) return InvalidArgument(what + " has shape " + shape.ToString() + " but its buffer holds " + std::to_string(n) + " bytes");
    out->resize(count * sizeof(float));
    float* dst = reinterpret_cast<float*>(out->data());
    for (size_t e = 0; e < count; ++e) {
      double q;
      if (types_[index] == DT_INT8) q = static_cast<int8_t>(p[e]);
      else if (types_[index] == DT_UINT8) q = p[e];
      else {
        int16_t v16;
        std::memcpy(&v16, p + 2 * e, 2);
        q = v16;
      }
      const size_t b = e / static_cast<size_t>(block);  // rows of `last` values hold last / block blocks each
      dst[e] = static_cast<float>((q - (zps.empty() ? 0.0 : zps[b])) * scales[b]);
    }
    return Status::Ok();
  }

  Status BufferBytes(uint32_t index, const uint8_t** p, size_t* n, const std::string& what) const {
    *p = nullptr;
    *n = 0;
    auto bufs = model_->buffers();
    if (index == 0) return Status::Ok();  // buffer 0 is the empty sentinel
    if (!bufs || index >= bufs->size())
      return InvalidArgument(what + " names buffer " + std::to_string(index) + " of " + std::to_string(bufs ? bufs->size() : 0));
    const fb::Buffer* b = bufs->Get(index);
    if (b->data() && b->data()->size()) {
      *p = b->data()->data();
      *n = b->data()->size();
    } else if (b->offset() > 1) {  // data stored after the flatbuffer (offset 1 marks "none" in some writers)
      uint64_t off = b->offset(), sz = b->size();
      if (off > size_ || sz > size_ - off)
        return InvalidArgument(what + ": its buffer " + std::to_string(index) + " lies at bytes [" + std::to_string(off) + ", " +
                               std::to_string(off + sz) + ") beyond the end of the " + std::to_string(size_) + "-byte file");
      *p = data_ + off;
      *n = static_cast<size_t>(sz);
    }
    return Status::Ok();
  }

  // Imports subgraph `index` into g. The main subgraph (bound == nullptr) adds g's inputs and
  // outputs; another one (the branches of IF, a composite's decomposition) is imported inline: its
  // inputs are the values named in `bound`, its tensors' names get `prefix`, and the names of its
  // outputs go to `outs`.
  Status ImportSubgraph(uint32_t index, Graph& g, const std::string& prefix, const std::vector<std::string>* bound,
                        std::vector<std::string>* outs) {
    // The per-subgraph tables, restored for the caller when an inlined subgraph is done.
    struct Saved {
      Importer* self;
      std::vector<std::string> names;
      std::vector<DataType> types;
      std::vector<Shape> shapes;
      std::set<size_t> sparse, dequantized;
      const fb::SubGraph* sg;
      ~Saved() {
        self->names_ = std::move(names);
        self->types_ = std::move(types);
        self->shapes_ = std::move(shapes);
        self->sparse_ = std::move(sparse);
        self->dequantized_ = std::move(dequantized);
        self->sg_ = sg;
        self->stack_.pop_back();
      }
    } saved{this, std::move(names_), std::move(types_), std::move(shapes_), std::move(sparse_), std::move(dequantized_), sg_};
    stack_.push_back(index);
    // Each use imports its subgraph again, so nesting multiplies: a budget keeps a file whose
    // subgraphs each run the next several times from taking unbounded time and memory.
    if (bound && ++inlined_ > kMaxInlined)
      return InvalidArgument("LiteRT model: subgraphs are imported more than " + std::to_string(kMaxInlined) +
                             " times in all through nested control flow (subgraph " + std::to_string(index) + ")");
    shapes_.clear();
    sparse_.clear();
    dequantized_.clear();
    const fb::SubGraph* sg = sg_ = model_->subgraphs()->Get(index);
    auto tensors = sg->tensors();
    size_t nt = tensors ? tensors->size() : 0;
    // Value names: the tensor's name when unique and non-empty, else "<name>_<index>" / "t<index>".
    std::unordered_map<std::string, int> seen;
    for (size_t i = 0; i < nt; ++i) {
      auto n = tensors->Get(static_cast<uint32_t>(i))->name();
      if (n && n->size()) ++seen[n->str()];
    }
    names_.assign(nt, "");
    std::set<std::string> used;
    for (size_t i = 0; i < nt; ++i) {
      auto n = tensors->Get(static_cast<uint32_t>(i))->name();
      std::string s = n && n->size() && seen[n->str()] == 1 ? n->str() : (n && n->size() ? n->str() + "_" : std::string("t")) + std::to_string(i);
      while (used.count(s)) s += "_";
      used.insert(s);
      names_[i] = prefix + s;
    }
    auto tensor_ref = [&](int32_t t, const std::string& what) -> Status {
      if (t < 0 || static_cast<size_t>(t) >= nt)
        return InvalidArgument("LiteRT model: " + what + " refers to tensor " + std::to_string(t) + " of " + std::to_string(nt));
      return Status::Ok();
    };

    std::vector<char> produced(nt, 0), is_input(nt, 0), is_const(nt, 0);
    const size_t n_inputs = sg->inputs() ? sg->inputs()->size() : 0;
    if (bound && bound->size() != n_inputs)
      return InvalidArgument("LiteRT model: subgraph " + std::to_string(index) + " takes " + std::to_string(n_inputs) +
                             " inputs; the operator that runs it passes " + std::to_string(bound->size()));
    if (sg->inputs())
      for (uint32_t k = 0; k < n_inputs; ++k) {
        int32_t t = sg->inputs()->Get(k);
        WEFT_RETURN_IF_ERROR(tensor_ref(t, "subgraph input"));
        if (is_input[static_cast<size_t>(t)])
          return InvalidArgument("LiteRT model: subgraph " + std::to_string(index) + " lists tensor " + std::to_string(t) + " as an input twice");
        is_input[static_cast<size_t>(t)] = 1;
        if (bound) names_[static_cast<size_t>(t)] = (*bound)[k];  // the caller's value
      }
    // Tensors: types, shapes, constants.
    types_.assign(nt, DT_UNDEFINED);
    for (size_t i = 0; i < nt; ++i) {
      const fb::Tensor* t = tensors->Get(static_cast<uint32_t>(i));
      std::string what = "LiteRT model: tensor " + std::to_string(i) + " ('" + names_[i] + "')";
      std::string tname;
      types_[i] = FromLiteRt(t->type(), &tname);
      if (t->sparsity()) sparse_.insert(i);
      const uint8_t* p;
      size_t n;
      WEFT_RETURN_IF_ERROR(BufferBytes(t->buffer(), &p, &n, what));
      Shape shape;
      if (t->shape()) {
        if (t->shape()->size() > WEFT_MAX_DIMS) return InvalidArgument(what + " has rank " + std::to_string(t->shape()->size()) + ", more than " + std::to_string(WEFT_MAX_DIMS));
        for (int32_t d : *t->shape()) {
          if (d < 0) return InvalidArgument(what + " has the negative dim " + std::to_string(d));
          shape.AppendDim(d);
        }
      }
      shapes_.push_back(shape);
      if (!p || is_input[i]) continue;
      std::vector<uint8_t> unpacked;  // INT4 constants as one int8 per value
      if (t->type() == 17) {
        WEFT_RETURN_IF_ERROR(UnpackInt4(shape, p, n, what, &unpacked));
        types_[i] = DT_INT8;
        p = unpacked.data();
        n = unpacked.size();
      }
      std::vector<uint8_t> dequantized;  // block-wise quantized constants as float32
      if (t->quantization() && t->quantization()->details_type() == 2) {
        WEFT_RETURN_IF_ERROR(DequantizeBlockwise(t, i, shape, p, n, what, tensors, &dequantized));
        types_[i] = DT_FLOAT;
        p = dequantized.data();
        n = dequantized.size();
        dequantized_.insert(i);
      }
      if (types_[i] == DT_UNDEFINED) return Unsupported(what + " holds constant data of type " + tname + ", which Weft does not support");
      if (t->sparsity()) return Unsupported(what + " is a sparse constant (sparsity parameters), which Weft does not support yet");
      int64_t count = 1;
      for (size_t k = 0; k < shape.GetDimNum(); ++k)
        if (__builtin_mul_overflow(count, shape.GetDim(k), &count)) return InvalidArgument(what + " has more elements than fit in 64 bits");
      size_t elem = DataTypeSize(types_[i]);
      if (static_cast<uint64_t>(count) > (uint64_t(1) << 40) / elem || static_cast<size_t>(count) * elem != n)
        return InvalidArgument(what + " has shape " + shape.ToString() + " of " + tname + " (" + std::to_string(count) +
                               " elements) but its buffer holds " + std::to_string(n) + " bytes");
      auto ht = HostTensor::FromBytes(types_[i], shape, p, n);
      if (!ht.ok()) return ht.status();
      consts_[names_[i]] = ht.value();
      g.AddConstant(names_[i], std::move(ht.value()));
      is_const[i] = 1;
    }
    // Graph inputs.
    if (sg->inputs() && !bound)
      for (int32_t ti : *sg->inputs()) {
        size_t i = static_cast<size_t>(ti);
        const fb::Tensor* t = tensors->Get(static_cast<uint32_t>(i));
        std::string tname;
        FromLiteRt(t->type(), &tname);
        if (types_[i] == DT_UNDEFINED)
          return Unsupported("LiteRT model: input tensor '" + names_[i] + "' has type " + tname + ", which Weft does not support");
        Shape s = shapes_[i];
        if (t->shape_signature() && t->shape_signature()->size() == s.GetDimNum())
          for (size_t k = 0; k < s.GetDimNum(); ++k)
            if (t->shape_signature()->Get(static_cast<uint32_t>(k)) < 0) s.SetDim(k, -1);
        if (auto it = opts_.input_shapes.find(names_[i]); it != opts_.input_shapes.end()) s = it->second;
        g.AddInput(names_[i], types_[i], s);
      }
    // Operators.
    std::map<size_t, size_t> state_owner;  // variable tensor → the operator whose state it is
    auto ops = Ops(sg);
    // How many operator inputs and subgraph outputs read each tensor (PAD folding needs one).
    std::vector<int> uses(nt, 0);
    for (const fb::Operator* o : ops)
      if (o->inputs())
        for (int32_t t : *o->inputs())
          if (t >= 0 && static_cast<size_t>(t) < nt) ++uses[static_cast<size_t>(t)];
    if (sg->outputs())
      for (int32_t t : *sg->outputs())
        if (t >= 0 && static_cast<size_t>(t) < nt) uses[static_cast<size_t>(t)] += 2;
    // A PAD whose only reader may be a VALID convolution waits here (by its output's name): the
    // convolution takes the padding over (`explicit_padding`), or the PAD is added before it.
    struct PendingPad {
      Node node;
      int32_t code;
      std::string what;
      std::vector<int64_t> pads;  // top, bottom, left, right
    };
    std::map<std::string, PendingPad> pending_pads;
    auto add_node = [&](Node node, int32_t c, const std::string& w) -> Status {
      if (c != kCustom && (!node.attrs.count("input_scale") || SameQuantization(c, node))) {  // a built-in of the same maths, if any
        bool lowered = false;
        WEFT_RETURN_IF_ERROR(Lower(c, node, w, &g, &lowered));
        if (lowered) return Status::Ok();
      }
      g.AddNode(std::move(node));
      return Status::Ok();
    };
    for (size_t k = 0; k < ops.size(); ++k) {
      const fb::Operator* op = ops[k];
      std::string where = "LiteRT model: operator #" + std::to_string(k);
      int32_t code = OpCode(op);
      if (code < 0) return InvalidArgument(where + " has opcode index " + std::to_string(op->opcode_index()) + " beyond the operator codes");
      const fb::OperatorCode* oc = model_->operator_codes()->Get(op->opcode_index());
      Node n;
      n.domain = "litert";
      n.opset = oc->version();
      n.attrs["version"] = AttrValue::Int(oc->version());
      std::set<std::string> option_keys;  // attributes decoded from the operator's options
      std::string op_key = code == kCustom ? "" : BuiltinName(code), custom_options;
      auto note_options = [&](const std::set<std::string>& before) {
        for (auto& [name, v] : n.attrs)
          if (!before.count(name)) option_keys.insert(name);
      };
      auto attr_names = [&] {
        std::set<std::string> names;
        for (auto& [name, v] : n.attrs) names.insert(name);
        return names;
      };
      if (code == kCustom) {
        std::string custom = oc->custom_code() ? oc->custom_code()->str() : "";
        std::string key = LiteRtCustomOpKey(custom);
        op_key = key;
        n.op_type = key;
        for (const std::string& c : {custom, key})
          if (auto it = opts_.op_map.find(c); it != opts_.op_map.end()) {
            n.op_type = it->second;
            break;
          }
        if (n.op_type.empty()) return InvalidArgument(where + " is a custom operator with an empty customCode");
        n.attrs["custom_code"] = AttrValue::String(custom);
        const uint8_t* opt = op->custom_options() ? op->custom_options()->data() : nullptr;
        size_t opt_n = op->custom_options() ? op->custom_options()->size() : 0;
        if (!opt && op->large_custom_options_size()) {
          uint64_t off = op->large_custom_options_offset(), sz = op->large_custom_options_size();
          if (off > size_ || sz > size_ - off) return InvalidArgument(where + ": its custom options lie beyond the end of the file");
          opt = data_ + off;
          opt_n = static_cast<size_t>(sz);
        }
        const std::set<std::string> before = attr_names();
        const bool decoded = opt_n && op->custom_options_format() == 0 && DecodeFlexbufferMap(opt, opt_n, &n.attrs);
        note_options(before);
        custom_options.assign(reinterpret_cast<const char*>(opt ? opt : data_), opt_n);
        if (opt_n && !decoded)
          n.attrs["custom_options"] = AttrValue::TensorValue(DT_UINT8, Shape({static_cast<int64_t>(opt_n)}), std::vector<uint8_t>(opt, opt + opt_n));
      } else {
        n.op_type = LiteRtBuiltinOpType(code);
        if (op->outputs() && op->outputs()->size() && op->outputs()->Get(0) >= 0 && static_cast<size_t>(op->outputs()->Get(0)) < nt &&
            types_[static_cast<size_t>(op->outputs()->Get(0))] != DT_UNDEFINED)
          n.attrs["output_type"] = AttrValue::Type(types_[static_cast<size_t>(op->outputs()->Get(0))]);
        if (n.op_type.empty()) return Unsupported(where + " uses builtin operator code " + std::to_string(code) + ", which this Weft build does not know");
        flatbuffers::Verifier v(data_, std::min<size_t>(size_, FLATBUFFERS_MAX_BUFFER_SIZE - 1));
        std::string err;
        auto table = reinterpret_cast<const flatbuffers::Table*>(op->builtin_options());
        const std::set<std::string> before = attr_names();
        if (table && !DecodeOptions(table, op->builtin_options_type(), v, &n.attrs, &err))
          return InvalidArgument(where + " (" + BuiltinName(code) + "): " + err);
        note_options(before);
      }
      n.name = (op->outputs() && op->outputs()->size() && op->outputs()->Get(0) >= 0 && static_cast<size_t>(op->outputs()->Get(0)) < nt
                    ? names_[static_cast<size_t>(op->outputs()->Get(0))]
                    : "op" + std::to_string(k)) + "/" + (code == kCustom ? n.op_type : BuiltinName(code));
      std::string what = where + " (" + (code == kCustom ? "custom '" + n.attrs["custom_code"].s() + "'" : BuiltinName(code)) + ")";
      if (code == 129 || code == 142 || code == 143 || code == 144) {  // CALL_ONCE and resource variables
        if (bound)
          return Unsupported(what + " uses resource variables inside a subgraph that IF or WHILE runs; Weft supports them in the main subgraph");
        WEFT_RETURN_IF_ERROR(ResourceOp(code, op, n, what, g, tensor_ref, produced, is_const, is_input));
        continue;
      }
      op_states_.clear();
      if (op->inputs())
        for (uint32_t k_in = 0; k_in < op->inputs()->size(); ++k_in) {
          int32_t t = op->inputs()->Get(k_in);
          if (t == -1) {
            if (IsStateInput(code, k_in))
              return InvalidArgument(what + " input " + std::to_string(k_in) + " (the operator's state) is absent; it must be a variable tensor");
            n.inputs.push_back("");
            continue;
          }
          WEFT_RETURN_IF_ERROR(tensor_ref(t, what + " input"));
          size_t i = static_cast<size_t>(t);
          if (IsStateInput(code, k_in)) {
            // The operator's state (a variable tensor it updates in place): the Weft op keeps it
            // per run context, so it is not an input. One operator owns each state tensor.
            if (!tensors->Get(static_cast<uint32_t>(i))->is_variable() || is_const[i] || is_input[i] || produced[i])
              return InvalidArgument(what + " input " + std::to_string(k_in) + " ('" + names_[i] + "') must be a variable tensor (the operator's state)");
            if (!state_owner.emplace(i, k).second)
              return Unsupported(what + (state_owner[i] == k ? " uses the variable tensor '" + names_[i] + "' as two of its states"
                                                              : " shares the variable tensor '" + names_[i] + "' with operator #" + std::to_string(state_owner[i])) +
                                 "; Weft keeps each state apart");
            op_states_.push_back(i);
            continue;
          }
          if (!is_const[i] && !is_input[i] && !produced[i]) {
            if (tensors->Get(static_cast<uint32_t>(i))->is_variable())
              return Unsupported(what + " reads the variable tensor '" + names_[i] + "'" +
                                 (state_owner.count(i) ? ", the state of operator #" + std::to_string(state_owner[i]) + "; only that operator may use it"
                                                       : "; Weft supports variable tensors only as the state of SVDF and the sequence LSTMs and RNNs"));
            if (LaterProducer(ops, k, static_cast<int32_t>(i)))
              return InvalidArgument(what + " reads tensor '" + names_[i] + "' before the operator that writes it (operators must be in execution order)");
            // No data and no writer (a scratch operand the runtime would allocate): zeros.
            int64_t count = 1;
            bool overflow = false;
            for (size_t d = 0; d < shapes_[i].GetDimNum(); ++d) overflow = overflow || __builtin_mul_overflow(count, shapes_[i].GetDim(d), &count);
            if (types_[i] == DT_UNDEFINED || overflow || count > (int64_t(1) << 28))
              return InvalidArgument(what + " reads tensor '" + names_[i] + "', which has no data, no writer and no usable type or size");
            g.AddConstant(names_[i], HostTensor(types_[i], shapes_[i]));
            is_const[i] = 1;
          }
          n.inputs.push_back(names_[i]);
        }
      if (op->outputs())
        for (int32_t t : *op->outputs()) {
          WEFT_RETURN_IF_ERROR(tensor_ref(t, what + " output"));
          size_t i = static_cast<size_t>(t);
          if (produced[i] || is_input[i] || is_const[i])
            return InvalidArgument(what + " writes tensor '" + names_[i] + "', which is already an input, a constant or another operator's output");
          produced[i] = 1;
          n.outputs.push_back(names_[i]);
        }
      if (code == 118 || code == 119 || code == 206 || code == 31) {  // IF, WHILE, STABLEHLO_COMPOSITE, CALL: their subgraphs
        WEFT_RETURN_IF_ERROR(InlineCall(code, op, n, what, g));
        continue;
      }
      if (code == 129)  // CALL_ONCE outside the variables' initialization (handled before)
        return Unsupported(what + " runs a subgraph as " + BuiltinName(code) +
                           ", which Weft does not support yet (IF, WHILE, CALL and STABLEHLO_COMPOSITE it does)");
      WEFT_RETURN_IF_ERROR(AddQuantization(op, code, what, &n));
      bool parsed = false;
      WEFT_RETURN_IF_ERROR(Parse(op, k, code, op_key, custom_options, option_keys, what, &n, &parsed));
      if (parsed) code = kCustom;  // the node is the parser's: no lowering or folding of the builtin
      if (code == 35 || code == 46) {  // UNIDIRECTIONAL_ / BIDIRECTIONAL_SEQUENCE_RNN: ONNX's RNN over variables
        WEFT_RETURN_IF_ERROR(ExpandSequenceRnn(code, n, what, &g));
        continue;
      }
      if (code == 52) {  // BIDIRECTIONAL_SEQUENCE_LSTM: two unidirectional ones
        WEFT_RETURN_IF_ERROR(ExpandBidirectionalLstm(n, what, &g));
        continue;
      }
      if (code == 23 || code == 97) {  // RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR
        auto flag = [&](const char* k) { auto it = n.attrs.find(k); return it != n.attrs.end() && it->second.i() != 0; };
        if (flag("align_corners") && flag("half_pixel_centers"))
          return InvalidArgument(what + ": align_corners and half_pixel_centers are both set; only one may be (LiteRT refuses it too)");
      }
      // PAD (zeros, or the zero point: what a convolution's own padding adds) of H and W only,
      // read by one operator: it may fold into a VALID convolution.
      if (code == 34 && n.inputs.size() == 2 && n.outputs.size() == 1 && uses[static_cast<size_t>(op->outputs()->Get(0))] == 1) {
        std::vector<int64_t> p;
        auto same_quant = [&] {  // the padded tensor means what the input means (as PAD requires)
          auto is = n.attrs.find("input_scale"), os = n.attrs.find("output_scale");
          auto iz = n.attrs.find("input_zero_point"), oz = n.attrs.find("output_zero_point");
          if (is == n.attrs.end()) return os == n.attrs.end();
          return os != n.attrs.end() && !is->second.floats().empty() && !os->second.floats().empty() &&
                 is->second.floats()[0] == os->second.floats()[0] && iz != n.attrs.end() && oz != n.attrs.end() && !iz->second.ints().empty() && !oz->second.ints().empty() && iz->second.ints()[0] == oz->second.ints()[0];
        };
        if (ConstInts(n.inputs[1], &p) && p.size() == 8 && p[0] == 0 && p[1] == 0 && p[6] == 0 && p[7] == 0 && p[2] >= 0 && p[3] >= 0 &&
            p[4] >= 0 && p[5] >= 0 && p[2] < (int64_t(1) << 20) && p[3] < (int64_t(1) << 20) && p[4] < (int64_t(1) << 20) &&
            p[5] < (int64_t(1) << 20) && RankOf(n.inputs[0]) == 4 && TypeOf(n.inputs[0]) == TypeOf(n.outputs[0]) && same_quant()) {
          std::string out = n.outputs[0];
          pending_pads[out] = PendingPad{std::move(n), code, what, {p[2], p[3], p[4], p[5]}};
          continue;
        }
      }
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        auto it = pending_pads.find(n.inputs[k]);
        if (it == pending_pads.end()) continue;
        auto pad_it = n.attrs.find("padding");
        const bool conv = (code == 3 || code == 4) && k == 0 && pad_it != n.attrs.end() && pad_it->second.s() == "VALID";
        if (conv) {  // the convolution reads the unpadded input and pads itself
          n.inputs[0] = it->second.node.inputs[0];
          n.attrs["explicit_padding"] = AttrValue::ListInt(it->second.pads);
        } else {
          WEFT_RETURN_IF_ERROR(add_node(std::move(it->second.node), it->second.code, it->second.what));
        }
        pending_pads.erase(it);
      }
      WEFT_RETURN_IF_ERROR(add_node(std::move(n), code, what));
    }
    for (auto& [name, pending] : pending_pads) WEFT_RETURN_IF_ERROR(add_node(std::move(pending.node), pending.code, pending.what));
    if (!sg->outputs() || sg->outputs()->size() == 0) return InvalidArgument("LiteRT model: the subgraph has no outputs");
    for (int32_t t : *sg->outputs()) {
      WEFT_RETURN_IF_ERROR(tensor_ref(t, "subgraph output"));
      size_t i = static_cast<size_t>(t);
      if (!produced[i] && !is_input[i] && !is_const[i])
        return InvalidArgument("LiteRT model: output tensor '" + names_[i] + "' is produced by no operator");
      if (outs) outs->push_back(names_[i]);
      else g.AddOutput(names_[i]);
    }
    out_types_.clear();
    for (int32_t t : *sg->outputs()) out_types_.push_back(types_[static_cast<size_t>(t)]);
    return Status::Ok();
  }

  // Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) and the CALL_ONCE subgraph that
  // gives them their first values. A variable is the pair (container, shared_name) of its handles,
  // as in LiteRT (handles without names share one). Its first read in a run becomes Weft's
  // ReadVariable (the run context's value, or the initial one); later reads in the run take the
  // value last read or assigned. Each assignment becomes an AssignVariable where it stands,
  // ordered after the reads before it and after the previous assignment. CALL_ONCE's subgraph may
  // only assign constants to variables: those are the initial values, which reset_state() returns
  // to; it must come before the variables' first use.
  template <typename Ref>
  Status ResourceOp(int32_t code, const fb::Operator* op, const Node& n, const std::string& what, Graph& g, const Ref& tensor_ref,
                    std::vector<char>& produced, const std::vector<char>& is_const, const std::vector<char>& is_input) {
    const size_t n_in = op->inputs() ? op->inputs()->size() : 0, n_out = op->outputs() ? op->outputs()->size() : 0;
    auto in = [&](size_t k, size_t* i) -> Status {
      const int32_t t = op->inputs()->Get(static_cast<uint32_t>(k));
      WEFT_RETURN_IF_ERROR(tensor_ref(t, what + " input"));
      *i = static_cast<size_t>(t);
      return Status::Ok();
    };
    auto out = [&](size_t* i) -> Status {
      const int32_t t = op->outputs()->Get(0);
      WEFT_RETURN_IF_ERROR(tensor_ref(t, what + " output"));
      *i = static_cast<size_t>(t);
      if (produced[*i] || is_const[*i] || is_input[*i])
        return InvalidArgument(what + " writes tensor '" + names_[*i] + "', which is already an input, a constant or another operator's output");
      produced[*i] = 1;
      return Status::Ok();
    };
    auto variable = [&](size_t handle, std::string* key) -> Status {
      auto it = handles_.find(handle);
      if (it == handles_.end()) return InvalidArgument(what + " reads the resource '" + names_[handle] + "', which no VAR_HANDLE before it gives");
      *key = it->second;
      return Status::Ok();
    };
    if (code == 129) {  // CALL_ONCE
      auto idx = n.attrs.find("init_subgraph_index");
      uint32_t callee = 0;
      WEFT_RETURN_IF_ERROR(CalleeIndex(idx == n.attrs.end() ? 0 : idx->second.i(), what, "init_subgraph_index", &callee));
      return InitialValues(callee, what);
    }
    if (code == 142) {  // VAR_HANDLE -> resource
      if (n_out != 1) return InvalidArgument(what + " must have one output");
      size_t o;
      WEFT_RETURN_IF_ERROR(out(&o));
      handles_[o] = VariableKey(n);
      return Status::Ok();
    }
    if (code == 143) {  // READ_VARIABLE(resource) -> value
      if (n_in != 1 || n_out != 1) return InvalidArgument(what + " must have one input and one output");
      size_t h, o;
      std::string key;
      WEFT_RETURN_IF_ERROR(in(0, &h));
      WEFT_RETURN_IF_ERROR(variable(h, &key));
      WEFT_RETURN_IF_ERROR(out(&o));
      auto init = var_initial_.find(key);
      if (init == var_initial_.end())
        return Unsupported(what + " reads the variable " + Display(key) + " before anything assigns it (no CALL_ONCE subgraph gives it a value)");
      if (types_[o] != init->second.dtype() || shapes_[o] != init->second.shape())
        return InvalidArgument(what + " reads the variable " + Display(key) + " (" + DataTypeName(init->second.dtype()) + init->second.shape().ToString() +
                               ") into tensor '" + names_[o] + "' (" + DataTypeName(types_[o]) + shapes_[o].ToString() + ")");
      if (auto cur = var_current_.find(key); cur != var_current_.end()) {  // read or assigned before in this run
        Node id;
        id.op_type = "Identity";
        id.name = n.name;
        id.inputs = {cur->second};
        id.outputs = {names_[o]};
        g.AddNode(std::move(id));
        return Status::Ok();
      }
      Node r;
      r.op_type = "ReadVariable";
      r.name = n.name;
      r.outputs = {names_[o]};
      r.attrs["variable"] = AttrValue::String(key);
      r.attrs["initial"] = InitialAttr(init->second);
      g.AddNode(std::move(r));
      var_current_[key] = names_[o];
      var_pending_[key].push_back(names_[o]);
      return Status::Ok();
    }
    // ASSIGN_VARIABLE(resource, value)
    if (n_in != 2 || n_out != 0) return InvalidArgument(what + " must have two inputs and no output");
    size_t h, v;
    std::string key;
    WEFT_RETURN_IF_ERROR(in(0, &h));
    WEFT_RETURN_IF_ERROR(variable(h, &key));
    WEFT_RETURN_IF_ERROR(in(1, &v));
    if (!produced[v] && !is_const[v] && !is_input[v]) return InvalidArgument(what + " assigns tensor '" + names_[v] + "', which nothing before it writes");
    if (types_[v] == DT_UNDEFINED) return Unsupported(what + " assigns tensor '" + names_[v] + "' of a type Weft does not support");
    auto init = var_initial_.find(key);
    if (init == var_initial_.end()) {  // first given in the main subgraph: zeros until then
      init = var_initial_.emplace(key, HostTensor(types_[v], shapes_[v])).first;
      if (init->second.bytes()) std::memset(init->second.data(), 0, init->second.bytes());
    }
    if (types_[v] != init->second.dtype() || shapes_[v] != init->second.shape())
      return InvalidArgument(what + " assigns tensor '" + names_[v] + "' (" + DataTypeName(types_[v]) + shapes_[v].ToString() + ") to the variable " +
                             Display(key) + " (" + DataTypeName(init->second.dtype()) + init->second.shape().ToString() + ")");
    Node a;
    a.op_type = "AssignVariable";
    a.name = n.name;
    a.inputs = {names_[v]};
    for (const std::string& r : var_pending_[key])
      if (r != names_[v]) a.inputs.push_back(r);
    var_pending_[key].clear();
    a.outputs = {FreshName(n.name + "/done")};
    a.attrs["variable"] = AttrValue::String(key);
    a.attrs["dtype"] = AttrValue::Type(init->second.dtype());
    std::vector<int64_t> dims;
    for (size_t d = 0; d < init->second.shape().GetDimNum(); ++d) dims.push_back(init->second.shape().GetDim(d));
    a.attrs["shape"] = AttrValue::ListInt(std::move(dims));
    var_pending_[key].push_back(a.outputs[0]);  // the next assignment comes after this one
    g.AddNode(std::move(a));
    var_current_[key] = names_[v];
    return Status::Ok();
  }

  // The variable a VAR_HANDLE names, (container, shared_name) as one unambiguous string.
  static std::string VariableKey(const Node& n) {
    auto str = [&](const char* k) {
      auto it = n.attrs.find(k);
      return it == n.attrs.end() ? std::string() : it->second.s();
    };
    const std::string c = str("container");
    return std::to_string(c.size()) + ":" + c + str("shared_name");
  }
  // The variable as messages name it: 'shared_name', 'container/shared_name', or 'unnamed'.
  static std::string Display(const std::string& key) {
    const size_t colon = key.find(':');
    const size_t len = static_cast<size_t>(std::stoull(key.substr(0, colon)));
    const std::string c = key.substr(colon + 1, len), sn = key.substr(colon + 1 + len);
    return c.empty() && sn.empty() ? "(unnamed)" : "'" + (c.empty() ? sn : c + "/" + sn) + "'";
  }
  // A value name no tensor of the subgraph has.
  std::string FreshName(std::string name) const {
    std::unordered_set<std::string> taken(names_.begin(), names_.end());
    while (taken.count(name)) name += "_";
    return name;
  }

  static AttrValue InitialAttr(const HostTensor& t) {
    const auto* p = static_cast<const uint8_t*>(t.data());
    return AttrValue::TensorValue(t.dtype(), t.shape(), std::vector<uint8_t>(p, p + t.bytes()));
  }

  // CALL_ONCE's subgraph: VAR_HANDLEs and ASSIGN_VARIABLEs of constants, nothing else.
  Status InitialValues(uint32_t index, const std::string& what) {
    const fb::SubGraph* sg = model_->subgraphs()->Get(index);
    auto tensors = sg->tensors();
    const size_t nt = tensors ? tensors->size() : 0;
    std::map<int32_t, std::string> handles;
    const std::string where = what + ": subgraph " + std::to_string(index);
    for (const fb::Operator* op : Ops(sg)) {
      const int32_t code = OpCode(op);
      const size_t n_in = op->inputs() ? op->inputs()->size() : 0, n_out = op->outputs() ? op->outputs()->size() : 0;
      auto ref = [&](int32_t t) { return t >= 0 && static_cast<size_t>(t) < nt; };
      if (code == 142 && n_out == 1 && ref(op->outputs()->Get(0))) {
        Node n;
        flatbuffers::Verifier v(data_, std::min<size_t>(size_, FLATBUFFERS_MAX_BUFFER_SIZE - 1));
        std::string err;
        auto table = reinterpret_cast<const flatbuffers::Table*>(op->builtin_options());
        if (table && !DecodeOptions(table, op->builtin_options_type(), v, &n.attrs, &err)) return InvalidArgument(where + " (VAR_HANDLE): " + err);
        handles[op->outputs()->Get(0)] = VariableKey(n);
        continue;
      }
      if (code == 144 && n_in == 2 && n_out == 0 && ref(op->inputs()->Get(0)) && ref(op->inputs()->Get(1))) {
        auto h = handles.find(op->inputs()->Get(0));
        if (h == handles.end()) return InvalidArgument(where + " assigns a resource no VAR_HANDLE before it gives");
        if (var_current_.count(h->second))
          return Unsupported(where + " gives the variable " + Display(h->second) + " a value after the main subgraph used it; CALL_ONCE must come first");
        const fb::Tensor* t = tensors->Get(static_cast<uint32_t>(op->inputs()->Get(1)));
        std::string tname;
        const DataType dt = FromLiteRt(t->type(), &tname);
        const uint8_t* p = nullptr;
        size_t bytes = 0;
        WEFT_RETURN_IF_ERROR(BufferBytes(t->buffer(), &p, &bytes, where + " initial value"));
        Shape shape;
        if (t->shape()) {
          if (t->shape()->size() > WEFT_MAX_DIMS) return InvalidArgument(where + ": an initial value has rank above " + std::to_string(WEFT_MAX_DIMS));
          for (int32_t d : *t->shape()) {
            if (d < 0) return InvalidArgument(where + ": an initial value has the negative dim " + std::to_string(d));
            shape.AppendDim(d);
          }
        }
        const bool empty = shape.GetDimNum() && shape.GetShapeSize() == 0;
        if ((!p && !empty) || dt == DT_UNDEFINED || t->sparsity() || t->type() == 17 || (t->quantization() && t->quantization()->details_type() != 0))
          return Unsupported(where + " assigns the variable " + Display(h->second) +
                             " a value that is not a plain constant; Weft takes initializers that assign constants");
        auto ht = HostTensor::FromBytes(dt, shape, p, bytes);
        if (!ht.ok()) return InvalidArgument(where + " initial value of " + Display(h->second) + ": " + ht.status().message());
        var_initial_.insert_or_assign(h->second, std::move(ht.value()));
        continue;
      }
      return Unsupported(where + " runs " + (code >= 0 ? BuiltinName(code) : std::string("an unknown operator")) +
                         "; Weft takes CALL_ONCE subgraphs that only assign constants to resource variables");
    }
    return Status::Ok();
  }

  // WHILE(v...) -> v...: while cond(v) holds, v = body(v). Weft's op Loop with no trip count:
  // the first condition is computed in the enclosing graph, and the loop body is one Weft graph
  // (iter, cond, v...) -> (cond(body(v)), body(v)...), the LiteRT body followed by the condition.
  Status InlineWhile(const Node& n, const std::string& what, Graph& g) {
    uint32_t cond_index = 0, body_index = 0;
    auto index = [&](const char* field) { auto it = n.attrs.find(field); return it == n.attrs.end() ? int64_t(-1) : it->second.i(); };
    WEFT_RETURN_IF_ERROR(CalleeIndex(index("cond_subgraph_index"), what, "cond_subgraph_index", &cond_index));
    WEFT_RETURN_IF_ERROR(CalleeIndex(index("body_subgraph_index"), what, "body_subgraph_index", &body_index));
    if (n.inputs.empty() || n.outputs.size() != n.inputs.size())
      return InvalidArgument(what + " has " + std::to_string(n.inputs.size()) + " inputs and " + std::to_string(n.outputs.size()) +
                             " outputs; its loop values need one output each");
    auto one_cond = [&](const std::vector<std::string>& c) -> Status {  // out_types_: the subgraph just imported
      if (c.size() != 1 || out_types_.size() != 1 || out_types_[0] != DT_BOOL)
        return InvalidArgument(what + ": subgraph " + std::to_string(cond_index) + " (cond_subgraph_index) must give one bool");
      return Status::Ok();
    };
    std::vector<std::string> first;
    WEFT_RETURN_IF_ERROR(ImportSubgraph(cond_index, g, n.name + "/cond0/", &n.inputs, &first));
    WEFT_RETURN_IF_ERROR(one_cond(first));
    Graph body(n.name + "/body");
    body.AddInput(n.name + "/iteration", DT_INT64, Shape());
    body.AddInput(n.name + "/running", DT_BOOL, Shape());
    std::vector<std::string> vars;
    for (size_t k = 0; k < n.inputs.size(); ++k) {  // types and shapes come from the bound values when it runs
      vars.push_back(n.name + "/value" + std::to_string(k));
      body.AddInput(vars.back(), TypeOf(n.inputs[k]) == DT_UNDEFINED ? DT_FLOAT : TypeOf(n.inputs[k]), Shape());
    }
    std::vector<std::string> next, again;
    WEFT_RETURN_IF_ERROR(ImportSubgraph(body_index, body, n.name + "/body/", &vars, &next));
    if (next.size() != vars.size())
      return InvalidArgument(what + ": subgraph " + std::to_string(body_index) + " (body_subgraph_index) gives " + std::to_string(next.size()) +
                             " values for the loop's " + std::to_string(vars.size()));
    WEFT_RETURN_IF_ERROR(ImportSubgraph(cond_index, body, n.name + "/cond/", &next, &again));
    WEFT_RETURN_IF_ERROR(one_cond(again));
    // Each body output its own value (a loop value passed through unchanged is a body input).
    body.AddNode(Make("Identity", n.name + "/next_running", {again[0]}, {n.name + "/next_running"}));
    body.AddOutput(n.name + "/next_running");
    for (size_t k = 0; k < next.size(); ++k) {
      const std::string out = n.name + "/next" + std::to_string(k);
      body.AddNode(Make("Identity", out, {next[k]}, {out}));
      body.AddOutput(out);
    }
    auto text = body.ToJsonText();
    if (!text.ok()) return InvalidArgument(what + ": " + text.status().message());
    Node loop;
    loop.op_type = "Loop";
    loop.name = n.name;
    loop.inputs = {"", first[0]};
    loop.inputs.insert(loop.inputs.end(), n.inputs.begin(), n.inputs.end());
    loop.input_counts = {1, 1, static_cast<uint32_t>(n.inputs.size()), 0};
    loop.outputs = n.outputs;
    loop.output_counts = {static_cast<uint32_t>(n.outputs.size()), 0};
    loop.attrs["body"] = AttrValue::String(std::move(text).value());
    g.AddNode(std::move(loop));
    return Status::Ok();
  }

  // The subgraph an operator names in its options, checked: an index of another subgraph that is
  // not already being imported (a subgraph may not run itself, directly or not).
  Status CalleeIndex(int64_t index, const std::string& what, const char* field, uint32_t* out) const {
    const int64_t count = model_->subgraphs()->size();
    if (index <= 0 || index >= count)
      return InvalidArgument(what + ": " + field + " is " + std::to_string(index) + "; the model has subgraphs 0.." + std::to_string(count - 1) +
                             " and 0 is the main one");
    if (std::find(stack_.begin(), stack_.end(), static_cast<uint32_t>(index)) != stack_.end())
      return InvalidArgument(what + ": subgraph " + std::to_string(index) + " runs itself (through " + field + ")");
    if (stack_.size() >= kMaxSubgraphDepth)
      return InvalidArgument(what + ": subgraphs nest more than " + std::to_string(kMaxSubgraphDepth) + " deep");
    *out = static_cast<uint32_t>(index);
    return Status::Ok();
  }

  // IF(cond, args...) and STABLEHLO_COMPOSITE(args...) with their subgraphs imported inline. IF:
  // both branches, each node guarded by the condition (Node::when), and Weft's op "If" picking
  // every output from the branch taken, so only that branch runs (and a condition known when
  // compiling drops the other). A composite: its decomposition, the outputs renamed by Identity.
  Status InlineCall(int32_t code, const fb::Operator* op, const Node& n, const std::string& what, Graph& g) {
    for (const std::string& in : n.inputs)
      if (in.empty()) return InvalidArgument(what + " has an absent input; the subgraph it runs needs every one");
    if (code == 206 || code == 31) {  // the subgraph inline, its outputs renamed to the operator's
      uint32_t index = 0;
      if (code == 206) {
        if (op->builtin_options_2_type() != 21 || !op->builtin_options_2())
          return InvalidArgument(what + " has no StableHLOCompositeOptions");
        auto t = reinterpret_cast<const flatbuffers::Table*>(op->builtin_options_2());
        WEFT_RETURN_IF_ERROR(CalleeIndex(t->GetField<int32_t>(6, -1), what, "decomposition_subgraph_index", &index));  // field 1
      } else {
        auto it = n.attrs.find("subgraph");
        WEFT_RETURN_IF_ERROR(CalleeIndex(it == n.attrs.end() ? -1 : it->second.i(), what, "subgraph (CallOptions)", &index));
      }
      std::vector<std::string> outs;
      WEFT_RETURN_IF_ERROR(ImportSubgraph(index, g, n.name + "/", &n.inputs, &outs));
      if (outs.size() != n.outputs.size())
        return InvalidArgument(what + ": subgraph " + std::to_string(index) + " gives " + std::to_string(outs.size()) + " outputs for the operator's " +
                               std::to_string(n.outputs.size()));
      for (size_t k = 0; k < outs.size(); ++k) g.AddNode(Make("Identity", n.outputs[k] + (code == 31 ? "/call" : "/composite"), {outs[k]}, {n.outputs[k]}));
      return Status::Ok();
    }
    if (code == 119) return InlineWhile(n, what, g);
    if (n.inputs.empty() || n.inputs[0].empty()) return InvalidArgument(what + " needs its condition as the first input");
    const std::string cond = n.inputs[0];
    if (TypeOf(cond) != DT_BOOL) return InvalidArgument(what + ": the condition '" + cond + "' must be a bool tensor");
    const std::vector<std::string> args(n.inputs.begin() + 1, n.inputs.end());
    std::vector<std::string> branch_outs[2];
    for (int b = 0; b < 2; ++b) {
      const char* field = b == 0 ? "then_subgraph_index" : "else_subgraph_index";
      auto it = n.attrs.find(field);
      uint32_t index = 0;
      WEFT_RETURN_IF_ERROR(CalleeIndex(it == n.attrs.end() ? -1 : it->second.i(), what, field, &index));
      Graph branch("branch");
      WEFT_RETURN_IF_ERROR(ImportSubgraph(index, branch, n.name + (b == 0 ? "/then/" : "/else/"), &args, &branch_outs[b]));
      if (branch_outs[b].size() != n.outputs.size())
        return InvalidArgument(what + ": subgraph " + std::to_string(index) + " (" + field + ") gives " + std::to_string(branch_outs[b].size()) +
                               " outputs for the operator's " + std::to_string(n.outputs.size()));
      for (const auto& [name, value] : branch.constants()) g.AddConstant(name, value);
      for (Node node : branch.nodes()) {
        node.when.insert(node.when.begin(), {cond, b == 0});
        g.AddNode(std::move(node));
      }
    }
    Node pick;
    pick.op_type = "If";
    pick.name = n.name;
    pick.inputs = {cond};
    for (int b = 0; b < 2; ++b) pick.inputs.insert(pick.inputs.end(), branch_outs[b].begin(), branch_outs[b].end());
    pick.input_counts = {1, static_cast<uint32_t>(2 * n.outputs.size())};
    pick.outputs = n.outputs;
    g.AddNode(std::move(pick));
    return Status::Ok();
  }

  // Quantization of an operator's tensors as attributes: input_scale / input_zero_point and
  // output_scale / output_zero_point (one entry per input/output; scale 0 for an unquantized or
  // absent tensor; for a tensor quantized per channel, its first channel), and for the first
  // input quantized per channel (the weights) channel_scales, channel_zero_points, channel_input
  // (its index) and quantized_dimension.
  // The key's typed options, then the registry's parser for the operator's key (a registered one;
  // the built-ins' conversion is what made `n`).
  Status Parse(const fb::Operator* op, size_t index, int32_t code, const std::string& key, const std::string& custom_options,
               const std::set<std::string>& option_keys, const std::string& what, Node* n, bool* parsed) {
    const RegistryContext* reg = opts_.registry.get();
    if (!reg) return Status::Ok();
    std::vector<std::string> exempt;  // what the importer adds beside the options (version, quantization, ...)
    for (auto& [name, v] : n->attrs)
      if (!option_keys.count(name)) exempt.push_back(name);
    // The key's typed options: the operator's decoded options, checked and given their defaults
    // before the parser sees them.
    if (const OptionSchema* schema = reg->options.Get(key))
      WEFT_RETURN_IF_ERROR(CheckOptions(*schema, what + " options['" + key + "']", &n->attrs, exempt));
    const LiteRtParser* parser = reg->litert_parsers.Get(key);
    if (parser && !reg->litert_parsers.IsBuiltin(key)) {
      LiteRtOperator info;
      info.subgraph = stack_.empty() ? 0 : stack_.back();
      info.index = index;
      info.builtin_code = code;
      info.key = key;
      info.custom_code = code == kCustom && n->attrs.count("custom_code") ? n->attrs["custom_code"].s() : "";
      info.version = static_cast<int32_t>(n->opset);
      info.custom_options = custom_options;
      info.custom_options_format = op->custom_options_format();
      auto tensors = [&](const flatbuffers::Vector<int32_t>* list, std::vector<DataType>* types, std::vector<Shape>* shapes) {
        if (!list) return;
        for (int32_t t : *list) {
          const bool ok = t >= 0 && static_cast<size_t>(t) < types_.size();
          types->push_back(ok ? types_[static_cast<size_t>(t)] : DT_UNDEFINED);
          shapes->push_back(ok ? shapes_[static_cast<size_t>(t)] : Shape());
        }
      };
      tensors(op->inputs(), &info.input_types, &info.input_shapes);
      tensors(op->outputs(), &info.output_types, &info.output_shapes);
      const std::string name = n->name;
      const std::vector<std::string> inputs = n->inputs, outputs = n->outputs;
      Status st;
      try {
        st = (*parser)(info, n);
      } catch (const std::exception& e) {
        st = Internal(std::string("threw: ") + e.what());
      } catch (...) {
        st = Internal("threw an exception that is not a std::exception");
      }
      if (!st.ok()) return Status(st.code(), what + ": litert_parsers['" + key + "']: " + st.message());
      if (n->op_type.empty()) return InvalidArgument(what + ": litert_parsers['" + key + "'] left the node without an op type");
      if (n->inputs != inputs || n->outputs != outputs || n->name != name)
        return InvalidArgument(what + ": litert_parsers['" + key + "'] changed the node's name, inputs or outputs; a parser sets its op type and attributes "
                               "(a graph transform may rewire)");
      *parsed = true;
    }
    return Status::Ok();
  }

  Status AddQuantization(const fb::Operator* op, int32_t code, const std::string& what, Node* n) {
    // Operators with weights (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV,
    // BATCH_MATMUL: input 1) take per-channel scales from the weights alone, as LiteRT's kernels do;
    // another input quantized per channel (a bias, whose scales follow from the weights', or an
    // activation) counts with its first scale and zero point.
    const bool weighted = code == 3 || code == 4 || code == 9 || code == 67 || code == 126;
    auto tensors = sg_->tensors();
    bool any = false;
    std::vector<float> in_s, out_s;
    std::vector<int64_t> in_z, out_z;
    auto one = [&](int32_t t, bool input, size_t k, std::vector<float>* s, std::vector<int64_t>* z) -> Status {
      s->push_back(0.f);
      z->push_back(0);
      if (t < 0) return Status::Ok();
      if (dequantized_.count(static_cast<size_t>(t))) return Status::Ok();  // float32 now (DequantizeBlockwise)
      auto q = tensors->Get(static_cast<uint32_t>(t))->quantization();
      if (q && q->details_type() != 0)
        return Unsupported(what + ": tensor '" + names_[static_cast<size_t>(t)] + "' uses " +
                           (q->details_type() == 1 ? std::string("custom") : q->details_type() == 2 ? std::string("block-wise") : "type-" + std::to_string(q->details_type())) +
                           " quantization, which Weft does not support");
      if (!q || !q->scale() || q->scale()->size() == 0) return Status::Ok();
      size_t ns = q->scale()->size(), nz = q->zero_point() ? q->zero_point()->size() : 0;
      if (nz != 0 && nz != ns)
        return InvalidArgument(what + ": tensor '" + names_[static_cast<size_t>(t)] + "' has " + std::to_string(ns) + " scales but " +
                               std::to_string(nz) + " zero points");
      for (size_t i = 0; i < ns; ++i) {
        float sc = q->scale()->Get(static_cast<uint32_t>(i));
        if (!(sc >= 0.f) || std::isinf(sc))
          return InvalidArgument(what + ": tensor '" + names_[static_cast<size_t>(t)] + "' has the quantization scale " + std::to_string(sc));
      }
      any = true;
      s->back() = q->scale()->Get(0);
      // The verifier aligns a vector's length, not its 8-byte elements: copy them out bytewise.
      std::vector<int64_t> zps(nz);
      if (nz) std::memcpy(zps.data(), q->zero_point()->Data(), nz * sizeof(int64_t));
      z->back() = nz ? zps[0] : 0;
      if (ns > 1) {
        if (!input) return Unsupported(what + ": output tensor '" + names_[static_cast<size_t>(t)] + "' is quantized per channel");
        if (weighted && k == (code == 67 ? 2u : 0u))  // TRANSPOSE_CONV: output_shape, weights, input
          return InvalidArgument(what + ": input tensor '" + names_[static_cast<size_t>(t)] + "' (the activation) is quantized per channel (" +
                                 std::to_string(ns) + " scales); only the weights may be (LiteRT's kernels read one scale for the input)");
        if (weighted && k != 1) return Status::Ok();
        if (n->attrs.count("channel_scales")) return Status::Ok();  // a later one is a bias: its scales follow
        const Shape& sh = shapes_[static_cast<size_t>(t)];
        int32_t dim = q->quantized_dimension();
        if (dim < 0 || static_cast<size_t>(dim) >= sh.GetDimNum() || sh.GetDim(static_cast<size_t>(dim)) != static_cast<int64_t>(ns))
          return InvalidArgument(what + ": tensor '" + names_[static_cast<size_t>(t)] + "' has " + std::to_string(ns) +
                                 " per-channel scales along dim " + std::to_string(dim) + " of shape " + sh.ToString());
        n->attrs["channel_scales"] = AttrValue::ListFloat(std::vector<float>(q->scale()->begin(), q->scale()->end()));
        n->attrs["channel_zero_points"] = AttrValue::ListInt(nz ? zps
                                                              : std::vector<int64_t>(ns, 0));
        n->attrs["channel_input"] = AttrValue::Int(static_cast<int64_t>(k));
        n->attrs["quantized_dimension"] = AttrValue::Int(dim);
      }
      return Status::Ok();
    };
    if (op->inputs())
      for (uint32_t k = 0; k < op->inputs()->size(); ++k) WEFT_RETURN_IF_ERROR(one(op->inputs()->Get(k), true, k, &in_s, &in_z));
    if (op->outputs())
      for (uint32_t k = 0; k < op->outputs()->size(); ++k) WEFT_RETURN_IF_ERROR(one(op->outputs()->Get(k), false, k, &out_s, &out_z));
    // Intermediate tensors (the integer LSTM's gate and hidden scales): their scale and zero point.
    if (op->intermediates() && op->intermediates()->size() && !n->attrs.count("custom_code")) {
      std::vector<float> im_s;
      std::vector<int64_t> im_z;
      for (int32_t t : *op->intermediates()) {
        if (t < 0 || static_cast<size_t>(t) >= names_.size())
          return InvalidArgument(what + ": intermediate tensor index " + std::to_string(t) + " is out of range");
        auto q = tensors->Get(static_cast<uint32_t>(t))->quantization();
        float sc = q && q->scale() && q->scale()->size() ? q->scale()->Get(0) : 0.f;
        if (!(sc >= 0.f) || std::isinf(sc))
          return InvalidArgument(what + ": intermediate tensor '" + names_[static_cast<size_t>(t)] + "' has the quantization scale " + std::to_string(sc));
        int64_t zp = 0;
        if (q && q->zero_point() && q->zero_point()->size()) std::memcpy(&zp, q->zero_point()->Data(), sizeof(int64_t));
        im_s.push_back(sc);
        im_z.push_back(zp);
      }
      n->attrs["intermediate_scale"] = AttrValue::ListFloat(im_s);
      n->attrs["intermediate_zero_point"] = AttrValue::ListInt(im_z);
    }
    if (!any) return Status::Ok();
    n->attrs["input_scale"] = AttrValue::ListFloat(in_s);
    n->attrs["input_zero_point"] = AttrValue::ListInt(in_z);
    n->attrs["output_scale"] = AttrValue::ListFloat(out_s);
    n->attrs["output_zero_point"] = AttrValue::ListInt(out_z);
    return Status::Ok();
  }


  // ---- unquantized builtins as Weft's built-in (ONNX-semantics) ops ------------------------------
  // Each lowering writes nodes with the same maths as the TFLite operator; intermediate values are
  // named "<first output>/<step>". Returns with *done false when the operator (or this use of it)
  // keeps its Tfl* form.

  Node Make(const std::string& type, const std::string& name, std::vector<std::string> in, std::vector<std::string> out,
            std::map<std::string, AttrValue> attrs = {}) const {
    Node n;
    n.op_type = type;
    n.name = name;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    n.attrs = std::move(attrs);
    n.domain = "";
    return n;
  }

  // An int64 version of an index tensor: a converted constant, or a Cast node.
  std::string Int64(Graph* g, const std::string& v) {
    auto it = consts_.find(v);
    if (it != consts_.end() && it->second.dtype() == DT_INT64) return v;
    std::string name = v + "/int64";
    if (consts_.count(name)) return name;
    if (it != consts_.end() && it->second.dtype() == DT_INT32) {
      const HostTensor& t = it->second;
      HostTensor c(DT_INT64, t.shape());
      for (int64_t k = 0; k < t.shape().GetShapeSize(); ++k) c.data_as<int64_t>()[k] = t.data_as<int32_t>()[k];
      consts_[name] = c;
      g->AddConstant(name, std::move(c));
      return name;
    }
    g->AddNode(Make("Cast", name, {v}, {name}, {{"to", AttrValue::Type(DT_INT64)}}));
    return name;
  }
  std::string ConstI64(Graph* g, const std::string& name, const std::vector<int64_t>& v) {
    HostTensor c(DT_INT64, Shape({static_cast<int64_t>(v.size())}));
    for (size_t k = 0; k < v.size(); ++k) c.data_as<int64_t>()[k] = v[k];
    consts_[name] = c;
    g->AddConstant(name, std::move(c));
    return name;
  }
  std::string ConstScalar(Graph* g, const std::string& name, DataType dt, double v) {
    HostTensor c(dt, Shape());
    if (dt == DT_FLOAT) *c.data_as<float>() = static_cast<float>(v);
    else if (dt == DT_INT32) *c.data_as<int32_t>() = static_cast<int32_t>(v);
    else if (dt == DT_INT64) *c.data_as<int64_t>() = static_cast<int64_t>(v);
    else return "";
    consts_[name] = c;
    g->AddConstant(name, std::move(c));
    return name;
  }
  // The values of a constant int tensor; false when it is not a constant.
  bool ConstInts(const std::string& v, std::vector<int64_t>* out) const {
    auto it = consts_.find(v);
    if (it == consts_.end()) return false;
    const HostTensor& t = it->second;
    out->clear();
    for (int64_t k = 0; k < t.shape().GetShapeSize(); ++k) {
      if (t.dtype() == DT_INT32) out->push_back(t.data_as<int32_t>()[k]);
      else if (t.dtype() == DT_INT64) out->push_back(t.data_as<int64_t>()[k]);
      else return false;
    }
    return true;
  }
  DataType TypeOf(const std::string& v) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == v) return types_[i];
    return DT_UNDEFINED;
  }
  int64_t RankOf(const std::string& v) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == v) return static_cast<int64_t>(shapes_[i].GetDimNum());
    return -1;
  }

  Status Lower(int32_t code, const Node& n, const std::string& /*what: for messages*/, Graph* g, bool* done) {
    *done = false;
    auto attr_s = [&](const char* k) { auto it = n.attrs.find(k); return it == n.attrs.end() ? std::string() : it->second.s(); };
    auto attr_i = [&](const char* k, int64_t d = 0) { auto it = n.attrs.find(k); return it == n.attrs.end() ? d : it->second.i(); };
    const std::vector<std::string>& in = n.inputs;
    const std::vector<std::string>& out = n.outputs;
    auto need = [&](size_t ni, size_t no) { return in.size() == ni && out.size() == no; };
    auto emit = [&](Node node) { g->AddNode(std::move(node)); *done = true; };
    std::string act = attr_s("fused_activation_function");
    if (!act.empty() && act != "NONE") return Status::Ok();  // fused activations stay with the Tfl* kernels
    static const std::map<int32_t, const char*> unary = {
        {101, "Abs"}, {104, "Ceil"}, {108, "Cos"}, {111, "Elu"}, {47, "Exp"}, {8, "Floor"}, {117, "HardSwish"}, {73, "Log"},
        {87, "Not"}, {14, "Sigmoid"}, {59, "Neg"}, {19, "Relu"}, {116, "Round"}, {158, "Sign"}, {66, "Sin"}, {75, "Sqrt"}, {28, "Tanh"}};
    static const std::map<int32_t, const char*> binary = {
        {55, "Max"}, {57, "Min"}, {58, "Less"}, {63, "LessOrEqual"}, {61, "Greater"}, {62, "GreaterOrEqual"}, {71, "Equal"},
        {84, "Or"}, {86, "And"}, {78, "Pow"}, {42, "Div"}};
    if (auto u = unary.find(code); u != unary.end()) {
      if (!need(1, 1)) return Status::Ok();
      std::map<std::string, AttrValue> a;
      if (code == 111) a["alpha"] = AttrValue::Float(1.f);
      emit(Make(u->second, n.name, in, out, a));
      return Status::Ok();
    }
    if (auto b = binary.find(code); b != binary.end()) {
      if (!need(2, 1)) return Status::Ok();
      emit(Make(b->second, n.name, in, out));
      return Status::Ok();
    }
    const std::string o0 = out.empty() ? n.name : out[0];
    switch (code) {
      case 95:  // FLOOR_MOD: the sign of the divisor, as ONNX Mod with fmod 0 for integers
        if (!need(2, 1) || (TypeOf(in[0]) != DT_INT32 && TypeOf(in[0]) != DT_INT64)) return Status::Ok();
        emit(Make("Mod", n.name, in, out, {{"fmod", AttrValue::Int(0)}}));
        return Status::Ok();
      case 76:  // RSQRT
        if (!need(1, 1)) return Status::Ok();
        g->AddNode(Make("Sqrt", n.name + "/sqrt", in, {o0 + "/sqrt"}));
        emit(Make("Reciprocal", n.name, {o0 + "/sqrt"}, out));
        return Status::Ok();
      case 21: case 20: case 152: {  // RELU6, RELU_N1_TO_1, RELU_0_TO_1
        if (!need(1, 1) || TypeOf(in[0]) != DT_FLOAT) return Status::Ok();
        double lo = code == 20 ? -1 : 0, hi = code == 21 ? 6 : 1;
        std::string a = ConstScalar(g, o0 + "/min", DT_FLOAT, lo), b = ConstScalar(g, o0 + "/max", DT_FLOAT, hi);
        emit(Make("Clip", n.name, {in[0], a, b}, out));
        return Status::Ok();
      }
      case 72:  // NOT_EQUAL
        if (!need(2, 1)) return Status::Ok();
        g->AddNode(Make("Equal", n.name + "/equal", in, {o0 + "/equal"}));
        emit(Make("Not", n.name, {o0 + "/equal"}, out));
        return Status::Ok();
      case 99:  // SQUARED_DIFFERENCE
        if (!need(2, 1)) return Status::Ok();
        g->AddNode(Make("Sub", n.name + "/sub", in, {o0 + "/sub"}));
        emit(Make("Mul", n.name, {o0 + "/sub", o0 + "/sub"}, out));
        return Status::Ok();
      case 92:  // SQUARE
        if (!need(1, 1)) return Status::Ok();
        emit(Make("Mul", n.name, {in[0], in[0]}, out));
        return Status::Ok();
      case 6:  // DEQUANTIZE of float16 (float16-quantized models' weights): a Cast to float32
        if (!need(1, 1) || TypeOf(in[0]) != DT_FLOAT16 || TypeOf(o0) != DT_FLOAT) return Status::Ok();
        emit(Make("Cast", n.name, in, out, {{"to", AttrValue::Type(DT_FLOAT)}}));
        return Status::Ok();
      case 53: {  // CAST
        if (!need(1, 1)) return Status::Ok();
        DataType to = TypeOf(o0);
        if (to == DT_UNDEFINED) return Status::Ok();
        emit(Make("Cast", n.name, in, out, {{"to", AttrValue::Type(to)}}));
        return Status::Ok();
      }
      case 123:  // SELECT_V2: NumPy broadcasting, as ONNX Where
        if (!need(3, 1)) return Status::Ok();
        emit(Make("Where", n.name, in, out));
        return Status::Ok();
      case 43: {  // SQUEEZE
        if (in.empty() || out.size() != 1) return Status::Ok();
        auto it = n.attrs.find("squeeze_dims");
        std::vector<std::string> ins = {in[0]};
        if (it != n.attrs.end() && !it->second.ints().empty()) ins.push_back(ConstI64(g, o0 + "/axes", it->second.ints()));
        emit(Make("Squeeze", n.name, ins, out));
        return Status::Ok();
      }
      case 70:  // EXPAND_DIMS
        if (!need(2, 1)) return Status::Ok();
        emit(Make("Unsqueeze", n.name, {in[0], Int64(g, in[1])}, out));
        return Status::Ok();
      case 69:  // TILE
        if (!need(2, 1)) return Status::Ok();
        emit(Make("Tile", n.name, {in[0], Int64(g, in[1])}, out));
        return Status::Ok();
      case 36:  // GATHER
        if (!need(2, 1) || attr_i("batch_dims") != 0) return Status::Ok();
        emit(Make("Gather", n.name, in, out, {{"axis", AttrValue::Int(attr_i("axis"))}}));
        return Status::Ok();
      case 2: {  // CONCATENATION
        if (out.size() != 1 || in.empty()) return Status::Ok();
        Node c = Make("Concat", n.name, in, out, {{"axis", AttrValue::Int(attr_i("axis"))}});
        emit(std::move(c));
        return Status::Ok();
      }
      case 49: {  // SPLIT: (axis, input)
        std::vector<int64_t> axis;
        if (in.size() != 2 || !ConstInts(in[0], &axis) || axis.size() != 1) return Status::Ok();
        emit(Make("Split", n.name, {in[1]}, out, {{"axis", AttrValue::Int(axis[0])}, {"num_outputs", AttrValue::Int(static_cast<int64_t>(out.size()))}}));
        return Status::Ok();
      }
      case 102: {  // SPLIT_V: (input, size_splits, axis)
        std::vector<int64_t> axis, sizes;
        if (in.size() != 3 || !ConstInts(in[2], &axis) || axis.size() != 1 || !ConstInts(in[1], &sizes)) return Status::Ok();
        if (std::count(sizes.begin(), sizes.end(), -1)) return Status::Ok();  // an inferred size: keep the TFLite form
        emit(Make("Split", n.name, {in[0], ConstI64(g, o0 + "/split", sizes)}, out, {{"axis", AttrValue::Int(axis[0])}}));
        return Status::Ok();
      }
      case 74: case 82: case 89: case 81: {  // SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD
        if (!need(2, 1)) return Status::Ok();
        const char* type = code == 74 ? "ReduceSum" : code == 82 ? "ReduceMax" : code == 89 ? "ReduceMin" : "ReduceProd";
        auto keep = n.attrs.find("keep_dims");
        emit(Make(type, n.name, {in[0], Int64(g, in[1])}, out,
                  {{"keepdims", AttrValue::Int(keep != n.attrs.end() && keep->second.i() ? 1 : 0)}}));
        return Status::Ok();
      }
      case 50:  // LOG_SOFTMAX
        if (!need(1, 1)) return Status::Ok();
        emit(Make("LogSoftmax", n.name, in, out, {{"axis", AttrValue::Int(-1)}}));
        return Status::Ok();
      case 150:  // GELU
        if (!need(1, 1)) return Status::Ok();
        emit(Make("Gelu", n.name, in, out, {{"approximate", AttrValue::String(attr_i("approximate") ? "tanh" : "none")}}));
        return Status::Ok();
      case 126: {  // BATCH_MATMUL
        if (!need(2, 1)) return Status::Ok();
        std::vector<std::string> ab = in;
        for (int k = 0; k < 2; ++k) {
          if (!attr_i(k == 0 ? "adj_x" : "adj_y")) continue;
          int64_t r = RankOf(in[static_cast<size_t>(k)]);
          if (r < 2) return Status::Ok();
          std::vector<int64_t> perm;
          for (int64_t d = 0; d < r; ++d) perm.push_back(d);
          std::swap(perm[static_cast<size_t>(r - 1)], perm[static_cast<size_t>(r - 2)]);
          std::string t = o0 + (k == 0 ? "/adj_x" : "/adj_y");
          g->AddNode(Make("Transpose", t, {in[static_cast<size_t>(k)]}, {t}, {{"perm", AttrValue::ListInt(perm)}}));
          ab[static_cast<size_t>(k)] = t;
        }
        emit(Make("MatMul", n.name, ab, out));
        return Status::Ok();
      }
      case 83: {  // PACK: Unsqueeze each along axis, then Concat
        if (out.size() != 1 || in.empty()) return Status::Ok();
        int64_t axis = attr_i("axis");
        std::vector<std::string> parts;
        std::string ax = ConstI64(g, o0 + "/axis", {axis});
        for (size_t k = 0; k < in.size(); ++k) {
          std::string u = o0 + "/part" + std::to_string(k);
          g->AddNode(Make("Unsqueeze", u, {in[k], ax}, {u}));
          parts.push_back(u);
        }
        emit(Make("Concat", n.name, parts, out, {{"axis", AttrValue::Int(axis)}}));
        return Status::Ok();
      }
      case 88: {  // UNPACK: Split along axis, then Squeeze each
        if (in.size() != 1 || out.empty()) return Status::Ok();
        int64_t axis = attr_i("axis");
        std::vector<std::string> parts;
        for (size_t k = 0; k < out.size(); ++k) parts.push_back(out[k] + "/slice");
        g->AddNode(Make("Split", n.name + "/split", in, parts, {{"axis", AttrValue::Int(axis)}, {"num_outputs", AttrValue::Int(static_cast<int64_t>(out.size()))}}));
        std::string ax = ConstI64(g, o0 + "/axis", {axis});
        for (size_t k = 0; k < out.size(); ++k) g->AddNode(Make("Squeeze", out[k] + "/squeeze", {parts[k], ax}, {out[k]}));
        *done = true;
        return Status::Ok();
      }
      case 48: {  // TOPK_V2: (input, k) → values, int32 indices
        if (!need(2, 2)) return Status::Ok();
        std::string k64 = Int64(g, in[1]);
        std::string k1 = o0 + "/k";
        g->AddNode(Make("Reshape", k1, {k64, ConstI64(g, o0 + "/one", {1})}, {k1}));
        std::string idx = out[1] + "/int64";
        g->AddNode(Make("TopK", n.name, {in[0], k1}, {out[0], idx}, {{"axis", AttrValue::Int(-1)}}));
        emit(Make("Cast", out[1] + "/cast", {idx}, {out[1]}, {{"to", AttrValue::Type(TypeOf(out[1]))}}));
        return Status::Ok();
      }
      case 100: {  // MIRROR_PAD: Pad in mode reflect, or symmetric (the edge repeated)
        std::vector<int64_t> pads;
        const std::string mode = attr_s("mode");
        if (!need(2, 1) || (mode != "REFLECT" && mode != "SYMMETRIC") || !ConstInts(in[1], &pads) || pads.size() % 2) return Status::Ok();
        std::vector<int64_t> onnx(pads.size());
        size_t r = pads.size() / 2;
        for (size_t k = 0; k < r; ++k) onnx[k] = pads[2 * k], onnx[r + k] = pads[2 * k + 1];
        emit(Make("Pad", n.name, {in[0], ConstI64(g, o0 + "/pads", onnx)}, out,
                  {{"mode", AttrValue::String(mode == "REFLECT" ? "reflect" : "symmetric")}}));
        return Status::Ok();
      }
      case 65: {  // SLICE: (input, begin, size); size -1 runs to the end
        std::vector<int64_t> begin, size;
        if (!need(3, 1) || !ConstInts(in[1], &begin) || !ConstInts(in[2], &size) || begin.size() != size.size()) return Status::Ok();
        std::vector<int64_t> ends(begin.size());
        for (size_t k = 0; k < begin.size(); ++k) ends[k] = size[k] < 0 ? std::numeric_limits<int64_t>::max() : begin[k] + size[k];
        emit(Make("Slice", n.name, {in[0], ConstI64(g, o0 + "/starts", begin), ConstI64(g, o0 + "/ends", ends)}, out));
        return Status::Ok();
      }
      case 11: {  // L2_NORMALIZATION over the last axis: x / max(sqrt(sum x^2), 1e-6)
        if (!need(1, 1) || TypeOf(in[0]) != DT_FLOAT) return Status::Ok();
        g->AddNode(Make("Mul", n.name + "/square", {in[0], in[0]}, {o0 + "/square"}));
        g->AddNode(Make("ReduceSum", n.name + "/sum", {o0 + "/square", ConstI64(g, o0 + "/axis", {-1})}, {o0 + "/sum"},
                        {{"keepdims", AttrValue::Int(1)}}));
        g->AddNode(Make("Sqrt", n.name + "/norm", {o0 + "/sum"}, {o0 + "/norm"}));
        g->AddNode(Make("Max", n.name + "/clamped", {o0 + "/norm", ConstScalar(g, o0 + "/epsilon", DT_FLOAT, 1e-6)}, {o0 + "/clamped"}));
        emit(Make("Div", n.name, {in[0], o0 + "/clamped"}, out));
        return Status::Ok();
      }
      case 91: case 140: {  // REDUCE_ANY, REDUCE_ALL on bool: max / min of the values as int32
        if (!need(2, 1) || TypeOf(in[0]) != DT_BOOL) return Status::Ok();
        auto keep = n.attrs.find("keep_dims");
        g->AddNode(Make("Cast", n.name + "/int", {in[0]}, {o0 + "/int"}, {{"to", AttrValue::Type(DT_INT32)}}));
        g->AddNode(Make(code == 91 ? "ReduceMax" : "ReduceMin", n.name + "/reduce", {o0 + "/int", Int64(g, in[1])}, {o0 + "/reduce"},
                        {{"keepdims", AttrValue::Int(keep != n.attrs.end() && keep->second.i() ? 1 : 0)}}));
        emit(Make("Cast", n.name, {o0 + "/reduce"}, out, {{"to", AttrValue::Type(DT_BOOL)}}));
        return Status::Ok();
      }
      case 122: {  // SCATTER_ND: (indices, updates, shape); duplicate indices add up
        if (!need(3, 1)) return Status::Ok();
        DataType t = TypeOf(in[1]);
        if (t == DT_UNDEFINED) return Status::Ok();
        g->AddNode(Make("ConstantOfShape", n.name + "/zeros", {Int64(g, in[2])}, {o0 + "/zeros"},
                        {{"value", AttrValue::TensorValue(t, Shape({1}), std::vector<uint8_t>(DataTypeSize(t), 0))}}));
        emit(Make("ScatterND", n.name, {o0 + "/zeros", Int64(g, in[0]), in[1]}, out, {{"reduction", AttrValue::String("add")}}));
        return Status::Ok();
      }
      case 23: case 97: {  // RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR on NHWC: as Resize on NCHW between Transposes
        std::vector<int64_t> size;
        if (!need(2, 1) || !ConstInts(in[1], &size) || size.size() != 2 || RankOf(in[0]) != 4) return Status::Ok();
        if (code == 23 && TypeOf(in[0]) != DT_FLOAT) return Status::Ok();  // 8-bit bilinear has its own integer arithmetic
        const Shape* xs = nullptr;
        for (size_t i = 0; i < names_.size(); ++i)
          if (names_[i] == in[0]) xs = &shapes_[i];
        if (!xs || xs->GetDim(0) < 0 || xs->GetDim(3) < 0 || size[0] <= 0 || size[1] <= 0) return Status::Ok();
        const bool align = attr_i("align_corners") != 0, half = attr_i("half_pixel_centers") != 0;
        std::string ctm, nearest = "floor";
        if (code == 23) {
          ctm = align ? "align_corners" : half ? "half_pixel" : "asymmetric";
        } else {
          ctm = align ? "align_corners" : half ? "tf_half_pixel_for_nn" : "asymmetric";
          if (align) nearest = "round_prefer_ceil";
        }
        g->AddNode(Make("Transpose", n.name + "/nchw", {in[0]}, {o0 + "/nchw"}, {{"perm", AttrValue::ListInt({0, 3, 1, 2})}}));
        std::string sizes = ConstI64(g, o0 + "/sizes", {xs->GetDim(0), xs->GetDim(3), size[0], size[1]});
        g->AddNode(Make("Resize", n.name + "/resize", {o0 + "/nchw", "", "", sizes}, {o0 + "/resized"},
                        {{"mode", AttrValue::String(code == 23 ? "linear" : "nearest")},
                         {"coordinate_transformation_mode", AttrValue::String(ctm)},
                         {"nearest_mode", AttrValue::String(nearest)}}));
        emit(Make("Transpose", n.name, {o0 + "/resized"}, out, {{"perm", AttrValue::ListInt({0, 2, 3, 1})}}));
        return Status::Ok();
      }
      default:
        return Status::Ok();
    }
  }

  std::map<std::string, HostTensor> consts_;


  // Data movement over quantized tensors is exact as a plain copy when every data input and every
  // output share one scale and zero point (the index inputs carry none): such operators lower like
  // unquantized ones.
  static bool SameQuantization(int32_t code, const Node& n) {
    // CONCATENATION, GATHER, SQUEEZE, SPLIT, SLICE, TILE, EXPAND_DIMS, PACK, UNPACK,
    // RESIZE_NEAREST_NEIGHBOR, MIRROR_PAD, SPLIT_V
    static const std::set<int32_t> moves = {2, 36, 43, 49, 65, 69, 70, 83, 88, 97, 100, 102};
    if (!moves.count(code) || n.attrs.count("channel_scales")) return false;
    const auto& is = n.attrs.at("input_scale").floats();
    const auto& iz = n.attrs.at("input_zero_point").ints();
    const auto& os = n.attrs.at("output_scale").floats();
    const auto& oz = n.attrs.at("output_zero_point").ints();
    if (os.empty() || os[0] == 0.f) return false;
    for (size_t k = 0; k < os.size(); ++k)
      if (os[k] != os[0] || oz[k] != oz[0]) return false;
    for (size_t k = 0; k < is.size(); ++k)  // unquantized inputs (scale 0) are indices
      if (is[k] != 0.f && (is[k] != os[0] || iz[k] != oz[0])) return false;
    return true;
  }

  // Whether an operator after #k writes tensor t.
  static bool LaterProducer(const std::vector<const fb::Operator*>& ops, size_t k, int32_t t) {
    for (size_t j = k + 1; j < ops.size(); ++j)
      if (ops[j]->outputs())
        for (int32_t o : *ops[j]->outputs())
          if (o == t) return true;
    return false;
  }

  // Inputs a builtin operator updates in place (its variable tensors): SVDF's activation state,
  // a sequence LSTM's output and cell states.
  static bool IsStateInput(int32_t code, uint32_t k) {
    return (code == 27 && k == 4) || (code == 44 && (k == 18 || k == 19)) || (code == 52 && k >= 35 && k <= 38) || (code == 35 && k == 4) ||
           (code == 46 && (k == 4 || k == 8));
  }

  // The operator's state tensors (op_states_): `count` of them, each float32 of the shape given.
  Status CheckStates(const std::string& what, const std::vector<std::vector<int64_t>>& shapes) const {
    if (op_states_.size() != shapes.size())
      return InvalidArgument(what + " has " + std::to_string(op_states_.size()) + " state tensor(s); it needs " + std::to_string(shapes.size()));
    for (size_t k = 0; k < shapes.size(); ++k) {
      const size_t i = op_states_[k];
      bool known = true;
      int64_t elems = 1;
      for (int64_t d : shapes[k]) known = known && d >= 0, elems = known ? elems * std::max<int64_t>(d, 1) : elems;
      if (known && elems > (int64_t(1) << 28))
        return Unsupported(what + ": its state '" + names_[i] + "' would hold " + std::to_string(elems) + " values (at most 2^28)");
      if (types_[i] != DT_FLOAT || (known && shapes_[i] != Shape(shapes[k])))
        return InvalidArgument(what + ": its state '" + names_[i] + "' is " + DataTypeName(types_[i]) + shapes_[i].ToString() + "; it must be float32" +
                               (known ? Shape(shapes[k]).ToString() : std::string()));
    }
    return Status::Ok();
  }

  // UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN (float): ONNX's RNN (forward, or
  // bidirectional) with h = act(W x + R h + b). Each direction's hidden state (the operator's
  // variable tensor, input 4, and 8 for the backward one) becomes a run-context variable: read
  // before the RNN as its initial_h, assigned its final state after, so it carries from run to
  // run and reset_state() zeroes it. Activations NONE, RELU and TANH; int8 (hybrid) weights and
  // the auxiliary input are refused by name.
  Status ExpandSequenceRnn(int32_t code, Node& n, const std::string& what, Graph* g) {
    const bool bidi = code == 46;
    const size_t want_in = bidi ? 7 : 4;
    if (n.inputs.size() < want_in) return InvalidArgument(what + " has too few inputs");
    for (size_t k = want_in; k < n.inputs.size(); ++k)
      if (!n.inputs[k].empty()) return Unsupported(what + ": the auxiliary input and its weights are not supported");
    auto attr_s = [&](const char* k) { auto it = n.attrs.find(k); return it == n.attrs.end() ? std::string("NONE") : it->second.s(); };
    auto flag = [&](const char* k) { auto it = n.attrs.find(k); return it != n.attrs.end() && it->second.i() != 0; };
    const bool time_major = flag("time_major"), merge = bidi && flag("merge_outputs");
    const size_t outs = bidi && !merge ? 2 : 1;
    if (n.outputs.size() != outs) return InvalidArgument(what + " has " + std::to_string(n.outputs.size()) + " outputs; it needs " + std::to_string(outs));
    const std::string act = attr_s("fused_activation_function");
    std::map<std::string, AttrValue> ra;
    if (act == "NONE") {
      ra["activations"] = AttrValue::ListString({"Affine"});
      ra["activation_alpha"] = AttrValue::ListFloat({1.f});
      ra["activation_beta"] = AttrValue::ListFloat({0.f});
    } else if (act == "RELU" || act == "TANH") {
      ra["activations"] = AttrValue::ListString({act == "RELU" ? "Relu" : "Tanh"});
    } else {
      return Unsupported(what + ": fused_activation_function " + act + " (NONE, RELU and TANH are supported)");
    }
    const std::vector<size_t> weights = bidi ? std::vector<size_t>{1, 2, 3, 4, 5, 6} : std::vector<size_t>{1, 2, 3};
    for (size_t k : weights) {
      const size_t file_index = k < 4 ? k : k + 1;  // the backward weights follow the forward state
      if (n.inputs[k].empty()) return InvalidArgument(what + ": input " + std::to_string(file_index) + " (weights or bias) is absent");
      if (TypeOf(n.inputs[k]) == DT_INT8)
        return Unsupported(what + ": input " + std::to_string(file_index) + " ('" + n.inputs[k] + "') is int8: a hybrid RNN is not supported");
      if (TypeOf(n.inputs[k]) != DT_FLOAT)
        return InvalidArgument(what + ": input " + std::to_string(file_index) + " ('" + n.inputs[k] + "') must be float32, not " +
                               DataTypeName(TypeOf(n.inputs[k])));
    }
    const Shape xs = ShapeOf(n.inputs[0]), ws = ShapeOf(n.inputs[1]);
    if (xs.GetDimNum() != 3 || ws.GetDimNum() != 2) return InvalidArgument(what + ": the input must be 3-D and the weights 2-D");
    const int64_t batch = xs.GetDim(time_major ? 1 : 0), units = ws.GetDim(0);
    if (batch < 0 || units < 0) return Unsupported(what + ": its batch and units must be known when importing (they size the state)");
    WEFT_RETURN_IF_ERROR(CheckStates(what, std::vector<std::vector<int64_t>>(bidi ? 2 : 1, std::vector<int64_t>{batch, units})));
    const int layout = time_major ? 0 : 1;
    const std::string base = n.name;
    auto fresh = [&](const std::string& tag) { return FreshName(base + "/" + tag); };  // never a name the file uses
    auto axes = [&](const std::string& tag, std::vector<int64_t> v) { return ConstI64(g, fresh(tag), v); };
    auto node = [&](const std::string& type, const std::string& tag, std::vector<std::string> in, std::map<std::string, AttrValue> a = {}) {
      const std::string out = fresh(tag);
      g->AddNode(Make(type, out, std::move(in), {out}, std::move(a)));
      return out;
    };
    HostTensor zeros(DT_FLOAT, Shape({units}));
    if (zeros.bytes()) std::memset(zeros.data(), 0, zeros.bytes());
    const std::string zero_bias = fresh("recurrent_bias");
    consts_[zero_bias] = zeros;
    g->AddConstant(zero_bias, zeros);
    const std::string ax0 = axes("axis0", {0}), ax_dir = axes("axis_dir", {layout ? 1 : 0});
    // One direction's parameters as ONNX's [1, ...] slices, and its state read as [.., 1, ..].
    std::vector<std::string> W, R, B, H0, reads, keys;
    const int dirs = bidi ? 2 : 1;
    for (int d = 0; d < dirs; ++d) {
      const std::string tag = d ? "bw" : "fw";
      const size_t at = d ? 4 : 1;
      W.push_back(node("Unsqueeze", tag + "/W", {n.inputs[at], ax0}));
      R.push_back(node("Unsqueeze", tag + "/R", {n.inputs[at + 1], ax0}));
      B.push_back(node("Unsqueeze", tag + "/B", {node("Concat", tag + "/bias", {n.inputs[at + 2], zero_bias}, {{"axis", AttrValue::Int(0)}}), ax0}));
      HostTensor h(DT_FLOAT, Shape({batch, units}));
      if (h.bytes()) std::memset(h.data(), 0, h.bytes());
      const std::string key = "rnn:" + base + "/" + tag, state = fresh(tag + "/state");
      Node r = Make("ReadVariable", state, {}, {state});
      r.attrs["variable"] = AttrValue::String(key);
      r.attrs["initial"] = InitialAttr(h);
      g->AddNode(std::move(r));
      reads.push_back(state);
      keys.push_back(key);
      H0.push_back(node("Unsqueeze", tag + "/initial_h", {reads.back(), ax_dir}));
    }
    auto joined = [&](const std::vector<std::string>& parts, const std::string& tag, int64_t axis) {
      return parts.size() == 1 ? parts[0] : node("Concat", tag, parts, {{"axis", AttrValue::Int(axis)}});
    };
    ra["hidden_size"] = AttrValue::Int(units);
    ra["layout"] = AttrValue::Int(layout);
    ra["direction"] = AttrValue::String(bidi ? "bidirectional" : "forward");
    if (bidi) ra["activations"] = AttrValue::ListString({ra["activations"].strings()[0], ra["activations"].strings()[0]});
    if (bidi && act == "NONE") {
      ra["activation_alpha"] = AttrValue::ListFloat({1.f, 1.f});
      ra["activation_beta"] = AttrValue::ListFloat({0.f, 0.f});
    }
    const std::string y = fresh("Y"), yh = fresh("Y_h");
    g->AddNode(Make("RNN", fresh("rnn"), {n.inputs[0], joined(W, "W", 0), joined(R, "R", 0), joined(B, "B", 0), "", joined(H0, "initial_h", layout ? 1 : 0)},
                    {y, yh}, ra));
    // Y: [seq, dirs, batch, units] (layout 0) or [batch, seq, dirs, units] (layout 1).
    const int64_t y_dir = layout ? 2 : 1;
    if (!bidi) {
      g->AddNode(Make("Squeeze", n.outputs[0], {y, axes("y_dir", {y_dir})}, {n.outputs[0]}));
    } else if (merge) {
      const std::string ordered = layout ? y : node("Transpose", "y_time_batch_dir", {y}, {{"perm", AttrValue::ListInt({0, 2, 1, 3})}});
      g->AddNode(Make("Reshape", n.outputs[0], {ordered, axes("merged_shape", {0, 0, 2 * units})}, {n.outputs[0]}));  // 0: kept (also when empty)
    } else {
      const std::string fw = fresh("y_fw"), bw = fresh("y_bw"), dir_axis = axes("y_dir", {y_dir});
      g->AddNode(Make("Split", fresh("y_split"), {y}, {fw, bw}, {{"axis", AttrValue::Int(y_dir)}, {"num_outputs", AttrValue::Int(2)}}));
      g->AddNode(Make("Squeeze", n.outputs[0], {fw, dir_axis}, {n.outputs[0]}));
      g->AddNode(Make("Squeeze", n.outputs[1], {bw, dir_axis}, {n.outputs[1]}));
    }
    // The final states back into the variables.
    std::vector<std::string> finals;
    if (!bidi) {
      finals.push_back(node("Squeeze", "fw/final", {yh, ax_dir}));
    } else {
      const std::string f0 = fresh("fw/final_h"), f1 = fresh("bw/final_h");
      g->AddNode(Make("Split", fresh("final_split"), {yh}, {f0, f1}, {{"axis", AttrValue::Int(layout ? 1 : 0)}, {"num_outputs", AttrValue::Int(2)}}));
      finals.push_back(node("Squeeze", "fw/final", {f0, ax_dir}));
      finals.push_back(node("Squeeze", "bw/final", {f1, ax_dir}));
    }
    for (int d = 0; d < dirs; ++d) {
      Node a = Make("AssignVariable", fresh(d ? "bw/assign" : "fw/assign"), {finals[static_cast<size_t>(d)], reads[static_cast<size_t>(d)]},
                    {fresh(d ? "bw/assigned" : "fw/assigned")});
      a.attrs["variable"] = AttrValue::String(keys[static_cast<size_t>(d)]);
      a.attrs["dtype"] = AttrValue::Type(DT_FLOAT);
      a.attrs["shape"] = AttrValue::ListInt({batch, units});
      g->AddNode(std::move(a));
    }
    return Status::Ok();
  }
  Shape ShapeOf(const std::string& v) const {
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == v) return shapes_[i];
    return Shape();
  }

  // BIDIRECTIONAL_SEQUENCE_LSTM (float, or hybrid: float activations and int8 weights) as two
  // UNIDIRECTIONAL_SEQUENCE_LSTMs: forward over the input, backward over the input reversed along
  // time (and its output reversed back), each keeping its own states as the operator's variable
  // tensors do (inputs 35-38). merge_outputs concatenates the two along the last axis; otherwise
  // they are outputs 0 and 1. `n.inputs` holds LiteRT's inputs without the four states; the
  // auxiliary input (39 on) is not supported.
  Status ExpandBidirectionalLstm(Node& n, const std::string& what, Graph* g) {
    constexpr size_t kPerDirection = 17, kBw = 1 + kPerDirection, kAux = 1 + 2 * kPerDirection;
    if (n.inputs.size() < kAux)
      return InvalidArgument(what + " has " + std::to_string(n.inputs.size() + op_states_.size()) + " inputs; it needs at least 39");
    for (size_t k = kAux; k < n.inputs.size(); ++k)
      if (!n.inputs[k].empty()) return Unsupported(what + ": the auxiliary input and its weights (inputs 39 to 47) are not supported");
    auto flag = [&](const char* k, bool d) { auto it = n.attrs.find(k); return it == n.attrs.end() ? d : it->second.i() != 0; };
    const bool merge = flag("merge_outputs", false), time_major = flag("time_major", true);
    if (n.outputs.size() != (merge ? 1u : 2u))
      return InvalidArgument(what + " has " + std::to_string(n.outputs.size()) + " outputs; it needs " + (merge ? "1 (merge_outputs)" : "2 (forward, backward)"));
    const int64_t rank = RankOf(n.inputs[0]);
    if (rank != 3) return InvalidArgument(what + ": the input must be 3-D, not of rank " + std::to_string(rank));
    const int64_t axis = time_major ? 0 : 1;
    // The states: output [batch, n_out] and cell [batch, n_cell] per direction, n_cell from the
    // forget gate's input weights, n_out from its recurrent weights.
    {
      const int64_t batch = ShapeOf(n.inputs[0]).GetDim(static_cast<size_t>(time_major ? 1 : 0));
      std::vector<std::vector<int64_t>> shapes;
      for (size_t first : {size_t{1}, kBw}) {
        const Shape wx = ShapeOf(n.inputs[first + 1]), wh = ShapeOf(n.inputs[first + 5]);
        const int64_t cell = wx.GetDimNum() == 2 ? wx.GetDim(0) : -1, out = wh.GetDimNum() == 2 ? wh.GetDim(1) : -1;
        shapes.push_back({batch, out});
        shapes.push_back({batch, cell});
      }
      WEFT_RETURN_IF_ERROR(CheckStates(what, shapes));
    }
    auto fresh = [&](const std::string& tag) { return FreshName(n.name + "/" + tag); };  // never a name the file uses
    // The LiteRT index of each Weft input, for the per-input quantization lists.
    auto quant_slice = [&](const char* key, size_t first, bool ints) {
      auto it = n.attrs.find(key);
      if (it == n.attrs.end()) return std::optional<AttrValue>();
      std::vector<size_t> src{0};
      for (size_t k = 0; k < kPerDirection; ++k) src.push_back(first + k);
      if (ints) {
        std::vector<int64_t> v;
        for (size_t k : src) v.push_back(k < it->second.ints().size() ? it->second.ints()[k] : 0);
        return std::optional<AttrValue>(AttrValue::ListInt(v));
      }
      std::vector<float> v;
      for (size_t k : src) v.push_back(k < it->second.floats().size() ? it->second.floats()[k] : 0.f);
      return std::optional<AttrValue>(AttrValue::ListFloat(v));
    };
    const std::string reverse_starts = ConstI64(g, fresh("reverse/starts"), {-1});
    const std::string reverse_ends = ConstI64(g, fresh("reverse/ends"), {std::numeric_limits<int64_t>::min()});
    const std::string reverse_axes = ConstI64(g, fresh("reverse/axes"), {axis});
    const std::string reverse_steps = ConstI64(g, fresh("reverse/steps"), {-1});
    auto reverse = [&](const std::string& from, const std::string& to) {
      g->AddNode(Make("Slice", to, {from, reverse_starts, reverse_ends, reverse_axes, reverse_steps}, {to}));
    };
    auto direction = [&](size_t first, const std::string& input, const std::string& output, const std::string& name) {
      Node d = Make("TflUnidirectionalSequenceLstm", name, {input}, {output});
      d.domain = n.domain;
      d.opset = n.opset;
      for (size_t k = 0; k < kPerDirection; ++k) d.inputs.push_back(n.inputs[first + k]);
      for (const char* k : {"fused_activation_function", "cell_clip", "proj_clip", "asymmetric_quantize_inputs", "output_type"})
        if (auto it = n.attrs.find(k); it != n.attrs.end()) d.attrs[k] = it->second;
      d.attrs["time_major"] = AttrValue::Bool(time_major);
      for (const char* k : {"input_scale", "input_zero_point"})
        if (auto q = quant_slice(k, first, std::string(k) == "input_zero_point")) d.attrs[k] = *q;
      g->AddNode(std::move(d));
    };
    const std::string fw = merge ? fresh("forward") : n.outputs[0];
    const std::string bw = merge ? fresh("backward") : n.outputs[1];
    const std::string reversed_in = fresh("input_reversed"), reversed_out = fresh("backward_reversed");
    direction(1, n.inputs[0], fw, merge ? fw : fresh("forward"));
    reverse(n.inputs[0], reversed_in);
    direction(kBw, reversed_in, reversed_out, fresh("backward_lstm"));
    reverse(reversed_out, bw);
    if (merge) g->AddNode(Make("Concat", n.name, {fw, bw}, {n.outputs[0]}, {{"axis", AttrValue::Int(-1)}}));
    return Status::Ok();
  }

  const uint8_t* data_;
  size_t size_;
  const LiteRtImportOptions& opts_;
  const fb::Model* model_ = nullptr;
  std::vector<std::string> names_;
  std::vector<DataType> types_;
  std::vector<Shape> shapes_;
  std::set<size_t> sparse_;
  std::vector<size_t> op_states_;  // the operator being imported: its state tensors (variable inputs), in input order
  std::set<size_t> dequantized_;  // block-wise quantized constants, imported as float32
  // Resource variables (main subgraph): handle tensor -> variable; initial values (CALL_ONCE);
  // in the run being imported, each variable's current value.
  std::map<size_t, std::string> handles_;
  std::map<std::string, HostTensor> var_initial_;
  std::map<std::string, std::string> var_current_;
  // Per variable, what its next AssignVariable must follow: the reads since the last assignment,
  // and that assignment.
  std::map<std::string, std::vector<std::string>> var_pending_;
  const fb::SubGraph* sg_ = nullptr;  // the subgraph being imported
  std::vector<uint32_t> stack_;       // the subgraphs being imported, the main one first
  std::vector<DataType> out_types_;   // the output types of the subgraph imported last
  static constexpr size_t kMaxSubgraphDepth = 16;
  size_t inlined_ = 0;  // subgraph imports so far, each use counted
  static constexpr size_t kMaxInlined = 4096;
};

}  // namespace

std::string LiteRtBuiltinOpType(int32_t code) {
  if (code < 0 || code >= kNumBuiltins || !kBuiltinNames[code][0] || code == kCustom) return "";
  // CONV_2D → Conv2D: each word capitalized, letters after a digit kept upper-case.
  std::string out = "Tfl";
  bool start = true;
  char prev = 0;
  for (const char* p = kBuiltinNames[code]; *p; ++p) {
    char c = *p;
    if (c == '_') {
      start = true;
      continue;
    }
    bool upper = start || std::isdigit(static_cast<unsigned char>(prev));
    out += upper ? c : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    start = false;
    prev = c;
  }
  return out;
}

Expected<Graph> ImportLiteRtBytes(const std::string& file_bytes, const LiteRtImportOptions& options) {
  std::string hooked;
  auto applied = internal::ApplyModelHooks(options.registry.get(), true, file_bytes, &hooked, "LiteRT model");
  if (!applied.ok()) return applied.status();
  const std::string& bytes = applied.value() ? hooked : file_bytes;
  // flatbuffers reads scalars through aligned loads; keep the data 16-byte aligned.
  std::vector<uint64_t> aligned((bytes.size() + 7) / 8 + 1);
  std::memcpy(aligned.data(), bytes.data(), bytes.size());
  return Importer(reinterpret_cast<const uint8_t*>(aligned.data()), bytes.size(), options).Run();
}

Expected<Graph> ImportLiteRt(const std::string& path, const LiteRtImportOptions& options) {
  auto bytes = internal::ReadRegularFile(path, "LiteRT model");
  if (!bytes.ok()) return bytes.status();
  auto g = ImportLiteRtBytes(bytes.value(), options);
  if (!g.ok()) return Status(g.status().code(), g.status().message() + " [" + path + "]");
  return g;
}

}  // namespace weft
