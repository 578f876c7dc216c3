// Lazily built per-key mask tables and the trie walks (see mask.h).
#include "grammar/mask.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <thread>

#include "grammar/context_keys.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {
std::atomic<size_t> g_total_bytes{0};

size_t entry_bytes(const MaskTables::Entry& e) {
  return (e.accepted.capacity() + e.accepted_ids.capacity() + e.uncertain.capacity()) * sizeof(uint32_t) + sizeof(e);
}

// Trades the bitset for an id list when that is at most a quarter of its size.
void make_sparse(MaskTables::Entry& e) {
  size_t count = 0;
  for (uint32_t w : e.accepted) count += size_t(__builtin_popcount(w));
  if (count * 4 > e.accepted.size()) return;
  e.accepted_ids.reserve(count);
  for (size_t w = 0; w < e.accepted.size(); ++w)
    for (uint32_t x = e.accepted[w]; x; x &= x - 1)
      e.accepted_ids.push_back(int32_t(w * 32 + size_t(__builtin_ctz(x))));
  std::vector<uint32_t>().swap(e.accepted);
}
}  // namespace

MaskTables::MaskTables(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenVocab> vocab,
                       size_t context_frames, size_t dfa_states)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocab)),
      context_frames_(std::max<size_t>(1, context_frames)),
      dfa_states_(dfa_states) {}

size_t MaskTables::KeyHash::operator()(const std::vector<uint32_t>& k) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t v : k) h = (h ^ v) * 1099511628211ull;
  return size_t(h);
}

MaskTables::~MaskTables() { g_total_bytes.fetch_sub(bytes_); }

void MaskTables::Entry::add_accepted_to(std::span<uint32_t> bits) const {
  if (!accepted.empty()) {
    const uint32_t* a = accepted.data();
    for (size_t w = 0; w < accepted.size(); ++w) bits[w] |= a[w];
  }
  for (int32_t id : accepted_ids) bits[size_t(id) >> 5] |= 1u << (id & 31);
}

size_t MaskTables::total_bytes() { return g_total_bytes.load(); }

size_t MaskTables::num_entries() const {
  std::shared_lock lock(mu_);
  return entries_.size();
}

const MaskTables::Entry& MaskTables::entry(std::span<const uint32_t> stack, Entry& scratch, size_t& steps_left) const {
  // Key: [complete flag, frames...]; complete when the key is the whole stack.
  const size_t n = std::min(stack.size(), context_frames_);
  std::vector<uint32_t> key;
  key.reserve(n + 1);
  key.push_back(stack.size() <= context_frames_ ? 1 : 0);
  key.insert(key.end(), stack.end() - ptrdiff_t(n), stack.end());
  {
    std::shared_lock lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) return *it->second;
  }
  StackEngine engine(grammar());
  SetDfa dfa(engine, dfa_states_);
  auto e = std::make_unique<Entry>();
  engine.limit_steps(steps_left);
  compute(key, *e, engine, dfa);  // outside the lock: two threads may both compute; the first one in wins
  steps_left -= engine.steps();
  if (const Entry* stored = insert(key, e)) return *stored;
  scratch = std::move(*e);  // the table is full: this call's copy
  return scratch;
}

const MaskTables::Entry* MaskTables::insert(std::vector<uint32_t>& key, std::unique_ptr<Entry>& e) const {
  const size_t bytes = entry_bytes(*e);
  std::unique_lock lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second.get();
  if (entries_.size() >= kMaxEntries) return nullptr;
  if (g_total_bytes.fetch_add(bytes) + bytes > kMaxTotalBytes) {
    g_total_bytes.fetch_sub(bytes);
    return nullptr;
  }
  bytes_ += bytes;
  auto [it, inserted] = entries_.emplace(std::move(key), std::move(e));
  return it->second.get();
}

std::string MaskTables::build_error() const {
  std::shared_lock lock(mu_);
  return build_error_;
}

size_t MaskTables::precompute(size_t threads, double max_seconds) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
  auto keys = context_keys(grammar(), context_frames_, kMaxEntries);
  {
    std::shared_lock lock(mu_);
    std::erase_if(keys, [&](const std::vector<uint32_t>& k) { return entries_.count(k) != 0; });
  }
  std::atomic<size_t> next{0}, built{0};
  auto work = [&] {
    StackEngine engine(grammar());
    SetDfa dfa(engine, dfa_states_);
    for (size_t i; (i = next.fetch_add(1)) < keys.size();) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      auto e = std::make_unique<Entry>();
      try {
        engine.limit_steps();
        compute(keys[i], *e, engine, dfa);
      } catch (const Error& err) {
        std::unique_lock lock(mu_);
        if (build_error_.empty()) build_error_ = err.what();
        next.store(keys.size());  // the tables will be refused: stop
        break;
      }
      if (!insert(keys[i], e)) {
        next.store(keys.size());  // full: the rest stays lazy
        break;
      }
      built.fetch_add(1);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(threads, keys.size()); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return built.load();
}

void MaskTables::compute(const std::vector<uint32_t>& key, Entry& out, StackEngine& engine, SetDfa& dfa) const {
  // The walk of compute_slow over interned set ids: one lookup per trie node.
  const TokenVocab& v = *vocab_;
  const auto& nodes = v.nodes();
  const bool complete = key[0] == 1;
  dfa.clear();
  StackSet start;
  engine.from_frames(std::span<const uint32_t>(key).subspan(1), start);
  std::vector<int32_t> levels(1, dfa.intern(start));  // levels[d]: the set after the node's prefix[0..d)
  std::vector<uint8_t> ended(1, 0);                   // ended[d]: some prefix shorter than d completed the key's frames
  out.accepted.assign(v.mask_words(), 0);
  out.accepted_ids.clear();
  out.uncertain.clear();
  if (levels[0] < 0) compute_slow(key, out, engine);  // no room for even the start set
  for (uint32_t n = 0; levels[0] >= 0 && n < nodes.size();) {
    const auto& node = nodes[n];
    const size_t d = node.depth;
    if (levels.size() <= d) levels.resize(d + 1), ended.resize(d + 1);
    ended[d] = ended[d - 1] || (!complete && dfa.finished(levels[d - 1]));
    const int32_t s = dfa.step(levels[d - 1], node.byte);
    if (s >= 0) {
      levels[d] = s;
      for (int32_t id : v.node_tokens(n)) out.accepted[size_t(id) >> 5] |= 1u << (id & 31);
      ++n;
      continue;
    }
    if (s == SetDfa::kFull) {
      compute_slow(key, out, engine);
      break;
    }
    if (ended[d]) out.uncertain.push_back(n);
    n = node.end;
  }
  make_sparse(out);
}

void MaskTables::compute_slow(const std::vector<uint32_t>& key, Entry& out, StackEngine& engine) const {
  const TokenVocab& v = *vocab_;
  const auto& nodes = v.nodes();
  const bool complete = key[0] == 1;
  std::vector<StackSet> levels(1);
  std::vector<uint8_t> ended(1, 0);
  engine.from_frames(std::span<const uint32_t>(key).subspan(1), levels[0]);
  out.accepted.assign(v.mask_words(), 0);
  out.accepted_ids.clear();
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
