// What the dashboard sees of the engine: an immutable picture of the KV pool
// (every block's state, refcount, owners, hash prefix, tokens filled), the
// running and waiting sequences, the finishes of the last minute and the
// counters, taken on the engine thread between two steps.
//
// The engine thread builds one only while someone watches (a reader asked
// within SnapshotBoard::kWatchWindowS), at most every snapshot_interval_s,
// and after the step that leaves it idle, so a drained engine is shown
// drained; a reader that finds the picture stale wakes the engine for a new
// one. It publishes it with SnapshotBoard: a pointer swap under a mutex held
// only for the swap, so readers never block a step and the engine never
// waits for a reader. Readers keep the shared_ptr as long as they like.
//
// Only counts and ids: no prompt or output text ever enters a snapshot.
// Copy-on-write is never pending here: a step makes its copies before its
// forward pass, and snapshots are taken between steps.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/stats.h"
#include "kv/block_manager.h"
#include "sampling/finish.h"
#include "sched/sequence.h"

namespace pagoda {

// A block's state, as the dashboard colours it.
enum class BlockState : uint8_t {
  free,      // refcount 0, no hash: nothing worth keeping
  cached,    // refcount 0, hashed: reusable by a prefix hit until evicted
  used,      // held by one sequence
  shared,    // refcount > 1 (a prefix hit or a fork)
  reserved,  // --no-paged-attn: held by a reservation, no token written yet
};
const char* to_string(BlockState s);

struct BlockView {
  BlockState state = BlockState::free;
  int32_t ref_count = 0;
  int32_t lru_rank = -1;         // cached blocks: 0 is evicted first; else -1
  int32_t tokens = 0;            // token slots written (or held: full hashed blocks)
  uint32_t hash_prefix = 0;      // the block hash's top 32 bits; 0: not hashed
  std::vector<uint64_t> owners;  // request ids of the sequences holding it, ascending
  bool operator==(const BlockView&) const = default;
};

// One sequence (a request has one per choice).
struct RequestView {
  uint64_t seq = 0;  // the key: unique over the engine's life
  uint64_t request = 0;
  int32_t choice = 0;
  int32_t priority = 0;
  SeqState state = SeqState::waiting;
  int32_t queue_pos = 0;  // index in the running or the waiting queue
  int32_t prompt_tokens = 0, computed_tokens = 0, cached_tokens = 0, generated_tokens = 0;
  int32_t blocks = 0, preemptions = 0;
  double arrival = 0, deadline = 0;  // engine clock seconds
  bool operator==(const RequestView&) const = default;
};

struct FinishView {
  uint64_t index = 0;  // counts every finish: the list is a window on that sequence
  uint64_t request = 0;
  int32_t choice = 0;
  FinishReason reason = FinishReason::none;
  double time = 0;
  int32_t prompt_tokens = 0, generated_tokens = 0;
  bool operator==(const FinishView&) const = default;
};

// The EngineStats fields the dashboard charts.
struct SnapshotCounters {
  int64_t steps = 0, preemptions = 0, tokens_processed = 0, prompt_tokens = 0, generation_tokens = 0;
  int64_t cached_tokens = 0, requests_received = 0, requests_finished = 0;
  int64_t aborted = 0, timed_out = 0, errored = 0, step_failures = 0, idle_check_failures = 0;
  int32_t running = 0, waiting = 0, last_step_tokens = 0, last_step_experts = 0;
  int32_t kv_used = 0, kv_cached = 0, kv_free = 0;
  int32_t state_slots = 0, state_slots_used = 0;              // a hybrid model's recurrent-state slots (0: none)
  int32_t state_checkpoints = 0, state_checkpoints_used = 0;  // its prefix caching's (0: none)
  double last_step_seconds = 0, last_step_end = 0, step_predicted_s = 0;
  std::array<int64_t, kLatencyBounds.size() + 1> ttft{}, itl{};  // bucket counts, not cumulative
  bool operator==(const SnapshotCounters&) const = default;
};
SnapshotCounters snapshot_counters(const EngineStats& s);

struct AuditView {
  bool enabled = false;  // --audit-every-step
  int64_t passed = 0;    // audits that found nothing
  std::string failure;   // the last violation found; empty if none
  bool operator==(const AuditView&) const = default;
};

struct EngineSnapshot {
  uint64_t version = 0;  // publication number, from 1
  int64_t step = 0;
  double time = 0;  // engine clock seconds when taken
  int32_t block_size = 0;
  bool paged = true;
  std::vector<BlockView> blocks;      // by block id
  std::vector<RequestView> requests;  // by seq, ascending
  std::vector<FinishView> finishes;   // by index, ascending; the last minute, bounded
  SnapshotCounters counters;
  AuditView audit;
  bool operator==(const EngineSnapshot&) const = default;
};

// A sequence as the engine knows it: the scheduler's Sequence and its request.
struct SeqInfo {
  const Sequence* seq = nullptr;
  uint64_t request = 0;
  int32_t choice = 0;
  double arrival = 0, deadline = 0;
};

// The block map of `blocks`: states, LRU ranks, and owners from `seqs`.
std::vector<BlockView> snapshot_blocks(const BlockManager& blocks, std::span<const SeqInfo> seqs);
// The rows of every sequence in the running or waiting queue, by seq.
std::vector<RequestView> snapshot_requests(const BlockManager& blocks, std::span<const Sequence* const> running,
                                           std::span<const Sequence* const> waiting, std::span<const SeqInfo> seqs);

// The recent finishes the engine keeps: at most kMax, none older than kWindowS.
class FinishLog {
 public:
  static constexpr size_t kMax = 512;
  static constexpr double kWindowS = 60;
  void add(FinishView f);
  std::vector<FinishView> recent(double now) const;

 private:
  std::vector<FinishView> ring_;  // kMax slots once full
  size_t next_ = 0;
  uint64_t count_ = 0;
};

// The latest snapshot, shared between the engine thread and its readers.
// Also tracks whether anyone watches, so an unwatched engine builds nothing
// (a picture of 100k blocks costs milliseconds of the engine thread).
class SnapshotBoard {
 public:
  static constexpr double kWatchWindowS = 2.0;  // a reader's interest lasts this long

  void publish(std::shared_ptr<const EngineSnapshot> s);
  std::shared_ptr<const EngineSnapshot> latest() const;  // null before the first

  void watch(double now) { watched_at_.store(now, std::memory_order_relaxed); }  // a reader is interested
  bool watched(double now) const { return now - watched_at_.load(std::memory_order_relaxed) < kWatchWindowS; }

 private:
  mutable std::mutex mu_;  // held only to copy or swap the pointer
  std::shared_ptr<const EngineSnapshot> latest_;
  std::atomic<double> watched_at_{-1e300};
};

}  // namespace pagoda
