// chatml with Qwen2.5's tool layout (tool_layouts.h). The fixed texts are the
// ones Qwen2.5-Instruct's template writes, since that is what the model saw.
#include "chat/tool_layouts.h"

namespace pagoda::chat_tools {

namespace {

constexpr std::string_view kToolsHead =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr std::string_view kToolsTail =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

// The system turn that lists the tools; consumes a leading system message.
size_t tools_system_turn(Messages msgs, const Json& tools, std::string& out) {
  out += "<|im_start|>system\n";
  const bool system = msgs[0].role == "system";
  if (system) out.append(msgs[0].content).append("\n\n");
  out += kToolsHead;
  for (const auto& t : tools) out.append("\n").append(tojson(t));
  out += kToolsTail;
  return system ? 1 : 0;
}

void assistant_calls(const ChatMessage& m, std::string& out) {
  out += "<|im_start|>assistant";
  if (!m.content.empty()) out.append("\n").append(m.content);
  for (const auto& c : m.tool_calls)
    out.append("\n<tool_call>\n{\"name\": \"")
        .append(c.name)
        .append("\", \"arguments\": ")
        .append(tojson(c.arguments))
        .append("}\n</tool_call>");
  out += "<|im_end|>\n";
}

}  // namespace

std::string chatml(Messages msgs, const RenderOptions& o, const Json& tools) {
  std::string out;
  const size_t first = has_tools(tools) ? tools_system_turn(msgs, tools, out) : 0;
  for (size_t i = first; i < msgs.size(); ++i) {
    const ChatMessage& m = msgs[i];
    if (m.role == "tool") {
      // Consecutive results share one user turn.
      if (i == 0 || msgs[i - 1].role != "tool") out += "<|im_start|>user";
      out.append("\n<tool_response>\n").append(m.content).append("\n</tool_response>");
      if (i + 1 == msgs.size() || msgs[i + 1].role != "tool") out += "<|im_end|>\n";
    } else if (!m.tool_calls.empty()) {
      assistant_calls(m, out);
    } else {
      out.append("<|im_start|>").append(m.role).append("\n").append(m.content).append("<|im_end|>\n");
    }
  }
  if (o.add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

}  // namespace pagoda::chat_tools
