// Special tokens are cut out one at a time, longest first, from whatever raw
// text is left; this is llama.cpp's order, which decides between overlapping
// candidates, so the same prompt gives the same ids.
#include "tokenizer/special_split.h"

namespace pagoda {
namespace {

// C-locale isspace, as llama.cpp strips with.
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// Appends `raw` to `out` with every occurrence of token `id` cut out.
void cut(const Vocab& v, int32_t id, std::string_view raw, std::vector<Fragment>& out) {
  const std::string& needle = v.text[id];
  const uint8_t strip = v.strip[id];
  while (!raw.empty()) {
    const size_t at = raw.find(needle);
    if (at == std::string_view::npos) break;
    std::string_view left = raw.substr(0, at);
    if (strip & Vocab::kStripLeft)
      while (!left.empty() && is_space(left.back())) left.remove_suffix(1);
    if (!left.empty()) out.push_back({-1, left});
    out.push_back({id, {}});
    raw.remove_prefix(at + needle.size());
    if (strip & Vocab::kStripRight)
      while (!raw.empty() && is_space(raw.front())) raw.remove_prefix(1);
  }
  if (!raw.empty()) out.push_back({-1, raw});
}

}  // namespace

std::vector<Fragment> split_special(const Vocab& v, std::string_view text, bool parse_special) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, text});
  std::vector<Fragment> next;
  for (const int32_t id : v.specials) {
    const TokenType t = v.type[id];
    if (!parse_special && t != TokenType::UserDefined) continue;
    next.clear();
    for (const Fragment& f : frags) {
      if (f.token >= 0)
        next.push_back(f);
      else
        cut(v, id, f.text, next);
    }
    frags.swap(next);
  }
  return frags;
}

}  // namespace pagoda
