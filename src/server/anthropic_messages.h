// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) as
// another face of the one chat pipeline: the request body is translated into
// the OpenAI chat body that /v1/chat/completions parses (so rendering, tools,
// constraints and sampling are the same code), and the engine's output is
// translated back into Anthropic's message object and stream events.
//
// Request, Anthropic -> chat body:
//   model                      -> model
//   max_tokens (required)      -> max_tokens
//   system (string | text[])   -> a first {role: system} message
//   messages[].content string  -> content
//     text blocks              -> content (joined)
//     tool_use {id,name,input} -> assistant tool_calls[{id, function{name, arguments: input}}]
//     tool_result {tool_use_id, content, is_error}
//                              -> a {role: tool, tool_call_id, content} message
//     thinking {thinking}      -> assistant reasoning_content
//   consecutive turns of one role -> one message (texts joined by a blank line)
//   a last assistant turn (prefill) -> continue_final_message (the model continues it)
//   stop_sequences             -> stop
//   temperature, top_p, top_k  -> the same
//   tools[{name, description, input_schema}]
//                              -> tools[{type: function, function{name, description, parameters}}]
//   tool_choice auto|any|tool{name}|none
//                              -> "auto" | "required" | {function{name}} | "none";
//     disable_parallel_tool_use -> parallel_tool_calls false
//   thinking {type: enabled|disabled}
//                              -> chat_template_kwargs.enable_thinking true|false
//   stream                     -> stream
//   metadata, service_tier     -> ignored; mcp_servers, server tools, image/document blocks: 400
//
// Response, engine -> Anthropic: reasoning -> a thinking block (only when
// thinking was enabled), content -> a text block, calls -> tool_use blocks
// (input parsed from the arguments); finish stop -> end_turn (or
// stop_sequence naming it, or tool_use after calls), length -> max_tokens;
// usage {input_tokens, output_tokens}.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "server/openai_request.h"
#include "server/openai_response.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::server {

// The Anthropic request translated: the chat body and what the response needs.
struct MessagesRequest {
  nlohmann::ordered_json chat;  // an OpenAI chat body
  bool thinking = false;        // thinking {type: enabled}: reasoning is returned
};

// 400 naming the field for anything malformed. `count_only`: count_tokens,
// which has no max_tokens.
MessagesRequest translate_messages_request(const nlohmann::ordered_json& body, bool count_only = false);

// POST /v1/messages: the body translated and parsed as a chat request
// (check_model against `served`, ignored fields named); a 400 from the chat
// parser names the Anthropic field (stop -> stop_sequences, ...).
GenerationRequest parse_messages_request(const std::string& body, const ModelLimits& model, const ChatPrompt& chat,
                                         const std::vector<std::string>& served);

// A chat field named in an error, as the Anthropic request spells it.
std::string anthropic_field(const std::string& chat_field);

// Anthropic's error body for an HTTP status: {"type": "error", "error": {type, message}}.
nlohmann::json anthropic_error_json(int status, const std::string& message, const std::string& param = "");

// The stop_reason and stop_sequence of a finished choice.
struct StopInfo {
  std::string reason;  // end_turn, max_tokens, stop_sequence, tool_use
  nlohmann::json sequence = nullptr;
};
StopInfo anthropic_stop(const ChoiceState& c, bool made_calls);

// A tool_use block's input: the call's arguments parsed ({} when they are not an object).
nlohmann::json tool_input(const std::string& arguments);

json anthropic_usage(const Usage& u);

// A parsed call's id as Anthropic spells them ("call_x" -> "toolu_x"; others kept).
std::string anthropic_tool_id(const std::string& id);

// The whole message of a non-streaming request.
json messages_response(const ResponseIdentity& id, const GenerationRequest& req, bool thinking, const ChoiceState& c,
                       const Usage& usage);

}  // namespace pagoda::server
