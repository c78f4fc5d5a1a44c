// LayerNorm as exporters decompose it (opset < 17):
//   mean = ReduceMean(x, [-1]); d = x - mean; var = ReduceMean(d^2, [-1]);
//   y = d / Sqrt(var + eps) * gamma + beta
// becomes one LayerNormalization(x, gamma, beta, axis=-1, epsilon=eps), implemented by whatever
// the session registers under that op type. The pattern is matched on ONNX op types: a graph
// rewrite between standard operators, not a fusion into a kernel.
#include <cmath>
#include <map>

#include "compile/passes/passes.h"

namespace weft::internal {
namespace {

// A constant float value of `id` with exactly one element, or NaN.
float ScalarConst(const ModelImpl& m, int id) {
  const Value& v = m.values[id];
  if (v.kind != ValueKind::kConstant || v.dtype != DT_FLOAT || v.shape.GetShapeSize() != 1) return NAN;
  return *m.constants[v.index].data_as<float>();
}

int64_t IntAttr(const CompiledNode& cn, const std::string& name) {
  const Prototype& p = cn.op->proto;
  for (size_t k = 0; k < p.attrs.size(); ++k)
    if (p.attrs[k].name == name && cn.attrs[k].type() == WEFT_ATTR_INT) return cn.attrs[k].i();
  return 0;
}

}  // namespace

Status RewriteNode(PassContext& pc, CompiledNode& cn, std::shared_ptr<const RegisteredOp> op, std::vector<int> inputs,
                   const std::map<std::string, AttrValue>& attrs) {
  int y = cn.out_values[0];
  cn.op->impl->destroy(cn.instance);
  cn.instance = nullptr;
  cn.op = op;
  cn.op_type = op->op_type;
  cn.ir_in_start.clear();
  cn.ir_in_count.clear();
  for (size_t k = 0; k < inputs.size(); ++k) cn.ir_in_start.push_back(static_cast<uint32_t>(k)), cn.ir_in_count.push_back(1);
  cn.in_values = std::move(inputs);
  cn.out_values = {y};
  cn.ir_out_start.assign(op->proto.outputs.size(), 1);
  cn.ir_out_count.assign(op->proto.outputs.size(), 0);
  cn.ir_out_start[0] = 0;
  cn.ir_out_count[0] = 1;
  cn.attrs.clear();
  cn.attr_ptrs.clear();
  cn.attr_names.clear();
  cn.attrs.reserve(op->proto.attrs.size());
  for (auto& a : op->proto.attrs) {
    auto it = attrs.find(a.name);
    cn.attrs.push_back(it != attrs.end() ? it->second : a.default_value);
    cn.attr_names.push_back(a.name.c_str());
  }
  for (auto& a : cn.attrs) cn.attr_ptrs.push_back(a.c());
  return pc.create_instance(cn);
}

Status FuseLayerNorm(PassContext& pc, std::shared_ptr<const RegisteredOp> ln) {
  if (!ln || ln->proto.inputs.size() != 3 || ln->proto.outputs.empty()) return Status::Ok();
  for (auto& a : ln->proto.attrs)  // the rewrite sets epsilon and axis; anything else keeps its default
    if (a.name == "epsilon" ? a.type != WEFT_ATTR_FLOAT : a.name == "axis" ? a.type != WEFT_ATTR_INT : a.required) return Status::Ok();
  ModelImpl& m = *pc.model;
  std::map<int, CompiledNode*> producer;
  std::vector<int> uses(m.values.size(), 0);
  for (auto& cn : m.nodes) {
    if (cn->folded) continue;
    for (int id : cn->out_values) producer[id] = cn.get();
    for (int id : cn->in_values) ++uses[id];
  }
  auto is = [&](int id, const char* type, int max_uses) -> CompiledNode* {
    auto it = producer.find(id);
    if (it == producer.end()) return nullptr;
    CompiledNode* n = it->second;
    if (n->folded || n->op_type != type || uses[id] > max_uses || pc.graph_output[id]) return nullptr;
    if (m.values[id].dtype != DT_FLOAT) return nullptr;
    return n;
  };
  // The other input of a two-input node, given one of them.
  auto other = [](const CompiledNode* n, int id) { return n->in_values[0] == id ? n->in_values[1] : n->in_values[0]; };
  auto two_inputs = [](const CompiledNode* n) { return n && n->in_values.size() == 2; };
  auto last_axis = [&](const CompiledNode* r, int64_t rank) {
    if (r->in_values.size() != 2 || IntAttr(*r, "keepdims") != 1) return false;
    const Value& a = m.values[r->in_values[1]];
    if (a.kind != ValueKind::kConstant || a.shape.GetShapeSize() != 1 || a.dtype != DT_INT64) return false;
    int64_t ax = *m.constants[a.index].data_as<int64_t>();
    return ax == -1 || ax == rank - 1;
  };
  for (auto& up : m.nodes) {
    CompiledNode& add2 = *up;
    if (add2.folded || add2.op_type != "Add" || add2.in_values.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      int mv = add2.in_values[side], beta = add2.in_values[1 - side];
      CompiledNode* mul = is(mv, "Mul", 1);
      if (!two_inputs(mul) || m.values[beta].kind != ValueKind::kConstant) continue;
      int nv = m.values[mul->in_values[0]].kind == ValueKind::kConstant ? mul->in_values[1] : mul->in_values[0];
      int gamma = other(mul, nv);
      CompiledNode* div = is(nv, "Div", 1);
      if (!two_inputs(div) || m.values[gamma].kind != ValueKind::kConstant) continue;
      int dv = div->in_values[0], sv = div->in_values[1];
      CompiledNode* sq = is(sv, "Sqrt", 1);
      CompiledNode* sub = is(dv, "Sub", 2);
      if (!sq || !two_inputs(sub)) continue;
      CompiledNode* add_eps = is(sq->in_values[0], "Add", 1);
      if (!two_inputs(add_eps)) continue;
      int varv = m.values[add_eps->in_values[0]].kind == ValueKind::kConstant ? add_eps->in_values[1] : add_eps->in_values[0];
      float eps = ScalarConst(m, other(add_eps, varv));
      CompiledNode* r2 = is(varv, "ReduceMean", 1);
      if (std::isnan(eps) || !r2) continue;
      CompiledNode* pw = is(r2->in_values[0], "Pow", 1);
      if (!two_inputs(pw) || pw->in_values[0] != dv || ScalarConst(m, pw->in_values[1]) != 2.0f) continue;
      int xv = sub->in_values[0];
      CompiledNode* r1 = is(sub->in_values[1], "ReduceMean", 1);
      const Shape& xs = m.values[xv].shape;
      int64_t rank = static_cast<int64_t>(xs.GetDimNum());
      if (!r1 || r1->in_values[0] != xv || rank < 1 || !last_axis(r1, rank) || !last_axis(r2, rank)) continue;
      int64_t c = xs.GetDim(static_cast<size_t>(rank - 1));
      if (m.values[gamma].shape.GetShapeSize() != c || m.values[beta].shape.GetShapeSize() != c) continue;
      for (CompiledNode* n : {r1, sub, pw, r2, add_eps, sq, div, mul}) n->folded = true;
      // add2 becomes the LayerNormalization node, in place.
      WEFT_RETURN_IF_ERROR(RewriteNode(pc, add2, ln, {xv, gamma, beta}, {{"epsilon", AttrValue::Float(eps)}, {"axis", AttrValue::Int(-1)}}));
      break;
    }
  }
  return Status::Ok();
}

}  // namespace weft::internal
