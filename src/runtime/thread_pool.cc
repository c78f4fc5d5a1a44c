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
  const int64_t chunks = (n + chunk - 1) / chunk;
  const int team = static_cast<int>(std::min<int64_t>(threads_, chunks));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
#pragma omp parallel num_threads(team)
  {
    auto run = [&](int64_t b) {
      try {
        fn(user, b, std::min(n, b + chunk));
      } catch (...) {  // an exception must not leave the parallel region (that would end the process)
        if (!failed.exchange(true)) error = std::current_exception();
        next.store(n);
      }
    };
    // One chunk per thread: chunk k goes to thread k, every call alike, so that work cut the same
    // way call after call (a recurrent layer's weights, step after step) stays with the core whose
    // cache holds its data (unless OpenMP gave fewer threads). Otherwise chunks go to whichever
    // thread asks first.
    if (chunks == team && omp_get_num_threads() == team) {
      run(static_cast<int64_t>(omp_get_thread_num()) * chunk);
    } else {
      for (int64_t b; (b = next.fetch_add(chunk, std::memory_order_relaxed)) < n;) run(b);
    }
  }
  if (error) std::rethrow_exception(error);  // on the caller's thread, where it can be reported
}

}  // namespace weft::internal
