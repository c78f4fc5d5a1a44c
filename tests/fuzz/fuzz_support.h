// Shared by the libFuzzer targets: a scratch directory per run, and a pass over everything an
// accepted graph holds (so a tensor whose size lies about its data shows under ASan).
#ifndef WEFT_TESTS_FUZZ_FUZZ_SUPPORT_H_
#define WEFT_TESTS_FUZZ_FUZZ_SUPPORT_H_

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "weft/weft.h"

namespace weft::fuzz {

// A fresh directory under $TMPDIR (scripts/fuzz.sh points it into build-fuzz/, where a crashed
// run's leftovers are cleared on the next run), removed when the process exits normally.
inline const std::string& ScratchDir(const char* name) {
  static std::string* dir = [name] {
    std::string tmpl = (std::filesystem::temp_directory_path() / (std::string(name) + "_XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) std::abort();
    auto* d = new std::string(tmpl);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(ScratchDir(""), ec);
    });
    return d;
  }();
  return *dir;
}

// Reads the last byte of every constant and tensor attribute of `g`.
inline void TouchEverything(const Graph& g) {
  volatile uint64_t sink = 0;
  for (auto& [name, t] : g.constants())
    if (t.bytes()) sink = sink + static_cast<const uint8_t*>(t.data())[t.bytes() - 1];
  for (auto& node : g.nodes())
    for (auto& [key, a] : node.attrs)
      if (!a.tensor_bytes().empty()) sink = sink + a.tensor_bytes().back();
}

}  // namespace weft::fuzz

#endif  // WEFT_TESTS_FUZZ_FUZZ_SUPPORT_H_
