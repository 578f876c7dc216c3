// Test-only hooks into the block manager's internals (it names this struct a
// friend). Each hook breaks exactly one invariant, so audit_test can check
// that audit() names it; the property test also reads a few internals.
#pragma once

#include "kv/block_manager.h"

namespace pagoda {

struct BlockManagerTestPeer {
  // kCheckpoints: the first held checkpoint claims a generation its block never had.
  static void age_checkpoint(BlockManager& m) {
    for (auto& e : m.checkpoints_.entries_)
      if (e.block != kNoBlock) {
        ++e.generation;
        return;
      }
  }

  // kTableEntries: the sequence's table holds its first block a second time
  // (refcount and token count follow, so nothing else is off).
  static void duplicate_first_entry(BlockManager& m, SeqId id) {
    auto& s = m.seqs_.at(id);
    const BlockId b = s.tables[0].front();
    s.tables[0].push_back(b);
    ++m.blocks_[b].ref_count;
    s.num_tokens = int32_t(s.tables[0].size() - 1) * m.block_size() + 1;
  }

  // kRefcount.
  static void bump_refcount(BlockManager& m, BlockId b) { ++m.blocks_[b].ref_count; }

  // kFreeQueue: `in_use` takes the place of free block `in_queue` in the list;
  // both counts stay right, only membership is wrong.
  static void swap_into_free_queue(BlockManager& m, BlockId in_queue, BlockId in_use) {
    auto& links = m.free_.links_;
    auto l = links[in_queue];
    links[in_use] = l;
    links[l.prev].next = in_use;
    links[l.next].prev = in_use;
    links[in_queue] = {};
  }

  // kFreeQueue, structurally: block b's back link names the wrong block.
  static void corrupt_back_link(BlockManager& m, BlockId b) {
    auto& l = m.free_.links_[b];
    l.prev = l.prev == m.free_.sentinel() ? l.next : m.free_.sentinel();
  }

  // kBlockCount.
  static void skew_free_count(BlockManager& m, int32_t delta) { m.free_.size_ += delta; }
  static void skew_cached_count(BlockManager& m, int32_t delta) { m.num_cached_free_ += delta; }

  // kTableSize: the sequence claims more tokens than its table covers.
  static void claim_tokens(BlockManager& m, SeqId id, int32_t delta) { m.seqs_.at(id).num_tokens += delta; }

  // kHash: a hashed block drops out of the map.
  static void unmap(BlockManager& m, BlockId b) { m.cached_.erase(m.blocks_[b].hash, b); }

  // kHash: the sequence's partial last block gets hashed and mapped, with a
  // parent and extra key, as if it were full.
  static void hash_partial_last_block(BlockManager& m, SeqId id) {
    auto& s = m.seqs_.at(id);
    const auto& table = s.tables[0];
    const BlockId b = table.back();
    auto& blk = m.blocks_[b];
    blk.hashed = true;
    blk.hash = 0x1234;
    blk.parent = table.size() > 1 ? table[table.size() - 2] : kNoBlock;
    blk.extra_id = s.extra_id;
    m.extra_keys_.retain(s.extra_id);
    m.cached_.insert(blk.hash, b);
  }

  // kExtraKeys.
  static void leak_extra_key(BlockManager& m, SeqId id) { m.extra_keys_.retain(m.seqs_.at(id).extra_id); }

  // kGrowOnly: entry `index` of a group's table is swapped for a fresh
  // block, refcounts kept right.
  static void replace_entry(BlockManager& m, SeqId id, size_t index, int32_t group = 0) {
    auto& table = m.seqs_.at(id).tables[size_t(group)];
    const BlockId fresh = m.take_free_block();
    m.release_block(table[index]);
    table[index] = fresh;
  }

  // kWindow: a sliding group keeps entry `index`, behind its window, by
  // taking a fresh block for it (refcounts kept right).
  static void refill_behind_window(BlockManager& m, SeqId id, int32_t group, size_t index) {
    m.seqs_.at(id).tables[size_t(group)][index] = m.take_free_block();
  }

  // kWindow: a full group's entry is given back as if behind a window.
  static void drop_entry(BlockManager& m, SeqId id, int32_t group, size_t index) {
    auto& table = m.seqs_.at(id).tables[size_t(group)];
    m.release_block(table[index]);
    table[index] = kNoBlock;
  }

  // kTableEntries: a block of one group's table also enters another group's
  // table of the same index (a page holds one group's layers only).
  static void share_across_groups(BlockManager& m, SeqId id, int32_t from, int32_t to, size_t index) {
    auto& s = m.seqs_.at(id);
    const BlockId b = s.tables[size_t(from)][index];
    m.release_block(s.tables[size_t(to)][index]);
    s.tables[size_t(to)][index] = b;
    ++m.blocks_[b].ref_count;
  }

  // Not an invariant break: reorders the free queue so `b` is taken next.
  static void move_to_front(BlockManager& m, BlockId b) {
    m.free_.remove(b);
    m.free_.push_front(b);
  }

  static bool hashed(const BlockManager& m, BlockId b) { return m.blocks_[b].hashed; }

  // kStateSlots: a slot leaves the pool with no sequence holding it (a leak).
  static void leak_slot(BlockManager& m) { m.slots_.take(); }
  // kStateSlots: `b` gives its slot back and holds `a`'s as well.
  static void share_slot(BlockManager& m, SeqId a, SeqId b) {
    auto& sb = m.seqs_.at(b);
    m.slots_.give(sb.slot);
    sb.slot = m.seqs_.at(a).slot;
    sb.state = sb.state == kNoState ? kNoState : state_buffer(sb.slot, 0);
  }
  // kStateSlots: the committed state points into another slot's buffer.
  static void point_state_at(BlockManager& m, SeqId id, StateBuffer buffer) { m.seqs_.at(id).state = buffer; }
  // kStateSlots: a free slot is listed twice (the free count then lies too).
  static void list_free_slot_twice(BlockManager& m) { m.slots_.free_.push_back(m.slots_.free_.back()); }
};

}  // namespace pagoda
