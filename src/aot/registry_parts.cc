// The parts of the registry context the importers use (weft/registry_context.h): typed option
// checking and model hooks. Apart from the rest, so that the importers' fuzz builds link them alone.
#include <algorithm>
#include <cmath>
#include <exception>

#include "core/suggest.h"
#include "frontends/model_hooks.h"
#include "weft/registry_context.h"

namespace weft {
namespace {

// `v` as type `t` where the conversion loses nothing a schema author would mind.
bool AsType(const AttrValue& v, WeftAttrType t, AttrValue* out) {
  if (v.type() == t) return *out = v, true;
  switch (t) {
    case WEFT_ATTR_FLOAT:
      if (v.type() == WEFT_ATTR_INT) return *out = AttrValue::Float(static_cast<float>(v.i())), true;
      return false;
    case WEFT_ATTR_BOOL:
      if ((v.type() == WEFT_ATTR_INT) && (v.i() == 0 || v.i() == 1)) return *out = AttrValue::Bool(v.i() != 0), true;
      return false;
    case WEFT_ATTR_INT:
      if (v.type() == WEFT_ATTR_BOOL) return *out = AttrValue::Int(v.b() ? 1 : 0), true;
      if (v.type() == WEFT_ATTR_FLOAT && std::isfinite(v.f()) && v.f() == std::trunc(v.f()) && std::fabs(v.f()) < 9.0e15f)
        return *out = AttrValue::Int(static_cast<int64_t>(v.f())), true;
      return false;
    case WEFT_ATTR_LIST_FLOAT:
      if (v.type() == WEFT_ATTR_LIST_INT) {
        std::vector<float> f;
        for (int64_t i : v.ints()) f.push_back(static_cast<float>(i));
        return *out = AttrValue::ListFloat(f), true;
      }
      return false;
    case WEFT_ATTR_LIST_INT:
      if (v.type() == WEFT_ATTR_LIST_FLOAT) {
        std::vector<int64_t> i;
        for (float f : v.floats()) {
          if (!std::isfinite(f) || f != std::trunc(f) || std::fabs(f) >= 9.0e15f) return false;
          i.push_back(static_cast<int64_t>(f));
        }
        return *out = AttrValue::ListInt(i), true;
      }
      return false;
    default: return false;
  }
}

}  // namespace

namespace internal {

std::string WhatThrew(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace internal

Status CheckOptions(const OptionSchema& schema, const std::string& what, std::map<std::string, AttrValue>* attrs,
                    const std::vector<std::string>& exempt) {
  std::vector<std::string> names;
  for (const OptionField& f : schema.fields) names.push_back(f.name);
  auto declared = [&](const std::string& n) -> const OptionField* {
    for (const OptionField& f : schema.fields)
      if (f.name == n) return &f;
    return nullptr;
  };
  for (auto& [name, value] : *attrs) {
    const OptionField* f = declared(name);
    if (!f) {
      if (schema.allow_extra || std::find(exempt.begin(), exempt.end(), name) != exempt.end()) continue;
      std::string m = what + ": option '" + name + "' is not declared";
      auto near = internal::NearestNames(name, names);
      if (!near.empty()) m += "; " + internal::DidYouMean(near);
      m += names.empty() ? std::string(" (it takes no options)") : " (declared: ";
      for (size_t i = 0; i < names.size(); ++i) m += (i ? ", " : "") + names[i];
      return InvalidArgument(m + (names.empty() ? "" : ")"));
    }
    AttrValue v;
    if (!AsType(value, f->type, &v))
      return InvalidArgument(what + ": option '" + name + "' must be " + AttrTypeName(f->type) + ", got " + AttrTypeName(value.type()) + " " +
                             value.ToString());
    value = std::move(v);
  }
  for (const OptionField& f : schema.fields) {
    if (attrs->count(f.name)) continue;
    if (f.required) return InvalidArgument(what + ": option '" + f.name + "' (" + AttrTypeName(f.type) + ") is required");
    if (!f.default_value.empty()) (*attrs)[f.name] = f.default_value;
  }
  return Status::Ok();
}

namespace internal {

Expected<bool> ApplyModelHooks(const RegistryContext* registry, bool litert, const std::string& in, std::string* out, const char* what) {
  if (!registry) return false;
  const PartRegistry<ModelHook>& hooks = litert ? registry->litert_model_hooks : registry->onnx_model_hooks;
  const std::vector<std::string> keys = hooks.Keys();
  if (keys.empty()) return false;
  *out = in;
  for (const std::string& key : keys) {
    const ModelHook* hook = hooks.Get(key);
    if (!hook || !*hook) continue;
    Status st;
    try {
      st = (*hook)(out);
    } catch (...) {
      return Internal(std::string(what) + ": " + hooks.name() + "['" + key + "'] threw: " + WhatThrew(std::current_exception()));
    }
    if (!st.ok()) return Status(st.code(), std::string(what) + ": " + hooks.name() + "['" + key + "']: " + st.message());
    if (out->size() > (uint64_t(1) << 32))
      return InvalidArgument(std::string(what) + ": " + hooks.name() + "['" + key + "'] returned " + std::to_string(out->size()) +
                             " bytes, more than a model file may have (4 GiB)");
  }
  return true;
}

}  // namespace internal

}  // namespace weft
