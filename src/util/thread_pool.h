// A persistent pool of worker threads for data-parallel loops. Threads are
// created once; each parallel_for wakes them, splits [0, n) into one
// contiguous range per thread, and the calling thread works on a range too.
// A loop body must compute each index independently of the split, so results
// never depend on the thread count.
//
// A forward pass runs ~160 loops a step, microseconds apart; sleeping on a
// condition variable between them costs a futex wake and a reschedule per
// loop (2-40 µs on a VM). So workers, and the caller waiting for them, first
// spin for up to kSpin (with a pause instruction) before they sleep.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <functional>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace pagoda {

class ThreadPool {
 public:
  // threads <= 0 means one per hardware thread.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  // Loops so far that woke the workers (not those run on the calling thread
  // alone): what the per-loop wake-up cost is paid on. For benchmarks.
  uint64_t wakeups() const { return generation_.load(std::memory_order_relaxed); }

  // Calls fn(begin, end) on disjoint ranges covering [0, n), in parallel.
  // Ranges are aligned to `grain` (except the last). `work` estimates the
  // whole loop's cost in multiply-adds: below kSerialWork the loop runs on
  // the calling thread, since waking the workers costs more than it saves
  // (tiny models run many such loops a step). Rethrows the first exception a
  // range threw, after every range has finished.
  static constexpr size_t kSerialWork = size_t(1) << 16;
  // How long an idle worker spins for the next loop before it sleeps.
  static constexpr std::chrono::microseconds kSpin{100};
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t grain = 1,
                    size_t work = SIZE_MAX);

 private:
  void worker_loop(int index);
  void run_range(int part);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t n_ = 0, grain_ = 1;
  int parts_ = 0;
  // Written under mu_ and read by spinning threads without it.
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
};

}  // namespace pagoda
