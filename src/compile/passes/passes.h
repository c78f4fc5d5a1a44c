// Graph passes of the compile pipeline, one per file. They run on a compiled model's nodes after
// inference and constant folding, and decide only from what each op declares through the SDK
// (FusibleOp, LayoutAwareOp): built-in and plugin ops are treated alike.
#ifndef WEFT_SRC_COMPILE_PASSES_PASSES_H_
#define WEFT_SRC_COMPILE_PASSES_PASSES_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/engine.h"

namespace weft::internal {

// What a pass may ask of the pipeline.
struct PassContext {
  ModelImpl* model = nullptr;
  std::vector<char> graph_output;  // by value id: a graph output (never fused away or blocked)
  // The node's declarations; defaults when it declares nothing. Errors name the node.
  std::function<Status(CompiledNode&, WeftFusionSupport*)> query_fusion;
  std::function<Status(CompiledNode&, WeftLayoutSupport*)> query_layout;
  // Replaces a node's op in place (a rewrite to another registered op type).
  std::function<Status(CompiledNode&)> create_instance;
  // Adds a constant value (a rewrite's new weights); returns its value id. graph_output is the
  // caller's to extend.
  std::function<int(const std::string& name, HostTensor value)> add_constant;
};

// Index of the node's attribute `name` in its op's prototype, or -1 (passes/fold_pad.cc).
int AttrIndex(const CompiledNode& n, const char* name);
// The value of IR input `ir` of `n` when that input has exactly one instance, else -1
// (passes/fold_pad.cc).
int IrInput(const CompiledNode& n, size_t ir);
// Per value: how many nodes that will run read it (a condition a node runs under counts), and the
// last of them (passes/fold_pad.cc).
struct Readers {
  std::vector<int> uses;
  std::vector<CompiledNode*> last;
};
Readers CountReaders(const ModelImpl& m);
// Inserts value `id` as the only instance of the absent optional IR input `ir` of `cn`
// (passes/fuse_epilogues.cc).
void ConnectInput(CompiledNode& cn, uint32_t ir, int id);

// A zero Pad of the spatial dims read only by a Conv becomes the Conv's padding
// (passes/fold_pad.cc).
Status FoldPadIntoConv(PassContext& pc);
// A Slice trimming the spatial edges of a Conv's output, its only reader, becomes less padding
// on the Conv (passes/fold_slice.cc).
Status FoldSliceIntoConv(PassContext& pc);
// An inference BatchNormalization read only from a Conv or ConvTranspose with constant weights
// becomes part of its weights and bias (passes/fold_batch_norm.cc).
Status FoldBatchNorm(PassContext& pc);
// Producer + Add (residual or bias) + activation become one node (passes/fuse_epilogues.cc).
Status FuseEpilogues(PassContext& pc);
// The decomposed LayerNorm exporters emit becomes LayerNormalization (passes/fuse_layer_norm.cc).
Status FuseLayerNorm(PassContext& pc, std::shared_ptr<const RegisteredOp> layer_norm);
// The erf GELU exporters emit, 0.5 * x * (1 + Erf(x / sqrt(2))), becomes Gelu
// (passes/fuse_gelu.cc).
Status FuseGelu(PassContext& pc, std::shared_ptr<const RegisteredOp> gelu);
// Turns `cn` into a node of `op` over `inputs` (one per IR input, in order), its output 0 kept,
// attributes from `attrs` or the op's defaults (passes/fuse_layer_norm.cc).
Status RewriteNode(PassContext& pc, CompiledNode& cn, std::shared_ptr<const RegisteredOp> op, std::vector<int> inputs,
                   const std::map<std::string, AttrValue>& attrs);
// Values whose producer and consumers all accept a blocked layout are stored in it
// (passes/blocked_layout.cc).
Status AssignBlockedLayouts(PassContext& pc);
// A loaded model's layouts: every blocked value is one its producer and consumers declare.
Status CheckBlockedLayouts(PassContext& pc);

}  // namespace weft::internal

#endif  // WEFT_SRC_COMPILE_PASSES_PASSES_H_
