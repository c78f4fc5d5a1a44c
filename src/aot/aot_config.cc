// weft aot's config file: rules that set attributes on the nodes they reach, checked against each
// op's schema, and module options (docs/aot.md, "Config file").
//
//   operators:
//     - type: LayerNormalization   # an op type, or "*"
//       name: "encoder/*"          # optional glob over node names
//       attributes: {epsilon: 1.0e-5, code_section: .itcm}
//   const_section: .rodata_ext
#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/file_io.h"
#include "core/suggest.h"
#include "weft/aot.h"
#include "weft/registry_context.h"

namespace weft {
namespace {


constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr const char* kCodeSection = "code_section";  // every op takes it: where its C goes

std::string At(const AotConfig& c, int line) { return c.origin + ":" + std::to_string(line); }

Status UnknownKey(const std::string& where, const std::string& what, const std::string& key, const std::vector<std::string>& valid) {
  std::string m = where + ": unknown " + what + " '" + key + "'";
  auto near = internal::NearestNames(key, valid);
  if (!near.empty()) m += "; " + internal::DidYouMean(near);
  m += " (valid: ";
  for (size_t i = 0; i < valid.size(); ++i) m += (i ? ", " : "") + valid[i];
  return InvalidArgument(m + ")");
}

bool ValidSection(const std::string& s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_') return false;
  return true;
}

Expected<AotConfigValue> ReadValue(const YAML::Node& v, const std::string& where) {
  AotConfigValue out;
  if (v.IsScalar()) {
    out.items.push_back(v.Scalar());
    return out;
  }
  if (v.IsSequence()) {
    out.list = true;
    for (const YAML::Node& item : v) {
      if (!item.IsScalar()) return InvalidArgument(where + ": a list attribute holds scalars only");
      out.items.push_back(item.Scalar());
    }
    return out;
  }
  return InvalidArgument(where + ": an attribute value is a scalar or a list of scalars");
}

// Depth of nesting, so that a hostile file cannot recurse the parser's users without bound.
bool TooDeep(const YAML::Node& n, int depth) {
  if (depth > 16) return true;
  if (n.IsMap())
    for (auto it = n.begin(); it != n.end(); ++it)
      if (TooDeep(it->second, depth + 1)) return true;
  if (n.IsSequence())
    for (const YAML::Node& item : n)
      if (TooDeep(item, depth + 1)) return true;
  return false;
}

bool ParseInt(const std::string& s, int64_t* v) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long r = std::strtoll(s.c_str(), &end, 0);
  if (errno || *end) return false;
  *v = r;
  return true;
}

bool ParseFloat(const std::string& s, float* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  double r = std::strtod(s.c_str(), &end);
  if (*end || (std::isfinite(r) && std::fabs(r) > 3.4028234663852886e38)) return false;
  *v = static_cast<float>(r);
  return true;
}

bool ParseBool(const std::string& s, bool* v) {
  if (s == "true" || s == "True" || s == "TRUE" || s == "1") return *v = true, true;
  if (s == "false" || s == "False" || s == "FALSE" || s == "0") return *v = false, true;
  return false;
}

const char* TypeWords(WeftAttrType t) {
  switch (t) {
    case WEFT_ATTR_INT: return "an integer";
    case WEFT_ATTR_FLOAT: return "a float";
    case WEFT_ATTR_BOOL: return "true or false";
    case WEFT_ATTR_STRING: return "a string";
    case WEFT_ATTR_LIST_INT: return "a list of integers";
    case WEFT_ATTR_LIST_FLOAT: return "a list of floats";
    case WEFT_ATTR_LIST_STRING: return "a list of strings";
    case WEFT_ATTR_LIST_BOOL: return "a list of true/false";
    default: return "a value a config file cannot write (a tensor or a data type)";
  }
}

// The value as the schema's type, or false.
bool Convert(const AotConfigValue& v, WeftAttrType t, AttrValue* out) {
  const bool list = t == WEFT_ATTR_LIST_INT || t == WEFT_ATTR_LIST_FLOAT || t == WEFT_ATTR_LIST_STRING || t == WEFT_ATTR_LIST_BOOL;
  if (list != v.list) return false;
  switch (t) {
    case WEFT_ATTR_INT: { int64_t i; if (!ParseInt(v.items[0], &i)) return false; *out = AttrValue::Int(i); return true; }
    case WEFT_ATTR_FLOAT: { float f; if (!ParseFloat(v.items[0], &f)) return false; *out = AttrValue::Float(f); return true; }
    case WEFT_ATTR_BOOL: { bool b; if (!ParseBool(v.items[0], &b)) return false; *out = AttrValue::Bool(b); return true; }
    case WEFT_ATTR_STRING: *out = AttrValue::String(v.items[0]); return true;
    case WEFT_ATTR_LIST_INT: {
      std::vector<int64_t> r(v.items.size());
      for (size_t k = 0; k < r.size(); ++k) if (!ParseInt(v.items[k], &r[k])) return false;
      *out = AttrValue::ListInt(r);
      return true;
    }
    case WEFT_ATTR_LIST_FLOAT: {
      std::vector<float> r(v.items.size());
      for (size_t k = 0; k < r.size(); ++k) if (!ParseFloat(v.items[k], &r[k])) return false;
      *out = AttrValue::ListFloat(r);
      return true;
    }
    case WEFT_ATTR_LIST_STRING: *out = AttrValue::ListString(v.items); return true;
    case WEFT_ATTR_LIST_BOOL: {
      std::vector<bool> r;
      for (const std::string& s : v.items) { bool b; if (!ParseBool(s, &b)) return false; r.push_back(b); }
      *out = AttrValue::ListBool(r);
      return true;
    }
    default: return false;
  }
}

// A value with no declared type: a list or scalar of bools, ints, floats, else strings.
AttrValue Guess(const AotConfigValue& v) {
  for (WeftAttrType t : {WEFT_ATTR_BOOL, WEFT_ATTR_INT, WEFT_ATTR_FLOAT}) {
    AttrValue out;
    WeftAttrType want = t;
    if (v.list) want = t == WEFT_ATTR_BOOL ? WEFT_ATTR_LIST_BOOL : t == WEFT_ATTR_INT ? WEFT_ATTR_LIST_INT : WEFT_ATTR_LIST_FLOAT;
    bool b;
    if (t == WEFT_ATTR_BOOL && !v.items.empty() && !ParseBool(v.items[0], &b)) continue;
    if (t == WEFT_ATTR_BOOL && !v.items.empty() && (v.items[0] == "0" || v.items[0] == "1")) continue;  // numbers, not bools
    if (Convert(v, want, &out)) return out;
  }
  return v.list ? AttrValue::ListString(v.items) : AttrValue::String(v.items[0]);
}

std::string Written(const AotConfigValue& v) {
  if (!v.list) return "'" + v.items[0] + "'";
  std::string s = "[";
  for (size_t k = 0; k < v.items.size(); ++k) s += (k ? ", " : "") + v.items[k];
  return s + "]";
}

}  // namespace

Expected<AotConfig> ParseAotConfig(const std::string& text, const std::string& origin) {
  AotConfig c;
  c.origin = origin;
  if (text.size() > kMaxConfigBytes) return InvalidArgument(origin + ": a config file larger than 1 MiB is not read");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(origin + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (root.IsNull()) return c;
  if (!root.IsMap()) return InvalidArgument(origin + ": the top level must be a mapping (operators, transforms, prefix, const_section, external_arena)");
  if (TooDeep(root, 0)) return InvalidArgument(origin + ": nested deeper than a config file needs");
  static const std::vector<std::string> kTop = {"const_section", "external_arena", "operators", "prefix", "transforms"};
  static const std::vector<std::string> kRule = {"attributes", "name", "type"};
  try {
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string key = it->first.Scalar();
      const YAML::Node& v = it->second;
      const std::string where = At(c, it->first.Mark().line + 1);
      if (key == "prefix" || key == "const_section") {
        if (!v.IsScalar()) return InvalidArgument(where + ": '" + key + "' is a string");
        (key == "prefix" ? c.prefix : c.const_section) = v.Scalar();
      } else if (key == "external_arena") {
        bool b;
        if (!v.IsScalar() || !ParseBool(v.Scalar(), &b)) return InvalidArgument(where + ": 'external_arena' is true or false");
        c.external_arena = b ? 1 : 0;
      } else if (key == "transforms") {
        if (!v.IsSequence()) return InvalidArgument(where + ": 'transforms' is a list (- name: ..., options: {...})");
        for (const YAML::Node& t : v) {
          const std::string tw = At(c, t.Mark().line + 1);
          AotTransformUse use;
          use.line = t.Mark().line + 1;
          if (t.IsScalar()) {  // - remove_identity
            use.name = t.Scalar();
          } else if (t.IsMap()) {
            for (auto f = t.begin(); f != t.end(); ++f) {
              const std::string fk = f->first.Scalar();
              const std::string fw = At(c, f->first.Mark().line + 1);
              if (fk == "name") {
                if (!f->second.IsScalar()) return InvalidArgument(fw + ": 'name' is a string");
                use.name = f->second.Scalar();
              } else if (fk == "options") {
                if (!f->second.IsMap()) return InvalidArgument(fw + ": 'options' maps option names to values");
                for (auto a = f->second.begin(); a != f->second.end(); ++a) {
                  auto val = ReadValue(a->second, At(c, a->first.Mark().line + 1));
                  if (!val.ok()) return val.status();
                  if (!use.options.emplace(a->first.Scalar(), std::move(val).value()).second)
                    return InvalidArgument(At(c, a->first.Mark().line + 1) + ": option '" + a->first.Scalar() + "' given twice");
                }
              } else {
                return UnknownKey(fw, "transform key", fk, {"name", "options"});
              }
            }
          } else {
            return InvalidArgument(tw + ": a transform is a name, or a mapping with name and options");
          }
          if (use.name.empty()) return InvalidArgument(tw + ": the transform has no name");
          c.transforms.push_back(std::move(use));
        }
      } else if (key == "operators") {
        if (!v.IsSequence()) return InvalidArgument(where + ": 'operators' is a list of rules (- type: ..., attributes: {...})");
        for (const YAML::Node& r : v) {
          const std::string rw = At(c, r.Mark().line + 1);
          if (!r.IsMap()) return InvalidArgument(rw + ": a rule is a mapping with type, name and attributes");
          AotRule rule;
          rule.line = r.Mark().line + 1;
          bool has_attrs = false;
          for (auto f = r.begin(); f != r.end(); ++f) {
            const std::string fk = f->first.Scalar();
            const std::string fw = At(c, f->first.Mark().line + 1);
            if (fk == "type" || fk == "name") {
              if (!f->second.IsScalar()) return InvalidArgument(fw + ": '" + fk + "' is a string");
              (fk == "type" ? rule.type : rule.name) = f->second.Scalar();
            } else if (fk == "attributes") {
              if (!f->second.IsMap()) return InvalidArgument(fw + ": 'attributes' maps attribute names to values");
              for (auto a = f->second.begin(); a != f->second.end(); ++a) {
                auto val = ReadValue(a->second, At(c, a->first.Mark().line + 1));
                if (!val.ok()) return val.status();
                if (!rule.attributes.emplace(a->first.Scalar(), std::move(val).value()).second)
                  return InvalidArgument(At(c, a->first.Mark().line + 1) + ": attribute '" + a->first.Scalar() + "' given twice");
              }
              has_attrs = true;
            } else {
              return UnknownKey(fw, "rule key", fk, kRule);
            }
          }
          if (rule.type.empty()) return InvalidArgument(rw + ": 'type' is an op type or \"*\"");
          if (!has_attrs) return InvalidArgument(rw + ": the rule sets no attributes");
          c.rules.push_back(std::move(rule));
        }
      } else {
        return UnknownKey(where, "key", key, kTop);
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return c;
}

Expected<AotConfig> LoadAotConfig(const std::string& path) {
  auto text = internal::ReadRegularFile(path, "config file", kMaxConfigBytes);
  if (!text.ok()) return text.status();
  return ParseAotConfig(text.value(), path);
}

Status ApplyAotConfig(const AotConfig& c, const Session& session, Graph* graph, AotOptions* options) {
  if (!c.prefix.empty() && (options->prefix.empty() || options->prefix == "model")) options->prefix = c.prefix;
  if (!c.const_section.empty() && options->const_section.empty()) options->const_section = c.const_section;
  if (c.external_arena == 1) options->external_arena = true;
  std::shared_ptr<const RegistryContext> registry = options->registry ? options->registry : DefaultRegistryContext();
  for (const AotTransformUse& use : c.transforms) {
    const std::string where = At(c, use.line) + ": transform '" + use.name + "'";
    const GraphTransform* t = registry->transforms.Get(use.name);
    if (!t) {
      std::string m = where + " is not registered";
      auto keys = registry->transforms.Keys();
      auto near = internal::NearestNames(use.name, keys);
      if (!near.empty()) m += "; " + internal::DidYouMean(near);
      m += " (registered: ";
      for (size_t i = 0; i < keys.size(); ++i) m += (i ? ", " : "") + keys[i];
      return InvalidArgument(m + ")");
    }
    std::map<std::string, AttrValue> typed;
    std::vector<std::string> declared;
    for (const OptionField& f : t->options.fields) declared.push_back(f.name);
    for (const auto& [key, value] : use.options) {
      const OptionField* field = nullptr;
      for (const OptionField& f : t->options.fields)
        if (f.name == key) field = &f;
      if (!field && !t->options.allow_extra) {
        if (declared.empty()) return InvalidArgument(where + ": unknown option '" + key + "' (it takes no options)");
        return UnknownKey(where, "option", key, declared);
      }
      AttrValue v;
      if (field) {
        if (!Convert(value, field->type, &v))
          return InvalidArgument(where + ": option '" + key + "' takes " + TypeWords(field->type) + "; the file gives " + Written(value));
      } else {  // undeclared, passed on: the narrowest type that reads it
        v = Guess(value);
      }
      typed[key] = std::move(v);
    }
    Status st = registry->ApplyTransform(use.name, typed, graph);
    if (!st.ok()) return Status(st.code(), At(c, use.line) + ": " + st.message());
  }
  std::vector<std::string> known_types;
  for (const OpInfo& op : session.ListOps()) known_types.push_back(op.op_type);
  for (size_t ri = 0; ri < c.rules.size(); ++ri) {
    const AotRule& rule = c.rules[ri];
    const std::string where = At(c, rule.line) + ": rule " + std::to_string(ri + 1);
    if (rule.type != "*" && !session.GetOpSchema(rule.type).ok()) {
      std::string m = where + ": no op type '" + rule.type + "' is registered";
      auto near = internal::NearestNames(rule.type, known_types);
      return InvalidArgument(near.empty() ? m : m + "; " + internal::DidYouMean(near));
    }
    // The nodes it reaches and their schemas.
    std::vector<Node*> hit;
    std::map<std::string, OpSchema> schemas;
    for (Node& n : graph->mutable_nodes()) {
      if (rule.type != "*" && n.op_type != rule.type) continue;
      if (!rule.name.empty() && fnmatch(rule.name.c_str(), n.name.c_str(), 0) != 0) continue;
      if (!schemas.count(n.op_type)) {
        auto s = session.GetOpSchema(n.op_type);
        if (!s.ok()) return Status(s.status().code(), where + ": node '" + n.name + "': " + s.status().message());
        schemas.emplace(n.op_type, std::move(s).value());
      }
      hit.push_back(&n);
    }
    if (hit.empty())
      return InvalidArgument(where + " (type " + rule.type + (rule.name.empty() ? "" : ", name " + rule.name) + ") reaches no node of the model");
    for (const auto& [key, value] : rule.attributes) {
      if (key == kCodeSection) {
        if (value.list || !ValidSection(value.items[0]))
          return InvalidArgument(where + ": code_section " + Written(value) + " must be a section name of letters, digits, '.' and '_'");
        for (Node* n : hit) options->code_sections[n->name] = value.items[0];
        continue;
      }
      size_t applied = 0;
      std::set<std::string> valid = {kCodeSection};
      const OpSchema::Attr a_from_options{};  // marks a key found in the registry's options schema
      for (Node* n : hit) {
        const OpSchema& s = schemas.at(n->op_type);
        const OpSchema::Attr* def = nullptr;
        for (const OpSchema::Attr& a : s.attrs) {
          valid.insert(a.name);
          if (a.name == key) def = &a;
        }
        WeftAttrType type = def ? def->type : WEFT_ATTR_INT;
        if (const OptionSchema* os = registry->options.Get(n->op_type)) {  // the op type's typed options
          for (const OptionField& f : os->fields) {
            valid.insert(f.name);
            if (f.name == key && !def) type = f.type, def = &a_from_options;
          }
        }
        if (!def) continue;  // a "*" rule sets a key on the ops that declare it
        AttrValue v;
        if (!Convert(value, type, &v))
          return InvalidArgument(where + ": attribute '" + key + "' of " + n->op_type + " takes " + TypeWords(type) + "; the rule gives " +
                                 Written(value));
        n->attrs[key] = v;
        ++applied;
      }
      if (!applied) {
        const std::vector<std::string> names(valid.begin(), valid.end());
        std::string m = where + ": " + (rule.type == "*" ? std::string("no op the rule reaches has") : rule.type + " has no") + " attribute '" + key + "'";
        auto near = internal::NearestNames(key, names);
        if (!near.empty()) m += "; " + internal::DidYouMean(near);
        m += " (valid: ";
        for (size_t i = 0; i < names.size(); ++i) m += (i ? ", " : "") + names[i];
        return InvalidArgument(m + ")");
      }
    }
  }
  return Status();
}

}  // namespace weft
