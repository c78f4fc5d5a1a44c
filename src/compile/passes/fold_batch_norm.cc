// An inference BatchNormalization read from a Conv or ConvTranspose with constant weights becomes
// part of its weights and bias:
//   y = scale * (conv(x, W) + B - mean) / sqrt(var + epsilon) + bias
//     = conv(x, W * s) + (B - mean) * s + bias,   s = scale / sqrt(var + epsilon) per channel
// so the batch norm's pass over the data goes, and the activation after it (Relu in most CNNs)
// can then fuse into the convolution. PyTorch folds Conv + BatchNorm when it exports, but not
// ConvTranspose + BatchNorm (GAN generators, decoders), and other exporters and training-mode
// exports keep both. Matched on ONNX op types: a rewrite between standard operators. The new
// weights are computed in double and rounded once.
#include <cmath>
#include <string>
#include <vector>

#include "compile/passes/passes.h"

namespace weft::internal {

Status FoldBatchNorm(PassContext& pc) {
  ModelImpl& m = *pc.model;
  Readers readers = CountReaders(m);
  std::vector<int>& uses = readers.uses;  // grown as constants are added
  std::vector<CompiledNode*>& reader = readers.last;
  // A float32 constant's values, or null.
  auto constant = [&](int id, int64_t count) -> const float* {
    if (id < 0) return nullptr;
    const Value& v = m.values[id];
    if (v.kind != ValueKind::kConstant || v.dtype != DT_FLOAT || v.shape.GetShapeSize() != count) return nullptr;
    if (v.index < 0 || static_cast<size_t>(v.index) >= m.constants.size()) return nullptr;
    return m.constants[v.index].data_as<float>();
  };
  for (auto& up : m.nodes) {
    CompiledNode& conv = *up;
    const bool transposed = conv.op_type == "ConvTranspose";
    if (conv.folded || conv.pruned || (conv.op_type != "Conv" && !transposed) || conv.out_values.size() != 1) continue;
    if (!conv.guards.empty()) continue;
    const int y = conv.out_values[0], w_id = IrInput(conv, 1);
    if (uses[y] != 1 || pc.graph_output[y] || w_id < 0 || conv.ir_in_count.size() < 3) continue;
    if (conv.ir_in_count.size() > 3 && conv.ir_in_count[3] != 0) continue;  // a fused sum already
    CompiledNode* bn = reader[y];
    if (!bn || bn->folded || bn->pruned || bn->op_type != "BatchNormalization" || !bn->guards.empty()) continue;
    if (bn->out_values.size() != 1 || bn->in_values.size() != 5 || bn->in_values[0] != y) continue;
    const int training = AttrIndex(*bn, "training_mode"), eps_at = AttrIndex(*bn, "epsilon"), group_at = AttrIndex(conv, "group");
    if (training < 0 || eps_at < 0 || group_at < 0 || bn->attrs[static_cast<size_t>(training)].i() != 0) continue;
    const Value& wv = m.values[w_id];
    const Value& yv = m.values[y];
    if (wv.kind != ValueKind::kConstant || wv.dtype != DT_FLOAT || yv.dtype != DT_FLOAT || wv.shape.GetDimNum() < 3) continue;
    if (wv.index < 0 || static_cast<size_t>(wv.index) >= m.constants.size()) continue;
    if (yv.shape.GetDimNum() != wv.shape.GetDimNum() || yv.shape.IsUnknown()) continue;
    const int64_t group = conv.attrs[static_cast<size_t>(group_at)].i();
    const int64_t channels = yv.shape.GetDim(1);
    if (group <= 0 || channels <= 0) continue;
    const float* scale = constant(bn->in_values[1], channels);
    const float* shift = constant(bn->in_values[2], channels);
    const float* mean = constant(bn->in_values[3], channels);
    const float* var = constant(bn->in_values[4], channels);
    const int b_id = IrInput(conv, 2);
    const float* bias = b_id >= 0 ? constant(b_id, channels) : nullptr;
    if (!scale || !shift || !mean || !var || (b_id >= 0 && !bias)) continue;
    const float* w = m.constants[wv.index].data_as<float>();
    const int64_t total = wv.shape.GetShapeSize();
    // Output channel of each weight: Conv's W is [M, C/g, k...]; ConvTranspose's is [C, M/g, k...].
    const int64_t d0 = wv.shape.GetDim(0), d1 = wv.shape.GetDim(1), inner = total / std::max<int64_t>(1, d0 * d1);
    if (transposed ? d1 * group != channels || d0 % group : d0 != channels) continue;
    const double eps = bn->attrs[static_cast<size_t>(eps_at)].f();
    std::vector<double> s(static_cast<size_t>(channels));
    bool finite = true;
    for (int64_t c = 0; c < channels; ++c) {
      const double v = static_cast<double>(var[c]) + eps;
      s[static_cast<size_t>(c)] = v > 0 ? scale[c] / std::sqrt(v) : NAN;
      finite = finite && std::isfinite(s[static_cast<size_t>(c)]);
    }
    if (!finite) continue;  // a negative or zero variance: the node keeps running as written
    HostTensor nw(DT_FLOAT, wv.shape), nb(DT_FLOAT, Shape({channels}));
    float* pw = nw.data_as<float>();
    for (int64_t i = 0; i < d0; ++i)
      for (int64_t j = 0; j < d1; ++j) {
        const int64_t oc = transposed ? (i / (d0 / group)) * d1 + j : i;
        const double f = s[static_cast<size_t>(oc)];
        for (int64_t k = 0; k < inner; ++k) {
          const int64_t at = (i * d1 + j) * inner + k;
          pw[at] = static_cast<float>(w[at] * f);
        }
      }
    float* pb = nb.data_as<float>();
    for (int64_t c = 0; c < channels; ++c)
      pb[c] = static_cast<float>(((bias ? bias[c] : 0.0) - mean[c]) * s[static_cast<size_t>(c)] + shift[c]);
    // Folded values that overflow float32 (or were not finite to begin with) would turn results
    // the unfolded pair computes into inf or NaN: such a pair runs as written.
    for (int64_t i = 0; i < total && finite; ++i) finite = std::isfinite(pw[i]);
    for (int64_t c = 0; c < channels && finite; ++c) finite = std::isfinite(pb[c]);
    if (!finite) continue;
    // A constant only this node reads is replaced where it is; a shared one stays for its other
    // readers and this node gets a new one.
    auto place = [&](int id, HostTensor t, const std::string& name) {
      if (id >= 0 && uses[id] == 1 && !pc.graph_output[id]) {
        m.constants[m.values[id].index] = std::move(t);
        return id;
      }
      return pc.add_constant(name, std::move(t));
    };
    const std::string w_name = wv.name;
    const int new_w = place(w_id, std::move(nw), w_name + "/batch_norm_folded");
    const int new_b = place(b_id, std::move(nb), bn->name + "/folded_bias");
    conv.in_values[conv.ir_in_start[1]] = new_w;
    if (b_id >= 0) conv.in_values[conv.ir_in_start[2]] = new_b;
    else ConnectInput(conv, 2, new_b);
    conv.out_values[0] = bn->out_values[0];
    bn->folded = true;
    pc.graph_output.resize(m.values.size(), 0);
    uses.resize(m.values.size(), 0);
    reader.resize(m.values.size(), nullptr);
  }
  return Status::Ok();
}

}  // namespace weft::internal
