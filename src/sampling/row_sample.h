// One logits row's sampling, flattened into plain records a device can read
// (no pointers, fixed sizes), and the slow, plain reference of what a device
// computes from them. The engine builds the records for the rows a backend
// samples itself (ModelRunner::samples_rows), so that only ids and logprobs
// come back instead of the logits (issue 40; src/cuda/sampling.cu).
//
// The result is the CPU sampler's (sampler.h), with one difference: the draw.
// The kept tokens and their probabilities are filtered_distribution()'s, but
// the token drawn for a uniform u is the first in id order whose cumulative
// weight exceeds u * total (the CPU walks its candidates in the order its
// filters left them), so a seed gives other tokens on a device than on the CPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/history.h"
#include "sampling/params.h"

namespace pagoda {

// A token's logit change before everything else: logit_bias, or -inf for a
// token min_tokens masks. One entry a token (the builder merges).
struct LogitAdjust {
  int32_t token;
  float add;  // -inf: masked
};

// A token the penalties look at: in the prompt or the output (the
// repetition penalty), and how often in the output (frequency, presence).
struct PenaltyEntry {
  int32_t token;
  int32_t output_count;
};

struct RowSampling {
  double uniform = 0;     // the draw in [0, 1), from the sequence's Rng (unused when greedy)
  float temperature = 1;  // 0: greedy
  int32_t top_k = 0;      // <= 0 or >= the vocabulary: off
  float top_p = 1;        // 1: off
  float min_p = 0;        // 0: off
  float repetition_penalty = 1;
  float frequency_penalty = 0;
  float presence_penalty = 0;
  int32_t n_logprobs = -1;                       // -1: none; else the token's logprob and the top n (<= 20)
  int32_t adjust_begin = 0, adjust_count = 0;    // this row's LogitAdjust entries in the step's list
  int32_t penalty_begin = 0, penalty_count = 0;  // this row's PenaltyEntry entries (none without penalties)
};

struct SampledLogprob {
  int32_t token;
  float logprob;
};

struct SampledRow {
  enum Status : int32_t {
    kSampled = 0,
    kNonFinite = 1,  // a logit from the model is NaN or infinite: a model bug
    kAllMasked = 2,  // every token is -inf after the adjustments: nothing can be sampled
  };
  int32_t status = kSampled;
  int32_t token = -1;
  // Under the log-softmax of the adjusted logits (before penalties and
  // filters), as the CPU path reports; only when n_logprobs >= 0.
  float logprob = 0;
  int32_t n_top = 0;  // top[0, n_top): most likely first, lower id first on ties, no -inf ones
  SampledLogprob top[SamplingParams::kMaxLogprobs];
};

// The flattened records for one row; adjustments and penalty entries are
// appended to the step's lists, and the row points at them.
RowSampling flatten_row(const SamplingParams& params, double uniform, std::span<const int32_t> eog_ids,
                        int64_t n_generated, const TokenHistory& history, std::vector<LogitAdjust>& adjusts,
                        std::vector<PenaltyEntry>& penalties);

// The reference a device's kernel is tested against. `adjusts` and
// `penalties` are the row's own entries. The kept tokens' probabilities
// (0 elsewhere; one-hot when greedy), after the adjustments and penalties.
std::vector<float> row_distribution_reference(std::span<const float> logits, const RowSampling& row,
                                              std::span<const LogitAdjust> adjusts,
                                              std::span<const PenaltyEntry> penalties);
SampledRow sample_row_reference(std::span<const float> logits, const RowSampling& row,
                                std::span<const LogitAdjust> adjusts, std::span<const PenaltyEntry> penalties);

}  // namespace pagoda
