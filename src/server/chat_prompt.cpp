#include "server/chat_prompt.h"

#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

ChatPrompt ChatPrompt::for_model(const std::string& model_path, const std::optional<std::string>& override_name) {
  const GgufFile f = GgufFile::open(model_path);
  ChatPrompt p;
  p.template_ = chat_template_for(f, override_name);
  p.options_ = chat_render_options(f);
  return p;
}

RenderedPrompt ChatPrompt::render(const std::vector<ChatTurn>& messages, const Tokenizer& tok) const {
  std::vector<ChatMessage> ms;
  ms.reserve(messages.size());
  for (const auto& m : messages) ms.push_back({m.role, m.content});
  RenderedPrompt out;
  out.text = render_chat(template_, ms, options_);
  // Template markers are special tokens; plain text stays plain text.
  out.parse_special = template_ != ChatTemplate::plain;
  out.add_bos = tok.add_bos_by_default() && !starts_with_bos(out.text, options_);
  return out;
}

}  // namespace pagoda::server
