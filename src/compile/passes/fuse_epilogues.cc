// Epilogue fusion: a producer absorbs the Add (residual or bias) and the activation that follow
// it, as far as it declares (FusibleOp). The absorbed nodes disappear; the producer writes the
// last one's output directly.
#include <cmath>
#include <map>

#include "compile/passes/passes.h"

namespace weft::internal {

void ConnectInput(CompiledNode& cn, uint32_t ir, int id) {
  uint32_t pos = 0;
  for (uint32_t k = 0; k < ir; ++k) pos += cn.ir_in_count[k];
  cn.in_values.insert(cn.in_values.begin() + pos, id);
  cn.ir_in_count[ir] = 1;
  uint32_t start = 0;
  for (size_t k = 0; k < cn.ir_in_count.size(); ++k) {
    cn.ir_in_start[k] = start;
    start += cn.ir_in_count[k];
  }
}

Status FuseEpilogues(PassContext& pc) {
  ModelImpl& m = *pc.model;
  std::vector<int> uses(m.values.size(), 0);
  std::vector<CompiledNode*> consumer(m.values.size(), nullptr), first_consumer(m.values.size(), nullptr);
  std::map<const CompiledNode*, int> position;
  std::vector<int> made_at(m.values.size(), -1);  // producer's position; -1: input or constant
  for (size_t k = 0; k < m.nodes.size(); ++k) {
    CompiledNode* cn = m.nodes[k].get();
    position[cn] = static_cast<int>(k);
    for (int id : cn->out_values) made_at[id] = static_cast<int>(k);
    if (cn->folded) continue;
    for (int id : cn->in_values) {
      ++uses[id];
      if (!first_consumer[id]) first_consumer[id] = cn;
      consumer[id] = cn;
    }
  }
  std::map<const CompiledNode*, WeftFusionSupport> declared;
  auto query = [&](CompiledNode& cn, const WeftFusionSupport** out) -> Status {
    auto it = declared.find(&cn);
    if (it == declared.end()) {
      WeftFusionSupport s{};
      WEFT_RETURN_IF_ERROR(pc.query_fusion(cn, &s));
      it = declared.emplace(&cn, s).first;
    }
    *out = &it->second;
    return Status::Ok();
  };
  // The single consumer of `cn`'s only output, when that output is not a graph output.
  auto sole_consumer = [&](const CompiledNode& cn) -> CompiledNode* {
    if (cn.out_values.size() != 1) return nullptr;
    int t = cn.out_values[0];
    if (uses[t] != 1 || m.values[t].is_output || pc.graph_output[t]) return nullptr;
    CompiledNode* c = consumer[t];
    return c && !c->folded ? c : nullptr;
  };
  // `next` is a declared Add of `t` and one other value; returns that value or -1.
  auto add_operand = [&](CompiledNode* next, int t) -> Expected<int> {
    const WeftFusionSupport* ns = nullptr;
    WEFT_RETURN_IF_ERROR(query(*next, &ns));
    if (!ns->is_add || next->in_values.size() != 2 || next->out_values.size() != 1) return -1;
    int other = next->in_values[0] == t ? next->in_values[1] : next->in_values[0];
    if (other == t || m.values[other].dtype != m.values[t].dtype) return -1;
    return other;
  };
  auto absorb = [&](CompiledNode& producer, CompiledNode& gone) {
    producer.out_values[0] = gone.out_values[0];
    gone.folded = true;
  };

  for (auto& up : m.nodes) {
    CompiledNode& cn = *up;
    if (cn.folded || cn.out_values.size() != 1) continue;
    const WeftFusionSupport* ps = nullptr;
    WEFT_RETURN_IF_ERROR(query(cn, &ps));
    if (ps->absorbs == 0 && ps->sum_input < 0 && ps->bias_input < 0) continue;
    CompiledNode* next = sole_consumer(cn);
    // Residual: out + T, T of the output's shape and computed before the producer runs.
    if (next && ps->sum_input >= 0 && cn.ir_in_count[ps->sum_input] == 0) {
      int t = cn.out_values[0];
      auto other = add_operand(next, t);
      if (!other.ok()) return other.status();
      int o = other.value();
      if (o >= 0 && made_at[o] < position[&cn] && m.values[o].shape == m.values[t].shape) {
        ConnectInput(cn, static_cast<uint32_t>(ps->sum_input), o);
        absorb(cn, *next);
        next = sole_consumer(cn);  // the Add's output kept its uses and consumer
      }
    }
    // Bias: out + C, C a constant of N elements along the output's last dimension.
    if (next && ps->bias_input >= 0 && cn.ir_in_count[ps->bias_input] == 0) {
      int t = cn.out_values[0];
      auto other = add_operand(next, t);
      if (!other.ok()) return other.status();
      int o = other.value();
      if (o >= 0) {
        const Value& ov = m.values[o];
        const Shape& ts = m.values[t].shape;
        int64_t n = ts.GetDimNum() ? ts.GetDim(ts.GetDimNum() - 1) : 0;
        bool bias_like = ov.kind == ValueKind::kConstant && n > 0 && ov.shape.GetShapeSize() == n &&
                         ov.shape.GetDimNum() >= 1 && ov.shape.GetDimNum() <= ts.GetDimNum() &&
                         ov.shape.GetDim(ov.shape.GetDimNum() - 1) == n;
        if (bias_like) {
          ConnectInput(cn, static_cast<uint32_t>(ps->bias_input), o);
          absorb(cn, *next);
          next = sole_consumer(cn);
        }
      }
    }
    // x * gate(x): t read by exactly Sigmoid(t) -> s and Mul(t, s), s read by the Mul alone, is
    // Swish; with HardSigmoid(alpha 1/6, beta 1/2) as the gate it is HardSwish (how exporters
    // write hardswish before opset 14).
    if (!next && cn.epilogue.activation == WEFT_ACT_NONE &&
        (ps->absorbs & (WEFT_ACT_BIT(WEFT_ACT_SWISH) | WEFT_ACT_BIT(WEFT_ACT_HARD_SWISH)))) {
      int t = cn.out_values[0];
      CompiledNode* a = first_consumer[t];
      CompiledNode* b = consumer[t];
      if (uses[t] == 2 && a && b && a != b && !a->folded && !b->folded && !m.values[t].is_output && !pc.graph_output[t]) {
        const WeftFusionSupport *as = nullptr, *bs = nullptr;
        WEFT_RETURN_IF_ERROR(query(*a, &as));
        WEFT_RETURN_IF_ERROR(query(*b, &bs));
        auto gate = [](const WeftFusionSupport* f) {
          if (f->activation == WEFT_ACT_SIGMOID) return WEFT_ACT_SWISH;
          if (f->activation == WEFT_ACT_HARD_SIGMOID && std::fabs(f->alpha - 1.f / 6.f) < 1e-6f && f->beta == 0.5f)
            return WEFT_ACT_HARD_SWISH;
          return WEFT_ACT_NONE;
        };
        if (gate(bs) != WEFT_ACT_NONE) std::swap(a, b), std::swap(as, bs);
        WeftActivation fused = gate(as);
        bool sig = fused != WEFT_ACT_NONE && (ps->absorbs & WEFT_ACT_BIT(fused)) && a->in_values.size() == 1 && a->out_values.size() == 1;
        bool mul = bs->is_mul && b->in_values.size() == 2 && b->out_values.size() == 1;
        if (sig && mul) {
          int s_out = a->out_values[0];
          bool pair = (b->in_values[0] == t && b->in_values[1] == s_out) || (b->in_values[1] == t && b->in_values[0] == s_out);
          if (pair && uses[s_out] == 1 && !m.values[s_out].is_output && !pc.graph_output[s_out] &&
              m.values[b->out_values[0]].shape == m.values[t].shape && m.values[b->out_values[0]].dtype == m.values[t].dtype) {
            cn.epilogue.activation = fused;
            cn.epilogue.alpha = fused == WEFT_ACT_SWISH ? 1.f : 0.f;
            cn.epilogue.beta = 0.f;
            a->folded = true;
            absorb(cn, *b);
          }
        }
      }
    }
    // Activation.
    if (next && cn.epilogue.activation == WEFT_ACT_NONE && next->in_values.size() >= 1 &&
        next->in_values[0] == cn.out_values[0] && next->out_values.size() == 1) {
      const WeftFusionSupport* ns = nullptr;
      WEFT_RETURN_IF_ERROR(query(*next, &ns));
      if (ns->activation != WEFT_ACT_NONE && (ps->absorbs & WEFT_ACT_BIT(ns->activation))) {
        cn.epilogue.activation = ns->activation;
        cn.epilogue.alpha = ns->alpha;
        cn.epilogue.beta = ns->beta;
        absorb(cn, *next);
      }
    }
  }
  return Status::Ok();
}

}  // namespace weft::internal
