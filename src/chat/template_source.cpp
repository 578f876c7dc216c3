// Choosing the chat template (GGUF, file or built-in) and rendering Jinja ones.
#include "chat/template_source.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf/file.h"
#include "util/error.h"

namespace pagoda {

namespace {

// Parses a template, keeping the reason in `error` instead of throwing.
std::shared_ptr<const jinja::Template> try_parse(const std::string& text, const std::string& what, std::string& error) {
  try {
    return std::make_shared<const jinja::Template>(text);
  } catch (const Error& e) {
    if (error.empty()) error = what + ": " + e.what();
    return nullptr;
  }
}

}  // namespace

std::shared_ptr<const jinja::Template> load_jinja_template(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<InvalidArgument>("cannot read chat template file {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return std::make_shared<const jinja::Template>(ss.str());
  } catch (const Error& e) {
    fail<FormatError>("{}: {}", path, e.what());
  }
}

SelectedChatTemplate select_chat_template(const GgufFile& f, const std::optional<std::string>& spec) {
  SelectedChatTemplate s;
  if (spec) {
    if (auto b = find_chat_template(*spec)) {
      s.builtin = b;
      s.source = "built-in " + *spec;
      return s;
    }
    if (!std::filesystem::is_regular_file(*spec))
      fail<InvalidArgument>("--chat-template {}: neither a template file nor a built-in name ({})", *spec,
                            chat_template_names());
    std::ifstream in(*spec, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    s.source = "file " + *spec;
    s.jinja = try_parse(ss.str(), *spec, s.error);
    return s;
  }
  const std::string text = f.get_string("tokenizer.chat_template", "");
  if (text.empty()) {
    s.builtin = ChatTemplate::plain;
    s.source = "none in the model file: built-in plain";
    return s;
  }
  s.source = "tokenizer.chat_template of the model file";
  s.jinja = try_parse(text, "tokenizer.chat_template", s.error);
  const std::string prefix = "tokenizer.chat_template.";
  for (const auto& [key, value] : f.metadata()) {
    if (key.rfind(prefix, 0) != 0) continue;
    std::string ignored;
    if (auto t = try_parse(f.get_string(key, ""), key, ignored)) s.variants[key.substr(prefix.size())] = t;
  }
  if (!s.variants.empty()) {
    s.source += " (variants:";
    for (const auto& [name, _] : s.variants) s.source += " " + name;
    s.source += ")";
  }
  return s;
}

std::string render_jinja_chat(const jinja::Template& t, const JinjaChatInput& in, const RenderOptions& opts) {
  nlohmann::ordered_json ctx = {{"messages", in.messages.is_null() ? nlohmann::ordered_json::array() : in.messages},
                                {"add_generation_prompt", in.add_generation_prompt},
                                {"bos_token", opts.bos_text},
                                {"eos_token", opts.eos_text}};
  ctx["tools"] = in.tools;  // None when absent, as transformers passes it
  if (in.kwargs.is_object()) {
    for (const auto& [k, v] : in.kwargs.items()) {
      if (ctx.contains(k)) fail<InvalidArgument>("chat_template_kwargs may not set '{}'", k);
      ctx[k] = v;
    }
  } else if (!in.kwargs.is_null()) {
    fail<InvalidArgument>("chat_template_kwargs must be an object");
  }
  return t.render(ctx);
}

}  // namespace pagoda
