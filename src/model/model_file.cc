// Writing and reading model files: CompiledModel::Save, Session::LoadModel, InspectModelFile.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "compile/compiler.h"
#include "model/model_format.h"

namespace weft::internal {

using nlohmann::json;

namespace {

json Pair(uint64_t off, uint64_t n) { return json::array({off, n}); }

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

json ShapeJson(const Shape& s) {
  json a = json::array();
  for (int64_t k = 0; k < s.ndim; ++k) a.push_back(s.dims[k]);
  return a;
}

json AttrJson(const std::string& name, const AttrValue& v, DataSection& data) {
  json val;
  switch (v.type()) {
    case WEFT_ATTR_INT: val = v.i(); break;
    case WEFT_ATTR_FLOAT: val = Bits(v.f()); break;
    case WEFT_ATTR_BOOL: val = v.i() != 0; break;
    case WEFT_ATTR_STRING: val = v.s(); break;
    case WEFT_ATTR_TYPE: val = v.i(); break;
    case WEFT_ATTR_LIST_INT: val = json(v.ints()); break;
    case WEFT_ATTR_LIST_FLOAT: {
      val = json::array();
      for (float f : v.floats()) val.push_back(Bits(f));
      break;
    }
    case WEFT_ATTR_LIST_STRING: val = json(v.strings()); break;
    case WEFT_ATTR_LIST_BOOL: {
      val = json::array();
      for (auto b : v.bools()) val.push_back(b != 0);
      break;
    }
    case WEFT_ATTR_TENSOR: {
      auto& b = v.tensor_bytes();
      val = {{"dtype", static_cast<int>(v.tensor().GetDataType())},
             {"shape", ShapeJson(v.tensor().GetShape())},
             {"data", Pair(data.Add(b.data(), b.size()), b.size())}};
      break;
    }
    default: break;
  }
  return json::array({name, static_cast<int>(v.type()), val});
}

// The package root a library came from: <root>/op_graph/lib/<os>/<arch>/lib.so → root's name.
// Its manifest's name when the package has one.
std::string PackageOf(const std::string& lib_path) {
  auto pos = lib_path.rfind("/op_graph/lib/");
  if (pos == std::string::npos) return "";
  std::filesystem::path root(lib_path.substr(0, pos));
  std::ifstream f(root / "weft_manifest.json");
  if (f) {
    json j = json::parse(f, nullptr, false);
    if (j.is_object() && j.contains("package") && j["package"].is_string()) return j["package"].get<std::string>();
  }
  return root.filename().string();
}

Status WriteFileAtomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  if (path.empty() || path.find('\0') != std::string::npos) return InvalidArgument("model file path is empty or holds a NUL byte");
  // The new file replaces the old by rename: never a device, FIFO, socket or directory.
  struct stat sb {};
  if (stat(path.c_str(), &sb) == 0 && !S_ISREG(sb.st_mode))
    return InvalidArgument("cannot write model file '" + path + "': it exists and is not a regular file");
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return IoError("cannot write model file '" + path + "': " + std::strerror(errno));
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!f) {
      std::remove(tmp.c_str());
      return IoError("cannot write model file '" + path + "' (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return IoError("cannot write model file '" + path + "': " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

Status ModelImpl::Save(const std::string& path, const SaveOptions& options) const {
  DataSection data;
  json meta;
  meta["format"] = "weft-model";
  meta["name"] = graph_name;
  meta["dynamic"] = dynamic;
  json consts = json::array();
  for (size_t k = 0; k < const_data.size(); ++k) consts.push_back(Pair(data.Add(const_data[k], const_bytes[k]), const_bytes[k]));
  meta["constants"] = consts;
  json vals = json::array();
  for (const Value& v : values) {
    json jv = {{"name", v.name}, {"kind", static_cast<int>(v.kind)}, {"dtype", static_cast<int>(v.dtype)},
               {"shape", ShapeJson(v.shape)}, {"format", v.format}, {"bytes", v.bytes}, {"index", v.index}};
    if (v.bounded) jv["bound"] = ShapeJson(v.bound);
    vals.push_back(jv);
  }
  meta["values"] = vals;
  meta["inputs"] = input_ids;
  meta["outputs"] = output_ids;

  // Op identities and libraries, deduplicated.
  json libs = json::array(), ops = json::array();
  std::map<const LoadedLibrary*, int> lib_index;
  std::map<std::string, int> op_index;
  // Tensors as Serialize sees them: metadata, constants with data.
  std::vector<Tensor> meta_t(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    const Value& v = values[k];
    meta_t[k].dtype = v.dtype;
    *Shape::View(&meta_t[k].shape) = v.shape;
    meta_t[k].format = v.format;
    meta_t[k].size_bytes = v.bytes;
    if (v.kind == ValueKind::kConstant) meta_t[k].data = const_cast<void*>(const_data[v.index]);
  }
  json nodes_j = json::array();
  for (auto& up : nodes) {
    const CompiledNode& n = *up;
    const WeftOpImpl* impl = n.op->impl;
    bool portable = (impl->capabilities & WEFT_CAP_PORTABLE) && impl->serialize && impl->deserialize;
    if ((impl->capabilities & WEFT_CAP_COMPILABLE) && !portable)
      return FailedPrecondition("[" + n.op_type + " '" + n.name + "'] cannot be saved: the op (from " + n.op->origin +
                                ") has a Compile callback but no PortableOp, so a loaded model could not restore what "
                                "Compile prepared. Implement PortableOp (Serialize/Deserialize)");
    if (!op_index.count(n.op_type)) {
      int li = -1;
      if (n.op->library) {
        auto it = lib_index.find(n.op->library.get());
        if (it == lib_index.end()) {
          const LoadedLibrary& L = *n.op->library;
          json jl = {{"name", std::filesystem::path(L.path).filename().string()}, {"package", PackageOf(L.path)},
                     {"hash", L.hash}, {"pinned", options.pin_plugin_hashes},
                     {"abi", L.lib ? L.lib->abi_version : WEFT_ABI_VERSION}, {"embedded", nullptr}};
          if (options.embed_plugins) {
            std::ifstream f(L.path, std::ios::binary);
            std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            if (b.empty()) return IoError("cannot read plugin library '" + L.path + "' to embed it");
            jl["embedded"] = Pair(data.Add(b.data(), b.size()), b.size());
          }
          it = lib_index.emplace(n.op->library.get(), static_cast<int>(libs.size())).first;
          libs.push_back(jl);
        }
        li = it->second;
      }
      op_index[n.op_type] = static_cast<int>(ops.size());
      ops.push_back({{"type", n.op_type}, {"version", n.op->proto.version}, {"library", li}});
    }
    json jn = {{"name", n.name}, {"op", op_index[n.op_type]}, {"in", n.in_values}, {"out", n.out_values}};
    json irin = json::array(), irout = json::array();
    for (size_t k = 0; k < n.ir_in_start.size(); ++k) irin.push_back(json::array({n.ir_in_start[k], n.ir_in_count[k]}));
    for (size_t k = 0; k < n.ir_out_start.size(); ++k) irout.push_back(json::array({n.ir_out_start[k], n.ir_out_count[k]}));
    jn["ir_in"] = irin;
    jn["ir_out"] = irout;
    json attrs = json::array();
    for (size_t a = 0; a < n.attrs.size(); ++a) attrs.push_back(AttrJson(n.attr_names[a], n.attrs[a], data));
    jn["attrs"] = attrs;
    if (n.epilogue.activation != WEFT_ACT_NONE)
      jn["epilogue"] = json::array({ActivationName(n.epilogue.activation), Bits(n.epilogue.alpha), Bits(n.epilogue.beta)});
    if (!n.guards.empty()) {
      json when = json::array();
      for (auto& [id, want] : n.guards) when.push_back(json::array({id, want}));
      jn["when"] = when;
    }
    json blobs = json::object();
    if (portable) {
      std::map<std::string, std::vector<uint8_t>> out;
      std::vector<WeftTensor*> ins, outs;
      for (int id : n.in_values) ins.push_back(&meta_t[id]);
      for (int id : n.out_values) outs.push_back(&meta_t[id]);
      std::string error;
      CallState st;
      st.node = &n;
      st.error = &error;
      st.env = env.get();
      st.blobs = &out;
      WeftKernelContext c;
      BindContext(c, n, WEFT_STAGE_SERIALIZE, ins.data(), outs.data(), &st);
      if (impl->serialize(n.instance, &c) != WEFT_STATUS_OK) return Internal(NodeError(n, "Serialize", error));
      for (auto& [key, b] : out) blobs[key] = Pair(data.Add(b.data(), b.size()), b.size());
    }
    jn["blobs"] = blobs;
    json kernels = json::array();
    for (auto& [id, k] : n.kernels) {
      auto b = k->Bytes();
      if (!b.ok()) return Status(b.status().code(), NodeError(n, "saving runtime-compiled kernel '" + k->tag + "'", b.status().message()));
      kernels.push_back(json::array({id, k->tag, Pair(data.Add(b.value().data(), b.value().size()), b.value().size())}));
    }
    jn["kernels"] = kernels;
    nodes_j.push_back(jn);
  }
  meta["libraries"] = libs;
  meta["ops"] = ops;
  meta["nodes"] = nodes_j;
  std::string text = meta.dump(-1, ' ', false, json::error_handler_t::replace);
  return WriteFileAtomically(path, AssembleModelFile(text, data));
}

namespace {

// A read-only mapping of the whole file, or an aligned copy of a buffer.
Expected<std::shared_ptr<const void>> MapFile(const std::string& path, size_t* size) {
  if (path.find('\0') != std::string::npos) return InvalidArgument("model file path holds a NUL byte");
  // Non-blocking, so that opening a FIFO does not wait for a writer (fstat then refuses it).
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return NotFound("cannot open model file '" + path + "': " + std::strerror(errno));
  struct stat sb {};
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return InvalidArgument("model file '" + path + "' is not a regular file");
  }
  *size = static_cast<size_t>(sb.st_size);
  if (*size == 0) {
    close(fd);
    return InvalidArgument("model file '" + path + "' is empty");
  }
  void* p = mmap(nullptr, *size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return IoError("cannot map model file '" + path + "': " + std::strerror(errno));
  size_t n = *size;
  return std::shared_ptr<const void>(p, [n](const void* q) { munmap(const_cast<void*>(q), n); });
}

}  // namespace

constexpr const char* kTrustHow =
    "load it with --trust-embedded-code (weft run) or trust_embedded_code (LoadOptions or SessionOptions in C++, "
    "Session(...) or load_model(...) in Python) if you trust the file's origin";

Expected<std::shared_ptr<CompiledModel>> LoadModelBytes(std::shared_ptr<const void> mapping, size_t size,
                                                       const std::string& where, const LoadOptions& options,
                                                       const OpRegistry& session_reg, std::shared_ptr<const EngineEnv> env) {
  const uint8_t* base = static_cast<const uint8_t*>(mapping.get());
  auto parsed = ParseModelFile(base, size, options.verify_checksum);
  if (!parsed.ok()) return Status(parsed.status().code(), "model file '" + where + "': " + parsed.status().message());
  ParsedModel& pm = parsed.value();
  // Each op the file needs must be present with the same version, from a plugin library of at
  // least the recorded ABI level (or built in, as recorded), and from the very same library build
  // when the file pins it. An embedded library fills in for a missing or different one (in a
  // registry private to this model).
  OpRegistry reg = session_reg;
  reg.set_allow_override(true);
  std::set<int> loaded_embedded;
  for (const ModelOpRef& o : pm.ops) {
    auto have = reg.Find(o.op_type);
    const ModelLibraryRef* lib = o.library >= 0 ? &pm.libraries[o.library] : nullptr;
    auto same_library = [&](const RegisteredOp& op) {
      if (!lib) return op.library == nullptr;
      if (!op.library || !op.library->lib || op.library->lib->abi_version < lib->abi) return false;
      return !lib->pinned || op.library->hash == lib->hash;
    };
    bool match = have && have->proto.version == o.version && same_library(*have);
    if (match) continue;
    if (lib && lib->data && !loaded_embedded.count(o.library)) {
      // Native code from the file: only on an explicit trust decision. (ParseModelFile already
      // checked its bytes against the hash recorded for it, before anything is mapped.)
      if (!options.trust_embedded_code)
        return FailedPrecondition(
            "model file '" + where + "' needs op '" + o.op_type + "' from its embedded plugin library '" + lib->name +
            "' (" + lib->hash + "), and embedded libraries are native code that runs only when trusted: " + kTrustHow +
            ", or install " + (lib->package.empty() ? lib->name : "package '" + lib->package + "'") +
            " (WEFT_CUSTOM_OPP_PATH) so the file's copy is not needed");
      Status s = reg.LoadLibraryFromMemory("embedded:" + lib->name, lib->data, lib->size);
      if (!s.ok()) return Status(s.code(), "model file '" + where + "': embedded plugin '" + lib->name + "': " + s.message());
      loaded_embedded.insert(o.library);
      have = reg.Find(o.op_type);
      if (have && have->proto.version == o.version) continue;
    }
    std::string need = std::string(lib && lib->pinned ? "the pinned build of " : "") + "op '" + o.op_type + "' version " +
                       std::to_string(o.version);
    if (lib)
      need += " from " + (lib->package.empty() ? std::string("the operator library") : "operator package '" + lib->package + "'") +
              " (library " + lib->name + ", " + lib->hash + ")";
    else
      need += " (built-in)";
    std::string found;
    if (!have) found = "this session has no such op";
    else if (have->proto.version != o.version) found = "this session has version " + std::to_string(have->proto.version) + " from " + have->origin;
    else found = "this session's copy comes from " + have->origin + (have->library ? " (" + have->library->hash + ")" : std::string());
    std::string hint;
    if (!lib)
      hint = "; use the Weft build that wrote the model, or recompile the model with this session's ops (weft compile)";
    else if (have && have->library && have->proto.version == o.version && lib->pinned && have->library->hash != lib->hash)
      hint = "; the file was saved with --pin-plugins and the library was rebuilt since: recompile the model with this build "
             "(weft compile), install the build it was saved with, or save it without pinning";
    else
      hint = "; install " + (lib->package.empty() ? lib->name : "package '" + lib->package + "'") +
             " (WEFT_CUSTOM_OPP_PATH), recompile the model with this session's ops (weft compile), or save it with --embed-plugins";
    return FailedPrecondition("model file '" + where + "' needs " + need + ", but " + found + hint);
  }
  // Runtime-compiled kernels are shared objects from the file: native code, like embedded plugins.
  if (pm.num_kernels > 0 && !options.trust_embedded_code) {
    std::string nodes;
    int shown = 0;
    for (const auto& n : pm.graph.nodes)
      if (!n.kernels.empty() && shown++ < 3) nodes += (nodes.empty() ? "" : ", ") + ("'" + n.name + "' (" + n.op_type + ")");
    return FailedPrecondition("model file '" + where + "' holds " + std::to_string(pm.num_kernels) +
                              " runtime-compiled kernel(s) for node(s) " + nodes + (shown > 3 ? ", ..." : "") +
                              "; they are native code and run only when trusted: " + kTrustHow);
  }
  auto m = InstantiateLoaded(pm.graph, reg, std::move(env));
  if (!m.ok()) return Status(m.status().code(), "model file '" + where + "': " + m.status().message());
  m.value()->file_mapping = std::move(mapping);
  return std::shared_ptr<CompiledModel>(m.value());
}

Expected<std::shared_ptr<CompiledModel>> LoadModelFile(const std::string& path, const LoadOptions& options,
                                                      const OpRegistry& reg, std::shared_ptr<const EngineEnv> env) {
  size_t size = 0;
  auto map = MapFile(path, &size);
  if (!map.ok()) return map.status();
  return LoadModelBytes(map.value(), size, path, options, reg, std::move(env));
}

Expected<std::shared_ptr<CompiledModel>> LoadModelMemory(const void* data, size_t size, const LoadOptions& options,
                                                        const OpRegistry& reg, std::shared_ptr<const EngineEnv> env) {
  size_t n = std::max<size_t>(64, (size + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, n);
  if (!p) return Internal("out of memory copying a model of " + std::to_string(size) + " bytes");
  if (size) std::memcpy(p, data, size);
  std::shared_ptr<const void> owner(p, [](const void* q) { std::free(const_cast<void*>(q)); });
  return LoadModelBytes(owner, size, "<memory>", options, reg, std::move(env));
}

}  // namespace weft::internal

namespace weft {

Expected<ModelFileInfo> InspectModelFile(const std::string& path) {
  size_t size = 0;
  auto map = internal::MapFile(path, &size);
  if (!map.ok()) return map.status();
  auto parsed = internal::ParseModelFile(static_cast<const uint8_t*>(map.value().get()), size, true);
  if (!parsed.ok()) return Status(parsed.status().code(), "model file '" + path + "': " + parsed.status().message());
  auto& pm = parsed.value();
  ModelFileInfo info;
  info.format_version = pm.format_version;
  info.file_bytes = pm.file_bytes;
  info.graph_name = pm.graph.name;
  info.num_nodes = pm.graph.nodes.size();
  info.num_constants = pm.graph.constants.size();
  info.num_kernels = pm.num_kernels;
  info.num_blobs = pm.num_blobs;
  info.weight_bytes = pm.weight_bytes;
  for (auto& o : pm.ops) {
    ModelFileInfo::Plugin p;
    p.op_type = o.op_type;
    p.version = o.version;
    if (o.library >= 0) {
      auto& l = pm.libraries[o.library];
      p.library = l.name;
      p.package = l.package;
      p.hash = l.hash;
      p.embedded = l.data != nullptr;
    }
    info.plugins.push_back(p);
  }
  for (int id : pm.graph.input_ids) {
    auto& v = pm.graph.values[id];
    info.inputs.push_back({v.name, v.dtype, v.shape});
  }
  for (int id : pm.graph.output_ids) {
    auto& v = pm.graph.values[id];
    info.outputs.push_back({v.name, v.dtype, v.shape});
  }
  return info;
}

}  // namespace weft
