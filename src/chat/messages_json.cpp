// OpenAI message objects -> ChatMessage, for the built-in families.
#include "chat/chat_template.h"
#include "util/error.h"

namespace pagoda {

namespace {

using Json = nlohmann::ordered_json;

// A content string, or the text parts of a content array joined.
std::string content_text(const Json& m) {
  const auto it = m.find("content");
  if (it == m.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  std::string out;
  if (it->is_array())
    for (const auto& part : *it)
      if (part.is_object() && part.contains("type") && part["type"] == "text" && part.contains("text") &&
          part["text"].is_string())
        out += part["text"].get<std::string>();
  return out;
}

ChatToolCall tool_call(const Json& c, size_t i, size_t k) {
  const Json* f = c.is_object() && c.contains("function") ? &c["function"] : nullptr;
  if (!f || !f->is_object() || !f->contains("name") || !(*f)["name"].is_string())
    fail<InvalidArgument>("message {}: tool_calls[{}] needs function.name", i, k);
  ChatToolCall out{(*f)["name"].get<std::string>(), Json::object()};
  if (const auto a = f->find("arguments"); a != f->end() && !a->is_null()) {
    out.arguments = *a;
    // OpenAI sends arguments as JSON text; the templates write the object.
    if (a->is_string()) {
      Json parsed = Json::parse(a->get<std::string>(), nullptr, false);
      if (!parsed.is_discarded()) out.arguments = std::move(parsed);
    }
  }
  return out;
}

}  // namespace

std::vector<ChatMessage> chat_messages_from_json(const Json& messages) {
  std::vector<ChatMessage> out;
  if (!messages.is_array()) fail<InvalidArgument>("messages must be an array");
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      fail<InvalidArgument>("message {}: needs a string role", i);
    ChatMessage cm{m["role"].get<std::string>(), content_text(m)};
    if (const auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null()) {
      if (!calls->is_array()) fail<InvalidArgument>("message {}: tool_calls must be an array", i);
      for (size_t k = 0; k < calls->size(); ++k) cm.tool_calls.push_back(tool_call((*calls)[k], i, k));
    }
    out.push_back(std::move(cm));
  }
  return out;
}

}  // namespace pagoda
