// The mapping is built once: the printable bytes map to themselves and the
// rest, in byte order, to U+0100, U+0101 ... as GPT-2's bytes_to_unicode does.
#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace pagoda {
namespace {

struct Tables {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // indexed by code point; the alphabet ends at U+0143
  Tables() {
    to_byte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_cp[b] = printable ? uint32_t(b) : next++;
      to_byte[to_cp[b]] = int16_t(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_to_code_point(uint8_t b) { return tables().to_cp[b]; }

int code_point_to_byte(uint32_t cp) { return cp < tables().to_byte.size() ? tables().to_byte[cp] : -1; }

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(byte_to_code_point(uint8_t(c)), out);
  return out;
}

std::string byte_level_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const CodePoint& c : decode_code_points(text)) {
    const int b = c.cp == kInvalidCodePoint ? -1 : code_point_to_byte(c.cp);
    if (b >= 0)
      out += char(b);
    else
      out.append(text.substr(c.offset, c.length));
  }
  return out;
}

}  // namespace pagoda
