// Model hooks (weft/registry_context.h) as the importers run them.
#ifndef WEFT_SRC_FRONTENDS_MODEL_HOOKS_H_
#define WEFT_SRC_FRONTENDS_MODEL_HOOKS_H_

#include <exception>
#include <string>

#include "weft/weft.h"

namespace weft {
class RegistryContext;
namespace internal {

// Runs the registry's LiteRT (`litert`) or ONNX model hooks in registration order on a copy of
// `in`. True with the result in `*out` when there were hooks; false (nothing copied) when none.
// A hook's error, exception, or a result above 4 GiB is an error naming the hook.
// The message of the exception being handled (for parts that threw).
std::string WhatThrew(const std::exception_ptr& e);

Expected<bool> ApplyModelHooks(const RegistryContext* registry, bool litert, const std::string& in, std::string* out, const char* what);

}  // namespace internal
}  // namespace weft

#endif  // WEFT_SRC_FRONTENDS_MODEL_HOOKS_H_
