// Operators that carry a model's state from one call to the next (ONNX opsets 24 and later):
//   TensorScatter(past_cache, update, write_indices?) -> present_cache: a copy of the cache with
//     `update` written along `axis` (not the batch axis 0) from each sequence's write index
//     (write_indices [B], default 0); mode "circular" wraps positions around the cache's length,
//     "linear" requires them to fit.
//   CausalConvWithState(input [B, C, L], weight [C, 1, k], bias [C]?, past_state [B, C, k - 1]?)
//     -> output [B, C, L], present_state [B, C, k - 1]: a depthwise convolution over the past
//     state (zeros when absent) followed by the input, each output seeing its own and the k - 1
//     earlier positions; activation "silu" (or its alias "swish") or "none"; present_state holds
//     the last k - 1 positions of the state and input together.
//   LinearAttention(query [B, T, Hq * dk], key [B, T, Hkv * dk], value [B, T, Hkv * dv],
//     past_state [B, Hkv, dk, dv]?, decay [B, T, Hkv or Hkv * dk]?, beta [B, T, Hkv or 1]?) ->
//     output [B, T, Hq * dv], present_state [B, Hkv, dk, dv]: attention as a recurrence over a
//     per-head state S (zeros when absent). At each step, with update_rule "gated" or
//     "gated_delta" S is first scaled by exp(decay) (per head, or per key row); with "delta" or
//     "gated_delta" the value becomes beta * (v - S^T k); then S += k v^T, and query head i
//     reads scale * q^T S of key/value head i / (Hq / Hkv) (scale defaults to 1 / sqrt(dk)).
//     Computed in float32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

const Tensor* In(const KernelContextBase* ctx, size_t i) { return ctx->GetOptionalInputTensor(i); }

// Dims that may be unknown (-1) while the graph compiles.
bool Agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

bool ScatterPlan(const KernelContextBase* ctx, int64_t* axis_out) {
  const Shape &cs = ctx->GetInputTensor(0)->GetShape(), &us = ctx->GetInputTensor(1)->GetShape();
  const int64_t rank = static_cast<int64_t>(cs.GetDimNum());
  int64_t axis = 0;
  if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), rank, &axis)) return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), rank)), false;
  if (axis == 0) return Fail(ctx, "axis must not be the batch axis 0"), false;
  if (static_cast<int64_t>(us.GetDimNum()) != rank) return Fail(ctx, "update " + us.ToString() + " must have past_cache's rank " + cs.ToString()), false;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t c = cs.GetDim(d), u = us.GetDim(d);
    if (c < 0 || u < 0) continue;
    if (d != axis ? c != u : u > c)
      return Fail(ctx, "update " + us.ToString() + " does not fit past_cache " + cs.ToString() + " (same dims, and along axis " + std::to_string(axis) +
                           " at most the cache's)"),
             false;
  }
  if (const Tensor* w = In(ctx, 2); w && (w->GetShape().GetDimNum() != 1 || (w->GetShape().GetDim(0) >= 0 && cs.GetDim(0) >= 0 &&
                                                                              w->GetShape().GetDim(0) != cs.GetDim(0))))
    return Fail(ctx, "write_indices " + w->GetShape().ToString() + " must hold one index per sequence (" + std::to_string(cs.GetDim(0)) + ")"), false;
  if (CheckOneOf(ctx, "mode", {"linear", "circular"}) != GRAPH_SUCCESS) return false;
  *axis_out = axis;
  return true;
}

class TensorScatter : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The cache copied to the output (unless the planner placed them together), then each
  // sequence's rows written at its index; an index that does not fit fails the run (status 1).
  graphStatus Emit(EmitContext* ctx) override {
    int64_t axis = 0;
    if (!ScatterPlan(ctx, &axis)) return GRAPH_FAILED;
    const Tensor *cache = ctx->GetInputTensor(0), *update = ctx->GetInputTensor(1), *wi = In(ctx, 2);
    const Shape &cs = cache->GetShape(), &us = update->GetShape();
    const int64_t elem = static_cast<int64_t>(DataTypeSize(cache->GetDataType()));
    int64_t inner = 1, mid = 1;
    for (size_t d = axis + 1; d < cs.GetDimNum(); ++d) inner *= cs.GetDim(d);
    for (int64_t d = 1; d < axis; ++d) mid *= cs.GetDim(d);
    const int64_t B = cs.GetDim(0), len = cs.GetDim(axis), n = us.GetDim(axis), bytes = cache->GetShapeSize() * elem;
    const bool circular = std::string(ctx->GetAttrs()->GetStr("mode")) == "circular";
    const std::string row = aot::IntLit(inner * elem), L = aot::IntLit(len), N = aot::IntLit(n), MID = aot::IntLit(mid);
    ctx->Include("<string.h>");
    std::string c = "{\n  const uint8_t* cache = " + ctx->Input(0, "uint8_t") + ";\n  const uint8_t* upd = " + ctx->Input(1, "uint8_t") +
                    ";\n  uint8_t* out = " + ctx->Output(0, "uint8_t") + ";\n  int64_t b, m, s;\n";
    if (wi) c += "  const int64_t* at = " + ctx->Input(aot::InputAt(ctx, 2), "int64_t") + ";\n";
    if (bytes > 0) c += "  if (out != cache) memcpy(out, cache, " + std::to_string(bytes) + "u);\n";
    c += "  for (b = 0; b < " + aot::IntLit(B) + "; ++b) {\n    const int64_t start = " + (wi ? "at[b]" : "0") + ";\n";
    c += circular ? "    if (start < 0 || (" + N + " > 0 && " + L + " == 0)) return 1;\n"
                  : "    if (start < 0 || start > " + L + " - " + N + ") return 1;\n";
    c += "    for (m = 0; m < " + MID + "; ++m)\n      for (s = 0; s < " + N + "; ++s) {\n        const int64_t pos = " +
         (circular ? "(start % " + L + " + s) % " + L : std::string("start + s")) + ";\n        memcpy(out + ((b * " + MID + " + m) * " + L +
         " + pos) * " + row + ", upd + ((b * " + MID + " + m) * " + N + " + s) * " + row + ", " + row + ");\n      }\n  }\n}\n";
    ctx->Run(c);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t axis = 0;
    if (!ScatterPlan(ctx, &axis)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = ctx->GetInputTensor(0)->GetShape();
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (ctx->GetInputDataType(1) != ctx->GetInputDataType(0))
      return Fail(ctx, std::string("update is ") + DataTypeName(ctx->GetInputDataType(1)) + "; past_cache is " + DataTypeName(ctx->GetInputDataType(0)));
    return ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    int64_t axis = 0;
    if (!ScatterPlan(ctx, &axis)) return GRAPH_FAILED;
    const Tensor *cache = ctx->GetInputTensor(0), *update = ctx->GetInputTensor(1), *wi = In(ctx, 2);
    const Shape &cs = cache->GetShape(), &us = update->GetShape();
    Tensor* out = ctx->MallocOutputTensor(0, cs, cache->GetDataType());
    if (!out) return GRAPH_FAILED;
    if (cache->GetByteCount()) std::memcpy(out->GetAddr(), cache->GetAddr(), cache->GetByteCount());
    const size_t elem = DataTypeSize(cache->GetDataType());
    int64_t inner = 1, mid = 1;  // after the axis; between the batch and the axis
    for (size_t d = axis + 1; d < cs.GetDimNum(); ++d) inner *= cs.GetDim(d);
    for (int64_t d = 1; d < axis; ++d) mid *= cs.GetDim(d);
    const int64_t B = cs.GetDim(0), len = cs.GetDim(axis), n = us.GetDim(axis);
    const bool circular = std::string(ctx->GetAttrs()->GetStr("mode")) == "circular";
    std::vector<int64_t> at;
    if (wi && !ReadInts(wi, &at)) return Fail(ctx, "write_indices must be int64");
    for (int64_t b = 0; b < B; ++b) {
      const int64_t start = wi ? at[b] : 0;
      if (start < 0 || (!circular && start > len - n) || (circular && n > 0 && len == 0))
        return Fail(ctx, "write index " + std::to_string(start) + " of sequence " + std::to_string(b) + " with " + std::to_string(n) +
                             " positions does not fit the cache's " + std::to_string(len) + (circular ? "" : " (mode linear)"));
      for (int64_t m = 0; m < mid; ++m)
        for (int64_t s = 0; s < n; ++s) {
          const int64_t pos = circular ? (start % len + s) % len : start + s;  // no overflow near INT64_MAX
          std::memcpy(static_cast<uint8_t*>(out->GetAddr()) + static_cast<size_t>(((b * mid + m) * len + pos) * inner) * elem,
                      static_cast<const uint8_t*>(update->GetAddr()) + static_cast<size_t>(((b * mid + m) * n + s) * inner) * elem,
                      static_cast<size_t>(inner) * elem);
        }
    }
    return GRAPH_SUCCESS;
  }
};

bool ConvPlan(const KernelContextBase* ctx, int64_t* k_out) {
  const Shape &xs = ctx->GetInputTensor(0)->GetShape(), &ws = ctx->GetInputTensor(1)->GetShape();
  if (xs.GetDimNum() != 3) return Fail(ctx, "input " + xs.ToString() + " must be [batch, channels, length]"), false;
  if (ws.GetDimNum() != 3 || ws.GetDim(1) != 1 || (ws.GetDim(0) >= 0 && xs.GetDim(1) >= 0 && ws.GetDim(0) != xs.GetDim(1)))
    return Fail(ctx, "weight " + ws.ToString() + " must be [channels " + std::to_string(xs.GetDim(1)) + ", 1, kernel]"), false;
  const int64_t k = ws.GetDim(2);
  if (k == 0) return Fail(ctx, "the kernel must be at least 1 long"), false;
  if (const Tensor* b = In(ctx, 2); b && (b->GetShape().GetDimNum() != 1 || (b->GetShape().GetDim(0) >= 0 && xs.GetDim(1) >= 0 &&
                                                                             b->GetShape().GetDim(0) != xs.GetDim(1))))
    return Fail(ctx, "bias " + b->GetShape().ToString() + " must be [channels " + std::to_string(xs.GetDim(1)) + "]"), false;
  if (const Tensor* p = In(ctx, 3)) {
    const Shape& ps = p->GetShape();
      if (ps.GetDimNum() != 3 || !Agree(ps.GetDim(0), xs.GetDim(0)) || !Agree(ps.GetDim(1), xs.GetDim(1)) || !Agree(ps.GetDim(2), k < 0 ? -1 : k - 1))
      return Fail(ctx, "past_state " + ps.ToString() + " must be [batch, channels, kernel - 1] = [" + std::to_string(xs.GetDim(0)) + ", " +
                           std::to_string(xs.GetDim(1)) + ", " + std::to_string(k < 0 ? -1 : k - 1) + "]"),
             false;
  }
  if (CheckOneOf(ctx, "activation", {"none", "silu", "swish"}) != GRAPH_SUCCESS) return false;
  *k_out = k;
  return true;
}

template <typename T>
void CausalConv(const T* x, const T* w, const T* bias, const T* past, int64_t B, int64_t C, int64_t L, int64_t k, bool silu, T* y, T* state) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  std::vector<A> line(static_cast<size_t>(k - 1 + L));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      const int64_t row = b * C + c;
      for (int64_t j = 0; j < k - 1; ++j) line[j] = past ? static_cast<A>(Load(past[row * (k - 1) + j])) : A(0);
      for (int64_t t = 0; t < L; ++t) line[k - 1 + t] = static_cast<A>(Load(x[row * L + t]));
      const A b0 = bias ? static_cast<A>(Load(bias[c])) : A(0);
      for (int64_t t = 0; t < L; ++t) {
        A s = b0;
        for (int64_t j = 0; j < k; ++j) s += static_cast<A>(Load(w[c * k + j])) * line[t + j];
        if (silu) s = s / (A(1) + std::exp(-s));
        y[row * L + t] = Store<T>(s);
      }
      for (int64_t j = 0; j < k - 1; ++j) state[row * (k - 1) + j] = Store<T>(line[L + j]);
    }
}

class CausalConvWithState : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Portable C for float32 and float64, the runtime's loop: each output sums its k taps over the
  // past state and the input in the same order, in the same precision.
  graphStatus Emit(EmitContext* ctx) override {
    int64_t k = 0;
    if (!ConvPlan(ctx, &k)) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType dt = x->GetDataType();
    if (dt != DT_FLOAT && dt != DT_DOUBLE)
      return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " CausalConvWithState");
    const Shape& xs = x->GetShape();
    const int64_t B = xs.GetDim(0), C = xs.GetDim(1), L = xs.GetDim(2);
    if (B < 0 || C < 0 || L < 0 || k < 0) return Fail(ctx, "the generated C needs the input's and weight's shapes known");
    const bool silu = std::string(ctx->GetAttrs()->GetStr("activation")) != "none";
    const bool state = ctx->GetComputeNodeOutputNum() > 1;
    const Tensor *bias = In(ctx, 2), *past = In(ctx, 3);
    if (B * C == 0) return GRAPH_SUCCESS;
    const std::string t = dt == DT_FLOAT ? "float" : "double", K = aot::IntLit(k), K1 = aot::IntLit(k - 1), LL = aot::IntLit(L);
    ctx->Include("<math.h>");
    std::string c = "{\n  const " + t + "* x = " + ctx->Input(0, t.c_str()) + ";\n  const " + t + "* w = " + ctx->Input(1, t.c_str()) + ";\n";
    c += "  const " + t + "* bias = " + (bias ? ctx->Input(aot::InputAt(ctx, 2), t.c_str()) : "0") + ";\n";
    c += "  const " + t + "* past = " + (past ? ctx->Input(aot::InputAt(ctx, 3), t.c_str()) : "0") + ";\n";
    c += "  " + t + "* y = " + ctx->Output(0, t.c_str()) + ";\n";
    c += "  " + t + "* state = " + (state ? ctx->Output(1, t.c_str()) : "0") + ";\n";
    // position p of a row's line: the past state's p-th value (zero without one), then the input
    c += "#define WEFT_LINE(row, p) ((p) < " + K1 + " ? (past ? past[(row) * " + K1 + " + (p)] : (" + t + ")0) : x[(row) * " + LL + " + (p) - " + K1 + "])\n";
    c += "  int64_t row, tt, j;\n  for (row = 0; row < " + aot::IntLit(B * C) + "; ++row) {\n    const int64_t ch = row % " + aot::IntLit(C) + ";\n";
    c += "    for (tt = 0; tt < " + LL + "; ++tt) {\n      " + t + " s = bias ? bias[ch] : (" + t + ")0;\n";
    c += "      for (j = 0; j < " + K + "; ++j) s += w[ch * " + K + " + j] * WEFT_LINE(row, tt + j);\n";
    if (silu) c += std::string("      s = s / (1 + ") + (dt == DT_FLOAT ? "expf" : "exp") + "(-s));\n";
    c += "      y[row * " + LL + " + tt] = s;\n    }\n";
    c += "    if (state)\n      for (j = 0; j < " + K1 + "; ++j) state[row * " + K1 + " + j] = WEFT_LINE(row, " + LL + " + j);\n  }\n#undef WEFT_LINE\n}\n";
    ctx->Run(c);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    int64_t k = 0;
    if (!ConvPlan(ctx, &k)) return GRAPH_FAILED;
    const Shape& xs = ctx->GetInputTensor(0)->GetShape();
    *ctx->GetOutputShape(0) = xs;
    if (ctx->GetComputeNodeOutputNum() > 1) *ctx->GetOutputShape(1) = Shape({xs.GetDim(0), xs.GetDim(1), k < 0 ? -1 : k - 1});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType t = ctx->GetInputDataType(0);
    for (size_t i = 1; i < 4; ++i)
      if (const Tensor* in = In(ctx, i); in && in->GetDataType() != t)
        return Fail(ctx, std::string(i == 1 ? "weight" : i == 2 ? "bias" : "past_state") + " is " + DataTypeName(in->GetDataType()) + "; input is " +
                             DataTypeName(t));
    for (size_t o = 0; o < ctx->GetComputeNodeOutputNum(); ++o)
      if (ctx->SetOutputDataType(o, t) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    int64_t k = 0;
    if (!ConvPlan(ctx, &k)) return GRAPH_FAILED;
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    const int64_t B = xs.GetDim(0), C = xs.GetDim(1), L = xs.GetDim(2);
    Tensor* y = ctx->MallocOutputTensor(0, xs, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const Shape ss({B, C, k - 1});
    void* state = nullptr;
    if (ctx->GetComputeNodeOutputNum() > 1) {
      Tensor* t = ctx->MallocOutputTensor(1, ss, x->GetDataType());
      if (!t) return GRAPH_FAILED;
      state = t->GetAddr();
    } else {
      state = ctx->MallocWorkSpace(std::max<size_t>(static_cast<size_t>(ss.GetShapeSize()) * DataTypeSize(x->GetDataType()), 1));
      if (!state) return GRAPH_FAILED;
    }
    const bool silu = std::string(ctx->GetAttrs()->GetStr("activation")) != "none";
    const Tensor *bias = In(ctx, 2), *past = In(ctx, 3);
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      CausalConv<T>(x->GetData<T>(), ctx->GetInputTensor(1)->GetData<T>(), bias ? bias->GetData<T>() : nullptr, past ? past->GetData<T>() : nullptr,
                    B, C, L, k, silu, y->GetData<T>(), static_cast<T*>(state));
    });
    return GRAPH_SUCCESS;
  }
};

struct Linear {
  int64_t B = -1, T = -1, Hq = 0, Hkv = 0, dk = -1, dv = -1, decay_w = 0, beta_w = 0;
  bool gated = false, delta = false;
};

bool LinearPlan(const KernelContextBase* ctx, Linear* l) {
  const RuntimeAttrs* at = ctx->GetAttrs();
  l->Hq = *at->GetInt("q_num_heads"), l->Hkv = *at->GetInt("kv_num_heads");
  if (l->Hq <= 0 || l->Hkv <= 0 || l->Hq % l->Hkv)
    return Fail(ctx, "q_num_heads (" + std::to_string(l->Hq) + ") must be a positive multiple of kv_num_heads (" + std::to_string(l->Hkv) + ")"), false;
  const std::string rule = at->GetStr("update_rule") ? at->GetStr("update_rule") : "";
  if (CheckOneOf(ctx, "update_rule", {"linear", "gated", "delta", "gated_delta"}) != GRAPH_SUCCESS) return false;
  l->gated = rule == "gated" || rule == "gated_delta";
  l->delta = rule == "delta" || rule == "gated_delta";
  const Tensor *decay = In(ctx, 4), *beta = In(ctx, 5);
  if (l->gated != (decay != nullptr)) return Fail(ctx, "update_rule '" + rule + "' " + (l->gated ? "needs" : "takes no") + " decay input"), false;
  if (l->delta != (beta != nullptr)) return Fail(ctx, "update_rule '" + rule + "' " + (l->delta ? "needs" : "takes no") + " beta input"), false;
  const Shape &qs = ctx->GetInputTensor(0)->GetShape(), &ks = ctx->GetInputTensor(1)->GetShape(), &vs = ctx->GetInputTensor(2)->GetShape();
  if (qs.GetDimNum() != 3 || ks.GetDimNum() != 3 || vs.GetDimNum() != 3)
    return Fail(ctx, "query " + qs.ToString() + ", key " + ks.ToString() + " and value " + vs.ToString() + " must be 3-D [B, T, heads * size]"), false;
  for (const Shape* sh : {&ks, &vs})
    if (!Agree(sh->GetDim(0), qs.GetDim(0)) || !Agree(sh->GetDim(1), qs.GetDim(1)))
      return Fail(ctx, "query " + qs.ToString() + ", key " + ks.ToString() + " and value " + vs.ToString() + " must agree in batch and length"), false;
  l->B = qs.GetDim(0), l->T = qs.GetDim(1);
  auto per = [&](int64_t d, int64_t h, const char* what, int64_t* out) {
    if (d >= 0 && d % h) return Fail(ctx, std::string(what) + "'s last dim " + std::to_string(d) + " is not a multiple of " + std::to_string(h)), false;
    *out = d < 0 ? -1 : d / h;
    return true;
  };
  int64_t kd = -1;
  if (!per(qs.GetDim(2), l->Hq, "query", &l->dk) || !per(ks.GetDim(2), l->Hkv, "key", &kd) || !per(vs.GetDim(2), l->Hkv, "value", &l->dv)) return false;
  if (!Agree(l->dk, kd)) return Fail(ctx, "query's head size " + std::to_string(l->dk) + " differs from key's " + std::to_string(kd)), false;
  if (l->dk < 0) l->dk = kd;
  if (const Tensor* p = In(ctx, 3)) {
    const Shape& ps = p->GetShape();
    if (ps.GetDimNum() != 4 || !Agree(ps.GetDim(0), l->B) || !Agree(ps.GetDim(1), l->Hkv) || !Agree(ps.GetDim(2), l->dk) || !Agree(ps.GetDim(3), l->dv))
      return Fail(ctx, "past_state " + ps.ToString() + " must be [B, kv_num_heads, " + std::to_string(l->dk) + ", " + std::to_string(l->dv) + "]"), false;
  }
  if (decay) {
    const Shape& ds = decay->GetShape();
    l->decay_w = ds.GetDimNum() == 3 ? ds.GetDim(2) : -2;
    if (ds.GetDimNum() != 3 || !Agree(ds.GetDim(0), l->B) || !Agree(ds.GetDim(1), l->T) ||
        (l->decay_w >= 0 && l->decay_w != l->Hkv && (l->dk < 0 || l->decay_w != l->Hkv * l->dk)))
      return Fail(ctx, "decay " + ds.ToString() + " must be [B, T, kv_num_heads] or [B, T, kv_num_heads * " + std::to_string(l->dk) + "]"), false;
  }
  if (beta) {
    const Shape& bs = beta->GetShape();
    l->beta_w = bs.GetDimNum() == 3 ? bs.GetDim(2) : -2;
    if (bs.GetDimNum() != 3 || !Agree(bs.GetDim(0), l->B) || !Agree(bs.GetDim(1), l->T) || (l->beta_w >= 0 && l->beta_w != l->Hkv && l->beta_w != 1))
      return Fail(ctx, "beta " + bs.ToString() + " must be [B, T, kv_num_heads] or [B, T, 1]"), false;
  }
  return true;
}

class LinearAttention : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Portable C of the runtime's recurrence, in float32 as it computes (float32 and float64
  // tensors), the same operations in the same order; the state lives in the present_state
  // scratch, in float32, and is copied to present_state at the end.
  graphStatus Emit(EmitContext* ctx) override {
    Linear l;
    if (!LinearPlan(ctx, &l)) return GRAPH_FAILED;
    const DataType dt = ctx->GetInputTensor(0)->GetDataType();
    if (dt != DT_FLOAT && dt != DT_DOUBLE) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " LinearAttention");
    for (size_t i = 1; i < 6; ++i)
      if (const Tensor* in = In(ctx, i); in && in->GetDataType() != dt)
        return Fail(ctx, "the generated C needs every input in query's type (" + std::string(DataTypeName(dt)) + ")");
    if (l.B < 0 || l.T < 0 || l.dk < 0 || l.dv < 0 || l.decay_w == -1 || l.beta_w == -1)
      return Fail(ctx, "the generated C needs the inputs' shapes known");
    const int64_t B = l.B, T = l.T, Hq = l.Hq, Hkv = l.Hkv, dk = l.dk, dv = l.dv, group = Hq / Hkv, ns = B * Hkv * dk * dv;
    const float given = *ctx->GetAttrs()->GetFloat("scale");
    const float scale = given != 0.f ? given : static_cast<float>(1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(dk, 1))));
    const std::string t = dt == DT_FLOAT ? "float" : "double";
    auto L = [](int64_t v) { return aot::IntLit(v); };
    ctx->Include("<math.h>");
    std::string c = "{\n  const " + t + "* q = " + ctx->Input(0, t.c_str()) + ";\n  const " + t + "* k = " + ctx->Input(1, t.c_str()) +
                    ";\n  const " + t + "* v = " + ctx->Input(2, t.c_str()) + ";\n";
    const char* names[] = {"", "", "", "past", "decay", "beta"};
    for (size_t i = 3; i < 6; ++i)  // decay and beta only where the update rule reads them
      if (i == 3 || In(ctx, i)) c += "  const " + t + "* " + names[i] + " = " + (In(ctx, i) ? ctx->Input(aot::InputAt(ctx, i), t.c_str()) : "0") + ";\n";
    c += "  " + t + "* y = " + ctx->Output(0, t.c_str()) + ";\n";
    c += "  " + t + "* present = " + (ctx->GetComputeNodeOutputNum() > 1 ? ctx->Output(1, t.c_str()) : "0") + ";\n";
    const uint64_t bytes = static_cast<uint64_t>(ns + dv) * sizeof(float);
    c += "  float* S = (float*)" + ctx->Scratch(static_cast<size_t>(std::max<uint64_t>(bytes, 16))) + ";\n  float* vt = S + " + L(ns) + ";\n";
    c += "  int64_t i, b, tt, h, d, m, qi;\n  for (i = 0; i < " + L(ns) + "; ++i) S[i] = past ? (float)past[i] : 0.f;\n";
    c += "  for (b = 0; b < " + L(B) + "; ++b)\n    for (tt = 0; tt < " + L(T) + "; ++tt)\n      for (h = 0; h < " + L(Hkv) + "; ++h) {\n";
    c += "        float* s = S + (b * " + L(Hkv) + " + h) * " + L(dk * dv) + ";\n";
    c += "        const " + t + "* kt = k + (b * " + L(T) + " + tt) * " + L(Hkv * dk) + " + h * " + L(dk) + ";\n";
    c += "        const " + t + "* vin = v + (b * " + L(T) + " + tt) * " + L(Hkv * dv) + " + h * " + L(dv) + ";\n";
    if (l.gated) {
      c += "        const " + t + "* g = decay + (b * " + L(T) + " + tt) * " + L(l.decay_w) + ";\n";
      c += "        for (d = 0; d < " + L(dk) + "; ++d) {\n          const float f = expf((float)g[" +
           (l.decay_w == Hkv ? std::string("h") : "h * " + L(dk) + " + d") + "]);\n";
      c += "          for (m = 0; m < " + L(dv) + "; ++m) s[d * " + L(dv) + " + m] *= f;\n        }\n";
    }
    c += "        for (m = 0; m < " + L(dv) + "; ++m) vt[m] = (float)vin[m];\n";
    if (l.delta) {
      c += "        {\n          const float bt = (float)beta[(b * " + L(T) + " + tt) * " + L(l.beta_w) + (l.beta_w == 1 ? "" : " + h") + "];\n";
      c += "          for (m = 0; m < " + L(dv) + "; ++m) {\n            float r = 0.f;\n";
      c += "            for (d = 0; d < " + L(dk) + "; ++d) r += s[d * " + L(dv) + " + m] * (float)kt[d];\n";
      c += "            vt[m] = bt * ((float)vin[m] - r);\n          }\n        }\n";
    }
    c += "        for (d = 0; d < " + L(dk) + "; ++d)\n          for (m = 0; m < " + L(dv) + "; ++m) s[d * " + L(dv) + " + m] += (float)kt[d] * vt[m];\n";
    c += "        for (qi = h * " + L(group) + "; qi < (h + 1) * " + L(group) + "; ++qi) {\n";
    c += "          const " + t + "* qt = q + (b * " + L(T) + " + tt) * " + L(Hq * dk) + " + qi * " + L(dk) + ";\n";
    c += "          " + t + "* o = y + (b * " + L(T) + " + tt) * " + L(Hq * dv) + " + qi * " + L(dv) + ";\n";
    c += "          for (m = 0; m < " + L(dv) + "; ++m) {\n            float acc = 0.f;\n";
    c += "            for (d = 0; d < " + L(dk) + "; ++d) acc += (float)qt[d] * s[d * " + L(dv) + " + m];\n";
    c += "            o[m] = (" + t + ")(" + aot::FloatLit(scale) + " * acc);\n          }\n        }\n      }\n";
    c += "  if (present)\n    for (i = 0; i < " + L(ns) + "; ++i) present[i] = (" + t + ")S[i];\n}\n";
    ctx->Run(c);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Linear l;
    if (!LinearPlan(ctx, &l)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({l.B, l.T, l.dv < 0 ? -1 : l.Hq * l.dv});
    if (ctx->GetComputeNodeOutputNum() > 1) *ctx->GetOutputShape(1) = Shape({l.B, l.Hkv, l.dk, l.dv});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType t = ctx->GetInputDataType(0);
    if (ctx->SetOutputDataType(0, t) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (ctx->GetComputeNodeOutputNum() > 1) {
      const Tensor* p = In(ctx, 3);
      return ctx->SetOutputDataType(1, p ? p->GetDataType() : t);
    }
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Linear l;
    if (!LinearPlan(ctx, &l)) return GRAPH_FAILED;
    const int64_t B = l.B, T = l.T, Hq = l.Hq, Hkv = l.Hkv, dk = l.dk, dv = l.dv, group = Hq / Hkv;
    auto widen = [&](const Tensor* t) {
      std::vector<float> v(static_cast<size_t>(t ? t->GetShapeSize() : 0));
      if (t) DispatchFloat(t->GetDataType(), [&](auto tag) {
          using E = decltype(tag);
          const E* p = t->GetData<E>();
          for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(Load(p[i]));
        });
      return v;
    };
    const std::vector<float> q = widen(ctx->GetInputTensor(0)), k = widen(ctx->GetInputTensor(1)), v = widen(ctx->GetInputTensor(2));
    const std::vector<float> decay = widen(In(ctx, 4)), beta = widen(In(ctx, 5));
    std::vector<float> state = In(ctx, 3) ? widen(In(ctx, 3)) : std::vector<float>(static_cast<size_t>(B * Hkv * dk * dv), 0.f);
    const float given = *ctx->GetAttrs()->GetFloat("scale");
    const float scale = given != 0.f ? given : static_cast<float>(1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(dk, 1))));
    std::vector<float> out(static_cast<size_t>(B * T * Hq * dv), 0.f), vt(static_cast<size_t>(dv));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < Hkv; ++h) {
          float* S = state.data() + (b * Hkv + h) * dk * dv;
          const float* kt = k.data() + (b * T + t) * Hkv * dk + h * dk;
          const float* vin = v.data() + (b * T + t) * Hkv * dv + h * dv;
          if (l.gated) {
            const float* g = decay.data() + (b * T + t) * l.decay_w;
            for (int64_t d = 0; d < dk; ++d) {
              const float f = std::exp(l.decay_w == Hkv ? g[h] : g[h * dk + d]);
              for (int64_t m = 0; m < dv; ++m) S[d * dv + m] *= f;
            }
          }
          for (int64_t m = 0; m < dv; ++m) vt[m] = vin[m];
          if (l.delta) {
            const float bt = beta[(b * T + t) * l.beta_w + (l.beta_w == 1 ? 0 : h)];
            for (int64_t m = 0; m < dv; ++m) {
              float r = 0.f;
              for (int64_t d = 0; d < dk; ++d) r += S[d * dv + m] * kt[d];
              vt[m] = bt * (vin[m] - r);
            }
          }
          for (int64_t d = 0; d < dk; ++d)
            for (int64_t m = 0; m < dv; ++m) S[d * dv + m] += kt[d] * vt[m];
          for (int64_t i = h * group; i < (h + 1) * group; ++i) {
            const float* qt = q.data() + (b * T + t) * Hq * dk + i * dk;
            float* o = out.data() + (b * T + t) * Hq * dv + i * dv;
            for (int64_t m = 0; m < dv; ++m) {
              float acc = 0.f;
              for (int64_t d = 0; d < dk; ++d) acc += qt[d] * S[d * dv + m];
              o[m] = scale * acc;
            }
          }
        }
    auto narrow = [&](const std::vector<float>& src, Tensor* dst) {
      DispatchFloat(dst->GetDataType(), [&](auto tag) {
        using E = decltype(tag);
        E* p = dst->GetData<E>();
        for (size_t i = 0; i < src.size(); ++i) p[i] = Store<E>(static_cast<typename Compute<E>::type>(src[i]));
      });
    };
    const DataType t = ctx->GetInputTensor(0)->GetDataType();
    Tensor* y = ctx->MallocOutputTensor(0, Shape({B, T, Hq * dv}), t);
    if (!y) return GRAPH_FAILED;
    narrow(out, y);
    if (ctx->GetComputeNodeOutputNum() > 1) {
      Tensor* ps = ctx->MallocOutputTensor(1, Shape({B, Hkv, dk, dv}), In(ctx, 3) ? In(ctx, 3)->GetDataType() : t);
      if (!ps) return GRAPH_FAILED;
      narrow(state, ps);
    }
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_state_ops(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("TensorScatter")
                     .INPUT(past_cache, NumericTypes())
                     .INPUT(update, NumericTypes())
                     .OPTIONAL_INPUT(write_indices, TensorType({DT_INT64}))
                     .OUTPUT(present_cache, NumericTypes())
                     .ATTR(axis, Int, -2)
                     .ATTR(mode, String, "linear")
                     .Build(),
                 MakeOpImpl<TensorScatter>("TensorScatter")});
  out.push_back({OpDefBuilder("CausalConvWithState")
                     .INPUT(input, "T")
                     .INPUT(weight, "T")
                     .OPTIONAL_INPUT(bias, "T")
                     .OPTIONAL_INPUT(past_state, "T")
                     .OUTPUT(output, "T")
                     .OUTPUT(present_state, "T")
                     .DATATYPE(T, FloatTypes())
                     .ATTR(activation, String, "none")
                     .Build(),
                 MakeOpImpl<CausalConvWithState>("CausalConvWithState")});
  out.push_back({OpDefBuilder("LinearAttention")
                     .INPUT(query, FloatTypes())
                     .INPUT(key, FloatTypes())
                     .INPUT(value, FloatTypes())
                     .OPTIONAL_INPUT(past_state, FloatTypes())
                     .OPTIONAL_INPUT(decay, FloatTypes())
                     .OPTIONAL_INPUT(beta, FloatTypes())
                     .OUTPUT(output, FloatTypes())
                     .OUTPUT(present_state, FloatTypes())
                     .REQUIRED_ATTR(q_num_heads, Int)
                     .REQUIRED_ATTR(kv_num_heads, Int)
                     .ATTR(scale, Float, 0.0)
                     .ATTR(update_rule, String, "gated_delta")
                     .ATTR(chunk_size, Int, 64)
                     .Build(),
                 MakeOpImpl<LinearAttention>("LinearAttention")});
}

}  // namespace weft::ops
