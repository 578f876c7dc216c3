// The scheduling policy: given the queues and the block manager, which
// sequences run this step and how many tokens each computes. State in, plan
// out; no model, no threads, no clock, so every rule is unit-testable.
//
// A step's plan:
//  1. Running sequences first, highest priority (then oldest) first: decode
//     tokens and continuing prefill chunks, within the token budget
//     (--max-batched-tokens). A sequence that cannot get a block preempts the
//     lowest-priority, newest running sequence (recompute: its blocks are
//     freed, it keeps its tokens and goes back to waiting). If it is itself
//     the lowest, it preempts itself. At most max_preemptions_per_step a step.
//  2. Then, if nothing was preempted, waiting sequences are admitted in
//     order (boosted first, then priority, then arrival) while the budget and
//     --max-num-seqs allow: prefix-cache lookup, then the first prefill chunk.
//     A preempted sequence is not looked at again in the step that preempted
//     it, and resumes only when its whole context fits in the free blocks.
//  3. Admission looks ahead (paged mode): the running sequences will grow,
//     and a preemption throws away all of a victim's work. So a sequence is
//     admitted only if, after its allocation, the free blocks still cover a
//     watermark (kv_watermark of the pool) plus kv_headroom_per_seq blocks
//     per running sequence (the new one included). With nothing running the
//     look-ahead is waived, so any sequence that fits the pool can start.
//     With KV groups every count is in blocks of all groups: a running
//     sequence's headroom is kv_headroom_per_seq blocks per full group and
//     one per sliding group (it gives back as it grows), and a resumed
//     sequence's context counts only its windows in sliding groups.
//  4. A waiting head that does not fit does not stall the queue: later
//     requests may pass it, but each pass counts, and after max_bypass passes
//     nothing passes it until it is admitted (aging: it is never starved).
//     Nobody passes a preempted head: the blocks it gave up are for it, else
//     admissions refill them and preempt it (or another) again.
//     A request preempted max_preemptions_per_request times is boosted.
//  5. Time-budgeted steps (max_step_ms != 0; config.h). The cost model
//     (step_cost.h, an input: the engine learns it from its own steps)
//     predicts a step's seconds. Running decodes are planned first, all of
//     them; if the step carries any, it gets a target time: max_step_ms, or
//     in auto mode auto_step_multiple x the predicted decode-only step of the
//     batch being served: those decodes plus one decode token for every
//     other running and waiting sequence, up to max_num_seqs (at least
//     auto_step_floor_ms). Prefill chunks then fill only what
//     the target leaves, so the step's predicted time stays within it, except
//     that the step's first prefill chunk always gets min_prefill_chunk
//     tokens (prefills always progress). A step without decodes (an idle
//     engine) prefills at the full token budget. --max-batched-tokens bounds
//     every step; long_prefill_token_threshold caps any one chunk. No
//     prediction yet (cold start): the token budget, the k-th such step
//     capped at cold_start_tokens << k (the model learns from short steps).
//     Auto multiple 2 and floor 10 ms (docs/performance.md, "Time-budgeted
//     steps"): 2x leaves 1.5x for prediction error under the goal of ITL p99
//     within 3x the decode-only step; the floor keeps a tiny model's chunks
//     from shrinking to where per-step overhead dominates.
//  6. TTFT fairness (time-budgeted mode): prefills share a step by
//     shortest-remaining-prefill first, with aging. Within a priority class,
//     running prefills that can finish in this step go first, shortest first;
//     then waiting requests whose whole prompt fits (from the queue's head,
//     passing no one); then the running prefills that cannot finish, shortest
//     first; then the other admissions (rules 2-4). So one long prompt cannot
//     hold back the short prompts behind it, and under overload new arrivals
//     do not spread every step over all prompts (none finishing). A running
//     prefill left without tokens while others prefilled counts a pass; after
//     max_bypass passes it goes first (it is never starved).
//     With max_step_ms == 0 the order is rule 1's (admission order).
//     Known limit: as planned decodes are never preempted in their step
//     (rule 1), a higher-priority running prefill that needs a block under
//     KV pressure can only preempt sequences not yet planned; it waits for
//     decodes to end or for other victims (with 0, it goes first as before).
//  7. Recurrent state (a hybrid model: the block manager has state slots).
//     A sequence takes a slot at admission, with its first blocks, and keeps
//     it while it runs; so a waiting sequence is admitted only while a slot
//     is free, and a running one never needs another: a tight slot pool
//     queues new work and never preempts. A preempted sequence gives its
//     slot back and recomputes from position 0 in a fresh one.
//  8. Whole inputs (Sequence::whole: a non-causal model's). Such a sequence
//     is never chunked: it gets its whole input in one step or nothing
//     (StepBudget::grant_whole), at admission, when resumed after a
//     preemption (from position 0) and when a failed step is retried.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kv/block_manager.h"
#include "sched/config.h"
#include "sched/sequence.h"
#include "sched/step_cost.h"

namespace pagoda {

struct ScheduledSeq {
  Sequence* seq = nullptr;
  int32_t num_tokens = 0;  // tokens computed this step, from seq->num_computed on
  bool sample = false;     // the step computes the sequence's last token: sample the next
};

struct StepPlan {
  std::vector<ScheduledSeq> scheduled;
  std::vector<BlockCopy> copies;        // copy-on-write: before the forward pass
  std::vector<StateCopy> state_copies;  // hybrid prefix hits: state checkpoints, before the forward pass
  std::vector<Sequence*> preempted;     // preempted by this step's planning
  int32_t num_tokens = 0;
  StepShape shape;            // the cost model's features of the plan
  double predicted_s = 0;     // the cost model's time for the plan; 0: unknown
  double target_s = 0;        // rule 5's target; 0: no time cap this step
  int32_t budget_tokens = 0;  // tokens this step could carry: decodes + what fits the target
  bool empty() const { return scheduled.empty(); }
};

// What is left of a step while it is planned: tokens and (rule 5) time.
struct StepBudget {
  int32_t tokens = 0;
  const StepCostModel* cost = nullptr;
  double target_s = 0;  // > 0: time-capped
  int32_t min_chunk = 0, long_threshold = 0;
  StepShape shape;  // planned so far
  bool prefill_planned = false;
  // Tokens a chunk of up to `want` tokens from position `start` may have.
  int32_t grant(int32_t start, int32_t want) const;
  // All or nothing, for a whole-input sequence (Sequence::whole): `want`
  // when the tokens left hold it or the step is still empty (the engine
  // bounds such inputs by max_batched_tokens), else 0. Time targets, the
  // cold start's cap and long_threshold never split it.
  int32_t grant_whole(int32_t want, bool step_empty) const { return want <= tokens || step_empty ? want : 0; }
  void take(int32_t start, int32_t n, bool prefill);
  // Nothing more can be planned (a fresh chunk would get no token).
  bool exhausted() const { return grant(0, 1) == 0; }
};

class Scheduler {
 public:
  // `fail_alloc` (fault injection) is asked before each allocation; true
  // makes that allocation fail as if the pool were empty.
  Scheduler(const SchedulerConfig& config, BlockManager& blocks, std::function<bool()> fail_alloc = {});

  const SchedulerConfig& config() const { return config_; }

  // A new sequence (state waiting). The caller keeps it alive until remove().
  void add(Sequence* seq);
  // A sequence that already holds blocks and runs (a forked choice).
  void add_running(Sequence* seq) { running_.push_back(seq); }
  // Takes a sequence out of whatever queue holds it and frees its blocks.
  // Idempotent. The caller then marks it finished.
  void remove(Sequence* seq);
  // Recompute preemption: frees its blocks, keeps its tokens, back to waiting.
  void preempt(Sequence* seq, int64_t step);

  // cost: rule 5's cost model; null, or one without a prediction yet: the
  // token budget alone.
  StepPlan schedule(int64_t step, const StepCostModel* cost = nullptr);

  const std::vector<Sequence*>& running() const { return running_; }
  const std::vector<Sequence*>& waiting() const { return waiting_; }  // in admission order
  int64_t total_preemptions() const { return total_preemptions_; }

 private:
  bool schedule_running(Sequence* seq, int64_t step, StepPlan& plan, StepBudget& budget);
  // A prefill chunk of n tokens from `start`, cut where the block manager checkpoints state.
  int32_t chunk(const Sequence& seq, int32_t start, int32_t n) const;
  // whole_only: only if the whole remaining prompt fits this step.
  bool try_admit(Sequence* seq, StepPlan& plan, StepBudget& budget, bool whole_only = false);
  // whole_only: admits the queue's head while it fits whole, passing no one.
  void admit_waiting(int64_t step, StepPlan& plan, StepBudget& budget, bool whole_only = false);
  void schedule_by_time(int64_t step, StepPlan& plan, StepBudget& budget);
  // The planned decodes plus one decode token for each other running and
  // waiting sequence, up to max_num_seqs: the batch the engine is serving.
  StepShape served_batch(const StepShape& decodes) const;
  void set_target(StepPlan& plan, StepBudget& budget) const;
  Sequence* pick_victim() const;
  int32_t admission_headroom(int32_t running_after) const;
  bool alloc_failure_injected() { return fail_alloc_ && fail_alloc_(); }
  void insert_waiting(Sequence* seq);

  SchedulerConfig config_;
  BlockManager& blocks_;
  std::function<bool()> fail_alloc_;
  std::vector<Sequence*> running_;
  std::vector<Sequence*> waiting_;
  int64_t total_preemptions_ = 0;
  int64_t cold_steps_ = 0;  // steps planned before the cost model predicted (rule 5's cold start)
};

// The admission order: boosted first, then lower priority value, then earlier arrival.
bool admission_before(const Sequence& a, const Sequence& b);

}  // namespace pagoda
