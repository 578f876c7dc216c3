// A chat request body -> the prompt it renders to: the one path that
// /v1/chat/completions, /tokenize (with "messages") and /apply-template share,
// so a prompt counted or shown by one is the prompt the other generates from.
//
// Reads `messages` (each an object with a string role; content a string, null
// or text parts, joined; "developer" is the system role), `tools`,
// `add_generation_prompt` (default true), `chat_template` (a per-request Jinja
// template, vLLM's) and `chat_template_kwargs`. A bad value is a 400 naming
// its field; what the template refuses is a 400 on `messages`.
#pragma once

#include <nlohmann/json.hpp>

#include "server/chat_prompt.h"

namespace pagoda {
class Tokenizer;
}

namespace pagoda::server {

ChatRenderRequest chat_render_request(const nlohmann::json& body);

RenderedPrompt render_chat_body(const nlohmann::json& body, const ChatPrompt& chat, const Tokenizer& tok);

}  // namespace pagoda::server
