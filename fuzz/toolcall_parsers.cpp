// libFuzzer target for the tool-call parsers: a format (or a named
// function's parser, or required's array parser) from the first byte, the output text pushed whole and
// in pieces of random sizes. Nothing may throw; the
// streamed result must equal the whole-text result; a call's first delta
// carries its id and name only, later ones arguments only; every call's
// arguments begin as a JSON object (a committed call cut off where it broke
// keeps only its beginning); the limits hold.
#include <nlohmann/json.hpp>

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
  for (const auto& d : step.calls) {
    const bool first = d.index >= out.calls.size();
    check(d.index + (first ? 0 : 1) == out.calls.size(), "deltas in call order");
    check(first == !d.id.empty() && first == !d.name.empty() && first == d.arguments.empty(),
          "id and name first, then arguments");
    tc::apply_deltas(out.calls, {d});
  }
}

// A format's parser (0-4), or (selector 5) one for a named function, (6) for
// required's array, (7) gemma4's. Harmony has a target of its own.
tc::ToolCallParser parser(uint8_t selector) {
  if (selector % 8 == 5) return tc::ToolCallParser::for_function(tc::Format::hermes, "f");
  if (selector % 8 == 6) return tc::ToolCallParser::for_array(tc::Format::hermes);
  if (selector % 8 == 7) return tc::ToolCallParser(tc::Format::gemma4);
  return tc::ToolCallParser(static_cast<tc::Format>(selector % 8));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  pagoda::fuzz::Splitter split{data[1]};
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);

  tc::ParsedOutput whole;
  tc::ToolCallParser w = parser(data[0]);
  take(whole, w.push(text));
  take(whole, w.finish());
  tc::ToolCallParser p = parser(data[0]);
  tc::ParsedOutput streamed;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(text.size() - at, split.next(16));
    take(streamed, p.push(text.substr(at, n)));
    at += n;
  }
  take(streamed, p.finish());

  check(whole.content == streamed.content, "streamed content equals whole content");
  check(whole.calls.size() == streamed.calls.size(), "same number of calls");
  check(whole.calls.size() <= tc::kMaxCalls, "at most kMaxCalls calls");
  check(whole.content.size() <= text.size(), "content is never longer than the output");
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    check(whole.calls[i].name == streamed.calls[i].name, "same names");
    check(whole.calls[i].arguments == streamed.calls[i].arguments, "same arguments");
    check(!whole.calls[i].id.empty() && !whole.calls[i].name.empty(), "ids and names");
    check(whole.calls[i].arguments.starts_with("{"), "arguments begin as a JSON object");
    if (whole.calls[i].arguments.ends_with("}")) {
      const auto args = nlohmann::json::parse(whole.calls[i].arguments, nullptr, false);
      check(args.is_discarded() || args.is_object(), "closed arguments are an object");
    }
  }
  return 0;
}
