#include "runtime/thread_pool.h"

#include <algorithm>

namespace weft::internal {

ThreadPool::ThreadPool(int threads) {
  for (int k = 1; k < threads; ++k) workers_.emplace_back([this] { Loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::Work(Job* job) {
  for (;;) {
    int64_t b = job->next.fetch_add(job->chunk);
    if (b >= job->n) break;
    try {
      job->fn(job->user, b, std::min(job->n, b + job->chunk));
    } catch (...) {  // an exception must not leave a pool thread (that would end the process)
      std::lock_guard<std::mutex> l(job->error_mu);
      if (!job->error) job->error = std::current_exception();
      job->next.store(job->n);
    }
  }
}

void ThreadPool::Loop() {
  uint64_t seen = 0;
  for (;;) {
    Job* job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || (job_ && generation_ != seen); });
      if (stop_) return;
      seen = generation_;
      job = job_;
      job->active.fetch_add(1);
    }
    Work(job);
    {
      std::lock_guard<std::mutex> l(mu_);
      job->active.fetch_sub(1);
    }
    done_cv_.notify_all();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, WeftParallelFn fn, void* user) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (workers_.empty() || n <= grain || !busy.owns_lock()) {
    fn(user, 0, n);
    return;
  }
  Job job;
  job.fn = fn;
  job.user = user;
  job.n = n;
  int64_t parts = static_cast<int64_t>(workers_.size() + 1) * 4;
  job.chunk = std::max(grain, (n + parts - 1) / parts);
  {
    std::lock_guard<std::mutex> l(mu_);
    job_ = &job;
    ++generation_;
  }
  cv_.notify_all();
  Work(&job);
  std::unique_lock<std::mutex> l(mu_);
  job_ = nullptr;  // late workers no longer pick it up
  done_cv_.wait(l, [&] { return job.active.load() == 0; });
  if (job.error) std::rethrow_exception(job.error);  // on the caller's thread, where it can be reported
}

}  // namespace weft::internal
