#include "model/model_format.h"

#include <xxhash.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace weft::internal {

using nlohmann::json;

uint64_t DataSection::Add(const void* p, size_t n) {
  size_t off = (bytes_.size() + kModelAlign - 1) / kModelAlign * kModelAlign;
  bytes_.resize(off + n);
  if (n) std::memcpy(bytes_.data() + off, p, n);
  return off;
}

std::vector<uint8_t> AssembleModelFile(const std::string& meta_json, const DataSection& data) {
  ModelHeader h{};
  std::memcpy(h.magic, kModelMagic, sizeof(h.magic));
  h.format_version = kModelFormatVersion;
  h.header_bytes = kModelHeaderBytes;
  h.meta_offset = kModelHeaderBytes;
  h.meta_bytes = meta_json.size();
  h.data_offset = (h.meta_offset + h.meta_bytes + kModelAlign - 1) / kModelAlign * kModelAlign;
  h.data_bytes = data.bytes().size();
  h.file_bytes = h.data_offset + h.data_bytes;
  std::vector<uint8_t> file(h.file_bytes, 0);
  std::memcpy(file.data() + h.meta_offset, meta_json.data(), meta_json.size());
  if (h.data_bytes) std::memcpy(file.data() + h.data_offset, data.bytes().data(), h.data_bytes);
  h.checksum = XXH3_64bits(file.data() + kModelHeaderBytes, file.size() - kModelHeaderBytes);
  std::memcpy(file.data(), &h, sizeof(h));
  return file;
}

namespace {

struct Corrupt : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json& Field(const json& o, const char* key, const std::string& where) {
  if (!o.is_object()) throw Corrupt(where + " is not an object");
  auto it = o.find(key);
  if (it == o.end()) throw Corrupt(where + " has no '" + key + "'");
  return *it;
}
int64_t Int(const json& j, const std::string& what, int64_t lo, int64_t hi) {
  if (!j.is_number_integer()) throw Corrupt(what + " is not an integer");
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) throw Corrupt(what + " is out of range");
  int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) throw Corrupt(what + " = " + std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}
std::string Str(const json& j, const std::string& what) {
  if (!j.is_string()) throw Corrupt(what + " is not a string");
  return j.get<std::string>();
}
const json& Arr(const json& j, const std::string& what, size_t max = SIZE_MAX) {
  if (!j.is_array()) throw Corrupt(what + " is not an array");
  if (j.size() > max) throw Corrupt(what + " has too many entries");
  return j;
}

struct Reader {
  const uint8_t* data;  // data section
  uint64_t data_bytes;

  std::pair<const uint8_t*, uint64_t> Range(const json& j, const std::string& what) const {
    Arr(j, what);
    if (j.size() != 2) throw Corrupt(what + " is not an [offset, size] pair");
    uint64_t off = static_cast<uint64_t>(Int(j[0], what + " offset", 0, INT64_MAX));
    uint64_t n = static_cast<uint64_t>(Int(j[1], what + " size", 0, INT64_MAX));
    if (off % kModelAlign) throw Corrupt(what + " is not 64-byte aligned");
    if (off > data_bytes || n > data_bytes - off) throw Corrupt(what + " lies outside the data section (the file is truncated or corrupt)");
    return {data + off, n};
  }

  Shape ReadShape(const json& j, const std::string& what) const {
    Arr(j, what, WEFT_MAX_DIMS);
    Shape s;
    s.ndim = static_cast<int64_t>(j.size());
    for (size_t k = 0; k < j.size(); ++k) s.dims[k] = Int(j[k], what + " dim", -1, INT64_C(1) << 40);
    return s;
  }

  static DataType Dtype(const json& j, const std::string& what) {
    auto d = static_cast<DataType>(Int(j, what, 0, 64));
    if (DataTypeSize(d) == 0) throw Corrupt(what + " is not a known data type");
    return d;
  }

  static float Bits(const json& j, const std::string& what) {
    uint32_t b = static_cast<uint32_t>(Int(j, what, 0, UINT32_MAX));
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }

  AttrValue Attr(const json& j, const std::string& what) const {
    Arr(j, what);
    if (j.size() != 3) throw Corrupt(what + " is not [name, type, value]");
    int64_t t = Int(j[1], what + " type", 1, 10);
    const json& v = j[2];
    switch (t) {
      case WEFT_ATTR_INT: return AttrValue::Int(Int(v, what, INT64_MIN, INT64_MAX));
      case WEFT_ATTR_FLOAT: return AttrValue::Float(Bits(v, what));
      case WEFT_ATTR_BOOL:
        if (!v.is_boolean()) throw Corrupt(what + " is not a boolean");
        return AttrValue::Bool(v.get<bool>());
      case WEFT_ATTR_STRING: return AttrValue::String(Str(v, what));
      case WEFT_ATTR_TYPE: return AttrValue::Type(Dtype(v, what));
      case WEFT_ATTR_LIST_INT: {
        std::vector<int64_t> out;
        for (auto& e : Arr(v, what)) out.push_back(Int(e, what, INT64_MIN, INT64_MAX));
        return AttrValue::ListInt(out);
      }
      case WEFT_ATTR_LIST_FLOAT: {
        std::vector<float> out;
        for (auto& e : Arr(v, what)) out.push_back(Bits(e, what));
        return AttrValue::ListFloat(out);
      }
      case WEFT_ATTR_LIST_STRING: {
        std::vector<std::string> out;
        for (auto& e : Arr(v, what)) out.push_back(Str(e, what));
        return AttrValue::ListString(out);
      }
      case WEFT_ATTR_LIST_BOOL: {
        std::vector<bool> out;
        for (auto& e : Arr(v, what)) {
          if (!e.is_boolean()) throw Corrupt(what + " has a non-boolean entry");
          out.push_back(e.get<bool>());
        }
        return AttrValue::ListBool(out);
      }
      case WEFT_ATTR_TENSOR: {
        DataType dt = Dtype(Field(v, "dtype", what), what + " dtype");
        Shape s = ReadShape(Field(v, "shape", what), what + " shape");
        if (s.IsUnknown()) throw Corrupt(what + " has an unknown dim");
        auto [p, n] = Range(Field(v, "data", what), what + " data");
        if (n != static_cast<uint64_t>(s.GetShapeSize()) * DataTypeSize(dt)) throw Corrupt(what + " data size does not match its shape");
        return AttrValue::TensorValue(dt, s, std::vector<uint8_t>(p, p + n));
      }
      default: throw Corrupt(what + " has an unknown attribute type");
    }
  }
};

void Parse(const uint8_t* base, size_t size, bool verify, ParsedModel& out) {
  if (size < sizeof(kModelMagic) || std::memcmp(base, kModelMagic, sizeof(kModelMagic)) != 0)
    throw Corrupt("it is not a Weft model file (bad magic)");
  if (size < kModelHeaderBytes) throw Corrupt("the file is " + std::to_string(size) + " bytes, shorter than the 64-byte header (truncated)");
  ModelHeader h;
  std::memcpy(&h, base, sizeof(h));
  if (h.format_version > kModelFormatVersion)
    throw Corrupt("it uses model format " + std::to_string(h.format_version) + ", newer than this Weft reads (" +
                  std::to_string(kModelFormatVersion) + "): upgrade Weft");
  if (h.format_version == 0 || h.header_bytes != kModelHeaderBytes) throw Corrupt("the header is malformed");
  if (h.file_bytes != size)
    throw Corrupt("the header says " + std::to_string(h.file_bytes) + " bytes but the file has " + std::to_string(size) +
                  (size < h.file_bytes ? " (truncated)" : " (trailing bytes)"));
  if (h.meta_offset < kModelHeaderBytes || h.meta_offset > size || h.meta_bytes > size - h.meta_offset ||
      h.data_offset % kModelAlign || h.data_offset < h.meta_offset + h.meta_bytes || h.data_offset > size ||
      h.data_bytes != size - h.data_offset)
    throw Corrupt("the header's section offsets are inconsistent");
  if (verify && XXH3_64bits(base + kModelHeaderBytes, size - kModelHeaderBytes) != h.checksum)
    throw Corrupt("checksum mismatch: the file is corrupt");
  out.format_version = h.format_version;
  out.file_bytes = h.file_bytes;
  json meta = json::parse(base + h.meta_offset, base + h.meta_offset + h.meta_bytes, nullptr, false);
  if (meta.is_discarded()) throw Corrupt("its metadata is not valid JSON");
  Reader r{base + h.data_offset, h.data_bytes};
  LoadedGraph& g = out.graph;
  g.name = Str(Field(meta, "name", "metadata"), "name");
  const json& dyn = Field(meta, "dynamic", "metadata");
  if (!dyn.is_boolean()) throw Corrupt("'dynamic' is not a boolean");
  g.dynamic = dyn.get<bool>();

  // Constants.
  for (auto& c : Arr(Field(meta, "constants", "metadata"), "constants", 1u << 24)) {
    auto [p, n] = r.Range(c, "constant " + std::to_string(g.constants.size()));
    g.constants.emplace_back(p, n);
    out.weight_bytes += n;
  }
  // Values.
  const json& vals = Arr(Field(meta, "values", "metadata"), "values", 1u << 24);
  size_t num_inputs = 0;
  std::set<std::string> names;
  for (size_t k = 0; k < vals.size(); ++k) {
    std::string w = "value " + std::to_string(k);
    const json& jv = vals[k];
    Value v;
    v.name = Str(Field(jv, "name", w), w + " name");
    if (!names.insert(v.name).second) throw Corrupt(w + " name '" + v.name + "' is used twice");
    v.kind = static_cast<ValueKind>(Int(Field(jv, "kind", w), w + " kind", 0, 2));
    v.dtype = Reader::Dtype(Field(jv, "dtype", w), w + " dtype");
    v.shape = r.ReadShape(Field(jv, "shape", w), w + " shape");
    v.format = static_cast<int32_t>(Int(Field(jv, "format", w), w + " format", 0, 3));
    v.bytes = static_cast<size_t>(Int(Field(jv, "bytes", w), w + " bytes", 0, INT64_C(1) << 40));
    v.index = static_cast<int>(Int(Field(jv, "index", w), w + " index", -1, INT32_MAX));
    if (jv.contains("bound")) {
      v.bounded = true;
      v.bound = r.ReadShape(jv["bound"], w + " bound");
      if (v.bound.IsUnknown() || v.bound.ndim != v.shape.ndim) throw Corrupt(w + " bound is malformed");
    }
    // Every static shape's size is checked once, here, so no later product of its dims can wrap.
    uint64_t shape_bytes = 0;
    if (!v.shape.IsUnknown() && !v.shape.GetCheckedBytes(DataTypeSize(v.dtype), &shape_bytes))
      throw Corrupt(w + " ('" + v.name + "') has the shape " + v.shape.ToString() + ", whose size does not fit in 64 bits");
    if (v.bounded && !v.bound.GetCheckedBytes(DataTypeSize(v.dtype), &shape_bytes))
      throw Corrupt(w + " ('" + v.name + "') has a bound whose size does not fit in 64 bits");
    if (v.kind == ValueKind::kConstant) {
      if (v.index < 0 || static_cast<size_t>(v.index) >= g.constants.size()) throw Corrupt(w + " names a missing constant");
      uint64_t bytes = 0;
      if (v.shape.IsUnknown() || !v.shape.GetCheckedBytes(DataTypeSize(v.dtype), &bytes) || g.constants[v.index].second != bytes)
        throw Corrupt(w + " ('" + v.name + "') size does not match its shape");
    } else if (v.kind == ValueKind::kInput) {
      if (v.index != static_cast<int>(num_inputs++)) throw Corrupt(w + " input index is out of order");
    }
    g.values.push_back(v);
  }
  auto value_id = [&](const json& j, const std::string& what) {
    return static_cast<int>(Int(j, what, 0, static_cast<int64_t>(g.values.size()) - 1));
  };
  for (auto& j : Arr(Field(meta, "inputs", "metadata"), "inputs")) {
    int id = value_id(j, "input id");
    if (g.values[id].kind != ValueKind::kInput || g.values[id].index != static_cast<int>(g.input_ids.size()))
      throw Corrupt("input list names a value that is not the next graph input");
    g.input_ids.push_back(id);
  }
  if (g.input_ids.size() != num_inputs) throw Corrupt("the input list misses graph inputs");
  for (auto& j : Arr(Field(meta, "outputs", "metadata"), "outputs")) g.output_ids.push_back(value_id(j, "output id"));
  if (g.output_ids.empty()) throw Corrupt("the model declares no outputs");

  // Libraries and op identities.
  for (auto& jl : Arr(Field(meta, "libraries", "metadata"), "libraries", 4096)) {
    ModelLibraryRef l;
    std::string w = "library " + std::to_string(out.libraries.size());
    l.name = Str(Field(jl, "name", w), w + " name");
    l.package = Str(Field(jl, "package", w), w + " package");
    l.hash = Str(Field(jl, "hash", w), w + " hash");
    if (jl.contains("pinned")) {
      if (!jl["pinned"].is_boolean()) throw Corrupt(w + " pinned is not a boolean");
      l.pinned = jl["pinned"].get<bool>();
    }
    if (jl.contains("abi")) l.abi = static_cast<uint32_t>(Int(jl["abi"], w + " abi", 1, UINT32_MAX));
    const json& e = Field(jl, "embedded", w);
    if (!e.is_null()) {
      auto [p, n] = r.Range(e, w + " embedded data");
      l.data = p;
      l.size = n;
      if (l.hash != HashText(XXH3_64bits(p, n))) throw Corrupt(w + " ('" + l.name + "') does not match its recorded hash");
    }
    out.libraries.push_back(l);
  }
  for (auto& jo : Arr(Field(meta, "ops", "metadata"), "ops", 1u << 20)) {
    ModelOpRef o;
    std::string w = "op " + std::to_string(out.ops.size());
    o.op_type = Str(Field(jo, "type", w), w + " type");
    o.version = static_cast<uint32_t>(Int(Field(jo, "version", w), w + " version", 0, UINT32_MAX));
    o.library = static_cast<int>(Int(Field(jo, "library", w), w + " library", -1, static_cast<int64_t>(out.libraries.size()) - 1));
    out.ops.push_back(o);
  }

  // Nodes, in execution order: every input exists before its node runs, every intermediate is
  // produced exactly once.
  std::vector<bool> ready(g.values.size(), false);
  for (size_t k = 0; k < g.values.size(); ++k) ready[k] = g.values[k].kind != ValueKind::kIntermediate;
  for (auto& jn : Arr(Field(meta, "nodes", "metadata"), "nodes", 1u << 24)) {
    LoadedNode n;
    std::string w = "node " + std::to_string(g.nodes.size());
    n.name = Str(Field(jn, "name", w), w + " name");
    w += " ('" + n.name + "')";
    int op = static_cast<int>(Int(Field(jn, "op", w), w + " op", 0, static_cast<int64_t>(out.ops.size()) - 1));
    const ModelOpRef& o = out.ops[op];
    n.op_type = o.op_type;
    n.version = o.version;
    if (o.library >= 0) {
      n.library_hash = out.libraries[o.library].hash;
      n.library_name = out.libraries[o.library].name;
      n.package = out.libraries[o.library].package;
    }
    for (auto& j : Arr(Field(jn, "in", w), w + " inputs", 1u << 16)) {
      int id = value_id(j, w + " input");
      if (!ready[id]) throw Corrupt(w + " reads '" + g.values[id].name + "' before any node produces it");
      n.in_values.push_back(id);
    }
    for (auto& j : Arr(Field(jn, "out", w), w + " outputs", 1u << 16)) {
      int id = value_id(j, w + " output");
      if (ready[id] || g.values[id].kind != ValueKind::kIntermediate) throw Corrupt(w + " writes '" + g.values[id].name + "', which already exists");
      ready[id] = true;
      n.out_values.push_back(id);
    }
    auto ir = [&](const char* key, size_t total, std::vector<uint32_t>& start, std::vector<uint32_t>& count) {
      uint64_t pos = 0;
      for (auto& j : Arr(Field(jn, key, w), w + " " + key, 1024)) {
        Arr(j, w + " " + key + " entry");
        if (j.size() != 2) throw Corrupt(w + " " + key + " entry is not [start, count]");
        uint32_t s = static_cast<uint32_t>(Int(j[0], w + " " + key, 0, INT32_MAX));
        uint32_t c = static_cast<uint32_t>(Int(j[1], w + " " + key, 0, INT32_MAX));
        if (s != pos) throw Corrupt(w + " " + key + " is not contiguous");
        pos += c;
        start.push_back(s);
        count.push_back(c);
      }
      if (pos != total) throw Corrupt(w + " " + key + " does not cover its tensors");
    };
    ir("ir_in", n.in_values.size(), n.ir_in_start, n.ir_in_count);
    ir("ir_out", n.out_values.size(), n.ir_out_start, n.ir_out_count);
    for (auto& ja : Arr(Field(jn, "attrs", w), w + " attrs", 4096)) {
      std::string an = Str(Arr(ja, w + " attribute").size() ? ja[0] : json(), w + " attribute name");
      n.attrs.emplace_back(an, r.Attr(ja, w + " attribute '" + an + "'"));
    }
    if (jn.contains("epilogue")) {
      const json& je = Arr(jn["epilogue"], w + " epilogue");
      if (je.size() != 3) throw Corrupt(w + " epilogue is not [activation, alpha, beta]");
      std::string act = Str(je[0], w + " epilogue activation");
      n.epilogue.activation = ActivationFromName(act);
      if (n.epilogue.activation <= WEFT_ACT_NONE) throw Corrupt(w + " epilogue names an unknown activation '" + act + "'");
      n.epilogue.alpha = Reader::Bits(je[1], w + " epilogue alpha");
      n.epilogue.beta = Reader::Bits(je[2], w + " epilogue beta");
    }
    if (jn.contains("when")) {  // [[value, true|false], ...]: a guarded branch node
      for (auto& jg : Arr(jn["when"], w + " when", 64)) {
        Arr(jg, w + " when entry");
        if (jg.size() != 2 || !jg[1].is_boolean()) throw Corrupt(w + " when entry is not [value, true|false]");
        int id = value_id(jg[0], w + " condition");
        if (!ready[id]) throw Corrupt(w + " is guarded by '" + g.values[id].name + "' before any node produces it");
        if (g.values[id].dtype != DT_BOOL) throw Corrupt(w + " is guarded by '" + g.values[id].name + "', which is not a bool");
        n.guards.emplace_back(id, jg[1].get<bool>());
      }
    }
    const json& jb = Field(jn, "blobs", w);
    if (!jb.is_object()) throw Corrupt(w + " blobs is not an object");
    for (auto& [key, val] : jb.items()) {
      n.blobs[key] = r.Range(val, w + " blob '" + key + "'");
      ++out.num_blobs;
    }
    for (auto& jk : Arr(Field(jn, "kernels", w), w + " kernels", 4096)) {
      Arr(jk, w + " kernel");
      if (jk.size() != 3) throw Corrupt(w + " kernel is not [id, tag, [offset, size]]");
      std::string id = Str(jk[0], w + " kernel id");
      if (id.size() != 32 || id.find_first_not_of("0123456789abcdef") != std::string::npos) throw Corrupt(w + " kernel id is malformed");
      Str(jk[1], w + " kernel tag");
      n.kernels.emplace_back(id, r.Range(jk[2], w + " kernel '" + id + "'"));
      ++out.num_kernels;
    }
    g.nodes.push_back(std::move(n));
  }
  for (int id : g.output_ids)
    if (!ready[id]) throw Corrupt("output '" + g.values[id].name + "' is never produced");
}

}  // namespace

Expected<ParsedModel> ParseModelFile(const uint8_t* data, size_t size, bool verify_checksum) {
  ParsedModel out;
  try {
    Parse(data, size, verify_checksum, out);
  } catch (const Corrupt& e) {
    return InvalidArgument(std::string("corrupt model file: ") + e.what());
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("corrupt model file: ") + e.what());
  }
  return out;
}

}  // namespace weft::internal
