#include "util/shared_steps.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace pagoda {
namespace {

TEST(SharedSteps, OwnerWalksFrontOthersTakeFromTheBackOfTheLongestPart) {
  SharedSteps s(2, 4);
  EXPECT_EQ(s.take_front(0), 0u);
  EXPECT_EQ(s.take_front(0), 1u);
  // Part 1 has 4 left, part 0 has 2: the back of part 1.
  EXPECT_EQ(s.take_back(), (std::pair<size_t, uint32_t>{1, 3}));
  EXPECT_EQ(s.take_back(), (std::pair<size_t, uint32_t>{1, 2}));
  EXPECT_EQ(s.take_front(1), 0u);
  EXPECT_EQ(s.take_back(), (std::pair<size_t, uint32_t>{0, 3}));  // 2 left against 1
  EXPECT_EQ(s.take_front(0), 2u);
  EXPECT_EQ(s.take_front(0), std::nullopt);  // step 3 was taken from the back
  EXPECT_EQ(s.take_back(), (std::pair<size_t, uint32_t>{1, 1}));
  EXPECT_EQ(s.take_front(1), std::nullopt);
  EXPECT_EQ(s.take_back(), std::nullopt);
}

TEST(SharedSteps, NoStepsAtAll) {
  SharedSteps s(3, 0);
  EXPECT_EQ(s.take_front(2), std::nullopt);
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
        if (p % 2 == 0)
          while (const auto i = s.take_front(p)) hits[p * kSteps + *i]++;
        while (const auto t = s.take_back()) hits[t->first * kSteps + t->second]++;
        while (const auto i = s.take_front(p)) hits[p * kSteps + *i]++;
      });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  }
}

}  // namespace
}  // namespace pagoda
