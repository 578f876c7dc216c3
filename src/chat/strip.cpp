#include "chat/strip.h"

#include <cstdint>

namespace pagoda {

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

namespace {

// Decodes the character of `len` bytes at p; 0xFFFFFFFF when the bytes are
// not one well-formed character. Overlong forms are never whitespace, and no
// whitespace character is above U+3000, so this need not reject every
// ill-formed sequence, only never mistake one for whitespace.
char32_t decode(const unsigned char* p, size_t len) {
  constexpr char32_t kBad = 0xFFFFFFFF;
  if (len == 1) return p[0] < 0x80 ? p[0] : kBad;
  for (size_t i = 1; i < len; ++i)
    if ((p[i] & 0xC0) != 0x80) return kBad;
  if (len == 2 && (p[0] & 0xE0) == 0xC0) return char32_t(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
  if (len == 3 && (p[0] & 0xF0) == 0xE0)
    return char32_t(p[0] & 0x0F) << 12 | char32_t(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
  return kBad;  // four-byte characters are all far above U+3000
}

// Length of the character starting at s[0] as its lead byte announces it.
size_t lead_length(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  return 4;
}

}  // namespace

std::string_view strip_whitespace(std::string_view s) {
  auto bytes = [&](size_t i) { return reinterpret_cast<const unsigned char*>(s.data()) + i; };
  size_t begin = 0;
  while (begin < s.size()) {
    const size_t len = lead_length(*bytes(begin));
    if (len > s.size() - begin || !is_python_space(decode(bytes(begin), len))) break;
    begin += len;
  }
  size_t end = s.size();
  while (end > begin) {
    // Step back over continuation bytes (at most two: whitespace is at most
    // three bytes long) to the start of the last character.
    size_t start = end - 1;
    while (start > begin && end - start < 3 && (*bytes(start) & 0xC0) == 0x80) --start;
    const size_t len = end - start;
    if (lead_length(*bytes(start)) != len || !is_python_space(decode(bytes(start), len))) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

}  // namespace pagoda
