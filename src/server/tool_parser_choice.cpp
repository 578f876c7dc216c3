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
  std::string text;
  if (template_spec) {
    // The same precedence as select_chat_template: a built-in name first.
    if (const auto b = find_chat_template(*template_spec)) return for_builtin(*b);
    if (!std::filesystem::is_regular_file(*template_spec)) return {std::nullopt, "none (auto: no chat template)"};
    std::ifstream in(*template_spec, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else {
    const GgufFile f = GgufFile::open(model_path);
    const std::string main_text = f.get_string("tokenizer.chat_template", "");
    if (main_text.empty()) return for_builtin(ChatTemplate::plain);  // served with the plain fallback
    text = main_text + f.get_string("tokenizer.chat_template.tool_use", "");
  }
  const auto f = toolcall::detect_format(text);
  if (!f) return {std::nullopt, "none (auto: the chat template names no tool-call format)"};
  return {f, std::string(toolcall::format_name(*f)) + " (auto: from the chat template)"};
}

}  // namespace pagoda::server
