// Chat templates: turning an OpenAI-style list of messages into the one
// prompt string a chat model was trained on. Real templates are Jinja and are
// rendered by src/jinja (see template_source.h for how one is chosen). This
// header is the built-in families: hand-written renderers that reproduce the
// real templates of common families byte for byte (tests/chat checks them
// against @huggingface/jinja running the real texts). They serve as
// `--chat-template NAME`, and `plain` is the fallback for a GGUF without any
// tokenizer.chat_template. detect_chat_template still names the family a
// template text belongs to (for tools and tests); serving no longer needs it.
//
// Families (the name is what `--chat-template NAME` takes):
//   chatml   <|im_start|>role\n...<|im_end|>\n  (OpenHermes, Qwen; a template's
//            built-in default system prompt, as Qwen's has, is not added)
//   llama2   Llama-2-chat: <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST] ... </s>;
//            a leading system message is merged into the first user turn,
//            contents are stripped of surrounding whitespace
//   mistral  Mistral-7B-Instruct v0.1/v0.2: <s>[INST] ... [/INST]...</s>; no
//            system role (the template raises "Only user and assistant roles
//            are supported!")
//   llama3   Llama-3-Instruct: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
//            (3.1+ templates add a date/tools system header that is not rendered)
//   zephyr   zephyr-7b-beta: <|role|>\n...</s>\n
//   gemma    gemma-7b-it: <start_of_turn>user|model\n...<end_of_turn>\n; a system
//            message raises "System role not supported"
//   phi3     Phi-3-mini: <s><|user|>\n...<|end|>\n<|assistant|>\n; like the real
//            template, system messages are dropped and the generation prompt
//            is always there after a user turn
//   plain    no template: each message's content in order, joined with "\n",
//            no roles, no special tokens, nothing added for the generation
//            prompt. For models without tokenizer.chat_template (stories260K):
//            one user message renders as exactly its content.
//
// Tools (a non-empty `tools` array), assistant tool_calls and `tool` result
// messages render in the layout the family's real tool-using template uses,
// so the model sees what it was trained on (tool_layouts.h has the details):
//   chatml   Qwen2.5's: a "# Tools" system block listing the tools in
//            <tools>...</tools>, calls as <tool_call>\n{"name", "arguments"}\n
//            </tool_call>, results as <tool_response> in a user turn. Without
//            a system message the block stands alone (Qwen3's choice; Qwen2.5
//            would add its default "You are Qwen" prompt) -> parser hermes
//   llama3   Llama 3.1's JSON tool calling: the 3.1 system header
//            ("Environment: ipython", dates), the tools in the first user
//            message, calls as {"name", "parameters"}, results in ipython
//            turns; one call per assistant message -> parser llama3_json
//   others   the generic layout: an instruction listing the tools as JSON and
//            asking for <tool_call>{"name", "arguments"}</tool_call>, in the
//            system message (llama2, zephyr, plain) or the first user message
//            (mistral, gemma, phi3: no system role); calls render as that text
//            in the assistant turn, results as <tool_response> blocks in a
//            user turn -> parser hermes
//
// Where a real template raises an error (Llama 2, Mistral and Gemma demand
// user/assistant alternation: "Conversation roles must alternate
// user/assistant/user/assistant/..."), render_chat throws InvalidArgument with
// the template's own message. Everything the real template silently accepts
// (a system message in an odd position of a Llama 2 chat, which it drops)
// renders the way the template renders it.
//
// Tokenizing the result is the caller's job: encode it with parse_special =
// true, so the markers above become their special tokens, and do not add a
// BOS token when the text already starts with the BOS text (most templates
// write `bos_token` themselves; see starts_with_bos).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

class GgufFile;

enum class ChatTemplate { chatml, llama2, mistral, llama3, zephyr, gemma, phi3, plain };

struct ChatToolCall {
  std::string name;
  nlohmann::ordered_json arguments;  // an object (a string when the client's text was not JSON)
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool" (a tool's result)
  std::string content;
  std::vector<ChatToolCall> tool_calls{};  // an assistant's calls
};

struct RenderOptions {
  std::string bos_text;               // the vocabulary's BOS token text ("<s>"), "" if none
  std::string eos_text;               // the vocabulary's EOS token text ("</s>"), "" if none
  bool add_generation_prompt = true;  // end with the assistant's turn header
};

std::string_view chat_template_name(ChatTemplate t);
std::string chat_template_names();  // "chatml, llama2, ..., plain", for help and errors
// "chatml", "llama2", ... as listed above; InvalidArgument naming the valid ones.
ChatTemplate chat_template_from_name(std::string_view name);
// The same, nullopt for a name that is not a built-in family.
std::optional<ChatTemplate> find_chat_template(std::string_view name);
// The family whose distinctive markers the template text contains, or nullopt.
std::optional<ChatTemplate> detect_chat_template(std::string_view template_text);

// Renders the conversation; `tools` is null or an array of OpenAI tool
// objects (rendered as the client sent them). InvalidArgument for no
// messages, a role other than system/user/assistant/tool, tool_calls outside
// an assistant message, or an error the family's real template raises.
std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages, const RenderOptions& opts = {},
                        const nlohmann::ordered_json& tools = nullptr);

// OpenAI message objects (role, content as a string or text parts,
// tool_calls with function.name and function.arguments as an object or JSON
// text) as ChatMessages. InvalidArgument for a message without a string role
// or a tool call without a function name.
std::vector<ChatMessage> chat_messages_from_json(const nlohmann::ordered_json& messages);

// The tool-call format the family's tool layout asks the model for, by the
// parser's name (--tool-call-parser): "llama3_json" for llama3, else "hermes".
std::string_view chat_template_tool_format(ChatTemplate t);

// Whether a rendered prompt already begins with the BOS token's text.
bool starts_with_bos(std::string_view prompt, const RenderOptions& opts);

// The template for a model: override_name when given (--chat-template);
// otherwise detected from tokenizer.chat_template; plain when the file has
// no (or an empty) template. Unsupported, quoting the template's start and
// asking for --chat-template NAME, when no family matches.
ChatTemplate chat_template_for(const GgufFile& f, const std::optional<std::string>& override_name = std::nullopt);

// BOS/EOS texts from the file's vocabulary (tokenizer.ggml.tokens at
// tokenizer.ggml.bos_token_id / eos_token_id; "" where absent).
RenderOptions chat_render_options(const GgufFile& f);

}  // namespace pagoda
