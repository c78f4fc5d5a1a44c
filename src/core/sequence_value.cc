// Sequence and optional values as HostTensors (weft/sequence.h holds the encoding).
#include "weft/sequence.h"
#include "weft/weft.h"

namespace weft {
namespace {

uint64_t RecordBytesOf(const HostTensor& t) {
  return ValueRecordBytes(static_cast<int64_t>(t.shape().GetDimNum()), static_cast<uint64_t>(t.bytes()));
}

}  // namespace

Expected<HostTensor> MakeSequence(DataType elem, const std::vector<HostTensor>& items) {
  if (!IsTensorType(elem)) return InvalidArgument(std::string("a sequence holds tensors; ") + DataTypeName(elem) + " is not a tensor type");
  uint64_t bytes = kValueHeaderBytes;
  for (size_t k = 0; k < items.size(); ++k) {
    if (items[k].dtype() != elem)
      return InvalidArgument("sequence item " + std::to_string(k) + " is " + DataTypeName(items[k].dtype()) + "; the sequence holds " +
                             DataTypeName(elem));
    bytes += RecordBytesOf(items[k]);
  }
  const DataType type = SequenceOf(elem);
  HostTensor out(type, Shape({static_cast<int64_t>(bytes)}));
  uint8_t* p = WriteValueHeader(out.data_as<uint8_t>(), type, items.size());
  for (auto& t : items) p = WriteValueRecord(p, t.dtype(), t.shape(), t.data(), t.bytes());
  return out;
}

Expected<HostTensor> MakeOptional(DataType type, const HostTensor* value) {
  if (!IsTensorType(type) && !IsSequenceType(type))
    return InvalidArgument(std::string("an optional holds a tensor or a sequence; ") + DataTypeName(type) + " is neither");
  const DataType opt = OptionalOf(type);
  if (!value) {
    HostTensor out(opt, Shape({static_cast<int64_t>(kValueHeaderBytes)}));
    WriteValueHeader(out.data_as<uint8_t>(), opt, 0);
    return out;
  }
  if (value->dtype() != type)
    return InvalidArgument(std::string("the optional holds ") + DataTypeName(type) + ", given " + DataTypeName(value->dtype()));
  if (IsSequenceType(type)) {
    ValueView check;
    std::string why;
    if (!check.Parse(value->data(), value->bytes(), type, &why)) return InvalidArgument(why);
  }
  HostTensor out(opt, Shape({static_cast<int64_t>(kValueHeaderBytes + RecordBytesOf(*value))}));
  uint8_t* p = WriteValueHeader(out.data_as<uint8_t>(), opt, 1);
  WriteValueRecord(p, value->dtype(), value->shape(), value->data(), value->bytes());
  return out;
}

Expected<std::vector<HostTensor>> ValueItems(const HostTensor& value) {
  if (!IsSequenceType(value.dtype()) && !IsOptionalType(value.dtype()))
    return InvalidArgument(std::string("ValueItems takes a sequence or an optional, not ") + DataTypeName(value.dtype()));
  ValueView v;
  std::string why;
  if (!v.Parse(value.data(), value.bytes(), value.dtype(), &why)) return InvalidArgument(why);
  std::vector<HostTensor> out;
  out.reserve(v.size());
  for (auto& r : v.records()) {
    auto t = HostTensor::FromBytes(r.dtype, r.shape, r.data, static_cast<size_t>(r.nbytes));
    if (!t.ok()) return t.status();
    out.push_back(std::move(t).value());
  }
  return out;
}

}  // namespace weft
