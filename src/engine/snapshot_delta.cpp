#include "engine/snapshot_delta.h"

#include <algorithm>

#include "util/error.h"

namespace pagoda {
namespace {

std::vector<BlockRun> block_runs(const std::vector<BlockView>& a, const std::vector<BlockView>& b) {
  std::vector<BlockRun> runs;
  int32_t last_changed = -kBlockRunGap - 1;
  for (int32_t i = 0; i < int32_t(b.size()); ++i) {
    if (size_t(i) < a.size() && a[size_t(i)] == b[size_t(i)]) continue;
    if (runs.empty() || i - last_changed > kBlockRunGap) {
      runs.push_back({i, {}});
    } else {  // close to the last run: take the unchanged blocks between along
      for (int32_t j = last_changed + 1; j < i; ++j) runs.back().blocks.push_back(b[size_t(j)]);
    }
    runs.back().blocks.push_back(b[size_t(i)]);
    last_changed = i;
  }
  return runs;
}

}  // namespace

SnapshotDelta diff(const EngineSnapshot& from, const EngineSnapshot& to) {
  SnapshotDelta d;
  d.from_version = from.version;
  d.version = to.version;
  d.step = to.step;
  d.time = to.time;
  d.blocks = block_runs(from.blocks, to.blocks);
  // Both request lists are sorted by seq: one merge walk.
  size_t i = 0, j = 0;
  while (i < from.requests.size() || j < to.requests.size()) {
    if (j == to.requests.size() || (i < from.requests.size() && from.requests[i].seq < to.requests[j].seq)) {
      d.removed.push_back(from.requests[i++].seq);
    } else if (i == from.requests.size() || to.requests[j].seq < from.requests[i].seq) {
      d.upserted.push_back(to.requests[j++]);
    } else {
      if (!(from.requests[i] == to.requests[j])) d.upserted.push_back(to.requests[j]);
      ++i, ++j;
    }
  }
  // Finishes: a window that slides over the finish indices.
  const uint64_t first_kept = to.finishes.empty() ? UINT64_MAX : to.finishes.front().index;
  while (d.finishes_dropped < from.finishes.size() && from.finishes[d.finishes_dropped].index < first_kept)
    ++d.finishes_dropped;
  const uint64_t last_old = from.finishes.empty() ? 0 : from.finishes.back().index + 1;
  for (const FinishView& f : to.finishes)
    if (f.index >= last_old) d.finishes_added.push_back(f);
  d.counters = to.counters;
  d.audit = to.audit;
  return d;
}

EngineSnapshot apply(const EngineSnapshot& from, const SnapshotDelta& d) {
  if (d.from_version != from.version)
    fail<InvalidArgument>("delta from version {} applied to version {}", d.from_version, from.version);
  EngineSnapshot s = from;
  s.version = d.version;
  s.step = d.step;
  s.time = d.time;
  for (const BlockRun& r : d.blocks) {
    const size_t end = size_t(r.first) + r.blocks.size();
    if (end > s.blocks.size()) s.blocks.resize(end);
    std::copy(r.blocks.begin(), r.blocks.end(), s.blocks.begin() + r.first);
  }
  std::erase_if(s.requests, [&](const RequestView& r) {
    return std::find(d.removed.begin(), d.removed.end(), r.seq) != d.removed.end();
  });
  for (const RequestView& u : d.upserted) {
    auto it = std::lower_bound(s.requests.begin(), s.requests.end(), u.seq,
                               [](const RequestView& r, uint64_t seq) { return r.seq < seq; });
    if (it != s.requests.end() && it->seq == u.seq)
      *it = u;
    else
      s.requests.insert(it, u);
  }
  s.finishes.erase(s.finishes.begin(), s.finishes.begin() + std::min(d.finishes_dropped, s.finishes.size()));
  s.finishes.insert(s.finishes.end(), d.finishes_added.begin(), d.finishes_added.end());
  s.counters = d.counters;
  s.audit = d.audit;
  return s;
}

}  // namespace pagoda
