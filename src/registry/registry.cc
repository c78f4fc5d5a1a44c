#include "registry/registry.h"

#include "core/suggest.h"
#include "rtc/kernel_cache.h"
#include "weft/litert.h"

#include <dlfcn.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace weft::internal {

LoadedLibrary::~LoadedLibrary() {
  if (handle) dlclose(handle);
  if (memfd >= 0) close(memfd);
}

namespace {

// Upper bounds on what a library's tables may declare: far above any real operator, low enough
// that a corrupt count is an error instead of a huge loop or allocation.
constexpr uint32_t kMaxOpsPerLibrary = 1u << 16;
constexpr uint32_t kMaxIosOrAttrs = 1u << 12;
constexpr uint32_t kMaxDtypes = 256;
constexpr uint64_t kMaxDefaultElements = 1u << 20;

// A table of `n` entries must be a real array when n > 0 and n must be plausible.
template <typename T>
Status CheckTable(const T* table, uint64_t n, uint64_t max, const std::string& what) {
  if (n > max) return InvalidArgument(what + ": " + std::to_string(n) + " entries, more than " + std::to_string(max));
  if (n > 0 && table == nullptr) return InvalidArgument(what + ": " + std::to_string(n) + " entries but a null array");
  return Status::Ok();
}

// A default value as the plugin wrote it: every pointer AttrFromC follows is checked first.
Status CheckAttrValue(const WeftAttrValue* v, const std::string& what) {
  if (v->struct_size < sizeof(WeftAttrValue))
    return InvalidArgument(what + ": struct_size " + std::to_string(v->struct_size) + " is smaller than the level-1 WeftAttrValue");
  switch (v->type) {
    case WEFT_ATTR_LIST_INT: return CheckTable(v->ints, v->count, kMaxDefaultElements, what);
    case WEFT_ATTR_LIST_FLOAT: return CheckTable(v->floats, v->count, kMaxDefaultElements, what);
    case WEFT_ATTR_LIST_BOOL: return CheckTable(v->bools, v->count, kMaxDefaultElements, what);
    case WEFT_ATTR_LIST_STRING: return CheckTable(v->strings, v->count, kMaxDefaultElements, what);
    case WEFT_ATTR_TENSOR: {
      const WeftTensor* t = v->tensor;
      if (!t) return Status::Ok();
      if (t->struct_size < sizeof(WeftTensor) || t->shape.ndim < 0 || t->shape.ndim > WEFT_MAX_DIMS ||
          DataTypeSize(static_cast<DataType>(t->dtype)) == 0)
        return InvalidArgument(what + ": malformed tensor default");
      uint64_t n = 1;
      for (int64_t k = 0; k < t->shape.ndim; ++k) {
        int64_t d = t->shape.dims[k];
        if (d < 0 || (d > 0 && n > kMaxDefaultElements / static_cast<uint64_t>(d)))
          return InvalidArgument(what + ": tensor default has a negative or oversized shape");
        n *= static_cast<uint64_t>(d);
      }
      if (n > 0 && t->data == nullptr) return InvalidArgument(what + ": tensor default of " + std::to_string(n) + " elements has no data");
      uint64_t need = n * DataTypeSize(static_cast<DataType>(t->dtype));
      if (need > t->size_bytes)
        return InvalidArgument(what + ": tensor default " + Shape::View(&t->shape)->ToString() + " needs " + std::to_string(need) +
                               " bytes; its data holds " + std::to_string(t->size_bytes));
      return Status::Ok();
    }
    default: return Status::Ok();
  }
}

}  // namespace

AttrValue AttrFromC(const WeftAttrValue* v) {
  switch (v->type) {
    case WEFT_ATTR_INT: return AttrValue::Int(v->i);
    case WEFT_ATTR_FLOAT: return AttrValue::Float(v->f);
    case WEFT_ATTR_BOOL: return AttrValue::Bool(v->b != 0);
    case WEFT_ATTR_STRING: return AttrValue::String(v->s ? v->s : "");
    case WEFT_ATTR_TYPE: return AttrValue::Type(static_cast<DataType>(v->i));
    case WEFT_ATTR_LIST_INT: return AttrValue::ListInt(std::vector<int64_t>(v->ints, v->ints + v->count));
    case WEFT_ATTR_LIST_FLOAT: return AttrValue::ListFloat(std::vector<float>(v->floats, v->floats + v->count));
    case WEFT_ATTR_LIST_BOOL: {
      std::vector<bool> b;
      for (uint64_t k = 0; k < v->count; ++k) b.push_back(v->bools[k] != 0);
      return AttrValue::ListBool(b);
    }
    case WEFT_ATTR_LIST_STRING: {
      std::vector<std::string> s;
      for (uint64_t k = 0; k < v->count; ++k) s.emplace_back(v->strings[k] ? v->strings[k] : "");
      return AttrValue::ListString(s);
    }
    case WEFT_ATTR_TENSOR: {
      const Tensor* t = Tensor::View(v->tensor);
      if (!t) return AttrValue::TensorValue(DT_FLOAT, Shape({0}), {});
      const uint8_t* d = static_cast<const uint8_t*>(t->data);
      return AttrValue::TensorValue(t->GetDataType(), t->GetShape(),
                                    d ? std::vector<uint8_t>(d, d + t->GetByteCount()) : std::vector<uint8_t>());
    }
    default: return AttrValue();
  }
}

Expected<Prototype> ImportPrototype(const WeftOpPrototype* p, const std::string& where) {
  if (!p || p->struct_size < offsetof(WeftOpPrototype, dtype_symbols) + sizeof(void*) || !p->op_type)
    return InvalidArgument(where + ": malformed operator prototype");
  Prototype out;
  out.op_type = p->op_type;
  out.version = p->version;
  std::string ctx = where + ": REG_OP(" + out.op_type + ")";
  WEFT_RETURN_IF_ERROR(CheckTable(p->inputs, p->num_inputs, kMaxIosOrAttrs, ctx + " inputs"));
  WEFT_RETURN_IF_ERROR(CheckTable(p->outputs, p->num_outputs, kMaxIosOrAttrs, ctx + " outputs"));
  WEFT_RETURN_IF_ERROR(CheckTable(p->attrs, p->num_attrs, kMaxIosOrAttrs, ctx + " attributes"));
  WEFT_RETURN_IF_ERROR(CheckTable(p->dtype_symbols, p->num_dtype_symbols, kMaxIosOrAttrs, ctx + " DATATYPE symbols"));
  std::map<std::string, std::vector<DataType>> symbols;
  for (uint32_t k = 0; k < p->num_dtype_symbols; ++k) {
    const WeftDtypeSymbol* s = p->dtype_symbols[k];
    if (!s || s->struct_size < sizeof(WeftDtypeSymbol))
      return InvalidArgument(ctx + ": DATATYPE symbol #" + std::to_string(k) + " is null or smaller than the level-1 WeftDtypeSymbol");
    WEFT_RETURN_IF_ERROR(CheckTable(s->dtypes, s->num_dtypes, kMaxDtypes,
                                    ctx + ": DATATYPE(" + std::string(s->name ? s->name : "") + ") types"));
    std::vector<DataType>& v = symbols[s->name ? s->name : ""];
    for (uint32_t j = 0; j < s->num_dtypes; ++j) v.push_back(static_cast<DataType>(s->dtypes[j]));
  }
  auto import_io = [&](uint32_t n, const WeftIoDesc* const* descs, std::vector<IoSpec>& dst, bool is_input) -> Status {
    int dynamic = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const WeftIoDesc* d = descs[k];
      if (!d || d->struct_size < sizeof(WeftIoDesc) || !d->name)
        return InvalidArgument(ctx + ": malformed " + (is_input ? "input" : "output") + " descriptor #" + std::to_string(k) +
                               " (null, unnamed, or smaller than the level-1 WeftIoDesc)");
      IoSpec io;
      io.name = d->name;
      if (d->kind < WEFT_IO_REQUIRED || d->kind > WEFT_IO_DYNAMIC)
        return InvalidArgument(ctx + ": '" + io.name + "' has an unknown kind " + std::to_string(d->kind));
      io.kind = static_cast<WeftIoKind>(d->kind);
      if (io.kind == WEFT_IO_DYNAMIC) ++dynamic;
      if (d->dtype_symbol) {
        io.symbol = d->dtype_symbol;
        auto it = symbols.find(io.symbol);
        if (it == symbols.end())
          return InvalidArgument(ctx + ": '" + io.name + "' uses type symbol '" + io.symbol + "' with no DATATYPE");
        io.dtypes = it->second;
      } else {
        WEFT_RETURN_IF_ERROR(CheckTable(d->dtypes, d->num_dtypes, kMaxDtypes, ctx + ": '" + io.name + "' types"));
        for (uint32_t j = 0; j < d->num_dtypes; ++j) io.dtypes.push_back(static_cast<DataType>(d->dtypes[j]));
      }
      for (DataType dt : io.dtypes)
        if (DataTypeSize(dt) == 0) return InvalidArgument(ctx + ": '" + io.name + "' allows an unknown data type " + std::to_string(dt));
      if (io.dtypes.empty()) return InvalidArgument(ctx + ": '" + io.name + "' allows no data type");
      if (!is_input) io.same_as_input = d->same_as_input;
      dst.push_back(io);
    }
    (void)dynamic;
    return Status::Ok();
  };
  WEFT_RETURN_IF_ERROR(import_io(p->num_inputs, p->inputs, out.inputs, true));
  WEFT_RETURN_IF_ERROR(import_io(p->num_outputs, p->outputs, out.outputs, false));
  for (auto& o : out.outputs)
    if (o.same_as_input >= static_cast<int>(out.inputs.size()))
      return InvalidArgument(ctx + ": output '" + o.name + "' copies input " + std::to_string(o.same_as_input) + ", which does not exist");
  if (out.outputs.empty()) return InvalidArgument(ctx + ": declares no OUTPUT");
  for (uint32_t k = 0; k < p->num_attrs; ++k) {
    const WeftAttrDesc* a = p->attrs[k];
    if (!a || a->struct_size < sizeof(WeftAttrDesc) || !a->name)
      return InvalidArgument(ctx + ": malformed attribute descriptor #" + std::to_string(k) +
                             " (null, unnamed, or smaller than the level-1 WeftAttrDesc)");
    AttrSpec s;
    s.name = a->name;
    if (a->type < WEFT_ATTR_INT || a->type > WEFT_ATTR_TYPE)
      return InvalidArgument(ctx + ": attribute '" + s.name + "' has an unknown type " + std::to_string(a->type));
    s.type = static_cast<WeftAttrType>(a->type);
    s.required = a->required != 0;
    if (!s.required) {
      if (!a->default_value) return InvalidArgument(ctx + ": optional attribute '" + s.name + "' has no default");
      WEFT_RETURN_IF_ERROR(CheckAttrValue(a->default_value, ctx + ": default of attribute '" + s.name + "'"));
      s.default_value = AttrFromC(a->default_value);
      if (s.default_value.type() != s.type)
        return InvalidArgument(ctx + ": default of attribute '" + s.name + "' has the wrong type");
    }
    out.attrs.push_back(std::move(s));
  }
  return out;
}

std::string PlatformLibDir() {
  struct utsname u {};
  std::string arch = uname(&u) == 0 ? u.machine : "x86_64";
  return "op_graph/lib/linux/" + arch;
}

std::vector<std::string> SplitPathList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> EnvPackagePath() {
  const char* weft = std::getenv("WEFT_CUSTOM_OPP_PATH");
  const char* ascend = std::getenv("ASCEND_CUSTOM_OPP_PATH");
  std::vector<std::string> out = weft ? SplitPathList(weft) : std::vector<std::string>();
  const std::set<std::string> own(out.begin(), out.end());
  // A root on both is loaded once: a second load would register its ops twice.
  if (ascend)
    for (auto& p : SplitPathList(ascend))
      if (!own.count(p)) out.push_back(p);
  return out;
}

Expected<std::string> HashFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError("cannot read '" + path + "'");
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  char buf[1 << 16];
  while (f) {
    f.read(buf, sizeof buf);
    XXH3_64bits_update(st, buf, static_cast<size_t>(f.gcount()));
  }
  uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return HashText(h);
}

std::string HashBytes(const void* data, size_t size) { return HashText(XXH3_64bits(data, size)); }

namespace {
// What allow_override does. Path entries load last to first (src/session.cc), so the op being
// registered when a duplicate is found is always the one that wins.
constexpr const char* kOverrideRule =
    ": with override allowed, a package replaces a built-in; among package path entries (--package in order, "
    "then WEFT_CUSTOM_OPP_PATH) the earlier entry wins; and Session::LoadPackage/LoadLibrary on a created "
    "session replaces what is registered.";

// The package root `path` lies inside (itself excluded), or "".
std::string EnclosingPackage(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // a trailing '/'
  for (p = p.parent_path(); p.has_parent_path() && p != p.parent_path(); p = p.parent_path())
    if (fs::is_directory(p / "op_graph", ec)) return p.string();
  return "";
}
}  // namespace

Expected<std::vector<std::string>> PackageLibraries(const std::string& root) {
  std::error_code ec;
  const std::string layout = "(expected <root>/" + PlatformLibDir() + "/*.so)";
  if (fs::is_regular_file(root, ec)) {
    bool library = fs::path(root).extension() == ".so" || root.find(".so.") != std::string::npos;
    std::string package = EnclosingPackage(root);
    return InvalidArgument(
        "'" + root + "' is " + (library ? "a library" : "a file") + ", not an operator package root: give the " +
        "directory that contains op_graph/ " + layout + "." +
        (!package.empty() ? " It lies inside the package '" + package + "': use that directory instead."
                          : " A lone library belongs in a package's " + PlatformLibDir() +
                                "/ (weft_add_op_package builds packages); Session::LoadLibrary loads one by itself."));
  }
  if (!fs::is_directory(root, ec))
    return NotFound("operator package root '" + root + "' does not exist or is not a directory");
  if (!fs::is_directory(fs::path(root) / "op_graph", ec)) {
    // Point at the package root if the entry is inside one, or at the packages right below it.
    std::string hint;
    if (std::string package = EnclosingPackage(root); !package.empty()) {
      hint = " It lies inside the package '" + package + "': use that directory instead.";
    } else {
      std::vector<std::string> children;
      for (auto& e : fs::directory_iterator(root, ec))
        if (fs::is_directory(e.path() / "op_graph", ec)) children.push_back(e.path().string());
      std::sort(children.begin(), children.end());
      for (size_t k = 0; k < children.size() && k < 3; ++k)
        hint += (k ? "', '" : " It holds the package root(s) '") + children[k];
      if (children.size() > 3) hint += "', ... (" + std::to_string(children.size()) + " in all)";
      else if (!children.empty()) hint += "'";
      if (!children.empty())
        hint += ": give those instead (one --package each, or colon-separated in WEFT_CUSTOM_OPP_PATH).";
    }
    return InvalidArgument("'" + root + "' is not an operator package root: it has no op_graph/ directory " + layout +
                           "." + hint);
  }
  fs::path libdir = fs::path(root) / PlatformLibDir();
  std::vector<std::string> libs;
  if (fs::is_directory(libdir, ec))
    for (auto& e : fs::directory_iterator(libdir, ec))
      if (e.path().extension() == ".so") libs.push_back(e.path().string());
  std::sort(libs.begin(), libs.end());
  if (libs.empty())
    return NotFound("operator package '" + root + "' has no libraries in " + libdir.string() + "/ (expected *.so)");
  return libs;
}

Status OpRegistry::Register(std::shared_ptr<RegisteredOp> op) {
  auto it = ops_.find(op->op_type);
  if (it != ops_.end()) {
    const RegisteredOp& old = *it->second;
    if (!allow_override_)
      return AlreadyExists("op type '" + op->op_type + "' is registered twice: by " + old.origin + " and by " +
                           op->origin + ". Remove one of them (check --package and WEFT_CUSTOM_OPP_PATH), or allow "
                           "override (SessionOptions::allow_override, --allow-override) to use the one from " +
                           op->origin + kOverrideRule);
    op->replaced_builtin = old.library == nullptr || old.replaced_builtin;
  }
  ops_[op->op_type] = std::move(op);
  return Status::Ok();
}

Status OpRegistry::AddBuiltinLibrary(const WeftOpLibrary* table) {
  return RegisterTable(table, nullptr, "the built-in operator library", "built-in");
}

Status OpRegistry::LoadLibrary(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return NotFound("operator library '" + path + "' does not exist");
  auto lib = std::make_shared<LoadedLibrary>();
  lib->path = fs::absolute(path, ec).string();
  dlerror();
  lib->handle = dlopen(lib->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char* e = dlerror();
    return FailedPrecondition("failed to load operator library '" + lib->path + "': " + (e ? e : "unknown dlopen error"));
  }
  auto hash = HashFile(lib->path);
  lib->hash = hash.ok() ? hash.value() : "";
  return RegisterLibrary(lib);
}

Status OpRegistry::LoadLibraryFromMemory(const std::string& name, const uint8_t* data, size_t size) {
  int fd = -1;
  auto h = DlopenFromMemory(name, data, size, &fd);
  if (!h.ok()) return h.status();
  auto lib = std::make_shared<LoadedLibrary>();
  lib->path = name;
  lib->handle = h.value();
  lib->memfd = fd;
  lib->hash = HashBytes(data, size);
  return RegisterLibrary(lib);
}

Status OpRegistry::RegisterLibrary(std::shared_ptr<LoadedLibrary> lib) {
  auto get = reinterpret_cast<WeftGetOpLibraryFn>(dlsym(lib->handle, WEFT_OP_LIBRARY_SYMBOL));
  if (!get)
    return InvalidArgument("'" + lib->path + "' is not a Weft operator library: it exports no " WEFT_OP_LIBRARY_SYMBOL
                           " (include weft/custom_op.h in it, or build it with weft_add_op_package)");
  const WeftOpLibrary* l = get(WEFT_ABI_VERSION);
  std::string where = "operator library '" + lib->path + "'";
  std::string origin = lib->path;
  return RegisterTable(l, std::move(lib), where, origin);
}

// Every check a library's tables go through, for plugins and the built-in library alike.
Status OpRegistry::RegisterTable(const WeftOpLibrary* l, std::shared_ptr<LoadedLibrary> lib, const std::string& where,
                                 const std::string& origin) {
  if (!l || l->struct_size < offsetof(WeftOpLibrary, error) + sizeof(void*))
    return InvalidArgument(where + " returned a malformed library table");
  if (l->abi_version > WEFT_ABI_VERSION)
    return FailedPrecondition(where + " was built for Weft plugin ABI " +
                              std::to_string(l->abi_version) + ", newer than this engine's ABI " +
                              std::to_string(WEFT_ABI_VERSION) + ": upgrade Weft, or rebuild the library against this SDK");
  if (l->abi_version == 0) return InvalidArgument(where + " reports ABI level 0");
  if (l->error) return InvalidArgument(where + ": " + l->error);
  if (lib) lib->lib = l;

  WEFT_RETURN_IF_ERROR(CheckTable(l->prototypes, l->num_prototypes, kMaxOpsPerLibrary,
                                  where + " prototypes"));
  WEFT_RETURN_IF_ERROR(CheckTable(l->impls, l->num_impls, kMaxOpsPerLibrary, where + " implementations"));
  // Pair prototypes (REG_OP) with implementations (REG_AUTO_MAPPING_OP) by exact name.
  std::map<std::string, const WeftOpPrototype*> protos;
  std::map<std::string, const WeftOpImpl*> impls;
  for (uint32_t k = 0; k < l->num_prototypes; ++k) {
    const WeftOpPrototype* p = l->prototypes[k];
    if (!p || !p->op_type) return InvalidArgument(where + " has a null prototype");
    if (!protos.emplace(p->op_type, p).second)
      return InvalidArgument(where + " declares REG_OP(" + p->op_type + ") twice");
  }
  for (uint32_t k = 0; k < l->num_impls; ++k) {
    const WeftOpImpl* i = l->impls[k];
    if (!i || !i->class_name || !WEFT_HAS_FIELD(i, WeftOpImpl, deserialize) || !i->create || !i->destroy)
      return InvalidArgument(where + " has a malformed implementation table");
    if (((i->capabilities & WEFT_CAP_FUSIBLE) && (!WEFT_HAS_FIELD(i, WeftOpImpl, query_fusion) || !i->query_fusion)) ||
        ((i->capabilities & WEFT_CAP_LAYOUT) && (!WEFT_HAS_FIELD(i, WeftOpImpl, query_layout) || !i->query_layout)))
      return InvalidArgument(where + ": REG_AUTO_MAPPING_OP(" + i->class_name +
                             ") claims FusibleOp or LayoutAwareOp but its table has no query function for it");
    if ((i->capabilities & WEFT_CAP_EMITTABLE) && !i->emit)
      return InvalidArgument(where + ": REG_AUTO_MAPPING_OP(" + i->class_name + ") claims EmittableOp but its table has no emit function");
    if (!impls.emplace(i->class_name, i).second)
      return InvalidArgument(where + " has REG_AUTO_MAPPING_OP(" + i->class_name + ") twice");
  }
  std::string mismatch;
  for (auto& [name, p] : protos)
    if (!impls.count(name)) {
      mismatch += "\n  REG_OP(" + name + ") has no REG_AUTO_MAPPING_OP class named '" + name + "'";
    }
  for (auto& [name, i] : impls)
    if (!protos.count(name)) {
      mismatch += "\n  REG_AUTO_MAPPING_OP(" + name + ") has no REG_OP(" + name + ") prototype";
      if (name.find("::") != std::string::npos)
        mismatch += " (the key is the class name exactly as written; write REG_AUTO_MAPPING_OP(" +
                    name.substr(name.rfind("::") + 2) + ") inside its namespace)";
    }
  if (!mismatch.empty())
    return InvalidArgument(where + ": the REG_OP type, the REG_AUTO_MAPPING_OP class name and "
                           "the op type used in graphs must be identical:" + mismatch);

  std::vector<std::shared_ptr<RegisteredOp>> ops;
  for (auto& [name, p] : protos) {
    auto proto = ImportPrototype(p, where + "");
    if (!proto.ok()) return proto.status();
    auto op = std::make_shared<RegisteredOp>();
    op->op_type = name;
    op->proto = std::move(proto).value();
    op->impl = impls[name];
    op->library = lib;
    op->origin = origin;
    ops.push_back(std::move(op));
  }
  // All or nothing: check every op before registering any.
  if (!allow_override_)
    for (auto& op : ops)
      if (auto it = ops_.find(op->op_type); it != ops_.end()) return Register(op);
  for (auto& op : ops) WEFT_RETURN_IF_ERROR(Register(op));
  return Status::Ok();
}

Status OpRegistry::LoadPackage(const std::string& root) {
  auto libs = PackageLibraries(root);
  if (!libs.ok()) return libs.status();
  for (const auto& l : libs.value()) WEFT_RETURN_IF_ERROR(LoadLibrary(l));
  // Optional frontend op map: {"ops": {"com.example:MyAdd": "AddCustom", ...}}
  fs::path map_file = fs::path(root) / "framework" / "onnx" / "op_map.json";
  std::error_code ec;
  if (fs::exists(map_file, ec)) {
    std::ifstream f(map_file);
    try {
      auto j = nlohmann::json::parse(f);
      for (auto& [key, value] : j.at("ops").items()) op_map_[key] = value.get<std::string>();
    } catch (const std::exception& e) {
      return InvalidArgument("op map '" + map_file.string() + "' is invalid: " + e.what() +
                             " (expected {\"ops\": {\"domain:OpType\": \"WeftOpType\"}})");
    }
  }
  // LiteRT custom operators: {"ops": {"<customCode>": "WeftOpType", ...}}; a code is matched by its
  // canonical key, as the importer names the node.
  fs::path litert_map = fs::path(root) / "framework" / "litert" / "op_map.json";
  if (fs::exists(litert_map, ec)) {
    std::ifstream f(litert_map);
    try {
      auto j = nlohmann::json::parse(f);
      for (auto& [key, value] : j.at("ops").items()) op_map_["litert:" + LiteRtCustomOpKey(key)] = value.get<std::string>();
    } catch (const std::exception& e) {
      return InvalidArgument("op map '" + litert_map.string() + "' is invalid: " + e.what() +
                             " (expected {\"ops\": {\"<customCode>\": \"WeftOpType\"}})");
    }
  }
  return Status::Ok();
}

std::shared_ptr<const RegisteredOp> OpRegistry::FindForNode(const std::string& domain, const std::string& op_type) const {
  if (!domain.empty())
    if (auto it = op_map_.find(domain + ":" + op_type); it != op_map_.end()) return Find(it->second);
  return Find(op_type);
}

std::shared_ptr<const RegisteredOp> OpRegistry::Find(const std::string& op_type) const {
  auto it = ops_.find(op_type);
  return it == ops_.end() ? nullptr : it->second;
}

std::string OpRegistry::DescribeMissing(const std::string& op_type) const {
  auto lower = [](std::string s) {
    std::string o;
    for (char c : s)
      if (std::isalnum(static_cast<unsigned char>(c))) o += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return o;
  };
  // Near: a few edits away (NearestNames), or equal / containing one another once case and
  // punctuation are dropped ("add_custom" for "AddCustom", "AddCustomV2" for "AddCustom").
  std::vector<std::string> names;
  for (auto& [name, op] : ops_) names.push_back(name);
  std::vector<std::string> near = NearestNames(op_type, names, 5);
  std::string want = lower(op_type);
  for (auto& [name, op] : ops_) {
    std::string have = lower(name);
    if (have == want || (want.size() > 3 && (have.find(want) != std::string::npos || want.find(have) != std::string::npos)))
      if (near.size() < 5 && std::find(near.begin(), near.end(), name) == near.end()) near.push_back(name);
  }
  std::string msg = "op type '" + op_type + "' is not registered in this session";
  if (near.empty())
    return msg + "; load the package that provides it (WEFT_CUSTOM_OPP_PATH=<package root>, or --package)";
  bool plugin = false;
  msg += "; did you mean ";
  for (size_t k = 0; k < near.size(); ++k) {
    const RegisteredOp& op = *ops_.at(near[k]);
    plugin = plugin || op.library;
    msg += (k == 0 ? "'" : k + 1 == near.size() ? " or '" : ", '") + near[k] +
           (op.library ? "' (REG_OP and REG_AUTO_MAPPING_OP in " + op.origin + ")" : "' (built-in)");
  }
  msg += "?";
  if (plugin) msg += " The graph's op type, the REG_OP type and the REG_AUTO_MAPPING_OP class name must be identical";
  return msg;
}

std::vector<OpInfo> OpRegistry::List() const {
  std::vector<OpInfo> out;
  for (auto& [name, op] : ops_) {
    OpInfo i;
    i.op_type = name;
    i.version = op->proto.version;
    i.origin = op->origin;
    i.capabilities = op->impl->capabilities;
    i.overridden_builtin = op->replaced_builtin;
    if (op->library && op->library->lib) i.abi_version = op->library->lib->abi_version;
    out.push_back(i);
  }
  return out;
}

}  // namespace weft::internal
