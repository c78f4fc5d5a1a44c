// What the built-in emitters share (EmittableOp, weft aot): the embedded C kernel text split into
// helpers, and C literals that read back as the same values.
#ifndef WEFT_OPS_AOT_EMIT_H_
#define WEFT_OPS_AOT_EMIT_H_

#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "weft/custom_op.h"

namespace weft::ops::aot {

// The helper `name` of `text` (a kernel file with "@helper NAME [needs: A B]" markers): its
// section, after the sections it needs (recursively), each emitted under its own key so that a
// module holds it once.
inline void EmitHelper(const EmitContext* ctx, const char* text, const std::string& name, std::set<std::string>* seen = nullptr) {
  std::set<std::string> local;
  if (!seen) seen = &local;
  if (!seen->insert(name).second) return;
  const std::string all = text;
  const std::string marker = "/* @helper " + name;
  size_t at = all.find(marker);
  while (at != std::string::npos && all[at + marker.size()] != ' ' && all[at + marker.size()] != '*') at = all.find(marker, at + 1);
  if (at == std::string::npos) throw std::runtime_error("no C helper named '" + name + "' in the kernel text");
  size_t line_end = all.find('\n', at);
  std::string header = all.substr(at, line_end - at);
  size_t needs = header.find("needs:");
  if (needs != std::string::npos) {
    std::string rest = header.substr(needs + 6);
    size_t close = rest.find("*/");
    rest = rest.substr(0, close);
    size_t p = 0;
    while (p < rest.size()) {
      while (p < rest.size() && rest[p] == ' ') ++p;
      size_t q = p;
      while (q < rest.size() && rest[q] != ' ') ++q;
      if (q > p) EmitHelper(ctx, text, rest.substr(p, q - p), seen);
      p = q;
    }
  }
  size_t end = all.find("/* @helper ", line_end);
  ctx->Helper(name, all.substr(line_end + 1, end == std::string::npos ? std::string::npos : end - line_end - 1));
}

// The kernel text (ops/aot/kernels.c) every built-in emitter takes its helpers from.
inline const char* Kernels() {
  static const char text[] =
#include "aot_kernels.inc"
      ;
  return text;
}

// Output 0 as input 0's bytes (reshape, flatten, identity, ...): a copy, or nothing when the
// planner gave both the same place.
inline graphStatus EmitCopy(const EmitContext* ctx) {
  const Tensor* x = ctx->GetInputTensor(0);
  ctx->Include("<string.h>");
  ctx->Run("{\n  const void* src = " + ctx->Input(0, "uint8_t") + ";\n  void* dst = " + ctx->Output(0, "uint8_t") +
           ";\n  if (dst != src) memcpy(dst, src, " + std::to_string(x->GetShapeSize() * static_cast<int64_t>(DataTypeSize(x->GetDataType()))) +
           "u);\n}\n");
  return GRAPH_SUCCESS;
}

// The instance index of IR input `ir` (present), for EmitContext::Input: absent optional inputs
// before it take no place.
inline size_t InputAt(const EmitContext* ctx, size_t ir) {
  size_t at = 0;
  for (size_t i = 0; i < ir; ++i) at += ctx->GetIrInputInstanceNum(i);
  return at;
}

// An integer as a C literal of at least its width (INT32_MIN and INT64_MIN spelled safely).
inline std::string IntLit(int64_t v) {
  if (v == INT64_MIN) return "INT64_MIN";
  if (v < INT32_MIN || v > INT32_MAX) return "INT64_C(" + std::to_string(v) + ")";
  if (v == INT32_MIN) return "INT32_MIN";
  return std::to_string(v);
}

// "static const weft_bcast g = {...};" for an elementwise op over a and b giving y (the output's
// dims and each input's strides along them, 0 where it broadcasts), or "" when both have y's shape.
inline std::string Broadcast(const Shape& a, const Shape& b, const Shape& y) {
  if (a == y && b == y) return "";
  const size_t r = y.GetDimNum();
  if (r > 8) throw std::runtime_error("broadcasting over more than 8 dims in the generated C");
  auto strides = [&](const Shape& s) {
    std::vector<int64_t> st(r, 0);
    int64_t acc = 1;
    for (size_t k = 0; k < s.GetDimNum(); ++k) {
      const size_t d = s.GetDimNum() - 1 - k, od = r - 1 - k;
      st[od] = s.GetDim(d) == 1 ? 0 : acc;
      acc *= s.GetDim(d);
    }
    return st;
  };
  auto list = [&](const std::vector<int64_t>& v) {
    std::string t = "{";
    for (size_t k = 0; k < 8; ++k) t += (k ? ", " : "") + IntLit(k < v.size() ? v[k] : 0);
    return t + "}";
  };
  std::vector<int64_t> dims;
  for (size_t k = 0; k < r; ++k) dims.push_back(y.GetDim(k));
  return "static const weft_bcast g = {" + std::to_string(r) + ", " + list(dims) + ", " + list(strides(a)) + ", " + list(strides(b)) + "};\n";
}

inline graphStatus EmitGather(const EmitContext* ctx, std::vector<int64_t> dims, std::vector<int64_t> src, int64_t base);

// Output 0 as a gather from input 0 through weft_strided_copy (transposes and slices): output axis
// k has extent dims[k] and walks input axis axis[k] in steps of step[k]; input axis a starts at
// start[a] (start empty: at 0).
inline graphStatus EmitStridedCopy(const EmitContext* ctx, std::vector<int64_t> dims, const std::vector<int64_t>& axis,
                                   const std::vector<int64_t>& step, const std::vector<int64_t>& start) {
  const Tensor* x = ctx->GetInputTensor(0);
  const Shape& xs = x->GetShape();
  const size_t rank = xs.GetDimNum(), elem = DataTypeSize(x->GetDataType());
  if (rank > 8 || dims.size() > 8 || (elem != 1 && elem != 2 && elem != 4 && elem != 8))
    return ctx->SetError("the generated C copies at most 8 dims of 1, 2, 4 or 8-byte elements"), GRAPH_FAILED;
  std::vector<int64_t> in_stride(rank, 1), src;
  for (size_t k = rank; k-- > 1;) in_stride[k - 1] = in_stride[k] * xs.GetDim(k);
  int64_t base = 0;
  for (size_t a = 0; a < start.size() && a < rank; ++a) base += start[a] * in_stride[a];
  for (size_t k = 0; k < dims.size(); ++k) src.push_back(step[k] * in_stride[static_cast<size_t>(axis[k])]);
  return EmitGather(ctx, dims, src, base);
}

// Output 0 as a gather from input 0 through weft_strided_copy: output axis k has extent dims[k]
// and steps src[k] elements through the input, from element `base`.
inline graphStatus EmitGather(const EmitContext* ctx, std::vector<int64_t> dims, std::vector<int64_t> src, int64_t base) {
  const size_t elem = DataTypeSize(ctx->GetInputTensor(0)->GetDataType());
  if (dims.size() > 8 || (elem != 1 && elem != 2 && elem != 4 && elem != 8))
    return ctx->SetError("the generated C copies at most 8 dims of 1, 2, 4 or 8-byte elements"), GRAPH_FAILED;
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  if (dims.empty()) dims.push_back(1), src.push_back(0);
  EmitHelper(ctx, Kernels(), "weft_strided_copy");
  ctx->Run("weft_strided_copy(" + std::to_string(elem) + ", " + std::to_string(dims.size()) + ", " + ctx->Const("dims", DT_INT64, dims) + ", " +
           ctx->Const("src_stride", DT_INT64, src) + ", " + IntLit(base) + ", " + IntLit(count) + ", " + ctx->Input(0, "void") + ", " +
           ctx->Output(0, "void") + ");\n");
  return GRAPH_SUCCESS;
}

// The C type of a tensor element in generated code ("" for types the generated C does not take:
// float16, bfloat16, strings). bool is uint8_t (0 or 1).
inline std::string CType(DataType t) {
  switch (t) {
    case DT_FLOAT: return "float";
    case DT_DOUBLE: return "double";
    case DT_INT8: return "int8_t";
    case DT_INT16: return "int16_t";
    case DT_INT32: return "int32_t";
    case DT_INT64: return "int64_t";
    case DT_UINT8: case DT_BOOL: return "uint8_t";
    case DT_UINT16: return "uint16_t";
    case DT_UINT32: return "uint32_t";
    case DT_UINT64: return "uint64_t";
    default: return "";
  }
}

// Output 0 = `expr` over `a` (an element of input 0) and `b` (of input 1), elementwise with ONNX
// broadcasting, stored as `out_type`.
inline graphStatus EmitMap2(const EmitContext* ctx, const std::string& expr, const std::string& out_type) {
  const Tensor* a = ctx->GetInputTensor(0);
  const Tensor* b = ctx->GetInputTensor(1);
  const Tensor* y = ctx->GetOutputTensor(0);
  const std::string ta = CType(a->GetDataType()), tb = CType(b->GetDataType());
  if (ta.empty() || tb.empty() || out_type.empty())
    return ctx->SetError(std::string("the generated C has no ") + DataTypeName(a->GetDataType()) + " x " + DataTypeName(b->GetDataType()) +
                         " form of this op"), GRAPH_FAILED;
  const std::string g = Broadcast(a->GetShape(), b->GetShape(), y->GetShape());
  ctx->Include("<math.h>");
  if (!g.empty()) EmitHelper(ctx, Kernels(), "weft_broadcast");
  ctx->Run("{\n  " + g + "  const " + ta + "* pa = " + ctx->Input(0, ta.c_str()) + ";\n  const " + tb + "* pb = " + ctx->Input(1, tb.c_str()) + ";\n  " + out_type +
           "* py = " + ctx->Output(0, out_type.c_str()) + ";\n  int64_t o, i = 0, j = 0;\n  for (o = 0; o < " + IntLit(y->GetShapeSize()) + "; ++o) {\n    " +
           (g.empty() ? std::string("i = j = o;") : std::string("weft_bcast_index(&g, o, &i, &j);")) + "\n    {\n      const " + ta +
           " a = pa[i];\n      const " + tb + " b = pb[j];\n      py[o] = (" + out_type + ")(" + expr + ");\n    }\n  }\n}\n");
  return GRAPH_SUCCESS;
}

// A float as a C literal that converts back to the same float (inf and NaN through math.h).
inline std::string FloatLit(float v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "HUGE_VALF" : "(-HUGE_VALF)";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s + "f";
}

}  // namespace weft::ops::aot

#endif  // WEFT_OPS_AOT_EMIT_H_
