// The conversion's registries (weft/registry_context.h): built-ins, option checking, transforms.
#include "weft/registry_context.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <set>

#include "core/suggest.h"
#include "frontends/model_hooks.h"
#include "registry/registry.h"
#include "weft/custom_op.h"

namespace weft {
namespace {

const char* const kLiteRtBuiltinNames[] = {
#include "frontends/litert/litert_builtin_names.inc"
};

// Identity nodes whose output is not a graph output: their readers read the input instead.
Status RemoveIdentity(Graph* g, const std::map<std::string, AttrValue>&) {
  std::set<std::string> outputs(g->outputs().begin(), g->outputs().end());
  std::map<std::string, std::string> alias;
  std::vector<Node> kept;
  for (const Node& n : g->nodes()) {
    if (n.op_type == "Identity" && n.inputs.size() == 1 && n.outputs.size() == 1 && !n.inputs[0].empty() && n.when.empty() &&
        !outputs.count(n.outputs[0])) {
      alias[n.outputs[0]] = n.inputs[0];
      continue;
    }
    kept.push_back(n);
  }
  if (alias.empty()) return Status::Ok();
  auto resolve = [&](std::string name) {
    for (size_t hops = 0; hops <= alias.size(); ++hops) {  // chains of Identity; a cycle stops here
      auto it = alias.find(name);
      if (it == alias.end()) break;
      name = it->second;
    }
    return name;
  };
  Graph out(g->name());
  for (const ValueInfo& in : g->inputs()) out.AddInput(in.name, in.dtype, in.shape);
  for (const auto& [name, t] : g->constants()) out.AddConstant(name, t);
  for (Node& n : kept) {
    for (std::string& in : n.inputs) in = resolve(in);
    for (auto& w : n.when) w.first = resolve(w.first);
    out.AddNode(std::move(n));
  }
  for (const std::string& o : g->outputs()) out.AddOutput(o);
  *g = std::move(out);
  return Status::Ok();
}

}  // namespace

Status RegistryContext::ApplyTransform(const std::string& name, const std::map<std::string, AttrValue>& options, Graph* graph) const {
  const GraphTransform* t = transforms.Get(name);
  if (!t) {
    std::string m = "transform '" + name + "' is not registered";
    auto near = internal::NearestNames(name, transforms.Keys());
    if (!near.empty()) m += "; " + internal::DidYouMean(near);
    m += " (registered: ";
    auto keys = transforms.Keys();
    for (size_t i = 0; i < keys.size(); ++i) m += (i ? ", " : "") + keys[i];
    return NotFound(m + ")");
  }
  if (!t->run) return FailedPrecondition("transform '" + name + "' has no function");
  std::map<std::string, AttrValue> checked = options;
  WEFT_RETURN_IF_ERROR(CheckOptions(t->options, "transform '" + name + "'", &checked));
  Graph work = *graph;  // a failing transform leaves the graph as it was
  Status st;
  try {
    st = t->run(&work, checked);
  } catch (...) {
    return Internal("transform '" + name + "' threw: " + internal::WhatThrew(std::current_exception()));
  }
  if (!st.ok()) return Status(st.code(), "transform '" + name + "': " + st.message());
  *graph = std::move(work);
  return Status::Ok();
}

Expected<std::shared_ptr<RegistryContext>> BuildDefaultRegistryContext(const std::vector<RegistryCustomizer>& customizers, bool allow_override) {
  auto c = std::make_shared<RegistryContext>(allow_override);
  // LiteRT builtins: the importer's own conversion, which has already made the node.
  const LiteRtParser keep = [](const LiteRtOperator&, Node*) { return Status::Ok(); };
  for (const char* name : kLiteRtBuiltinNames)
    if (*name && std::string(name) != "CUSTOM") c->litert_parsers.AddBuiltin(name, keep);
  // Built-in ops that emit C: their own emitter.
  const AotEmitter own = [](AotEmitCall& call) { return call.EmitOwn(); };
  if (const WeftOpLibrary* lib = WeftBuiltinOpLibrary(WEFT_ABI_VERSION)) {
    std::set<std::string> seen;
    for (uint32_t k = 0; k < lib->num_impls; ++k) {
      const WeftOpImpl* impl = lib->impls[k];
      if (impl && impl->class_name && (impl->capabilities & WEFT_CAP_EMITTABLE) && WEFT_HAS_FIELD(impl, WeftOpImpl, emit) && impl->emit &&
          seen.insert(impl->class_name).second)  // an op's class is named as its type (REG_AUTO_MAPPING_OP)
        c->emitters.AddBuiltin(impl->class_name, own);
    }
  }
  GraphTransform ri;
  ri.run = RemoveIdentity;
  ri.doc = "drops Identity nodes whose output is not a graph output (their readers read the input)";
  c->transforms.AddBuiltin("remove_identity", ri);
  for (size_t k = 0; k < customizers.size(); ++k) {
    if (!customizers[k]) continue;
    Status st;
    try {
      st = customizers[k](c.get());
    } catch (...) {
      return Internal("registry customizer #" + std::to_string(k + 1) + " threw: " + internal::WhatThrew(std::current_exception()));
    }
    if (!st.ok()) return Status(st.code(), "registry customizer #" + std::to_string(k + 1) + ": " + st.message());
  }
  return c;
}


std::shared_ptr<const RegistryContext> DefaultRegistryContext() {
  static std::once_flag once;
  static std::shared_ptr<const RegistryContext> ctx;
  std::call_once(once, [] { ctx = BuildDefaultRegistryContext().value(); });
  return ctx;
}

}  // namespace weft
