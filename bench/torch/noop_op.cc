// Native TORCH_LIBRARY operators that do nothing: the floor for the per-call cost of a custom
// operator reached through torch.ops. `noop` returns its first input; `noop_alloc` returns a new
// uninitialized tensor of the same shape (the floor for an out-of-place operator).
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {
at::Tensor Noop(const at::Tensor& x, const at::Tensor& /*y*/) { return x; }
at::Tensor NoopAlloc(const at::Tensor& x, const at::Tensor& /*y*/) { return at::empty_like(x); }
}  // namespace

TORCH_LIBRARY(weft_bench, m) {
  m.def("noop(Tensor x, Tensor y) -> Tensor");
  m.def("noop_alloc(Tensor x, Tensor y) -> Tensor");
  m.impl("noop", torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(Noop)));
  m.impl("noop_alloc", torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(NoopAlloc)));
}
