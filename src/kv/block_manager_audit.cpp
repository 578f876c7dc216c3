// audit(): recomputes every fact the block manager keeps incrementally and
// compares. O(N + table entries + cached blocks), cheap enough to run after
// every engine step. Reports the first violation, in Invariant order.
#include <algorithm>

#include "kv/block_manager.h"
#include "util/error.h"

namespace pagoda {

const char* invariant_name(Invariant invariant) {
  switch (invariant) {
    case Invariant::kTableEntries: return "table entries";
    case Invariant::kRefcount: return "refcount";
    case Invariant::kFreeQueue: return "free queue";
    case Invariant::kBlockCount: return "block count";
    case Invariant::kTableSize: return "table size";
    case Invariant::kWindow: return "window";
    case Invariant::kHash: return "hash";
    case Invariant::kExtraKeys: return "extra keys";
    case Invariant::kGrowOnly: return "grow only";
    case Invariant::kStateSlots: return "state slots";
    case Invariant::kCheckpoints: return "state checkpoints";
  }
  return "?";
}

void BlockManager::check() {
  if (auto v = audit()) fail("KV block manager invariant '{}' broken: {}", invariant_name(v->invariant), v->message);
}

namespace {

std::optional<AuditViolation> violation(Invariant inv, std::string message) {
  return AuditViolation{inv, std::move(message)};
}

}  // namespace

std::optional<AuditViolation> BlockManager::audit() {
  for (auto part : {&BlockManager::audit_tables, &BlockManager::audit_free_queue, &BlockManager::audit_table_sizes,
                    &BlockManager::audit_windows, &BlockManager::audit_hashes, &BlockManager::audit_extra_keys,
                    &BlockManager::audit_growth, &BlockManager::audit_state_slots, &BlockManager::audit_checkpoints})
    if (auto v = (this->*part)()) return v;
  for (const auto& [id, s] : seqs_) seen_[id] = Seen{s.tables, s.cow_count};
  return std::nullopt;
}

// Table entries: valid ids (kNoBlock only where audit_windows allows it), no
// block twice in one sequence, no block in two groups' tables; refcounts
// equal the number of tables holding each block.
std::optional<AuditViolation> BlockManager::audit_tables() const {
  const int32_t n = num_blocks();
  std::vector<int32_t> holders(size_t(n), 0);
  std::vector<int32_t> group(size_t(n), -1);
  std::vector<uint64_t> stamp(size_t(n), 0);
  uint64_t ordinal = 0;
  for (const auto& [id, s] : seqs_) {
    ++ordinal;
    if (int32_t(s.tables.size()) != num_groups()) {
      return violation(Invariant::kTableEntries,
                       fmt::format("sequence {} has {} tables for {} KV groups", id, s.tables.size(), num_groups()));
    }
    for (int32_t g = 0; g < num_groups(); ++g) {
      const auto& table = s.tables[size_t(g)];
      for (size_t i = 0; i < table.size(); ++i) {
        const BlockId b = table[i];
        if (b == kNoBlock) continue;
        if (b < 0 || b >= n) {
          return violation(Invariant::kTableEntries,
                           fmt::format("sequence {} holds block id {} at index {} of group {}, outside the pool of {}",
                                       id, b, i, g, n));
        }
        if (stamp[b] == ordinal) {
          return violation(
              Invariant::kTableEntries,
              fmt::format("sequence {} holds block {} twice (again at index {} of group {})", id, b, i, g));
        }
        if (group[b] >= 0 && group[b] != g) {
          return violation(Invariant::kTableEntries,
                           fmt::format("block {} is in tables of groups {} and {}", b, group[b], g));
        }
        stamp[b] = ordinal;
        group[b] = g;
        ++holders[b];
      }
    }
  }
  for (BlockId b = 0; b < n; ++b) {
    if (blocks_[b].ref_count != holders[b]) {
      return violation(Invariant::kRefcount, fmt::format("block {} has refcount {} but {} block tables hold it", b,
                                                         blocks_[b].ref_count, holders[b]));
    }
  }
  return std::nullopt;
}

// The free queue holds exactly the unreferenced blocks, and the counts add up.
std::optional<AuditViolation> BlockManager::audit_free_queue() const {
  const int32_t n = num_blocks();
  std::vector<uint8_t> member;
  int32_t walked = 0;
  if (auto broken = free_.check(member, walked)) return violation(Invariant::kFreeQueue, *broken);
  int32_t used = 0, cached_free = 0;
  for (BlockId b = 0; b < n; ++b) {
    const Block& blk = blocks_[b];
    if ((blk.ref_count == 0) != bool(member[b])) {
      return violation(Invariant::kFreeQueue,
                       blk.ref_count == 0
                           ? fmt::format("block {} has refcount 0 but is not in the free queue", b)
                           : fmt::format("block {} has refcount {} but is in the free queue", b, blk.ref_count));
    }
    used += blk.ref_count > 0;
    cached_free += blk.hashed && member[b];
  }
  if (walked != free_.size()) {
    return violation(Invariant::kBlockCount,
                     fmt::format("free queue counts {} blocks but links {}", free_.size(), walked));
  }
  if (free_.size() + used != n) {
    return violation(Invariant::kBlockCount, fmt::format("{} free + {} in use != {} blocks", free_.size(), used, n));
  }
  if (cached_free != num_cached_free_) {
    return violation(Invariant::kBlockCount,
                     fmt::format("{} cached free blocks counted, {} found", num_cached_free_, cached_free));
  }
  return std::nullopt;
}

// Each table covers its tokens (or its reservation); hashed, computed and
// allocated tokens nest.
std::optional<AuditViolation> BlockManager::audit_table_sizes() const {
  const int32_t bs = config_.block_size;
  for (const auto& [id, s] : seqs_) {
    const int32_t want = std::max((s.num_tokens + bs - 1) / bs, s.reserved_blocks);
    for (size_t g = 0; g < s.tables.size(); ++g) {
      if (int32_t(s.tables[g].size()) != want) {
        return violation(Invariant::kTableSize,
                         fmt::format("sequence {} has {} tokens ({} reserved blocks) but {} blocks in group {}", id,
                                     s.num_tokens, s.reserved_blocks, s.tables[g].size(), g));
      }
    }
    if (s.num_hashed < 0 || s.num_hashed * bs > s.num_computed || s.num_computed > s.num_tokens) {
      return violation(Invariant::kTableSize,
                       fmt::format("sequence {}: {} hashed blocks, {} computed and {} allocated tokens do not nest", id,
                                   s.num_hashed, s.num_computed, s.num_tokens));
    }
  }
  return std::nullopt;
}

// Windows: a sliding group's table lacks exactly the blocks wholly behind the
// window of its next query (num_computed - window + 1); a full group's lacks none.
std::optional<AuditViolation> BlockManager::audit_windows() const {
  for (const auto& [id, s] : seqs_) {
    for (int32_t g = 0; g < num_groups(); ++g) {
      const auto& table = s.tables[size_t(g)];
      const int32_t gone = std::min(behind(g, s.num_computed), int32_t(table.size()));
      for (int32_t i = 0; i < int32_t(table.size()); ++i) {
        if ((table[size_t(i)] == kNoBlock) != (i < gone)) {
          return violation(Invariant::kWindow,
                           fmt::format("sequence {} with {} computed tokens: index {} of group {} (window {}) {}", id,
                                       s.num_computed, i, g, window(g),
                                       i < gone ? "still holds a block behind the window" : "lacks its block"));
        }
      }
    }
  }
  return std::nullopt;
}

// Hashes: the map and the hashed blocks name each other exactly; a hashed
// block is full wherever it is held; a sequence's committed blocks are hashed.
std::optional<AuditViolation> BlockManager::audit_hashes() const {
  const int32_t n = num_blocks();
  const int32_t bs = config_.block_size;
  const auto hashed = std::count_if(blocks_.begin(), blocks_.end(), [](const Block& b) { return b.hashed; });
  if (int64_t(cached_.size()) != hashed) {
    return violation(Invariant::kHash,
                     fmt::format("prefix cache maps {} entries but {} blocks are hashed", cached_.size(), hashed));
  }
  std::optional<AuditViolation> stray;
  size_t entries = 0;
  cached_.for_each_entry([&](BlockHash h, BlockId b) {
    ++entries;
    if (!stray && (b < 0 || b >= n || !blocks_[b].hashed || blocks_[b].hash != h)) {
      stray = violation(Invariant::kHash,
                        fmt::format("prefix cache maps hash {:#x} to block {}, which is not hashed under it", h, b));
    }
  });
  if (stray) return stray;
  if (entries != cached_.size()) {
    return violation(Invariant::kHash,
                     fmt::format("prefix cache index counts {} entries but holds {}", cached_.size(), entries));
  }
  for (BlockId b = 0; b < n; ++b) {
    if (blocks_[b].hashed && cached_.count(blocks_[b].hash, b) != 1) {  // found from its home slot, once
      return violation(Invariant::kHash,
                       fmt::format("hashed block {} is not mapped once under its hash {:#x}", b, blocks_[b].hash));
    }
  }
  for (const auto& [id, s] : seqs_) {
    for (size_t g = 0; g < s.tables.size(); ++g) {
      const auto& table = s.tables[g];
      for (size_t i = 0; i < table.size(); ++i) {
        if (table[i] == kNoBlock) continue;
        const Block& blk = blocks_[table[i]];
        if (blk.hashed && int64_t(i + 1) * bs > s.num_tokens) {
          return violation(Invariant::kHash,
                           fmt::format("block {} is hashed but not full: index {} of sequence {} with {} tokens",
                                       table[i], i, id, s.num_tokens));
        }
        if (int32_t(i) < s.num_hashed && !blk.hashed) {
          return violation(Invariant::kHash, fmt::format("committed block {} (index {} of group {} of sequence {}) is "
                                                         "not hashed",
                                                         table[i], i, g, id));
        }
        if (blk.hashed && blk.group != g) {
          return violation(Invariant::kHash,
                           fmt::format("block {} in group {}'s table is keyed for group {}", table[i], g, blk.group));
        }
      }
    }
  }
  return std::nullopt;
}

// Extra keys: every live id is referenced by exactly its holders.
std::optional<AuditViolation> BlockManager::audit_extra_keys() const {
  std::vector<int64_t> extra_refs(extra_keys_.capacity(), 0);
  for (const auto& [id, s] : seqs_) {
    if (s.extra_id >= extra_refs.size() || !extra_keys_.live(s.extra_id)) {
      return violation(Invariant::kExtraKeys, fmt::format("sequence {} has dead extra key id {}", id, s.extra_id));
    }
    ++extra_refs[s.extra_id];
  }
  for (BlockId b = 0; b < num_blocks(); ++b) {
    if (!blocks_[b].hashed) continue;
    const uint32_t e = blocks_[b].extra_id;
    if (e >= extra_refs.size() || !extra_keys_.live(e)) {
      return violation(Invariant::kExtraKeys, fmt::format("block {} has dead extra key id {}", b, e));
    }
    ++extra_refs[e];
  }
  for (uint32_t e = 1; e < extra_refs.size(); ++e) {
    if (extra_refs[e] != extra_keys_.refs(e)) {
      return violation(Invariant::kExtraKeys, fmt::format("extra key id {} has {} references but {} holders", e,
                                                          extra_keys_.refs(e), extra_refs[e]));
    }
  }
  return std::nullopt;
}

// Tables only grow, against what the previous audit saw; an entry changes
// only by copy-on-write of the last block, or by leaving a sliding window
// (a block becomes kNoBlock, for good).
std::optional<AuditViolation> BlockManager::audit_growth() const {
  for (const auto& [id, s] : seqs_) {
    auto it = seen_.find(id);
    if (it == seen_.end()) continue;
    const Seen& old = it->second;
    for (size_t g = 0; g < s.tables.size() && g < old.tables.size(); ++g) {
      const auto &now = s.tables[g], &was = old.tables[g];
      if (now.size() < was.size()) {
        return violation(Invariant::kGrowOnly, fmt::format("sequence {}: table of group {} shrank from {} to {} blocks",
                                                           id, g, was.size(), now.size()));
      }
      for (size_t i = 0; i < was.size(); ++i) {
        if (now[i] == was[i]) continue;
        const bool cow = i + 1 == was.size() && s.cow_count != old.cow_count && was[i] != kNoBlock;
        const bool left_window = now[i] == kNoBlock && window(int32_t(g)) > 0;
        if (!cow && !left_window) {
          return violation(Invariant::kGrowOnly, fmt::format("sequence {}: entry {} of group {} changed from block {} "
                                                             "to {}",
                                                             id, i, g, was[i], now[i]));
        }
      }
    }
  }
  return std::nullopt;
}

// State slots: the pool's free list is sound, every slot it counts as taken
// is held by exactly one live sequence and the other way round, and a
// sequence's committed state is in its own slot exactly when it has computed
// tokens (with none, its first pass must start from zeros).
std::optional<AuditViolation> BlockManager::audit_state_slots() const {
  if (auto broken = slots_.check()) return violation(Invariant::kStateSlots, *broken);
  std::vector<SeqId> owner(size_t(slots_.size()), 0);
  std::vector<uint8_t> owned(size_t(slots_.size()), 0);
  int32_t held = 0;
  for (const auto& [id, s] : seqs_) {
    if (slots_.size() == 0) {
      if (s.slot != kNoSlot || s.state != kNoState)
        return violation(Invariant::kStateSlots,
                         fmt::format("sequence {} holds state slot {} but the model keeps no state", id, s.slot));
      continue;
    }
    if (s.slot < 0 || s.slot >= slots_.size())
      return violation(Invariant::kStateSlots, fmt::format("sequence {} holds state slot {}, outside the pool of {}",
                                                           id, s.slot, slots_.size()));
    if (owned[size_t(s.slot)])
      return violation(Invariant::kStateSlots,
                       fmt::format("state slot {} is held by sequences {} and {}", s.slot, owner[size_t(s.slot)], id));
    if (!slots_.taken(s.slot))
      return violation(Invariant::kStateSlots,
                       fmt::format("sequence {} holds state slot {}, which the pool counts as free", id, s.slot));
    owned[size_t(s.slot)] = 1;
    owner[size_t(s.slot)] = id;
    ++held;
    if ((s.num_computed > 0) != (s.state != kNoState) || (s.state != kNoState && slot_of(s.state) != s.slot))
      return violation(Invariant::kStateSlots,
                       fmt::format("sequence {} with {} computed tokens has its state in buffer {}, slot {} its own",
                                   id, s.num_computed, s.state, s.slot));
  }
  if (held != slots_.num_used())
    return violation(Invariant::kStateSlots,
                     fmt::format("{} state slots are taken but live sequences hold {}", slots_.num_used(), held));
  return std::nullopt;
}

// State checkpoints: the cache's index is sound, each checkpoint names an
// anchor block still hashed in the generation it had when saved (else a
// lookup could start a sequence from another prefix's state), and no save
// decided by commit() was left unmade.
std::optional<AuditViolation> BlockManager::audit_checkpoints() const {
  if (auto broken = checkpoints_.check()) return violation(Invariant::kCheckpoints, *broken);
  for (const auto& e : checkpoints_.entries()) {
    if (e.block == kNoBlock) continue;
    const bool live = e.block >= 0 && e.block < num_blocks() && blocks_[e.block].hashed &&
                      blocks_[e.block].group == 0 && blocks_[e.block].generation == e.generation;
    if (!live)
      return violation(Invariant::kCheckpoints,
                       fmt::format("a state checkpoint names block {} (generation {}), which lost that hash", e.block,
                                   e.generation));
  }
  if (!pending_saves_.empty())
    return violation(Invariant::kCheckpoints,
                     fmt::format("{} state checkpoint copies were never taken", pending_saves_.size()));
  return std::nullopt;
}

}  // namespace pagoda
