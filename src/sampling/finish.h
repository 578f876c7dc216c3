// When a generation ends, and why, in the API's terms. The engine calls
// finish_reason() after each sampled token; stop strings are the StopMatcher's
// part (stop_matcher.h) and also end with FinishReason::stop.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/params.h"

namespace pagoda {

// OpenAI's finish_reason null, "stop", "length"; the engine adds the ways a
// request ends without finishing: aborted (the client left or cancelled),
// timed out, or failed with an error. The order is by severity (the engine
// counts a request as its worst outcome), so keep it.
enum class FinishReason { none, stop, length, abort, timeout, error };

const char* to_string(FinishReason reason);

// Whether `token` ends the generation: it is one of the end-of-generation ids
// from the model's metadata (EOS, EOT, ...) and ignore_eos is off. With
// ignore_eos, as in vLLM, those ids are sampled and kept like any other token.
bool is_end_of_generation(int32_t token, std::span<const int32_t> eog_ids, bool ignore_eos);

// After the n_generated-th token (counting `token`): stop on an end-of-
// generation id or one of params.stop_token_ids (vLLM; ignore_eos does not
// apply to them), length once max_tokens are out, else none. The stopping
// token itself is not part of the text the API returns.
FinishReason finish_reason(int32_t token, int64_t n_generated, const SamplingParams& params,
                           std::span<const int32_t> eog_ids);

}  // namespace pagoda
