// Crowds and rude clients, bounded for CI (PAGODA_TEST_SCALE scales them):
//  - 128 concurrent clients on a 2048-token KV pool, 30% hanging up (while
//    waiting or mid-stream), 10% sending bad input, the engine failing
//    forward passes (transient, and 10% poisoned requests that always fail):
//    every request ends, the books balance, nothing leaks,
//    the server still answers; paged and --no-paged-attn.
//  - 512 concurrent streams plus 2,000 idle keep-alive connections, served by
//    a handful of threads.
// The load comes from `pagoda loadgen`, the project's load generator.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <future>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "testing/process.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json loadgen(uint16_t port, std::vector<std::string> args) {
  std::vector<std::string> argv = {pagoda_binary(), "loadgen", "--port", std::to_string(port), "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult p = run_process(argv);
  if (p.exit_code != 0) throw std::runtime_error("loadgen failed: " + p.out + p.err);
  return json::parse(p.out);
}

class ServerLoadAndFaults : public ::testing::TestWithParam<bool> {};

TEST_P(ServerLoadAndFaults, EveryRequestEndsAndNothingLeaks) {
  std::vector<std::string> args = {"--kv-cache-tokens", "2048",
                                   "--max-num-seqs",    "32",
                                   "--inject-faults",   "forward=0.01,poison=0.1,at_step=10,seed=11",
                                   "--audit-every-step"};
  if (!GetParam()) args.push_back("--no-paged-attn");
  ServerProcess s(args);
  const int n = scaled(512, 128);
  const json r = loadgen(s.port(), {"-c", "128", "-n", std::to_string(n), "--max-tokens", "48", "--hangup-fraction",
                                    "0.3", "--bad-fraction", "0.1", "--seed", "3", "--request-timeout", "120"});
  SCOPED_TRACE(r.dump(1));
  // Every request ended: completed, failed cleanly, refused as bad, or hung up by its client.
  EXPECT_EQ(r["requests"], n);
  EXPECT_EQ(r["ended"], n);
  EXPECT_EQ(r["transport_errors"], 0);
  EXPECT_EQ(r["client_timeouts"], 0);
  EXPECT_EQ(r["http_4xx"], 0);
  EXPECT_EQ(r["rejected_429"], 0);
  // Bad input got a 4xx, all of it.
  EXPECT_GT(r["bad_sent"].get<int>(), 0);
  EXPECT_EQ(r["bad_rejected"], r["bad_sent"]);
  EXPECT_EQ(r["bad_accepted"], 0);
  EXPECT_GT(r["ok"].get<int>(), 0);
  EXPECT_GT(r["hung_up_waiting"].get<int>(), 0);
  EXPECT_GT(r["hung_up_streaming"].get<int>(), 0);
  // The injected failures reached clients as clean errors (500 or a stream error event).
  EXPECT_GT(r["http_5xx"].get<int>() + r["stream_errors"].get<int>(), 0);

  // The engine settles: nothing running or waiting, no block held, and the
  // books balance (received == successes + failures).
  PromMetrics m;
  EXPECT_TRUE(eventually(
      [&] {
        m = metrics(s.port());
        return engine_idle(s.port()) && m.at("pagoda_requests_received_total") == terminal_total(m);
      },
      10s))
      << "received " << m.at("pagoda_requests_received_total") << ", ended " << terminal_total(m);
  EXPECT_EQ(m.at("pagoda_kv_blocks_used"), 0);
  EXPECT_GT(failures(m, "error"), 0);  // the faults really happened
  EXPECT_GT(failures(m, "abort"), 0);  // and so did the hang-ups
  // Every completion a client saw is a server success; a client that hung up
  // may still have been served in full before the server noticed (it had
  // already sent the last event), so those may count as successes too.
  const double successes = m.at("pagoda_request_success_total{finished_reason=\"stop\"}") +
                           m.at("pagoda_request_success_total{finished_reason=\"length\"}");
  EXPECT_GE(successes, r["ok"].get<double>());
  EXPECT_LE(successes,
            r["ok"].get<double>() + r["hung_up_waiting"].get<double>() + r["hung_up_streaming"].get<double>());
  // Still serving (a request may still draw an injected fault: a few tries).
  EXPECT_EQ(http_get(s.port(), "/health").status, 200);
  EXPECT_TRUE(eventually(
      [&] {
        return http_post(s.port(), "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}}).status == 200;
      },
      10s));
  EXPECT_EQ(s.stop(), 0) << s.stderr_text();
}

INSTANTIATE_TEST_SUITE_P(Pool, ServerLoadAndFaults, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Paged" : "NoPagedAttn"; });

TEST(ServerCrowd, ManyStreamsPlusIdleKeepAliveConnections) {
  const int streams = scaled(512, 32), idle = scaled(2000, 100);
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  ASSERT_GT(lim.rlim_cur, rlim_t(idle + 64)) << "the open-files limit is too low for this test";

  // Two I/O threads: connections on strands, served by either.
  ServerProcess s({"--io-threads", "2", "--max-num-seqs", std::to_string(streams), "--kv-cache-tokens",
                   std::to_string(streams * 96), "--max-batched-tokens", "8192"});
  // Idle keep-alive connections, each used once.
  std::vector<std::unique_ptr<HttpConnection>> idlers;
  for (int i = 0; i < idle; ++i) {
    idlers.push_back(std::make_unique<HttpConnection>(s.port()));
    ASSERT_EQ(idlers.back()->request("GET", "/health").status, 200) << i;
  }
  auto load = std::async(std::launch::async, [&] {
    return loadgen(s.port(), {"-c", std::to_string(streams), "-n", std::to_string(streams), "--max-tokens", "64",
                              "--ignore-eos", "--temperature", "0", "--request-timeout", "120"});
  });
  // Meanwhile: the engine takes them all at once, /health answers, few threads.
  double peak = 0;
  int max_threads = 0;
  while (load.wait_for(10ms) != std::future_status::ready) {
    const PromMetrics m = metrics(s.port());
    peak = std::max(peak, m.at("pagoda_num_requests_running"));
    max_threads = std::max(max_threads, s.num_threads());
    EXPECT_EQ(http_get(s.port(), "/health").status, 200);
  }
  const json r = load.get();
  SCOPED_TRACE(r.dump(1));
  EXPECT_EQ(r["ok"], streams);
  EXPECT_EQ(r["ended"], streams);
  EXPECT_GE(r["max_concurrent_streams"].get<double>(), 0.9 * streams);
  EXPECT_GE(peak, 0.9 * streams);
  EXPECT_LE(max_threads, 16);  // no thread per connection
  RecordProperty("tokens_per_s", int(r["tokens_per_s"].get<double>()));
  RecordProperty("ttft_p99_ms", int(r["ttft_ms"]["p99"].get<double>()));
  // Every idle connection is still open and served.
  for (int i = 0; i < idle; ++i) ASSERT_EQ(idlers[size_t(i)]->request("GET", "/health").status, 200) << i;
  EXPECT_TRUE(engine_idle(s.port()));
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
