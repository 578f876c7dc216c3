#include "engine/request_metrics.h"

#include <algorithm>

namespace pagoda {
namespace {

// vLLM's request_latency_buckets, shared by its per-request phase times.
BucketHistogram request_latency() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

}  // namespace

BucketHistogram::BucketHistogram(std::span<const double> b) {
  for (double v : b)
    if (size < kMax) bounds[size++] = v;
}

void BucketHistogram::observe(double v) {
  size_t i = 0;
  while (i < size && v > bounds[i]) ++i;
  ++counts[i];
  sum += v;
  ++count;
}

BucketHistogram buckets_1_2_5(int64_t max_value) {
  BucketHistogram h;
  for (int64_t scale = 1; h.size < BucketHistogram::kMax; scale *= 10) {
    for (int64_t m : {1, 2, 5}) {
      if (m * scale > max_value || h.size == BucketHistogram::kMax) return h;
      h.bounds[h.size++] = double(m * scale);
    }
  }
  return h;
}

RequestMetrics::RequestMetrics(int64_t max_model_len)
    : iteration_tokens{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384},
      ttft{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
           1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0},
      itl{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0},
      e2e(request_latency()),
      queue_time(request_latency()),
      prefill_time(request_latency()),
      decode_time(request_latency()),
      inference_time(request_latency()),
      request_prompt_tokens(buckets_1_2_5(max_model_len)),
      request_generation_tokens(buckets_1_2_5(max_model_len)) {}

void RequestMetrics::on_step(int64_t generated_this_step) {
  const int64_t tokens = step_prompt_tokens + generated_this_step;
  step_prompt_tokens = 0;
  if (tokens > 0) iteration_tokens.observe(double(tokens));
}

void RequestMetrics::on_finish(const RequestTimes& t) {
  const double scheduled = t.scheduled >= 0 ? t.scheduled : t.end;
  const double first = t.first_token >= 0 ? t.first_token : scheduled;
  const double last = t.last_token >= 0 ? t.last_token : first;
  e2e.observe(std::max(0.0, t.end - t.arrival));
  queue_time.observe(std::max(0.0, scheduled - t.arrival));
  prefill_time.observe(std::max(0.0, first - scheduled));
  decode_time.observe(std::max(0.0, last - first));
  inference_time.observe(std::max(0.0, last - scheduled));
  request_prompt_tokens.observe(double(t.prompt_tokens));
  request_generation_tokens.observe(double(t.generation_tokens));
}

}  // namespace pagoda
