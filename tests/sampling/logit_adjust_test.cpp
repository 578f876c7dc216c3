// The request's own logit changes: logit_bias, the min_tokens mask of end
// and stop ids, their validation, stop_token_ids in finish_reason, and the
// stop matcher's include_stop and disarmed pushes.
#include "sampling/logit_adjust.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sampling/finish.h"
#include "sampling/stop_matcher.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const std::vector<int32_t> kEog = {2};

TEST(LogitAdjust, NothingToDoByDefault) {
  SamplingParams p;
  EXPECT_FALSE(adjusts_logits(p, 0));
  std::vector<float> l = {1, 2, 3, 4};
  adjust_logits(l, p, kEog, 0);
  EXPECT_EQ(l, (std::vector<float>{1, 2, 3, 4}));
}

TEST(LogitAdjust, BiasAddsToTheListedTokens) {
  SamplingParams p;
  p.logit_bias = {{0, 100.0f}, {3, -2.5f}};
  EXPECT_TRUE(adjusts_logits(p, 7));
  std::vector<float> l = {1, 2, 3, 4};
  adjust_logits(l, p, kEog, 7);
  EXPECT_EQ(l, (std::vector<float>{101, 2, 3, 1.5f}));
}

TEST(LogitAdjust, MinTokensMasksEndAndStopIdsUntilReached) {
  SamplingParams p;
  p.min_tokens = 2;
  p.stop_token_ids = {3};
  for (int64_t generated : {0, 1}) {
    EXPECT_TRUE(adjusts_logits(p, generated));
    std::vector<float> l = {1, 2, 3, 4};
    adjust_logits(l, p, kEog, generated);
    EXPECT_EQ(l, (std::vector<float>{1, 2, -kInf, -kInf})) << generated;
  }
  EXPECT_FALSE(adjusts_logits(p, 2));
  // With ignore_eos the end-of-generation id ends nothing: it stays sampleable.
  p.ignore_eos = true;
  std::vector<float> l = {1, 2, 3, 4};
  adjust_logits(l, p, kEog, 0);
  EXPECT_EQ(l, (std::vector<float>{1, 2, 3, -kInf}));
}

std::string error_of(const SamplingParams& p, int64_t vocab = 10) {
  try {
    p.validate();
    p.validate_vocab(vocab);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(LogitAdjust, Validation) {
  SamplingParams p;
  p.logit_bias = {{9, 100.0f}, {0, -100.0f}};
  p.stop_token_ids = {0, 9};
  EXPECT_EQ(error_of(p), "");
  p.logit_bias = {{10, 1.0f}};
  EXPECT_NE(error_of(p).find("logit_bias"), std::string::npos);
  p.logit_bias = {{1, 100.5f}};
  EXPECT_EQ(error_of(p).rfind("logit_bias", 0), 0u);
  p.logit_bias = {{1, std::nanf("")}};
  EXPECT_EQ(error_of(p).rfind("logit_bias", 0), 0u);
  p.logit_bias.clear();
  p.stop_token_ids = {-1};
  EXPECT_NE(error_of(p).find("stop_token_ids"), std::string::npos);
  p.stop_token_ids.clear();
  p.min_tokens = -1;
  EXPECT_EQ(error_of(p).rfind("min_tokens", 0), 0u);
  p.min_tokens = 5;
  p.max_tokens = 4;
  EXPECT_EQ(error_of(p).rfind("min_tokens", 0), 0u);
  p.max_tokens = 5;
  EXPECT_EQ(error_of(p), "");
}

TEST(LogitAdjust, StopTokenIdsFinishEvenWithIgnoreEos) {
  SamplingParams p;
  p.stop_token_ids = {7};
  p.ignore_eos = true;
  EXPECT_EQ(finish_reason(7, 1, p, kEog), FinishReason::stop);
  EXPECT_EQ(finish_reason(2, 1, p, kEog), FinishReason::none);
  EXPECT_EQ(finish_reason(6, 1, p, kEog), FinishReason::none);
}

TEST(LogitAdjust, StopMatcherCanKeepTheStopString) {
  StopMatcher keep({"END"}, /*include_stop=*/true);
  std::string text;
  for (const char* d : {"abc E", "N", "Dxyz"}) {
    const auto step = keep.push(d);
    text += step.text;
    if (step.stopped) break;
  }
  EXPECT_EQ(text, "abc END");
  StopMatcher drop({"END"});
  EXPECT_EQ(drop.push("abc ENDxyz").text, "abc ");
}

TEST(LogitAdjust, StopMatcherDisarmedPushesPassStopsThrough) {
  StopMatcher m({"ab"});
  std::string text;
  auto step = m.push("xab", /*can_stop=*/false);
  EXPECT_FALSE(step.stopped);
  text += step.text;
  step = m.push("ya", /*can_stop=*/false);  // "a" may start the next "ab": held
  text += step.text;
  EXPECT_EQ(text, "xaby");
  step = m.push("b");  // armed: the held "a" and this "b" make the stop
  EXPECT_TRUE(step.stopped);
  EXPECT_EQ(text + step.text, "xaby");
}

}  // namespace
}  // namespace pagoda
