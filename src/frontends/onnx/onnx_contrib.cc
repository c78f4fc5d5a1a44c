// ONNX Runtime's graph optimizers write fused operators of its com.microsoft domain into the
// models they save (SessionOptions.optimized_model_filepath, onnxruntime.transformers'
// optimizer). Each float one is rewritten here as the standard operators it fuses; Weft's own
// passes then fuse those as its kernels like (a Conv's activation and residual sum into its
// epilogue, a layer norm's parts into LayerNormalization). Semantics follow ONNX Runtime's
// contrib operator documentation; tests compare with ONNX Runtime itself.
#include "frontends/onnx/onnx_contrib.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

namespace weft::internal {
namespace {

class Rewriter {
 public:
  Rewriter(const Node& n, OnnxContribContext& c, std::vector<Node>* out) : n_(n), c_(c), out_(out) {}

  // Input i's name, "" when absent.
  std::string In(size_t i) const { return i < n_.inputs.size() ? n_.inputs[i] : std::string(); }
  // Output i's name, "" when the node does not produce it.
  std::string Out(size_t i) const { return i < n_.outputs.size() ? n_.outputs[i] : std::string(); }
  const AttrValue* Attr(const std::string& name) const {
    auto it = n_.attrs.find(name);
    return it == n_.attrs.end() ? nullptr : &it->second;
  }
  // An attribute's value, or `dflt` when the node does not give it; one of another type is a
  // problem named with the node (the import then fails), not a silent default.
  float Float(const std::string& name, float dflt) const {
    const AttrValue* a = Attr(name);
    if (!a) return dflt;
    if (a->type() == WEFT_ATTR_FLOAT) return a->f();
    if (a->type() == WEFT_ATTR_INT) return static_cast<float>(a->i());
    return Mistyped(name, "a float"), dflt;
  }
  int64_t Int(const std::string& name, int64_t dflt) const {
    const AttrValue* a = Attr(name);
    if (!a) return dflt;
    if (a->type() == WEFT_ATTR_INT) return a->i();
    return Mistyped(name, "an int"), dflt;
  }
  std::string Str(const std::string& name) const {
    const AttrValue* a = Attr(name);
    if (!a) return std::string();
    if (a->type() == WEFT_ATTR_STRING) return a->s();
    return Mistyped(name, "a string"), std::string();
  }
  std::vector<int64_t> Ints(const std::string& name) const {
    const AttrValue* a = Attr(name);
    if (!a) return {};
    if (a->type() == WEFT_ATTR_LIST_INT) return a->ints();
    return Mistyped(name, "a list of ints"), std::vector<int64_t>();
  }
  const HostTensor* Constant(const std::string& v) const { return c_.constant(v); }
  int Rank(const std::string& v) const {
    if (auto it = c_.ranks.find(v); it != c_.ranks.end()) return it->second;
    const HostTensor* t = c_.constant(v);
    return t ? static_cast<int>(t->shape().GetDimNum()) : -1;
  }
  void SetRank(const std::string& v, int r) {
    if (!v.empty() && r >= 0) c_.ranks[v] = r;
  }
  bool Fail(const std::string& why) {
    c_.problems.push_back(Who() + why);
    out_->clear();
    return true;
  }

  // Appends op(inputs) and returns its (first) output: `to` when given, else a fresh name.
  std::string Op(const std::string& op, std::vector<std::string> inputs, std::map<std::string, AttrValue> attrs = {},
                 const std::string& to = "", size_t outputs = 1) {
    Node m;
    m.op_type = op;
    m.name = n_.name + "/" + op + "_" + std::to_string(out_->size());
    m.opset = n_.opset;
    m.inputs = std::move(inputs);
    m.attrs = std::move(attrs);
    m.when = n_.when;
    m.outputs.push_back(to.empty() ? Fresh(op) : to);
    for (size_t k = 1; k < outputs; ++k) m.outputs.push_back(Fresh(op));
    out_->push_back(std::move(m));
    return out_->back().outputs[0];
  }
  Node& Last() { return out_->back(); }

  std::string FloatConst(float v, std::vector<int64_t> dims = {}) {
    HostTensor t(DT_FLOAT, Shape(dims));
    for (int64_t k = 0; k < t.shape().GetShapeSize(); ++k) t.data_as<float>()[k] = v;
    return AddConstant(std::move(t));
  }
  std::string Int32Const(int32_t v) {
    HostTensor t(DT_INT32, Shape());
    *t.data_as<int32_t>() = v;
    return AddConstant(std::move(t));
  }
  std::string IntsConst(const std::vector<int64_t>& v, bool scalar = false) {
    HostTensor t(DT_INT64, scalar ? Shape() : Shape({static_cast<int64_t>(v.size())}));
    if (!v.empty()) std::memcpy(t.data(), v.data(), v.size() * sizeof(int64_t));
    return AddConstant(std::move(t));
  }

  // A constant of this value, by a fresh name.
  std::string TensorConst(HostTensor t) { return AddConstant(std::move(t)); }

  // y = activation(x) as the standard op of that name; the alpha/beta/gamma given or the op's defaults.
  bool Activation(const std::string& act, const std::vector<float>& params, const std::string& x, const std::string& y) {
    auto p = [&](size_t k, float dflt) { return k < params.size() ? params[k] : dflt; };
    std::map<std::string, AttrValue> a;
    if (act.empty() || act == "Identity") {
      Op("Identity", {x}, {}, y);
    } else if (act == "Relu" || act == "Tanh" || act == "Sigmoid" || act == "Softsign" || act == "Softplus") {
      Op(act, {x}, {}, y);
    } else if (act == "LeakyRelu" || act == "Elu" || act == "ThresholdedRelu") {
      Op(act, {x}, {{"alpha", AttrValue::Float(p(0, act == "LeakyRelu" ? 0.01f : 1.f))}}, y);
    } else if (act == "HardSwish") {
      Op(act, {x}, {}, y);
    } else if (act == "HardSigmoid") {
      Op(act, {x}, {{"alpha", AttrValue::Float(p(0, 0.2f))}, {"beta", AttrValue::Float(p(1, 0.5f))}}, y);
    } else if (act == "Selu") {
      Op(act, {x}, {{"alpha", AttrValue::Float(p(0, 1.67326319217681884765625f))}, {"gamma", AttrValue::Float(p(2, 1.05070102519989013671875f))}}, y);
    } else if (act == "Clip") {
      if (params.size() != 2) return !Fail("activation Clip takes activation_params [min, max]");
      Op("Clip", {x, FloatConst(params[0]), FloatConst(params[1])}, {}, y);
    } else {
      return !Fail("activation '" + act + "' is not supported (Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid, HardSwish, Elu, Selu, "
                   "ThresholdedRelu, Softsign and Softplus are)");
    }
    return true;
  }

 private:
  std::string Who() const { return "'" + n_.name + "' (" + n_.op_type + (n_.domain.empty() ? "" : ", domain " + n_.domain) + "): "; }
  void Mistyped(const std::string& name, const char* what) const {
    const std::string p = Who() + "attribute '" + name + "' must be " + what;
    if (c_.problems.empty() || c_.problems.back() != p) c_.problems.push_back(p);
  }
  std::string Fresh(const std::string& what) { return n_.name + "/" + what + "_out_" + std::to_string(counter_++); }
  std::string AddConstant(HostTensor t) {
    std::string name = n_.name + "/const_" + std::to_string(counter_++);
    c_.g.AddConstant(name, std::move(t));
    return name;
  }

  const Node& n_;
  OnnxContribContext& c_;
  std::vector<Node>* out_;
  int counter_ = 0;
};

std::map<std::string, AttrValue> Without(const std::map<std::string, AttrValue>& attrs, std::initializer_list<const char*> drop) {
  std::map<std::string, AttrValue> a = attrs;
  for (const char* k : drop) a.erase(k);
  return a;
}

// FusedConv(X, W, B?, Z?): activation(Conv(X, W, B) + Z), activation and activation_params.
bool FusedConv(const Node& n, Rewriter& r) {
  std::vector<std::string> conv{r.In(0), r.In(1)};
  if (!r.In(2).empty()) conv.push_back(r.In(2));
  std::string y = r.Op("Conv", conv, Without(n.attrs, {"activation", "activation_params"}));
  if (!r.In(3).empty()) y = r.Op("Add", {y, r.In(3)});
  const AttrValue* params = r.Attr("activation_params");
  return r.Activation(r.Str("activation"), params ? params->floats() : std::vector<float>{}, y, r.Out(0));
}

// FusedGemm(A, B, C?): activation(Gemm(A, B, C)), activation_alpha/beta/gamma.
bool FusedGemm(const Node& n, Rewriter& r) {
  std::vector<std::string> in{r.In(0), r.In(1)};
  if (!r.In(2).empty()) in.push_back(r.In(2));
  std::string y = r.Op("Gemm", in, Without(n.attrs, {"activation", "activation_alpha", "activation_beta", "activation_gamma"}));
  // activation_alpha, _beta, _gamma; where absent, the activation's own defaults.
  const std::string act = r.Str("activation");
  const float alpha = act == "LeakyRelu" ? 0.01f : act == "HardSigmoid" ? 0.2f : act == "Selu" ? 1.67326319217681884765625f : 1.f;
  const std::vector<float> given{r.Float("activation_alpha", alpha), r.Float("activation_beta", 0.5f),
                                 r.Float("activation_gamma", 1.05070102519989013671875f)};
  return r.Activation(act, given, y, r.Out(0));
}

// FusedMatMul(A, B): alpha * (op(A) @ op(B)); transA/transB swap the last two dims,
// transBatchA/transBatchB move the first dim behind the other batch dims.
bool FusedMatMul(const Node& n, Rewriter& r) {
  (void)n;
  std::string ab[2];
  for (int k = 0; k < 2; ++k) {
    const std::string side = k ? "B" : "A";
    const bool trans = r.Int("trans" + side, 0) != 0, batch = r.Int("transBatch" + side, 0) != 0;
    ab[k] = r.In(static_cast<size_t>(k));
    if (!trans && !batch) continue;
    const int rank = r.Rank(ab[k]);
    if (rank < 0) return r.Fail("trans" + std::string(batch ? "Batch" : "") + side + " needs the rank of " + side + " ('" + ab[k] +
                                "'), which the model does not declare (value_info)");
    if (rank < 2) return r.Fail(side + " has rank " + std::to_string(rank) + "; trans" + side + " needs 2 or more");
    std::vector<int64_t> perm;
    if (batch) {
      for (int d = 1; d < rank - 1; ++d) perm.push_back(d);
      perm.push_back(0);
      perm.push_back(rank - 1);
    } else {
      for (int d = 0; d < rank; ++d) perm.push_back(d);
    }
    if (trans) std::swap(perm[static_cast<size_t>(rank - 2)], perm[static_cast<size_t>(rank - 1)]);
    ab[k] = r.Op("Transpose", {ab[k]}, {{"perm", AttrValue::ListInt(perm)}});
  }
  const float alpha = r.Float("alpha", 1.f);
  if (alpha == 1.f) {
    r.Op("MatMul", {ab[0], ab[1]}, {}, r.Out(0));
  } else {
    std::string y = r.Op("MatMul", {ab[0], ab[1]});
    r.Op("Mul", {y, r.FloatConst(alpha)}, {}, r.Out(0));
  }
  return true;
}

// input + skip (+ bias), in that order.
std::string SkipSum(Rewriter& r, size_t bias_input, const std::string& to) {
  const bool bias = !r.In(bias_input).empty();
  std::string s = r.Op("Add", {r.In(0), r.In(1)}, {}, bias ? "" : to);
  if (bias) s = r.Op("Add", {s, r.In(bias_input)}, {}, to);
  return s;
}

// SkipLayerNormalization(input, skip, gamma, beta?, bias?) -> output, mean?, inv_std_var?,
// input_skip_bias_sum?: LayerNormalization over the last axis of input + skip + bias.
bool SkipLayerNorm(const Node& n, Rewriter& r) {
  (void)n;
  std::string sum = SkipSum(r, 4, r.Out(3));
  std::vector<std::string> in{sum, r.In(2)};
  if (!r.In(3).empty()) in.push_back(r.In(3));
  const size_t stats = !r.Out(2).empty() ? 2 : !r.Out(1).empty() ? 1 : 0;
  r.Op("LayerNormalization", in, {{"axis", AttrValue::Int(-1)}, {"epsilon", AttrValue::Float(r.Float("epsilon", 1e-12f))}}, r.Out(0),
       1 + stats);
  for (size_t k = 1; k <= stats; ++k)
    if (!r.Out(k).empty()) r.Last().outputs[k] = r.Out(k);
  return true;
}

// SkipSimplifiedLayerNormalization(input, skip, gamma, bias?) -> output, mean (not produced),
// inv_std_var?, input_skip_bias_sum?: RMS normalization of input + skip + bias.
bool SkipSimplifiedLayerNorm(const Node& n, Rewriter& r) {
  (void)n;
  if (!r.Out(1).empty()) return r.Fail("output 1 (mean) has no value in RMS normalization; leave it unnamed");
  std::string sum = SkipSum(r, 3, r.Out(3));
  r.Op("SimplifiedLayerNormalization", {sum, r.In(2)}, {{"axis", AttrValue::Int(-1)}, {"epsilon", AttrValue::Float(r.Float("epsilon", 1e-12f))}},
       r.Out(0), r.Out(2).empty() ? 1 : 2);
  if (!r.Out(2).empty()) r.Last().outputs[1] = r.Out(2);
  return true;
}

// Attention(input, weights, bias?, mask_index?, past?, attention_bias?, past_sequence_length?)
// without past state: multi-head self-attention with the Q, K and V projections in one weight.
// The attention of ONNX Runtime's Attention and MultiHeadAttention after their projections:
// softmax(q kt * scale + masks + attention_bias) v, with q [B, N, S, h], kt [B, N, h, T], v [B, N,
// T, h], back to [B, S, N * h] in the node's output 0. mask: [B] end positions, [2B] ends then
// starts, or raw [B, T] / [B, S, T] (positive where a key takes part); causal: a query attends to
// keys up to its own position, offset by T - S where there is a past (`offset`).
bool Attend(Rewriter& r, const std::string& q, const std::string& kt, const std::string& v, const std::string& mask_in, const std::string& attn_bias,
            bool causal, bool offset, const std::string& scale, float filter, const std::function<std::string(float)>& typed) {
  std::string scores = r.Op("Mul", {r.Op("MatMul", {q, kt}), scale});
  std::string zero = typed(0.f), masked = typed(filter);
  // Causal masking ignores mask_filter_value: a later key never takes part.
  std::string future = typed(std::numeric_limits<float>::lowest());
  auto seq_len = [&](int64_t axis) {  // the scores' dim `axis` as an int64 scalar
    return r.Op("Gather", {r.Op("Shape", {scores}), r.IntsConst({axis}, true)}, {{"axis", AttrValue::Int(0)}});
  };
  auto positions = [&](int64_t axis) { return r.Op("Range", {r.IntsConst({0}, true), seq_len(axis), r.IntsConst({1}, true)}); };
  if (const std::string mask = mask_in; !mask.empty()) {
    const int rank = r.Rank(mask);
    std::string valid;  // bool, true where a key position takes part
    std::vector<int64_t> axes{1, 2};
    if (rank == 1) {
      // [B]: each batch's end position (keys from 0 up to it); [2B]: the ends, then the start
      // positions (left padding). Appending zeros makes the starts of the [B] form 0.
      const std::string b = r.Op("Unsqueeze", {seq_len(0), r.IntsConst({0})});
      const std::string m = r.Op("Cast", {mask}, {{"to", AttrValue::Type(DT_INT64)}});
      const std::string ends = r.Op("Slice", {m, r.IntsConst({0}), b});
      const std::string starts = r.Op("Slice", {r.Op("Concat", {m, r.Op("Sub", {m, m})}, {{"axis", AttrValue::Int(0)}}), b, r.Op("Add", {b, b})});
      const std::string pos = positions(3), one = r.IntsConst({1});
      valid = r.Op("And", {r.Op("Less", {pos, r.Op("Unsqueeze", {ends, one})}), r.Op("GreaterOrEqual", {pos, r.Op("Unsqueeze", {starts, one})})});
    } else if (rank == 2 || rank == 3) {  // [B, T] or [B, S, T]: positive where valid
      valid = r.Op("Greater", {mask, r.Int32Const(0)});
      if (rank == 3) axes = {1};
    } else {
      return r.Fail(rank < 0 ? "the rank of mask_index ('" + mask + "') is not declared (value_info)"
                             : "mask_index of rank " + std::to_string(rank) + " is not supported (1, 2 and 3 are)");
    }
    std::string add = r.Op("Unsqueeze", {r.Op("Where", {valid, zero, masked}), r.IntsConst(axes)});
    scores = r.Op("Add", {scores, add});
  }
  if (causal) {  // a query position attends to keys up to its own (after the past's P)
    std::string rows = r.Op("Unsqueeze", {positions(2), r.IntsConst({1})});
    if (offset) rows = r.Op("Add", {rows, r.Op("Sub", {seq_len(3), seq_len(2)})});
    scores = r.Op("Add", {scores, r.Op("Where", {r.Op("Greater", {positions(3), rows}), future, zero})});
  }
  if (!attn_bias.empty()) scores = r.Op("Add", {scores, attn_bias});
  std::string probs = r.Op("Softmax", {scores}, {{"axis", AttrValue::Int(-1)}});
  std::string ctx = r.Op("Transpose", {r.Op("MatMul", {probs, v})}, {{"perm", AttrValue::ListInt({0, 2, 1, 3})}});
  r.Op("Reshape", {ctx, r.IntsConst({0, 0, -1})}, {}, r.Out(0));
  r.SetRank(r.Out(0), 3);
  return true;
}

bool Attention(const Node& n, Rewriter& r) {
  (void)n;
  if (!r.In(6).empty() || r.Int("past_present_share_buffer", 0) != 0)
    return r.Fail("past_sequence_length and past_present_share_buffer (a key/value cache shared in place) are not supported");
  if (!r.Out(1).empty() && r.In(4).empty()) return r.Fail("present needs past (input 4)");
  if (r.Int("do_rotary", 0) != 0) return r.Fail("do_rotary is not supported");
  const int64_t heads = r.Int("num_heads", 0);
  if (heads <= 0) return r.Fail("num_heads must be positive");
  int64_t dq = 0, dk = 0, dv = 0;
  if (const AttrValue* q = r.Attr("qkv_hidden_sizes"); q && q->type() == WEFT_ATTR_LIST_INT && !q->ints().empty()) {
    if (q->ints().size() != 3) return r.Fail("qkv_hidden_sizes must have 3 values");
    dq = q->ints()[0], dk = q->ints()[1], dv = q->ints()[2];
  } else {
    const HostTensor* w = r.Constant(r.In(1));
    if (!w || w->shape().GetDimNum() != 2 || w->shape().GetDim(1) % 3)
      return r.Fail("without qkv_hidden_sizes, weights must be a constant [input_hidden, 3 * hidden]");
    dq = dk = dv = w->shape().GetDim(1) / 3;
  }
  if (dq <= 0 || dq != dk || dq % heads || dv % heads) return r.Fail("Q and K sizes must be equal and Q, V sizes multiples of num_heads");
  float scale = r.Float("scale", 0.f);
  if (scale == 0.f) scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dq / heads)));
  const float filter = r.Float("mask_filter_value", -10000.f);

  // Constants in the input's float type (float16 models too).
  const std::function<std::string(float)> typed = [&](float v) { return r.Op("CastLike", {r.FloatConst(v), r.In(0)}); };
  std::string qkv = r.Op("MatMul", {r.In(0), r.In(1)});
  if (!r.In(2).empty()) qkv = r.Op("Add", {qkv, r.In(2)});
  r.Op("Split", {qkv, r.IntsConst({dq, dk, dv})}, {{"axis", AttrValue::Int(-1)}}, "", 3);
  const std::vector<std::string> parts = r.Last().outputs;
  const std::string heads_shape = r.IntsConst({0, 0, heads, -1});
  auto split_heads = [&](const std::string& v, std::vector<int64_t> perm) {
    return r.Op("Transpose", {r.Op("Reshape", {v, heads_shape})}, {{"perm", AttrValue::ListInt(std::move(perm))}});
  };
  const std::string q = split_heads(parts[0], {0, 2, 1, 3});  // [B, N, S, h]
  std::string kt, v;
  const std::string past = r.In(4);
  if (past.empty()) {
    kt = split_heads(parts[1], {0, 2, 3, 1});  // [B, N, h, T]
    v = split_heads(parts[2], {0, 2, 1, 3});   // [B, N, T, h]
  } else {  // past [2, B, N, P, h]: its keys and values before this step's; present the same, P + S long
    auto past_of = [&](int64_t i) { return r.Op("Gather", {past, r.IntsConst({i}, true)}, {{"axis", AttrValue::Int(0)}}); };
    const std::string k = r.Op("Concat", {past_of(0), split_heads(parts[1], {0, 2, 1, 3})}, {{"axis", AttrValue::Int(2)}});
    v = r.Op("Concat", {past_of(1), split_heads(parts[2], {0, 2, 1, 3})}, {{"axis", AttrValue::Int(2)}});
    kt = r.Op("Transpose", {k}, {{"perm", AttrValue::ListInt({0, 1, 3, 2})}});
    if (!r.Out(1).empty()) {
      const std::string zero_axis = r.IntsConst({0});
      r.Op("Concat", {r.Op("Unsqueeze", {k, zero_axis}), r.Op("Unsqueeze", {v, zero_axis})}, {{"axis", AttrValue::Int(0)}}, r.Out(1));
      r.SetRank(r.Out(1), 5);
    }
  }
  return Attend(r, q, kt, v, r.In(3), r.In(5), r.Int("unidirectional", 0) != 0, !past.empty(), typed(scale), filter, typed);
}

// MultiHeadAttention(query, key?, value?, bias?, key_padding_mask?, attention_bias?, past_key?,
// past_value?) -> output, present_key?, present_value?: query [B, S, D]; key and value [B, L, D]
// (the bias's parts added: [D + D + Dv]) or already split into heads, [B, N, L, h] (no bias part
// then); past_key and past_value [B, N, P, h] before them, present the same P + L long. Packed
// Q/K/V forms, past_sequence_length and cache_indirection are refused.
bool MultiHeadAttention(const Node& n, Rewriter& r) {
  (void)n;
  if (r.In(1).empty() || r.In(2).empty())
    return r.Fail("packed query/key/value (no separate key and value inputs) are not supported");
  for (size_t k = 8; k < 10; ++k)
    if (!r.In(k).empty()) return r.Fail("past_sequence_length and cache_indirection are not supported");
  if ((!r.Out(1).empty() || !r.Out(2).empty()) && (r.In(6).empty() || r.In(7).empty()))
    return r.Fail("present_key and present_value need past_key and past_value");
  if (!r.Out(3).empty()) return r.Fail("the qk output is not supported");
  const int64_t heads = r.Int("num_heads", 0);
  if (heads <= 0) return r.Fail("num_heads must be positive");
  const int rq = r.Rank(r.In(0)), rk = r.Rank(r.In(1)), rv = r.Rank(r.In(2));
  if (rq != 3) return r.Fail(rq < 0 ? "the rank of query is not declared (value_info)" : "query must be [B, S, D] (packed forms are not supported)");
  if ((rk != 3 && rk != 4) || rk != rv) return r.Fail("key and value must both be [B, L, D] or both [B, N, L, h] (ranks declared)");
  const std::function<std::string(float)> typed = [&](float v) { return r.Op("CastLike", {r.FloatConst(v), r.In(0)}); };
  // the bias's parts: [0, D), [D, 2D), [2D, end) with D query's hidden size (known when it runs)
  std::string q = r.In(0), k = r.In(1), v = r.In(2);
  if (!r.In(3).empty()) {
    const std::string d = r.Op("Slice", {r.Op("Shape", {q}), r.IntsConst({2}), r.IntsConst({3})});
    const std::string d2 = r.Op("Add", {d, d});
    q = r.Op("Add", {q, r.Op("Slice", {r.In(3), r.IntsConst({0}), d})});
    if (rk == 3) {
      k = r.Op("Add", {k, r.Op("Slice", {r.In(3), d, d2})});
      v = r.Op("Add", {v, r.Op("Slice", {r.In(3), d2, r.IntsConst({std::numeric_limits<int64_t>::max()})})});
    }
  }
  const std::string heads_shape = r.IntsConst({0, 0, heads, -1});
  auto split_heads = [&](const std::string& x) {
    return r.Op("Transpose", {r.Op("Reshape", {x, heads_shape})}, {{"perm", AttrValue::ListInt({0, 2, 1, 3})}});
  };
  q = split_heads(q);
  if (rk == 3) k = split_heads(k), v = split_heads(v);
  const bool past = !r.In(6).empty() && !r.In(7).empty();
  if (past) {
    k = r.Op("Concat", {r.In(6), k}, {{"axis", AttrValue::Int(2)}}, r.Out(1));
    v = r.Op("Concat", {r.In(7), v}, {{"axis", AttrValue::Int(2)}}, r.Out(2));
    r.SetRank(r.Out(1), 4);
    r.SetRank(r.Out(2), 4);
  }
  const std::string kt = r.Op("Transpose", {k}, {{"perm", AttrValue::ListInt({0, 1, 3, 2})}});
  // scale: given, else 1 / sqrt(h) with h known when it runs
  std::string scale;
  if (const float given = r.Float("scale", 0.f); given != 0.f) {
    scale = typed(given);
  } else {
    const std::string h = r.Op("Cast", {r.Op("Slice", {r.Op("Shape", {q}), r.IntsConst({3}), r.IntsConst({4})})}, {{"to", AttrValue::Type(DT_FLOAT)}});
    scale = r.Op("CastLike", {r.Op("Reciprocal", {r.Op("Sqrt", {h})}), r.In(0)});
  }
  return Attend(r, q, kt, v, r.In(4), r.In(5), r.Int("unidirectional", 0) != 0, past, scale, r.Float("mask_filter_value", -10000.f), typed);
}

// x (4-D, heads on `head_axis`: [B, N, S, h] for 1, [B, S, N, h] for 2) turned by the cached
// angles at positions pos ([B, S] or [1, S], int64; empty where the caches are already per
// position, [B, S, rotary / 2]): the first `rotary` values of each head (the
// attribute when positive, else twice the caches' width), halves (x1, x2) -> (x1 cos - x2 sin,
// x2 cos + x1 sin), or with interleaved the pairs (x[2i], x[2i+1]) the same; the rest unchanged.
//
// With half_from_x (ONNX's standard operator), the rotary size is the attribute or else the whole
// head, and caches of any other width than half of it fail (a Reshape to that width) rather than
// broadcast.
std::string Rotate(Rewriter& r, const std::string& x, int64_t head_axis, const std::string& pos, const std::string& cos_cache,
                   const std::string& sin_cache, bool interleaved, int64_t rotary_attr, const std::string& to = "", bool half_from_x = false) {
  const std::string big = r.IntsConst({std::numeric_limits<int64_t>::max()});
  std::string half, rot;  // [1] each
  if (half_from_x) {
    rot = rotary_attr > 0 ? r.IntsConst({rotary_attr}) : r.Op("Slice", {r.Op("Shape", {x}), r.IntsConst({-1}), big});
    half = r.Op("Div", {rot, r.IntsConst({2})});
  } else {
    half = r.Op("Slice", {r.Op("Shape", {cos_cache}), r.IntsConst({-1}), big});
    rot = rotary_attr > 0 ? r.IntsConst({rotary_attr}) : r.Op("Add", {half, half});
  }
  // [B, S, half] -> broadcast over the heads: [B, S, 1, half] or [B, 1, S, half]
  const std::string axis = r.IntsConst({head_axis});
  // (without positions, the caches are already [B, S, half])
  auto at = [&](const std::string& cache) {
    std::string c = pos.empty() ? cache : r.Op("Gather", {cache, pos}, {{"axis", AttrValue::Int(0)}});
    if (half_from_x) c = r.Op("Reshape", {c, r.Op("Concat", {r.IntsConst({0, 0}), half}, {{"axis", AttrValue::Int(0)}})});
    return c;
  };
  const std::string cos = r.Op("Unsqueeze", {at(cos_cache), axis});
  const std::string sin = r.Op("Unsqueeze", {at(sin_cache), axis});
  const std::string last = r.IntsConst({-1});
  const std::string xr = r.Op("Slice", {x, r.IntsConst({0}), rot, last});
  const std::string rest = r.Op("Slice", {x, rot, big, last});
  std::string turned;
  if (!interleaved) {
    const std::string x1 = r.Op("Slice", {xr, r.IntsConst({0}), half, last}), x2 = r.Op("Slice", {xr, half, rot, last});
    const std::string o1 = r.Op("Sub", {r.Op("Mul", {x1, cos}), r.Op("Mul", {x2, sin})});
    const std::string o2 = r.Op("Add", {r.Op("Mul", {x2, cos}), r.Op("Mul", {x1, sin})});
    turned = r.Op("Concat", {o1, o2}, {{"axis", AttrValue::Int(-1)}});
  } else {  // pairs: [..., half, 2]
    const std::string pairs_shape = r.Op("Concat", {r.IntsConst({0, 0, 0}), half, r.IntsConst({2})}, {{"axis", AttrValue::Int(0)}});
    const std::string pr = r.Op("Reshape", {xr, pairs_shape});
    const std::string x1 = r.Op("Squeeze", {r.Op("Slice", {pr, r.IntsConst({0}), r.IntsConst({1}), last}), last});
    const std::string x2 = r.Op("Squeeze", {r.Op("Slice", {pr, r.IntsConst({1}), r.IntsConst({2}), last}), last});
    const std::string o1 = r.Op("Sub", {r.Op("Mul", {x1, cos}), r.Op("Mul", {x2, sin})});
    const std::string o2 = r.Op("Add", {r.Op("Mul", {x2, cos}), r.Op("Mul", {x1, sin})});
    const std::string both = r.Op("Concat", {r.Op("Unsqueeze", {o1, last}), r.Op("Unsqueeze", {o2, last})}, {{"axis", AttrValue::Int(-1)}});
    turned = r.Op("Reshape", {both, r.Op("Concat", {r.IntsConst({0, 0, 0}), rot}, {{"axis", AttrValue::Int(0)}})});
  }
  return r.Op("Concat", {turned, rest}, {{"axis", AttrValue::Int(-1)}}, to);
}

// RotaryEmbedding(input, position_ids, cos_cache, sin_cache) -> output: input [B, S, hidden] (heads
// of num_heads, or of the rotary size where num_heads is 0) or [B, N, S, h]; position_ids [B, S], or
// [1] an offset added to 0 .. S-1; the caches [positions, rotary / 2]; turned as Rotate does.
bool RotaryEmbedding(const Node& n, Rewriter& r) {
  (void)n;
  if (r.Int("is_packed_batching", 0) != 0) return r.Fail("is_packed_batching is not supported");
  if (r.Float("scale", 1.f) != 1.f) return r.Fail("scale other than 1 is not supported");
  const int rank = r.Rank(r.In(0)), prank = r.Rank(r.In(1));
  if (rank != 3 && rank != 4) return r.Fail(rank < 0 ? "the rank of input is not declared (value_info)" : "input must be 3-D or 4-D");
  if (prank != 1 && prank != 2) return r.Fail("position_ids must be [B, S] or [1] (an offset)");
  const int64_t heads = r.Int("num_heads", 0), rotary_attr = r.Int("rotary_embedding_dim", 0);
  auto dim = [&](const std::string& v, int64_t axis) { return r.Op("Slice", {r.Op("Shape", {v}), r.IntsConst({axis}), r.IntsConst({axis + 1})}); };
  std::string pos = r.In(1);
  if (prank == 1) {  // offset + 0 .. S-1, as [1, S]
    const std::string s = r.Op("Squeeze", {dim(r.In(0), rank == 3 ? 1 : 2), r.IntsConst({0})});
    const std::string range = r.Op("Range", {r.IntsConst({0}, true), s, r.IntsConst({1}, true)});
    pos = r.Op("Unsqueeze", {r.Op("Add", {range, r.Op("Cast", {pos}, {{"to", AttrValue::Type(DT_INT64)}})}), r.IntsConst({0})});
  }
  std::string x = r.In(0);
  if (rank == 3) {  // as [B, S, N, h]
    std::string shape;
    if (heads > 0) {
      shape = r.IntsConst({0, 0, heads, -1});
    } else {
      const std::string half = dim(r.In(2), 1);
      const std::string rot = rotary_attr > 0 ? r.IntsConst({rotary_attr}) : r.Op("Add", {half, half});
      shape = r.Op("Concat", {r.IntsConst({0, 0, -1}), rot}, {{"axis", AttrValue::Int(0)}});
    }
    x = r.Op("Reshape", {x, shape});
  }
  const std::string out = Rotate(r, x, rank == 3 ? 2 : 1, pos, r.In(2), r.In(3), r.Int("interleaved", 0) != 0, rotary_attr, rank == 4 ? r.Out(0) : "");
  if (rank == 3) r.Op("Reshape", {out, r.IntsConst({0, 0, -1})}, {}, r.Out(0));
  r.SetRank(r.Out(0), rank);
  return true;
}

// EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
// segment_embedding?, gamma, beta, mask?, position_ids?) -> output, mask_index?, embedding_sum?.
bool EmbedLayerNorm(const Node& n, Rewriter& r) {
  (void)n;
  auto gather = [&](const std::string& table, const std::string& ids) { return r.Op("Gather", {table, ids}, {{"axis", AttrValue::Int(0)}}); };
  std::string sum = gather(r.In(2), r.In(0));
  std::string pos_ids = r.In(8);
  if (pos_ids.empty()) {  // 0 .. S-1, broadcast over the batch
    std::string s = r.Op("Gather", {r.Op("Shape", {r.In(0)}), r.IntsConst({1}, true)}, {{"axis", AttrValue::Int(0)}});
    pos_ids = r.Op("Range", {r.IntsConst({0}, true), s, r.IntsConst({1}, true)});
  }
  const bool segments = !r.In(1).empty() && !r.In(4).empty();
  sum = r.Op("Add", {sum, gather(r.In(3), pos_ids)}, {}, segments ? "" : r.Out(2));
  if (segments) sum = r.Op("Add", {sum, gather(r.In(4), r.In(1))}, {}, r.Out(2));
  std::vector<std::string> ln{sum, r.In(5)};
  if (!r.In(6).empty()) ln.push_back(r.In(6));
  r.Op("LayerNormalization", ln, {{"axis", AttrValue::Int(-1)}, {"epsilon", AttrValue::Float(r.Float("epsilon", 1e-12f))}}, r.Out(0));
  r.SetRank(r.Out(0), 3);
  if (!r.Out(1).empty()) {
    if (r.Int("mask_index_type", 1) != 1) return r.Fail("mask_index_type " + std::to_string(r.Int("mask_index_type", 1)) + " is not supported (1 is)");
    if (!r.In(7).empty()) {  // each batch's count of mask values equal to 1
      std::string ones = r.Op("Cast", {r.Op("Equal", {r.In(7), r.Int32Const(1)})}, {{"to", AttrValue::Type(DT_INT32)}});
      r.Op("ReduceSum", {ones, r.IntsConst({1})}, {{"keepdims", AttrValue::Int(0)}}, r.Out(1));
    } else {  // no mask: zeros
      std::string b = r.Op("Slice", {r.Op("Shape", {r.In(0)}), r.IntsConst({0}), r.IntsConst({1})});
      r.Op("ConstantOfShape", {b}, {{"value", AttrValue::TensorValue(DT_INT32, Shape({1}), std::vector<uint8_t>(4, 0))}}, r.Out(1));
    }
    r.SetRank(r.Out(1), 1);
  }
  return true;
}

// ---- com.microsoft.nchwc: the channel-blocked layout of ONNX Runtime's CPU provider ----------------
// ONNX Runtime at ORT_ENABLE_ALL (and the transformers optimizer at opt_level 99) saves its NCHWc
// graph: tensors of [N, C, H, W] stored as [N, C/B, H, W, B] blocks of B channels (B = 16 on AVX-512
// CPUs, 8 on AVX2 ones: the machine that saved the file), channels padded to a multiple of B, and
// convolution weights reordered to match. Here the blocked tensors are read as plain NCHW ones of
// the padded channel count (every op on them is per channel or a convolution), the weights put back
// in OIHW order, and ReorderInput/ReorderOutput become the padding and the slice of channels.
int64_t NchwcBlock() {
  static const int64_t b = [] {
    if (const char* e = std::getenv("WEFT_NCHWC_BLOCK")) return static_cast<int64_t>(std::atoi(e));
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f")) return int64_t{16};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return int64_t{8};
#endif
    return int64_t{0};
  }();
  return b;
}

bool NchwcReorderInput(const Node& n, Rewriter& r) {
  (void)n;
  const int64_t b = NchwcBlock();
  std::string x = r.In(0);
  if (r.Int("channels_last", 0) != 0) x = r.Op("Transpose", {x}, {{"perm", AttrValue::ListInt({0, 3, 1, 2})}});
  // pads [0, 0, 0, 0, 0, (B - C % B) % B, 0, 0]
  const std::string c = r.Op("Slice", {r.Op("Shape", {x}), r.IntsConst({1}), r.IntsConst({2})});
  const std::string bb = r.IntsConst({b});
  const std::string extra = r.Op("Mod", {r.Op("Sub", {bb, r.Op("Mod", {c, bb})}), bb});
  const std::string pads = r.Op("Concat", {r.IntsConst({0, 0, 0, 0, 0}), extra, r.IntsConst({0, 0})}, {{"axis", AttrValue::Int(0)}});
  r.Op("Pad", {x, pads}, {}, r.Out(0));
  r.SetRank(r.Out(0), 4);
  return true;
}

bool NchwcReorderOutput(const Node& n, Rewriter& r) {
  (void)n;
  const int64_t c = r.Int("channels", 0);
  if (c <= 0) return r.Fail("channels must be positive");
  const bool last = r.Int("channels_last", 0) != 0;
  std::string y = r.Op("Slice", {r.In(0), r.IntsConst({0}), r.IntsConst({c}), r.IntsConst({1})}, {}, last ? "" : r.Out(0));
  if (last) r.Op("Transpose", {y}, {{"perm", AttrValue::ListInt({0, 2, 3, 1})}}, r.Out(0));
  r.SetRank(r.Out(0), 4);
  return true;
}

// Conv(X, W, B?, Sum?) with activation: activation(conv(X) + B + Sum). W as ONNX Runtime reordered
// it: [O/B][I/B][kh][kw][B in][B out] where the input channels (of a group) are whole blocks,
// [O/B][I][kh][kw][B out] for a plain NCHW input (channels not a multiple of B) and for depthwise
// filters (I = 1).
bool NchwcConv(const Node& n, Rewriter& r) {
  const int64_t b = NchwcBlock();
  const HostTensor* w = r.Constant(r.In(1));
  if (!w || w->dtype() != DT_FLOAT || w->shape().GetDimNum() != 4)
    return r.Fail("the weights must be a constant float32 4-D tensor (as ONNX Runtime reorders them)");
  const int64_t o = w->shape().GetDim(0), i = w->shape().GetDim(1), kh = w->shape().GetDim(2), kw = w->shape().GetDim(3);
  if (o % b) return r.Fail("the weights' " + std::to_string(o) + " output channels are not a multiple of the block size " + std::to_string(b));
  const bool blocked_in = i % b == 0;  // per group: grouped convolutions with whole blocks per group too
  HostTensor plain(DT_FLOAT, w->shape());
  const float* src = static_cast<const float*>(w->data());
  float* dst = plain.data_as<float>();
  const int64_t k = kh * kw;
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t ic = 0; ic < i; ++ic)
      for (int64_t t = 0; t < k; ++t) {
        const int64_t ob = oc / b, bo = oc % b;
        const int64_t at = blocked_in ? (((ob * (i / b) + ic / b) * k + t) * b + ic % b) * b + bo : ((ob * i + ic) * k + t) * b + bo;
        dst[(oc * i + ic) * k + t] = src[at];
      }
  std::vector<std::string> ins{r.In(0), r.TensorConst(std::move(plain))};
  if (!r.In(2).empty()) ins.push_back(r.In(2));
  std::map<std::string, AttrValue> attrs;
  for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (const AttrValue* v = r.Attr(a)) attrs[a] = *v;
  const std::string act = r.Str("activation");
  std::vector<float> params;
  if (const AttrValue* p = r.Attr("activation_params"); p && p->type() == WEFT_ATTR_LIST_FLOAT) params.assign(p->floats().begin(), p->floats().end());
  const bool sum = !r.In(3).empty();
  std::string y = r.Op("Conv", ins, attrs, sum || !act.empty() ? "" : r.Out(0));
  if (sum) y = r.Op("Add", {y, r.In(3)}, {}, act.empty() ? r.Out(0) : "");
  if (!act.empty() && !r.Activation(act, params, y, r.Out(0))) return true;
  r.SetRank(r.Out(0), 4);
  (void)n;
  return true;
}

// Upsample(X) with integer `scales` per dim, mode nearest or linear: a Resize.
bool NchwcUpsample(const Node& n, Rewriter& r) {
  (void)n;
  const AttrValue* sc = r.Attr("scales");
  if (!sc || sc->type() != WEFT_ATTR_LIST_INT || sc->ints().empty()) return r.Fail("scales must list one integer per dim");
  HostTensor scales(DT_FLOAT, Shape({static_cast<int64_t>(sc->ints().size())}));
  for (size_t d = 0; d < sc->ints().size(); ++d) scales.data_as<float>()[d] = static_cast<float>(sc->ints()[d]);
  std::string mode = r.Str("mode");
  std::string ctm = r.Str("coordinate_transformation_mode");
  r.Op("Resize", {r.In(0), "", r.TensorConst(std::move(scales))},
       {{"mode", AttrValue::String(mode.empty() ? "nearest" : mode)}, {"coordinate_transformation_mode", AttrValue::String(ctm.empty() ? "asymmetric" : ctm)}},
       r.Out(0));
  r.SetRank(r.Out(0), static_cast<int>(sc->ints().size()));
  return true;
}

bool NchwcPool(const Node& n, Rewriter& r) {  // the standard operator of the same name and attributes
  std::vector<std::string> ins{r.In(0)};
  r.Op(n.op_type, ins, n.attrs, r.Out(0));
  r.SetRank(r.Out(0), 4);
  return true;
}

}  // namespace

bool LowerOnnxRuntimeNchwcOp(const Node& n, OnnxContribContext& ctx, std::vector<Node>* out) {
  if (n.domain != "com.microsoft.nchwc") return false;
  Rewriter r(n, ctx, out);
  if (NchwcBlock() <= 0) {
    r.Fail("this CPU has no NCHWc block size (ONNX Runtime's channel-blocked layout needs AVX2 or AVX-512; WEFT_NCHWC_BLOCK=8 or 16 sets it)");
    return true;
  }
  using Fn = bool (*)(const Node&, Rewriter&);
  static const std::map<std::string, Fn> kRewrites = {
      {"ReorderInput", NchwcReorderInput}, {"ReorderOutput", NchwcReorderOutput}, {"Conv", NchwcConv}, {"Upsample", NchwcUpsample},
      {"MaxPool", NchwcPool},           {"AveragePool", NchwcPool},           {"GlobalMaxPool", NchwcPool},
      {"GlobalAveragePool", NchwcPool},
  };
  auto it = kRewrites.find(n.op_type);
  if (it == kRewrites.end()) {
    r.Fail("is not an operator of ONNX Runtime's NCHWc layout that Weft reads");
    return true;
  }
  it->second(n, r);
  return true;
}

namespace {

// MatMulNBits (weight-only block quantization, what onnxruntime.quantization's
// MatMulNBitsQuantizer and ONNX Runtime's model builder write for language models): A [..., K]
// times the dequantized B, B [N, k_blocks, blob] holding `bits`-bit codes packed low bit first along
// K, block_size codes a block, each block of column n with a scale (and a zero point: packed
// codes of the same width, one of A's type per block, or 2^(bits - 1) when absent); plus bias.
// float32 with 1-, 2-, 4- or 8-bit codes runs as Weft's MatMulNBits on the packed codes. Other
// widths and float16 are dequantized once here into a constant [K, N] of A's type (4-bit weights
// take 8x the memory) and the node becomes MatMul (+ Add).
bool MatMulNBits(const Node&, Rewriter& r) {
  const int64_t K = r.Int("K", -1), N = r.Int("N", -1), bits = r.Int("bits", 4), block = r.Int("block_size", -1);
  if (K <= 0 || N <= 0) return r.Fail("attributes K and N must be given and positive");
  if (bits < 1 || bits > 8) return r.Fail("bits is " + std::to_string(bits) + "; 1 to 8 are defined");
  if (block < 16 || (block & (block - 1)) != 0 || block > (int64_t{1} << 20))
    return r.Fail("block_size is " + std::to_string(block) + "; it must be a power of 2 from 16 to 2^20");
  if (K > (int64_t{1} << 40) / N) return r.Fail("K x N = " + std::to_string(K) + " x " + std::to_string(N) + " is too large");
  const int64_t blocks = (K + block - 1) / block, blob = block * bits / 8;
  const HostTensor* b = r.Constant(r.In(1));
  const HostTensor* sc = r.Constant(r.In(2));
  if (!b || !sc) return r.Fail("B and scales must be constants (initializers)");
  if (b->dtype() != DT_UINT8 || b->shape().GetShapeSize() != N * blocks * blob)
    return r.Fail("B " + b->shape().ToString() + " must be uint8 [N " + std::to_string(N) + ", k_blocks " + std::to_string(blocks) + ", blob " +
                  std::to_string(blob) + "]");
  if ((sc->dtype() != DT_FLOAT && sc->dtype() != DT_FLOAT16) || sc->shape().GetShapeSize() != N * blocks)
    return r.Fail("scales " + sc->shape().ToString() + " must be float32 or float16 with N x k_blocks = " + std::to_string(N * blocks) + " values");
  auto as_float = [](const HostTensor* t, int64_t i) {
    return t->dtype() == DT_FLOAT16 ? static_cast<float>(t->data_as<float16>()[i]) : t->data_as<float>()[i];
  };
  // Code `i` of a packed run of `bits`-bit codes, low bit first.
  auto code = [&](const uint8_t* row, int64_t i) {
    int32_t v = 0;
    for (int64_t bit = 0; bit < bits; ++bit) {
      const int64_t at = i * bits + bit;
      v |= ((row[at / 8] >> (at % 8)) & 1) << bit;
    }
    return v;
  };
  const HostTensor* zp = nullptr;
  const int64_t zp_row = (blocks * bits + 7) / 8;
  if (!r.In(3).empty()) {
    zp = r.Constant(r.In(3));
    if (!zp) return r.Fail("zero_points must be a constant (an initializer)");
    const bool packed = zp->dtype() == DT_UINT8 && zp->shape().GetShapeSize() == N * zp_row;
    const bool per_block = (zp->dtype() == DT_FLOAT || zp->dtype() == DT_FLOAT16) && zp->shape().GetShapeSize() == N * blocks;
    if (!packed && !per_block)
      return r.Fail("zero_points " + zp->shape().ToString() + " must be uint8 with N x ceil(k_blocks x bits / 8) = " + std::to_string(N * zp_row) +
                    " bytes, or float with N x k_blocks = " + std::to_string(N * blocks) + " values");
  }
  // g_idx (act-order block indices) is deprecated in ONNX Runtime's schema, and its CPU kernel
  // reads it for the first 8 codes of each block only: refused rather than run either way.
  if (!r.In(4).empty()) return r.Fail("g_idx (act-order block indices, deprecated) is not supported; quantize without act-order");
  // float32 A with codes that never straddle a byte (1, 2, 4, 8 bits): the codes stay packed and
  // Weft's MatMulNBits multiplies from them (ops/matmul_nbits.cc).
  const bool zp_native = !zp || zp->dtype() == DT_FLOAT || zp->dtype() == DT_UINT8;
  if (sc->dtype() == DT_FLOAT && 8 % bits == 0 && zp_native) {
    r.Op("MatMulNBits", {r.In(0), r.In(1), r.In(2), r.In(3), "", r.In(5)}, {{"K", AttrValue::Int(K)}, {"N", AttrValue::Int(N)},
         {"bits", AttrValue::Int(bits)}, {"block_size", AttrValue::Int(block)}}, r.Out(0));
    r.Last().domain = "com.microsoft";
    r.SetRank(r.Out(0), r.Rank(r.In(0)));
    return true;
  }
  if (static_cast<double>(K) * static_cast<double>(N) > static_cast<double>(int64_t{1} << 31))
    return r.Fail("K x N = " + std::to_string(K) + " x " + std::to_string(N) + " weights are too many to dequantize here");
  HostTensor w(DT_FLOAT, Shape({K, N}));
  float* pw = w.data_as<float>();
  const auto* pb = b->data_as<uint8_t>();
  const float dflt = static_cast<float>(1 << (bits - 1));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t blk = k / block;
      const int64_t at = n * blocks + blk;
      float z = dflt;
      if (zp && zp->dtype() == DT_UINT8) z = static_cast<float>(code(zp->data_as<uint8_t>() + n * zp_row, blk));
      else if (zp) z = as_float(zp, at);
      const int32_t q = code(pb + (n * blocks + k / block) * blob, k % block);
      pw[k * N + n] = (static_cast<float>(q) - z) * as_float(sc, at);
    }
  std::string wname = r.TensorConst(std::move(w));
  if (sc->dtype() == DT_FLOAT16) wname = r.Op("Cast", {wname}, {{"to", AttrValue::Type(DT_FLOAT16)}});  // A is float16 too
  std::string y = r.Op("MatMul", {r.In(0), wname}, {}, r.In(5).empty() ? r.Out(0) : "");
  if (!r.In(5).empty()) r.Op("Add", {y, r.In(5)}, {}, r.Out(0));
  return true;
}

// RotaryEmbedding (opset 23): X [B, S, hidden] (num_heads heads) or [B, N, S, h], cos_cache and
// sin_cache [positions, rotary / 2] read at position_ids [B, S], or without position_ids already
// [B, S, rotary / 2]; rotary_embedding_dim 0 turns the whole head.
bool StandardRotaryEmbedding(const Node&, Rewriter& r) {
  const int rank = r.Rank(r.In(0));
  if (rank != 3 && rank != 4) return r.Fail(rank < 0 ? "the rank of X is not declared (value_info)" : "X must be 3-D or 4-D");
  const int64_t heads = r.Int("num_heads", 0), rotary_attr = r.Int("rotary_embedding_dim", 0);
  if (rank == 3 && heads <= 0) return r.Fail("3-D X needs num_heads");
  if (rotary_attr < 0 || rotary_attr % 2) return r.Fail("rotary_embedding_dim must be 0 or a positive even number");
  std::string x = r.In(0);
  if (rank == 3) {  // as [B, S, N, h], the head size spelled out (an empty sequence has no -1 to infer)
    const std::string shape = r.Op("Shape", {x}), n = r.IntsConst({heads});
    const std::string bs = r.Op("Slice", {shape, r.IntsConst({0}), r.IntsConst({2})});
    const std::string h = r.Op("Div", {r.Op("Slice", {shape, r.IntsConst({2}), r.IntsConst({3})}), n});
    x = r.Op("Reshape", {x, r.Op("Concat", {bs, n, h}, {{"axis", AttrValue::Int(0)}})});
  }
  const std::string turned =
      Rotate(r, x, rank == 3 ? 2 : 1, r.In(3), r.In(1), r.In(2), r.Int("interleaved", 0) != 0, rotary_attr, rank == 4 ? r.Out(0) : "", true);
  if (rank == 3) r.Op("Reshape", {turned, r.Op("Shape", {r.In(0)})}, {}, r.Out(0));
  r.SetRank(r.Out(0), rank);
  return true;
}

// SwiGLU (opset 26): A * sigmoid(alpha * A) * B.
bool SwiGlu(const Node&, Rewriter& r) {
  r.Op("Mul", {r.Op("Swish", {r.In(0)}, {{"alpha", AttrValue::Float(r.Float("alpha", 1.f))}}), r.In(1)}, {}, r.Out(0));
  r.SetRank(r.Out(0), r.Rank(r.In(0)));
  return true;
}

// LpNormalization: X over its L1 or L2 norm along `axis`; where the norm is 0, 0.
bool LpNormalization(const Node&, Rewriter& r) {
  const int64_t p = r.Int("p", 2);
  if (p != 1 && p != 2) return r.Fail("p is " + std::to_string(p) + "; it must be 1 or 2");
  const std::string norm = r.Op(p == 1 ? "ReduceL1" : "ReduceL2", {r.In(0), r.IntsConst({r.Int("axis", -1)})}, {{"keepdims", AttrValue::Int(1)}});
  const std::string zero = r.Op("CastLike", {r.FloatConst(0.f), r.In(0)});
  r.Op("Where", {r.Op("Equal", {norm, zero}), zero, r.Op("Div", {r.In(0), norm})}, {}, r.Out(0));
  r.SetRank(r.Out(0), r.Rank(r.In(0)));
  return true;
}

// LpPool: (sum over the window of |x|^p)^(1/p), as p-th powers averaged over the whole window
// (padding counted) times its size.
bool LpPool(const Node& n, Rewriter& r) {
  const float p = r.Float("p", 2.f);
  if (!(p > 0.f)) return r.Fail("p must be positive");
  if (r.Int("ceil_mode", 0) != 0) return r.Fail("ceil_mode=1 is not supported (a partial window's sum is not an average times the kernel size)");
  const AttrValue* k = r.Attr("kernel_shape");
  if (!k || k->type() != WEFT_ATTR_LIST_INT || k->ints().empty()) return r.Fail("kernel_shape is required");
  int64_t count = 1;
  for (int64_t d : k->ints()) {
    if (d <= 0) return r.Fail("kernel_shape entries must be positive");
    count *= d;
  }
  const std::string x = r.In(0);
  const std::string typed_p = r.Op("CastLike", {r.FloatConst(p), x});
  const std::string powered = p == 2.f ? r.Op("Mul", {x, x}) : p == 1.f ? r.Op("Abs", {x}) : r.Op("Pow", {r.Op("Abs", {x}), typed_p});
  std::map<std::string, AttrValue> attrs = Without(n.attrs, {"p"});
  attrs["count_include_pad"] = AttrValue::Int(1);
  const std::string sum = r.Op("Mul", {r.Op("AveragePool", {powered}, attrs), r.Op("CastLike", {r.FloatConst(static_cast<float>(count)), x})});
  if (p == 2.f) r.Op("Sqrt", {sum}, {}, r.Out(0));
  else if (p == 1.f) r.Op("Identity", {sum}, {}, r.Out(0));
  else r.Op("Pow", {sum, r.Op("CastLike", {r.FloatConst(1.f / p), x})}, {}, r.Out(0));
  r.SetRank(r.Out(0), r.Rank(x));
  return true;
}

// CenterCropPad (opset 18): each of `axes` (all by default) cropped or zero-padded to `shape`
// about its centre; an odd difference puts the extra element at the end.
bool CenterCropPad(const Node&, Rewriter& r) {
  std::vector<int64_t> axes = r.Ints("axes");
  if (axes.empty()) {
    const int rank = r.Rank(r.In(0));
    if (rank < 0) return r.Fail("without axes, the rank of input_data must be declared (value_info)");
    for (int64_t k = 0; k < rank; ++k) axes.push_back(k);
  }
  const std::string ax = r.IntsConst(axes);
  // one target length per axis (a reshape that fails names a shape input of another length)
  const std::string want =
      r.Op("Reshape", {r.Op("Cast", {r.In(1)}, {{"to", AttrValue::Type(DT_INT64)}}), r.IntsConst({static_cast<int64_t>(axes.size())})});
  const std::string dims = r.Op("Gather", {r.Op("Shape", {r.In(0)}), ax}, {{"axis", AttrValue::Int(0)}});
  const std::string zero = r.IntsConst({0}), two = r.IntsConst({2});
  const std::string over = r.Op("Max", {r.Op("Sub", {dims, want}), zero}), under = r.Op("Max", {r.Op("Sub", {want, dims}), zero});
  const std::string start = r.Op("Div", {over, two});
  const std::string cropped = r.Op("Slice", {r.In(0), start, r.Op("Add", {start, r.Op("Min", {dims, want})}), ax});
  const std::string before = r.Op("Div", {under, two});
  r.Op("Pad", {cropped, r.Op("Concat", {before, r.Op("Sub", {under, before})}, {{"axis", AttrValue::Int(0)}}), "", ax}, {}, r.Out(0));
  r.SetRank(r.Out(0), r.Rank(r.In(0)));
  return true;
}

using StandardRewrite = bool (*)(const Node&, Rewriter&);
const std::map<std::string, StandardRewrite>& StandardRewrites() {
  static const std::map<std::string, StandardRewrite> kRewrites = {
      {"RotaryEmbedding", StandardRotaryEmbedding}, {"SwiGLU", SwiGlu},       {"LpNormalization", LpNormalization},
      {"LpPool", LpPool},                           {"CenterCropPad", CenterCropPad},
  };
  return kRewrites;
}

}  // namespace

bool IsStandardFunctionOp(const std::string& op_type) { return StandardRewrites().count(op_type) > 0; }

bool LowerOnnxStandardFunctionOp(const Node& n, OnnxContribContext& ctx, std::vector<Node>* out) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  auto it = StandardRewrites().find(n.op_type);
  if (it == StandardRewrites().end()) return false;
  Rewriter r(n, ctx, out);
  return it->second(n, r);
}

// QLinearAveragePool with channels_last = 1 (ONNX Runtime's NHWC form): the channels-first op
// between two Transposes. Each output averages the same input values in the same order, so the
// result is the channels-first op's.
bool ChannelsLastQLinearAveragePool(const Node& n, Rewriter& r) {
  const int rank = r.Rank(r.In(0));
  if (rank < 3) return r.Fail("channels_last = 1 needs X's rank, which the model does not give (declare X's shape)");
  std::vector<int64_t> to_first{0, rank - 1}, to_last{0};
  for (int64_t d = 1; d < rank - 1; ++d) to_first.push_back(d);
  for (int64_t d = 2; d < rank; ++d) to_last.push_back(d);
  to_last.push_back(1);
  std::vector<std::string> ins{r.Op("Transpose", {r.In(0)}, {{"perm", AttrValue::ListInt(to_first)}})};
  for (size_t k = 1; k < n.inputs.size(); ++k) ins.push_back(n.inputs[k]);
  std::map<std::string, AttrValue> attrs = n.attrs;
  attrs.erase("channels_last");
  const std::string y = r.Op("QLinearAveragePool", ins, attrs);
  r.Last().domain = n.domain;
  r.Op("Transpose", {y}, {{"perm", AttrValue::ListInt(to_last)}}, r.Out(0));
  r.SetRank(r.Out(0), rank);
  return true;
}

bool LowerOnnxRuntimeContribOp(const Node& n, OnnxContribContext& ctx, std::vector<Node>* out) {
  if (n.domain != "com.microsoft") return false;
  if (n.op_type == "QLinearAveragePool") {
    auto cl = n.attrs.find("channels_last");
    if (cl == n.attrs.end() || cl->second.type() != WEFT_ATTR_INT || cl->second.i() == 0) return false;  // the op itself
    Rewriter r(n, ctx, out);
    ChannelsLastQLinearAveragePool(n, r);
    return true;
  }
  using Fn = bool (*)(const Node&, Rewriter&);
  static const std::map<std::string, Fn> kRewrites = {
      {"FusedConv", FusedConv},
      {"FusedGemm", FusedGemm},
      {"FusedMatMul", FusedMatMul},
      {"MatMulNBits", MatMulNBits},
      {"SkipLayerNormalization", SkipLayerNorm},
      {"SkipSimplifiedLayerNormalization", SkipSimplifiedLayerNorm},
      {"Attention", Attention},
      {"MultiHeadAttention", MultiHeadAttention},
      {"RotaryEmbedding", RotaryEmbedding},
      {"EmbedLayerNormalization", EmbedLayerNorm},
      {"BiasGelu", [](const Node&, Rewriter& r) {  // Gelu(A + B)
         r.Op("Gelu", {r.Op("Add", {r.In(0), r.In(1)})}, {}, r.Out(0));
         return true;
       }},
      {"FastGelu", [](const Node&, Rewriter& r) {  // Gelu's tanh approximation of X (+ bias)
         std::string x = r.In(1).empty() ? r.In(0) : r.Op("Add", {r.In(0), r.In(1)});
         r.Op("Gelu", {x}, {{"approximate", AttrValue::String("tanh")}}, r.Out(0));
         return true;
       }},
      {"GemmFastGelu", [](const Node&, Rewriter& r) {  // Gelu's tanh approximation of X W (+ bias)
         std::string y = r.Op("MatMul", {r.In(0), r.In(1)});
         if (!r.In(2).empty()) y = r.Op("Add", {y, r.In(2)});
         r.Op("Gelu", {y}, {{"approximate", AttrValue::String("tanh")}}, r.Out(0));
         return true;
       }},
      {"BiasAdd", [](const Node&, Rewriter& r) {  // X + bias + skip
         r.Op("Add", {r.Op("Add", {r.In(0), r.In(1)}), r.In(2)}, {}, r.Out(0));
         return true;
       }},
      {"QLinearWhere", [](const Node&, Rewriter& r) {
         // condition ? requantize(X) : requantize(Y), each value dequantized and quantized with Z's
         // parameters, as ONNX Runtime's tables map them (condition, X, x_scale, x_zero_point, Y,
         // y_scale, y_zero_point, z_scale, z_zero_point; all nine present).
         for (size_t k = 0; k < 9; ++k)
           if (r.In(k).empty()) return r.Fail("takes nine inputs (condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale, z_zero_point)");
         auto requant = [&](size_t at) {
           return r.Op("QuantizeLinear", {r.Op("DequantizeLinear", {r.In(at), r.In(at + 1), r.In(at + 2)}), r.In(7), r.In(8)});
         };
         r.Op("Where", {r.In(0), requant(1), requant(4)}, {}, r.Out(0));
         return true;
       }},
  };
  auto it = kRewrites.find(n.op_type);
  if (it == kRewrites.end()) return false;
  Rewriter r(n, ctx, out);
  it->second(n, r);
  return true;
}

}  // namespace weft::internal
