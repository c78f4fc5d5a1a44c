// Fork-join parallelism behind WeftHostApi::parallel_for. Loops run on the OpenMP team of the
// calling thread, the same team oneDNN's primitives use, so one set of threads serves every op of
// a run: a second pool would sit spinning beside OpenMP's and the two would take turns on the
// cores. One loop at a time per pool; a caller that finds the pool busy (another run is using it)
// or is already inside a parallel region runs its loop inline, so nothing blocks or nests.
#ifndef WEFT_SRC_RUNTIME_THREAD_POOL_H_
#define WEFT_SRC_RUNTIME_THREAD_POOL_H_

#include <cstdint>
#include <mutex>

#include "weft/c/weft_plugin.h"

namespace weft::internal {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : threads_(threads > 1 ? threads : 1) {}
  int size() const { return threads_; }
  // Calls fn(user, b, e) over disjoint chunks covering [0, n); returns when all are done. The
  // first exception a chunk throws skips the chunks not yet started and is rethrown here.
  void ParallelFor(int64_t n, int64_t grain, WeftParallelFn fn, void* user);

 private:
  int threads_;
  std::mutex busy_;  // held by the caller for the duration of a loop
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_THREAD_POOL_H_
