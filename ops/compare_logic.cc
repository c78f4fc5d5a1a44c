// Broadcasting ops beyond + - * /: Pow, Mod, comparisons, logical ops, Where, BitShift, and the
// variadic Min / Max / Sum / Mean.
#include <limits>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

graphStatus BroadcastInfer(InferShapeContext* ctx, const char* op) {
  Shape out = *ctx->GetInputShape(0);
  for (size_t i = 1; i < ctx->GetComputeNodeInputNum(); ++i) {
    Shape next;
    if (!BroadcastShape(out, *ctx->GetInputShape(i), &next)) {
      ctx->SetError(ShapeMismatch(op, out, *ctx->GetInputShape(i)));
      return GRAPH_FAILED;
    }
    out = next;
  }
  *ctx->GetOutputShape(0) = out;
  return GRAPH_SUCCESS;
}

// Comparison ops: T x T -> bool.
struct EqualFn { static constexpr const char* kName = "Equal"; template <typename C> static bool Apply(C a, C b) { return a == b; } };
struct LessFn { static constexpr const char* kName = "Less"; template <typename C> static bool Apply(C a, C b) { return a < b; } };
struct LessOrEqualFn { static constexpr const char* kName = "LessOrEqual"; template <typename C> static bool Apply(C a, C b) { return a <= b; } };
struct GreaterFn { static constexpr const char* kName = "Greater"; template <typename C> static bool Apply(C a, C b) { return a > b; } };
struct GreaterOrEqualFn { static constexpr const char* kName = "GreaterOrEqual"; template <typename C> static bool Apply(C a, C b) { return a >= b; } };
struct AndFn { static constexpr const char* kName = "And"; template <typename C> static bool Apply(C a, C b) { return a && b; } };
struct OrFn { static constexpr const char* kName = "Or"; template <typename C> static bool Apply(C a, C b) { return a || b; } };
struct XorFn { static constexpr const char* kName = "Xor"; template <typename C> static bool Apply(C a, C b) { return (a != 0) != (b != 0); } };

// The C expression of a comparison or logical op over elements a and b.
std::string CompareC(const std::string& op) {
  if (op == "Equal") return "a == b";
  if (op == "Less") return "a < b";
  if (op == "LessOrEqual") return "a <= b";
  if (op == "Greater") return "a > b";
  if (op == "GreaterOrEqual") return "a >= b";
  if (op == "And") return "a && b";
  if (op == "Or") return "a || b";
  return "(a != 0) != (b != 0)";  // Xor
}

template <typename Fn>
class CompareOp : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override { return aot::EmitMap2(ctx, CompareC(Fn::kName), "uint8_t"); }
  graphStatus InferShape(InferShapeContext* ctx) override { return BroadcastInfer(ctx, Fn::kName); }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_BOOL); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    Tensor* c = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), DT_BOOL);
    if (!c) return GRAPH_FAILED;
    DispatchAll(a->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* pa = a->GetData<T>();
      const T* pb = b->GetData<T>();
      uint8_t* pc = c->GetData<uint8_t>();
      ForEachBroadcast(a->GetShape(), b->GetShape(), c->GetShape(),
                       [&](int64_t i, int64_t ia, int64_t ib) { pc[i] = Fn::Apply(Load(pa[ia]), Load(pb[ib])); });
    });
    return GRAPH_SUCCESS;
  }
};

template <typename Fn>
OpEntry CompareEntry(const TensorType& t) {
  return {OpDefBuilder(Fn::kName).INPUT(A, "T").INPUT(B, "T").OUTPUT(C, TensorType({DT_BOOL})).DATATYPE(T, t).Build(),
          MakeOpImpl<CompareOp<Fn>>(Fn::kName)};
}

// Pow(X: T, Y: T1) -> T, computed in double.
class Pow : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Floating bases: pow() in double, as Execute computes it.
  graphStatus Emit(EmitContext* ctx) override {
    const DataType t = ctx->GetInputTensor(0)->GetDataType();
    if (t != DT_FLOAT && t != DT_DOUBLE) return Fail(ctx, std::string("the generated C raises float32 or float64 bases only, not ") + DataTypeName(t));
    const std::string ct = aot::CType(t);
    return aot::EmitMap2(ctx, "(" + ct + ")pow((double)a, (double)b)", ct);
  }
  graphStatus InferShape(InferShapeContext* ctx) override { return BroadcastInfer(ctx, "Pow"); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    Tensor* c = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), a->GetDataType());
    if (!c) return GRAPH_FAILED;
    // A float32 base with one exponent that is a small whole number or 1/2 (x^2 and x^0.5 in
    // decomposed normalizations, x^3 in GELU's tanh form, x^-1): products in double, or sqrt,
    // in loops that vectorize, instead of pow() per element.
    if (a->GetDataType() == DT_FLOAT && b->GetShapeSize() == 1 && a->GetShape() == c->GetShape()) {
      double e = std::numeric_limits<double>::quiet_NaN();
      DispatchNumeric(b->GetDataType(), [&](auto tb) { e = static_cast<double>(Load(b->GetData<decltype(tb)>()[0])); });
      const float* pa = a->GetData<float>();
      float* pc = c->GetData<float>();
      const int64_t n = a->GetShapeSize();
      auto apply = [&](auto f) {
        for (int64_t i = 0; i < n; ++i) pc[i] = static_cast<float>(f(static_cast<double>(pa[i])));
        return GRAPH_SUCCESS;
      };
      if (e == 0.5) return apply([](double x) { return std::sqrt(x); });
      if (e == 1) return apply([](double x) { return x; });
      if (e == 2) return apply([](double x) { return x * x; });
      if (e == 3) return apply([](double x) { return x * x * x; });
      if (e == 4) return apply([](double x) { return (x * x) * (x * x); });
      if (e == -1) return apply([](double x) { return 1.0 / x; });
      if (e == -2) return apply([](double x) { return 1.0 / (x * x); });
    }
    DispatchNumeric(a->GetDataType(), [&](auto ta) {
      using T = decltype(ta);
      DispatchNumeric(b->GetDataType(), [&](auto tb) {
        using U = decltype(tb);
        const T* pa = a->GetData<T>();
        const U* pb = b->GetData<U>();
        T* pc = c->GetData<T>();
        ForEachBroadcast(a->GetShape(), b->GetShape(), c->GetShape(), [&](int64_t i, int64_t ia, int64_t ib) {
          double r = std::pow(static_cast<double>(Load(pa[ia])), static_cast<double>(Load(pb[ib])));
          if constexpr (std::is_integral<T>::value) pc[i] = static_cast<T>(static_cast<int64_t>(r));
          else pc[i] = Store<T>(static_cast<typename Compute<T>::type>(r));
        });
      });
    });
    return GRAPH_SUCCESS;
  }
};

class Mod : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Elementwise with broadcasting: fmodf/fmod for floats; integers as Execute (a remainder that
  // takes the divisor's sign unless fmod; a zero divisor fails the run with status 1).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    const DataType dt = a->GetDataType();
    const bool fmod = *ctx->GetAttrs()->GetInt("fmod") != 0;
    const std::string t = aot::CType(dt);
    if (dt == DT_FLOAT || dt == DT_DOUBLE) {
      const std::string r = dt == DT_FLOAT ? "fmodf(a, b)" : "fmod(a, b)", sign = dt == DT_FLOAT ? "copysignf" : "copysign";
      if (fmod) return aot::EmitMap2(ctx, r, t);
      return aot::EmitMap2(ctx, "(" + r + " != 0 ? (((" + r + ") < 0) != (b < 0) ? " + r + " + b : " + r + ") : " + sign + "(" + r + ", b))", t);
    }
    if (t.empty() || dt == DT_BOOL || b->GetDataType() != dt) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " Mod");
    const bool is_signed = dt == DT_INT8 || dt == DT_INT16 || dt == DT_INT32 || dt == DT_INT64;
    ctx->Run("{\n  const " + t + "* pb = " + ctx->Input(1, t.c_str()) + ";\n  int64_t k;\n  for (k = 0; k < " + aot::IntLit(b->GetShapeSize()) +
             "; ++k)\n    if (pb[k] == 0) return 1; /* integer division by zero */\n}\n");
    std::string expr = "a % b";
    if (is_signed) {
      // INT_MIN % -1 overflows in C: its remainder is 0.
      const std::string r = "(b == -1 ? 0 : a % b)";
      expr = fmod ? r : "(" + r + " != 0 && ((" + r + " < 0) != (b < 0)) ? " + r + " + b : " + r + ")";
    }
    return aot::EmitMap2(ctx, expr, t);
  }
  graphStatus InferShape(InferShapeContext* ctx) override { return BroadcastInfer(ctx, "Mod"); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    bool fmod = *ctx->GetAttrs()->GetInt("fmod") != 0;
    Tensor* c = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), a->GetDataType());
    if (!c) return GRAPH_FAILED;
    bool zero = false;
    DispatchAll(a->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* pa = a->GetData<T>();
      const T* pb = b->GetData<T>();
      T* pc = c->GetData<T>();
      ForEachBroadcast(a->GetShape(), b->GetShape(), c->GetShape(), [&](int64_t i, int64_t ia, int64_t ib) {
        auto x = Load(pa[ia]);
        auto y = Load(pb[ib]);
        if constexpr (std::is_integral<decltype(x)>::value) {
          if (y == 0) { zero = true; pc[i] = 0; return; }
          auto r = std::is_signed<decltype(y)>::value && y == decltype(y)(-1) ? decltype(x)(0)
                                                                                : static_cast<decltype(x)>(x % y);  // INT_MIN % -1 overflows
          if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<decltype(x)>(r + y);
          pc[i] = static_cast<T>(r);
        } else {  // fmod=0: the remainder takes the divisor's sign (as NumPy's mod; a zero one is signed like it)
          auto r = static_cast<decltype(x)>(std::fmod(x, y));
          if (!fmod) r = r != 0 ? ((r < 0) != (y < 0) ? static_cast<decltype(x)>(r + y) : r) : std::copysign(r, y);
          pc[i] = Store<T>(r);
        }
      });
    });
    if (zero) {
      ctx->SetError("Mod: integer division by zero");
      return GRAPH_FAILED;
    }
    return GRAPH_SUCCESS;
  }
};

class BitShift : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // ONNX's rule (as NumPy shifts): a shift by a negative count or by the type's width or more
  // gives 0, or -1 for a right shift of a negative signed value; a right shift of a signed value is
  // arithmetic and a left shift wraps.
  graphStatus Emit(EmitContext* ctx) override {
    if (CheckOneOf(ctx, "direction", {"LEFT", "RIGHT"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const DataType dt = ctx->GetInputTensor(0)->GetDataType();
    const bool left = std::string(ctx->GetAttrs()->GetStr("direction")) == "LEFT";
    const std::string bits = std::to_string(DataTypeSize(dt) * 8), t = aot::CType(dt);
    if (dt == DT_UINT8 || dt == DT_UINT16 || dt == DT_UINT32 || dt == DT_UINT64)
      return aot::EmitMap2(ctx, "b >= " + bits + "u ? 0u : (uint64_t)a " + (left ? "<<" : ">>") + " b", t);
    const std::string out = "(b < 0 || b >= " + bits + ") ? ";
    if (left) return aot::EmitMap2(ctx, out + "(" + t + ")0 : (" + t + ")((uint64_t)a << b)", t);
    return aot::EmitMap2(ctx, out + "(" + t + ")(a < 0 ? -1 : 0) : (" + t + ")(a < 0 ? ~(~a >> b) : a >> b)", t);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    if (CheckOneOf(ctx, "direction", {"LEFT", "RIGHT"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return BroadcastInfer(ctx, "BitShift");
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    bool left = std::string(ctx->GetAttrs()->GetStr("direction")) == "LEFT";
    Tensor* c = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), a->GetDataType());
    if (!c) return GRAPH_FAILED;
    DispatchAll(a->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value) {
        using U = std::make_unsigned_t<T>;
        const T* pa = a->GetData<T>();
        const T* pb = b->GetData<T>();
        T* pc = c->GetData<T>();
        ForEachBroadcast(a->GetShape(), b->GetShape(), c->GetShape(), [&](int64_t i, int64_t ia, int64_t ib) {
          const T x = pa[ia], s = pb[ib];
          if (s < T(0) || static_cast<uint64_t>(s) >= sizeof(T) * 8) pc[i] = !left && x < T(0) ? T(-1) : T(0);
          else if (left) pc[i] = static_cast<T>(static_cast<U>(static_cast<U>(x) << s));
          else pc[i] = x < T(0) ? static_cast<T>(~(~x >> s)) : static_cast<T>(x >> s);
        });
      }
    });
    return GRAPH_SUCCESS;
  }
};

// BitwiseAnd, BitwiseOr, BitwiseXor (kOp 0, 1, 2) on integers, broadcasting; BitwiseNot.
template <int kOp>
class Bitwise : public EagerExecuteOp, public ShapeInferOp {
 public:
  static constexpr const char* kName = kOp == 0 ? "BitwiseAnd" : kOp == 1 ? "BitwiseOr" : "BitwiseXor";
  graphStatus InferShape(InferShapeContext* ctx) override { return BroadcastInfer(ctx, kName); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    Tensor* c = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), a->GetDataType());
    if (!c) return GRAPH_FAILED;
    DispatchNumeric(a->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral<T>::value) {
        const T* pa = a->GetData<T>();
        const T* pb = b->GetData<T>();
        T* pc = c->GetData<T>();
        ForEachBroadcast(a->GetShape(), b->GetShape(), c->GetShape(), [&](int64_t i, int64_t ia, int64_t ib) {
          pc[i] = static_cast<T>(kOp == 0 ? (pa[ia] & pb[ib]) : kOp == 1 ? (pa[ia] | pb[ib]) : (pa[ia] ^ pb[ib]));
        });
      }
    });
    return GRAPH_SUCCESS;
  }
};

class BitwiseNot : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral<T>::value) {
        const T* px = x->GetData<T>();
        T* py = y->GetData<T>();
        for (int64_t i = 0; i < x->GetShapeSize(); ++i) py[i] = static_cast<T>(~px[i]);
      }
    });
    return GRAPH_SUCCESS;
  }
};

template <int kOp>
OpEntry BitwiseEntry(const char* name) {
  return {OpDefBuilder(name).INPUT(A, "T").INPUT(B, "T").OUTPUT(C, "T").DATATYPE(T, TensorType::IntegerDataType()).Build(),
          MakeOpImpl<Bitwise<kOp>>(name)};
}

// Where(condition, X, Y) with three-way broadcasting.
class Where : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Element copies by size, each operand through its own broadcast strides.
  graphStatus Emit(EmitContext* ctx) override {
    const Shape& so = ctx->GetOutputTensor(0)->GetShape();
    const size_t elem = DataTypeSize(ctx->GetInputTensor(1)->GetDataType());
    if (elem != 1 && elem != 2 && elem != 4 && elem != 8) return Fail(ctx, "the generated C selects elements of 1, 2, 4 or 8 bytes");
    const std::string t = "uint" + std::to_string(elem * 8) + "_t";
    std::string g1 = aot::Broadcast(ctx->GetInputTensor(0)->GetShape(), ctx->GetInputTensor(1)->GetShape(), so);
    std::string g2 = aot::Broadcast(ctx->GetInputTensor(2)->GetShape(), ctx->GetInputTensor(2)->GetShape(), so);
    if (!g2.empty()) g2.replace(g2.find(" g = "), 5, " g2 = ");
    if (!g1.empty() || !g2.empty()) aot::EmitHelper(ctx, aot::Kernels(), "weft_broadcast");
    ctx->Run("{\n  " + g1 + g2 + "  const uint8_t* pc = " + ctx->Input(0, "uint8_t") + ";\n  const " + t + "* px = " + ctx->Input(1, t.c_str()) +
             ";\n  const " + t + "* py = " + ctx->Input(2, t.c_str()) + ";\n  " + t + "* out = " + ctx->Output(0, t.c_str()) +
             ";\n  int64_t o, ic = 0, ix = 0, iy = 0, unused = 0;\n  for (o = 0; o < " + aot::IntLit(so.GetShapeSize()) + "; ++o) {\n    " +
             (g1.empty() ? "ic = ix = o;" : "weft_bcast_index(&g, o, &ic, &ix);") + "\n    " +
             (g2.empty() ? "iy = o;" : "weft_bcast_index(&g2, o, &iy, &unused);") + "\n    out[o] = pc[ic] ? px[ix] : py[iy];\n  }\n  (void)unused;\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override { return BroadcastInfer(ctx, "Where"); }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, ctx->GetInputDataType(1)); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* cond = ctx->GetInputTensor(0);
    const Tensor* x = ctx->GetInputTensor(1);
    const Tensor* y = ctx->GetInputTensor(2);
    Tensor* out = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!out) return GRAPH_FAILED;
    const Shape& so = out->GetShape();
    int64_t sc[WEFT_MAX_DIMS], sx[WEFT_MAX_DIMS], sy[WEFT_MAX_DIMS];
    BroadcastStrides(cond->GetShape(), so, sc);
    BroadcastStrides(x->GetShape(), so, sx);
    BroadcastStrides(y->GetShape(), so, sy);
    size_t elem = DataTypeSize(x->GetDataType());
    const int n = static_cast<int>(so.GetDimNum());
    const uint8_t* pc = cond->GetData<uint8_t>();
    const uint8_t* px = x->GetData<uint8_t>();
    const uint8_t* py = y->GetData<uint8_t>();
    uint8_t* po = out->GetData<uint8_t>();
    const int64_t total = so.GetShapeSize();
    if (total == 0) return GRAPH_SUCCESS;
    // Runs along the innermost dim, each operand stepping 1 or 0 (broadcast) there; the runs' starts
    // through the strides of the outer dims.
    const int64_t inner = n ? so.GetDim(static_cast<size_t>(n - 1)) : 1;
    const int64_t dc = n ? sc[n - 1] : 0, dx = n ? sx[n - 1] : 0, dy = n ? sy[n - 1] : 0;
    auto run = [&](auto tag, int64_t ic, int64_t ix, int64_t iy, int64_t o) {
      using T = decltype(tag);
      const T* X = reinterpret_cast<const T*>(px);
      const T* Y = reinterpret_cast<const T*>(py);
      T* O = reinterpret_cast<T*>(po) + o;
      if (dc == 1 && dx == 1 && dy == 1) {
        for (int64_t j = 0; j < inner; ++j) O[j] = pc[ic + j] ? X[ix + j] : Y[iy + j];
      } else {
        for (int64_t j = 0; j < inner; ++j) O[j] = pc[ic + j * dc] ? X[ix + j * dx] : Y[iy + j * dy];
      }
    };
    ctx->ParallelFor(total / inner, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t ic = 0, ix = 0, iy = 0, rest = r;
        for (int k = n - 2; k >= 0; --k) {
          const int64_t at = rest % so.GetDim(static_cast<size_t>(k));
          rest /= so.GetDim(static_cast<size_t>(k));
          ic += at * sc[k], ix += at * sx[k], iy += at * sy[k];
        }
        switch (elem) {
          case 1: run(uint8_t{}, ic, ix, iy, r * inner); break;
          case 2: run(uint16_t{}, ic, ix, iy, r * inner); break;
          case 4: run(uint32_t{}, ic, ix, iy, r * inner); break;
          case 8: run(uint64_t{}, ic, ix, iy, r * inner); break;
          default:
            for (int64_t j = 0; j < inner; ++j)
              CopyElem(po + (r * inner + j) * elem, pc[ic + j * dc] ? px + (ix + j * dx) * elem : py + (iy + j * dy) * elem, elem);
        }
      }
    });
    return GRAPH_SUCCESS;
  }
};

// Variadic Min / Max / Sum / Mean.
struct MinFn { static constexpr const char* kName = "Min"; template <typename C> static C Apply(C a, C b) { return b < a || std::isnan(static_cast<double>(b)) ? b : a; } };
struct MaxFn { static constexpr const char* kName = "Max"; template <typename C> static C Apply(C a, C b) { return b > a || std::isnan(static_cast<double>(b)) ? b : a; } };
struct SumFn { static constexpr const char* kName = "Sum"; template <typename C> static C Apply(C a, C b) { return a + b; } };
struct MeanFn { static constexpr const char* kName = "Mean"; template <typename C> static C Apply(C a, C b) { return a + b; } };

template <typename Fn>
class VariadicOp : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Each input in turn folded into the output (broadcast to it); Min and Max for every numeric
  // type, Sum and Mean for float32 (in float, as Execute).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* y = ctx->GetOutputTensor(0);
    const std::string t = aot::CType(y->GetDataType());
    const bool minmax = std::is_same<Fn, MinFn>::value || std::is_same<Fn, MaxFn>::value;
    if (t.empty() || (!minmax && y->GetDataType() != DT_FLOAT))
      return Fail(ctx, std::string("the generated C has no ") + DataTypeName(y->GetDataType()) + " form of " + Fn::kName);
    const std::string f = std::is_same<Fn, MinFn>::value ? "(b < a || b != b) ? b : a" : std::is_same<Fn, MaxFn>::value ? "(b > a || b != b) ? b : a" : "a + b";
    const size_t n = ctx->GetComputeNodeInputNum();
    std::string code = "{\n  " + t + "* py = " + ctx->Output(0, t.c_str()) + ";\n  int64_t o, i, j;\n";
    bool any_broadcast = false;
    for (size_t k = 0; k < n; ++k) {
      const std::string g = aot::Broadcast(y->GetShape(), ctx->GetInputTensor(k)->GetShape(), y->GetShape());
      any_broadcast = any_broadcast || !g.empty();
      code += "  {\n    " + g + "    const " + t + "* pb = " + ctx->Input(k, t.c_str()) + ";\n    for (o = 0; o < " + aot::IntLit(y->GetShapeSize()) +
              "; ++o) {\n      " + (g.empty() ? std::string("i = j = o;") : std::string("weft_bcast_index(&g, o, &i, &j);")) + "\n      {\n        const " +
              t + " b = pb[j];\n" + (k == 0 ? "        py[o] = b;\n" : "        const " + t + " a = py[o];\n        py[o] = (" + t + ")(" + f + ");\n") +
              "      }\n    }\n  }\n";
    }
    if (std::is_same<Fn, MeanFn>::value)
      code += "  for (o = 0; o < " + aot::IntLit(y->GetShapeSize()) + "; ++o) py[o] = py[o] / " + aot::FloatLit(static_cast<float>(n)) + ";\n";
    code += "  (void)i;\n}\n";
    if (any_broadcast) aot::EmitHelper(ctx, aot::Kernels(), "weft_broadcast");
    ctx->Run(code);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override { return BroadcastInfer(ctx, Fn::kName); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Tensor* out = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), ctx->GetInputDataType(0));
    if (!out) return GRAPH_FAILED;
    size_t count = ctx->GetComputeNodeInputNum();
    DispatchNumeric(out->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const Shape& so = out->GetShape();
      int64_t total = so.GetShapeSize();
      C* acc = static_cast<C*>(ctx->MallocWorkSpace(static_cast<size_t>(total) * sizeof(C)));
      if (!acc) return;
      const Tensor* t0 = ctx->GetInputTensor(0);
      ForEachBroadcast(t0->GetShape(), t0->GetShape(), so, [&](int64_t i, int64_t ia, int64_t) { acc[i] = Load(t0->GetData<T>()[ia]); });
      for (size_t k = 1; k < count; ++k) {
        const Tensor* t = ctx->GetInputTensor(k);
        ForEachBroadcast(so, t->GetShape(), so, [&](int64_t i, int64_t, int64_t ib) { acc[i] = Fn::Apply(acc[i], C(Load(t->GetData<T>()[ib]))); });
      }
      for (int64_t i = 0; i < total; ++i) {
        C v = acc[i];
        if (std::is_same<Fn, MeanFn>::value) v = static_cast<C>(v / static_cast<C>(count));
        out->GetData<T>()[i] = Store<T>(v);
      }
    });
    return GRAPH_SUCCESS;
  }
};

template <typename Fn>
OpEntry VariadicEntry() {
  return {OpDefBuilder(Fn::kName).DYNAMIC_INPUT(data_, "T").OUTPUT(out, "T").DATATYPE(T, NumericTypes()).Build(),
          MakeOpImpl<VariadicOp<Fn>>(Fn::kName)};
}

}  // namespace

void WeftRegister_compare_logic(std::vector<OpEntry>& out) {
  TensorType all = TensorType::ALL();
  out.push_back(CompareEntry<EqualFn>(all));
  out.push_back(CompareEntry<LessFn>(NumericTypes()));
  out.push_back(CompareEntry<LessOrEqualFn>(NumericTypes()));
  out.push_back(CompareEntry<GreaterFn>(NumericTypes()));
  out.push_back(CompareEntry<GreaterOrEqualFn>(NumericTypes()));
  out.push_back(CompareEntry<AndFn>(TensorType({DT_BOOL})));
  out.push_back(CompareEntry<OrFn>(TensorType({DT_BOOL})));
  out.push_back(CompareEntry<XorFn>(TensorType({DT_BOOL})));
  out.push_back({OpDefBuilder("Pow").INPUT(X, NumericTypes()).INPUT(Y, NumericTypes()).OUTPUT(Z, NumericTypes()).Build(), MakeOpImpl<Pow>("Pow")});
  out.push_back({OpDefBuilder("Mod").INPUT(A, "T").INPUT(B, "T").OUTPUT(C, "T").DATATYPE(T, NumericTypes()).ATTR(fmod, Int, 0).Build(),
                 MakeOpImpl<Mod>("Mod")});
  out.push_back({OpDefBuilder("BitShift").INPUT(X, "T").INPUT(Y, "T").OUTPUT(Z, "T")
                     .DATATYPE(T, TensorType::IntegerDataType()).REQUIRED_ATTR(direction, String).Build(),
                 MakeOpImpl<BitShift>("BitShift")});
  out.push_back(BitwiseEntry<0>("BitwiseAnd"));
  out.push_back(BitwiseEntry<1>("BitwiseOr"));
  out.push_back(BitwiseEntry<2>("BitwiseXor"));
  out.push_back({OpDefBuilder("BitwiseNot").INPUT(X, TensorType::IntegerDataType()).OUTPUT(Y, TensorType::IntegerDataType())
                     .SAME_AS_INPUT(X).Build(),
                 MakeOpImpl<BitwiseNot>("BitwiseNot")});
  out.push_back({OpDefBuilder("Where").INPUT(condition, TensorType({DT_BOOL})).INPUT(X, "T").INPUT(Y, "T").OUTPUT(output, "T")
                     .DATATYPE(T, TensorType::ALL()).Build(), MakeOpImpl<Where>("Where")});
  out.push_back(VariadicEntry<MinFn>());
  out.push_back(VariadicEntry<MaxFn>());
  out.push_back(VariadicEntry<SumFn>());
  out.push_back(VariadicEntry<MeanFn>());
}

}  // namespace weft::ops
