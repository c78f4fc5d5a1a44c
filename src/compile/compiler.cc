// The compile pipeline: resolve ops → map IO and attributes onto prototypes → topological order
// → per node: check input types, InferDataType, InferShape → graph passes (passes/) → Compile
// callbacks → memory plan (memory_plan.cc). The per-node steps it shares with model-file
// instantiation (src/model/instantiate.cc) are in node_steps.h.
#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <set>

#include "compile/node_steps.h"
#include "weft/litert.h"
#include "runtime/engine.h"

namespace weft::internal {

namespace {

// Why a node's op type is missing: the registry's suggestions, or for a LiteRT custom operator its
// customCode, canonical key and the two ways to provide it.
std::string MissingOpMessage(const OpRegistry& reg, const Node& n) {
  auto code = n.attrs.find("custom_code");
  if (n.domain != "litert" || code == n.attrs.end()) return reg.DescribeMissing(n.op_type);
  return "LiteRT custom operator with customCode '" + code->second.s() + "' (canonical key '" + LiteRtCustomOpKey(code->second.s()) +
         "') has no implementation in this session: load an operator package that registers op type '" + n.op_type +
         "' (WEFT_CUSTOM_OPP_PATH=<package root>, or --package), or map the code to an op type in the package's "
         "framework/litert/op_map.json ({\"ops\": {\"" + code->second.s() + "\": \"<OpType>\"}})";
}

std::string Tag(const Node& n) { return "[" + n.op_type + " '" + n.name + "'] "; }


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

struct Builder : NodeSteps {
  Builder(const Graph& graph, const OpRegistry& r) : NodeSteps(r), g(graph) {}
  const Graph& g;
  std::map<std::string, int> ids;

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
      if (in.shape.IsUnknown()) {
        if (!m->dynamic) m->dynamic_reason = "graph input '" + in.name + "' has the shape " + in.shape.ToString();
        m->dynamic = true;
      }
      uint64_t in_bytes = 0;
      if (!in.shape.IsUnknown() && !in.shape.GetCheckedBytes(DataTypeSize(in.dtype), &in_bytes))
        return InvalidArgument("graph input '" + in.name + "' has the shape " + in.shape.ToString() + ", whose size does not fit in 64 bits");
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
      std::vector<std::string> reads = n.inputs;
      for (auto& [cond, want] : n.when) reads.push_back(cond);  // a condition is read before the node runs
      for (auto& in : reads) {
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
    if (!cn.op) return NotFound("[" + n.op_type + " '" + n.name + "'] " + MissingOpMessage(reg, n));
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
    for (auto& [cond, want] : n.when) cn.guards.emplace_back(ids.at(cond), want);
    // Attributes in prototype order, defaults filled in.
    // What the LiteRT importer records about every operator (its code, version, output type and
    // quantization) reaches an op only if the op declares it.
    static const std::set<std::string> kLiteRtMetadata = {"custom_code", "version", "output_type", "input_scale", "input_zero_point",
                                                          "output_scale", "output_zero_point", "channel_scales",
                                                          "channel_zero_points", "channel_input", "quantized_dimension"};
    for (auto& [name, v] : n.attrs) {
      bool known = false;
      for (auto& a : p.attrs) known = known || a.name == name;
      if (!known && n.domain == "litert" && kLiteRtMetadata.count(name)) continue;
      // Converter bookkeeping in a custom operator's options ("_output_quantized",
      // "_support_output_type_float_in_quantized_op", "_output_types"): not the op's options.
      if (!known && n.domain == "litert" && !name.empty() && name[0] == '_') continue;
      if (!known && n.domain == "litert" && name == "custom_options") {
        uint64_t bytes = v.type() == WEFT_ATTR_TENSOR ? static_cast<uint64_t>(v.tensor().GetShapeSize()) : 0;
        return InvalidArgument(Tag(n) + "has custom options (" + std::to_string(bytes) +
                               " bytes) that are not a flexbuffer map, so they reach the op as raw bytes in the "
                               "attribute 'custom_options', which " + n.op_type +
                               " does not declare: declare it (.REQUIRED_ATTR(custom_options, Tensor)) to read the bytes "
                               "in the op, or register a parser for this customCode (weft aot's registry: parsers) "
                               "that turns them into the op's attributes");
      }
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
    bool stateful = false;
    asked_host_args = &stateful;
    WeftStatus folded = Call(cn, WEFT_STAGE_EXECUTE, cn.op->impl->execute, &scratch);
    asked_host_args = nullptr;
    if (stateful) {  // it keeps state between runs (GetHostArgs): it runs every time
      error.clear();
      for (int id : cn.out_values) meta[id].data = nullptr;
      return Status::Ok();
    }
    if (folded != WEFT_STATUS_OK) return InvalidArgument(NodeError(cn, "Execute (constant folding)", error));
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

  // Drops the guards a constant condition satisfies; false when one fails (a branch not taken).
  bool ResolveGuards(CompiledNode& cn) {
    std::vector<std::pair<int, bool>> left;
    for (auto& [id, want] : cn.guards) {
      const Value& v = m->values[id];
      if (v.kind != ValueKind::kConstant) {
        left.emplace_back(id, want);
        continue;
      }
      const HostTensor& t = m->constants[v.index];
      bool value = t.bytes() > 0 && static_cast<const uint8_t*>(t.data())[0] != 0;
      if (value != want) return false;
    }
    cn.guards = std::move(left);
    return true;
  }
  bool IsBuiltinIf(const CompiledNode& cn) const { return cn.op_type == "If" && cn.op->library == nullptr; }
  // An If whose condition is a constant reads the taken branch on both sides, so the values of
  // the dropped branch (never produced) are not read at all.
  void PickConstantBranch(CompiledNode& cn) {
    if (cn.in_values.empty()) return;
    const Value& c = m->values[cn.in_values[0]];
    if (c.kind != ValueKind::kConstant || c.dtype != DT_BOOL) return;
    const HostTensor& t = m->constants[c.index];
    if (t.bytes() == 0) return;
    bool taken = static_cast<const uint8_t*>(t.data())[0] != 0;
    size_t k = (cn.in_values.size() - 1) / 2;
    if (cn.in_values.size() != 2 * k + 1) return;  // the op's own check reports it
    for (size_t i = 0; i < k; ++i) {
      int chosen = cn.in_values[1 + (taken ? 0 : k) + i];
      cn.in_values[1 + i] = chosen;
      cn.in_values[1 + k + i] = chosen;
    }
  }
  bool OutputTypesKnown(const CompiledNode& cn) const {
    for (int id : cn.out_values)
      if (meta[id].GetDataType() == DT_UNDEFINED) return false;
    return true;
  }
  void MarkValueUnknown(int id) {
    Value& v = m->values[id];
    v.dtype = meta[id].GetDataType();
    v.shape = Shape({-1});
    *Shape::View(&meta[id].shape) = v.shape;
  }

  // Value ids of the graph's outputs.
  std::vector<int> GraphOutputIds() const {
    std::vector<int> out;
    for (auto& name : g.outputs())
      if (auto it = ids.find(name); it != ids.end()) out.push_back(it->second);
    return out;
  }

  Expected<std::shared_ptr<CompiledModel>> Build() {
    WEFT_RETURN_IF_ERROR(Declare());
    auto order = Order();
    if (!order.ok()) return order.status();
    // Every node whose op is unknown, in one message.
    std::vector<std::string> missing;
    bool litert_custom = false;
    for (size_t k : order.value()) {
      const Node& n = g.nodes()[k];
      if (reg.FindForNode(n.domain, n.op_type)) continue;
      std::string where = n.domain.empty() ? "" : ", domain " + n.domain;
      if (auto code = n.attrs.find("custom_code"); n.domain == "litert" && code != n.attrs.end()) {
        where = ", LiteRT customCode '" + code->second.s() + "', canonical key '" + LiteRtCustomOpKey(code->second.s()) + "'";
        litert_custom = true;
      }
      else if (n.opset) where += ", opset " + std::to_string(n.opset);
      missing.push_back("'" + NodeName(k) + "' (" + n.op_type + where + ")");
    }
    if (missing.size() == 1)
      for (size_t k : order.value())
        if (!reg.FindForNode(g.nodes()[k].domain, g.nodes()[k].op_type))
          return NotFound("[" + g.nodes()[k].op_type + " '" + NodeName(k) + "'] " + MissingOpMessage(reg, g.nodes()[k]));
    if (missing.size() > 1) {
      std::string msg = std::to_string(missing.size()) + " nodes use op types not registered in this session: ";
      for (size_t k = 0; k < missing.size(); ++k) msg += (k ? ", " : "") + missing[k];
      return NotFound(msg + ". Load the packages that provide them (WEFT_CUSTOM_OPP_PATH or --package)" +
                      (litert_custom ? std::string("; a package can also map a LiteRT customCode to an op type in its "
                                                   "framework/litert/op_map.json")
                                     : std::string()));
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
      if (!ResolveGuards(*cn)) {
        cn->pruned = true;  // a branch not taken: never instantiated, inferred or run
        continue;
      }
      for (auto& [id, want] : cn->guards)
        if (meta[id].GetDataType() != DT_BOOL)
          return InvalidArgument("[" + cn->op_type + " '" + cn->name + "'] runs when '" + m->values[id].name +
                                 "' holds, which must be a bool, not " + DataTypeName(meta[id].GetDataType()));
      WEFT_RETURN_IF_ERROR(CreateInstance(*cn));
      if (IsBuiltinIf(*cn)) PickConstantBranch(*cn);
      Status inferred = InferNode(*cn);
      if (!inferred.ok() && !cn->guards.empty() && !m->dynamic && OutputTypesKnown(*cn)) {
        // A branch that may not be taken cannot be held to shapes it would never see: its shapes
        // (and everything downstream) are inferred when it runs.
        m->dynamic = true;
        m->dynamic_reason = "[" + cn->op_type + " '" + cn->name + "'] runs only when '" + m->values[cn->guards[0].first].name +
                            "' holds (a branch of a conditional) and its shapes could not be inferred ahead of time: " +
                            inferred.message();
        for (int id : cn->out_values) MarkValueUnknown(id);
        inferred = Status::Ok();
      }
      WEFT_RETURN_IF_ERROR(inferred);
      WEFT_RETURN_IF_ERROR(MaybeFold(*cn));
    }
    // "weft.graph_passes" = "none" keeps the graph as written (weft aot emits every node as is).
    auto passes = m->env ? m->env->options.find("weft.graph_passes") : std::map<std::string, std::string>::const_iterator();
    const bool no_passes = m->env && passes != m->env->options.end() && passes->second == "none";
    if (!m->dynamic && !no_passes) {
      PassContext pc = Passes(GraphOutputIds());
      WEFT_RETURN_IF_ERROR(FoldPadIntoConv(pc));
      WEFT_RETURN_IF_ERROR(FoldSliceIntoConv(pc));
      WEFT_RETURN_IF_ERROR(FoldBatchNorm(pc));
      WEFT_RETURN_IF_ERROR(FuseGelu(pc, reg.Find("Gelu")));
      WEFT_RETURN_IF_ERROR(FuseEpilogues(pc));
      WEFT_RETURN_IF_ERROR(FuseLayerNorm(pc, reg.Find("LayerNormalization")));
      WEFT_RETURN_IF_ERROR(AssignBlockedLayouts(pc));
    }
    // Folded and pruned nodes are gone; so is every node nothing downstream needs (dead code).
    std::vector<bool> needed(m->values.size(), false);
    for (auto& name : g.outputs())
      if (auto it = ids.find(name); it != ids.end()) needed[it->second] = true;
    std::vector<std::unique_ptr<CompiledNode>> kept;
    for (size_t k = m->nodes.size(); k-- > 0;) {
      auto& cn = m->nodes[k];
      bool live = !cn->folded && !cn->pruned;
      if (live && cn->op_type != "AssignVariable") {  // an assignment is kept for its effect on the run context
        live = false;
        for (int id : cn->out_values) live = live || needed[id];
      }
      if (!live) continue;
      for (int id : cn->in_values) needed[id] = true;
      for (auto& [id, want] : cn->guards) needed[id] = true;
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
      m->dynamic_reason.clear();
      WEFT_RETURN_IF_ERROR(InferNode(*cn));
    }
    std::vector<ValueInfo> out;
    for (auto& name : g.outputs()) {
      auto it = ids.find(name);
      if (it == ids.end()) return InvalidArgument("graph output '" + name + "' is not produced by any node, input or constant");
      const Value& v = m->values[it->second];
      out.push_back({v.name, v.dtype, v.shape, v.bounded, v.bound});
    }
    return out;
  }

};

}  // namespace

Expected<std::vector<ValueInfo>> InferGraphShapes(const Graph& g, const OpRegistry& reg, std::shared_ptr<const EngineEnv> env) {
  Builder b(g, reg);
  b.m->env = std::move(env);
  return b.InferOnly();
}

Expected<std::shared_ptr<CompiledModel>> CompileGraph(const Graph& g, const OpRegistry& reg,
                                                      std::shared_ptr<const EngineEnv> env,
                                                      const std::vector<Shape>* input_shapes) {
  Builder b(g, reg);
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
