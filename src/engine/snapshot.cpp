#include "engine/snapshot.h"

#include <algorithm>

namespace pagoda {

const char* to_string(BlockState s) {
  switch (s) {
    case BlockState::free: return "free";
    case BlockState::cached: return "cached";
    case BlockState::used: return "used";
    case BlockState::shared: return "shared";
    case BlockState::reserved: return "reserved";
  }
  return "?";
}

SnapshotCounters snapshot_counters(const EngineStats& s) {
  SnapshotCounters c;
  c.steps = s.steps;
  c.preemptions = s.preemptions;
  c.tokens_processed = s.tokens_processed;
  c.prompt_tokens = s.prompt_tokens;
  c.generation_tokens = s.generation_tokens;
  c.cached_tokens = s.cached_tokens;
  c.requests_received = s.requests_received;
  c.requests_finished = s.requests_finished();
  c.aborted = s.aborted;
  c.timed_out = s.timed_out;
  c.errored = s.errored;
  c.step_failures = s.step_failures;
  c.idle_check_failures = s.idle_check_failures;
  c.running = s.running;
  c.waiting = s.waiting;
  c.last_step_tokens = s.last_step_tokens;
  c.last_step_experts = s.last_step_experts;
  c.kv_used = s.kv_blocks_used;
  c.kv_cached = s.kv_blocks_cached;
  c.kv_free = s.kv_blocks_free;
  c.state_slots = s.state_slots_total;
  c.state_slots_used = s.state_slots_used;
  c.state_checkpoints = s.state_checkpoints_total;
  c.state_checkpoints_used = s.state_checkpoints_used;
  c.last_step_seconds = s.last_step_seconds;
  c.last_step_end = s.last_step_end;
  c.step_predicted_s = s.step_cost_predicted_s;  // the cost model's time for the last step (vs last_step_seconds)
  std::copy_n(s.ttft.counts.begin(), c.ttft.size(), c.ttft.begin());
  std::copy_n(s.itl.counts.begin(), c.itl.size(), c.itl.begin());
  return c;
}

std::vector<BlockView> snapshot_blocks(const BlockManager& blocks, std::span<const SeqInfo> seqs) {
  std::vector<BlockView> out(size_t(blocks.num_blocks()));
  const int32_t bs = blocks.block_size();
  int32_t rank = 0;
  for (BlockId b : blocks.free_queue()) {  // next evicted first
    if (const auto h = blocks.block_hash(b)) {
      out[size_t(b)].state = BlockState::cached;
      out[size_t(b)].lru_rank = rank++;
    }
  }
  for (size_t b = 0; b < out.size(); ++b) {
    BlockView& v = out[b];
    v.ref_count = blocks.ref_count(BlockId(b));
    if (const auto h = blocks.block_hash(BlockId(b))) {
      v.hash_prefix = uint32_t(*h >> 32) | 1u;  // never 0: 0 means "not hashed"
      v.tokens = bs;
    }
  }
  for (const SeqInfo& si : seqs) {
    if (!blocks.contains(si.seq->id)) continue;
    const int32_t filled = std::min(si.seq->num_tokens(), blocks.num_tokens(si.seq->id));
    for (int32_t g = 0; g < blocks.num_groups(); ++g) {
      const auto table = blocks.block_table(si.seq->id, g);
      for (size_t i = 0; i < table.size(); ++i) {
        if (table[i] == kNoBlock) continue;  // behind a sliding window: given back
        BlockView& v = out[size_t(table[i])];
        v.owners.push_back(si.request);
        v.tokens = std::max(v.tokens, std::clamp(filled - int32_t(i) * bs, 0, bs));
      }
    }
  }
  for (BlockView& v : out) {
    if (v.ref_count == 0) continue;
    std::sort(v.owners.begin(), v.owners.end());
    v.state = v.ref_count > 1 ? BlockState::shared : v.tokens == 0 ? BlockState::reserved : BlockState::used;
  }
  return out;
}

std::vector<RequestView> snapshot_requests(const BlockManager& blocks, std::span<const Sequence* const> running,
                                           std::span<const Sequence* const> waiting, std::span<const SeqInfo> seqs) {
  std::vector<RequestView> out;
  auto add_queue = [&](std::span<const Sequence* const> queue) {
    for (size_t i = 0; i < queue.size(); ++i) {
      const Sequence& q = *queue[i];
      auto it = std::find_if(seqs.begin(), seqs.end(), [&](const SeqInfo& s) { return s.seq == &q; });
      if (it == seqs.end()) continue;
      RequestView r;
      r.seq = q.id;
      r.request = it->request;
      r.choice = it->choice;
      r.priority = q.priority;
      r.state = q.state;
      r.queue_pos = int32_t(i);
      r.prompt_tokens = q.num_prompt;
      r.computed_tokens = q.num_computed;
      r.cached_tokens = q.num_cached;
      r.generated_tokens = q.num_output();
      r.blocks = blocks.contains(q.id) ? blocks.num_held_blocks(q.id) : 0;
      r.preemptions = q.preemptions;
      r.arrival = it->arrival;
      r.deadline = it->deadline;
      out.push_back(r);
    }
  };
  add_queue(running);
  add_queue(waiting);
  std::sort(out.begin(), out.end(), [](const RequestView& a, const RequestView& b) { return a.seq < b.seq; });
  return out;
}

void FinishLog::add(FinishView f) {
  f.index = count_++;
  if (ring_.size() < kMax) {
    ring_.push_back(f);
  } else {
    ring_[next_] = f;
    next_ = (next_ + 1) % kMax;
  }
}

std::vector<FinishView> FinishLog::recent(double now) const {
  std::vector<FinishView> out;
  out.reserve(ring_.size());
  for (size_t i = 0; i < ring_.size(); ++i) {
    const FinishView& f = ring_[(next_ + i) % ring_.size()];
    if (now - f.time <= kWindowS) out.push_back(f);
  }
  return out;
}

void SnapshotBoard::publish(std::shared_ptr<const EngineSnapshot> s) {
  std::lock_guard lock(mu_);
  latest_.swap(s);
}  // the old snapshot, if this held its last reference, is freed here, unlocked

std::shared_ptr<const EngineSnapshot> SnapshotBoard::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

}  // namespace pagoda
