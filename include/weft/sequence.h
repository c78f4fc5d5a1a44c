// Sequence and optional values (ONNX's sequence<T> and optional<T>) as tensors of bytes.
//
// A value of type SequenceOf(E) or OptionalOf(V) (weft/types.h) is a 1-D tensor whose bytes
// hold, in host byte order and 8-byte aligned:
//
//   header:  uint32 magic 'WSQ1', int32 the value's own type, uint64 count
//   count records, each:  int32 dtype, int32 ndim, int64 dims[ndim], uint64 nbytes,
//                         nbytes of data, zero padding to a multiple of 8
//
// A sequence's records are its tensors, all of type E. An optional holds 0 or 1 records: a
// tensor of type V, or, when V is a sequence type, that sequence's own bytes as a record of
// type V and shape [nbytes]. Readers check everything (ValueView::Parse), since a value may come
// from a file or a caller. Header-only, standard library only.
#ifndef WEFT_SEQUENCE_H_
#define WEFT_SEQUENCE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "weft/types.h"

namespace weft {

constexpr uint32_t kValueMagic = 0x31515357u;  // "WSQ1"
constexpr uint64_t kValueHeaderBytes = 16;

inline uint64_t ValuePad8(uint64_t n) { return (n + 7) & ~uint64_t(7); }

// Bytes one record of `ndim` dims and `nbytes` of data takes; 0 when it would overflow.
inline uint64_t ValueRecordBytes(int64_t ndim, uint64_t nbytes) {
  if (nbytes > (uint64_t(1) << 62)) return 0;
  return 8 + 8 * static_cast<uint64_t>(ndim) + 8 + ValuePad8(nbytes);
}

// One record of a parsed value: its type, shape, data, and where the whole record lies.
struct ValueRecord {
  DataType dtype = DT_UNDEFINED;
  Shape shape;
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  const uint8_t* begin = nullptr;  // the record's own bytes, for copying it whole
  uint64_t record_bytes = 0;
};

// A checked view of an encoded sequence or optional value.
class ValueView {
 public:
  // Parses `bytes` bytes at `data` as a value of type `type`. On failure returns false and
  // says why in *error.
  bool Parse(const void* data, uint64_t bytes, DataType type, std::string* error) {
    records_.clear();
    type_ = type;
    const auto* p = static_cast<const uint8_t*>(data);
    auto fail = [&](const std::string& why) {
      if (error) *error = std::string("malformed ") + DataTypeName(type) + " value: " + why;
      records_.clear();
      return false;
    };
    if (!IsSequenceType(type) && !IsOptionalType(type)) return fail("not a sequence or optional type");
    if (bytes < kValueHeaderBytes || !p) return fail("shorter than its 16-byte header");
    uint32_t magic;
    int32_t own;
    uint64_t count;
    std::memcpy(&magic, p, 4);
    std::memcpy(&own, p + 4, 4);
    std::memcpy(&count, p + 8, 8);
    if (magic != kValueMagic) return fail("bad magic number");
    if (own != type) return fail(std::string("it says it is a ") + (IsSequenceType(static_cast<DataType>(own)) ||
                                                                    IsOptionalType(static_cast<DataType>(own))
                                                                  ? DataTypeName(static_cast<DataType>(own))
                                                                  : "value of unknown type"));
    if (IsOptionalType(type) && count > 1) return fail("an optional holds at most one value");
    if (count > (bytes - kValueHeaderBytes) / 16) return fail("its count, " + std::to_string(count) + ", exceeds its size");
    DataType want = ElementTypeOf(type);
    uint64_t at = kValueHeaderBytes;
    records_.reserve(static_cast<size_t>(count));
    for (uint64_t k = 0; k < count; ++k) {
      std::string which = "record " + std::to_string(k) + ": ";
      if (bytes - at < 8) return fail(which + "truncated");
      int32_t dt, ndim;
      std::memcpy(&dt, p + at, 4);
      std::memcpy(&ndim, p + at + 4, 4);
      if (dt != want) return fail(which + "has type " + std::to_string(dt) + ", not " + DataTypeName(want));
      if (ndim < 0 || ndim > WEFT_MAX_DIMS) return fail(which + "has rank " + std::to_string(ndim));
      if (bytes - at - 8 < 8 * static_cast<uint64_t>(ndim) + 8) return fail(which + "truncated");
      ValueRecord r;
      r.dtype = want;
      r.begin = p + at;
      for (int32_t d = 0; d < ndim; ++d) {
        int64_t v;
        std::memcpy(&v, p + at + 8 + 8 * d, 8);
        r.shape.AppendDim(v);
      }
      std::memcpy(&r.nbytes, p + at + 8 + 8 * ndim, 8);
      uint64_t expect = 0;
      size_t elem = IsTensorType(want) ? DataTypeSize(want) : 1;
      if (!r.shape.GetCheckedBytes(elem, &expect)) return fail(which + "has shape " + r.shape.ToString());
      if (IsSequenceType(want) && ndim != 1) return fail(which + "a nested sequence must be 1-D");
      if (expect != r.nbytes) return fail(which + "holds " + std::to_string(r.nbytes) + " bytes; its shape needs " + std::to_string(expect));
      uint64_t head = 8 + 8 * static_cast<uint64_t>(ndim) + 8;
      if (bytes - at - head < ValuePad8(r.nbytes) || ValuePad8(r.nbytes) < r.nbytes) return fail(which + "truncated");
      r.data = p + at + head;
      r.record_bytes = head + ValuePad8(r.nbytes);
      at += r.record_bytes;
      if (IsSequenceType(want)) {  // the nested value must be sound too
        ValueView inner;
        std::string why;
        if (!inner.Parse(r.data, r.nbytes, want, &why)) return fail(which + why);
      }
      records_.push_back(r);
    }
    if (at != bytes) return fail(std::to_string(bytes - at) + " bytes after its last record");
    return true;
  }
  DataType type() const { return type_; }
  size_t size() const { return records_.size(); }
  const ValueRecord& operator[](size_t k) const { return records_[k]; }
  const std::vector<ValueRecord>& records() const { return records_; }

 private:
  DataType type_ = DT_UNDEFINED;
  std::vector<ValueRecord> records_;
};

// Writing: the caller sizes the buffer with ValueBytes, then writes the header and records.
inline uint8_t* WriteValueHeader(uint8_t* p, DataType type, uint64_t count) {
  uint32_t magic = kValueMagic;
  int32_t own = type;
  std::memcpy(p, &magic, 4);
  std::memcpy(p + 4, &own, 4);
  std::memcpy(p + 8, &count, 8);
  return p + kValueHeaderBytes;
}
inline uint8_t* WriteValueRecord(uint8_t* p, DataType dtype, const Shape& shape, const void* data, uint64_t nbytes) {
  int32_t dt = dtype, ndim = static_cast<int32_t>(shape.GetDimNum());
  std::memcpy(p, &dt, 4);
  std::memcpy(p + 4, &ndim, 4);
  p += 8;
  for (int32_t d = 0; d < ndim; ++d) {
    int64_t v = shape.GetDim(static_cast<size_t>(d));
    std::memcpy(p, &v, 8);
    p += 8;
  }
  std::memcpy(p, &nbytes, 8);
  p += 8;
  if (nbytes) std::memcpy(p, data, static_cast<size_t>(nbytes));
  uint64_t padded = ValuePad8(nbytes);
  if (padded > nbytes) std::memset(p + nbytes, 0, static_cast<size_t>(padded - nbytes));
  return p + padded;
}

}  // namespace weft

#endif  // WEFT_SEQUENCE_H_
