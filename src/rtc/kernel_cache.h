// Runtime compilation: C/C++ kernel source → shared object loaded in-process, through a cache
// in memory and on disk (WEFT_CACHE_DIR). Safe under concurrent compiles, in one process (one
// compile per key, others wait) and across processes (each writes a private file and renames
// it into place atomically).
#ifndef WEFT_SRC_RTC_KERNEL_CACHE_H_
#define WEFT_SRC_RTC_KERNEL_CACHE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::internal {

// A loaded kernel library. Never unloaded while anything holds it.
struct RtcKernel {
  std::string id;    // 32 hex digits: the hash of the cache key
  std::string tag;   // the op's label, for messages
  std::string path;  // the cached file ("" when loaded from memory)
  void* handle = nullptr;
  std::vector<uint8_t> bytes;  // the shared object, when loaded from memory
  int memfd = -1;
  ~RtcKernel();
  // The shared object's bytes (read from `path` when not in memory).
  Expected<std::vector<uint8_t>> Bytes() const;
};

struct RtcRequest {
  std::string language;  // "c" or "c++"
  std::string source;
  std::string options;
  std::string tag;
  std::string key_prefix;  // op type, version, attributes, shapes, dtypes, formats
};

// Compiles (or finds) the kernel. Errors carry the compiler command and its diagnostics.
Expected<std::shared_ptr<RtcKernel>> RtcCompile(const RtcRequest& req);
// Loads a kernel stored in a model file, without writing a file (memfd). Reuses a kernel with
// the same id already loaded in this process.
Expected<std::shared_ptr<RtcKernel>> RtcLoadFromMemory(const std::string& id, const std::string& tag,
                                                       const uint8_t* data, size_t size);
// Loads a shared object held in memory (memfd + dlopen); the handle or an error. The memfd stays
// open in *fd (close it after dlclose): the dynamic loader knows the object by its
// /proc/self/fd path, which must not be reused while it is loaded.
Expected<void*> DlopenFromMemory(const std::string& name, const uint8_t* data, size_t size, int* fd);

// Forgets the kernels this process loaded (they stay loaded while models use them), so the next
// compile of the same key goes to the disk cache: what another process would see.
void RtcDropMemoryCache();

// "x86_64-linux"
std::string RtcTarget();
// The directory of the on-disk cache: WEFT_CACHE_DIR, else $XDG_CACHE_HOME/weft/kernels, else
// ~/.cache/weft/kernels.
std::string KernelCacheDir();

}  // namespace weft::internal

#endif  // WEFT_SRC_RTC_KERNEL_CACHE_H_
