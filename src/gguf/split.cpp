#include "gguf/split.h"

#include <fmt/format.h>

namespace pagoda {
namespace {

// Five decimal digits at s[pos..pos+5), or -1.
int five_digits(std::string_view s, size_t pos) {
  if (pos + 5 > s.size()) return -1;
  int v = 0;
  for (size_t i = pos; i < pos + 5; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

}  // namespace

std::optional<SplitName> parse_split_name(std::string_view path) {
  // "-NNNNN-of-MMMMM.gguf" is 20 characters; a name needs at least one more.
  constexpr std::string_view kOf = "-of-", kExt = ".gguf";
  constexpr size_t kTail = 1 + 5 + 4 + 5 + 5;
  if (path.size() <= kTail) return std::nullopt;
  const size_t at = path.size() - kTail;
  if (path[at] != '-' || path.substr(at + 6, 4) != kOf || path.substr(path.size() - 5) != kExt) return std::nullopt;
  const int no = five_digits(path, at + 1), count = five_digits(path, at + 10);
  if (no < 1 || count < 1 || no > count) return std::nullopt;
  const std::string_view prefix = path.substr(0, at);
  if (prefix.empty() || prefix.back() == '/') return std::nullopt;
  return SplitName{std::string(prefix), no, count};
}

std::string split_name(const std::string& prefix, int no, int count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, no, count);
}

}  // namespace pagoda
