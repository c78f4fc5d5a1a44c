// libFuzzer target for the LiteRT importer: any byte string must give a graph or an error, never a
// crash, hang, leak or out-of-bounds read (the flatbuffers verifier first, then every index and
// size the importer follows). Built and run by scripts/fuzz.sh.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "weft/litert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto r = weft::ImportLiteRtBytes(bytes, {});
  if (r.ok()) weft::fuzz::TouchEverything(r.value());  // everything the importer vouched for
  return 0;
}
