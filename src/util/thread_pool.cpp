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

// Spins until done() or `limit` has passed; returns done(). It never yields
// the core: on a busy machine a yield hands it to whatever else is runnable for
// a whole time slice, which a loop of ~200 µs then waits out (measured: 1B
// decode beside two busy processes at 2.8 tok/s with a yield every 16 rounds,
// 19.6 without, of 40 on an idle machine).
template <class Done>
bool spin_until(Done&& done, std::chrono::microseconds limit) {
  if (limit.count() == 0) return done();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpu_relax();
    if ((i & 15) == 15 && std::chrono::steady_clock::now() >= deadline) return done();
  }
}

// claims_ packs the loop's generation, its number of ranges and the next
// unclaimed range into one word.
constexpr uint64_t pack_claims(uint32_t generation, int parts, int next) {
  return uint64_t(generation) << 32 | uint64_t(parts) << 16 | uint64_t(next);
}

int hardware_threads() { return int(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = hardware_threads();
  threads = std::min(threads, 0xffff);  // ranges are counted in 16 bits
  // More threads than cores: a spinning thread would hold a core the thread it
  // waits for needs, so wait asleep.
  spin_ = threads <= hardware_threads() ? kSpin : std::chrono::microseconds(0);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_range(int part, int parts) {
  const size_t blocks = (n_ + grain_ - 1) / grain_;
  const size_t begin = std::min(n_, blocks * part / parts * grain_);
  const size_t end = std::min(n_, blocks * (part + 1) / parts * grain_);
  if (begin >= end) return;
  try {
    (*job_)(begin, end);
  } catch (...) {
    std::lock_guard lock(mu_);
    if (!error_) error_ = std::current_exception();
  }
}

void ThreadPool::run_ranges(uint32_t generation) {
  uint64_t c = claims_.load(std::memory_order_acquire);
  for (;;) {
    const int parts = int(c >> 16 & 0xffff), next = int(c & 0xffff);
    if (uint32_t(c >> 32) != generation || next >= parts) return;
    // Success makes this thread the owner of range `next` and orders the
    // caller's writes of job_, n_ and grain_ before its reads.
    if (!claims_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    run_range(next, parts);
    // Whoever finishes the last range wakes the caller if it went to sleep;
    // the lock orders the notify after the caller's check of finished_.
    if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == parts) {
      std::lock_guard lock(mu_);
      done_.notify_one();
    }
    c = claims_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    // A forward pass runs loops back to back, a few µs of serial work apart:
    // spinning briefly catches the next one without a futex sleep and wake.
    auto woken = [&] {
      return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(woken, spin_)) {
      std::unique_lock lock(mu_);
      wake_.wait(lock, woken);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    while (stall_.load(std::memory_order_acquire) && !stop_.load(std::memory_order_acquire))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // By now the loop may be over (its ranges claimed by the others) or a
    // later one may have begun: run_ranges claims only ranges of loop `seen`.
    run_ranges(uint32_t(seen));
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
  const int parts = size();
  uint32_t generation;
  {
    // Under the lock, so a worker between its check and its wait cannot miss it.
    std::lock_guard lock(mu_);
    job_ = &fn;
    n_ = n;
    grain_ = grain;
    error_ = nullptr;
    finished_.store(0, std::memory_order_relaxed);
    generation = uint32_t(generation_.load(std::memory_order_relaxed) + 1);
    claims_.store(pack_claims(generation, parts, 0), std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();  // no system call when every worker is still spinning
  run_ranges(generation);
  auto finished = [&] { return finished_.load(std::memory_order_acquire) == parts; };
  std::unique_lock lock(mu_, std::defer_lock);
  if (!spin_until(finished, spin_)) {
    lock.lock();
    done_.wait(lock, finished);
  } else {
    lock.lock();  // error_ is read under the lock
  }
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void ThreadPool::on_every_thread(const std::function<void(size_t)>& fn) {
  std::atomic<int> begun{0};
  parallel_for(size_t(size()), [&](size_t begin, size_t end) {
    begun.fetch_add(1, std::memory_order_acq_rel);
    while (begun.load(std::memory_order_acquire) < size()) cpu_relax();
    for (size_t i = begin; i < end; ++i) fn(i);
  });
}

}  // namespace pagoda
