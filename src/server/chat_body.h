// A chat request body -> the prompt it renders to: the one path that
// /v1/chat/completions, /tokenize (with "messages") and /apply-template share,
// so a prompt counted or shown by one is the prompt the other generates from.
//
// The fields are tool_fields.h's: messages (content strings, null or text
// parts; "developer" is the system role; assistant tool_calls and tool
// results), tools, tool_choice, parallel_tool_calls, add_generation_prompt,
// continue_final_message, chat_template and chat_template_kwargs, read in the
// client's key order (`raw_body`, when known). A bad value is a 400 naming
// its field; what the template refuses is a 400 on `messages` (or on
// `chat_template` for a per-request template).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

#include "server/chat_prompt.h"
#include "server/tool_fields.h"

namespace pagoda {
class Tokenizer;
}

namespace pagoda::server {

struct ChatBody {
  RenderedPrompt prompt;
  ToolRequest tools;  // what the response parses (parser set only when `parser` was given; reasoning likewise)
};

ChatBody render_chat_body(const nlohmann::json& body, std::string_view raw_body, const ChatPrompt& chat,
                          const Tokenizer& tok, std::optional<toolcall::Format> parser = std::nullopt,
                          std::optional<toolcall::ReasoningFormat> reasoning = std::nullopt);

}  // namespace pagoda::server
