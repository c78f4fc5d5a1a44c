// Fork-join pool behind WeftHostApi::parallel_for. One job at a time; a caller that finds the
// pool busy (another run is using it) runs its loop inline, so nothing blocks or nests.
#ifndef WEFT_SRC_RUNTIME_THREAD_POOL_H_
#define WEFT_SRC_RUNTIME_THREAD_POOL_H_

#include <atomic>
#include <exception>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "weft/c/weft_plugin.h"

namespace weft::internal {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(user, b, e) over disjoint chunks covering [0, n); returns when all are done.
  void ParallelFor(int64_t n, int64_t grain, WeftParallelFn fn, void* user);

 private:
  struct Job {
    WeftParallelFn fn;
    void* user;
    int64_t n, chunk;
    std::atomic<int64_t> next{0};
    std::atomic<int> active{0};
    std::mutex error_mu;
    std::exception_ptr error;  // the first exception a chunk threw; the rest of the job is skipped
  };
  void Work(Job* job);
  void Loop();
  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the caller for the duration of a job
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace weft::internal

#endif  // WEFT_SRC_RUNTIME_THREAD_POOL_H_
