#include "runtime/thread_pool.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>

namespace weft::internal {

void ThreadPool::ParallelFor(int64_t n, int64_t grain, WeftParallelFn fn, void* user) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (threads_ <= 1 || n <= grain || omp_in_parallel()) {
    fn(user, 0, n);
    return;
  }
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock()) {
    fn(user, 0, n);
    return;
  }
  // A few chunks per thread, taken in order from a shared counter, balance uneven chunks.
  const int64_t parts = static_cast<int64_t>(threads_) * 4;
  const int64_t chunk = std::max(grain, (n + parts - 1) / parts);
  const int team = static_cast<int>(std::min<int64_t>(threads_, (n + chunk - 1) / chunk));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
#pragma omp parallel num_threads(team)
  {
    for (;;) {
      int64_t b = next.fetch_add(chunk, std::memory_order_relaxed);
      if (b >= n) break;
      try {
        fn(user, b, std::min(n, b + chunk));
      } catch (...) {  // an exception must not leave the parallel region (that would end the process)
        if (!failed.exchange(true)) error = std::current_exception();
        next.store(n);
      }
    }
  }
  if (error) std::rethrow_exception(error);  // on the caller's thread, where it can be reported
}

}  // namespace weft::internal
