// Log-probabilities for the API's logprobs: under the plain log-softmax of the
// raw logits (before penalties, temperature and filters), as vLLM reports by
// default. Stable: the max is subtracted and the sum accumulated in double.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda {

struct TokenLogprob {
  int32_t token;
  float logprob;
  friend bool operator==(const TokenLogprob&, const TokenLogprob&) = default;
};

// log(sum(exp(logits))). Throws Error on NaN or +inf, or when all are -inf.
double log_sum_exp(std::span<const float> logits);

// The log-probability of one token (InvalidArgument if it is out of range).
float token_logprob(std::span<const float> logits, int32_t token);

// The k most likely tokens, most likely first (lower id first on ties);
// fewer when the vocabulary is smaller. k < 0 is InvalidArgument.
std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int k);

}  // namespace pagoda
