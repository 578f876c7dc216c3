// Turns one position's logits into a token. The order is fixed:
//
//   1. penalties    repetition (prompt + output tokens: logit > 0 ? logit / r
//                   : logit * r), then frequency and presence (output tokens
//                   only: logit -= f * count + p * (count > 0)), as vLLM/OpenAI.
//   2. temperature  weights exp((logit - max) / T). T == 0 is greedy: the
//                   argmax after penalties, lowest id on ties, no filters, no
//                   draw (the filters below cannot remove the argmax anyway).
//   3. top-k        the k highest logits.
//   4. top-p        the smallest set of most likely tokens whose probability,
//                   renormalized over what top-k left, sums to >= top_p.
//   5. min-p        tokens whose probability is >= min_p * the top probability.
//   6. the draw     one Rng::uniform() against the cumulative weights.
//
// "Most likely" is a strict order: higher logit first, lower id on ties, so the
// kept sets are well defined. A logit of -inf masks a token; NaN or +inf
// logits are a model bug and throw Error.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/history.h"
#include "sampling/params.h"
#include "sampling/rng.h"

namespace pagoda {

// Step 1 alone, in place, on a full vocabulary of logits.
void apply_penalties(std::span<float> logits, const SamplingParams& params, const TokenHistory& history);

// Holds scratch space reused across calls, so sampling does not allocate once
// warm. Not thread-safe: one Sampler per thread.
class Sampler {
 public:
  // Validates params (InvalidArgument), then runs steps 1-6.
  int32_t sample(std::span<const float> logits, const SamplingParams& params, const TokenHistory& history, Rng& rng);

  // The probability of every token after steps 1-5 (one-hot when greedy).
  std::vector<float> filtered_distribution(std::span<const float> logits, const SamplingParams& params,
                                           const TokenHistory& history);

 private:
  struct Candidate {
    float logit;
    float weight;  // exp((logit - max) / T), unnormalized
    int32_t id;
  };

  // Validates, applies the penalties (into a copy only when there are any).
  std::span<const float> prepare(std::span<const float> logits, const SamplingParams& params,
                                 const TokenHistory& history);
  // Steps 2-5: leaves the kept tokens in cand_, returns their total weight.
  double filter(std::span<const float> logits, const SamplingParams& params);
  void select_top_k(std::span<const float> logits, size_t k);
  void collect_all(std::span<const float> logits, float temperature);

  std::vector<float> penalized_;
  std::vector<Candidate> cand_;
  std::vector<float> weights_;  // collect_all's weights, by token id
};

// Convenience for one-off use and tests: a temporary Sampler.
std::vector<float> filtered_distribution(std::span<const float> logits, const SamplingParams& params,
                                         const TokenHistory& history);

}  // namespace pagoda
