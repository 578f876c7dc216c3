// OpenAI request bodies -> an engine Request plus what the response needs
// (streaming, echo, the logprobs format). Everything is checked here, before
// the engine sees the request, so a bad request changes nothing in the engine
// and gets a 400 naming the field at fault.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/request.h"
#include "model/config.h"  // Pooling
#include "server/chat_prompt.h"
#include "server/constraint_fields.h"
#include "server/tool_fields.h"

namespace pagoda {
class Tokenizer;
}

namespace pagoda::server {

struct ResponsesContext;  // responses_request.h

// messages: Anthropic's face of chat; responses: OpenAI's Responses API, another face of it.
enum class Api { completions, chat, messages, responses, embeddings, rerank };

// One prompt of a completions batch: its tokens and its text (for echo).
struct PromptEntry {
  std::vector<TokenId> ids;
  std::string text;
};

struct GenerationRequest {
  Api api = Api::completions;
  Request engine;  // prompt ids, sampling, n, priority, cache_salt
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: each choice's text starts with the prompt
  std::string prompt_text;     // the prompt as text (for echo)
  // Unknown top-level fields, named in a response header (request_fields.h).
  std::vector<std::string> ignored_fields;
  ToolRequest tools;                                  // chat: tools, tool_choice and how to parse calls
  bool thinking = false;                              // messages: reasoning is returned as thinking blocks
  std::shared_ptr<const ResponsesContext> responses;  // responses: what its response object repeats and stores
  // Completions with echo and logprobs: the prompt's tokens lead the choice's
  // logprobs (the first with null), as OpenAI's legacy API and vLLM.
  bool echo_logprobs = false;
  bool prompt_only = false;                // max_tokens 0 with echo: nothing generated is returned
  std::optional<int32_t> prompt_logprobs;  // vLLM's field: "prompt_logprobs" with this many top tokens
  // Completions with a list of prompts: every prompt (engine.prompt and
  // prompt_text are the first's), one engine request each; choices are
  // prompt-major (index = prompt * n + choice). Empty for a single prompt.
  std::vector<PromptEntry> prompts;
  static constexpr size_t kMaxPrompts = 64;
  // Embeddings (embeddings.h): how the vectors are returned.
  bool embedding_base64 = false;
  bool embedding_normalize = true;
  // Rerank (rerank.h): how many results, and whether with their documents.
  size_t rerank_top_n = 0;
  bool rerank_documents = true;

  size_t num_prompts() const { return prompts.empty() ? 1 : prompts.size(); }
  std::span<const TokenId> prompt_ids(size_t i) const { return prompts.empty() ? engine.prompt : prompts[i].ids; }
  const std::string& prompt_text_of(size_t i) const { return prompts.empty() ? prompt_text : prompts[i].text; }
};

// What parsing needs to know about the served model.
struct ModelLimits {
  const Tokenizer* tokenizer = nullptr;
  int32_t max_model_len = 0;  // prompt + generated tokens
  int32_t max_n = 16;
  GrammarSupport grammar;                                     // constrained decoding (constraint_fields.h)
  std::optional<toolcall::Format> tool_parser;                // --tool-call-parser (tool_parser_choice.h)
  std::optional<toolcall::ReasoningFormat> reasoning_parser;  // --reasoning-parser (tool_parser_choice.h)
  Pooling pooling = Pooling::none;                            // an embedding model's (it serves /v1/embeddings only)
  int32_t output_width = 0;                                   // its embedding size
};

// POST /v1/completions. max_tokens defaults to 16 as in OpenAI's API.
// raw_body: the body's text, when known (a JSON Schema's property order).
GenerationRequest parse_completion_request(const nlohmann::json& body, const ModelLimits& model,
                                           std::string_view raw_body = {});
// POST /v1/chat/completions. max_completion_tokens (or max_tokens) defaults to
// the rest of the context.
GenerationRequest parse_chat_request(const nlohmann::json& body, const ModelLimits& model, const ChatPrompt& chat,
                                     std::string_view raw_body = {});
// Another API's body translated into a chat body (Anthropic's Messages, the
// Responses API): checks the model, parses it as chat, and names a refused
// field as the original API spells it (`field_name` of the chat field).
GenerationRequest parse_translated_chat(const nlohmann::ordered_json& chat_body, const ModelLimits& model,
                                        const ChatPrompt& chat, const std::vector<std::string>& served,
                                        std::string (*field_name)(const std::string& chat_field));

}  // namespace pagoda::server
