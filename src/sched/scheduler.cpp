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

bool Scheduler::schedule_running(Sequence* seq, int64_t step, StepPlan& plan, int32_t& budget) {
  const int32_t n = std::min(seq->num_tokens() - seq->num_computed, budget);
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
        budget -= n;
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
  return watermark + config_.kv_headroom_per_seq * running_after;
}

bool Scheduler::try_admit(Sequence* seq, StepPlan& plan, int32_t& budget) {
  const bool resumed = seq->state == SeqState::preempted;
  CachedPrefix prefix = blocks_.lookup_prefix(std::span<const TokenId>(seq->tokens).first(size_t(seq->num_tokens())),
                                              seq->cache_salt, resumed ? Admission::kResumed : Admission::kFresh);
  prefix.extra_key = seq->cache_salt;
  const int32_t n = std::min(seq->num_tokens() - prefix.num_tokens, budget);
  if (n <= 0) return false;
  // A resumed sequence waits until its whole context fits, so it cannot thrash.
  if (resumed && blocks_.blocks_needed(seq->id, seq->num_tokens(), prefix, seq->max_len) > blocks_.num_free_blocks())
    return false;
  if (!running_.empty() && blocks_.blocks_needed(seq->id, prefix.num_tokens + n, prefix, seq->max_len) +
                                   admission_headroom(int32_t(running_.size()) + 1) >
                               blocks_.num_free_blocks())
    return false;
  if (alloc_failure_injected()) return false;
  AllocResult r = blocks_.allocate(seq->id, prefix.num_tokens + n, prefix, seq->max_len);
  if (!r) return false;
  plan.copies.insert(plan.copies.end(), r.copies.begin(), r.copies.end());
  seq->num_computed = prefix.num_tokens;
  if (!resumed) seq->num_cached = prefix.num_tokens;
  seq->state = SeqState::prefill;
  seq->bypassed = 0;
  running_.push_back(seq);
  plan.scheduled.push_back({seq, n, seq->num_computed + n == seq->num_tokens()});
  plan.num_tokens += n;
  budget -= n;
  return true;
}

StepPlan Scheduler::schedule(int64_t step) {
  StepPlan plan;
  int32_t budget = config_.max_batched_tokens;

  std::vector<Sequence*> order = running_;
  std::sort(order.begin(), order.end(), [](const Sequence* a, const Sequence* b) { return admission_before(*a, *b); });
  for (Sequence* seq : order) {
    if (budget == 0) break;
    if (seq->state == SeqState::preempted) continue;  // a victim earlier in this loop
    schedule_running(seq, step, plan, budget);
  }

  if (!plan.preempted.empty()) return plan;  // under pressure: admit nothing new this step

  std::vector<Sequence*> queue = waiting_;
  Sequence* blocked_head = nullptr;  // the first request that did not fit
  for (Sequence* seq : queue) {
    if (budget == 0 || int32_t(running_.size()) >= config_.max_num_seqs) break;
    if (seq->preempted_at_step == step) continue;
    if (blocked_head && (blocked_head->bypassed >= config_.max_bypass || blocked_head->state == SeqState::preempted))
      break;  // aging, or a preempted head: nobody passes it now
    if (try_admit(seq, plan, budget)) {
      std::erase(waiting_, seq);
      if (blocked_head) ++blocked_head->bypassed;
    } else if (!blocked_head) {
      blocked_head = seq;
    }
  }
  return plan;
}

}  // namespace pagoda
