#pragma once
// The calling thread's OpenMP thread count belongs to the caller: kernels set it per call (oneDNN
// runs on OpenMP, and reads it), and code in the same process that shares the OpenMP runtime
// (PyTorch's intra-op threads, for one) reads the same setting. Every entry point that may run
// kernels restores it on the way out.

#include <omp.h>

namespace weft::internal {

class OmpThreadsScope {
 public:
  OmpThreadsScope() : saved_(omp_get_max_threads()) {}
  ~OmpThreadsScope() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int saved_;
};

}  // namespace weft::internal
