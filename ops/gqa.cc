// GroupQueryAttention (ONNX Runtime's com.microsoft operator; what its model builder writes for
// decoder language models): grouped-query attention over a key/value cache, float32.
//   query [B, S, N h] (or Q, K and V packed in it when key and value are absent), key and value
//   [B, S, Nkv h], past_key and past_value [B, Nkv, P, h], seqlens_k [B] (int32: each sequence's
//   length less one), total_sequence_length (int32 scalar), cos_cache and sin_cache [positions,
//   rotary / 2], position_ids [B, S], attention_bias [B or 1, N or 1, S, total_sequence_length].
// Sequence b holds total_b = seqlens_k[b] + 1 positions, past_b = max(total_b - S, 0) of them
// from before. present ([B, Nkv, L, h], L = max(P, total_sequence_length)) holds the past's first
// past_b positions, then this step's S keys/values (keys rotated first with do_rotary, at positions
// past_b + s or position_ids), then zeros. Query head i reads key/value head i / (N / Nkv); query s
// attends to keys t < total_b with t <= past_b + s (and t > past_b + s - local_window_size unless
// that is negative: a window of 0 takes no key, and the output is zeros): softmax(q.k * scale, soft-capped as softcap * tanh(x / softcap) when softcap > 0,
// plus attention_bias) over those keys, times their values.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

struct Gqa {
  int64_t batch = 0, seq = 0, heads = 0, kv_heads = 0, head = 0, past = 0, len = -1, total = -1;
  bool packed = false;
};

const Tensor* In(const KernelContextBase* ctx, size_t i) { return ctx->GetOptionalInputTensor(i); }

// Shapes and attributes; len stays -1 when total_sequence_length's value is not known yet.
bool Plan(const KernelContextBase* ctx, Gqa* g) {
  const RuntimeAttrs* a = ctx->GetAttrs();
  g->heads = *a->GetInt("num_heads"), g->kv_heads = *a->GetInt("kv_num_heads");
  if (g->heads <= 0 || g->kv_heads <= 0 || g->heads % g->kv_heads)
    return Fail(ctx, "num_heads and kv_num_heads must be positive, num_heads a multiple of kv_num_heads"), false;
  if (*a->GetInt("smooth_softmax") != 0 || In(ctx, 11)) return Fail(ctx, "smooth_softmax and head_sink are not supported"), false;
  if (*a->GetInt("qk_output") != 0) return Fail(ctx, "the qk output is not supported"), false;
  const Tensor *q = ctx->GetInputTensor(0), *k = In(ctx, 1), *v = In(ctx, 2), *pk = In(ctx, 3), *pv = In(ctx, 4);
  const Shape& qs = q->GetShape();
  if (qs.GetDimNum() != 3) return Fail(ctx, "query " + qs.ToString() + " must be [B, S, hidden]"), false;
  g->batch = qs.GetDim(0), g->seq = qs.GetDim(1);
  g->packed = !k && !v;
  if (!g->packed && (!k || !v)) return Fail(ctx, "key and value must both be given, or both absent (Q, K and V packed in query)"), false;
  const int64_t d = qs.GetDim(2), parts = g->packed ? g->heads + 2 * g->kv_heads : g->heads;
  if (d % parts || d == 0) return Fail(ctx, "query's hidden size " + std::to_string(d) + " is not a multiple of " + std::to_string(parts)), false;
  g->head = d / parts;
  const Shape want({g->batch, g->seq, g->kv_heads * g->head});
  for (const Tensor* t : {k, v})
    if (t && t->GetShape() != want) return Fail(ctx, "key and value must be " + want.ToString() + ", got " + t->GetShape().ToString()), false;
  if (!pk != !pv) return Fail(ctx, "past_key and past_value must both be given or both absent"), false;
  if (pk) {
    const Shape& ps = pk->GetShape();
    if (ps.GetDimNum() != 4 || ps.GetDim(0) != g->batch || ps.GetDim(1) != g->kv_heads || ps.GetDim(3) != g->head || pv->GetShape() != ps)
      return Fail(ctx, "past_key and past_value must both be [B " + std::to_string(g->batch) + ", kv_num_heads " + std::to_string(g->kv_heads) +
                           ", P, head " + std::to_string(g->head) + "], got " + ps.ToString() + " and " + pv->GetShape().ToString()),
             false;
    g->past = ps.GetDim(2);
  }
  const Tensor *sl = ctx->GetRequiredInputTensor(5), *tot = ctx->GetRequiredInputTensor(6);
  if (sl->GetShapeSize() != g->batch) return Fail(ctx, "seqlens_k must hold one value per sequence (" + std::to_string(g->batch) + ")"), false;
  if (tot->GetShapeSize() != 1) return Fail(ctx, "total_sequence_length must be a scalar"), false;
  if (tot->GetAddr()) {
    const int64_t total = tot->GetData<int32_t>()[0];
    if (total < 1) return Fail(ctx, "total_sequence_length is " + std::to_string(total)), false;
    g->total = total;
    g->len = std::max(g->past, total);
  }
  if (*a->GetInt("do_rotary") != 0) {
    const Tensor *c = In(ctx, 7), *s = In(ctx, 8);
    if (!c || !s) return Fail(ctx, "do_rotary needs cos_cache and sin_cache"), false;
    if (c->GetShape().GetDimNum() != 2 || c->GetShape() != s->GetShape() || 2 * c->GetShape().GetDim(1) > g->head)
      return Fail(ctx, "cos_cache and sin_cache must both be [positions, rotary / 2] with rotary at most the head size " + std::to_string(g->head)), false;
  }
  if (const Tensor* p = In(ctx, 9); p && p->GetShape() != Shape({g->batch, g->seq}))
    return Fail(ctx, "position_ids must be [B, S], got " + p->GetShape().ToString()), false;
  if (const Tensor* ab = In(ctx, 10)) {
    const Shape& bs = ab->GetShape();
    if (bs.GetDimNum() != 4 || (bs.GetDim(0) != 1 && bs.GetDim(0) != g->batch) || (bs.GetDim(1) != 1 && bs.GetDim(1) != g->heads) ||
        bs.GetDim(2) != g->seq || (g->total >= 0 && bs.GetDim(3) != g->total))
      return Fail(ctx, "attention_bias " + bs.ToString() + " must be [B or 1, num_heads or 1, S, total_sequence_length]"), false;
  }
  return true;
}

// The first 2 * half values of x turned by (cos, sin): halves, or pairs with interleaved.
void Turn(float* x, const float* cos, const float* sin, int64_t half, bool interleaved) {
  for (int64_t i = 0; i < half; ++i) {
    float* a = interleaved ? x + 2 * i : x + i;
    float* b = interleaved ? x + 2 * i + 1 : x + i + half;
    const float x1 = *a, x2 = *b;
    *a = x1 * cos[i] - x2 * sin[i];
    *b = x2 * cos[i] + x1 * sin[i];
  }
}

// What the items of one call share.
struct Attend {
  int64_t S, N, H, L, T, group, window;  // T: total_sequence_length, the bias rows' length
  const int64_t *total, *past;
  const float *q, *k, *v, *bias;  // rotated queries [B, S, N, H]; present [B, Nkv, L, H]
  int64_t bias_b, bias_n;
  float scale, cap;
  float* y;
};

// Items [i0, i1) of (sequence, query head, query position), `score` L floats of scratch.
WEFT_ISA_CLONES void AttendItems(const Attend& a, int64_t i0, int64_t i1, float* score) {
  const int64_t S = a.S, N = a.N, H = a.H, L = a.L;
  for (int64_t it = i0; it < i1; ++it) {
    const int64_t s = it % S, i = (it / S) % N, b = it / (S * N);
    const float* q = a.q + ((b * S + s) * N + i) * H;
    const float* kc = a.k + (b * (N / a.group) + i / a.group) * L * H;
    const float* vc = a.v + (b * (N / a.group) + i / a.group) * L * H;
    float* out = a.y + (b * S + s) * N * H + i * H;
    for (int64_t d = 0; d < H; ++d) out[d] = 0.f;
    const int64_t hi = std::min(a.total[b] - 1, a.past[b] + s);
    const int64_t lo = a.window >= 0 ? std::max<int64_t>(0, a.past[b] + s - a.window + 1) : 0;
    if (hi < lo) continue;
    const float* brow = a.bias ? a.bias + ((b * a.bias_b * (a.bias_n ? N : 1) + i * a.bias_n) * S + s) * a.T : nullptr;
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t t = lo; t <= hi; ++t) {
      const float* kr = kc + t * H;
      float x = 0.f;
      for (int64_t d = 0; d < H; ++d) x += q[d] * kr[d];
      x *= a.scale;
      if (a.cap > 0.f) x = std::tanh(x / a.cap) * a.cap;
      if (brow) x += brow[t];
      score[t] = x;
      top = std::max(top, x);
    }
    float sum = 0.f;
    for (int64_t t = lo; t <= hi; ++t) sum += score[t] = std::exp(score[t] - top);
    const float inv = 1.f / sum;
    for (int64_t t = lo; t <= hi; ++t) {
      const float w = score[t] * inv;
      const float* vr = vc + t * H;
      for (int64_t d = 0; d < H; ++d) out[d] += w * vr[d];
    }
  }
}

// The runtime's steps as C (weft aot): lengths checked, present filled, keys and queries turned,
// then each (sequence, head, position) attended in float with the same operations in the same
// order. Returns 1 where the runtime fails the run.
constexpr const char* kGqaC = R"C(typedef struct {
  int64_t B, S, N, NK, H, L, P, bias_t, half, positions, window, bias_b, bias_n, qrow, kvrow;
  int rotary, interleaved;
  float scale, cap;
  const float *q, *k, *v, *pk, *pv, *cos, *sin, *bias;
  const int32_t *seqlens, *total;
  const int64_t* pos_ids;
  float *y, *pres_k, *pres_v, *qrot, *score;
  int64_t* lens;
} weft_gqa_args;

static void weft_gqa_turn(float* x, const float* c, const float* s, int64_t half, int interleaved) {
  int64_t i;
  for (i = 0; i < half; ++i) {
    float* a = interleaved ? x + 2 * i : x + i;
    float* b = interleaved ? x + 2 * i + 1 : x + i + half;
    const float x1 = *a, x2 = *b;
    *a = x1 * c[i] - x2 * s[i];
    *b = x2 * c[i] + x1 * s[i];
  }
}

static int weft_gqa(const weft_gqa_args* a) {
  const int64_t B = a->B, S = a->S, N = a->N, NK = a->NK, H = a->H, L = a->L, P = a->P;
  int64_t* total = a->lens;
  int64_t* past = a->lens + B;
  const int64_t tot = (int64_t)a->total[0];
  int64_t b, s, i, h, o, t, d, it;
  if (tot < 1 || (P > tot ? P : tot) != L) return 1;
  if (a->bias && a->bias_t != tot) return 1;
  for (b = 0; b < B; ++b) {
    total[b] = (int64_t)a->seqlens[b] + 1;
    past[b] = total[b] - S > 0 ? total[b] - S : 0;
    if (total[b] < 1 || total[b] > tot || past[b] + S > L || past[b] > P) return 1;
  }
  if (a->rotary)
    for (b = 0; b < B; ++b)
      for (s = 0; s < S; ++s) {
        const int64_t p = a->pos_ids ? a->pos_ids[b * S + s] : past[b] + s;
        if (p < 0 || p >= a->positions) return 1;
      }
  for (it = 0; it < B * S; ++it)
    for (d = 0; d < N * H; ++d) a->qrot[it * N * H + d] = a->q[it * a->qrow + d];
  for (o = 0; o < 2; ++o)
    for (b = 0; b < B; ++b)
      for (h = 0; h < NK; ++h) {
        float* dst = (o ? a->pres_v : a->pres_k) + (b * NK + h) * L * H;
        const float* pastv = o ? a->pv : a->pk;
        const float* nw = o ? a->v : a->k;
        for (d = 0; d < past[b] * H; ++d) dst[d] = pastv[(b * NK + h) * P * H + d];
        for (s = 0; s < S; ++s)
          for (d = 0; d < H; ++d) dst[(past[b] + s) * H + d] = nw[(b * S + s) * a->kvrow + h * H + d];
        for (d = (past[b] + S) * H; d < L * H; ++d) dst[d] = 0.0f;
      }
  if (a->rotary)
    for (b = 0; b < B; ++b)
      for (s = 0; s < S; ++s) {
        const int64_t p = a->pos_ids ? a->pos_ids[b * S + s] : past[b] + s;
        for (i = 0; i < N; ++i) weft_gqa_turn(a->qrot + ((b * S + s) * N + i) * H, a->cos + p * a->half, a->sin + p * a->half, a->half, a->interleaved);
        for (h = 0; h < NK; ++h)
          weft_gqa_turn(a->pres_k + ((b * NK + h) * L + past[b] + s) * H, a->cos + p * a->half, a->sin + p * a->half, a->half, a->interleaved);
      }
  for (it = 0; it < B * N * S; ++it) {
    const int64_t si = it % S, hq = (it / S) % N, bi = it / (S * N), group = N / NK;
    const float* q = a->qrot + ((bi * S + si) * N + hq) * H;
    const float* kc = a->pres_k + (bi * NK + hq / group) * L * H;
    const float* vc = a->pres_v + (bi * NK + hq / group) * L * H;
    float* out = a->y + (bi * S + si) * N * H + hq * H;
    const int64_t last = total[bi] - 1 < past[bi] + si ? total[bi] - 1 : past[bi] + si;
    const int64_t first = a->window >= 0 ? (past[bi] + si - a->window + 1 > 0 ? past[bi] + si - a->window + 1 : 0) : 0;
    const float* brow = a->bias ? a->bias + ((bi * a->bias_b * (a->bias_n ? N : 1) + hq * a->bias_n) * S + si) * a->bias_t : 0;
    float top = -INFINITY, sum = 0.0f, inv;
    for (d = 0; d < H; ++d) out[d] = 0.0f;
    if (last < first) continue;
    for (t = first; t <= last; ++t) {
      const float* kr = kc + t * H;
      float x = 0.0f;
      for (d = 0; d < H; ++d) x += q[d] * kr[d];
      x *= a->scale;
      if (a->cap > 0.0f) x = tanhf(x / a->cap) * a->cap;
      if (brow) x += brow[t];
      a->score[t] = x;
      if (top < x) top = x;
    }
    for (t = first; t <= last; ++t) sum += a->score[t] = expf(a->score[t] - top);
    inv = 1.0f / sum;
    for (t = first; t <= last; ++t) {
      const float w = a->score[t] * inv;
      const float* vr = vc + t * H;
      for (d = 0; d < H; ++d) out[d] += w * vr[d];
    }
  }
  return 0;
}
)C";

class GroupQueryAttention : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // A call of weft_gqa above; the present outputs (or scratch of their size) as compiled.
  graphStatus Emit(EmitContext* ctx) override {
    Gqa g;
    if (!Plan(ctx, &g)) return GRAPH_FAILED;
    const RuntimeAttrs* at = ctx->GetAttrs();
    int64_t L = g.len;  // the present's length: the outputs' compiled shape, or a constant total length
    if (ctx->GetComputeNodeOutputNum() > 1) L = ctx->GetOutputTensor(1)->GetShape().GetDim(2);
    if (L < 0) return Fail(ctx, "the generated C needs the present outputs or a constant total_sequence_length (their length)");
    const int64_t B = g.batch, S = g.seq, N = g.heads, NK = g.kv_heads, H = g.head;
    const bool rotary = *at->GetInt("do_rotary") != 0;
    const Tensor* cos_t = In(ctx, 7);
    const Tensor* bias_t = In(ctx, 10);
    float scale = *at->GetFloat("scale");
    if (scale == 0.f) scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(H)));
    auto in = [&](size_t ir, const char* t) { return ctx->Input(aot::InputAt(ctx, ir), t); };
    auto scratch = [&](int64_t count, size_t elem) { return ctx->Scratch(static_cast<size_t>(std::max<int64_t>(count, 1)) * elem); };
    auto field = [](const std::string& name, const std::string& value) { return "  a." + name + " = " + value + ";\n"; };
    const int64_t qrow = g.packed ? (N + 2 * NK) * H : N * H;
    std::string r = "{\n  weft_gqa_args a;\n";
    r += field("B", aot::IntLit(B)) + field("S", aot::IntLit(S)) + field("N", aot::IntLit(N)) + field("NK", aot::IntLit(NK)) +
         field("H", aot::IntLit(H)) + field("L", aot::IntLit(L)) + field("P", aot::IntLit(g.past));
    r += field("bias_t", aot::IntLit(bias_t ? bias_t->GetShape().GetDim(3) : 0)) + field("half", aot::IntLit(rotary ? cos_t->GetShape().GetDim(1) : 0)) +
         field("positions", aot::IntLit(rotary ? cos_t->GetShape().GetDim(0) : 0)) + field("window", aot::IntLit(*at->GetInt("local_window_size"))) +
         field("bias_b", bias_t && bias_t->GetShape().GetDim(0) > 1 ? "1" : "0") + field("bias_n", bias_t && bias_t->GetShape().GetDim(1) > 1 ? "1" : "0") +
         field("qrow", aot::IntLit(qrow)) + field("kvrow", aot::IntLit(g.packed ? qrow : NK * H));
    r += field("rotary", rotary ? "1" : "0") + field("interleaved", *at->GetInt("rotary_interleaved") != 0 ? "1" : "0") +
         field("scale", aot::FloatLit(scale)) + field("cap", aot::FloatLit(*at->GetFloat("softcap")));
    r += field("q", in(0, "float")) + field("k", g.packed ? in(0, "float") + " + " + aot::IntLit(N * H) : in(1, "float")) +
         field("v", g.packed ? in(0, "float") + " + " + aot::IntLit((N + NK) * H) : in(2, "float")) +
         field("pk", g.past ? in(3, "float") : "0") + field("pv", g.past ? in(4, "float") : "0") + field("cos", rotary ? in(7, "float") : "0") +
         field("sin", rotary ? in(8, "float") : "0") + field("bias", bias_t ? in(10, "float") : "0") + field("seqlens", in(5, "int32_t")) +
         field("total", in(6, "int32_t")) + field("pos_ids", In(ctx, 9) ? in(9, "int64_t") : "0");
    r += field("y", ctx->Output(0, "float")) +
         field("pres_k", ctx->GetComputeNodeOutputNum() > 1 ? ctx->Output(1, "float") : "(float*)(void*)" + scratch(B * NK * L * H, sizeof(float))) +
         field("pres_v", ctx->GetComputeNodeOutputNum() > 2 ? ctx->Output(2, "float") : "(float*)(void*)" + scratch(B * NK * L * H, sizeof(float))) +
         field("qrot", "(float*)(void*)" + scratch(B * S * N * H, sizeof(float))) + field("score", "(float*)(void*)" + scratch(L, sizeof(float))) +
         field("lens", "(int64_t*)(void*)" + scratch(2 * B, sizeof(int64_t)));
    r += "  if (weft_gqa(&a)) return 1;\n}\n";
    ctx->Include("<math.h>");
    ctx->Helper("weft_gqa", kGqaC);
    ctx->Run(r);
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(InferShapeContext* ctx) override {
    Gqa g;
    if (!Plan(ctx, &g)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({g.batch, g.seq, g.heads * g.head});
    for (size_t o = 1; o < 3 && o < ctx->GetComputeNodeOutputNum(); ++o) *ctx->GetOutputShape(o) = Shape({g.batch, g.kv_heads, g.len, g.head});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (ctx->GetInputDataType(0) != DT_FLOAT) return Fail(ctx, std::string("query is ") + DataTypeName(ctx->GetInputDataType(0)) + "; float32 is supported");
    for (size_t o = 0; o < ctx->GetComputeNodeOutputNum(); ++o)
      if (ctx->SetOutputDataType(o, DT_FLOAT) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Gqa g;
    if (!Plan(ctx, &g)) return GRAPH_FAILED;
    const RuntimeAttrs* at = ctx->GetAttrs();
    const int64_t B = g.batch, S = g.seq, N = g.heads, NK = g.kv_heads, H = g.head, L = g.len, P = g.past;
    // Each sequence's length and past.
    auto* total = static_cast<int64_t*>(ctx->MallocWorkSpace(static_cast<size_t>(2 * std::max<int64_t>(B, 1)) * sizeof(int64_t)));
    if (!total) return GRAPH_FAILED;
    int64_t* past = total + B;
    const int32_t* sl = ctx->GetRequiredInputTensor(5)->GetData<int32_t>();
    for (int64_t b = 0; b < B; ++b) {
      total[b] = static_cast<int64_t>(sl[b]) + 1;
      past[b] = std::max<int64_t>(total[b] - S, 0);
      if (total[b] < 1 || total[b] > g.total || past[b] + S > L || past[b] > P)
        return Fail(ctx, "seqlens_k[" + std::to_string(b) + "] = " + std::to_string(sl[b]) + " does not fit " + std::to_string(S) +
                             " new positions after a past of " + std::to_string(P) + " in a present of " + std::to_string(L));
    }
    const bool rotary = *at->GetInt("do_rotary") != 0, interleaved = *at->GetInt("rotary_interleaved") != 0;
    const Tensor* cos_t = In(ctx, 7);
    const int64_t half = rotary ? cos_t->GetShape().GetDim(1) : 0, positions = rotary ? cos_t->GetShape().GetDim(0) : 0;
    const float* cosv = rotary ? cos_t->GetData<float>() : nullptr;
    const float* sinv = rotary ? In(ctx, 8)->GetData<float>() : nullptr;
    const Tensor* pos_t = In(ctx, 9);
    auto position = [&](int64_t b, int64_t s) { return pos_t ? pos_t->GetData<int64_t>()[b * S + s] : past[b] + s; };
    if (rotary)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s)
          if (position(b, s) < 0 || position(b, s) >= positions)
            return Fail(ctx, "position " + std::to_string(position(b, s)) + " is outside the rotary caches' " + std::to_string(positions) + " positions");

    Tensor* y = ctx->MallocOutputTensor(0, Shape({B, S, N * H}), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    const Shape cache({B, NK, L, H});
    float* pres[2];
    for (int o = 0; o < 2; ++o) {
      if (static_cast<size_t>(o + 1) < ctx->GetComputeNodeOutputNum()) {
        Tensor* t = ctx->MallocOutputTensor(o + 1, cache, DT_FLOAT);
        if (!t) return GRAPH_FAILED;
        pres[o] = t->GetData<float>();
      } else {
        pres[o] = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(cache.GetShapeSize()) * sizeof(float)));
        if (!pres[o]) return GRAPH_FAILED;
      }
    }
    // Rotated queries [B, S, N, H].
    const float* qin = ctx->GetInputTensor(0)->GetData<float>();
    const int64_t qrow = g.packed ? (N + 2 * NK) * H : N * H;
    auto* qrot = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(B * S * N * H) * sizeof(float)));
    if (!qrot) return GRAPH_FAILED;
    for (int64_t r = 0; r < B * S; ++r) std::memcpy(qrot + r * N * H, qin + r * qrow, static_cast<size_t>(N * H) * sizeof(float));
    // Present: the past's first past_b positions, this step's S, zeros after.
    const float* knew = g.packed ? qin + N * H : In(ctx, 1)->GetData<float>();
    const float* vnew = g.packed ? qin + (N + NK) * H : In(ctx, 2)->GetData<float>();
    const int64_t kvrow = g.packed ? qrow : NK * H;
    const float* pastv[2] = {P ? In(ctx, 3)->GetData<float>() : nullptr, P ? In(ctx, 4)->GetData<float>() : nullptr};
    graphStatus st = ctx->ParallelFor(2 * B * NK, 1, [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t o = j / (B * NK), b = (j / NK) % B, h = j % NK;
        float* dst = pres[o] + (b * NK + h) * L * H;
        if (past[b]) std::memcpy(dst, pastv[o] + (b * NK + h) * P * H, static_cast<size_t>(past[b] * H) * sizeof(float));
        for (int64_t s = 0; s < S; ++s)
          std::memcpy(dst + (past[b] + s) * H, (o ? vnew : knew) + (b * S + s) * kvrow + h * H, static_cast<size_t>(H) * sizeof(float));
        std::fill(dst + (past[b] + S) * H, dst + L * H, 0.f);
      }
    });
    if (st != GRAPH_SUCCESS) return st;
    if (rotary)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t p = position(b, s);
          for (int64_t i = 0; i < N; ++i) Turn(qrot + ((b * S + s) * N + i) * H, cosv + p * half, sinv + p * half, half, interleaved);
          for (int64_t h = 0; h < NK; ++h) Turn(pres[0] + ((b * NK + h) * L + past[b] + s) * H, cosv + p * half, sinv + p * half, half, interleaved);
        }
    float scale = *at->GetFloat("scale");
    if (scale == 0.f) scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(H)));
    const float cap = *at->GetFloat("softcap");
    const int64_t window = *at->GetInt("local_window_size");
    const Tensor* bias_t = In(ctx, 10);
    const float* bias = bias_t ? bias_t->GetData<float>() : nullptr;
    const int64_t bias_b = bias_t && bias_t->GetShape().GetDim(0) > 1 ? 1 : 0, bias_n = bias_t && bias_t->GetShape().GetDim(1) > 1 ? 1 : 0;
    const Attend job{S, N, H, L, g.total, N / NK, window, total, past, qrot, pres[0], pres[1], bias, bias_b, bias_n, scale, cap,
                     y->GetData<float>()};
    // Items of (sequence, query head, query position), one run of them per thread, each with its
    // own L floats of scores.
    const char* tv = ctx->GetOption("weft.intra_op_threads");
    const int64_t items = B * N * S, parts = std::max<int64_t>(1, std::min<int64_t>(tv ? std::max(1, std::atoi(tv)) : 1, items));
    auto* scores = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(parts * L) * sizeof(float)));
    if (!scores) return GRAPH_FAILED;
    return ctx->ParallelFor(parts, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t part = p0; part < p1; ++part) AttendItems(job, items * part / parts, items * (part + 1) / parts, scores + part * L);
    });
  }
};

}  // namespace

void WeftRegister_gqa(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("GroupQueryAttention")
                     .INPUT(query, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(key, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(value, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(past_key, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(past_value, TensorType({DT_FLOAT}))
                     .INPUT(seqlens_k, TensorType({DT_INT32}))
                     .INPUT(total_sequence_length, TensorType({DT_INT32}))
                     .OPTIONAL_INPUT(cos_cache, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(sin_cache, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(position_ids, TensorType({DT_INT64}))
                     .OPTIONAL_INPUT(attention_bias, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(head_sink, TensorType({DT_FLOAT}))
                     .OUTPUT(output, TensorType({DT_FLOAT}))
                     .OUTPUT(present_key, TensorType({DT_FLOAT}))
                     .OUTPUT(present_value, TensorType({DT_FLOAT}))
                     .REQUIRED_ATTR(num_heads, Int)
                     .REQUIRED_ATTR(kv_num_heads, Int)
                     .ATTR(scale, Float, 0.0)
                     .ATTR(softcap, Float, 0.0)
                     .ATTR(local_window_size, Int, -1)
                     .ATTR(do_rotary, Int, 0)
                     .ATTR(rotary_interleaved, Int, 0)
                     .ATTR(smooth_softmax, Int, 0)
                     .ATTR(qk_output, Int, 0)
                     .Build(),
                 MakeOpImpl<GroupQueryAttention>("GroupQueryAttention")});
}

}  // namespace weft::ops
