#include "core/npy.h"

#include <fstream>
#include <sstream>

#include "core/file_io.h"

namespace weft::internal {

namespace {
struct Descr {
  const char* descr;
  DataType dt;
};
constexpr Descr kDescrs[] = {
    {"<f4", DT_FLOAT}, {"<f2", DT_FLOAT16}, {"<f8", DT_DOUBLE}, {"|i1", DT_INT8},   {"|u1", DT_UINT8},
    {"<i2", DT_INT16}, {"<u2", DT_UINT16},  {"<i4", DT_INT32},  {"<u4", DT_UINT32}, {"<i8", DT_INT64},
    {"<u8", DT_UINT64}, {"|b1", DT_BOOL}};
}  // namespace

std::string NpyDescr(DataType dt) {
  for (auto& d : kDescrs)
    if (d.dt == dt) return d.descr;
  return "";
}

DataType DataTypeFromName(const std::string& n) {
  // "sequence(float32)", "optional(int64)", "optional(sequence(bool))" (DataTypeName's spelling).
  for (bool opt : {false, true}) {
    const std::string pre = opt ? "optional(" : "sequence(";
    if (n.size() > pre.size() + 1 && n.compare(0, pre.size(), pre) == 0 && n.back() == ')') {
      DataType inner = DataTypeFromName(n.substr(pre.size(), n.size() - pre.size() - 1));
      if (IsTensorType(inner)) return opt ? OptionalOf(inner) : SequenceOf(inner);
      if (opt && IsSequenceType(inner)) return OptionalOf(inner);
      return DT_UNDEFINED;
    }
  }
  static const std::pair<const char*, DataType> kNames[] = {
      {"float32", DT_FLOAT}, {"float", DT_FLOAT},     {"float16", DT_FLOAT16}, {"half", DT_FLOAT16},
      {"bfloat16", DT_BF16}, {"bf16", DT_BF16},       {"float64", DT_DOUBLE},  {"double", DT_DOUBLE},
      {"int8", DT_INT8},     {"uint8", DT_UINT8},     {"int16", DT_INT16},     {"uint16", DT_UINT16},
      {"int32", DT_INT32},   {"uint32", DT_UINT32},   {"int64", DT_INT64},     {"uint64", DT_UINT64},
      {"bool", DT_BOOL}};
  for (auto& [name, dt] : kNames)
    if (n == name) return dt;
  for (auto& d : kDescrs)
    if (n == d.descr || n == std::string(d.descr).substr(1)) return d.dt;
  return DT_UNDEFINED;
}

Expected<HostTensor> ParseNpy(const std::string& b, const std::string& what) {
  auto bad = [&](const std::string& why) { return InvalidArgument("'" + what + "' is not a valid .npy file: " + why); };
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) return bad("missing the \\x93NUMPY magic");
  int major = static_cast<uint8_t>(b[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<uint8_t>(b[8]) | (static_cast<size_t>(static_cast<uint8_t>(b[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int k = 0; k < 4; ++k) header_len |= static_cast<size_t>(static_cast<uint8_t>(b[8 + k])) << (8 * k);
    offset = 12;
  } else {
    return bad("unsupported format version " + std::to_string(major));
  }
  if (offset + header_len > b.size()) return bad("truncated header");
  std::string h = b.substr(offset, header_len);
  auto field = [&](const std::string& key) -> std::string {
    size_t p = h.find("'" + key + "'");
    if (p == std::string::npos) return "";
    p = h.find(':', p);
    if (p == std::string::npos) return "";
    ++p;
    while (p < h.size() && h[p] == ' ') ++p;
    if (p >= h.size()) return "";
    if (h[p] == '\'') {
      size_t e = h.find('\'', p + 1);
      return e == std::string::npos ? "" : h.substr(p + 1, e - p - 1);
    }
    if (h[p] == '(') {
      size_t e = h.find(')', p);
      return e == std::string::npos ? "" : h.substr(p, e - p + 1);
    }
    size_t e = h.find_first_of(",}", p);
    return h.substr(p, e == std::string::npos ? std::string::npos : e - p);
  };
  std::string descr = field("descr"), fortran = field("fortran_order"), shape_s = field("shape");
  if (descr.empty() || shape_s.empty()) return bad("header lacks descr or shape");
  if (fortran.rfind("True", 0) == 0) return bad("Fortran-ordered arrays are not supported; save with np.ascontiguousarray");
  if (fortran.rfind("False", 0) != 0) return bad("header field 'fortran_order' must be True or False");
  DataType dt = DT_UNDEFINED;
  for (auto& d : kDescrs)
    if (descr == d.descr || (descr[0] == '=' && descr.substr(1) == std::string(d.descr).substr(1))) dt = d.dt;
  if (dt == DT_UNDEFINED) return bad("unsupported dtype '" + descr + "' (big-endian or non-numeric)");
  // The shape is a Python tuple of whole non-negative numbers: "()", "(3,)", "(2, 3)".
  if (shape_s.size() < 2 || shape_s.front() != '(' || shape_s.back() != ')') return bad("shape " + shape_s + " is not a tuple");
  Shape shape;
  std::string inner = shape_s.substr(1, shape_s.size() - 2);
  std::stringstream ss(inner);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    size_t s = tok.find_first_not_of(' '), e = tok.find_last_not_of(' ');
    if (s == std::string::npos) {
      if (ss.eof()) break;  // "( )", or the space after the trailing comma of "(3, )"
      return bad("bad shape " + shape_s);
    }
    int64_t v = 0;
    if (!ParseNonNegativeInt64(std::string_view(tok).substr(s, e - s + 1), &v)) return bad("bad shape " + shape_s);
    if (!shape.AppendDim(v)) return bad("more than " + std::to_string(WEFT_MAX_DIMS) + " dims");
  }
  uint64_t need = 0;
  if (!shape.GetCheckedBytes(DataTypeSize(dt), &need))
    return bad("shape " + shape_s + " has more elements than fit in 64 bits");
  size_t data_off = offset + header_len;
  if (need > b.size() - data_off)
    return bad("data is truncated: shape " + shape.ToString() + " needs " + std::to_string(need) + " bytes, file has " +
               std::to_string(b.size() - data_off));
  return HostTensor::FromBytes(dt, shape, b.data() + data_off, static_cast<size_t>(need));
}

Expected<HostTensor> ReadNpy(const std::string& path) {
  auto bytes = ReadRegularFile(path, ".npy file");
  if (!bytes.ok()) return bytes.status();
  return ParseNpy(bytes.value(), path);
}

Status WriteNpy(const std::string& path, const HostTensor& t) {
  std::string descr = NpyDescr(t.dtype());
  if (descr.empty()) return InvalidArgument(std::string("cannot write dtype ") + DataTypeName(t.dtype()) + " to .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().GetDimNum(); ++i) shape += std::to_string(t.shape().GetDim(i)) + ",";
  if (t.shape().GetDimNum() > 1) shape.pop_back();
  shape += ")";
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) return IoError("cannot write '" + path + "'");
  char pre[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<char>(h.size() & 0xFF), static_cast<char>(h.size() >> 8)};
  f.write(pre, 10);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
  if (!f) return IoError("failed writing '" + path + "'");
  return Status::Ok();
}

}  // namespace weft::internal
