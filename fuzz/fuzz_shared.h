// What the fuzz targets share: the shared data's folder ($PAGODA_SHARED, else
// ../shared from the working directory, as scripts/test.sh runs them) and a
// check that aborts, so libFuzzer reports the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace pagoda::fuzz {

inline std::string shared_path(const std::string& rel) {
  const char* dir = std::getenv("PAGODA_SHARED");
  return std::string(dir && *dir ? dir : "../shared") + "/" + rel;
}

inline void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "invariant broken: %s\n", what);
  std::abort();
}

// Whether s is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
inline bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len;
    unsigned cp;
    if (c < 0x80)
      len = 1, cp = c;
    else if (c >= 0xC2 && c <= 0xDF)
      len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
      len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
      len = 4, cp = c & 0x07;
    else
      return false;
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += len;
  }
  return true;
}

// A small deterministic stream of numbers from the input, for split points.
struct Splitter {
  uint32_t state;
  size_t next(size_t max) {  // in [1, max]
    state = state * 1103515245u + 12345u;
    return max == 0 ? 0 : 1 + (state >> 8) % max;
  }
};

}  // namespace pagoda::fuzz
