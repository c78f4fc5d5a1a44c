// Blocked layouts: a value whose producer can write a blocked format and whose every consumer can
// read it (LayoutAwareOp) is stored in that format, skipping a reorder on each side of the edge.
// Elementwise ops that take any layout (WEFT_LAYOUT_ANY) tie their listed values together; such a
// group takes the one layout the other ops at its ends declare, or stays plain.
#include <map>

#include "compile/passes/passes.h"

namespace weft::internal {
namespace {

// Every live node's declaration and every value's producer and readers.
struct LayoutGraph {
  std::map<const CompiledNode*, WeftLayoutSupport> declared;
  std::vector<std::vector<std::pair<const CompiledNode*, uint32_t>>> users;  // (node, IR input)
  std::vector<std::pair<const CompiledNode*, uint32_t>> producer;            // (node, IR output)
  const ModelImpl* model = nullptr;

  // For choosing layouts, declarations marked slow count as absent; for checking a loaded model
  // file, they count.
  Status Build(PassContext& pc, bool include_slow) {
    ModelImpl& m = *pc.model;
    model = &m;
    users.assign(m.values.size(), {});
    producer.assign(m.values.size(), {nullptr, 0});
    // Nodes no graph output depends on are left out: dead-code elimination drops them after this
    // pass (an importer's rewrite can leave some behind), and a reader that never runs must not
    // keep a value plain. Nodes are in topological order.
    std::vector<char> needed(pc.graph_output.begin(), pc.graph_output.end());
    needed.resize(m.values.size(), 0);
    std::vector<char> live(m.nodes.size(), 0);
    for (size_t k = m.nodes.size(); k-- > 0;) {
      const CompiledNode& cn = *m.nodes[k];
      if (cn.folded || cn.pruned) continue;
      for (int id : cn.out_values) live[k] = live[k] || needed[id];
      if (!live[k]) continue;
      for (int id : cn.in_values) needed[id] = 1;
      for (auto& guard : cn.guards) needed[guard.first] = 1;
    }
    for (size_t k = 0; k < m.nodes.size(); ++k) {
      CompiledNode& cn = *m.nodes[k];
      if (!live[k]) continue;
      WeftLayoutSupport s{};
      WEFT_RETURN_IF_ERROR(pc.query_layout(cn, &s));
      if ((s.format != WEFT_FORMAT_ND || (s.flags & WEFT_LAYOUT_ANY)) && (s.inputs || s.outputs) && (include_slow || !(s.flags & WEFT_LAYOUT_SLOW)))
        declared.emplace(&cn, s);
      for (uint32_t ir = 0; ir < cn.ir_in_start.size(); ++ir)
        for (uint32_t r = 0; r < cn.ir_in_count[ir]; ++r) users[cn.in_values[cn.ir_in_start[ir] + r]].push_back({&cn, ir});
      for (uint32_t o = 0; o < cn.ir_out_start.size(); ++o)
        for (uint32_t r = 0; r < cn.ir_out_count[o]; ++r) producer[cn.out_values[cn.ir_out_start[o] + r]] = {&cn, o};
    }
    return Status::Ok();
  }
  const WeftLayoutSupport* Support(const CompiledNode* n) const {
    auto it = declared.find(n);
    return it == declared.end() ? nullptr : &it->second;
  }
  static bool Bit(uint64_t mask, uint32_t k) { return k < 64 && (mask >> k & 1); }
  static bool Any(const WeftLayoutSupport* s) { return s && (s->flags & WEFT_LAYOUT_ANY); }
  // Whether a node's declaration admits `format`: its own, or any (or the one it restricts any to).
  static bool Admits(const WeftLayoutSupport* s, int32_t format) {
    return s && (s->format == format || (Any(s) && s->format == WEFT_FORMAT_ND));
  }
  // Whether value t may be stored in `format`: producer and every reader declare it (a node
  // that takes any layout declares every one).
  bool Allowed(const PassContext& pc, int t, int32_t format, std::string* why) const {
    const Value& v = pc.model->values[t];
    if (v.kind != ValueKind::kIntermediate || v.is_output || pc.graph_output[t]) {
      *why = "it is a graph input, output or constant";
      return false;
    }
    auto [p, o] = producer[t];
    const WeftLayoutSupport* ps = Support(p);
    if (!p || !Admits(ps, format) || !Bit(ps->outputs, o)) {
      *why = p ? "its producer [" + p->op_type + " '" + p->name + "'] does not declare writing it in that format"
               : "nothing produces it";
      return false;
    }
    if (users[t].empty()) {
      *why = "nothing reads it";
      return false;
    }
    for (auto& [u, ir] : users[t]) {
      const WeftLayoutSupport* us = Support(u);
      if (!Admits(us, format) || !Bit(us->inputs, ir)) {
        *why = "its reader [" + u->op_type + " '" + u->name + "'] does not declare reading it in that format";
        return false;
      }
    }
    return true;
  }
  // The one layout the ops at value t's ends that declare a fixed one agree on: kFree where every
  // end takes any layout, ND where they disagree or t cannot leave the plain layout at all.
  static constexpr int32_t kFree = -1;
  int32_t Settled(const PassContext& pc, int t) const {
    int32_t f = kFree;
    auto meet = [&](const WeftLayoutSupport* s) {
      if (Any(s)) return;
      if (f == kFree) f = s ? s->format : WEFT_FORMAT_ND;
      else if (!s || s->format != f) f = WEFT_FORMAT_ND;
    };
    meet(Support(producer[t].first));
    for (auto& [u, ir] : users[t]) meet(Support(u));
    std::string why;
    if (f != kFree && f != WEFT_FORMAT_ND && !Allowed(pc, t, f, &why)) f = WEFT_FORMAT_ND;
    if (f == kFree && !Allowed(pc, t, WEFT_FORMAT_NHWC, &why)) f = WEFT_FORMAT_ND;  // every end takes any: still not a graph value
    return f;
  }
  // The values a TOGETHER node ties: its listed inputs and outputs that are 4-D. The planned
  // formats are 4-D layouts; a value of another rank listed beside them (a scale among the tensors
  // of a dynamic input) stays plain without making the others plain.
  std::vector<int> Group(const CompiledNode* n, const WeftLayoutSupport& s) const {
    std::vector<int> group;
    auto add = [&](int t) {
      if (model->values[t].shape.GetDimNum() == 4) group.push_back(t);
    };
    for (uint32_t ir = 0; ir < n->ir_in_start.size(); ++ir)
      if (Bit(s.inputs, ir))
        for (uint32_t r = 0; r < n->ir_in_count[ir]; ++r) add(n->in_values[n->ir_in_start[ir] + r]);
    for (uint32_t o = 0; o < n->ir_out_start.size(); ++o)
      if (Bit(s.outputs, o))
        for (uint32_t r = 0; r < n->ir_out_count[o]; ++r) add(n->out_values[n->ir_out_start[o] + r]);
    return group;
  }
};

}  // namespace

Status AssignBlockedLayouts(PassContext& pc) {
  ModelImpl& m = *pc.model;
  LayoutGraph lg;
  WEFT_RETURN_IF_ERROR(lg.Build(pc, false));
  if (lg.declared.empty()) return Status::Ok();
  // fmt[t]: the blocked format value t may take, or ND.
  std::vector<int32_t> fmt(m.values.size(), WEFT_FORMAT_ND);
  std::string why;
  for (auto& [n, s] : lg.declared)
    for (uint32_t o = 0; o < n->ir_out_start.size(); ++o)
      if (LayoutGraph::Bit(s.outputs, o) && !LayoutGraph::Any(&s))
        for (uint32_t r = 0; r < n->ir_out_count[o]; ++r) {
          int t = n->out_values[n->ir_out_start[o] + r];
          if (lg.Allowed(pc, t, s.format, &why)) fmt[t] = s.format;
        }
  // Groups tied by nodes that take any layout (union-find over their listed values): each group
  // takes the one layout its members' other ends settle on, or none.
  std::vector<int> root(m.values.size());
  for (size_t t = 0; t < root.size(); ++t) root[t] = static_cast<int>(t);
  auto find = [&](int t) {
    while (root[t] != t) t = root[t] = root[root[t]];
    return t;
  };
  std::vector<char> tied(m.values.size(), 0);
  for (auto& [n, s] : lg.declared) {
    if (!LayoutGraph::Any(&s)) continue;
    std::vector<int> group = lg.Group(n, s);
    for (int t : group) tied[t] = 1;
    for (size_t i = 1; i < group.size(); ++i) root[find(group[i])] = find(group[0]);
  }
  std::map<int, int32_t> settled;  // group root -> its layout (kFree while none is known)
  for (size_t t = 0; t < m.values.size(); ++t) {
    if (!tied[t]) continue;
    const int r = find(static_cast<int>(t));
    const int32_t f = lg.Settled(pc, static_cast<int>(t));
    auto it = settled.emplace(r, LayoutGraph::kFree).first;
    if (f == WEFT_FORMAT_ND || it->second == WEFT_FORMAT_ND) it->second = WEFT_FORMAT_ND;
    else if (f != LayoutGraph::kFree) it->second = it->second == LayoutGraph::kFree || it->second == f ? f : WEFT_FORMAT_ND;
  }
  // A node that restricts "any" to one format keeps its group plain where it settled on another.
  for (auto& [n, s] : lg.declared) {
    if (!LayoutGraph::Any(&s) || s.format == WEFT_FORMAT_ND) continue;
    std::vector<int> group = lg.Group(n, s);
    if (group.empty()) continue;
    int32_t& f = settled[find(group[0])];
    if (f != LayoutGraph::kFree && f != s.format) f = WEFT_FORMAT_ND;
  }
  for (size_t t = 0; t < m.values.size(); ++t) {
    if (!tied[t]) continue;
    const int32_t f = settled[find(static_cast<int>(t))];
    fmt[t] = f == LayoutGraph::kFree ? WEFT_FORMAT_ND : f;
  }
  // Nodes whose blocked tensors go together: any plain one makes all of them plain.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [n, s] : lg.declared) {
      if (!(s.flags & WEFT_LAYOUT_TOGETHER)) continue;
      std::vector<int> group = lg.Group(n, s);
      bool any_plain = false;
      const int32_t want = LayoutGraph::Any(&s) ? (group.empty() ? WEFT_FORMAT_ND : fmt[group[0]]) : s.format;
      for (int t : group) any_plain = any_plain || fmt[t] != want || want == WEFT_FORMAT_ND;
      if (!any_plain) continue;
      for (int t : group)
        if (fmt[t] != WEFT_FORMAT_ND) {
          fmt[t] = WEFT_FORMAT_ND;
          changed = true;
        }
    }
  }
  for (size_t t = 0; t < m.values.size(); ++t)
    if (fmt[t] != WEFT_FORMAT_ND) m.values[t].format = fmt[t];
  return Status::Ok();
}

Status CheckBlockedLayouts(PassContext& pc) {
  ModelImpl& m = *pc.model;
  bool any = false;
  for (auto& v : m.values) any = any || v.format != WEFT_FORMAT_ND;
  if (!any) return Status::Ok();
  LayoutGraph lg;
  WEFT_RETURN_IF_ERROR(lg.Build(pc, true));
  std::string why;
  for (size_t t = 0; t < m.values.size(); ++t) {
    const Value& v = m.values[t];
    if (v.format != WEFT_FORMAT_ND && !lg.Allowed(pc, static_cast<int>(t), v.format, &why))
      return InvalidArgument("the model file stores '" + v.name + "' in blocked format " + std::to_string(v.format) + ", but " + why +
                             " (a different build of an op, or a corrupt file; recompile the model)");
  }
  for (auto& [n, s] : lg.declared) {
    if (!(s.flags & WEFT_LAYOUT_TOGETHER)) continue;
    std::vector<int> group = lg.Group(n, s);
    for (int t : group)
      if (m.values[t].format != m.values[group[0]].format)
        return InvalidArgument("[" + n->op_type + " '" + n->name + "'] the model file stores some of its tensors blocked and others "
                               "plain; the op reads and writes the blocked layout together or not at all");
  }
  return Status::Ok();
}

}  // namespace weft::internal
