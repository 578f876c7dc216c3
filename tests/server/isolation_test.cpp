// One fault costs one request, through a real server: with poisoned requests
// (every forward pass carrying one fails) only those fail, each with an error
// that says so, and every other request completes; transient forward-pass
// failures (5% of passes) cost at most 1% of requests.
#include <gtest/gtest.h>

#include <future>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

// n requests, `concurrent` at a time; returns the responses.
std::vector<HttpResponse> crowd(uint16_t port, int n, int concurrent) {
  std::vector<HttpResponse> out;
  for (int done = 0; done < n;) {
    std::vector<std::future<HttpResponse>> batch;
    for (int i = 0; i < concurrent && done < n; ++i, ++done)
      batch.push_back(std::async(std::launch::async, [port, done] {
        return http_post(
            port, "/v1/completions",
            {{"prompt", "Once upon a time " + std::to_string(done)}, {"max_tokens", 12}, {"ignore_eos", true}});
      }));
    for (auto& f : batch) out.push_back(f.get());
  }
  return out;
}

TEST(ServerIsolation, OnlyPoisonedRequestsFail) {
  ServerProcess s({"--inject-faults", "poison=0.1,seed=5", "--audit-every-step"});
  const int n = scaled(240, 80);
  int failed = 0;
  for (const HttpResponse& r : crowd(s.port(), n, 24)) {
    if (r.status == 200) continue;
    ++failed;
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_NE(r.body.find("poisoned request"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("failed for this request"), std::string::npos) << r.body;
  }
  // About a tenth are poisoned: at least one, far fewer than the ~every-batch
  // share a batch-wide failure would take.
  EXPECT_GE(failed, 1);
  EXPECT_LE(failed, n / 4);
  EXPECT_TRUE(eventually([&] { return engine_idle(s.port()); }));
  const PromMetrics m = metrics(s.port());
  EXPECT_EQ(failures(m, "error"), failed);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerIsolation, TransientForwardFailuresCostAtMostOnePercent) {
  ServerProcess s({"--inject-faults", "forward=0.05,seed=9"});
  const int n = scaled(300, 100);
  int failed = 0;
  for (const HttpResponse& r : crowd(s.port(), n, 24)) failed += r.status != 200;
  EXPECT_LE(failed, std::max(1, n / 100));
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
