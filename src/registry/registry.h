// Per-session operator registry: built-ins, libraries and packages, with their provenance.
#ifndef WEFT_SRC_REGISTRY_REGISTRY_H_
#define WEFT_SRC_REGISTRY_REGISTRY_H_

#include <cstddef>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/c/weft_plugin.h"
#include "weft/op_def.h"
#include "weft/weft.h"

// True when a struct written by the other side is large enough to contain `field`.
#define WEFT_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)nullptr)->field))

// The built-in operator library's table (ops/builtin_ops.cc.in).
extern "C" const WeftOpLibrary* WeftBuiltinOpLibrary(uint32_t engine_abi_version);

namespace weft::internal {

// A dlopen'ed operator library; closed when the last op or model using it goes away.
struct LoadedLibrary {
  std::string path;
  void* handle = nullptr;
  const WeftOpLibrary* lib = nullptr;
  std::string hash;  // hex XXH3-64 of the file
  int memfd = -1;    // loaded from memory: the file descriptor that names it while loaded
  ~LoadedLibrary();
};

struct IoSpec {
  std::string name;
  WeftIoKind kind = WEFT_IO_REQUIRED;
  std::string symbol;
  std::vector<DataType> dtypes;  // resolved through DATATYPE when a symbol is used
  int same_as_input = -1;
};

struct AttrSpec {
  std::string name;
  WeftAttrType type = WEFT_ATTR_INT;
  bool required = false;
  AttrValue default_value;
};

// The engine's own copy of a WeftOpPrototype, validated on load.
struct Prototype {
  std::string op_type;
  uint32_t version = 1;
  std::vector<IoSpec> inputs, outputs;
  std::vector<AttrSpec> attrs;
};

struct RegisteredOp {
  std::string op_type;
  Prototype proto;
  const WeftOpImpl* impl = nullptr;
  std::shared_ptr<LoadedLibrary> library;  // null for built-ins
  std::string origin;                      // "built-in" or library path
  bool replaced_builtin = false;
};

class OpRegistry {
 public:
  explicit OpRegistry(bool allow_override) : allow_override_(allow_override) {}

  // The built-in operator library (ops/), checked like any plugin's tables.
  Status AddBuiltinLibrary(const WeftOpLibrary* table);
  Status LoadLibrary(const std::string& path);
  Status LoadPackage(const std::string& root);
  // Loads a library held in memory (an embedded plugin); `name` is used in messages.
  Status LoadLibraryFromMemory(const std::string& name, const uint8_t* data, size_t size);
  void set_allow_override(bool v) { allow_override_ = v; }

  std::shared_ptr<const RegisteredOp> Find(const std::string& op_type) const;
  // The op a graph node names: through the package op maps for a non-standard domain
  // ("domain:OpType" → op type), else by op type.
  std::shared_ptr<const RegisteredOp> FindForNode(const std::string& domain, const std::string& op_type) const;
  // Why `op_type` is not registered, with near matches and their origin.
  std::string DescribeMissing(const std::string& op_type) const;
  std::vector<OpInfo> List() const;

 private:
  Status Register(std::shared_ptr<RegisteredOp> op);
  Status RegisterLibrary(std::shared_ptr<LoadedLibrary> lib);
  Status RegisterTable(const WeftOpLibrary* table, std::shared_ptr<LoadedLibrary> lib, const std::string& where,
                       const std::string& origin);
  std::map<std::string, std::shared_ptr<const RegisteredOp>> ops_;
  std::map<std::string, std::string> op_map_;  // "domain:OpType" -> op type
  bool allow_override_;
};

// Converts and checks a C prototype. `where` names the library for messages.
Expected<Prototype> ImportPrototype(const WeftOpPrototype* p, const std::string& where);
AttrValue AttrFromC(const WeftAttrValue* v);

// Package layout helpers shared with the CLI.
std::string PlatformLibDir();  // "op_graph/lib/linux/x86_64"
Expected<std::vector<std::string>> PackageLibraries(const std::string& root);
Expected<std::string> HashFile(const std::string& path);
// "xxh3-64:<16 hex digits>", the form library hashes take everywhere.
inline std::string HashText(uint64_t xxh3) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(xxh3));
  return std::string("xxh3-64:") + hex;
}
std::string HashBytes(const void* data, size_t size);
// Splits WEFT_CUSTOM_OPP_PATH-style text on ':' dropping empty entries.
std::vector<std::string> SplitPathList(const std::string& s);
// The package roots the environment names: WEFT_CUSTOM_OPP_PATH's entries, then those of GE's
// ASCEND_CUSTOM_OPP_PATH (an alias) that WEFT_CUSTOM_OPP_PATH does not already list.
std::vector<std::string> EnvPackagePath();

}  // namespace weft::internal

#endif  // WEFT_SRC_REGISTRY_REGISTRY_H_
