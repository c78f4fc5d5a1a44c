// The public tool-support functions (weft.h): thin doors onto engine parts the `weft` command
// and the benchmarks need, so that tools/ and bench/ use the public API alone.
#include "core/npy.h"
#include "core/suggest.h"
#include "registry/registry.h"
#include "rtc/kernel_cache.h"
#include "weft/weft.h"

namespace weft {

Expected<std::vector<std::string>> PackageLibraries(const std::string& root) { return internal::PackageLibraries(root); }
std::vector<std::string> PackagePathFromEnvironment() { return internal::EnvPackagePath(); }
Expected<std::string> LibraryHash(const std::string& path) { return internal::HashFile(path); }
Expected<HostTensor> ReadNpy(const std::string& path) { return internal::ReadNpy(path); }
Status WriteNpy(const std::string& path, const HostTensor& tensor) { return internal::WriteNpy(path, tensor); }
std::vector<std::string> NearestNames(const std::string& word, const std::vector<std::string>& candidates, size_t limit) {
  return internal::NearestNames(word, candidates, limit);
}
std::string DidYouMean(const std::vector<std::string>& names) { return internal::DidYouMean(names); }
void ClearKernelMemoryCache() { internal::RtcDropMemoryCache(); }

}  // namespace weft
