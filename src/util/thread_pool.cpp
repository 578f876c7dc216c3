#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace pagoda {
namespace {

// Tells the core this is a spin-wait (saves power, yields to a sibling hyperthread).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() or `limit` has passed; returns done(). Every few rounds
// it also yields the core: when the machine is oversubscribed the thread it
// waits for may be queued on this very core, and a pure spin would then cost
// the whole limit on every hand-off (measured: 0.6 µs a loop became 200 µs).
template <class Done>
bool spin_until(Done&& done, std::chrono::microseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 15) == 15) {
      if (std::chrono::steady_clock::now() >= deadline) return done();
      std::this_thread::yield();
    }
  }
}

}  // namespace

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
    // A forward pass runs loops back to back, a few µs of serial work apart:
    // spinning briefly catches the next one without a futex sleep and wake.
    auto woken = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(woken, kSpin)) {
      std::unique_lock lock(mu_);
      wake_.wait(lock, woken);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    run_range(index);
    // The last worker to finish wakes the caller if it went to sleep; the lock
    // orders the notify after the caller's check of pending_.
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mu_);
      done_.notify_one();
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
    // Under the lock, so a worker between its check and its wait cannot miss it.
    std::lock_guard lock(mu_);
    job_ = &fn;
    n_ = n;
    grain_ = grain;
    parts_ = size();
    pending_.store(int(workers_.size()), std::memory_order_relaxed);
    error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();  // no system call when every worker is still spinning
  run_range(0);
  auto finished = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  std::unique_lock lock(mu_, std::defer_lock);
  if (!spin_until(finished, kSpin)) {
    lock.lock();
    done_.wait(lock, finished);
  } else {
    lock.lock();  // error_ is read under the lock
  }
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace pagoda
