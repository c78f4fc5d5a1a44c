// Einsum: Einstein summation over any number of operands (ONNX opset 12), explicit ("ij,jk->ik")
// or implicit ("ij,jk": the labels that appear once, in alphabetical order, after the ellipsis
// dims) output, an ellipsis ("...") broadcasting as NumPy does, a label repeated within an operand
// taking its diagonal. Evaluated as NumPy and ONNX Runtime do: each operand's diagonals taken and
// its own labels summed out, then the operands contracted left to right, each pair as a batched
// matrix product (batch labels, the left operand's, the labels summed, the right operand's).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

constexpr int kLetters = 52;  // a-z, A-Z; ellipsis dims take the labels after them

struct Equation {
  std::vector<std::vector<int>> in;  // each operand's label per axis (ellipsis expanded)
  std::vector<int> out;
  std::vector<int64_t> size;  // per label: its extent (the largest, for broadcast ellipsis dims)
  int labels = kLetters;
};

int LabelOf(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}
char CharOf(int l) { return static_cast<char>(l < 26 ? 'a' + l : 'A' + (l - 26)); }

// The equation over operands of these shapes; false with *err set when it does not fit them.
bool Parse(const std::string& text, const std::vector<Shape>& shapes, Equation* eq, std::string* err) {
  std::string s;
  for (char c : text)
    if (c != ' ') s += c;
  const size_t arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size())
    return *err = "equation '" + text + "' names " + std::to_string(terms.size()) + " operands; the node has " + std::to_string(shapes.size()), false;
  // Letters per term and where its ellipsis is.
  struct Term {
    std::vector<int> letters;
    int ellipsis_at = -1;  // index into letters before which the ellipsis dims go
  };
  auto parse_term = [&](const std::string& t, Term* out) {
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 3, "...") == 0) {
        if (out->ellipsis_at >= 0) return *err = "'" + t + "' has more than one ellipsis", false;
        out->ellipsis_at = static_cast<int>(out->letters.size());
        i += 2;
        continue;
      }
      const int l = LabelOf(t[i]);
      if (l < 0) {
        const unsigned char c = static_cast<unsigned char>(t[i]);
        char code[8];
        std::snprintf(code, sizeof(code), "0x%02X", c);
        const std::string shown = c >= 0x20 && c < 0x7f ? std::string("'") + t[i] + "'" : std::string("the byte ") + code;
        return *err = "the equation has " + shown + ", which is not a letter a-z or A-Z, ',', '->' or '...'", false;
      }
      out->letters.push_back(l);
    }
    return true;
  };
  std::vector<Term> in(terms.size());
  int ell_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (!parse_term(terms[k], &in[k])) return false;
    const int rank = static_cast<int>(shapes[k].GetDimNum()), letters = static_cast<int>(in[k].letters.size());
    if (in[k].ellipsis_at < 0 ? rank != letters : rank < letters)
      return *err = "operand " + std::to_string(k) + " " + shapes[k].ToString() + " does not have the dims '" + terms[k] + "' names", false;
    ell_rank = std::max(ell_rank, in[k].ellipsis_at < 0 ? 0 : rank - letters);
  }
  eq->labels = kLetters + ell_rank;
  eq->size.assign(static_cast<size_t>(eq->labels), -1);
  std::vector<int> count(static_cast<size_t>(eq->labels), 0);
  eq->in.assign(terms.size(), {});
  for (size_t k = 0; k < terms.size(); ++k) {
    const int rank = static_cast<int>(shapes[k].GetDimNum()), e = in[k].ellipsis_at < 0 ? 0 : rank - static_cast<int>(in[k].letters.size());
    std::vector<int>& ax = eq->in[k];
    for (int i = 0; i < static_cast<int>(in[k].letters.size()); ++i) {
      if (i == in[k].ellipsis_at)
        for (int j = 0; j < e; ++j) ax.push_back(kLetters + ell_rank - e + j);
      ax.push_back(in[k].letters[static_cast<size_t>(i)]);
    }
    if (in[k].ellipsis_at == static_cast<int>(in[k].letters.size()))
      for (int j = 0; j < e; ++j) ax.push_back(kLetters + ell_rank - e + j);
    std::vector<char> seen(static_cast<size_t>(eq->labels), 0);
    for (size_t a = 0; a < ax.size(); ++a) {
      const int l = ax[a];
      const int64_t d = shapes[k].GetDim(a);
      if (!seen[static_cast<size_t>(l)]) ++count[static_cast<size_t>(l)];
      seen[static_cast<size_t>(l)] = 1;
      int64_t& have = eq->size[static_cast<size_t>(l)];
      if (d < 0) continue;  // unknown yet
      if (l >= kLetters) {  // an ellipsis dim: broadcast
        if (have < 0 || have == 1) have = d;
        else if (d != 1 && d != have) return *err = "the ellipsis dims of the operands do not broadcast (" + std::to_string(have) + " and " + std::to_string(d) + ")", false;
      } else if (have >= 0 && have != d && have != 1 && d != 1) {  // extent 1 broadcasts, as NumPy and ONNX Runtime allow
        return *err = std::string("label '") + CharOf(l) + "' has extent " + std::to_string(have) + " and " + std::to_string(d), false;
      } else if (have < 0 || have == 1) {
        have = d;
      }
    }
  }
  eq->out.clear();
  if (arrow == std::string::npos) {
    for (int j = 0; j < ell_rank; ++j) eq->out.push_back(kLetters + j);
    std::vector<int> once;
    for (int l = 0; l < kLetters; ++l)
      if (count[static_cast<size_t>(l)] == 1) {
        int occurrences = 0;
        for (auto& ax : eq->in) occurrences += static_cast<int>(std::count(ax.begin(), ax.end(), l));
        if (occurrences == 1) once.push_back(l);
      }
    std::sort(once.begin(), once.end(), [](int a, int b) { return CharOf(a) < CharOf(b); });
    eq->out.insert(eq->out.end(), once.begin(), once.end());
  } else {
    Term t;
    if (!parse_term(s.substr(arrow + 2), &t)) return false;
    if (t.ellipsis_at >= 0 && ell_rank == 0 && std::none_of(in.begin(), in.end(), [](const Term& x) { return x.ellipsis_at >= 0; }))
      return *err = "the output has an ellipsis that no operand has", false;
    for (int i = 0; i <= static_cast<int>(t.letters.size()); ++i) {
      if (i == t.ellipsis_at)
        for (int j = 0; j < ell_rank; ++j) eq->out.push_back(kLetters + j);
      if (i < static_cast<int>(t.letters.size())) {
        const int l = t.letters[static_cast<size_t>(i)];
        if (!count[static_cast<size_t>(l)]) return *err = std::string("output label '") + CharOf(l) + "' is in no operand", false;
        if (std::count(t.letters.begin(), t.letters.end(), l) > 1) return *err = std::string("output label '") + CharOf(l) + "' is repeated", false;
        eq->out.push_back(l);
      }
    }
    if (t.ellipsis_at < 0 && ell_rank > 0) {
      for (int j = 0; j < ell_rank; ++j)
        if (eq->size[static_cast<size_t>(kLetters + j)] > 1)
          return *err = "the output leaves out the ellipsis dims, which are not all 1", false;
    }
  }
  if (eq->out.size() > WEFT_MAX_DIMS) return *err = "the output has more than " + std::to_string(WEFT_MAX_DIMS) + " dims", false;
  return true;
}

// A tensor in the compute type with a label per axis.
template <typename C>
struct Labeled {
  std::vector<C> data;
  std::vector<int> labels;
  std::vector<int64_t> dims;
};

// Visits every index of `dims` (row-major), with the flat source offset through `strides`.
template <typename F>
void ForEachIndex(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, F&& f) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t off = 0;
  for (int64_t n = 0; n < total; ++n) {
    f(n, off);
    for (size_t a = dims.size(); a-- > 0;) {
      off += strides[a];
      if (++idx[a] < dims[a]) break;
      off -= strides[a] * dims[a];
      idx[a] = 0;
    }
  }
}

// Element strides of `t` for the labels in `order` (extents `ext`): the sum of the strides of the
// axes carrying a label (a repeated label walks the diagonal), 0 where t lacks the label or has
// it with extent 1 (broadcast).
template <typename C>
std::vector<int64_t> StridesFor(const Labeled<C>& t, const std::vector<int>& order) {
  std::vector<int64_t> own(t.dims.size());
  int64_t acc = 1;
  for (size_t a = t.dims.size(); a-- > 0;) own[a] = acc, acc *= t.dims[a];
  std::vector<int64_t> st(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i)
    for (size_t a = 0; a < t.labels.size(); ++a)
      if (t.labels[a] == order[i] && t.dims[a] != 1) st[i] += own[a];
  return st;
}

// `t` rearranged to the labels `order` with extents `ext` (diagonals taken, size-1 dims broadcast).
template <typename C>
std::vector<C> Gather(const Labeled<C>& t, const std::vector<int>& order, const std::vector<int64_t>& ext) {
  int64_t total = 1;
  for (int64_t d : ext) total *= d;
  std::vector<C> out(static_cast<size_t>(total));
  ForEachIndex(ext, StridesFor(t, order), [&](int64_t n, int64_t off) { out[static_cast<size_t>(n)] = t.data[static_cast<size_t>(off)]; });
  return out;
}

// Sums `t` over every label not in `keep` (and takes its diagonals): the result has each kept
// label once, in first-appearance order.
template <typename C>
Labeled<C> Reduce(const Labeled<C>& t, const std::vector<char>& keep) {
  std::vector<int> kept, summed;
  for (int l : t.labels) {
    auto& list = keep[static_cast<size_t>(l)] ? kept : summed;
    if (std::find(list.begin(), list.end(), l) == list.end()) list.push_back(l);
  }
  Labeled<C> r;
  r.labels = kept;
  for (int l : kept) {  // a repeated label's extent: the one that is not a broadcast 1
    int64_t d = 1;
    for (size_t a = 0; a < t.labels.size(); ++a)
      if (t.labels[a] == l && t.dims[a] != 1) d = t.dims[a];
    r.dims.push_back(d);
  }
  std::vector<int> order = kept;
  std::vector<int64_t> ext = r.dims;
  for (int l : summed) {
    order.push_back(l);
    int64_t d = 1;
    for (size_t a = 0; a < t.labels.size(); ++a)
      if (t.labels[a] == l && t.dims[a] != 1) d = t.dims[a];
    ext.push_back(d);
  }
  int64_t inner = 1, total = 1;
  for (size_t i = kept.size(); i < ext.size(); ++i) inner *= ext[i];
  for (int64_t d : r.dims) total *= d;
  r.data.assign(static_cast<size_t>(total), C(0));
  if (inner == 0) return r;
  ForEachIndex(ext, StridesFor(t, order), [&](int64_t n, int64_t off) { r.data[static_cast<size_t>(n / inner)] += t.data[static_cast<size_t>(off)]; });
  return r;
}

// The product of a and b summed over the labels they share that `keep` does not: a batched
// matrix product [batch, m, k] x [batch, k, n] -> labels batch + a's own + b's own.
template <typename C>
Labeled<C> Contract(const Labeled<C>& a, const Labeled<C>& b, const std::vector<char>& keep) {
  auto has = [](const Labeled<C>& t, int l) { return std::find(t.labels.begin(), t.labels.end(), l) != t.labels.end(); };
  auto ext_of = [&](int l) {  // the extent that is not a broadcast 1 (0 included)
    int64_t d = 1;
    for (const Labeled<C>* t : {&a, &b})
      for (size_t i = 0; i < t->labels.size(); ++i)
        if (t->labels[i] == l && t->dims[i] != 1) d = t->dims[i];
    return d;
  };
  std::vector<int> batch, mine, shared, theirs;
  for (int l : a.labels) {
    auto& list = has(b, l) ? (keep[static_cast<size_t>(l)] ? batch : shared) : mine;
    if (std::find(list.begin(), list.end(), l) == list.end()) list.push_back(l);
  }
  for (int l : b.labels)
    if (!has(a, l) && std::find(theirs.begin(), theirs.end(), l) == theirs.end()) theirs.push_back(l);
  // a as [batch, mine, shared], b as [batch, shared, theirs]
  int64_t nb = 1, m = 1, k = 1, n = 1;
  std::vector<int> ao, bo;
  std::vector<int64_t> ae, be;
  for (int l : batch) nb *= ext_of(l), ao.push_back(l), ae.push_back(ext_of(l)), bo.push_back(l), be.push_back(ext_of(l));
  for (int l : mine) m *= ext_of(l), ao.push_back(l), ae.push_back(ext_of(l));
  for (int l : shared) k *= ext_of(l), ao.push_back(l), ae.push_back(ext_of(l)), bo.push_back(l), be.push_back(ext_of(l));
  for (int l : theirs) n *= ext_of(l), bo.push_back(l), be.push_back(ext_of(l));
  const std::vector<C> A = Gather(a, ao, ae), B = Gather(b, bo, be);
  Labeled<C> r;
  for (int l : batch) r.labels.push_back(l), r.dims.push_back(ext_of(l));
  for (int l : mine) r.labels.push_back(l), r.dims.push_back(ext_of(l));
  for (int l : theirs) r.labels.push_back(l), r.dims.push_back(ext_of(l));
  r.data.assign(static_cast<size_t>(nb * m * n), C(0));
  for (int64_t t = 0; t < nb; ++t)
    for (int64_t i = 0; i < m; ++i) {
      C* row = r.data.data() + (t * m + i) * n;
      const C* ar = A.data() + (t * m + i) * k;
      const C* bt = B.data() + t * k * n;
      for (int64_t p = 0; p < k; ++p) {
        const C av = ar[p];
        const C* br = bt + p * n;
        for (int64_t j = 0; j < n; ++j) row[j] += av * br[j];
      }
    }
  return r;
}

class Einsum : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // In C, one loop nest over every label (the output's first, then those summed), each operand
  // walked through its strides per label (a repeated label walks its diagonal, a broadcast 1 does
  // not move); products summed into the output in the element type. Float32 and double.
  graphStatus Emit(EmitContext* ctx) override {
    const size_t n = ctx->GetComputeNodeInputNum();
    std::vector<Shape> shapes;
    Equation eq;
    DataType dt;
    if (!Setup(ctx, &shapes, &eq, &dt)) return GRAPH_FAILED;
    const std::string t = aot::CType(dt);
    if (t != "float" && t != "double") return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " Einsum");
    std::vector<int> order = eq.out;
    for (auto& in : eq.in)
      for (int l : in)
        if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
    std::vector<int64_t> ext, ostride(order.size(), 0);
    int64_t total = 1;
    for (int l : order) ext.push_back(std::max<int64_t>(eq.size[static_cast<size_t>(l)], 0)), total *= ext.back();
    int64_t acc = 1;
    for (size_t i = eq.out.size(); i-- > 0;) ostride[i] = acc, acc *= ext[i];
    const int64_t ysize = acc;
    ctx->Include("<string.h>");
    std::string code = "{\n  " + t + "* py = " + ctx->Output(0, t.c_str()) + ";\n";
    if (ysize) code += "  memset(py, 0, " + std::to_string(static_cast<uint64_t>(ysize) * DataTypeSize(dt)) + "u);\n";
    if (total == 0 || ysize == 0) {
      ctx->Run(code + "}\n");
      return GRAPH_SUCCESS;
    }
    const size_t nl = order.size();
    std::string decl, prod, step, back;
    for (size_t k = 0; k < n; ++k) {
      Labeled<double> shape_only;
      shape_only.labels = eq.in[k];
      shape_only.dims = shapes[k].ToVector();
      const std::vector<int64_t> st = StridesFor(shape_only, order);
      const std::string K = std::to_string(k);
      decl += "  const " + t + "* a" + K + " = " + ctx->Input(k, t.c_str()) + ";\n  int64_t o" + K + " = 0;\n";
      if (nl) decl += "  const int64_t* s" + K + " = " + ctx->Const("s" + K, DT_INT64, st) + ";\n";
      prod += std::string(k ? " * " : "") + "a" + K + "[o" + K + "]";
      step += "o" + K + " += s" + K + "[d]; ";
      back += "o" + K + " -= s" + K + "[d] * ext[d]; ";
    }
    code += decl + "  int64_t oo = 0, e;\n";
    if (nl)
      code += "  const int64_t* ext = " + ctx->Const("ext", DT_INT64, ext) + ";\n  const int64_t* so = " + ctx->Const("so", DT_INT64, ostride) +
              ";\n  int64_t idx[" + std::to_string(nl) + "];\n  int32_t d;\n  memset(idx, 0, sizeof idx);\n";
    code += "  for (e = 0; e < " + aot::IntLit(total) + "; ++e) {\n    py[oo] += " + prod + ";\n";
    if (nl)
      code += "    for (d = " + std::to_string(nl) + " - 1; d >= 0; --d) {\n      " + step + "oo += so[d];\n      if (++idx[d] < ext[d]) break;\n      " +
              back + "oo -= so[d] * ext[d];\n      idx[d] = 0;\n    }\n";
    code += "  }\n";
    ctx->Run(code + "}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    std::vector<Shape> shapes;
    for (size_t k = 0; k < ctx->GetComputeNodeInputNum(); ++k) shapes.push_back(*ctx->GetInputShape(k));
    Equation eq;
    std::string err;
    if (!Parse(ctx->GetAttrs()->GetStr("equation"), shapes, &eq, &err)) return Fail(ctx, err);
    Shape out;
    for (int l : eq.out) out.AppendDim(eq.size[static_cast<size_t>(l)]);
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  // The operands' shapes, the equation over them and their common type; false after Fail.
  static bool Setup(const KernelContextBase* ctx, std::vector<Shape>* shapes, Equation* eq, DataType* dt) {
    const size_t n = ctx->GetComputeNodeInputNum();
    for (size_t k = 0; k < n; ++k) shapes->push_back(ctx->GetInputTensor(k)->GetShape());
    std::string err;
    if (!Parse(ctx->GetAttrs()->GetStr("equation"), *shapes, eq, &err)) return Fail(ctx, err), false;
    *dt = ctx->GetInputTensor(0)->GetDataType();
    for (size_t k = 1; k < n; ++k)
      if (ctx->GetInputTensor(k)->GetDataType() != *dt) return Fail(ctx, "every operand must have the type of the first"), false;
    return true;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const size_t n = ctx->GetComputeNodeInputNum();
    std::vector<Shape> shapes;
    Equation eq;
    DataType dt;
    if (!Setup(ctx, &shapes, &eq, &dt)) return GRAPH_FAILED;
    Shape out;
    for (int l : eq.out) out.AppendDim(std::max<int64_t>(eq.size[static_cast<size_t>(l)], 0));
    Tensor* y = ctx->MallocOutputTensor(0, out, dt);
    if (!y) return GRAPH_FAILED;
    bool ok = DispatchNumeric(dt, [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      std::vector<Labeled<C>> ops(n);
      for (size_t k = 0; k < n; ++k) {
        const Tensor* t = ctx->GetInputTensor(k);
        ops[k].labels = eq.in[k];
        ops[k].dims = t->GetShape().ToVector();
        const T* p = t->GetData<T>();
        ops[k].data.resize(static_cast<size_t>(t->GetShapeSize()));
        for (size_t i = 0; i < ops[k].data.size(); ++i) ops[k].data[i] = Load(p[i]);
      }
      // Labels still needed after operand k: the output's and those of the operands after it.
      std::vector<std::vector<char>> needed(n, std::vector<char>(static_cast<size_t>(eq.labels), 0));
      std::vector<char> later(static_cast<size_t>(eq.labels), 0);
      for (int l : eq.out) later[static_cast<size_t>(l)] = 1;
      for (size_t k = n; k-- > 0;) {
        needed[k] = later;
        for (int l : eq.in[k]) later[static_cast<size_t>(l)] = 1;
      }
      // Each operand alone: diagonals, and labels no one else has and the output lacks summed.
      for (size_t k = 0; k < n; ++k) {
        std::vector<char> keep(static_cast<size_t>(eq.labels), 0);
        for (int l : eq.out) keep[static_cast<size_t>(l)] = 1;
        for (size_t j = 0; j < n; ++j)
          if (j != k)
            for (int l : eq.in[j]) keep[static_cast<size_t>(l)] = 1;
        ops[k] = Reduce(ops[k], keep);
      }
      Labeled<C> r = std::move(ops[0]);
      for (size_t k = 1; k < n; ++k) r = Contract(r, ops[k], needed[k]);
      std::vector<char> keep(static_cast<size_t>(eq.labels), 0);
      for (int l : eq.out) keep[static_cast<size_t>(l)] = 1;
      r = Reduce(r, keep);
      std::vector<int64_t> ext = out.ToVector();
      std::vector<C> res = Gather(r, eq.out, ext);
      T* py = y->GetData<T>();
      for (size_t i = 0; i < res.size(); ++i) py[i] = Store<T>(res[i]);
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("type ") + DataTypeName(dt) + " is not supported");
  }
};

}  // namespace

void WeftRegister_einsum(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("Einsum").DYNAMIC_INPUT(Inputs, NumericTypes()).OUTPUT(Output, NumericTypes()).REQUIRED_ATTR(equation, String)
                     .Build(), MakeOpImpl<Einsum>("Einsum")});
}

}  // namespace weft::ops
