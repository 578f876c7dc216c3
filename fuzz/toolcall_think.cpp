// libFuzzer target for the reasoning splitter (toolcall/think.h): the
// format (bit 7 set: gemma4; else bit 0: deepseek_r1 or qwen3) and the
// prompt's state from the first byte, the output text pushed
// whole and in pieces of random sizes. Nothing may throw; the streamed
// reasoning and content must equal the whole-text ones; a closed prompt
// gives the text back as content; nothing comes out longer than went in;
// content never precedes reasoning.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_shared.h"
#include "toolcall/think.h"

using pagoda::fuzz::check;
namespace tc = pagoda::toolcall;

namespace {

struct Out {
  std::string reasoning, content;
  bool content_seen = false;
};

void take(Out& out, const tc::SplitStep& s) {
  check(s.reasoning.empty() || !out.content_seen, "no reasoning after content");
  out.reasoning += s.reasoning;
  out.content += s.content;
  out.content_seen |= !s.content.empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto format = (data[0] & 0x80) ? tc::ReasoningFormat::gemma4
                      : (data[0] & 1)  ? tc::ReasoningFormat::deepseek_r1
                                       : tc::ReasoningFormat::qwen3;
  const auto start = static_cast<tc::ThinkStart>(((data[0] & 0x7f) >> 1) % 3);
  pagoda::fuzz::Splitter split{data[1]};
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);

  tc::ThinkSplitter w(format, start);
  Out whole;
  take(whole, w.push(text));
  take(whole, w.finish());
  tc::ThinkSplitter p(format, start);
  Out streamed;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(text.size() - at, split.next(16));
    take(streamed, p.push(text.substr(at, n)));
    at += n;
  }
  take(streamed, p.finish());

  check(whole.reasoning == streamed.reasoning, "streamed reasoning equals whole reasoning");
  check(whole.content == streamed.content, "streamed content equals whole content");
  check(whole.reasoning.size() + whole.content.size() <= text.size(), "nothing longer than the output");
  if (start == tc::ThinkStart::closed) check(whole.content == text && whole.reasoning.empty(), "closed: all content");
  return 0;
}
