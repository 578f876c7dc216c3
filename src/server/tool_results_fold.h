// Tool results for templates that do not read `tool` messages. Some Gemma 4
// chat templates (the earlier ones, still in many GGUF files) render a tool
// result only from the assistant message's own `tool_responses` field, as
// Google's prompt format puts results inside the model's turn; given OpenAI's
// `tool` messages they write a `<|turn>tool` turn the model never saw in
// training. For such a template the messages are folded first, as llama.cpp
// does for Gemma 4: an assistant message with tool_calls, the `tool` messages
// after it and a final assistant answer (content, no calls) become one
// assistant message with tool_calls, tool_responses [{name, response}] and
// that content (in place of the call turn's own, which such a template
// would write after the results). A result's text that parses as JSON is handed over parsed;
// its name is the call's whose id it answers (else the call at its
// position, else its tool_call_id). Gemma 4's current template reads `tool`
// messages itself (it pairs them by tool_call_id) and gets them as sent.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace pagoda::server {

// Whether the template reads results only from `tool_responses`.
bool reads_only_tool_responses(std::string_view template_text);

// The messages with each call turn's results folded into it (see above);
// messages that are not objects, and every other message, pass unchanged.
nlohmann::ordered_json fold_tool_results(const nlohmann::ordered_json& messages);

}  // namespace pagoda::server
