// The compile pipeline: resolve ops → map IO and attributes onto prototypes → topological order
// → per node: check input types, InferDataType, InferShape → graph passes (passes/) → Compile
// callbacks → memory plan (memory_plan.cc).
// Over 600 lines because one Builder drives both a graph's compilation and a model file's
// instantiation: they share the per-node steps (instances, inference, queries, arena) that must
// check a loaded file exactly as they check a fresh graph.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

#include "compile/compiler.h"
#include "compile/passes/passes.h"
#include "runtime/engine.h"

namespace weft::internal {

namespace {

std::string Tag(const Node& n) { return "[" + n.op_type + " '" + n.name + "'] "; }

std::string DtypeList(const std::vector<DataType>& v) {
  std::string s;
  for (DataType d : v) s += (s.empty() ? "" : ", ") + std::string(DataTypeName(d));
  return s;
}

// Converts an attribute given in the graph to the prototype's type where that is lossless.
bool Coerce(const AttrValue& v, WeftAttrType want, AttrValue* out) {
  if (v.type() == want) { *out = v; return true; }
  switch (want) {
    case WEFT_ATTR_FLOAT:
      if (v.type() == WEFT_ATTR_INT) { *out = AttrValue::Float(static_cast<float>(v.i())); return true; }
      return false;
    case WEFT_ATTR_LIST_FLOAT:
      if (v.type() == WEFT_ATTR_LIST_INT) {
        std::vector<float> f(v.ints().begin(), v.ints().end());
        *out = AttrValue::ListFloat(f);
        return true;
      }
      return false;
    case WEFT_ATTR_BOOL:  // frontends without booleans (ONNX) give 0/1
      if (v.type() == WEFT_ATTR_INT && (v.i() == 0 || v.i() == 1)) {
        *out = AttrValue::Bool(v.i() != 0);
        return true;
      }
      return false;
    case WEFT_ATTR_TYPE:  // a DataType code given as an integer (frontends without a type kind)
      if (v.type() == WEFT_ATTR_INT && DataTypeSize(static_cast<DataType>(v.i())) > 0) {
        *out = AttrValue::Type(static_cast<DataType>(v.i()));
        return true;
      }
      return false;
    case WEFT_ATTR_LIST_STRING:
    case WEFT_ATTR_LIST_BOOL:
      if (want == WEFT_ATTR_LIST_BOOL && v.type() == WEFT_ATTR_LIST_INT &&
          std::all_of(v.ints().begin(), v.ints().end(), [](int64_t b) { return b == 0 || b == 1; })) {
        std::vector<bool> b(v.ints().begin(), v.ints().end());
        *out = AttrValue::ListBool(b);
        return true;
      }
      if (v.type() == WEFT_ATTR_LIST_INT && v.ints().empty()) {
        *out = want == WEFT_ATTR_LIST_STRING ? AttrValue::ListString({}) : AttrValue::ListBool({});
        return true;
      }
      return false;
    default: return false;
  }
}

// Maps a node's positional names onto the prototype's IR inputs/outputs.
Status MapIo(const Node& n, const std::vector<IoSpec>& specs, const std::vector<std::string>& names,
             const std::vector<uint32_t>& counts_given, bool is_input, std::vector<uint32_t>* counts) {
  const char* role = is_input ? "input" : "output";
  size_t m = names.size();
  counts->assign(specs.size(), 0);
  if (!counts_given.empty()) {
    if (counts_given.size() != specs.size())
      return InvalidArgument(Tag(n) + role + "_counts has " + std::to_string(counts_given.size()) + " entries, the op declares " +
                             std::to_string(specs.size()) + " " + role + "s");
    size_t sum = 0;
    for (size_t k = 0; k < specs.size(); ++k) {
      uint32_t c = counts_given[k];
      if (specs[k].kind != WEFT_IO_DYNAMIC && c > 1)
        return InvalidArgument(Tag(n) + role + " '" + specs[k].name + "' is not dynamic but was given " + std::to_string(c) + " tensors");
      (*counts)[k] = c;
      sum += c;
    }
    if (sum != m)
      return InvalidArgument(Tag(n) + role + "_counts add up to " + std::to_string(sum) + " but " + std::to_string(m) + " " + role + "s are listed");
  } else {
    size_t dynamic = 0;
    for (auto& s : specs) dynamic += s.kind == WEFT_IO_DYNAMIC;
    if (dynamic > 1)
      return InvalidArgument(Tag(n) + "the op has several dynamic " + role + "s: give " + role + "_counts");
    size_t fixed = specs.size() - dynamic;
    if (dynamic == 0) {
      if (m > specs.size())
        return InvalidArgument(Tag(n) + "has " + std::to_string(m) + " " + role + "s, the op declares at most " + std::to_string(specs.size()));
      for (size_t k = 0; k < m; ++k) (*counts)[k] = 1;
    } else {
      if (m < fixed)
        return InvalidArgument(Tag(n) + "has " + std::to_string(m) + " " + role + "s, the op needs at least " + std::to_string(fixed));
      for (size_t k = 0; k < specs.size(); ++k)
        (*counts)[k] = specs[k].kind == WEFT_IO_DYNAMIC ? static_cast<uint32_t>(m - fixed) : 1;
    }
  }
  // Required inputs must be present; a named empty slot is an absent optional.
  size_t pos = 0;
  for (size_t k = 0; k < specs.size(); ++k) {
    for (uint32_t r = 0; r < (*counts)[k]; ++r, ++pos)
      if (names[pos].empty() && is_input && specs[k].kind != WEFT_IO_OPTIONAL)
        return InvalidArgument(Tag(n) + "input '" + specs[k].name + "' is required but empty");
    if (is_input && specs[k].kind == WEFT_IO_REQUIRED && (*counts)[k] == 0)
      return InvalidArgument(Tag(n) + "missing required input '" + specs[k].name + "' (input " + std::to_string(k) + ")");
  }
  return Status::Ok();
}

struct Builder {
  const Graph& g;
  const OpRegistry& reg;
  std::shared_ptr<ModelImpl> m = std::make_shared<ModelImpl>();
  std::map<std::string, int> ids;
  std::vector<Tensor> meta;  // compile-time view of each value
  std::string error;

  Status AddValue(const std::string& name, ValueKind kind, const std::string& who) {
    if (name.empty()) return InvalidArgument(who + ": empty tensor name");
    if (ids.count(name)) return InvalidArgument(who + ": tensor name '" + name + "' is defined more than once");
    ids[name] = static_cast<int>(m->values.size());
    Value v;
    v.name = name;
    v.kind = kind;
    m->values.push_back(v);
    return Status::Ok();
  }

  const std::vector<Shape>* input_shapes = nullptr;

  Status Declare() {
    for (size_t idx = 0; idx < g.inputs().size(); ++idx) {
      ValueInfo in = g.inputs()[idx];
      if (input_shapes) in.shape = (*input_shapes)[idx];
      WEFT_RETURN_IF_ERROR(AddValue(in.name, ValueKind::kInput, "graph input"));
      if (DataTypeSize(in.dtype) == 0) return InvalidArgument("graph input '" + in.name + "' has no valid data type");
      if (in.shape.IsUnknown()) m->dynamic = true;
      Value& v = m->values.back();
      v.dtype = in.dtype;
      v.shape = in.shape;
      v.index = static_cast<int>(m->input_ids.size());
      m->input_ids.push_back(ids[in.name]);
      m->inputs_.push_back(in);
    }
    for (auto& [name, t] : g.constants()) {
      WEFT_RETURN_IF_ERROR(AddValue(name, ValueKind::kConstant, "graph constant"));
      Value& v = m->values.back();
      v.dtype = t.dtype();
      v.shape = t.shape();
      v.index = static_cast<int>(m->constants.size());
      m->constants.push_back(t);
    }
    std::set<std::string> node_names;
    for (size_t k = 0; k < g.nodes().size(); ++k) {
      const Node& n = g.nodes()[k];
      std::string nm = n.name.empty() ? n.op_type + "_" + std::to_string(k) : n.name;
      if (!node_names.insert(nm).second) return InvalidArgument("node name '" + nm + "' is used twice");
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        std::string out = n.outputs[o].empty() ? nm + ":" + std::to_string(o) : n.outputs[o];
        WEFT_RETURN_IF_ERROR(AddValue(out, ValueKind::kIntermediate, "[" + n.op_type + " '" + nm + "'] output"));
      }
    }
    return Status::Ok();
  }

  // Kahn's algorithm over node indices; on a cycle, names a node in it.
  Expected<std::vector<size_t>> Order() {
    size_t count = g.nodes().size();
    std::map<std::string, size_t> producer;
    for (size_t k = 0; k < count; ++k)
      for (auto& o : g.nodes()[k].outputs)
        if (!o.empty()) producer[o] = k;
    std::vector<std::vector<size_t>> users(count);
    std::vector<int> indeg(count, 0);
    for (size_t k = 0; k < count; ++k) {
      const Node& n = g.nodes()[k];
      for (auto& in : n.inputs) {
        if (in.empty()) continue;
        if (!ids.count(in))
          return InvalidArgument("[" + n.op_type + " '" + NodeName(k) + "'] input '" + in +
                                 "' is not a graph input, constant or node output");
        if (auto it = producer.find(in); it != producer.end()) {
          users[it->second].push_back(k);
          ++indeg[k];
        }
      }
    }
    std::vector<size_t> order;
    std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;  // keep file order
    for (size_t k = 0; k < count; ++k)
      if (indeg[k] == 0) ready.push(k);
    while (!ready.empty()) {
      size_t k = ready.top();
      ready.pop();
      order.push_back(k);
      for (size_t u : users[k])
        if (--indeg[u] == 0) ready.push(u);
    }
    if (order.size() != count)
      for (size_t k = 0; k < count; ++k)
        if (indeg[k] > 0) return InvalidArgument("the graph has a cycle through node '" + NodeName(k) + "' (" + g.nodes()[k].op_type + ")");
    return order;
  }

  std::string NodeName(size_t k) const {
    const Node& n = g.nodes()[k];
    return n.name.empty() ? n.op_type + "_" + std::to_string(k) : n.name;
  }

  Status Resolve(size_t k, CompiledNode& cn) {
    const Node& src = g.nodes()[k];
    Node n = src;
    n.name = NodeName(k);
    cn.name = n.name;
    cn.op_type = n.op_type;
    cn.op = reg.FindForNode(n.domain, n.op_type);
    if (!cn.op) return NotFound("[" + n.op_type + " '" + n.name + "'] " + reg.DescribeMissing(n.op_type));
    const Prototype& p = cn.op->proto;
    std::vector<uint32_t> in_counts, out_counts;
    WEFT_RETURN_IF_ERROR(MapIo(n, p.inputs, n.inputs, n.input_counts, true, &in_counts));
    std::vector<std::string> outs = n.outputs;
    for (size_t o = 0; o < outs.size(); ++o)
      if (outs[o].empty()) outs[o] = n.name + ":" + std::to_string(o);
    WEFT_RETURN_IF_ERROR(MapIo(n, p.outputs, outs, n.output_counts, false, &out_counts));
    // Outputs the graph leaves out still need a tensor to write into.
    for (size_t k2 = 0; k2 < p.outputs.size(); ++k2)
      if (out_counts[k2] == 0 && p.outputs[k2].kind == WEFT_IO_REQUIRED) {
        std::string name = n.name + ":" + std::to_string(outs.size());
        WEFT_RETURN_IF_ERROR(AddValue(name, ValueKind::kIntermediate, "[" + n.op_type + " '" + n.name + "'] output"));
        outs.push_back(name);
        out_counts[k2] = 1;
      }
    size_t pos = 0;
    for (size_t ir = 0; ir < p.inputs.size(); ++ir) {
      cn.ir_in_start.push_back(static_cast<uint32_t>(cn.in_values.size()));
      uint32_t present = 0;
      for (uint32_t r = 0; r < in_counts[ir]; ++r, ++pos)
        if (!n.inputs[pos].empty()) {
          cn.in_values.push_back(ids.at(n.inputs[pos]));
          ++present;
        }
      cn.ir_in_count.push_back(present);
    }
    pos = 0;
    for (size_t ir = 0; ir < p.outputs.size(); ++ir) {
      cn.ir_out_start.push_back(static_cast<uint32_t>(cn.out_values.size()));
      for (uint32_t r = 0; r < out_counts[ir]; ++r, ++pos) cn.out_values.push_back(ids.at(outs[pos]));
      cn.ir_out_count.push_back(out_counts[ir]);
    }
    // Attributes in prototype order, defaults filled in.
    for (auto& [name, v] : n.attrs) {
      bool known = false;
      for (auto& a : p.attrs) known = known || a.name == name;
      if (!known) {
        std::string have;
        for (auto& a : p.attrs) have += (have.empty() ? "" : ", ") + a.name;
        return InvalidArgument(Tag(n) + "has no attribute '" + name + "'" +
                               (have.empty() ? std::string(" (it takes none)") : "; its attributes are: " + have));
      }
    }
    cn.attrs.reserve(p.attrs.size());
    for (auto& a : p.attrs) {
      auto it = n.attrs.find(a.name);
      if (it == n.attrs.end()) {
        if (a.required) return InvalidArgument(Tag(n) + "missing required attribute '" + a.name + "' (" + AttrTypeName(a.type) + ")");
        cn.attrs.push_back(a.default_value);
      } else {
        AttrValue v;
        if (!Coerce(it->second, a.type, &v))
          return InvalidArgument(Tag(n) + "attribute '" + a.name + "' must be " + AttrTypeName(a.type) + ", got " +
                                 AttrTypeName(it->second.type()) + " " + it->second.ToString());
        cn.attrs.push_back(std::move(v));
      }
    }
    for (size_t a = 0; a < cn.attrs.size(); ++a) {
      cn.attr_ptrs.push_back(cn.attrs[a].c());
      cn.attr_names.push_back(p.attrs[a].name.c_str());
    }
    return Status::Ok();
  }

  // Constant data by constant index: compiled graphs own it, loaded ones map it.
  const void* ConstData(int index) const {
    return static_cast<size_t>(index) < m->constants.size() ? m->constants[index].data() : m->const_data[index];
  }

  // Makes the op object of `cn` (the CREATE stage).
  Status CreateInstance(CompiledNode& cn, const char* what = "creating the op object") {
    error.clear();
    CallState st;
    st.node = &cn;
    st.error = &error;
    st.env = m->env.get();
    WeftKernelContext c;
    BindContext(c, cn, WEFT_STAGE_CREATE, nullptr, nullptr, &st);
    c.num_inputs = c.num_outputs = 0;
    cn.instance = cn.op->impl->create(&c);
    if (!cn.instance) return Internal(NodeError(cn, what, error));
    return Status::Ok();
  }

  // Live ranges [producer step, last consumer step] of every value.
  void Liveness() {
    for (size_t s = 0; s < m->nodes.size(); ++s) {
      for (int id : m->nodes[s]->in_values) m->values[id].last_use = static_cast<int>(s);
      for (int id : m->nodes[s]->out_values) m->values[id].producer = static_cast<int>(s);
    }
  }

  // The arena plan and the memory report (dynamic models size intermediates per run).
  Status PlanArena() {
    if (m->dynamic)
      for (auto& v : m->values)
        if (v.kind == ValueKind::kIntermediate) v.bytes = 0;
    MemoryPlan plan = PlanMemory(m->values, static_cast<int>(m->nodes.size()),
                                 m->env && m->env->check_plugins ? kRedZoneBytes : 0);
    m->memory_.arena_bytes = plan.arena_bytes;
    m->memory_.lower_bound_bytes = plan.lower_bound_bytes;
    for (auto& v : m->values) m->memory_.num_planned_tensors += v.kind == ValueKind::kIntermediate;
    uint64_t budget = m->env ? m->env->memory_budget : UINT64_MAX;
    if (plan.arena_bytes > budget) {
      const Value* big = nullptr;
      for (auto& v : m->values)
        if (v.kind == ValueKind::kIntermediate && (!big || v.bytes > big->bytes)) big = &v;
      std::string from = big && big->producer >= 0 && static_cast<size_t>(big->producer) < m->nodes.size()
                             ? ", produced by [" + m->nodes[big->producer]->op_type + " '" + m->nodes[big->producer]->name + "']"
                             : "";
      return InvalidArgument("the model's intermediates need " + std::to_string(plan.arena_bytes) +
                             " bytes, more than the memory budget of " + std::to_string(budget) + " bytes" +
                             (big ? "; the largest is '" + big->name + "' " + big->shape.ToString() + " (" +
                                        std::to_string(big->bytes) + " bytes" + from + ")"
                                  : std::string()) +
                             " (SessionOptions::memory_budget_bytes; default: this machine's physical memory)");
    }
    return Status::Ok();
  }

  // Runs one callback of `cn` in a compile-time context over `meta`.
  template <typename F>
  WeftStatus Call(CompiledNode& cn, WeftStage stage, F fn, Scratch* scratch = nullptr,
                  std::vector<OutputBound>* bounds = nullptr) {
    std::vector<WeftTensor*> ins, outs;
    for (int id : cn.in_values) ins.push_back(&meta[id]);
    for (int id : cn.out_values) outs.push_back(&meta[id]);
    CallState st;
    st.values = &m->values;
    st.node = &cn;
    st.error = &error;
    st.scratch = scratch;
    st.env = m->env.get();
    st.kernels = &cn.kernels;
    st.bounds = bounds;
    WeftKernelContext c;
    BindContext(c, cn, stage, ins.data(), outs.data(), &st);
    error.clear();
    return fn(cn.instance, &c);
  }

  // Constant folding through the op's own Execute: a node whose inputs are all constants (or,
  // for the built-in Shape/Size, whose input shape is static) runs now and its outputs become
  // constants, so downstream shapes become static too.
  Status MaybeFold(CompiledNode& cn) {
    if (m->dynamic) return Status::Ok();
    bool shape_only = cn.op->library == nullptr && (cn.op_type == "Shape" || cn.op_type == "Size");
    bool all_const = !cn.in_values.empty();
    for (int id : cn.in_values) all_const = all_const && m->values[id].kind == ValueKind::kConstant;
    if (!all_const && !shape_only) return Status::Ok();
    size_t bytes = 0;
    for (int id : cn.out_values) bytes += m->values[id].bytes;
    if (bytes > (size_t(64) << 20)) return Status::Ok();  // keep huge results out of the model
    std::vector<HostTensor> outs;
    for (int id : cn.out_values) outs.emplace_back(m->values[id].dtype, m->values[id].shape);
    for (size_t k = 0; k < cn.in_values.size(); ++k) {
      const Value& v = m->values[cn.in_values[k]];
      meta[cn.in_values[k]].data = v.kind == ValueKind::kConstant ? const_cast<void*>(m->constants[v.index].data()) : nullptr;
    }
    for (size_t k = 0; k < cn.out_values.size(); ++k) {
      Tensor& t = meta[cn.out_values[k]];
      t.data = outs[k].data();
      t.size_bytes = outs[k].bytes();
    }
    Scratch scratch;
    if (Call(cn, WEFT_STAGE_EXECUTE, cn.op->impl->execute, &scratch) != WEFT_STATUS_OK)
      return InvalidArgument(NodeError(cn, "Execute (constant folding)", error));
    for (size_t k = 0; k < cn.out_values.size(); ++k) {
      Value& v = m->values[cn.out_values[k]];
      meta[cn.out_values[k]].data = nullptr;
      v.kind = ValueKind::kConstant;
      v.index = static_cast<int>(m->constants.size());
      m->constants.push_back(std::move(outs[k]));
    }
    cn.folded = true;
    return Status::Ok();
  }

  // Binds constant inputs' data into `meta` (queries and Compile see weights).
  void BindConstants(const CompiledNode& cn) {
    for (int id : cn.in_values) {
      const Value& v = m->values[id];
      meta[id].data = v.kind == ValueKind::kConstant ? const_cast<void*>(ConstData(v.index)) : nullptr;
    }
  }

  // The node's fusion declaration (FusibleOp), checked; the defaults when it declares none.
  Status QueryFusion(CompiledNode& cn, WeftFusionSupport* out) {
    *out = WeftFusionSupport{sizeof(WeftFusionSupport), 0, -1, -1, WEFT_ACT_NONE, 0.f, 0.f, 0};
    const WeftOpImpl* impl = cn.op->impl;
    if (!(impl->capabilities & WEFT_CAP_FUSIBLE) || !WEFT_HAS_FIELD(impl, WeftOpImpl, query_fusion) || !impl->query_fusion)
      return Status::Ok();
    BindConstants(cn);
    if (Call(cn, WEFT_STAGE_QUERY, [&](void* inst, WeftKernelContext* c) { return impl->query_fusion(inst, c, out); }) != WEFT_STATUS_OK)
      return Internal(NodeError(cn, "QueryFusion", error));
    const Prototype& p = cn.op->proto;
    auto optional_input = [&](int32_t ir) {
      return ir == -1 || (ir >= 0 && static_cast<size_t>(ir) < p.inputs.size() && p.inputs[ir].kind == WEFT_IO_OPTIONAL);
    };
    std::string bad;
    if (!optional_input(out->sum_input)) bad = "sum_input " + std::to_string(out->sum_input) + " is not an optional input of the op";
    else if (!optional_input(out->bias_input)) bad = "bias_input " + std::to_string(out->bias_input) + " is not an optional input of the op";
    else if (out->activation < 0 || out->activation >= WEFT_ACT_COUNT) bad = "activation " + std::to_string(out->activation) + " is unknown";
    else if (out->absorbs >> WEFT_ACT_COUNT) bad = "absorbs names unknown activations";
    if (!bad.empty()) return InvalidArgument(NodeError(cn, "QueryFusion", bad + " (from " + cn.op->origin + ")"));
    return Status::Ok();
  }

  // The node's layout declaration (LayoutAwareOp), checked; none when it declares none.
  Status QueryLayout(CompiledNode& cn, WeftLayoutSupport* out) {
    *out = WeftLayoutSupport{sizeof(WeftLayoutSupport), WEFT_FORMAT_ND, 0, 0, 0};
    const WeftOpImpl* impl = cn.op->impl;
    if (!(impl->capabilities & WEFT_CAP_LAYOUT) || !WEFT_HAS_FIELD(impl, WeftOpImpl, query_layout) || !impl->query_layout)
      return Status::Ok();
    BindConstants(cn);
    if (Call(cn, WEFT_STAGE_QUERY, [&](void* inst, WeftKernelContext* c) { return impl->query_layout(inst, c, out); }) != WEFT_STATUS_OK)
      return Internal(NodeError(cn, "QueryLayout", error));
    const Prototype& p = cn.op->proto;
    std::string bad;
    if (out->format != WEFT_FORMAT_ND && out->format != WEFT_FORMAT_NC1HWC0)
      bad = "format " + std::to_string(out->format) + " is not a blocked format this engine plans";
    else if (p.inputs.size() < 64 && (out->inputs >> p.inputs.size()))
      bad = "inputs names an input the op does not declare";
    else if (p.outputs.size() < 64 && (out->outputs >> p.outputs.size()))
      bad = "outputs names an output the op does not declare";
    else if (out->flags & ~WEFT_LAYOUT_TOGETHER)
      bad = "flags has unknown bits";
    if (!bad.empty()) return InvalidArgument(NodeError(cn, "QueryLayout", bad + " (from " + cn.op->origin + ")"));
    return Status::Ok();
  }

  PassContext Passes(const std::vector<int>* output_ids = nullptr) {
    PassContext pc;
    pc.model = m.get();
    pc.graph_output.assign(m->values.size(), 0);
    if (output_ids)
      for (int id : *output_ids) pc.graph_output[id] = 1;
    for (auto& name : g.outputs())
      if (auto it = ids.find(name); it != ids.end()) pc.graph_output[it->second] = 1;
    pc.query_fusion = [this](CompiledNode& cn, WeftFusionSupport* s) { return QueryFusion(cn, s); };
    pc.query_layout = [this](CompiledNode& cn, WeftLayoutSupport* s) { return QueryLayout(cn, s); };
    pc.create_instance = [this](CompiledNode& cn) { return CreateInstance(cn, "creating the rewritten node's op object"); };
    return pc;
  }

  Status CheckInputTypes(CompiledNode& cn) {
    const Prototype& p = cn.op->proto;
    std::map<std::string, std::pair<DataType, std::string>> bound;  // symbol -> (type, io name)
    std::string tag = "[" + cn.op_type + " '" + cn.name + "'] ";
    for (size_t ir = 0; ir < p.inputs.size(); ++ir) {
      const IoSpec& s = p.inputs[ir];
      for (uint32_t r = 0; r < cn.ir_in_count[ir]; ++r) {
        const Value& v = m->values[cn.in_values[cn.ir_in_start[ir] + r]];
        if (std::find(s.dtypes.begin(), s.dtypes.end(), v.dtype) == s.dtypes.end())
          return InvalidArgument(tag + "input " + std::to_string(ir) + " (" + s.name + ") '" + v.name + "' has dtype " +
                                 DataTypeName(v.dtype) + "; allowed: " + DtypeList(s.dtypes));
        if (!s.symbol.empty()) {
          auto [it, fresh] = bound.emplace(s.symbol, std::make_pair(v.dtype, s.name));
          if (!fresh && it->second.first != v.dtype)
            return InvalidArgument(tag + "inputs '" + it->second.second + "' (" + DataTypeName(it->second.first) + ") and '" +
                                   s.name + "' (" + DataTypeName(v.dtype) + ") share type " + s.symbol + " and must match");
        }
      }
    }
    return Status::Ok();
  }

  Status InferNode(CompiledNode& cn) {
    std::vector<OutputBound> bounds;
    const Prototype& p = cn.op->proto;
    const WeftOpImpl* impl = cn.op->impl;
    std::string tag = "[" + cn.op_type + " '" + cn.name + "'] ";
    WEFT_RETURN_IF_ERROR(CheckInputTypes(cn));
    for (int id : cn.out_values) {
      meta[id] = Tensor();
      meta[id].placement = WEFT_PLACEMENT_HOST;
    }
    auto first_input = [&](int ir) -> const Value* {
      if (ir < 0 || cn.ir_in_count[ir] == 0) return nullptr;
      return &m->values[cn.in_values[cn.ir_in_start[ir]]];
    };
    bool can_infer = (impl->capabilities & WEFT_CAP_SHAPE_INFER) && impl->infer_shape && impl->infer_dtype;
    // Data types.
    if (can_infer) {
      if (Call(cn, WEFT_STAGE_INFER_DTYPE, impl->infer_dtype) != WEFT_STATUS_OK)
        return InvalidArgument(NodeError(cn, "InferDataType", error));
    } else {
      for (size_t ir = 0; ir < p.outputs.size(); ++ir) {
        const IoSpec& s = p.outputs[ir];
        DataType dt = DT_UNDEFINED;
        if (const Value* src = first_input(s.same_as_input)) dt = src->dtype;
        if (dt == DT_UNDEFINED && !s.symbol.empty())
          for (size_t i = 0; i < p.inputs.size() && dt == DT_UNDEFINED; ++i)
            if (p.inputs[i].symbol == s.symbol)
              if (const Value* src = first_input(static_cast<int>(i))) dt = src->dtype;
        if (dt == DT_UNDEFINED && s.dtypes.size() == 1) dt = s.dtypes[0];
        for (uint32_t r = 0; r < cn.ir_out_count[ir]; ++r) meta[cn.out_values[cn.ir_out_start[ir] + r]].dtype = dt;
      }
    }
    for (size_t ir = 0; ir < p.outputs.size(); ++ir) {
      const IoSpec& s = p.outputs[ir];
      for (uint32_t r = 0; r < cn.ir_out_count[ir]; ++r) {
        DataType dt = meta[cn.out_values[cn.ir_out_start[ir] + r]].GetDataType();
        if (dt == DT_UNDEFINED && can_infer)
          return InvalidArgument(tag + "InferDataType did not set the type of output '" + s.name + "'");
        if (dt == DT_UNDEFINED)
          return InvalidArgument(tag + "the type of output '" + s.name + "' is unknown: the op has no ShapeInferOp, and its REG_OP "
                                 "neither declares SAME_AS_INPUT for it nor gives it a single type or a type symbol shared with an input");
        if (std::find(s.dtypes.begin(), s.dtypes.end(), dt) == s.dtypes.end())
          return InvalidArgument(tag + "output '" + s.name + "' was inferred as " + DataTypeName(dt) + "; its REG_OP allows: " + DtypeList(s.dtypes));
      }
    }
    // Shapes: inferred here while every shape is known; once one is not (a graph input with
    // unknown dims, or an op whose output shape depends on a value only known at run time), the
    // rest is inferred at run time.
    if (!can_infer)
      for (const IoSpec& s : p.outputs)
        if (s.same_as_input < 0)
          return InvalidArgument(tag + "cannot infer the shape of output '" + s.name + "': the op has no ShapeInferOp and its REG_OP "
                                 "does not declare the output SAME_AS_INPUT(<input>). Implement ShapeInferOp, or add "
                                 ".SAME_AS_INPUT(x) after .OUTPUT(" + s.name + ", ...)");
    if (!m->dynamic) {
      if (can_infer) {
        for (size_t k = 0; k < cn.in_values.size(); ++k) {
          const Value& v = m->values[cn.in_values[k]];
          meta[cn.in_values[k]].data = v.kind == ValueKind::kConstant ? const_cast<void*>(ConstData(v.index)) : nullptr;
        }
        bounds.assign(cn.out_values.size(), OutputBound{});
        if (Call(cn, WEFT_STAGE_INFER_SHAPE, impl->infer_shape, nullptr, &bounds) != WEFT_STATUS_OK)
          return InvalidArgument(NodeError(cn, "InferShape", error));
      } else {
        for (size_t ir = 0; ir < p.outputs.size(); ++ir) {
          const Value* src = first_input(p.outputs[ir].same_as_input);
          for (uint32_t r = 0; r < cn.ir_out_count[ir]; ++r)
            *Shape::View(&meta[cn.out_values[cn.ir_out_start[ir] + r]].shape) = src ? src->shape : Shape();
        }
      }
    }
    for (size_t k = 0; k < cn.out_values.size(); ++k) {
      int id = cn.out_values[k];
      Value& v = m->values[id];
      v.dtype = meta[id].GetDataType();
      if (m->dynamic) continue;
      if (k < bounds.size() && bounds[k].set) {
        v.bounded = true;
        v.bound = bounds[k].shape;
      }
      v.shape = meta[id].GetShape();
      if (v.shape.ndim < 0 || v.shape.ndim > WEFT_MAX_DIMS)
        return InvalidArgument(tag + "InferShape produced rank " + std::to_string(v.shape.ndim) + " for '" + v.name + "'");
      if (v.shape.IsUnknown()) {
        m->dynamic = true;
        continue;
      }
      uint64_t bytes = 0;
      if (!v.shape.GetCheckedBytes(DataTypeSize(v.dtype), &bytes))
        return InvalidArgument(tag + "InferShape gave output '" + v.name + "' the shape " + v.shape.ToString() +
                               ", whose size does not fit in 64 bits");
      v.bytes = static_cast<size_t>(bytes);
    }
    return Status::Ok();
  }

  Expected<std::shared_ptr<CompiledModel>> Build() {
    WEFT_RETURN_IF_ERROR(Declare());
    auto order = Order();
    if (!order.ok()) return order.status();
    // Every node whose op is unknown, in one message.
    std::vector<std::string> missing;
    for (size_t k : order.value()) {
      const Node& n = g.nodes()[k];
      if (reg.FindForNode(n.domain, n.op_type)) continue;
      std::string where = n.domain.empty() ? "" : ", domain " + n.domain;
      if (n.opset) where += ", opset " + std::to_string(n.opset);
      missing.push_back("'" + NodeName(k) + "' (" + n.op_type + where + ")");
    }
    if (missing.size() == 1)
      for (size_t k : order.value())
        if (!reg.FindForNode(g.nodes()[k].domain, g.nodes()[k].op_type))
          return NotFound("[" + g.nodes()[k].op_type + " '" + NodeName(k) + "'] " + reg.DescribeMissing(g.nodes()[k].op_type));
    if (missing.size() > 1) {
      std::string msg = std::to_string(missing.size()) + " nodes use op types not registered in this session: ";
      for (size_t k = 0; k < missing.size(); ++k) msg += (k ? ", " : "") + missing[k];
      return NotFound(msg + ". Load the packages that provide them (WEFT_CUSTOM_OPP_PATH or --package)");
    }
    meta.resize(m->values.size());
    for (size_t k = 0; k < m->values.size(); ++k) {
      meta[k].dtype = m->values[k].dtype;
      *Shape::View(&meta[k].shape) = m->values[k].shape;
    }
    for (size_t k : order.value()) {
      auto cn = std::make_unique<CompiledNode>();
      WEFT_RETURN_IF_ERROR(Resolve(k, *cn));
      m->nodes.push_back(std::move(cn));
    }
    if (meta.size() < m->values.size()) meta.resize(m->values.size());
    for (auto& v : m->values)
      if (v.kind != ValueKind::kIntermediate && !v.shape.IsUnknown()) v.bytes = static_cast<size_t>(v.shape.GetShapeSize()) * DataTypeSize(v.dtype);
    // Instances, then inference in execution order.
    for (auto& cn : m->nodes) {
      const WeftOpImpl* impl = cn->op->impl;
      if (!(impl->capabilities & WEFT_CAP_EAGER_EXECUTE) || !impl->execute)
        return FailedPrecondition("[" + cn->op_type + " '" + cn->name + "'] the op (from " + cn->op->origin +
                                  ") has no EagerExecuteOp, so it cannot run in this engine");
      WEFT_RETURN_IF_ERROR(CreateInstance(*cn));
      WEFT_RETURN_IF_ERROR(InferNode(*cn));
      WEFT_RETURN_IF_ERROR(MaybeFold(*cn));
    }
    if (!m->dynamic) {
      PassContext pc = Passes();
      WEFT_RETURN_IF_ERROR(FuseEpilogues(pc));
      WEFT_RETURN_IF_ERROR(FuseLayerNorm(pc, reg.Find("LayerNormalization")));
      WEFT_RETURN_IF_ERROR(AssignBlockedLayouts(pc));
    }
    // Folded nodes are gone; so is every node nothing downstream needs (dead code).
    std::vector<bool> needed(m->values.size(), false);
    for (auto& name : g.outputs())
      if (auto it = ids.find(name); it != ids.end()) needed[it->second] = true;
    std::vector<std::unique_ptr<CompiledNode>> kept;
    for (size_t k = m->nodes.size(); k-- > 0;) {
      auto& cn = m->nodes[k];
      bool live = !cn->folded;
      if (live) {
        live = false;
        for (int id : cn->out_values) live = live || needed[id];
      }
      if (!live) continue;
      for (int id : cn->in_values) needed[id] = true;
      kept.push_back(std::move(cn));
    }
    std::reverse(kept.begin(), kept.end());
    m->nodes = std::move(kept);
    Liveness();
    for (auto& name : g.outputs()) {
      auto it = ids.find(name);
      if (it == ids.end()) return InvalidArgument("graph output '" + name + "' is not produced by any node, input or constant");
      Value& v = m->values[it->second];
      v.is_output = true;
      m->output_ids.push_back(it->second);
      m->outputs_.push_back({v.name, v.dtype, v.shape});
    }
    if (m->output_ids.empty()) return InvalidArgument("the graph declares no outputs");
    // Compile callbacks see metadata, and the values of constant inputs (weights to prepack).
    Scratch compile_scratch;
    for (size_t k = 0; k < meta.size(); ++k) {
      const Value& v = m->values[k];
      meta[k].data = v.kind == ValueKind::kConstant ? const_cast<void*>(m->constants[v.index].data()) : nullptr;
      meta[k].format = v.format;
    }
    for (auto& cn : m->nodes) {
      const WeftOpImpl* impl = cn->op->impl;
      if ((impl->capabilities & WEFT_CAP_COMPILABLE) && impl->compile) {
        compile_scratch.Reset();
        if (Call(*cn, WEFT_STAGE_COMPILE, impl->compile, &compile_scratch) != WEFT_STATUS_OK)
          return Internal(NodeError(*cn, "Compile", error));
      }
      for (int id : cn->out_values) {
        const Value& v = m->values[id];
        if (v.format != WEFT_FORMAT_ND && !v.storage_given)
          return Internal(NodeError(*cn, "Compile", "output '" + v.name + "' was planned in blocked format " + std::to_string(v.format) +
                                                        " (the op's QueryLayout offered it) but Compile did not give its size with SetOutputStorage"));
      }
    }
    WEFT_RETURN_IF_ERROR(PlanArena());
    for (auto& c : m->constants) {
      m->memory_.constant_bytes += c.bytes();
      m->const_data.push_back(c.data());
      m->const_bytes.push_back(c.bytes());
    }
    m->graph_name = g.name();
    return std::shared_ptr<CompiledModel>(m);
  }

  // Types and shapes of the outputs, by inference only.
  Expected<std::vector<ValueInfo>> InferOnly() {
    WEFT_RETURN_IF_ERROR(Declare());
    auto order = Order();
    if (!order.ok()) return order.status();
    meta.resize(m->values.size());
    for (size_t k = 0; k < m->values.size(); ++k) {
      meta[k].dtype = m->values[k].dtype;
      *Shape::View(&meta[k].shape) = m->values[k].shape;
    }
    for (size_t k : order.value()) {
      auto cn = std::make_unique<CompiledNode>();
      WEFT_RETURN_IF_ERROR(Resolve(k, *cn));
      m->nodes.push_back(std::move(cn));
    }
    if (meta.size() < m->values.size()) meta.resize(m->values.size());
    for (auto& cn : m->nodes) {
      WEFT_RETURN_IF_ERROR(CreateInstance(*cn));
      // Infer through unknown dims too: ops mark what they cannot know.
      m->dynamic = false;
      WEFT_RETURN_IF_ERROR(InferNode(*cn));
    }
    std::vector<ValueInfo> out;
    for (auto& name : g.outputs()) {
      auto it = ids.find(name);
      if (it == ids.end()) return InvalidArgument("graph output '" + name + "' is not produced by any node, input or constant");
      const Value& v = m->values[it->second];
      out.push_back({v.name, v.dtype, v.shape});
    }
    return out;
  }

  // ---- loading a model file --------------------------------------------------------------------
  Expected<std::shared_ptr<ModelImpl>> BuildLoaded(const LoadedGraph& lg) {
    m->graph_name = lg.name;
    m->values = lg.values;
    for (auto& [p, n] : lg.constants) {
      m->const_data.push_back(p);
      m->const_bytes.push_back(n);
      m->memory_.constant_bytes += n;
    }
    m->input_ids = lg.input_ids;
    for (int id : lg.input_ids) {
      const Value& v = m->values[id];
      m->inputs_.push_back({v.name, v.dtype, v.shape});
      if (v.shape.IsUnknown()) m->dynamic = true;
    }
    meta.resize(m->values.size());
    for (size_t k = 0; k < m->values.size(); ++k) {
      Value& v = m->values[k];
      meta[k].dtype = v.dtype;
      *Shape::View(&meta[k].shape) = v.shape;
      if (v.kind == ValueKind::kConstant) meta[k].data = const_cast<void*>(m->const_data[v.index]);
      if (v.kind != ValueKind::kIntermediate && !v.shape.IsUnknown())
        v.bytes = static_cast<size_t>(v.shape.GetShapeSize()) * DataTypeSize(v.dtype);
    }
    std::vector<std::vector<std::pair<std::string, std::shared_ptr<RtcKernel>>>> loaded_kernels;
    for (const LoadedNode& ln : lg.nodes) {
      auto cn = std::make_unique<CompiledNode>();
      cn->name = ln.name;
      cn->op_type = ln.op_type;
      cn->op = reg.Find(ln.op_type);
      std::string tag = "[" + ln.op_type + " '" + ln.name + "'] ";
      if (!cn->op) return NotFound(tag + "op type is not registered in this session");
      const Prototype& p = cn->op->proto;
      // Structure against the prototype: a corrupt file must not reach an op with IO it does not expect.
      if (ln.ir_in_count.size() != p.inputs.size() || ln.ir_out_count.size() != p.outputs.size())
        return InvalidArgument(tag + "the model file gives " + std::to_string(ln.ir_in_count.size()) + " inputs and " +
                               std::to_string(ln.ir_out_count.size()) + " outputs; the op declares " +
                               std::to_string(p.inputs.size()) + " and " + std::to_string(p.outputs.size()));
      for (int io = 0; io < 2; ++io) {
        auto& specs = io ? p.outputs : p.inputs;
        auto& counts = io ? ln.ir_out_count : ln.ir_in_count;
        for (size_t k = 0; k < specs.size(); ++k)
          if ((specs[k].kind == WEFT_IO_REQUIRED && counts[k] != 1) || (specs[k].kind == WEFT_IO_OPTIONAL && counts[k] > 1))
            return InvalidArgument(tag + "the model file gives " + (io ? "output '" : "input '") + specs[k].name + "' " +
                                   std::to_string(counts[k]) + " tensors");
      }
      cn->in_values = ln.in_values;
      cn->out_values = ln.out_values;
      cn->ir_in_start = ln.ir_in_start;
      cn->ir_in_count = ln.ir_in_count;
      cn->ir_out_start = ln.ir_out_start;
      cn->ir_out_count = ln.ir_out_count;
      for (auto& [name, v] : ln.attrs) {
        bool declared = false;
        for (auto& a : p.attrs) declared = declared || a.name == name;
        if (!declared)
          return InvalidArgument(tag + "the model file sets attribute '" + name + "', which the op (from " + cn->op->origin +
                                 ") does not declare: the file was written for a different build of the op; recompile the model");
      }
      cn->attrs.reserve(p.attrs.size());
      for (auto& a : p.attrs) {
        const AttrValue* given = nullptr;
        for (auto& [name, v] : ln.attrs)
          if (name == a.name) given = &v;
        if (!given) {
          if (a.required) return InvalidArgument(tag + "the model file lacks required attribute '" + a.name + "'");
          cn->attrs.push_back(a.default_value);
        } else if (given->type() != a.type) {
          return InvalidArgument(tag + "attribute '" + a.name + "' is " + AttrTypeName(given->type()) + " in the model file; the op wants " +
                                 AttrTypeName(a.type));
        } else {
          cn->attrs.push_back(*given);
        }
      }
      for (size_t a = 0; a < cn->attrs.size(); ++a) {
        cn->attr_ptrs.push_back(cn->attrs[a].c());
        cn->attr_names.push_back(p.attrs[a].name.c_str());
      }
      for (auto& [id, range] : ln.kernels) {
        auto k = RtcLoadFromMemory(id, ln.op_type + "/" + ln.name, range.first, range.second);
        if (!k.ok()) return Status(k.status().code(), tag + k.status().message());
        cn->kernels[id] = k.value();
      }
      const WeftOpImpl* impl = cn->op->impl;
      if (!(impl->capabilities & WEFT_CAP_EAGER_EXECUTE) || !impl->execute)
        return FailedPrecondition(tag + "the op (from " + cn->op->origin + ") has no EagerExecuteOp");
      WEFT_RETURN_IF_ERROR(CreateInstance(*cn));
      // Types and shapes again (InferShape, not Compile), compared with what the file says.
      std::vector<Value> stored;
      for (int id : cn->out_values) stored.push_back(m->values[id]);
      WEFT_RETURN_IF_ERROR(InferNode(*cn));
      for (size_t k = 0; k < cn->out_values.size(); ++k) {
        Value& v = m->values[cn->out_values[k]];
        const Value& s = stored[k];
        bool same = v.dtype == s.dtype && (m->dynamic ? true : v.shape == s.shape);
        if (!same)
          return InvalidArgument(tag + "output '" + v.name + "' is " + DataTypeName(v.dtype) + v.shape.ToString() +
                                 " by this op's inference, but " + DataTypeName(s.dtype) + s.shape.ToString() +
                                 " in the model file (a different op build, or a corrupt file)");
        if (m->dynamic && s.format != WEFT_FORMAT_ND)
          return InvalidArgument(tag + "output '" + v.name + "' has a blocked layout in a model with dynamic shapes");
        if (!m->dynamic && s.format != WEFT_FORMAT_ND) {
          if (s.bytes < v.bytes || s.bytes > v.bytes * 16 + 4096)
            return InvalidArgument(tag + "output '" + v.name + "' has an implausible storage size in the model file");
          v.format = s.format;
          v.bytes = s.bytes;
        }
      }
      // A fused activation must be one the op declares it can apply.
      cn->epilogue = ln.epilogue;
      if (cn->epilogue.activation != WEFT_ACT_NONE) {
        WeftFusionSupport fs{};
        WEFT_RETURN_IF_ERROR(QueryFusion(*cn, &fs));
        if (!(fs.absorbs & WEFT_ACT_BIT(cn->epilogue.activation)))
          return InvalidArgument(tag + "the model file fuses activation " + ActivationName(cn->epilogue.activation) +
                                 " into this node, which the op (from " + cn->op->origin + ") does not declare it can apply");
      }
      m->nodes.push_back(std::move(cn));
    }
    {
      PassContext pc = Passes(&lg.output_ids);
      WEFT_RETURN_IF_ERROR(CheckBlockedLayouts(pc));
    }
    if (m->dynamic != lg.dynamic)
      return InvalidArgument(std::string("the model file says the model has ") + (lg.dynamic ? "dynamic" : "static") +
                             " shapes, but inference finds otherwise");
    // Deserialize restores what Compile prepared; Compile itself is never called.
    for (size_t k = 0; k < meta.size(); ++k) {
      meta[k].format = m->values[k].format;
      meta[k].size_bytes = m->values[k].bytes;
    }
    Scratch scratch;
    for (size_t i = 0; i < m->nodes.size(); ++i) {
      CompiledNode& cn = *m->nodes[i];
      const WeftOpImpl* impl = cn.op->impl;
      bool portable = (impl->capabilities & WEFT_CAP_PORTABLE) && impl->deserialize;
      if (!portable) {
        if (impl->capabilities & WEFT_CAP_COMPILABLE)
          return FailedPrecondition(NodeError(cn, "Loading", "the op has a Compile callback but no PortableOp, so it cannot be restored without compiling"));
        continue;
      }
      const auto& blobs = lg.nodes[i].blobs;
      std::vector<WeftTensor*> ins, outs;
      for (int id : cn.in_values) ins.push_back(&meta[id]);
      for (int id : cn.out_values) outs.push_back(&meta[id]);
      CallState st;
      st.values = &m->values;
      st.node = &cn;
      st.error = &error;
      st.scratch = &scratch;
      st.env = m->env.get();
      st.in_blobs = &blobs;
      WeftKernelContext c;
      BindContext(c, cn, WEFT_STAGE_DESERIALIZE, ins.data(), outs.data(), &st);
      error.clear();
      scratch.Reset();
      auto it = blobs.find("");
      const uint8_t* d = it == blobs.end() ? nullptr : it->second.first;
      uint64_t n = it == blobs.end() ? 0 : it->second.second;
      if (impl->deserialize(cn.instance, &c, d, n) != WEFT_STATUS_OK) return InvalidArgument(NodeError(cn, "Deserialize", error));
    }
    Liveness();
    for (int id : lg.output_ids) {
      Value& v = m->values[id];
      v.is_output = true;
      m->output_ids.push_back(id);
      m->outputs_.push_back({v.name, v.dtype, m->dynamic ? Shape() : v.shape});
    }
    WEFT_RETURN_IF_ERROR(PlanArena());
    return m;
  }
};

}  // namespace

Expected<std::vector<ValueInfo>> InferGraphShapes(const Graph& g, const OpRegistry& reg, std::shared_ptr<const EngineEnv> env) {
  Builder b{g, reg};
  b.m->env = std::move(env);
  return b.InferOnly();
}

Expected<std::shared_ptr<ModelImpl>> InstantiateLoaded(const LoadedGraph& lg, const OpRegistry& reg,
                                                       std::shared_ptr<const EngineEnv> env) {
  static const Graph kEmpty("loaded");
  Builder b{kEmpty, reg};
  b.m->env = std::move(env);
  return b.BuildLoaded(lg);
}

Expected<std::shared_ptr<CompiledModel>> CompileGraph(const Graph& g, const OpRegistry& reg,
                                                      std::shared_ptr<const EngineEnv> env,
                                                      const std::vector<Shape>* input_shapes) {
  Builder b{g, reg};
  b.m->env = std::move(env);
  b.input_shapes = input_shapes;
  auto r = b.Build();
  if (!r.ok()) return r;
  bool input_dynamic = false;
  for (auto& in : b.m->inputs_) input_dynamic = input_dynamic || in.shape.IsUnknown();
  if (input_dynamic && !input_shapes) {
    auto source = std::make_shared<Graph>(g);
    auto snapshot = std::make_shared<OpRegistry>(reg);
    std::shared_ptr<const EngineEnv> session_env = b.m->env;
    b.m->specialize = [source, snapshot, session_env](const std::vector<Shape>& shapes) {
      return CompileGraph(*source, *snapshot, session_env, &shapes);
    };
  }
  return r;
}

}  // namespace weft::internal
