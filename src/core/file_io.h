// Bounded reads of untrusted files: regular files only (a device such as /dev/zero, a FIFO or a
// directory is an error, never an endless read or a blocked process), sizes checked before
// anything is allocated, and paths named by a model confined to the model's directory.
#ifndef WEFT_SRC_CORE_FILE_IO_H_
#define WEFT_SRC_CORE_FILE_IO_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "weft/weft.h"

namespace weft::internal {

// The largest file ReadRegularFile takes by default (graphs, .npy inputs, ONNX protobufs, which
// cannot exceed 2 GiB anyway; larger weights live in external data files).
inline constexpr uint64_t kMaxReadBytes = uint64_t(4) << 30;

// The whole content of the regular file `path`. `what` names the file in errors ("graph file").
Expected<std::string> ReadRegularFile(const std::string& path, const std::string& what,
                                      uint64_t max_bytes = kMaxReadBytes);

// Reads exactly `bytes` bytes at `offset` of the regular file `path` into the buffer that
// `destination()` returns; it is called only once the file is known to hold that range, so the
// caller allocates nothing for a file that is too short.
Status ReadRegularFileRange(const std::string& path, const std::string& what, uint64_t offset, uint64_t bytes,
                            const std::function<void*()>& destination);

// `location`, a path written inside a model file, resolved against `base_dir` and confined to it:
// relative, without "..", and (symbolic links resolved) still inside `base_dir`.
Expected<std::string> ConfinedPath(const std::string& base_dir, const std::string& location,
                                   const std::string& what);

// A whole decimal integer in [0, INT64_MAX] (no sign, no spaces, no trailing text).
bool ParseNonNegativeInt64(std::string_view text, int64_t* value);

}  // namespace weft::internal

#endif  // WEFT_SRC_CORE_FILE_IO_H_
