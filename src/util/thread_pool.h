// A persistent pool of worker threads for data-parallel loops. Threads are
// created once; each parallel_for wakes them and splits [0, n) into one
// contiguous range per thread. Every thread, the caller included, claims
// ranges until none is left, so a range is not bound to a thread: when the
// machine is oversubscribed and a worker is descheduled, the caller runs that
// worker's range instead of waiting a time slice for it (a decode step runs
// ~100 loops, each of which would wait). A loop body must compute each index independently of
// the split, so results never depend on the thread count or on who ran what.
//
// A forward pass runs ~100 loops a step, microseconds apart; sleeping on a
// condition variable between them costs a futex wake and a reschedule per
// loop (2-40 µs on a VM). So workers, and the caller waiting for them, first
// spin for up to kSpin (with a pause instruction) before they sleep, unless
// the pool has more threads than the machine has cores.
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
  void parallel_for(size_t n, const std::function<void(size_t, size_t)>& fn, size_t grain = 1, size_t work = SIZE_MAX);

  // Calls fn(i) for every i in [0, size()), each on its own thread and all at
  // once, for measurements that need every thread busy together (read
  // bandwidth, peak FMA): each call first waits until every call has begun,
  // so no thread can run two (parallel_for would let the caller run a range
  // a worker has not claimed yet).
  void on_every_thread(const std::function<void(size_t)>& fn);

  // Test hook: while set, a woken worker waits before it claims a range, as a
  // descheduled one would; parallel_for must still return, its ranges run by
  // the caller.
  void stall_workers(bool on) { stall_.store(on, std::memory_order_release); }

 private:
  void worker_loop();
  // Claims and runs ranges of loop `generation` until none is left.
  void run_ranges(uint32_t generation);
  void run_range(int part, int parts);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  // The loop being run: written by the caller before it publishes claims_,
  // read only by a thread that has claimed a range of that loop.
  const std::function<void(size_t, size_t)>* job_ = nullptr;
  size_t n_ = 0, grain_ = 1;
  // The current loop's claim counter: generation (high 32 bits), number of
  // ranges (16 bits), next unclaimed range (low 16 bits). One word, so a
  // late worker can only claim a range of the loop it was woken for.
  std::atomic<uint64_t> claims_{0};
  std::atomic<int> finished_{0};  // ranges of the current loop run to the end
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false}, stall_{false};
  std::chrono::microseconds spin_{kSpin};
  std::exception_ptr error_;
};

}  // namespace pagoda
