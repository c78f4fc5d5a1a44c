// libFuzzer target for the JSON graph reader: any text must give a graph or an error, never a
// crash, hang, leak or uncaught exception. Constant "file" paths resolve against a directory
// made for the run that holds one small w.npy, so the .npy path is reached but no real file is.
// Built and run by scripts/fuzz.sh.
#include <cstdint>
#include <string>

#include "core/npy.h"
#include "fuzz_support.h"
#include "weft/weft.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weft::HostTensor w(weft::DT_FLOAT, weft::Shape({2, 3}));
  if (!weft::internal::WriteNpy(weft::fuzz::ScratchDir("weft_json_fuzz") + "/w.npy", w).ok()) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = weft::Graph::FromJsonText(text, weft::fuzz::ScratchDir("weft_json_fuzz"));
  if (r.ok()) weft::fuzz::TouchEverything(r.value());
  return 0;
}
