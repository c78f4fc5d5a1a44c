// Attention (ONNX opsets 23 and later): scaled dot-product attention with an optional mask,
// key/value cache, per-sequence valid key counts, causal and sliding-window masking, grouped query
// heads, soft-capping, and the scores as an optional fourth output.
//   Q [B, S, Hq * h] (heads from q_num_heads) or [B, Hq, S, h]; K [B, L, Hkv * h] or [B, Hkv, L, h];
//   V the same with head size hv. attn_mask: bool (true attends) or an additive float, broadcast
//   right-aligned to [B, Hq, S, T], its last dimension at most T (keys past it are masked);
//   past_key [B, Hkv, P, h], past_value [B, Hkv, P, hv]; nonpad_kv_seqlen [B] int64 (keys at or
//   after it are masked). T = P + L.
//   Y [B, S, Hq * hv] or [B, Hq, S, hv]; present_key and present_value [B, Hkv, T, h or hv]
//   (the past, then K and V); qk_matmul_output [B, Hq, S, T].
// Query head i reads key/value head i / (Hq / Hkv). A query's scores are q.k * scale (scale
// defaults to 1 / sqrt(h)), soft-capped as softcap * tanh(x / softcap) when softcap > 0, plus the
// mask's bias. Causal masking lets query s see key t only where t <= s + offset, the offset being
// P with a cache, nonpad_kv_seqlen[b] - S with valid counts and no cache, else 0; the window
// (left_window_size, right_window_size; -1 leaves a side open) masks keys outside
// [s + offset - left, s + offset + right]. A query whose keys are all masked gets zeros.
// qk_matmul_output_mode picks the fourth output: 0 and 1 the (soft-capped) scores, 2 with the
// bias added, 3 the probabilities. Computed in float32 whatever T (float16 and bfloat16 widened),
// the softmax included.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "aot_emit.h"
#include "dnnl_runner.h"
#include "op_util.h"
#include "vector_math.h"

namespace weft::ops {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kCountLimit = int64_t{1} << 62;  // nonpad_kv_seqlen's values are held within +-this

const Tensor* In(const KernelContextBase* ctx, size_t i) { return ctx->GetOptionalInputTensor(i); }

// Dims that may be unknown (-1) while the graph compiles.
bool Agree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }
int64_t Sum(int64_t a, int64_t b) { return a < 0 || b < 0 ? -1 : a + b; }
std::string Dim(int64_t d) { return d < 0 ? "?" : std::to_string(d); }

struct Att {
  bool rank3 = false;
  int64_t B = -1, S = -1, Hq = -1, Hkv = -1, h = -1, hv = -1, L = -1, P = 0, T = -1;
  bool past = false;
  int64_t mask_dims[4] = {1, 1, 1, 1};  // the mask's dims right-aligned to [B, Hq, S, T']
};

// Shapes and attributes; dims stay -1 where the graph has not fixed them yet.
bool Plan(const KernelContextBase* ctx, Att* a) {
  const RuntimeAttrs* at = ctx->GetAttrs();
  const Shape &qs = ctx->GetInputTensor(0)->GetShape(), &ks = ctx->GetInputTensor(1)->GetShape(), &vs = ctx->GetInputTensor(2)->GetShape();
  const size_t rank = qs.GetDimNum();
  if (rank != 3 && rank != 4) return Fail(ctx, "Q " + qs.ToString() + " must be 3-D [B, S, q_num_heads * head] or 4-D [B, heads, S, head]"), false;
  if (ks.GetDimNum() != rank || vs.GetDimNum() != rank)
    return Fail(ctx, "Q " + qs.ToString() + ", K " + ks.ToString() + " and V " + vs.ToString() + " must have the same rank"), false;
  const int64_t qh = *at->GetInt("q_num_heads"), kvh = *at->GetInt("kv_num_heads");
  if (qh < 0 || kvh < 0) return Fail(ctx, "q_num_heads and kv_num_heads must not be negative"), false;
  a->rank3 = rank == 3;
  a->B = qs.GetDim(0);
  if (!Agree(ks.GetDim(0), a->B) || !Agree(vs.GetDim(0), a->B))
    return Fail(ctx, "Q " + qs.ToString() + ", K " + ks.ToString() + " and V " + vs.ToString() + " must have the same batch"), false;
  if (a->rank3) {
    if (qh == 0 || kvh == 0) return Fail(ctx, "3-D inputs need q_num_heads and kv_num_heads"), false;
    a->Hq = qh, a->Hkv = kvh, a->S = qs.GetDim(1), a->L = ks.GetDim(1);
    auto per_head = [&](int64_t d, int64_t heads, const char* what, int64_t* out) {
      if (d >= 0 && d % heads)
        return Fail(ctx, std::string(what) + "'s last dim " + std::to_string(d) + " is not a multiple of its " + std::to_string(heads) + " heads"), false;
      *out = d < 0 ? -1 : d / heads;
      return true;
    };
    int64_t hk = -1;
    if (!per_head(qs.GetDim(2), qh, "Q", &a->h) || !per_head(ks.GetDim(2), kvh, "K", &hk) || !per_head(vs.GetDim(2), kvh, "V", &a->hv)) return false;
    if (!Agree(a->h, hk)) return Fail(ctx, "Q's head size " + Dim(a->h) + " differs from K's " + Dim(hk)), false;
    if (a->h < 0) a->h = hk;
    if (!Agree(ks.GetDim(1), vs.GetDim(1))) return Fail(ctx, "K " + ks.ToString() + " and V " + vs.ToString() + " must have the same length"), false;
  } else {
    a->Hq = qs.GetDim(1), a->Hkv = ks.GetDim(1), a->S = qs.GetDim(2), a->L = ks.GetDim(2), a->h = qs.GetDim(3), a->hv = vs.GetDim(3);
    if ((qh && !Agree(qh, a->Hq)) || (kvh && !Agree(kvh, a->Hkv)))
      return Fail(ctx, "q_num_heads " + std::to_string(qh) + " and kv_num_heads " + std::to_string(kvh) + " disagree with Q " + qs.ToString() +
                           " and K " + ks.ToString()),
             false;
    if (!Agree(ks.GetDim(3), a->h)) return Fail(ctx, "Q " + qs.ToString() + " and K " + ks.ToString() + " must have the same head size"), false;
    if (a->h < 0) a->h = ks.GetDim(3);
    if (!Agree(vs.GetDim(1), a->Hkv) || !Agree(vs.GetDim(2), a->L))
      return Fail(ctx, "V " + vs.ToString() + " must have K's heads and length (K " + ks.ToString() + ")"), false;
    if (a->Hkv < 0) a->Hkv = vs.GetDim(1);
    if (a->L < 0) a->L = vs.GetDim(2);
  }
  if (a->Hq == 0 || a->Hkv == 0) return Fail(ctx, "Q and K must have at least one head"), false;
  if (a->Hq > 0 && a->Hkv > 0 && a->Hq % a->Hkv)
    return Fail(ctx, "Q's " + std::to_string(a->Hq) + " heads are not a multiple of K's and V's " + std::to_string(a->Hkv)), false;
  const Tensor *pk = In(ctx, 4), *pv = In(ctx, 5);
  if (!pk != !pv) return Fail(ctx, "past_key and past_value must both be given or both absent"), false;
  a->past = pk != nullptr;
  if (pk) {
    const Shape &p = pk->GetShape(), &q = pv->GetShape();
    if (p.GetDimNum() != 4 || q.GetDimNum() != 4 || !Agree(p.GetDim(0), a->B) || !Agree(q.GetDim(0), a->B) || !Agree(p.GetDim(1), a->Hkv) ||
        !Agree(q.GetDim(1), a->Hkv) || !Agree(p.GetDim(2), q.GetDim(2)) || !Agree(p.GetDim(3), a->h) || !Agree(q.GetDim(3), a->hv))
      return Fail(ctx, "past_key " + p.ToString() + " and past_value " + q.ToString() + " must be [B " + Dim(a->B) + ", kv heads " + Dim(a->Hkv) +
                           ", P, " + Dim(a->h) + "] and [.., P, " + Dim(a->hv) + "]"),
             false;
    a->P = p.GetDim(2) >= 0 ? p.GetDim(2) : q.GetDim(2);
  }
  a->T = Sum(a->P, a->L);
  if (const Tensor* n = In(ctx, 6)) {
    if (pk) return Fail(ctx, "nonpad_kv_seqlen cannot be combined with past_key and past_value"), false;
    if (n->GetShape().GetDimNum() != 1 || !Agree(n->GetShape().GetDim(0), a->B))
      return Fail(ctx, "nonpad_kv_seqlen " + n->GetShape().ToString() + " must be [B " + Dim(a->B) + "]"), false;
  }
  if (const Tensor* m = In(ctx, 3)) {
    const Shape& ms = m->GetShape();
    const size_t mr = ms.GetDimNum();
    if (mr < 1 || mr > 4) return Fail(ctx, "attn_mask " + ms.ToString() + " must have rank 1 to 4"), false;
    const int64_t full[4] = {a->B, a->Hq, a->S, a->T};
    for (size_t k = 0; k < mr; ++k) a->mask_dims[4 - mr + k] = ms.GetDim(k);
    for (int k = 0; k < 3; ++k)
      if (a->mask_dims[k] != 1 && !Agree(a->mask_dims[k], full[k]))
        return Fail(ctx, "attn_mask " + ms.ToString() + " does not broadcast to [B " + Dim(a->B) + ", q heads " + Dim(a->Hq) + ", S " + Dim(a->S) +
                             ", keys]"),
               false;
    if (a->mask_dims[3] >= 0 && a->T >= 0 && a->mask_dims[3] > a->T)
      return Fail(ctx, "attn_mask " + ms.ToString() + " covers " + std::to_string(a->mask_dims[3]) + " keys; there are " + std::to_string(a->T)), false;
  }
  const int64_t mode = *at->GetInt("qk_matmul_output_mode");
  if (mode < 0 || mode > 3) return Fail(ctx, "qk_matmul_output_mode " + std::to_string(mode) + " must be 0, 1, 2 or 3"), false;
  // ONNX's element type codes: float 1, float16 10, double 11, bfloat16 16 (0: not given).
  const int64_t sp = *at->GetInt("softmax_precision");
  if (sp != 0 && sp != 1 && sp != 10 && sp != 11 && sp != 16)
    return Fail(ctx, "softmax_precision " + std::to_string(sp) + " is not an ONNX float type (1, 10, 11 or 16)"), false;
  if (const float c = *at->GetFloat("softcap"); !(c >= 0.f)) return Fail(ctx, "softcap " + std::to_string(c) + " must not be negative"), false;
  if (*at->GetInt("left_window_size") < -1 || *at->GetInt("right_window_size") < -1)
    return Fail(ctx, "left_window_size and right_window_size must be -1 (no bound) or not negative"), false;
  return true;
}

// Where head `hd` of sequence `b` starts, and the step between its positions, in elements.
struct View {
  const float* p = nullptr;
  int64_t sb = 0, sh = 0, ss = 0;
  const float* At(int64_t b, int64_t hd, int64_t s) const { return p + b * sb + hd * sh + s * ss; }
};

// [B, H, len, d] as stored: 3-D [B, len, H * d] or 4-D [B, H, len, d].
View ViewOf(const float* p, bool rank3, int64_t H, int64_t len, int64_t d) {
  return rank3 ? View{p, len * H * d, d, H * d} : View{p, H * len * d, len * d, d};
}

// The float32 values of n elements of type dt at p (p itself when dt is float32, else widened
// into `scratch`).
const float* Widened(const void* p, int64_t n, DataType dt, std::vector<float>* scratch) {
  if (dt == DT_FLOAT) return static_cast<const float*>(p);
  scratch->resize(static_cast<size_t>(std::max<int64_t>(n, 1)));
  if (dt == DT_FLOAT16) {
    const auto* s = static_cast<const float16*>(p);
    for (int64_t i = 0; i < n; ++i) (*scratch)[i] = static_cast<float>(s[i]);
  } else {
    const auto* s = static_cast<const bfloat16*>(p);
    for (int64_t i = 0; i < n; ++i) (*scratch)[i] = static_cast<float>(s[i]);
  }
  return scratch->data();
}
const float* Widened(const Tensor* t, std::vector<float>* scratch) { return Widened(t->GetAddr(), t->GetShapeSize(), t->GetDataType(), scratch); }

void Narrow(const float* src, int64_t n, DataType dt, void* dst) {
  if (dt == DT_FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else if (dt == DT_FLOAT16) {
    for (int64_t i = 0; i < n; ++i) static_cast<float16*>(dst)[i] = float16(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) static_cast<bfloat16*>(dst)[i] = bfloat16(src[i]);
  }
}

// Copies the heads of a [B, H, len, d] view (elements of `elem` bytes at `src` with strides in
// elements) into rows [at, at + len) of a contiguous [B, H, total, d].
void CopyHeads(const uint8_t* src, bool rank3, int64_t B, int64_t H, int64_t len, int64_t d, size_t elem, uint8_t* dst, int64_t total, int64_t at) {
  const int64_t sb = rank3 ? len * H * d : H * len * d, sh = rank3 ? d : len * d, ss = rank3 ? H * d : d;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hd = 0; hd < H; ++hd)
      for (int64_t s = 0; s < len; ++s)
        std::memcpy(dst + static_cast<size_t>(((b * H + hd) * total + at + s) * d) * elem, src + static_cast<size_t>(b * sb + hd * sh + s * ss) * elem,
                    static_cast<size_t>(d) * elem);
}

// What the items of one run share.
struct Job {
  Att a;
  View q, k, v;
  float scale = 1.f, cap = 0.f;
  bool causal = false;
  int64_t left = -1, right = -1, mode = 0;
  // the mask: bool bytes or float32 values, strides over [B, Hq, S, T'] (0 where broadcast)
  const uint8_t* mask_bool = nullptr;
  const float* mask_add = nullptr;
  int64_t ms[4] = {0, 0, 0, 0}, mask_len = 0;
  const int64_t* nonpad = nullptr;
  DataType dt = DT_FLOAT;
  void* y = nullptr;   // Y as stored (type dt)
  void* qk = nullptr;  // qk_matmul_output, or null
  bool has_bias() const { return mask_bool || mask_add || causal || nonpad || left >= 0 || right >= 0; }
};

// The bias of query row s of (b, hq) over the T keys into `bias`; returns its largest value. In
// three passes the compiler vectorizes: the mask's row (or zeros), then -inf outside the keys the
// row may see (one interval: causal, the valid count and the window each bound it), then the
// maximum.
WEFT_ISA_CLONES float BiasRow(const Job& j, int64_t b, int64_t hq, int64_t s, float* bias) {
  const int64_t T = j.a.T;
  // A count far outside [0, T] (a hostile one) is held within +-2^62, where every comparison
  // below comes out as for the count itself and no sum overflows.
  const int64_t count = j.nonpad ? std::min(std::max(j.nonpad[b], -kCountLimit), kCountLimit) : T;
  const int64_t offset = j.a.past ? j.a.P : j.nonpad ? count - j.a.S : 0;
  const int64_t valid = count;
  const int64_t row = b * j.ms[0] + hq * j.ms[1] + s * j.ms[2];
  const int64_t stride = j.ms[3];
  const int64_t masked = j.mask_bool || j.mask_add ? std::min(T, j.mask_len) : T;  // keys the mask covers
  if (j.mask_add) {
    const float* m = j.mask_add + row;
    if (stride == 1) std::copy(m, m + masked, bias);
    else
      for (int64_t t = 0; t < masked; ++t) bias[t] = m[t * stride];
  } else if (j.mask_bool) {
    const uint8_t* m = j.mask_bool + row;
#pragma omp simd
    for (int64_t t = 0; t < masked; ++t) bias[t] = m[t * stride] ? 0.f : kNegInf;
  } else {
    std::fill(bias, bias + masked, 0.f);
  }
  std::fill(bias + masked, bias + T, kNegInf);  // keys past a shorter mask
  // The keys t the row may see: diff = s + offset - t, causal wants diff >= 0, the window
  // diff <= left and -diff <= right, and t < valid.
  const int64_t at = s + offset;
  int64_t lo = 0, hi = std::min(T, valid);  // [lo, hi)
  if (j.causal) hi = std::min(hi, at + 1);
  if (j.right >= 0 && j.right < hi - at - 1) hi = at + j.right + 1;  // compared first: a window may be huge
  if (j.left >= 0 && j.left < at) lo = at - j.left;
  hi = std::max<int64_t>(hi, 0);
  lo = std::min(std::max<int64_t>(lo, 0), T);
  if (lo >= hi) {
    std::fill(bias, bias + T, kNegInf);
    return kNegInf;
  }
  std::fill(bias, bias + lo, kNegInf);
  std::fill(bias + hi, bias + T, kNegInf);
  float top = kNegInf;
#pragma omp simd reduction(max : top)
  for (int64_t t = lo; t < hi; ++t) top = bias[t] > top ? bias[t] : top;
  return top;
}

WEFT_ISA_CLONES void SoftmaxInPlace(float* x, int64_t n) {
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t t = 0; t < n; ++t) m = x[t] > m ? x[t] : m;
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t t = 0; t < n; ++t) {
    const float e = vmath::Exp(x[t] - m);
    x[t] = e;
    sum += e;
  }
  const float inv = 1.f / sum;
#pragma omp simd
  for (int64_t t = 0; t < n; ++t) x[t] *= inv;
}

// out[t] = scale * q . k_t over T keys `ldk` floats apart.
WEFT_ISA_CLONES void Dots(const float* q, const float* k, int64_t ldk, int64_t T, int64_t h, float scale, float* out) {
  for (int64_t t = 0; t < T; ++t) {
    const float* kt = k + t * ldk;
    float acc = 0.f;
#pragma omp simd reduction(+ : acc)
    for (int64_t d = 0; d < h; ++d) acc += q[d] * kt[d];
    out[t] = acc * scale;
  }
}

// y = sum over t of p[t] * v_t (values `ldv` floats apart).
WEFT_ISA_CLONES void Combine(const float* p, const float* v, int64_t ldv, int64_t T, int64_t hv, float* y) {
  for (int64_t d = 0; d < hv; ++d) y[d] = 0.f;
  for (int64_t t = 0; t < T; ++t) {
    const float w = p[t];
    const float* vt = v + t * ldv;
#pragma omp simd
    for (int64_t d = 0; d < hv; ++d) y[d] += w * vt[d];
  }
}

// Query rows [s0, s1) of (b, hq): scores, bias, softmax, times V. `sc` holds (s1 - s0) * T
// floats, `bias` T, `yrow` (s1 - s0) * hv (for a Y that is not float32).
bool RunItem(const Job& j, int64_t b, int64_t hq, int64_t s0, int64_t s1, float* sc, float* bias, float* yrow) {
  const Att& a = j.a;
  const int64_t rows = s1 - s0, T = a.T, hk = hq / (a.Hq / a.Hkv);
  // A few query rows (decoding a token at a time): dot products, which a library GEMM's setup
  // would outweigh.
  const bool few = rows <= 2;
  if (T > 0 && a.h > 0 && few) {
    for (int64_t r = 0; r < rows; ++r) Dots(j.q.At(b, hq, s0 + r), j.k.At(b, hk, 0), j.k.ss, T, a.h, j.scale, sc + r * T);
  } else if (T > 0 && a.h > 0) {
    if (dnnl_sgemm('N', 'T', rows, T, a.h, j.scale, j.q.At(b, hq, s0), j.q.ss, j.k.At(b, hk, 0), j.k.ss, 0.f, sc, T) != dnnl_success) return false;
  } else {
    std::fill(sc, sc + rows * T, 0.f);
  }
  auto store = [&](int64_t s, const float* row) {
    Narrow(row, T, j.dt, static_cast<uint8_t*>(j.qk) + static_cast<size_t>(((b * a.Hq + hq) * a.S + s) * T) * DataTypeSize(j.dt));
  };
  for (int64_t s = s0; s < s1; ++s) {
    float* x = sc + (s - s0) * T;
    if (j.cap > 0.f)
      for (int64_t t = 0; t < T; ++t) x[t] = j.cap * std::tanh(x[t] / j.cap);
    if (j.qk && j.mode <= 1) store(s, x);
    bool none = T == 0;
    if (j.has_bias()) {
      none = BiasRow(j, b, hq, s, bias) == kNegInf;
#pragma omp simd
      for (int64_t t = 0; t < T; ++t) x[t] += bias[t];
    }
    if (j.qk && j.mode == 2) store(s, x);
    if (none) std::fill(x, x + T, 0.f);
    else SoftmaxInPlace(x, T);
    if (j.qk && j.mode == 3) store(s, x);
  }
  // Y rows: [B, S, Hq * hv] or [B, Hq, S, hv].
  const int64_t ldy = a.rank3 ? a.Hq * a.hv : a.hv;
  const int64_t y0 = a.rank3 ? (b * a.S + s0) * a.Hq * a.hv + hq * a.hv : ((b * a.Hq + hq) * a.S + s0) * a.hv;
  const bool direct = j.dt == DT_FLOAT;
  float* out = direct ? static_cast<float*>(j.y) + y0 : yrow;
  const int64_t ldo = direct ? ldy : a.hv;
  if (a.hv > 0) {
    if (T > 0 && few) {
      for (int64_t r = 0; r < rows; ++r) Combine(sc + r * T, j.v.At(b, hk, 0), j.v.ss, T, a.hv, out + r * ldo);
    } else if (T > 0) {
      if (dnnl_sgemm('N', 'N', rows, a.hv, T, 1.f, sc, T, j.v.At(b, hk, 0), j.v.ss, 0.f, out, ldo) != dnnl_success) return false;
    } else {
      for (int64_t r = 0; r < rows; ++r) std::fill(out + r * ldo, out + r * ldo + a.hv, 0.f);
    }
  }
  if (!direct)
    for (int64_t r = 0; r < rows; ++r)
      Narrow(yrow + r * a.hv, a.hv, j.dt, static_cast<uint8_t*>(j.y) + static_cast<size_t>(y0 + r * ldy) * DataTypeSize(j.dt));
  return true;
}

class AttentionOp : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Portable C of the runtime's arithmetic for float32 tensors, one query row at a time: scores
  // (soft-capped), the row's bias (mask, causal, window, valid count), the softmax in float32
  // and the weighted sum of the values. The present key and value are assembled as the runtime
  // does (the past, then K and V), in the outputs or in scratch.
  graphStatus Emit(EmitContext* ctx) override {
    Att a;
    if (!Plan(ctx, &a)) return GRAPH_FAILED;
    if (ctx->GetInputTensor(0)->GetDataType() != DT_FLOAT)
      return Fail(ctx, std::string("the generated C has float32 Attention only; Q is ") + DataTypeName(ctx->GetInputTensor(0)->GetDataType()));
    const Tensor* mask = In(ctx, 3);
    if (mask && mask->GetDataType() != DT_BOOL && mask->GetDataType() != DT_FLOAT)
      return Fail(ctx, std::string("the generated C takes a bool or float32 attn_mask, not ") + DataTypeName(mask->GetDataType()));
    for (int64_t d : {a.B, a.S, a.Hq, a.Hkv, a.h, a.hv, a.L, a.P, a.T, a.mask_dims[0], a.mask_dims[1], a.mask_dims[2], a.mask_dims[3]})
      if (d < 0) return Fail(ctx, "the generated C needs the inputs' shapes known");
    const RuntimeAttrs* at = ctx->GetAttrs();
    const float given = *at->GetFloat("scale");
    const float scale = given != 0.f ? given : static_cast<float>(1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(a.h, 1))));
    const float cap = *at->GetFloat("softcap");
    const bool causal = *at->GetInt("is_causal") != 0;
    const int64_t left = *at->GetInt("left_window_size"), right = *at->GetInt("right_window_size"), mode = *at->GetInt("qk_matmul_output_mode");
    const size_t outs = ctx->GetComputeNodeOutputNum();
    const bool nonpad = In(ctx, 6) != nullptr;
    const bool biased = mask || causal || nonpad || left >= 0 || right >= 0;
    auto L = [](int64_t v) { return aot::IntLit(v); };
    auto in = [&](size_t i) { return ctx->Input(aot::InputAt(ctx, i), "float"); };
    ctx->Include("<math.h>");
    ctx->Include("<string.h>");
    ctx->Include("<stdint.h>");
    std::string c = "{\n  const float* q = " + in(0) + ";\n  float* y = " + ctx->Output(0, "float") + ";\n";
    c += "  float* qk = " + (outs > 3 ? ctx->Output(3, "float") : std::string("0")) + ";\n";
    // The keys and values read: K and V as given, or the present tensors [B, Hkv, T, d].
    const uint64_t present_k = static_cast<uint64_t>(a.B * a.Hkv * a.T * a.h), present_v = static_cast<uint64_t>(a.B * a.Hkv * a.T * a.hv);
    const bool own_k = a.past && outs < 2, own_v = a.past && outs < 3;
    const uint64_t scratch = (static_cast<uint64_t>(a.T) + (own_k ? present_k : 0) + (own_v ? present_v : 0)) * sizeof(float);
    c += "  float* sc = (float*)" + ctx->Scratch(static_cast<size_t>(std::max<uint64_t>(scratch, 16))) + ";\n";
    c += std::string("  int64_t b, hq, s, t, d") + (a.past || outs > 1 ? ", i" : "") + ";\n";
    int64_t kst[3], vst[3];  // strides (sequence, head, position) of the keys and values read
    for (int o = 0; o < 2; ++o) {
      const int64_t d = o ? a.hv : a.h;
      const std::string name = o ? "vv" : "kk";
      int64_t* st = o ? vst : kst;
      const bool own = o ? own_v : own_k;
      const bool output = outs > static_cast<size_t>(o + 1);
      if (!a.past && !output) {
        c += "  const float* " + name + " = " + in(1 + o) + ";\n";
        const View w = ViewOf(nullptr, a.rank3, a.Hkv, a.L, d);
        st[0] = w.sb, st[1] = w.sh, st[2] = w.ss;
        continue;
      }
      // [B, Hkv, T, d]: the past's rows, then this call's (3-D [B, L, Hkv * d] or 4-D).
      c += "  float* " + name + " = " + (own ? "sc + " + L(a.T + (o && own_k ? static_cast<int64_t>(present_k) : 0)) : ctx->Output(1 + o, "float")) + ";\n";
      const View w = ViewOf(nullptr, a.rank3, a.Hkv, a.L, d);
      c += "  for (b = 0; b < " + L(a.B) + "; ++b)\n    for (i = 0; i < " + L(a.Hkv) + "; ++i) {\n";
      if (a.past)
        c += "      memcpy(" + name + " + (b * " + L(a.Hkv) + " + i) * " + L(a.T * d) + ", " + in(4 + o) + " + (b * " + L(a.Hkv) + " + i) * " +
             L(a.P * d) + ", " + L(a.P * d) + " * sizeof(float));\n";
      c += "      for (t = 0; t < " + L(a.L) + "; ++t)\n        memcpy(" + name + " + ((b * " + L(a.Hkv) + " + i) * " + L(a.T) + " + " + L(a.P) +
           " + t) * " + L(d) + ", " + in(1 + o) + " + b * " + L(w.sb) + " + i * " + L(w.sh) + " + t * " + L(w.ss) + ", " + L(d) +
           " * sizeof(float));\n    }\n";
      const View p = ViewOf(nullptr, false, a.Hkv, a.T, d);
      st[0] = p.sb, st[1] = p.sh, st[2] = p.ss;
    }
    const View qv = ViewOf(nullptr, a.rank3, a.Hq, a.S, a.h);
    const int64_t group = a.Hq / a.Hkv;
    c += "  for (b = 0; b < " + L(a.B) + "; ++b)\n    for (hq = 0; hq < " + L(a.Hq) + "; ++hq)\n      for (s = 0; s < " + L(a.S) + "; ++s) {\n";
    c += "        const float* qr = q + b * " + L(qv.sb) + " + hq * " + L(qv.sh) + " + s * " + L(qv.ss) + ";\n";
    c += "        const float* kb = kk + b * " + L(kst[0]) + " + (hq / " + L(group) + ") * " + L(kst[1]) + ";\n";
    c += "        const float* vb = vv + b * " + L(vst[0]) + " + (hq / " + L(group) + ") * " + L(vst[1]) + ";\n";
    c += "        float* yr = y + " + (a.rank3 ? "(b * " + L(a.S) + " + s) * " + L(a.Hq * a.hv) + " + hq * " + L(a.hv) : "((b * " + L(a.Hq) + " + hq) * " + L(a.S) + " + s) * " + L(a.hv)) + ";\n";
    c += "        float* qkr = qk ? qk + ((b * " + L(a.Hq) + " + hq) * " + L(a.S) + " + s) * " + L(a.T) + " : 0;\n";
    c += "        float m = -INFINITY, sum = 0.f, inv;\n";
    if (biased) {
      // The keys the row may see: t < valid, t <= s + offset when causal, within the window.
      const std::string counts = nonpad ? ctx->Input(aot::InputAt(ctx, 6), "int64_t") : std::string();
      const std::string offset = a.past ? L(a.P) : nonpad ? "(count - " + L(a.S) + ")" : "0";
      c += "        float top = -INFINITY;\n";
      if (nonpad)  // held within +-2^62 as the runtime holds it: no sum below overflows
        c += "        const int64_t count = " + counts + "[b] < -" + L(kCountLimit) + " ? -" + L(kCountLimit) + " : " + counts + "[b] > " +
             L(kCountLimit) + " ? " + L(kCountLimit) + " : " + counts + "[b];\n";
      if (causal || left >= 0 || right >= 0) c += "        const int64_t pos = s + " + offset + ";\n";
      c += "        const int64_t valid = " + (nonpad ? std::string("count") : L(a.T)) + ";\n";
    }
    c += "        for (t = 0; t < " + L(a.T) + "; ++t) {\n          const float* kt = kb + t * " + L(kst[2]) + ";\n          float acc = 0.f, x" + (biased ? ", bias = 0.f" : "") + ";\n";
    c += "          for (d = 0; d < " + L(a.h) + "; ++d) acc += qr[d] * kt[d];\n          x = acc * " + aot::FloatLit(scale) + ";\n";
    if (cap > 0.f) c += "          x = " + aot::FloatLit(cap) + " * tanhf(x / " + aot::FloatLit(cap) + ");\n";
    if (mode <= 1) c += "          if (qkr) qkr[t] = x;\n";
    if (biased) {
      if (mask) {
        int64_t ms[4], stride = 1;
        const int64_t full[4] = {a.B, a.Hq, a.S, a.mask_dims[3]};
        for (int k = 3; k >= 0; --k) {
          ms[k] = a.mask_dims[k] == 1 && full[k] != 1 ? 0 : stride;
          stride *= a.mask_dims[k];
        }
        const std::string idx = "b * " + L(ms[0]) + " + hq * " + L(ms[1]) + " + s * " + L(ms[2]) + " + t * " + L(ms[3]);
        const std::string mp = mask->GetDataType() == DT_BOOL ? ctx->Input(aot::InputAt(ctx, 3), "uint8_t") : in(3);
        c += "          if (t >= " + L(std::min(a.T, a.mask_dims[3])) + ") bias = -INFINITY;\n";
        c += mask->GetDataType() == DT_BOOL ? "          else if (!" + mp + "[" + idx + "]) bias = -INFINITY;\n" : "          else bias = " + mp + "[" + idx + "];\n";
      }
      std::string hidden = "t >= valid";
      if (causal) hidden += " || t > pos";
      if (right >= 0) hidden += " || t - pos > " + L(right);
      if (left >= 0) hidden += " || pos - t > " + L(left);
      c += "          if (" + hidden + ") bias = -INFINITY;\n          if (bias > top) top = bias;\n          x += bias;\n";
    }
    if (mode == 2) c += "          if (qkr) qkr[t] = x;\n";
    c += "          sc[t] = x;\n          if (x > m) m = x;\n        }\n";
    // A row whose keys are all masked (or no keys): zeros.
    c += std::string("        if (") + (biased ? "top == -INFINITY" : L(a.T) + " == 0") + ") {\n          for (t = 0; t < " + L(a.T) +
         "; ++t) sc[t] = 0.f;\n        } else {\n";
    c += "          for (t = 0; t < " + L(a.T) + "; ++t) {\n            sc[t] = expf(sc[t] - m);\n            sum += sc[t];\n          }\n";
    c += "          inv = 1.f / sum;\n          for (t = 0; t < " + L(a.T) + "; ++t) sc[t] *= inv;\n        }\n";
    if (mode == 3) c += "        if (qkr) memcpy(qkr, sc, " + L(a.T) + " * sizeof(float));\n";
    c += "        for (d = 0; d < " + L(a.hv) + "; ++d) yr[d] = 0.f;\n";
    c += "        for (t = 0; t < " + L(a.T) + "; ++t) {\n          const float w = sc[t];\n          const float* vt = vb + t * " + L(vst[2]) +
         ";\n          for (d = 0; d < " + L(a.hv) + "; ++d) yr[d] += w * vt[d];\n        }\n      }\n";
    c += "}\n";
    ctx->Run(c);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Att a;
    if (!Plan(ctx, &a)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = a.rank3 ? Shape({a.B, a.S, a.Hq < 0 || a.hv < 0 ? -1 : a.Hq * a.hv}) : Shape({a.B, a.Hq, a.S, a.hv});
    const size_t outs = ctx->GetComputeNodeOutputNum();
    if (outs > 1) *ctx->GetOutputShape(1) = Shape({a.B, a.Hkv, a.T, a.h});
    if (outs > 2) *ctx->GetOutputShape(2) = Shape({a.B, a.Hkv, a.T, a.hv});
    if (outs > 3) *ctx->GetOutputShape(3) = Shape({a.B, a.Hq, a.S, a.T});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType t = ctx->GetInputDataType(0);
    if (t != DT_FLOAT && t != DT_FLOAT16 && t != DT_BF16)
      return Fail(ctx, std::string("Q is ") + DataTypeName(t) + "; float32, float16 and bfloat16 are supported");
    for (size_t i : {size_t{1}, size_t{2}, size_t{4}, size_t{5}})
      if (const Tensor* in = In(ctx, i); in && in->GetDataType() != t)
        return Fail(ctx, std::string(i == 1 ? "K" : i == 2 ? "V" : i == 4 ? "past_key" : "past_value") + " is " + DataTypeName(in->GetDataType()) +
                             "; Q is " + DataTypeName(t));
    for (size_t o = 0; o < ctx->GetComputeNodeOutputNum(); ++o)
      if (ctx->SetOutputDataType(o, t) != GRAPH_SUCCESS) return GRAPH_FAILED;
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Job j;
    Att& a = j.a;
    if (!Plan(ctx, &a)) return GRAPH_FAILED;
    const RuntimeAttrs* at = ctx->GetAttrs();
    const Tensor *q = ctx->GetInputTensor(0), *k = ctx->GetInputTensor(1), *v = ctx->GetInputTensor(2);
    j.dt = q->GetDataType();
    const size_t elem = DataTypeSize(j.dt);
    const size_t outs = ctx->GetComputeNodeOutputNum();
    Tensor* y = ctx->MallocOutputTensor(0, a.rank3 ? Shape({a.B, a.S, a.Hq * a.hv}) : Shape({a.B, a.Hq, a.S, a.hv}), j.dt);
    if (!y) return GRAPH_FAILED;
    j.y = y->GetAddr();
    // present_key and present_value: the past, then this call's keys and values.
    std::vector<uint8_t> own[2];
    const uint8_t* present[2] = {nullptr, nullptr};
    for (int o = 0; o < 2; ++o) {
      const int64_t d = o ? a.hv : a.h;
      const Tensor* now = o ? v : k;
      uint8_t* dst = nullptr;
      if (static_cast<size_t>(o + 1) < outs) {
        Tensor* t = ctx->MallocOutputTensor(o + 1, Shape({a.B, a.Hkv, a.T, d}), j.dt);
        if (!t) return GRAPH_FAILED;
        dst = static_cast<uint8_t*>(t->GetAddr());
      } else if (a.past) {
        own[o].resize(static_cast<size_t>(std::max<int64_t>(a.B * a.Hkv * a.T * d, 1)) * elem);
        dst = own[o].data();
      }
      if (!dst) continue;
      if (a.past) CopyHeads(static_cast<const uint8_t*>(In(ctx, 4 + o)->GetAddr()), false, a.B, a.Hkv, a.P, d, elem, dst, a.T, 0);
      CopyHeads(static_cast<const uint8_t*>(now->GetAddr()), a.rank3, a.B, a.Hkv, a.L, d, elem, dst, a.T, a.P);
      present[o] = dst;
    }
    if (outs > 3) {
      Tensor* t = ctx->MallocOutputTensor(3, Shape({a.B, a.Hq, a.S, a.T}), j.dt);
      if (!t) return GRAPH_FAILED;
      j.qk = t->GetAddr();
    }
    // Float32 views of Q, and of the keys and values (the present with a past, else K and V).
    std::vector<float> wq, wk, wv;
    j.q = ViewOf(Widened(q, &wq), a.rank3, a.Hq, a.S, a.h);
    for (int o = 0; o < 2; ++o) {
      const int64_t d = o ? a.hv : a.h;
      std::vector<float>& w = o ? wv : wk;
      View& view = o ? j.v : j.k;
      if (a.past) {
        view = ViewOf(Widened(present[o], a.B * a.Hkv * a.T * d, j.dt, &w), false, a.Hkv, a.T, d);
      } else {
        view = ViewOf(Widened(o ? v : k, &w), a.rank3, a.Hkv, a.L, d);
      }
    }
    const float given = *at->GetFloat("scale");
    j.scale = given != 0.f ? given : static_cast<float>(1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(a.h, 1))));
    j.cap = *at->GetFloat("softcap");
    j.causal = *at->GetInt("is_causal") != 0;
    j.left = *at->GetInt("left_window_size"), j.right = *at->GetInt("right_window_size");
    j.mode = *at->GetInt("qk_matmul_output_mode");
    std::vector<float> wm;
    if (const Tensor* m = In(ctx, 3)) {
      if (m->GetDataType() == DT_BOOL) j.mask_bool = static_cast<const uint8_t*>(m->GetAddr());
      else j.mask_add = Widened(m, &wm);
      const int64_t full[4] = {a.B, a.Hq, a.S, a.mask_dims[3]};
      int64_t stride = 1;
      for (int k2 = 3; k2 >= 0; --k2) {
        j.ms[k2] = a.mask_dims[k2] == 1 && full[k2] != 1 ? 0 : stride;
        stride *= a.mask_dims[k2];
      }
      j.mask_len = a.mask_dims[3];
    }
    if (const Tensor* n = In(ctx, 6)) j.nonpad = n->GetData<int64_t>();
    // Items of (sequence, query head, block of query rows), one run of them per thread.
    const char* tv = ctx->GetOption("weft.intra_op_threads");
    const int64_t threads = tv ? std::max(1, std::atoi(tv)) : 1;
    int64_t rows = a.S;
    while (rows > 16 && a.B * a.Hq * ((a.S + rows - 1) / rows) < 4 * threads) rows = (rows + 1) / 2;
    rows = std::max<int64_t>(rows, 1);
    const int64_t blocks = (a.S + rows - 1) / rows, items = a.B * a.Hq * blocks;
    if (items == 0) return GRAPH_SUCCESS;
    const int64_t parts = std::min(threads, items);
    const int64_t per = rows * a.T + a.T + rows * a.hv;
    auto* scratch = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(parts * per, 1)) * sizeof(float)));
    if (!scratch) return GRAPH_FAILED;
    std::atomic<bool> ok{true};
    graphStatus st = ctx->ParallelFor(parts, 1, [&](int64_t p0, int64_t p1) {
      // Each item's products are one single-threaded sgemm: the items are the work the threads
      // share (oneDNN's own OpenMP threads on top would only contend for the same cores).
      const int omp_before = omp_get_max_threads();
      omp_set_num_threads(1);
      for (int64_t part = p0; part < p1; ++part) {
        float* sc = scratch + part * per;
        for (int64_t it = items * part / parts; it < items * (part + 1) / parts; ++it) {
          const int64_t blk = it % blocks, hq = (it / blocks) % a.Hq, b = it / (blocks * a.Hq);
          const int64_t s0 = blk * rows, s1 = std::min(a.S, s0 + rows);
          if (!RunItem(j, b, hq, s0, s1, sc, sc + rows * a.T, sc + rows * a.T + a.T)) ok = false;
        }
      }
      omp_set_num_threads(omp_before);
    });
    if (st != GRAPH_SUCCESS) return st;
    if (!ok) return Fail(ctx, "oneDNN sgemm failed");
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_attention(std::vector<OpEntry>& out) {
  const TensorType floats({DT_FLOAT, DT_FLOAT16, DT_BF16});
  out.push_back({OpDefBuilder("Attention")
                     .INPUT(Q, floats)
                     .INPUT(K, floats)
                     .INPUT(V, floats)
                     .OPTIONAL_INPUT(attn_mask, TensorType({DT_BOOL, DT_FLOAT, DT_FLOAT16, DT_BF16}))
                     .OPTIONAL_INPUT(past_key, floats)
                     .OPTIONAL_INPUT(past_value, floats)
                     .OPTIONAL_INPUT(nonpad_kv_seqlen, TensorType({DT_INT64}))
                     .OUTPUT(Y, floats)
                     .OUTPUT(present_key, floats)
                     .OUTPUT(present_value, floats)
                     .OUTPUT(qk_matmul_output, floats)
                     .ATTR(is_causal, Int, 0)
                     .ATTR(q_num_heads, Int, 0)
                     .ATTR(kv_num_heads, Int, 0)
                     .ATTR(scale, Float, 0.0)
                     .ATTR(softcap, Float, 0.0)
                     .ATTR(qk_matmul_output_mode, Int, 0)
                     .ATTR(softmax_precision, Int, 0)
                     .ATTR(left_window_size, Int, -1)
                     .ATTR(right_window_size, Int, -1)
                     .Build(),
                 MakeOpImpl<AttentionOp>("Attention")});
}

}  // namespace weft::ops
