// The bigram merge: start from UTF-8 characters, repeatedly join the adjacent
// pair whose concatenation is the highest-scoring token (ties: leftmost), then
// emit each final symbol as its token or, failing that, as byte tokens.
// Symbols form a linked list over the text and candidate pairs sit in a
// priority queue; entries made stale by an earlier merge are skipped when
// popped, so the whole is O(n log n).
#include "tokenizer/spm.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <string>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

struct Symbol {
  uint32_t start;
  uint32_t len;  // 0 once merged into the symbol on its left
  int32_t prev;
  int32_t next;  // -1 at the ends
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t len;  // of the joined text, to recognise stale entries
};

// std::priority_queue pops the greatest: highest score, then leftmost.
struct Lower {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

// Only pieces a SentencePiece model can produce from text take part in
// merges: never control, byte, unknown or unused tokens.
int32_t find_mergeable(const Vocab& v, std::string_view s) {
  const int32_t id = v.find(s);
  if (id < 0) return -1;
  const TokenType t = v.type[id];
  return t == TokenType::Normal || t == TokenType::UserDefined ? id : -1;
}

class Merger {
 public:
  Merger(const Vocab& v, std::string_view text) : v_(v), text_(text) {}

  void run(std::vector<int32_t>& out) {
    split_chars();
    for (size_t i = 1; i < syms_.size(); ++i) try_pair(int32_t(i - 1), int32_t(i));
    while (!queue_.empty()) {
      const Bigram b = queue_.top();
      queue_.pop();
      Symbol& l = syms_[b.left];
      Symbol& r = syms_[b.right];
      if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;  // stale
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) syms_[r.next].prev = b.left;
      try_pair(l.prev, b.left);
      try_pair(b.left, l.next);
    }
    for (int32_t i = syms_.empty() ? -1 : 0; i >= 0; i = syms_[i].next) emit(syms_[i], out);
  }

 private:
  void split_chars() {
    syms_.reserve(text_.size());
    for (size_t pos = 0; pos < text_.size();) {
      const size_t len = std::min(utf8_lead_len(uint8_t(text_[pos])), text_.size() - pos);
      const int32_t idx = int32_t(syms_.size());
      syms_.push_back({uint32_t(pos), uint32_t(len), idx - 1, pos + len < text_.size() ? idx + 1 : -1});
      pos += len;
    }
  }

  void try_pair(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = syms_[left];
    const uint32_t len = l.len + syms_[right].len;
    const int32_t id = find_mergeable(v_, text_.substr(l.start, len));
    if (id >= 0) queue_.push({v_.score[id], left, right, len});
  }

  void emit(const Symbol& s, std::vector<int32_t>& out) const {
    const std::string_view piece = text_.substr(s.start, s.len);
    if (const int32_t id = find_mergeable(v_, piece); id >= 0) {
      out.push_back(id);
      return;
    }
    // Byte fallback; a vocabulary without the needed byte tokens gets one
    // unknown token for the character, as SentencePiece does.
    bool all_bytes = true;
    for (char c : piece) all_bytes = all_bytes && v_.byte_token[uint8_t(c)] >= 0;
    if (all_bytes) {
      for (char c : piece) out.push_back(v_.byte_token[uint8_t(c)]);
    } else if (v_.unk >= 0) {
      out.push_back(v_.unk);
    }
  }

  const Vocab& v_;
  std::string_view text_;
  std::vector<Symbol> syms_;
  std::priority_queue<Bigram, std::vector<Bigram>, Lower> queue_;
};

}  // namespace

VocabDefaults spm_defaults() {
  VocabDefaults d;
  d.bos = 1;
  d.eos = 2;
  d.unk = 0;
  d.add_bos = true;
  d.add_space_prefix = true;
  d.needs_scores = true;
  return d;
}

void spm_encode_escaped(const Vocab& v, std::string_view text, std::vector<int32_t>& out) {
  // Symbols index the text with 32-bit offsets.
  if (text.size() > size_t(std::numeric_limits<int32_t>::max()))
    fail<InvalidArgument>("text of {} bytes is too long to tokenize", text.size());
  Merger(v, text).run(out);
}

void spm_encode(const Vocab& v, std::span<const Fragment> fragments, std::vector<int32_t>& out) {
  bool after_special = true;  // the start of the input counts as a boundary
  std::string escaped;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    escaped.clear();
    if (v.add_space_prefix && after_special) escaped += kSpaceSymbol;
    for (char c : f.text) {
      if (c == ' ')
        escaped += kSpaceSymbol;
      else
        escaped += c;
    }
    spm_encode_escaped(v, escaped, out);
    after_special = false;
  }
}

}  // namespace pagoda
