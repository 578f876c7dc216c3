// Block manager operations on tables: allocate, fork, free, and the capacity
// rules the scheduler plans with. The prefix cache (lookup, commit, events)
// is in block_manager_prefix.cpp, audit() in block_manager_audit.cpp.
#include "kv/block_manager.h"

#include <algorithm>

#include "util/error.h"

namespace pagoda {

namespace {

const BlockManagerConfig& validated(const BlockManagerConfig& config) {
  if (config.num_blocks < 1) fail<InvalidArgument>("KV cache needs at least one block, got {}", config.num_blocks);
  if (config.block_size < 1) fail<InvalidArgument>("KV block size must be >= 1, got {}", config.block_size);
  if (int64_t(config.num_blocks) * config.block_size > INT32_MAX) {
    fail<InvalidArgument>("KV cache of {} blocks x {} tokens is too large", config.num_blocks, config.block_size);
  }
  if (config.group_windows.size() > 255)
    fail<InvalidArgument>("{} KV groups are more than the 255 supported", config.group_windows.size());
  for (int32_t w : config.group_windows)
    if (w < 0) fail<InvalidArgument>("a KV group's window must be >= 0, got {}", w);
  // A cached prefix needs the recurrent state at its end: only checkpoints keep it.
  if (config.num_state_slots > 0 && config.prefix_caching && config.num_state_checkpoints <= 0)
    fail<InvalidArgument>("prefix caching of a model that keeps recurrent state needs state checkpoints");
  if (config.num_state_checkpoints < 0 || (config.num_state_checkpoints > 0 && config.num_state_slots <= 0))
    fail<InvalidArgument>("{} state checkpoints for {} state slots", config.num_state_checkpoints,
                          config.num_state_slots);
  if (config.num_state_checkpoints > 0 && (config.state_checkpoint_interval < config.block_size ||
                                           config.state_checkpoint_interval % config.block_size != 0))
    fail<InvalidArgument>("the state checkpoint interval ({} tokens) must be a multiple of the block size ({})",
                          config.state_checkpoint_interval, config.block_size);
  return config;
}

// Under kReserve a reservation never changes: no group gives blocks back.
std::vector<int32_t> applied_windows(const BlockManagerConfig& config) {
  if (config.group_windows.empty()) return {0};
  if (config.policy == AllocPolicy::kReserve) return std::vector<int32_t>(config.group_windows.size(), 0);
  return config.group_windows;
}

}  // namespace

BlockManager::BlockManager(const BlockManagerConfig& config)
    : config_(validated(config)),
      windows_(applied_windows(config)),
      blocks_(size_t(config.num_blocks)),
      key_tokens_(size_t(config.num_blocks) * size_t(config.block_size)),
      free_(config.num_blocks),
      cached_(config.prefix_caching ? config.num_blocks : 0),
      slots_(config.num_state_slots),
      checkpoints_(config.prefix_caching ? config.num_state_checkpoints : 0, 2 * config.num_state_slots),
      checkpoint_points_{
          config.prefix_caching && config.num_state_checkpoints > 0 ? config.state_checkpoint_interval : 0,
          config.block_size} {
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

std::span<const BlockId> BlockManager::block_table(SeqId seq, int32_t group) const {
  const Seq& s = seq_at(seq);
  if (group < 0 || group >= num_groups()) fail<InvalidArgument>("KV group {} of {}", group, num_groups());
  return s.tables[size_t(group)];
}

int32_t BlockManager::num_held_blocks(SeqId seq) const {
  int32_t n = 0;
  for (const auto& t : seq_at(seq).tables)
    n += int32_t(std::count_if(t.begin(), t.end(), [](BlockId b) { return b != kNoBlock; }));
  return n;
}

int32_t BlockManager::num_tokens(SeqId seq) const { return seq_at(seq).num_tokens; }

StateIo BlockManager::state_io(SeqId seq) const {
  const Seq& s = seq_at(seq);
  if (s.slot == kNoSlot) return {};
  return {s.state, next_buffer(s.slot, s.state)};
}

StateSlot BlockManager::state_slot(SeqId seq) const { return seq_at(seq).slot; }
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
  s.state_checkpoints = checkpoints_.capacity();
  s.state_checkpoints_used = checkpoints_.size();
  s.state_checkpoint_saves = checkpoints_.saves();
  s.state_checkpoint_hits = checkpoints_.hits();
  s.state_checkpoint_evictions = checkpoints_.evictions();
  s.fresh = fresh_;
  s.resumed = resumed_;
  s.state_slots = slots_.size();
  s.state_slots_used = slots_.num_used();
  return s;
}

int32_t BlockManager::blocks_to_grow(int32_t from_tokens, int32_t to_tokens) const {
  if (config_.policy == AllocPolicy::kReserve || to_tokens <= from_tokens) return 0;
  int32_t n = 0;
  for (int32_t g = 0; g < num_groups(); ++g)
    n += (blocks_for(to_tokens) - behind(g, to_tokens)) - (blocks_for(from_tokens) - behind(g, from_tokens));
  return std::max(n, 0);
}

int32_t BlockManager::growth_blocks(int32_t blocks) const {
  int32_t n = 0;
  for (int32_t w : windows_) n += w == 0 ? blocks : std::min(blocks, 1);
  return n;
}

int64_t BlockManager::max_sequence_tokens(int32_t chunk) const {
  KvGroups groups;
  groups.windows = windows_;
  return groups.max_tokens(num_blocks(), chunk, config_.block_size);
}

void BlockManager::check_prefix(SeqId seq, const CachedPrefix& prefix, Plan& p) const {
  const int32_t bs = config_.block_size, G = num_groups();
  const size_t n = prefix.blocks.size();
  if (n && !config_.prefix_caching)
    fail<InvalidArgument>("sequence {}: cached prefix given but prefix caching is off", seq);
  // A hybrid's prefix starts from the checkpoint of its last anchor block, and only then.
  const StateBuffer checkpoint =
      n && slots_.size() > 0 ? checkpoints_.find(prefix.blocks[n / size_t(G) - 1]) : kNoState;
  if (prefix.state != checkpoint || (n && slots_.size() > 0 && checkpoint == kNoState))
    fail<InvalidArgument>("sequence {}: stale cached prefix (its state checkpoint {} is not the one held, {})", seq,
                          prefix.state, checkpoint);
  const int32_t levels = prefix.num_tokens / bs;
  if (prefix.generations.size() != n || prefix.num_tokens != levels * bs || n != size_t(levels) * size_t(G)) {
    fail<InvalidArgument>("sequence {}: malformed cached prefix ({} blocks, {} generations, {} tokens, {} groups)", seq,
                          n, prefix.generations.size(), prefix.num_tokens, G);
  }
  for (int32_t g = 0; g < G; ++g) {
    // The anchor lists its whole chain; another sliding group only its window.
    const int32_t first = g == 0 ? 0 : behind(g, prefix.num_tokens);
    for (int32_t i = 0; i < levels; ++i) {
      const size_t at = size_t(g) * size_t(levels) + size_t(i);
      const BlockId b = prefix.blocks[at];
      if (i < first) {
        if (b != kNoBlock) fail<InvalidArgument>("sequence {}: group {} given block {} behind its window", seq, g, b);
        continue;
      }
      // The anchor's chain links each block to the one before; another
      // group's block links to the anchor's block at its index.
      const BlockId parent = g > 0 ? prefix.blocks[size_t(i)] : i == 0 ? kNoBlock : prefix.blocks[size_t(i) - 1];
      if (b < 0 || b >= num_blocks() || !blocks_[b].hashed || blocks_[b].generation != prefix.generations[at] ||
          blocks_[b].group != g || blocks_[b].parent != parent ||
          (g > 0 && blocks_[b].parent_generation != blocks_[parent].generation)) {
        fail<InvalidArgument>(
            "sequence {}: stale cached prefix (block {} at index {} of group {} changed since lookup)", seq, b, i, g);
      }
      if (blocks_[b].ref_count == 0 && i >= behind(g, prefix.num_tokens)) ++p.from_free;
    }
  }
}

bool BlockManager::needs_cow(const Seq& s, const std::vector<BlockId>& table, int32_t total_tokens) const {
  // The step writes from position num_tokens on: into the last block if it is
  // partial. A partial block shared after fork() must be copied first.
  return total_tokens > s.num_tokens && s.num_tokens % config_.block_size != 0 && !table.empty() &&
         table.back() != kNoBlock && blocks_[table.back()].ref_count > 1;
}

BlockManager::Plan BlockManager::plan(SeqId seq, int32_t total_tokens, const CachedPrefix& prefix,
                                      int32_t reserve_tokens) const {
  Plan p;
  if (total_tokens < 1) fail<InvalidArgument>("sequence {}: allocate for {} tokens", seq, total_tokens);
  const int32_t G = num_groups();
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    // Admission: validate the prefix against the pool as it is now.
    check_prefix(seq, prefix, p);
    if (prefix.num_tokens >= total_tokens) {
      fail<InvalidArgument>("sequence {}: cached prefix of {} tokens leaves nothing to compute of {}", seq,
                            prefix.num_tokens, total_tokens);
    }
    p.target_blocks = blocks_for(total_tokens);
    if (config_.policy == AllocPolicy::kReserve)
      p.target_blocks = std::max(p.target_blocks, blocks_for(reserve_tokens));
    p.fresh = G * (p.target_blocks - prefix.num_tokens / config_.block_size);
    return p;
  }
  const Seq& s = it->second;
  if (!prefix.blocks.empty()) fail<InvalidArgument>("sequence {} is running; a cached prefix is for admission", seq);
  if (total_tokens < s.num_tokens) {
    fail<InvalidArgument>("sequence {}: allocate for {} tokens, but it already has {}", seq, total_tokens,
                          s.num_tokens);
  }
  p.target_blocks = blocks_for(total_tokens);
  const int32_t size = int32_t(s.tables[0].size());
  if (config_.policy == AllocPolicy::kReserve) {
    if (p.target_blocks > size) {
      fail<InvalidArgument>("sequence {}: {} tokens exceed its reservation of {} blocks", seq, total_tokens, size);
    }
    return p;  // within its reservation: nothing to take
  }
  p.fresh = G * std::max(0, p.target_blocks - size);
  for (const auto& table : s.tables) p.fresh += needs_cow(s, table, total_tokens);
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

AllocResult BlockManager::allocate(SeqId seq, int32_t total_tokens, const CachedPrefix& prefix,
                                   int32_t reserve_tokens) {
  const Plan p = plan(seq, total_tokens, prefix, reserve_tokens);
  AllocResult r;
  const int32_t slots = slots_needed(seq);
  if (p.fresh + p.from_free > free_.size() || slots > slots_.num_free()) {
    r.ok = false;
    r.missing_blocks = std::max(0, p.fresh + p.from_free - free_.size());
    r.missing_slots = std::max(0, slots - slots_.num_free());
    return r;
  }
  prefetch_evictions(p.fresh);
  const size_t G = size_t(num_groups());
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    Seq s;
    s.extra_id = extra_keys_.acquire(prefix.extra_key);
    s.tables.resize(G);
    const size_t levels = size_t(prefix.num_tokens / config_.block_size);
    if (levels > 0) {  // the chain goes on from the anchor's last block
      s.tail = prefix.blocks[levels - 1];
      s.tail_generation = blocks_[s.tail].generation;
      s.tail_hash = blocks_[s.tail].hash;
    }
    // Prefix blocks first, so taking fresh blocks cannot evict them; a
    // sliding group's entries behind its window stay empty.
    for (size_t g = 0; g < G; ++g) {
      s.tables[g].reserve(size_t(p.target_blocks));
      const size_t first = size_t(behind(int32_t(g), prefix.num_tokens));
      for (size_t i = 0; i < levels; ++i) {
        const BlockId b = i < first ? kNoBlock : prefix.blocks[g * levels + i];
        if (b != kNoBlock) take_cached_block(b);
        s.tables[g].push_back(b);
      }
    }
    for (auto& table : s.tables)
      while (int32_t(table.size()) < p.target_blocks) table.push_back(take_free_block());
    s.num_tokens = total_tokens;
    s.num_computed = prefix.num_tokens;
    s.num_hashed = int32_t(levels);
    s.reserved_blocks = config_.policy == AllocPolicy::kReserve ? p.target_blocks : 0;
    if (slots > 0) {
      s.slot = slots_.take();  // checked above: one is free
      if (levels > 0) {        // from the checkpoint at the prefix's end (checked by plan())
        s.state = state_buffer(s.slot, 0);
        r.state_copies.push_back({prefix.state, s.state});
        checkpoints_.touch(s.tail);
      }
    }
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
  for (auto& table : s.tables) {
    if (!needs_cow(s, table, total_tokens)) continue;
    const BlockId src = table.back();
    const BlockId dst = take_free_block();
    release_block(src);  // stays >= 1: another table still holds it
    table.back() = dst;
    ++s.cow_count;
    r.copies.push_back({src, dst});
  }
  for (auto& table : s.tables)
    while (int32_t(table.size()) < p.target_blocks) table.push_back(take_free_block());
  s.num_tokens = std::max(s.num_tokens, total_tokens);
  return r;
}

void BlockManager::release_behind_windows(Seq& s, int32_t old_computed) {
  for (int32_t g = 0; g < num_groups(); ++g) {
    auto& table = s.tables[size_t(g)];
    const int32_t to = std::min(behind(g, s.num_computed), int32_t(table.size()));
    // Oldest first: the free queue evicts them before the window's later blocks.
    for (int32_t i = behind(g, old_computed); i < to; ++i) {
      release_block(table[size_t(i)]);
      table[size_t(i)] = kNoBlock;
    }
  }
}

AllocResult BlockManager::fork(SeqId parent, SeqId child) {
  auto pit = seqs_.find(parent);
  if (pit == seqs_.end()) fail<InvalidArgument>("fork of unknown sequence {}", parent);
  if (seqs_.count(child)) fail<InvalidArgument>("fork: sequence {} already exists", child);
  const Seq& p = pit->second;
  AllocResult r;
  if (slots_needed(child) > slots_.num_free()) {  // before any block moves: all or nothing
    r.ok = false;
    r.missing_slots = 1;
    if (config_.policy == AllocPolicy::kReserve) {
      const int32_t fresh = num_groups() * (int32_t(p.tables[0].size()) - p.num_tokens / config_.block_size);
      r.missing_blocks = std::max(0, fresh - free_.size());
    }
    return r;
  }
  Seq c = p;
  c.cow_count = 0;
  c.slot = kNoSlot;
  c.state = kNoState;
  if (config_.policy == AllocPolicy::kPaged) {
    // Held by the parent: never in the free queue.
    for (const auto& table : c.tables)
      for (BlockId b : table)
        if (b != kNoBlock) ++blocks_[b].ref_count;
  } else {
    // The child writes its own reservation: share only the full written blocks.
    const int32_t shared = p.num_tokens / config_.block_size;
    const int32_t fresh = num_groups() * (int32_t(p.tables[0].size()) - shared);
    if (fresh > free_.size()) {
      r.ok = false;
      r.missing_blocks = fresh - free_.size();
      return r;
    }
    for (size_t g = 0; g < c.tables.size(); ++g) {
      auto& table = c.tables[g];
      table.resize(size_t(shared));
      for (BlockId b : table) ++blocks_[b].ref_count;
      while (table.size() < p.tables[g].size()) table.push_back(take_free_block());
      if (p.num_tokens % config_.block_size != 0)
        r.copies.push_back({p.tables[g][size_t(shared)], table[size_t(shared)]});
    }
  }
  if (slots_.size() > 0) {
    c.slot = slots_.take();
    // The child goes on from the parent's committed state, in a buffer of its own.
    if (p.state != kNoState) {
      c.state = state_buffer(c.slot, 0);
      r.state_copies.push_back({p.state, c.state});
    }
  }
  extra_keys_.retain(c.extra_id);
  seqs_.emplace(child, std::move(c));
  return r;
}

void BlockManager::free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  const Seq& s = it->second;
  // Last index first, every group's block of an index together (the anchor's
  // last), so a prefix's later blocks are evicted before its earlier ones.
  for (size_t i = s.tables[0].size(); i-- > 0;)
    for (size_t g = s.tables.size(); g-- > 0;)
      if (s.tables[g][i] != kNoBlock) release_block(s.tables[g][i]);
  extra_keys_.release(s.extra_id);
  if (s.slot != kNoSlot) slots_.give(s.slot);
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

}  // namespace pagoda
