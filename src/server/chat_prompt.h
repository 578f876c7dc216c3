// Chat messages -> the prompt the engine tokenizes: the served model's chat
// template (chat/template_source.h: the GGUF's Jinja tokenizer.chat_template,
// a --chat-template FILE, or a built-in family NAME), rendered, and the facts
// tokenizing it needs. Models without a template (stories260K) use the plain
// fallback: the contents joined with "\n" (tools, calls and results in the
// generic layout of chat/tool_layouts.h). Built-in families take tools too.
//
// A model whose template does not parse still serves completions: for_model
// keeps the reason (error()), the server logs it at start, and every chat
// render throws InvalidArgument (HTTP 400) with it, as vLLM answers template errors.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/template_source.h"

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

// A chat request as apply_chat_template takes it.
struct ChatRenderRequest {
  nlohmann::ordered_json messages;  // OpenAI message objects
  nlohmann::ordered_json tools;     // null or an array
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs;             // null or an object (chat_template_kwargs)
  std::optional<std::string> template_text;  // a per-request Jinja template (vLLM's chat_template)
};

class ChatPrompt {
 public:
  // The template for the model file: `spec` (--chat-template NAME or FILE) or
  // the one the file carries. InvalidArgument for a spec that is neither a
  // built-in name nor a readable file; a template that fails to parse is kept
  // as error() instead.
  static ChatPrompt for_model(const std::string& model_path, const std::optional<std::string>& spec);

  // InvalidArgument for an empty conversation, an unknown role, or what the
  // template refuses (raise_exception: say, roles that do not alternate);
  // also when the model's template did not parse.
  RenderedPrompt render(const std::vector<ChatTurn>& messages, const Tokenizer& tok) const;
  RenderedPrompt render(const ChatRenderRequest& request, const Tokenizer& tok) const;

  std::string name() const;                                       // "jinja", or the built-in family's name
  const std::string& source() const { return selected_.source; }  // where the template came from
  const std::string& error() const { return selected_.error; }    // why it is unusable, "" if usable
  // A reranker's prompt (tokenizer.chat_template.rerank, llama.cpp's named
  // template: "{query}" and "{document}" replaced); "" when the file has none.
  const std::string& rerank_template() const { return rerank_; }

 private:
  SelectedChatTemplate selected_;
  RenderOptions options_;
  std::string rerank_;
};

}  // namespace pagoda::server
