// One renderer per template family, each a transcription of its real
// template's logic (see chat_template.h), including where the template
// strips whitespace, what it does with a system message, and the errors it
// raises. Tool layouts are in tool_layouts.h: chatml and llama3 render
// there; the other families render the generic layout's rewritten messages.
#include <span>

#include "chat/chat_template.h"
#include "chat/strip.h"
#include "chat/tool_layouts.h"
#include "util/error.h"

namespace pagoda {

namespace {

using Messages = std::span<const ChatMessage>;

bool is(const ChatMessage& m, std::string_view role) { return m.role == role; }

// out += a + b + ...; without the temporaries (and GCC 12's false -Wrestrict
// warnings on "literal" + std::string).
template <class... Parts>
void append(std::string& out, const Parts&... parts) {
  (out.append(std::string_view(parts)), ...);
}

// The check in the Llama 2, Mistral and Gemma templates: message i (counted
// within the turns it loops over) must be a user message exactly when i is
// even. Other roles at odd positions pass it.
void check_alternation(const ChatMessage& m, size_t i) {
  if (is(m, "user") != (i % 2 == 0))
    fail<InvalidArgument>("Conversation roles must alternate user/assistant/user/assistant/...");
}

// Llama 2 ignores add_generation_prompt: a prompt ending in [/INST] already
// asks for the assistant's turn.
std::string llama2(Messages msgs, const RenderOptions& o) {
  const bool has_system = is(msgs[0], "system");
  const Messages turns = has_system ? msgs.subspan(1) : msgs;
  std::string out;
  for (size_t i = 0; i < turns.size(); ++i) {
    const ChatMessage& m = turns[i];
    check_alternation(m, i);
    std::string content;
    if (i == 0 && has_system) append(content, "<<SYS>>\n", msgs[0].content, "\n<</SYS>>\n\n");
    content += m.content;
    if (is(m, "user"))
      append(out, o.bos_text, "[INST] ", strip_whitespace(content), " [/INST]");
    else if (is(m, "assistant"))
      append(out, " ", strip_whitespace(content), " ", o.eos_text);
    // A system message that passed the alternation check (odd position) is dropped.
  }
  return out;
}

std::string mistral(Messages msgs, const RenderOptions& o) {
  std::string out = o.bos_text;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const ChatMessage& m = msgs[i];
    check_alternation(m, i);
    if (is(m, "user"))
      append(out, "[INST] ", m.content, " [/INST]");
    else if (is(m, "assistant"))
      append(out, m.content, o.eos_text);
    else
      fail<InvalidArgument>("Only user and assistant roles are supported!");
  }
  return out;
}

// The real template has a newline after each {{ ... }} that survives Jinja's
// trim_blocks, hence the "\n" after every turn.
std::string zephyr(Messages msgs, const RenderOptions& o) {
  std::string out;
  for (const auto& m : msgs) append(out, "<|", m.role, "|>\n", m.content, o.eos_text, "\n");
  if (o.add_generation_prompt) out += "<|assistant|>\n";
  return out;
}

std::string gemma(Messages msgs, const RenderOptions& o) {
  if (is(msgs[0], "system")) fail<InvalidArgument>("System role not supported");
  std::string out = o.bos_text;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const ChatMessage& m = msgs[i];
    check_alternation(m, i);
    // A later system message passes the check and is rendered under its own role.
    const std::string_view role = is(m, "assistant") ? "model" : std::string_view(m.role);
    append(out, "<start_of_turn>", role, "\n", strip_whitespace(m.content), "<end_of_turn>\n");
  }
  if (o.add_generation_prompt) out += "<start_of_turn>model\n";
  return out;
}

// Phi-3-mini's template opens the assistant's turn after every user turn,
// whatever add_generation_prompt says, and has no place for a system message.
std::string phi3(Messages msgs, const RenderOptions& o) {
  std::string out = o.bos_text;
  for (const auto& m : msgs) {
    if (is(m, "user"))
      append(out, "<|user|>\n", m.content, "<|end|>\n<|assistant|>\n");
    else if (is(m, "assistant"))
      append(out, m.content, "<|end|>\n");
  }
  return out;
}

std::string plain(Messages msgs) {
  std::string out;
  for (size_t i = 0; i < msgs.size(); ++i) append(out, i ? "\n" : "", msgs[i].content);
  return out;
}

void check_roles(const std::vector<ChatMessage>& messages) {
  if (messages.empty()) fail<InvalidArgument>("a chat needs at least one message");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& r = messages[i].role;
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      fail<InvalidArgument>("message {}: unknown role '{}' (expected system, user, assistant or tool)", i, r);
    if (r != "assistant" && !messages[i].tool_calls.empty())
      fail<InvalidArgument>("message {}: only assistant messages have tool_calls", i);
  }
}

// A family without a tool format: its own renderer over the generic layout.
std::string generic(ChatTemplate t, Messages msgs, const RenderOptions& opts, const nlohmann::ordered_json& tools) {
  // Mistral and Gemma have no system role; Phi-3's template drops system messages.
  const bool system_role = t == ChatTemplate::llama2 || t == ChatTemplate::zephyr || t == ChatTemplate::plain;
  const std::vector<ChatMessage> rewritten = chat_tools::generic_messages(msgs, tools, system_role);
  const Messages m(rewritten);
  switch (t) {
    case ChatTemplate::llama2: return llama2(m, opts);
    case ChatTemplate::mistral: return mistral(m, opts);
    case ChatTemplate::zephyr: return zephyr(m, opts);
    case ChatTemplate::gemma: return gemma(m, opts);
    case ChatTemplate::phi3: return phi3(m, opts);
    case ChatTemplate::plain: return plain(m);
    default: break;
  }
  fail<InvalidArgument>("unknown chat template {}", int(t));
}

}  // namespace

std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages, const RenderOptions& opts,
                        const nlohmann::ordered_json& tools) {
  check_roles(messages);
  const Messages msgs(messages);
  switch (t) {
    case ChatTemplate::chatml: return chat_tools::chatml(msgs, opts, tools);
    case ChatTemplate::llama3: return chat_tools::llama3(msgs, opts, tools);
    default: return generic(t, msgs, opts, tools);
  }
}

std::string_view chat_template_tool_format(ChatTemplate t) {
  return t == ChatTemplate::llama3 ? "llama3_json" : "hermes";
}

bool starts_with_bos(std::string_view prompt, const RenderOptions& opts) {
  return !opts.bos_text.empty() && prompt.starts_with(opts.bos_text);
}

}  // namespace pagoda
