// End-of-generation checks: a linear scan, as models have a handful of EOG ids.
#include "sampling/finish.h"

#include <algorithm>

namespace pagoda {

const char* to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::abort: return "abort";
    case FinishReason::timeout: return "timeout";
    case FinishReason::error: return "error";
    case FinishReason::none: break;
  }
  return "none";
}

bool is_end_of_generation(int32_t token, std::span<const int32_t> eog_ids, bool ignore_eos) {
  return !ignore_eos && std::find(eog_ids.begin(), eog_ids.end(), token) != eog_ids.end();
}

FinishReason finish_reason(int32_t token, int64_t n_generated, const SamplingParams& params,
                           std::span<const int32_t> eog_ids) {
  if (is_end_of_generation(token, eog_ids, params.ignore_eos)) return FinishReason::stop;
  const auto& ids = params.stop_token_ids;
  if (std::find(ids.begin(), ids.end(), token) != ids.end()) return FinishReason::stop;
  if (params.max_tokens && n_generated >= *params.max_tokens) return FinishReason::length;
  return FinishReason::none;
}

}  // namespace pagoda
