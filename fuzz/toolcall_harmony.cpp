// libFuzzer target for gpt-oss's harmony reader (toolcall/harmony.h): calls
// on or off from the first byte, the output text pushed whole and in pieces
// of random sizes. Nothing may throw; the streamed reasoning, content and
// calls must equal the whole-text ones; a call's first delta carries its id
// and name only, later ones arguments only, and every call ends with some
// arguments text; what comes out is never longer than what went in; the
// call limit holds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_shared.h"
#include "toolcall/tool_call_parser.h"

using pagoda::fuzz::check;
namespace tc = pagoda::toolcall;

namespace {

void take(tc::ParsedOutput& out, const tc::ParseStep& step) {
  out.content += step.content;
  out.reasoning += step.reasoning;
  for (const auto& d : step.calls) {
    const bool first = d.index >= out.calls.size();
    check(d.index + (first ? 0 : 1) == out.calls.size(), "deltas in call order");
    check(first == !d.id.empty() && first == !d.name.empty() && first == d.arguments.empty(),
          "id and name first, then arguments");
    tc::apply_deltas(out.calls, {d});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool calls = data[0] & 1;
  pagoda::fuzz::Splitter split{data[1]};
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);

  tc::ParsedOutput whole;
  tc::ToolCallParser w = tc::ToolCallParser::harmony(calls);
  take(whole, w.push(text));
  take(whole, w.finish());
  tc::ToolCallParser p = tc::ToolCallParser::harmony(calls);
  tc::ParsedOutput streamed;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(text.size() - at, split.next(16));
    take(streamed, p.push(text.substr(at, n)));
    at += n;
  }
  take(streamed, p.finish());

  check(whole.content == streamed.content, "streamed content equals whole content");
  check(whole.reasoning == streamed.reasoning, "streamed reasoning equals whole reasoning");
  check(whole.calls.size() == streamed.calls.size(), "same number of calls");
  check(whole.calls.size() <= tc::kMaxCalls, "at most kMaxCalls calls");
  check(calls || whole.calls.empty(), "no calls when calls are off");
  size_t args = 0;
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    check(whole.calls[i].name == streamed.calls[i].name, "same names");
    check(whole.calls[i].arguments == streamed.calls[i].arguments, "same arguments");
    check(!whole.calls[i].id.empty() && !whole.calls[i].name.empty(), "ids and names");
    check(!whole.calls[i].arguments.empty(), "every call has arguments text");
    args += whole.calls[i].arguments.size();
  }
  // Markers are longer than the "\n" that joins two messages and the "{}" of an empty call.
  check(whole.content.size() + whole.reasoning.size() + args <= text.size(), "nothing longer than the output");
  return 0;
}
