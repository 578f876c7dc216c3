// The independent oracle for the chat-template tests: runs
// tests/chat/oracle/render.mjs (Node.js + @huggingface/jinja) on real template
// texts, all cases in one process, and returns what each rendered or raised.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"

namespace pagoda::testing {

struct OracleCase {
  std::string template_text;
  std::vector<ChatMessage> messages;
  RenderOptions opts;
};

struct OracleResult {
  std::optional<std::string> text;  // the rendered prompt, or nullopt when the template raised
  std::string error;                // the exception's message
};

// Throws std::runtime_error saying how to set the oracle up when node or the
// npm package is missing, or when the script fails.
std::vector<OracleResult> run_oracle(const std::vector<OracleCase>& cases);

// A template rendered with exactly these variables (apply_chat_template's
// context: messages, tools, add_generation_prompt, bos_token, ...).
struct ContextCase {
  std::string template_text;
  nlohmann::ordered_json context;
};
std::vector<OracleResult> run_oracle(const std::vector<ContextCase>& cases);

// tests/chat in the source tree, and the text of tests/chat/templates/NAME.jinja.
std::string chat_tests_dir();
std::string read_template_fixture(const std::string& name);

}  // namespace pagoda::testing
