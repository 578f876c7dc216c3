// OpenAI response bodies: whole responses for non-streaming requests and the
// chunks of a stream, for /v1/completions and /v1/chat/completions, built
// from what the engine delivered for each choice.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/openai_request.h"

namespace pagoda::server {

using json = nlohmann::json;

class ToolOutput;  // tool_output.h

// One choice as it accumulates.
struct ChoiceState {
  std::string text;
  std::vector<TokenId> tokens;
  std::vector<GeneratedLogprobs> logprobs;
  std::vector<GeneratedLogprobs> prompt_logprobs;  // prompt tokens 1.., when asked
  FinishReason finish = FinishReason::none;
  nlohmann::json stop_reason;               // the stop string or token id that ended it (vLLM), else null
  size_t text_offset = 0;                   // completions logprobs: where the next token's text starts
  std::shared_ptr<ToolOutput> tool_output;  // chat with tools, streaming: the call parser
  size_t tool_calls = 0;                    // calls streamed so far
  size_t prompt = 0;                        // a completions batch: which prompt this choice continues
  std::vector<float> embedding;             // an embedding model's vector for this input
};

// What every response and chunk of one request carries.
struct ResponseIdentity {
  std::string id;  // cmpl-... or chatcmpl-...
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

// "stop" or "length"; null for any other reason.
json finish_reason_json(FinishReason r);
// vLLM's stop_reason for a choice's last delta: the stop string, the stop
// token id, or null (EOS, length, the grammar's end).
json stop_reason_json(const RequestOutput& out);
json usage_json(const Usage& u);

// Logprobs in each API's format, for some of a choice's tokens. Completions:
// {tokens, token_logprobs, top_logprobs, text_offset}, advancing
// c.text_offset. Chat: {content: [{token, logprob, bytes, top_logprobs}]}.
json completion_logprobs(const Tokenizer& tok, std::span<const GeneratedLogprobs> lps, size_t& text_offset);
json chat_logprobs(const Tokenizer& tok, std::span<const GeneratedLogprobs> lps);

// The whole response of a non-streaming request.
json completion_response(const ResponseIdentity& id, const GenerationRequest& req, std::vector<ChoiceState>& choices,
                         const Usage& usage, const Tokenizer& tok);
json chat_response(const ResponseIdentity& id, const GenerationRequest& req, const std::vector<ChoiceState>& choices,
                   const Usage& usage, const Tokenizer& tok);

// Stream chunks. `logprobs` and `finish` may be null; a chunk with a finish
// reason carries stop_reason too. With include_usage every chunk carries
// "usage": null and the last one (usage_chunk) the totals.
json completion_chunk(const ResponseIdentity& id, const GenerationRequest& req, int index, const std::string& text,
                      json logprobs, json finish, json stop_reason = nullptr);
json chat_chunk(const ResponseIdentity& id, const GenerationRequest& req, int index, json delta, json logprobs,
                json finish, json stop_reason = nullptr);
json usage_chunk(const ResponseIdentity& id, const GenerationRequest& req, const Usage& usage);

// JSON text for the wire: invalid UTF-8 (a token that is half a character)
// becomes U+FFFD instead of an exception.
std::string dump(const json& j);

}  // namespace pagoda::server
