// Runs a short chain of oneDNN primitives (e.g. reorder → convolution → reorder) from several
// threads without allocating per call: each concurrent caller takes a prepared slot (stream,
// memory objects, argument maps) from a small pool and only swaps data pointers. Temporaries
// (blocked-layout activations, scratchpads) come from the run's workspace. Used by the float32
// fast paths of Conv, Gemm and MatMul.
#ifndef WEFT_OPS_DNNL_RUNNER_H_
#define WEFT_OPS_DNNL_RUNNER_H_

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "weft/custom_op.h"

namespace weft::ops {

// Prepacked weights are read in full on every run, and the large ones stream from memory: asks
// for transparent huge pages over the 2 MiB-aligned part of a new, untouched buffer (Linux's
// default "madvise" mode grants them only on request), which cuts the TLB misses of streaming
// it (a 151 MB fully connected layer ran 14% faster). A no-op where the kernel declines.
inline void AdviseHugePages(void* p, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t(2) << 20;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
#ifdef MADV_HUGEPAGE
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#endif
}
// A buffer for weights in `desc`'s layout, allocated by oneDNN, with huge pages requested.
inline dnnl::memory PackedWeights(const dnnl::memory::desc& desc, const dnnl::engine& engine) {
  dnnl::memory m(desc, engine);
  AdviseHugePages(m.get_data_handle(), desc.get_size());
  return m;
}

inline dnnl::engine& CpuEngine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Sets OpenMP to the session's intra-op thread count and returns it. oneDNN runs on OpenMP; the
// runner applies the count again per call, and this call keeps compile-time reorders within it.
inline int ApplyIntraOpThreads(const KernelContextBase* ctx) {
  const char* v = ctx->GetOption("weft.intra_op_threads");
  int n = v ? std::atoi(v) : 1;
  n = n > 0 ? n : 1;
  omp_set_num_threads(n);
  return n;
}

// C[m, n] = A[m, k] * op(B) + beta * C, row-major, op(B) = B ('N', B is [k, n]) or B^T ('T', B is
// [n, k]), on the session's intra-op threads: the product is cut into one block of columns (or
// of rows, when there are more rows than columns) per thread and each block is one
// single-threaded sgemm. oneDNN's own threading of sgemm splits products with few rows badly
// (26x2048x512 ran 2.6x slower on 2 threads than on 1); equal blocks are never much slower.
inline bool ParallelSgemm(const KernelContextBase* ctx, char transb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return true;
  if (k <= 0) {  // an empty sum (an RNN with input size 0): C = beta * C, which oneDNN refuses to compute
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return true;
  }
  const int threads = ApplyIntraOpThreads(ctx);
  const bool by_cols = n >= m;
  const int64_t extent = by_cols ? n : m;
  const int64_t align = by_cols ? 16 : 1;
  const int64_t parts = std::min<int64_t>(threads, (extent + align - 1) / align);
  // Small products in one call: a fork and a join would cost more than they save.
  if (parts <= 1 || static_cast<double>(m) * n * k < 262144.0)
    return dnnl_sgemm('N', transb, m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
  const int64_t block = ((extent + parts - 1) / parts + align - 1) / align * align;
  std::atomic<bool> ok{true};
  graphStatus st = ctx->ParallelFor(parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const int64_t from = p * block, to = std::min(extent, from + block);
      if (from >= to) continue;
      dnnl_status_t r;
      if (by_cols)
        r = dnnl_sgemm('N', transb, m, to - from, k, 1.f, a, lda, transb == 'T' ? b + from * ldb : b + from, ldb, beta, c + from, ldc);
      else
        r = dnnl_sgemm('N', transb, to - from, n, k, 1.f, a + from * lda, lda, b, ldb, beta, c + from * ldc, ldc);
      if (r != dnnl_success) ok = false;
    }
  });
  return st == GRAPH_SUCCESS && ok;
}

class DnnlRunner {
 public:
  // Memory slots are numbered in the order they are added.
  int AddBound(const dnnl::memory::desc& md) { return Add(Mem{md, Kind::kBound, {}}); }   // caller pointer per run
  int AddFixed(const dnnl::memory& m) { return Add(Mem{m.get_desc(), Kind::kFixed, m}); }  // prepacked, bound once
  int AddTemp(const dnnl::memory::desc& md) { return Add(Mem{md, Kind::kTemp, {}}); }      // workspace per run
  // A primitive with (argument id, slot) pairs; its scratchpad comes from the workspace.
  void AddStep(dnnl::primitive p, std::vector<std::pair<int, int>> args, const dnnl::memory::desc& scratch = {}) {
    int s = scratch.get_size() ? AddTemp(scratch) : -1;
    if (s >= 0) args.push_back({DNNL_ARG_SCRATCHPAD, s});
    steps_.push_back({std::move(p), std::move(args)});
  }
  void Finish(int threads) {
    threads_ = threads;
    ready_ = !steps_.empty();
  }
  bool ready() const { return ready_; }

  // ptrs: one data pointer per bound slot, in slot order. False (after SetError) on failure.
  bool Run(const EagerOpExecutionContext* ctx, void* const* ptrs) {
    std::unique_ptr<Slot> slot = Acquire();
    if (!slot) {
      ctx->SetError("oneDNN: cannot prepare an execution slot");
      return false;
    }
    size_t b = 0;
    for (size_t i = 0; i < mems_.size(); ++i) {
      if (mems_[i].kind == Kind::kBound) slot->mems[i].set_data_handle(ptrs[b++]);
      if (mems_[i].kind == Kind::kTemp) {
        void* p = ctx->MallocWorkSpace(mems_[i].md.get_size());
        if (!p) return Release(std::move(slot)), false;
        slot->mems[i].set_data_handle(p);
      }
    }
    bool ok = true;
    try {
      omp_set_num_threads(threads_);
      for (size_t k = 0; k < steps_.size(); ++k) steps_[k].prim.execute(slot->stream, slot->args[k]);
      slot->stream.wait();
    } catch (const dnnl::error& e) {
      ctx->SetError(std::string("oneDNN: ") + e.what());
      ok = false;
    }
    Release(std::move(slot));
    return ok;
  }

 private:
  enum class Kind { kBound, kFixed, kTemp };
  struct Mem {
    dnnl::memory::desc md;
    Kind kind;
    dnnl::memory fixed;
  };
  struct Step {
    dnnl::primitive prim;
    std::vector<std::pair<int, int>> args;
  };
  struct Slot {
    dnnl::stream stream;
    std::vector<dnnl::memory> mems;
    std::vector<std::unordered_map<int, dnnl::memory>> args;
  };
  int Add(Mem m) {
    mems_.push_back(std::move(m));
    return static_cast<int>(mems_.size() - 1);
  }
  std::unique_ptr<Slot> Acquire() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!free_.empty()) {
        auto s = std::move(free_.back());
        free_.pop_back();
        return s;
      }
    }
    try {  // first use by this many concurrent callers: build a slot
      auto s = std::make_unique<Slot>();
      s->stream = dnnl::stream(CpuEngine());
      for (auto& m : mems_)
        s->mems.push_back(m.kind == Kind::kFixed ? m.fixed : dnnl::memory(m.md, CpuEngine(), static_cast<void*>(DNNL_MEMORY_NONE)));
      for (auto& st : steps_) {
        std::unordered_map<int, dnnl::memory> a;
        for (auto& [id, slot] : st.args) a[id] = s->mems[static_cast<size_t>(slot)];
        s->args.push_back(std::move(a));
      }
      return s;
    } catch (const dnnl::error&) {
      return nullptr;
    }
  }
  void Release(std::unique_ptr<Slot> s) {
    std::lock_guard<std::mutex> l(mu_);
    free_.push_back(std::move(s));
  }

  std::vector<Mem> mems_;
  std::vector<Step> steps_;
  int threads_ = 1;
  bool ready_ = false;
  std::mutex mu_;
  std::vector<std::unique_ptr<Slot>> free_;
};

// Adds "reorder `from` into a temp of layout `to`" (or nothing when they match); returns the slot
// holding data in layout `to`.
inline int Relayout(DnnlRunner& r, int from_slot, const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
  if (from == to) return from_slot;
  int t = r.AddTemp(to);
  dnnl::reorder::primitive_desc pd(CpuEngine(), from, CpuEngine(), to);
  r.AddStep(dnnl::reorder(pd), {{DNNL_ARG_FROM, from_slot}, {DNNL_ARG_TO, t}});
  return t;
}

// Post-ops for what the engine fused into the node: the residual sum, then the activation.
// A fused activation as oneDNN eltwise operations (empty for none), in order.
struct EltwiseOp {
  dnnl::algorithm alg;
  float alpha, beta;
};
inline std::vector<EltwiseOp> ActivationEltwise(const WeftEpilogue& e) {
  using alg = dnnl::algorithm;
  switch (e.activation) {
    case WEFT_ACT_RELU: return {{alg::eltwise_relu, 0.f, 0.f}};
    case WEFT_ACT_CLIP: return {{alg::eltwise_clip, e.alpha, e.beta}};
    case WEFT_ACT_LEAKY_RELU: return {{alg::eltwise_relu, e.alpha, 0.f}};
    case WEFT_ACT_SIGMOID: return {{alg::eltwise_logistic, 0.f, 0.f}};
    case WEFT_ACT_TANH: return {{alg::eltwise_tanh, 0.f, 0.f}};
    case WEFT_ACT_HARD_SIGMOID: return {{alg::eltwise_linear, e.alpha, e.beta}, {alg::eltwise_clip, 0.f, 1.f}};  // clip(a x + b, 0, 1)
    case WEFT_ACT_ELU: return {{alg::eltwise_elu, e.alpha, 0.f}};
    case WEFT_ACT_HARD_SWISH: return {{alg::eltwise_hardswish, 0.f, 0.f}};
    case WEFT_ACT_SWISH: return {{alg::eltwise_swish, 1.f, 0.f}};
    case WEFT_ACT_GELU: return {{alg::eltwise_gelu_erf, 0.f, 0.f}};
    case WEFT_ACT_GELU_TANH: return {{alg::eltwise_gelu_tanh, 0.f, 0.f}};
    default: return {};
  }
}
// Piecewise-linear activations: as cheap inside any kernel's epilogue as a separate pass is not.
inline bool CheapActivation(const WeftEpilogue& e) {
  return e.activation == WEFT_ACT_NONE || e.activation == WEFT_ACT_RELU || e.activation == WEFT_ACT_CLIP ||
         e.activation == WEFT_ACT_LEAKY_RELU;
}

// The residual sum (when `sum`) and, unless `activation` is false, the fused activation as
// oneDNN post-ops.
inline dnnl::post_ops FusedPostOps(const WeftEpilogue& e, bool sum, bool activation = true) {
  dnnl::post_ops po;
  if (sum) po.append_sum(1.0f);
  if (activation)
    for (const EltwiseOp& op : ActivationEltwise(e)) po.append_eltwise(1.0f, op.alg, op.alpha, op.beta);
  return po;
}

}  // namespace weft::ops

#endif  // WEFT_OPS_DNNL_RUNNER_H_
