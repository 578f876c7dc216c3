// Category lookup by binary search over the generated runs (about 4000), with
// a table for Latin-1 where most text lives.
#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <string>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace unicode_detail {
extern const char kUnicodeVersion[];
extern const size_t kCategoryRunCount;
extern const uint32_t kCategoryRuns[];
}  // namespace unicode_detail

namespace {

GeneralCategory lookup(uint32_t cp) {
  using namespace unicode_detail;
  const uint32_t key = (cp << 8) | 0xFF;
  const uint32_t* end = kCategoryRuns + kCategoryRunCount;
  const uint32_t* it = std::upper_bound(kCategoryRuns, end, key);  // first run starting after cp
  return GeneralCategory(it == kCategoryRuns ? 0 : (*(it - 1) & 0xFF));
}

const std::array<GeneralCategory, 256>& latin1() {
  static const std::array<GeneralCategory, 256> table = [] {
    std::array<GeneralCategory, 256> t{};
    for (uint32_t cp = 0; cp < 256; ++cp) t[cp] = lookup(cp);
    return t;
  }();
  return table;
}

}  // namespace

GeneralCategory general_category(uint32_t cp) {
  if (cp < 256) return latin1()[cp];
  if (cp > 0x10FFFF) return GeneralCategory::Cn;
  return lookup(cp);
}

bool is_whitespace(uint32_t cp) {
  // White_Space (PropList.txt): stable since Unicode 6.3, too small for a table.
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

const char* unicode_version() { return unicode_detail::kUnicodeVersion; }

std::vector<CodePoint> decode_code_points(std::string_view text) {
  std::vector<CodePoint> out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Scan c = utf8_scan(text.substr(pos));
    if (c.status != Utf8Status::Complete) {
      out.push_back({kInvalidCodePoint, uint32_t(pos), 1});
      ++pos;
      continue;
    }
    const auto* p = reinterpret_cast<const uint8_t*>(text.data() + pos);
    uint32_t cp;
    switch (c.length) {
      case 1: cp = p[0]; break;
      case 2: cp = (p[0] & 0x1Fu) << 6 | (p[1] & 0x3Fu); break;
      case 3: cp = (p[0] & 0x0Fu) << 12 | (p[1] & 0x3Fu) << 6 | (p[2] & 0x3Fu); break;
      default: cp = (p[0] & 0x07u) << 18 | (p[1] & 0x3Fu) << 12 | (p[2] & 0x3Fu) << 6 | (p[3] & 0x3Fu); break;
    }
    out.push_back({cp, uint32_t(pos), uint32_t(c.length)});
    pos += c.length;
  }
  return out;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    out += kReplacementChar;
  } else if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

}  // namespace pagoda
