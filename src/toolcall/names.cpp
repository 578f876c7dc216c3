// Parser names (vLLM's) and picking one from a chat template's text.
#include <array>

#include "toolcall/formats.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::toolcall {
namespace {

constexpr std::array kFormats{Format::hermes,      Format::llama3_json, Format::pythonic, Format::mistral,
                              Format::deepseek_v3, Format::harmony,     Format::gemma4};

}  // namespace

std::string_view format_name(Format f) {
  switch (f) {
    case Format::hermes: return "hermes";
    case Format::llama3_json: return "llama3_json";
    case Format::pythonic: return "pythonic";
    case Format::mistral: return "mistral";
    case Format::deepseek_v3: return "deepseek_v3";
    case Format::harmony: return "openai";  // vLLM's name for gpt-oss's parser
    case Format::gemma4: return "gemma4";
  }
  return "hermes";
}

std::string format_names() {
  std::string s;
  for (Format f : kFormats) s += (s.empty() ? "" : ", ") + std::string(format_name(f));
  return s;
}

std::optional<Format> format_from_name(std::string_view name) {
  if (name == "harmony") return Format::harmony;  // the format's own name, beside vLLM's
  for (Format f : kFormats)
    if (format_name(f) == name) return f;
  return std::nullopt;
}

std::optional<CallMarkup> call_markup(Format f) {
  // The spacing of each family's template and documentation, so a forced call reads like the model's own.
  switch (f) {
    case Format::hermes:
      return CallMarkup{"", "\n", "", "<tool_call>\n{\"name\": ", ", \"arguments\": ", "}\n</tool_call>"};
    case Format::llama3_json: return CallMarkup{"", "; ", "", "{\"name\": ", ", \"parameters\": ", "}"};
    case Format::mistral: return CallMarkup{"[TOOL_CALLS] [", ", ", "]", "{\"name\": ", ", \"arguments\": ", "}"};
    case Format::deepseek_v3:
      return CallMarkup{std::string(detail::kDsBegin),
                        "\n",
                        std::string(detail::kDsEnd),
                        std::string(detail::kDsCall) + "function" + std::string(detail::kDsSep),
                        "\n```json\n",
                        "\n```" + std::string(detail::kDsCallEnd),
                        false};
    case Format::harmony:
      // Its markers are control tokens, which the grammar spells out with
      // ordinary ones: the text reads the same. A second call follows the
      // first's <|call|> as a new assistant message.
      return CallMarkup{"",
                        "<|call|><|start|>assistant",
                        "",
                        "<|channel|>commentary to=functions.",
                        " <|constrain|>json<|message|>",
                        "",
                        false};
    case Format::pythonic:
    case Format::gemma4: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<Format> detect_format(std::string_view t) {
  // The markers each family's template writes when it renders tool calls or
  // tells the model how to call; checked most specific first. Harmony's
  // templates write every message with a channel, tools or not: gpt-oss's
  // output is read (reasoning apart) even without tools.
  if (t.find("<|channel|>") != std::string_view::npos && t.find("<|message|>") != std::string_view::npos)
    return Format::harmony;
  if (t.find("tool▁calls▁begin") != std::string_view::npos) return Format::deepseek_v3;
  if (t.find("<|tool_call>call:") != std::string_view::npos) return Format::gemma4;
  if (t.find("<tool_call>") != std::string_view::npos) return Format::hermes;
  if (t.find("[TOOL_CALLS]") != std::string_view::npos) return Format::mistral;
  if (t.find("[func_name1(") != std::string_view::npos) return Format::pythonic;
  if (t.find("<|python_tag|>") != std::string_view::npos ||
      t.find("\"parameters\": dictionary") != std::string_view::npos)
    return Format::llama3_json;
  return std::nullopt;
}

}  // namespace pagoda::toolcall
