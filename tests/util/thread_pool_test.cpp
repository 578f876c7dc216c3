#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/half.h"

namespace pagoda {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (size_t n : {1u, 2u, 7u, 64u, 1000u}) {
      for (size_t grain : {1u, 4u, 16u}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(
            n,
            [&](size_t b, size_t e) {
              EXPECT_LT(b, e);
              for (size_t i = b; i < e; ++i) hits[i]++;
            },
            grain);
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
      }
    }
  }
}

TEST(ThreadPool, SmallWorkRunsOnTheCallingThread) {
  ThreadPool pool(4);
  std::atomic<int> elsewhere{0};
  const auto me = std::this_thread::get_id();
  pool.parallel_for(
      1000, [&](size_t, size_t) { elsewhere += std::this_thread::get_id() != me; }, 1, 100);
  EXPECT_EQ(elsewhere.load(), 0);
  // Enough work wakes the workers; they claim ranges while the caller runs
  // its first (it may take them all when they are slow to wake: retry).
  for (int round = 0; round < 100 && elsewhere.load() == 0; ++round) {
    pool.parallel_for(
        1000,
        [&](size_t, size_t) {
          elsewhere += std::this_thread::get_id() != me;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        },
        1, ThreadPool::kSerialWork * 4);
  }
  EXPECT_GT(elsewhere.load(), 0);
}

TEST(ThreadPool, RethrowsAfterAllRangesFinish) {
  ThreadPool pool(4);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallel_for(4,
                                 [&](size_t b, size_t) {
                                   ran++;
                                   if (b == 0) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 4);
  // The pool is still usable.
  std::atomic<int> sum{0};
  pool.parallel_for(100, [&](size_t b, size_t e) { sum += int(e - b); });
  EXPECT_EQ(sum.load(), 100);
}

// A worker that is not running when a loop starts (descheduled on a busy
// machine, stalled here) must not hold the loop up: the caller claims and runs
// its range. Without that, the first loop would wait for the stall to end and
// some ranges would run on workers.
TEST(ThreadPool, CallerRunsTheRangesOfStalledWorkers) {
  ThreadPool pool(4);
  const auto me = std::this_thread::get_id();
  pool.stall_workers(true);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::atomic<int>> hits(100);
    std::atomic<int> elsewhere{0};
    pool.parallel_for(hits.size(), [&](size_t b, size_t e) {
      elsewhere += std::this_thread::get_id() != me;
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    ASSERT_EQ(elsewhere.load(), 0) << "round " << round;
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  // Released, the workers wake with stale loops behind them: they must claim
  // nothing of those, and share the next loops again.
  pool.stall_workers(false);
  std::atomic<int> elsewhere{0};
  for (int round = 0; round < 200 && elsewhere.load() == 0; ++round) {
    std::vector<std::atomic<int>> hits(64);
    pool.parallel_for(hits.size(), [&](size_t b, size_t e) {
      elsewhere += std::this_thread::get_id() != me;
      for (size_t i = b; i < e; ++i) hits[i]++;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "round " << round;
  }
  EXPECT_GT(elsewhere.load(), 0);
}

// Measurements need every thread busy at once: each call on its own thread,
// even when the body is empty and the caller could have run them all.
TEST(ThreadPool, OnEveryThreadRunsEachCallOnItsOwnThread) {
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 20; ++round) {
      std::vector<std::thread::id> ids(size_t(pool.size()));
      pool.on_every_thread([&](size_t i) { ids[i] = std::this_thread::get_id(); });
      std::sort(ids.begin(), ids.end());
      ASSERT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << threads << " threads, round " << round;
      ASSERT_NE(ids.front(), std::thread::id()) << "a call did not run";
    }
  }
}

// Workers spin for kSpin after a loop, then sleep: loops back to back (caught
// while spinning) and loops after a pause longer than kSpin (workers asleep)
// must both run every range once, with exceptions from either state.
TEST(ThreadPool, WorksWhetherWorkersSpinOrSleep) {
  // No more threads than cores: a pool with more never spins.
  ThreadPool pool(int(std::clamp(std::thread::hardware_concurrency(), 2u, 4u)));
  for (int round = 0; round < 200; ++round) {
    if (round % 20 == 0) std::this_thread::sleep_for(ThreadPool::kSpin * 3);
    std::vector<std::atomic<int>> hits(64);
    pool.parallel_for(64, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "round " << round;
    if (round % 50 == 1) {
      std::this_thread::sleep_for(ThreadPool::kSpin * 3);
      EXPECT_THROW(pool.parallel_for(4,
                                     [](size_t b, size_t e) {
                                       if (b <= 3 && 3 < e) throw std::runtime_error("boom");  // the last range
                                     }),
                   std::runtime_error);
    }
  }
  EXPECT_GE(pool.wakeups(), 200u);
}

TEST(Half, F16RoundTripsAndRoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t x = uint16_t(h);
    if ((x & 0x7c00) == 0x7c00 && (x & 0x3ff)) continue;  // nan payloads
    ASSERT_EQ(f32_to_f16(f16_to_f32(x)), x) << h;
  }
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x0001), 5.960464477539063e-08f);
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // tie rounds to even
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);                // overflow to inf
}

TEST(Half, Bf16) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t x = uint16_t(h);
    if ((x & 0x7f80) == 0x7f80 && (x & 0x7f)) continue;
    ASSERT_EQ(f32_to_bf16(bf16_to_f32(x)), x);
  }
}

}  // namespace
}  // namespace pagoda
