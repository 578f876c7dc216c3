// UTF-8 validation following the Unicode "maximal subpart" practice, so a
// stream of model bytes is replaced the same way whatever way it is cut.
#include "tokenizer/utf8.h"

namespace pagoda {

Utf8Scan utf8_scan(std::string_view s) {
  const uint8_t b0 = uint8_t(s[0]);
  if (b0 < 0x80) return {Utf8Status::Complete, 1};

  // Number of continuation bytes, and the allowed range of the first one
  // (narrower after E0, ED, F0 and F4 to exclude overlongs, surrogates and
  // values above U+10FFFF).
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {Utf8Status::Invalid, 1};  // a stray continuation byte, C0, C1 or F5..FF
  }

  for (size_t i = 1; i <= need; ++i) {
    if (i >= s.size()) return {Utf8Status::Incomplete, s.size()};
    const uint8_t b = uint8_t(s[i]);
    if (b < lo || b > hi) return {Utf8Status::Invalid, i};
    lo = 0x80;
    hi = 0xBF;
  }
  return {Utf8Status::Complete, need + 1};
}

size_t utf8_sanitize_append(std::string_view bytes, bool final, std::string& out) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const Utf8Scan c = utf8_scan(bytes.substr(pos));
    if (c.status == Utf8Status::Incomplete && !final) break;
    if (c.status == Utf8Status::Complete)
      out.append(bytes.substr(pos, c.length));
    else
      out.append(kReplacementChar);
    pos += c.length;
  }
  return pos;
}

std::string utf8_sanitize(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  utf8_sanitize_append(bytes, /*final=*/true, out);
  return out;
}

}  // namespace pagoda
