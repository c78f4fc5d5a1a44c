// libFuzzer target for the .npy reader: any byte string must give a tensor or an error, never a
// crash, hang, leak or out-of-bounds read. Built and run by scripts/fuzz.sh.
#include <cstdint>
#include <string>

#include "core/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto r = weft::internal::ParseNpy(bytes, "fuzz");
  if (r.ok()) {
    const weft::HostTensor& t = r.value();
    volatile uint8_t sink = 0;
    if (t.bytes()) sink = sink + static_cast<const uint8_t*>(t.data())[t.bytes() - 1];
  }
  return 0;
}
