// UTF-8 helpers for the tokenizer: splitting input text into characters the
// way SentencePiece does, and checking the bytes a model produced before they
// reach a user (invalid sequences become U+FFFD, nothing throws).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the character announced by a lead byte, judged from its high
// nibble only (continuation or invalid bytes count as 1). The encoders split
// text with this so that even malformed input is cut into byte runs that the
// byte fallback can represent.
inline size_t utf8_lead_len(uint8_t lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

enum class Utf8Status {
  Complete,    // a whole valid character of `length` bytes
  Incomplete,  // a valid start that the bytes end before completing
  Invalid,     // `length` bytes (the maximal invalid subpart) to replace with one U+FFFD
};

struct Utf8Scan {
  Utf8Status status;
  size_t length;
};

// Strictly validates (RFC 3629: no overlongs, surrogates or code points past
// U+10FFFF) the character at the start of the non-empty `s`.
Utf8Scan utf8_scan(std::string_view s);

// Appends the whole characters at the start of `bytes` to `out`, each invalid
// subpart as one U+FFFD. An incomplete character at the very end is left
// unconsumed unless `final` (then it becomes U+FFFD too). Returns the number
// of bytes consumed.
size_t utf8_sanitize_append(std::string_view bytes, bool final, std::string& out);

// The whole of `bytes` as valid UTF-8.
std::string utf8_sanitize(std::string_view bytes);

}  // namespace pagoda
