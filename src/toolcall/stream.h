// Inside the tool-call parsers: streaming a call's arguments as they arrive.
// For the formats that write a call's name before its arguments object, the
// machine (parser.cpp) commits to a call as soon as its head (markers, name,
// the arguments' opening brace) has been read, then passes the arguments
// text on through a minifier (whitespace outside strings removed), then
// reads the call's tail (closing brackets and markers) to find where the
// call ends or where the next call of the same block begins. Every scanner
// here decides from a prefix exactly what it decides from the whole text,
// stopping at the first decisive character, so the result does not depend
// on how the output was split.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "toolcall/tool_call_parser.h"

namespace pagoda::toolcall::detail {

// A head or tail longer than this is not one (it bounds re-scanning).
inline constexpr size_t kMaxSyntax = 1024;

// What a head or tail scan found, from its start position in the call text.
struct Step {
  enum Kind { need_more, fail, commit, next, done } kind = need_more;
  size_t at = 0;       // fail: where it broke; commit: the arguments' '{'; next: the next head; done: the call's end
  std::string name;    // commit: the function's name
  bool array = false;  // commit: mistral's [{..}, {..}] form (tails may lead to another call)

  static Step of(Kind k, size_t at) {
    Step s;
    s.kind = k;
    s.at = at;
    return s;
  }
};

struct StreamSpec {
  Step (*first)(std::string_view text);                        // the first call's head, from text[0]
  Step (*head)(std::string_view text, size_t at);              // a later call's head in the same block
  Step (*tail)(std::string_view text, size_t at, bool array);  // after the arguments' closing brace
};

// nullptr: the format's calls are emitted whole (pythonic).
const StreamSpec* stream_spec_for(Format f);
// ToolCallParser::for_function: the object itself (its head names nothing).
const StreamSpec* function_stream_spec();
// ToolCallParser::for_array: [{"name": .., "parameters": {..}}, ..] (mistral's array form, bare).
const StreamSpec* array_stream_spec();

// The arguments object's text, minified as it arrives. Breaks at a
// character no JSON object can hold there (a mismatched bracket, a raw
// control character in a string, markup), or nesting beyond kMaxDepth.
class ArgsMinifier {
 public:
  enum Result { more, closed, broken };
  // Reads text from pos (advanced to after the closing brace, or to the
  // breaking character) and appends what belongs to the arguments to out.
  Result feed(std::string_view text, size_t& pos, std::string& out);

 private:
  std::vector<char> open_;  // the open brackets, outermost first
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace pagoda::toolcall::detail
