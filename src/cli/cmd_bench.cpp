// `pagoda bench`: a bounded workload through the engine's offline path, with
// the figures that matter for serving: output tokens/s, time to first token
// and inter-token latency (p50/p99), preemptions, prefix-cache hit rate, KV
// utilization, and the share of step time spent outside the forward pass.
// Runs the same workload in paged mode and in reserve mode (--no-paged-attn)
// for comparison. Figures, not a pass/fail test.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <random>

#include "cli/commands.h"
#include "cli/load_engine.h"
#include "cli/model_option.h"
#include "engine/engine.h"
#include "util/error.h"

namespace pagoda::cli {
namespace {

struct BenchOpts {
  ModelOption model;
  std::string model_path;  // model, resolved once
  int requests = 64;
  int min_prompt = 16, max_prompt = 256;
  int min_output = 16, max_output = 128;
  int shared_prefix = 0;  // > 0: every prompt starts with the same tokens (prefix caching workload)
  bool ignore_eos = true;
  int64_t kv_cache_tokens = 0;
  int max_num_seqs = 64;
  int max_batched_tokens = 2048;
  std::string max_step_ms = "auto";
  int long_prefill_token_threshold = 0;
  double kv_watermark = SchedulerConfig{}.kv_watermark;
  int kv_headroom_per_seq = SchedulerConfig{}.kv_headroom_per_seq;
  int threads = 0;
  bool mmap = false;
  uint64_t seed = 1;
  bool skip_reserve = false;
  std::string faults;        // --inject-faults SPEC
  EngineConfig device;       // --device and the GPU's flags
  DeviceFlags device_flags;  // --kv-type, --enforce-eager
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

void run_mode(const BenchOpts& o, bool paged) {
  EngineConfig cfg = o.device;
  cfg.kv_cache_tokens = o.kv_cache_tokens;
  cfg.sched.max_num_seqs = o.max_num_seqs;
  cfg.sched.max_batched_tokens = o.max_batched_tokens;
  parse_max_step_ms(o.max_step_ms, cfg.sched);
  cfg.sched.long_prefill_token_threshold = o.long_prefill_token_threshold;
  cfg.sched.kv_watermark = o.kv_watermark;
  cfg.sched.kv_headroom_per_seq = o.kv_headroom_per_seq;
  cfg.threads = o.threads;
  cfg.mmap = o.mmap;
  cfg.paged = paged;
  cfg.log_interval_s = 0;
  cfg.max_waiting = o.requests + 1;
  if (!o.faults.empty()) cfg.faults = FaultSpec::parse(o.faults);
  auto engine = load_engine(o.model_path, cfg, o.device_flags);

  std::mt19937_64 rng(o.seed);
  const int vocab = engine->vocab_size();
  auto token = [&] { return TokenId(3 + rng() % uint64_t(vocab - 3)); };
  std::vector<TokenId> prefix;
  for (int i = 0; i < o.shared_prefix; ++i) prefix.push_back(token());
  std::vector<Request> reqs;
  for (int i = 0; i < o.requests; ++i) {
    Request r;
    const int plen = o.min_prompt + int(rng() % uint64_t(o.max_prompt - o.min_prompt + 1));
    r.prompt = prefix;
    while (int(r.prompt.size()) < plen) r.prompt.push_back(token());
    r.prompt.resize(std::min<size_t>(r.prompt.size(), size_t(engine->max_model_len() - 2)));
    const int room = engine->max_model_len() - int(r.prompt.size());
    r.sampling.max_tokens = std::min(room, o.min_output + int(rng() % uint64_t(o.max_output - o.min_output + 1)));
    r.sampling.temperature = 0;
    r.sampling.ignore_eos = o.ignore_eos;
    reqs.push_back(std::move(r));
  }

  struct Timing {
    double start = 0, first = -1, last = 0;
    std::vector<double> gaps;
    int64_t tokens = 0;
  };
  std::mutex mu;
  std::vector<Timing> t(reqs.size());
  size_t remaining = reqs.size();
  std::condition_variable cv;
  auto now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  const double t0 = now();
  for (size_t i = 0; i < reqs.size(); ++i) {
    t[i].start = now();
    engine->submit(std::move(reqs[i]), [&, i](RequestOutput&& out) {
      const double ts = now();
      std::lock_guard lock(mu);
      Timing& x = t[i];
      if (!out.tokens.empty()) {
        if (x.first < 0)
          x.first = ts;
        else
          x.gaps.push_back(ts - x.last);
        x.last = ts;
        x.tokens += int64_t(out.tokens.size());
      }
      if (out.request_done && --remaining == 0) cv.notify_all();
      return true;
    });
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return remaining == 0; });
  }
  const double wall = now() - t0;
  const EngineStats s = engine->snapshot();
  std::vector<double> ttft, itl;
  int64_t out_tokens = 0;
  for (const auto& x : t) {
    if (x.first >= 0) ttft.push_back(x.first - x.start);
    itl.insert(itl.end(), x.gaps.begin(), x.gaps.end());
    out_tokens += x.tokens;
  }
  const double hit = s.prefix_queries ? 100.0 * double(s.prefix_hits) / double(s.prefix_queries) : 0.0;
  const double util = s.kv_utilization_samples ? 100.0 * s.kv_utilization_sum / double(s.kv_utilization_samples) : 0.0;
  const double overhead = s.time_in_step > 0 ? 100.0 * (s.time_in_step - s.time_in_forward) / s.time_in_step : 0.0;
  fmt::print("{:<8} {:>9.1f} {:>9.1f} {:>9.1f} {:>8.2f} {:>8.2f} {:>7} {:>7.1f}% {:>7.1f}% {:>8.1f}% {:>8.2f} {:>7}\n",
             paged ? "paged" : "reserve", double(out_tokens) / wall, 1e3 * percentile(ttft, 0.5),
             1e3 * percentile(ttft, 0.99), 1e3 * percentile(itl, 0.5), 1e3 * percentile(itl, 0.99), s.preemptions, hit,
             util, overhead, wall, s.errored);
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOpts>();
  auto* cmd = app.add_subcommand("bench", "Measure serving throughput and latency through the engine");
  o->model.add(cmd);
  cmd->add_option("--requests", o->requests, "Requests in the workload")->capture_default_str();
  cmd->add_option("--min-prompt", o->min_prompt)->capture_default_str();
  cmd->add_option("--max-prompt", o->max_prompt)->capture_default_str();
  cmd->add_option("--min-output", o->min_output)->capture_default_str();
  cmd->add_option("--max-output", o->max_output)->capture_default_str();
  cmd->add_option("--shared-prefix", o->shared_prefix, "Tokens every prompt shares (prefix-cache workload)")
      ->capture_default_str();
  cmd->add_flag("!--no-ignore-eos", o->ignore_eos, "Stop at end-of-generation tokens (default: fixed output lengths)");
  cmd->add_option("--kv-cache-tokens", o->kv_cache_tokens, "KV pool size in tokens (0 = default sizing)")
      ->capture_default_str();
  cmd->add_option("--max-num-seqs", o->max_num_seqs)->capture_default_str();
  cmd->add_option("--max-batched-tokens", o->max_batched_tokens)->capture_default_str();
  cmd->add_option("--max-step-ms", o->max_step_ms, "Target step time: ms, auto, a multiple (2.5x), or 0 (tokens alone)")
      ->capture_default_str();
  cmd->add_option("--long-prefill-token-threshold", o->long_prefill_token_threshold)->capture_default_str();
  cmd->add_option("--kv-watermark", o->kv_watermark, "Share of the KV pool kept free when admitting (paged mode)")
      ->capture_default_str();
  cmd->add_option("--kv-headroom-per-seq", o->kv_headroom_per_seq,
                  "KV blocks kept free per running sequence when admitting (paged mode)")
      ->capture_default_str();
  cmd->add_option("--threads,-t", o->threads)->capture_default_str();
  add_device_options(cmd, o->device, o->device_flags);
  cmd->add_flag(
      "--mmap", o->mmap,
      "Map the model file instead of reading it into memory (faster start, shared page cache; decode a few % slower)");
  cmd->add_option("--seed", o->seed)->capture_default_str();
  cmd->add_flag("--skip-reserve", o->skip_reserve, "Do not repeat the workload in reserve mode");
  cmd->add_option("--inject-faults", o->faults, "Fault injection, as for serve (errors: requests that ended with one)");
  return {cmd, [o] {
            if (o->requests < 1 || o->min_prompt < 1 || o->max_prompt < o->min_prompt || o->min_output < 1 ||
                o->max_output < o->min_output)
              fail<InvalidArgument>("bench: request counts and length ranges must be positive and ordered");
            o->model_path = o->model.resolve();
            if (!std::getenv("PAGODA_LOG")) spdlog::set_level(spdlog::level::warn);
            fmt::print("{} requests, prompts {}-{} tokens{}, outputs {}-{} tokens\n", o->requests, o->min_prompt,
                       o->max_prompt, o->shared_prefix ? fmt::format(" ({} shared)", o->shared_prefix) : "",
                       o->min_output, o->max_output);
            fmt::print("{:<8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7} {:>8} {:>8} {:>9} {:>8} {:>7}\n", "mode", "out tok/s",
                       "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "preempt", "prefix", "KV util", "non-fwd",
                       "wall s", "errors");
            fmt::print("{:<8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>7} {:>8} {:>8} {:>9} {:>8} {:>7}\n", "", "", "ms", "ms",
                       "ms", "ms", "", "hit", "", "share", "", "");
            run_mode(*o, true);
            if (!o->skip_reserve) run_mode(*o, false);
            return 0;
          }};
}

}  // namespace pagoda::cli
