// Character classes over Unicode code points, lowered to UTF-8 byte
// sequences for the byte-level grammar (grammar.h).
//
// Contract: a CodepointSet is a sorted list of disjoint inclusive ranges
// within [0, 0x10FFFF], surrogates (U+D800..U+DFFF) never included (they are
// not characters and have no UTF-8 form). to_expr() gives an alternative of
// byte sequences matching exactly the UTF-8 encodings of the set's members
// (ASCII members as one byte set). json_string_expr() is the same set as it
// may appear inside a JSON string: '"', '\' and U+0000..U+001F only in their
// escaped forms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace pagoda::grammar {

// The value of the n hex digits at s[pos], pos then past them; nullopt (pos
// anywhere) if they are not n hex digits. For the front ends' escapes.
std::optional<uint32_t> read_hex(std::string_view s, size_t& pos, size_t n);

class CodepointSet {
 public:
  static constexpr uint32_t kMax = 0x10FFFF;
  CodepointSet() = default;
  static CodepointSet all() {
    CodepointSet s;
    s.add(0, kMax);
    return s;
  }
  static CodepointSet one(uint32_t c) {
    CodepointSet s;
    s.add(c, c);
    return s;
  }

  void add(uint32_t lo, uint32_t hi);  // ignores surrogates and values past kMax
  void add(const CodepointSet& o);
  CodepointSet negated() const;
  CodepointSet minus(const CodepointSet& o) const { return negated_union(o); }
  bool contains(uint32_t c) const;
  bool empty() const { return r_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return r_; }

  Expr to_expr() const;
  Expr json_string_expr() const;

 private:
  CodepointSet negated_union(const CodepointSet& o) const;  // this minus o
  void normalize();
  std::vector<std::pair<uint32_t, uint32_t>> r_;
};

// The UTF-8 encoding of one code point.
std::string utf8_encode(uint32_t cp);
// Decodes the code point at s[i], advancing i; InvalidArgument naming `what` on bad UTF-8.
uint32_t utf8_next(const std::string& s, size_t& i, const char* what);

}  // namespace pagoda::grammar
