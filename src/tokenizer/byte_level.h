// GPT-2's byte-level alphabet: every byte stands for one printable code point
// (bytes that are printable Latin-1 stand for themselves, the other 68 for
// U+0100 upwards, so a space is "Ġ" U+0120 and a newline "Ċ" U+010A). Byte-level
// BPE vocabularies are written in this alphabet, which lets them cover any
// byte string without byte-fallback tokens.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda {

uint32_t byte_to_code_point(uint8_t b);
int code_point_to_byte(uint32_t cp);  // -1 for a code point outside the alphabet

// Raw bytes -> their byte-level text (valid UTF-8 whatever the input).
std::string byte_level_encode(std::string_view bytes);

// Byte-level text -> the bytes it stands for. A character outside the
// alphabet (user-written text in a malformed vocabulary) is kept as it is.
std::string byte_level_decode(std::string_view text);

}  // namespace pagoda
