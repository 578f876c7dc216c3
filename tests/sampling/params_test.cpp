// SamplingParams::validate: every field's range, both edges, NaN, and that the
// message names the field and the range.
#include "sampling/params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "util/error.h"

namespace pagoda {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The message validate() throws for params changed by `edit`, or "" if none.
std::string error_of(const std::function<void(SamplingParams&)>& edit) {
  SamplingParams p;
  edit(p);
  try {
    p.validate();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

void expect_ok(const std::function<void(SamplingParams&)>& edit) { EXPECT_EQ(error_of(edit), ""); }

TEST(SamplingParams, DefaultsAreValidAndOff) {
  SamplingParams p;
  EXPECT_NO_THROW(p.validate());
  EXPECT_FALSE(p.greedy());
  EXPECT_FALSE(p.has_penalties());
  EXPECT_FALSE(p.seed.has_value());
  EXPECT_FALSE(p.max_tokens.has_value());
  EXPECT_FALSE(p.logprobs.has_value());
}

TEST(SamplingParams, Temperature) {
  EXPECT_EQ(error_of([](auto& p) { p.temperature = -1; }), "temperature must be in [0, 2], got -1");
  EXPECT_EQ(error_of([](auto& p) { p.temperature = 2.5f; }), "temperature must be in [0, 2], got 2.5");
  EXPECT_EQ(error_of([](auto& p) { p.temperature = kNaN; }), "temperature must be in [0, 2], got nan");
  expect_ok([](auto& p) { p.temperature = 0; });
  expect_ok([](auto& p) { p.temperature = 2; });
  SamplingParams p;
  p.temperature = 0;
  EXPECT_TRUE(p.greedy());
}

TEST(SamplingParams, TopK) {
  EXPECT_EQ(error_of([](auto& p) { p.top_k = -2; }), "top_k must be -1 or 0 (disabled) or >= 1, got -2");
  expect_ok([](auto& p) { p.top_k = -1; });
  expect_ok([](auto& p) { p.top_k = 0; });
  expect_ok([](auto& p) { p.top_k = 1; });
  expect_ok([](auto& p) { p.top_k = 1 << 30; });
}

TEST(SamplingParams, TopP) {
  EXPECT_EQ(error_of([](auto& p) { p.top_p = 0; }), "top_p must be in (0, 1], got 0");
  EXPECT_EQ(error_of([](auto& p) { p.top_p = 1.5f; }), "top_p must be in (0, 1], got 1.5");
  EXPECT_EQ(error_of([](auto& p) { p.top_p = kNaN; }), "top_p must be in (0, 1], got nan");
  expect_ok([](auto& p) { p.top_p = 1e-6f; });
  expect_ok([](auto& p) { p.top_p = 1; });
}

TEST(SamplingParams, MinP) {
  EXPECT_EQ(error_of([](auto& p) { p.min_p = -0.1f; }), "min_p must be in [0, 1], got -0.1");
  EXPECT_EQ(error_of([](auto& p) { p.min_p = 1.01f; }), "min_p must be in [0, 1], got 1.01");
  EXPECT_EQ(error_of([](auto& p) { p.min_p = kNaN; }), "min_p must be in [0, 1], got nan");
  expect_ok([](auto& p) { p.min_p = 0; });
  expect_ok([](auto& p) { p.min_p = 1; });
}

TEST(SamplingParams, RepetitionPenalty) {
  const char* msg = "repetition_penalty must be a finite number > 0, got ";
  EXPECT_EQ(error_of([](auto& p) { p.repetition_penalty = 0; }), std::string(msg) + "0");
  EXPECT_EQ(error_of([](auto& p) { p.repetition_penalty = -1; }), std::string(msg) + "-1");
  EXPECT_EQ(error_of([](auto& p) { p.repetition_penalty = kInf; }), std::string(msg) + "inf");
  EXPECT_EQ(error_of([](auto& p) { p.repetition_penalty = kNaN; }), std::string(msg) + "nan");
  expect_ok([](auto& p) { p.repetition_penalty = 0.5f; });
  expect_ok([](auto& p) { p.repetition_penalty = 10; });
  SamplingParams p;
  p.repetition_penalty = 1.1f;
  EXPECT_TRUE(p.has_penalties());
}

TEST(SamplingParams, FrequencyAndPresencePenalties) {
  EXPECT_EQ(error_of([](auto& p) { p.frequency_penalty = -2.5f; }), "frequency_penalty must be in [-2, 2], got -2.5");
  EXPECT_EQ(error_of([](auto& p) { p.frequency_penalty = kNaN; }), "frequency_penalty must be in [-2, 2], got nan");
  EXPECT_EQ(error_of([](auto& p) { p.presence_penalty = 3; }), "presence_penalty must be in [-2, 2], got 3");
  EXPECT_EQ(error_of([](auto& p) { p.presence_penalty = -kInf; }), "presence_penalty must be in [-2, 2], got -inf");
  expect_ok([](auto& p) {
    p.frequency_penalty = -2;
    p.presence_penalty = 2;
  });
  expect_ok([](auto& p) {
    p.frequency_penalty = 2;
    p.presence_penalty = -2;
  });
}

TEST(SamplingParams, MaxTokens) {
  EXPECT_EQ(error_of([](auto& p) { p.max_tokens = 0; }), "max_tokens must be >= 1, got 0");
  EXPECT_EQ(error_of([](auto& p) { p.max_tokens = -5; }), "max_tokens must be >= 1, got -5");
  expect_ok([](auto& p) { p.max_tokens = 1; });
}

TEST(SamplingParams, Stop) {
  EXPECT_EQ(error_of([](auto& p) { p.stop = {"a", "", "b"}; }), "stop strings must not be empty (stop[1] is)");
  EXPECT_EQ(error_of([](auto& p) { p.stop.assign(17, "x"); }), "stop must hold at most 16 strings, got 17");
  expect_ok([](auto& p) { p.stop.assign(16, "x"); });
}

TEST(SamplingParams, Logprobs) {
  EXPECT_EQ(error_of([](auto& p) { p.logprobs = -1; }), "logprobs must be in [0, 20], got -1");
  EXPECT_EQ(error_of([](auto& p) { p.logprobs = 21; }), "logprobs must be in [0, 20], got 21");
  expect_ok([](auto& p) { p.logprobs = 0; });
  expect_ok([](auto& p) { p.logprobs = 20; });
}

TEST(SamplingParams, SeedAndIgnoreEosTakeAnyValue) {
  expect_ok([](auto& p) {
    p.seed = 0;
    p.ignore_eos = true;
  });
  expect_ok([](auto& p) { p.seed = ~uint64_t(0); });
}

}  // namespace
}  // namespace pagoda
