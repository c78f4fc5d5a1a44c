// libFuzzer target for the ONNX importer: any byte string must give a graph or an error, never a
// crash, hang, leak or out-of-bounds read. External-data paths resolve against an empty
// directory made for the run, so no mutation can read a real file. Built and run by
// scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "weft/onnx.h"

namespace {
std::string* g_base_dir = nullptr;

void RemoveBaseDir() {
  std::error_code ec;
  if (g_base_dir) std::filesystem::remove_all(*g_base_dir, ec);
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Under $TMPDIR (scripts/fuzz.sh points it into build-fuzz/, where a crashed run's leftovers
  // are cleared on the next run).
  std::string tmpl = (std::filesystem::temp_directory_path() / "weft_onnx_fuzz_XXXXXX").string();
  if (!mkdtemp(tmpl.data())) std::abort();
  g_base_dir = new std::string(tmpl);
  std::atexit(RemoveBaseDir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto r = weft::ImportOnnxBytes(bytes, *g_base_dir, {});
  if (r.ok()) {
    // Touch everything the importer vouched for.
    volatile uint64_t sink = 0;
    for (auto& [name, t] : r.value().constants())
      if (t.bytes()) sink = sink + static_cast<const uint8_t*>(t.data())[t.bytes() - 1];
    for (auto& node : r.value().nodes())
      for (auto& [key, a] : node.attrs)
        if (!a.tensor_bytes().empty()) sink = sink + a.tensor_bytes().back();
  }
  return 0;
}
