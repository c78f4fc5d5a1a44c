// libweft_torch.so: every Weft operator as torch.ops.weft.<op> from C++, with no Python in the
// call path. Load it with torch.ops.load_library(path) (`import weft.torch` does it for you).
//
// At load it registers the ops of the process-wide session (weft::Session::Default(): built-ins +
// WEFT_CUSTOM_OPP_PATH), and weft_torch_register() adds those of any other session. Per op it
// defines the schema generated from the REG_OP prototype and registers boxed kernels:
//   CPU       the op's Execute on the tensors' memory, through a single-node model compiled once
//             per input signature (shapes, dtypes, attributes) and cached;
//   Meta      the op's InferDataType/InferShape;
//   Autograd  a clear error when an input requires grad (ops with an `<Op>Grad` op get their
//             autograd kernel from weft.torch), else a redispatch below autograd.
// The library links libweft.so: it shares the engine (sessions, kernel cache, threads) with the
// Python package and every other user in the process.
#include <cmath>
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/library.h>

#include <cctype>
#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include "weft/weft.h"

namespace {

using weft::AttrValue;
using weft::DataType;

c10::ScalarType ToTorch(DataType dt) {
  switch (dt) {
    case weft::DT_FLOAT: return at::kFloat;
    case weft::DT_FLOAT16: return at::kHalf;
    case weft::DT_BF16: return at::kBFloat16;
    case weft::DT_DOUBLE: return at::kDouble;
    case weft::DT_INT8: return at::kChar;
    case weft::DT_UINT8: return at::kByte;
    case weft::DT_INT16: return at::kShort;
    case weft::DT_UINT16: return at::kUInt16;
    case weft::DT_UINT32: return at::kUInt32;
    case weft::DT_UINT64: return at::kUInt64;
    case weft::DT_INT32: return at::kInt;
    case weft::DT_INT64: return at::kLong;
    case weft::DT_BOOL: return at::kBool;
    default: TORCH_CHECK(false, "weft: no torch dtype for ", weft::DataTypeName(dt));
  }
}

DataType FromTorch(c10::ScalarType t) {
  switch (t) {
    case at::kFloat: return weft::DT_FLOAT;
    case at::kHalf: return weft::DT_FLOAT16;
    case at::kBFloat16: return weft::DT_BF16;
    case at::kDouble: return weft::DT_DOUBLE;
    case at::kChar: return weft::DT_INT8;
    case at::kByte: return weft::DT_UINT8;
    case at::kShort: return weft::DT_INT16;
    case at::kUInt16: return weft::DT_UINT16;
    case at::kUInt32: return weft::DT_UINT32;
    case at::kUInt64: return weft::DT_UINT64;
    case at::kInt: return weft::DT_INT32;
    case at::kLong: return weft::DT_INT64;
    case at::kBool: return weft::DT_BOOL;
    default: TORCH_CHECK(false, "weft: unsupported tensor dtype ", t);
  }
}

std::string Literal(const AttrValue& v) {
  std::ostringstream s;
  s.precision(17);
  switch (v.type()) {
    case WEFT_ATTR_INT: s << v.i(); break;
    case WEFT_ATTR_FLOAT: s << static_cast<double>(v.f()); break;
    case WEFT_ATTR_BOOL: s << (v.i() ? "True" : "False"); break;
    case WEFT_ATTR_STRING: {
      s << '"';
      for (char c : v.s()) s << (c == '"' || c == '\\' ? "\\" : "") << c;
      s << '"';
      break;
    }
    case WEFT_ATTR_LIST_INT: {
      s << '[';
      for (size_t k = 0; k < v.ints().size(); ++k) s << (k ? ", " : "") << v.ints()[k];
      s << ']';
      break;
    }
    case WEFT_ATTR_LIST_FLOAT: {
      s << '[';
      for (size_t k = 0; k < v.floats().size(); ++k) s << (k ? ", " : "") << static_cast<double>(v.floats()[k]);
      s << ']';
      break;
    }
    default: s << "None";
  }
  return s.str();
}

const char* AttrSchemaType(WeftAttrType t) {
  switch (t) {
    case WEFT_ATTR_INT: return "int";
    case WEFT_ATTR_FLOAT: return "float";
    case WEFT_ATTR_BOOL: return "bool";
    case WEFT_ATTR_STRING: return "str";
    case WEFT_ATTR_LIST_INT: return "int[]";
    case WEFT_ATTR_LIST_FLOAT: return "float[]";
    case WEFT_ATTR_LIST_BOOL: return "bool[]";
    case WEFT_ATTR_LIST_STRING: return "str[]";
    case WEFT_ATTR_TYPE: return "ScalarType";
    default: return "Tensor?";
  }
}

bool IsIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// The keyword arguments that ask for an op's extra result lists, as weft.torch._count_args: each
// dynamic output of an op that has a fixed one too gets `int num_<output>=0` (how many tensors
// the call returns there), unless an input or attribute has that name.
std::vector<std::pair<size_t, std::string>> CountArgs(const weft::OpSchema& s) {
  std::vector<std::pair<size_t, std::string>> out;
  bool fixed = false;
  for (auto& o : s.outputs) fixed |= o.kind != WEFT_IO_DYNAMIC;
  if (!fixed) return out;
  for (size_t j = 0; j < s.outputs.size(); ++j) {
    if (s.outputs[j].kind != WEFT_IO_DYNAMIC) continue;
    std::string name = "num_" + s.outputs[j].name;
    bool taken = !IsIdentifier(name);
    for (auto& a : s.attrs) taken |= a.name == name;
    for (auto& i : s.inputs) taken |= i.name == name;
    if (!taken) out.emplace_back(j, name);
  }
  return out;
}

// The same schema weft.torch.schema_of writes.
std::string SchemaOf(const weft::OpSchema& s) {
  std::string args;
  auto add = [&](const std::string& a) { args += (args.empty() ? "" : ", ") + a; };
  // An optional input before a required one has no default (torch allows defaults at the end only).
  size_t defaults_from = 0;
  for (size_t k = 0; k < s.inputs.size(); ++k)
    if (s.inputs[k].kind != WEFT_IO_OPTIONAL) defaults_from = k + 1;
  for (size_t k = 0; k < s.inputs.size(); ++k) {
    const auto& io = s.inputs[k];
    if (io.kind == WEFT_IO_REQUIRED) add("Tensor " + io.name);
    else if (io.kind == WEFT_IO_OPTIONAL) add("Tensor? " + io.name + (k >= defaults_from ? "=None" : ""));
    else add("Tensor[] " + io.name);
  }
  const auto counts = CountArgs(s);
  if (!s.attrs.empty() || !counts.empty()) add("*");
  for (auto& a : s.attrs) {
    std::string t = AttrSchemaType(a.type);
    if (a.required) add(t + " " + a.name);
    else if (a.type == WEFT_ATTR_LIST_STRING || a.type == WEFT_ATTR_LIST_BOOL || a.type == WEFT_ATTR_TYPE ||
             (a.type == WEFT_ATTR_FLOAT && std::isnan(a.default_value.f())))  // torch has no literal for these: None stands for the op's default
      add(t + "? " + a.name + "=None");
    else if (a.type == WEFT_ATTR_TENSOR) add(t + " " + a.name + "=None");
    else add(t + " " + a.name + "=" + Literal(a.default_value));
  }
  for (auto& c : counts) add("int " + c.second + "=0");
  std::string ret;
  for (auto& o : s.outputs) ret += (ret.empty() ? "" : ", ") + std::string(o.kind == WEFT_IO_DYNAMIC ? "Tensor[]" : "Tensor");
  if (s.outputs.size() != 1) ret = "(" + ret + ")";
  return s.op_type + "(" + args + ") -> " + ret;
}

// The key of a call: input dtypes and shapes, optional/dynamic structure, attribute values. Built
// into a reused buffer with no allocation on the hot path.
class OpKernels {
 public:
  OpKernels(std::shared_ptr<weft::Session> session, weft::OpSchema schema)
      : session_(std::move(session)), schema_(std::move(schema)), count_args_(CountArgs(schema_)) {}

  size_t num_args() const { return schema_.inputs.size() + schema_.attrs.size() + count_args_.size(); }
  // The tensors a call asks for in dynamic output j (its num_<output> argument; 0 without one).
  size_t ExtraCount(const torch::jit::Stack& stack, size_t j) const {
    auto args = torch::jit::last(stack, num_args());
    for (size_t k = 0; k < count_args_.size(); ++k) {
      if (count_args_[k].first != j) continue;
      int64_t n = args[schema_.inputs.size() + schema_.attrs.size() + k].toInt();
      TORCH_CHECK(n >= 0 && n <= 64, "weft::", schema_.op_type, ": ", count_args_[k].second, "=", n,
                  " is out of range (0 to 64)");
      return static_cast<size_t>(n);
    }
    return 0;
  }
  bool HasFixedOutput() const {
    for (auto& o : schema_.outputs)
      if (o.kind != WEFT_IO_DYNAMIC) return true;
    return false;
  }
  // An op whose only output is a list (Split): it returns as many tensors as the call asks for.
  bool ListOnly() const { return schema_.outputs.size() == 1 && schema_.outputs[0].kind == WEFT_IO_DYNAMIC; }
  // How many: the `num_outputs` attribute when set, else the length of an input named `split`
  // (its shape, so meta and fake tensors know it too), else, for an op that takes a list too (an
  // optimizer's weight groups), the smallest count its shape inference accepts.
  size_t ListCount(const torch::jit::Stack& stack, const std::vector<weft::TensorRef>& ins) const {
    auto args = torch::jit::last(stack, num_args());
    for (size_t k = 0; k < schema_.attrs.size(); ++k) {
      const c10::IValue& v = args[schema_.inputs.size() + k];
      if (schema_.attrs[k].name == "num_outputs" && v.isInt() && v.toInt() > 0) return static_cast<size_t>(v.toInt());
    }
    for (size_t k = 0; k < schema_.inputs.size(); ++k)
      if (schema_.inputs[k].name == "split" && args[k].isTensor()) return static_cast<size_t>(args[k].toTensor().numel());
    size_t listed = 0;
    for (size_t k = 0; k < schema_.inputs.size(); ++k)
      if (schema_.inputs[k].kind == WEFT_IO_DYNAMIC) listed += args[k].toTensorList().size();
    for (size_t count = 1; count <= 4 * listed; ++count)
      if (session_->InferShapes(GraphOf(stack, ins, count)).ok()) return count;
    TORCH_CHECK(false, "weft::", schema_.op_type, ": its outputs are a list; say how many with num_outputs= or a split tensor");
    return 0;
  }
  // Pushes the model's results in schema order: for each dynamic output a list of as many as the
  // call asked for (all of them as one list for a list-only op). `counts` (from Counts, read before
  // the arguments left the stack) are the asked-for counts per output; none past its end.
  template <typename Results>
  void PushResults(torch::jit::Stack* stack, Results&& results, size_t n, const std::vector<size_t>& counts) const {
    if (ListOnly()) {
      c10::List<at::Tensor> all;
      for (size_t k = 0; k < n; ++k) all.push_back(std::move(results[k]));
      stack->emplace_back(std::move(all));
      return;
    }
    size_t next = 0;
    for (size_t j = 0; j < schema_.outputs.size(); ++j) {
      if (schema_.outputs[j].kind == WEFT_IO_DYNAMIC) {
        c10::List<at::Tensor> list;
        const size_t want = j < counts.size() ? counts[j] : 0;
        for (size_t k = 0; k < want && next < n; ++k) list.push_back(std::move(results[next++]));
        stack->emplace_back(std::move(list));
      } else if (next < n) {
        stack->emplace_back(std::move(results[next++]));
      }
    }
  }
  // Empty (no allocation on the hot path) for an op without num_<output> arguments.
  std::vector<size_t> Counts(const torch::jit::Stack& stack) const {
    if (count_args_.empty() || ListOnly()) return {};
    std::vector<size_t> c(schema_.outputs.size(), 1);
    for (size_t j = 0; j < c.size(); ++j)
      if (schema_.outputs[j].kind == WEFT_IO_DYNAMIC) c[j] = ExtraCount(stack, j);
    return c;
  }

  // Appends the call's key to `key` and its tensors to `ins` (contiguous copies go to `keep`).
  void Key(const torch::jit::Stack& stack, std::string& key, std::vector<weft::TensorRef>& ins,
           std::vector<at::Tensor>& keep) const {
    auto args = torch::jit::last(stack, num_args());
    auto tensor = [&](const at::Tensor& t0) {
      const at::Tensor* t = &t0;
      if (!t0.is_contiguous()) {
        keep.push_back(t0.contiguous());
        t = &keep.back();
      }
      TORCH_CHECK(t->dim() <= WEFT_MAX_DIMS, "weft::", schema_.op_type, ": at most 8 dims");
      weft::TensorRef r;
      r.dtype = FromTorch(t->scalar_type());
      r.shape.ndim = t->dim();
      for (int64_t d = 0; d < r.shape.ndim; ++d) r.shape.dims[d] = t->sizes()[d];
      r.data = t->data_ptr();
      r.bytes = static_cast<size_t>(t->numel()) * t->element_size();
      key.append(reinterpret_cast<const char*>(&r.dtype), sizeof(r.dtype));
      key.append(reinterpret_cast<const char*>(&r.shape.ndim), sizeof(int64_t) * (1 + r.shape.ndim));
      ins.push_back(r);
    };
    for (size_t k = 0; k < schema_.inputs.size(); ++k) {
      const c10::IValue& v = args[k];
      if (schema_.inputs[k].kind == WEFT_IO_DYNAMIC) {
        const auto& list = v.toTensorList();
        uint32_t c = static_cast<uint32_t>(list.size());
        key.append(reinterpret_cast<const char*>(&c), sizeof(c));
        for (size_t i = 0; i < list.size(); ++i) tensor(list.get(i));
      } else if (v.isNone()) {
        key.push_back('\0');
      } else {
        key.push_back('\1');
        tensor(v.toTensor());
      }
    }
    for (size_t k = 0; k < schema_.attrs.size(); ++k) {
      const c10::IValue& v = args[schema_.inputs.size() + k];
      key.push_back(static_cast<char>('A' + k));
      if (v.isNone()) continue;
      auto raw = [&](const void* p, size_t n) { key.append(static_cast<const char*>(p), n); };
      switch (schema_.attrs[k].type) {
        case WEFT_ATTR_INT:
        case WEFT_ATTR_TYPE: {
          int64_t i = v.toInt();
          raw(&i, sizeof(i));
          break;
        }
        case WEFT_ATTR_FLOAT: {
          double d = v.toDouble();
          raw(&d, sizeof(d));
          break;
        }
        case WEFT_ATTR_BOOL: key.push_back(v.toBool() ? '1' : '0'); break;
        case WEFT_ATTR_STRING: {
          const std::string& str = v.toStringRef();
          uint64_t n = str.size();
          raw(&n, sizeof(n));
          key += str;
          break;
        }
        case WEFT_ATTR_LIST_INT: {
          auto l = v.toIntList();
          uint64_t n = l.size();
          raw(&n, sizeof(n));
          for (int64_t i : l) raw(&i, sizeof(i));
          break;
        }
        case WEFT_ATTR_LIST_FLOAT: {
          auto l = v.toDoubleList();
          uint64_t n = l.size();
          raw(&n, sizeof(n));
          for (double d : l) raw(&d, sizeof(d));
          break;
        }
        case WEFT_ATTR_LIST_BOOL: {
          for (bool b : v.toBoolList()) key.push_back(b ? '1' : '0');
          key.push_back('.');
          break;
        }
        case WEFT_ATTR_LIST_STRING: {
          for (const auto& x : v.toListRef()) {
            uint64_t n = x.toStringRef().size();
            raw(&n, sizeof(n));
            key += x.toStringRef();
          }
          key.push_back('.');
          break;
        }
        case WEFT_ATTR_TENSOR: {
          at::Tensor t = v.toTensor().contiguous();
          int32_t dt = FromTorch(t.scalar_type());
          raw(&dt, sizeof(dt));
          int64_t nd = t.dim();
          raw(&nd, sizeof(nd));
          for (int64_t d = 0; d < nd; ++d) {
            int64_t e = t.size(d);
            raw(&e, sizeof(e));
          }
          raw(t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
          break;
        }
        default: break;
      }
    }
    for (size_t k = 0; k < count_args_.size(); ++k) {
      int64_t n = args[schema_.inputs.size() + schema_.attrs.size() + k].toInt();
      key.push_back('#');
      key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    }
  }

  // The single-node graph of this call (cache misses and Meta only).
  weft::Graph GraphOf(const torch::jit::Stack& stack, const std::vector<weft::TensorRef>& ins, size_t list_count = 0) const {
    auto args = torch::jit::last(stack, num_args());
    weft::Graph g(schema_.op_type);
    std::vector<std::string> names;
    std::vector<uint32_t> counts;
    size_t next = 0;
    auto input = [&] {
      std::string name = "in" + std::to_string(next);
      g.AddInput(name, ins[next].dtype, ins[next].shape);
      ++next;
      names.push_back(name);
    };
    for (size_t k = 0; k < schema_.inputs.size(); ++k) {
      const c10::IValue& v = args[k];
      if (schema_.inputs[k].kind == WEFT_IO_DYNAMIC) {
        size_t c = v.toTensorList().size();
        for (size_t i = 0; i < c; ++i) input();
        counts.push_back(static_cast<uint32_t>(c));
      } else if (v.isNone()) {
        names.push_back("");
        counts.push_back(1);
      } else {
        input();
        counts.push_back(1);
      }
    }
    weft::Node n;
    n.op_type = schema_.op_type;
    n.name = "op";
    n.inputs = names;
    n.input_counts = counts;
    for (size_t k = 0; k < schema_.attrs.size(); ++k) {
      const c10::IValue& v = args[schema_.inputs.size() + k];
      if (v.isNone()) continue;
      const auto& a = schema_.attrs[k];
      AttrValue av;
      switch (a.type) {
        case WEFT_ATTR_INT: av = AttrValue::Int(v.toInt()); break;
        case WEFT_ATTR_TYPE: av = AttrValue::Int(static_cast<int64_t>(FromTorch(v.toScalarType()))); break;  // a torch.dtype
        case WEFT_ATTR_FLOAT: av = AttrValue::Float(static_cast<float>(v.toDouble())); break;
        case WEFT_ATTR_BOOL: av = AttrValue::Bool(v.toBool()); break;
        case WEFT_ATTR_STRING: av = AttrValue::String(v.toStringRef()); break;
        case WEFT_ATTR_LIST_INT: av = AttrValue::ListInt(v.toIntVector()); break;
        case WEFT_ATTR_LIST_FLOAT: {
          std::vector<float> f;
          for (double d : v.toDoubleVector()) f.push_back(static_cast<float>(d));
          av = AttrValue::ListFloat(f);
          break;
        }
        case WEFT_ATTR_LIST_BOOL: {
          std::vector<bool> b;
          for (bool x : v.toBoolList()) b.push_back(x);
          av = AttrValue::ListBool(b);
          break;
        }
        case WEFT_ATTR_LIST_STRING: {
          std::vector<std::string> strs;
          for (const auto& x : v.toListRef()) strs.push_back(x.toStringRef());
          av = AttrValue::ListString(strs);
          break;
        }
        case WEFT_ATTR_TENSOR: {
          at::Tensor t = v.toTensor().contiguous();
          TORCH_CHECK(t.dim() <= WEFT_MAX_DIMS, "weft::", schema_.op_type, ": attribute '", a.name, "' is a tensor of ", t.dim(),
                      " dims; at most ", WEFT_MAX_DIMS);
          const auto* p = static_cast<const uint8_t*>(t.data_ptr());
          weft::Shape sh;
          for (int64_t d = 0; d < t.dim(); ++d) sh.AppendDim(t.size(d));
          av = AttrValue::TensorValue(FromTorch(t.scalar_type()), sh, std::vector<uint8_t>(p, p + t.numel() * t.element_size()));
          break;
        }
        default: continue;
      }
      n.attrs[a.name] = std::move(av);
    }
    // Dynamic outputs (extra results such as MaxPool's Indices) have as many tensors as the call's
    // num_<output> asks (none by default); an op whose only output is a list returns it whole; one
    // with several lists and nothing else is not callable from torch.
    if (ListOnly()) {
      const size_t count = list_count ? list_count : ListCount(stack, ins);
      for (size_t k = 0; k < count; ++k) n.outputs.push_back("out0_" + std::to_string(k));
      n.output_counts.push_back(static_cast<uint32_t>(count));
    }
    TORCH_CHECK(ListOnly() || HasFixedOutput(), "weft::", schema_.op_type,
                ": ops whose outputs are several lists are not callable from torch");
    for (size_t k = 0; k < schema_.outputs.size() && !ListOnly(); ++k) {
      bool dyn = schema_.outputs[k].kind == WEFT_IO_DYNAMIC;
      const size_t c = dyn ? ExtraCount(stack, k) : 1;
      for (size_t i = 0; i < c; ++i) n.outputs.push_back("out" + std::to_string(k) + (dyn ? "_" + std::to_string(i) : ""));
      n.output_counts.push_back(static_cast<uint32_t>(c));
    }
    std::vector<std::string> outs = n.outputs;
    g.AddNode(std::move(n));
    for (auto& o : outs) g.AddOutput(o);
    return g;
  }

  struct Entry {
    std::shared_ptr<weft::CompiledModel> model;
    bool dynamic = false;
    std::vector<std::vector<int64_t>> out_shapes;
    std::vector<c10::ScalarType> out_types;
    std::unique_ptr<weft::RunContext> ctx;  // used by whichever thread holds ctx_mu
    std::mutex ctx_mu;
  };

  Entry& Find(const torch::jit::Stack& stack, const std::string& key, const std::vector<weft::TensorRef>& ins) {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = models_.find(key);
      if (it != models_.end()) return *it->second;
    }
    auto m = session_->Compile(GraphOf(stack, ins));
    TORCH_CHECK(m.ok(), m.status().message());
    auto e = std::make_unique<Entry>();
    e->model = m.value();
    e->dynamic = e->model->has_dynamic_shapes();
    e->ctx = e->model->CreateRunContext();
    for (auto& o : e->model->outputs()) {
      e->out_shapes.emplace_back(o.shape.dims, o.shape.dims + std::max<int64_t>(0, o.shape.ndim));
      e->out_types.push_back(e->dynamic ? at::kFloat : ToTorch(o.dtype));
    }
    std::lock_guard<std::mutex> l(mu_);
    return *models_.emplace(key, std::move(e)).first->second;
  }

  // Per-thread buffers, reached with one thread-local lookup per call.
  struct CallBuffers {
    std::string key;
    std::vector<weft::TensorRef> ins;
  };

  void Cpu(torch::jit::Stack* stack) {
    thread_local CallBuffers buf;
    std::string& key = buf.key;
    std::vector<weft::TensorRef>& ins = buf.ins;
    key.clear();
    ins.clear();
    std::vector<at::Tensor> keep;
    Key(*stack, key, ins, keep);
    Entry& e = Find(*stack, key, ins);
    const std::vector<size_t> counts = Counts(*stack);
    // The entry's run context, or a private one when another thread is using it.
    std::unique_lock<std::mutex> lock(e.ctx_mu, std::try_to_lock);
    std::unique_ptr<weft::RunContext> own;
    weft::RunContext* ctx = e.ctx.get();
    if (!lock.owns_lock()) ctx = (own = e.model->CreateRunContext()).get();
    // A call is a function of its arguments: a stateful op (SVDF, a sequence LSTM) starts from its
    // initial state every time, as it does in a new run context.
    ctx->ResetState();
    if (!e.dynamic && e.out_shapes.size() <= 8) {  // more outputs (a long Split) take the general path below
      size_t n_out = e.out_shapes.size();
      at::Tensor outs[8];
      weft::TensorRef refs[8];
      for (size_t k = 0; k < n_out; ++k) {
        outs[k] = at::detail::empty_cpu(e.out_shapes[k], e.out_types[k], c10::nullopt, c10::nullopt, c10::nullopt, c10::nullopt);
        const auto& o = e.model->outputs()[k];
        refs[k] = {o.dtype, o.shape, outs[k].data_ptr(), static_cast<size_t>(outs[k].nbytes())};
      }
      weft::Status s = e.model->Run(*ctx, ins.data(), ins.size(), refs, n_out);
      TORCH_CHECK(s.ok(), s.message());
      torch::jit::drop(*stack, num_args());
      PushResults(stack, outs, n_out, counts);
      return;
    }
    auto views = e.model->RunViews(*ctx, ins.data(), ins.size());
    TORCH_CHECK(views.ok(), views.status().message());
    torch::jit::drop(*stack, num_args());
    std::vector<at::Tensor> results;
    for (auto& v : views.value()) {
      at::Tensor t = at::empty(at::IntArrayRef(v.shape.dims, static_cast<size_t>(v.shape.ndim)), at::TensorOptions().dtype(ToTorch(v.dtype)));
      if (v.bytes) std::memcpy(t.data_ptr(), v.data, v.bytes);
      results.push_back(std::move(t));
    }
    PushResults(stack, results, results.size(), counts);
  }

  void Meta(torch::jit::Stack* stack) {
    std::string key;
    std::vector<weft::TensorRef> ins;
    std::vector<at::Tensor> keep;
    // Meta tensors have no data: describe them without touching data_ptr.
    auto args = torch::jit::last(*stack, num_args());
    for (size_t k = 0; k < schema_.inputs.size(); ++k) {
      auto add = [&](const at::Tensor& t) {
        TORCH_CHECK(t.dim() <= WEFT_MAX_DIMS, "weft::", schema_.op_type, ": a tensor of ", t.dim(), " dims; at most ", WEFT_MAX_DIMS);
        weft::TensorRef r;
        r.dtype = FromTorch(t.scalar_type());
        r.shape.ndim = t.dim();
        for (int64_t d = 0; d < t.dim(); ++d) r.shape.dims[d] = t.size(d);
        ins.push_back(r);
      };
      const c10::IValue& v = args[k];
      if (schema_.inputs[k].kind == WEFT_IO_DYNAMIC) {
        for (const at::Tensor& t : v.toTensorVector()) add(t);
      } else if (!v.isNone()) {
        add(v.toTensor());
      }
    }
    auto info = session_->InferShapes(GraphOf(*stack, ins));
    TORCH_CHECK(info.ok(), info.status().message());
    const std::vector<size_t> counts = Counts(*stack);
    torch::jit::drop(*stack, num_args());
    std::vector<at::Tensor> results;
    for (auto& o : info.value()) {
      TORCH_CHECK(!o.shape.IsUnknown(), "weft::", schema_.op_type, ": output '", o.name, "' has a data-dependent shape ",
                  o.shape.ToString(), "; it cannot be computed on meta tensors");
      results.push_back(at::empty(at::IntArrayRef(o.shape.dims, static_cast<size_t>(o.shape.ndim)),
                                  at::TensorOptions().dtype(ToTorch(o.dtype)).device(at::kMeta)));
    }
    PushResults(stack, results, results.size(), counts);
  }

 private:
  std::shared_ptr<weft::Session> session_;
  weft::OpSchema schema_;
  std::vector<std::pair<size_t, std::string>> count_args_;
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<Entry>> models_;
};

struct CpuKernel : c10::OperatorKernel {
  explicit CpuKernel(std::shared_ptr<OpKernels> k) : k(std::move(k)) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) { k->Cpu(stack); }
  std::shared_ptr<OpKernels> k;
};
struct MetaKernel : c10::OperatorKernel {
  explicit MetaKernel(std::shared_ptr<OpKernels> k) : k(std::move(k)) {}
  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) { k->Meta(stack); }
  std::shared_ptr<OpKernels> k;
};
struct AutogradKernel : c10::OperatorKernel {
  explicit AutogradKernel(std::string op) : op(std::move(op)) {}
  void operator()(const c10::OperatorHandle& h, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    if (at::GradMode::is_enabled()) {
      size_t n = h.schema().arguments().size();
      for (const auto& v : torch::jit::last(*stack, n)) {
        bool grad = false;
        if (v.isTensor()) grad = v.toTensor().requires_grad();
        else if (v.isTensorList())
          for (const at::Tensor& t : v.toTensorVector()) grad = grad || t.requires_grad();
        TORCH_CHECK(!grad, "weft::", op, " has no backward: it was called on a tensor that requires grad. Add an op '", op,
                    "Grad' to its package (inputs: ", op, "'s inputs then one gradient per output; outputs: one gradient per "
                    "input), or call it under torch.no_grad() / on detached tensors");
      }
    }
    at::AutoDispatchBelowADInplaceOrView guard;
    h.redispatchBoxed(ks & c10::after_ADInplaceOrView_keyset, stack);
  }
  std::string op;
};

// Registers every op of `session` that torch.ops.weft does not have yet; returns their names.
// Each call keeps its torch::Library (and with it the registrations) for the life of the process.
// An op with an input or output that is only ever a sequence or an optional (SequenceAt,
// Optional, ...): torch has no tensor for it, so it is left out.
bool TakesOnlyValues(const weft::OpSchema& s) {
  for (const auto* list : {&s.inputs, &s.outputs})
    for (const auto& io : *list) {
      bool any_tensor = false;
      for (auto d : io.dtypes) any_tensor |= weft::IsTensorType(d);
      if (!io.dtypes.empty() && !any_tensor) return true;
    }
  return false;
}

std::vector<std::string> RegisterSession(const std::shared_ptr<weft::Session>& session) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<torch::Library>> libraries;
  std::lock_guard<std::mutex> lock(mu);
  auto lib = std::make_unique<torch::Library>(torch::Library::FRAGMENT, "weft", std::nullopt, __FILE__, __LINE__);
  auto infos = session->ListOps();
  std::set<std::string> names;
  for (auto& i : infos) names.insert(i.op_type);
  std::vector<std::string> done;
  for (auto& info : infos) {
    if (!IsIdentifier(info.op_type) || !(info.capabilities & WEFT_CAP_EAGER_EXECUTE)) continue;
    if (c10::Dispatcher::singleton().findSchema({"weft::" + info.op_type, ""})) continue;  // registered before
    auto schema = session->GetOpSchema(info.op_type);
    if (!schema.ok() || TakesOnlyValues(schema.value())) continue;
    std::string text = SchemaOf(schema.value());
    try {
      lib->def(text.c_str());
    } catch (const std::exception&) {  // c10::Error, or the schema parser's torch::jit::ErrorReport
      continue;  // a prototype torch cannot express: leave the op out
    }
    auto k = std::make_shared<OpKernels>(session, schema.value());
    const char* op = info.op_type.c_str();
    // An op without tensor inputs (RandomUniform, RandomNormal) gives torch nothing to dispatch
    // on: its kernel serves every backend, as a factory function's does.
    const auto key = schema.value().inputs.empty() ? c10::DispatchKey::CompositeExplicitAutograd : c10::DispatchKey::CPU;
    lib->impl(op, torch::dispatch(key, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<CpuKernel>(k))));
    lib->impl(op, torch::dispatch(c10::DispatchKey::Meta, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<MetaKernel>(k))));
    // Ops without an <Op>Grad get a kernel that fails clearly on tensors that require grad (the
    // alternative is a result that silently does not require grad); weft.torch adds the real
    // backward of ops that have one.
    if (!names.count(info.op_type + "Grad"))
      lib->impl(op, torch::dispatch(c10::DispatchKey::Autograd,
                                    torch::CppFunction::makeFromBoxedFunctor(std::make_unique<AutogradKernel>(info.op_type))));
    done.push_back(info.op_type);
  }
  libraries.push_back(std::move(lib));
  return done;
}

// Loading the library registers the ops of the process-wide session (weft::Session::Default(),
// the same one Python's weft.default_session() returns), so torch.ops.load_library(path) alone
// is enough for callers that never import weft.
const bool registered_at_load = [] {
  auto session = weft::Session::Default();
  if (!session.ok()) {
    std::fprintf(stderr, "libweft_torch.so: no ops registered: %s\n", session.status().message().c_str());
    return false;
  }
  RegisterSession(session.value());
  return true;
}();

}  // namespace

// For other bindings of the same engine (weft.torch.register(session)): registers the ops of the
// session behind `session` (a std::shared_ptr<weft::Session>*, which the caller keeps owning).
// Returns the names registered now, one per line, or "error: <message>"; the text stays valid
// until the calling thread's next call.
extern "C" __attribute__((visibility("default"))) const char* weft_torch_register(const void* session) {
  thread_local std::string result;
  try {
    const auto* sp = static_cast<const std::shared_ptr<weft::Session>*>(session);
    if (sp == nullptr || !*sp) return (result = "error: no session").c_str();
    result.clear();
    for (const std::string& op : RegisterSession(*sp)) result += op + "\n";
  } catch (const std::exception& e) {
    result = std::string("error: ") + e.what();
  }
  return result.c_str();
}
