// SamplingParams::validate: every range in one place, with messages that name
// the API field, so the server can pass them through as a 400.
#include "sampling/params.h"

#include <cmath>

#include "util/error.h"

namespace pagoda {

namespace {

// Written as !(lo <= x && x <= hi) so NaN fails too.
void check_range(const char* name, float x, float lo, float hi) {
  if (!(lo <= x && x <= hi)) fail<InvalidArgument>("{} must be in [{}, {}], got {}", name, lo, hi, x);
}

}  // namespace

void SamplingParams::validate() const {
  check_range("temperature", temperature, 0.0f, kMaxTemperature);
  if (top_k < -1) fail<InvalidArgument>("top_k must be -1 or 0 (disabled) or >= 1, got {}", top_k);
  if (!(0.0f < top_p && top_p <= 1.0f)) fail<InvalidArgument>("top_p must be in (0, 1], got {}", top_p);
  check_range("min_p", min_p, 0.0f, 1.0f);
  if (!(repetition_penalty > 0.0f && std::isfinite(repetition_penalty)))
    fail<InvalidArgument>("repetition_penalty must be a finite number > 0, got {}", repetition_penalty);
  check_range("frequency_penalty", frequency_penalty, -kMaxPenalty, kMaxPenalty);
  check_range("presence_penalty", presence_penalty, -kMaxPenalty, kMaxPenalty);
  if (max_tokens && *max_tokens < 1) fail<InvalidArgument>("max_tokens must be >= 1, got {}", *max_tokens);
  if (stop.size() > kMaxStop) fail<InvalidArgument>("stop must hold at most {} strings, got {}", kMaxStop, stop.size());
  for (size_t i = 0; i < stop.size(); ++i)
    if (stop[i].empty()) fail<InvalidArgument>("stop strings must not be empty (stop[{}] is)", i);
  if (logprobs && (*logprobs < 0 || *logprobs > kMaxLogprobs))
    fail<InvalidArgument>("logprobs must be in [0, {}], got {}", kMaxLogprobs, *logprobs);
  if (logit_bias.size() > kMaxLogitBiasEntries)
    fail<InvalidArgument>("logit_bias must hold at most {} entries, got {}", kMaxLogitBiasEntries, logit_bias.size());
  for (const auto& [id, bias] : logit_bias)
    if (!(-kMaxLogitBias <= bias && bias <= kMaxLogitBias))
      fail<InvalidArgument>("logit_bias values must be in [{}, {}], got {} for token {}", -kMaxLogitBias, kMaxLogitBias,
                            bias, id);
  if (stop_token_ids.size() > kMaxStopTokenIds)
    fail<InvalidArgument>("stop_token_ids must hold at most {} ids, got {}", kMaxStopTokenIds, stop_token_ids.size());
  if (min_tokens < 0) fail<InvalidArgument>("min_tokens must be >= 0, got {}", min_tokens);
  if (max_tokens && min_tokens > *max_tokens)
    fail<InvalidArgument>("min_tokens must be less than or equal to max_tokens={}, got {}", *max_tokens, min_tokens);
}

void SamplingParams::validate_vocab(int64_t vocab_size) const {
  for (const auto& [id, bias] : logit_bias)
    if (id < 0 || id >= vocab_size)
      fail<InvalidArgument>("logit_bias: token id {} is outside the vocabulary (0..{})", id, vocab_size - 1);
  for (int32_t id : stop_token_ids)
    if (id < 0 || id >= vocab_size)
      fail<InvalidArgument>("stop_token_ids: token id {} is outside the vocabulary (0..{})", id, vocab_size - 1);
}

}  // namespace pagoda
