#include "server/chat_body.h"

#include "server/api_error.h"
#include "util/error.h"

namespace pagoda::server {

ChatBody render_chat_body(const nlohmann::json& body, std::string_view raw_body, const ChatPrompt& chat,
                          const Tokenizer& tok, std::optional<toolcall::Format> parser,
                          std::optional<toolcall::ReasoningFormat> reasoning) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object");
  // The client's key order matters to templates (tool schemas rendered with tojson).
  auto ordered = nlohmann::ordered_json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
  if (raw_body.empty() || ordered.is_discarded()) ordered = nlohmann::ordered_json::parse(body.dump());
  ChatBody out;
  out.tools = parse_tool_request(ordered, parser);
  bool continue_final = false;
  const ChatRenderRequest render = parse_render_request(ordered, out.tools, continue_final);
  try {
    out.prompt = chat.render(render, tok);
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    bad_request(msg.starts_with("chat_template:") ? "chat_template" : "messages", "{}", msg);
  }
  if (continue_final) out.prompt.text = cut_after_final_message(out.prompt.text, render.messages);
  // Where the template left the thinking (open, closed by enable_thinking false, or up to the model).
  out.tools.reasoning = reasoning;
  if (reasoning) out.tools.think_start = toolcall::think_start_of(out.prompt.text);
  return out;
}

}  // namespace pagoda::server
