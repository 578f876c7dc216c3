#include "engine/engine.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "engine/engine_core.h"
#include "engine/cpu_runner.h"
#include "engine/memory_plan.h"
#include "engine/step_estimate.h"
#include "engine/step_trace.h"
#include "kv/pool_size.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/memory_limits.h"

namespace pagoda {
namespace {

// The KV pool options for a model under `config`, its layers in `groups`.
KvPoolOptions pool_options(const EngineConfig& config, const ModelConfig& model, const KvGroups& groups) {
  KvPoolOptions o;
  o.cache_tokens = config.kv_cache_tokens;
  o.cache_mem_mib = config.kv_cache_mem_mib;
  o.max_num_seqs = config.sched.max_num_seqs;
  o.context_len = config.max_model_len > 0 ? std::min(config.max_model_len, model.n_ctx_train) : model.n_ctx_train;
  o.block_size = config.block_size;
  // The storage's own layout (model/kv_storage.h): layers of different head sizes, none for shared or recurrent ones.
  o.kv_bytes_per_token = kv_bytes_per_token(model, groups, config.kv_type);
  o.group_windows = groups.windows;
  return o;
}

// Where the weights live and what is left for the KV pool, from the limits
// on this process's memory (memory_plan.h), logged in one line.
MemoryPlan plan_model_memory(const EngineConfig& config, const Model& model, const KvPoolOptions& pool,
                             const StatePoolOptions& state) {
  MemoryPlanInput in;
  in.limits = read_memory_limits();
  in.weight_bytes = int64_t(WeightMover::arena_bytes(model.weights()));
  in.may_copy = !config.mmap;
  const int threads = config.threads > 0 ? config.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  in.reserve_bytes = process_reserve_bytes(threads);
  in.kv_needs_bytes = kv_pool_needs_bytes(pool) + state_pool_needs_bytes(state);
  MemoryPlan plan = plan_memory(in);
  if (plan.warn)
    spdlog::warn("{}", plan.summary);
  else
    spdlog::info("{}", plan.summary);
  return plan;
}

// A hybrid model's state slots decide two settings, each said in one line:
// prefix caching keeps checkpoints of the recurrent state (a cached prefix is
// of no use without the state at its end), or goes off without them; and the
// running set cannot outgrow the slots.
void apply_state_slots(EngineConfig& cfg, const ModelConfig& model, const StatePoolSize& slots) {
  const std::string name = model.name.empty() ? model.arch : model.name;
  if (slots.num_slots == 0) {
    if (cfg.state_slots > 0)
      spdlog::warn("--state-slots {} ignored: {} keeps no recurrent state", cfg.state_slots, name);
    return;
  }
  spdlog::info("{}", slots.summary);
  if (cfg.prefix_caching && slots.num_checkpoints == 0) {
    spdlog::info(
        "prefix caching is off: {} keeps recurrent state in {} of {} layers, a cached prefix is of no use without "
        "the state at its end, and --state-checkpoints 0 keeps none",
        name, model.n_recurrent_layers(), model.n_layer);
    cfg.prefix_caching = false;
  } else if (cfg.prefix_caching) {
    spdlog::info(
        "prefix caching: {} keeps recurrent state in {} of {} layers, so a prompt's state is checkpointed every {} "
        "tokens and at its last block boundaries; {} checkpoints, the least recently used evicted",
        name, model.n_recurrent_layers(), model.n_layer, cfg.state_checkpoint_interval, slots.num_checkpoints);
  }
  if (cfg.sched.max_num_seqs > slots.num_slots) {
    spdlog::info("--max-num-seqs {} lowered to the {} recurrent-state slots", cfg.sched.max_num_seqs, slots.num_slots);
    cfg.sched.max_num_seqs = slots.num_slots;
  }
}

}  // namespace

struct Engine::Impl {
  Impl(const EngineConfig& config, std::unique_ptr<ModelRunner> runner, int32_t num_blocks,
       std::shared_ptr<const Tokenizer> tokenizer, std::shared_ptr<const Clock> clock);
  uint64_t submit(Request r, OutputSink sink);
  void cancel(uint64_t id);
  size_t inbox_size() const;
  EngineStats snapshot() const;
  void shutdown(const std::string& reason);
  bool wait_stopped(double timeout_s);
  void engine_loop();
  void call(std::function<void(EngineCore&)> f, double timeout_s);
  void logger_loop();
  std::shared_ptr<const EngineSnapshot> state_snapshot();
  void publish_snapshot(bool settling);
  void build_snapshot();
  void report_trace(bool last);

  EngineConfig config_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<const Clock> clock_;
  std::unique_ptr<EngineCore> core_;
  int32_t max_model_len_ = 0, vocab_size_ = 0;
  Pooling pooling_ = Pooling::none;
  int32_t output_width_ = 0;

  struct Pending {
    uint64_t id;
    Request request;
    OutputSink sink;
  };
  mutable std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<Pending> adds_;
  std::vector<uint64_t> cancels_;
  std::vector<std::function<void()>> calls_;  // control operations, run between steps
  bool stopping_ = false;
  std::string stop_reason_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<int64_t> open_requests_{0};  // submitted and not yet finished
  bool loop_exited_ = false;               // under inbox_mu_
  std::condition_variable exited_cv_;
  StepEstimate estimate_;  // engine thread only
  SnapshotBoard board_;    // the dashboard's snapshots
  double last_snapshot_ = 0;
  std::atomic<bool> changed_{true};              // something happened since the last picture
  std::atomic<bool> snapshot_requested_{false};  // a reader found the picture stale (wakes the loop)
  uint64_t snapshot_version_ = 0;
  const int64_t trace_every_ = step_trace_interval();  // PAGODA_STEP_TRACE; 0: no report
  StepPhaseTimes trace_reported_;                      // as of the last report

  mutable std::mutex stats_mu_;
  EngineStats stats_;  // the published snapshot

  std::mutex logger_mu_;
  std::condition_variable logger_cv_;
  bool logger_stop_ = false;

  std::thread engine_thread_, logger_thread_;
};

Engine::Engine(const EngineConfig& config, std::unique_ptr<ModelRunner> runner, int32_t num_blocks,
               std::shared_ptr<const Tokenizer> tokenizer, std::shared_ptr<const Clock> clock)
    : impl_(std::make_unique<Impl>(config, std::move(runner), num_blocks, std::move(tokenizer), std::move(clock))) {}

Engine::Impl::Impl(const EngineConfig& config, std::unique_ptr<ModelRunner> runner, int32_t num_blocks,
                   std::shared_ptr<const Tokenizer> tokenizer, std::shared_ptr<const Clock> clock)
    : config_(config), tokenizer_(tokenizer), clock_(clock) {
  core_ = std::make_unique<EngineCore>(config, std::move(runner), num_blocks, tokenizer, clock);
  max_model_len_ = core_->max_model_len();
  vocab_size_ = core_->vocab_size();
  pooling_ = core_->pooling();
  output_width_ = core_->output_width();
  stats_ = core_->stats();
  core_->on_step_start([this](const EngineCore::StepStart& st) {
    const auto predicted = estimate_.predict(st.tokens);
    std::lock_guard lock(stats_mu_);
    stats_.step_predicted_s = predicted.value_or(0);
    stats_.running = st.running;  // truthful while the step runs, however long
    stats_.waiting = st.waiting;
  });
  spdlog::info("engine: {} KV blocks of {} tokens, max model length {}, max {} sequences, {} batched tokens{}{}",
               num_blocks, config.block_size, max_model_len_, config.sched.max_num_seqs,
               config.sched.max_batched_tokens, config.paged ? "" : ", reserve mode (--no-paged-attn)",
               config.prefix_caching ? "" : ", no prefix caching");
  if (config.faults.any()) spdlog::warn("fault injection is ON: {}", config.faults.describe());
  if (config_.snapshot_interval_s > 0) build_snapshot();  // readers always find a picture
  engine_thread_ = std::thread([this] { engine_loop(); });
  if (config.log_interval_s > 0) logger_thread_ = std::thread([this] { logger_loop(); });
}

std::unique_ptr<Engine> Engine::load(const std::string& model_path, const EngineConfig& config) {
  if (config.device != "cpu")
    fail<InvalidArgument>("--device {}: this loader runs models on the CPU (the CLI loads GPU engines)", config.device);
  if (config.faults.gpu_trap_at_pass > 0 || config.faults.gpu_hang_at_pass > 0 || config.faults.gpu_oom_at_pass > 0)
    fail<InvalidArgument>("--inject-faults gpu_*: real device faults need --device cuda");
  if (config.faults.load_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(config.faults.load_ms));
  // Served from the map at once; where the memory plan says so, the weights
  // then move into memory and row panels in the background (model/weight_mover.h).
  auto model = std::shared_ptr<Model>(Model::load(model_path, Residency::kMapped, config.load_progress));
  KvGroups groups = kv_groups_of(model->config(), config.hybrid_kv_cache);
  KvPoolOptions pool = pool_options(config, model->config(), groups);
  StatePoolOptions state{.state_slots = config.state_slots,
                         .state_checkpoints = config.prefix_caching ? config.state_checkpoints : 0,
                         .max_num_seqs = config.sched.max_num_seqs,
                         .state_bytes = model->config().state_bytes()};
  const MemoryPlan plan = plan_model_memory(config, *model, pool, state);
  // Recurrent-state slots first; the KV pool takes its share of the rest.
  state.mem_left_bytes = plan.left_bytes;
  state.mem_left_why = plan.left_why;
  const StatePoolSize slots = size_state_pool(state);  // before the move starts, as the KV pool
  EngineConfig cfg = config;
  apply_state_slots(cfg, model->config(), slots);
  pool.mem_left_bytes = plan.left_bytes < 0 ? -1 : std::max<int64_t>(0, plan.left_bytes - slots.bytes);
  pool.mem_max_bytes = plan.max_bytes < 0 ? -1 : std::max<int64_t>(0, plan.max_bytes - slots.bytes);
  pool.mem_left_why = slots.bytes > 0
                          ? fmt::format("{}, less {} of recurrent state", plan.left_why, format_bytes(slots.bytes))
                          : plan.left_why;
  const KvPoolSize size = size_kv_pool(pool);  // before the move starts: a refusal leaves nothing running
  spdlog::info("{}", size.summary);
  if (!size.warning.empty()) spdlog::warn("{}", size.warning);
  if (plan.residency == Residency::kInMemory && config.weights_before_serving) {
    // Read and packed now, on every core, instead of moved by one background
    // thread while the first tokens decode beside it from the map.
    const auto t0 = std::chrono::steady_clock::now();
    model = std::shared_ptr<Model>(Model::load(model_path, Residency::kInMemory, config.load_progress));
    spdlog::info("model weights read into memory and row panels in {:.2f} s",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } else if (plan.residency == Residency::kInMemory) {
    WeightMover::Options moving;
    moving.progress = config.load_progress;
    moving.on_done = [](double s) {
      spdlog::info(
          "model weights moved into memory in {:.2f} s while serving (each step from the next on reads them; the "
          "file's map is then released)",
          s);
    };
    if (!model->move_into_memory(std::move(moving)))
      spdlog::warn("{} is larger than the memory available: served from its map", model_path);
  }
  auto tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_gguf(model->file()));
  const int32_t blocks = size.num_blocks;
  auto runner = std::make_unique<CpuRunner>(model, std::move(groups), blocks, config.block_size, config.kv_type,
                                            config.threads, slots.num_slots, slots.num_checkpoints);
  const Pooling pooling = config.pooling.value_or(model->config().pooling);
  if (pooling == Pooling::rank && !model->has_rank_head())
    fail<Unsupported>("{}: rank pooling needs a reranker's classification head (cls.output.weight)", model_path);
  if (pooling != Pooling::none)
    spdlog::info("serving {} as an embedding model: {} pooling of its final hidden states, {} wide",
                 model->config().name.empty() ? model_path : model->config().name, pooling_name(pooling),
                 model->config().n_embd);
  runner->set_pooling(pooling);
  return std::make_unique<Engine>(cfg, std::move(runner), blocks, tokenizer);
}

Engine::~Engine() {
  shutdown();
  Impl& m = *impl_;
  if (m.engine_thread_.joinable()) m.engine_thread_.join();
  {
    std::lock_guard lock(m.logger_mu_);
    m.logger_stop_ = true;
  }
  m.logger_cv_.notify_all();
  if (m.logger_thread_.joinable()) m.logger_thread_.join();
}

int32_t Engine::max_model_len() const { return impl_->max_model_len_; }
int32_t Engine::vocab_size() const { return impl_->vocab_size_; }
Pooling Engine::pooling() const { return impl_->pooling_; }
int32_t Engine::output_width() const { return impl_->output_width_; }
const Tokenizer* Engine::tokenizer() const { return impl_->tokenizer_.get(); }
const EngineConfig& Engine::config() const { return impl_->config_; }

uint64_t Engine::submit(Request r, OutputSink sink) { return impl_->submit(std::move(r), std::move(sink)); }
void Engine::cancel(uint64_t id) { impl_->cancel(id); }
size_t Engine::inbox_size() const { return impl_->inbox_size(); }
EngineStats Engine::snapshot() const { return impl_->snapshot(); }
std::shared_ptr<const EngineSnapshot> Engine::state_snapshot() const { return impl_->state_snapshot(); }
bool Engine::state_snapshot_current() const { return !impl_->changed_; }
void Engine::shutdown(const std::string& reason) { impl_->shutdown(reason); }
bool Engine::wait_stopped(double timeout_s) { return impl_->wait_stopped(timeout_s); }

uint64_t Engine::Impl::submit(Request r, OutputSink sink) {
  core_->validate(r);  // reads only constants: safe on this thread
  std::lock_guard lock(inbox_mu_);
  if (stopping_) fail<Overloaded>("the engine is shutting down");
  // The published count lags by the step in progress, so a burst may pass the
  // bound by what arrives during one step. Counting the requests taken for that
  // step instead would refuse requests the step is about to admit, a worse error.
  const int64_t waiting = snapshot().waiting + int64_t(adds_.size());
  if (waiting >= config_.max_waiting)
    fail<Overloaded>("the waiting queue is full ({} requests); retry later", config_.max_waiting);
  const uint64_t id = next_id_++;
  adds_.push_back({id, std::move(r), std::move(sink)});
  ++open_requests_;
  inbox_cv_.notify_one();
  return id;
}

void Engine::Impl::cancel(uint64_t id) {
  std::lock_guard lock(inbox_mu_);
  cancels_.push_back(id);
  inbox_cv_.notify_one();
}

size_t Engine::Impl::inbox_size() const {
  std::lock_guard lock(inbox_mu_);
  return adds_.size();
}

EngineStats Engine::Impl::snapshot() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

void Engine::Impl::shutdown(const std::string& reason) {
  std::lock_guard lock(inbox_mu_);
  if (stopping_) return;
  stopping_ = true;
  stop_reason_ = reason;
  inbox_cv_.notify_one();
}

bool Engine::Impl::wait_stopped(double timeout_s) {
  std::unique_lock lock(inbox_mu_);
  return exited_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return loop_exited_; });
}

void Engine::set_kv_event_sink(std::shared_ptr<KvEventSink> sink, double timeout_s) {
  impl_->call([sink](EngineCore& c) { c.set_kv_event_sink(sink); }, timeout_s);
}

bool Engine::reset_prefix_cache(double timeout_s) {
  auto done = std::make_shared<bool>(false);
  impl_->call([done](EngineCore& c) { *done = c.reset_prefix_cache(); }, timeout_s);
  return *done;
}

std::vector<uint64_t> Engine::cached_block_hashes(double timeout_s) {
  auto out = std::make_shared<std::vector<uint64_t>>();
  impl_->call([out](EngineCore& c) { *out = c.blocks().cached_hashes(); }, timeout_s);
  return *out;
}

// Queues f for the engine thread and waits for it; what f captures must be
// owned (shared), since a timed-out f may still run later.
void Engine::Impl::call(std::function<void(EngineCore&)> f, double timeout_s) {
  auto ran = std::make_shared<std::promise<void>>();
  std::future<void> done = ran->get_future();
  {
    std::lock_guard lock(inbox_mu_);
    if (stopping_) fail<Overloaded>("the engine is shutting down");
    calls_.push_back([this, f = std::move(f), ran] {
      try {
        f(*core_);
        ran->set_value();
      } catch (...) {
        ran->set_exception(std::current_exception());
      }
    });
    inbox_cv_.notify_one();
  }
  if (done.wait_for(std::chrono::duration<double>(timeout_s)) != std::future_status::ready)
    fail<Overloaded>("the engine did not answer within {} s (a step is running long)", timeout_s);
  done.get();
}

void Engine::Impl::engine_loop() {
  bool idle = false;  // the last step had nothing it could run
  for (;;) {
    std::vector<Pending> adds;
    std::vector<uint64_t> cancels;
    std::vector<std::function<void()>> calls;
    bool stopping;
    {
      core_->trace().enter(StepPhase::wait);
      std::unique_lock lock(inbox_mu_);
      auto ready = [&] {
        return stopping_ || !adds_.empty() || !cancels_.empty() || !calls_.empty() || snapshot_requested_;
      };
      // With work that cannot run yet (say, every admission failed), poll
      // gently: deadlines still need checking.
      if (idle && core_->has_work())
        inbox_cv_.wait_for(lock, std::chrono::milliseconds(5), ready);
      else
        inbox_cv_.wait(lock, [&] { return ready() || core_->has_work(); });
      adds.swap(adds_);
      cancels.swap(cancels_);
      calls.swap(calls_);
      stopping = stopping_;
    }
    core_->trace().enter(StepPhase::inbox);
    if (stopping || !adds.empty() || !cancels.empty() || !calls.empty()) changed_ = true;
    for (auto& c : calls) c();
    for (auto& p : adds) {
      // Count the request as done when its last delta passes through.
      OutputSink sink = [this, inner = std::move(p.sink)](RequestOutput&& out) {
        const bool done = out.request_done;
        const bool alive = inner ? inner(std::move(out)) : true;
        if (done) --open_requests_;
        return alive;
      };
      try {
        core_->add(p.id, std::move(p.request), sink);  // validated in submit(); a copy: the catch needs it
      } catch (const std::exception& e) {              // not expected after validate(); still one request's fault
        spdlog::error("request {} could not be added: {}", p.id, e.what());
        RequestOutput out;
        out.request_id = p.id;
        out.finish = FinishReason::error;
        out.error = e.what();
        out.request_done = true;
        sink(std::move(out));
      }
    }
    for (uint64_t id : cancels) core_->cancel(id);
    if (stopping) {
      // Every open request ends with a clear error; then the loop exits.
      std::vector<uint64_t> open;
      core_->for_each_request([&](uint64_t id) { open.push_back(id); });
      for (uint64_t id : open) core_->cancel(id, FinishReason::error, stop_reason_);
    } else {
      {
        std::lock_guard lock(stats_mu_);
        stats_.step_in_progress = true;
        stats_.step_started_at = clock_->now();
        stats_.step_predicted_s = 0;  // until the plan is made
      }
      changed_ = true;  // a step, even one that runs nothing, may time out waiting requests
      try {
        idle = !core_->step();
        if (!idle) estimate_.observe(core_->stats().last_step_tokens, core_->stats().last_step_seconds);
      } catch (const std::exception& e) {
        // A bug, not a model failure (those are handled inside step()); the
        // engine must keep serving, so log it and carry on.
        spdlog::error("engine step failed unexpectedly: {}", e.what());
      }
    }
    core_->trace().enter(StepPhase::publish);
    {
      std::lock_guard lock(stats_mu_);
      stats_ = core_->stats();
      stats_.step_in_progress = false;
    }
    publish_snapshot(stopping || !core_->has_work());
    report_trace(stopping);
    if (stopping) {
      std::lock_guard lock(inbox_mu_);
      loop_exited_ = true;
      exited_cv_.notify_all();
      return;
    }
  }
}

// On a reader's thread: counts as watching; a stale picture wakes the engine
// (through its inbox) for a new one. Returns the picture there was at the
// call, taken before the wake-up, so what a call returns never races it.
std::shared_ptr<const EngineSnapshot> Engine::Impl::state_snapshot() {
  board_.watch(clock_->now());
  auto latest = board_.latest();
  if (changed_ && !snapshot_requested_) {
    {
      std::lock_guard lock(inbox_mu_);  // so the loop cannot miss the wake-up between its check and its wait
      snapshot_requested_ = true;
    }
    inbox_cv_.notify_one();
  }
  return latest;
}

// On the engine thread, between steps: the dashboard's picture, when
// something changed and someone watches: at most once per interval, unless
// the engine is about to sleep (`settling`) or a reader asked.
void Engine::Impl::publish_snapshot(bool settling) {
  const bool requested = snapshot_requested_.exchange(false);
  if (config_.snapshot_interval_s <= 0 || !changed_) return;
  const double now = clock_->now();
  if (!requested && !board_.watched(now)) return;
  if (!requested && !settling && now - last_snapshot_ < config_.snapshot_interval_s) return;
  build_snapshot();
}

void Engine::Impl::build_snapshot() {
  last_snapshot_ = clock_->now();
  changed_ = false;
  auto snap = core_->take_snapshot();
  snap->version = ++snapshot_version_;
  board_.publish(std::move(snap));
}

// PAGODA_STEP_TRACE=N: the phase table of the last N steps that ran, to
// stderr (a log line per phase would interleave with the server's log).
void Engine::Impl::report_trace(bool last) {
  if (trace_every_ <= 0) return;
  const StepPhaseTimes& now = core_->trace().times();
  if (now.steps - trace_reported_.steps < (last ? 1 : trace_every_)) return;
  fmt::print(stderr, "{}", now.since(trace_reported_).table());
  std::fflush(stderr);
  trace_reported_ = now;
}

void Engine::Impl::logger_loop() {
  EngineStats prev = snapshot();
  double prev_time = clock_->now();
  std::unique_lock lock(logger_mu_);
  while (
      !logger_cv_.wait_for(lock, std::chrono::duration<double>(config_.log_interval_s), [&] { return logger_stop_; })) {
    const EngineStats s = snapshot();
    const double now = clock_->now();
    const double dt = std::max(1e-9, now - prev_time);
    const double tps = double(s.tokens_processed - prev.tokens_processed) / dt;
    const int64_t queries = s.prefix_queries - prev.prefix_queries;
    const double hitrate = queries > 0 ? 100.0 * double(s.prefix_hits - prev.prefix_hits) / double(queries) : 0.0;
    spdlog::info(
        "Throughput (T/s) {:.2f}, Prefix cache hitrate {:.2f}%, {} running, {} waiting, KV {:.1f}% used, {} "
        "preemptions",
        tps, hitrate, s.running, s.waiting + int64_t(inbox_size()), 100.0 * s.kv_usage,
        s.preemptions - prev.preemptions);
    prev = s;
    prev_time = now;
  }
}

std::vector<Completion> Engine::generate(std::vector<Request> requests) {
  struct Collector {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Completion> done;
    size_t remaining = 0;
  };
  auto col = std::make_shared<Collector>();
  col->done.resize(requests.size());
  col->remaining = requests.size();
  for (size_t i = 0; i < requests.size(); ++i) {
    col->done[i].choices.resize(size_t(requests[i].n));
    col->done[i].request_id = submit(std::move(requests[i]), [col, i](RequestOutput&& out) {
      std::lock_guard lock(col->mu);
      Completion& c = col->done[i];
      c.num_prompt_tokens = out.num_prompt_tokens;
      c.num_cached_tokens = out.num_cached_tokens;
      auto& ch = c.choices[size_t(out.choice)];
      ch.tokens.insert(ch.tokens.end(), out.tokens.begin(), out.tokens.end());
      ch.text += out.text;
      for (auto& lp : out.logprobs) ch.logprobs.push_back(std::move(lp));
      if (out.finish != FinishReason::none) {
        ch.finish = out.finish;
        ch.error = out.error;
        ch.embedding = std::move(out.embedding);
      }
      if (out.request_done && --col->remaining == 0) col->cv.notify_all();
      return true;
    });
  }
  std::unique_lock lock(col->mu);
  col->cv.wait(lock, [&] { return col->remaining == 0; });
  return std::move(col->done);
}

}  // namespace pagoda
