// The `weft._weft` extension: sessions, graphs, compiled models and model files for Python.
// NumPy arrays (and anything with the buffer protocol) are passed to runs without copies;
// outputs of static-shape models are written straight into fresh NumPy arrays.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cxxabi.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "weft/litert.h"
#include "weft/onnx.h"
#include "weft/aot.h"
#include "weft/custom_op.h"
#include "weft/registry_context.h"
#include "weft/weft.h"

namespace py = pybind11;
using namespace weft;  // NOLINT

namespace {

// Releases the GIL for the scope (engine work runs without it), and keeps daemon threads out of
// the process's exit. CPython ends a daemon thread that takes the GIL back during finalization
// with pthread_exit, whose unwinding would run the destructors of the call's Python objects
// without the GIL (or abort the process from a noexcept destructor, as pybind11's
// gil_scoped_release does); and a thread still inside the engine when exit() runs the libraries'
// static destructors crashes in them. So: at exit (an atexit callback, `Shutdown`) the main thread
// waits for the calls in flight to end; from then on other threads park where they would enter or
// leave the engine, holding no GIL and touching no Python object, until the process ends. The
// main thread (which runs finalization, destructors included) goes on as always.
unsigned long main_thread_ident = 0;  // threading.main_thread().ident, set when the module loads
std::atomic<bool> shutting_down{false};
std::atomic<int64_t> calls_in_flight{0};

class NoGil {
 public:
  NoGil() : state_(PyEval_SaveThread()) {
    if (Closed()) Park();
    calls_in_flight.fetch_add(1);
  }
  NoGil(const NoGil&) = delete;
  NoGil& operator=(const NoGil&) = delete;
  ~NoGil() {
    calls_in_flight.fetch_sub(1);
    if (Closed()) Park();
    try {
      PyEval_RestoreThread(state_);
    } catch (abi::__forced_unwind&) {  // it began finalizing while this thread waited for the GIL
      Park();  // within the handler: the unwind is neither rethrown nor ended
    }
  }

  // After fork, in the child: its only thread is its main thread, and no call is in flight.
  static void AfterFork() {
    main_thread_ident = PyThread_get_thread_ident();
    calls_in_flight.store(0);
    shutting_down.store(false);
  }
  // The atexit callback: closes the engine to threads other than the main one and waits (without
  // the GIL, so a call that needs it can end) up to 10 s for the calls in flight.
  static void Shutdown() {
    shutting_down.store(true);
    PyThreadState* s = PyEval_SaveThread();
    for (int i = 0; i < 10000 && calls_in_flight.load() > 0; ++i) usleep(1000);
    PyEval_RestoreThread(s);
  }

 private:
  static bool Closed() {
    if (PyThread_get_thread_ident() == main_thread_ident) return false;
    return shutting_down.load() || Finalizing();
  }
  [[noreturn]] static void Park() {
    for (;;) pause();
  }
  static bool Finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing() != 0;
#else
    return _Py_IsFinalizing() != 0;
#endif
  }
  PyThreadState* state_;
};

// Defined with the registry bindings below: an interrupt raised inside a registry part.
void RaisePendingInterrupt();

[[noreturn]] void Raise(const Status& s) {
  RaisePendingInterrupt();
  switch (s.code()) {
    case Status::Code::kNotFound: {
      // weft.NotFoundError (python/weft/__init__.py): a KeyError whose str() is the message as
      // written; KeyError's own str() quotes it, escaping every quote inside.
      py::object type;
      try {
        type = py::module_::import("weft").attr("NotFoundError");
      } catch (const py::error_already_set&) {
      }
      if (type) {
        PyErr_SetString(type.ptr(), s.message().c_str());
        throw py::error_already_set();
      }
      throw py::key_error(s.message());
    }
    case Status::Code::kInvalidArgument: throw py::value_error(s.message());
    default: throw std::runtime_error(s.message());
  }
}
template <typename T>
T Get(Expected<T> e) {
  if (!e.ok()) Raise(e.status());
  return std::move(e).value();
}

// NumPy dtype <-> Weft DataType.
DataType FromNumpy(const py::dtype& d) {
  if (!d.attr("isnative").cast<bool>())
    throw py::value_error("arrays must be in the machine's byte order, got dtype " + py::str(d).cast<std::string>() +
                          " (convert with a.astype(a.dtype.newbyteorder('=')))");
  char k = d.kind();
  size_t n = d.itemsize();
  if (k == 'f' && n == 4) return DT_FLOAT;
  if (k == 'f' && n == 2) return DT_FLOAT16;
  if (k == 'f' && n == 8) return DT_DOUBLE;
  if (k == 'i' && n == 1) return DT_INT8;
  if (k == 'i' && n == 2) return DT_INT16;
  if (k == 'i' && n == 4) return DT_INT32;
  if (k == 'i' && n == 8) return DT_INT64;
  if (k == 'u' && n == 1) return DT_UINT8;
  if (k == 'u' && n == 2) return DT_UINT16;
  if (k == 'u' && n == 4) return DT_UINT32;
  if (k == 'u' && n == 8) return DT_UINT64;
  if (k == 'b') return DT_BOOL;
  if (k == 'V' && n == 2 && std::string(py::str(d.attr("name"))) == "bfloat16") return DT_BF16;  // ml_dtypes.bfloat16
  throw py::type_error("unsupported NumPy dtype " + py::str(py::handle(d)).cast<std::string>());
}

// ml_dtypes' bfloat16 (the NumPy extension type JAX, ONNX and PyTorch's NumPy bridge share), or
// uint16 holding the raw bits where ml_dtypes is not installed. Looked up once, under the GIL
// only: a C++ static initializer would hold its own lock while the import lets the GIL go, and a
// second thread that then takes the GIL and waits for that lock would never let the import end.
// Two threads may both look it up; one result is kept.
py::dtype Bfloat16Dtype() {
  static py::object* cached = nullptr;  // never freed: it must outlive the interpreter's shutdown
  if (!cached) {
    py::object found;
    try {
      found = py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
    } catch (py::error_already_set&) {
      found = py::dtype("uint16");
    }
    if (!cached) cached = new py::object(std::move(found));
  }
  return cached->cast<py::dtype>();
}

py::dtype ToNumpy(DataType dt) {
  switch (dt) {
    case DT_FLOAT: return py::dtype("float32");
    case DT_FLOAT16: return py::dtype("float16");
    case DT_DOUBLE: return py::dtype("float64");
    case DT_INT8: return py::dtype("int8");
    case DT_INT16: return py::dtype("int16");
    case DT_INT32: return py::dtype("int32");
    case DT_INT64: return py::dtype("int64");
    case DT_UINT8: return py::dtype("uint8");
    case DT_UINT16: return py::dtype("uint16");
    case DT_BF16: return Bfloat16Dtype();
    case DT_UINT32: return py::dtype("uint32");
    case DT_UINT64: return py::dtype("uint64");
    case DT_BOOL: return py::dtype("bool");
    default: throw py::type_error(std::string("no NumPy dtype for ") + DataTypeName(dt));
  }
}

DataType ParseDtype(const py::object& o) {
  if (py::isinstance<py::str>(o)) {
    std::string s = o.cast<std::string>();
    if (s == "bfloat16") return DT_BF16;
    return FromNumpy(py::dtype(s));
  }
  if (py::isinstance<py::int_>(o)) return static_cast<DataType>(o.cast<int>());
  return FromNumpy(py::dtype::from_args(o));
}

Shape ToShape(const std::vector<int64_t>& v) {
  Shape s;
  if (v.size() > WEFT_MAX_DIMS) throw py::value_error("at most 8 dims");
  for (int64_t d : v) s.AppendDim(d);
  return s;
}
std::vector<int64_t> FromShape(const Shape& s) { return std::vector<int64_t>(s.dims, s.dims + s.ndim); }

py::tuple Info(const ValueInfo& v) {
  return py::make_tuple(v.name, std::string(DataTypeName(v.dtype)), FromShape(v.shape));
}

// A C-contiguous array view of any buffer (NumPy array, memoryview, ...), without a copy.
TensorRef RefOf(const py::array& a, const char* what) {
  if (!(a.flags() & py::array::c_style)) throw py::value_error(std::string(what) + " must be C-contiguous");
  TensorRef r;
  r.dtype = FromNumpy(a.dtype());
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  r.shape = ToShape(dims);
  r.data = const_cast<void*>(a.data());
  r.bytes = static_cast<size_t>(a.nbytes());
  return r;
}

AttrValue ToAttr(const py::handle& v, const std::string& name) {
  if (py::isinstance<py::bool_>(v)) return AttrValue::Bool(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return AttrValue::Int(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return AttrValue::Float(v.cast<float>());
  if (py::isinstance<py::str>(v)) return AttrValue::String(v.cast<std::string>());
  if (py::isinstance<py::array>(v)) {
    py::array a = py::array::ensure(v, py::array::c_style);
    if (!a) throw py::value_error("attribute '" + name + "': cannot make a C-contiguous copy of the array (out of memory?)");
    DataType dt = FromNumpy(a.dtype());
    std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
    const auto* p = static_cast<const uint8_t*>(a.data());
    return AttrValue::TensorValue(dt, ToShape(dims), std::vector<uint8_t>(p, p + a.nbytes()));
  }
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(v);
    bool all_int = true, all_num = true, all_str = true, all_bool = true;
    for (auto e : seq) {
      bool b = py::isinstance<py::bool_>(e);
      all_bool &= b;
      all_int &= py::isinstance<py::int_>(e) && !b;
      all_num &= (py::isinstance<py::int_>(e) || py::isinstance<py::float_>(e)) && !b;
      all_str &= py::isinstance<py::str>(e);
    }
    if (py::len(seq) == 0 || all_int) return AttrValue::ListInt(seq.cast<std::vector<int64_t>>());
    if (all_bool) return AttrValue::ListBool(seq.cast<std::vector<bool>>());
    if (all_num) return AttrValue::ListFloat(seq.cast<std::vector<float>>());
    if (all_str) return AttrValue::ListString(seq.cast<std::vector<std::string>>());
  }
  throw py::type_error("attribute '" + name + "': unsupported value " + std::string(py::repr(v)));
}

py::object FromAttr(const AttrValue& a) {
  switch (a.type()) {
    case WEFT_ATTR_INT: return py::int_(a.i());
    case WEFT_ATTR_FLOAT: return py::float_(a.f());
    case WEFT_ATTR_BOOL: return py::bool_(a.i() != 0);
    case WEFT_ATTR_STRING: return py::str(a.s());
    case WEFT_ATTR_TYPE: return py::str(DataTypeName(static_cast<DataType>(a.i())));
    case WEFT_ATTR_LIST_INT: return py::cast(a.ints());
    case WEFT_ATTR_LIST_FLOAT: return py::cast(a.floats());
    case WEFT_ATTR_LIST_STRING: return py::cast(a.strings());
    case WEFT_ATTR_LIST_BOOL: {
      py::list l;
      for (auto b : a.bools()) l.append(py::bool_(b != 0));
      return l;
    }
    default: return py::none();
  }
}

// Sequence and optional values (weft/sequence.h) to and from Python: a sequence is a list of
// arrays, an optional is None or its value.
HostTensor TensorOf(const py::handle& o, const char* what, DataType want = DT_UNDEFINED) {
  py::array a = py::array::ensure(o, py::array::c_style);
  if (!a) throw py::type_error(std::string(what) + ": expected an array");
  TensorRef r = RefOf(a, what);
  if (want == DT_BF16 && r.dtype == DT_UINT16) r.dtype = DT_BF16;  // raw bits
  return Get(HostTensor::FromBytes(r.dtype, r.shape, r.data, r.bytes));
}
HostTensor EncodeValue(DataType type, const py::handle& o, const std::string& what) {
  if (IsTensorType(type)) {
    if (o.is_none()) throw py::type_error(what + " holds a " + DataTypeName(type) + " tensor, not None");
    HostTensor t = TensorOf(o, what.c_str(), type);
    if (t.dtype() != type) throw py::type_error(what + " holds " + DataTypeName(type) + ", given " + DataTypeName(t.dtype()));
    return t;
  }
  if (IsSequenceType(type)) {
    if (!py::isinstance<py::list>(o) && !py::isinstance<py::tuple>(o))
      throw py::type_error(what + " is a " + DataTypeName(type) + ": pass a list of arrays");
    std::vector<HostTensor> items;
    for (auto item : py::reinterpret_borrow<py::sequence>(o)) {
      HostTensor t = TensorOf(item, what.c_str(), ElementTypeOf(type));
      if (t.dtype() != ElementTypeOf(type))
        throw py::type_error(what + " is a " + DataTypeName(type) + "; an item is " + DataTypeName(t.dtype()));
      items.push_back(std::move(t));
    }
    return Get(MakeSequence(ElementTypeOf(type), items));
  }
  if (o.is_none()) return Get(MakeOptional(ElementTypeOf(type), nullptr));
  HostTensor inner = EncodeValue(ElementTypeOf(type), o, what);
  return Get(MakeOptional(ElementTypeOf(type), &inner));
}
py::object DecodeValue(DataType type, const void* data, size_t bytes, const Shape& shape) {
  if (!IsSequenceType(type) && !IsOptionalType(type)) {
    py::array a(ToNumpy(type), FromShape(shape));
    if (bytes) std::memcpy(a.mutable_data(), data, bytes);
    return std::move(a);
  }
  HostTensor h = Get(HostTensor::FromBytes(type, shape, data, bytes));
  std::vector<HostTensor> items = Get(ValueItems(h));
  if (IsOptionalType(type)) {
    if (items.empty()) return py::none();
    return DecodeValue(items[0].dtype(), items[0].data(), items[0].bytes(), items[0].shape());
  }
  py::list l;
  for (auto& t : items) l.append(DecodeValue(t.dtype(), t.data(), t.bytes(), t.shape()));
  return std::move(l);
}

// uint16 arrays given for bfloat16 tensors hold their raw bits (as they come without ml_dtypes).
void RawBitsAsBfloat16(const std::vector<ValueInfo>& declared, std::vector<TensorRef>* refs) {
  for (size_t k = 0; k < refs->size() && k < declared.size(); ++k)
    if (declared[k].dtype == DT_BF16 && (*refs)[k].dtype == DT_UINT16) (*refs)[k].dtype = DT_BF16;
}

// A compiled model with a run context for the calling thread (others get their own).
class PyModel {
 public:
  const std::shared_ptr<CompiledModel>& compiled() const { return m_; }
  explicit PyModel(std::shared_ptr<CompiledModel> m) : m_(std::move(m)), ctx_(m_->CreateRunContext()) {}

  py::list Run(const std::vector<py::object>& given) {
    std::vector<TensorRef> in;
    std::vector<py::array> inputs;
    std::vector<HostTensor> encoded;  // sequence and optional inputs, encoded
    encoded.reserve(given.size());
    const auto& declared = m_->inputs();
    for (size_t k = 0; k < given.size(); ++k) {
      DataType type = k < declared.size() ? declared[k].dtype : DT_UNDEFINED;
      if (IsSequenceType(type) || IsOptionalType(type)) {
        encoded.push_back(EncodeValue(type, given[k], "input '" + declared[k].name + "'"));
        in.push_back(TensorRef::Of(encoded.back()));
        continue;
      }
      if (given[k].is_none())
        throw py::type_error("input " + std::to_string(k) + (k < declared.size() ? " ('" + declared[k].name + "', " + DataTypeName(type) + ")" : std::string()) +
                             " is None; only an optional input may be");
      py::array a = py::isinstance<py::array>(given[k]) ? given[k].cast<py::array>() : py::array::ensure(given[k]);
      if (!a) throw py::type_error("input " + std::to_string(k) + ": expected an array");
      inputs.push_back(a);
      in.push_back(RefOf(a, "input"));
    }
    RawBitsAsBfloat16(declared, &in);
    py::list result;
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    std::unique_ptr<RunContext> own;
    RunContext* ctx = ctx_.get();
    if (!lock.owns_lock()) ctx = (own = m_->CreateRunContext()).get();
    if (!m_->has_dynamic_shapes()) {
      std::vector<py::array> outs;
      std::vector<TensorRef> refs;
      for (auto& o : m_->outputs()) {
        bool value = IsSequenceType(o.dtype) || IsOptionalType(o.dtype);
        outs.emplace_back(value ? py::dtype("uint8") : ToNumpy(o.dtype), FromShape(o.shape));
        refs.push_back(RefOf(outs.back(), "output"));
        refs.back().dtype = o.dtype;
      }
      Status s;
      {
        NoGil nogil;
        s = m_->Run(*ctx, in.data(), in.size(), refs.data(), refs.size());
      }
      if (!s.ok()) Raise(s);
      for (size_t k = 0; k < outs.size(); ++k) {
        DataType t = m_->outputs()[k].dtype;
        if (IsSequenceType(t) || IsOptionalType(t)) result.append(DecodeValue(t, outs[k].data(), outs[k].nbytes(), refs[k].shape));
        else result.append(outs[k]);
      }
      return result;
    }
    Expected<std::vector<TensorRef>> views = Status();
    {
      NoGil nogil;
      views = m_->RunViews(*ctx, in.data(), in.size());
    }
    for (auto& v : Get(std::move(views))) result.append(DecodeValue(v.dtype, v.data, v.bytes, v.shape));
    return result;
  }

  // Runs into caller-provided outputs (zero copy both ways).
  void RunInto(const std::vector<py::array>& inputs, const std::vector<py::array>& outputs) {
    std::vector<TensorRef> in, out;
    for (auto& a : inputs) in.push_back(RefOf(a, "input"));
    for (auto& a : outputs) {
      if (!a.writeable()) throw py::value_error("output arrays must be writeable");
      out.push_back(RefOf(a, "output"));
    }
    RawBitsAsBfloat16(m_->inputs(), &in);
    RawBitsAsBfloat16(m_->outputs(), &out);
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    std::unique_ptr<RunContext> own;
    RunContext* ctx = ctx_.get();
    if (!lock.owns_lock()) ctx = (own = m_->CreateRunContext()).get();
    Status s;
    {
      NoGil nogil;
      s = m_->Run(*ctx, in.data(), in.size(), out.data(), out.size());
    }
    if (!s.ok()) Raise(s);
  }

  void ResetState() {
    std::lock_guard<std::mutex> lock(mu_);
    ctx_->ResetState();
  }

  std::shared_ptr<CompiledModel> m_;

 private:
  std::unique_ptr<RunContext> ctx_;
  std::mutex mu_;
};

py::dict SchemaDict(const OpSchema& s) {
  auto io = [](const std::vector<OpSchema::Io>& v) {
    py::list l;
    static const char* kinds[] = {"required", "optional", "dynamic"};
    for (auto& e : v) {
      py::list dts;
      for (auto d : e.dtypes) dts.append(DataTypeName(d));
      py::dict d;
      d["name"] = e.name;
      d["kind"] = kinds[e.kind];
      d["dtypes"] = dts;
      d["same_as_input"] = e.same_as_input;
      l.append(d);
    }
    return l;
  };
  py::list attrs;
  for (auto& a : s.attrs) {
    py::dict d;
    d["name"] = a.name;
    d["type"] = AttrTypeName(a.type);
    d["required"] = a.required;
    d["default"] = a.required ? py::none() : FromAttr(a.default_value);
    attrs.append(d);
  }
  py::dict d;
  d["op_type"] = s.op_type;
  d["version"] = s.version;
  d["inputs"] = io(s.inputs);
  d["outputs"] = io(s.outputs);
  d["attrs"] = attrs;
  d["capabilities"] = CapabilityNames(s.capabilities);
  d["origin"] = s.origin;
  return d;
}


// ---- the conversion's registry context (weft/registry_context.h) --------------------------------

// A Python callable held by C++ parts; dropped under the GIL.
struct PyFn {
  py::object f;
  explicit PyFn(py::object o) : f(std::move(o)) {}
  PyFn(const PyFn&) = delete;
  ~PyFn() {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      f = py::object();
    } else {
      f.release();  // the interpreter is gone; nothing to release into
    }
  }
};

// The Python error a part raised, as a Status (type and message, without pybind11's trace).
Status PyStatus(const std::exception& e) {
  std::string m = e.what();
  size_t at = m.find("\n\nAt:");
  if (at != std::string::npos) m.resize(at);
  return InvalidArgument("raised " + m);
}

// A KeyboardInterrupt or SystemExit raised in a part: kept here and raised again, unchanged, when
// the call that ran the part returns to Python (Raise), instead of becoming an error message.
thread_local std::unique_ptr<py::error_already_set> g_pending_interrupt;

template <typename F>
Status CallPy(F&& f) {
  py::gil_scoped_acquire gil;
  try {
    return f();
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) {
      if (!g_pending_interrupt) g_pending_interrupt = std::make_unique<py::error_already_set>(std::move(e));
      return Internal("interrupted");
    }
    return PyStatus(e);
  } catch (const std::exception& e) {
    return PyStatus(e);
  }
}

py::dict NodeDict(const Node& n, py::dict* originals) {
  py::dict d, attrs;
  d["name"] = n.name;
  d["op_type"] = n.op_type;
  d["inputs"] = n.inputs;
  d["outputs"] = n.outputs;
  d["domain"] = n.domain;
  for (auto& [k, v] : n.attrs) {
    py::object o = v.type() == WEFT_ATTR_TENSOR || v.type() == WEFT_ATTR_TYPE ? py::object(py::none()) : FromAttr(v);
    if (o.is_none()) o = py::capsule(&v, "weft.attr");  // kept as it is unless replaced
    attrs[py::str(k)] = o;
    if (originals) (*originals)[py::str(k)] = o;
  }
  d["attrs"] = attrs;
  return d;
}

// `d` back into `n`: an attribute whose object is the one NodeDict gave keeps its exact value.
// d[key] as T; a value of the wrong type is a TypeError naming the node, the field and what it got
// (pybind11's own cast error names neither).
template <class T>
T NodeField(const py::dict& d, const char* key, const char* want, const std::string& node) {
  py::object v = d[key];
  try {
    if constexpr (std::is_same_v<T, std::vector<std::string>>)
      if (py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v)) throw py::cast_error("");  // not a list of one-letter names
    if constexpr (std::is_same_v<T, py::dict>)
      if (!py::isinstance<py::dict>(v)) throw py::cast_error("");  // py::dict would convert a list of pairs
    return v.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error("node " + (node.empty() ? std::string("(unnamed)") : "'" + node + "'") + ": field '" + key +
                         "' must be " + want + ", got " + std::string(py::str(py::type::of(v).attr("__name__"))) + " " +
                         std::string(py::repr(v)).substr(0, 80));
  }
}

void NodeFromDict(const py::dict& d, const py::dict& originals, Node* n) {
  const std::string node = d.contains("name") && py::isinstance<py::str>(d["name"]) ? d["name"].cast<std::string>() : n->name;
  if (d.contains("name")) n->name = NodeField<std::string>(d, "name", "a str", node);
  if (d.contains("op_type")) n->op_type = NodeField<std::string>(d, "op_type", "a str", node);
  if (d.contains("inputs")) n->inputs = NodeField<std::vector<std::string>>(d, "inputs", "a list of str", node);
  if (d.contains("outputs")) n->outputs = NodeField<std::vector<std::string>>(d, "outputs", "a list of str", node);
  if (d.contains("domain")) n->domain = NodeField<std::string>(d, "domain", "a str", node);
  if (!d.contains("attrs")) return;
  std::map<std::string, AttrValue> out;
  for (auto [k, v] : NodeField<py::dict>(d, "attrs", "a dict", node)) {
    std::string key = py::str(k);
    if (originals.contains(k) && originals[k].ptr() == v.ptr()) {
      out[key] = n->attrs.at(key);
      continue;
    }
    out[key] = ToAttr(v, key);
  }
  n->attrs = std::move(out);
}

WeftAttrType AttrTypeFromPy(const py::handle& t, const std::string& name) {
  if (t.is(py::type::of(py::int_()))) return WEFT_ATTR_INT;
  if (t.is(py::type::of(py::float_()))) return WEFT_ATTR_FLOAT;
  if (t.is(py::type::of(py::bool_()))) return WEFT_ATTR_BOOL;
  if (t.is(py::type::of(py::str()))) return WEFT_ATTR_STRING;
  static const std::map<std::string, WeftAttrType> kNames = {
      {"int", WEFT_ATTR_INT},           {"float", WEFT_ATTR_FLOAT},           {"bool", WEFT_ATTR_BOOL},
      {"string", WEFT_ATTR_STRING},     {"str", WEFT_ATTR_STRING},            {"list_int", WEFT_ATTR_LIST_INT},
      {"list_float", WEFT_ATTR_LIST_FLOAT}, {"list_string", WEFT_ATTR_LIST_STRING}, {"list_bool", WEFT_ATTR_LIST_BOOL}};
  if (py::isinstance<py::str>(t)) {
    auto it = kNames.find(t.cast<std::string>());
    if (it != kNames.end()) return it->second;
  }
  throw py::value_error("option '" + name + "': type " + std::string(py::repr(t)) +
                        " is not one of int, float, bool, str, 'list_int', 'list_float', 'list_string', 'list_bool'");
}

// {"stride": int, "mode": {"type": "string", "default": "same", "doc": "..."}, "k": {"type": int, "required": True}}
OptionSchema SchemaFromPy(const py::object& spec, bool allow_extra) {
  OptionSchema s;
  s.allow_extra = allow_extra;
  if (spec.is_none()) return s;
  for (auto [k, v] : spec.cast<py::dict>()) {
    OptionField f;
    f.name = py::str(k);
    if (py::isinstance<py::dict>(v)) {
      py::dict d = v.cast<py::dict>();
      for (auto [dk, dv] : d) {
        std::string key = py::str(dk);
        if (key != "type" && key != "default" && key != "required" && key != "doc")
          throw py::value_error("option '" + f.name + "': unknown key '" + key + "' (type, default, required, doc)");
      }
      if (!d.contains("type")) throw py::value_error("option '" + f.name + "': no 'type'");
      f.type = AttrTypeFromPy(d["type"], f.name);
      f.required = d.contains("required") && d["required"].cast<bool>();
      if (d.contains("doc")) f.doc = d["doc"].cast<std::string>();
      if (d.contains("default") && !d["default"].is_none()) {
        std::map<std::string, AttrValue> one = {{f.name, ToAttr(d["default"], f.name)}};
        OptionSchema single;
        single.fields.push_back(f);
        Status st = CheckOptions(single, "option '" + f.name + "' default", &one);
        if (!st.ok()) Raise(st);
        f.default_value = one.at(f.name);
      }
    } else {
      f.type = AttrTypeFromPy(v, f.name);
    }
    s.fields.push_back(std::move(f));
  }
  return s;
}

py::dict SchemaToPy(const OptionSchema& s) {
  py::dict d;
  for (const OptionField& f : s.fields) {
    py::dict e;
    e["type"] = AttrTypeName(f.type);
    e["required"] = f.required;
    e["default"] = f.default_value.empty() ? py::object(py::none()) : FromAttr(f.default_value);
    e["doc"] = f.doc;
    d[py::str(f.name)] = e;
  }
  return d;
}

void RaisePendingInterrupt() {
  if (!g_pending_interrupt) return;
  std::unique_ptr<py::error_already_set> e = std::move(g_pending_interrupt);
  e->restore();
  throw py::error_already_set();
}

// What a Python emitter is given: the node being emitted; usable only during the call.
struct PyEmitCall {
  AotEmitCall* call = nullptr;
  AotEmitCall& get() const {
    if (!call) throw py::value_error("this EmitCall is over: use it only inside the emitter it was passed to");
    return *call;
  }
  EmitContext& ctx() const { return get().ctx(); }
};

py::tuple TensorInfo(const Tensor* t) {
  if (!t) return py::make_tuple(py::none(), py::none());
  return py::make_tuple(std::string(DataTypeName(t->GetDataType())), FromShape(t->GetShape()));
}

template <typename T>
py::class_<PartRegistry<T>> BindPart(py::module_& m, const char* name, const char* doc) {
  return py::class_<PartRegistry<T>>(m, name, doc)
      .def("keys", &PartRegistry<T>::Keys, "The keys, in registration order (built-ins first).")
      .def("__contains__", &PartRegistry<T>::Has)
      .def("__len__", [](const PartRegistry<T>& r) { return r.Keys().size(); })
      .def("__iter__", [](const PartRegistry<T>& r) { return py::iter(py::cast(r.Keys())); })
      .def("is_builtin", &PartRegistry<T>::IsBuiltin, py::arg("key"))
      .def("remove", [](PartRegistry<T>& r, const std::string& key) {
        Status st = r.Remove(key);
        if (!st.ok()) Raise(st);
      }, py::arg("key"), "Removes a part (a built-in needs the context's allow_override).")
      .def_property_readonly("name", &PartRegistry<T>::name);
}

template <typename T>
void RegisterOrRaise(PartRegistry<T>& r, const std::string& key, T part, bool overwrite) {
  Status st = r.Register(key, std::move(part), overwrite);
  if (!st.ok()) Raise(st);
}

void BindRegistry(py::module_& m) {
  py::class_<PyEmitCall, std::shared_ptr<PyEmitCall>>(m, "EmitCall",
      "One node being emitted by a registered emitter (weft aot). Valid only during the emitter's call.")
      .def_property_readonly("op_type", [](const PyEmitCall& c) { return c.get().op_type(); })
      .def_property_readonly("node_name", [](const PyEmitCall& c) { return c.get().node_name(); })
      .def_property_readonly("attrs", [](const PyEmitCall& c) {
        py::dict d;
        for (auto& [k, v] : c.get().attrs()) d[py::str(k)] = FromAttr(v);
        return d;
      }, "The node's attributes, defaults filled in.")
      .def_property_readonly("inputs", [](const PyEmitCall& c) {
        py::list l;
        for (size_t i = 0; i < c.ctx().GetComputeNodeInputNum(); ++i) l.append(TensorInfo(c.ctx().GetInputTensor(i)));
        return l;
      }, "(dtype, shape) of each present input.")
      .def_property_readonly("outputs", [](const PyEmitCall& c) {
        py::list l;
        for (size_t i = 0; i < c.ctx().GetComputeNodeOutputNum(); ++i) l.append(TensorInfo(c.ctx().GetOutputTensor(i)));
        return l;
      }, "(dtype, shape) of each output.")
      .def("input_value", [](const PyEmitCall& c, size_t i) -> py::object {
        const Tensor* t = c.ctx().GetInputTensor(i);
        if (!t) throw py::index_error("the node has no input " + std::to_string(i));
        if (!t->GetAddr()) return py::none();
        std::vector<int64_t> dims = FromShape(t->GetShape());
        py::array a(ToNumpy(t->GetDataType()), dims);
        std::memcpy(a.mutable_data(), t->GetAddr(), static_cast<size_t>(a.nbytes()));
        return std::move(a);
      }, py::arg("i"), "A constant input's value (a copy), or None when it is computed at run time.")
      .def("input", [](const PyEmitCall& c, size_t i, const std::string& ctype) { return c.ctx().Input(i, ctype.c_str()); },
           py::arg("i"), py::arg("ctype") = "float", "C expression for input i: ((const T*)...).")
      .def("output", [](const PyEmitCall& c, size_t i, const std::string& ctype) { return c.ctx().Output(i, ctype.c_str()); },
           py::arg("i"), py::arg("ctype") = "float", "C expression for output i: ((T*)...).")
      .def_property_readonly("prefix", [](const PyEmitCall& c) { return c.ctx().Prefix(); })
      .def_property_readonly("node_id", [](const PyEmitCall& c) { return c.ctx().NodeId(); }, "A C identifier unique to the node.")
      .def("state", [](const PyEmitCall& c) { return c.ctx().State(); }, "C expression: pointer to the node's state struct.")
      .def("include", [](const PyEmitCall& c, const std::string& h) { c.ctx().Include(h); }, py::arg("header"))
      .def("helper", [](const PyEmitCall& c, const std::string& k, const std::string& code) { c.ctx().Helper(k, code); },
           py::arg("key"), py::arg("code"), "File-scope C, once per module under `key`.")
      .def("declare_state", [](const PyEmitCall& c, const std::string& members) { c.ctx().DeclareState(members); }, py::arg("members"))
      .def("init", [](const PyEmitCall& c, const std::string& code) { c.ctx().Init(code); }, py::arg("code"))
      .def("run", [](const PyEmitCall& c, const std::string& code) { c.ctx().Run(code); }, py::arg("code"))
      .def("const", [](const PyEmitCall& c, const std::string& hint, const py::array& value) {
        py::array a = py::array::ensure(value, py::array::c_style);
        if (!a) throw py::value_error("const '" + hint + "': not an array");
        return c.ctx().Const(hint, FromNumpy(a.dtype()), a.data(), static_cast<size_t>(a.size()));
      }, py::arg("hint"), py::arg("value"), "A read-only C array of the values; returns its name.")
      .def("scratch", [](const PyEmitCall& c, size_t bytes) { return c.ctx().Scratch(bytes); }, py::arg("bytes"),
           "Arena scratch for the run function: a uint8_t* expression.")
      .def_static("custom_status", &EmitContext::CustomStatus, py::arg("n"), "1000 + n: the op's own failure code n (0-999).")
      .def_property_readonly("has_own", [](const PyEmitCall& c) { return c.get().HasOwn(); })
      .def("emit_own", [](const PyEmitCall& c) {
        Status st = c.get().EmitOwn();
        if (!st.ok()) Raise(st);
      }, "Emits the op's own C (its class's emitter), as a subclass calling its base would.");

  BindPart<ModelHook>(m, "ModelHookRegistry", "Rewrites of a model file's bytes before parsing, by name.")
      .def("register", [](PartRegistry<ModelHook>& r, const std::string& name, py::object fn, bool overwrite) {
        auto h = std::make_shared<PyFn>(std::move(fn));
        RegisterOrRaise<ModelHook>(r, name, [h](std::string* bytes) {
          return CallPy([&]() -> Status {
            py::object out = h->f(py::bytes(*bytes));
            if (py::isinstance<py::bytes>(out)) *bytes = out.cast<std::string>();
            else if (py::isinstance<py::bytearray>(out)) *bytes = std::string(PyByteArray_AsString(out.ptr()), static_cast<size_t>(PyByteArray_Size(out.ptr())));
            else return InvalidArgument("returned " + std::string(py::str(py::type::of(out).attr("__name__"))) + "; a model hook returns the model's bytes");
            return Status::Ok();
          });
        }, overwrite);
      }, py::arg("name"), py::arg("hook"), py::arg("overwrite") = false, "hook(data: bytes) -> bytes");

  BindPart<LiteRtParser>(m, "LiteRtParserRegistry", "What a LiteRT operator becomes, by operator key (\"CONV_2D\", \"MY_OP\").")
      .def("register", [](PartRegistry<LiteRtParser>& r, const std::string& key, py::object fn, bool overwrite) {
        auto h = std::make_shared<PyFn>(std::move(fn));
        RegisterOrRaise<LiteRtParser>(r, key, [h](const LiteRtOperator& op, Node* node) {
          return CallPy([&]() -> Status {
            py::dict o;
            o["subgraph"] = op.subgraph;
            o["index"] = op.index;
            o["builtin_code"] = op.builtin_code;
            o["key"] = op.key;
            o["custom_code"] = op.custom_code;
            o["version"] = op.version;
            o["custom_options"] = py::bytes(op.custom_options);
            o["custom_options_format"] = op.custom_options_format;
            py::list it, is, ot, os;
            for (size_t k = 0; k < op.input_types.size(); ++k) it.append(DataTypeName(op.input_types[k])), is.append(FromShape(op.input_shapes[k]));
            for (size_t k = 0; k < op.output_types.size(); ++k) ot.append(DataTypeName(op.output_types[k])), os.append(FromShape(op.output_shapes[k]));
            o["input_types"] = it;
            o["input_shapes"] = is;
            o["output_types"] = ot;
            o["output_shapes"] = os;
            py::dict originals;
            py::dict nd = NodeDict(*node, &originals);
            py::object ret = h->f(o, nd);
            if (!ret.is_none() && !py::isinstance<py::dict>(ret)) return InvalidArgument("returned neither None nor a node dict");
            NodeFromDict(ret.is_none() ? nd : ret.cast<py::dict>(), originals, node);
            return Status::Ok();
          });
        }, overwrite);
      }, py::arg("key"), py::arg("parser"), py::arg("overwrite") = false,
         "parser(op: dict, node: dict) -> None (node edited in place) or a node dict. `op` has subgraph, index, builtin_code, key,\n"
         "custom_code, version, custom_options (bytes), custom_options_format, input/output_types and _shapes; `node` has name,\n"
         "op_type, inputs, outputs, domain and attrs.");

  BindPart<OptionSchema>(m, "OptionsRegistry", "Typed options of a parsed operator, by operator key.")
      .def("register", [](PartRegistry<OptionSchema>& r, const std::string& key, const py::object& schema, bool allow_extra, bool overwrite) {
        RegisterOrRaise<OptionSchema>(r, key, SchemaFromPy(schema, allow_extra), overwrite);
      }, py::arg("key"), py::arg("schema"), py::arg("allow_extra") = false, py::arg("overwrite") = false,
         "schema: {name: type} or {name: {\"type\": ..., \"default\": ..., \"required\": bool, \"doc\": str}}; types int, float,\n"
         "bool, str or 'list_int', 'list_float', 'list_string', 'list_bool'.")
      .def("get", [](const PartRegistry<OptionSchema>& r, const std::string& key) -> py::object {
        const OptionSchema* s = r.Get(key);
        return s ? py::object(SchemaToPy(*s)) : py::object(py::none());
      }, py::arg("key"));

  BindPart<AotEmitter>(m, "EmitterRegistry", "The C an op type emits in weft aot, by op type.")
      .def("register", [](PartRegistry<AotEmitter>& r, const std::string& op_type, py::object fn, bool overwrite) {
        auto h = std::make_shared<PyFn>(std::move(fn));
        RegisterOrRaise<AotEmitter>(r, op_type, [h](AotEmitCall& call) {
          return CallPy([&]() -> Status {
            auto pc = std::make_shared<PyEmitCall>();
            pc->call = &call;
            struct Over {
              std::shared_ptr<PyEmitCall> pc;
              ~Over() { pc->call = nullptr; }
            } over{pc};
            h->f(pc);
            return Status::Ok();
          });
        }, overwrite);
      }, py::arg("op_type"), py::arg("emitter"), py::arg("overwrite") = false, "emitter(call: weft.EmitCall) -> None");

  BindPart<GraphTransform>(m, "TransformRegistry", "Graph rewrites, by name.")
      .def("register", [](PartRegistry<GraphTransform>& r, const std::string& name, py::object fn, const py::object& options, bool allow_extra,
                          const std::string& doc, bool overwrite) {
        auto h = std::make_shared<PyFn>(std::move(fn));
        GraphTransform t;
        t.options = SchemaFromPy(options, allow_extra);
        t.doc = doc;
        t.run = [h](Graph* g, const std::map<std::string, AttrValue>& opts) {
          return CallPy([&]() -> Status {
            py::dict o;
            for (auto& [k, v] : opts) o[py::str(k)] = FromAttr(v);
            py::object pg = py::cast(*g);
            py::object ret = h->f(pg, o);
            if (!ret.is_none() && !py::isinstance<Graph>(ret)) return InvalidArgument("returned neither None nor a weft.Graph");
            *g = (ret.is_none() ? pg : ret).cast<Graph>();
            return Status::Ok();
          });
        };
        RegisterOrRaise<GraphTransform>(r, name, std::move(t), overwrite);
      }, py::arg("name"), py::arg("transform"), py::arg("options") = py::none(), py::arg("allow_extra") = false, py::arg("doc") = "",
         py::arg("overwrite") = false,
         "transform(graph: weft.Graph, options: dict) -> None (graph edited) or a new Graph. `options` is its schema, as\n"
         "options.register takes; without one it takes no options (allow_extra passes undeclared ones through).")
      .def("doc", [](const PartRegistry<GraphTransform>& r, const std::string& name) {
        const GraphTransform* t = r.Get(name);
        if (!t) Raise(NotFound("transforms: nothing is registered as '" + name + "'"));
        return t->doc;
      }, py::arg("name"))
      .def("options", [](const PartRegistry<GraphTransform>& r, const std::string& name) {
        const GraphTransform* t = r.Get(name);
        if (!t) Raise(NotFound("transforms: nothing is registered as '" + name + "'"));
        return SchemaToPy(t->options);
      }, py::arg("name"));

  py::class_<RegistryContext, std::shared_ptr<RegistryContext>>(m, "RegistryContext",
      "The parts a conversion is made of (docs/aot.md, \"Registry\"): litert_model_hooks, onnx_model_hooks, litert_parsers,\n"
      "options, emitters, transforms. RegistryContext(customizers=[f, ...], allow_override=False) starts from the built-ins\n"
      "and calls each f(context); replacing or removing a built-in needs allow_override=True.")
      .def(py::init([](const std::vector<py::object>& customizers, bool allow_override) {
        auto ctx = Get(BuildDefaultRegistryContext({}, allow_override));
        for (size_t k = 0; k < customizers.size(); ++k) {
          try {
            customizers[k](ctx);
          } catch (py::error_already_set& e) {
            if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) throw;
            std::string name = py::hasattr(customizers[k], "__name__") ? py::str(customizers[k].attr("__name__")).cast<std::string>() : "?";
            py::raise_from(e, PyExc_ValueError, ("registry customizer #" + std::to_string(k + 1) + " (" + name + ") failed").c_str());
            throw py::error_already_set();
          }
        }
        return ctx;
      }), py::arg("customizers") = std::vector<py::object>{}, py::arg("allow_override") = false)
      .def_property_readonly("allow_override", &RegistryContext::allow_override)
      .def_property_readonly("litert_model_hooks", [](RegistryContext& c) -> PartRegistry<ModelHook>& { return c.litert_model_hooks; },
                             py::return_value_policy::reference_internal)
      .def_property_readonly("onnx_model_hooks", [](RegistryContext& c) -> PartRegistry<ModelHook>& { return c.onnx_model_hooks; },
                             py::return_value_policy::reference_internal)
      .def_property_readonly("litert_parsers", [](RegistryContext& c) -> PartRegistry<LiteRtParser>& { return c.litert_parsers; },
                             py::return_value_policy::reference_internal)
      .def_property_readonly("options", [](RegistryContext& c) -> PartRegistry<OptionSchema>& { return c.options; },
                             py::return_value_policy::reference_internal)
      .def_property_readonly("emitters", [](RegistryContext& c) -> PartRegistry<AotEmitter>& { return c.emitters; },
                             py::return_value_policy::reference_internal)
      .def_property_readonly("transforms", [](RegistryContext& c) -> PartRegistry<GraphTransform>& { return c.transforms; },
                             py::return_value_policy::reference_internal)
      .def("apply_transform", [](const RegistryContext& c, const std::string& name, const Graph& g, const py::dict& options) {
        std::map<std::string, AttrValue> o;
        for (auto [k, v] : options) o[py::str(k)] = ToAttr(v, py::str(k));
        Graph out = g;
        Status st = c.ApplyTransform(name, o, &out);
        if (!st.ok()) Raise(st);
        return out;
      }, py::arg("name"), py::arg("graph"), py::arg("options") = py::dict(), "Runs a transform on a copy of `graph`; returns the copy.");
}

}  // namespace

PYBIND11_MODULE(_weft, m) {
  main_thread_ident = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  py::module_::import("atexit").attr("register")(py::cpp_function([] { NoGil::Shutdown(); }));
  py::module_::import("os").attr("register_at_fork")(py::arg("after_in_child") = py::cpp_function([] { NoGil::AfterFork(); }));

  m.doc() = "Weft: a graph engine in which every operator is a plugin (native core).";
  BindRegistry(m);

  py::class_<Graph>(m, "Graph")
      .def(py::init<std::string>(), py::arg("name") = "graph")
      .def_property_readonly("name", &Graph::name)
      .def("add_input", [](Graph& g, const std::string& name, const py::object& dtype, const std::vector<int64_t>& shape) -> Graph& {
        return g.AddInput(name, ParseDtype(dtype), ToShape(shape));
      }, py::arg("name"), py::arg("dtype"), py::arg("shape"), py::return_value_policy::reference_internal,
         "Declares a graph input; -1 marks a dim known only at run time.")
      .def("add_constant", [](Graph& g, const std::string& name, const py::array& value) -> Graph& {
        py::array a = py::array::ensure(value, py::array::c_style);
        if (!a) throw py::value_error("constant '" + name + "': cannot make a C-contiguous copy of the array (out of memory?)");
        TensorRef r = RefOf(a, "constant");
        return g.AddConstant(name, Get(HostTensor::FromBytes(r.dtype, r.shape, r.data, r.bytes)));
      }, py::arg("name"), py::arg("value"), py::return_value_policy::reference_internal, "Adds a constant (copied).")
      .def("add_node", [](Graph& g, const std::string& op_type, const std::string& name, std::vector<std::string> inputs,
                          std::vector<std::string> outputs, const py::dict& attrs, std::vector<uint32_t> input_counts,
                          std::vector<uint32_t> output_counts, const std::string& domain) -> Graph& {
        Node n;
        n.op_type = op_type;
        n.name = name;
        n.inputs = std::move(inputs);
        n.outputs = std::move(outputs);
        for (auto [k, v] : attrs) {
          std::string key = py::str(k);
          n.attrs[key] = ToAttr(v, key);
        }
        n.input_counts = std::move(input_counts);
        n.output_counts = std::move(output_counts);
        n.domain = domain;
        return g.AddNode(std::move(n));
      }, py::arg("op_type"), py::arg("name"), py::arg("inputs"), py::arg("outputs"), py::arg("attrs") = py::dict(),
         py::arg("input_counts") = std::vector<uint32_t>{}, py::arg("output_counts") = std::vector<uint32_t>{},
         py::arg("domain") = "", py::return_value_policy::reference_internal,
         "Adds a node. An empty input name marks an absent optional input.")
      .def("add_output", &Graph::AddOutput, py::return_value_policy::reference_internal)
      .def_property_readonly("inputs", [](const Graph& g) {
        py::list l;
        for (auto& i : g.inputs()) l.append(Info(i));
        return l;
      })
      .def_property_readonly("outputs", &Graph::outputs)
      .def_property_readonly("num_nodes", [](const Graph& g) { return g.nodes().size(); })
      .def_property_readonly("nodes", [](const Graph& g) {
        py::list l;
        for (const Node& n : g.nodes()) {
          py::dict d = NodeDict(n, nullptr);
          if (!n.when.empty()) d["when"] = n.when;
          l.append(d);
        }
        return l;
      }, "The nodes as dicts (name, op_type, inputs, outputs, domain, attrs; a copy). Tensor and type attributes appear as\n"
         "opaque values that set_nodes keeps as they were.")
      .def("set_nodes", [](Graph& g, const py::list& nodes) {
        std::map<std::string, const Node*> by_name;
        for (const Node& n : g.nodes()) by_name[n.name] = &n;
        std::vector<Node> out;
        size_t index = 0;
        for (auto item : nodes) {
          if (!py::isinstance<py::dict>(item))
            throw py::type_error("set_nodes: item " + std::to_string(index) + " must be a dict (as `nodes` gives them), got " +
                                 std::string(py::str(py::type::of(item).attr("__name__"))));
          ++index;
          py::dict d = item.cast<py::dict>();
          Node n;
          if (d.contains("name")) {
            auto it = by_name.find(d["name"].cast<std::string>());
            if (it != by_name.end()) n = *it->second;  // keeps what the dict cannot say
          }
          py::dict originals;
          if (d.contains("attrs") && py::isinstance<py::dict>(d["attrs"]))
            for (auto [k, v] : d["attrs"].cast<py::dict>())
              if (py::isinstance<py::capsule>(v) && n.attrs.count(py::str(k).cast<std::string>())) originals[k] = v;
          NodeFromDict(d, originals, &n);
          if (d.contains("when"))
            n.when = NodeField<std::vector<std::pair<std::string, bool>>>(d, "when", "a list of (str, bool) pairs", n.name);
          if (n.name.empty() || n.op_type.empty()) throw py::value_error("set_nodes: every node needs a name and an op_type");
          out.push_back(std::move(n));
        }
        g.mutable_nodes() = std::move(out);
      }, py::arg("nodes"), "Replaces the nodes (dicts as `nodes` gives them; a node named as an existing one keeps what the dict\n"
         "leaves out).")
      .def_static("from_json", [](const std::string& path) { return Get(Graph::FromJsonFile(path)); })
      .def_static("from_onnx", [](const std::string& path, const std::map<std::string, std::vector<int64_t>>& shapes,
                                  std::shared_ptr<RegistryContext> registry, bool fuse_qdq) {
        OnnxImportOptions o;
        for (auto& [k, v] : shapes) o.input_shapes[k] = ToShape(v);
        o.registry = registry;
        o.fuse_qdq = fuse_qdq;
        return Get(ImportOnnx(path, o));
      }, py::arg("path"), py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{}, py::arg("registry") = nullptr,
         py::arg("fuse_qdq") = true)
      .def_static("from_litert", [](const std::string& path, const std::map<std::string, std::vector<int64_t>>& shapes,
                                    const std::map<std::string, std::string>& op_map, std::shared_ptr<RegistryContext> registry) {
        LiteRtImportOptions o;
        for (auto& [k, v] : shapes) o.input_shapes[k] = ToShape(v);
        o.op_map = op_map;
        o.registry = registry;
        return Get(ImportLiteRt(path, o));
      }, py::arg("path"), py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{},
         py::arg("op_map") = std::map<std::string, std::string>{}, py::arg("registry") = nullptr);

  py::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model")
      .def("run", &PyModel::Run, py::arg("inputs"),
           "Runs on arrays in input order (read in place); returns new NumPy arrays. A sequence input or\n"
           "output is a list of arrays; an optional one is None or its value. A stateful model\n"
           "(LiteRT variable tensors: SVDF, sequence LSTMs) carries its state from one run of this Model\n"
           "to the next, as one stream; a call made while another runs on the same Model starts from\n"
           "the initial state.")
      .def("reset_state", &PyModel::ResetState,
           "Puts a stateful model's state back to its initial values (an operator's state to zeros, a LiteRT resource\n"
           "variable to the value its CALL_ONCE subgraph gives): the next run starts a new stream.")
      .def("run_into", &PyModel::RunInto, py::arg("inputs"), py::arg("outputs"),
           "Runs writing into the given C-contiguous output arrays (no copies).")
      .def("save", [](PyModel& p, const std::string& path, bool embed, bool pin) {
        SaveOptions o;
        o.embed_plugins = embed;
        o.pin_plugin_hashes = pin;
        Status s = p.m_->Save(path, o);
        if (!s.ok()) Raise(s);
      }, py::arg("path"), py::arg("embed_plugins") = false, py::arg("pin_plugin_hashes") = false,
      "Writes a .weft file. embed_plugins stores the plugin libraries in it; pin_plugin_hashes makes\n"
      "loading require those exact library builds (by default, the same op types and versions).")
      .def_property_readonly("inputs", [](PyModel& p) {
        py::list l;
        for (auto& i : p.m_->inputs()) l.append(Info(i));
        return l;
      })
      .def_property_readonly("outputs", [](PyModel& p) {
        py::list l;
        for (auto& i : p.m_->outputs()) l.append(Info(i));
        return l;
      })
      .def_property_readonly("has_dynamic_shapes", [](PyModel& p) { return p.m_->has_dynamic_shapes(); })
      .def_property_readonly("num_steps", [](PyModel& p) { return p.m_->num_steps(); })
      .def_property_readonly("cached_plans", [](PyModel& p) { return p.m_->cached_plans(); })
      .def_property_readonly("args_updates", [](PyModel& p) { return p.m_->args_updates(); })
      .def("memory", [](PyModel& p) {
        MemoryReport r = p.m_->memory();
        py::dict d;
        d["arena_bytes"] = r.arena_bytes;
        d["lower_bound_bytes"] = r.lower_bound_bytes;
        d["constant_bytes"] = r.constant_bytes;
        return d;
      });

  py::class_<Session, std::shared_ptr<Session>>(m, "Session")
      .def(py::init([](const std::vector<std::string>& packages, bool use_env_path, bool allow_override, int threads,
                       bool load_builtins, bool trust_embedded_code, uint64_t memory_budget_bytes,
                       const std::map<std::string, std::string>& options) {
        SessionOptions o;
        o.options = options;
        o.package_paths = packages;
        o.use_env_path = use_env_path;
        o.allow_override = allow_override;
        o.intra_op_threads = threads;
        o.load_builtins = load_builtins;
        o.trust_embedded_code = trust_embedded_code;
        o.memory_budget_bytes = memory_budget_bytes;
        return std::shared_ptr<Session>(Get(Session::Create(o)));
      }), py::arg("packages") = std::vector<std::string>{}, py::arg("use_env_path") = true,
          py::arg("allow_override") = false, py::arg("threads") = 1, py::arg("load_builtins") = true,
          py::arg("trust_embedded_code") = false, py::arg("memory_budget_bytes") = 0,
          py::arg("options") = std::map<std::string, std::string>{},
          "options: session options by key, e.g. {\"weft.conv_algorithm\": \"direct\"} (docs/runtime.md lists them).")
      .def("load_package", [](Session& s, const std::string& root) {
        Status st = s.LoadPackage(root);
        if (!st.ok()) Raise(st);
      })
      .def("load_library", [](Session& s, const std::string& path) {
        Status st = s.LoadLibrary(path);
        if (!st.ok()) Raise(st);
      })
      .def("ops", [](Session& s) {
        py::list l;
        for (auto& o : s.ListOps()) l.append(o.op_type);
        return l;
      }, "Names of every registered op type.")
      .def("schema", [](Session& s, const std::string& op) { return SchemaDict(Get(s.GetOpSchema(op))); },
           "The REG_OP prototype of an op as a dict.")
      .def("compile", [](Session& s, const Graph& g) {
        std::shared_ptr<CompiledModel> m;
        {
          NoGil nogil;
          auto r = s.Compile(g);
          if (r.ok()) m = r.value();
          else {
            py::gil_scoped_acquire gil;
            Raise(r.status());
          }
        }
        return std::make_shared<PyModel>(m);
      })
      .def("infer", [](Session& s, const Graph& g, bool bounds) {
        py::list l;
        for (auto& v : Get(s.InferShapes(g))) {
          if (!bounds) {
            l.append(Info(v));
            continue;
          }
          py::tuple t = Info(v);
          py::object bound = py::none();
          if (v.bounded) bound = py::cast(std::vector<int64_t>(v.bound.dims, v.bound.dims + v.bound.ndim));
          l.append(py::make_tuple(t[0], t[1], t[2], bound));
        }
        return l;
      }, py::arg("graph"), py::arg("bounds") = false,
         "Output (name, dtype, shape) by shape inference alone; -1 where values decide. With bounds=True,\n"
         "(name, dtype, shape, bound): bound is the largest shape a data-dependent output can take when\n"
         "its op declares one, else None.")
      .def("load_model", [](Session& s, const std::string& path, bool verify, bool trust) {
        LoadOptions o;
        o.verify_checksum = verify;
        o.trust_embedded_code = trust;
        return std::make_shared<PyModel>(Get(s.LoadModel(path, o)));
      }, py::arg("path"), py::arg("verify_checksum") = true, py::arg("trust_embedded_code") = false,
         "Loads a model file; embedded plugin libraries (native code) run only with trust_embedded_code=True.")
      .def("load_model_bytes", [](Session& s, const py::bytes& b) {
        std::string_view v = b;
        return std::make_shared<PyModel>(Get(s.LoadModelFromMemory(v.data(), v.size())));
      })
      .def("_capsule", [](std::shared_ptr<Session> s) {
        // A std::shared_ptr<weft::Session>* for other bindings of the same libweft.so
        // (libweft_torch.so's weft_torch_register); it keeps the session alive while it lives.
        return py::capsule(new std::shared_ptr<Session>(std::move(s)), "weft.Session",
                           [](PyObject* c) { delete static_cast<std::shared_ptr<Session>*>(PyCapsule_GetPointer(c, "weft.Session")); });
      });

  // `what` is a Graph (compiled here without graph passes) or a compiled Model (a model file, or a
  // graph compiled with them: its fused work is written as C after each op's own).
  m.def("_generate_c", [](const py::object& what, const std::string& output_dir, const std::string& prefix, const std::vector<std::string>& packages,
                          bool allow_override, bool test, const std::map<std::string, py::array>& test_inputs,
                          const std::map<std::string, py::array>& test_outputs, int test_steps, uint64_t seed, double atol, double rtol,
                          const std::string& const_section, bool external_arena, const std::string& config,
                          std::shared_ptr<RegistryContext> registry, const std::map<std::string, py::array>& freeze) {
    SessionOptions so;
    so.package_paths = packages;
    so.allow_override = allow_override;
    so.options["weft.graph_passes"] = "none";
    auto session = Get(Session::Create(so));
    AotOptions o;
    o.prefix = prefix;
    o.output_dir = output_dir;
    o.test = test || !test_inputs.empty() || !test_outputs.empty();
    o.test_steps = test_steps;
    o.seed = seed;
    o.atol = atol;
    o.rtol = rtol;
    o.const_section = const_section;
    o.external_arena = external_arena;
    o.registry = registry;
    auto host = [](const py::array& a, const std::string& name) {
      TensorRef r = RefOf(py::array::ensure(a, py::array::c_style), ("test tensor '" + name + "'").c_str());
      return Get(HostTensor::FromBytes(r.dtype, r.shape, r.data, r.bytes));
    };
    for (auto& [name, a] : test_inputs) o.test_inputs[name] = host(a, name);
    for (auto& [name, a] : test_outputs) o.test_outputs[name] = host(a, name);
    AotReport r;
    if (py::isinstance<PyModel>(what)) {
      if (!config.empty())
        throw py::value_error("config: its attribute rules apply to a graph (.onnx, .tflite, .json), not to a compiled model");
      if (!freeze.empty()) throw py::value_error("freeze: inputs of a graph (.onnx, .tflite, .json) can be frozen, not a compiled model's");
      std::shared_ptr<CompiledModel> compiled = what.cast<std::shared_ptr<PyModel>>()->compiled();
      NoGil nogil;
      Expected<AotReport> rep = GenerateC(*compiled, o);
      py::gil_scoped_acquire gil;
      r = Get(std::move(rep));
    } else {
      Graph graph = what.cast<Graph>();
      for (auto& [name, a] : freeze) graph = Get(FreezeInput(graph, name, host(a, name)));
      if (!config.empty()) {
        AotConfig c = Get(LoadAotConfig(config));
        Status st = ApplyAotConfig(c, *session, &graph, &o);
        if (!st.ok()) Raise(st);
      }
      NoGil nogil;
      auto model = session->Compile(graph);
      Expected<AotReport> rep = model.ok() ? GenerateC(*model.value(), o) : Expected<AotReport>(model.status());
      py::gil_scoped_acquire gil;
      r = Get(std::move(rep));
    }
    py::dict d;
    d["prefix"] = o.prefix;
    d["output_dir"] = output_dir;
    d["ops"] = r.num_ops;
    d["tensors"] = r.num_tensors;
    d["arena_bytes"] = r.arena_bytes;
    d["lower_bound_bytes"] = r.lower_bound_bytes;
    d["algorithm"] = r.algorithm;
    py::list trials;
    for (auto& t : r.trials) trials.append(py::make_tuple(t.algorithm, t.bytes));
    d["trials"] = trials;
    d["constant_bytes"] = r.constant_bytes;
    d["files"] = r.files;
    return d;
  });

  m.def("default_session", [] { return Get(Session::Default()); },
        "The process-wide session (built-ins + WEFT_CUSTOM_OPP_PATH unless set_default_session gave one).");
  m.def("set_default_session", [](std::shared_ptr<Session> s) { Session::SetDefault(std::move(s)); }, py::arg("session"),
        "Makes `session` the process-wide one (None: a fresh default session on next use).");

  m.def("kernel_cache_stats", [] {
    KernelCacheStats k = GetKernelCacheStats();
    py::dict d;
    d["compiles"] = k.compiles;
    d["memory_hits"] = k.memory_hits;
    d["disk_hits"] = k.disk_hits;
    d["failures"] = k.failures;
    d["directory"] = k.directory;
    return d;
  });
  m.def("litert_custom_op_key", &LiteRtCustomOpKey, py::arg("custom_code"),
        "The canonical key of a LiteRT customCode: hyphens and spaces to underscores, trimmed, upper-cased.");
  m.def("dtype_name", [](const py::object& o) { return std::string(DataTypeName(ParseDtype(o))); });
  m.def("dtype_code", [](const py::object& o) { return static_cast<int>(ParseDtype(o)); },
        "The number of a Weft element type (what attributes of type Type hold), from its name or a NumPy dtype.");
}
