#include "server/chat_body.h"

#include "server/api_error.h"
#include "server/json_fields.h"
#include "util/error.h"

namespace pagoda::server {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string message_content(const json& m, size_t i) {
  const json* c = field(m, "content");
  if (!c) return "";
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array()) bad_request("messages", "messages[{}].content must be a string or an array of parts", i);
  std::string text;
  for (const auto& part : *c) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      bad_request("messages", "messages[{}].content: only text parts are supported", i);
    text += part["text"].get<std::string>();
  }
  return text;
}

// The body's JSON as the template sees it (key order kept as parsed).
ordered_json ordered(const json& j) { return ordered_json::parse(j.dump()); }

ordered_json parse_messages(const json& body) {
  const json* ms = field(body, "messages");
  if (!ms) bad_request("messages", "'messages' is required");
  if (!ms->is_array() || ms->empty()) bad_request("messages", "'messages' must be a non-empty array");
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    if (!m.is_object()) bad_request("messages", "messages[{}] must be an object", i);
    const json* role = field(m, "role");
    if (!role || !role->is_string()) bad_request("messages", "messages[{}].role must be a string", i);
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    ordered_json turn = ordered(m);      // other keys (name, tool_calls, ...) pass to the template
    turn["role"] = r;
    turn["content"] = message_content(m, i);
    out.push_back(std::move(turn));
  }
  return out;
}

}  // namespace

ChatRenderRequest chat_render_request(const json& body) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object");
  ChatRenderRequest r;
  r.messages = parse_messages(body);
  if (const json* t = field(body, "tools")) {
    if (!t->is_array()) bad_request("tools", "'tools' must be an array");
    r.tools = ordered(*t);
  }
  if (auto v = opt_bool(body, "add_generation_prompt")) r.add_generation_prompt = *v;
  if (opt_bool(body, "continue_final_message").value_or(false))
    bad_request("continue_final_message", "'continue_final_message' is not supported");
  if (auto v = opt_string(body, "chat_template")) r.template_text = *v;
  if (const json* k = field(body, "chat_template_kwargs")) {
    if (!k->is_object()) bad_request("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    r.kwargs = ordered(*k);
  }
  return r;
}

RenderedPrompt render_chat_body(const json& body, const ChatPrompt& chat, const Tokenizer& tok) {
  const ChatRenderRequest request = chat_render_request(body);
  try {
    return chat.render(request, tok);
  } catch (const InvalidArgument& e) {
    bad_request(request.template_text ? "chat_template" : "messages", "{}", e.what());
  }
}

}  // namespace pagoda::server
