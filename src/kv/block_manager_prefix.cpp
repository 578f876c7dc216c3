// The prefix cache: lookup, commit (hashing full blocks), KV events.
//
// Prefix-cache keys. A hashed block's key is (parent, token ids, extra key),
// where the parent is named by block id *and generation*. The hash index only
// finds candidates; a hit must match the key exactly, and its parent must be
// the block matched one level up, still in the generation it had when the
// child was cached. By induction a hit reproduces the whole prefix, even when
// an ancestor's hash collided with another prompt's or its block was evicted
// and reused. (LRU order never evicts a parent before its child, so the
// generation is a second line of defence; a test forces the other order.)
// Several blocks may hold the same key (two requests computed the same prompt
// at once); they all stay cached and lookup follows every chain.
//
// KV groups. That chain runs through the anchor group (group 0). A block of
// another group is keyed by the anchor's block at its index instead of a
// parent of its own, and indexed under its own hash (the anchor's, mixed with
// the group): so a sliding group's block is a proven hit though the blocks
// before it in its group were given back and reused long ago. KV events and
// cached_hashes() speak for the anchor group alone (one hash per prefix block).
//
// The index updates of a step (evictions, insertions) are random accesses;
// they are prefetched together so that on large pools their misses overlap.
#include <algorithm>
#include <unordered_set>

#include "kv/block_hash.h"
#include "kv/block_manager.h"
#include "util/error.h"

namespace pagoda {

BlockHash BlockManager::group_hash(BlockHash h, int32_t g) const {
  if (g == 0) return h;
  return hash_block_tokens(h, {}, uint64_t(g)) & config_.hash_mask;
}

bool BlockManager::key_tokens_equal(BlockId b, std::span<const TokenId> tokens) const {
  const TokenId* key = key_tokens_.data() + size_t(b) * size_t(config_.block_size);
  return std::equal(tokens.begin(), tokens.end(), key);
}

int32_t BlockManager::longest_hit(std::span<const TokenId> prompt, uint32_t extra_id,
                                  const std::vector<BlockHash>& hashes, const std::vector<BlockId>& chain,
                                  std::vector<BlockId>& found) const {
  const int32_t depth = int32_t(chain.size()), G = num_groups(), bs = config_.block_size;
  found.assign(size_t(G) * size_t(depth), kNoBlock);
  std::vector<int8_t> known(found.size(), 0);  // 0: not looked up yet, 1: found, -1: missing
  // Whether group g has a block for level i: its key names the chain's anchor
  // block there (that one, not a duplicate: a sequence then holds both, so
  // the anchor outlives the block keyed by it).
  auto has = [&](int32_t g, int32_t i) {
    const size_t at = size_t(g) * size_t(depth) + size_t(i);
    if (known[at] != 0) return known[at] > 0;
    const std::span<const TokenId> tokens = prompt.subspan(size_t(i) * size_t(bs), size_t(bs));
    cached_.for_each(group_hash(hashes[size_t(i)], g), [&](BlockId b) {
      const Block& blk = blocks_[b];
      const BlockId a = chain[size_t(i)];
      if (found[at] == kNoBlock && blk.group == g && blk.extra_id == extra_id && blk.parent == a &&
          blk.parent_generation == blocks_[a].generation && key_tokens_equal(b, tokens))
        found[at] = b;
    });
    known[at] = found[at] != kNoBlock ? 1 : -1;
    return known[at] > 0;
  };
  // Full groups need every level: the first one missing caps the hit.
  int32_t cap = depth;
  for (int32_t g = 1; g < G; ++g)
    if (window(g) == 0)
      for (int32_t i = 0; i < cap; ++i)
        if (!has(g, i)) cap = i;
  // Sliding groups need the last window's levels of the hit, which moves
  // with it: the longest hit all of them accept.
  for (int32_t hit = cap; hit > 0; --hit) {
    bool ok = true;
    for (int32_t g = 1; g < G && ok; ++g)
      for (int32_t i = behind(g, int64_t(hit) * bs); window(g) > 0 && i < hit && ok; ++i) ok = has(g, i);
    if (ok) return hit;
  }
  return 0;
}

CachedPrefix BlockManager::lookup_prefix(std::span<const TokenId> prompt, std::string_view extra_key,
                                         Admission admission) const {
  CachedPrefix r;
  r.extra_key = std::string(extra_key);
  r.admission = admission;
  r.num_prompt_tokens = int32_t(prompt.size());
  if (!config_.prefix_caching || prompt.empty()) return r;
  std::optional<uint32_t> extra_id = extra_keys_.find(extra_key);
  if (!extra_id) return r;  // no cached block carries this key
  const uint64_t extra_hash = extra_keys_.hash(*extra_id);
  const int32_t bs = config_.block_size;
  const size_t max_blocks = (prompt.size() - 1) / size_t(bs);  // the last token is always computed

  // levels[i]: every cached anchor block that matches the prompt up to level i.
  std::vector<std::vector<BlockId>> levels;
  std::vector<BlockHash> hashes;
  BlockHash parent_hash = kRootBlockHash;
  for (size_t i = 0; i < max_blocks; ++i) {
    std::span<const TokenId> tokens = prompt.subspan(i * size_t(bs), size_t(bs));
    BlockHash h = hash_block_tokens(parent_hash, tokens, extra_hash) & config_.hash_mask;
    std::vector<BlockId> next;
    cached_.for_each(h, [&](BlockId b) {
      const Block& blk = blocks_[b];
      if (blk.group != 0 || blk.extra_id != *extra_id || !key_tokens_equal(b, tokens)) return;
      bool linked =
          i == 0 ? blk.parent == kNoBlock : std::any_of(levels.back().begin(), levels.back().end(), [&](BlockId f) {
            return f == blk.parent && blocks_[f].generation == blk.parent_generation;
          });
      if (linked) next.push_back(b);
    });
    if (next.empty()) break;
    levels.push_back(std::move(next));
    hashes.push_back(h);
    parent_hash = h;
  }
  std::vector<BlockId> chain, found, best_found;
  size_t depth = 0;
  if (slots_.size() > 0) {
    // A hybrid: the deepest block that has a state checkpoint ends the hit.
    r.state = deepest_checkpoint(prompt, *extra_id, levels, hashes, chain, best_found);
    depth = chain.size();
  } else {
    depth = longest_chain(prompt, *extra_id, levels, hashes, chain, best_found);
  }
  const size_t G = size_t(num_groups());
  r.blocks.assign(depth * G, kNoBlock);
  r.generations.assign(depth * G, 0);
  std::copy_n(chain.begin(), depth, r.blocks.begin());
  for (size_t g = 1; g < G; ++g)
    for (size_t i = size_t(behind(int32_t(g), int64_t(depth) * bs)); i < depth; ++i)
      r.blocks[g * depth + i] = best_found[g * chain.size() + i];
  for (size_t k = 0; k < r.blocks.size(); ++k)
    if (r.blocks[k] != kNoBlock) r.generations[k] = blocks_[r.blocks[k]].generation;
  r.num_tokens = int32_t(depth) * bs;
  return r;
}

StateBuffer BlockManager::deepest_checkpoint(std::span<const TokenId> prompt, uint32_t extra_id,
                                             const std::vector<std::vector<BlockId>>& levels,
                                             const std::vector<BlockHash>& hashes, std::vector<BlockId>& chain,
                                             std::vector<BlockId>& found) const {
  for (size_t level = levels.size(); level > 0; --level) {
    for (BlockId end : levels[level - 1]) {
      const StateBuffer checkpoint = checkpoints_.find(end);
      if (checkpoint == kNoState) continue;
      std::vector<BlockId> candidate(level);
      BlockId b = end;
      for (size_t i = level; i-- > 0; b = blocks_[b].parent) candidate[i] = b;
      // With KV groups, every group must serve this whole prefix.
      if (num_groups() > 1 && size_t(longest_hit(prompt, extra_id, hashes, candidate, found)) != level) continue;
      chain.swap(candidate);
      return checkpoint;
    }
  }
  chain.clear();
  return kNoState;
}

size_t BlockManager::longest_chain(std::span<const TokenId> prompt, uint32_t extra_id,
                                   const std::vector<std::vector<BlockId>>& levels,
                                   const std::vector<BlockHash>& hashes, std::vector<BlockId>& chain,
                                   std::vector<BlockId>& best_found) const {
  // Any anchor block of a level leads back to the root along checked links.
  // With KV groups, the chain must also carry every group's blocks: several
  // chains (the same prompt computed twice at once) may differ in that, so
  // the deepest are tried first until none can beat the best hit. A chain
  // that is the start of one tried already cannot (its hit would be that one's).
  std::vector<BlockId> found;
  std::unordered_set<BlockId> tried;
  size_t depth = 0;
  for (size_t level = levels.size(); level > depth; --level) {
    for (BlockId end : levels[level - 1]) {
      if (tried.count(end)) continue;
      std::vector<BlockId> candidate(level);
      BlockId b = end;
      for (size_t i = level; i-- > 0; b = blocks_[b].parent) candidate[i] = b;
      if (num_groups() > 1) tried.insert(candidate.begin(), candidate.end());
      const size_t hit =
          num_groups() == 1 ? candidate.size() : size_t(longest_hit(prompt, extra_id, hashes, candidate, found));
      if (hit > depth || chain.empty()) {
        depth = hit;
        chain.swap(candidate);
        best_found.swap(found);
      }
      if (depth == level) break;
    }
  }
  return depth;
}

void BlockManager::commit(SeqId seq, std::span<const TokenId> tokens, int32_t num_computed_tokens,
                          bool checkpoint_state) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail<InvalidArgument>("commit of unknown sequence {}", seq);
  Seq& s = it->second;
  if (num_computed_tokens < s.num_computed || num_computed_tokens > s.num_tokens) {
    fail<InvalidArgument>("sequence {}: commit of {} computed tokens, but {} were committed and {} allocated", seq,
                          num_computed_tokens, s.num_computed, s.num_tokens);
  }
  if (int64_t(tokens.size()) < num_computed_tokens) {
    fail<InvalidArgument>("sequence {}: commit of {} computed tokens with only {} token ids", seq, num_computed_tokens,
                          tokens.size());
  }
  const int32_t old_computed = s.num_computed;
  s.num_computed = num_computed_tokens;
  // The pass that computed these tokens left their state in the other buffer.
  if (s.slot != kNoSlot && num_computed_tokens > old_computed) s.state = next_buffer(s.slot, s.state);
  if (config_.prefix_caching) {
    const int32_t bs = config_.block_size;
    const uint64_t extra_hash = extra_keys_.hash(s.extra_id);
    const int32_t full = num_computed_tokens / bs;
    // Hash first (a chain: each needs its parent's), prefetching each block's
    // index slot, then insert: the index's cache misses overlap.
    const int32_t first = s.num_hashed;
    std::vector<BlockHash> hashes;
    hashes.reserve(size_t(std::max(0, full - first)));
    BlockHash parent_hash = first == 0 ? kRootBlockHash : s.tail_hash;
    for (int32_t i = first; i < full; ++i) {
      parent_hash = hash_block_tokens(parent_hash, tokens.subspan(size_t(i) * size_t(bs), size_t(bs)), extra_hash) &
                    config_.hash_mask;
      hashes.push_back(parent_hash);
      for (int32_t g = 0; g < num_groups(); ++g) cached_.prefetch(group_hash(parent_hash, g));
    }
    for (int32_t i = first; i < full; ++i) {
      std::span<const TokenId> block_tokens = tokens.subspan(size_t(i) * size_t(bs), size_t(bs));
      const BlockHash h = hashes[size_t(i - first)];
      const BlockId anchor = s.tables[0][size_t(i)];
      for (int32_t g = 0; g < num_groups(); ++g) {
        const BlockId b = s.tables[size_t(g)][size_t(i)];
        // Hashing runs ahead of every window: a full block is hashed before it falls behind.
        if (b == kNoBlock) fail("sequence {}: block index {} of group {} given back before it was hashed", seq, i, g);
        const BlockId parent = g == 0 ? s.tail : anchor;
        const uint32_t parent_generation = g == 0 ? s.tail_generation : blocks_[anchor].generation;
        const BlockHash key = group_hash(h, g);
        Block& blk = blocks_[b];
        if (blk.hashed) {
          // Shared with a sequence that committed it first (fork): same key or a bug.
          if (blk.hash != key || blk.group != g || blk.extra_id != s.extra_id || !key_tokens_equal(b, block_tokens)) {
            fail<InvalidArgument>("sequence {}: block {} (index {} of group {}) was cached with other tokens", seq, b,
                                  i, g);
          }
          continue;
        }
        blk.hashed = true;
        blk.hash = key;
        blk.group = uint8_t(g);
        blk.parent = parent;
        blk.parent_generation = parent == kNoBlock ? 0 : parent_generation;
        blk.extra_id = s.extra_id;
        extra_keys_.retain(s.extra_id);
        std::copy(block_tokens.begin(), block_tokens.end(), key_tokens_.begin() + ptrdiff_t(b) * bs);
        if (record_events_ && g == 0 && !hash_cached(key)) events_.push_back(stored_event(b));
        cached_.insert(key, b);
      }
      s.tail = anchor;
      s.tail_generation = blocks_[anchor].generation;
      s.tail_hash = h;
      s.num_hashed = i + 1;
    }
  }
  // The state the pass left is the prefix's up to the block it just filled.
  const int32_t bs = config_.block_size;
  if (checkpoint_state && config_.prefix_caching && s.state != kNoState && num_computed_tokens > old_computed &&
      num_computed_tokens % bs == 0 && s.num_hashed == num_computed_tokens / bs && s.tail != kNoBlock) {
    const StateBuffer to = checkpoints_.add(s.tail, blocks_[s.tail].generation);
    if (to != kNoState) pending_saves_.push_back({s.state, to});
  }
  release_behind_windows(s, old_computed);
}

bool BlockManager::state_checkpoint_at(int32_t pos, int32_t num_prompt) const {
  return checkpoint_points_.at(pos, num_prompt);
}

int32_t BlockManager::cut_at_state_checkpoint(int32_t start, int32_t n, int32_t num_prompt) const {
  const int32_t next = checkpoint_points_.next(start, num_prompt);
  return next > 0 && next - start < n ? next - start : n;
}

void BlockManager::drop_state_saves(std::span<const StateCopy> failed) {
  for (const StateCopy& c : failed) checkpoints_.drop_buffer(c.dst);
}

void BlockManager::unhash(BlockId b) {
  Block& blk = blocks_[b];
  if (!cached_.erase(blk.hash, b)) fail("hashed block {} missing from the prefix cache index", b);
  if (record_events_ && blk.group == 0 && !hash_cached(blk.hash))
    events_.push_back({KvCacheEvent::Kind::kRemoved, blk.hash, {}, {}});
  extra_keys_.release(blk.extra_id);
  blk.hashed = false;
  blk.hash = 0;
  blk.group = 0;
  blk.parent = kNoBlock;
  blk.parent_generation = 0;
  blk.extra_id = 0;
  ++blk.generation;      // children cached under this block no longer link to it
  checkpoints_.drop(b);  // nor can a lookup reach its state checkpoint
}

void BlockManager::record_events(bool on) {
  record_events_ = on;
  if (!on) events_.clear();
}

bool BlockManager::hash_cached(BlockHash h) const {
  bool found = false;
  cached_.for_each(h, [&](BlockId b) { found = found || blocks_[b].group == 0; });
  return found;
}

KvCacheEvent BlockManager::stored_event(BlockId b) const {
  const Block& blk = blocks_[b];
  KvCacheEvent e{KvCacheEvent::Kind::kStored, blk.hash, {}, {}};
  // The parent is held by the committing sequence; in a full-set resync it
  // may have been evicted since, and its hash is gone with it (nil then).
  if (blk.parent != kNoBlock && blocks_[blk.parent].hashed && blocks_[blk.parent].generation == blk.parent_generation)
    e.parent = blocks_[blk.parent].hash;
  const auto first = key_tokens_.begin() + ptrdiff_t(b) * config_.block_size;
  e.tokens.assign(first, first + config_.block_size);
  return e;
}

// How many cached blocks precede anchor block b in its chain (parents still holding their hash).
int32_t BlockManager::depth_of(BlockId b) const {
  int32_t depth = 0;
  for (BlockId p = blocks_[b].parent, child = b;
       p != kNoBlock && blocks_[p].hashed && blocks_[p].generation == blocks_[child].parent_generation;
       child = p, p = blocks_[p].parent)
    ++depth;
  return depth;
}

std::vector<KvCacheEvent> BlockManager::cached_as_events() const {
  // Parents before children: a block's depth is its parent's plus one.
  std::vector<std::pair<int32_t, BlockId>> order;
  std::unordered_map<BlockHash, bool> seen;
  for (BlockId b = 0; b < num_blocks(); ++b) {
    if (!blocks_[b].hashed || blocks_[b].group != 0 || !seen.emplace(blocks_[b].hash, true).second) continue;
    order.emplace_back(depth_of(b), b);
  }
  std::sort(order.begin(), order.end());
  std::vector<KvCacheEvent> out;
  out.reserve(order.size());
  for (const auto& [depth, b] : order) out.push_back(stored_event(b));
  return out;
}

std::vector<BlockHash> BlockManager::cached_hashes() const {
  std::vector<BlockHash> out;
  for (BlockId b = 0; b < num_blocks(); ++b)
    if (blocks_[b].hashed && blocks_[b].group == 0) out.push_back(blocks_[b].hash);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace pagoda
