// top_logprobs / token_logprob against a hand computation, tie order, and
// numerical stability at extreme logits.
#include "sampling/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "util/error.h"

namespace pagoda {
namespace {

TEST(Logprobs, MatchHandComputation) {
  const std::vector<float> logits = {1.0f, 3.0f, 0.5f, 2.0f};
  const double lse = std::log(std::exp(1.0) + std::exp(3.0) + std::exp(0.5) + std::exp(2.0));  // 3.4644
  EXPECT_NEAR(log_sum_exp(logits), lse, 1e-7);
  EXPECT_NEAR(token_logprob(logits, 2), 0.5 - lse, 1e-6);
  const auto top = top_logprobs(logits, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].token, 1);
  EXPECT_NEAR(top[0].logprob, 3.0 - lse, 1e-6);
  EXPECT_EQ(top[1].token, 3);
  EXPECT_NEAR(top[1].logprob, 2.0 - lse, 1e-6);
  EXPECT_EQ(top[2].token, 0);
  EXPECT_NEAR(top[2].logprob, 1.0 - lse, 1e-6);
  double mass = 0;
  for (const auto& t : top_logprobs(logits, 4)) mass += std::exp(t.logprob);
  EXPECT_NEAR(mass, 1.0, 1e-6);
}

TEST(Logprobs, TiesLowerIdFirstAndKBounds) {
  const std::vector<float> logits = {0.0f, 2.0f, 2.0f, 1.0f, 2.0f};
  const auto top = top_logprobs(logits, 4);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].token, 1);
  EXPECT_EQ(top[1].token, 2);
  EXPECT_EQ(top[2].token, 4);
  EXPECT_EQ(top[3].token, 3);
  EXPECT_EQ(top_logprobs(logits, 100).size(), 5u);
  EXPECT_TRUE(top_logprobs(logits, 0).empty());
  EXPECT_THROW(top_logprobs(logits, -1), InvalidArgument);
  EXPECT_THROW(token_logprob(logits, 5), InvalidArgument);
  EXPECT_THROW(token_logprob(logits, -1), InvalidArgument);
}

TEST(Logprobs, StableAtExtremes) {
  // exp(1000) overflows float and double; the max subtraction must handle it.
  EXPECT_NEAR(token_logprob(std::vector<float>{1000.0f, 1000.0f}, 0), std::log(0.5), 1e-7);
  EXPECT_NEAR(token_logprob(std::vector<float>{-1000.0f, -1000.0f, -1000.0f}, 2), -std::log(3.0), 1e-7);
  EXPECT_NEAR(token_logprob(std::vector<float>{0.0f, -1000.0f}, 1), -1000.0, 1e-3);
  // 150k equal logits: a float running sum would drift; the double one does not.
  const std::vector<float> flat(150000, 7.0f);
  EXPECT_NEAR(token_logprob(flat, 123), -std::log(150000.0), 1e-6);
}

TEST(Logprobs, MaskedAndBadLogits) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(token_logprob(std::vector<float>{0.0f, -kInf}, 1), -kInf);
  EXPECT_NEAR(token_logprob(std::vector<float>{0.0f, -kInf}, 0), 0.0, 1e-9);
  EXPECT_THROW(log_sum_exp(std::vector<float>{-kInf, -kInf}), Error);
  EXPECT_THROW(log_sum_exp(std::vector<float>{0.0f, std::nanf("")}), Error);
  EXPECT_THROW(log_sum_exp(std::vector<float>{0.0f, kInf}), Error);
  EXPECT_THROW(log_sum_exp(std::vector<float>{}), Error);
}

}  // namespace
}  // namespace pagoda
