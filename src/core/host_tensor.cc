#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "weft/weft.h"

namespace weft {

void ThrowStatus(const Status& s) { throw std::runtime_error(s.message()); }

void HostTensor::Free::operator()(uint8_t* p) const { std::free(p); }

namespace {
// Bytes of a dtype x shape tensor; false when a dim is unknown or the size overflows.
bool CheckedBytes(DataType dtype, const Shape& shape, size_t* bytes) {
  uint64_t b = 0;
  if (!shape.GetCheckedBytes(DataTypeSize(dtype), &b)) return false;
  *bytes = static_cast<size_t>(b);
  return true;
}
}  // namespace

HostTensor::HostTensor(DataType dtype, const Shape& shape) : dtype_(dtype), shape_(shape) {
  // Unknown dims make an empty tensor; a size past the address space can never be allocated.
  bytes_ = 0;
  if (!shape.IsUnknown() && !CheckedBytes(dtype, shape, &bytes_)) throw std::bad_alloc();
  size_t alloc = (bytes_ + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, alloc)));
  if (!data_) throw std::bad_alloc();
  std::memset(data_.get(), 0, alloc);
}

HostTensor::HostTensor(const HostTensor& o) : HostTensor() { *this = o; }

HostTensor& HostTensor::operator=(const HostTensor& o) {
  if (this == &o) return *this;
  if (!o.data_) {
    *this = HostTensor();
    return *this;
  }
  HostTensor t(o.dtype_, o.shape_);
  std::memcpy(t.data(), o.data(), o.bytes_);
  *this = std::move(t);
  return *this;
}

Expected<HostTensor> HostTensor::FromBytes(DataType dtype, const Shape& shape, const void* data, size_t bytes) {
  if (shape.IsUnknown()) return InvalidArgument("tensor shape " + shape.ToString() + " has unknown dims");
  if (DataTypeSize(dtype) == 0) return InvalidArgument("tensor has no valid data type");
  size_t need = 0;
  if (!CheckedBytes(dtype, shape, &need))
    return InvalidArgument("tensor " + std::string(DataTypeName(dtype)) + shape.ToString() + " has more bytes than fit in 64 bits");
  if (bytes != need)
    return InvalidArgument("tensor " + std::string(DataTypeName(dtype)) + shape.ToString() + " needs " +
                           std::to_string(need) + " bytes, got " + std::to_string(bytes));
  HostTensor t(dtype, shape);
  if (bytes) std::memcpy(t.data(), data, bytes);
  return t;
}

std::vector<std::string> CapabilityNames(uint64_t caps) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {WEFT_CAP_EAGER_EXECUTE, "EagerExecute"}, {WEFT_CAP_SHAPE_INFER, "ShapeInfer"},
      {WEFT_CAP_COMPILABLE, "Compilable"},      {WEFT_CAP_PORTABLE, "Portable"},
      {WEFT_CAP_ARGS_UPDATER, "ArgsUpdater"},   {WEFT_CAP_EMITTABLE, "Emittable"}};
  std::vector<std::string> out;
  for (auto& [bit, name] : kNames)
    if (caps & bit) out.push_back(name);
  return out;
}

}  // namespace weft
