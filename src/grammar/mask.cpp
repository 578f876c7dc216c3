// Lazily built per-key mask tables and the trie walks (see mask.h).
#include "grammar/mask.h"

#include <algorithm>
#include <atomic>
#include <limits>

namespace pagoda::grammar {
namespace {
std::atomic<size_t> g_total_bytes{0};

size_t entry_bytes(const MaskTables::Entry& e) {
  return (e.accepted.capacity() + e.uncertain.capacity()) * sizeof(uint32_t) + sizeof(e);
}
}  // namespace

MaskTables::MaskTables(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenVocab> vocab,
                       size_t context_frames)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), context_frames_(std::max<size_t>(1, context_frames)) {}

size_t MaskTables::KeyHash::operator()(const std::vector<uint32_t>& k) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t v : k) h = (h ^ v) * 1099511628211ull;
  return size_t(h);
}

MaskTables::~MaskTables() { g_total_bytes.fetch_sub(bytes_); }

size_t MaskTables::total_bytes() { return g_total_bytes.load(); }

size_t MaskTables::num_entries() const {
  std::shared_lock lock(mu_);
  return entries_.size();
}

const MaskTables::Entry& MaskTables::entry(std::span<const uint32_t> stack, Entry& scratch) const {
  // Key: [complete flag, frames...]; complete when the key is the whole stack.
  const size_t n = std::min(stack.size(), context_frames_);
  std::vector<uint32_t> key;
  key.reserve(n + 1);
  key.push_back(stack.size() <= context_frames_ ? 1 : 0);
  key.insert(key.end(), stack.end() - ptrdiff_t(n), stack.end());
  {
    std::shared_lock lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) return *it->second;
    if (entries_.size() >= kMaxEntries) {
      lock.unlock();
      compute(key, scratch);
      return scratch;
    }
  }
  auto e = std::make_unique<Entry>();
  compute(key, *e);  // outside the lock: two threads may both compute; the first one in wins
  const size_t bytes = entry_bytes(*e);
  std::unique_lock lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) return *it->second;
  if (g_total_bytes.fetch_add(bytes) + bytes > kMaxTotalBytes) {
    g_total_bytes.fetch_sub(bytes);
    scratch = std::move(*e);
    return scratch;
  }
  bytes_ += bytes;
  auto [it, inserted] = entries_.emplace(std::move(key), std::move(e));
  return *it->second;
}

void MaskTables::compute(const std::vector<uint32_t>& key, Entry& out) const {
  const TokenVocab& v = *vocab_;
  const auto& nodes = v.nodes();
  const bool complete = key[0] == 1;
  StackEngine engine(grammar());
  std::vector<StackSet> levels(1);
  std::vector<uint8_t> ended(1, 0);  // ended[d]: some prefix shorter than d completed the key's frames
  engine.from_frames(std::span<const uint32_t>(key).subspan(1), levels[0]);
  out.accepted.assign(v.mask_words(), 0);
  out.uncertain.clear();
  for (uint32_t n = 0; n < nodes.size();) {
    const auto& node = nodes[n];
    const size_t d = node.depth;
    if (levels.size() <= d) levels.resize(d + 1), ended.resize(d + 1);
    ended[d] = ended[d - 1] || (!complete && levels[d - 1].has_finished());
    if (engine.advance(levels[d - 1], node.byte, levels[d])) {
      for (int32_t id : v.node_tokens(n)) out.accepted[size_t(id) >> 5] |= 1u << (id & 31);
      ++n;
      continue;
    }
    if (ended[d]) out.uncertain.push_back(n);
    n = node.end;
  }
}

void TrieWalker::walk_subtrees(StackEngine& engine, const TokenVocab& vocab, const StackSet& state,
                               std::span<const uint32_t> roots, std::span<uint32_t> bits) {
  const auto& nodes = vocab.nodes();
  if (levels_.empty()) levels_.resize(1);
  levels_[0] = state;
  prefix_.clear();
  size_t valid = 0;      // levels_[0..valid] hold the sets after prefix_[0..valid)
  uint32_t covered = 0;  // subtrees below this node index were walked already
  for (uint32_t root : roots) {
    if (root < covered) continue;
    const uint32_t end = nodes[root].end;
    for (uint32_t n = root; n < end;) {
      const auto& node = nodes[n];
      const size_t d = node.depth;
      if (levels_.size() <= d) levels_.resize(d + 1);
      if (n == root) {  // bring levels_ up to this root's parent prefix
        const std::string_view p = vocab.node_prefix(root);
        size_t lcp = 0;
        while (lcp < std::min(valid, d - 1) && lcp < prefix_.size() && prefix_[lcp] == p[lcp]) ++lcp;
        valid = lcp;
        prefix_.assign(p.substr(0, d - 1));
        bool alive = true;
        for (size_t i = valid; i + 1 < d && alive; ++i) {
          alive = engine.advance(levels_[i], uint8_t(p[i]), levels_[i + 1]);
          valid = i + 1;
        }
        if (!alive) {
          valid = 0;  // levels past the dead one are stale
          prefix_.clear();
          break;
        }
      }
      prefix_.resize(d - 1);
      prefix_.push_back(char(node.byte));
      const bool ok = engine.advance(levels_[d - 1], node.byte, levels_[d]);
      valid = d;
      if (!ok) {
        n = node.end;
        continue;
      }
      for (int32_t id : vocab.node_tokens(n)) bits[size_t(id) >> 5] |= 1u << (id & 31);
      ++n;
    }
    covered = end;
  }
}

void apply_token_mask(std::span<float> logits, std::span<const uint32_t> bits) {
  const float neg = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) {
    const size_t w = i >> 5;
    if (w >= bits.size() || !((bits[w] >> (i & 31)) & 1)) logits[i] = neg;
  }
}

}  // namespace pagoda::grammar
