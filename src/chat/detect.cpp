// Family names and detection from template text. Detection looks for each
// family's distinctive special-token markers rather than comparing whole
// templates, so the small variations between fine-tunes still match.
#include <array>
#include <utility>

#include "chat/chat_template.h"
#include "util/error.h"

namespace pagoda {

namespace {

constexpr std::array<std::pair<ChatTemplate, std::string_view>, 8> kNames = {{
    {ChatTemplate::chatml, "chatml"},
    {ChatTemplate::llama2, "llama2"},
    {ChatTemplate::mistral, "mistral"},
    {ChatTemplate::llama3, "llama3"},
    {ChatTemplate::zephyr, "zephyr"},
    {ChatTemplate::gemma, "gemma"},
    {ChatTemplate::phi3, "phi3"},
    {ChatTemplate::plain, "plain"},
}};

}  // namespace

std::string_view chat_template_name(ChatTemplate t) {
  for (const auto& [tmpl, name] : kNames)
    if (tmpl == t) return name;
  return "?";
}

std::string chat_template_names() {
  std::string out;
  for (const auto& [tmpl, name] : kNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::optional<ChatTemplate> find_chat_template(std::string_view name) {
  for (const auto& [tmpl, n] : kNames)
    if (n == name) return tmpl;
  return std::nullopt;
}

ChatTemplate chat_template_from_name(std::string_view name) {
  if (const auto t = find_chat_template(name)) return *t;
  fail<InvalidArgument>("unknown chat template '{}' (valid: {})", name, chat_template_names());
}

std::optional<ChatTemplate> detect_chat_template(std::string_view text) {
  auto has = [&](std::string_view marker) { return text.find(marker) != std::string_view::npos; };
  if (has("<|im_start|>")) return ChatTemplate::chatml;
  if (has("<|start_header_id|>")) return ChatTemplate::llama3;
  if (has("<start_of_turn>")) return ChatTemplate::gemma;
  // Zephyr and Phi-3 share <|user|>; Phi-3 closes turns with <|end|>, Zephyr
  // with the EOS token.
  if (has("<|user|>")) return has("<|end|>") ? ChatTemplate::phi3 : ChatTemplate::zephyr;
  // Llama 2 wraps the system prompt in <<SYS>>; Mistral has no system prompt.
  if (has("[INST]")) return has("<<SYS>>") ? ChatTemplate::llama2 : ChatTemplate::mistral;
  return std::nullopt;
}

}  // namespace pagoda
