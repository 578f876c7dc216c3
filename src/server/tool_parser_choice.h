// Which tool-call parser reads a served model's output: --tool-call-parser
// NAME (vLLM's names), or `auto`: the one whose markers the chat template in
// use writes (a --chat-template FILE, else the GGUF's tokenizer.chat_template
// and its tool_use variant); none when it names no known format. A built-in
// family (--chat-template NAME, or plain for a GGUF without a template) names
// its own layout's parser: llama3_json for llama3, hermes for the others.
#pragma once

#include <optional>
#include <string>

#include "toolcall/think.h"
#include "toolcall/tool_call_parser.h"

namespace pagoda::server {

struct ToolParserChoice {
  std::optional<toolcall::Format> format;
  std::string how;  // for logs and `pagoda info`: "hermes (auto: from the chat template)"
};

// InvalidArgument for an unknown parser name, listing the valid ones.
ToolParserChoice choose_tool_parser(const std::string& flag, const std::string& model_path,
                                    const std::optional<std::string>& template_spec);

// Which reasoning parser splits a served model's <think> output
// (toolcall/think.h): --reasoning-parser NAME (vLLM's names), none, or
// `auto`: the one the chat template announces (its <think> and </think>
// tags), none for a built-in family or a template without both. A model
// that writes harmony (`tool` is openai) keeps its reasoning in harmony's
// channels: no think parser, whatever the flag says.
struct ReasoningParserChoice {
  std::optional<toolcall::ReasoningFormat> format;
  std::string how;  // for logs: "qwen3 (auto: from the chat template)"
};

// InvalidArgument for an unknown parser name, listing the valid ones.
ReasoningParserChoice choose_reasoning_parser(const std::string& flag, const std::string& model_path,
                                              const std::optional<std::string>& template_spec,
                                              std::optional<toolcall::Format> tool);

}  // namespace pagoda::server
