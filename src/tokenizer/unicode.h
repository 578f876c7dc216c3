// The Unicode facts the byte-level BPE pre-tokenizers and the WordPiece
// normalizer need: a code point's general category (\p{L}, \p{N}, \p{P}),
// White_Space (\s), and decoding text into code points that remember where
// each one came from. The category table is generated (unicode_tables.cpp,
// from tools/unicode/gen_unicode_tables.py); WordPiece's case and
// decomposition maps too (wpm_tables.cpp, tools/unicode/gen_wpm_tables.py).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace pagoda {

enum class GeneralCategory : uint8_t {
  Cn,
  Lu,
  Ll,
  Lt,
  Lm,
  Lo,
  Mn,
  Mc,
  Me,
  Nd,
  Nl,
  No,
  Pc,
  Pd,
  Ps,
  Pe,
  Pi,
  Pf,
  Po,
  Sm,
  Sc,
  Sk,
  So,
  Zs,
  Zl,
  Zp,
  Cc,
  Cf,
  Cs,
  Co,
};

// Stands for a byte that does not start a valid UTF-8 character: it belongs
// to no category (like an unassigned code point), so the pre-tokenizers keep
// it with neighbouring symbols and the byte-level encoding keeps the byte.
inline constexpr uint32_t kInvalidCodePoint = 0xFFFFFFFF;

GeneralCategory general_category(uint32_t cp);  // Cn for kInvalidCodePoint and past U+10FFFF

inline bool is_letter(uint32_t cp) {  // \p{L}
  const auto c = general_category(cp);
  return c >= GeneralCategory::Lu && c <= GeneralCategory::Lo;
}
inline bool is_number(uint32_t cp) {  // \p{N}
  const auto c = general_category(cp);
  return c >= GeneralCategory::Nd && c <= GeneralCategory::No;
}
inline bool is_punctuation(uint32_t cp) {  // \p{P}
  const auto c = general_category(cp);
  return c >= GeneralCategory::Pc && c <= GeneralCategory::Po;
}
// \s of the Hugging Face regexes: the White_Space property.
bool is_whitespace(uint32_t cp);

const char* unicode_version();  // of the category table, e.g. "14.0.0"

// One character of decoded text: its code point (kInvalidCodePoint for a
// byte that is not valid UTF-8, taken alone) and its bytes in the text.
struct CodePoint {
  uint32_t cp;
  uint32_t offset;
  uint32_t length;
};

// Decodes all of `text` (at most 4 GiB); never throws.
std::vector<CodePoint> decode_code_points(std::string_view text);

// UTF-8 bytes of a code point (U+FFFD for an invalid one).
void append_utf8(uint32_t cp, std::string& out);

}  // namespace pagoda
