// Operator prototypes: TensorType, OpDefBuilder and the GE-style REG_OP macros.
//
//   REG_OP(AddCustom)
//       .INPUT(x, TensorType({DT_FLOAT, DT_FLOAT16}))
//       .INPUT(y, TensorType({DT_FLOAT, DT_FLOAT16}))
//       .OUTPUT(z, TensorType({DT_FLOAT, DT_FLOAT16})).SAME_AS_INPUT(x)
//       .ATTR(alpha, Float, 1.0)
//       .OP_END_FACTORY_REG(AddCustom);
//
// In a plugin library REG_OP adds the prototype to that library's own list, which the engine
// pulls through WeftGetOpLibrary. Built-in operators use OpDefBuilder(...).Build() directly.
#ifndef WEFT_OP_DEF_H_
#define WEFT_OP_DEF_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "weft/attr_value.h"
#include "weft/types.h"

namespace weft {

// The set of element types an input or output accepts.
class TensorType {
 public:
  TensorType() = default;
  TensorType(std::initializer_list<DataType> types) : types_(types) {}
  explicit TensorType(DataType t) : types_{t} {}
  explicit TensorType(std::vector<DataType> t) : types_(std::move(t)) {}
  const std::vector<DataType>& types() const { return types_; }

  static TensorType ALL() {
    return {DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT8, DT_UINT8, DT_INT16, DT_UINT16,
            DT_INT32, DT_UINT32, DT_INT64, DT_UINT64, DT_BOOL};
  }
  // Sequences of any element type, optionals of any tensor or sequence type (weft/sequence.h).
  static TensorType Sequences() {
    const TensorType all = ALL();
    std::vector<DataType> t;
    for (DataType e : all.types()) t.push_back(SequenceOf(e));
    return TensorType(std::move(t));
  }
  static TensorType Optionals() {
    const TensorType all = ALL(), seqs = Sequences();
    std::vector<DataType> t;
    for (DataType e : all.types()) t.push_back(OptionalOf(e));
    for (DataType s : seqs.types()) t.push_back(OptionalOf(s));
    return TensorType(std::move(t));
  }
  // Every value type: tensors, sequences and optionals (Identity, control flow).
  static TensorType AnyValue() {
    const TensorType seqs = Sequences(), opts = Optionals();
    std::vector<DataType> t = ALL().types();
    t.insert(t.end(), seqs.types().begin(), seqs.types().end());
    t.insert(t.end(), opts.types().begin(), opts.types().end());
    return TensorType(std::move(t));
  }
  static TensorType FloatingDataType() { return {DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE}; }
  static TensorType IntegerDataType() {
    return {DT_INT8, DT_UINT8, DT_INT16, DT_UINT16, DT_INT32, DT_UINT32, DT_INT64, DT_UINT64};
  }
  static TensorType NumberType() {
    return {DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT8, DT_UINT8, DT_INT16, DT_UINT16,
            DT_INT32, DT_UINT32, DT_INT64, DT_UINT64};
  }
  static TensorType FLOAT() { return {DT_FLOAT}; }

 private:
  std::vector<DataType> types_;
};

// An operator prototype with stable C views. Not copyable: the C structs point into it.
class OpDef {
 public:
  struct Io {
    std::string name;
    WeftIoKind kind = WEFT_IO_REQUIRED;
    std::string symbol;
    std::vector<int32_t> dtypes;
    std::string same_as;  // outputs: input name whose shape/type this output copies
    WeftIoDesc c{};
  };
  struct Attr {
    std::string name;
    WeftAttrType type = WEFT_ATTR_INT;
    bool required = false;
    AttrValue value;
    WeftAttrDesc c{};
  };
  struct Symbol {
    std::string name;
    std::vector<int32_t> dtypes;
    WeftDtypeSymbol c{};
  };

  OpDef() = default;
  OpDef(const OpDef&) = delete;
  OpDef& operator=(const OpDef&) = delete;

  const std::string& op_type() const { return op_type_; }
  // Empty when the prototype is well formed; otherwise what is wrong with it.
  const std::string& error() const { return error_; }
  const WeftOpPrototype* c() const { return &proto_; }

 private:
  friend class OpDefBuilder;
  void Finalize() {
    auto find_input = [&](const std::string& n) -> int32_t {
      for (size_t k = 0; k < inputs_.size(); ++k) if (inputs_[k]->name == n) return int32_t(k);
      return -1;
    };
    auto fill_io = [&](std::vector<std::unique_ptr<Io>>& ios, std::vector<const WeftIoDesc*>& out) {
      for (auto& io : ios) {
        io->c = WeftIoDesc{};
        io->c.struct_size = sizeof(WeftIoDesc);
        io->c.name = io->name.c_str();
        io->c.kind = io->kind;
        io->c.dtype_symbol = io->symbol.empty() ? nullptr : io->symbol.c_str();
        io->c.dtypes = io->dtypes.data();
        io->c.num_dtypes = static_cast<uint32_t>(io->dtypes.size());
        io->c.same_as_input = -1;
        if (!io->same_as.empty()) {
          io->c.same_as_input = find_input(io->same_as);
          if (io->c.same_as_input < 0)
            AddError("output '" + io->name + "' is SAME_AS_INPUT(" + io->same_as + ") but there is no input named '" + io->same_as + "'");
        }
        if (!io->symbol.empty()) {
          bool found = false;
          for (auto& s : symbols_) found = found || s->name == io->symbol;
          if (!found) AddError("'" + io->name + "' uses type symbol '" + io->symbol + "' with no DATATYPE(" + io->symbol + ", ...)");
        }
        out.push_back(&io->c);
      }
    };
    fill_io(inputs_, input_ptrs_);
    fill_io(outputs_, output_ptrs_);
    for (auto& a : attrs_) {
      a->c = WeftAttrDesc{};
      a->c.struct_size = sizeof(WeftAttrDesc);
      a->c.name = a->name.c_str();
      a->c.type = a->type;
      a->c.required = a->required ? 1 : 0;
      a->c.default_value = a->required ? nullptr : a->value.c();
      attr_ptrs_.push_back(&a->c);
    }
    for (auto& s : symbols_) {
      s->c = WeftDtypeSymbol{};
      s->c.struct_size = sizeof(WeftDtypeSymbol);
      s->c.name = s->name.c_str();
      s->c.dtypes = s->dtypes.data();
      s->c.num_dtypes = static_cast<uint32_t>(s->dtypes.size());
      symbol_ptrs_.push_back(&s->c);
    }
    std::vector<std::string> names;
    for (auto& io : inputs_) names.push_back(io->name);
    for (auto& io : outputs_) names.push_back(io->name);
    for (auto& a : attrs_) names.push_back(a->name);
    for (size_t i = 0; i < names.size(); ++i)
      for (size_t j = i + 1; j < names.size(); ++j)
        if (names[i] == names[j]) AddError("name '" + names[i] + "' is declared twice");
    if (outputs_.empty()) AddError("no OUTPUT declared");

    proto_ = WeftOpPrototype{};
    proto_.struct_size = sizeof(WeftOpPrototype);
    proto_.op_type = op_type_.c_str();
    proto_.version = version_;
    proto_.num_inputs = static_cast<uint32_t>(input_ptrs_.size());
    proto_.inputs = input_ptrs_.data();
    proto_.num_outputs = static_cast<uint32_t>(output_ptrs_.size());
    proto_.outputs = output_ptrs_.data();
    proto_.num_attrs = static_cast<uint32_t>(attr_ptrs_.size());
    proto_.attrs = attr_ptrs_.data();
    proto_.num_dtype_symbols = static_cast<uint32_t>(symbol_ptrs_.size());
    proto_.dtype_symbols = symbol_ptrs_.data();
  }
  void AddError(const std::string& e) {
    error_ += (error_.empty() ? "REG_OP(" + op_type_ + "): " : "; ") + e;
  }

  std::string op_type_;
  uint32_t version_ = 1;
  std::string error_;
  std::vector<std::unique_ptr<Io>> inputs_, outputs_;
  std::vector<std::unique_ptr<Attr>> attrs_;
  std::vector<std::unique_ptr<Symbol>> symbols_;
  std::vector<const WeftIoDesc*> input_ptrs_, output_ptrs_;
  std::vector<const WeftAttrDesc*> attr_ptrs_;
  std::vector<const WeftDtypeSymbol*> symbol_ptrs_;
  WeftOpPrototype proto_{};
};

// Fluent prototype builder behind REG_OP. Methods may be called directly as well.
class OpDefBuilder {
 public:
  explicit OpDefBuilder(const char* op_type) : def_(new OpDef) { def_->op_type_ = op_type; }

  OpDefBuilder& Input(const char* n, const TensorType& t) { return Io(true, n, WEFT_IO_REQUIRED, t); }
  OpDefBuilder& Input(const char* n, const char* sym) { return Io(true, n, WEFT_IO_REQUIRED, sym); }
  OpDefBuilder& OptionalInput(const char* n, const TensorType& t) { return Io(true, n, WEFT_IO_OPTIONAL, t); }
  OpDefBuilder& OptionalInput(const char* n, const char* sym) { return Io(true, n, WEFT_IO_OPTIONAL, sym); }
  OpDefBuilder& DynamicInput(const char* n, const TensorType& t) { return Io(true, n, WEFT_IO_DYNAMIC, t); }
  OpDefBuilder& DynamicInput(const char* n, const char* sym) { return Io(true, n, WEFT_IO_DYNAMIC, sym); }
  OpDefBuilder& Output(const char* n, const TensorType& t) { return Io(false, n, WEFT_IO_REQUIRED, t); }
  OpDefBuilder& Output(const char* n, const char* sym) { return Io(false, n, WEFT_IO_REQUIRED, sym); }
  OpDefBuilder& DynamicOutput(const char* n, const TensorType& t) { return Io(false, n, WEFT_IO_DYNAMIC, t); }
  OpDefBuilder& DynamicOutput(const char* n, const char* sym) { return Io(false, n, WEFT_IO_DYNAMIC, sym); }
  // The last declared output takes the shape and type of input `input_name` (no InferShape needed).
  OpDefBuilder& SameAsInput(const char* input_name) {
    if (def_->outputs_.empty()) def_->AddError(std::string("SAME_AS_INPUT(") + input_name + ") before any OUTPUT");
    else def_->outputs_.back()->same_as = input_name;
    return *this;
  }
  OpDefBuilder& DataTypeSym(const char* sym, const TensorType& t) {
    auto s = std::make_unique<OpDef::Symbol>();
    s->name = sym;
    for (DataType d : t.types()) s->dtypes.push_back(d);
    def_->symbols_.push_back(std::move(s));
    return *this;
  }
  OpDefBuilder& Version(uint32_t v) { def_->version_ = v; return *this; }

  OpDefBuilder& AttrInt(const char* n, int64_t v) { return Attr(n, AttrValue::Int(v)); }
  OpDefBuilder& AttrFloat(const char* n, double v) { return Attr(n, AttrValue::Float(static_cast<float>(v))); }
  OpDefBuilder& AttrBool(const char* n, bool v) { return Attr(n, AttrValue::Bool(v)); }
  OpDefBuilder& AttrString(const char* n, std::string v) { return Attr(n, AttrValue::String(std::move(v))); }
  OpDefBuilder& AttrType(const char* n, DataType v) { return Attr(n, AttrValue::Type(v)); }
  OpDefBuilder& AttrListInt(const char* n, std::vector<int64_t> v) { return Attr(n, AttrValue::ListInt(std::move(v))); }
  OpDefBuilder& AttrListFloat(const char* n, std::vector<float> v) { return Attr(n, AttrValue::ListFloat(std::move(v))); }
  OpDefBuilder& AttrListString(const char* n, std::vector<std::string> v) { return Attr(n, AttrValue::ListString(std::move(v))); }
  OpDefBuilder& AttrListBool(const char* n, std::vector<bool> v) { return Attr(n, AttrValue::ListBool(std::move(v))); }
  // A tensor attribute; `{}` (or no default) means an empty float tensor of shape [0].
  OpDefBuilder& AttrTensor(const char* n, const AttrValue& v = AttrValue()) {
    return Attr(n, v.type() == WEFT_ATTR_TENSOR ? v : AttrValue::TensorValue(DT_FLOAT, Shape({0}), {}));
  }
  OpDefBuilder& RequiredAttr(const char* n, WeftAttrType t) {
    auto a = std::make_unique<OpDef::Attr>();
    a->name = n;
    a->type = t;
    a->required = true;
    def_->attrs_.push_back(std::move(a));
    return *this;
  }

  // Finishes the prototype. Check OpDef::error() before using it.
  std::unique_ptr<OpDef> Build() {
    def_->Finalize();
    return std::move(def_);
  }
  // OP_END_FACTORY_REG: checks the closing name and adds the prototype to this library's list.
  template <typename Tag>
  bool End(const char* end_name, Tag*);

 private:
  OpDefBuilder& Io(bool input, const char* n, WeftIoKind kind, const TensorType& t) {
    auto io = std::make_unique<OpDef::Io>();
    io->name = n;
    io->kind = kind;
    for (DataType d : t.types()) io->dtypes.push_back(d);
    (input ? def_->inputs_ : def_->outputs_).push_back(std::move(io));
    return *this;
  }
  OpDefBuilder& Io(bool input, const char* n, WeftIoKind kind, const char* sym) {
    Io(input, n, kind, TensorType());
    (input ? def_->inputs_ : def_->outputs_).back()->symbol = sym;
    return *this;
  }
  OpDefBuilder& Attr(const char* n, AttrValue v) {
    auto a = std::make_unique<OpDef::Attr>();
    a->name = n;
    a->type = v.type();
    a->value = std::move(v);
    def_->attrs_.push_back(std::move(a));
    return *this;
  }
  std::unique_ptr<OpDef> def_;
};

}  // namespace weft

// ---- GE-style registration macros -------------------------------------------------------------
#define WEFT_ATTR_TYPE_Int WEFT_ATTR_INT
#define WEFT_ATTR_TYPE_Float WEFT_ATTR_FLOAT
#define WEFT_ATTR_TYPE_Bool WEFT_ATTR_BOOL
#define WEFT_ATTR_TYPE_String WEFT_ATTR_STRING
#define WEFT_ATTR_TYPE_Str WEFT_ATTR_STRING
#define WEFT_ATTR_TYPE_ListInt WEFT_ATTR_LIST_INT
#define WEFT_ATTR_TYPE_ListFloat WEFT_ATTR_LIST_FLOAT
#define WEFT_ATTR_TYPE_ListString WEFT_ATTR_LIST_STRING
#define WEFT_ATTR_TYPE_ListBool WEFT_ATTR_LIST_BOOL
#define WEFT_ATTR_TYPE_Tensor WEFT_ATTR_TENSOR
#define WEFT_ATTR_TYPE_Type WEFT_ATTR_TYPE

#define INPUT(x, t) Input(#x, t)
#define OPTIONAL_INPUT(x, t) OptionalInput(#x, t)
#define DYNAMIC_INPUT(x, t) DynamicInput(#x, t)
#define OUTPUT(x, t) Output(#x, t)
#define DYNAMIC_OUTPUT(x, t) DynamicOutput(#x, t)
#define SAME_AS_INPUT(x) SameAsInput(#x)
#define ATTR(x, Type, ...) Attr##Type(#x, __VA_ARGS__)
#define REQUIRED_ATTR(x, Type) RequiredAttr(#x, WEFT_ATTR_TYPE_##Type)
#define DATATYPE(sym, t) DataTypeSym(#sym, t)
#define OP_VERSION(v) Version(v)

#define REG_OP(x)                                                                   \
  struct weft_reg_op_tag_##x;                                                       \
  [[maybe_unused]] static const bool weft_reg_op_##x = ::weft::OpDefBuilder(#x)
// Closing a REG_OP with a different name does not compile (weft_reg_op_tag_<name> is undeclared).
#define OP_END_FACTORY_REG(x) End(#x, static_cast<weft_reg_op_tag_##x*>(nullptr))

#endif  // WEFT_OP_DEF_H_
