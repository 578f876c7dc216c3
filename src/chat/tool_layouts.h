// How the built-in families render tools, tool calls and tool results
// (chat_template.h lists which family uses which layout). Internal to chat/:
// render.cpp dispatches here.
//
//   chatml   Qwen2.5-Instruct's template, byte for byte, except that a
//            conversation without a system message gets no default system
//            prompt (the tools block stands alone, as in Qwen3's)
//   llama3   with tools, Llama-3.1-Instruct's template byte for byte, with its
//            defaults (tools in the first user message, the date "26 Jul
//            2024"); without tools the 3.0 layout, calls and results as 3.1's
//   generic_messages: the generic layout, for families without a tool format:
//            the conversation rewritten into system/user/assistant text that
//            the family's own renderer then renders:
//     - the instruction (generic_tool_instruction) ends the first system
//       message, or opens the first user message when `system_role` is false;
//     - an assistant's calls follow its content, one per line:
//       <tool_call>{"name": "NAME", "arguments": {...}}</tool_call>
//     - consecutive tool results become one user turn of blocks
//       <tool_response>\nRESULT\n</tool_response>, one per line.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "chat/chat_template.h"

namespace pagoda::chat_tools {

using Messages = std::span<const ChatMessage>;
using Json = nlohmann::ordered_json;

bool has_tools(const Json& tools);  // a non-empty array
// JSON text as the templates' tojson filter writes it (indent < 0: one line).
std::string tojson(const Json& j, int indent = -1);

// The whole chatml / llama3 rendering, with or without tools.
std::string chatml(Messages msgs, const RenderOptions& o, const Json& tools);
std::string llama3(Messages msgs, const RenderOptions& o, const Json& tools);

std::string generic_tool_instruction(const Json& tools);
std::vector<ChatMessage> generic_messages(Messages msgs, const Json& tools, bool system_role);

}  // namespace pagoda::chat_tools
