// The change between two snapshots of the same engine, compact enough to
// stream every step: runs of changed blocks, sequences added or changed and
// those gone, the finishes that are new and how many old ones aged out, and
// the counters (small; sent whole). apply(old, diff(old, new)) == new, for
// any two snapshots of one engine, in either order of versions.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/snapshot.h"

namespace pagoda {

struct BlockRun {
  int32_t first = 0;              // block id of blocks[0]
  std::vector<BlockView> blocks;  // consecutive ids from first
  bool operator==(const BlockRun&) const = default;
};

struct SnapshotDelta {
  uint64_t from_version = 0, version = 0;
  int64_t step = 0;
  double time = 0;
  std::vector<BlockRun> blocks;
  std::vector<uint64_t> removed;      // seqs no longer queued
  std::vector<RequestView> upserted;  // seqs new or changed, by seq
  size_t finishes_dropped = 0;        // leading finishes of the old list that aged out
  std::vector<FinishView> finishes_added;
  SnapshotCounters counters;
  AuditView audit;
};

// Runs of changed blocks closer than this are merged: a run's header costs
// about as much as a few unchanged blocks.
inline constexpr int32_t kBlockRunGap = 4;

SnapshotDelta diff(const EngineSnapshot& from, const EngineSnapshot& to);
// `from` must be the snapshot the delta was made from (same version).
EngineSnapshot apply(const EngineSnapshot& from, const SnapshotDelta& d);

}  // namespace pagoda
