// /health tells the truth: 503 with a reason within about a second of a step
// outliving its limit, 200 again once it ends, no 503 for steps as long as
// the ones before them; /health/live stays 200; ?generate=1 runs a real
// token; /metrics stays truthful during a stuck step; and a stuck step does
// not hold up shutdown.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <future>
#include <thread>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

TEST(ServerHealth, AStepOfAnUnseenSizeIsAStallPastStallTimeout) {
  // Every step sleeps 1.5 s. The first has no prediction: its limit is
  // --stall-timeout (0.3 s). The next ones are predicted at ~1.5 s.
  ServerProcess s({"--stall-min-ms", "300", "--stall-timeout", "0.3", "--inject-faults", "slow=1,slow_ms=1500"});
  const auto t0 = Clock::now();
  auto pending = std::async(std::launch::async, [&] {
    return http_post(s.port(), "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 3}, {"ignore_eos", true}}).status;
  });
  HttpResponse h;
  ASSERT_TRUE(eventually([&] { return (h = http_get(s.port(), "/health")).status == 503; }, 5s));
  EXPECT_LT(seconds_since(t0), 1.5);
  EXPECT_EQ(h.json()["status"], "stalled") << h.body;
  EXPECT_NE(h.json()["reason"].get<std::string>().find("a step has run"), std::string::npos) << h.body;
  // Liveness is not readiness; /metrics never waits on the step, and says what it holds.
  EXPECT_EQ(http_get(s.port(), "/health/live").status, 200);
  const PromMetrics m = metrics(s.port());
  EXPECT_EQ(m.at("pagoda_num_requests_running"), 1);
  EXPECT_EQ(m.at("pagoda_engine_stalled"), 1);
  EXPECT_GT(m.at("pagoda_engine_step_running_seconds"), 0.3);
  // Once it ends, 200 again: the steps after it are predicted, not stalls.
  ASSERT_TRUE(eventually([&] { return http_get(s.port(), "/health").status == 200; }, 3s));
  int stalled_after = 0;
  while (pending.wait_for(50ms) != std::future_status::ready)
    stalled_after += http_get(s.port(), "/health").status == 503;
  EXPECT_EQ(pending.get(), 200);
  EXPECT_EQ(stalled_after, 0);
  EXPECT_GE(metrics(s.port()).at("pagoda_engine_stalls_total"), 1);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerHealth, LongStepsLikeTheOnesBeforeAreNotStalls) {
  // 700 ms steps, four times the floor of 300 ms: a CPU's long prefill.
  ServerProcess s({"--stall-min-ms", "300", "--stall-timeout", "5", "--inject-faults", "slow=1,slow_ms=700"});
  auto pending = std::async(std::launch::async, [&] {
    return http_post(s.port(), "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 5}, {"ignore_eos", true}}).status;
  });
  int checks = 0, unhealthy = 0;
  double predicted = 0;
  while (pending.wait_for(50ms) != std::future_status::ready) {
    ++checks;
    unhealthy += http_get(s.port(), "/health").status != 200;
    predicted = std::max(predicted, metrics(s.port()).at("pagoda_engine_step_predicted_seconds"));
  }
  EXPECT_EQ(pending.get(), 200);
  EXPECT_GT(checks, 20);
  EXPECT_EQ(unhealthy, 0);
  EXPECT_GT(predicted, 0.5);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerHealth, AHungStepAmongFastOnesIs503WithinTheFloor) {
  // Steps take ~1 ms; now and then one sleeps 1.5 s. With a floor of 500 ms,
  // /health must say 503 about 0.5 s after the stream stops, and 200 once it resumes.
  ServerProcess s({"--stall-min-ms", "500", "--inject-faults", "slow=0.1,slow_ms=1500,seed=3"});
  HttpConnection stream(s.port());
  stream.send("POST", "/v1/completions",
              json({{"prompt", "Once"}, {"max_tokens", 60}, {"ignore_eos", true}, {"stream", true}}).dump());
  ASSERT_EQ(stream.read_head().status, 200);
  std::atomic<bool> done{false};
  std::atomic<double> last_event{0};
  const auto t0 = Clock::now();
  std::thread reader([&] {
    while (!stream.read_body_some().empty()) last_event = seconds_since(t0);
    done = true;
  });
  double first_503 = -1, event_before = 0, worst_delay = 0;
  int healthy_after = 0;
  while (!done) {
    const bool stalled = http_get(s.port(), "/health").status == 503;
    const double now = seconds_since(t0);
    if (stalled && first_503 < 0) {
      first_503 = now;
      event_before = last_event;
      worst_delay = std::max(worst_delay, first_503 - event_before);
    }
    if (!stalled && first_503 >= 0) ++healthy_after;
    std::this_thread::sleep_for(20ms);
  }
  reader.join();
  ASSERT_GE(first_503, 0) << "no step was seen stalled";
  EXPECT_LT(worst_delay, 0.5 + 0.6);  // the floor, a step's worth of slack, and the polling
  EXPECT_GT(healthy_after, 0);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerHealth, GenerateProbeRunsOneToken) {
  ServerProcess s({"--api-key", "k"});  // health needs no key
  const HttpResponse r = http_get(s.port(), "/health?generate=1");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["generate"], "ok") << r.body;
  EXPECT_TRUE(eventually([&] { return engine_idle(s.port()); }));
  const PromMetrics m = metrics(s.port());
  EXPECT_EQ(m.at("pagoda_generation_tokens_total"), 1);
  EXPECT_EQ(m.at("pagoda_engine_idle_check_failures_total"), 0);
  // Only the parameter itself asks for a generation.
  const HttpResponse plain = http_get(s.port(), "/health?nogenerate=1&x=generate=1");
  EXPECT_EQ(plain.status, 200);
  EXPECT_FALSE(plain.json().contains("generate")) << plain.body;
  EXPECT_EQ(http_get(s.port(), "/health?x=2&generate=true").json()["generate"], "ok");
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerShutdown, AStuckStepDoesNotHoldUpShutdown) {
  // Every step sleeps 20 s; --shutdown-timeout 1.
  ServerProcess s({"--shutdown-timeout", "1", "--inject-faults", "slow=1,slow_ms=20000"});
  const json body = {{"prompt", "Once"}, {"max_tokens", 4}};
  json streamed = body;
  streamed["stream"] = true;
  std::vector<std::future<HttpResponse>> answers;
  for (const json& b : {body, body, streamed})
    answers.push_back(std::async(std::launch::async, [&s, b] { return http_post(s.port(), "/v1/completions", b); }));
  ASSERT_TRUE(eventually([&] { return metrics(s.port()).at("pagoda_num_requests_running") >= 1; }, 5s));
  const auto t0 = Clock::now();
  kill(s.pid(), SIGTERM);
  for (auto& a : answers) {
    ASSERT_EQ(a.wait_for(5s), std::future_status::ready);
    const HttpResponse r = a.get();
    // A whole response is a 503; a stream whose head went out ends in an error event.
    if (r.status == 200) {
      EXPECT_NE(r.body.find("shutting down"), std::string::npos) << r.body;
    } else {
      EXPECT_EQ(r.status, 503) << r.body;
      EXPECT_NE(r.body.find("shutting down"), std::string::npos) << r.body;
    }
  }
  EXPECT_LT(seconds_since(t0), 2.5);
  // Non-zero: a step was abandoned; within --shutdown-timeout plus a second.
  EXPECT_EQ(s.stop(SIGTERM, 10), 3) << s.stderr_text();
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_NE(s.stderr_text().find("stuck"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::testing
