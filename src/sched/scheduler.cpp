#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace pagoda {

bool admission_before(const Sequence& a, const Sequence& b) {
  if (a.boosted != b.boosted) return a.boosted;
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.arrival < b.arrival;
}

Scheduler::Scheduler(const SchedulerConfig& config, BlockManager& blocks, std::function<bool()> fail_alloc)
    : config_(config), blocks_(blocks), fail_alloc_(std::move(fail_alloc)) {
  if (config.max_num_seqs < 1 || config.max_batched_tokens < 1 || config.max_bypass < 0 ||
      config.max_preemptions_per_step < 1 || config.max_preemptions_per_request < 1)
    fail<InvalidArgument>("scheduler limits must be positive");
  if (!(config.kv_watermark >= 0 && config.kv_watermark < 1) || config.kv_headroom_per_seq < 0)
    fail<InvalidArgument>("the KV watermark must be in [0, 1) and the headroom per sequence non-negative");
  if (!(config.max_step_ms >= 0 || config.max_step_ms == SchedulerConfig::kAutoStepMs) ||
      !(config.auto_step_multiple > 0) || !(config.auto_step_floor_ms >= 0) || config.min_prefill_chunk < 1 ||
      config.long_prefill_token_threshold < 0)
    fail<InvalidArgument>("the step time limits must be non-negative (max_step_ms: or auto)");
}

int32_t StepBudget::grant(int32_t start, int32_t want) const {
  int32_t n = std::min(want, tokens);
  if (long_threshold > 0) n = std::min(n, long_threshold);
  if (n <= 0 || target_s <= 0 || !cost) return std::max(n, 0);
  // The most tokens whose predicted step stays within the target (the cost
  // grows with the chunk, so a binary search).
  auto fits = [&](int32_t m) {
    StepShape s = shape;
    s.add_chunk(start, m);
    const auto p = cost->predict(s);
    return !p || *p <= target_s;
  };
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  if (!prefill_planned) lo = std::max(lo, std::min(n, min_chunk));  // prefills always progress
  return lo;
}

void StepBudget::take(int32_t start, int32_t n, bool prefill) {
  tokens -= n;
  shape.add_chunk(start, n);
  prefill_planned = prefill_planned || prefill;
}

int32_t Scheduler::chunk(const Sequence& seq, int32_t start, int32_t n) const {
  // A hybrid's prompt checkpoints its state at block boundaries: some pass must end there.
  return blocks_.cut_at_state_checkpoint(start, n, seq.num_prompt);
}

void Scheduler::insert_waiting(Sequence* seq) {
  auto at = std::upper_bound(waiting_.begin(), waiting_.end(), seq,
                             [](const Sequence* a, const Sequence* b) { return admission_before(*a, *b); });
  waiting_.insert(at, seq);
}

void Scheduler::add(Sequence* seq) {
  seq->state = SeqState::waiting;
  insert_waiting(seq);
}

void Scheduler::remove(Sequence* seq) {
  std::erase(running_, seq);
  std::erase(waiting_, seq);
  blocks_.free(seq->id);
}

void Scheduler::preempt(Sequence* seq, int64_t step) {
  std::erase(running_, seq);
  blocks_.free(seq->id);
  seq->num_computed = 0;
  seq->state = SeqState::preempted;
  seq->preempted_at_step = step;
  seq->bypassed = 0;
  if (++seq->preemptions >= config_.max_preemptions_per_request) seq->boosted = true;
  ++total_preemptions_;
  std::erase(waiting_, seq);
  insert_waiting(seq);
}

Sequence* Scheduler::pick_victim() const {
  // Lowest priority (largest value, not boosted), newest arrival.
  Sequence* victim = nullptr;
  for (Sequence* s : running_)
    if (!victim || admission_before(*victim, *s)) victim = s;
  return victim;
}

bool Scheduler::schedule_running(Sequence* seq, int64_t step, StepPlan& plan, StepBudget& budget) {
  const int32_t remaining = seq->num_tokens() - seq->num_computed;
  const int32_t n = seq->whole       ? budget.grant_whole(remaining, plan.num_tokens == 0)
                    : remaining == 1 ? std::min(1, budget.tokens)
                                     : chunk(*seq, seq->num_computed, budget.grant(seq->num_computed, remaining));
  if (n <= 0) return true;
  // A step that failed earlier may have left the table sized for more tokens.
  const int32_t target = std::max(seq->num_computed + n, blocks_.num_tokens(seq->id));
  // Reserved sequences take no new blocks mid-generation: nothing to fail.
  const bool reserved = blocks_.config().policy == AllocPolicy::kReserve;
  for (;;) {
    if (reserved || !alloc_failure_injected()) {
      AllocResult r = blocks_.allocate(seq->id, target);
      if (r) {
        plan.copies.insert(plan.copies.end(), r.copies.begin(), r.copies.end());
        plan.scheduled.push_back({seq, n, seq->num_computed + n == seq->num_tokens()});
        plan.num_tokens += n;
        budget.take(seq->num_computed, n, remaining > 1);
        return true;
      }
    }
    if (int32_t(plan.preempted.size()) >= config_.max_preemptions_per_step) return true;  // try next step
    Sequence* victim = pick_victim();
    // Never preempt a sequence already scheduled this step: its plan stands.
    for (const auto& s : plan.scheduled)
      if (s.seq == victim) return true;
    preempt(victim, step);
    plan.preempted.push_back(victim);
    if (victim == seq) return false;
  }
}

int32_t Scheduler::admission_headroom(int32_t running_after) const {
  // Reserved sequences never grow past their reservation: nothing to keep back.
  if (blocks_.config().policy == AllocPolicy::kReserve) return 0;
  const auto watermark = int32_t(std::ceil(config_.kv_watermark * double(blocks_.num_blocks())));
  return watermark + blocks_.growth_blocks(config_.kv_headroom_per_seq) * running_after;
}

bool Scheduler::try_admit(Sequence* seq, StepPlan& plan, StepBudget& budget, bool whole_only) {
  if (blocks_.slots_needed(seq->id) > blocks_.num_free_slots()) return false;  // rule 7
  const bool resumed = seq->state == SeqState::preempted;
  const Admission admission = resumed ? Admission::kResumed : Admission::kFresh;
  CachedPrefix prefix;  // nothing cached, unless the prefix cache has it
  prefix.extra_key = seq->cache_salt;
  prefix.admission = admission;
  if (!seq->skip_prefix_cache)
    prefix = blocks_.lookup_prefix(std::span<const TokenId>(seq->tokens).first(size_t(seq->num_tokens())),
                                   seq->cache_salt, admission);
  prefix.extra_key = seq->cache_salt;
  const int32_t want = seq->num_tokens() - prefix.num_tokens;
  const int32_t granted = seq->whole  ? budget.grant_whole(want, plan.num_tokens == 0)
                          : want == 1 ? std::min(1, budget.tokens)
                                      : budget.grant(prefix.num_tokens, want);
  // Whole means the budget holds it all: a checkpoint's cut (below) does not count.
  if (granted <= 0 || (whole_only && granted < want)) return false;
  const int32_t n = seq->whole || want == 1 ? granted : chunk(*seq, prefix.num_tokens, granted);
  // A resumed sequence waits until its whole context fits, so it cannot
  // thrash: this step's blocks, then what it holds at its whole length
  // (with sliding windows, less than computing it all in one step would take).
  if (resumed && blocks_.blocks_needed(seq->id, prefix.num_tokens + n, prefix, seq->max_len) +
                         blocks_.blocks_to_grow(prefix.num_tokens + n, seq->num_tokens()) >
                     blocks_.num_free_blocks())
    return false;
  if (!running_.empty() && blocks_.blocks_needed(seq->id, prefix.num_tokens + n, prefix, seq->max_len) +
                                   admission_headroom(int32_t(running_.size()) + 1) >
                               blocks_.num_free_blocks())
    return false;
  if (alloc_failure_injected()) return false;
  AllocResult r = blocks_.allocate(seq->id, prefix.num_tokens + n, prefix, seq->max_len);
  if (!r) return false;
  plan.copies.insert(plan.copies.end(), r.copies.begin(), r.copies.end());
  plan.state_copies.insert(plan.state_copies.end(), r.state_copies.begin(), r.state_copies.end());
  seq->num_computed = prefix.num_tokens;
  if (!resumed) seq->num_cached = prefix.num_tokens;
  seq->state = SeqState::prefill;
  seq->bypassed = 0;
  running_.push_back(seq);
  plan.scheduled.push_back({seq, n, seq->num_computed + n == seq->num_tokens()});
  plan.num_tokens += n;
  budget.take(seq->num_computed, n, want > 1);
  return true;
}

void Scheduler::admit_waiting(int64_t step, StepPlan& plan, StepBudget& budget, bool whole_only) {
  std::vector<Sequence*> queue = waiting_;
  Sequence* blocked_head = nullptr;  // the first request that did not fit
  for (Sequence* seq : queue) {
    if (budget.exhausted() || int32_t(running_.size()) >= config_.max_num_seqs) break;
    // Rule 7: every waiting sequence needs a state slot; none is free.
    if (blocks_.slots_needed(seq->id) > blocks_.num_free_slots()) break;
    if (seq->preempted_at_step == step) continue;
    if (whole_only && !try_admit(seq, plan, budget, true)) break;  // the queue's head stays the head
    if (whole_only) {
      std::erase(waiting_, seq);
      continue;
    }
    if (blocked_head && (blocked_head->bypassed >= config_.max_bypass || blocked_head->state == SeqState::preempted))
      break;  // aging, or a preempted head: nobody passes it now
    if (try_admit(seq, plan, budget)) {
      std::erase(waiting_, seq);
      if (blocked_head) ++blocked_head->bypassed;
    } else if (!blocked_head) {
      blocked_head = seq;
    }
  }
}

StepPlan Scheduler::schedule(int64_t step, const StepCostModel* cost) {
  StepPlan plan;
  StepBudget budget;
  budget.tokens = config_.max_batched_tokens;
  budget.cost = cost;
  budget.min_chunk = config_.min_prefill_chunk;
  budget.long_threshold = config_.long_prefill_token_threshold;
  const bool cold = config_.max_step_ms != 0 && cost && !cost->predict(StepShape{});
  if (cold)
    budget.tokens = int32_t(
        std::min<int64_t>(budget.tokens, int64_t(config_.cold_start_tokens) << std::min<int64_t>(cold_steps_, 24)));
  plan.budget_tokens = budget.tokens;
  if (config_.max_step_ms != 0) {
    schedule_by_time(step, plan, budget);
  } else {
    std::vector<Sequence*> order = running_;
    std::sort(order.begin(), order.end(),
              [](const Sequence* a, const Sequence* b) { return admission_before(*a, *b); });
    for (Sequence* seq : order) {
      if (budget.tokens == 0) break;
      if (seq->state == SeqState::preempted) continue;  // a victim earlier in this loop
      schedule_running(seq, step, plan, budget);
    }
    if (plan.preempted.empty()) admit_waiting(step, plan, budget);  // under pressure: admit nothing new
  }
  plan.shape = budget.shape;
  if (cold && !plan.empty()) ++cold_steps_;
  if (cost && !plan.empty()) plan.predicted_s = cost->predict(plan.shape).value_or(0);
  return plan;
}

StepShape Scheduler::served_batch(const StepShape& decodes) const {
  StepShape batch = decodes;
  int32_t room = config_.max_num_seqs - int32_t(decodes.tokens);
  for (const Sequence* s : running_) {
    if (room <= 0) return batch;
    if (s->num_tokens() - s->num_computed <= 1) continue;  // planned as a decode already
    batch.add_chunk(s->num_tokens(), 1);                   // a prefill: a decode in a few steps
    --room;
  }
  for (const Sequence* s : waiting_) {
    if (room-- <= 0) return batch;
    batch.add_chunk(s->num_tokens(), 1);
  }
  return batch;
}

void Scheduler::set_target(StepPlan& plan, StepBudget& budget) const {
  if (!budget.cost || budget.shape.tokens == 0) return;  // no decodes: the full token budget
  // The yardstick is the decode step of the whole batch being served, not of
  // the decodes running now: a burst's prompts would otherwise get chunks
  // sized by the few streams already decoding and take minutes to start.
  const auto decode_s = budget.cost->predict(served_batch(budget.shape));
  if (!decode_s) return;  // nothing learned yet
  budget.target_s = config_.max_step_ms > 0
                        ? config_.max_step_ms / 1000
                        : std::max(config_.auto_step_floor_ms / 1000, config_.auto_step_multiple * *decode_s);
  plan.target_s = budget.target_s;
  StepBudget fresh = budget;  // what a fresh prompt could get on top of the decodes
  fresh.long_threshold = 0;
  plan.budget_tokens = plan.num_tokens + fresh.grant(0, fresh.tokens);
}

void Scheduler::schedule_by_time(int64_t step, StepPlan& plan, StepBudget& budget) {
  std::vector<Sequence*> decodes, prefills;
  for (Sequence* s : running_) (s->num_tokens() - s->num_computed <= 1 ? decodes : prefills).push_back(s);
  const auto by_admission = [](const Sequence* a, const Sequence* b) { return admission_before(*a, *b); };
  std::sort(decodes.begin(), decodes.end(), by_admission);
  for (Sequence* seq : decodes) {
    if (budget.tokens == 0) break;
    if (seq->state == SeqState::preempted) continue;  // a victim earlier in this loop
    schedule_running(seq, step, plan, budget);
  }
  set_target(plan, budget);

  // Rule 6: aged first, then priority class, then shortest remaining prefill.
  const auto aged = [&](const Sequence* s) { return s->bypassed >= config_.max_bypass; };
  std::sort(prefills.begin(), prefills.end(), [&](const Sequence* a, const Sequence* b) {
    if (aged(a) != aged(b)) return aged(a);
    if (a->boosted != b->boosted) return a->boosted;
    if (a->priority != b->priority) return a->priority < b->priority;
    const int32_t ra = a->num_tokens() - a->num_computed, rb = b->num_tokens() - b->num_computed;
    if (ra != rb) return ra < rb;
    return a->arrival < b->arrival;
  });
  std::vector<Sequence*> later;  // cannot finish this step: after the admissions
  for (Sequence* seq : prefills) {
    if (seq->state == SeqState::preempted) continue;
    const int32_t remaining = seq->num_tokens() - seq->num_computed;
    if (aged(seq) || budget.grant(seq->num_computed, remaining) >= remaining)
      schedule_running(seq, step, plan, budget);
    else
      later.push_back(seq);
  }
  // Under pressure admit nothing new. Requests whose whole prompt fits now
  // go before the running prefills that cannot finish, the rest after them:
  // so new arrivals do not take a long prefill's tokens a chunk at a time,
  // which under overload spread every step over all prompts and finished none.
  if (plan.preempted.empty()) admit_waiting(step, plan, budget, /*whole_only=*/true);
  for (Sequence* seq : later)
    if (seq->state != SeqState::preempted && !budget.exhausted()) schedule_running(seq, step, plan, budget);
  if (plan.preempted.empty()) admit_waiting(step, plan, budget);

  // Aging: a running prefill passed over while others prefilled counts a pass.
  for (Sequence* seq : prefills) {
    if (!seq->is_running()) continue;
    const bool got =
        std::any_of(plan.scheduled.begin(), plan.scheduled.end(), [&](const ScheduledSeq& s) { return s.seq == seq; });
    if (got)
      seq->bypassed = 0;
    else if (budget.prefill_planned)
      seq->bypassed = std::min(seq->bypassed + 1, config_.max_bypass);
  }
}

}  // namespace pagoda
