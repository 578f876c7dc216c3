// WordPiece encoding. Every step follows llama.cpp's WPM session (v0.5.0), so
// ids match llama_tokenize: its lenient UTF-8 reading, its accent stripping
// (a code point becomes the first code point of its NFD decomposition, then
// combining marks are dropped), its word splitting and its byte-wise greedy
// longest-match search.
#include "tokenizer/wpm.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace pagoda {
namespace wpm_detail {
extern const size_t kLowercaseCount;
extern const uint32_t kLowercase[][2];
extern const size_t kNfdRunCount;
extern const uint32_t kNfdRuns[][3];
}  // namespace wpm_detail

namespace {

constexpr uint32_t kReplacement = 0xFFFD;

// llama.cpp's UTF-8 reader: it checks the lead byte's length and that the
// continuation bytes are 10xxxxxx, nothing more (overlong forms and
// surrogates pass). A byte that starts no such sequence reads as U+FFFD.
std::vector<uint32_t> lenient_code_points(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  auto byte = [&](size_t i) { return uint32_t(uint8_t(s[i])); };
  auto cont = [&](size_t i) { return i < s.size() && (byte(i) & 0xC0) == 0x80; };
  for (size_t i = 0; i < s.size();) {
    const uint32_t b = byte(i);
    if (b < 0x80) {
      out.push_back(b);
      i += 1;
    } else if ((b & 0xE0) == 0xC0 && cont(i + 1)) {
      out.push_back((b & 0x1F) << 6 | (byte(i + 1) & 0x3F));
      i += 2;
    } else if ((b & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
      out.push_back((b & 0x0F) << 12 | (byte(i + 1) & 0x3F) << 6 | (byte(i + 2) & 0x3F));
      i += 3;
    } else if ((b & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      out.push_back((b & 0x07) << 18 | (byte(i + 1) & 0x3F) << 12 | (byte(i + 2) & 0x3F) << 6 | (byte(i + 3) & 0x3F));
      i += 4;
    } else {
      out.push_back(kReplacement);
      i += 1;
    }
  }
  return out;
}

// UTF-8 of any code point up to U+10FFFF, surrogates included (as llama.cpp
// writes them); false past U+10FFFF, which llama.cpp cannot write either.
bool put_utf8(uint32_t cp, std::string& out) {
  if (cp > 0x10FFFF) return false;
  if (cp < 0x80) {
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
  return true;
}

uint32_t to_lower(uint32_t cp) {
  using namespace wpm_detail;
  const auto* end = kLowercase + kLowercaseCount;
  const auto* it = std::lower_bound(kLowercase, end, cp, [](const uint32_t(&p)[2], uint32_t c) { return p[0] < c; });
  return it != end && (*it)[0] == cp ? (*it)[1] : cp;
}

uint32_t nfd_first(uint32_t cp) {
  using namespace wpm_detail;
  const auto* end = kNfdRuns + kNfdRunCount;
  // The first run starting after cp; the one before it may hold cp.
  const auto* it = std::upper_bound(kNfdRuns, end, cp, [](uint32_t c, const uint32_t(&r)[3]) { return c < r[0]; });
  if (it == kNfdRuns) return cp;
  const auto& run = *(it - 1);
  return cp <= run[1] ? run[2] : cp;
}

// \p{C} as llama.cpp's flags have it: unassigned code points (Cn) are not.
bool is_control(GeneralCategory c) {
  return c == GeneralCategory::Cc || c == GeneralCategory::Cf || c == GeneralCategory::Co || c == GeneralCategory::Cs;
}
bool is_mark(GeneralCategory c) { return c >= GeneralCategory::Mn && c <= GeneralCategory::Me; }
bool is_symbol(GeneralCategory c) { return c >= GeneralCategory::Sm && c <= GeneralCategory::So; }
bool is_punct(GeneralCategory c) { return c >= GeneralCategory::Pc && c <= GeneralCategory::Po; }

// The CJK ranges BERT splits into one-character words: Hugging Face's list,
// whose Extension E range starts at 0x2B920, not 0x2B820 (llama.cpp keeps it).
bool is_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581

// Greedy longest match over the bytes of "▁word"; all or nothing per word.
void encode_word(const Vocab& v, const std::string& word, size_t max_len, std::vector<int32_t>& out) {
  std::string w;
  w.reserve(kWordStart.size() + word.size());
  w += kWordStart;
  w += word;
  const size_t n = w.size();
  const size_t start = out.size();
  for (size_t i = 0; i < n;) {
    int32_t id = -1;
    size_t len = std::min(n - i, max_len);
    for (; len > 0; --len)
      if ((id = v.find(std::string_view(w).substr(i, len))) >= 0) break;
    if (id < 0) {
      out.resize(start);
      break;
    }
    out.push_back(id);
    i += len;
  }
  // No vocabulary piece covers the word. llama.cpp would add an id of -1
  // where a vocabulary has no unknown token; we add nothing.
  if (out.size() == start && v.unk >= 0) out.push_back(v.unk);
}

}  // namespace

VocabDefaults wpm_defaults() {
  VocabDefaults d;
  d.bos = 101;
  d.unk = 100;
  d.sep = 102;
  d.add_bos = true;
  d.add_sep = true;
  return d;
}

std::vector<std::string> wpm_words(std::string_view text, bool lowercase, bool strip_accents) {
  std::vector<std::string> words(1);
  for (uint32_t cp : lenient_code_points(text)) {
    if (strip_accents) cp = nfd_first(cp);
    if (is_whitespace(cp)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    const GeneralCategory cat = general_category(cp);
    if (cp == 0 || cp == kReplacement || is_control(cat)) continue;
    if (strip_accents && is_mark(cat)) continue;
    std::string s;
    if (!put_utf8(lowercase ? to_lower(cp) : cp, s)) continue;
    if (is_punct(cat) || (cp < 0x7F && is_symbol(cat)) || is_cjk(cp)) {
      // A word of its own, between whatever came before and after.
      if (!words.back().empty()) words.emplace_back();
      words.back() = std::move(s);
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void wpm_encode(const Vocab& v, size_t max_token_bytes, std::span<const Fragment> fragments,
                std::vector<int32_t>& out) {
  const size_t max_len = std::max<size_t>(max_token_bytes, 1);
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      continue;
    }
    for (const std::string& word : wpm_words(f.text, v.lowercase, v.strip_accents)) encode_word(v, word, max_len, out);
  }
}

std::string wpm_clean_spaces(std::string_view text) {
  // Three passes over the bytes, each compacting in place as llama.cpp's
  // detokenizer does: a later pass sees what the earlier ones left.
  std::string t(text);
  size_t total = t.size();
  if (total == 0) return t;

  size_t n = total;
  total = 1;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    t[total++] = x;
  }

  n = total;
  total = 1;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --total;
      t[++i] = '\0';  // the space after is skipped, and no longer reads as one
    }
    t[total++] = x;
  }

  n = total;
  total = 1;
  for (size_t i = 1; i < n; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      const char x1 = t[i + 1];
      const char x2 = i + 2 < n ? t[i + 2] : '\0';
      if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
    }
    t[total++] = x;
  }
  t.resize(total);
  return t;
}

}  // namespace pagoda
