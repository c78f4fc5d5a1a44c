// An owned attribute value, convertible to the C ABI's WeftAttrValue.
#ifndef WEFT_ATTR_VALUE_H_
#define WEFT_ATTR_VALUE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "weft/types.h"

namespace weft {

// Holds one attribute of any WeftAttrType. c() gives a C view that stays valid until this object
// is modified, moved or destroyed.
class AttrValue {
 public:
  AttrValue() = default;
  AttrValue(const AttrValue& o) { *this = o; }
  AttrValue& operator=(const AttrValue& o) {
    type_ = o.type_; i_ = o.i_; f_ = o.f_; s_ = o.s_; ints_ = o.ints_; floats_ = o.floats_;
    strings_ = o.strings_; bools_ = o.bools_; tensor_bytes_ = o.tensor_bytes_;
    tensor_ = o.tensor_;
    return *this;
  }

  static AttrValue Int(int64_t v) { AttrValue a(WEFT_ATTR_INT); a.i_ = v; return a; }
  static AttrValue Float(float v) { AttrValue a(WEFT_ATTR_FLOAT); a.f_ = v; return a; }
  static AttrValue Bool(bool v) { AttrValue a(WEFT_ATTR_BOOL); a.i_ = v ? 1 : 0; return a; }
  static AttrValue String(std::string v) { AttrValue a(WEFT_ATTR_STRING); a.s_ = std::move(v); return a; }
  static AttrValue Type(DataType v) { AttrValue a(WEFT_ATTR_TYPE); a.i_ = v; return a; }
  static AttrValue ListInt(std::vector<int64_t> v) {
    AttrValue a(WEFT_ATTR_LIST_INT); a.ints_ = std::move(v); return a;
  }
  static AttrValue ListFloat(std::vector<float> v) {
    AttrValue a(WEFT_ATTR_LIST_FLOAT); a.floats_ = std::move(v); return a;
  }
  static AttrValue ListString(std::vector<std::string> v) {
    AttrValue a(WEFT_ATTR_LIST_STRING); a.strings_ = std::move(v); return a;
  }
  static AttrValue ListBool(std::vector<bool> v) {
    AttrValue a(WEFT_ATTR_LIST_BOOL);
    for (bool b : v) a.bools_.push_back(b ? 1 : 0);
    return a;
  }
  // A tensor attribute; `bytes` must hold shape.GetShapeSize() * DataTypeSize(dt) bytes.
  static AttrValue TensorValue(DataType dt, const Shape& shape, std::vector<uint8_t> bytes) {
    AttrValue a(WEFT_ATTR_TENSOR);
    a.tensor_.dtype = dt;
    *Shape::View(&a.tensor_.shape) = shape;
    a.tensor_bytes_ = std::move(bytes);
    return a;
  }

  WeftAttrType type() const { return type_; }
  bool empty() const { return type_ == WeftAttrType(0); }
  int64_t i() const { return i_; }
  float f() const { return f_; }
  bool b() const { return i_ != 0; }
  const std::string& s() const { return s_; }
  const std::vector<int64_t>& ints() const { return ints_; }
  const std::vector<float>& floats() const { return floats_; }
  const std::vector<std::string>& strings() const { return strings_; }
  const std::vector<uint8_t>& bools() const { return bools_; }
  const Tensor& tensor() const { return tensor_; }
  const std::vector<uint8_t>& tensor_bytes() const { return tensor_bytes_; }

  // The C view. Rebuilt on each call (cheap); the pointer is into this object.
  const WeftAttrValue* c() const {
    c_ = WeftAttrValue{};
    c_.struct_size = sizeof(WeftAttrValue);
    c_.type = type_;
    c_.i = i_;
    c_.f = f_;
    c_.b = static_cast<uint8_t>(i_ != 0);
    c_.s = s_.c_str();
    switch (type_) {
      case WEFT_ATTR_LIST_INT: c_.count = ints_.size(); c_.ints = ints_.data(); break;
      case WEFT_ATTR_LIST_FLOAT: c_.count = floats_.size(); c_.floats = floats_.data(); break;
      case WEFT_ATTR_LIST_BOOL: c_.count = bools_.size(); c_.bools = bools_.data(); break;
      case WEFT_ATTR_LIST_STRING:
        string_ptrs_.clear();
        for (const auto& s : strings_) string_ptrs_.push_back(s.c_str());
        c_.count = strings_.size();
        c_.strings = string_ptrs_.data();
        break;
      case WEFT_ATTR_TENSOR:
        tensor_.data = const_cast<uint8_t*>(tensor_bytes_.data());
        tensor_.size_bytes = tensor_bytes_.size();
        c_.tensor = &tensor_;
        break;
      default: break;
    }
    return &c_;
  }

  // Human-readable value, for messages and listings.
  std::string ToString() const {
    auto join = [](const auto& v, auto fmt) {
      std::string s = "[";
      for (size_t k = 0; k < v.size(); ++k) s += (k ? "," : "") + fmt(v[k]);
      return s + "]";
    };
    switch (type_) {
      case WEFT_ATTR_INT: return std::to_string(i_);
      case WEFT_ATTR_FLOAT: return std::to_string(f_);
      case WEFT_ATTR_BOOL: return i_ ? "true" : "false";
      case WEFT_ATTR_STRING: return "\"" + s_ + "\"";
      case WEFT_ATTR_TYPE: return DataTypeName(static_cast<DataType>(i_));
      case WEFT_ATTR_LIST_INT: return join(ints_, [](int64_t v) { return std::to_string(v); });
      case WEFT_ATTR_LIST_FLOAT: return join(floats_, [](float v) { return std::to_string(v); });
      case WEFT_ATTR_LIST_BOOL: return join(bools_, [](uint8_t v) { return std::string(v ? "true" : "false"); });
      case WEFT_ATTR_LIST_STRING: return join(strings_, [](const std::string& v) { return "\"" + v + "\""; });
      case WEFT_ATTR_TENSOR:
        return std::string("tensor<") + DataTypeName(tensor_.GetDataType()) + tensor_.GetShape().ToString() + ">";
      default: return "<unset>";
    }
  }

 private:
  explicit AttrValue(WeftAttrType t) : type_(t) {}
  WeftAttrType type_ = WeftAttrType(0);
  int64_t i_ = 0;
  float f_ = 0.f;
  std::string s_;
  std::vector<int64_t> ints_;
  std::vector<float> floats_;
  std::vector<std::string> strings_;
  std::vector<uint8_t> bools_;
  std::vector<uint8_t> tensor_bytes_;
  mutable Tensor tensor_;
  mutable std::vector<const char*> string_ptrs_;
  mutable WeftAttrValue c_{};
};

// Attribute type name as written in REG_OP ("Int", "ListFloat", ...).
inline const char* AttrTypeName(WeftAttrType t) {
  switch (t) {
    case WEFT_ATTR_INT: return "Int";
    case WEFT_ATTR_FLOAT: return "Float";
    case WEFT_ATTR_BOOL: return "Bool";
    case WEFT_ATTR_STRING: return "String";
    case WEFT_ATTR_LIST_INT: return "ListInt";
    case WEFT_ATTR_LIST_FLOAT: return "ListFloat";
    case WEFT_ATTR_LIST_STRING: return "ListString";
    case WEFT_ATTR_TENSOR: return "Tensor";
    case WEFT_ATTR_LIST_BOOL: return "ListBool";
    case WEFT_ATTR_TYPE: return "Type";
    default: return "?";
  }
}

}  // namespace weft

#endif  // WEFT_ATTR_VALUE_H_
