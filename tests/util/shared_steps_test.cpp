#include "util/shared_steps.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace pagoda {
namespace {

using Steps = std::pair<uint32_t, uint32_t>;
using Back = std::pair<size_t, uint32_t>;

TEST(SharedSteps, OwnerTakesShrinkingRunsOthersTakeFromTheBackOfTheLongestPart) {
  SharedSteps s(2, 16);
  EXPECT_EQ(s.take_front(0), (Steps{0, 4}));  // a quarter of 16
  EXPECT_EQ(s.take_front(0), (Steps{4, 7}));  // of 12
  // Part 1 has 16 left, part 0 has 9: the back of part 1.
  EXPECT_EQ(s.take_back(), (Back{1, 15}));
  EXPECT_EQ(s.take_back(), (Back{1, 14}));
  EXPECT_EQ(s.take_front(1), (Steps{0, 3}));
  EXPECT_EQ(s.take_back(), (Back{1, 13}));  // 11 left against 9
  EXPECT_EQ(s.take_back(), (Back{1, 12}));
  EXPECT_EQ(s.take_back(), (Back{0, 15}));  // 9 against 9: the first
  // Part 0's front walks on in shrinking runs up to what the back took.
  EXPECT_EQ(s.take_front(0), (Steps{7, 9}));
  EXPECT_EQ(s.take_front(0), (Steps{9, 10}));
  for (uint32_t i = 10; i < 15; ++i) EXPECT_EQ(s.take_front(0), (Steps{i, i + 1}));
  EXPECT_EQ(s.take_front(0), std::nullopt);
  for (uint32_t i = 12; i-- > 3;) EXPECT_EQ(s.take_back(), (Back{1, i}));
  EXPECT_EQ(s.take_front(1), std::nullopt);
  EXPECT_EQ(s.take_back(), std::nullopt);
}

TEST(SharedSteps, NoStepsAtAll) {
  SharedSteps s(3, 0);
  EXPECT_EQ(s.take_front(2), std::nullopt);
}

TEST(SharedSteps, OneStepIsARunOfOne) {
  SharedSteps s(1, 1);
  EXPECT_EQ(s.take_front(0), (Steps{0, 1}));
  EXPECT_EQ(s.take_front(0), std::nullopt);
  EXPECT_EQ(s.take_back(), std::nullopt);
}

// Owners and helpers racing: every step of every part runs exactly once.
TEST(SharedSteps, EveryStepOnceUnderContention) {
  constexpr size_t kParts = 4;
  constexpr uint32_t kSteps = 20000;
  for (int round = 0; round < 5; ++round) {
    SharedSteps s(kParts, kSteps);
    std::vector<std::atomic<int>> hits(kParts * kSteps);
    std::vector<std::thread> threads;
    for (size_t p = 0; p < kParts; ++p)
      threads.emplace_back([&, p] {
        // Each thread walks its own part, but only every other thread
        // finishes it before helping: the rest help from the start.
        auto walk_own = [&] {
          while (const auto r = s.take_front(p))
            for (uint32_t i = r->first; i < r->second; ++i) hits[p * kSteps + i]++;
        };
        if (p % 2 == 0) walk_own();
        while (const auto t = s.take_back()) hits[t->first * kSteps + t->second]++;
        walk_own();
      });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  }
}

}  // namespace
}  // namespace pagoda
