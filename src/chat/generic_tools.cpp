// The generic tool layout for families without a tool format of their own
// (tool_layouts.h), and the JSON helpers the layouts share.
#include "chat/tool_layouts.h"
#include "jinja/value.h"

namespace pagoda::chat_tools {

bool has_tools(const Json& tools) { return tools.is_array() && !tools.empty(); }

std::string tojson(const Json& j, int indent) {
  jinja::JsonOptions o;
  o.indent = indent;
  return jinja::to_json(jinja::from_json(j), o);
}

std::string generic_tool_instruction(const Json& tools) {
  // Short on purpose: small models with small contexts (stories260K: 512 tokens) serve it too.
  std::string out = "# Tools\n\nYou may call the functions below, given as JSON, one a line:\n<tools>\n";
  for (const auto& t : tools) out.append(tojson(t)).append("\n");
  out +=
      "</tools>\n\nTo call one, reply with a JSON object holding its name and arguments in <tool_call></tool_call> "
      "tags, one call per pair of tags:\n"
      "<tool_call>{\"name\": \"function_name\", \"arguments\": {\"argument\": \"value\"}}</tool_call>\n"
      "Results come back in <tool_response></tool_response> tags.";
  return out;
}

namespace {

std::string calls_text(const ChatMessage& m) {
  std::string out = m.content;
  for (const auto& c : m.tool_calls) {
    if (!out.empty()) out += "\n";
    out.append("<tool_call>{\"name\": ")
        .append(tojson(Json(c.name)))
        .append(", \"arguments\": ")
        .append(tojson(c.arguments))
        .append("}</tool_call>");
  }
  return out;
}

// Puts the instruction where the family reads it: the end of a leading
// system message, or the start of the first user message.
void add_instruction(std::vector<ChatMessage>& out, const Json& tools, bool system_role) {
  const std::string text = generic_tool_instruction(tools);
  if (system_role) {
    if (!out.empty() && out[0].role == "system")
      out[0].content.append("\n\n").append(text);
    else
      out.insert(out.begin(), ChatMessage{"system", text});
    return;
  }
  for (auto& m : out)
    if (m.role == "user") {
      m.content = text + "\n\n" + m.content;
      return;
    }
  out.insert(out.begin(), ChatMessage{"user", text});
}

}  // namespace

std::vector<ChatMessage> generic_messages(Messages msgs, const Json& tools, bool system_role) {
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const ChatMessage& m = msgs[i];
    if (m.role != "tool") {
      out.push_back({m.role, m.tool_calls.empty() ? m.content : calls_text(m)});
      continue;
    }
    // Consecutive results share one user turn, so user/assistant still alternate.
    const std::string block = "<tool_response>\n" + m.content + "\n</tool_response>";
    if (i > 0 && msgs[i - 1].role == "tool")
      out.back().content.append("\n").append(block);
    else
      out.push_back({"user", block});
  }
  if (has_tools(tools)) add_instruction(out, tools, system_role);
  return out;
}

}  // namespace pagoda::chat_tools
