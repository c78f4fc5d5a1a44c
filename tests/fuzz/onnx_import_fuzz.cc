// libFuzzer target for the ONNX importer: any byte string must give a graph or an error, never a
// crash, hang, leak or out-of-bounds read. External-data paths resolve against an empty
// directory made for the run, so no mutation can read a real file. Built and run by
// scripts/fuzz.sh.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "weft/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto r = weft::ImportOnnxBytes(bytes, weft::fuzz::ScratchDir("weft_onnx_fuzz"), {});
  if (r.ok()) weft::fuzz::TouchEverything(r.value());  // everything the importer vouched for
  return 0;
}
