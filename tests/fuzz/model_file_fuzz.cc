// libFuzzer target for the model-file parser: any byte string must give a parsed model or an
// error, never a crash, hang or out-of-bounds read. The checksum is skipped so that mutations
// reach the structure checks. Built and run by scripts/test.sh (scripts/fuzz_model_file.sh).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "model/model_format.h"

// The parser alone is linked here, not the engine that defines this.
namespace weft {
void ThrowStatus(const Status& s) {
  std::fprintf(stderr, "unexpected error: %s\n", s.message().c_str());
  std::abort();
}
}  // namespace weft

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The loader always sees 64-byte aligned memory (a mapping or an aligned copy).
  size_t n = (size + 63) / 64 * 64 + 64;
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(64, n));
  if (size) std::memcpy(buf, data, size);
  auto r = weft::internal::ParseModelFile(buf, size, /*verify_checksum=*/false);
  if (r.ok()) {
    // Touch everything the parser vouched for.
    volatile uint64_t sink = 0;
    for (auto& [p, bytes] : r.value().graph.constants)
      for (uint64_t k = 0; k < bytes; k += 4096) sink = sink + static_cast<const uint8_t*>(p)[k];
    for (auto& node : r.value().graph.nodes)
      for (auto& [key, range] : node.blobs)
        if (range.second) sink = sink + range.first[range.second - 1];
  }
  std::free(buf);
  return 0;
}
