// libFuzzer target for the JSON graph reader: any text must give a graph or an error, never a
// crash, hang, leak or uncaught exception. Constant "file" paths resolve against a directory
// made for the run that holds one small w.npy, so the .npy path is reached but no real file is.
// Built and run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/npy.h"
#include "weft/weft.h"

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
  std::string tmpl = (std::filesystem::temp_directory_path() / "weft_json_fuzz_XXXXXX").string();
  if (!mkdtemp(tmpl.data())) std::abort();
  g_base_dir = new std::string(tmpl);
  std::atexit(RemoveBaseDir);
  weft::HostTensor w(weft::DT_FLOAT, weft::Shape({2, 3}));
  if (!weft::internal::WriteNpy(*g_base_dir + "/w.npy", w).ok()) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = weft::Graph::FromJsonText(text, *g_base_dir);
  if (r.ok()) {
    volatile uint64_t sink = 0;
    for (auto& [name, t] : r.value().constants())
      if (t.bytes()) sink = sink + static_cast<const uint8_t*>(t.data())[t.bytes() - 1];
    for (auto& node : r.value().nodes())
      for (auto& [key, a] : node.attrs)
        if (!a.tensor_bytes().empty()) sink = sink + a.tensor_bytes().back();
  }
  return 0;
}
