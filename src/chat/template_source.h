// Which chat template a model uses, and rendering it as Hugging Face's
// apply_chat_template does.
//
// Selection (select_chat_template), first match wins:
//   1. `spec` (--chat-template): a built-in family name (chat_template.h:
//      chatml, llama2, ..., plain), else a file holding a Jinja template;
//      anything else is InvalidArgument naming both forms.
//   2. The GGUF's `tokenizer.chat_template` (Jinja), with its named variants
//      `tokenizer.chat_template.NAME` (say, tool_use: used when a request has
//      tools, as transformers picks it).
//   3. No template in the file: the built-in `plain` fallback (the contents
//      joined with "\n"; stories260K has none).
// A Jinja template that does not parse does not throw here: the selection
// keeps the reason (`error`), the server logs it at start and still serves
// completions, and chat requests get a 400 naming it.
//
// Rendering a Jinja template gives it apply_chat_template's variables:
// messages (OpenAI message objects as JSON: content strings or parts,
// tool_calls, tool results), tools (None when absent, as transformers
// passes it), add_generation_prompt,
// bos_token, eos_token, and every chat_template_kwargs member (e.g.
// enable_thinking) as a variable of its own.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "jinja/template.h"

namespace pagoda {

class GgufFile;

struct SelectedChatTemplate {
  std::string source;                            // "tokenizer.chat_template of MODEL", "file PATH", "built-in NAME"
  std::optional<ChatTemplate> builtin;           // a hand-written family (or plain)
  std::shared_ptr<const jinja::Template> jinja;  // the default Jinja template
  std::map<std::string, std::shared_ptr<const jinja::Template>> variants;  // tokenizer.chat_template.NAME
  std::string error;  // why the Jinja template is unusable ("" if usable)

  bool is_plain() const { return builtin == ChatTemplate::plain; }
};

// Reads and parses a Jinja chat template file; SyntaxError/FormatError naming the file.
std::shared_ptr<const jinja::Template> load_jinja_template(const std::string& path);

SelectedChatTemplate select_chat_template(const GgufFile& f, const std::optional<std::string>& spec = std::nullopt);

struct JinjaChatInput {
  nlohmann::ordered_json messages;  // an array of message objects
  nlohmann::ordered_json tools;     // null, or an array of tool objects
  bool add_generation_prompt = true;
  nlohmann::ordered_json kwargs;  // null, or an object: chat_template_kwargs
};

// The rendered prompt. RenderError (an InvalidArgument) when the template
// raises; InvalidArgument when a kwarg would replace a standard variable.
std::string render_jinja_chat(const jinja::Template& t, const JinjaChatInput& in, const RenderOptions& opts);

}  // namespace pagoda
