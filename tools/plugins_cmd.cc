// `weft plugins` and `weft manifest`: package manifests, written once at build time and read
// without loading the libraries.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace weft::cli {

namespace {

constexpr const char* kManifestName = "weft_manifest.json";

json IoJson(const OpSchema::Io& io) {
  static const char* kKinds[] = {"required", "optional", "dynamic"};
  json dt = json::array();
  for (DataType d : io.dtypes) dt.push_back(DataTypeName(d));
  json j = {{"name", io.name}, {"kind", kKinds[io.kind]}, {"dtypes", dt}};
  if (!io.dtype_symbol.empty()) j["symbol"] = io.dtype_symbol;
  return j;
}

// A session holding nothing but what `load` puts in it.
Expected<std::unique_ptr<Session>> BareSession() {
  SessionOptions o;
  o.load_builtins = false;
  o.use_env_path = false;
  return Session::Create(o);
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

Status WriteManifest(const std::string& root, const std::string& name) {
  auto libs = PackageLibraries(root);
  if (!libs.ok()) return libs.status();
  json j = {{"weft_manifest", 1}, {"package", name}, {"libraries", json::array()}};
  for (const auto& path : libs.value()) {
    auto session = BareSession();
    if (!session.ok()) return session.status();
    WEFT_RETURN_IF_ERROR(session.value()->LoadLibrary(path));
    auto hash = LibraryHash(path);
    if (!hash.ok()) return hash.status();
    json lib = {{"file", fs::relative(path, root).string()}, {"hash", hash.value()}, {"abi_version", WEFT_ABI_VERSION},
                {"ops", json::array()}};
    for (const OpInfo& info : session.value()->ListOps()) {
      auto schema = session.value()->GetOpSchema(info.op_type);
      if (!schema.ok()) return schema.status();
      const OpSchema& op = schema.value();
      lib["abi_version"] = info.abi_version;
      json ins = json::array(), outs = json::array(), attrs = json::array();
      for (auto& io : op.inputs) ins.push_back(IoJson(io));
      for (auto& io : op.outputs) outs.push_back(IoJson(io));
      for (auto& a : op.attrs) {
        json aj = {{"name", a.name}, {"type", AttrTypeName(a.type)}, {"required", a.required}};
        if (!a.required) aj["default"] = a.default_value.ToString();
        attrs.push_back(aj);
      }
      lib["ops"].push_back({{"type", info.op_type}, {"version", info.version},
                            {"capabilities", CapabilityNames(info.capabilities)},
                            {"inputs", ins}, {"outputs", outs}, {"attrs", attrs}});
    }
    j["libraries"].push_back(lib);
  }
  std::ofstream f(fs::path(root) / kManifestName);
  if (!f) return IoError("cannot write " + (fs::path(root) / kManifestName).string());
  f << j.dump(2) << "\n";
  return Status::Ok();
}

int Plugins(const PluginsArgs& a) {
  std::vector<std::string> roots = a.paths;
  for (auto& p : PackagePathFromEnvironment()) roots.push_back(p);
  int rc = 0;
  json all = json::array();
  if (roots.empty() && !a.json)
    std::cout << "No operator packages: WEFT_CUSTOM_OPP_PATH is empty (set it to package roots, colon-separated; "
                 "GE's ASCEND_CUSTOM_OPP_PATH is read too).\n";
  for (size_t k = 0; k < roots.size(); ++k) {
    const std::string& root = roots[k];
    json entry = {{"root", root}, {"precedence", k}};
    auto libs = PackageLibraries(root);
    if (!libs.ok()) {
      entry["error"] = libs.status().message();
      all.push_back(entry);
      if (!a.json) std::cout << root << "\n  error: " << libs.status().message() << "\n";
      rc = 1;
      continue;
    }
    fs::path mpath = fs::path(root) / kManifestName;
    std::ifstream mf(mpath);
    json m;
    bool have = false;
    if (mf) {
      try {
        m = json::parse(mf);
        have = m.is_object() && m.contains("libraries") && m["libraries"].is_array();
      } catch (const json::exception&) {
      }
    }
    if (!a.json) std::cout << root << (have ? "  (package '" + m.value("package", std::string("?")) + "')" : "") << "\n";
    if (!have) {
      entry["error"] = "no readable " + std::string(kManifestName) + "; regenerate it with: weft manifest " + root;
      if (!a.json) std::cout << "  warning: " << entry["error"].get<std::string>() << "\n";
      rc = 1;
    } else {
      for (auto& lib : m["libraries"]) {
        std::string file = lib.value("file", "");
        fs::path lp = fs::path(root) / file;
        auto hash = LibraryHash(lp.string());
        std::string state = !hash.ok() ? "missing" : hash.value() == lib.value("hash", "") ? "ok" : "stale manifest (library changed)";
        if (state != "ok") rc = 1;
        lib["state"] = state;
        if (!a.json)
          std::cout << "  " << file << "  ABI " << lib.value("abi_version", 0) << "  " << lib.value("hash", "") << "  [" << state << "]\n";
        for (auto& op : lib.value("ops", json::array())) {
          std::vector<std::string> caps = op.value("capabilities", std::vector<std::string>());
          if (!a.json)
            std::cout << "    " << op.value("type", "?") << "  v" << op.value("version", 1) << "  " << Join(caps, ",") << "\n";
        }
      }
      entry["manifest"] = m;
    }
    if (a.load) {
      auto session = BareSession();
      Status s = session.ok() ? session.value()->LoadPackage(root) : session.status();
      entry["load"] = s.ok() ? "ok" : s.message();
      if (!a.json) std::cout << "  load: " << (s.ok() ? "ok" : s.message()) << "\n";
      if (!s.ok()) rc = 1;
    }
    all.push_back(entry);
  }
  json builtins = json::array();
  if (a.builtins) {
    SessionOptions o;
    o.use_env_path = false;
    auto s = Session::Create(o);
    if (!s.ok()) {
      std::cerr << "weft: error: " << s.status().message() << "\n";
      return 1;
    }
    if (!a.json) std::cout << "built-in operators:\n";
    for (auto& op : s.value()->ListOps()) {
      builtins.push_back({{"type", op.op_type}, {"version", op.version}, {"capabilities", CapabilityNames(op.capabilities)}});
      if (!a.json) std::cout << "    " << op.op_type << "  v" << op.version << "  " << Join(CapabilityNames(op.capabilities), ",") << "\n";
    }
  }
  if (a.json) std::cout << json{{"packages", all}, {"builtins", builtins}}.dump(2) << "\n";
  return rc;
}

}  // namespace weft::cli
