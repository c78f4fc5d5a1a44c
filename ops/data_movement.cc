// Data movement: Concat, Split, Slice, Gather, GatherElements, GatherND, ScatterND,
// ScatterElements (and Scatter, its opset 9-10 name), Pad, Cast, CastLike, Dropout, Trilu,
// DepthToSpace, SpaceToDepth.
#include <algorithm>
#include <limits>

#include "aot_emit.h"
#include "elementwise.h"
#include "op_util.h"
#include "random.h"

namespace weft::ops {
namespace {

// outer x axis x inner view of a shape around `axis`.
void Split3(const Shape& s, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int64_t k = 0; k < axis; ++k) *outer *= s.GetDim(k);
  for (size_t k = static_cast<size_t>(axis) + 1; k < s.GetDimNum(); ++k) *inner *= s.GetDim(k);
}

class Concat : public EagerExecuteOp, public ShapeInferOp, public LayoutAwareOp, public CompilableOp, public RebuildOnLoad, public EmittableOp {
 public:
  // Each input's rows of (its axis extent x the dims after it) elements copied into its column
  // range of the output's rows.
  graphStatus Emit(EmitContext* ctx) override {
    const Shape& out = ctx->GetOutputTensor(0)->GetShape();
    int64_t axis = 0;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(out.GetDimNum()), &axis))
      return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(out.GetDimNum())));
    const int64_t elem = static_cast<int64_t>(DataTypeSize(ctx->GetOutputTensor(0)->GetDataType()));
    int64_t outer = 1, inner = elem;
    for (int64_t k = 0; k < axis; ++k) outer *= out.GetDim(static_cast<size_t>(k));
    for (size_t k = static_cast<size_t>(axis) + 1; k < out.GetDimNum(); ++k) inner *= out.GetDim(k);
    const int64_t out_row = out.GetDim(static_cast<size_t>(axis)) * inner;
    ctx->Include("<string.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_concat");
    std::string code;
    int64_t offset = 0;
    for (size_t i = 0; i < ctx->GetComputeNodeInputNum(); ++i) {
      const int64_t row = ctx->GetInputTensor(i)->GetShape().GetDim(static_cast<size_t>(axis)) * inner;
      if (row) code += "weft_concat_part(" + aot::IntLit(outer) + ", " + aot::IntLit(row) + ", " + aot::IntLit(out_row) + ", " + aot::IntLit(offset) +
                       ", " + ctx->Input(i, "void") + ", " + ctx->Output(0, "void") + ");\n";
      offset += row;
    }
    ctx->Run(code);
    return GRAPH_SUCCESS;
  }
  // Along the channels of float32 4-D tensors whose channel counts are multiples of 16, the
  // channel-blocked layout concatenates exactly as the plain one does (whole blocks per image),
  // so the branches of Inception-, Fire- and DenseNet-style blocks stay blocked.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Shape& out = ctx->GetOutputTensor(0)->GetShape();
    int64_t axis = 0;
    if (ctx->GetInputDataType(0) != DT_FLOAT || out.GetDimNum() != 4 || out.IsUnknown() ||
        !NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), 4, &axis) || axis != 1 || ctx->GetComputeNodeInputNum() > 64)
      return GRAPH_SUCCESS;
    for (size_t i = 0; i < ctx->GetComputeNodeInputNum(); ++i)
      if (ctx->GetInputShape(i)->GetDim(1) % 16) return GRAPH_SUCCESS;
    // One dynamic IR input: its instances are listed by their IR index, 0.
    s.Format(FORMAT_NC1HWC0).Input(0).Output(0).Together();
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override {
    const Tensor* y = ctx->GetOutputTensor(0);
    if (y->GetFormat() != FORMAT_NC1HWC0) return GRAPH_SUCCESS;
    return ctx->SetOutputStorage(0, static_cast<size_t>(y->GetShapeSize()) * sizeof(float), FORMAT_NC1HWC0);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s0 = *ctx->GetInputShape(0);
    int64_t r = static_cast<int64_t>(s0.GetDimNum()), axis;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), r, &axis)) return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), r));
    Shape out = s0;
    int64_t total = 0;
    for (size_t i = 0; i < ctx->GetComputeNodeInputNum(); ++i) {
      const Shape& s = *ctx->GetInputShape(i);
      if (static_cast<int64_t>(s.GetDimNum()) != r) return Fail(ctx, "input " + std::to_string(i) + " has rank " + std::to_string(s.GetDimNum()) + ", input 0 has " + std::to_string(r));
      for (int64_t k = 0; k < r; ++k)
        if (k != axis && s.GetDim(k) != s0.GetDim(k))
          return Fail(ctx, "input " + std::to_string(i) + " " + s.ToString() + " does not match input 0 " + s0.ToString() + " off axis " + std::to_string(axis));
      total += s.GetDim(axis);
    }
    out.SetDim(static_cast<size_t>(axis), total);
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), ctx->GetInputDataType(0));
    if (!y) return GRAPH_FAILED;
    int64_t axis = 0, outer = 1, inner = 1;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(y->GetShape().GetDimNum()), &axis);
    Split3(y->GetShape(), axis, &outer, &inner);
    size_t elem = DataTypeSize(y->GetDataType());
    int64_t out_row = y->GetShape().GetDim(static_cast<size_t>(axis)) * inner, offset = 0;
    const size_t inputs = ctx->GetComputeNodeInputNum();
    ByteCopy* copies = AllocCopies(ctx, inputs * static_cast<size_t>(outer));
    if (!copies) return GRAPH_FAILED;
    size_t count = 0;
    for (size_t i = 0; i < inputs; ++i) {
      const Tensor* x = ctx->GetInputTensor(i);
      int64_t row = x->GetShape().GetDim(static_cast<size_t>(axis)) * inner;
      for (int64_t o = 0; o < outer; ++o)
        copies[count++] = {y->GetData<uint8_t>() + (o * out_row + offset) * elem, x->GetData<uint8_t>() + o * row * elem, static_cast<size_t>(row) * elem};
      offset += row;
    }
    return ParallelCopy(ctx, copies, count);
  }
};

class Split : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Each output's column range of the input's rows (weft_split_part).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    int64_t axis = 0, outer = 1, inner = 1;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(x->GetShape().GetDimNum()), &axis);
    Split3(x->GetShape(), axis, &outer, &inner);
    inner *= static_cast<int64_t>(DataTypeSize(x->GetDataType()));
    const int64_t in_row = x->GetShape().GetDim(static_cast<size_t>(axis)) * inner;
    std::string code;
    int64_t offset = 0;
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) {
      const int64_t row = ctx->GetOutputTensor(k)->GetShape().GetDim(static_cast<size_t>(axis)) * inner;
      if (row) code += "weft_split_part(" + aot::IntLit(outer) + ", " + aot::IntLit(row) + ", " + aot::IntLit(in_row) + ", " + aot::IntLit(offset) +
                       ", " + ctx->Input(0, "void") + ", " + ctx->Output(k, "void") + ");\n";
      offset += row;
    }
    ctx->Include("<string.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_concat");
    ctx->Run(code);
    return GRAPH_SUCCESS;
  }
  // Sizes of the pieces along the axis; false when they depend on an unknown value.
  static bool Sizes(const KernelContextBase* ctx, const Shape& in, int64_t axis, std::vector<int64_t>* sizes, std::string* err) {
    size_t n = ctx->GetComputeNodeOutputNum();
    int64_t dim = in.GetDim(static_cast<size_t>(axis));
    const Tensor* st = ctx->GetOptionalInputTensor(1);
    if (n == 0) {
      *err = "the node has no outputs";
      return true;
    }
    int64_t num_outputs = *ctx->GetAttrs()->GetInt("num_outputs");
    if (num_outputs != 0) {
      if (st) {
        *err = "give either the split input or the num_outputs attribute, not both";
        return true;
      }
      if (num_outputs != static_cast<int64_t>(n)) {
        *err = "num_outputs is " + std::to_string(num_outputs) + " but the node has " + std::to_string(n) + " outputs";
        return true;
      }
    }
    if (st && st->GetShapeSize() > 0) {
      if (!ReadInts(st, sizes)) return false;
      int64_t sum = 0;
      for (int64_t s : *sizes)
        if (s < 0 || __builtin_add_overflow(sum, s, &sum)) {
          *err = "split sizes must be non-negative and sum to " + std::to_string(dim);
          return true;
        }
      // An unknown dim (-1, shape inference before the values are known) takes the sizes' sum.
      if (sizes->size() != n || (dim >= 0 && sum != dim))
        *err = "split sizes do not match " + std::to_string(n) + " outputs summing to " + std::to_string(dim);
      return true;
    }
    if (dim < 0) return false;  // even pieces of an unknown dim: unknown
    int64_t chunk = (dim + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
    sizes->clear();
    for (size_t k = 0; k < n; ++k) sizes->push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * static_cast<int64_t>(k))));
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    int64_t axis = 0;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(in.GetDimNum()), &axis)) return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), in.GetDimNum()));
    std::vector<int64_t> sizes;
    std::string err;
    if (!Sizes(ctx, in, axis, &sizes, &err)) {
      for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) MarkUnknown(ctx->GetOutputShape(k), in.GetDimNum());
      return GRAPH_SUCCESS;
    }
    if (!err.empty()) return Fail(ctx, err);
    for (size_t k = 0; k < sizes.size(); ++k) {
      Shape s = in;
      s.SetDim(static_cast<size_t>(axis), sizes[k]);
      *ctx->GetOutputShape(k) = s;
    }
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) ctx->SetOutputDataType(k, ctx->GetInputDataType(0));
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    int64_t axis = 0, outer = 1, inner = 1;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(x->GetShape().GetDimNum()), &axis);
    Split3(x->GetShape(), axis, &outer, &inner);
    size_t elem = DataTypeSize(x->GetDataType());
    int64_t in_row = x->GetShape().GetDim(static_cast<size_t>(axis)) * inner, offset = 0;
    const size_t outputs = ctx->GetComputeNodeOutputNum();
    ByteCopy* copies = AllocCopies(ctx, outputs * static_cast<size_t>(outer));
    if (!copies) return GRAPH_FAILED;
    size_t count = 0;
    for (size_t k = 0; k < outputs; ++k) {
      Tensor* y = ctx->MallocOutputTensor(k, ctx->GetOutputTensor(k)->GetShape(), x->GetDataType());
      if (!y) return GRAPH_FAILED;
      int64_t row = y->GetShape().GetDim(static_cast<size_t>(axis)) * inner;
      for (int64_t o = 0; o < outer; ++o)
        copies[count++] = {y->GetData<uint8_t>() + o * row * elem, x->GetData<uint8_t>() + (o * in_row + offset) * elem, static_cast<size_t>(row) * elem};
      offset += row;
    }
    return ParallelCopy(ctx, copies, count);
  }
};

class Slice : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Constant starts/ends/axes/steps: a strided copy (weft_strided_copy).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    Plan p;
    std::string err;
    if (!MakePlan(ctx, xs, &p, &err)) return Fail(ctx, "the generated C needs constant starts, ends, axes and steps");
    if (!err.empty()) return Fail(ctx, err);
    const size_t r = xs.GetDimNum();
    std::vector<int64_t> dims, axis, step(p.step, p.step + r), start(p.start, p.start + r);
    for (size_t k = 0; k < r; ++k) dims.push_back(p.out.GetDim(k)), axis.push_back(static_cast<int64_t>(k));
    return aot::EmitStridedCopy(ctx, dims, axis, step, start);
  }
  struct Plan {
    int64_t start[WEFT_MAX_DIMS], step[WEFT_MAX_DIMS];
    Shape out;
  };
  // False when starts/ends/axes/steps are not known yet.
  static bool MakePlan(const KernelContextBase* ctx, const Shape& in, Plan* p, std::string* err) {
    std::vector<int64_t> starts, ends, axes, steps;
    if (!ReadInts(ctx->GetInputTensor(1), &starts) || !ReadInts(ctx->GetInputTensor(2), &ends)) return false;
    const Tensor* at = ctx->GetOptionalInputTensor(3);
    const Tensor* st = ctx->GetOptionalInputTensor(4);
    if ((at && !ReadInts(at, &axes)) || (st && !ReadInts(st, &steps))) return false;
    size_t r = in.GetDimNum();
    if (axes.empty())
      for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      *err = "starts, ends, axes and steps differ in length";
      return true;
    }
    p->out = in;
    for (size_t k = 0; k < r; ++k) p->start[k] = 0, p->step[k] = 1;
    bool seen[WEFT_MAX_DIMS] = {};
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t a;
      if (!NormalizeAxis(axes[i], static_cast<int64_t>(r), &a)) {
        *err = AxisError(axes[i], static_cast<int64_t>(r));
        return true;
      }
      if (seen[a]) {
        *err = "axis " + std::to_string(a) + " appears twice in axes";
        return true;
      }
      seen[a] = true;
      int64_t dim = in.GetDim(static_cast<size_t>(a)), s = starts[i], e = ends[i], step = steps[i];
      if (step == 0) {
        *err = "step is 0";
        return true;
      }
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      // Counted as 1 + (span - 1) / |step|: no intermediate exceeds the span, whatever the step.
      int64_t n, mag = step == INT64_MIN ? INT64_MAX : std::abs(step);
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        n = e > s ? 1 + (e - s - 1) / mag : 0;
      } else {
        // ONNX: start within [0, dim-1], end within [-1, dim-1] (-1: up to and including element 0).
        s = dim == 0 ? 0 : std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        n = dim > 0 && s > e ? 1 + (s - e - 1) / mag : 0;  // an empty axis has nothing to take
      }
      p->start[a] = s;
      p->step[a] = step;
      p->out.SetDim(static_cast<size_t>(a), n);
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Plan p;
    std::string err;
    if (!MakePlan(ctx, *ctx->GetInputShape(0), &p, &err)) {
      MarkUnknown(ctx->GetOutputShape(0), ctx->GetInputShape(0)->GetDimNum());
      return GRAPH_SUCCESS;
    }
    if (!err.empty()) return Fail(ctx, err);
    *ctx->GetOutputShape(0) = p.out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Plan p;
    std::string err;
    MakePlan(ctx, x->GetShape(), &p, &err);
    Tensor* y = ctx->MallocOutputTensor(0, p.out, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    size_t r = x->GetShape().GetDimNum(), elem = DataTypeSize(x->GetDataType());
    int64_t st[WEFT_MAX_DIMS];
    Strides(x->GetShape(), st);
    int64_t total = p.out.GetShapeSize();
    if (total == 0) return GRAPH_SUCCESS;
    // Contiguous runs: trailing dims taken whole, plus the dim before them when its step is 1
    // (a channel split copies one block per batch).
    size_t lead = r;  // dims [lead, r) are copied as one run
    while (lead > 0 && p.start[lead - 1] == 0 && p.step[lead - 1] == 1 && p.out.GetDim(lead - 1) == x->GetShape().GetDim(lead - 1)) --lead;
    if (lead > 0 && p.step[lead - 1] == 1) --lead;
    int64_t inner = 1;
    for (size_t k = lead; k < r; ++k) inner *= p.out.GetDim(k);
    const bool rows = lead < r;
    const int64_t step_elems = rows ? inner : 1;
    const size_t outer_dims = rows ? lead : r;
    const uint8_t* px = x->GetData<uint8_t>();
    uint8_t* py = y->GetData<uint8_t>();
    // The start of the run at dims >= lead.
    int64_t base = 0;
    for (size_t k = outer_dims; k < r; ++k) base += p.start[k] * st[k];
    ByteCopy* copies = rows ? AllocCopies(ctx, static_cast<size_t>(total / step_elems)) : nullptr;
    if (rows && !copies) return GRAPH_FAILED;
    size_t count = 0;
    for (int64_t i = 0; i < total; i += step_elems) {
      int64_t rem = i / step_elems, src = base;
      for (size_t k = outer_dims; k-- > 0;) {
        int64_t c = rem % p.out.GetDim(k);
        rem /= p.out.GetDim(k);
        src += (p.start[k] + c * p.step[k]) * st[k];
      }
      if (rows) copies[count++] = {py + i * elem, px + src * elem, static_cast<size_t>(inner) * elem};
      else CopyElem(py + i * elem, px + src * elem, elem);
    }
    return rows ? ParallelCopy(ctx, copies, count) : GRAPH_SUCCESS;
  }
};

class Gather : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Rows copied by index (weft_gather); an index out of range fails the run (status op_failed).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    if (ix->GetDataType() != DT_INT64 && ix->GetDataType() != DT_INT32) return Fail(ctx, "indices must be int32 or int64");
    int64_t axis = 0, outer = 1, inner = 1;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(d->GetShape().GetDimNum()), &axis);
    Split3(d->GetShape(), axis, &outer, &inner);
    const int64_t dim = d->GetShape().GetDim(static_cast<size_t>(axis)), row = inner * static_cast<int64_t>(DataTypeSize(d->GetDataType()));
    ctx->Include("<string.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_gather");
    ctx->Run("if (weft_gather(" + aot::IntLit(outer) + ", " + aot::IntLit(dim) + ", " + aot::IntLit(row) + ", " + aot::IntLit(ix->GetShapeSize()) +
             ", " + (ix->GetDataType() == DT_INT32 ? "1" : "0") + ", " + ctx->Input(1, "void") + ", " + ctx->Input(0, "void") + ", " +
             ctx->Output(0, "void") + ")) return 1;\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& d = *ctx->GetInputShape(0);
    const Shape& ix = *ctx->GetInputShape(1);
    int64_t axis = 0;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(d.GetDimNum()), &axis))
      return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), d.GetDimNum()));
    Shape out;
    for (int64_t k = 0; k < axis; ++k) out.AppendDim(d.GetDim(k));
    for (size_t k = 0; k < ix.GetDimNum(); ++k) out.AppendDim(ix.GetDim(k));
    for (size_t k = static_cast<size_t>(axis) + 1; k < d.GetDimNum(); ++k) out.AppendDim(d.GetDim(k));
    if (d.GetDimNum() - 1 + ix.GetDimNum() > WEFT_MAX_DIMS) return Fail(ctx, "result rank exceeds " + std::to_string(WEFT_MAX_DIMS));
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), d->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t axis = 0, outer = 1, inner = 1;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(d->GetShape().GetDimNum()), &axis);
    Split3(d->GetShape(), axis, &outer, &inner);
    int64_t dim = d->GetShape().GetDim(static_cast<size_t>(axis)), n = ix->GetShapeSize();
    size_t row = static_cast<size_t>(inner) * DataTypeSize(d->GetDataType());
    for (int64_t j = 0; j < n; ++j) {
      int64_t v = ix->GetDataType() == DT_INT64 ? ix->GetData<int64_t>()[j] : ix->GetData<int32_t>()[j];
      if (v < -dim || v >= dim) return Fail(ctx, "index " + std::to_string(v) + " is out of range for axis of size " + std::to_string(dim));
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < n; ++j) {
        int64_t v = ix->GetDataType() == DT_INT64 ? ix->GetData<int64_t>()[j] : ix->GetData<int32_t>()[j];
        if (v < 0) v += dim;
        std::memcpy(y->GetData<uint8_t>() + (o * n + j) * row, d->GetData<uint8_t>() + (o * dim + v) * row, row);
      }
    return GRAPH_SUCCESS;
  }
};

class GatherElements : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Each output element's source: its own coordinates with the gather axis replaced by its index
  // (negative ones counted from the end); an index out of range fails the run with status 1.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    if (ix->GetDataType() != DT_INT64 && ix->GetDataType() != DT_INT32) return Fail(ctx, "indices must be int32 or int64");
    const Shape& is = ix->GetShape();
    const size_t r = d->GetShape().GetDimNum(), elem = DataTypeSize(d->GetDataType());
    int64_t axis = 0;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(r), &axis);
    int64_t st[WEFT_MAX_DIMS];
    Strides(d->GetShape(), st);
    std::vector<int64_t> idims = is.ToVector(), dstride(st, st + r);
    if (is.GetShapeSize() == 0) return GRAPH_SUCCESS;
    const std::string it = ix->GetDataType() == DT_INT32 ? "int32_t" : "int64_t", dim = aot::IntLit(d->GetShape().GetDim(static_cast<size_t>(axis)));
    ctx->Include("<string.h>");
    ctx->Run("{\n  const " + it + "* pk = " + ctx->Input(1, it.c_str()) + ";\n  const uint8_t* pd = " + ctx->Input(0, "uint8_t") +
             ";\n  uint8_t* py = " + ctx->Output(0, "uint8_t") + ";\n  const int64_t* idims = " + ctx->Const("idims", DT_INT64, idims) +
             ";\n  const int64_t* dstride = " + ctx->Const("dstride", DT_INT64, dstride) + ";\n  int64_t i;\n  int32_t k;\n  for (i = 0; i < " +
             aot::IntLit(is.GetShapeSize()) + "; ++i) {\n    int64_t rem = i, src = 0, v = pk[i];\n    if (v < -" + dim + " || v >= " + dim +
             ") return 1;\n    if (v < 0) v += " + dim + ";\n    for (k = " + std::to_string(r) + " - 1; k >= 0; --k) {\n      const int64_t c = rem % idims[k];\n"
             "      rem /= idims[k];\n      src += (k == " + std::to_string(axis) + " ? v : c) * dstride[k];\n    }\n    memcpy(py + i * " +
             std::to_string(elem) + ", pd + src * " + std::to_string(elem) + ", " + std::to_string(elem) + ");\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& d = *ctx->GetInputShape(0);
    const Shape& ix = *ctx->GetInputShape(1);
    int64_t axis = 0;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(d.GetDimNum()), &axis))
      return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), d.GetDimNum()));
    if (d.GetDimNum() != ix.GetDimNum()) return Fail(ctx, "data and indices ranks differ");
    for (size_t k = 0; k < d.GetDimNum(); ++k)
      if (static_cast<int64_t>(k) != axis && ix.GetDim(k) > d.GetDim(k))
        return Fail(ctx, "indices " + ix.ToString() + " are larger than data " + d.ToString() + " in dim " + std::to_string(k) +
                             ", which is not the gather axis");
    *ctx->GetOutputShape(0) = ix;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    Tensor* y = ctx->MallocOutputTensor(0, ix->GetShape(), d->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t axis = 0;
    size_t r = d->GetShape().GetDimNum(), elem = DataTypeSize(d->GetDataType());
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(r), &axis);
    int64_t st[WEFT_MAX_DIMS];
    Strides(d->GetShape(), st);
    const Shape& is = ix->GetShape();
    int64_t dim = d->GetShape().GetDim(static_cast<size_t>(axis));
    for (int64_t i = 0; i < is.GetShapeSize(); ++i) {
      int64_t rem = i, src = 0;
      int64_t v = ix->GetDataType() == DT_INT64 ? ix->GetData<int64_t>()[i] : ix->GetData<int32_t>()[i];
      if (v < -dim || v >= dim) return Fail(ctx, "index " + std::to_string(v) + " is out of range for axis of size " + std::to_string(dim));
      if (v < 0) v += dim;
      for (size_t k = r; k-- > 0;) {
        int64_t c = rem % is.GetDim(k);
        rem /= is.GetDim(k);
        src += (static_cast<int64_t>(k) == axis ? v : c) * st[k];
      }
      CopyElem(y->GetData<uint8_t>() + i * elem, d->GetData<uint8_t>() + src * elem, elem);
    }
    return GRAPH_SUCCESS;
  }
};

int64_t IndexAt(const Tensor* ix, int64_t i) {
  return ix->GetDataType() == DT_INT64 ? ix->GetData<int64_t>()[i] : ix->GetData<int32_t>()[i];
}

// GatherND(data, indices[..., k], batch_dims): slices of data at the index tuples in the last
// axis of indices; the first batch_dims axes of both are matched pairwise.
class GatherND : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // Rows copied by index tuple; an index out of range fails the run (status 1).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    if (ix->GetDataType() != DT_INT64 && ix->GetDataType() != DT_INT32) return Fail(ctx, "indices must be int32 or int64");
    Plan pl;
    if (!pl.Make(ctx, d->GetShape(), ix->GetShape())) return GRAPH_FAILED;
    const int64_t k = pl.k, batch = pl.batch, slice = pl.slice, per_batch = pl.per_batch, tuples = pl.tuples;
    const std::vector<int64_t>& dims = pl.dims;
    if (batch * tuples == 0) return GRAPH_SUCCESS;
    const size_t elem = DataTypeSize(d->GetDataType());
    const std::string it = ix->GetDataType() == DT_INT32 ? "int32_t" : "int64_t", K = aot::IntLit(k), T = aot::IntLit(tuples);
    const std::string row = std::to_string(static_cast<uint64_t>(slice) * elem) + "u";
    ctx->Include("<string.h>");
    ctx->Run("{\n  const " + it + "* pk = " + ctx->Input(1, it.c_str()) + ";\n  const uint8_t* pd = " + ctx->Input(0, "uint8_t") + ";\n  uint8_t* py = " +
             ctx->Output(0, "uint8_t") + ";\n  const int64_t* dims = " + ctx->Const("dims", DT_INT64, dims) +
             ";\n  int64_t bb, t, j;\n  for (bb = 0; bb < " + aot::IntLit(batch) + "; ++bb)\n    for (t = 0; t < " + T +
             "; ++t) {\n      int64_t off = 0;\n      for (j = 0; j < " + K + "; ++j) {\n        const int64_t v = (int64_t)pk[(bb * " + T + " + t) * " + K +
             " + j];\n        if (v < -dims[j] || v >= dims[j]) return 1; /* index out of range */\n        off = off * dims[j] + (v < 0 ? v + dims[j] : v);\n      }\n"
             "      memcpy(py + (bb * " + T + " + t) * " + row + ", pd + (bb * " + aot::IntLit(per_batch) + " + off * " + aot::IntLit(slice) + ") * " +
             std::to_string(elem) + "u, " + row + ");\n    }\n}\n");
    return GRAPH_SUCCESS;
  }
  static graphStatus Geometry(const KernelContextBase* ctx, const Shape& d, const Shape& ix, int64_t* b, int64_t* k) {
    *b = *ctx->GetAttrs()->GetInt("batch_dims");
    int64_t r = static_cast<int64_t>(d.GetDimNum()), q = static_cast<int64_t>(ix.GetDimNum());
    if (q < 1) return Fail(ctx, "indices must have rank >= 1");
    *k = ix.GetDim(static_cast<size_t>(q - 1));
    if (*b < 0 || *b >= q || *b >= r) return Fail(ctx, "batch_dims " + std::to_string(*b) + " must be below the ranks of data and indices");
    if (*k < 1 || *k > r - *b)
      return Fail(ctx, "the last axis of indices " + ix.ToString() + " must be between 1 and rank(data) - batch_dims = " + std::to_string(r - *b));
    for (int64_t a = 0; a < *b; ++a)
      if (d.GetDim(static_cast<size_t>(a)) != ix.GetDim(static_cast<size_t>(a)))
        return Fail(ctx, "data " + d.ToString() + " and indices " + ix.ToString() + " differ in batch axis " + std::to_string(a));
    return GRAPH_SUCCESS;
  }
  // Batch dims b, tuple length k; data as [batch, (k indexed dims), slice] and indices as
  // [batch, tuples, k].
  struct Plan {
    int64_t b = 0, k = 0, batch = 1, slice = 1, per_batch = 1, tuples = 0;
    std::vector<int64_t> dims;  // the k indexed dims
    bool Make(const KernelContextBase* ctx, const Shape& ds, const Shape& is) {
      if (Geometry(ctx, ds, is, &b, &k) != GRAPH_SUCCESS) return false;
      for (int64_t a = 0; a < b; ++a) batch *= ds.GetDim(static_cast<size_t>(a));
      for (size_t a = static_cast<size_t>(b + k); a < ds.GetDimNum(); ++a) slice *= ds.GetDim(a);
      per_batch = slice;
      for (int64_t a = b; a < b + k; ++a) per_batch *= ds.GetDim(static_cast<size_t>(a)), dims.push_back(ds.GetDim(static_cast<size_t>(a)));
      tuples = batch ? is.GetShapeSize() / k / batch : 0;
      return true;
    }
  };
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& d = *ctx->GetInputShape(0);
    const Shape& ix = *ctx->GetInputShape(1);
    int64_t b = 0, k = 0;
    if (Geometry(ctx, d, ix, &b, &k) != GRAPH_SUCCESS) return GRAPH_FAILED;
    // Counted before the shape is built (a Shape keeps at most WEFT_MAX_DIMS dims).
    const size_t rank = ix.GetDimNum() - 1 + (d.GetDimNum() - static_cast<size_t>(b + k));
    if (rank > WEFT_MAX_DIMS)
      return Fail(ctx, "the result would have rank " + std::to_string(rank) + " (indices " + ix.ToString() + ", data " + d.ToString() +
                           "); tensors have at most " + std::to_string(WEFT_MAX_DIMS) + " dims");
    Shape out;
    for (size_t a = 0; a + 1 < ix.GetDimNum(); ++a) out.AppendDim(ix.GetDim(a));
    for (size_t a = static_cast<size_t>(b + k); a < d.GetDimNum(); ++a) out.AppendDim(d.GetDim(a));
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), d->GetDataType());
    if (!y) return GRAPH_FAILED;
    Plan pl;
    if (!pl.Make(ctx, d->GetShape(), ix->GetShape())) return GRAPH_FAILED;
    const Shape& ds = d->GetShape();
    const int64_t b = pl.b, k = pl.k, batch = pl.batch, slice = pl.slice, per_batch_data = pl.per_batch, tuples = pl.tuples;
    size_t elem = DataTypeSize(d->GetDataType()), row = static_cast<size_t>(slice) * elem;
    for (int64_t bb = 0; bb < batch; ++bb)
      for (int64_t t = 0; t < tuples; ++t) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; ++j) {
          int64_t dim = ds.GetDim(static_cast<size_t>(b + j));
          int64_t v = IndexAt(ix, (bb * tuples + t) * k + j);
          if (v < -dim || v >= dim)
            return Fail(ctx, "index " + std::to_string(v) + " is out of range for data axis " + std::to_string(b + j) + " of size " + std::to_string(dim));
          off = off * dim + (v < 0 ? v + dim : v);
        }
        std::memcpy(y->GetData<uint8_t>() + static_cast<size_t>(bb * tuples + t) * row,
                    d->GetData<uint8_t>() + static_cast<size_t>(bb * per_batch_data + off * slice) * elem, row);
      }
    return GRAPH_SUCCESS;
  }
};

// The reduction attribute of ScatterND and ScatterElements.
enum class Reduce { kNone, kAdd, kMul, kMax, kMin };
graphStatus GetReduction(const KernelContextBase* ctx, Reduce* r) {
  if (CheckOneOf(ctx, "reduction", {"none", "add", "mul", "max", "min"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
  std::string v = ctx->GetAttrs()->GetStr("reduction");
  *r = v == "add" ? Reduce::kAdd : v == "mul" ? Reduce::kMul : v == "max" ? Reduce::kMax : v == "min" ? Reduce::kMin : Reduce::kNone;
  if (*r != Reduce::kNone && ctx->GetInputDataType(0) == DT_BOOL) return Fail(ctx, "reduction '" + v + "' does not apply to bool data");
  return GRAPH_SUCCESS;
}
template <typename T>
inline void Combine(T* dst, T v, Reduce r) {
  using C = typename Compute<T>::type;
  switch (r) {
    case Reduce::kNone: *dst = v; break;
    case Reduce::kAdd: *dst = Store<T>(WrapAdd<C>(Load(*dst), Load(v))); break;
    case Reduce::kMul: *dst = Store<T>(WrapMul<C>(Load(*dst), Load(v))); break;
    case Reduce::kMax: *dst = Store<T>(std::max<C>(Load(*dst), Load(v))); break;
    case Reduce::kMin: *dst = Store<T>(std::min<C>(Load(*dst), Load(v))); break;
  }
}

// Combine() in C over `*dst` and `v` of type dt: integer sums and products wrap.
std::string CombineC(Reduce r, DataType dt) {
  const std::string t = aot::CType(dt);
  const std::string u = dt == DT_FLOAT || dt == DT_DOUBLE ? t : "uint64_t";
  switch (r) {
    case Reduce::kNone: return "v";
    case Reduce::kAdd: return "(" + t + ")((" + u + ")*dst + (" + u + ")v)";
    case Reduce::kMul: return "(" + t + ")((" + u + ")*dst * (" + u + ")v)";
    case Reduce::kMax: return "(*dst < v ? v : *dst)";
    case Reduce::kMin: return "(v < *dst ? v : *dst)";
  }
  return "v";
}

// A scatter's reduction and data's C type for its emitter; fails for types the generated C does
// not scatter (a bool may only be replaced) and for indices that are not int32 or int64.
graphStatus ScatterEmitTypes(const EmitContext* ctx, Reduce* r, std::string* t) {
  if (GetReduction(ctx, r) != GRAPH_SUCCESS) return GRAPH_FAILED;
  const DataType dt = ctx->GetInputTensor(0)->GetDataType(), it = ctx->GetInputTensor(1)->GetDataType();
  *t = aot::CType(dt);
  if (t->empty() || (dt == DT_BOOL && *r != Reduce::kNone))
    return Fail(ctx, std::string("the generated C has no ") + DataTypeName(dt) + " " + ctx->GetNodeType());
  if (it != DT_INT64 && it != DT_INT32) return Fail(ctx, "indices must be int32 or int64");
  return GRAPH_SUCCESS;
}

// ScatterND(data, indices[..., k], updates): a copy of data where the slices at the index
// tuples receive updates (replaced, or combined by `reduction`), in index order.
class ScatterND : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // data copied (unless the planner put the output in its place), every index tuple checked
  // (one out of range fails the run with status 1, before anything is written), then the updates
  // combined in index order, as Execute does. Integer sums and products wrap.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    Reduce r;
    std::string t;
    if (ScatterEmitTypes(ctx, &r, &t) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const DataType dt = d->GetDataType();
    const Shape& ds = d->GetShape();
    const int64_t k = ix->GetShape().GetDim(ix->GetShape().GetDimNum() - 1);
    int64_t slice = 1;
    for (size_t a = static_cast<size_t>(k); a < ds.GetDimNum(); ++a) slice *= ds.GetDim(a);
    const int64_t tuples = k ? ix->GetShapeSize() / k : 0;
    std::vector<int64_t> dims;
    for (int64_t a = 0; a < k; ++a) dims.push_back(ds.GetDim(static_cast<size_t>(a)));
    const std::string combine = CombineC(r, dt);
    const std::string it = ix->GetDataType() == DT_INT32 ? "int32_t" : "int64_t";
    const std::string T = aot::IntLit(tuples), K = aot::IntLit(k), S = aot::IntLit(slice);
    ctx->Include("<string.h>");
    std::string code = "{\n  const " + t + "* pd = " + ctx->Input(0, t.c_str()) + ";\n  const " + it + "* pk = " + ctx->Input(1, it.c_str()) +
                       ";\n  const " + t + "* pu = " + ctx->Input(2, t.c_str()) + ";\n  " + t + "* py = " + ctx->Output(0, t.c_str()) +
                       ";\n  int64_t n, j, e;\n";
    if (tuples) code += "  const int64_t* dims = " + ctx->Const("dims", DT_INT64, dims) + ";\n  for (n = 0; n < " + T +
                        "; ++n)\n    for (j = 0; j < " + K + "; ++j) {\n      const int64_t v = (int64_t)pk[n * " + K +
                        " + j];\n      if (v < -dims[j] || v >= dims[j]) return 1; /* index out of range */\n    }\n";
    code += "  if ((const void*)py != (const void*)pd) memcpy(py, pd, " + std::to_string(d->GetByteCount()) + "u);\n";
    if (tuples)
      code += "  for (n = 0; n < " + T + "; ++n) {\n    int64_t off = 0;\n    for (j = 0; j < " + K +
              "; ++j) {\n      const int64_t v = (int64_t)pk[n * " + K + " + j];\n      off = off * dims[j] + (v < 0 ? v + dims[j] : v);\n    }\n" +
              "    for (e = 0; e < " + S + "; ++e) {\n      " + t + "* dst = py + off * " + S + " + e;\n      const " + t + " v = pu[n * " + S +
              " + e];\n      *dst = " + combine + ";\n    }\n  }\n";
    ctx->Run(code + "}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& d = *ctx->GetInputShape(0);
    const Shape& ix = *ctx->GetInputShape(1);
    const Shape& u = *ctx->GetInputShape(2);
    Reduce r;
    if (GetReduction(ctx, &r) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (ix.GetDimNum() < 1) return Fail(ctx, "indices must have rank >= 1");
    int64_t k = ix.GetDim(ix.GetDimNum() - 1);
    if (k < 1 || k > static_cast<int64_t>(d.GetDimNum()))
      return Fail(ctx, "the last axis of indices " + ix.ToString() + " must be between 1 and the rank of data " + d.ToString());
    const size_t rank = ix.GetDimNum() - 1 + (d.GetDimNum() - static_cast<size_t>(k));
    if (rank > WEFT_MAX_DIMS)
      return Fail(ctx, "updates would need rank " + std::to_string(rank) + " (indices " + ix.ToString() + ", data " + d.ToString() +
                           "); tensors have at most " + std::to_string(WEFT_MAX_DIMS) + " dims");
    Shape want;
    for (size_t a = 0; a + 1 < ix.GetDimNum(); ++a) want.AppendDim(ix.GetDim(a));
    for (size_t a = static_cast<size_t>(k); a < d.GetDimNum(); ++a) want.AppendDim(d.GetDim(a));
    if (u != want) return Fail(ctx, "updates " + u.ToString() + " must have shape " + want.ToString() + " (indices.shape[:-1] + data.shape[k:])");
    *ctx->GetOutputShape(0) = d;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    const Tensor* u = ctx->GetInputTensor(2);
    Reduce r;
    if (GetReduction(ctx, &r) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, d->GetShape(), d->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (d->GetByteCount()) std::memcpy(y->GetAddr(), d->GetAddr(), d->GetByteCount());
    const Shape& ds = d->GetShape();
    int64_t k = ix->GetShape().GetDim(ix->GetShape().GetDimNum() - 1);
    int64_t slice = 1;
    for (size_t a = static_cast<size_t>(k); a < ds.GetDimNum(); ++a) slice *= ds.GetDim(a);
    int64_t tuples = ix->GetShapeSize() / k;
    std::vector<int64_t> offsets(static_cast<size_t>(tuples));
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t dim = ds.GetDim(static_cast<size_t>(j));
        int64_t v = IndexAt(ix, t * k + j);
        if (v < -dim || v >= dim)
          return Fail(ctx, "index " + std::to_string(v) + " is out of range for data axis " + std::to_string(j) + " of size " + std::to_string(dim));
        off = off * dim + (v < 0 ? v + dim : v);
      }
      offsets[static_cast<size_t>(t)] = off * slice;
    }
    DispatchAll(d->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      T* py = y->GetData<T>();
      const T* pu = u->GetData<T>();
      for (int64_t t = 0; t < tuples; ++t)
        for (int64_t e = 0; e < slice; ++e) Combine(py + offsets[static_cast<size_t>(t)] + e, pu[t * slice + e], r);
    });
    return GRAPH_SUCCESS;
  }
};

// ScatterElements(data, indices, updates, axis): like GatherElements in reverse; indices and
// updates share a shape no larger than data's.
class ScatterElements : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // As ScatterND's: every index checked first (one out of range fails the run with status 1
  // before anything is written), data copied unless the planner put the output in its place,
  // then each update combined in index order.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    Reduce r;
    std::string t;
    if (ScatterEmitTypes(ctx, &r, &t) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const DataType dt = d->GetDataType();
    const size_t rank = d->GetShape().GetDimNum();
    int64_t axis = 0;
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(rank), &axis);
    int64_t st[WEFT_MAX_DIMS];
    Strides(d->GetShape(), st);
    const std::string it = ix->GetDataType() == DT_INT32 ? "int32_t" : "int64_t", dim = aot::IntLit(d->GetShape().GetDim(static_cast<size_t>(axis)));
    const int64_t n = ix->GetShapeSize();
    ctx->Include("<string.h>");
    std::string code = "{\n  const " + t + "* pd = " + ctx->Input(0, t.c_str()) + ";\n  const " + it + "* pk = " + ctx->Input(1, it.c_str()) +
                       ";\n  const " + t + "* pu = " + ctx->Input(2, t.c_str()) + ";\n  " + t + "* py = " + ctx->Output(0, t.c_str()) +
                       ";\n  int64_t i;\n  int32_t a;\n  (void)a;\n  (void)pu;\n";
    if (n) code += "  for (i = 0; i < " + aot::IntLit(n) + "; ++i)\n    if (pk[i] < -" + dim + " || pk[i] >= " + dim + ") return 1; /* index out of range */\n";
    code += "  if ((const void*)py != (const void*)pd) memcpy(py, pd, " + std::to_string(d->GetByteCount()) + "u);\n";
    if (n)
      code += "  {\n    const int64_t* idims = " + ctx->Const("idims", DT_INT64, ix->GetShape().ToVector()) + ";\n    const int64_t* dstride = " +
              ctx->Const("dstride", DT_INT64, std::vector<int64_t>(st, st + rank)) + ";\n    for (i = 0; i < " + aot::IntLit(n) +
              "; ++i) {\n      int64_t rem = i, off = 0, v = pk[i];\n      " + t + "* dst;\n      if (v < 0) v += " + dim + ";\n      for (a = " +
              std::to_string(rank) + " - 1; a >= 0; --a) {\n        const int64_t c = rem % idims[a];\n        rem /= idims[a];\n        off += (a == " +
              std::to_string(axis) + " ? v : c) * dstride[a];\n      }\n      dst = py + off;\n      {\n        const " + t +
              " v = pu[i];\n        *dst = " + CombineC(r, dt) + ";\n      }\n    }\n  }\n";
    ctx->Run(code + "}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& d = *ctx->GetInputShape(0);
    const Shape& ix = *ctx->GetInputShape(1);
    const Shape& u = *ctx->GetInputShape(2);
    Reduce r;
    if (GetReduction(ctx, &r) != GRAPH_SUCCESS) return GRAPH_FAILED;
    int64_t axis = 0;
    if (!NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(d.GetDimNum()), &axis))
      return Fail(ctx, AxisError(*ctx->GetAttrs()->GetInt("axis"), d.GetDimNum()));
    if (ix != u) return Fail(ctx, "indices " + ix.ToString() + " and updates " + u.ToString() + " must have the same shape");
    if (ix.GetDimNum() != d.GetDimNum()) return Fail(ctx, "indices " + ix.ToString() + " and data " + d.ToString() + " differ in rank");
    for (size_t a = 0; a < d.GetDimNum(); ++a)
      if (static_cast<int64_t>(a) != axis && ix.GetDim(a) > d.GetDim(a))
        return Fail(ctx, "indices " + ix.ToString() + " are larger than data " + d.ToString() + " in dim " + std::to_string(a) + ", which is not the axis");
    *ctx->GetOutputShape(0) = d;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* d = ctx->GetInputTensor(0);
    const Tensor* ix = ctx->GetInputTensor(1);
    const Tensor* u = ctx->GetInputTensor(2);
    Reduce r;
    if (GetReduction(ctx, &r) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, d->GetShape(), d->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (d->GetByteCount()) std::memcpy(y->GetAddr(), d->GetAddr(), d->GetByteCount());
    int64_t axis = 0;
    size_t rank = d->GetShape().GetDimNum();
    NormalizeAxis(*ctx->GetAttrs()->GetInt("axis"), static_cast<int64_t>(rank), &axis);
    int64_t st[WEFT_MAX_DIMS];
    Strides(d->GetShape(), st);
    const Shape& is = ix->GetShape();
    int64_t dim = d->GetShape().GetDim(static_cast<size_t>(axis));
    std::vector<int64_t> dst(static_cast<size_t>(is.GetShapeSize()));
    for (int64_t i = 0; i < is.GetShapeSize(); ++i) {
      int64_t v = IndexAt(ix, i);
      if (v < -dim || v >= dim) return Fail(ctx, "index " + std::to_string(v) + " is out of range for axis of size " + std::to_string(dim));
      if (v < 0) v += dim;
      int64_t rem = i, off = 0;
      for (size_t a = rank; a-- > 0;) {
        int64_t c = rem % is.GetDim(a);
        rem /= is.GetDim(a);
        off += (static_cast<int64_t>(a) == axis ? v : c) * st[a];
      }
      dst[static_cast<size_t>(i)] = off;
    }
    DispatchAll(d->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      T* py = y->GetData<T>();
      const T* pu = u->GetData<T>();
      for (size_t i = 0; i < dst.size(); ++i) Combine(py + dst[i], pu[i], r);
    });
    return GRAPH_SUCCESS;
  }
};

class Scatter : public ScatterElements {};  // the opset 9-10 name

class Pad : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public LayoutAwareOp, public CompilableOp,
            public RebuildOnLoad {
 public:
  // A float32 4-D zero Pad that grows channels (at the end) and spatial dims, not the batch, can
  // run between channel-blocked convolutions (BlazeFace-style residual channel padding) instead of
  // sending both neighbours back to the plain layout.
  static bool BlockedPad(const KernelContextBase* ctx, const Shape& in, std::vector<int64_t>* pads) {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* cv = ctx->GetOptionalInputTensor(2);
    std::string err;
    if (x->GetDataType() != DT_FLOAT || in.GetDimNum() != 4 || in.IsUnknown() || std::string(ctx->GetAttrs()->GetStr("mode")) != "constant")
      return false;
    if (!Pads(ctx, in, pads, &err) || !err.empty()) return false;
    if (cv && cv->GetShapeSize() && (!cv->GetAddr() || cv->GetDataType() != DT_FLOAT || *cv->GetData<float>() != 0.f)) return false;
    const std::vector<int64_t>& p = *pads;
    for (int64_t v : p)
      if (v < 0) return false;
    return p[0] == 0 && p[4] == 0 && p[1] == 0;  // the batch untouched; channels added at the end only
  }
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    std::vector<int64_t> pads;
    if (BlockedPad(ctx, ctx->GetInputTensor(0)->GetShape(), &pads)) s.Format(FORMAT_NC1HWC0).Input(0).Output(0).Together();
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override { return SetBlockedOutputStorage(ctx); }
  // [N][C/16][H][W][16] in and out: each output pixel's block is the input's (its channels past the
  // input's count zeroed) or zeros.
  graphStatus ExecuteBlocked(EagerOpExecutionContext* ctx, const Tensor* x, Tensor* y) {
    std::vector<int64_t> pads;
    const Shape& in = x->GetShape();
    const Shape& os = y->GetShape();
    if (!BlockedPad(ctx, in, &pads)) return Fail(ctx, "this Pad cannot run in the channel-blocked layout");
    const int64_t n = os.GetDim(0), cb = (os.GetDim(1) + 15) / 16, oh = os.GetDim(2), ow = os.GetDim(3);
    const int64_t ic = in.GetDim(1), icb = (ic + 15) / 16, ih = in.GetDim(2), iw = in.GetDim(3), top = pads[2], left = pads[3];
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    return ctx->ParallelFor(n * cb * oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(ow * 16, 1)), [&](int64_t lo, int64_t hi) {
      for (int64_t row = lo; row < hi; ++row) {
        const int64_t h = row % oh, b = row / oh % cb, i = row / oh / cb;
        float* out = py + row * ow * 16;
        const int64_t sh = h - top;
        const int64_t lanes = b < icb ? std::min<int64_t>(16, ic - b * 16) : 0;
        if (sh < 0 || sh >= ih || lanes == 0) {
          std::memset(out, 0, static_cast<size_t>(ow) * 16 * sizeof(float));
          continue;
        }
        const float* src = px + ((i * icb + b) * ih + sh) * iw * 16;
        for (int64_t w = 0; w < ow; ++w) {
          const int64_t sw = w - left;
          float* o = out + w * 16;
          if (sw < 0 || sw >= iw) {
            std::memset(o, 0, 16 * sizeof(float));
            continue;
          }
          const float* s = src + sw * 16;
#pragma omp simd
          for (int64_t l = 0; l < 16; ++l) o[l] = l < lanes ? s[l] : 0.f;
        }
      }
    });
  }
  static bool Pads(const KernelContextBase* ctx, const Shape& in, std::vector<int64_t>* pads, std::string* err) {
    std::vector<int64_t> raw, axes;
    if (!ReadInts(ctx->GetInputTensor(1), &raw)) return false;
    const Tensor* at = ctx->GetOptionalInputTensor(3);
    int64_t r = static_cast<int64_t>(in.GetDimNum());
    if (at) {
      if (!ReadInts(at, &axes)) return false;
    } else {
      for (int64_t k = 0; k < r; ++k) axes.push_back(k);
    }
    if (raw.size() != 2 * axes.size()) {
      *err = "pads has " + std::to_string(raw.size()) + " entries, expected " + std::to_string(2 * axes.size());
      return true;
    }
    pads->assign(static_cast<size_t>(2 * r), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a;
      if (!NormalizeAxis(axes[i], r, &a)) {
        *err = AxisError(axes[i], r);
        return true;
      }
      (*pads)[a] = raw[i];
      (*pads)[a + r] = raw[i + axes.size()];
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    std::vector<int64_t> pads;
    std::string err;
    if (!Pads(ctx, in, &pads, &err)) {
      MarkUnknown(ctx->GetOutputShape(0), in.GetDimNum());
      return GRAPH_SUCCESS;
    }
    if (!err.empty()) return Fail(ctx, err);
    if (CheckOneOf(ctx, "mode", {"constant", "reflect", "edge", "wrap", "symmetric"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
    Shape out;
    size_t r = in.GetDimNum();
    std::string mode = ctx->GetAttrs()->GetStr("mode");
    for (size_t k = 0; k < r; ++k) {
      int64_t d = 0;
      if (__builtin_add_overflow(in.GetDim(k), pads[k], &d) || __builtin_add_overflow(d, pads[k + r], &d))
        return Fail(ctx, "padding overflows dim " + std::to_string(k));
      if (d < 0) return Fail(ctx, "padding makes dim " + std::to_string(k) + " negative");
      // Negative pads crop first; the other modes then pad from what is left of the dim.
      int64_t kept = in.GetDim(k) + std::min<int64_t>(pads[k], 0) + std::min<int64_t>(pads[k + r], 0);
      bool grows = pads[k] > 0 || pads[k + r] > 0;
      if (mode != "constant" && grows && kept <= 0)
        return Fail(ctx, "'" + mode + "' padding of dim " + std::to_string(k) + " needs at least one element to copy, and the dim has none");
      // Reflection mirrors the dim without repeating its edge: a pad must be shorter than the dim.
      if (mode == "reflect" && grows && (pads[k] >= kept || pads[k + r] >= kept))
        return Fail(ctx, "reflect padding (" + std::to_string(pads[k]) + ", " + std::to_string(pads[k + r]) +
                             ") of dim " + std::to_string(k) + " must be smaller than the dim (" + std::to_string(kept) + ")");
      // Symmetric mirroring repeats the edge: a pad may be as long as the dim, not longer.
      if (mode == "symmetric" && grows && (pads[k] > kept || pads[k + r] > kept))
        return Fail(ctx, "symmetric padding (" + std::to_string(pads[k]) + ", " + std::to_string(pads[k + r]) +
                             ") of dim " + std::to_string(k) + " must not be longer than the dim (" + std::to_string(kept) + ")");
      out.AppendDim(d);
    }
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  // Per dim and output coordinate: the input coordinate it reads, or -1 (the fill value).
  static std::vector<std::vector<int64_t>> Maps(const Shape& in, const Shape& os, const std::vector<int64_t>& pads, const std::string& mode) {
    const size_t r = in.GetDimNum();
    std::vector<std::vector<int64_t>> map(r);
    for (size_t k = 0; k < r; ++k) {
      // Over the cropped extent [lo, lo + d) of the input dim (negative pads crop).
      int64_t lo = std::max<int64_t>(-pads[k], 0);
      int64_t d = in.GetDim(k) - lo - std::max<int64_t>(-pads[k + r], 0);
      map[k].resize(static_cast<size_t>(os.GetDim(k)));
      for (int64_t o = 0; o < os.GetDim(k); ++o) {
        int64_t c = o - std::max<int64_t>(pads[k], 0);
        if (c < 0 || c >= d) {
          if (mode == "constant" || d == 0) {
            map[k][static_cast<size_t>(o)] = -1;
            continue;
          }
          if (mode == "edge") c = c < 0 ? 0 : d - 1;
          else if (mode == "wrap") c = ((c % d) + d) % d;
          else if (mode == "symmetric") {  // the edge repeated: ... 1 0 | 0 1 ... d-1 | d-1 d-2 ...
            c = ((c % (2 * d)) + 2 * d) % (2 * d);
            if (c >= d) c = 2 * d - 1 - c;
          } else if (d == 1) c = 0;  // reflect
          else {
            int64_t period = 2 * (d - 1);
            c = ((c % period) + period) % period;
            if (c >= d) c = period - c;
          }
        }
        map[k][static_cast<size_t>(o)] = lo + c;
      }
    }
    return map;
  }
  // Constant pads: each dim's map as constants, then weft_pad_map (every mode).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& in = x->GetShape();
    const Shape& os = ctx->GetOutputTensor(0)->GetShape();
    std::vector<int64_t> pads;
    std::string err;
    if (!Pads(ctx, in, &pads, &err)) return Fail(ctx, "the generated C needs constant pads and axes");
    if (!err.empty()) return Fail(ctx, err);
    const size_t r = in.GetDimNum(), elem = DataTypeSize(x->GetDataType());
    if (r == 0 || r > 8 || elem == 0 || elem > 8) return Fail(ctx, "the generated C pads 1 to 8 dims of elements up to 8 bytes");
    const std::vector<std::vector<int64_t>> map = Maps(in, os, pads, ctx->GetAttrs()->GetStr("mode"));
    std::vector<int64_t> dims, stride(r, 1), off, flat;
    for (size_t k = r; k-- > 1;) stride[k - 1] = stride[k] * in.GetDim(k);
    for (size_t k = 0; k < r; ++k) {
      dims.push_back(os.GetDim(k));
      off.push_back(static_cast<int64_t>(flat.size()));
      flat.insert(flat.end(), map[k].begin(), map[k].end());
    }
    if (flat.empty()) flat.push_back(0);
    const Tensor* cv = ctx->GetOptionalInputTensor(2);
    std::string fill = "zero";
    if (cv && cv->GetShapeSize()) fill = ctx->Input(2, "void");
    ctx->Include("<string.h>");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_pad_map");
    ctx->Run("{\n  const uint64_t zero = 0;\n  weft_pad_map(" + std::to_string(elem) + ", " + std::to_string(r) + ", " +
             ctx->Const("dims", DT_INT64, dims) + ", " + ctx->Const("in_stride", DT_INT64, stride) + ", " + ctx->Const("map_at", DT_INT64, off) +
             ", " + ctx->Const("map", DT_INT64, flat) + ", " + aot::IntLit(os.GetShapeSize()) + ", " + (fill == "zero" ? "&zero" : fill) + ", " +
             ctx->Input(0, "void") + ", " + ctx->Output(0, "void") + ");\n  (void)zero;\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (x->GetFormat() == FORMAT_NC1HWC0 || y->GetFormat() == FORMAT_NC1HWC0) return ExecuteBlocked(ctx, x, y);
    std::vector<int64_t> pads;
    std::string err;
    Pads(ctx, x->GetShape(), &pads, &err);
    std::string mode = ctx->GetAttrs()->GetStr("mode");
    const Tensor* cv = ctx->GetOptionalInputTensor(2);
    const Shape& in = x->GetShape();
    const Shape& os = y->GetShape();
    size_t r = in.GetDimNum(), elem = DataTypeSize(x->GetDataType());
    uint8_t zero[8] = {0};
    const uint8_t* fill = cv && cv->GetShapeSize() ? cv->GetData<uint8_t>() : zero;
    int64_t st[WEFT_MAX_DIMS];
    Strides(in, st);
    const std::vector<std::vector<int64_t>> map = Maps(in, os, pads, mode);
    // Row by row over the last dim: the runs of it that read consecutive input elements are
    // copied at once.
    const int64_t w = r ? os.GetDim(r - 1) : 1, rows = w ? os.GetShapeSize() / w : 0;
    const std::vector<int64_t> last = r ? map[r - 1] : std::vector<int64_t>{0};
    const uint8_t* px = x->GetData<uint8_t>();
    uint8_t* py = y->GetData<uint8_t>();
    ForRows(ctx, rows, w, [&](int64_t lo_row, int64_t hi_row) {
      for (int64_t row = lo_row; row < hi_row; ++row) {
        int64_t rem = row, src = 0;
        bool outside = false;
        for (size_t k = r - 1; k-- > 0 && r > 0;) {
          int64_t c = map[k][static_cast<size_t>(rem % os.GetDim(k))];
          rem /= os.GetDim(k);
          if (c < 0) outside = true;
          src += c * st[k];
        }
        uint8_t* out = py + static_cast<size_t>(row * w) * elem;
        for (int64_t o = 0; o < w;) {
          int64_t c = last[static_cast<size_t>(o)];
          if (outside || c < 0) {
            CopyElem(out + static_cast<size_t>(o) * elem, fill, elem);
            ++o;
            continue;
          }
          int64_t run = 1;
          while (o + run < w && last[static_cast<size_t>(o + run)] == c + run) ++run;
          std::memcpy(out + static_cast<size_t>(o) * elem, px + static_cast<size_t>((src + c * (r ? st[r - 1] : 0))) * elem,
                      static_cast<size_t>(run) * elem);
          o += run;
        }
      }
    });
    return GRAPH_SUCCESS;
  }
};

// Converts one element; floats out of an integer type's range (and NaN) become 0 instead of
// undefined behaviour.
template <typename To, typename From>
To Convert(From v) {
  if constexpr (std::is_same<To, uint8_t>::value && std::is_same<From, uint8_t>::value) {
    return v;
  } else if constexpr (std::is_integral<To>::value && !std::is_integral<From>::value) {
    double d = static_cast<double>(Load(v));
    if (std::isnan(d) || d <= static_cast<double>(std::numeric_limits<To>::lowest()) - 1.0 ||
        d >= static_cast<double>(std::numeric_limits<To>::max()) + 1.0)
      return To(0);
    return static_cast<To>(d);
  } else if constexpr (std::is_integral<To>::value) {
    return static_cast<To>(v);
  } else {
    return Store<To>(static_cast<typename Compute<To>::type>(static_cast<double>(Load(v))));
  }
}

void CastData(const Tensor* x, Tensor* y) {
  bool to_bool = y->GetDataType() == DT_BOOL, from_bool = x->GetDataType() == DT_BOOL;
  DispatchAll(x->GetDataType(), [&](auto ft) {
    using F = decltype(ft);
    DispatchAll(y->GetDataType(), [&](auto tt) {
      using T = decltype(tt);
      const F* px = x->GetData<F>();
      T* py = y->GetData<T>();
      const int64_t n = x->GetShapeSize();
      if (to_bool) {
        for (int64_t i = 0; i < n; ++i) py[i] = static_cast<T>(static_cast<double>(Load(px[i])) != 0.0);
      } else if (from_bool) {
        for (int64_t i = 0; i < n; ++i) py[i] = Convert<T>(static_cast<uint8_t>(static_cast<double>(Load(px[i])) != 0.0));
      } else {  // one branch-free loop per pair of types, which the compiler vectorizes where it can
        for (int64_t i = 0; i < n; ++i) py[i] = Convert<T>(px[i]);
      }
    });
  });
}

// One element of type `from` (C expression x) as type `to`, in C, as Convert and CastData do it.
std::string CastC(DataType from, DataType to) {
  const std::string ct = aot::CType(to);
  const bool int_to = to != DT_FLOAT && to != DT_DOUBLE, float_from = from == DT_FLOAT || from == DT_DOUBLE;
  if (to == DT_BOOL) return "(uint8_t)((double)x != 0.0)";
  if (from == DT_BOOL) return "(" + ct + ")(x != 0)";
  if (int_to && float_from) {
    double lo = 0, hi = 0;
    DispatchAll(to, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_integral<T>::value) {
        lo = static_cast<double>(std::numeric_limits<T>::lowest()) - 1.0;
        hi = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
      }
    });
    char l[40], h[40];
    std::snprintf(l, sizeof(l), "%.17g", lo);
    std::snprintf(h, sizeof(h), "%.17g", hi);
    return "((d != d || d <= " + std::string(l) + " || d >= " + h + ") ? (" + ct + ")0 : (" + ct + ")d)";
  }
  if (int_to) return "(" + ct + ")x";
  return "(" + ct + ")(double)x";
}

class Cast : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType from = x->GetDataType(), to = ctx->GetOutputTensor(0)->GetDataType();
    const std::string cf = aot::CType(from), ct = aot::CType(to);
    if (cf.empty() || ct.empty()) return Fail(ctx, std::string("the generated C has no cast from ") + DataTypeName(from) + " to " + DataTypeName(to));
    ctx->Run("{\n  const " + cf + "* in = " + ctx->Input(0, cf.c_str()) + ";\n  " + ct + "* out = " + ctx->Output(0, ct.c_str()) + ";\n  int64_t i;\n  for (i = 0; i < " +
             aot::IntLit(x->GetShapeSize()) + "; ++i) {\n    const " + cf + " x = in[i];\n    const double d = (double)x;\n    (void)d;\n    out[i] = " +
             CastC(from, to) + ";\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override { *ctx->GetOutputShape(0) = *ctx->GetInputShape(0); return GRAPH_SUCCESS; }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (ctx->GetComputeNodeInputNum() > 1) return ctx->SetOutputDataType(0, ctx->GetInputDataType(1));  // CastLike
    const DataType* to = ctx->GetAttrs()->GetDataType("to");
    if (!to || DataTypeSize(*to) == 0) return Fail(ctx, "attribute 'to' names no data type Weft supports");
    return ctx->SetOutputDataType(0, *to);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), ctx->GetOutputDataType(0));
    if (!y) return GRAPH_FAILED;
    if (x->GetDataType() == y->GetDataType()) {
      // A cast to the input's own type (exporters emit them around softmax): a copy, or nothing
      // where the planner placed the output over the input (src/compile/node_steps.h).
      if (x->GetByteCount() && y->GetAddr() != x->GetAddr()) std::memcpy(y->GetAddr(), x->GetAddr(), x->GetByteCount());
      return GRAPH_SUCCESS;
    }
    CastData(x, y);
    return GRAPH_SUCCESS;
  }
};
class CastLike : public Cast {};

// BitCast (opset 26): the input's bytes read as type `to`, of the same width; the shape is kept.
// A byte read as bool is true where it is not zero, and stored as 1: every other op may then rely
// on a bool being 0 or 1.
class BitCast : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (ctx->GetOutputTensor(0)->GetDataType() != DT_BOOL || x->GetDataType() == DT_BOOL) return aot::EmitCopy(ctx);
    ctx->Run("{\n  const uint8_t* in = " + ctx->Input(0, "uint8_t") + ";\n  uint8_t* out = " + ctx->Output(0, "uint8_t") +
             ";\n  int64_t i;\n  for (i = 0; i < " + aot::IntLit(x->GetShapeSize()) + "; ++i) out[i] = in[i] != 0;\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override { *ctx->GetOutputShape(0) = *ctx->GetInputShape(0); return GRAPH_SUCCESS; }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType* to = ctx->GetAttrs()->GetDataType("to");
    if (!to || DataTypeSize(*to) == 0) return Fail(ctx, "attribute 'to' names no data type Weft supports");
    const DataType from = ctx->GetInputDataType(0);
    if (DataTypeSize(from) != DataTypeSize(*to))
      return Fail(ctx, std::string("cannot reinterpret ") + DataTypeName(from) + " (" + std::to_string(DataTypeSize(from) * 8) + " bits) as " +
                           DataTypeName(*to) + " (" + std::to_string(DataTypeSize(*to) * 8) + " bits): the widths must match");
    return ctx->SetOutputDataType(0, *to);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), ctx->GetOutputDataType(0));
    if (!y) return GRAPH_FAILED;
    if (y->GetDataType() == DT_BOOL && x->GetDataType() != DT_BOOL) {
      const uint8_t* in = x->GetData<uint8_t>();
      uint8_t* out = y->GetData<uint8_t>();
      for (int64_t i = 0; i < x->GetShapeSize(); ++i) out[i] = in[i] != 0;
      return GRAPH_SUCCESS;
    }
    if (x->GetByteCount() && y->GetAddr() != x->GetAddr()) std::memcpy(y->GetAddr(), x->GetAddr(), x->GetByteCount());
    return GRAPH_SUCCESS;
  }
};

// Dropout(data, ratio = 0.5, training_mode = false). Inference (the default): the input
// unchanged and an all-true mask. Training mode: each element kept with probability 1 - ratio
// (draws from the node's random stream, random.h) and scaled by 1 / (1 - ratio), the mask
// telling which were kept; ratio 1 drops everything (zeros, an all-false mask). The mask is bool,
// or of the data's type (1 and 0) with `legacy_mask` (opsets before 10, set by the importer).
class Dropout : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // A copy; a training_mode that is true at run time fails the run (status 1): the generated C
  // has no random stream.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* training = ctx->GetOptionalInputTensor(2);
    if (training && training->GetAddr() && training->GetShapeSize() > 0 && training->GetData<uint8_t>()[0])
      return Fail(ctx, "training_mode is constant true: the generated C has no random stream to drop elements with");
    if (training && training->GetShapeSize() > 0) ctx->Run("if (" + ctx->Input(aot::InputAt(ctx, 2), "uint8_t") + "[0]) return 1;\n");
    if (aot::EmitCopy(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const int64_t n = ctx->GetInputTensor(0)->GetShapeSize();
    if (ctx->GetComputeNodeOutputNum() > 1 && n > 0) {
      const DataType mt = ctx->GetOutputTensor(1)->GetDataType();
      if (mt == DT_BOOL) {
        ctx->Run("memset(" + ctx->Output(1, "uint8_t") + ", 1, " + aot::IntLit(n) + ");\n");
      } else {
        const std::string t = aot::CType(mt);
        if (t.empty()) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(mt) + " mask");
        ctx->Run("{\n  " + t + "* m = " + ctx->Output(1, t.c_str()) + ";\n  int64_t i;\n  for (i = 0; i < " + aot::IntLit(n) + "; ++i) m[i] = (" + t +
                 ")1;\n}\n");
      }
    }
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    for (size_t k = 0; k < ctx->GetComputeNodeOutputNum(); ++k) *ctx->GetOutputShape(k) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
    if (ctx->GetComputeNodeOutputNum() > 1) ctx->SetOutputDataType(1, MaskType(ctx, ctx->GetInputDataType(0)));
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* training = ctx->GetOptionalInputTensor(2);
    if (training && training->GetShapeSize() != 1) return Fail(ctx, "training_mode must be one bool, not " + training->GetShape().ToString());
    if (training && training->GetData<uint8_t>()[0]) return Train(ctx, x);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (x->GetByteCount()) std::memcpy(y->GetAddr(), x->GetAddr(), x->GetByteCount());
    if (ctx->GetComputeNodeOutputNum() > 1) {
      Tensor* m = ctx->MallocOutputTensor(1, x->GetShape(), MaskType(ctx, x->GetDataType()));
      if (!m) return GRAPH_FAILED;
      const int64_t n = x->GetShapeSize();
      DispatchAll(m->GetDataType(), [&](auto tag) {
        using T = decltype(tag);
        std::fill(m->GetData<T>(), m->GetData<T>() + n, Store<T>(static_cast<typename Compute<T>::type>(1)));
      });
    }
    return GRAPH_SUCCESS;
  }

 private:
  static DataType MaskType(const KernelContextBase* ctx, DataType data) { return *ctx->GetAttrs()->GetInt("legacy_mask") ? data : DT_BOOL; }
  graphStatus Train(EagerOpExecutionContext* ctx, const Tensor* x) {
    const Tensor* rt = ctx->GetOptionalInputTensor(1);
    double ratio = 0.5;
    if (rt) {
      if (rt->GetShapeSize() != 1) return Fail(ctx, "ratio must be one value, not " + rt->GetShape().ToString());
      DispatchFloat(rt->GetDataType(), [&](auto tag) { ratio = double(Load(rt->GetData<decltype(tag)>()[0])); });
    }
    if (!(ratio >= 0 && ratio <= 1)) return Fail(ctx, "ratio must be in [0, 1], not " + std::to_string(ratio));
    if (!IsFloating(x->GetDataType()))
      return Fail(ctx, std::string("training mode drops elements of floating types only, not ") + DataTypeName(x->GetDataType()));
    const int64_t n = x->GetShapeSize();
    uint64_t first;
    const rnd::Stream* st = rnd::Take(ctx, static_cast<uint64_t>(n), &first, /*int_seed=*/true);
    if (!st) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    Tensor* m = ctx->GetComputeNodeOutputNum() > 1 ? ctx->MallocOutputTensor(1, x->GetShape(), MaskType(ctx, x->GetDataType())) : nullptr;
    if (!y || (ctx->GetComputeNodeOutputNum() > 1 && !m)) return GRAPH_FAILED;
    const uint64_t key = st->key;
    const double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
    std::vector<uint8_t> kept(m ? static_cast<size_t>(n) : 0);
    uint8_t* pm = m ? kept.data() : nullptr;
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      ctx->ParallelFor(n, 1 << 14, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const bool keep = ratio < 1 && rnd::Unit(rnd::Draw(key, first + static_cast<uint64_t>(i))) >= ratio;
          py[i] = Store<T>(static_cast<C>(keep ? double(Load(px[i])) * scale : 0.0));
          if (pm) pm[i] = keep;
        }
      });
    });
    if (m)
      DispatchAll(m->GetDataType(), [&](auto tag) {
        using T = decltype(tag);
        for (int64_t i = 0; i < n; ++i) m->GetData<T>()[i] = Store<T>(static_cast<typename Compute<T>::type>(kept[static_cast<size_t>(i)]));
      });
    return GRAPH_SUCCESS;
  }
};

class Trilu : public EagerExecuteOp, public EmittableOp {
 public:
  // k read at run time (a constant or a computed scalar); elements off the kept triangle are 0.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& s = x->GetShape();
    if (s.GetDimNum() < 2) return Fail(ctx, "input rank must be >= 2");
    if (s.GetShapeSize() == 0) return GRAPH_SUCCESS;
    const Tensor* kt = ctx->GetOptionalInputTensor(1);
    const std::string k = kt && kt->GetShapeSize() ? ctx->Input(1, "int64_t") + "[0]" : "0";
    const bool upper = *ctx->GetAttrs()->GetInt("upper") != 0;
    const std::string elem = std::to_string(DataTypeSize(x->GetDataType()));
    const std::string rows = aot::IntLit(s.GetDim(s.GetDimNum() - 2)), cols = aot::IntLit(s.GetDim(s.GetDimNum() - 1));
    ctx->Include("<string.h>");
    ctx->Run("{\n  const uint8_t* px = " + ctx->Input(0, "uint8_t") + ";\n  uint8_t* py = " + ctx->Output(0, "uint8_t") +
             ";\n  const int64_t k = " + k + ";\n  int64_t i;\n  for (i = 0; i < " + aot::IntLit(s.GetShapeSize()) +
             "; ++i) {\n    const int64_t c = i % " + cols + ", r = (i / " + cols + ") % " + rows + ";\n    if (" +
             (upper ? "c - r >= k" : "c - r <= k") + ") memmove(py + i * " + elem + ", px + i * " + elem + ", " + elem + ");\n    else memset(py + i * " +
             elem + ", 0, " + elem + ");\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* kt = ctx->GetOptionalInputTensor(1);
    int64_t k = kt && kt->GetShapeSize() ? kt->GetData<int64_t>()[0] : 0;
    bool upper = *ctx->GetAttrs()->GetInt("upper") != 0;
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const Shape& s = x->GetShape();
    if (s.GetDimNum() < 2) return Fail(ctx, "input rank must be >= 2");
    int64_t rows = s.GetDim(s.GetDimNum() - 2), cols = s.GetDim(s.GetDimNum() - 1);
    size_t elem = DataTypeSize(x->GetDataType());
    for (int64_t i = 0; i < s.GetShapeSize(); ++i) {
      int64_t c = i % cols, r = (i / cols) % rows;
      bool keep = upper ? c - r >= k : c - r <= k;
      if (keep) CopyElem(y->GetData<uint8_t>() + i * elem, x->GetData<uint8_t>() + i * elem, elem);
      else std::memset(y->GetData<uint8_t>() + i * elem, 0, elem);
    }
    return GRAPH_SUCCESS;
  }
};

// DepthToSpace (DCR/CRD) and SpaceToDepth on NCHW.
class DepthToSpace : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  bool to_space() const { return true; }
  // A 6-D strided gather: DepthToSpace writes [N, C, H, b, W, b] from the deep input's channels,
  // SpaceToDepth writes [N, b, b, C, H, W] (DCR) or [N, C, b, b, H, W] (CRD) from the shallow
  // input's rows and columns.
  graphStatus Emit(EmitContext* ctx) override {
    const int64_t b = *ctx->GetAttrs()->GetInt("blocksize");
    const Shape& os = ctx->GetOutputTensor(0)->GetShape();
    if (std::string(ctx->GetNodeType()) == "DepthToSpace") {
      const int64_t c = os.GetDim(1), h = os.GetDim(2) / b, w = os.GetDim(3) / b;
      const bool crd = std::string(ctx->GetAttrs()->GetStr("mode")) == "CRD";
      return aot::EmitStridedCopy(ctx, {os.GetDim(0), c, h, b, w, b}, {0, 1, 2, 1, 3, 1},
                                  {1, crd ? b * b : 1, 1, crd ? b : b * c, 1, crd ? 1 : c}, {});
    }
    const Shape& xs = ctx->GetInputTensor(0)->GetShape();
    if (std::string(ctx->GetAttrs()->GetStr("mode")) == "CRD")  // [N, C, b, b, H, W]: each channel's b x b block together
      return aot::EmitStridedCopy(ctx, {xs.GetDim(0), xs.GetDim(1), b, b, os.GetDim(2), os.GetDim(3)}, {0, 1, 2, 3, 2, 3}, {1, 1, 1, 1, b, b}, {});
    return aot::EmitStridedCopy(ctx, {xs.GetDim(0), b, b, xs.GetDim(1), os.GetDim(2), os.GetDim(3)}, {0, 2, 3, 1, 2, 3}, {1, 1, 1, 1, b, b}, {});
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& s = *ctx->GetInputShape(0);
    int64_t b = *ctx->GetAttrs()->GetInt("blocksize");
    if (s.GetDimNum() != 4 || b <= 0 || b > (1 << 16)) return Fail(ctx, "needs a 4-D NCHW input and 0 < blocksize <= 65536");
    int64_t grown = 0;
    if (__builtin_mul_overflow(std::max(s.GetDim(2), s.GetDim(3)), b, &grown) ||
        __builtin_mul_overflow(s.GetDim(1), b * b, &grown))
      return Fail(ctx, "blocksize " + std::to_string(b) + " makes a dim overflow");
    bool d2s = std::string(ctx->GetNodeType()) == "DepthToSpace";
    if (CheckOneOf(ctx, "mode", {"DCR", "CRD"}) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (d2s) {
      if (s.GetDim(1) % (b * b)) return Fail(ctx, "channels not divisible by blocksize^2");
      *ctx->GetOutputShape(0) = Shape({s.GetDim(0), s.GetDim(1) / (b * b), s.GetDim(2) * b, s.GetDim(3) * b});
    } else {
      if (s.GetDim(2) % b || s.GetDim(3) % b) return Fail(ctx, "H and W must be divisible by blocksize");
      *ctx->GetOutputShape(0) = Shape({s.GetDim(0), s.GetDim(1) * b * b, s.GetDim(2) / b, s.GetDim(3) / b});
    }
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    bool d2s = std::string(ctx->GetNodeType()) == "DepthToSpace";
    const char* mode = ctx->GetAttrs()->GetStr("mode");
    bool crd = mode && std::string(mode) == "CRD";
    int64_t b = *ctx->GetAttrs()->GetInt("blocksize");
    size_t elem = DataTypeSize(x->GetDataType());
    // Work in terms of the deep (channel-rich) tensor D [N, C*b*b, H, W] and the shallow S [N, C, H*b, W*b].
    const Shape& ds = d2s ? x->GetShape() : y->GetShape();
    int64_t n = ds.GetDim(0), cd = ds.GetDim(1), h = ds.GetDim(2), w = ds.GetDim(3), c = cd / (b * b);
    for (int64_t in = 0; in < n; ++in)
      for (int64_t ic = 0; ic < c; ++ic)
        for (int64_t ih = 0; ih < h * b; ++ih)
          for (int64_t iw = 0; iw < w * b; ++iw) {
            int64_t bh = ih % b, bw = iw % b;
            int64_t dc = crd ? ic * b * b + bh * b + bw : (bh * b + bw) * c + ic;
            int64_t deep = ((in * cd + dc) * h + ih / b) * w + iw / b;
            int64_t shallow = ((in * c + ic) * h * b + ih) * w * b + iw;
            if (d2s) CopyElem(y->GetData<uint8_t>() + shallow * elem, x->GetData<uint8_t>() + deep * elem, elem);
            else CopyElem(y->GetData<uint8_t>() + deep * elem, x->GetData<uint8_t>() + shallow * elem, elem);
          }
    return GRAPH_SUCCESS;
  }
};
class SpaceToDepth : public DepthToSpace {};

}  // namespace

void WeftRegister_data_movement(std::vector<OpEntry>& out) {
  TensorType all = TensorType::ALL();
  out.push_back({OpDefBuilder("Concat").DYNAMIC_INPUT(inputs, "T").OUTPUT(concat_result, "T").DATATYPE(T, all)
                     .REQUIRED_ATTR(axis, Int).Build(), MakeOpImpl<Concat>("Concat")});
  out.push_back({OpDefBuilder("Split").INPUT(input, "T").OPTIONAL_INPUT(split, TensorType({DT_INT64})).DYNAMIC_OUTPUT(outputs, "T")
                     .DATATYPE(T, all).ATTR(axis, Int, 0).ATTR(num_outputs, Int, 0).Build(), MakeOpImpl<Split>("Split")});
  out.push_back({OpDefBuilder("Slice").INPUT(data, all).INPUT(starts, IndexTypes()).INPUT(ends, IndexTypes())
                     .OPTIONAL_INPUT(axes, IndexTypes()).OPTIONAL_INPUT(steps, IndexTypes()).OUTPUT(output, all).Build(),
                 MakeOpImpl<Slice>("Slice")});
  out.push_back({OpDefBuilder("Gather").INPUT(data, all).INPUT(indices, IndexTypes()).OUTPUT(output, all).ATTR(axis, Int, 0).Build(),
                 MakeOpImpl<Gather>("Gather")});
  out.push_back({OpDefBuilder("GatherElements").INPUT(data, all).INPUT(indices, IndexTypes()).OUTPUT(output, all)
                     .ATTR(axis, Int, 0).Build(), MakeOpImpl<GatherElements>("GatherElements")});
  out.push_back({OpDefBuilder("GatherND").INPUT(data, all).INPUT(indices, TensorType({DT_INT64})).OUTPUT(output, all)
                     .ATTR(batch_dims, Int, 0).Build(),
                 MakeOpImpl<GatherND>("GatherND")});
  out.push_back({OpDefBuilder("ScatterND").INPUT(data, "T").INPUT(indices, TensorType({DT_INT64})).INPUT(updates, "T")
                     .OUTPUT(output, "T").DATATYPE(T, all).ATTR(reduction, String, "none").Build(),
                 MakeOpImpl<ScatterND>("ScatterND")});
  out.push_back({OpDefBuilder("ScatterElements").INPUT(data, "T").INPUT(indices, IndexTypes()).INPUT(updates, "T")
                     .OUTPUT(output, "T").DATATYPE(T, all).ATTR(axis, Int, 0).ATTR(reduction, String, "none").Build(),
                 MakeOpImpl<ScatterElements>("ScatterElements")});
  out.push_back({OpDefBuilder("Scatter").INPUT(data, "T").INPUT(indices, IndexTypes()).INPUT(updates, "T")
                     .OUTPUT(output, "T").DATATYPE(T, all).ATTR(axis, Int, 0).ATTR(reduction, String, "none").Build(),
                 MakeOpImpl<Scatter>("Scatter")});
  out.push_back({OpDefBuilder("Pad").INPUT(data, "T").INPUT(pads, TensorType({DT_INT64})).OPTIONAL_INPUT(constant_value, "T")
                     .OPTIONAL_INPUT(axes, IndexTypes()).OUTPUT(output, "T").DATATYPE(T, all).ATTR(mode, String, "constant").Build(),
                 MakeOpImpl<Pad>("Pad")});
  out.push_back({OpDefBuilder("Cast").INPUT(input, all).OUTPUT(output, all).REQUIRED_ATTR(to, Type).ATTR(saturate, Int, 1).Build(),
                 MakeOpImpl<Cast>("Cast")});
  out.push_back({OpDefBuilder("CastLike").INPUT(input, all).INPUT(target_type, all).OUTPUT(output, all).ATTR(saturate, Int, 1).Build(),
                 MakeOpImpl<CastLike>("CastLike")});
  out.push_back({OpDefBuilder("BitCast").INPUT(input, all).OUTPUT(output, all).REQUIRED_ATTR(to, Type).Build(), MakeOpImpl<BitCast>("BitCast")});
  out.push_back({OpDefBuilder("Dropout").INPUT(data, all).OPTIONAL_INPUT(ratio, FloatTypes()).OPTIONAL_INPUT(training_mode, TensorType({DT_BOOL}))
                     .OUTPUT(output, all).DYNAMIC_OUTPUT(mask, all).ATTR(seed, Int, rnd::kNoIntSeed).ATTR(legacy_mask, Int, 0).Build(),
                 MakeOpImpl<Dropout>("Dropout")});
  out.push_back({OpDefBuilder("Trilu").INPUT(input, all).OPTIONAL_INPUT(k, TensorType({DT_INT64})).OUTPUT(output, all).SAME_AS_INPUT(input)
                     .ATTR(upper, Int, 1).Build(), MakeOpImpl<Trilu>("Trilu")});
  out.push_back({OpDefBuilder("DepthToSpace").INPUT(input, all).OUTPUT(output, all).REQUIRED_ATTR(blocksize, Int).ATTR(mode, String, "DCR").Build(),
                 MakeOpImpl<DepthToSpace>("DepthToSpace")});
  out.push_back({OpDefBuilder("SpaceToDepth").INPUT(input, all).OUTPUT(output, all).REQUIRED_ATTR(blocksize, Int).ATTR(mode, String, "DCR").Build(),
                 MakeOpImpl<SpaceToDepth>("SpaceToDepth")});
}

}  // namespace weft::ops
