#include "server/tool_parser_choice.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "gguf/file.h"
#include "util/error.h"

namespace pagoda::server {

namespace {

// A built-in family's own tool layout names its parser.
ToolParserChoice for_builtin(ChatTemplate t) {
  const std::string_view name = chat_template_tool_format(t);
  return {toolcall::format_from_name(name),
          fmt::format("{} (auto: the built-in {} template's tool layout)", name, chat_template_name(t))};
}

// The Jinja text the server renders with: a --chat-template FILE, else the
// GGUF's template (and its tool_use variant). nullopt with `builtin` set for
// a built-in family (by name, or plain for a GGUF without a template); "" for
// a spec that is neither a name nor a file.
std::optional<std::string> template_text(const std::string& model_path, const std::optional<std::string>& spec,
                                         std::optional<ChatTemplate>& builtin) {
  if (spec) {
    // The same precedence as select_chat_template: a built-in name first.
    if (const auto b = find_chat_template(*spec)) {
      builtin = *b;
      return std::nullopt;
    }
    if (!std::filesystem::is_regular_file(*spec)) return "";
    std::ifstream in(*spec, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  const GgufFile f = GgufFile::open(model_path);
  const std::string main_text = f.get_string("tokenizer.chat_template", "");
  if (main_text.empty()) {
    builtin = ChatTemplate::plain;  // served with the plain fallback
    return std::nullopt;
  }
  return main_text + f.get_string("tokenizer.chat_template.tool_use", "");
}

}  // namespace

ToolParserChoice choose_tool_parser(const std::string& flag, const std::string& model_path,
                                    const std::optional<std::string>& template_spec) {
  if (flag != "auto") {
    const auto f = toolcall::format_from_name(flag);
    if (!f)
      fail<InvalidArgument>("--tool-call-parser '{}' is unknown; use auto or one of: {}", flag,
                            toolcall::format_names());
    return {f, flag};
  }
  std::optional<ChatTemplate> builtin;
  const auto text = template_text(model_path, template_spec, builtin);
  if (builtin) return for_builtin(*builtin);
  if (text->empty()) return {std::nullopt, "none (auto: no chat template)"};
  const auto f = toolcall::detect_format(*text);
  if (!f) return {std::nullopt, "none (auto: the chat template names no tool-call format)"};
  return {f, std::string(toolcall::format_name(*f)) + " (auto: from the chat template)"};
}

ReasoningParserChoice choose_reasoning_parser(const std::string& flag, const std::string& model_path,
                                              const std::optional<std::string>& template_spec,
                                              std::optional<toolcall::Format> tool) {
  std::optional<toolcall::ReasoningFormat> named;
  if (flag != "auto" && flag != "none") {
    named = toolcall::reasoning_format_from_name(flag);
    if (!named)
      fail<InvalidArgument>("--reasoning-parser '{}' is unknown; use auto, none or one of: {}", flag,
                            toolcall::reasoning_format_names());
  }
  if (tool == toolcall::Format::harmony) return {std::nullopt, "none (harmony's channels hold the reasoning)"};
  if (flag == "none") return {std::nullopt, "none"};
  if (named) return {named, flag};
  std::optional<ChatTemplate> builtin;
  const auto text = template_text(model_path, template_spec, builtin);
  if (builtin || text->empty()) return {std::nullopt, "none (auto: no Jinja chat template)"};
  const auto f = toolcall::detect_reasoning_format(*text);
  if (!f) return {std::nullopt, "none (auto: the chat template has no reasoning tags)"};
  return {f, std::string(toolcall::reasoning_format_name(*f)) + " (auto: from the chat template)"};
}

}  // namespace pagoda::server
