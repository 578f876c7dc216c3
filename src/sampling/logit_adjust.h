// The request's own changes to a position's logits, made before the
// sampler's pipeline (sampler.h) and before logprobs are taken, so logprobs
// describe the distribution that was sampled from, as OpenAI documents for
// logit_bias:
//
//   1. logit_bias   each listed token's logit += its bias (ids in range:
//                   SamplingParams::validate_vocab).
//   2. min_tokens   while fewer than min_tokens tokens were generated, every
//                   token that would end the generation (the end-of-generation
//                   ids unless ignore_eos, and stop_token_ids) is at -inf, as
//                   vLLM's MinTokensLogitsProcessor.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/params.h"

namespace pagoda {

// Whether adjust_logits() changes anything for the next token, after
// n_generated tokens; false lets the caller skip copying the logits.
bool adjusts_logits(const SamplingParams& params, int64_t n_generated);

// Steps 1 and 2, in place, on a full vocabulary of logits.
void adjust_logits(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> eog_ids,
                   int64_t n_generated);

}  // namespace pagoda
