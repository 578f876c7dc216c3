// Tool-call parsers: a chat model's raw output text -> the content a client
// sees plus OpenAI tool calls, in the formats real models emit, under vLLM's
// parser names:
//   hermes       <tool_call>{"name": N, "arguments": {..}}</tool_call>, any number,
//                anywhere (Qwen2.5/Qwen3, Hermes)
//   llama3_json  {"name": N, "parameters": {..}} at the start of the output,
//                optionally after <|python_tag|>, several separated by ';' (Llama 3.x)
//   pythonic     [f(a=1, b="x"), g()] at the start of the output (Llama 3.2/4)
//   mistral      [TOOL_CALLS][{"name": N, "arguments": {..}}, ..] or the newer
//                [TOOL_CALLS]N[ARGS]{..} (one per marker)
//   deepseek_v3  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>N
//                \n```json\n{..}\n```<｜tool▁call▁end｜>..<｜tool▁calls▁end｜>
//   openai       gpt-oss's harmony messages (harmony.h): <|channel|>analysis<|message|>..
//                is reasoning, final is content, commentary to=functions.N
//                <|constrain|>json<|message|>{..} a call; also named `harmony`
//   gemma4       <|tool_call>call:N{key:<|"|>text<|"|>,n:1,o:{..},a:[..]}<tool_call|>,
//                any number, anywhere (Gemma 4): its own object syntax, turned
//                into JSON
//
// Streaming: push() text pieces as they are generated, finish() at the end.
// Each returns the content that is safe to show now (text that cannot be the
// start of a call) and call deltas: per call first {index, id, name, ""},
// then pieces of its arguments' JSON text, as OpenAI streams them. In every
// format but pythonic and gemma4 a call is COMMITTED once its name and the opening brace
// of its arguments object have been read (hermes, llama3_json and mistral's
// array form need "name" before "arguments"/"parameters"; otherwise the call
// is emitted whole once complete, as pythonic's and gemma4's always are). The arguments
// text is the model's own object text with whitespace outside strings
// removed, passed on as it arrives. Before commit a malformed call turns back
// into plain content. After commit a call stays a call: if its text turns
// out malformed (a bracket that does not match, markup inside the
// arguments, a wrong closing marker, nesting beyond kMaxDepth, beyond
// kMaxCallBytes) it keeps the arguments streamed so far and its text from
// the point it broke is content again; if the output ends inside it
// (max_tokens), it keeps what was streamed. parse_all() is the same machine,
// so the result is the same however the text is split into pieces.
//
// Never throws on model output: a call that does not parse (bad JSON, no
// name, arguments not an object) before commit stays content, text and all.
// Limits: at most kMaxCalls calls (later ones stay content) and
// kMaxCallBytes buffered for one call (beyond that it is content); JSON
// nested deeper than kMaxDepth is not parsed. Whitespace between and after
// calls is dropped.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::toolcall {

inline constexpr size_t kMaxCalls = 64;
inline constexpr size_t kMaxCallBytes = 64 * 1024;
inline constexpr int kMaxDepth = 64;

enum class Format { hermes, llama3_json, pythonic, mistral, deepseek_v3, harmony, gemma4 };

// One piece of one call: id and name only in a call's first delta.
struct CallDelta {
  size_t index = 0;
  std::string id;         // "call_..." (mistral: 9 letters/digits, as its templates demand)
  std::string name;       // the function's name
  std::string arguments;  // a piece of the arguments' JSON text
};

struct ParseStep {
  std::string content;
  std::string reasoning;  // the chain of thought apart (harmony's analysis channel); "" for the other formats
  std::vector<CallDelta> calls;
};

// A whole call, as a non-streaming response holds it.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text of an object
};

class HarmonyParser;  // harmony.h

class ToolCallParser {
 public:
  explicit ToolCallParser(Format format);
  // Format::harmony's parser; `calls` false: tool-call messages are content
  // (a request without tools, or tool_choice none), reasoning stays apart.
  static ToolCallParser harmony(bool calls);
  // tool_choice naming a function: the whole output is that function's
  // arguments object, committed at its '{' and streamed as it arrives (ids
  // as `format`'s). Output that does not begin with '{' is content.
  static ToolCallParser for_function(Format format, std::string name);
  // tool_choice "required" with no known format (vLLM's form): the whole
  // output is a JSON array of {"name": N, "parameters": {..}} objects
  // ("arguments" also read), each committed at its arguments' '{' and
  // streamed as it arrives (ids as `format`'s). Not committed: content.
  static ToolCallParser for_array(Format format);
  ~ToolCallParser();
  ToolCallParser(ToolCallParser&&) noexcept;
  ToolCallParser& operator=(ToolCallParser&&) noexcept;

  ParseStep push(std::string_view piece);
  ParseStep finish();    // flushes; push() after finish() is not allowed
  size_t calls() const;  // calls emitted so far

 private:
  struct State;
  std::unique_ptr<State> s_;
  std::unique_ptr<HarmonyParser> h_;  // Format::harmony: a machine of its own, s_ unused
};

// A whole output at once: its content, reasoning and calls.
struct ParsedOutput {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> calls;
};
ParsedOutput parse_all(Format format, std::string_view text);
// Deltas folded into whole calls (by index), as a client would assemble them.
void apply_deltas(std::vector<ToolCall>& calls, const std::vector<CallDelta>& deltas);

// How a format writes calls, to force them with a grammar: begin, then each
// call as head_before + NAME + head_after, its arguments object, tail; calls
// joined by separator; then end. NAME is a JSON string when quote_name.
// nullopt: pythonic and gemma4 (their arguments are not JSON): a forced
// choice then uses the JSON array form (ToolCallParser::for_array).
struct CallMarkup {
  std::string begin, separator, end;
  std::string head_before, head_after, tail;
  bool quote_name = true;
};
std::optional<CallMarkup> call_markup(Format f);

std::string_view format_name(Format f);
std::string format_names();  // "hermes, llama3_json, ...", for help and errors
// The format a vLLM parser name means; nullopt for an unknown name.
std::optional<Format> format_from_name(std::string_view name);
// The format a chat template's text announces (its call markers), or nullopt.
std::optional<Format> detect_format(std::string_view template_text);

}  // namespace pagoda::toolcall
