// Sets up a oneDNN matmul in a DnnlRunner: Y[..., M, N] = A[..., M, K] x B[..., K, N] (+ bias),
// batch dims broadcast, either operand possibly transposed (as strides), B prepacked when it is
// a constant, fused activation as a post-op.
#ifndef WEFT_OPS_DNNL_MATMUL_H_
#define WEFT_OPS_DNNL_MATMUL_H_

#include <vector>

#include "dnnl_runner.h"

namespace weft::ops {

struct MatmulSpec {
  std::vector<int64_t> a_dims, b_dims, y_dims;  // same rank, >= 2
  bool trans_a = false, trans_b = false;         // operands stored as [.., K, M] / [.., N, K]
  const void* b_const = nullptr;                 // B's data when it is a constant
  const float* bias = nullptr;                   // [N], or nullptr
  float alpha = 1.0f;
  dnnl::post_ops post_ops;
};

// Plain row-major strides of `dims`, with the last two swapped when `trans` (the data is stored
// transposed).
inline dnnl::memory::desc PlainDesc(const std::vector<int64_t>& dims, bool trans) {
  size_t r = dims.size();
  std::vector<int64_t> stored = dims;
  if (trans) std::swap(stored[r - 1], stored[r - 2]);
  dnnl::memory::dims strides(r);
  int64_t acc = 1;
  for (size_t k = r; k-- > 0;) {
    strides[k] = acc;
    acc *= stored[k];
  }
  if (trans) std::swap(strides[r - 1], strides[r - 2]);
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32, strides);
}

// Adds the steps to `r` (bound slots: A, [B unless constant], Y) and keeps the prepacked B and
// bias in `keep`. Throws dnnl::error when oneDNN cannot do it.
inline void BuildMatmul(DnnlRunner& r, const MatmulSpec& s, std::vector<dnnl::memory>& keep, int threads) {
  using dt = dnnl::memory::data_type;
  dnnl::memory::desc a_md = PlainDesc(s.a_dims, s.trans_a);
  dnnl::memory::desc b_plain = PlainDesc(s.b_dims, s.trans_b);
  dnnl::memory::desc y_md = PlainDesc(s.y_dims, false);
  dnnl::memory::desc b_md = s.b_const ? dnnl::memory::desc(dnnl::memory::dims(s.b_dims.begin(), s.b_dims.end()), dt::f32,
                                                           dnnl::memory::format_tag::any)
                                      : b_plain;
  std::vector<int64_t> bias_dims(s.y_dims.size(), 1);
  bias_dims.back() = s.y_dims.back();
  dnnl::memory::desc bias_md = PlainDesc(bias_dims, false);
  dnnl::matmul::desc d = s.bias ? dnnl::matmul::desc(a_md, b_md, bias_md, y_md) : dnnl::matmul::desc(a_md, b_md, y_md);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // The output scale would apply to the bias too, which is not what a caller with alpha means.
  if (s.bias && s.alpha != 1.0f) throw dnnl::error(dnnl_unimplemented, "a bias with alpha != 1");
  if (s.alpha != 1.0f) attr.set_output_scales(0, {s.alpha});
  attr.set_post_ops(s.post_ops);
  dnnl::matmul::primitive_desc pd(d, attr, CpuEngine());
  int a_slot = r.AddBound(a_md);
  int b_slot;
  if (s.b_const) {
    dnnl::memory plain(b_plain, CpuEngine(), const_cast<void*>(s.b_const));
    dnnl::memory packed = PackedWeights(pd.weights_desc(), CpuEngine());
    dnnl::stream st(CpuEngine());
    dnnl::reorder(plain, packed).execute(st, plain, packed);
    st.wait();
    keep.push_back(packed);
    b_slot = r.AddFixed(packed);
  } else {
    b_slot = r.AddBound(b_plain);
  }
  int y_slot = r.AddBound(y_md);
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, a_slot}, {DNNL_ARG_WEIGHTS, b_slot}, {DNNL_ARG_DST, y_slot}};
  if (s.bias) {
    dnnl::memory bias(bias_md, CpuEngine());
    std::memcpy(bias.get_data_handle(), s.bias, static_cast<size_t>(bias_dims.back()) * sizeof(float));
    keep.push_back(bias);
    args.push_back({DNNL_ARG_BIAS, r.AddFixed(bias)});
  }
  r.AddStep(dnnl::matmul(pd), args, pd.scratchpad_desc());
  r.Finish(threads);
}

}  // namespace weft::ops

#endif  // WEFT_OPS_DNNL_MATMUL_H_
