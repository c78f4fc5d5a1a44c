// A node's attributes as operator callbacks read them: RuntimeAttrs (by index as in GE, or by
// name), GE's TypedContinuousVector for lists, and ListView. Part of the header-only SDK;
// included by weft/custom_op.h.
//
//   const RuntimeAttrs* attrs = ctx->GetAttrs();
//   const float* alpha = attrs->GetFloat(0);                      // GE: by REG_OP index
//   const TypedContinuousVector<int64_t>* axes = attrs->GetListInt("axes");   // or by name
#ifndef WEFT_RUNTIME_ATTRS_H_
#define WEFT_RUNTIME_ATTRS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "weft/attr_value.h"
#include "weft/c/weft_plugin.h"
#include "weft/types.h"

namespace weft {

// A list attribute in place (GE's gert::TypedContinuousVector<T>): what the list getters point
// to, valid while the callback runs. T is int64_t (ListInt), float (ListFloat), const char*
// (ListString) or uint8_t (ListBool, 0 or 1).
//   const TypedContinuousVector<int64_t>* pads = attrs->GetListInt(0);
//   if (pads == nullptr) return GRAPH_FAILED;
//   for (int64_t p : *pads) ...
template <typename T>
class TypedContinuousVector : private WeftAttrValue {
 public:
  size_t GetSize() const { return static_cast<size_t>(count); }
  size_t GetCapacity() const { return GetSize(); }
  const T* GetData() const {
    if constexpr (std::is_same<T, int64_t>::value) return ints;
    else if constexpr (std::is_same<T, float>::value) return floats;
    else if constexpr (std::is_same<T, const char*>::value) return strings;
    else {
      static_assert(std::is_same<T, uint8_t>::value,
                    "TypedContinuousVector<T>: T is int64_t, float, const char* or uint8_t");
      return bools;
    }
  }
  size_t size() const { return GetSize(); }
  const T* data() const { return GetData(); }
  const T* begin() const { return GetData(); }
  const T* end() const { return GetData() + GetSize(); }
  const T& operator[](size_t i) const { return GetData()[i]; }
  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }

  static const TypedContinuousVector* View(const WeftAttrValue* a) {
    return static_cast<const TypedContinuousVector*>(a);
  }
};

// A list by value: a pointer and a size, empty for a missing list. Converts from what the list
// getters return, so `ListView<int64_t> axes = attrs->GetListInt("axes");` never dereferences
// nullptr.
template <typename T>
class ListView {
 public:
  ListView() = default;
  ListView(const T* d, size_t n) : data_(d), size_(n) {}
  ListView(const TypedContinuousVector<T>* v)  // NOLINT: implicit by design
      : data_(v ? v->GetData() : nullptr), size_(v ? v->GetSize() : 0) {}
  size_t GetSize() const { return size_; }
  const T* GetData() const { return data_; }
  size_t size() const { return size_; }
  const T* data() const { return data_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& operator[](size_t i) const { return data_[i]; }
  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

// Hidden: each shared library keeps its own instantiations even when two libraries define
// classes with the same name.
namespace detail __attribute__((visibility("hidden"))) {

// How RuntimeAttrs::GetAttrPointer<T> reads an attribute: its type and where the value lies.
template <typename T>
struct AttrTraits {
  static constexpr bool kSupported = false;
};
#define WEFT_ATTR_TRAITS(T, TYPE, EXPR)                                     \
  template <>                                                               \
  struct AttrTraits<T> {                                                    \
    static constexpr bool kSupported = true;                                \
    static constexpr WeftAttrType kType = TYPE;                             \
    static const T* Get(const WeftAttrValue* a) { return EXPR; }            \
  }
WEFT_ATTR_TRAITS(int64_t, WEFT_ATTR_INT, &a->i);
WEFT_ATTR_TRAITS(float, WEFT_ATTR_FLOAT, &a->f);
WEFT_ATTR_TRAITS(bool, WEFT_ATTR_BOOL, reinterpret_cast<const bool*>(&a->b));
WEFT_ATTR_TRAITS(char, WEFT_ATTR_STRING, a->s);
WEFT_ATTR_TRAITS(DataType, WEFT_ATTR_TYPE, reinterpret_cast<const DataType*>(&a->i));
WEFT_ATTR_TRAITS(Tensor, WEFT_ATTR_TENSOR, Tensor::View(a->tensor));
#define WEFT_LIST_ATTR_TRAITS(E, TYPE) \
  WEFT_ATTR_TRAITS(TypedContinuousVector<E>, TYPE, TypedContinuousVector<E>::View(a))
WEFT_LIST_ATTR_TRAITS(int64_t, WEFT_ATTR_LIST_INT);
WEFT_LIST_ATTR_TRAITS(float, WEFT_ATTR_LIST_FLOAT);
WEFT_LIST_ATTR_TRAITS(const char*, WEFT_ATTR_LIST_STRING);
WEFT_LIST_ATTR_TRAITS(uint8_t, WEFT_ATTR_LIST_BOOL);
#undef WEFT_LIST_ATTR_TRAITS
#undef WEFT_ATTR_TRAITS

// Edits between two names, ignoring ASCII case: insertions, deletions, substitutions and swaps
// of adjacent characters count one each (as the engine's own "did you mean" suggestions).
inline size_t NameDistance(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t best = std::min(prev[j] + 1, cur[j - 1] + 1);
      best = std::min(best, prev[j - 1] + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1));
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        best = std::min(best, prev2[j - 2] + 1);
      cur[j] = best;
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

struct AttrErrors;

}  // namespace detail

// Attributes of the node, in REG_OP order with defaults filled in.
//
// By index (GE): nullptr when the index is out of range or the attribute has another type.
// By name (Weft): nullptr in the same cases, and then the reason is recorded as the callback's
// error (the engine adds op type and node): a name the op does not have, with the nearest name
// and the op's attributes; or the attribute's real type. A callback that returns GRAPH_FAILED on
// nullptr thus explains itself; one that carries on and succeeds leaves no error behind. To ask
// whether an optional name exists, use IndexOf.
//   const float* eps = ctx->GetAttrs()->GetFloat("epsilon");
//   if (eps == nullptr) return GRAPH_FAILED;   // "... Execute failed: the op has no attribute ..."
class RuntimeAttrs {
 public:
  explicit RuntimeAttrs(const WeftKernelContext* c) : c_(c) {}
  size_t GetAttrNum() const { return c_->num_attrs; }
  const char* GetAttrName(size_t i) const { return i < c_->num_attrs ? c_->attr_names[i] : nullptr; }

  // Attribute `i` as T (GE's GetAttrPointer): T is int64_t (Int), float (Float), bool (Bool),
  // char (String: the const char*), DataType (Type), Tensor (Tensor) or TypedContinuousVector of
  // int64_t, float, const char* or uint8_t (the lists).
  template <typename T>
  const T* GetAttrPointer(size_t i) const {
    static_assert(detail::AttrTraits<T>::kSupported,
                  "GetAttrPointer<T>: T is int64_t, float, bool, char, DataType, Tensor or TypedContinuousVector<...>");
    const WeftAttrValue* a = At(i, detail::AttrTraits<T>::kType);
    return a ? detail::AttrTraits<T>::Get(a) : nullptr;
  }
  // The attribute called `n` as T; on nullptr the reason is recorded (see above).
  template <typename T>
  const T* GetAttrPointer(std::string_view n) const {
    static_assert(detail::AttrTraits<T>::kSupported,
                  "GetAttrPointer<T>: T is int64_t, float, bool, char, DataType, Tensor or TypedContinuousVector<...>");
    const WeftAttrValue* a = Find(n, detail::AttrTraits<T>::kType);
    return a ? detail::AttrTraits<T>::Get(a) : nullptr;
  }

  const int64_t* GetInt(size_t i) const { return GetAttrPointer<int64_t>(i); }
  const float* GetFloat(size_t i) const { return GetAttrPointer<float>(i); }
  const bool* GetBool(size_t i) const { return GetAttrPointer<bool>(i); }
  const char* GetStr(size_t i) const { return GetAttrPointer<char>(i); }
  const DataType* GetDataType(size_t i) const { return GetAttrPointer<DataType>(i); }
  const Tensor* GetTensor(size_t i) const { return GetAttrPointer<Tensor>(i); }
  const TypedContinuousVector<int64_t>* GetListInt(size_t i) const {
    return GetAttrPointer<TypedContinuousVector<int64_t>>(i);
  }
  const TypedContinuousVector<float>* GetListFloat(size_t i) const {
    return GetAttrPointer<TypedContinuousVector<float>>(i);
  }
  const TypedContinuousVector<const char*>* GetListString(size_t i) const {
    return GetAttrPointer<TypedContinuousVector<const char*>>(i);
  }
  const TypedContinuousVector<uint8_t>* GetListBool(size_t i) const {
    return GetAttrPointer<TypedContinuousVector<uint8_t>>(i);
  }

  const int64_t* GetInt(std::string_view n) const { return GetAttrPointer<int64_t>(n); }
  const float* GetFloat(std::string_view n) const { return GetAttrPointer<float>(n); }
  const bool* GetBool(std::string_view n) const { return GetAttrPointer<bool>(n); }
  const char* GetStr(std::string_view n) const { return GetAttrPointer<char>(n); }
  const DataType* GetDataType(std::string_view n) const { return GetAttrPointer<DataType>(n); }
  const Tensor* GetTensor(std::string_view n) const { return GetAttrPointer<Tensor>(n); }
  const TypedContinuousVector<int64_t>* GetListInt(std::string_view n) const {
    return GetAttrPointer<TypedContinuousVector<int64_t>>(n);
  }
  const TypedContinuousVector<float>* GetListFloat(std::string_view n) const {
    return GetAttrPointer<TypedContinuousVector<float>>(n);
  }
  const TypedContinuousVector<const char*>* GetListString(std::string_view n) const {
    return GetAttrPointer<TypedContinuousVector<const char*>>(n);
  }
  const TypedContinuousVector<uint8_t>* GetListBool(std::string_view n) const {
    return GetAttrPointer<TypedContinuousVector<uint8_t>>(n);
  }

  // Index of the attribute called `n`, or GetAttrNum() when there is none. Records nothing.
  size_t IndexOf(std::string_view n) const {
    for (uint32_t i = 0; i < c_->num_attrs; ++i)
      if (NameIs(c_->attr_names[i], n)) return i;
    return c_->num_attrs;
  }

 private:
  friend struct detail::AttrErrors;
  // name == n, stopping at the first difference (no strlen of every name looked past).
  static bool NameIs(const char* name, std::string_view n) {
    if (name == nullptr) return false;
    size_t k = 0;
    for (; k < n.size(); ++k)
      if (name[k] != n[k]) return false;  // a shorter name stops at its terminator
    return name[k] == '\0';
  }
  const WeftAttrValue* At(size_t i, WeftAttrType t) const {
    if (i >= c_->num_attrs || c_->attrs[i] == nullptr || c_->attrs[i]->type != t) return nullptr;
    return c_->attrs[i];
  }
  const WeftAttrValue* Find(std::string_view n, WeftAttrType t) const {
    size_t i = IndexOf(n);
    if (i < c_->num_attrs && (c_->attrs[i] == nullptr || c_->attrs[i]->type == t)) return c_->attrs[i];
    Report(n, t, i);
    return nullptr;
  }
  // Records why a name getter gave nullptr (off the fast path: only on a mistake).
  void Report(std::string_view n, WeftAttrType want, size_t i) const {
    if (c_->api == nullptr || !WEFT_HOST_API_HAS(c_->api, set_error) || c_->api->set_error == nullptr) return;
    std::string name(n), msg;
    if (i < c_->num_attrs) {
      msg = "attribute '" + name + "' is " + AttrTypeName(static_cast<WeftAttrType>(c_->attrs[i]->type)) +
            ", read as " + AttrTypeName(want);
    } else {
      msg = "the op has no attribute '" + name + "' (read as " + AttrTypeName(want) + ")";
      const char* nearest = nullptr;
      size_t best = 0;
      for (uint32_t k = 0; k < c_->num_attrs; ++k) {
        std::string_view cand = c_->attr_names[k];
        size_t d = detail::NameDistance(n, cand);
        if (d > std::max(n.size(), cand.size()) / 3 || (nearest != nullptr && d >= best)) continue;
        nearest = c_->attr_names[k];
        best = d;
      }
      if (nearest) msg += "; did you mean '" + std::string(nearest) + "'?";
    }
    if (c_->num_attrs == 0) {
      msg += "; it takes no attributes";
    } else {
      msg += (msg.back() == '?' ? " " : ". ") + std::string("Its attributes: ");
      for (uint32_t k = 0; k < c_->num_attrs; ++k)
        msg += std::string(k ? ", " : "") + c_->attr_names[k] + " (" +
               (c_->attrs[k] ? AttrTypeName(static_cast<WeftAttrType>(c_->attrs[k]->type)) : "unset") + ")";
    }
    // set_error does not modify the context; it takes it non-const for the engine's sake.
    c_->api->set_error(const_cast<WeftKernelContext*>(c_), msg.c_str());
    reported_ = true;
  }
  const WeftKernelContext* c_;
  mutable bool reported_ = false;
};

}  // namespace weft

#endif  // WEFT_RUNTIME_ATTRS_H_
