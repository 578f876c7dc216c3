// Code point ranges to UTF-8 byte-range sequences: split each range until
// every byte position is an independent range (the classic construction).
#include "grammar/utf8_class.h"

#include <algorithm>
#include <cctype>

#include "util/error.h"

namespace pagoda::grammar {

std::optional<uint32_t> read_hex(std::string_view s, size_t& pos, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i, ++pos) {
    if (pos >= s.size() || !std::isxdigit(uint8_t(s[pos]))) return std::nullopt;
    const char c = char(std::tolower(uint8_t(s[pos])));
    v = v * 16 + uint32_t(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return v;
}

void CodepointSet::add(uint32_t lo, uint32_t hi) {
  if (lo > hi || lo > kMax) return;
  hi = std::min(hi, kMax);
  if (lo < 0xD800 && hi >= 0xD800) {  // cut the surrogates out
    r_.push_back({lo, std::min(hi, 0xD7FFu)});
    if (hi > 0xDFFF) r_.push_back({0xE000, hi});
  } else if (lo >= 0xD800 && lo <= 0xDFFF) {
    if (hi > 0xDFFF) r_.push_back({0xE000, hi});
  } else {
    r_.push_back({lo, hi});
  }
  normalize();
}

void CodepointSet::add(const CodepointSet& o) {
  r_.insert(r_.end(), o.r_.begin(), o.r_.end());
  normalize();
}

void CodepointSet::normalize() {
  std::sort(r_.begin(), r_.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& [lo, hi] : r_) {
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.push_back({lo, hi});
  }
  r_ = std::move(out);
}

CodepointSet CodepointSet::negated() const {
  CodepointSet s;
  uint32_t next = 0;
  for (const auto& [lo, hi] : r_) {
    if (lo > next) s.add(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMax) s.add(next, kMax);
  return s;
}

CodepointSet CodepointSet::negated_union(const CodepointSet& o) const {
  CodepointSet n = negated();
  n.add(o);
  return n.negated();
}

bool CodepointSet::contains(uint32_t c) const {
  for (const auto& [lo, hi] : r_)
    if (c >= lo && c <= hi) return true;
  return false;
}

std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xF0 | (cp >> 18));
    s += char(0x80 | ((cp >> 12) & 0x3F));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

uint32_t utf8_next(const std::string& s, size_t& i, const char* what) {
  const auto c = uint8_t(s[i]);
  size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (len == 0 || i + len > s.size()) fail<InvalidArgument>("{}: invalid UTF-8 at byte {}", what, i);
  uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
  for (size_t k = 1; k < len; ++k) {
    const auto d = uint8_t(s[i + k]);
    if ((d & 0xC0) != 0x80) fail<InvalidArgument>("{}: invalid UTF-8 at byte {}", what, i);
    cp = (cp << 6) | (d & 0x3F);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    fail<InvalidArgument>("{}: invalid UTF-8 at byte {}", what, i);
  i += len;
  return cp;
}

namespace {

// Appends the byte-range sequences for [lo, hi] (same encoded length, and
// not crossing the surrogates) to out.
void split_range(uint32_t lo, uint32_t hi, std::vector<Expr>& out) {
  static constexpr uint32_t kLenMax[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (uint32_t m : kLenMax) {  // different lengths: split at the boundary
    if (lo <= m && hi > m) {
      split_range(lo, m, out);
      split_range(m + 1, hi, out);
      return;
    }
  }
  if (hi < 0x80) {
    out.push_back(Expr::byte_set(ByteSet::range(uint8_t(lo), uint8_t(hi))));
    return;
  }
  const size_t n = utf8_encode(lo).size();
  for (size_t i = 1; i < n; ++i) {  // split until each trailing position spans a full or aligned range
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_range(lo, lo | m, out);
        split_range((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split_range(lo, (hi & ~m) - 1, out);
        split_range(hi & ~m, hi, out);
        return;
      }
    }
  }
  const std::string a = utf8_encode(lo), b = utf8_encode(hi);
  std::vector<Expr> seq;
  for (size_t i = 0; i < n; ++i) seq.push_back(Expr::byte_set(ByteSet::range(uint8_t(a[i]), uint8_t(b[i]))));
  out.push_back(Expr::seq(std::move(seq)));
}

}  // namespace

Expr CodepointSet::to_expr() const {
  std::vector<Expr> alts;
  ByteSet ascii;
  for (const auto& [lo, hi] : r_) {
    if (lo < 0x80) ascii.set_range(uint8_t(lo), uint8_t(std::min(hi, 0x7Fu)));
    if (hi >= 0x80) split_range(std::max(lo, 0x80u), hi, alts);
  }
  if (!ascii.empty()) alts.insert(alts.begin(), Expr::byte_set(ascii));
  if (alts.empty()) return Expr::byte_set(ByteSet{});  // matches nothing
  return Expr::alt(std::move(alts));
}

Expr CodepointSet::json_string_expr() const {
  CodepointSet special;
  special.add(0, 0x1F);
  special.add('"', '"');
  special.add('\\', '\\');
  std::vector<Expr> alts;
  const CodepointSet plain = minus(special);
  if (!plain.empty()) alts.push_back(plain.to_expr());
  for (uint32_t c = 0; c < 0x80; ++c) {
    if (!special.contains(c) || !contains(c)) continue;
    const char* shortform = c == '"'    ? "\\\""
                            : c == '\\' ? "\\\\"
                            : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t"
                            : c == '\b' ? "\\b"
                            : c == '\f' ? "\\f"
                                        : nullptr;
    alts.push_back(Expr::literal(shortform ? std::string(shortform) : fmt::format("\\u{:04x}", c)));
  }
  if (alts.empty()) return Expr::byte_set(ByteSet{});
  return Expr::alt(std::move(alts));
}

}  // namespace pagoda::grammar
