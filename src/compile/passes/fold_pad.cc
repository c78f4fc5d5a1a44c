// A zero Pad of the spatial dims that only feeds a Conv becomes the Conv's own padding:
//   Pad(x, pads, mode "constant", value 0) -> Conv(auto_pad NOTSET, pads p)
// runs as Conv(x, pads p + the Pad's spatial pads), one pass over the data instead of two (and
// no padded copy in memory). Exporters write such Pads for "same" padding with even kernels and
// for asymmetric padding (TensorFlow-trained models, BlazeFace-style detectors). Matched on ONNX
// op types: a rewrite between standard operators.
#include <string>

#include "compile/passes/passes.h"

namespace weft::internal {

int AttrIndex(const CompiledNode& n, const char* name) {
  const auto& attrs = n.op->proto.attrs;
  for (size_t k = 0; k < attrs.size(); ++k)
    if (attrs[k].name == name) return static_cast<int>(k);
  return -1;
}

int IrInput(const CompiledNode& n, size_t ir) {
  if (ir >= n.ir_in_count.size() || n.ir_in_count[ir] != 1) return -1;
  return n.in_values[n.ir_in_start[ir]];
}

Readers CountReaders(const ModelImpl& m) {
  Readers r;
  r.uses.assign(m.values.size(), 0);
  r.last.assign(m.values.size(), nullptr);
  for (auto& cn : m.nodes) {
    if (cn->folded || cn->pruned) continue;
    for (int id : cn->in_values) ++r.uses[id], r.last[id] = cn.get();
    for (auto& g : cn->guards) ++r.uses[g.first], r.last[g.first] = cn.get();
  }
  return r;
}

Status FoldPadIntoConv(PassContext& pc) {
  ModelImpl& m = *pc.model;
  Readers readers = CountReaders(m);
  const std::vector<int>& uses = readers.uses;
  const std::vector<CompiledNode*>& reader = readers.last;
  auto constant = [&](int id) -> const HostTensor* {
    const Value& v = m.values[id];
    return v.kind == ValueKind::kConstant ? &m.constants[v.index] : nullptr;
  };
  for (auto& up : m.nodes) {
    CompiledNode& pad = *up;
    if (pad.folded || pad.op_type != "Pad" || pad.in_values.size() < 2 || pad.in_values.size() > 3 || pad.out_values.size() != 1) continue;
    if (pad.ir_in_count.size() > 3 && pad.ir_in_count[3] != 0) continue;  // an axes input: not handled
    int mode = AttrIndex(pad, "mode");
    if (mode < 0 || pad.attrs[static_cast<size_t>(mode)].s() != "constant") continue;
    const int x = pad.in_values[0], y = pad.out_values[0];
    const Value& xv = m.values[x];
    if (xv.dtype != DT_FLOAT) continue;
    const size_t rank = xv.shape.GetDimNum();
    if (rank < 3 || rank > 5) continue;
    const HostTensor* pads = constant(pad.in_values[1]);
    if (!pads || pads->dtype() != DT_INT64 || pads->shape().GetShapeSize() != static_cast<int64_t>(2 * rank)) continue;
    if (pad.in_values.size() == 3) {  // the pad value must be zero
      const HostTensor* v = constant(pad.in_values[2]);
      if (!v || v->dtype() != DT_FLOAT || v->shape().GetShapeSize() != 1 || *v->data_as<float>() != 0.f) continue;
    }
    const int64_t* p = pads->data_as<int64_t>();
    bool ok = p[0] == 0 && p[1] == 0 && p[rank] == 0 && p[rank + 1] == 0;  // batch and channels untouched
    for (size_t k = 0; k < 2 * rank; ++k) ok = ok && p[k] >= 0;
    if (!ok || uses[y] != 1 || pc.graph_output[y]) continue;
    CompiledNode* conv = reader[y];
    if (!conv || conv->folded || conv->op_type != "Conv" || conv->in_values.empty() || conv->in_values[0] != y) continue;
    int auto_pad = AttrIndex(*conv, "auto_pad"), cpads = AttrIndex(*conv, "pads");
    if (auto_pad < 0 || cpads < 0 || conv->attrs[static_cast<size_t>(auto_pad)].s() != "NOTSET") continue;
    const size_t spatial = rank - 2;
    std::vector<int64_t> merged = conv->attrs[static_cast<size_t>(cpads)].ints();
    if (merged.empty()) merged.assign(2 * spatial, 0);
    if (merged.size() != 2 * spatial) continue;
    for (size_t k = 0; k < spatial; ++k) {
      merged[k] += p[2 + k];                   // begins
      merged[spatial + k] += p[rank + 2 + k];  // ends
    }
    conv->attrs[static_cast<size_t>(cpads)] = AttrValue::ListInt(merged);
    conv->attr_ptrs[static_cast<size_t>(cpads)] = conv->attrs[static_cast<size_t>(cpads)].c();
    conv->in_values[0] = x;
    pad.folded = true;
  }
  return Status::Ok();
}

}  // namespace weft::internal
