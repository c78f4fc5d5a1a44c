// Model-file instantiation: binds a parsed .weft graph (model_format.cc) to the session's ops,
// re-checks every node against them (inference, fusion and layout declarations) and restores
// what Compile prepared through Deserialize; Compile itself never runs.
#include "compile/node_steps.h"

namespace weft::internal {
namespace {

struct Instantiator : NodeSteps {
  using NodeSteps::NodeSteps;

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
      cn->guards = ln.guards;
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
      PassContext pc = Passes(lg.output_ids);
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
      scratch.Reset();
      auto it = blobs.find("");
      const uint8_t* d = it == blobs.end() ? nullptr : it->second.first;
      uint64_t n = it == blobs.end() ? 0 : it->second.second;
      auto deserialize = [&](void* instance, WeftKernelContext* c) { return impl->deserialize(instance, c, d, n); };
      if (Call(cn, WEFT_STAGE_DESERIALIZE, deserialize, &scratch, nullptr, &blobs) != WEFT_STATUS_OK)
        return InvalidArgument(NodeError(cn, "Deserialize", error));
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

Expected<std::shared_ptr<ModelImpl>> InstantiateLoaded(const LoadedGraph& lg, const OpRegistry& reg,
                                                       std::shared_ptr<const EngineEnv> env) {
  Instantiator b(reg);
  b.m->env = std::move(env);
  return b.BuildLoaded(lg);
}

}  // namespace weft::internal
