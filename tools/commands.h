// Subcommands of the weft tool.
#ifndef WEFT_TOOLS_COMMANDS_H_
#define WEFT_TOOLS_COMMANDS_H_

#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::cli {

struct PluginsArgs {
  std::vector<std::string> paths;  // extra package roots, before WEFT_CUSTOM_OPP_PATH
  bool builtins = false;
  bool load = false;
  bool json = false;
};
// Lists packages from their manifests (no dlopen unless `load`). Returns the exit code.
int Plugins(const PluginsArgs& a);

struct CheckOpArgs {
  std::string package;             // package root, or one operator library (.so)
  std::string op;                  // only this op type ("" = every op the package registers)
  std::vector<std::string> attrs;  // NAME=VALUE, for attributes the checker cannot invent
  bool allow_override = false;
};
// Runs every op type of the package through the op author's checks (one-node graphs per input
// type, plugin checking mode) and prints one PASS/FAIL/SKIP line per check. Returns the exit
// code: 1 when a check failed or the package does not load.
int CheckOp(const CheckOpArgs& a);

// Loads every library of the package at `root` and writes <root>/weft_manifest.json.
Status WriteManifest(const std::string& root, const std::string& name);

}  // namespace weft::cli

#endif  // WEFT_TOOLS_COMMANDS_H_
