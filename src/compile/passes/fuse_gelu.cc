// GELU as exporters decompose it (ONNX before opset 20 has no Gelu):
//   y = 0.5 * x * (1 + Erf(x / sqrt(2)))     (Div by sqrt(2) or Mul by 1/sqrt(2); the two Muls in
//                                             either nesting and operand order)
// becomes one Gelu(x) node of whatever the session registers under that op type: one pass over
// the tensor instead of five. Matched on ONNX op types: a rewrite between standard operators.
#include <cmath>
#include <map>

#include "compile/passes/passes.h"

namespace weft::internal {
namespace {

bool Near(float v, double want) { return std::fabs(v - want) <= 1e-6 * std::fabs(want); }

}  // namespace

Status FuseGelu(PassContext& pc, std::shared_ptr<const RegisteredOp> gelu) {
  if (!gelu || gelu->proto.inputs.size() != 1 || gelu->proto.outputs.size() != 1) return Status::Ok();
  for (auto& a : gelu->proto.attrs)  // the rewrite leaves every attribute at its default
    if (a.required || (a.name == "approximate" && !(a.type == WEFT_ATTR_STRING && a.default_value.s() == "none"))) return Status::Ok();
  ModelImpl& m = *pc.model;
  std::map<int, CompiledNode*> producer;
  std::vector<int> uses(m.values.size(), 0);
  std::vector<CompiledNode*> reader(m.values.size(), nullptr);
  for (auto& cn : m.nodes) {
    if (cn->folded) continue;
    for (int id : cn->out_values) producer[id] = cn.get();
    for (int id : cn->in_values) ++uses[id], reader[id] = cn.get();
  }
  auto scalar = [&](int id) -> float {
    const Value& v = m.values[id];
    if (v.kind != ValueKind::kConstant || v.dtype != DT_FLOAT || v.shape.GetShapeSize() != 1) return NAN;
    return *m.constants[v.index].data_as<float>();
  };
  // The node of `type` with two inputs, one of them the scalar constant `c`: its other input, or -1.
  auto with_scalar = [&](const CompiledNode* n, const char* type, double c) {
    if (!n || n->folded || n->op_type != type || n->in_values.size() != 2) return -1;
    for (int side = 0; side < 2; ++side)
      if (Near(scalar(n->in_values[side]), c)) return n->in_values[1 - side];
    return -1;
  };
  // Only read by `by` (and not a graph output): safe to fold away.
  auto private_to = [&](int id, const CompiledNode* by) { return uses[id] == 1 && reader[id] == by && !pc.graph_output[id]; };
  for (auto& up : m.nodes) {
    CompiledNode& erf = *up;
    if (erf.folded || erf.op_type != "Erf" || erf.in_values.size() != 1 || m.values[erf.in_values[0]].dtype != DT_FLOAT) continue;
    auto pre = producer.find(erf.in_values[0]);
    if (pre == producer.end() || !private_to(erf.in_values[0], &erf)) continue;
    CompiledNode* scale = pre->second;
    int x = with_scalar(scale, "Div", M_SQRT2);
    if (x < 0 || scale->in_values[0] != x) x = with_scalar(scale, "Mul", M_SQRT1_2);
    if (x < 0) continue;
    int e = erf.out_values[0];
    CompiledNode* add = reader[e];
    if (!private_to(e, add) || with_scalar(add, "Add", 1.0) != e) continue;
    int a = add->out_values[0];
    CompiledNode* m1 = reader[a];
    if (!private_to(a, m1) || m1->op_type != "Mul" || m1->in_values.size() != 2) continue;
    int other = m1->in_values[0] == a ? m1->in_values[1] : m1->in_values[0];
    CompiledNode* last = nullptr;
    std::vector<CompiledNode*> gone{scale, &erf, add};
    if (other == x) {  // (x * (1 + erf)) * 0.5
      int t = m1->out_values[0];
      CompiledNode* m2 = reader[t];
      if (!private_to(t, m2) || with_scalar(m2, "Mul", 0.5) != t) continue;
      gone.push_back(m1);
      last = m2;
    } else {  // (x * 0.5) * (1 + erf)
      auto h = producer.find(other);
      if (h == producer.end() || !private_to(other, m1) || with_scalar(h->second, "Mul", 0.5) != x) continue;
      gone.push_back(h->second);
      last = m1;
    }
    if (m.values[last->out_values[0]].shape != m.values[x].shape) continue;  // no broadcasting hidden in it
    for (CompiledNode* n : gone) n->folded = true;
    WEFT_RETURN_IF_ERROR(RewriteNode(pc, *last, gelu, {x}, {}));
  }
  return Status::Ok();
}

}  // namespace weft::internal
