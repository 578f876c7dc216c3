// Choosing a model's chat template and its BOS/EOS texts from its GGUF file.
#include "chat/chat_template.h"
#include "gguf/file.h"
#include "util/error.h"

namespace pagoda {

namespace {

// The first `max_chars` characters of a template for an error message, cut on
// a character boundary, with backslashes, newlines and other control bytes
// escaped so that the one-line message shows the text unambiguously.
std::string template_excerpt(std::string_view text, size_t max_chars = 60) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if ((b & 0xC0) != 0x80 && chars++ == max_chars) return out + "...";
    if (b == '\\')
      out += "\\\\";
    else if (b == '\n')
      out += "\\n";
    else if (b < 0x20 || b == 0x7F)
      out += fmt::format("\\x{:02x}", b);
    else
      out += char(b);
  }
  return out;
}

std::string token_text(const GgufFile& f, const char* id_key) {
  const Value* tokens = f.find("tokenizer.ggml.tokens");
  const Value* id = f.find(id_key);
  if (!tokens || !id) return "";
  const auto& list = tokens->as_array("tokenizer.ggml.tokens");
  const uint64_t i = id->as_u64(id_key);
  return i < list.size() ? list[i].as_string("tokenizer.ggml.tokens") : "";
}

}  // namespace

ChatTemplate chat_template_for(const GgufFile& f, const std::optional<std::string>& override_name) {
  if (override_name) return chat_template_from_name(*override_name);
  const std::string text = f.get_string("tokenizer.chat_template", "");
  if (text.empty()) return ChatTemplate::plain;
  if (auto t = detect_chat_template(text)) return *t;
  fail<Unsupported>("{}: unrecognised tokenizer.chat_template \"{}\"; pass --chat-template NAME (one of {})",
                    f.source(), template_excerpt(text), chat_template_names());
}

RenderOptions chat_render_options(const GgufFile& f) {
  RenderOptions o;
  o.bos_text = token_text(f, "tokenizer.ggml.bos_token_id");
  o.eos_text = token_text(f, "tokenizer.ggml.eos_token_id");
  return o;
}

}  // namespace pagoda
