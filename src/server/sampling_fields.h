// The vLLM-style sampling fields both endpoints accept beyond OpenAI's core
// set, parsed into the engine's SamplingParams, and the prompt-length ones:
//
//   logit_bias                  {"<token id>": bias in [-100, 100]} (OpenAI)
//   stop_token_ids              [ids]: end like EOS, not part of the output
//   min_tokens                  EOS / stop ids / stop strings off before it
//   include_stop_str_in_output  a matched stop string stays in the text
//   skip_special_tokens         default true; false renders control tokens
//   best_of                     vLLM's current engine: only absent or == n
//   truncate_prompt_tokens      keep the last k prompt tokens (k >= 1, or -1
//                               for max_model_len)
//
// Each bad value is a 400 naming its field; nothing here touches the engine.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <vector>

#include "kv/types.h"
#include "sampling/params.h"

namespace pagoda::server {

// Reads the fields above except truncate_prompt_tokens into `s`; n is the
// request's n (for best_of). Vocabulary checks need vocab_size.
void parse_extra_sampling(const nlohmann::json& body, int32_t n, int64_t vocab_size, SamplingParams& s);

// truncate_prompt_tokens as a token count: absent, or in [1, max_model_len].
std::optional<int32_t> parse_truncate_prompt_tokens(const nlohmann::json& body, int32_t max_model_len);

// Keeps the last `keep` tokens of the prompt (vLLM truncates on the left).
void truncate_prompt(std::vector<TokenId>& prompt, std::optional<int32_t> keep);

}  // namespace pagoda::server
