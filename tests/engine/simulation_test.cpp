// A deterministic simulation of the engine: the real scheduler and block
// manager driven by a fake model on a virtual clock, through tens of
// thousands of random steps (adds, cancels, deadlines, readers that leave,
// failing and out-of-memory steps, poisoned requests, failing allocations),
// checking every invariant after every step. Each forward pass advances the
// clock by a random cost model (fixed + per token + per attended position,
// noisy, with stalls), which changes mid-run, so the time-budgeted steps
// (--max-step-ms auto or a number) meet a machine that changes under them;
// --max-step-ms 0 runs the same workload on the token budget alone. A quarter of the requests are
// constrained by a grammar (regexes and a JSON Schema over a toy byte
// vocabulary): every token they emit keeps the output a valid prefix, and
// every output that finishes with `stop` full-matches its regex. A quarter of
// the others carry stop_token_ids and min_tokens: no output holds a stop id,
// none ends with `stop` before min_tokens, and one ends with `stop` only where
// the model's next token would end it. Some ask for prompt logprobs: each
// choice gets them once, whole, whatever preemption and the prefix cache do.
// A windowed model runs the same workload over KV groups (a full-attention
// group and sliding ones, kv/kv_groups.h): sliding groups give blocks back as
// their windows move, and the fake model checks at every token that each
// group still serves what its window reads. A hybrid model runs it with
// recurrent-state slots (fewer than --max-num-seqs, so they bind): the fake
// model's tokens then come from a state the engine must hand it right after
// every failure, preemption and fork; every slot is back at the end. An
// embedding model (mean, first- or last-position pooling) runs it with
// prefill-only requests: every vector that comes back is exactly the fake
// model's pooling of its prompt, whatever chunking, preemption and retries did.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include "engine/engine_core.h"
#include "engine/fake_runner.h"
#include "grammar/cache.h"
#include "grammar/matcher.h"

#include <spdlog/spdlog.h>

namespace pagoda {
namespace {

constexpr int32_t kVocab = 40;

// The toy vocabulary's bytes: id 2 is the end-of-generation id (no bytes).
std::vector<std::string> toy_token_bytes() {
  std::vector<std::string> b = {"a", "b",   "",  "c", "d", "e",  ";",    "ab",   "cd",    "e;", "{",  "}", "\"", ":",
                                ",", "1",   "2", "x", "[", "]",  "true", "null", "\"k\"", "aa", "bc", "0", "9",  "de",
                                "}", "\"k", "y", "z", "w", "ba", "12",   "ca",   "dd",    "ee", "q;", ")"};
  return b;
}

// A constraint and an independent oracle for its language.
struct SimConstraint {
  grammar::ConstraintSpec spec;
  std::string oracle;     // ECMAScript regex the whole output must match
  bool dead_end = false;  // no token ever completes it: must end in an error
};

std::vector<SimConstraint> sim_constraints() {
  using K = grammar::ConstraintSpec::Kind;
  return {
      {{K::regex, "(ab|c|d)+;"}, "(ab|c|d)+;"},  // ends by itself at ';'
      {{K::regex, "[a-e]{1,8}"}, "[a-e]{1,8}"},  // may end after one byte, must after eight
      {{K::json_schema, R"({"type":"object","properties":{"k":{"type":"integer"}},"required":["k"]})"},
       R"(\{"k":-?(0|[1-9][0-9]*)\})"},
      {{K::choice, R"(["true", "null", "x"])"}, "true|null|x"},
      {{K::regex, "aq"}, "aq", true},  // no token holds 'q' alone: the mask empties after 'a'
  };
}

struct Record {
  std::vector<TokenId> prompt;
  std::map<int32_t, std::vector<TokenId>> tokens;  // per choice
  std::set<int32_t> finished_choices;
  bool done = false;
  bool leave = false;     // the reader goes away at its next delta
  bool poisoned = false;  // fault injection: no pass carrying it succeeds
  int32_t n = 1;
  int constraint = -1;                               // index into sim_constraints(), -1: none
  std::map<int32_t, grammar::GrammarMatcher> check;  // per choice: the emitted tokens so far
  std::map<int32_t, FinishReason> finish;
  std::set<TokenId> stop_ids;  // stop_token_ids; with EOS (2), the ids that end it
  int32_t min_tokens = 0;
  bool prompt_logprobs = false;
  std::set<int32_t> prompt_logprobs_seen;  // choices that got them
};

// The fake model, taking virtual time by a cost model the test can change.
struct CostedRunner : ModelRunner {
  CostedRunner(std::unique_ptr<ModelRunner> inner, std::shared_ptr<ManualClock> clock, uint64_t seed)
      : inner(std::move(inner)), clock(std::move(clock)), rng(uint32_t(seed)) {
    change();
  }
  void change() {
    cost = {
        .fixed = 0.001 * (1 + rng() % 20), .per_token = 1e-4 * (1 + rng() % 30), .per_context = 1e-6 * (rng() % 20)};
  }
  int32_t vocab_size() const override { return inner->vocab_size(); }
  int32_t context_length() const override { return inner->context_length(); }
  std::vector<int32_t> kv_group_windows() const override { return inner->kv_group_windows(); }
  void copy_blocks(std::span<const BlockCopy> copies) override { inner->copy_blocks(copies); }
  int32_t state_slots() const override { return inner->state_slots(); }
  int32_t state_checkpoints() const override { return inner->state_checkpoints(); }
  Pooling pooling() const override { return inner->pooling(); }
  bool causal() const override { return inner->causal(); }
  int32_t output_width() const override { return inner->output_width(); }
  void copy_states(std::span<const StateCopy> copies) override { inner->copy_states(copies); }
  void forward(const Batch& batch, std::vector<float>& logits) override {
    take_time(batch);
    inner->forward(batch, logits);
  }
  bool samples_rows() const override { return inner->samples_rows(); }
  void forward_sampled(const Batch& batch, std::vector<float>& logits, const StepSampling& sampling,
                       std::vector<SampledRow>& sampled) override {
    take_time(batch);
    inner->forward_sampled(batch, logits, sampling, sampled);
  }
  void take_time(const Batch& batch) {
    StepShape shape;
    for (const auto& t : batch.tokens) shape.add_chunk(t.pos, 1);
    double t = cost.predict(shape) * (0.9 + 0.2 * double(rng() % 1000) / 1000);
    if (rng() % 100 == 0) t *= 20;  // a stall
    clock->advance(t);
  }
  std::unique_ptr<ModelRunner> inner;
  std::shared_ptr<ManualClock> clock;
  std::mt19937 rng;
  StepCoefficients cost;
};

// A KV event subscriber (engine/kv_events.h) that refuses batches now and
// then, as a full publisher queue does, and mirrors the hashes it takes.
struct MirrorSink : KvEventSink {
  std::mt19937* rng = nullptr;
  std::set<BlockHash> hashes;
  bool last_ok = true;
  int64_t refused = 0, resyncs = 0;
  bool try_publish(KvEventBatch&& b) override {
    last_ok = (*rng)() % 20 != 0;
    if (!last_ok) {
      ++refused;
      return false;
    }
    for (const KvCacheEvent& e : b.events) {
      if (e.kind == KvCacheEvent::Kind::kAllCleared) {
        hashes.clear();
        ++resyncs;
      } else if (e.kind == KvCacheEvent::Kind::kStored) {
        hashes.insert(e.hash);
      } else {
        hashes.erase(e.hash);
      }
    }
    return true;
  }
};

struct Sim {
  // The step whose pass loses the device in the next Sim (-1: none); the
  // device-loss test sets it.
  inline static int64_t lost_at_step = -1;
  inline static bool device_sampling = false;  // the fake samples rows itself, as a GPU does
  // windows: the KV groups' (empty: one group of every layer); the pool
  // then has as many blocks a group as the one-group pool's 24 allow for
  // sequences at rest. state_slots > 0: a hybrid model (fake_runner.h).
  Sim(uint64_t seed, bool paged, double max_step_ms, std::vector<int32_t> windows = {}, int32_t state_slots = 0,
      Pooling pooling = Pooling::none, bool causal = true, int32_t state_checkpoints = 0)
      : rng(uint32_t(seed)), pooling(pooling), causal(causal) {
    cfg.paged = paged;
    cfg.block_size = 4;
    cfg.sched.max_num_seqs = 6;
    cfg.sched.max_batched_tokens = 20;
    cfg.sched.max_bypass = 4;
    cfg.sched.kv_headroom_per_seq = 1;  // a 24-block pool: keep several sequences running, and preempting
    cfg.sched.max_step_ms = max_step_ms;
    cfg.sched.min_prefill_chunk = 2;  // steps of a few tokens: keep the time budget binding
    cfg.sched.auto_step_floor_ms = 1;
    cfg.request_timeout_s = 30;
    cfg.max_n = 3;
    cfg.faults = FaultSpec{.forward = 0.02, .oom = 0.02, .alloc = 0.02, .poison = 0.02, .seed = seed};
    cfg.faults.lost_at_step = lost_at_step;
    cfg.audit_every_step = true;
    cfg.log_interval_s = 0;
    cfg.state_checkpoint_interval = 8;  // two blocks: most prompts cut at a checkpoint or two
    clock = std::make_shared<ManualClock>();
    const int32_t pool = windows.empty() ? 24 : 48;
    if (windows.empty()) windows = {0};
    auto model = std::make_unique<testing::FakeRunner>(kVocab, pool, 4, 80, windows, state_slots, state_checkpoints);
    fake = model.get();
    model->set_pooling(pooling);
    model->set_causal(causal);
    model->set_samples_rows(device_sampling);
    if (!causal) cfg.sched.max_batched_tokens = 48;  // an encoder's inputs up to 48 tokens, 12 of the pool's 24 blocks
    auto costed = std::make_unique<CostedRunner>(std::move(model), clock, seed + 100);
    runner = costed.get();
    core = std::make_unique<EngineCore>(cfg, std::move(costed), pool, nullptr, clock, std::vector<TokenId>{2});
    events->rng = &rng;
    core->set_kv_event_sink(events);
    for (int i = 0; i < 3; ++i) {
      std::vector<TokenId> p(size_t(4 + rng() % 12));
      for (auto& t : p) t = TokenId(3 + rng() % (kVocab - 3));
      prefixes.push_back(p);
    }
    vocab = std::make_shared<const grammar::TokenVocab>(toy_token_bytes(), std::vector<int32_t>{2});
  }

  // Constrains a quarter of the requests; they sample (seeded) so outputs vary.
  void constrain(Request& r, Record& rec) {
    if (rng() % 4 != 0) return;
    rec.constraint = int(rng() % constraints.size());
    r.constraint = grammars.tables(constraints[size_t(rec.constraint)].spec, vocab);
    r.sampling.temperature = 1;
    r.sampling.seed = rng();
  }

  // A constrained choice's token: it must keep the output a valid prefix.
  void check_constrained(uint64_t id, Record& rec, int32_t choice, TokenId t) {
    auto it = rec.check.find(choice);
    if (it == rec.check.end())
      it = rec.check
               .emplace(choice,
                        grammar::GrammarMatcher(grammars.tables(constraints[size_t(rec.constraint)].spec, vocab)))
               .first;
    EXPECT_TRUE(it->second.accept(t)) << "request " << id << " choice " << choice << ": token " << t
                                      << " leaves the grammar";
  }

  bool ends(const Record& rec, TokenId t) const { return t == 2 || rec.stop_ids.count(t) > 0; }

  // An unconstrained greedy token is the model's, unless min_tokens masked
  // an ending one; it never is an ending token itself.
  void check_unconstrained(uint64_t id, const Record& rec, const std::vector<TokenId>& past, size_t generated,
                           TokenId t) {
    const TokenId want = testing::fake_next_token(past, kVocab);
    EXPECT_FALSE(ends(rec, t)) << "request " << id << ": emitted the ending token " << t;
    if (ends(rec, want) && int32_t(generated) < rec.min_tokens)
      ++masked_picks;
    else
      EXPECT_EQ(t, want) << "request " << id;
  }

  // A `stop` came from an ending token the model chose, past min_tokens.
  void check_stop(uint64_t id, const Record& rec, int32_t choice) {
    std::vector<TokenId> past = rec.prompt;
    const auto it = rec.tokens.find(choice);
    const size_t n = it == rec.tokens.end() ? 0 : it->second.size();
    if (n > 0) past.insert(past.end(), it->second.begin(), it->second.end());
    EXPECT_GE(int32_t(n), rec.min_tokens) << "request " << id << " stopped before min_tokens";
    const TokenId next = testing::fake_next_token(past, kVocab);
    EXPECT_TRUE(ends(rec, next)) << "request " << id << " stopped on token " << next;
    stop_id_stops += next != 2;
  }

  // Whole, once per choice, each the fake model's: the top token is its next one.
  void check_prompt_logprobs(uint64_t id, Record& rec, const RequestOutput& out) {
    EXPECT_TRUE(rec.prompt_logprobs) << "request " << id << " got prompt logprobs it did not ask for";
    EXPECT_TRUE(rec.prompt_logprobs_seen.insert(out.choice).second) << "request " << id << ": prompt logprobs twice";
    ASSERT_EQ(out.prompt_logprobs.size(), rec.prompt.size() - 1) << "request " << id;
    for (size_t i = 0; i < out.prompt_logprobs.size(); ++i) {
      const auto& lp = out.prompt_logprobs[i];
      const std::vector<TokenId> past(rec.prompt.begin(), rec.prompt.begin() + ptrdiff_t(i) + 1);
      const TokenId next = testing::fake_next_token(past, kVocab);
      EXPECT_EQ(lp.token, rec.prompt[i + 1]) << "request " << id;
      ASSERT_EQ(lp.top.size(), 1u);
      EXPECT_EQ(lp.top[0].token, next) << "request " << id << " position " << i;
      EXPECT_EQ(lp.rank == 1, lp.token == next) << "request " << id << " position " << i;
    }
    ++prompt_logprobs_checked;
  }

  void add() {
    Request r;
    r.prompt = prefixes[rng() % prefixes.size()];
    r.prompt.resize(r.prompt.size() - rng() % 3);
    // Embeddings end with their prompt: longer ones keep the pool as busy.
    // An encoder's (non-causal) over max_batched_tokens are refused: some are.
    for (int i = int(1 + rng() % (pooling == Pooling::none ? 12 : 50)); i > 0; --i)
      r.prompt.push_back(TokenId(3 + rng() % (kVocab - 3)));
    if (!causal && int32_t(r.prompt.size()) > cfg.sched.max_batched_tokens) {
      EXPECT_THROW(core->validate(r), InvalidArgument);
      ++refused_inputs;
      return;
    }
    r.sampling.temperature = 0;
    r.sampling.max_tokens = int32_t(1 + rng() % 30);
    r.n = rng() % 8 == 0 && pooling == Pooling::none ? int32_t(2 + rng() % 2) : 1;
    r.priority = int32_t(rng() % 3);
    if (rng() % 10 == 0) r.timeout_s = 0.5 + (rng() % 20) * 0.1;
    const uint64_t id = next_id++;
    Record rec;
    rec.prompt = r.prompt;
    rec.n = r.n;
    rec.leave = rng() % 25 == 0;
    rec.poisoned = core->faults().is_poisoned(id);
    if (pooling == Pooling::none) constrain(r, rec);
    if (pooling == Pooling::none && rec.constraint < 0 && rng() % 4 == 0) {
      for (int i = int(1 + rng() % 3); i > 0; --i)
        r.sampling.stop_token_ids.push_back(TokenId(3 + rng() % (kVocab - 3)));
      if (rng() % 2 == 0) r.sampling.min_tokens = int32_t(rng() % (uint32_t(*r.sampling.max_tokens) + 1));
      rec.stop_ids.insert(r.sampling.stop_token_ids.begin(), r.sampling.stop_token_ids.end());
      rec.min_tokens = r.sampling.min_tokens;
    }
    if (pooling == Pooling::none && rng() % 8 == 0) {
      r.prompt_logprobs = 1;
      rec.prompt_logprobs = true;
    }
    records[id] = rec;
    core->validate(r);  // add() takes validated requests
    core->add(id, std::move(r), [this, id](RequestOutput&& out) {
      Record& rec = records[id];
      EXPECT_FALSE(rec.done) << "event after the request's last one";
      EXPECT_EQ(rec.finished_choices.count(out.choice), 0u) << "event after the choice's terminal event";
      if (!out.prompt_logprobs.empty()) check_prompt_logprobs(id, rec, out);
      auto& toks = rec.tokens[out.choice];
      for (TokenId t : out.tokens) {
        std::vector<TokenId> past = rec.prompt;
        past.insert(past.end(), toks.begin(), toks.end());
        if (rec.constraint >= 0)
          check_constrained(id, rec, out.choice, t);
        else
          check_unconstrained(id, rec, past, toks.size(), t);
        toks.push_back(t);
        ++progress;
      }
      if (out.finish != FinishReason::none) {
        // Isolation: a poisoned request never completes, and its fault ends nobody else.
        if (rec.poisoned) {
          EXPECT_TRUE(out.finish != FinishReason::stop && out.finish != FinishReason::length) << "request " << id;
        }
        if (out.error.find("poisoned") != std::string::npos) {
          EXPECT_TRUE(rec.poisoned) << "request " << id;
        }
        if (pooling != Pooling::none) {
          EXPECT_TRUE(out.tokens.empty()) << "an embedding request generated tokens";
          if (out.finish == FinishReason::stop) {
            EXPECT_EQ(out.embedding, testing::fake_embedding(rec.prompt, pooling)) << "request " << id;
            ++embeddings_checked;
          }
          EXPECT_TRUE(out.finish != FinishReason::length) << "request " << id;
        } else if (out.finish == FinishReason::stop && rec.constraint < 0) {
          check_stop(id, rec, out.choice);
        }
        rec.finished_choices.insert(out.choice);
        rec.finish[out.choice] = out.finish;
        ++progress;
        ++terminal_events;
      }
      if (out.request_done) {
        EXPECT_EQ(int32_t(rec.finished_choices.size()), rec.n);
        rec.done = true;
      }
      return !rec.leave;
    });
  }

  void check_invariants() {
    std::set<const Sequence*> seen;
    const bool hybrid = core->blocks().num_state_slots() > 0;
    for (const Sequence* s : core->scheduler().running()) {
      ASSERT_TRUE(seen.insert(s).second) << "sequence twice in the queues";
      ASSERT_TRUE(s->is_running()) << to_string(s->state);
      ASSERT_TRUE(core->blocks().contains(s->id));
      ASSERT_EQ(core->blocks().state_slot(s->id) != kNoSlot, hybrid) << "a running sequence without its state slot";
      for (int32_t g = 1; g < core->blocks().num_groups(); ++g) {
        const auto table = core->blocks().block_table(s->id, g);
        blocks_given_back += std::count(table.begin(), table.end(), kNoBlock);
      }
      // A hit longer than the smallest window: its sliding groups served only their windows.
      sliding_hits += core->blocks().num_groups() > 1 && s->num_cached > 8;
    }
    for (const Sequence* s : core->scheduler().waiting()) {
      ASSERT_TRUE(seen.insert(s).second) << "sequence twice in the queues";
      ASSERT_TRUE(s->is_queued()) << to_string(s->state);
      ASSERT_FALSE(core->blocks().contains(s->id)) << "a waiting sequence holds blocks";
      ASSERT_LE(s->bypassed, cfg.sched.max_bypass) << "bypassed too often";
    }
    ASSERT_EQ(seen.size(), core->num_sequences()) << "a live sequence is in no queue";
    ASSERT_EQ(core->blocks().num_seqs(), core->scheduler().running().size());
    // Each running sequence holds one slot; nothing else does.
    if (hybrid) ASSERT_EQ(size_t(core->blocks().stats().state_slots_used), core->scheduler().running().size());
    ASSERT_EQ(fake->state_errors, 0) << "the fake model was handed a wrong recurrent state";
    const auto& st = core->stats();
    ASSERT_LE(st.step_budget_tokens, cfg.sched.max_batched_tokens);
    if (st.step_duration.count > 0) {
      ASSERT_GE(st.step_budget_tokens, 1);
    }
    if (cfg.sched.max_step_ms == 0) {
      ASSERT_EQ(st.step_target_s, 0);
    }
    // KV events: after a batch the subscriber took, its mirror is the cache.
    if (events->last_ok) {
      const auto cached = core->blocks().cached_hashes();
      ASSERT_EQ(events->hashes, std::set<BlockHash>(cached.begin(), cached.end()));
    }
  }

  std::mt19937 rng;
  Pooling pooling = Pooling::none;  // an embedding model's, when set
  bool causal = true;               // false: an encoder's inputs each in one pass
  int64_t refused_inputs = 0;       // an encoder's inputs over max_batched_tokens
  EngineConfig cfg;
  std::shared_ptr<ManualClock> clock;
  CostedRunner* runner = nullptr;       // owned by core (inside a FaultyRunner)
  testing::FakeRunner* fake = nullptr;  // inside runner
  std::unique_ptr<EngineCore> core;
  std::shared_ptr<MirrorSink> events = std::make_shared<MirrorSink>();
  std::vector<std::vector<TokenId>> prefixes;
  std::shared_ptr<const grammar::TokenVocab> vocab;
  grammar::GrammarCache grammars;
  const std::vector<SimConstraint> constraints = sim_constraints();
  std::map<uint64_t, Record> records;
  uint64_t next_id = 1;
  int64_t progress = 0, terminal_events = 0;
  int64_t masked_picks = 0, stop_id_stops = 0, prompt_logprobs_checked = 0;  // min_tokens and stop_token_ids at work
  int64_t blocks_given_back = 0, sliding_hits = 0;  // KV groups at work (entries seen, summed over steps)
  int64_t embeddings_checked = 0;
};

// Every constrained output that finished with `stop` is in its language (an
// independent regex says so); dead-end grammars never finish normally.
void check_constrained_outputs(Sim& sim) {
  const auto bytes = toy_token_bytes();
  int64_t in_language = 0, dead_ends = 0;
  for (const auto& [id, r] : sim.records) {
    if (r.constraint < 0) continue;
    const SimConstraint& c = sim.constraints[size_t(r.constraint)];
    const std::regex oracle(c.oracle);
    for (const auto& [choice, why] : r.finish) {
      std::string text;
      if (auto t = r.tokens.find(choice); t != r.tokens.end())
        for (TokenId tok : t->second) text += bytes[size_t(tok)];
      if (c.dead_end) {
        EXPECT_TRUE(why != FinishReason::stop) << "request " << id << ": a dead-end grammar finished: " << text;
        dead_ends += why == FinishReason::error;
        continue;
      }
      if (why != FinishReason::stop) continue;
      EXPECT_TRUE(std::regex_match(text, oracle))
          << "request " << id << " choice " << choice << ": '" << text << "' is not in " << c.oracle;
      ++in_language;
    }
  }
  EXPECT_GT(in_language, 20) << "too few constrained outputs finished to check";
  EXPECT_GT(dead_ends, 0) << "no dead-end grammar ended in an error";
}

// (seed, paged): paged allocation, or reserve mode (--no-paged-attn).
// (seed, paged, --max-step-ms): paged allocation or reserve mode; auto, a
// number, or 0.
class EngineSimulation : public ::testing::TestWithParam<std::tuple<uint64_t, bool, double>> {};

void simulate(uint64_t seed, bool paged, double max_step_ms, std::vector<int32_t> windows = {}, int32_t state_slots = 0,
              Pooling pooling = Pooling::none, bool causal = true, int32_t state_checkpoints = 0) {
  using ::testing::Test;
  spdlog::set_level(spdlog::level::err);
  const bool grouped = !windows.empty();
  const bool hybrid = state_slots > 0;
  const bool pooled = pooling != Pooling::none;
  Sim sim(seed, paged, max_step_ms, std::move(windows), state_slots, pooling, causal, state_checkpoints);
  const bool caching = !hybrid || state_checkpoints > 0;  // a hybrid caches prefixes only with state checkpoints
  int64_t last_progress = 0, stalled = 0, capped = 0;
  for (int step = 0; step < 20000; ++step) {
    if (step == 7000 || step == 14000) sim.runner->change();  // the machine changes under the engine
    const uint32_t op = sim.rng() % 100;
    // An encoder's inputs end in the step that admits them: bursts keep it queueing.
    for (int k = causal ? 1 : 6; k > 0; --k)
      if (op < (pooled ? 40 : 25) && sim.core->num_requests() < 40) sim.add();
    if (op >= 95 && !sim.records.empty()) {
      auto it = sim.records.lower_bound(1 + sim.rng() % sim.next_id);
      if (it != sim.records.end()) sim.core->cancel(it->first);
    }
    if (op == 94 && pooled && sim.core->num_requests() > 0) {  // embeddings end fast: cancel a live one
      std::vector<uint64_t> live;
      sim.core->for_each_request([&](uint64_t id) { live.push_back(id); });
      sim.core->cancel(live[sim.rng() % live.size()]);
    }
    if (op == 50 && sim.core->num_requests() == 0) sim.core->reset_prefix_cache();
    sim.clock->advance(0.05);
    sim.core->step();
    sim.check_invariants();
    if (Test::HasFatalFailure() || Test::HasFailure()) return;
    if (sim.core->stats().step_target_s > 0) ++capped;
    // Some sequence makes progress within a bounded number of steps.
    if (sim.core->num_requests() == 0 || sim.progress != last_progress) {
      last_progress = sim.progress;
      stalled = 0;
    } else {
      ASSERT_LT(++stalled, 200) << "no progress for 200 steps at step " << step;
    }
  }
  for (int step = 0; step < 20000 && sim.core->num_requests() > 0; ++step) {
    sim.clock->advance(0.05);
    sim.core->step();
    sim.check_invariants();
  }
  ASSERT_EQ(sim.core->num_requests(), 0u);
  EXPECT_EQ(sim.core->num_sequences(), 0u);
  EXPECT_EQ(sim.core->blocks().num_free_blocks(), sim.core->blocks().num_blocks());
  EXPECT_EQ(sim.core->blocks().num_free_slots(), state_slots);
  const auto& st = sim.core->stats();
  EXPECT_EQ(st.state_slots_used, 0);
  EXPECT_EQ(st.prefix_caching, caching);
  EXPECT_EQ(sim.fake->state_errors, 0);
  EXPECT_EQ(st.requests_received, int64_t(sim.records.size()));
  EXPECT_EQ(st.requests_received, st.requests_finished());
  // Every request ended with a terminal event, unless its reader had left.
  for (const auto& [id, r] : sim.records) ASSERT_TRUE(r.done || r.leave) << "request " << id << " never ended";
  // The faults the test is about really happened.
  EXPECT_GT(st.faults.forward, 0);
  EXPECT_GT(st.faults.oom, 0);
  EXPECT_GT(st.faults.alloc, 0);
  EXPECT_GT(st.faults.poisoned, 0);
  EXPECT_GT(st.forward_retries, 0);
  EXPECT_GT(st.preemptions, 0);  // reserve mode too: out-of-memory steps shrink the batch
  EXPECT_GT(st.aborted, 0);
  EXPECT_GT(st.timed_out, 0);
  EXPECT_GT(st.errored, 0);
  if (pooled) {
    EXPECT_GT(sim.embeddings_checked, 500) << "too few embeddings to check";
    if (getenv("SIM_VERBOSE"))
      printf("embeddings %ld preemptions %ld prefix hits %ld aborted %ld\n", long(sim.embeddings_checked),
             long(st.preemptions), long(st.prefix_hits), long(st.aborted));
    EXPECT_EQ(st.generation_tokens, 0);
    EXPECT_EQ(st.prefix_hits > 0, pooling == Pooling::last && causal)
        << "only a causal model's last-position pooling can use cached prefixes";
    EXPECT_EQ(sim.fake->split_inputs, 0) << "an encoder's input was split over passes";
    if (!causal) {
      EXPECT_GT(sim.fake->whole_inputs, 500);
      EXPECT_GT(sim.refused_inputs, 0);
    }
    return;
  }
  EXPECT_GT(st.finished_length, 0);
  if (Sim::device_sampling) EXPECT_GT(sim.fake->rows_sampled, 5000) << "too few rows sampled on the device";
  if (hybrid) EXPECT_GT(sim.fake->state_copies_made, 0) << "no fork copied a state";
  if (caching) {
    EXPECT_GT(st.prefix_hits, 0);
  } else {
    EXPECT_EQ(st.prefix_hits, 0);  // prefix caching is off for a model that keeps recurrent state
  }
  if (hybrid && caching) {
    // Checkpoints were saved, restored (a wrong one would show in state_errors) and evicted.
    EXPECT_GT(st.state_checkpoint_saves, 100);
    EXPECT_GT(st.state_checkpoint_hits, 20);
    EXPECT_GT(st.state_checkpoint_evictions, 0);
  }
  // The time budget really capped steps (and never with --max-step-ms 0).
  if (max_step_ms != 0)
    EXPECT_GT(capped, 1000);
  else
    EXPECT_EQ(capped, 0);
  if (caching) {  // no prefix cache: no KV events to refuse
    EXPECT_GT(sim.events->refused, 0);
    EXPECT_GT(sim.events->resyncs, 1);  // the first batch, then after refusals
  }
  // vLLM's per-request figures: one observation per finished request.
  EXPECT_EQ(st.per_request.e2e.count, st.requests_finished());
  EXPECT_EQ(st.per_request.request_generation_tokens.sum, double(st.generation_tokens));
  EXPECT_EQ(st.per_request.queue_time.count, st.requests_finished());
  check_constrained_outputs(sim);
  EXPECT_GT(sim.masked_picks, 0) << "min_tokens never masked an ending token";
  EXPECT_GT(sim.stop_id_stops, 0) << "no request ended on a stop token id";
  EXPECT_GT(sim.prompt_logprobs_checked, 0) << "no prompt logprobs were delivered";
  if (getenv("SIM_VERBOSE"))
    printf("preemptions %ld prefix hits %ld given back %ld sliding hits %ld finished %ld\n", long(st.preemptions),
           long(st.prefix_hits), long(sim.blocks_given_back), long(sim.sliding_hits), long(st.finished_length));
  if (grouped && paged) {  // reserve mode keeps every block of a reservation
    EXPECT_GT(sim.blocks_given_back, 1000) << "sliding groups never gave a block back";
    EXPECT_GT(sim.sliding_hits, 0) << "no prefix hit needed a sliding group's blocks";
  }
}

// The device lost in the middle of a busy run, dense and hybrid (with state
// checkpoints): from that step on no request is open, every block and slot
// is free, and requests that keep arriving end in their first step, each
// with a terminal event.
TEST(EngineSimulationDeviceLost, EveryRequestEndsAndNothingIsLeft) {
  spdlog::set_level(spdlog::level::off);
  for (const int32_t slots : {0, 3}) {
    Sim::lost_at_step = 3000;
    Sim sim(5, true, SchedulerConfig::kAutoStepMs, {}, slots, Pooling::none, true, slots > 0 ? 3 : 0);
    Sim::lost_at_step = -1;
    int64_t lost_at = -1, open_before = 0;
    for (int step = 1; step <= 3500; ++step) {
      if (sim.rng() % 4 == 0 && sim.core->num_requests() < 40) sim.add();
      sim.clock->advance(0.05);
      if (lost_at < 0) open_before = int64_t(sim.core->num_requests());
      sim.core->step();
      sim.check_invariants();
      if (lost_at < 0 && !sim.core->stats().device_lost.empty()) lost_at = step;
      if (lost_at >= 0) {
        ASSERT_EQ(sim.core->num_requests(), 0u) << "step " << step;
        ASSERT_EQ(sim.core->blocks().num_free_blocks(), sim.core->blocks().num_blocks());
        ASSERT_EQ(sim.core->blocks().num_free_slots(), slots);
      }
    }
    ASSERT_EQ(lost_at, 3000) << "the device was not lost at its step (nothing ran?)";
    EXPECT_GT(open_before, 3) << "too few requests were open when the device was lost";
    EXPECT_EQ(sim.core->stats().requests_received, sim.core->stats().requests_finished());
    for (const auto& [id, r] : sim.records) ASSERT_TRUE(r.done || r.leave) << "request " << id << " never ended";
  }
}

// A backend that samples rows on its device (a GPU): the same checks (greedy
// tokens the model's, constrained ones in their grammar, min_tokens masks,
// NaN rows, prompt logprobs), with grammars and forks' first tokens on the
// host and the other rows sampled by the device kernels' reference.
TEST(EngineSimulationDeviceSampling, InvariantsHoldAndEverythingDrains) {
  for (const uint64_t seed : {11, 12}) {
    Sim::device_sampling = true;
    simulate(seed, seed % 2 == 1, SchedulerConfig::kAutoStepMs);
    Sim::device_sampling = false;
  }
}

TEST_P(EngineSimulation, InvariantsHoldAndEverythingDrains) {
  const auto [seed, paged, max_step_ms] = GetParam();
  simulate(seed, paged, max_step_ms);
}

std::string sim_name(const ::testing::TestParamInfo<EngineSimulation::ParamType>& info) {
  const double ms = std::get<2>(info.param);
  return fmt::format("seed{}_{}_{}", std::get<0>(info.param), std::get<1>(info.param) ? "paged" : "reserve",
                     ms < 0 ? std::string("auto") : fmt::format("{}ms", ms));
}
// The default (auto) in both allocation modes; the token budget alone
// (--max-step-ms 0); a fixed target tighter than most steps.
INSTANTIATE_TEST_SUITE_P(Seeds, EngineSimulation,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Bool(),
                                            ::testing::Values(SchedulerConfig::kAutoStepMs)),
                         sim_name);
INSTANTIATE_TEST_SUITE_P(TokenBudget, EngineSimulation,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Bool(), ::testing::Values(0.0)),
                         sim_name);
INSTANTIATE_TEST_SUITE_P(FixedTarget, EngineSimulation,
                         ::testing::Combine(::testing::Values(4), ::testing::Values(true), ::testing::Values(8.0)),
                         sim_name);

// A windowed model: a full-attention group and two sliding ones, windows of
// 2 blocks and of 1.5 (a window edge mid-block); (seed, paged).
class EngineSimulationWindows : public ::testing::TestWithParam<std::tuple<uint64_t, bool>> {};

TEST_P(EngineSimulationWindows, InvariantsHoldAndEverythingDrains) {
  const auto [seed, paged] = GetParam();
  simulate(seed, paged, SchedulerConfig::kAutoStepMs, {0, 8, 6});
}

INSTANTIATE_TEST_SUITE_P(Seeds, EngineSimulationWindows,
                         ::testing::Values(std::tuple<uint64_t, bool>{5, true}, std::tuple<uint64_t, bool>{6, true},
                                           std::tuple<uint64_t, bool>{7, false}),
                         [](const auto& info) {
                           return fmt::format("seed{}_{}", std::get<0>(info.param),
                                              std::get<1>(info.param) ? "paged" : "reserve");
                         });

// A hybrid model: 4 state slots for --max-num-seqs 6, so the slot pool
// binds as often as the KV pool; prefix caching keeps 3 state checkpoints
// (fewer than the prefixes in use: they are evicted), or none and is off;
// (seed, paged, checkpoints).
class EngineSimulationHybrid : public ::testing::TestWithParam<std::tuple<uint64_t, bool, int32_t>> {};

TEST_P(EngineSimulationHybrid, InvariantsHoldAndEverySlotIsBack) {
  const auto [seed, paged, checkpoints] = GetParam();
  simulate(seed, paged, SchedulerConfig::kAutoStepMs, {}, /*state_slots=*/4, Pooling::none, true, checkpoints);
}

// An embedding model, each pooling; (seed, paged, pooling).
class EngineSimulationPooling : public ::testing::TestWithParam<std::tuple<uint64_t, bool, Pooling>> {};

TEST_P(EngineSimulationPooling, EveryVectorIsItsPromptsAndEverythingDrains) {
  const auto [seed, paged, pooling] = GetParam();
  simulate(seed, paged, SchedulerConfig::kAutoStepMs, {}, 0, pooling);
}

// An encoder (non-causal attention): every input whole in one pass, through
// preemptions, failed passes and time budgets; (seed, paged, pooling).
class EngineSimulationEncoder : public ::testing::TestWithParam<std::tuple<uint64_t, bool, Pooling>> {};

TEST_P(EngineSimulationEncoder, EveryInputRunsWholeInOnePass) {
  const auto [seed, paged, pooling] = GetParam();
  simulate(seed, paged, SchedulerConfig::kAutoStepMs, {}, 0, pooling, /*causal=*/false);
}

INSTANTIATE_TEST_SUITE_P(Seeds, EngineSimulationEncoder,
                         ::testing::Values(std::tuple{14u, true, Pooling::cls}, std::tuple{15u, false, Pooling::mean},
                                           std::tuple{16u, true, Pooling::last}),
                         [](const auto& info) {
                           return fmt::format("seed{}_{}_{}", std::get<0>(info.param),
                                              std::get<1>(info.param) ? "paged" : "reserve",
                                              pooling_name(std::get<2>(info.param)));
                         });

INSTANTIATE_TEST_SUITE_P(Seeds, EngineSimulationPooling,
                         ::testing::Values(std::tuple{11u, true, Pooling::mean}, std::tuple{12u, true, Pooling::last},
                                           std::tuple{13u, false, Pooling::cls}),
                         [](const auto& info) {
                           return fmt::format("seed{}_{}_{}", std::get<0>(info.param),
                                              std::get<1>(info.param) ? "paged" : "reserve",
                                              pooling_name(std::get<2>(info.param)));
                         });

INSTANTIATE_TEST_SUITE_P(Seeds, EngineSimulationHybrid,
                         ::testing::Values(std::tuple<uint64_t, bool, int32_t>{8, true, 3},
                                           std::tuple<uint64_t, bool, int32_t>{9, true, 3},
                                           std::tuple<uint64_t, bool, int32_t>{10, false, 3},
                                           std::tuple<uint64_t, bool, int32_t>{17, true, 0}),
                         [](const auto& info) {
                           return fmt::format("seed{}_{}_{}checkpoints", std::get<0>(info.param),
                                              std::get<1>(info.param) ? "paged" : "reserve", std::get<2>(info.param));
                         });

}  // namespace
}  // namespace pagoda
