#include <cfloat>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/npy.h"
#include "weft/weft.h"

namespace weft {

Graph& Graph::AddInput(const std::string& name, DataType dtype, const Shape& shape) {
  inputs_.push_back({name, dtype, shape});
  return *this;
}

Graph& Graph::AddConstant(const std::string& name, HostTensor value) {
  constants_.emplace_back(name, std::move(value));
  return *this;
}

Graph& Graph::AddNode(const std::string& op_type, const std::string& name, std::vector<std::string> inputs,
                      std::vector<std::string> outputs, std::map<std::string, AttrValue> attrs) {
  Node n;
  n.op_type = op_type;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  return AddNode(std::move(n));
}

Graph& Graph::AddNode(Node node) {
  nodes_.push_back(std::move(node));
  return *this;
}

Graph& Graph::AddOutput(const std::string& name) {
  outputs_.push_back(name);
  return *this;
}

namespace {

using nlohmann::json;

// Graphs nest a few levels (graph, nodes, node, attrs, tensor, data); deeper text is refused
// before parsing, since copying or printing a json value recurses once per level.
constexpr int kMaxJsonDepth = 64;

Status CheckJsonDepth(const std::string& text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return InvalidArgument("graph JSON nests arrays and objects more than " + std::to_string(kMaxJsonDepth) + " levels deep");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

Expected<Shape> ShapeFromJson(const json& j, const std::string& what) {
  if (!j.is_array()) return InvalidArgument(what + ": \"shape\" must be an array of integers");
  if (j.size() > WEFT_MAX_DIMS) return InvalidArgument(what + ": more than " + std::to_string(WEFT_MAX_DIMS) + " dims");
  Shape s;
  for (auto& d : j) {
    if (!d.is_number_integer()) return InvalidArgument(what + ": \"shape\" must be an array of integers");
    if (d.is_number_unsigned() && d.get<uint64_t>() > uint64_t(INT64_MAX))
      return InvalidArgument(what + ": shape dim " + d.dump() + " is out of range");
    s.AppendDim(d.get<int64_t>());
  }
  return s;
}

// A JSON number or boolean as T; false when the value does not fit T (converting an
// out-of-range number would be undefined, and reading a boolean as a number throws).
template <typename T>
bool JsonToNumber(const json& v, T* out) {
  if (v.is_boolean()) {
    *out = T(static_cast<float>(v.get<bool>()));
    return true;
  }
  if constexpr (std::is_same_v<T, double>) {
    *out = v.get<double>();
    return true;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
    double d = v.get<double>();
    if (d > FLT_MAX || d < -FLT_MAX) return false;
    *out = T(static_cast<float>(d));
    return true;
  } else {
    if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (!std::in_range<T>(u)) return false;
      *out = static_cast<T>(u);
    } else if (v.is_number_integer()) {
      int64_t i = v.get<int64_t>();
      if (!std::in_range<T>(i)) return false;
      *out = static_cast<T>(i);
    } else {  // a decimal: truncated toward zero, as NumPy's astype does
      double d = v.get<double>();
      if (!(d > static_cast<double>(std::numeric_limits<T>::min()) - 1.0 &&
            d < static_cast<double>(std::numeric_limits<T>::max()) + 1.0))
        return false;
      *out = static_cast<T>(d);
    }
    return true;
  }
}

template <typename T>
Status PutAll(HostTensor& t, const json& data, const std::string& what) {
  T* p = t.data_as<T>();
  for (size_t k = 0; k < data.size(); ++k)
    if (!JsonToNumber(data[k], &p[k]))
      return InvalidArgument(what + ": \"data\" value #" + std::to_string(k) + " (" + data[k].dump() + ") does not fit " +
                             DataTypeName(t.dtype()));
  return Status::Ok();
}

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string EncodeBase64(const uint8_t* p, size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t k = 0; k < n; k += 3) {
    uint32_t v = uint32_t(p[k]) << 16 | (k + 1 < n ? uint32_t(p[k + 1]) << 8 : 0) | (k + 2 < n ? p[k + 2] : 0);
    out += kBase64[v >> 18 & 63];
    out += kBase64[v >> 12 & 63];
    out += k + 1 < n ? kBase64[v >> 6 & 63] : '=';
    out += k + 2 < n ? kBase64[v & 63] : '=';
  }
  return out;
}

// Standard base64 with padding; false on any other character or a bad length.
bool DecodeBase64(const std::string& s, std::vector<uint8_t>* out) {
  if (s.size() % 4) return false;
  out->clear();
  out->reserve(s.size() / 4 * 3);
  for (size_t k = 0; k < s.size(); k += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t i = 0; i < 4; ++i) {
      char c = s[k + i];
      const char* at = c ? std::strchr(kBase64, c) : nullptr;
      if (c == '=' && k + 4 == s.size() && i >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      if (!at || pad) return false;
      v = v << 6 | uint32_t(at - kBase64);
    }
    out->push_back(uint8_t(v >> 16));
    if (pad < 2) out->push_back(uint8_t(v >> 8));
    if (pad < 1) out->push_back(uint8_t(v));
  }
  return true;
}

// The base directory that admits no "file" constants: subgraphs carried inside a model.
const std::string kInlineOnly("\0inline", 7);

Expected<HostTensor> TensorFromJson(const json& j, const std::string& what, const std::string& base_dir) {
  if (!j.is_object()) return InvalidArgument(what + ": must be an object");
  if (j.contains("file") && base_dir == kInlineOnly)
    return InvalidArgument(what + ": a subgraph's constants must be inline (\"data\" or \"base64\"), not \"file\"");
  if (j.contains("file")) {
    if (!j["file"].is_string()) return InvalidArgument(what + ": \"file\" must be a string");
    auto f = internal::ConfinedPath(base_dir, j["file"].get<std::string>(), what + ": \"file\"");
    if (!f.ok()) return f.status();
    if (j.contains("data")) return InvalidArgument(what + ": give \"file\" or \"data\", not both");
    auto t = internal::ReadNpy(f.value());
    if (!t.ok()) return InvalidArgument(what + ": " + t.status().message());
    // A dtype or shape given beside the file states what the file must hold.
    if (j.contains("dtype")) {
      if (!j["dtype"].is_string()) return InvalidArgument(what + ": \"dtype\" must be a string");
      DataType want = internal::DataTypeFromName(j["dtype"].get<std::string>());
      if (want != t.value().dtype())
        return InvalidArgument(what + ": \"dtype\" is '" + j["dtype"].get<std::string>() + "' but the file holds " +
                               DataTypeName(t.value().dtype()));
    }
    if (j.contains("shape")) {
      auto shape = ShapeFromJson(j["shape"], what);
      if (!shape.ok()) return shape.status();
      if (shape.value() != t.value().shape())
        return InvalidArgument(what + ": \"shape\" is " + shape.value().ToString() + " but the file holds " + t.value().shape().ToString());
    }
    return t;
  }
  if (!j.contains("dtype") || !j["dtype"].is_string()) return InvalidArgument(what + ": needs \"dtype\" (or \"file\")");
  DataType dt = internal::DataTypeFromName(j["dtype"].get<std::string>());
  if (dt == DT_UNDEFINED) return InvalidArgument(what + ": unknown dtype '" + j["dtype"].get<std::string>() + "'");
  if (!j.contains("shape")) return InvalidArgument(what + ": needs \"shape\"");
  auto shape = ShapeFromJson(j["shape"], what);
  if (!shape.ok()) return shape.status();
  if (shape.value().IsUnknown()) return InvalidArgument(what + ": a constant needs a known shape");
  if (j.contains("base64")) {  // the raw little-endian bytes, as Graph::ToJsonText writes them
    if (j.contains("data")) return InvalidArgument(what + ": give \"data\" or \"base64\", not both");
    if (!j["base64"].is_string()) return InvalidArgument(what + ": \"base64\" must be a string");
    uint64_t want = 0;
    if (!shape.value().GetCheckedBytes(DataTypeSize(dt), &want))
      return InvalidArgument(what + ": shape " + shape.value().ToString() + " has more elements than fit in 64 bits");
    std::vector<uint8_t> raw;
    if (!DecodeBase64(j["base64"].get_ref<const std::string&>(), &raw))
      return InvalidArgument(what + ": \"base64\" is not valid base64");
    if (raw.size() != want)
      return InvalidArgument(what + ": shape " + shape.value().ToString() + " needs " + std::to_string(want) + " bytes, \"base64\" holds " +
                             std::to_string(raw.size()));
    auto t = HostTensor::FromBytes(dt, shape.value(), raw.data(), raw.size());
    if (!t.ok()) return Status(t.status().code(), what + ": " + t.status().message());
    return t;
  }
  static const json kNoData = json::array();
  const json& data = j.contains("data") ? j["data"] : kNoData;
  if (!data.is_array()) return InvalidArgument(what + ": \"data\" must be a flat array");
  uint64_t bytes = 0;  // the same size check HostTensor makes, so a shape that passes here allocates
  if (!shape.value().GetCheckedBytes(DataTypeSize(dt), &bytes))
    return InvalidArgument(what + ": shape " + shape.value().ToString() + " has more elements than fit in 64 bits");
  int64_t n = shape.value().GetShapeSize();
  if (static_cast<int64_t>(data.size()) != n)
    return InvalidArgument(what + ": shape " + shape.value().ToString() + " needs " + std::to_string(n) +
                           " values, \"data\" has " + std::to_string(data.size()));
  for (auto& v : data)
    if (!v.is_number() && !v.is_boolean()) return InvalidArgument(what + ": \"data\" must hold numbers");
  HostTensor t(dt, shape.value());
  Status st;
  switch (dt) {
    case DT_FLOAT: st = PutAll<float>(t, data, what); break;
    case DT_DOUBLE: st = PutAll<double>(t, data, what); break;
    case DT_INT8: st = PutAll<int8_t>(t, data, what); break;
    case DT_UINT8: st = PutAll<uint8_t>(t, data, what); break;
    case DT_INT16: st = PutAll<int16_t>(t, data, what); break;
    case DT_UINT16: st = PutAll<uint16_t>(t, data, what); break;
    case DT_INT32: st = PutAll<int32_t>(t, data, what); break;
    case DT_UINT32: st = PutAll<uint32_t>(t, data, what); break;
    case DT_INT64: st = PutAll<int64_t>(t, data, what); break;
    case DT_UINT64: st = PutAll<uint64_t>(t, data, what); break;
    case DT_FLOAT16: st = PutAll<float16>(t, data, what); break;
    case DT_BF16: st = PutAll<bfloat16>(t, data, what); break;
    case DT_BOOL:
      for (size_t k = 0; k < data.size(); ++k)
        t.data_as<uint8_t>()[k] = data[k].is_boolean() ? data[k].get<bool>() : data[k].get<double>() != 0;
      break;
    default: return InvalidArgument(what + ": unsupported dtype");
  }
  if (!st.ok()) return st;
  return t;
}

Expected<AttrValue> AttrFromJson(const json& v, const std::string& what, const std::string& base_dir) {
  // Int attributes are int64 and Float ones float32: a number past their range is an error.
  auto out_of_range = [&](const json& e) {
    return InvalidArgument(what + ": value " + e.dump() + " is out of range for " +
                           (e.is_number_float() ? "a float32" : "an int64") + " attribute");
  };
  int64_t i = 0;
  float f = 0;
  if (v.is_boolean()) return AttrValue::Bool(v.get<bool>());
  if (v.is_number_integer()) {
    if (!JsonToNumber(v, &i)) return out_of_range(v);
    return AttrValue::Int(i);
  }
  if (v.is_number_float()) {
    if (!JsonToNumber(v, &f)) return out_of_range(v);
    return AttrValue::Float(f);
  }
  if (v.is_string()) return AttrValue::String(v.get<std::string>());
  if (v.is_array()) {
    bool all_int = true, all_num = true, all_str = true, all_bool = true;
    for (auto& e : v) {
      all_int = all_int && e.is_number_integer();
      all_num = all_num && e.is_number();
      all_str = all_str && e.is_string();
      all_bool = all_bool && e.is_boolean();
    }
    if (v.empty() || all_int) {
      std::vector<int64_t> ints(v.size());
      for (size_t k = 0; k < v.size(); ++k)
        if (!JsonToNumber(v[k], &ints[k])) return out_of_range(v[k]);
      return AttrValue::ListInt(std::move(ints));
    }
    if (all_num) {
      std::vector<float> floats(v.size());
      for (size_t k = 0; k < v.size(); ++k)
        if (!JsonToNumber(v[k], &floats[k])) return out_of_range(v[k]);
      return AttrValue::ListFloat(std::move(floats));
    }
    if (all_str) return AttrValue::ListString(v.get<std::vector<std::string>>());
    if (all_bool) return AttrValue::ListBool(v.get<std::vector<bool>>());
    return InvalidArgument(what + ": a list attribute must hold only integers, numbers, strings or booleans");
  }
  if (v.is_object() && v.contains("tensor")) {
    auto t = TensorFromJson(v["tensor"], what, base_dir);
    if (!t.ok()) return t.status();
    const HostTensor& h = t.value();
    const uint8_t* p = static_cast<const uint8_t*>(h.data());
    return AttrValue::TensorValue(h.dtype(), h.shape(), std::vector<uint8_t>(p, p + h.bytes()));
  }
  if (v.is_object() && v.contains("type") && v["type"].is_string()) {
    DataType dt = internal::DataTypeFromName(v["type"].get<std::string>());
    if (dt == DT_UNDEFINED) return InvalidArgument(what + ": unknown data type '" + v["type"].get<std::string>() + "'");
    return AttrValue::Type(dt);
  }
  return InvalidArgument(what + ": unsupported attribute value (a JSON " + std::string(v.type_name()) +
                         "; objects must be {\"tensor\": ...} or {\"type\": ...})");
}

Expected<std::vector<std::string>> NameList(const json& j, const char* key, const std::string& what) {
  if (!j.contains(key)) return std::vector<std::string>();
  if (!j[key].is_array()) return InvalidArgument(what + ": \"" + key + "\" must be an array of names");
  std::vector<std::string> out;
  for (auto& e : j[key]) {
    if (e.is_null()) out.emplace_back();
    else if (e.is_string()) out.push_back(e.get<std::string>());
    else return InvalidArgument(what + ": \"" + key + "\" must hold strings (or null for an absent optional input)");
  }
  return out;
}

}  // namespace

namespace {
Expected<Graph> ParseJsonGraph(const std::string& text, const std::string& base_dir);
}  // namespace

// Nothing escapes as an exception, whatever the text (running out of memory included).
Expected<Graph> Graph::FromJsonText(const std::string& text, const std::string& base_dir) {
  try {
    return ParseJsonGraph(text, base_dir);
  } catch (const std::bad_alloc&) {
    return IoError("graph JSON: out of memory");
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("graph JSON: ") + e.what());
  }
}

namespace {
Expected<Graph> ParseJsonGraph(const std::string& text, const std::string& base_dir) {
  WEFT_RETURN_IF_ERROR(CheckJsonDepth(text));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // syntax errors, and numbers out of range such as 1e400
    return InvalidArgument(std::string("graph JSON does not parse: ") + e.what());
  }
  if (!j.is_object()) return InvalidArgument("graph JSON must be an object with \"inputs\", \"nodes\" and \"outputs\"");
  if (j.contains("name") && !j["name"].is_string()) return InvalidArgument("graph \"name\" must be a string");
  Graph g(j.contains("name") ? j["name"].get<std::string>() : std::string("graph"));
  if (j.contains("inputs")) {
    if (!j["inputs"].is_array()) return InvalidArgument("graph \"inputs\" must be an array");
    for (size_t k = 0; k < j["inputs"].size(); ++k) {
      const json& in = j["inputs"][k];
      std::string what = "graph input #" + std::to_string(k);
      if (!in.is_object() || !in.contains("name") || !in["name"].is_string() || !in.contains("dtype") || !in["dtype"].is_string())
        return InvalidArgument(what + ": needs \"name\", \"dtype\" and \"shape\"");
      what = "graph input '" + in["name"].get<std::string>() + "'";
      DataType dt = internal::DataTypeFromName(in["dtype"].get<std::string>());
      if (dt == DT_UNDEFINED) return InvalidArgument(what + ": unknown dtype '" + in["dtype"].get<std::string>() + "'");
      static const json kScalar = json::array();
      auto shape = ShapeFromJson(in.contains("shape") ? in["shape"] : kScalar, what);
      if (!shape.ok()) return shape.status();
      g.AddInput(in["name"].get<std::string>(), dt, shape.value());
    }
  }
  if (j.contains("constants")) {
    if (!j["constants"].is_array()) return InvalidArgument("graph \"constants\" must be an array");
    for (auto& c : j["constants"]) {
      if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
        return InvalidArgument("graph constant: needs \"name\"");
      std::string what = "constant '" + c["name"].get<std::string>() + "'";
      auto t = TensorFromJson(c, what, base_dir);
      if (!t.ok()) return t.status();
      g.AddConstant(c["name"].get<std::string>(), std::move(t).value());
    }
  }
  if (!j.contains("nodes") || !j["nodes"].is_array()) return InvalidArgument("graph JSON needs a \"nodes\" array");
  for (size_t k = 0; k < j["nodes"].size(); ++k) {
    const json& n = j["nodes"][k];
    std::string what = "node #" + std::to_string(k);
    if (!n.is_object() || !n.contains("op") || !n["op"].is_string()) return InvalidArgument(what + ": needs \"op\"");
    Node node;
    node.op_type = n["op"].get<std::string>();
    node.name = n.contains("name") && n["name"].is_string() ? n["name"].get<std::string>() : "";
    if (!node.name.empty()) what = "node '" + node.name + "'";
    auto ins = NameList(n, "inputs", what);
    if (!ins.ok()) return ins.status();
    auto outs = NameList(n, "outputs", what);
    if (!outs.ok()) return outs.status();
    node.inputs = ins.value();
    node.outputs = outs.value();
    if (n.contains("attrs")) {
      if (!n["attrs"].is_object()) return InvalidArgument(what + ": \"attrs\" must be an object");
      for (auto& [key, val] : n["attrs"].items()) {
        auto a = AttrFromJson(val, what + " attribute '" + key + "'", base_dir);
        if (!a.ok()) return a.status();
        node.attrs[key] = std::move(a).value();
      }
    }
    for (const char* key : {"input_counts", "output_counts"}) {
      if (!n.contains(key)) continue;
      if (!n[key].is_array()) return InvalidArgument(what + ": \"" + key + "\" must be an array of counts");
      auto& dst = std::string(key) == "input_counts" ? node.input_counts : node.output_counts;
      for (auto& c : n[key]) {
        if (!c.is_number_unsigned() || c.get<uint64_t>() > UINT32_MAX)
          return InvalidArgument(what + ": \"" + key + "\" must hold integers in [0, 2^32)");
        dst.push_back(c.get<uint32_t>());
      }
    }
    if (n.contains("domain")) {
      if (!n["domain"].is_string()) return InvalidArgument(what + ": \"domain\" must be a string");
      node.domain = n["domain"].get<std::string>();
    }
    if (n.contains("when")) {  // [["cond", true], ...]
      if (!n["when"].is_array()) return InvalidArgument(what + ": \"when\" must be an array of [tensor, true|false] pairs");
      for (auto& c : n["when"]) {
        if (!c.is_array() || c.size() != 2 || !c[0].is_string() || !c[1].is_boolean())
          return InvalidArgument(what + ": each \"when\" entry must be [tensor name, true|false]");
        node.when.emplace_back(c[0].get<std::string>(), c[1].get<bool>());
      }
    }
    g.AddNode(std::move(node));
  }
  auto outs = NameList(j, "outputs", "graph");
  if (!outs.ok()) return outs.status();
  for (auto& o : outs.value()) g.AddOutput(o);
  return g;
}

}  // namespace

namespace {

json TensorToJson(DataType dt, const Shape& shape, const void* data, size_t bytes) {
  json j = json::object();
  j["dtype"] = DataTypeName(dt);
  json dims = json::array();
  for (size_t k = 0; k < shape.GetDimNum(); ++k) dims.push_back(shape.GetDim(k));
  j["shape"] = std::move(dims);
  j["base64"] = EncodeBase64(static_cast<const uint8_t*>(data), bytes);
  return j;
}

Expected<json> AttrToJson(const AttrValue& a, const std::string& what) {
  auto finite = [&](float f) -> Status {
    if (std::isfinite(f)) return Status::Ok();
    return InvalidArgument(what + ": the value " + std::to_string(f) + " has no JSON form");
  };
  switch (a.type()) {
    case WEFT_ATTR_INT: return json(a.i());
    case WEFT_ATTR_FLOAT: {
      WEFT_RETURN_IF_ERROR(finite(a.f()));
      double d = a.f();
      // A whole number would read back as an Int; 1.0 stays a float in nlohmann's output.
      return json(d);
    }
    case WEFT_ATTR_BOOL: return json(a.b());
    case WEFT_ATTR_STRING: return json(a.s());
    case WEFT_ATTR_TYPE: return json{{"type", DataTypeName(static_cast<DataType>(a.i()))}};
    case WEFT_ATTR_LIST_INT: return json(a.ints());
    case WEFT_ATTR_LIST_FLOAT: {
      json l = json::array();
      for (float f : a.floats()) {
        WEFT_RETURN_IF_ERROR(finite(f));
        l.push_back(static_cast<double>(f));
      }
      return l;
    }
    case WEFT_ATTR_LIST_STRING: return json(a.strings());
    case WEFT_ATTR_LIST_BOOL: {
      json l = json::array();
      for (uint8_t b : a.bools()) l.push_back(b != 0);
      return l;
    }
    case WEFT_ATTR_TENSOR:
      return json{{"tensor", TensorToJson(a.tensor().GetDataType(), a.tensor().GetShape(), a.tensor_bytes().data(),
                                          a.tensor_bytes().size())}};
    default: return InvalidArgument(what + ": unsupported attribute type");
  }
}

}  // namespace

Expected<std::string> Graph::ToJsonText() const {
  try {
    json j = json::object();
    j["name"] = name_;
    json ins = json::array();
    for (auto& in : inputs_) {
      json dims = json::array();
      for (size_t k = 0; k < in.shape.GetDimNum(); ++k) dims.push_back(in.shape.GetDim(k));
      ins.push_back({{"name", in.name}, {"dtype", DataTypeName(in.dtype)}, {"shape", std::move(dims)}});
    }
    j["inputs"] = std::move(ins);
    json consts = json::array();
    for (auto& [name, t] : constants_) {
      json c = TensorToJson(t.dtype(), t.shape(), t.data(), t.bytes());
      c["name"] = name;
      consts.push_back(std::move(c));
    }
    j["constants"] = std::move(consts);
    json nodes = json::array();
    for (auto& n : nodes_) {
      json jn = json::object();
      jn["name"] = n.name;
      jn["op"] = n.op_type;
      if (!n.domain.empty()) jn["domain"] = n.domain;
      json names = json::array();
      for (auto& i : n.inputs) names.push_back(i);
      jn["inputs"] = std::move(names);
      names = json::array();
      for (auto& o : n.outputs) names.push_back(o);
      jn["outputs"] = std::move(names);
      if (!n.attrs.empty()) {
        json attrs = json::object();
        for (auto& [key, v] : n.attrs) {
          auto a = AttrToJson(v, "node '" + n.name + "' attribute '" + key + "'");
          if (!a.ok()) return a.status();
          attrs[key] = std::move(a).value();
        }
        jn["attrs"] = std::move(attrs);
      }
      if (!n.input_counts.empty()) jn["input_counts"] = n.input_counts;
      if (!n.output_counts.empty()) jn["output_counts"] = n.output_counts;
      if (!n.when.empty()) {
        json w = json::array();
        for (auto& [c, v] : n.when) w.push_back(json::array({c, v}));
        jn["when"] = std::move(w);
      }
      nodes.push_back(std::move(jn));
    }
    j["nodes"] = std::move(nodes);
    j["outputs"] = outputs_;
    return j.dump();
  } catch (const json::exception& e) {  // a name or string attribute that is not UTF-8
    return InvalidArgument("graph '" + name_ + "' has no JSON form: " + e.what());
  }
}

namespace internal {
Expected<Graph> GraphFromInlineJson(const std::string& text) { return Graph::FromJsonText(text, kInlineOnly); }
}  // namespace internal

Expected<Graph> Graph::FromJsonFile(const std::string& path) {
  auto text = internal::ReadRegularFile(path, "graph file");
  if (!text.ok()) return text.status();
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  auto g = FromJsonText(text.value(), dir);
  if (!g.ok()) return Status(g.status().code(), path + ": " + g.status().message());
  return g;
}

}  // namespace weft
