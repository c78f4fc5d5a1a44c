// ONNX Runtime's com.microsoft float operators, as the standard operators they stand for.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft::internal {

// What a rewrite may know of the graph around a node.
struct OnnxContribContext {
  Graph& g;                            // takes the constants the rewrites add
  std::function<const HostTensor*(const std::string&)> constant;  // a constant's value by name, or null
  std::map<std::string, int>& ranks;   // known ranks of values; the rewrites add their outputs'
  std::vector<std::string>& problems;  // forms that cannot be rewritten, each naming the node
};

// When `n` is one of the com.microsoft operators ONNX Runtime's graph optimizers write into saved
// models (FusedConv, FusedGemm, FusedMatMul, SkipLayerNormalization,
// SkipSimplifiedLayerNormalization, BiasGelu, FastGelu, BiasAdd, Attention,
// EmbedLayerNormalization), appends the standard nodes that compute it to *out, its outputs
// keeping their names, and returns true; a form it cannot rewrite adds a problem instead. Returns
// false for every other node (QuickGelu, Gelu and SimplifiedLayerNormalization are operators of
// their own).
bool LowerOnnxRuntimeContribOp(const Node& n, OnnxContribContext& ctx, std::vector<Node>* out);

// Standard operators defined as functions that are rewritten as their parts rather than run by
// an operator of their own (RotaryEmbedding, SwiGLU, LpNormalization, LpPool, CenterCropPad);
// false for every other node.
bool IsStandardFunctionOp(const std::string& op_type);
bool LowerOnnxStandardFunctionOp(const Node& n, OnnxContribContext& ctx, std::vector<Node>* out);

// The same for the com.microsoft.nchwc domain (the channel-blocked graphs ONNX Runtime saves at
// ORT_ENABLE_ALL): ReorderInput, ReorderOutput, Conv, Upsample and the pools, read in plain NCHW
// with the channels padded as ONNX Runtime pads them. True for every node of that domain (an
// operator it does not know adds a problem).
bool LowerOnnxRuntimeNchwcOp(const Node& n, OnnxContribContext& ctx, std::vector<Node>* out);

}  // namespace weft::internal
