// A Slice that trims the spatial edges of a Conv's output becomes less padding on the Conv:
//   Conv(x, pads p) -> Slice(starts s, ends e, steps 1 on spatial axes)
// runs as Conv(x, pads p - trimmed * stride), which computes only the outputs kept. Causal
// convolutions are written this way (temporal convolution networks pad both ends and "chomp" the
// tail, WaveNet-style audio models likewise); the Slice is then a copy of nearly the whole
// activation, and it also stands between the Conv and the activation that would fuse into it.
//
// With stride S, removing the first s outputs moves the first window by s*S (the begin padding
// shrinks by s*S) and removing the last t outputs shrinks the end padding by t*S: the output count
// floor((L + pb + pe - d(k-1) - 1) / S) + 1 drops by exactly s + t. Folded only where both paddings
// stay non-negative. Matched on ONNX op types: a rewrite between standard operators.
#include <algorithm>
#include <string>

#include "compile/passes/passes.h"

namespace weft::internal {

namespace {

// The integer values of a constant index tensor, or false.
bool ConstantIndices(const ModelImpl& m, int id, std::vector<int64_t>* out) {
  const Value& v = m.values[static_cast<size_t>(id)];
  if (v.kind != ValueKind::kConstant) return false;
  const HostTensor& t = m.constants[v.index];
  const int64_t n = t.shape().GetShapeSize();
  if (t.shape().GetDimNum() > 1 || n < 0) return false;
  out->resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    if (t.dtype() == DT_INT64) (*out)[static_cast<size_t>(k)] = t.data_as<int64_t>()[k];
    else if (t.dtype() == DT_INT32) (*out)[static_cast<size_t>(k)] = t.data_as<int32_t>()[k];
    else return false;
  }
  return true;
}

std::vector<int64_t> IntsAttr(const CompiledNode& n, const char* name, size_t count, int64_t fill) {
  int k = AttrIndex(n, name);
  std::vector<int64_t> v = k < 0 ? std::vector<int64_t>() : n.attrs[static_cast<size_t>(k)].ints();
  if (v.empty()) v.assign(count, fill);
  return v;
}

}  // namespace

Status FoldSliceIntoConv(PassContext& pc) {
  ModelImpl& m = *pc.model;
  Readers readers = CountReaders(m);
  const std::vector<int>& uses = readers.uses;
  const std::vector<CompiledNode*>& reader = readers.last;
  for (auto& up : m.nodes) {
    CompiledNode& conv = *up;
    if (conv.folded || conv.pruned || conv.op_type != "Conv" || conv.out_values.size() != 1 || !conv.guards.empty()) continue;
    const int c = conv.out_values[0];
    if (uses[c] != 1 || pc.graph_output[c]) continue;
    CompiledNode* slice = reader[c];
    if (!slice || slice->folded || slice->pruned || slice->op_type != "Slice" || slice->out_values.size() != 1 ||
        slice->in_values.empty() || slice->in_values[0] != c || slice->ir_in_count.size() < 3 || !slice->guards.empty())
      continue;
    const Value& cv = m.values[static_cast<size_t>(c)];
    const size_t rank = cv.shape.GetDimNum();
    if (cv.shape.IsUnknown() || rank < 3 || rank > 5) continue;
    const size_t spatial = rank - 2;
    int auto_pad = AttrIndex(conv, "auto_pad"), pads_at = AttrIndex(conv, "pads");
    if (auto_pad < 0 || pads_at < 0 || conv.attrs[static_cast<size_t>(auto_pad)].s() != "NOTSET") continue;
    std::vector<int64_t> pads = IntsAttr(conv, "pads", 2 * spatial, 0), strides = IntsAttr(conv, "strides", spatial, 1);
    if (pads.size() != 2 * spatial || strides.size() != spatial) continue;

    // Slice's inputs: data, starts, ends, axes?, steps?
    auto ir = [&](size_t k) { return IrInput(*slice, k); };
    std::vector<int64_t> starts, ends, axes, steps;
    if (ir(1) < 0 || ir(2) < 0 || !ConstantIndices(m, ir(1), &starts) || !ConstantIndices(m, ir(2), &ends) ||
        starts.size() != ends.size())
      continue;
    if (ir(3) >= 0) {
      if (!ConstantIndices(m, ir(3), &axes)) continue;
    } else {
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    }
    if (ir(4) >= 0 && !ConstantIndices(m, ir(4), &steps)) continue;
    if (axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size())) continue;

    std::vector<int64_t> merged = pads;
    std::vector<bool> seen(rank, false);
    bool ok = true;
    for (size_t k = 0; k < axes.size() && ok; ++k) {
      int64_t axis = axes[k] < 0 ? axes[k] + static_cast<int64_t>(rank) : axes[k];
      if (axis < 0 || axis >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(axis)]) { ok = false; break; }
      seen[static_cast<size_t>(axis)] = true;
      if (!steps.empty() && steps[k] != 1) { ok = false; break; }
      const int64_t dim = cv.shape.GetDim(static_cast<size_t>(axis));
      // ONNX Slice clamping for step 1: negative indices count from the end, then [0, dim].
      int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k], e = ends[k] < 0 ? ends[k] + dim : ends[k];
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (s == 0 && e == dim) continue;  // this axis is kept whole
      if (axis < 2 || e <= s) { ok = false; break; }  // batch or channels sliced, or nothing left
      const size_t d = static_cast<size_t>(axis) - 2;
      merged[d] -= s * strides[d];
      merged[spatial + d] -= (dim - e) * strides[d];
      ok = merged[d] >= 0 && merged[spatial + d] >= 0;
    }
    if (!ok || merged == pads) continue;
    conv.attrs[static_cast<size_t>(pads_at)] = AttrValue::ListInt(merged);
    conv.attr_ptrs[static_cast<size_t>(pads_at)] = conv.attrs[static_cast<size_t>(pads_at)].c();
    conv.out_values[0] = slice->out_values[0];  // already holds the trimmed shape
    slice->folded = true;
  }
  return Status::Ok();
}

}  // namespace weft::internal
