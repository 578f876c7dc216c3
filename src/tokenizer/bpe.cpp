// The merge loop works on token ids: a piece starts as one symbol per byte
// (the byte's token) in a linked list, candidate pairs wait in a priority
// queue ordered by rank then position, and a popped pair is applied only if
// both symbols are still neighbours holding the ids it was made for (merging
// changes the left symbol's id and empties the right one, so stale entries
// are recognised and skipped). O(n log n) per piece.
#include "tokenizer/bpe.h"

#include <limits>
#include <queue>
#include <string>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr const char* kMerges = "tokenizer.ggml.merges";

struct Symbol {
  int32_t id;          // -1: a byte the vocabulary has no token for
  int32_t prev, next;  // -1 at the ends
  bool alive;
};

struct Candidate {
  int32_t rank;
  int32_t left, right;  // symbol indices
  int32_t left_id, right_id;
  int32_t result;
};

// std::priority_queue pops the greatest: lowest rank, then leftmost.
struct Later {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class Merger {
 public:
  Merger(const BpeModel& m, std::string_view piece) : m_(m) {
    syms_.reserve(piece.size());
    for (size_t i = 0; i < piece.size(); ++i) {
      const int32_t idx = int32_t(i);
      syms_.push_back({m.byte_token[uint8_t(piece[i])], idx - 1, i + 1 < piece.size() ? idx + 1 : -1, true});
    }
  }

  void run(int32_t unk, std::vector<int32_t>& out) {
    for (size_t i = 1; i < syms_.size(); ++i) try_pair(int32_t(i - 1), int32_t(i));
    while (!queue_.empty()) {
      const Candidate c = queue_.top();
      queue_.pop();
      Symbol& l = syms_[c.left];
      Symbol& r = syms_[c.right];
      if (!l.alive || !r.alive || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;  // stale
      l.id = c.result;
      l.next = r.next;
      if (r.next >= 0) syms_[r.next].prev = c.left;
      r.alive = false;
      try_pair(l.prev, c.left);
      try_pair(c.left, l.next);
    }
    for (int32_t i = syms_.empty() ? -1 : 0; i >= 0; i = syms_[i].next) {
      if (syms_[i].id >= 0)
        out.push_back(syms_[i].id);
      else if (unk >= 0)
        out.push_back(unk);  // only for a vocabulary that lacks some byte
    }
  }

 private:
  void try_pair(int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t a = syms_[left].id, b = syms_[right].id;
    if (a < 0 || b < 0) return;
    if (const BpeModel::Merge* merge = m_.find_merge(a, b))
      queue_.push({merge->rank, left, right, a, b, merge->result});
  }

  const BpeModel& m_;
  std::vector<Symbol> syms_;
  std::priority_queue<Candidate, std::vector<Candidate>, Later> queue_;
};

}  // namespace

BpeModel BpeModel::from_gguf(const GgufFile& f, const Vocab& v, PreTokenizer pre) {
  BpeModel m;
  m.pre = pre;
  m.ignore_merges = pre == PreTokenizer::Llama3;

  for (int b = 0; b < 256; ++b) {
    std::string text;
    append_utf8(byte_to_code_point(uint8_t(b)), text);
    m.byte_token[b] = v.find(text);
  }

  const Value* merges = f.find(kMerges);
  if (!merges) fail<FormatError>("tokenizer model 'gpt2' needs {}", kMerges);
  const auto& list = merges->as_array(kMerges);
  if (list.size() > size_t(std::numeric_limits<int32_t>::max()))
    fail<FormatError>("{}: {} merges is too many", kMerges, list.size());
  m.merges.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string& s = list[i].as_string(kMerges);
    // "left right"; the search starts at 1 so that a left side may be a space.
    const size_t sep = s.find(' ', 1);
    if (sep == std::string::npos)
      fail<FormatError>("{}[{}]: '{}' is not two symbols separated by a space", kMerges, i, s);
    const std::string_view left = std::string_view(s).substr(0, sep), right = std::string_view(s).substr(sep + 1);
    std::string joined(left);
    joined += right;
    const int32_t a = v.find(left), b = v.find(right), result = v.find(joined);
    if (a < 0 || b < 0 || result < 0) continue;
    m.merges.emplace(uint64_t(uint32_t(a)) << 32 | uint32_t(b), Merge{int32_t(i), result});  // first rank wins
  }
  return m;
}

VocabDefaults bpe_defaults(PreTokenizer pre) {
  VocabDefaults d;
  d.add_bos = pre == PreTokenizer::Llama3;
  return d;
}

void bpe_encode_piece(const Vocab& v, const BpeModel& m, std::string_view piece, std::vector<int32_t>& out) {
  if (piece.empty()) return;
  if (m.ignore_merges && piece.size() > 1) {
    // Only vocabulary tokens proper: added (control, user-defined) tokens
    // are not part of the BPE model's vocabulary.
    const int32_t id = v.find(byte_level_encode(piece));
    if (id >= 0 && v.type[id] == TokenType::Normal) {
      out.push_back(id);
      return;
    }
  }
  Merger(m, piece).run(v.unk, out);
}

void bpe_encode(const Vocab& v, const BpeModel& m, std::span<const Fragment> fragments, std::vector<int32_t>& out) {
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      continue;
    }
    // Code points index the text with 32-bit offsets.
    if (f.text.size() > size_t(std::numeric_limits<uint32_t>::max()))
      fail<InvalidArgument>("text of {} bytes is too long to tokenize", f.text.size());
    for (std::string_view piece : pre_tokenize(m.pre, f.text)) bpe_encode_piece(v, m, piece, out);
  }
}

}  // namespace pagoda
