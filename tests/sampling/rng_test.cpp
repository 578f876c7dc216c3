// Rng: known answers for xoshiro256** and splitmix64, the shape of uniform(),
// and that copies and saved states continue the same stream.
#include "sampling/rng.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "util/error.h"

namespace pagoda {
namespace {

TEST(Rng, Xoshiro256StarStarKnownAnswer) {
  // From state {1, 2, 3, 4}, worked by hand from the algorithm's definition:
  // out = rotl(s1 * 5, 7) * 9 -> 1280 * 9; then s1 becomes 0; then 262149.
  Rng rng = Rng::from_state({1, 2, 3, 4});
  EXPECT_EQ(rng.next_u64(), 11520u);
  EXPECT_EQ(rng.next_u64(), 0u);
  EXPECT_EQ(rng.next_u64(), 1509978240u);  // rotl(262149 * 5, 7) * 9
}

TEST(Rng, SeedingIsSplitmix64) {
  // splitmix64's first outputs from 0, a widely published known answer.
  uint64_t s = 0;
  EXPECT_EQ(splitmix64(s), 0xe220a8397b1dcdafull);
  EXPECT_EQ(splitmix64(s), 0x6e789e6aa1b965f4ull);
  // The seeded state is four consecutive splitmix64 outputs.
  uint64_t seed = 42;
  Rng::State expected;
  for (auto& w : expected) w = splitmix64(seed);
  EXPECT_EQ(Rng(42).state(), expected);
}

TEST(Rng, RejectsAllZeroState) { EXPECT_THROW(Rng::from_state({0, 0, 0, 0}), InvalidArgument); }

TEST(Rng, SameSeedSameStreamDifferentSeedDifferentStream) {
  Rng a(7), b(7), c(8);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs |= x != c.next_u64();
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, CopyAndSavedStateContinueTheStream) {
  Rng rng(123);
  for (int i = 0; i < 10; ++i) rng.next_u64();
  Rng copy = rng;  // e.g. a request preempted here
  Rng restored = Rng::from_state(rng.state());
  for (int i = 0; i < 100; ++i) {
    const double u = rng.uniform();
    EXPECT_EQ(u, copy.uniform());
    EXPECT_EQ(u, restored.uniform());
  }
  EXPECT_EQ(rng, copy);
}

TEST(Rng, UniformIsInUnitIntervalAndUniform) {
  Rng rng(1);
  constexpr int kN = 100000, kBins = 10;
  std::vector<int> bins(kBins);
  double sum = 0;
  for (int i = 0; i < kN; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    // A 53-bit value: u * 2^53 is an integer.
    ASSERT_EQ(u * 0x1.0p53, double(uint64_t(u * 0x1.0p53)));
    sum += u;
    bins[int(u * kBins)]++;
  }
  EXPECT_NEAR(sum / kN, 0.5, 0.005);
  for (int b : bins) EXPECT_NEAR(double(b) / kN, 0.1, 0.005);
}

TEST(Rng, RandomSeedsDiffer) {
  std::set<uint64_t> seeds;
  for (int i = 0; i < 100; ++i) seeds.insert(random_seed());
  EXPECT_EQ(seeds.size(), 100u);
}

}  // namespace
}  // namespace pagoda
