// vLLM's series on GET /metrics (server/vllm_metrics.h): vLLM's names, types,
// labels and bucket boundaries, parsed by the strict reader; after a
// concurrent workload on a small KV pool (with preemptions) each agrees with
// its pagoda_* twin, and the KV usage is 0 once drained.
#include <gtest/gtest.h>

#include <regex>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "testing/process.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

const std::string kLabels = "engine=\"0\",model_name=\"stories260K\"";

std::string v(const std::string& name, const std::string& extra = "") { return name + "{" + kLabels + extra + "}"; }

// The le="..." boundaries of a histogram, in the order served (without +Inf).
std::vector<std::string> bounds(const std::string& text, const std::string& name) {
  std::vector<std::string> out;
  const std::regex re(name + "_bucket\\{[^}]*le=\"([^\"]+)\"\\}");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    if ((*it)[1] != "+Inf") out.push_back((*it)[1]);
  return out;
}

TEST(VllmMetrics, NamesTypesAndBuckets) {
  ServerProcess s({"--max-model-len", "256"});
  const HttpResponse r = http_get(s.port(), "/metrics");
  ASSERT_EQ(r.status, 200);
  const PromMetrics m = parse_prometheus(r.body);
  const std::map<std::string, std::string> want = {
      {"vllm:num_requests_running", "gauge"},
      {"vllm:num_requests_waiting", "gauge"},
      {"vllm:kv_cache_usage_perc", "gauge"},
      {"vllm:cache_config_info", "gauge"},
      {"vllm:prefix_cache_queries_total", "counter"},
      {"vllm:prefix_cache_hits_total", "counter"},
      {"vllm:num_preemptions_total", "counter"},
      {"vllm:prompt_tokens_total", "counter"},
      {"vllm:generation_tokens_total", "counter"},
      {"vllm:request_success_total", "counter"},
      {"vllm:request_prompt_tokens", "histogram"},
      {"vllm:request_generation_tokens", "histogram"},
      {"vllm:iteration_tokens_total", "histogram"},
      {"vllm:time_to_first_token_seconds", "histogram"},
      {"vllm:inter_token_latency_seconds", "histogram"},
      {"vllm:e2e_request_latency_seconds", "histogram"},
      {"vllm:request_queue_time_seconds", "histogram"},
      {"vllm:request_inference_time_seconds", "histogram"},
      {"vllm:request_prefill_time_seconds", "histogram"},
      {"vllm:request_decode_time_seconds", "histogram"},
  };
  std::map<std::string, std::string> got;
  for (const auto& [name, type] : m.types)
    if (name.starts_with("vllm:")) got.emplace(name, type);
  EXPECT_EQ(got, want);
  const std::string info =
      "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",engine=\"0\","
      "num_cpu_blocks=\"None\",num_gpu_blocks=\"" +
      std::to_string(int64_t(m.at("pagoda_kv_blocks_total"))) + "\"}";
  EXPECT_EQ(m.at(info), 1);
  for (const char* reason : {"stop", "length", "abort", "error"})
    EXPECT_EQ(m.at(v("vllm:request_success_total", std::string(",finished_reason=\"") + reason + "\"")), 0);
  // vLLM's boundaries (vllm/v1/metrics/loggers.py).
  using B = std::vector<std::string>;
  EXPECT_EQ(bounds(r.body, "vllm:time_to_first_token_seconds"),
            (B{"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1",  "0.25",  "0.5",   "0.75",
               "1.0",   "2.5",   "5.0",  "7.5",  "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0"}));
  EXPECT_EQ(bounds(r.body, "vllm:inter_token_latency_seconds"),
            (B{"0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75", "1.0", "2.5", "5.0",
               "7.5", "10.0", "20.0", "40.0", "80.0"}));
  const B latency = {"0.3",  "0.5",  "0.8",  "1.0",  "1.5",   "2.0",   "2.5",   "5.0",   "10.0",   "15.0",  "20.0",
                     "30.0", "40.0", "50.0", "60.0", "120.0", "240.0", "480.0", "960.0", "1920.0", "7680.0"};
  for (const char* h :
       {"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_inference_time_seconds",
        "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds"})
    EXPECT_EQ(bounds(r.body, h), latency) << h;
  EXPECT_EQ(bounds(r.body, "vllm:iteration_tokens_total"),
            (B{"1.0", "8.0", "16.0", "32.0", "64.0", "128.0", "256.0", "512.0", "1024.0", "2048.0", "4096.0", "8192.0",
               "16384.0"}));
  // build_1_2_5_buckets(max_model_len = 256).
  const B one_two_five = {"1.0", "2.0", "5.0", "10.0", "20.0", "50.0", "100.0", "200.0"};
  EXPECT_EQ(bounds(r.body, "vllm:request_prompt_tokens"), one_two_five);
  EXPECT_EQ(bounds(r.body, "vllm:request_generation_tokens"), one_two_five);
  EXPECT_EQ(s.stop(), 0);
}

TEST(VllmMetrics, AgreeWithPagodaAfterAWorkload) {
  // 256 KV tokens for 12 concurrent requests of up to ~100 tokens: preemptions.
  ServerProcess s({"--kv-cache-tokens", "256", "--max-num-seqs", "12", "--kv-headroom-per-seq", "0"});
  const ProcessResult lg = run_process({pagoda_binary(), "loadgen", "--port", std::to_string(s.port()), "--json", "-c",
                                        "12", "-n", "36", "--max-tokens", "40", "--ignore-eos", "--seed", "5"});
  ASSERT_EQ(lg.exit_code, 0) << lg.out << lg.err;
  const json r = json::parse(lg.out);
  ASSERT_EQ(r["ok"], 36) << r.dump(1);
  PromMetrics m;
  ASSERT_TRUE(eventually([&] {
    m = metrics(s.port());
    return terminal_total(m) == 36 && m.at("pagoda_num_requests_running") == 0;
  }));
  SCOPED_TRACE(http_get(s.port(), "/metrics").body);
  EXPECT_GT(m.at("pagoda_num_preemptions_total"), 0);
  auto same = [&](const std::string& vllm, const std::string& pagoda) { EXPECT_EQ(m.at(vllm), m.at(pagoda)) << vllm; };
  same(v("vllm:num_requests_running"), "pagoda_num_requests_running");
  same(v("vllm:num_requests_waiting"), "pagoda_num_requests_waiting");
  same(v("vllm:kv_cache_usage_perc"), "pagoda_kv_cache_usage_perc");
  EXPECT_EQ(m.at(v("vllm:kv_cache_usage_perc")), 0);  // drained
  same(v("vllm:prefix_cache_queries_total"), "pagoda_prefix_cache_queries_total");
  same(v("vllm:prefix_cache_hits_total"), "pagoda_prefix_cache_hits_total");
  same(v("vllm:num_preemptions_total"), "pagoda_num_preemptions_total");
  same(v("vllm:prompt_tokens_total"), "pagoda_prompt_tokens_total");  // no request ended before its prefill
  same(v("vllm:generation_tokens_total"), "pagoda_generation_tokens_total");
  for (const char* reason : {"stop", "length"})
    same(v("vllm:request_success_total", std::string(",finished_reason=\"") + reason + "\""),
         std::string("pagoda_request_success_total{finished_reason=\"") + reason + "\"}");
  for (const char* h : {"time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds"}) {
    same(v(std::string("vllm:") + h + "_count"), std::string("pagoda_") + h + "_count");
    EXPECT_NEAR(m.at(v(std::string("vllm:") + h + "_sum")), m.at(std::string("pagoda_") + h + "_sum"), 1e-6) << h;
  }
  // One observation per request in every per-request histogram.
  for (const char* h : {"request_queue_time_seconds", "request_prefill_time_seconds", "request_decode_time_seconds",
                        "request_inference_time_seconds", "request_prompt_tokens", "request_generation_tokens"})
    EXPECT_EQ(m.at(v(std::string("vllm:") + h + "_count")), 36) << h;
  EXPECT_EQ(m.at(v("vllm:request_prompt_tokens_sum")), m.at("pagoda_prompt_tokens_total"));
  EXPECT_EQ(m.at(v("vllm:request_generation_tokens_sum")), m.at("pagoda_generation_tokens_total"));
  // Every step's tokens: the prompts once and each generated token.
  EXPECT_EQ(m.at(v("vllm:iteration_tokens_total_sum")),
            m.at("pagoda_prompt_tokens_total") + m.at("pagoda_generation_tokens_total"));
  // Phases add up: prefill + decode = inference, for each request and so in sum.
  EXPECT_NEAR(m.at(v("vllm:request_prefill_time_seconds_sum")) + m.at(v("vllm:request_decode_time_seconds_sum")),
              m.at(v("vllm:request_inference_time_seconds_sum")), 1e-6);
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
