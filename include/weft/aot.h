// Ahead-of-time C: a compiled model as a dependency-free C99 module (docs/aot.md).
//
//   weft::SessionOptions o;
//   o.options["weft.graph_passes"] = "none";  // keep the nodes as the model has them
//   auto model = session->Compile(graph);      // static shapes
//   weft::AotOptions a;
//   a.prefix = "kws";
//   a.output_dir = "out";
//   auto report = weft::GenerateC(*model.value(), a);
//
// Every node's op must be an EmittableOp (built-in Tfl* ops are; a plugin's op may be).
#ifndef WEFT_AOT_H_
#define WEFT_AOT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft {

class RegistryContext;

struct AotOptions {
  // C identifier that starts every public name of the module: <prefix>_init, <prefix>_run, ...
  std::string prefix = "model";
  // Receives includes-api/, src/ and CMakeLists.txt (created if missing).
  std::string output_dir;
  // Put the constant arrays in this linker section (GCC/Clang section attribute); "" = default.
  std::string const_section;
  // The caller passes the arena to <prefix>_init instead of the context holding it.
  bool external_arena = false;
  // Also write <prefix>_test_case_init/_run with golden inputs and outputs, and a test program.
  bool test = false;
  // Test inputs by input name; an input not given gets seeded random values (`seed`). The golden
  // outputs are Weft's runtime's on these inputs.
  std::map<std::string, HostTensor> test_inputs;
  // Expected outputs by output name (e.g. another runtime's) of the first run (from a new
  // context); an output not given, and every later run's, takes Weft's.
  std::map<std::string, HostTensor> test_outputs;
  uint64_t seed = 1;
  // Runs in the test case, one after another on one context; a model whose operators keep state
  // gets at least 8 (so that what a run leaves for the next is compared too).
  int test_steps = 1;
  // Also compare every operator's outputs right after it runs (through the per-operator
  // callback): 1 always, 0 never, -1 when they take at most 1 MiB over all runs.
  int test_layers = -1;
  // Float outputs match when |c - golden| <= atol + rtol * |golden|; integer outputs exactly.
  double atol = 1e-5, rtol = 1e-4;
  // Linker sections for operators' code, by node name (GCC/Clang section attribute on the node's
  // init and run functions); set from a config file's `code_section` rules.
  std::map<std::string, std::string> code_sections;
  // The conversion's parts (weft/registry_context.h): a node whose op type has a registered
  // emitter is emitted by it (the default context's built-in entries are the ops' own emitters);
  // a config file's transforms and option schemas come from it too. Null: the built-ins.
  std::shared_ptr<const RegistryContext> registry;
};

// A config file for weft aot (docs/aot.md, "Config file"): rules that set attributes on the nodes
// they reach, checked against each op's schema (its OpDef), plus module options.
struct AotConfigValue {
  bool list = false;                // written as a sequence
  std::vector<std::string> items;   // the scalars as written (one when not a list)
};
struct AotRule {
  std::string type = "*";  // op type, or "*" for every op
  std::string name;        // glob over node names ('*', '?', [...]); "" = every node
  std::map<std::string, AotConfigValue> attributes;
  int line = 0;            // where the rule starts in the file (1-based)
};
struct AotTransformUse {
  std::string name;  // a transform of the registry context
  std::map<std::string, AotConfigValue> options;
  int line = 0;
};
struct AotConfig {
  std::string origin;  // the file, for messages
  std::vector<AotTransformUse> transforms;  // run in order, before the rules
  std::vector<AotRule> rules;
  std::string prefix, const_section;
  int external_arena = -1;  // -1: not given
};

// Reads a config file (YAML). Errors name the line and the unknown key with the nearest valid one.
WEFT_API Expected<AotConfig> LoadAotConfig(const std::string& path);
WEFT_API Expected<AotConfig> ParseAotConfig(const std::string& yaml_text, const std::string& origin = "config");
// Runs the file's transforms (from options->registry, or the built-ins; each one's options checked
// against its schema), then applies the rules to `graph` (attributes, typed by the op's schema in
// `session`, or by the registry's options schema for the op type) and to `options`
// (code sections; the file's prefix/const_section/external_arena where `options` has defaults).
// Errors name the rule, its line, the key and the nearest valid key.
WEFT_API Status ApplyAotConfig(const AotConfig& config, const Session& session, Graph* graph, AotOptions* options);

// How one arena planning algorithm did.
struct AotArenaTrial {
  std::string algorithm;
  uint64_t bytes = 0;
};

struct AotReport {
  uint64_t arena_bytes = 0;        // the plan the module uses (the smallest trial)
  uint64_t lower_bound_bytes = 0;  // the most bytes ever live at once (aligned)
  std::string algorithm;           // the trial that won
  std::vector<AotArenaTrial> trials;
  uint64_t constant_bytes = 0;
  size_t num_ops = 0;
  size_t num_tensors = 0;          // tensors in tensor_ptrs
  std::vector<std::string> files;  // written, relative to output_dir
};

// Writes the module for `model` (compiled with static shapes; see above). Errors name the node
// whose op cannot emit C, or the option that is wrong.
WEFT_API Expected<AotReport> GenerateC(const CompiledModel& model, const AotOptions& options);

// The graph with input `name` replaced by the constant `value` (weft aot --freeze): its
// consumers see a constant, so shapes that depend on its value (a loop's trip count, a
// conditional's branch) become known when the graph compiles. The value must have the input's
// type and rank and agree with every dim the input fixes.
WEFT_API Expected<Graph> FreezeInput(const Graph& graph, const std::string& name, HostTensor value);

}  // namespace weft

#endif  // WEFT_AOT_H_
