#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

namespace weft::internal {
namespace fs = std::filesystem;

namespace {

// An open regular file; O_NONBLOCK so that opening a FIFO returns at once instead of waiting
// for a writer (the type check then rejects it).
class RegularFile {
 public:
  ~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Open(const std::string& path, const std::string& what) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd_ < 0) {
      int e = errno;
      std::string msg = "cannot open " + what + " '" + path + "': " + std::strerror(e);
      return e == ENOENT ? NotFound(msg) : IoError(msg);
    }
    struct stat sb {};
    if (::fstat(fd_, &sb) != 0) return IoError("cannot stat " + what + " '" + path + "': " + std::strerror(errno));
    if (!S_ISREG(sb.st_mode)) {
      const char* kind = S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO"
                         : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : S_ISSOCK(sb.st_mode) ? "a socket"
                                                                                                       : "not a regular file";
      return InvalidArgument(what + " '" + path + "' is " + kind + "; only regular files are read");
    }
    size_ = static_cast<uint64_t>(sb.st_size);
    return Status::Ok();
  }
  uint64_t size() const { return size_; }
  // Reads exactly n bytes at offset (the file may have shrunk since Open: that is an error too).
  Status ReadAt(uint64_t offset, char* dst, uint64_t n, const std::string& what, const std::string& path) {
    while (n > 0) {
      size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, uint64_t(1) << 30));
      ssize_t got = ::pread(fd_, dst, chunk, static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        return IoError("cannot read " + what + " '" + path + "': " + std::strerror(errno));
      }
      if (got == 0) return InvalidArgument(what + " '" + path + "' ended early (it changed while being read)");
      dst += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<uint64_t>(got);
    }
    return Status::Ok();
  }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace

Expected<std::string> ReadRegularFile(const std::string& path, const std::string& what, uint64_t max_bytes) {
  RegularFile f;
  WEFT_RETURN_IF_ERROR(f.Open(path, what));
  if (f.size() > max_bytes)
    return InvalidArgument(what + " '" + path + "' has " + std::to_string(f.size()) + " bytes, more than the " +
                           std::to_string(max_bytes) + " read at most");
  std::string out;
  try {
    out.resize(static_cast<size_t>(f.size()));
  } catch (const std::bad_alloc&) {
    return IoError("not enough memory to read " + what + " '" + path + "' (" + std::to_string(f.size()) + " bytes)");
  }
  WEFT_RETURN_IF_ERROR(f.ReadAt(0, out.data(), out.size(), what, path));
  return out;
}

Status ReadRegularFileRange(const std::string& path, const std::string& what, uint64_t offset, uint64_t bytes,
                            const std::function<void*()>& destination) {
  RegularFile f;
  WEFT_RETURN_IF_ERROR(f.Open(path, what));
  if (offset > f.size() || bytes > f.size() - offset)
    return InvalidArgument(what + " '" + path + "' has " + std::to_string(f.size()) + " bytes; " +
                           std::to_string(bytes) + " bytes at offset " + std::to_string(offset) + " do not fit");
  return f.ReadAt(offset, static_cast<char*>(destination()), bytes, what, path);
}

Expected<std::string> ConfinedPath(const std::string& base_dir, const std::string& location, const std::string& what) {
  fs::path rel(location);
  if (location.empty()) return InvalidArgument(what + ": empty path");
  if (location.find('\0') != std::string::npos) return InvalidArgument(what + ": path contains a NUL byte");
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    return InvalidArgument(what + ": path '" + location + "' is absolute; only paths relative to the model's directory are read");
  for (const fs::path& part : rel)
    if (part == "..")
      return InvalidArgument(what + ": path '" + location + "' leaves the model's directory ('..' is not allowed)");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(base_dir.empty() ? "." : base_dir), ec);
  if (ec) return IoError(what + ": cannot resolve the model's directory '" + base_dir + "': " + ec.message());
  if (base.has_parent_path() && base.filename().empty()) base = base.parent_path();  // "dir/" -> "dir"
  fs::path full = fs::weakly_canonical(base / rel, ec);
  if (ec) return IoError(what + ": cannot resolve '" + location + "': " + ec.message());
  // Symbolic links are resolved above: the target must still lie under the model's directory.
  auto b = base.begin(), f = full.begin();
  for (; b != base.end(); ++b, ++f)
    if (f == full.end() || *b != *f)
      return InvalidArgument(what + ": path '" + location + "' resolves to '" + full.string() +
                             "', outside the model's directory '" + base.string() + "' (through a symbolic link)");
  return full.string();
}

bool ParseNonNegativeInt64(std::string_view text, int64_t* value) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  *value = static_cast<int64_t>(v);
  return true;
}

}  // namespace weft::internal
