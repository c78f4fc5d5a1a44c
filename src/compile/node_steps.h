// The per-node steps that compiling a graph (compiler.cc) and instantiating a model file
// (src/model/instantiate.cc) share: op objects, inference, fusion and layout queries, callbacks
// in a compile-time context, liveness and the arena plan. A loaded file goes through exactly
// the checks a fresh graph does.
#ifndef WEFT_SRC_COMPILE_NODE_STEPS_H_
#define WEFT_SRC_COMPILE_NODE_STEPS_H_

#include <set>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compile/compiler.h"
#include "compile/passes/passes.h"
#include "runtime/engine.h"

namespace weft::internal {

inline std::string DtypeList(const std::vector<DataType>& v) {
  std::string s;
  for (DataType d : v) s += (s.empty() ? "" : ", ") + std::string(DataTypeName(d));
  return s;
}

struct NodeSteps {
  explicit NodeSteps(const OpRegistry& r) : reg(r) {}
  const OpRegistry& reg;
  std::shared_ptr<ModelImpl> m = std::make_shared<ModelImpl>();
  std::vector<Tensor> meta;  // compile-time view of each value
  std::string error;

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
    st.registry = &reg;
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
      for (auto& [id, want] : m->nodes[s]->guards) m->values[id].last_use = std::max(m->values[id].last_use, static_cast<int>(s));
      for (int id : m->nodes[s]->out_values) m->values[id].producer = static_cast<int>(s);
    }
  }

  // Built-in ops whose output is their first input's bytes under another shape (a Cast only
  // when it keeps the type: the dtype check below): when that input is an intermediate that no
  // later step reads, the output takes its place in the arena and the op's copy becomes a
  // no-op. Not for graph outputs (they go to the caller's buffers), blocked layouts, guarded
  // (branch) steps, dynamic models or plugin checking (red zones per tensor).
  void AliasViews() {
    for (auto& v : m->values) v.alias_of = -1;
    if (m->dynamic || (m->env && m->env->check_plugins)) return;
    static const char* const kViews[] = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Cast", "CastLike"};
    for (size_t s = 0; s < m->nodes.size(); ++s) {
      const CompiledNode& cn = *m->nodes[s];
      if (cn.op->origin != "built-in" || !cn.guards.empty() || cn.in_values.empty() || cn.out_values.size() != 1) continue;
      if (std::find_if(std::begin(kViews), std::end(kViews), [&](const char* t) { return cn.op_type == t; }) == std::end(kViews))
        continue;
      Value& in = m->values[cn.in_values[0]];
      Value& out = m->values[cn.out_values[0]];
      if (in.kind != ValueKind::kIntermediate || out.kind != ValueKind::kIntermediate || in.is_output || out.is_output) continue;
      if (in.producer < 0 || in.last_use != static_cast<int>(s) || in.bytes != out.bytes || in.dtype != out.dtype) continue;
      if (in.format != WEFT_FORMAT_ND || out.format != WEFT_FORMAT_ND || in.storage_given || out.storage_given) continue;
      out.alias_of = cn.in_values[0];
    }
  }

  // The arena plan and the memory report (dynamic models size intermediates per run).
  Status PlanArena() {
    if (m->dynamic)
      for (auto& v : m->values)
        if (v.kind == ValueKind::kIntermediate) v.bytes = 0;
    AliasViews();
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

  bool* asked_host_args = nullptr;  // CallState::asked_host_args for the next Call
  // Runs one callback of `cn` in a compile-time context over `meta`.
  template <typename F>
  WeftStatus Call(CompiledNode& cn, WeftStage stage, F fn, Scratch* scratch = nullptr,
                  std::vector<OutputBound>* bounds = nullptr,
                  const std::map<std::string, std::pair<const uint8_t*, uint64_t>>* in_blobs = nullptr) {
    std::vector<WeftTensor*> ins, outs;
    for (int id : cn.in_values) ins.push_back(&meta[id]);
    for (int id : cn.out_values) outs.push_back(&meta[id]);
    CallState st;
    st.values = &m->values;
    st.node = &cn;
    st.error = &error;
    st.scratch = scratch;
    st.env = m->env.get();
    st.registry = &reg;
    st.kernels = &cn.kernels;
    st.bounds = bounds;
    st.in_blobs = in_blobs;
    st.asked_host_args = asked_host_args;
    WeftKernelContext c;
    BindContext(c, cn, stage, ins.data(), outs.data(), &st);
    error.clear();
    return fn(cn.instance, &c);
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
    *out = WeftFusionSupport{sizeof(WeftFusionSupport), 0, -1, -1, WEFT_ACT_NONE, 0.f, 0.f, 0, 0};
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
    // WEFT_LAYOUT_ANY: decided by the neighbours, among all planned formats (format ND) or plain and
    // the one named.
    if (out->format != WEFT_FORMAT_ND && out->format != WEFT_FORMAT_NC1HWC0 && out->format != WEFT_FORMAT_NHWC)
      bad = "format " + std::to_string(out->format) + " is not a layout this engine plans (NC1HWC0 or NHWC)";
    else if (p.inputs.size() < 64 && (out->inputs >> p.inputs.size()))
      bad = "inputs names an input the op does not declare";
    else if (p.outputs.size() < 64 && (out->outputs >> p.outputs.size()))
      bad = "outputs names an output the op does not declare";
    else if (out->flags & ~(WEFT_LAYOUT_TOGETHER | WEFT_LAYOUT_SLOW | WEFT_LAYOUT_ANY))
      bad = "flags has unknown bits";
    if (!bad.empty()) return InvalidArgument(NodeError(cn, "QueryLayout", bad + " (from " + cn.op->origin + ")"));
    return Status::Ok();
  }

  PassContext Passes(const std::vector<int>& output_ids) {
    PassContext pc;
    pc.model = m.get();
    pc.graph_output.assign(m->values.size(), 0);
    for (int id : output_ids) pc.graph_output[id] = 1;
    pc.query_fusion = [this](CompiledNode& cn, WeftFusionSupport* s) { return QueryFusion(cn, s); };
    pc.query_layout = [this](CompiledNode& cn, WeftLayoutSupport* s) { return QueryLayout(cn, s); };
    pc.create_instance = [this](CompiledNode& cn) { return CreateInstance(cn, "creating the rewritten node's op object"); };
    pc.add_constant = [this](const std::string& name, HostTensor t) {
      // A name no value has yet (model files key values by name).
      std::set<std::string> taken;
      for (const Value& x : m->values) taken.insert(x.name);
      std::string unique = name;
      for (int k = 2; taken.count(unique); ++k) unique = name + "_" + std::to_string(k);
      Value v;
      v.name = unique;
      v.kind = ValueKind::kConstant;
      v.dtype = t.dtype();
      v.shape = t.shape();
      v.bytes = t.bytes();
      v.index = static_cast<int>(m->constants.size());
      m->constants.push_back(std::move(t));
      m->values.push_back(v);
      meta.resize(m->values.size());
      meta.back().dtype = v.dtype;
      *Shape::View(&meta.back().shape) = v.shape;
      return static_cast<int>(m->values.size() - 1);
    };
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
    // Every output of this node takes its inferred shape, even after one of them turns out
    // data-dependent (which makes the nodes after this one infer at run time).
    const bool inferred_here = !m->dynamic;
    for (size_t k = 0; k < cn.out_values.size(); ++k) {
      int id = cn.out_values[k];
      Value& v = m->values[id];
      v.dtype = meta[id].GetDataType();
      if (!inferred_here) continue;
      if (k < bounds.size() && bounds[k].set) {
        v.bounded = true;
        v.bound = bounds[k].shape;
      }
      v.shape = meta[id].GetShape();
      if (v.shape.ndim < 0 || v.shape.ndim > WEFT_MAX_DIMS)
        return InvalidArgument(tag + "InferShape produced rank " + std::to_string(v.shape.ndim) + " for '" + v.name + "'");
      if (v.shape.IsUnknown()) {
        if (!m->dynamic)
          m->dynamic_reason = tag + "gives '" + v.name + "' the shape " + v.shape.ToString() +
                              " (a dim known only at run time: data-dependent, or from a branch taken at run time)";
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
};

}  // namespace weft::internal

#endif  // WEFT_SRC_COMPILE_NODE_STEPS_H_
