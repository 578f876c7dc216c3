// Reasoning parsers for models that think inside a pair of tags (<think> ...
// </think>, Gemma 4's <|channel>thought ... <channel|>) before they answer
// (vLLM's --reasoning-parser names): a streaming splitter that
// turns a chat model's decoded text into reasoning deltas and content
// deltas, shared by every API that shows reasoning apart.
//
//   qwen3        Qwen3, Qwen3.5/3.6, QwQ, SmolLM3: the output opens with
//                <think> (or the generation prompt already did, as Qwen3.5's
//                and the Thinking-2507 templates do); output that does not
//                open with it is content
//   deepseek_r1  DeepSeek-R1 and its distills: the output starts inside the
//                reasoning, with or without a <think> tag (the distills'
//                templates end the generation prompt with "<think>\n")
//   gemma4       Gemma 4: <|channel>thought\n ... <channel|>, opened by the
//                model when the template's enable_thinking put <|think|> in
//                the system turn; otherwise the generation prompt already
//                holds an empty "<|channel>thought\n<channel|>" (closed)
//
// Below, <think> and </think> stand for the format's open and close tags.
// Where the output starts (ThinkStart) comes from the rendered prompt: a
// prompt that ends with an open <think> starts inside the reasoning; one that
// ends with </think> (Qwen3's "<think>\n\n</think>\n\n" for enable_thinking
// false) has none, and the whole output is content, read no further.
//
// The reasoning is the text up to the first </think> (a later <think> or
// </think> is text: tags do not nest), without the whitespace around it;
// the content is what follows, without its leading whitespace. Output that
// ends before </think> (max_tokens) is reasoning only; a tag cut off at the
// end ("</thi") is dropped, as markup. A suffix that may begin a tag is held
// back until the next piece decides it (at most a tag's length, plus a run
// of whitespace of at most kMaxThinkSpace), so memory does not grow with
// the output, and the result does not depend on how the text is split. A
// whitespace run longer than kMaxThinkSpace is text (kept in the reasoning
// before </think>; before a qwen3 <think> it means the model is not thinking).
// Gemma 4 may end its answer with stray markup, an empty
// "<|channel>thought\n<channel|>" or a lone "<channel|>" (whitespace after it
// included); unless the prompt closed the thinking, that ending is dropped, as
// llama.cpp does (the same markup before more text is text). What may still
// become it is held back (bounded as above).
// Never throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pagoda::toolcall {

inline constexpr size_t kMaxThinkSpace = 256;

enum class ReasoningFormat { qwen3, deepseek_r1, gemma4 };

// How the prompt leaves the output: thinking may open (the model decides),
// already open, or already closed (thinking off).
enum class ThinkStart { maybe, inside, closed };

// From the rendered prompt's tail: "...<think>\n" is inside, "...</think>\n\n"
// is closed, anything else maybe (Gemma 4's tags likewise).
ThinkStart think_start_of(std::string_view prompt);

// The tags that open and close the format's reasoning.
std::string_view reasoning_open_tag(ReasoningFormat f);
std::string_view reasoning_close_tag(ReasoningFormat f);
// Whether the model may answer without thinking when the prompt leaves it
// the choice (ThinkStart::maybe): then output that does not open with the
// open tag is content. deepseek_r1 always thinks.
bool thinking_optional(ReasoningFormat f);

struct SplitStep {
  std::string reasoning;
  std::string content;
};

class ThinkSplitter {
 public:
  ThinkSplitter(ReasoningFormat format, ThinkStart start);

  SplitStep push(std::string_view piece);
  SplitStep finish();  // flushes; push() after finish() is not allowed
  // Whether the reasoning has ended (or never began): what follows is content.
  bool in_content() const { return state_ == State::content_lead || state_ == State::content; }

 private:
  enum class State { open, reason_lead, reason, content_lead, content };
  void run(SplitStep& out);
  void emit_content(SplitStep& out, std::string_view s);

  State state_;
  std::string_view open_, close_;  // the format's tags
  bool strip_tail_ = false;        // gemma4, thinking not closed: drop stray markup ending the content
  bool channel_open_ = false;      // the content so far left a <|channel> open
  bool tag_allowed_ = true;        // reason_lead: a <think> may still come (once)
  std::string buf_;                // text not decided yet
  std::string space_;              // reason: whitespace held back (it may precede </think>)
  size_t run_ = 0;                 // reason: the length of the whitespace run space_ ends
};

std::string_view reasoning_format_name(ReasoningFormat f);
// "qwen3, deepseek_r1, gemma4", for help and errors.
std::string reasoning_format_names();
std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name);
// The format a chat template's text announces: deepseek_r1 for DeepSeek's
// markers with </think>, qwen3 for a ChatML template with <think> and
// </think>, gemma4 for Gemma 4's <|channel>thought and <channel|>; nullopt
// otherwise.
std::optional<ReasoningFormat> detect_reasoning_format(std::string_view template_text);

}  // namespace pagoda::toolcall
