// The sampling half of EngineCore::step(): after a forward pass, each
// scheduled sequence's logits become its next token (constraints, logit
// adjustments, logprobs, stops), choices fork, and prompt logprobs are kept.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "engine/engine_core_state.h"
#include "sampling/logit_adjust.h"
#include "util/error.h"

namespace pagoda {

std::pair<int32_t, int32_t> EngineCore::prompt_logprob_span(const SeqRun* run, const ScheduledSeq& sc) {
  if (!run || !run->want_prompt_logprobs) return {0, 0};
  // Position p's logits give token p + 1's logprob: positions up to the prompt's second-last.
  const int32_t first = std::max(sc.seq->num_computed, run->prompt_logprobs_next);
  const int32_t end = std::min(sc.seq->num_computed + sc.num_tokens, sc.seq->num_prompt - 1);
  return {first, std::max(0, end - first)};
}

bool EngineCore::record_prompt_logprobs(SeqRun& s, int32_t first, int32_t count, size_t row) {
  const size_t V = size_t(vocab_size_);
  const int32_t k = *s.req->request.prompt_logprobs;
  try {
    for (int32_t i = 0; i < count; ++i) {
      const std::span<const float> logits(logits_.data() + (row + size_t(i)) * V, V);
      GeneratedLogprobs lp;
      lp.token = s.seq.tokens[size_t(first + i + 1)];
      lp.logprob = token_logprob(logits, lp.token);
      lp.top = top_logprobs(logits, k);
      const float mine = logits[size_t(lp.token)];
      lp.rank = 1 + int32_t(std::count_if(logits.begin(), logits.end(), [mine](float x) { return x > mine; }));
      s.req->prompt_logprobs.push_back(std::move(lp));
    }
  } catch (const std::exception& e) {
    finish(s, FinishReason::error, std::string("prompt logprobs: ") + e.what());
    return false;
  }
  s.prompt_logprobs_next = first + count;
  return true;
}

bool EngineCore::samples_on_device(const SeqRun& s) const {
  // A grammar needs its mask on the logits, and a forking first token the
  // logits its other choices sample from: those rows come back to the host.
  const bool forks = s.seq.num_output() == 0 && s.choice == 0 && s.req->request.n > 1 && !s.req->forked;
  return !s.finished && !s.constraint && !forks;
}

void EngineCore::plan_sampling(std::span<const ScheduledSeq> part) {
  sampling_.clear();
  if (!config_.sample_on_device || !runner_->samples_rows() || pooling_ != Pooling::none) return;
  // The pass's logits rows, in after_forward()'s order: a chunk's prompt-logprob rows, then its sampled row.
  for (const auto& sc : part) {
    auto it = seqs_.find(sc.seq->id);
    const SeqRun* run = it != seqs_.end() ? it->second.get() : nullptr;
    sampling_.row_of.insert(sampling_.row_of.end(), size_t(prompt_logprob_span(run, sc).second), -1);
    if (!sc.sample) continue;
    if (!run || !samples_on_device(*run)) {
      sampling_.row_of.push_back(-1);
      continue;
    }
    const auto& sp = run->req->request.sampling;
    // The draw this row will use, from a copy: the sequence's own stream
    // advances only when the token is taken, so a failed pass draws nothing.
    const double u = sp.greedy() ? 0.0 : Rng(run->rng).uniform();
    sampling_.row_of.push_back(int32_t(sampling_.rows.size()));
    sampling_.rows.push_back(
        flatten_row(sp, u, eog_ids_, run->seq.num_output(), run->history, sampling_.adjusts, sampling_.penalties));
  }
  if (sampling_.empty()) sampling_.clear();  // every row comes back: a plain pass
}

void EngineCore::after_forward(std::span<const ScheduledSeq> part) {
  // Commit first, and find the rows to sample: their grammar masks are
  // filled together, in parallel, before any of them samples.
  trace_.enter(StepPhase::sample);
  std::vector<SampleRow> rows;
  size_t row = 0, host = 0;  // the pass's logits rows; those of them whose logits came back
  auto came_back = [&](size_t r) { return sampling_.row_of.empty() || sampling_.row_of[r] < 0; };
  auto skip = [&](size_t n) {
    for (size_t i = 0; i < n; ++i, ++row) host += came_back(row);
  };
  for (const auto& sc : part) {
    auto it = seqs_.find(sc.seq->id);
    const SeqRun* run = it != seqs_.end() ? it->second.get() : nullptr;
    const auto [plp_first, plp_count] = prompt_logprob_span(run, sc);  // before the commit moves num_computed
    if (!run || run->finished) {
      skip(size_t(plp_count) + sc.sample);  // its rows are in the pass all the same
      continue;
    }
    SeqRun& s = *it->second;
    if (plp_count > 0 && !record_prompt_logprobs(s, plp_first, plp_count, host)) {
      skip(size_t(plp_count) + sc.sample);
      continue;
    }
    skip(size_t(plp_count));  // prompt-logprob rows always come back
    s.seq.num_computed += sc.num_tokens;
    commit(s.seq);
    if (!sc.sample) continue;
    if (came_back(row))
      rows.push_back({&s, int64_t(host++), -1});
    else
      rows.push_back({&s, -1, sampling_.row_of[row]});
    ++row;
  }
  fill_step_masks(rows);
  const size_t V = size_t(vocab_size_);
  for (const SampleRow& r : rows) {
    SeqRun& s = *r.seq;
    if (s.seq.num_output() == 0 && s.choice == 0) s.req->num_cached_tokens = s.seq.num_cached;
    if (r.sampled >= 0) {
      take_sampled(s, sampled_.at(size_t(r.sampled)));
      continue;
    }
    const std::span<const float> logits(logits_.data() + size_t(r.host) * V, V);
    if (std::any_of(logits.begin(), logits.end(), [](float x) { return !std::isfinite(x); })) {
      finish(s, FinishReason::error, "the model produced non-finite logits");
      continue;
    }
    if (s.seq.num_output() == 0 && s.choice == 0 && s.req->request.n > 1 && !s.req->forked) {
      // The prompt is computed once; the other choices share its blocks and
      // sample their first token from these same logits.
      for (SeqRun* child : fork_choices(s))
        if (child->seq.state == SeqState::decode) sample_seq(*child, logits);
    }
    sample_seq(s, logits);
  }
}

std::vector<EngineCore::SeqRun*> EngineCore::fork_choices(SeqRun& parent) {
  std::vector<SeqRun*> children;
  RequestState& req = *parent.req;
  req.forked = true;
  const auto& sp = req.request.sampling;
  for (int32_t c = 1; c < req.request.n; ++c) {
    auto s = std::make_unique<SeqRun>();
    s->req = &req;
    s->choice = c;
    s->seq = parent.seq;
    s->seq.id = next_seq_id_++;
    // Each choice has its own stream: seed + choice when a seed was given.
    s->rng = Rng(sp.seed ? *sp.seed + uint64_t(c) : random_seed());
    s->history = parent.history;
    if (tokenizer_) s->decoder.emplace(*tokenizer_, false, !sp.skip_special_tokens);
    s->stops.emplace(sp.stop, sp.include_stop_str_in_output);
    s->constraint = parent.constraint;  // the same grammar state and mask: a fork
    req.choices[size_t(c)] = s->seq.id;
    Sequence* seq = &s->seq;
    children.push_back(s.get());
    seqs_.emplace(seq->id, std::move(s));
    AllocResult r = blocks_.fork(parent.seq.id, seq->id);
    if (r) {
      try {
        // Reserve mode gives the child its own copy of the partial block now,
        // and a hybrid model its copy of the parent's recurrent state.
        runner_->copy_blocks(r.copies);
        runner_->copy_states(r.state_copies);
      } catch (const std::exception& e) {
        spdlog::warn("request {}: copying choice {}'s fork failed ({}); it recomputes the prompt", req.id, c, e.what());
        blocks_.free(seq->id);
        r.ok = false;
      }
    }
    if (r) {
      seq->state = SeqState::decode;
      sched_.add_running(seq);
    } else {
      // No room to share now: it recomputes the prompt later (the prefix
      // cache makes that cheap), and samples its first token then.
      seq->num_computed = 0;
      sched_.add(seq);
    }
  }
  return children;
}

void EngineCore::fill_step_masks(std::span<const SampleRow> rows) {
  std::vector<SeqConstraint*> cs;
  for (const SampleRow& r : rows)
    if (r.seq->constraint && !r.seq->constraint->waiting()) cs.push_back(&*r.seq->constraint);
  if (cs.empty()) return;
  const double t0 = clock_->now();
  fill_masks(cs, runner_->host_pool());
  stats_.time_in_masks += clock_->now() - t0;
  stats_.masks_filled += int64_t(cs.size());
}

void EngineCore::deliver_prompt_logprobs(SeqRun& s) {
  RequestState& req = *s.req;
  if (!req.request.prompt_logprobs || s.seq.num_output() > 0) return;
  RequestOutput plp;  // the prompt's logprobs, complete once any choice samples
  plp.prompt_logprobs = req.prompt_logprobs;
  deliver(req, s.choice, std::move(plp));
}

void EngineCore::take_sampled(SeqRun& s, const SampledRow& r) {
  if (r.status == SampledRow::kNonFinite) return finish(s, FinishReason::error, "the model produced non-finite logits");
  if (r.status != SampledRow::kSampled)
    return finish(s, FinishReason::error, "every logit is -inf: no token can be sampled");
  deliver_prompt_logprobs(s);
  const auto& sp = s.req->request.sampling;
  if (!sp.greedy()) s.rng.uniform();  // the draw the device used, taken now from the same state
  std::optional<GeneratedLogprobs> lp;
  if (sp.logprobs) {
    lp.emplace();
    lp->token = r.token;
    lp->logprob = r.logprob;
    for (int32_t i = 0; i < std::min(r.n_top, SamplingParams::kMaxLogprobs); ++i)
      lp->top.push_back({r.top[i].token, r.top[i].logprob});
  }
  emit_token(s, r.token, std::move(lp), false);
}

void EngineCore::sample_seq(SeqRun& s, std::span<const float> logits) {
  const auto& sp = s.req->request.sampling;
  deliver_prompt_logprobs(s);
  const bool constrained = s.constraint && s.constraint->active();  // a lazy one waits for its trigger
  const bool gating = s.constraint && s.constraint->gating();
  const bool waiting = s.constraint && s.constraint->waiting();
  if (constrained || gating) {
    // The grammar's mask, as -inf logits, before the sampler's pipeline.
    SeqConstraint& c = *s.constraint;
    if (!c.error.empty()) return finish(s, FinishReason::error, "the output grammar failed: " + c.error);
    if (!mask_logits(c, logits, masked_))
      return finish(s, FinishReason::error,
                    "the output grammar allows no token here: no token of the vocabulary continues the output");
    logits = masked_;
  }
  // logit_bias and the min_tokens mask, on a copy unless the grammar made one.
  const bool adjusted = adjusts_logits(sp, s.seq.num_output());
  if (adjusted) {
    if (logits.data() != masked_.data()) masked_.assign(logits.begin(), logits.end());
    adjust_logits(masked_, sp, eog_ids_, s.seq.num_output());
    logits = masked_;
  }
  TokenId id;
  try {
    id = sampler_.sample(logits, sp, s.history, s.rng);
  } catch (const std::exception& e) {
    finish(s, FinishReason::error, e.what());
    return;
  }
  if (constrained) {
    bool accepted = false;
    try {
      accepted = s.constraint->matcher.accept(id);
    } catch (const std::exception& e) {  // a grammar too costly to match: this request's fault
      return finish(s, FinishReason::error, std::string("the output grammar failed: ") + e.what());
    }
    if (!accepted)
      return finish(s, FinishReason::error, fmt::format("the sampled token {} is outside the output grammar", id));
  } else if (gating) {
    bool accepted = false;
    try {
      accepted = s.constraint->gate_step(id);
    } catch (const std::exception& e) {
      return finish(s, FinishReason::error, std::string("the output grammar failed: ") + e.what());
    }
    if (!accepted)
      return finish(s, FinishReason::error, fmt::format("the sampled token {} is outside the output grammar", id));
  }
  std::optional<GeneratedLogprobs> lp;
  if (sp.logprobs) {
    lp.emplace();
    lp->token = id;
    lp->logprob = token_logprob(logits, id);
    lp->top = top_logprobs(logits, *sp.logprobs);
    // Tokens the grammar or min_tokens forbids have probability 0: not listed among the likely ones.
    if (constrained || gating || adjusted)
      std::erase_if(lp->top, [](const TokenLogprob& t) { return std::isinf(t.logprob); });
  }
  emit_token(s, id, std::move(lp), waiting);
}

void EngineCore::emit_token(SeqRun& s, TokenId id, std::optional<GeneratedLogprobs> lp, bool waiting) {
  RequestState& req = *s.req;
  const auto& sp = req.request.sampling;
  const double now = clock_->now();
  if (req.first_token_time < 0) {
    req.first_token_time = now;
    stats_.ttft.observe(now - req.arrival_time);
    stats_.per_request.on_first_token(int64_t(req.request.prompt.size()), now - req.arrival_time);
  } else {
    stats_.itl.observe(now - req.last_token_time);
    stats_.per_request.on_next_token(now - req.last_token_time);
  }
  req.last_token_time = now;
  s.seq.state = SeqState::decode;

  RequestOutput out;
  if (lp) out.logprobs.push_back(std::move(*lp));
  const int64_t n_generated = s.seq.num_output() + 1;
  FinishReason reason = finish_reason(id, n_generated, sp, eog_ids_);
  // The grammar took an end-of-generation token: the output is complete, even with ignore_eos.
  if (s.constraint && s.constraint->active() && s.constraint->matcher.is_terminated()) reason = FinishReason::stop;
  if (reason == FinishReason::stop) {  // end-of-generation token: not part of the output
    if (!out.logprobs.empty()) out.logprobs.clear();
    if (std::find(sp.stop_token_ids.begin(), sp.stop_token_ids.end(), id) != sp.stop_token_ids.end()) s.stop_token = id;
    finish(s, FinishReason::stop);
    return;
  }
  s.seq.tokens.push_back(id);
  s.history.add_output(id);
  ++stats_.generation_tokens;
  ++req.generated;
  out.tokens.push_back(id);
  trace_.enter(StepPhase::detok);
  if (s.decoder) {
    std::string piece = s.decoder->push(id);
    // A lazy constraint watches the text for its trigger; what follows it in this token must fit the grammar.
    if (waiting && !s.constraint->observe(piece))
      return finish(s, FinishReason::error, "the output after the constraint's trigger is outside the output grammar");
    auto step = s.stops->push(std::move(piece), n_generated >= sp.min_tokens);
    out.text = std::move(step.text);
    if (step.stopped) reason = FinishReason::stop;
  } else if (waiting &&
             !s.constraint->observe(s.constraint->matcher.tables().vocab().bytes(id))) {  // no tokenizer: the bytes
    return finish(s, FinishReason::error, "the output after the constraint's trigger is outside the output grammar");
  }
  trace_.enter(StepPhase::sample);
  if (s.constraint && s.constraint->finished()) reason = FinishReason::stop;  // nothing may follow
  if (reason == FinishReason::none && s.seq.num_tokens() >= s.seq.max_len) reason = FinishReason::length;
  deliver(req, s.choice, std::move(out));
  if (reason != FinishReason::none) finish(s, reason);
}

}  // namespace pagoda
