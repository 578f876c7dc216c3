#include "util/thread_pool.h"

#include <algorithm>
#include <utility>

namespace pagoda {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_range(int part) {
  const size_t blocks = (n_ + grain_ - 1) / grain_;
  const size_t begin = std::min(n_, blocks * part / parts_ * grain_);
  const size_t end = std::min(n_, blocks * (part + 1) / parts_ * grain_);
  if (begin >= end) return;
  try {
    (*job_)(begin, end);
  } catch (...) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_range(index);
    {
      std::lock_guard lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t grain, size_t work) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  const size_t blocks = (n + grain - 1) / grain;
  if (workers_.empty() || blocks == 1 || work < kSerialWork) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mu_);
    job_ = &fn;
    n_ = n;
    grain_ = grain;
    parts_ = size();
    pending_ = int(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  run_range(0);
  std::unique_lock lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace pagoda
