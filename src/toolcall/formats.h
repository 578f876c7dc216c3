// Inside the tool-call parsers: what differs between the formats. The
// streaming machine (parser.cpp) knows only this table: the markers that open
// a call, where a call ends, and how its text becomes calls. Each end finder
// must decide from a prefix what it decides from the whole text (the result
// may not depend on how the output was split), so it stops at the first
// decisive character.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "toolcall/tool_call_parser.h"

namespace pagoda::toolcall::detail {

struct Call {
  std::string name;
  std::string arguments;  // JSON object text (whole calls: re-written compact, keys in order)
};

// Where the text after an opening marker ends its call.
struct End {
  enum Kind { need_more, done, invalid } kind = need_more;
  size_t len = 0;  // done: the call's length; invalid: how much is certainly not a call
};

struct Marker {
  std::string_view text;
  bool keep;  // part of the call's text ("{" of llama3_json, "[" of pythonic)
};

struct Spec {
  std::vector<Marker> starts;
  bool only_at_start;          // a call only at the output's start or right after a call
  std::string_view separator;  // skipped between calls (";" of llama3_json)
  End (*end)(std::string_view text);
  // The calls in a call's text; `final`: the output ended inside it (no
  // closing marker). nullopt: not a valid call, it stays content.
  std::optional<std::vector<Call>> (*parse)(std::string_view text, bool final);
};

const Spec& spec_for(Format f);
// ToolCallParser::for_function: one object, no markers; not committed: content.
const Spec& function_spec();
// ToolCallParser::for_array: one JSON array of calls, no markers; not committed: content.
const Spec& array_spec();

// deepseek_v3's markers inside a block of calls.
inline constexpr std::string_view kDsBegin = "<｜tool▁calls▁begin｜>";
inline constexpr std::string_view kDsEnd = "<｜tool▁calls▁end｜>";
inline constexpr std::string_view kDsCall = "<｜tool▁call▁begin｜>";
inline constexpr std::string_view kDsCallEnd = "<｜tool▁call▁end｜>";
inline constexpr std::string_view kDsSep = "<｜tool▁sep｜>";

// Shared helpers.
bool depth_ok(std::string_view json_text);  // bracket nesting within kMaxDepth
// A JSON object's text -> compact JSON, or nullopt (not JSON, not an object, too deep).
std::optional<std::string> object_text(std::string_view json_text);
// A call object {"name": .., <args_key>: {..} or "{..}"}; nullopt if not one.
std::optional<Call> call_from_json(std::string_view json_text);
// Scans a balanced bracket group starting at text[0] (an opening bracket);
// strings in "..." (and '...' if python) are skipped.
End balanced(std::string_view text, bool python);
// pythonic.cpp: "[f(a=1), g()]" -> calls.
std::optional<std::vector<Call>> parse_pythonic(std::string_view text, bool final);
// gemma4.cpp: where "call:NAME{..}<tool_call|>" ends (the marker outside
// <|"|> strings), and the call it holds, its arguments as JSON.
End gemma4_end(std::string_view text);
std::optional<std::vector<Call>> parse_gemma4(std::string_view text, bool final);

}  // namespace pagoda::toolcall::detail
