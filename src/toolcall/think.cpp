#include "toolcall/think.h"

#include <algorithm>
#include <utility>

namespace pagoda::toolcall {
namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";
// Gemma 4's: control tokens in its vocabulary, decoded as this text.
constexpr std::string_view kGemmaOpen = "<|channel>thought", kGemmaClose = "<channel|>";

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t leading_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && space(s[n])) ++n;
  return n;
}

size_t trailing_space(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && space(s[s.size() - 1 - n])) ++n;
  return n;
}

constexpr std::string_view kChannel = "<|channel>";

// Gemma 4 may end its answer with markup: an empty "<|channel>thought\n<channel|>"
// or a lone "<channel|>" (llama.cpp drops both; `lone`: no <|channel> before it
// in the content is left open). Whether `s` (from a '<') is such an ending,
// whitespace after it included (whole), may still become one (partial), or is
// not one (no: final, more text cannot make it one).
enum class Tail { no, partial, whole };
Tail stray_tail(std::string_view s, bool lone) {
  constexpr std::string_view kThought = "thought";
  auto lit = [&](std::string_view l) {  // 1: matched (and consumed), 0: s ends inside it, -1: mismatch
    if (s.starts_with(l)) return s.remove_prefix(l.size()), 1;
    return l.starts_with(s) ? 0 : -1;
  };
  auto space_run = [&] {
    const size_t n = leading_space(s);
    s.remove_prefix(n);
    return n <= kMaxThinkSpace;
  };
  if (s.starts_with(kChannel)) {
    s.remove_prefix(kChannel.size());
    if (const int t = lit(kThought); t == 0 && !s.empty()) return Tail::partial;
    if (!space_run()) return Tail::no;
    if (s.empty()) return Tail::partial;
  } else if (kChannel.starts_with(s)) {
    return Tail::partial;
  } else if (!lone) {
    // It closes the channel the content opened: text, held until whole (the
    // content's markers must go out whole to keep track of what is open).
    return s.size() < kGemmaClose.size() && kGemmaClose.starts_with(s) ? Tail::partial : Tail::no;
  }
  const int c = lit(kGemmaClose);
  if (c <= 0) return c == 0 ? Tail::partial : Tail::no;
  if (!space_run() || !s.empty()) return Tail::no;
  return Tail::whole;
}

// The longest suffix of s that is a proper prefix of tag: it may become the tag.
size_t partial_tag(std::string_view s, std::string_view tag) {
  for (size_t k = std::min(s.size(), tag.size() - 1); k > 0; --k)
    if (s.ends_with(tag.substr(0, k))) return k;
  return 0;
}

}  // namespace

ThinkStart think_start_of(std::string_view prompt) {
  prompt.remove_suffix(trailing_space(prompt));
  if (prompt.ends_with(kOpen) || prompt.ends_with(kGemmaOpen)) return ThinkStart::inside;
  if (prompt.ends_with(kClose) || prompt.ends_with(kGemmaClose)) return ThinkStart::closed;
  return ThinkStart::maybe;
}

std::string_view reasoning_open_tag(ReasoningFormat f) { return f == ReasoningFormat::gemma4 ? kGemmaOpen : kOpen; }
std::string_view reasoning_close_tag(ReasoningFormat f) { return f == ReasoningFormat::gemma4 ? kGemmaClose : kClose; }
bool thinking_optional(ReasoningFormat f) { return f != ReasoningFormat::deepseek_r1; }

ThinkSplitter::ThinkSplitter(ReasoningFormat format, ThinkStart start)
    : open_(reasoning_open_tag(format)),
      close_(reasoning_close_tag(format)),
      strip_tail_(format == ReasoningFormat::gemma4 && start != ThinkStart::closed) {
  if (start == ThinkStart::closed)
    state_ = State::content;  // thinking is off: nothing to read
  else if (start == ThinkStart::maybe && thinking_optional(format))
    state_ = State::open;
  else
    state_ = State::reason_lead;  // R1 starts thinking with or without the tag
}

void ThinkSplitter::run(SplitStep& out) {
  for (;;) {
    switch (state_) {
      case State::open: {
        const size_t ws = leading_space(buf_);
        const std::string_view rest = std::string_view(buf_).substr(ws);
        if (ws < kMaxThinkSpace && rest.starts_with(open_)) {
          buf_.erase(0, ws + open_.size());
          state_ = State::reason_lead;
          tag_allowed_ = false;
          continue;
        }
        if (ws < kMaxThinkSpace && open_.starts_with(rest)) return;  // undecided yet
        state_ = State::content;                                     // not thinking: all of it is content
        continue;
      }
      case State::reason_lead: {
        buf_.erase(0, leading_space(buf_));
        if (buf_.empty()) return;
        if (tag_allowed_ && std::string_view(buf_).starts_with(open_)) {
          buf_.erase(0, open_.size());
          tag_allowed_ = false;
          continue;
        }
        if (tag_allowed_ && open_.starts_with(buf_)) return;
        state_ = State::reason;
        continue;
      }
      case State::reason: {
        const size_t at = buf_.find(close_);
        if (at != std::string::npos) {
          const std::string_view before = std::string_view(buf_).substr(0, at);
          const size_t t = trailing_space(before);
          const size_t total = t == before.size() ? run_ + t : t;
          if (total > kMaxThinkSpace) {  // too long to be the gap before the tag: text
            out.reasoning += space_;
            out.reasoning += before;
          } else if (t < before.size()) {
            out.reasoning += space_;
            out.reasoning += before.substr(0, before.size() - t);
          }
          space_.clear();
          run_ = 0;
          buf_.erase(0, at + close_.size());
          state_ = State::content_lead;
          continue;
        }
        const size_t keep = partial_tag(buf_, close_);
        const std::string_view body = std::string_view(buf_).substr(0, buf_.size() - keep);
        const size_t t = trailing_space(body);
        if (t == body.size()) {
          space_ += body;
          run_ += t;
        } else {
          out.reasoning += space_;
          out.reasoning += body.substr(0, body.size() - t);
          space_ = body.substr(body.size() - t);
          run_ = t;
        }
        if (run_ > kMaxThinkSpace) out.reasoning += std::exchange(space_, {});
        buf_.erase(0, body.size());
        return;
      }
      case State::content_lead:
        buf_.erase(0, leading_space(buf_));
        if (buf_.empty()) return;
        state_ = State::content;
        continue;
      case State::content: {
        // Gemma 4: hold back what may be stray markup ending the answer (bounded: a
        // tag, "thought" and two whitespace runs of at most kMaxThinkSpace).
        // Each '<' is judged with what the content before it left open.
        size_t from = 0;
        if (strip_tail_)
          for (size_t at = buf_.find('<'); at != std::string::npos; at = buf_.find('<', at + 1)) {
            emit_content(out, std::string_view(buf_).substr(from, at - from));
            from = at;
            if (stray_tail(std::string_view(buf_).substr(at), !channel_open_) != Tail::no) {
              buf_.erase(0, from);
              return;
            }
          }
        emit_content(out, std::string_view(buf_).substr(from));
        buf_.clear();
        return;
      }
    }
  }
}

// A piece of content out; it holds any marker whole (a marker has one '<',
// and a piece ends before a '<' or at the end of what was decided).
void ThinkSplitter::emit_content(SplitStep& out, std::string_view s) {
  const size_t open = s.rfind(kChannel), close = s.rfind(kGemmaClose);
  if (open != std::string_view::npos && (close == std::string_view::npos || open > close))
    channel_open_ = true;
  else if (close != std::string_view::npos)
    channel_open_ = false;
  out.content += s;
}

SplitStep ThinkSplitter::push(std::string_view piece) {
  SplitStep out;
  buf_ += piece;
  run(out);
  return out;
}

SplitStep ThinkSplitter::finish() {
  SplitStep out;
  run(out);
  // Whitespace, or what may still open <think>: the model's answer as written.
  if (state_ == State::open) out.content += buf_;
  // Held content: Gemma 4's stray markup at the end is dropped; anything else is text.
  if (state_ == State::content && stray_tail(buf_, !channel_open_) != Tail::whole) out.content += buf_;
  // Elsewhere what is held is a cut-off tag (markup) or the whitespace before it.
  buf_.clear();
  space_.clear();
  return out;
}

std::string_view reasoning_format_name(ReasoningFormat f) {
  switch (f) {
    case ReasoningFormat::qwen3: return "qwen3";
    case ReasoningFormat::deepseek_r1: return "deepseek_r1";
    case ReasoningFormat::gemma4: return "gemma4";
  }
  return "qwen3";
}

std::string reasoning_format_names() { return "qwen3, deepseek_r1, gemma4"; }

std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name) {
  for (auto f : {ReasoningFormat::qwen3, ReasoningFormat::deepseek_r1, ReasoningFormat::gemma4})
    if (reasoning_format_name(f) == name) return f;
  return std::nullopt;
}

std::optional<ReasoningFormat> detect_reasoning_format(std::string_view t) {
  // Gemma 4's template writes both tags (the empty thought of thinking off, and
  // the thought it keeps before tool calls); Gemma 3's has neither.
  if (t.find(kGemmaOpen) != std::string_view::npos && t.find(kGemmaClose) != std::string_view::npos)
    return ReasoningFormat::gemma4;
  if (t.find(kClose) == std::string_view::npos) return std::nullopt;
  if (t.find("<\xEF\xBD\x9C"
             "Assistant\xEF\xBD\x9C>") != std::string_view::npos)  // <｜Assistant｜>
    return ReasoningFormat::deepseek_r1;
  if (t.find(kOpen) != std::string_view::npos && t.find("<|im_start|>") != std::string_view::npos)
    return ReasoningFormat::qwen3;
  return std::nullopt;
}

}  // namespace pagoda::toolcall
