// Each split regex is a matcher: given a position in the decoded text, the
// number of code points the regex matches there (0: no match), trying the
// alternatives in order as a backtracking engine would. A split walks the
// text leftmost-first with its matcher. The scanners read ahead only within
// the piece being split, which is the "end of text" for (?!\S).
#include "tokenizer/pretokenize.h"

#include <span>

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace pagoda {
namespace {

struct Text {
  const std::vector<CodePoint>& cps;
  size_t end;  // of the piece being split
  uint32_t at(size_t i) const { return cps[i].cp; }
  bool letter(size_t i) const { return is_letter(at(i)); }
  bool number(size_t i) const { return is_number(at(i)); }
  bool space(size_t i) const { return is_whitespace(at(i)); }
  bool other(size_t i) const { return !space(i) && !letter(i) && !number(i); }  // [^\s\p{L}\p{N}]
  bool newline(size_t i) const { return at(i) == '\r' || at(i) == '\n'; }

  // The end of the run of code points from i that satisfy pred.
  template <typename Pred>
  size_t run(size_t i, Pred pred) const {
    while (i < end && pred(i)) ++i;
    return i;
  }
};

using Matcher = size_t (*)(const Text& t, size_t i);

bool ascii_lower_is(uint32_t cp, char lower, bool ignore_case) {
  return cp == uint32_t(lower) || (ignore_case && cp == uint32_t(lower - 'a' + 'A'));
}

// 's|'t|'re|'ve|'m|'ll|'d at i (which holds the apostrophe); the regexes of
// llama-bpe and qwen2 take them in any case.
size_t contraction(const Text& t, size_t i, bool ignore_case) {
  static constexpr std::string_view kSuffixes[] = {"s", "t", "re", "ve", "m", "ll", "d"};
  for (std::string_view s : kSuffixes) {
    if (i + 1 + s.size() > t.end) continue;
    bool ok = true;
    for (size_t k = 0; k < s.size() && ok; ++k) ok = ascii_lower_is(t.at(i + 1 + k), s[k], ignore_case);
    if (ok) return 1 + s.size();
  }
  return 0;
}

// \s+(?!\S)|\s+ at i, a whitespace code point: the whole run if it ends the
// text or is a single space, else all but its last code point (which then
// leads the next piece).
size_t trailing_space(const Text& t, size_t i) {
  const size_t k = t.run(i, [&](size_t j) { return t.space(j); });
  return k < t.end && k - i >= 2 ? k - 1 - i : k - i;
}

size_t match_gpt2(const Text& t, size_t i) {
  if (t.at(i) == '\'')
    if (const size_t n = contraction(t, i, false)) return n;
  const size_t j = i + (t.at(i) == ' ');  // " ?"
  if (j < t.end) {
    if (t.letter(j)) return t.run(j, [&](size_t k) { return t.letter(k); }) - i;
    if (t.number(j)) return t.run(j, [&](size_t k) { return t.number(k); }) - i;
    if (t.other(j)) return t.run(j, [&](size_t k) { return t.other(k); }) - i;
  }
  return trailing_space(t, i);  // i is whitespace here
}

template <size_t kMaxDigits>
size_t match_llama3(const Text& t, size_t i) {
  const uint32_t c = t.at(i);
  if (c == '\'')
    if (const size_t n = contraction(t, i, true)) return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  const auto letters = [&](size_t k) { return t.letter(k); };
  if (t.letter(i)) return t.run(i, letters) - i;
  if (!t.newline(i) && !t.number(i) && i + 1 < t.end && t.letter(i + 1)) return t.run(i + 1, letters) - i;
  // \p{N}{1,kMaxDigits}
  if (t.number(i)) {
    size_t k = i;
    while (k < t.end && k - i < kMaxDigits && t.number(k)) ++k;
    return k - i;
  }
  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  const size_t j = i + (c == ' ');
  if (j < t.end && t.other(j)) {
    const size_t k = t.run(j, [&](size_t m) { return t.other(m); });
    return t.run(k, [&](size_t m) { return t.newline(m); }) - i;
  }
  // \s*[\r\n]+ : through the last newline of the whitespace run, if any.
  const size_t k = t.run(i, [&](size_t m) { return t.space(m); });
  for (size_t m = k; m > i; --m)
    if (t.newline(m - 1)) return m - i;
  return trailing_space(t, i);
}

// [\p{P}\$\+<=>\^~\|]+
size_t match_punctuation(const Text& t, size_t i) {
  const auto punct = [&](size_t k) {
    const uint32_t c = t.at(k);
    return is_punctuation(c) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' ||
           c == '|';
  };
  return t.run(i, punct) - i;
}

size_t match_numbers(const Text& t, size_t i) {  // \p{N}+
  return t.run(i, [&](size_t k) { return t.number(k); }) - i;
}

size_t match_three_digits(const Text& t, size_t i) {  // [0-9][0-9][0-9]
  if (i + 3 > t.end) return 0;
  for (size_t k = i; k < i + 3; ++k)
    if (t.at(k) < '0' || t.at(k) > '9') return 0;
  return 3;
}

struct Range {
  size_t begin, end;  // code point indices
};

// Splits every range at the matches of `m`; unmatched stretches stay pieces.
std::vector<Range> split(const std::vector<CodePoint>& cps, const std::vector<Range>& in, Matcher m) {
  std::vector<Range> out;
  out.reserve(in.size());
  for (const Range& r : in) {
    const Text t{cps, r.end};
    size_t gap = r.begin;
    for (size_t i = r.begin; i < r.end;) {
      const size_t n = m(t, i);
      if (n == 0) {
        ++i;
        continue;
      }
      if (gap < i) out.push_back({gap, i});
      out.push_back({i, i + n});
      i += n;
      gap = i;
    }
    if (gap < r.end) out.push_back({gap, r.end});
  }
  return out;
}

std::span<const Matcher> matchers(PreTokenizer p) {
  static constexpr Matcher kDefault[] = {match_punctuation, match_gpt2, match_numbers, match_three_digits};
  static constexpr Matcher kGpt2[] = {match_gpt2};
  static constexpr Matcher kLlama3[] = {match_llama3<3>};
  static constexpr Matcher kQwen2[] = {match_llama3<1>};
  switch (p) {
    case PreTokenizer::Gpt2: return kGpt2;
    case PreTokenizer::Llama3: return kLlama3;
    case PreTokenizer::Qwen2: return kQwen2;
    case PreTokenizer::Default: break;
  }
  return kDefault;
}

}  // namespace

PreTokenizer pre_tokenizer_from_name(std::string_view name) {
  // The names llama.cpp treats the same way (same split, same flags).
  static constexpr std::string_view kGpt2[] = {"gpt-2",      "phi-2",    "jina-es", "jina-de", "jina-v2-es",
                                               "jina-v2-de", "gigachat", "mpt",     "olmo",    "jais",
                                               "mellum",     "exaone4",  "a.x-4.0"};
  static constexpr std::string_view kLlama3[] = {"llama-bpe", "llama3",    "llama-v3", "falcon3",
                                                 "pixtral",   "falcon-h1", "midm-2.0", "lfm2"};
  static constexpr std::string_view kQwen2[] = {"qwen2", "deepseek-r1-qwen", "kormo", "megrez", "stablelm2"};
  auto in = [&](const auto& names) {
    for (std::string_view n : names)
      if (n == name) return true;
    return false;
  };
  if (name.empty() || name == "default") return PreTokenizer::Default;
  if (in(kGpt2)) return PreTokenizer::Gpt2;
  if (in(kLlama3)) return PreTokenizer::Llama3;
  if (in(kQwen2)) return PreTokenizer::Qwen2;
  fail<Unsupported>(
      "pre-tokenizer '{}' (tokenizer.ggml.pre) is not supported (supported: default, gpt-2, llama-bpe, qwen2)", name);
}

const char* pre_tokenizer_name(PreTokenizer p) {
  switch (p) {
    case PreTokenizer::Gpt2: return "gpt-2";
    case PreTokenizer::Llama3: return "llama-bpe";
    case PreTokenizer::Qwen2: return "qwen2";
    case PreTokenizer::Default: break;
  }
  return "default";
}

std::vector<std::string_view> pre_tokenize(PreTokenizer p, std::string_view text) {
  const std::vector<CodePoint> cps = decode_code_points(text);
  std::vector<Range> ranges;
  if (!cps.empty()) ranges.push_back({0, cps.size()});
  for (Matcher m : matchers(p)) ranges = split(cps, ranges, m);
  std::vector<std::string_view> pieces;
  pieces.reserve(ranges.size());
  for (const Range& r : ranges) {
    const size_t from = cps[r.begin].offset;
    const size_t to = cps[r.end - 1].offset + cps[r.end - 1].length;
    pieces.push_back(text.substr(from, to - from));
  }
  return pieces;
}

}  // namespace pagoda
