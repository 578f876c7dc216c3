// The scheduler tests' fixture: a block manager, a scheduler, and sequences
// whose forward passes the test completes by hand.
#pragma once

#include <memory>
#include <vector>

#include "sched/scheduler.h"

namespace pagoda {

struct Fixture {
  // state_slots > 0: a hybrid model's pool (prefix caching only with checkpoints).
  explicit Fixture(int32_t blocks, SchedulerConfig cfg = {}, int32_t block_size = 4, int32_t state_slots = 0,
                   int32_t checkpoints = 0)
      : bm(BlockManagerConfig{.num_blocks = blocks,
                              .block_size = block_size,
                              .prefix_caching = state_slots == 0 || checkpoints > 0,
                              .policy = AllocPolicy::kPaged,
                              .num_state_slots = state_slots,
                              .num_state_checkpoints = checkpoints}),
        sched(cfg, bm) {}

  Sequence* add(int32_t prompt_len, int32_t priority = 0, int32_t max_len = 1000) {
    auto s = std::make_unique<Sequence>();
    s->id = next_id++;
    for (int32_t i = 0; i < prompt_len; ++i) s->tokens.push_back(int32_t(s->id * 100 + i));
    s->num_prompt = prompt_len;
    s->max_len = max_len;
    s->priority = priority;
    s->arrival = s->id;
    sched.add(s.get());
    seqs.push_back(std::move(s));
    return seqs.back().get();
  }

  // What the engine does after a successful forward pass: commit, and append
  // a token for every sequence that sampled.
  void complete(const StepPlan& plan) {
    for (const auto& sc : plan.scheduled) {
      sc.seq->num_computed += sc.num_tokens;
      bm.commit(sc.seq->id, sc.seq->tokens, sc.seq->num_computed);
      if (sc.sample) {
        sc.seq->tokens.push_back(7);
        sc.seq->state = SeqState::decode;
      }
    }
  }

  BlockManager bm;
  Scheduler sched;
  std::vector<std::unique_ptr<Sequence>> seqs;
  SeqId next_id = 1;
};

inline int32_t tokens_of(const StepPlan& p, const Sequence* s) {
  for (const auto& sc : p.scheduled)
    if (sc.seq == s) return sc.num_tokens;
  return 0;
}

}  // namespace pagoda
