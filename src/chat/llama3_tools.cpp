// llama3 with Llama 3.1's JSON tool calling (tool_layouts.h). The fixed texts
// are the ones Llama-3.1-Instruct's template writes, since that is what the
// model saw; its defaults apply (tools_in_user_message, date_string).
#include "chat/strip.h"
#include "chat/tool_layouts.h"
#include "util/error.h"

namespace pagoda::chat_tools {

namespace {

constexpr std::string_view kFormat =
    "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}."
    "Do not use variables.\n\n";

void header(std::string& out, std::string_view role) {
  out.append("<|start_header_id|>").append(role).append("<|end_header_id|>\n\n");
}

// The 3.1 system turn and the first user turn carrying the tools; returns how
// many messages they consumed.
size_t tools_turns(Messages msgs, const Json& tools, std::string& out) {
  size_t used = 0;
  std::string_view system;
  if (msgs[0].role == "system") system = strip_whitespace(msgs[used++].content);
  header(out, "system");
  out.append("Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n")
      .append(system)
      .append("<|eot_id|>");
  if (used == msgs.size())
    fail<InvalidArgument>("Cannot put tools in the first user message when there's no first user message!");
  header(out, "user");
  out.append("Given the following functions, please respond with a JSON for a function call ")
      .append("with its proper arguments that best answers the given prompt.\n\n")
      .append(kFormat);
  for (const auto& t : tools) out.append(tojson(t, 4)).append("\n\n");
  out.append(strip_whitespace(msgs[used++].content)).append("<|eot_id|>");
  return used;
}

void message(const ChatMessage& m, std::string& out) {
  if (m.role == "tool") {
    // The template writes `content | tojson` for a string too (a string is
    // iterable), so the result arrives quoted.
    header(out, "ipython");
    out.append(tojson(Json(m.content))).append("<|eot_id|>");
  } else if (!m.tool_calls.empty()) {
    if (m.tool_calls.size() != 1) fail<InvalidArgument>("This model only supports single tool-calls at once!");
    const ChatToolCall& c = m.tool_calls[0];
    header(out, "assistant");
    out.append("{\"name\": \"")
        .append(c.name)
        .append("\", \"parameters\": ")
        .append(tojson(c.arguments))
        .append("}<|eot_id|>");
  } else {
    header(out, m.role);
    out.append(strip_whitespace(m.content)).append("<|eot_id|>");
  }
}

}  // namespace

std::string llama3(Messages msgs, const RenderOptions& o, const Json& tools) {
  std::string out = o.bos_text;  // before the first message; there always is one
  const size_t first = has_tools(tools) ? tools_turns(msgs, tools, out) : 0;
  for (size_t i = first; i < msgs.size(); ++i) message(msgs[i], out);
  if (o.add_generation_prompt) header(out, "assistant");
  return out;
}

}  // namespace pagoda::chat_tools
