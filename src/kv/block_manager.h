// The KV block manager: the bookkeeping of a pool of N fixed-size KV blocks.
// It owns block ids, reference counts, per-sequence block tables, the free
// queue (eviction order) and the prefix cache. It does not own K/V bytes: the
// model side does, and copy-on-write hands it the block copies to make.
//
// One engine thread drives it, once per step:
//   1. admission:  prefix = lookup_prefix(prompt, salt, kFresh or kResumed);
//                  allocate(seq, tokens_after_step, prefix[, reserve_tokens])
//   2. running:    allocate(seq, tokens_after_step)   (decode or prefill chunk)
//                  -> perform result.copies on the K/V storage, then run the model
//   3. success:    commit(seq, all_tokens, num_computed) hashes newly full blocks
//                  (a failed step is simply not committed: nothing gets hashed)
//   4. finish, abort, preempt, error: free(seq)
//
// allocate() is all or nothing: it takes every block the step needs, or
// changes nothing and says how many blocks were missing. Leaks are caught by
// audit(), which checks every invariant in O(N + table entries).
//
// Two allocation policies share all of this: kPaged grows tables block by
// block; kReserve (--no-paged-attn) takes a sequence's whole reservation at
// admission, so it never needs a block mid-generation and is never preempted.
//
// KV groups (kv_groups.h): a sequence holds one table per group, all sized
// for its tokens, all taken or none. Under kPaged a sliding group's table
// gives back, at each commit, the blocks wholly before the window of the next
// query (num_computed - window + 1): their entries become kNoBlock, hashed
// blocks stay cached. A prefix hit is the longest prefix every group can
// serve: full groups all its blocks, sliding groups the blocks of its last
// window. kReserve keeps every block (a reservation never changes).
//
// Recurrent state (hybrid models, num_state_slots > 0): a new sequence's
// first allocate() also takes a state slot (state_slots.h), all or nothing
// with its blocks; fork() gives the child a slot of its own and lists the
// copy of the parent's committed state; commit() makes the buffer the pass
// wrote the committed one; free() gives the slot back. state_io() names the
// buffers a pass reads and writes. Prefix caching needs state checkpoints
// (state_checkpoints.h): commit(..., checkpoint_state) saves the committed
// state of a block-aligned prefix (take_state_saves() lists the copies, which
// the caller makes at once), lookup_prefix() stops at the deepest block with a
// checkpoint, and allocate() lists the copy that starts the sequence from it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kv/block_hash_index.h"
#include "kv/extra_keys.h"
#include "kv/free_block_queue.h"
#include "kv/kv_cache_event.h"
#include "kv/kv_groups.h"
#include "kv/state_checkpoints.h"
#include "kv/state_slots.h"
#include "kv/types.h"

namespace pagoda {

enum class AllocPolicy { kPaged, kReserve };

// Whether a lookup is for a new request or for a preempted one resuming
// (recompute style); their prefix-cache counters are kept apart.
enum class Admission { kFresh, kResumed };

struct BlockManagerConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;  // tokens per block
  bool prefix_caching = true;
  AllocPolicy policy = AllocPolicy::kPaged;
  // Every block hash is ANDed with this. Tests narrow it to force collisions,
  // which must cost hits at most, never serve another prompt's KV.
  BlockHash hash_mask = ~BlockHash{0};
  // Per KV group (KvGroups::windows): 0 full attention, else a sliding
  // window. Empty: one full-attention group. num_blocks counts pages of all groups.
  std::vector<int32_t> group_windows;
  // Recurrent-state slots (kv/state_slots.h); 0: the model keeps no state.
  int32_t num_state_slots = 0;
  // With state slots, prefix caching needs checkpoints (state_checkpoints.h):
  // this many buffers, numbered after the slots' (2 * num_state_slots on),
  // taken every `state_checkpoint_interval` tokens of a prompt (a multiple of
  // block_size) and at its last block boundaries.
  int32_t num_state_checkpoints = 0;
  int32_t state_checkpoint_interval = 512;
};

// The longest run of cached full blocks that starts a prompt, as found by
// lookup_prefix(). Hand it to allocate() for the same sequence before any
// other allocation (another allocation may evict these blocks; allocate()
// rejects a stale prefix). It also carries the sequence's extra key: to admit
// a salted request without a lookup, pass CachedPrefix{.extra_key = salt}.
// With several KV groups, `blocks` holds num_tokens / block_size entries per
// group, group after group: the anchor's whole chain, then each other group's
// blocks, kNoBlock where a sliding group's window does not reach.
struct CachedPrefix {
  std::vector<BlockId> blocks;        // cached blocks, in prompt order (per group, group 0 first)
  std::vector<uint32_t> generations;  // their generations at lookup time
  int32_t num_tokens = 0;             // prefix blocks * block_size: tokens not recomputed
  int32_t num_prompt_tokens = 0;      // tokens looked up (prefix-cache queries)
  std::string extra_key;              // cache salt; part of every block's key
  Admission admission = Admission::kFresh;
  StateBuffer state = kNoState;  // hybrid: the checkpoint of the state at the prefix's end
};

struct AllocResult {
  bool ok = true;
  int32_t missing_blocks = 0;           // when !ok: free blocks short of what the step needs
  int32_t missing_slots = 0;            // when !ok: free state slots short (0 or 1)
  std::vector<BlockCopy> copies;        // copy-on-write: do these before the forward pass
  std::vector<StateCopy> state_copies;  // fork: the child's state, before its next pass
  explicit operator bool() const { return ok; }
};

// Prefix-cache counters, in tokens, recorded once per admitted request.
struct PrefixCacheStats {
  int64_t requests = 0;
  int64_t queries = 0;  // prompt tokens looked up
  int64_t hits = 0;     // of those, tokens served from the cache
};

struct KvStats {
  int32_t num_blocks = 0;
  int32_t free_blocks = 0;             // in the free queue (never used, or refcount 0)
  int32_t used_blocks = 0;             // refcount > 0
  int32_t cached_blocks = 0;           // free but still hashed: reusable by a prefix hit
  int32_t hashed_blocks = 0;           // in the prefix cache, used or not
  double usage = 0;                    // used_blocks / num_blocks
  int64_t evictions = 0;               // cached blocks whose hash was dropped for reuse
  PrefixCacheStats fresh;              // admissions of new requests
  PrefixCacheStats resumed;            // re-admissions of preempted requests
  int32_t state_slots = 0;             // recurrent-state slots; 0: the model keeps no state
  int32_t state_slots_used = 0;        // held by live sequences
  int32_t state_checkpoints = 0;       // checkpoint buffers; 0: none
  int32_t state_checkpoints_used = 0;  // holding a prefix's state
  int64_t state_checkpoint_saves = 0, state_checkpoint_hits = 0, state_checkpoint_evictions = 0;
};

// The state buffers of a sequence's next pass (Batch::set_state).
struct StateIo {
  StateBuffer in = kNoState;   // the committed state; kNoState: zeros (nothing computed yet)
  StateBuffer out = kNoState;  // where the pass leaves the new state
};

// The invariants audit() checks, in the order it checks them.
enum class Invariant {
  kTableEntries,  // table entries name real blocks; no table holds a block twice
  kRefcount,      // a block's refcount equals the number of tables holding it
  kFreeQueue,     // the free queue is well linked; a block is in it iff refcount 0
  kBlockCount,    // free + in use = N; the manager's counters agree with the blocks
  kTableSize,     // a table covers exactly its tokens (or its reservation)
  kWindow,        // a sliding table lacks exactly the blocks behind its window; others lack none
  kHash,          // every hashed block is full and mapped under its hash, and back
  kExtraKeys,     // extra-key reference counts match their holders
  kGrowOnly,      // tables only grow until freed, except copy-on-write of the last entry
  kStateSlots,    // slots used = slots held by live sequences, each once; a computed sequence's state is in its slot
  kCheckpoints,   // each state checkpoint names a block still hashed in its generation; every save was made
};
const char* invariant_name(Invariant invariant);

struct AuditViolation {
  Invariant invariant;
  std::string message;
};

class BlockManager {
 public:
  explicit BlockManager(const BlockManagerConfig& config);

  const BlockManagerConfig& config() const { return config_; }
  int32_t num_blocks() const { return config_.num_blocks; }
  int32_t block_size() const { return config_.block_size; }

  // The longest cached prefix of full blocks for a prompt, never covering its
  // last token (that token is always computed, so the sequence gets logits).
  // Every hit is confirmed against the block's full key: its parent block,
  // token ids and extra key. Empty when prefix caching is off. Changes nothing.
  CachedPrefix lookup_prefix(std::span<const TokenId> prompt, std::string_view extra_key = {},
                             Admission admission = Admission::kFresh) const;

  // Makes `seq` hold blocks for `total_tokens` tokens (what it will have
  // processed after this step). For a new sequence, `prefix` blocks are taken
  // first (refcount +1) and `reserve_tokens` is the reservation of the
  // kReserve policy (prompt + max_tokens, capped at the context; ignored by
  // kPaged). A running sequence grows only at block boundaries (kPaged) or
  // within its reservation (kReserve: beyond it is an InvalidArgument). If the
  // step writes into a shared partial block, that entry is replaced by a copy
  // and the copy is listed in the result. All or nothing.
  [[nodiscard]] AllocResult allocate(SeqId seq, int32_t total_tokens, const CachedPrefix& prefix = {},
                                     int32_t reserve_tokens = 0);

  // How many blocks allocate() with the same arguments would take out of the
  // free queue (fresh blocks, plus cached prefix blocks now at refcount 0);
  // it succeeds iff this is <= num_free_blocks(). Changes nothing.
  int32_t blocks_needed(SeqId seq, int32_t total_tokens, const CachedPrefix& prefix = {},
                        int32_t reserve_tokens = 0) const;

  // After a successful forward pass: the sequence's K/V is written for its
  // first `num_computed_tokens` tokens (`tokens`: all its token ids so far).
  // Blocks that became full enter the prefix cache (when caching is on).
  // checkpoint_state (hybrid, see state_checkpoint_at()): also checkpoint the
  // state here, keyed by the block that ends at num_computed_tokens; the copy
  // to make is then in take_state_saves().
  void commit(SeqId seq, std::span<const TokenId> tokens, int32_t num_computed_tokens, bool checkpoint_state = false);

  // Hybrid prefix caching: whether a prompt of num_prompt tokens checkpoints
  // its state when pos tokens are computed, and the most tokens of a chunk
  // from `start` that stop at the next checkpoint (n when none comes first),
  // so that some pass ends exactly there.
  bool state_checkpoint_at(int32_t pos, int32_t num_prompt) const;
  int32_t cut_at_state_checkpoint(int32_t start, int32_t n, int32_t num_prompt) const;
  // The checkpoint copies commit() decided since the last call: make them
  // before the next forward pass (before the slot's buffer is written again).
  std::vector<StateCopy> take_state_saves() {
    std::vector<StateCopy> out;
    out.swap(pending_saves_);
    return out;
  }
  // Copies that could not be made: their checkpoints are dropped.
  void drop_state_saves(std::span<const StateCopy> failed);
  int32_t num_state_checkpoints() const { return checkpoints_.capacity(); }

  // `child` shares all of `parent`'s blocks (n > 1 sampling). kReserve: the
  // child gets its own reservation, sharing only the full written blocks, and
  // the parent's partial block is copied now (see copies). Fails like allocate.
  [[nodiscard]] AllocResult fork(SeqId parent, SeqId child);

  // The state buffers of `seq`'s next pass; both kNoState without state slots.
  StateIo state_io(SeqId seq) const;
  // The sequence's state slot (kNoSlot: none, or no state slots).
  StateSlot state_slot(SeqId seq) const;
  int32_t num_state_slots() const { return slots_.size(); }
  int32_t num_free_slots() const { return slots_.num_free(); }
  // Slots allocate() would take for `seq`: 1 for a new sequence when the
  // model keeps state, else 0. It succeeds only if this is <= num_free_slots().
  int32_t slots_needed(SeqId seq) const { return slots_.size() > 0 && !contains(seq) ? 1 : 0; }

  // Returns every block of `seq`, last block first, so a prefix's later blocks
  // are evicted before its earlier ones. Hashed blocks stay cached. Idempotent;
  // an unknown sequence is a no-op.
  void free(SeqId seq);

  // Drops every cached hash. Refused (false) while any block is in use.
  bool reset_prefix_cache();

  // KV events (kv_cache_event.h): off by default. While on, the manager
  // records them as they happen; the engine takes them once per step.
  void record_events(bool on);
  std::vector<KvCacheEvent> take_events() {
    std::vector<KvCacheEvent> out;
    out.swap(events_);
    return out;
  }
  // The cache's whole content as "stored" events (parents before children),
  // for a subscriber that must start over.
  std::vector<KvCacheEvent> cached_as_events() const;
  // The distinct hashes in the prefix cache, used blocks or free.
  std::vector<BlockHash> cached_hashes() const;

  bool contains(SeqId seq) const { return seqs_.count(seq) != 0; }
  // One group's table (kNoBlock: behind the window); valid until seq's next change.
  std::span<const BlockId> block_table(SeqId seq, int32_t group = 0) const;
  int32_t num_held_blocks(SeqId seq) const;  // over every group, kNoBlock entries not counted
  int32_t num_tokens(SeqId seq) const;
  int32_t num_computed_tokens(SeqId seq) const;
  size_t num_seqs() const { return seqs_.size(); }

  int32_t num_groups() const { return int32_t(windows_.size()); }
  // A group's window as this manager applies it: 0 under kReserve.
  int32_t window(int32_t group) const { return windows_[size_t(group)]; }

  // Capacity rules for the scheduler, in blocks of all groups. Blocks a
  // running paged sequence takes, between steps, to grow from `from` to `to`
  // computed tokens (0 under kReserve: its reservation holds them).
  int32_t blocks_to_grow(int32_t from_tokens, int32_t to_tokens) const;
  // Blocks a running sequence may take over `blocks` blocks of growth: that
  // many per full group, at most one per sliding group (it gives back as it grows).
  int32_t growth_blocks(int32_t blocks) const;
  // The longest sequence that fits the pool alone, computing at most `chunk`
  // tokens a step.
  int64_t max_sequence_tokens(int32_t chunk) const;

  int32_t num_free_blocks() const { return free_.size(); }
  bool can_allocate(int32_t num_blocks) const { return num_blocks <= free_.size(); }
  int32_t ref_count(BlockId block) const;
  std::optional<BlockHash> block_hash(BlockId block) const;
  std::vector<BlockId> free_queue() const { return free_.to_vector(); }  // next taken first
  KvStats stats() const;

  // Checks every invariant; returns the first violation, or nothing. It also
  // remembers each table, to check at the next audit that it only grew.
  std::optional<AuditViolation> audit();
  void check();  // audit(), throwing pagoda::Error naming the violation

 private:
  // audit()'s parts, in Invariant order.
  std::optional<AuditViolation> audit_tables() const;
  std::optional<AuditViolation> audit_free_queue() const;
  std::optional<AuditViolation> audit_table_sizes() const;
  std::optional<AuditViolation> audit_windows() const;
  std::optional<AuditViolation> audit_hashes() const;
  std::optional<AuditViolation> audit_extra_keys() const;
  std::optional<AuditViolation> audit_growth() const;
  std::optional<AuditViolation> audit_state_slots() const;
  std::optional<AuditViolation> audit_checkpoints() const;
  friend struct BlockManagerTestPeer;

  struct Block {
    BlockHash hash = 0;
    int32_t ref_count = 0;
    uint32_t generation = 0;  // bumped each time the block loses its hash
    // Key: the cached block this one extends (kNoBlock: first), for the
    // anchor group; for another group, the anchor's block at the same index.
    BlockId parent = kNoBlock;
    uint32_t parent_generation = 0;
    uint32_t extra_id = 0;  // key: interned extra key
    bool hashed = false;
    uint8_t group = 0;  // key: the group whose table hashed it
  };

  struct Seq {
    std::vector<std::vector<BlockId>> tables;  // per group; kNoBlock: behind a sliding window
    int32_t num_tokens = 0;                    // tokens the tables are sized for
    int32_t num_computed = 0;                  // tokens whose K/V a committed step wrote
    int32_t num_hashed = 0;                    // leading blocks in the prefix cache
    int32_t reserved_blocks = 0;               // kReserve: blocks per group taken at admission
    uint32_t extra_id = 0;
    uint32_t cow_count = 0;  // copy-on-write replacements (for audit)
    // The anchor's last hashed block, which the next one extends: kept here
    // since a sliding anchor may have given its entry back.
    BlockId tail = kNoBlock;
    uint32_t tail_generation = 0;
    BlockHash tail_hash = 0;
    StateSlot slot = kNoSlot;      // its recurrent-state slot, for its life
    StateBuffer state = kNoState;  // the committed state's buffer; kNoState until a pass is committed
  };

  struct Plan {
    int32_t fresh = 0;      // blocks to pop from the free queue
    int32_t from_free = 0;  // prefix blocks to pull out of the free queue
    int32_t target_blocks = 0;
  };

  const Seq& seq_at(SeqId seq) const;
  Plan plan(SeqId seq, int32_t total_tokens, const CachedPrefix& prefix, int32_t reserve_tokens) const;
  void check_prefix(SeqId seq, const CachedPrefix& prefix, Plan& p) const;
  // The step writes into a shared partial last block of this table: copy it first.
  bool needs_cow(const Seq& s, const std::vector<BlockId>& table, int32_t total_tokens) const;
  void release_behind_windows(Seq& s, int32_t old_computed);
  int32_t behind(int32_t group, int64_t computed) const {
    return blocks_behind_window(windows_[size_t(group)], computed, config_.block_size);
  }
  // The prefix-cache key of group g's block whose anchor chain hash is h.
  BlockHash group_hash(BlockHash h, int32_t g) const;
  // The longest prefix of an anchor chain every group serves (found: each
  // group's blocks, chain.size() per group).
  int32_t longest_hit(std::span<const TokenId> prompt, uint32_t extra_id, const std::vector<BlockHash>& hashes,
                      const std::vector<BlockId>& chain, std::vector<BlockId>& found) const;
  // lookup_prefix()'s two ways to pick the chain among the matching blocks
  // of each level: the longest one every group serves, or for a hybrid the
  // longest that ends with a state checkpoint (returned; kNoState: none).
  size_t longest_chain(std::span<const TokenId> prompt, uint32_t extra_id,
                       const std::vector<std::vector<BlockId>>& levels, const std::vector<BlockHash>& hashes,
                       std::vector<BlockId>& chain, std::vector<BlockId>& best_found) const;
  StateBuffer deepest_checkpoint(std::span<const TokenId> prompt, uint32_t extra_id,
                                 const std::vector<std::vector<BlockId>>& levels, const std::vector<BlockHash>& hashes,
                                 std::vector<BlockId>& chain, std::vector<BlockId>& found) const;
  void prefetch_evictions(int32_t count) const;
  BlockId take_free_block();
  void take_cached_block(BlockId b);
  void release_block(BlockId b);
  void unhash(BlockId b);
  bool hash_cached(BlockHash h) const;
  KvCacheEvent stored_event(BlockId b) const;
  int32_t depth_of(BlockId b) const;
  bool key_tokens_equal(BlockId b, std::span<const TokenId> tokens) const;
  int32_t blocks_for(int64_t tokens) const;

  BlockManagerConfig config_;
  std::vector<int32_t> windows_;  // per group, as applied (all 0 under kReserve)
  std::vector<Block> blocks_;
  std::vector<TokenId> key_tokens_;  // block_size token ids per block: key of hashed blocks
  FreeBlockQueue free_;
  BlockHashIndex cached_;  // hash -> hashed blocks
  ExtraKeyTable extra_keys_;
  StateSlotPool slots_;
  StateCheckpoints checkpoints_;
  CheckpointPoints checkpoint_points_;
  std::vector<StateCopy> pending_saves_;  // commit()'s checkpoint copies, until taken
  std::unordered_map<SeqId, Seq> seqs_;
  int32_t num_cached_free_ = 0;
  int64_t evictions_ = 0;
  PrefixCacheStats fresh_, resumed_;
  bool record_events_ = false;
  std::vector<KvCacheEvent> events_;  // since the last take_events()

  struct Seen {
    std::vector<std::vector<BlockId>> tables;
    uint32_t cow_count = 0;
  };
  std::unordered_map<SeqId, Seen> seen_;  // audit's last view of each table
};

}  // namespace pagoda
