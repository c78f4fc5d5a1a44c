// The compile pipeline: verify, infer types and shapes, graph passes (passes/), Compile
// callbacks, memory plan. The runtime (runtime/engine.h) runs what it produces; it never calls
// back into compilation except through ModelImpl::specialize, which the compiler sets.
#ifndef WEFT_SRC_COMPILE_COMPILER_H_
#define WEFT_SRC_COMPILE_COMPILER_H_

#include <memory>
#include <vector>

#include "runtime/engine.h"

namespace weft::internal {

// The compile pipeline: verify, infer types and shapes, Compile callbacks, plan memory.
// Types and shapes of the graph outputs by inference only (Session::InferShapes).
Expected<std::vector<ValueInfo>> InferGraphShapes(const Graph& g, const OpRegistry& reg, std::shared_ptr<const EngineEnv> env);

// `input_shapes`, when given, replaces the graph inputs' declared shapes (specialization).
Expected<std::shared_ptr<CompiledModel>> CompileGraph(const Graph& g, const OpRegistry& reg,
                                                      std::shared_ptr<const EngineEnv> env,
                                                      const std::vector<Shape>* input_shapes = nullptr);

// Binds a loaded graph to the registry's ops: creates instances, re-checks types and shapes
// (InferShape, never Compile), calls Deserialize, plans memory.
Expected<std::shared_ptr<ModelImpl>> InstantiateLoaded(const LoadedGraph& lg, const OpRegistry& reg,
                                                       std::shared_ptr<const EngineEnv> env);

struct MemoryPlan {
  size_t arena_bytes = 0;
  size_t lower_bound_bytes = 0;
};
// Assigns arena offsets to intermediates from their live ranges [producer, last_use].
// `red_zone` bytes stay free after every tensor (plugin checking mode).
MemoryPlan PlanMemory(std::vector<Value>& values, int num_steps, size_t red_zone = 0);
}  // namespace weft::internal

#endif  // WEFT_SRC_COMPILE_COMPILER_H_
