// End-of-generation and max_tokens decisions.
#include "sampling/finish.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pagoda {
namespace {

const std::vector<int32_t> kEog = {2, 32000};  // e.g. EOS and an end-of-turn id

TEST(Finish, EndOfGenerationIds) {
  EXPECT_TRUE(is_end_of_generation(2, kEog, false));
  EXPECT_TRUE(is_end_of_generation(32000, kEog, false));
  EXPECT_FALSE(is_end_of_generation(3, kEog, false));
  EXPECT_FALSE(is_end_of_generation(2, kEog, true));
  EXPECT_FALSE(is_end_of_generation(2, {}, false));
}

TEST(Finish, Reasons) {
  SamplingParams p;
  EXPECT_EQ(finish_reason(5, 1000000, p, kEog), FinishReason::none);  // no max_tokens: the context decides
  EXPECT_EQ(finish_reason(2, 1, p, kEog), FinishReason::stop);
  p.max_tokens = 3;
  EXPECT_EQ(finish_reason(5, 2, p, kEog), FinishReason::none);
  EXPECT_EQ(finish_reason(5, 3, p, kEog), FinishReason::length);
  EXPECT_EQ(finish_reason(2, 3, p, kEog), FinishReason::stop);  // EOS on the last allowed token is a stop
  p.ignore_eos = true;
  EXPECT_EQ(finish_reason(2, 1, p, kEog), FinishReason::none);
  EXPECT_EQ(finish_reason(2, 3, p, kEog), FinishReason::length);
  EXPECT_EQ(std::string(to_string(FinishReason::stop)), "stop");
  EXPECT_EQ(std::string(to_string(FinishReason::length)), "length");
  EXPECT_EQ(std::string(to_string(FinishReason::abort)), "abort");
  EXPECT_EQ(std::string(to_string(FinishReason::timeout)), "timeout");
  EXPECT_EQ(std::string(to_string(FinishReason::error)), "error");
  EXPECT_EQ(std::string(to_string(FinishReason::none)), "none");
  EXPECT_LT(FinishReason::length, FinishReason::abort);  // severity order
  EXPECT_LT(FinishReason::abort, FinishReason::timeout);
  EXPECT_LT(FinishReason::timeout, FinishReason::error);
}

}  // namespace
}  // namespace pagoda
