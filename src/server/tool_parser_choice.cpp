#include "server/tool_parser_choice.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf/file.h"
#include "util/error.h"

namespace pagoda::server {

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
  if (template_spec && std::filesystem::is_regular_file(*template_spec)) {
    std::ifstream in(*template_spec, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  } else if (!template_spec) {
    const GgufFile f = GgufFile::open(model_path);
    text = f.get_string("tokenizer.chat_template", "") + f.get_string("tokenizer.chat_template.tool_use", "");
  }
  const auto f = toolcall::detect_format(text);
  if (!f) return {std::nullopt, "none (auto: the chat template names no tool-call format)"};
  return {f, std::string(toolcall::format_name(*f)) + " (auto: from the chat template)"};
}

}  // namespace pagoda::server
