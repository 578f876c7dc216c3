// GET /metrics: valid Prometheus text carrying every metric the issue names,
// with the right types, and counters that follow the requests served.
#include <gtest/gtest.h>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

TEST(ServerMetrics, PrometheusTextWithEveryNamedMetric) {
  ServerProcess s;
  const HttpResponse r = http_get(s.port(), "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-type").rfind("text/plain; version=0.0.4", 0), 0u);
  const PromMetrics m = parse_prometheus(r.body);
  const std::map<std::string, std::string> want = {
      {"pagoda_num_requests_running", "gauge"},
      {"pagoda_num_requests_waiting", "gauge"},
      {"pagoda_kv_blocks_total", "gauge"},
      {"pagoda_kv_blocks_used", "gauge"},
      {"pagoda_kv_blocks_cached", "gauge"},
      {"pagoda_kv_cache_usage_perc", "gauge"},
      {"pagoda_prefix_cache_queries_total", "counter"},
      {"pagoda_prefix_cache_hits_total", "counter"},
      {"pagoda_prefix_caching_enabled", "gauge"},
      {"pagoda_state_checkpoints_total", "gauge"},
      {"pagoda_state_checkpoints_used", "gauge"},
      {"pagoda_state_checkpoint_saves_total", "counter"},
      {"pagoda_state_checkpoint_hits_total", "counter"},
      {"pagoda_state_checkpoint_evictions_total", "counter"},
      {"pagoda_state_slots_total", "gauge"},
      {"pagoda_state_slots_used", "gauge"},
      {"pagoda_num_preemptions_total", "counter"},
      {"pagoda_moe_last_step_experts", "gauge"},
      {"pagoda_moe_experts_run_total", "counter"},
      {"pagoda_prompt_tokens_total", "counter"},
      {"pagoda_generation_tokens_total", "counter"},
      {"pagoda_requests_received_total", "counter"},
      {"pagoda_request_success_total", "counter"},
      {"pagoda_request_failure_total", "counter"},
      {"pagoda_engine_last_step_age_seconds", "gauge"},
      {"pagoda_engine_step_running_seconds", "gauge"},
      {"pagoda_engine_step_predicted_seconds", "gauge"},
      {"pagoda_engine_step_budget_tokens", "gauge"},
      {"pagoda_engine_step_target_seconds", "gauge"},
      {"pagoda_engine_step_cost_predicted_seconds", "gauge"},
      {"pagoda_engine_step_duration_seconds", "histogram"},
      {"pagoda_engine_step_time_over_target", "histogram"},
      {"pagoda_engine_stalled", "gauge"},
      {"pagoda_engine_stalls_total", "counter"},
      {"pagoda_engine_idle_check_failures_total", "counter"},
      {"pagoda_time_to_first_token_seconds", "histogram"},
      {"pagoda_inter_token_latency_seconds", "histogram"},
      {"pagoda_e2e_request_latency_seconds", "histogram"},
  };
  std::map<std::string, std::string> ours;  // vLLM's names: vllm_metrics_test.cpp
  for (const auto& [name, type] : m.types)
    if (name.starts_with("pagoda_")) ours.emplace(name, type);
  EXPECT_EQ(ours, want);
  for (const char* reason : {"stop", "length"})
    EXPECT_EQ(m.at(std::string("pagoda_request_success_total{finished_reason=\"") + reason + "\"}"), 0);
  for (const char* reason : {"abort", "timeout", "error", "rejected"}) EXPECT_EQ(failures(m, reason), 0);
  EXPECT_GT(m.at("pagoda_kv_blocks_total"), 0);
  // A dense model: prefix caching on, no recurrent-state slots.
  EXPECT_EQ(m.at("pagoda_prefix_caching_enabled"), 1);
  EXPECT_EQ(m.at("pagoda_state_slots_total"), 0);
  EXPECT_EQ(m.at("pagoda_state_slots_used"), 0);
  EXPECT_EQ(m.at("pagoda_time_to_first_token_seconds_count"), 0);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerMetrics, CountersFollowTheRequests) {
  ServerProcess s({"--kv-cache-tokens", "1024"});
  // The same 40-token prompt twice: the second reuses the first's full blocks.
  std::vector<int> prompt(40, 300);
  prompt[0] = 1;
  for (int i = 0; i < 2; ++i) {
    const json r =
        http_post(s.port(), "/v1/completions", {{"prompt", prompt}, {"max_tokens", 8}, {"ignore_eos", true}}).json();
    ASSERT_EQ(r["usage"]["completion_tokens"], 8);
    if (i == 1) {
      EXPECT_EQ(r["usage"]["prompt_tokens_details"]["cached_tokens"], 32);
    }
  }
  const json stop =
      http_post(s.port(), "/v1/completions",
                {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}, {"stop", "Lily"}})
          .json();
  ASSERT_EQ(stop["choices"][0]["finish_reason"], "stop");
  // The engine publishes its statistics after the step that delivered the
  // last token: poll until all three requests are counted.
  PromMetrics m;
  ASSERT_TRUE(eventually([&] {
    m = metrics(s.port());
    return terminal_total(m) == 3;
  }));
  EXPECT_EQ(m.at("pagoda_requests_received_total"), 3);
  EXPECT_EQ(m.at("pagoda_request_success_total{finished_reason=\"length\"}"), 2);
  EXPECT_EQ(m.at("pagoda_request_success_total{finished_reason=\"stop\"}"), 1);
  EXPECT_EQ(m.at("pagoda_prompt_tokens_total"), 40 + 40 + 5);
  EXPECT_GE(m.at("pagoda_generation_tokens_total"), 16);
  EXPECT_EQ(m.at("pagoda_prefix_cache_hits_total"), 32);
  EXPECT_GE(m.at("pagoda_prefix_cache_queries_total"), 80);
  EXPECT_EQ(m.at("pagoda_kv_blocks_total"), 1024 / 16);
  EXPECT_GT(m.at("pagoda_kv_blocks_cached"), 0);  // the prompts' blocks stay reusable
  EXPECT_EQ(m.at("pagoda_kv_blocks_used"), 0);
  EXPECT_EQ(m.at("pagoda_kv_cache_usage_perc"), 0);
  EXPECT_EQ(m.at("pagoda_time_to_first_token_seconds_count"), 3);
  EXPECT_EQ(m.at("pagoda_e2e_request_latency_seconds_count"), 3);
  EXPECT_GE(m.at("pagoda_inter_token_latency_seconds_count"), 14);
  EXPECT_GT(m.at("pagoda_e2e_request_latency_seconds_sum"), 0);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerMetrics, ParserRejectsMalformedText) {
  EXPECT_THROW(parse_prometheus("foo 1\n"), std::runtime_error);  // no TYPE
  EXPECT_THROW(parse_prometheus("# TYPE foo gauge\nfoo one\n"), std::runtime_error);
  EXPECT_THROW(parse_prometheus("# TYPE foo gauge\nfoo{a=b} 1\n"), std::runtime_error);
  EXPECT_THROW(
      parse_prometheus("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n"),
      std::runtime_error);
  EXPECT_NO_THROW(parse_prometheus("# HELP foo x\n# TYPE foo counter\nfoo{a=\"b\"} 3\n"));
}

}  // namespace
}  // namespace pagoda::testing
