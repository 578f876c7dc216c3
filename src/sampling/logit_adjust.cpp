// Logit bias and the min_tokens mask: a few writes per position, as the lists
// are short (bounded by validate()).
#include "sampling/logit_adjust.h"

#include <limits>

namespace pagoda {

bool adjusts_logits(const SamplingParams& params, int64_t n_generated) {
  return !params.logit_bias.empty() || n_generated < params.min_tokens;
}

void adjust_logits(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> eog_ids,
                   int64_t n_generated) {
  for (const auto& [id, bias] : params.logit_bias)
    if (size_t(id) < logits.size()) logits[size_t(id)] += bias;
  if (n_generated >= params.min_tokens) return;
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  if (!params.ignore_eos)
    for (int32_t id : eog_ids)
      if (size_t(id) < logits.size()) logits[size_t(id)] = kMasked;
  for (int32_t id : params.stop_token_ids)
    if (size_t(id) < logits.size()) logits[size_t(id)] = kMasked;
}

}  // namespace pagoda
