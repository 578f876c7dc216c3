#include "engine/engine_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>

#include "engine/engine_core_state.h"
#include "engine/faulty_runner.h"
#include "util/error.h"

namespace pagoda {

namespace {

// A running set larger than the state pool cannot exist (each running
// sequence holds a slot): the scheduler's limit says so.
SchedulerConfig capped_by_slots(SchedulerConfig sched, int32_t slots) {
  if (slots > 0) sched.max_num_seqs = std::min(sched.max_num_seqs, slots);
  return sched;
}

// Checkpoints sit on block boundaries: the interval, rounded up to blocks.
int32_t checkpoint_interval(const EngineConfig& config) {
  const int32_t bs = std::max(1, config.block_size);
  return std::max(1, (config.state_checkpoint_interval + bs - 1) / bs) * bs;
}

}  // namespace

EngineCore::EngineCore(const EngineConfig& config, std::unique_ptr<ModelRunner> runner, int32_t num_blocks,
                       std::shared_ptr<const Tokenizer> tokenizer, std::shared_ptr<const Clock> clock,
                       std::vector<TokenId> eog_ids)
    : config_(config),
      faults_(config.faults),
      runner_(config.faults.any() ? std::make_unique<FaultyRunner>(std::move(runner), faults_) : std::move(runner)),
      tokenizer_(std::move(tokenizer)),
      clock_(std::move(clock)),
      eog_ids_(std::move(eog_ids)),
      vocab_size_(runner_->vocab_size()),
      pooling_(runner_->pooling()),
      causal_(runner_->causal()),
      out_width_(runner_->output_width()),
      rank_last_(runner_->rank_reads_last()),
      blocks_(BlockManagerConfig{
          .num_blocks = num_blocks,
          .block_size = config.block_size,
          // A cached prefix is of no use without the recurrent state at its end.
          .prefix_caching = config.prefix_caching && (runner_->state_slots() == 0 || runner_->state_checkpoints() > 0),
          .policy = config.paged ? AllocPolicy::kPaged : AllocPolicy::kReserve,
          .group_windows = runner_->kv_group_windows(),
          .num_state_slots = runner_->state_slots(),
          .num_state_checkpoints = runner_->state_checkpoints(),
          .state_checkpoint_interval = checkpoint_interval(config)}),
      sched_(capped_by_slots(config.sched, runner_->state_slots()), blocks_, [this] { return faults_.fail_alloc(); }) {
  // What applies, as the stats and the dashboard report it.
  config_.prefix_caching = blocks_.config().prefix_caching;
  config_.sched = sched_.config();
  if (tokenizer_ && eog_ids_.empty()) eog_ids_ = tokenizer_->end_of_generation_ids();
  // A generated token would attend to what follows it: such a model only embeds.
  if (!causal_ && pooling_ == Pooling::none)
    fail<InvalidArgument>("this model attends both ways (an encoder): it serves embeddings only, not --pooling none");
  // The longest sequence whose every step fits the pool alone (with KV
  // groups, sliding groups hold only a window and a chunk).
  const int64_t pool_tokens = blocks_.max_sequence_tokens(config.sched.max_batched_tokens);
  const int64_t limit = std::min<int64_t>(runner_->context_length(), pool_tokens);
  if (config.max_model_len > limit)
    fail<InvalidArgument>("--max-model-len {} exceeds what the model ({}) and the KV pool ({} tokens) allow",
                          config.max_model_len, runner_->context_length(), pool_tokens);
  max_model_len_ = int32_t(config.max_model_len > 0 ? config.max_model_len : limit);
  if (max_model_len_ < 2) fail<InvalidArgument>("the KV pool of {} tokens is too small", pool_tokens);
  stats_.per_request = RequestMetrics(max_model_len_);
  publish();
}

EngineCore::~EngineCore() = default;

void EngineCore::validate(const Request& r) const {
  if (r.prompt.empty()) fail<InvalidArgument>("the prompt is empty");
  for (TokenId t : r.prompt)
    if (t < 0 || t >= vocab_size_)
      fail<InvalidArgument>("prompt token id {} is outside the vocabulary (0..{})", t, vocab_size_ - 1);
  if (pooling_ != Pooling::none) {  // an embedding: the prompt alone, once
    if (int64_t(r.prompt.size()) > max_model_len_)
      fail<InvalidArgument>("the input has {} tokens, more than the maximum context length of {} tokens",
                            r.prompt.size(), max_model_len_);
    if (r.n != 1 || r.constraint || r.prompt_logprobs)
      fail<InvalidArgument>("an embedding model takes neither n, a grammar nor prompt_logprobs");
    if (!causal_ && int64_t(r.prompt.size()) > config_.sched.max_batched_tokens)
      fail<InvalidArgument>(
          "the input has {} tokens, more than the {} of --max-batched-tokens: this model attends both ways and "
          "needs all of it in one pass",
          r.prompt.size(), config_.sched.max_batched_tokens);
    return;
  }
  if (int64_t(r.prompt.size()) + 1 > max_model_len_)
    fail<InvalidArgument>(
        "the prompt has {} tokens; with at least one generated token that exceeds the maximum context length of {} "
        "tokens",
        r.prompt.size(), max_model_len_);
  r.sampling.validate();
  r.sampling.validate_vocab(vocab_size_);
  if (r.n < 1 || r.n > config_.max_n) fail<InvalidArgument>("n must be in [1, {}], got {}", config_.max_n, r.n);
  if (r.prompt_logprobs && (*r.prompt_logprobs < 0 || *r.prompt_logprobs > SamplingParams::kMaxLogprobs))
    fail<InvalidArgument>("prompt_logprobs must be in [0, {}], got {}", SamplingParams::kMaxLogprobs,
                          *r.prompt_logprobs);
  if (r.timeout_s && !(*r.timeout_s > 0)) fail<InvalidArgument>("timeout must be positive");
  if (r.constraint && int64_t(r.constraint->vocab().size()) > vocab_size_)
    fail<InvalidArgument>("the grammar's vocabulary has {} tokens, the model {}", r.constraint->vocab().size(),
                          vocab_size_);
  // The grammar's start state, built here on the caller's thread: one too
  // ambiguous to start throws now, not in add() on the engine's.
  if (r.constraint) SeqConstraint probe(r.constraint);
}

void EngineCore::add(uint64_t id, Request r, OutputSink sink) {
  auto req = std::make_unique<RequestState>();
  req->id = id;
  req->sink = std::move(sink);
  req->arrival_time = clock_->now();
  req->deadline = req->arrival_time + r.timeout_s.value_or(config_.request_timeout_s);
  req->request = std::move(r);
  req->open_choices = req->request.n;
  req->choices.assign(size_t(req->request.n), 0);
  faults_.poison(id);  // counted here; the runner fails every pass that carries it

  // One sequence prefills the prompt; the other choices fork from it after.
  auto s = std::make_unique<SeqRun>();
  s->req = req.get();
  s->seq.id = next_seq_id_++;
  s->seq.tokens = req->request.prompt;
  s->seq.num_prompt = int32_t(s->seq.tokens.size());
  const auto& sp = req->request.sampling;
  s->seq.max_len = int32_t(
      std::min<int64_t>(max_model_len_, sp.max_tokens ? int64_t(s->seq.num_prompt) + *sp.max_tokens : max_model_len_));
  s->seq.priority = req->request.priority;
  s->seq.arrival = next_arrival_++;
  s->seq.cache_salt = req->request.cache_salt;
  s->rng = Rng(sp.seed.value_or(random_seed()));
  s->history = TokenHistory(s->seq.tokens);
  if (tokenizer_) s->decoder.emplace(*tokenizer_, false, !sp.skip_special_tokens);
  s->stops.emplace(sp.stop, sp.include_stop_str_in_output);
  if (req->request.constraint)
    s->constraint.emplace(req->request.constraint, req->request.constraint_after, req->request.constraint_gate);
  s->want_prompt_logprobs = s->seq.skip_prefix_cache = req->request.prompt_logprobs.has_value();
  if (pooling_ != Pooling::none) {
    s->seq.max_len = s->seq.num_prompt;
    // A cached prefix has no hidden states; the last position is always computed.
    s->seq.skip_prefix_cache = pooling_ != Pooling::last && !(pooling_ == Pooling::rank && rank_last_);
  }
  if (!causal_) s->seq.whole = s->seq.skip_prefix_cache = true;  // a prefix's K/V depend on what follows it
  req->choices[0] = s->seq.id;
  sched_.add(&s->seq);
  seqs_.emplace(s->seq.id, std::move(s));
  requests_.emplace(id, std::move(req));
  ++stats_.requests_received;
  stats_.prompt_tokens += int64_t(requests_[id]->request.prompt.size());
}

void EngineCore::cancel(uint64_t id, FinishReason why, const std::string& message) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  // Copy: finishing the last choice erases the request.
  const std::vector<SeqId> choices = it->second->choices;
  const int32_t n = it->second->request.n;
  for (int32_t c = 0; c < n; ++c) {
    if (requests_.find(id) == requests_.end()) break;
    SeqId sid = choices[size_t(c)];
    if (sid == 0) {
      // A choice not forked yet: it ends with the request, on the first choice's sequence.
      continue;
    }
    auto s = seqs_.find(sid);
    if (s != seqs_.end() && !s->second->finished) finish(*s->second, why, message);
  }
}

void EngineCore::deliver(RequestState& req, int32_t choice, RequestOutput&& out) {
  out.request_id = req.id;
  out.choice = choice;
  out.num_prompt_tokens = int32_t(req.request.prompt.size());
  out.num_cached_tokens = req.num_cached_tokens;
  if (req.reader_gone || !req.sink) return;
  bool alive = false;
  const StepPhase outer = trace_.enter(StepPhase::handoff);
  try {
    alive = req.sink(std::move(out));
  } catch (const std::exception& e) {
    spdlog::warn("request {}: output sink threw: {}", req.id, e.what());
  }
  trace_.enter(outer);
  if (!alive) {
    req.reader_gone = true;
    readers_gone_.push_back(req.id);
  }
}

void EngineCore::finish(SeqRun& s, FinishReason reason, const std::string& error) {
  if (s.finished) return;
  s.finished = true;
  sched_.remove(&s.seq);
  s.seq.state = SeqState::finished;
  finished_.push_back(s.seq.id);
  RequestState& req = *s.req;
  finish_log_.add({.request = req.id,
                   .choice = s.choice,
                   .reason = reason,
                   .time = clock_->now(),
                   .prompt_tokens = s.seq.num_prompt,
                   .generated_tokens = s.seq.num_output()});
  // A request counts once in the terminal counters: as its worst outcome
  // (error, then timeout, then abort), else as its last choice ended.
  if (reason >= req.outcome || req.outcome < FinishReason::abort) req.outcome = reason;

  RequestOutput out;
  out.finish = reason;
  out.error = error;
  // A natural end releases text held back for stop strings or a split character.
  if ((reason == FinishReason::stop || reason == FinishReason::length) && !s.stops->stopped()) {
    const auto step = s.stops->push(s.decoder ? s.decoder->flush() : "");
    out.text = step.text + (step.stopped ? "" : s.stops->flush());
  }
  if (reason == FinishReason::stop && pooling_ != Pooling::none) out.embedding = std::move(s.pooled);
  if (reason == FinishReason::stop && s.stops && s.stops->stopped())
    out.stop_string = req.request.sampling.stop.at(size_t(s.stops->stop_index()));
  else if (reason == FinishReason::stop)
    out.stop_token = s.stop_token;
  // Choices not forked yet (the request ended before its prompt was
  // computed) end with the first one, each with its own terminal event.
  const int32_t last_choice = (s.choice == 0 && !req.forked) ? req.request.n - 1 : s.choice;
  for (int32_t c = s.choice; c <= last_choice; ++c) {
    RequestOutput o;
    if (c == s.choice) {
      o = std::move(out);
    } else {
      o.finish = reason;
      o.error = error;
    }
    o.request_done = --req.open_choices == 0;
    deliver(req, c, std::move(o));
  }
  if (req.open_choices == 0) {
    switch (req.outcome) {
      case FinishReason::stop: ++stats_.finished_stop; break;
      case FinishReason::length: ++stats_.finished_length; break;
      case FinishReason::abort: ++stats_.aborted; break;
      case FinishReason::timeout: ++stats_.timed_out; break;
      case FinishReason::error: ++stats_.errored; break;
      case FinishReason::none: break;
    }
    const double end = clock_->now();
    stats_.e2e.observe(end - req.arrival_time);
    stats_.per_request.on_finish({req.arrival_time, req.scheduled_time, req.first_token_time, req.last_token_time, end,
                                  int64_t(req.request.prompt.size()), req.generated});
    requests_.erase(req.id);
  }
}

void EngineCore::expire_and_reap() {
  // Readers that left: their requests end as aborted.
  std::vector<uint64_t> gone;
  gone.swap(readers_gone_);
  for (uint64_t id : gone) cancel(id, FinishReason::abort, "the client went away");
  // Deadlines, wherever the request is.
  const double now = clock_->now();
  std::vector<uint64_t> expired;
  for (const auto& [id, req] : requests_)
    if (now >= req->deadline) expired.push_back(id);
  for (uint64_t id : expired) cancel(id, FinishReason::timeout, "the request timed out");
}

void EngineCore::build_batch(std::span<const ScheduledSeq> part, Batch& batch) const {
  batch.tokens.clear();
  batch.block_tables.clear();
  batch.requests.clear();
  batch.state_in.clear();
  batch.state_out.clear();
  batch.num_groups = blocks_.num_groups();
  batch.step = step_;
  std::vector<std::span<const int32_t>> tables;
  for (const auto& sc : part) {
    const Sequence& seq = *sc.seq;
    auto it = seqs_.find(seq.id);
    const SeqRun* run = it != seqs_.end() ? it->second.get() : nullptr;
    tables.clear();
    for (int32_t g = 0; g < batch.num_groups; ++g) tables.push_back(blocks_.block_table(seq.id, g));
    const int s = batch.add_sequence(tables, run ? run->req->id : 0);
    if (blocks_.num_state_slots() > 0) {
      const StateIo io = blocks_.state_io(seq.id);
      batch.set_state(s, io.in, io.out);
    }
    // Rows besides the sampled one: prompt logprobs, or an embedding's pooled positions.
    const bool pooled = pooling_ != Pooling::none;
    const auto [first, count] = pooled ? pooled_span(run, sc) : prompt_logprob_span(run, sc);
    for (int32_t i = 0; i < sc.num_tokens; ++i) {
      const int32_t pos = seq.num_computed + i;
      const bool row = pos >= first && pos < first + count;
      batch.add(seq.tokens[size_t(pos)], s, pos, row || (!pooled && sc.sample && i + 1 == sc.num_tokens));
    }
  }
}

void EngineCore::commit(Sequence& seq) {
  blocks_.commit(seq.id, seq.tokens, seq.num_computed, blocks_.state_checkpoint_at(seq.num_computed, seq.num_prompt));
  const std::vector<StateCopy> saves = blocks_.take_state_saves();
  if (saves.empty()) return;
  try {
    runner_->copy_states(saves);  // at once: a fork or the slot's next user may write that buffer
  } catch (const std::exception& e) {
    blocks_.drop_state_saves(saves);
    spdlog::warn("step {}: saving a state checkpoint failed ({}); that prefix will be computed again", step_, e.what());
  }
}

void EngineCore::fail_batch(std::span<const ScheduledSeq> part, const std::string& cause) {
  ++stats_.step_failures;
  spdlog::error("step {} failed: {}; ending its {} sequences with an error", step_, cause, part.size());
  for (const auto& sc : part) {
    auto it = seqs_.find(sc.seq->id);
    if (it != seqs_.end()) finish(*it->second, FinishReason::error, cause);
  }
}

void EngineCore::forward(std::span<const ScheduledSeq> part) {
  trace_.enter(StepPhase::forward);
  Batch batch;
  build_batch(part, batch);
  plan_sampling(part);
  const double t0 = clock_->now();
  runner_->forward_sampled(batch, logits_, sampling_, sampled_);
  stats_.time_in_forward += clock_->now() - t0;
  stats_.last_step_experts = runner_->experts_run();
  stats_.experts_run += stats_.last_step_experts;
  stats_.tokens_processed += int64_t(batch.tokens.size());
}

bool EngineCore::run_step(StepPlan& plan) {
  try {
    return run_plan(plan);
  } catch (const DeviceLost& e) {
    lose_device(e.what());
    return false;
  }
}

// A lost device (a sticky GPU fault) is not retried, halved or isolated: the
// step's sequences and every other request end with an error naming the
// cause, every block is freed, the prefix cache is dropped (KV events:
// AllBlocksCleared), and no step runs on the device again; `serve` sees
// EngineStats::device_lost and exits for its supervisor to restart it.
void EngineCore::lose_device(const std::string& cause) {
  device_lost_ = fmt::format("the device was lost: {}", cause);
  stats_.device_lost = cause;
  ++stats_.step_failures;
  spdlog::error("step {}: the device was lost ({}); every request ends with an error, nothing runs again", step_,
                cause);
  end_every_request(device_lost_);
  blocks_.reset_prefix_cache();
}

void EngineCore::end_every_request(const std::string& why) {
  std::vector<uint64_t> open;
  for (const auto& [id, req] : requests_) open.push_back(id);
  for (uint64_t id : open) cancel(id, FinishReason::error, why);
}

bool EngineCore::run_plan(StepPlan& plan) {
  const size_t planned = plan.scheduled.size();
  try {
    runner_->copy_blocks(plan.copies);  // once: every retry below finds them made
    runner_->copy_states(plan.state_copies);
  } catch (const DeviceLost&) {
    throw;
  } catch (const std::exception& e) {
    fail_batch(plan.scheduled, e.what());
    return false;
  }
  for (int attempt = 0;; ++attempt) {
    try {
      forward(plan.scheduled);
      break;
    } catch (const ResourceExhausted& e) {
      // Out of memory: halve the batch (the lowest-priority half is
      // preempted and recomputed later) and retry, a bounded number of times.
      if (attempt >= config_.max_oom_retries || plan.scheduled.size() < 2) {
        isolate_failure(plan.scheduled, e.what());
        return false;
      }
      ++stats_.oom_retries;
      std::sort(plan.scheduled.begin(), plan.scheduled.end(),
                [](const ScheduledSeq& a, const ScheduledSeq& b) { return admission_before(*a.seq, *b.seq); });
      const size_t keep = plan.scheduled.size() / 2;
      for (size_t i = keep; i < plan.scheduled.size(); ++i) sched_.preempt(plan.scheduled[i].seq, step_);
      spdlog::warn("step {}: {}; preempted {} sequences to halve the batch (they will be recomputed)", step_, e.what(),
                   plan.scheduled.size() - keep);
      plan.scheduled.resize(keep);
    } catch (const DeviceLost&) {
      throw;
    } catch (const std::exception& e) {
      isolate_failure(plan.scheduled, e.what());
      return false;
    }
  }
  pooling_ != Pooling::none ? after_pooling_forward(plan.scheduled) : after_forward(plan.scheduled);
  return plan.scheduled.size() == planned;  // a halved batch is not the plan's shape
}

int32_t EngineCore::isolation_budget(size_t num_seqs) {
  // Two passes per halving reach a one-sequence part wherever the failure
  // is, so even a step whose every pass fails ends at least one sequence.
  return 2 * int32_t(std::bit_width(num_seqs - 1)) + 2;
}

void EngineCore::isolate_failure(std::span<const ScheduledSeq> all, const std::string& cause) {
  ++stats_.step_failures;
  spdlog::warn("step {}: the forward pass of {} sequences failed ({}); retrying them in halves", step_, all.size(),
               cause);
  struct Part {
    size_t begin, end;
  };
  std::vector<Part> todo;  // a stack: the first half of the latest failure runs next
  auto split = [&todo](size_t begin, size_t end) {
    if (end - begin == 1) {
      todo.push_back({begin, end});  // the first failure of a lone sequence: once more, alone
      return;
    }
    const size_t mid = begin + (end - begin) / 2;
    todo.push_back({mid, end});
    todo.push_back({begin, mid});
  };
  split(0, all.size());
  int32_t budget = isolation_budget(all.size());
  size_t ended = 0, deferred = 0;
  while (!todo.empty()) {
    const Part p = todo.back();
    todo.pop_back();
    const auto part = all.subspan(p.begin, p.end - p.begin);
    if (budget == 0) {
      deferred += part.size();  // not computed this step; scheduled again next step
      continue;
    }
    --budget;
    ++stats_.forward_retries;
    try {
      forward(part);
    } catch (const DeviceLost&) {
      throw;
    } catch (const std::exception& e) {
      if (part.size() > 1) {
        split(p.begin, p.end);
      } else if (auto it = seqs_.find(part[0].seq->id); it != seqs_.end()) {
        ++ended;
        finish(*it->second, FinishReason::error, std::string("the forward pass failed for this request: ") + e.what());
      }
      continue;
    }
    pooling_ != Pooling::none ? after_pooling_forward(part) : after_forward(part);
  }
  if (ended > 0 || deferred > 0)
    spdlog::warn("step {}: {} sequences failed alone and ended with an error; {} wait for the next step", step_, ended,
                 deferred);
}

bool EngineCore::step() {
  ++step_;
  const double t0 = clock_->now();
  if (!device_lost_.empty()) {  // nothing runs on a lost device: whatever arrived ends at once
    end_every_request(device_lost_);
    settle(t0);
    return false;
  }
  trace_.enter(StepPhase::reap);
  expire_and_reap();
  trace_.enter(StepPhase::schedule);
  StepPlan plan = sched_.schedule(step_, &cost_);
  const bool ran = !plan.empty();
  if (ran) {
    const int64_t generated_before = begin_step(plan);
    const bool clean = run_step(plan);
    end_step(plan, clean, clock_->now() - t0, stats_.generation_tokens - generated_before);
  }
  settle(t0);
  return ran;
}

// The bookkeeping before a pass: preemptions logged, first-scheduled times,
// the step-start hook. Returns the generated-token count the step starts from.
int64_t EngineCore::begin_step(const StepPlan& plan) {
  if (!plan.preempted.empty()) {
    int64_t tokens = 0;
    for (const Sequence* p : plan.preempted) tokens += p->num_tokens();
    spdlog::warn("step {}: preempted {} sequences ({} tokens; the KV cache is full; they will be recomputed)", step_,
                 plan.preempted.size(), tokens);
  }
  for (const ScheduledSeq& sc : plan.scheduled)
    if (auto it = seqs_.find(sc.seq->id); it != seqs_.end() && it->second->req->scheduled_time < 0)
      it->second->req->scheduled_time = clock_->now();
  stats_.last_step_tokens = plan.num_tokens;
  if (on_step_start_)
    on_step_start_({step_, plan.num_tokens, int32_t(sched_.running().size()), int32_t(sched_.waiting().size())});
  return stats_.generation_tokens;
}

// The bookkeeping after a pass: its timing (the whole step, planning and
// sampling included, is what a stream waits for), the cost model, the KV use.
void EngineCore::end_step(const StepPlan& plan, bool clean, double took, int64_t generated) {
  trace_.enter(StepPhase::finish);
  ++trace_.times().steps;
  trace_.times().tokens += generated;
  if (clean) cost_.observe(plan.shape, took);
  stats_.step_duration.observe(took);
  if (plan.target_s > 0) stats_.step_over_target.observe(took / plan.target_s);
  stats_.step_budget_tokens = plan.budget_tokens;
  stats_.step_target_s = plan.target_s;
  stats_.step_cost_predicted_s = plan.predicted_s;
  stats_.per_request.on_step(generated);
  int64_t held = 0;
  for (const Sequence* q : sched_.running()) held += q->num_tokens();
  const int64_t slots = int64_t(blocks_.stats().used_blocks) * blocks_.block_size();
  if (slots > 0) {
    stats_.kv_utilization_sum += double(held) / double(slots);
    ++stats_.kv_utilization_samples;
  }
}

// Every step's end, run or not: the finished dropped, the audit, the idle
// self-check, KV events, the published picture.
void EngineCore::settle(double t0) {
  for (SeqId id : finished_) seqs_.erase(id);
  finished_.clear();
  if (config_.audit_every_step) {
    audit_.enabled = true;
    if (auto v = blocks_.audit()) {
      audit_.failure = fmt::format("{}: {}", invariant_name(v->invariant), v->message);
      fail("KV block manager invariant '{}' broken: {}", invariant_name(v->invariant), v->message);
    }
    ++audit_.passed;
  }
  check_idle();
  kv_events_.flush(blocks_);
  stats_.time_in_step += clock_->now() - t0;
  stats_.last_step_seconds = clock_->now() - t0;
  publish();
}

void EngineCore::set_kv_event_sink(std::shared_ptr<KvEventSink> sink) {
  kv_events_.attach(std::move(sink), blocks_);
  kv_events_.flush(blocks_);
}

bool EngineCore::reset_prefix_cache() {
  const bool done = blocks_.reset_prefix_cache();
  kv_events_.flush(blocks_);
  return done;
}

// SGLang's idle self-check: with no request left, no KV block may be in use.
void EngineCore::check_idle() {
  if (!requests_.empty()) return;
  const KvStats kv = blocks_.stats();
  if (kv.used_blocks == 0 && kv.state_slots_used == 0) {
    idle_leak_reported_ = false;
    return;
  }
  ++stats_.idle_check_failures;
  if (!idle_leak_reported_)
    spdlog::error("idle self-check: no request is left but {} KV blocks and {} state slots are still in use (a leak)",
                  kv.used_blocks, kv.state_slots_used);
  idle_leak_reported_ = true;
}

void EngineCore::publish() {
  const KvStats kv = blocks_.stats();
  stats_.steps = step_;
  stats_.last_step_end = clock_->now();
  stats_.running = int32_t(sched_.running().size());
  stats_.waiting = int32_t(sched_.waiting().size());
  stats_.kv_blocks_total = kv.num_blocks;
  stats_.kv_blocks_used = kv.used_blocks;
  stats_.kv_blocks_cached = kv.cached_blocks;
  stats_.kv_blocks_free = kv.free_blocks;
  stats_.kv_usage = kv.usage;
  stats_.prefix_queries = kv.fresh.queries;
  stats_.prefix_hits = kv.fresh.hits;
  stats_.prefix_caching = blocks_.config().prefix_caching;
  stats_.state_slots_total = kv.state_slots;
  stats_.state_slots_used = kv.state_slots_used;
  stats_.state_checkpoints_total = kv.state_checkpoints;
  stats_.state_checkpoints_used = kv.state_checkpoints_used;
  stats_.state_checkpoint_saves = kv.state_checkpoint_saves;
  stats_.state_checkpoint_hits = kv.state_checkpoint_hits;
  stats_.state_checkpoint_evictions = kv.state_checkpoint_evictions;
  stats_.cached_tokens = kv.fresh.hits + kv.resumed.hits;
  stats_.preemptions = sched_.total_preemptions();
  stats_.faults = faults_.counts();
  stats_.phases = trace_.times();
}

std::shared_ptr<EngineSnapshot> EngineCore::take_snapshot() const {
  auto snap = std::make_shared<EngineSnapshot>();
  snap->step = step_;
  snap->time = clock_->now();
  snap->block_size = blocks_.block_size();
  snap->paged = config_.paged;
  std::vector<SeqInfo> seqs;
  seqs.reserve(seqs_.size());
  for (const auto& [id, s] : seqs_)
    if (!s->finished) seqs.push_back({&s->seq, s->req->id, s->choice, s->req->arrival_time, s->req->deadline});
  snap->blocks = snapshot_blocks(blocks_, seqs);
  snap->requests = snapshot_requests(blocks_, sched_.running(), sched_.waiting(), seqs);
  snap->finishes = finish_log_.recent(snap->time);
  snap->counters = snapshot_counters(stats_);
  snap->audit = audit_;
  return snap;
}

}  // namespace pagoda
