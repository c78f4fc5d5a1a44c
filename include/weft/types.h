// Weft SDK value types: data types, shapes, tensors, 16-bit floats.
//
// Header-only, C++17, standard library only. Names follow GE (`DT_FLOAT`, `gert::Shape`,
// `gert::Tensor`) so operator sources port with include changes only; see weft/compat/ge.h.
#ifndef WEFT_TYPES_H_
#define WEFT_TYPES_H_

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "weft/c/weft_plugin.h"

namespace weft {

using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFu;

enum DataType : int32_t {
  DT_FLOAT = WEFT_DT_FLOAT,
  DT_FLOAT16 = WEFT_DT_FLOAT16,
  DT_INT8 = WEFT_DT_INT8,
  DT_INT32 = WEFT_DT_INT32,
  DT_UINT8 = WEFT_DT_UINT8,
  DT_INT16 = WEFT_DT_INT16,
  DT_UINT16 = WEFT_DT_UINT16,
  DT_UINT32 = WEFT_DT_UINT32,
  DT_INT64 = WEFT_DT_INT64,
  DT_UINT64 = WEFT_DT_UINT64,
  DT_DOUBLE = WEFT_DT_DOUBLE,
  DT_BOOL = WEFT_DT_BOOL,
  DT_BF16 = WEFT_DT_BF16,
  DT_UNDEFINED = WEFT_DT_UNDEFINED,
};

enum Format : int32_t {
  FORMAT_NCHW = WEFT_FORMAT_NCHW,
  FORMAT_NHWC = WEFT_FORMAT_NHWC,
  FORMAT_ND = WEFT_FORMAT_ND,
  FORMAT_NC1HWC0 = WEFT_FORMAT_NC1HWC0,
};

enum TensorPlacement : int32_t {
  kOnHost = WEFT_PLACEMENT_HOST,
  kOnDeviceCuda = WEFT_PLACEMENT_CUDA,
};

// A tensor element type (DT_FLOAT ... DT_BF16), not a sequence, an optional or DT_UNDEFINED.
inline bool IsTensorType(DataType dt) {
  switch (dt) {
    case DT_FLOAT: case DT_FLOAT16: case DT_INT8: case DT_INT32: case DT_UINT8: case DT_INT16: case DT_UINT16:
    case DT_UINT32: case DT_INT64: case DT_UINT64: case DT_DOUBLE: case DT_BOOL: case DT_BF16: return true;
    default: return false;
  }
}
// Sequences and optionals (WEFT_DT_SEQUENCE_BASE, WEFT_DT_OPTIONAL_BASE; weft/sequence.h).
inline bool IsSequenceType(DataType dt) {
  return dt >= WEFT_DT_SEQUENCE_BASE && dt < WEFT_DT_OPTIONAL_BASE && IsTensorType(static_cast<DataType>(dt - WEFT_DT_SEQUENCE_BASE));
}
inline bool IsOptionalType(DataType dt) {
  if (dt < WEFT_DT_OPTIONAL_BASE || dt >= 2 * WEFT_DT_OPTIONAL_BASE) return false;
  DataType inner = static_cast<DataType>(dt - WEFT_DT_OPTIONAL_BASE);
  return IsTensorType(inner) || IsSequenceType(inner);
}
inline DataType SequenceOf(DataType elem) { return static_cast<DataType>(WEFT_DT_SEQUENCE_BASE + elem); }
inline DataType OptionalOf(DataType inner) { return static_cast<DataType>(WEFT_DT_OPTIONAL_BASE + inner); }
// The element type of a sequence, the held type of an optional; DT_UNDEFINED for anything else.
inline DataType ElementTypeOf(DataType dt) {
  if (IsSequenceType(dt)) return static_cast<DataType>(dt - WEFT_DT_SEQUENCE_BASE);
  if (IsOptionalType(dt)) return static_cast<DataType>(dt - WEFT_DT_OPTIONAL_BASE);
  return DT_UNDEFINED;
}

// Bytes per element, 0 for DT_UNDEFINED or an unknown value. A sequence or optional value is a
// tensor of bytes.
inline size_t DataTypeSize(DataType dt) {
  if (IsSequenceType(dt) || IsOptionalType(dt)) return 1;
  switch (dt) {
    case DT_FLOAT: case DT_INT32: case DT_UINT32: return 4;
    case DT_FLOAT16: case DT_BF16: case DT_INT16: case DT_UINT16: return 2;
    case DT_INT8: case DT_UINT8: case DT_BOOL: return 1;
    case DT_INT64: case DT_UINT64: case DT_DOUBLE: return 8;
    default: return 0;
  }
}

// Short lower-case name ("float32", "float16", "int64", ...), as NumPy spells it; a sequence is
// "sequence(float32)", an optional "optional(float32)" or "optional(sequence(int64))".
inline const char* DataTypeName(DataType dt) {
#define WEFT_TYPE_NAMES_(pre, post)                                                                              \
  {pre "float32" post, pre "float16" post, pre "int8" post, pre "int32" post, pre "uint8" post, nullptr,         \
   pre "int16" post, pre "uint16" post, pre "uint32" post, pre "int64" post, pre "uint64" post, pre "float64" post, \
   pre "bool" post}
  static const char* const kSeq[] = WEFT_TYPE_NAMES_("sequence(", ")");
  static const char* const kOpt[] = WEFT_TYPE_NAMES_("optional(", ")");
  static const char* const kOptSeq[] = WEFT_TYPE_NAMES_("optional(sequence(", "))");
#undef WEFT_TYPE_NAMES_
  if (IsSequenceType(dt) || IsOptionalType(dt)) {
    bool opt = IsOptionalType(dt), nested = opt && IsSequenceType(ElementTypeOf(dt));
    DataType e = nested ? ElementTypeOf(ElementTypeOf(dt)) : ElementTypeOf(dt);
    if (e == DT_BF16) return nested ? "optional(sequence(bfloat16))" : opt ? "optional(bfloat16)" : "sequence(bfloat16)";
    return (nested ? kOptSeq : opt ? kOpt : kSeq)[e];
  }
  switch (dt) {
    case DT_FLOAT: return "float32";
    case DT_FLOAT16: return "float16";
    case DT_BF16: return "bfloat16";
    case DT_DOUBLE: return "float64";
    case DT_INT8: return "int8";
    case DT_UINT8: return "uint8";
    case DT_INT16: return "int16";
    case DT_UINT16: return "uint16";
    case DT_INT32: return "int32";
    case DT_UINT32: return "uint32";
    case DT_INT64: return "int64";
    case DT_UINT64: return "uint64";
    case DT_BOOL: return "bool";
    default: return "undefined";
  }
}

// A shape (GE's gert::Shape). Value type; also viewed in place over WeftShape.
class Shape : public WeftShape {
 public:
  Shape() { ndim = 0; }
  Shape(std::initializer_list<int64_t> d) { Assign(d.begin(), d.size()); }
  explicit Shape(const std::vector<int64_t>& d) { Assign(d.data(), d.size()); }
  explicit Shape(const WeftShape& s) : WeftShape(s) {}

  size_t GetDimNum() const { return static_cast<size_t>(ndim); }
  void SetDimNum(size_t n) { ndim = static_cast<int64_t>(n < WEFT_MAX_DIMS ? n : WEFT_MAX_DIMS); }
  int64_t GetDim(size_t i) const { return i < GetDimNum() ? dims[i] : -1; }
  void SetDim(size_t i, int64_t v) { if (i < WEFT_MAX_DIMS) dims[i] = v; }
  // Appends a dim; false (and no change) when the shape already has WEFT_MAX_DIMS dims.
  bool AppendDim(int64_t v) {
    if (ndim >= WEFT_MAX_DIMS) return false;
    dims[ndim++] = v;
    return true;
  }
  bool IsScalar() const { return ndim == 0; }
  bool IsUnknown() const {
    for (int64_t i = 0; i < ndim; ++i) if (dims[i] < 0) return true;
    return false;
  }
  // Number of elements; -1 if any dim is unknown.
  int64_t GetShapeSize() const {
    int64_t n = 1;
    for (int64_t i = 0; i < ndim; ++i) {
      if (dims[i] < 0) return -1;
      n *= dims[i];
    }
    return n;
  }
  // Bytes a tensor of this shape takes with `elem_size`-byte elements, computed without
  // overflow: false when a dim is negative or a running product (in GetShapeSize's order)
  // exceeds kMaxTensorBytes, so GetShapeSize() cannot overflow on a shape that passes. Use it
  // (not GetShapeSize() * size) wherever a size comes from data you did not produce.
  static constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 62;
  bool GetCheckedBytes(size_t elem_size, uint64_t* bytes) const {
    uint64_t n = elem_size == 0 ? 1 : elem_size;
    for (int64_t i = 0; i < ndim; ++i) {
      if (dims[i] < 0) return false;
      uint64_t d = static_cast<uint64_t>(dims[i]);
      if (d != 0 && n > kMaxTensorBytes / d) return false;
      n *= d;
    }
    *bytes = elem_size == 0 ? 0 : n;
    return true;
  }
  std::vector<int64_t> ToVector() const { return std::vector<int64_t>(dims, dims + ndim); }
  std::string ToString() const {
    std::string s = "[";
    for (int64_t i = 0; i < ndim; ++i) s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
  }
  bool operator==(const Shape& o) const {
    if (ndim != o.ndim) return false;
    for (int64_t i = 0; i < ndim; ++i) if (dims[i] != o.dims[i]) return false;
    return true;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }

  static Shape* View(WeftShape* s) { return static_cast<Shape*>(s); }
  static const Shape* View(const WeftShape* s) { return static_cast<const Shape*>(s); }

 private:
  void Assign(const int64_t* d, size_t n) {
    SetDimNum(n);
    for (int64_t i = 0; i < ndim; ++i) dims[i] = d[i];
  }
};

// GE keeps an origin and a storage shape; Weft has one layout, so both are the same shape.
class StorageShape {
 public:
  StorageShape() = default;
  StorageShape(std::initializer_list<int64_t> origin, std::initializer_list<int64_t>) : s_(origin) {}
  StorageShape(const Shape& s) : s_(s) {}  // NOLINT: implicit by design, as in GE
  const Shape& GetOriginShape() const { return s_; }
  const Shape& GetStorageShape() const { return s_; }
  Shape& MutableOriginShape() { return s_; }
  Shape& MutableStorageShape() { return s_; }

 private:
  Shape s_;
};

// The plain layout a storage format stands for: FORMAT_NCHW for the channel-blocked
// FORMAT_NC1HWC0 and for FORMAT_NHWC, the pixel-row layout the engine plans for a 4-D value
// (whose shapes stay the logical [N, C, H, W]), otherwise the format itself.
inline Format OriginFormatOf(Format storage) { return storage == FORMAT_NC1HWC0 || storage == FORMAT_NHWC ? FORMAT_NCHW : storage; }

// A tensor's two layouts (GE's gert::StorageFormat): the origin format the graph sees and the
// storage format of its buffer. They differ only for a layout the engine planned (see OriginFormatOf).
class StorageFormat {
 public:
  StorageFormat() = default;
  StorageFormat(Format origin, Format storage) : origin_(origin), storage_(storage) {}
  Format GetOriginFormat() const { return origin_; }
  Format GetStorageFormat() const { return storage_; }
  void SetOriginFormat(Format f) { origin_ = f; }
  void SetStorageFormat(Format f) { storage_ = f; }
  bool operator==(const StorageFormat& o) const { return origin_ == o.origin_ && storage_ == o.storage_; }
  bool operator!=(const StorageFormat& o) const { return !(*this == o); }

 private:
  Format origin_ = FORMAT_ND;
  Format storage_ = FORMAT_ND;
};

// A tensor handed to an operator (GE's gert::Tensor). Owned by the engine; operators get
// pointers to it and never copy it.
class Tensor : public WeftTensor {
 public:
  Tensor() {
    std::memset(static_cast<WeftTensor*>(this), 0, sizeof(WeftTensor));
    struct_size = sizeof(WeftTensor);
    dtype = WEFT_DT_UNDEFINED;
    format = WEFT_FORMAT_ND;
  }
  const Shape& GetShape() const { return *Shape::View(&shape); }
  Shape& MutableShape() { return *Shape::View(&shape); }
  const Shape& GetStorageShape() const { return GetShape(); }
  const Shape& GetOriginShape() const { return GetShape(); }
  int64_t GetShapeSize() const { return GetShape().GetShapeSize(); }
  DataType GetDataType() const { return static_cast<DataType>(dtype); }
  void SetDataType(DataType dt) { dtype = dt; }
  Format GetFormat() const { return static_cast<Format>(format); }
  // GE's pair: the storage format is GetFormat(); the origin format is its plain layout.
  Format GetStorageFormat() const { return GetFormat(); }
  Format GetOriginFormat() const { return OriginFormatOf(GetFormat()); }
  TensorPlacement GetPlacement() const { return static_cast<TensorPlacement>(placement); }
  void* GetAddr() { return data; }
  const void* GetAddr() const { return data; }
  template <typename T> T* GetData() { return static_cast<T*>(data); }
  template <typename T> const T* GetData() const { return static_cast<const T*>(data); }
  size_t GetSize() const { return static_cast<size_t>(size_bytes); }
  // Bytes the current shape and type occupy.
  size_t GetByteCount() const {
    int64_t n = GetShapeSize();
    return n < 0 ? 0 : static_cast<size_t>(n) * DataTypeSize(GetDataType());
  }

  static Tensor* View(WeftTensor* t) { return static_cast<Tensor*>(t); }
  static const Tensor* View(const WeftTensor* t) { return static_cast<const Tensor*>(t); }
};

// IEEE 754 binary16, stored as bits.
struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float f) : bits(FromFloat(f)) {}
  explicit operator float() const { return ToFloat(bits); }

  static uint16_t FromFloat(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x7FFFFFu;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xFF);
    if (exp == 0xFF) return static_cast<uint16_t>(sign | 0x7C00u | (mant ? 0x200u : 0));
    int32_t e = exp - 127 + 15;
    if (e >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00u);
    if (e <= 0) {
      if (e < -10) return static_cast<uint16_t>(sign);
      mant |= 0x800000u;
      uint32_t shift = static_cast<uint32_t>(14 - e);
      uint32_t half = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1u))) ++half;
      return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: ok
    return static_cast<uint16_t>(half);
  }
  static float ToFloat(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    uint32_t x;
    if (exp == 0) {
      if (mant == 0) {
        x = sign;
      } else {
        int32_t e = -1;
        do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
        x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FFu) << 13);
      }
    } else if (exp == 0x1F) {
      x = sign | 0x7F800000u | (mant << 13);
    } else {
      x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

// bfloat16, stored as bits; conversion rounds to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) { bits = static_cast<uint16_t>((x >> 16) | 0x40u); return; }
    x += 0x7FFFu + ((x >> 16) & 1u);
    bits = static_cast<uint16_t>(x >> 16);
  }
  explicit operator float() const {
    uint32_t x = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
};

}  // namespace weft

#endif  // WEFT_TYPES_H_
