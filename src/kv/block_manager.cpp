// Block manager operations: lookup, allocate, commit, fork, free, reset.
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
// The index updates of a step (evictions, insertions) are random accesses;
// they are prefetched together so that on large pools their misses overlap.
#include "kv/block_manager.h"

#include <algorithm>

#include "kv/block_hash.h"
#include "util/error.h"

namespace pagoda {

namespace {

const BlockManagerConfig& validated(const BlockManagerConfig& config) {
  if (config.num_blocks < 1) fail<InvalidArgument>("KV cache needs at least one block, got {}", config.num_blocks);
  if (config.block_size < 1) fail<InvalidArgument>("KV block size must be >= 1, got {}", config.block_size);
  if (int64_t(config.num_blocks) * config.block_size > INT32_MAX) {
    fail<InvalidArgument>("KV cache of {} blocks x {} tokens is too large", config.num_blocks, config.block_size);
  }
  return config;
}

}  // namespace

BlockManager::BlockManager(const BlockManagerConfig& config)
    : config_(validated(config)),
      blocks_(size_t(config.num_blocks)),
      key_tokens_(size_t(config.num_blocks) * size_t(config.block_size)),
      free_(config.num_blocks),
      cached_(config.prefix_caching ? config.num_blocks : 0) {
  static_assert(sizeof(Block) <= 32, "one cache line holds two block records");
}

int32_t BlockManager::blocks_for(int64_t tokens) const {
  return int32_t((tokens + config_.block_size - 1) / config_.block_size);
}

const BlockManager::Seq& BlockManager::seq_at(SeqId seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail<InvalidArgument>("unknown sequence {}", seq);
  return it->second;
}

std::span<const BlockId> BlockManager::block_table(SeqId seq) const { return seq_at(seq).table; }
int32_t BlockManager::num_tokens(SeqId seq) const { return seq_at(seq).num_tokens; }
int32_t BlockManager::num_computed_tokens(SeqId seq) const { return seq_at(seq).num_computed; }

int32_t BlockManager::ref_count(BlockId block) const {
  if (block < 0 || block >= num_blocks()) fail<InvalidArgument>("block id {} outside the pool", block);
  return blocks_[block].ref_count;
}

std::optional<BlockHash> BlockManager::block_hash(BlockId block) const {
  if (block < 0 || block >= num_blocks()) fail<InvalidArgument>("block id {} outside the pool", block);
  if (!blocks_[block].hashed) return std::nullopt;
  return blocks_[block].hash;
}

KvStats BlockManager::stats() const {
  KvStats s;
  s.num_blocks = num_blocks();
  s.free_blocks = free_.size();
  s.used_blocks = num_blocks() - free_.size();
  s.cached_blocks = num_cached_free_;
  s.hashed_blocks = int32_t(cached_.size());
  s.usage = double(s.used_blocks) / num_blocks();
  s.evictions = evictions_;
  s.fresh = fresh_;
  s.resumed = resumed_;
  return s;
}

bool BlockManager::key_tokens_equal(BlockId b, std::span<const TokenId> tokens) const {
  const TokenId* key = key_tokens_.data() + size_t(b) * size_t(config_.block_size);
  return std::equal(tokens.begin(), tokens.end(), key);
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

  // frontier: every cached block that matches the prompt up to this level.
  std::vector<BlockId> frontier, next;
  BlockHash parent_hash = kRootBlockHash;
  size_t depth = 0;
  for (size_t i = 0; i < max_blocks; ++i) {
    std::span<const TokenId> tokens = prompt.subspan(i * size_t(bs), size_t(bs));
    BlockHash h = hash_block_tokens(parent_hash, tokens, extra_hash) & config_.hash_mask;
    next.clear();
    cached_.for_each(h, [&](BlockId b) {
      const Block& blk = blocks_[b];
      if (blk.extra_id != *extra_id || !key_tokens_equal(b, tokens)) return;
      bool linked = i == 0 ? blk.parent == kNoBlock : std::any_of(frontier.begin(), frontier.end(), [&](BlockId f) {
        return f == blk.parent && blocks_[f].generation == blk.parent_generation;
      });
      if (linked) next.push_back(b);
    });
    if (next.empty()) break;
    std::swap(frontier, next);
    parent_hash = h;
    depth = i + 1;
  }
  // Any block of the deepest level leads back to the root along checked links.
  r.blocks.resize(depth);
  r.generations.resize(depth);
  BlockId b = depth ? frontier.front() : kNoBlock;
  for (size_t i = depth; i-- > 0;) {
    r.blocks[i] = b;
    r.generations[i] = blocks_[b].generation;
    b = blocks_[b].parent;
  }
  r.num_tokens = int32_t(depth) * bs;
  return r;
}

BlockManager::Plan BlockManager::plan(SeqId seq, int32_t total_tokens, const CachedPrefix& prefix,
                                      int32_t reserve_tokens) const {
  Plan p;
  if (total_tokens < 1) fail<InvalidArgument>("sequence {}: allocate for {} tokens", seq, total_tokens);
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    // Admission: validate the prefix against the pool as it is now.
    const size_t n = prefix.blocks.size();
    if (n && !config_.prefix_caching)
      fail<InvalidArgument>("sequence {}: cached prefix given but prefix caching is off", seq);
    if (prefix.generations.size() != n || prefix.num_tokens != int32_t(n) * config_.block_size) {
      fail<InvalidArgument>("sequence {}: malformed cached prefix ({} blocks, {} generations, {} tokens)", seq, n,
                            prefix.generations.size(), prefix.num_tokens);
    }
    if (prefix.num_tokens >= total_tokens) {
      fail<InvalidArgument>("sequence {}: cached prefix of {} tokens leaves nothing to compute of {}", seq,
                            prefix.num_tokens, total_tokens);
    }
    for (size_t i = 0; i < n; ++i) {
      const BlockId b = prefix.blocks[i];
      const BlockId parent = i == 0 ? kNoBlock : prefix.blocks[i - 1];
      if (b < 0 || b >= num_blocks() || !blocks_[b].hashed || blocks_[b].generation != prefix.generations[i] ||
          blocks_[b].parent != parent) {
        fail<InvalidArgument>("sequence {}: stale cached prefix (block {} at index {} changed since lookup)", seq, b,
                              i);
      }
      if (blocks_[b].ref_count == 0) ++p.from_free;
    }
    p.target_blocks = blocks_for(total_tokens);
    if (config_.policy == AllocPolicy::kReserve)
      p.target_blocks = std::max(p.target_blocks, blocks_for(reserve_tokens));
    p.fresh = p.target_blocks - int32_t(n);
    return p;
  }
  const Seq& s = it->second;
  if (!prefix.blocks.empty()) fail<InvalidArgument>("sequence {} is running; a cached prefix is for admission", seq);
  if (total_tokens < s.num_tokens) {
    fail<InvalidArgument>("sequence {}: allocate for {} tokens, but it already has {}", seq, total_tokens,
                          s.num_tokens);
  }
  p.target_blocks = blocks_for(total_tokens);
  if (config_.policy == AllocPolicy::kReserve) {
    if (p.target_blocks > int32_t(s.table.size())) {
      fail<InvalidArgument>("sequence {}: {} tokens exceed its reservation of {} blocks", seq, total_tokens,
                            s.table.size());
    }
    return p;  // within its reservation: nothing to take
  }
  p.fresh = p.target_blocks - int32_t(s.table.size());
  // The step writes from position num_tokens on: into the last block if it is
  // partial. A partial block shared after fork() must be copied first.
  p.cow =
      total_tokens > s.num_tokens && s.num_tokens % config_.block_size != 0 && blocks_[s.table.back()].ref_count > 1;
  p.fresh += p.cow;
  return p;
}

int32_t BlockManager::blocks_needed(SeqId seq, int32_t total_tokens, const CachedPrefix& prefix,
                                    int32_t reserve_tokens) const {
  Plan p = plan(seq, total_tokens, prefix, reserve_tokens);
  return p.fresh + p.from_free;
}

void BlockManager::prefetch_evictions(int32_t count) const {
  // The next `count` free blocks lose their hashes: start all their index
  // lookups now, so the cache misses overlap instead of queuing up.
  if (num_cached_free_ == 0 || count <= 0) return;
  BlockId b = free_.empty() ? kNoBlock : free_.front();
  for (int32_t i = 0; i < count && b != kNoBlock; ++i, b = free_.next(b)) {
    if (blocks_[b].hashed) cached_.prefetch(blocks_[b].hash);
  }
}

BlockId BlockManager::take_free_block() {
  const BlockId b = free_.pop_front();
  if (blocks_[b].hashed) {  // lazy eviction: only now does the cached block lose its hash
    --num_cached_free_;
    unhash(b);
    ++evictions_;
  }
  blocks_[b].ref_count = 1;
  return b;
}

void BlockManager::take_cached_block(BlockId b) {
  if (blocks_[b].ref_count == 0) {
    free_.remove(b);
    --num_cached_free_;
  }
  ++blocks_[b].ref_count;
}

void BlockManager::release_block(BlockId b) {
  Block& blk = blocks_[b];
  if (blk.ref_count <= 0) fail("block {} released with refcount {}", b, blk.ref_count);
  if (--blk.ref_count > 0) return;
  // Cached blocks join the tail (least recently freed are evicted first);
  // unhashed blocks hold nothing reusable, so they go to the head.
  if (blk.hashed) {
    free_.push_back(b);
    ++num_cached_free_;
  } else {
    free_.push_front(b);
  }
}

void BlockManager::unhash(BlockId b) {
  Block& blk = blocks_[b];
  if (!cached_.erase(blk.hash, b)) fail("hashed block {} missing from the prefix cache index", b);
  if (record_events_ && !hash_cached(blk.hash)) events_.push_back({KvCacheEvent::Kind::kRemoved, blk.hash, {}, {}});
  extra_keys_.release(blk.extra_id);
  blk.hashed = false;
  blk.hash = 0;
  blk.parent = kNoBlock;
  blk.parent_generation = 0;
  blk.extra_id = 0;
  ++blk.generation;  // children cached under this block no longer link to it
}

AllocResult BlockManager::allocate(SeqId seq, int32_t total_tokens, const CachedPrefix& prefix,
                                   int32_t reserve_tokens) {
  const Plan p = plan(seq, total_tokens, prefix, reserve_tokens);
  AllocResult r;
  if (p.fresh + p.from_free > free_.size()) {
    r.ok = false;
    r.missing_blocks = p.fresh + p.from_free - free_.size();
    return r;
  }
  prefetch_evictions(p.fresh);
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    Seq s;
    s.extra_id = extra_keys_.acquire(prefix.extra_key);
    s.table.reserve(size_t(p.target_blocks));
    // Prefix blocks first, so taking fresh blocks cannot evict them.
    for (BlockId b : prefix.blocks) {
      take_cached_block(b);
      s.table.push_back(b);
    }
    for (int32_t i = 0; i < p.fresh; ++i) s.table.push_back(take_free_block());
    s.num_tokens = total_tokens;
    s.num_computed = prefix.num_tokens;
    s.num_hashed = int32_t(prefix.blocks.size());
    s.reserved_blocks = config_.policy == AllocPolicy::kReserve ? p.target_blocks : 0;
    seqs_.emplace(seq, std::move(s));
    if (config_.prefix_caching) {
      PrefixCacheStats& st = prefix.admission == Admission::kResumed ? resumed_ : fresh_;
      ++st.requests;
      st.queries += prefix.num_prompt_tokens;
      st.hits += prefix.num_tokens;
    }
    return r;
  }
  Seq& s = it->second;
  if (p.cow) {
    const BlockId src = s.table.back();
    const BlockId dst = take_free_block();
    release_block(src);  // stays >= 1: another table still holds it
    s.table.back() = dst;
    ++s.cow_count;
    r.copies.push_back({src, dst});
  }
  for (int32_t i = int32_t(s.table.size()); i < p.target_blocks; ++i) s.table.push_back(take_free_block());
  s.num_tokens = total_tokens;
  return r;
}

void BlockManager::commit(SeqId seq, std::span<const TokenId> tokens, int32_t num_computed_tokens) {
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
  s.num_computed = num_computed_tokens;
  if (!config_.prefix_caching) return;
  const int32_t bs = config_.block_size;
  const uint64_t extra_hash = extra_keys_.hash(s.extra_id);
  const int32_t full = num_computed_tokens / bs;
  // Hash first (a chain: each needs its parent's), prefetching each block's
  // index slot, then insert: the index's cache misses overlap.
  const int32_t first = s.num_hashed;
  std::vector<BlockHash> hashes;
  hashes.reserve(size_t(std::max(0, full - first)));
  BlockHash parent_hash = first == 0 ? kRootBlockHash : blocks_[s.table[size_t(first) - 1]].hash;
  for (int32_t i = first; i < full; ++i) {
    parent_hash = hash_block_tokens(parent_hash, tokens.subspan(size_t(i) * size_t(bs), size_t(bs)), extra_hash) &
                  config_.hash_mask;
    hashes.push_back(parent_hash);
    cached_.prefetch(parent_hash);
  }
  for (int32_t i = first; i < full; ++i) {
    std::span<const TokenId> block_tokens = tokens.subspan(size_t(i) * size_t(bs), size_t(bs));
    const BlockId parent = i == 0 ? kNoBlock : s.table[size_t(i) - 1];
    const BlockHash h = hashes[size_t(i - first)];
    const BlockId b = s.table[size_t(i)];
    Block& blk = blocks_[b];
    if (blk.hashed) {
      // Shared with a sequence that committed it first (fork): same key or a bug.
      if (blk.hash != h || blk.extra_id != s.extra_id || !key_tokens_equal(b, block_tokens)) {
        fail<InvalidArgument>("sequence {}: block {} (index {}) was cached with other tokens", seq, b, i);
      }
    } else {
      blk.hashed = true;
      blk.hash = h;
      blk.parent = parent;
      blk.parent_generation = parent == kNoBlock ? 0 : blocks_[parent].generation;
      blk.extra_id = s.extra_id;
      extra_keys_.retain(s.extra_id);
      std::copy(block_tokens.begin(), block_tokens.end(), key_tokens_.begin() + ptrdiff_t(b) * bs);
      if (record_events_ && !hash_cached(h)) events_.push_back(stored_event(b));
      cached_.insert(h, b);
    }
    s.num_hashed = i + 1;
  }
}

AllocResult BlockManager::fork(SeqId parent, SeqId child) {
  auto pit = seqs_.find(parent);
  if (pit == seqs_.end()) fail<InvalidArgument>("fork of unknown sequence {}", parent);
  if (seqs_.count(child)) fail<InvalidArgument>("fork: sequence {} already exists", child);
  const Seq& p = pit->second;
  AllocResult r;
  Seq c = p;
  c.cow_count = 0;
  if (config_.policy == AllocPolicy::kPaged) {
    for (BlockId b : c.table) ++blocks_[b].ref_count;  // held by the parent: never in the free queue
  } else {
    // The child writes its own reservation: share only the full written blocks.
    const int32_t shared = p.num_tokens / config_.block_size;
    const int32_t fresh = int32_t(p.table.size()) - shared;
    if (fresh > free_.size()) {
      r.ok = false;
      r.missing_blocks = fresh - free_.size();
      return r;
    }
    c.table.resize(size_t(shared));
    for (BlockId b : c.table) ++blocks_[b].ref_count;
    for (int32_t i = 0; i < fresh; ++i) c.table.push_back(take_free_block());
    if (p.num_tokens % config_.block_size != 0) r.copies.push_back({p.table[size_t(shared)], c.table[size_t(shared)]});
  }
  extra_keys_.retain(c.extra_id);
  seqs_.emplace(child, std::move(c));
  return r;
}

void BlockManager::free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  const Seq& s = it->second;
  for (auto b = s.table.rbegin(); b != s.table.rend(); ++b) release_block(*b);
  extra_keys_.release(s.extra_id);
  seqs_.erase(it);
  seen_.erase(seq);
}

bool BlockManager::reset_prefix_cache() {
  if (free_.size() != num_blocks()) return false;
  const bool recording = record_events_;
  record_events_ = false;  // one "all cleared" says it, not a removal per hash
  for (BlockId b = 0; b < num_blocks(); ++b) {
    if (blocks_[b].hashed) unhash(b);
  }
  num_cached_free_ = 0;
  record_events_ = recording;
  if (recording) events_.push_back({KvCacheEvent::Kind::kAllCleared, 0, {}, {}});
  return true;
}

void BlockManager::record_events(bool on) {
  record_events_ = on;
  if (!on) events_.clear();
}

bool BlockManager::hash_cached(BlockHash h) const {
  bool found = false;
  cached_.for_each(h, [&](BlockId) { found = true; });
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

// How many cached blocks precede b in its chain (parents still holding their hash).
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
    if (!blocks_[b].hashed || !seen.emplace(blocks_[b].hash, true).second) continue;
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
    if (blocks_[b].hashed) out.push_back(blocks_[b].hash);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace pagoda
