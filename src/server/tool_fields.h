// The tool-calling fields of a chat request (OpenAI's, with vLLM's template
// extras): tools, tool_choice, parallel_tool_calls, messages with tool calls
// and tool results, chat_template, chat_template_kwargs,
// add_generation_prompt, continue_final_message. Checked here (a 400 naming
// the field), turned into what the template renders and what the response
// parses.
//
// Messages reach the template as OpenAI objects in the client's key order;
// an assistant message's tool_calls[i].function.arguments JSON string is
// parsed into an object first, as vLLM does (templates iterate or tojson it).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "server/chat_prompt.h"
#include "toolcall/think.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::server {

enum class ToolChoice { none, automatic, required, named };

struct ToolRequest {
  nlohmann::ordered_json tools;  // null, or the validated array
  ToolChoice choice = ToolChoice::none;
  std::string function;  // the named function (choice == named)
  bool parallel = true;  // parallel_tool_calls
  // The parser for the output: set when tools are given, choice is not none
  // and the served model has a tool-call parser.
  std::optional<toolcall::Format> parser;
  // The served model writes harmony (gpt-oss): its output is read into
  // reasoning and content with or without tools, calls only when `parser`
  // is set, and the template gets an assistant message's reasoning as
  // `thinking`.
  bool harmony = false;
  // The served model thinks in <think> tags (toolcall/think.h): its output
  // is split into reasoning and content first, and only the content is read
  // for calls; `think_start` is where the rendered prompt left the output.
  std::optional<toolcall::ReasoningFormat> reasoning;
  toolcall::ThinkStart think_start = toolcall::ThinkStart::maybe;
};

// tools, tool_choice, parallel_tool_calls. `body`: the request in the
// client's key order. tool_choice defaults to auto with tools, none without.
ToolRequest parse_tool_request(const nlohmann::ordered_json& body, std::optional<toolcall::Format> parser);

// messages, chat_template, chat_template_kwargs, reasoning_effort (low,
// medium or high: a template variable, unless chat_template_kwargs sets it),
// add_generation_prompt and continue_final_message as the renderer takes
// them; `continue_final`: the render must leave the last message open
// (continue_final_message).
ChatRenderRequest parse_render_request(const nlohmann::ordered_json& body, const ToolRequest& tools,
                                       bool& continue_final);

// The rendered text cut right after the last message's content, which the
// model then continues (vLLM's continue_final_message). 400 when the template
// did not write that content verbatim.
std::string cut_after_final_message(const std::string& rendered, const nlohmann::ordered_json& messages);

}  // namespace pagoda::server
