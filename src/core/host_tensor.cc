#include <cstdlib>
#include <stdexcept>

#include "weft/weft.h"

namespace weft {

void ThrowStatus(const Status& s) { throw std::runtime_error(s.message()); }

void HostTensor::Free::operator()(uint8_t* p) const { std::free(p); }

HostTensor::HostTensor(DataType dtype, const Shape& shape) : dtype_(dtype), shape_(shape) {
  int64_t n = shape.GetShapeSize();
  bytes_ = n > 0 ? static_cast<size_t>(n) * DataTypeSize(dtype) : 0;
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
  HostTensor t(dtype, shape);
  if (bytes != t.bytes())
    return InvalidArgument("tensor " + std::string(DataTypeName(dtype)) + shape.ToString() + " needs " +
                           std::to_string(t.bytes()) + " bytes, got " + std::to_string(bytes));
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
