// gpt-oss's output format, OpenAI's "harmony" (vLLM's parser name `openai`).
// The assistant's turn is a sequence of messages, each a header, then
// <|message|>, then its text, ended by <|end|> (another message follows),
// <|return|> (the answer is done) or <|call|> (a tool call). The generation
// prompt ends with <|start|>assistant, so the output begins in the first
// message's header:
//
//   <|channel|>analysis<|message|>THOUGHTS<|end|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER<|return|>
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>
//
// A header holds the role (right after <|start|>), <|channel|>NAME, the
// recipient (to=NAME, before or after the channel: the template writes
// `assistant to=functions.NAME<|channel|>commentary json`) and a content type
// (" json" or "<|constrain|>json"); of several channels the last counts
// (gpt-oss sometimes writes a stray <|channel|>commentary first).
//
// Where a message's text goes:
//   recipient functions.NAME     a tool call, in any channel: id and name once
//                                the header ends, then the text, without the
//                                whitespace around it, as the arguments,
//                                streamed as it arrives ("{}" when empty)
//   another recipient            reasoning: a built-in tool of the chain of
//                                thought (browser, python) the client never offered
//   channel analysis             reasoning
//   final, commentary without a recipient (a preamble, meant for the user, as
//   vLLM and llama.cpp show it), no channel: content
//   a role other than assistant  reasoning (the model writing a tool's answer itself)
// Two messages that go to one field are joined with "\n". With calls off (no
// tools, tool_choice none) or past kMaxCalls, a call's text is content.
//
// <|return|> and <|call|> end generation (they are end-of-generation tokens),
// so the output usually stops without them; the last message ends with it.
//
// Never throws on model output, and keeps what was said: output that does
// not begin like a header (a model that is not writing harmony) is content;
// text between messages is content (whitespace dropped); <|start|> or
// <|channel|> inside a message ends it (a missing <|end|>); a header longer
// than kMaxHeaderBytes or holding a byte no header has (outside printable
// ASCII) is content, from where it began; output that ends inside a header
// drops it (markup, cut off by max_tokens), inside a message keeps its text
// (a truncated call keeps the arguments streamed so far). Buffers at most one
// header and a marker's beginning, so memory does not grow with the output;
// the result does not depend on how the text is split into pieces.
#pragma once

#include <memory>
#include <string_view>

#include "toolcall/tool_call_parser.h"

namespace pagoda::toolcall {

inline constexpr size_t kMaxHeaderBytes = 1024;

class HarmonyParser {
 public:
  // calls: whether tool-call messages become calls (else content).
  explicit HarmonyParser(bool calls = true);
  ~HarmonyParser();
  HarmonyParser(HarmonyParser&&) noexcept;
  HarmonyParser& operator=(HarmonyParser&&) noexcept;

  ParseStep push(std::string_view piece);
  ParseStep finish();  // push() after finish() is not allowed
  size_t calls() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace pagoda::toolcall
