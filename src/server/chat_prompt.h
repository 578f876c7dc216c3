// Chat messages -> the prompt the engine tokenizes: the served model's chat
// template (src/chat: detected from tokenizer.chat_template, or
// --chat-template NAME), rendered, and the facts tokenizing it needs. Models
// without a template (stories260K) use the plain fallback: the contents
// joined with "\n".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"

namespace pagoda {
class Tokenizer;
}

namespace pagoda::server {

struct ChatTurn {
  std::string role;  // system, user or assistant
  std::string content;
};

struct RenderedPrompt {
  std::string text;
  bool add_bos = false;        // prepend the BOS token (the text does not start with it)
  bool parse_special = false;  // template markers in the text are special tokens
};

class ChatPrompt {
 public:
  // The template for the model file: `override_name` (--chat-template) or the
  // one the file carries. InvalidArgument for an unknown name, Unsupported
  // for a template of no known family.
  static ChatPrompt for_model(const std::string& model_path, const std::optional<std::string>& override_name);

  // InvalidArgument for an empty conversation, an unknown role, or what the
  // family's real template refuses (say, roles that do not alternate).
  RenderedPrompt render(const std::vector<ChatTurn>& messages, const Tokenizer& tok) const;
  std::string name() const { return std::string(chat_template_name(template_)); }

 private:
  ChatTemplate template_ = ChatTemplate::plain;
  RenderOptions options_;
};

}  // namespace pagoda::server
