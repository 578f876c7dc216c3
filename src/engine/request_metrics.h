// The per-request and per-step figures vLLM's Prometheus logger publishes
// (vllm/v1/metrics/loggers.py), kept beside EngineStats' own so /metrics can
// serve them under vLLM's names with vLLM's bucket boundaries:
//
//   on_first_token  a request's prompt is computed: its prompt tokens count
//                   (vLLM counts prompt tokens when prefill ends, not on arrival)
//                   and its time to first token
//   on_next_token   the time since the request's previous token
//   on_step         one step's prompt + generated tokens (iteration_tokens_total)
//   on_finish       a request ended, any reason: queue, prefill, decode and
//                   inference times, its prompt and generated token counts
//
// Times follow vLLM's: queue = first scheduled - arrival, prefill = first
// token - first scheduled, decode = last token - first token, inference =
// last token - first scheduled, e2e = end - arrival; a phase never reached
// counts 0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

namespace pagoda {

// A histogram with boundaries chosen at construction (at most kMax of them).
struct BucketHistogram {
  static constexpr size_t kMax = 32;
  std::array<double, kMax> bounds{};       // [0, size): increasing upper bounds
  std::array<int64_t, kMax + 1> counts{};  // [0, size]: the last is above every bound
  size_t size = 0;
  double sum = 0;
  int64_t count = 0;

  BucketHistogram() = default;
  BucketHistogram(std::initializer_list<double> b) : BucketHistogram(std::span<const double>(b.begin(), b.size())) {}
  explicit BucketHistogram(std::span<const double> b);
  void observe(double v);
};

// vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, ... up to max.
BucketHistogram buckets_1_2_5(int64_t max_value);

struct RequestTimes {
  double arrival = 0, scheduled = -1, first_token = -1, last_token = -1, end = 0;
  int64_t prompt_tokens = 0, generation_tokens = 0;
};

struct RequestMetrics {
  explicit RequestMetrics(int64_t max_model_len = 1);

  int64_t prompt_tokens = 0;       // of requests whose prompt was computed
  int64_t step_prompt_tokens = 0;  // this step's, for iteration_tokens (reset by on_step)
  BucketHistogram iteration_tokens;
  BucketHistogram ttft, itl, e2e;  // vLLM's boundaries, not kLatencyBounds
  BucketHistogram queue_time, prefill_time, decode_time, inference_time;
  BucketHistogram request_prompt_tokens, request_generation_tokens;

  void on_first_token(int64_t prompt_len, double ttft_s) {
    prompt_tokens += prompt_len;
    step_prompt_tokens += prompt_len;
    ttft.observe(ttft_s);
  }
  void on_next_token(double itl_s) { itl.observe(itl_s); }
  void on_step(int64_t generated_this_step);
  void on_finish(const RequestTimes& t);
};

}  // namespace pagoda
