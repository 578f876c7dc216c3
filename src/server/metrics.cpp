#include "server/metrics.h"

#include <fmt/format.h>

namespace pagoda::server {
namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void gauge(std::string& out, const char* name, double v, const char* help) {
  header(out, name, "gauge", help);
  out += fmt::format("{} {}\n", name, v);
}

void counter(std::string& out, const char* name, int64_t v, const char* help) {
  header(out, name, "counter", help);
  out += fmt::format("{} {}\n", name, v);
}

void histogram(std::string& out, const char* name, const BucketHistogram& h, const char* help) {
  header(out, name, "histogram", help);
  int64_t cumulative = 0;
  for (size_t i = 0; i < h.size; ++i) {
    cumulative += h.counts[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, h.count);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, h.sum, name, h.count);
}

}  // namespace

std::string render_metrics(const EngineStats& s, const ServerFigures& f) {
  std::string out;
  out.reserve(8192);
  gauge(out, "pagoda_num_requests_running", s.running, "Sequences in the running batch.");
  gauge(out, "pagoda_num_requests_waiting", double(s.waiting + f.inbox),
        "Sequences waiting to be admitted (or preempted), and requests not yet taken by the engine.");
  gauge(out, "pagoda_kv_blocks_total", s.kv_blocks_total, "KV cache blocks in the pool.");
  gauge(out, "pagoda_kv_blocks_used", s.kv_blocks_used, "KV cache blocks held by live requests.");
  gauge(out, "pagoda_kv_blocks_cached", s.kv_blocks_cached, "Free KV cache blocks holding reusable prefixes.");
  gauge(out, "pagoda_kv_cache_usage_perc", s.kv_usage, "KV cache usage, a fraction from 0 to 1.");
  counter(out, "pagoda_prefix_cache_queries_total", s.prefix_queries, "Prompt tokens looked up in the prefix cache.");
  counter(out, "pagoda_prefix_cache_hits_total", s.prefix_hits, "Prompt tokens served by the prefix cache.");
  gauge(out, "pagoda_prefix_caching_enabled", s.prefix_caching ? 1 : 0,
        "1 when prefix caching is on; 0 when off by --no-prefix-caching, or for a model that keeps recurrent state "
        "with --state-checkpoints 0.");
  gauge(out, "pagoda_state_slots_total", s.state_slots_total,
        "Recurrent-state slots of a hybrid model, one per running sequence at most (0: the model keeps no state).");
  gauge(out, "pagoda_state_slots_used", s.state_slots_used, "Recurrent-state slots held by live requests.");
  gauge(out, "pagoda_state_checkpoints_total", s.state_checkpoints_total,
        "A hybrid model's prefix caching: buffers for the recurrent state at a cached prefix's end (0: none).");
  gauge(out, "pagoda_state_checkpoints_used", s.state_checkpoints_used,
        "State checkpoints holding a cached prefix's recurrent state.");
  counter(out, "pagoda_state_checkpoint_saves_total", s.state_checkpoint_saves,
          "Recurrent states of prompt prefixes saved as checkpoints.");
  counter(out, "pagoda_state_checkpoint_hits_total", s.state_checkpoint_hits,
          "Requests that started from a state checkpoint (a hybrid model's prefix-cache hits).");
  counter(out, "pagoda_state_checkpoint_evictions_total", s.state_checkpoint_evictions,
          "State checkpoints evicted for newer ones (least recently used first).");
  counter(out, "pagoda_num_preemptions_total", s.preemptions, "Sequences preempted (recomputed later).");
  gauge(out, "pagoda_moe_last_step_experts", s.last_step_experts,
        "Mixture of experts: experts the last forward pass ran, summed over its layers (0: a dense model).");
  counter(out, "pagoda_moe_experts_run_total", s.experts_run,
          "Mixture of experts: experts run by all forward passes, summed over their layers.");
  counter(out, "pagoda_prompt_tokens_total", s.prompt_tokens, "Prompt tokens of the requests received.");
  counter(out, "pagoda_generation_tokens_total", s.generation_tokens, "Tokens generated.");
  counter(out, "pagoda_requests_received_total", s.requests_received + f.rejected,
          "Requests received: taken by the engine or rejected by backpressure.");
  header(out, "pagoda_request_success_total", "counter", "Requests that finished, by finish reason.");
  out += fmt::format("pagoda_request_success_total{{finished_reason=\"stop\"}} {}\n", s.finished_stop);
  out += fmt::format("pagoda_request_success_total{{finished_reason=\"length\"}} {}\n", s.finished_length);
  header(out, "pagoda_request_failure_total", "counter",
         "Requests that did not finish: aborted (the client left), timed out, failed, or rejected (queue full).");
  out += fmt::format("pagoda_request_failure_total{{reason=\"abort\"}} {}\n", s.aborted);
  out += fmt::format("pagoda_request_failure_total{{reason=\"timeout\"}} {}\n", s.timed_out);
  out += fmt::format("pagoda_request_failure_total{{reason=\"error\"}} {}\n", s.errored);
  out += fmt::format("pagoda_request_failure_total{{reason=\"rejected\"}} {}\n", f.rejected);
  gauge(out, "pagoda_engine_last_step_age_seconds", f.step_age_s,
        "Seconds since the engine last finished a step (grows while idle).");
  gauge(out, "pagoda_engine_step_running_seconds", f.step_running_s,
        "How long the step in progress has run (0: none).");
  gauge(out, "pagoda_engine_step_predicted_seconds", s.step_predicted_s,
        "How long the step in progress should take, learned from earlier steps (0: unknown or none).");
  // Time-budgeted steps (scheduler rule 5), of the last step that ran.
  gauge(out, "pagoda_engine_step_budget_tokens", s.step_budget_tokens,
        "Tokens the last step could carry: its decodes and the prefill that fits its target time.");
  gauge(out, "pagoda_engine_step_target_seconds", s.step_target_s, "The last step's target time (0: no time cap).");
  gauge(out, "pagoda_engine_step_cost_predicted_seconds", s.step_cost_predicted_s,
        "The cost model's predicted time for the last step's plan (0: not learned yet).");
  histogram(out, "pagoda_engine_step_duration_seconds", s.step_duration, "Duration of each engine step that ran.");
  histogram(out, "pagoda_engine_step_time_over_target", s.step_over_target,
            "Each time-capped step's duration divided by its target (--max-step-ms).");
  gauge(out, "pagoda_engine_stalled", f.stalled ? 1 : 0, "1 while /health reports the engine stalled.");
  counter(out, "pagoda_engine_stalls_total", f.stalls, "Times the engine was seen to stall.");
  counter(out, "pagoda_engine_idle_check_failures_total", s.idle_check_failures,
          "Steps after which no request was left but KV blocks were still in use.");
  histogram(out, "pagoda_time_to_first_token_seconds", s.ttft, "Time from arrival to the first generated token.");
  histogram(out, "pagoda_inter_token_latency_seconds", s.itl, "Time between consecutive tokens of a request.");
  histogram(out, "pagoda_e2e_request_latency_seconds", s.e2e, "Time from arrival to the end of a request.");
  return out;
}

}  // namespace pagoda::server
