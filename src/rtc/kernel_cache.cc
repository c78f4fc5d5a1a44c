#include "rtc/kernel_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>

extern char** environ;

namespace weft::internal {

namespace {

std::atomic<uint64_t> g_memory_hits{0}, g_disk_hits{0}, g_compiles{0}, g_failures{0};

struct CacheState {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<RtcKernel>> loaded;
  std::map<std::string, std::shared_ptr<RtcKernel>> pinned;  // what this process compiled/loaded
  std::map<std::string, std::shared_future<Expected<std::shared_ptr<RtcKernel>>>> inflight;
  std::map<std::string, std::string> compiler_ids;
};
CacheState& State() {
  static CacheState* s = new CacheState();  // lives until exit; kernels stay loaded
  return *s;
}

std::string Hex128(const std::string& text) {
  XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::vector<std::string> SplitWords(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string ReadText(const std::string& path, size_t limit) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (s.size() > limit) s = s.substr(0, limit) + "\n... (" + std::to_string(s.size() - limit) + " more bytes)";
  return s;
}

// Runs argv with stdout and stderr into `log`; the exit status, or -1 when it could not start.
int RunProcess(const std::vector<std::string>& argv, const std::string& log, std::string* why) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    *why = std::strerror(rc);
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      *why = std::strerror(errno);
      return -1;
    }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  *why = "terminated by signal " + std::to_string(WTERMSIG(status));
  return 128;
}

std::string Compiler(const std::string& language) {
  const char* env = std::getenv(language == "c" ? "WEFT_CC" : "WEFT_CXX");
  if (env && *env) return env;
  return language == "c" ? "cc" : "c++";
}

std::string BaseFlags(const std::string& language) {
  return language == "c" ? "-std=c11 -O2 -fPIC -shared" : "-std=c++17 -O2 -fPIC -shared";
}

std::string TempName(const std::string& dir, const char* ext) {
  static std::atomic<uint64_t> counter{0};
  return dir + "/.tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ext;
}

// The compiler's identity: its name and the first line of `--version`. Cached per process.
Expected<std::string> CompilerIdentity(const std::string& cc) {
  {
    std::lock_guard<std::mutex> l(State().mu);
    auto it = State().compiler_ids.find(cc);
    if (it != State().compiler_ids.end()) return it->second;
  }
  char tmpl[] = "/tmp/weft-ccid-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return IoError(std::string("runtime compilation: cannot create a temporary file: ") + std::strerror(errno));
  close(fd);
  std::string why;
  int rc = RunProcess({cc, "--version"}, tmpl, &why);
  std::string text = ReadText(tmpl, 4096);
  std::remove(tmpl);
  if (rc != 0)
    return FailedPrecondition("runtime compilation needs a compiler: '" + cc + " --version' " +
                              (rc < 0 ? "could not run (" + why + ")" : "failed") +
                              "; install one or set WEFT_CC / WEFT_CXX");
  std::string id = cc + " | " + text.substr(0, text.find('\n'));
  std::lock_guard<std::mutex> l(State().mu);
  State().compiler_ids[cc] = id;
  return id;
}

Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError("kernel cache directory '" + dir + "' cannot be created: " + ec.message() + " (set WEFT_CACHE_DIR)");
  return Status::Ok();
}

Expected<std::shared_ptr<RtcKernel>> OpenCached(const std::string& id, const std::string& tag, const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return Internal("cannot load kernel '" + path + "': " + (e ? e : "unknown dlopen error"));
  }
  auto k = std::make_shared<RtcKernel>();
  k->id = id;
  k->tag = tag;
  k->path = path;
  k->handle = h;
  return k;
}

Expected<std::shared_ptr<RtcKernel>> CompileUncached(const RtcRequest& req, const std::string& id, const std::string& cc) {
  std::string dir = KernelCacheDir();
  WEFT_RETURN_IF_ERROR(MakeDirs(dir));
  std::string path = dir + "/" + id + ".so";
  if (access(path.c_str(), R_OK) == 0) {
    auto k = OpenCached(id, req.tag, path);
    if (k.ok()) {
      ++g_disk_hits;
      return k;
    }
    std::remove(path.c_str());  // a damaged entry: compile again
  }
  std::string src = TempName(dir, req.language == "c" ? ".c" : ".cc");
  std::string out = TempName(dir, ".so");
  std::string log = TempName(dir, ".log");
  {
    std::ofstream f(src, std::ios::binary);
    f << req.source;
    if (!f) return IoError("kernel cache directory '" + dir + "' is not writable (set WEFT_CACHE_DIR)");
  }
  std::vector<std::string> argv{cc};
  for (auto& w : SplitWords(BaseFlags(req.language))) argv.push_back(w);
  for (auto& w : SplitWords(req.options)) argv.push_back(w);
  argv.push_back(src);
  argv.push_back("-o");
  argv.push_back(out);
  std::string why;
  int rc = RunProcess(argv, log, &why);
  std::string diag = ReadText(log, 8000);
  std::remove(src.c_str());
  std::remove(log.c_str());
  if (rc != 0) {
    std::remove(out.c_str());
    std::string cmd;
    for (auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    ++g_failures;
    return InvalidArgument("runtime compilation of kernel '" + req.tag + "' failed (" +
                           (rc < 0 ? "could not run the compiler: " + why : "exit status " + std::to_string(rc)) +
                           ")\n  command: " + cmd + "\n" + diag);
  }
  ++g_compiles;
  if (std::rename(out.c_str(), path.c_str()) != 0) {
    std::remove(out.c_str());
    return IoError("cannot move the compiled kernel into '" + path + "': " + std::strerror(errno));
  }
  return OpenCached(id, req.tag, path);
}

}  // namespace

RtcKernel::~RtcKernel() {
  if (handle) dlclose(handle);
  if (memfd >= 0) close(memfd);
}

Expected<std::vector<uint8_t>> RtcKernel::Bytes() const {
  if (!bytes.empty() || path.empty()) return bytes;
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) return IoError("cannot read kernel '" + path + "'");
  if (b.empty()) return IoError("kernel '" + path + "' is empty or gone from the cache");
  return b;
}

void RtcDropMemoryCache() {
  std::lock_guard<std::mutex> l(State().mu);
  State().loaded.clear();
  State().pinned.clear();
}

std::string RtcTarget() {
  struct utsname u {};
  uname(&u);
  return std::string(u.machine) + "-linux";
}

std::string KernelCacheDir() {
  if (const char* d = std::getenv("WEFT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/weft/kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/weft/kernels";
  return "/tmp/weft-cache/kernels";
}

Expected<std::shared_ptr<RtcKernel>> RtcCompile(const RtcRequest& req) {
  if (req.language != "c" && req.language != "c++")
    return InvalidArgument("runtime compilation: language must be \"c\" or \"c++\", got \"" + req.language + "\"");
  if (req.source.empty()) return InvalidArgument("runtime compilation: the kernel source is empty");
  std::string cc = Compiler(req.language);
  auto ident = CompilerIdentity(cc);
  if (!ident.ok()) return ident.status();
  std::string key = req.key_prefix + "\nlanguage=" + req.language + "\noptions=" + req.options + "\ntarget=" + RtcTarget() +
                    "\ncompiler=" + ident.value() + "\nflags=" + BaseFlags(req.language) + "\nsource=" + req.source;
  std::string id = Hex128(key);
  CacheState& st = State();
  std::promise<Expected<std::shared_ptr<RtcKernel>>> promise;
  {
    std::unique_lock<std::mutex> l(st.mu);
    if (auto it = st.loaded.find(id); it != st.loaded.end())
      if (auto k = it->second.lock()) {
        ++g_memory_hits;
        return k;
      }
    if (auto it = st.inflight.find(id); it != st.inflight.end()) {
      auto f = it->second;
      l.unlock();
      ++g_memory_hits;
      return f.get();  // another thread is compiling the same key
    }
    st.inflight[id] = promise.get_future().share();
  }
  auto r = CompileUncached(req, id, cc);
  {
    std::lock_guard<std::mutex> l(st.mu);
    if (r.ok()) {
      st.loaded[id] = r.value();
      st.pinned[id] = r.value();
    }
    st.inflight.erase(id);
  }
  promise.set_value(r);
  return r;
}

Expected<void*> DlopenFromMemory(const std::string& name, const uint8_t* data, size_t size, int* fd_out) {
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return IoError("memfd_create failed for '" + name + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return IoError("cannot write '" + name + "' to memory: " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* e = h ? nullptr : dlerror();
  if (!h) {
    close(fd);
    return Internal("cannot load '" + name + "' from memory: " + (e ? e : "unknown dlopen error"));
  }
  *fd_out = fd;
  return h;
}

Expected<std::shared_ptr<RtcKernel>> RtcLoadFromMemory(const std::string& id, const std::string& tag, const uint8_t* data,
                                                       size_t size) {
  CacheState& st = State();
  {
    std::lock_guard<std::mutex> l(st.mu);
    if (auto it = st.loaded.find(id); it != st.loaded.end())
      if (auto k = it->second.lock()) return k;
  }
  int fd = -1;
  auto h = DlopenFromMemory("weft-kernel-" + id, data, size, &fd);
  if (!h.ok()) return h.status();
  auto k = std::make_shared<RtcKernel>();
  k->memfd = fd;
  k->id = id;
  k->tag = tag;
  k->handle = h.value();
  k->bytes.assign(data, data + size);
  std::lock_guard<std::mutex> l(st.mu);
  st.loaded[id] = k;
  return k;
}

}  // namespace weft::internal

namespace weft {
KernelCacheStats GetKernelCacheStats() {
  KernelCacheStats s;
  s.memory_hits = internal::g_memory_hits.load();
  s.disk_hits = internal::g_disk_hits.load();
  s.compiles = internal::g_compiles.load();
  s.failures = internal::g_failures.load();
  s.directory = internal::KernelCacheDir();
  return s;
}
}  // namespace weft
