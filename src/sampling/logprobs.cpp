// log-softmax pieces: one pass for the max, one for the sum, and a bounded
// heap for the top k.
#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/error.h"

namespace pagoda {

double log_sum_exp(std::span<const float> logits) {
  float max = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i]) || logits[i] == std::numeric_limits<float>::infinity())
      fail<Error>("logit of token {} is {}", i, logits[i]);
    max = std::max(max, logits[i]);
  }
  if (max == -std::numeric_limits<float>::infinity()) fail<Error>("log-softmax needs a finite logit");
  double sum = 0.0;  // float exps (each exact to an ulp), summed in double so 150k terms do not drift
  for (float l : logits) sum += std::exp(l - max);
  return double(max) + std::log(sum);
}

float token_logprob(std::span<const float> logits, int32_t token) {
  if (token < 0 || size_t(token) >= logits.size())
    fail<InvalidArgument>("token id {} is outside the vocabulary of {}", token, logits.size());
  return float(double(logits[token]) - log_sum_exp(logits));
}

std::vector<TokenLogprob> top_logprobs(std::span<const float> logits, int k) {
  if (k < 0) fail<InvalidArgument>("the number of top logprobs must be >= 0, got {}", k);
  const double lse = log_sum_exp(logits);
  // A heap of the best k so far, its least likely in front: one comparison for most tokens.
  auto more_likely = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::vector<int32_t> ids;
  ids.reserve(std::min(size_t(k), logits.size()));
  for (int32_t i = 0; i < int32_t(logits.size()); ++i) {
    if (ids.size() < size_t(k)) {
      ids.push_back(i);
      std::push_heap(ids.begin(), ids.end(), more_likely);
    } else if (k > 0 && more_likely(i, ids.front())) {
      std::pop_heap(ids.begin(), ids.end(), more_likely);
      ids.back() = i;
      std::push_heap(ids.begin(), ids.end(), more_likely);
    }
  }
  std::sort(ids.begin(), ids.end(), more_likely);
  std::vector<TokenLogprob> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.push_back({id, float(double(logits[id]) - lse)});
  return out;
}

}  // namespace pagoda
