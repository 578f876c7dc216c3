// `pagoda loadgen` as a serving benchmark against the real server on
// stories260K: Poisson arrivals, prompt and output token ranges, SLOs; the
// JSON report's figures are consistent (counts add up, percentiles ordered,
// goodput within throughput, prompts near the asked size). And bad flags are
// one-line errors before any traffic.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/server_process.h"
#include "testing/process.h"
#include "tools/loadgen_stats.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

ProcessResult loadgen(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {pagoda_binary(), "loadgen", "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

void expect_ordered(const json& p, const std::string& name) {
  EXPECT_LE(p["p50"].get<double>(), p["p90"].get<double>()) << name;
  EXPECT_LE(p["p90"].get<double>(), p["p99"].get<double>()) << name;
  EXPECT_GE(p["p50"].get<double>(), 0) << name;
}

TEST(LoadgenRate, PoissonArrivalsWithRangesGiveAConsistentReport) {
  ServerProcess s({"--max-num-seqs", "8"});
  const int n = 24;
  const double rate = 30;
  const ProcessResult p = loadgen({"--port",
                                   std::to_string(s.port()),
                                   "--request-rate",
                                   "30",
                                   "-c",
                                   "4",
                                   "-n",
                                   std::to_string(n),
                                   "--prompt-tokens",
                                   "40:60",
                                   "--output-tokens",
                                   "6:12",
                                   "--ignore-eos",
                                   "--temperature",
                                   "0",
                                   "--slo-ttft-ms",
                                   "200",
                                   "--slo-itl-ms",
                                   "100",
                                   "--seed",
                                   "5"});
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  const json r = json::parse(p.out);
  SCOPED_TRACE(r.dump(1));
  EXPECT_EQ(r["requests"], n);
  EXPECT_EQ(r["ended"], n);
  EXPECT_EQ(r["ok"], n);
  EXPECT_EQ(r["request_rate"], rate);
  EXPECT_EQ(r["max_concurrency"], 4);
  EXPECT_LE(r["max_concurrent_streams"].get<int>(), 4);  // -c caps the requests in flight
  // --ignore-eos: every request gave exactly its drawn max_tokens, 6..12.
  const int64_t out = r["completion_tokens"];
  EXPECT_GE(out, 6 * n);
  EXPECT_LE(out, 12 * n);
  EXPECT_EQ(r["ttft_ms"]["count"], n);
  EXPECT_EQ(r["e2e_ms"]["count"], n);
  EXPECT_EQ(r["tpot_ms"]["count"], n);
  EXPECT_EQ(r["itl_ms"]["count"], out - n);  // one gap between each two tokens of a request
  // Prompts near the asked 40..60 tokens (the word fit is approximate: a
  // word's token count varies; docs/performance.md says by how much).
  const json& pt = r["prompt_tokens_each"];
  EXPECT_EQ(pt["count"], n);
  EXPECT_GE(pt["mean"].get<double>(), 40 * 0.8);
  EXPECT_LE(pt["mean"].get<double>(), 60 * 1.2);
  EXPECT_NEAR(r["prompt_tokens"].get<double>(), pt["mean"].get<double>() * n, 1e-6);
  for (const char* k : {"ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "queue_ms"}) expect_ordered(r[k], k);
  EXPECT_LE(r["ttft_ms"]["p99"].get<double>(), r["e2e_ms"]["p99"].get<double>() + 1e-6);
  // Throughputs and goodput agree with the counts and the duration.
  const double d = r["duration_s"];
  EXPECT_NEAR(r["requests_per_s"].get<double>(), n / d, 1e-6);
  EXPECT_NEAR(r["tokens_per_s"].get<double>(), double(out) / d, 1e-6);
  EXPECT_GT(r["total_tokens_per_s"].get<double>(), r["tokens_per_s"].get<double>());
  EXPECT_LE(r["good"].get<int>(), n);
  EXPECT_LE(r["goodput_requests_per_s"].get<double>(), r["requests_per_s"].get<double>());
  // The run lasted at least until the last Poisson arrival of this seed.
  tools::PoissonArrivals arrivals(rate, 5);
  double last = 0;
  for (int i = 0; i < n; ++i) last = arrivals.next();
  EXPECT_GE(d, last);
  EXPECT_EQ(s.stop(), 0) << s.stderr_text();
}

TEST(LoadgenRate, BadFlagsAreOneLineErrors) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--request-rate", "0"},
                                             {"--request-rate", "-2"},
                                             {"--request-rate", "fast"},
                                             {"--prompt-tokens", "9:3"},
                                             {"--output-tokens", "0"},
                                             {"--slo-ttft-ms", "-1"},
                                             {"--body-extra", "[1]"},
                                             {"--body-extra", "@/nonexistent"}}) {
    // Port 9 (discard): nothing is sent anyway, the flags fail first.
    std::vector<std::string> a = {"--port", "9"};
    a.insert(a.end(), args.begin(), args.end());
    const ProcessResult p = loadgen(a);
    EXPECT_NE(p.exit_code, 0) << args[0] << " " << args[1];
    EXPECT_TRUE(p.out.empty()) << p.out;
    EXPECT_EQ(std::count(p.err.begin(), p.err.end(), '\n'), 1) << p.err;
    EXPECT_NE(p.err.find(args[0]), std::string::npos) << p.err;
  }
}

// No server (port 9: nothing listens): loadgen stops after a few refused
// connects, exit 1, instead of spending its --duration on refusals.
TEST(LoadgenRate, StopsAtOnceWhenNoServerAnswers) {
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult p = loadgen({"--port", "9", "-c", "4", "-n", "100000000", "--duration", "120"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(p.exit_code, 1) << p.out << p.err;
  EXPECT_LT(seconds, 10);
  const json r = json::parse(p.out);
  EXPECT_TRUE(r["server_gone"].get<bool>()) << r.dump();
  EXPECT_LT(r["requests"].get<int64_t>(), 100) << r.dump();
  EXPECT_EQ(r["requests"], r["ended"]) << r.dump();
}

// --body-extra reaches every request: a valid constraint is served, an
// invalid one is a 400 for each request.
TEST(LoadgenRate, BodyExtraIsMergedIntoEveryRequest) {
  ServerProcess s;
  const auto run = [&](const std::string& extra) {
    const ProcessResult p =
        loadgen({"--port", std::to_string(s.port()), "-c", "2", "-n", "4", "--max-tokens", "8", "--body-extra", extra});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return json::parse(p.out);
  };
  const json good = run(R"({"structured_outputs":{"choice":["yes","no"]}})");
  EXPECT_EQ(good["ok"], 4) << good.dump();
  const json bad = run(R"({"response_format":{"type":"yaml"}})");
  EXPECT_EQ(bad["ok"], 0) << bad.dump();
  EXPECT_EQ(bad["http_4xx"], 4) << bad.dump();
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
