// The prompt's logprobs in the two shapes clients read:
//
//   - OpenAI's legacy completions with echo and logprobs (how lm-evaluation-
//     harness scores a continuation): the choice's logprobs start with every
//     prompt token, the first with token_logprobs null and top_logprobs null,
//     then the generated tokens; text_offset counts from the start of the
//     echoed prompt's token pieces.
//   - vLLM's prompt_logprobs: [null, {"<id>": {"logprob", "rank",
//     "decoded_token"}, ...}, ...], one entry per prompt token, holding the
//     token itself and the k most likely at that position.
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <vector>

#include "engine/request.h"

namespace pagoda {
class Tokenizer;
}

namespace pagoda::server {

// The completions logprobs object for prompt + generated tokens, with `top`
// entries per position. plp: the engine's prompt logprobs (tokens 1..).
nlohmann::json echo_logprobs(const Tokenizer& tok, std::span<const TokenId> prompt,
                             std::span<const GeneratedLogprobs> plp, std::span<const GeneratedLogprobs> generated,
                             int top);

// vLLM's prompt_logprobs list with k most likely tokens per position.
nlohmann::json vllm_prompt_logprobs(const Tokenizer& tok, std::span<const TokenId> prompt,
                                    std::span<const GeneratedLogprobs> plp, int k);

}  // namespace pagoda::server
