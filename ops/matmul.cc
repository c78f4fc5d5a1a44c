// MatMul with NumPy semantics: 1-D operands are promoted, batch dims broadcast.
#include "aot_emit.h"
#include "dnnl_matmul.h"
#include "elementwise.h"
#include "op_util.h"

namespace weft::ops {
namespace {

struct MatMulDims {
  Shape batch;  // broadcast batch shape
  Shape a_batch, b_batch;
  int64_t m = 0, k = 0, n = 0;
  Shape out;
};

bool Plan(const Shape& a, const Shape& b, MatMulDims* d, std::string* err) {
  if (a.GetDimNum() == 0 || b.GetDimNum() == 0) {
    *err = "MatMul: operands must have rank >= 1, got " + a.ToString() + " and " + b.ToString();
    return false;
  }
  size_t ra = a.GetDimNum(), rb = b.GetDimNum();
  d->m = ra == 1 ? 1 : a.GetDim(ra - 2);
  d->k = a.GetDim(ra - 1);
  int64_t kb = rb == 1 ? b.GetDim(0) : b.GetDim(rb - 2);
  d->n = rb == 1 ? 1 : b.GetDim(rb - 1);
  if (d->k != kb) {
    *err = "MatMul: inner dimensions differ: A " + a.ToString() + " has K=" + std::to_string(d->k) + ", B " +
           b.ToString() + " has K=" + std::to_string(kb);
    return false;
  }
  d->a_batch = Shape();
  d->b_batch = Shape();
  for (size_t k = 0; k + 2 < ra; ++k) d->a_batch.AppendDim(a.GetDim(k));
  for (size_t k = 0; k + 2 < rb; ++k) d->b_batch.AppendDim(b.GetDim(k));
  if (!BroadcastShape(d->a_batch, d->b_batch, &d->batch)) {
    *err = "MatMul: batch dims of " + a.ToString() + " and " + b.ToString() + " do not broadcast";
    return false;
  }
  d->out = d->batch;
  if (ra != 1) d->out.AppendDim(d->m);
  if (rb != 1) d->out.AppendDim(d->n);
  if (d->out.GetDimNum() > WEFT_MAX_DIMS) {
    *err = "MatMul: result rank exceeds " + std::to_string(WEFT_MAX_DIMS);
    return false;
  }
  return true;
}

// `row` is scratch for n values of the compute type.
template <typename T, typename C>
void Gemm(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n, C* row) {
  // Accumulate a row of C at a time in the compute type (i-k-j order: contiguous inner loop).
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row, row + n, C(0));
    for (int64_t p = 0; p < k; ++p) {
      C av = Load(a[i * k + p]);
      const T* br = b + p * n;
      for (int64_t j = 0; j < n; ++j) row[j] += av * Load(br[j]);
    }
    for (int64_t j = 0; j < n; ++j) c[i * n + j] = Store<T>(row[j]);
  }
}

class MatMul : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public FusibleOp, public EmittableOp {
 public:
  // float32 through weft_gemm_f32: one product when B is 2-D (A's batch dims folded into M), else
  // one per batch when both operands have the same batch dims.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    MatMulDims d;
    std::string err;
    if (!Plan(a->GetShape(), b->GetShape(), &d, &err)) return Fail(ctx, err);
    if (a->GetDataType() != DT_FLOAT || ctx->GetOptionalInputTensor(2) || ctx->GetEpilogue().activation != WEFT_ACT_NONE)
      return Fail(ctx, "the generated C takes float32 MatMul without fused operations only");
    const size_t ra = a->GetShape().GetDimNum(), rb = b->GetShape().GetDimNum();
    int64_t batches = 1, rows = d.m;
    if (rb <= 2) {
      rows = d.k ? a->GetShapeSize() / d.k : 0;
    } else {
      if (ra != rb) return Fail(ctx, "the generated C multiplies batches of equal rank only");
      for (size_t i = 0; i + 2 < ra; ++i)
        if (a->GetShape().GetDim(i) != b->GetShape().GetDim(i)) return Fail(ctx, "the generated C does not broadcast MatMul batches");
      batches = d.batch.GetShapeSize();
    }
    for (int64_t v : {rows, d.k, d.n, batches})
      if (v > INT32_MAX / 4) return Fail(ctx, "too large for the generated C");
    aot::EmitHelper(ctx, aot::Kernels(), "weft_gemm_f32");
    ctx->Run("{\n  int64_t i;\n  for (i = 0; i < " + std::to_string(batches) + "; ++i)\n    weft_gemm_f32(" + std::to_string(rows) + ", " +
             std::to_string(d.n) + ", " + std::to_string(d.k) + ", 0, 0, 1.f, 0.f, " + ctx->Input(0, "float") + " + i * " + std::to_string(rows * d.k) +
             ", " + ctx->Input(1, "float") + " + i * " + std::to_string(rb <= 2 ? 0 : d.k * d.n) + ", 0, 1, 1, " + ctx->Output(0, "float") + " + i * " +
             std::to_string(rows * d.n) + ");\n}\n");
    return GRAPH_SUCCESS;
  }
  // MatMul [+ Add of a constant over the last dim] [+ activation on floats].
  graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& s) override {
    s.BiasInput(2);
    if (IsFloating(ctx->GetInputDataType(0))) AbsorbAllActivations(s);
    return GRAPH_SUCCESS;
  }

  // float32 fast path: oneDNN matmul (operands of rank >= 2; B prepacked when constant).
  graphStatus Compile(OpCompileContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    MatMulDims d;
    std::string err;
    if (a->GetDataType() != DT_FLOAT || a->GetShape().GetDimNum() < 2 || b->GetShape().GetDimNum() < 2 ||
        !Plan(a->GetShape(), b->GetShape(), &d, &err))
      return GRAPH_SUCCESS;
    if (d.k == 0 || d.out.GetShapeSize() == 0) return GRAPH_SUCCESS;  // empty: the loops write the (zero) result
    size_t rank = d.out.GetDimNum();
    auto padded = [&](const Shape& s) {
      std::vector<int64_t> v(rank - s.GetDimNum(), 1);
      for (size_t k = 0; k < s.GetDimNum(); ++k) v.push_back(s.GetDim(k));
      return v;
    };
    MatmulSpec spec;
    spec.a_dims = padded(a->GetShape());
    spec.b_dims = padded(b->GetShape());
    spec.y_dims = d.out.ToVector();
    if (b->GetShape().GetDimNum() == 2) {  // weights: fold A's batch dims into M (one large GEMM)
      int64_t rows = a->GetShape().GetShapeSize() / d.k;
      spec.a_dims = {rows, d.k};
      spec.b_dims = {d.k, d.n};
      spec.y_dims = {rows, d.n};
    }
    if (static_cast<double>(d.batch.GetShapeSize()) * d.m * d.n * d.k < 32768.0) return GRAPH_SUCCESS;  // tiny: loops win
    spec.b_const = b->GetAddr();
    if (const Tensor* bias = ctx->GetOptionalInputTensor(2)) {  // set by the fusion pass: constant [.., N]
      if (!bias->GetAddr() || bias->GetDataType() != DT_FLOAT || bias->GetShapeSize() != d.n) return GRAPH_SUCCESS;
      spec.bias = bias->GetData<float>();
    }
    spec.post_ops = FusedPostOps(ctx->GetEpilogue(), false);
    int threads = ApplyIntraOpThreads(ctx);
    try {
      BuildMatmul(runner_, spec, keep_, threads);
      b_const_ = b->GetAddr() != nullptr;
    } catch (const dnnl::error&) {
      // not ready: the reference loops run instead
    }
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(InferShapeContext* ctx) override {
    MatMulDims d;
    std::string err;
    if (!Plan(*ctx->GetInputShape(0), *ctx->GetInputShape(1), &d, &err)) {
      ctx->SetError(err);
      return GRAPH_FAILED;
    }
    *ctx->GetOutputShape(0) = d.out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    MatMulDims d;
    std::string err;
    if (!Plan(a->GetShape(), b->GetShape(), &d, &err)) {
      ctx->SetError(err);
      return GRAPH_FAILED;
    }
    Tensor* c = ctx->MallocOutputTensor(0, d.out, a->GetDataType());
    if (!c) return GRAPH_FAILED;
    if (runner_.ready()) {
      void* ptrs[3] = {const_cast<void*>(a->GetAddr()), const_cast<void*>(b->GetAddr()), c->GetAddr()};
      if (b_const_) ptrs[1] = c->GetAddr();  // bound slots are A, Y when B is prepacked
      return runner_.Run(ctx, ptrs) ? GRAPH_SUCCESS : GRAPH_FAILED;
    }
    FusedActivation act(ctx);
    int64_t batches = d.batch.GetShapeSize();
    int64_t sa[WEFT_MAX_DIMS], sb[WEFT_MAX_DIMS];
    BroadcastStrides(d.a_batch, d.batch, sa);
    BroadcastStrides(d.b_batch, d.batch, sb);
    bool ok = true;
    DispatchNumeric(a->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const T* pa = a->GetData<T>();
      const T* pb = b->GetData<T>();
      T* pc = c->GetData<T>();
      C* row = static_cast<C*>(ctx->MallocWorkSpace(static_cast<size_t>(d.n) * sizeof(C)));
      if (!row) {
        ok = false;
        return;
      }
      for (int64_t bi = 0; bi < batches; ++bi) {
        int64_t oa = 0, ob = 0, rem = bi;
        for (size_t k = d.batch.GetDimNum(); k-- > 0;) {
          int64_t idx = rem % d.batch.GetDim(k);
          rem /= d.batch.GetDim(k);
          oa += idx * sa[k];
          ob += idx * sb[k];
        }
        Gemm(pa + oa * d.m * d.k, pb + ob * d.k * d.n, pc + bi * d.m * d.n, d.m, d.k, d.n, row);
      }
      if (const Tensor* bias = ctx->GetOptionalInputTensor(2)) {  // fused bias over the last dim
        const T* pbias = bias->GetData<T>();
        for (int64_t i = 0; i < c->GetShapeSize(); ++i) pc[i] = Store<T>(static_cast<C>(Load(pc[i])) + static_cast<C>(Load(pbias[i % d.n])));
      }
      if (act.e.activation != WEFT_ACT_NONE)
        for (int64_t i = 0; i < c->GetShapeSize(); ++i) pc[i] = Store<T>(act(static_cast<C>(Load(pc[i]))));
    });
    return ok ? GRAPH_SUCCESS : GRAPH_FAILED;
  }

 private:
  DnnlRunner runner_;
  std::vector<dnnl::memory> keep_;
  bool b_const_ = false;
};

}  // namespace

void WeftRegister_matmul(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("MatMul")
                     .INPUT(A, "T")
                     .INPUT(B, "T")
                     .OPTIONAL_INPUT(Bias, "T")  // Y = A x B + Bias over the last dim (epilogue fusion connects it)
                     .OUTPUT(Y, "T")
                     .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT32, DT_INT64}))
                     .Build(),
                 MakeOpImpl<MatMul>("MatMul")});
}

}  // namespace weft::ops
