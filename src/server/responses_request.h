// OpenAI's Responses API (POST /v1/responses) as another face of the one chat
// pipeline, as anthropic_messages.h does for Anthropic's: the request body is
// translated into the OpenAI chat body that /v1/chat/completions parses (so
// rendering, tools, constraints and sampling are the same code); the output
// is translated back in responses_output.h and responses_stream.h.
//
// Request, Responses -> chat body:
//   model                      -> model
//   instructions (string)      -> a first {role: system} message (not carried on by previous_response_id)
//   previous_response_id       -> that stored response's conversation (inputs and outputs) first
//   input string               -> one {role: user} message
//   input[] items:
//     {type: message (or no type), role user|system|developer|assistant,
//      content: string | [{type: input_text|output_text, text}]}
//                              -> {role, content} (parts joined; developer is system to the chat parser)
//     {type: reasoning, content[{reasoning_text}] | summary[{summary_text}]}
//                              -> the next assistant message's reasoning_content
//     {type: function_call, call_id, name, arguments}
//                              -> assistant tool_calls[{id: call_id, function{name, arguments}}]
//     {type: function_call_output, call_id, output}
//                              -> {role: tool, tool_call_id, content}
//     an assistant message, reasoning and function calls in a row -> one assistant message
//   tools[{type: function, name, description, parameters, strict}]
//                              -> tools[{type: function, function{name, description, parameters, strict}}]
//   tool_choice auto|none|required|{type: function, name}
//                              -> the same | {type: function, function{name}}
//   parallel_tool_calls        -> parallel_tool_calls
//   text.format text|json_object|json_schema{name, schema, strict}
//                              -> response_format (json_schema{name, schema, strict})
//   max_output_tokens          -> max_tokens
//   temperature, top_p         -> the same
//   reasoning.effort           -> reasoning_effort; "none": chat_template_kwargs.enable_thinking false
//   stream                     -> stream
//   store (default true), metadata, user, truncation, include, text.verbosity,
//   service_tier, prompt_cache_key, safety_identifier, max_tool_calls, top_logprobs,
//   stream_options             -> checked for type, not passed on
//   built-in tools (web_search, file_search, ...), image/file/audio inputs,
//   item references, background, conversation, prompt
//                              -> 400 naming the field
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/openai_request.h"
#include "server/response_store.h"

namespace pagoda::server {

// What the response needs of the request beyond the chat pipeline's fields.
struct ResponsesContext {
  nlohmann::json echo;                  // the request fields a response object repeats, with OpenAI's defaults
  nlohmann::ordered_json conversation;  // chat messages: the previous response's and this input, less instructions
  nlohmann::json input_items;           // this request's input as items with ids (GET .../input_items)
  bool store = true;
};

struct ResponsesRequest {
  nlohmann::ordered_json chat;  // an OpenAI chat body
  ResponsesContext context;
};

// A stored response by id; null when there is none.
using PreviousResponse = std::function<std::shared_ptr<const StoredResponse>(const std::string& id)>;

// 400 naming the field for anything malformed or unsupported.
ResponsesRequest translate_responses_request(const nlohmann::ordered_json& body, const PreviousResponse& previous);

// POST /v1/responses: the body translated and parsed as a chat request
// (check_model against `served`, ignored fields named); a 400 from the chat
// parser names the Responses field (max_tokens -> max_output_tokens, ...).
GenerationRequest parse_responses_request(const std::string& body, const ModelLimits& model, const ChatPrompt& chat,
                                          const std::vector<std::string>& served, const PreviousResponse& previous);

// A chat field named in an error, as the Responses request spells it.
std::string responses_field(const std::string& chat_field);

}  // namespace pagoda::server
