// Start and stop: the printed port and curl line, 503s while the model loads,
// and SIGTERM/SIGINT: stop accepting, let
// in-flight requests finish, fail them with a clear error after
// --shutdown-timeout, exit 0.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(ServerLifecycle, PrintsPortAndCurlLineAndOnlyListensOnLoopback) {
  ServerProcess s;
  const std::string out = s.stdout_text();
  EXPECT_NE(out.find("listening on http://127.0.0.1:" + std::to_string(s.port())), std::string::npos) << out;
  EXPECT_NE(out.find("curl http://127.0.0.1:" + std::to_string(s.port()) + "/v1/completions"), std::string::npos)
      << out;
  EXPECT_EQ(s.stop(SIGINT), 0);
}

// The server listens before the model is loaded: meanwhile /health says
// "loading" and generation gets an OpenAI-style 503 with Retry-After, and the
// same requests succeed once it is loaded.
TEST(ServerLifecycle, Is503WithRetryAfterWhileTheModelLoads) {
  ServerProcess s({"--inject-faults", "load_ms=3000"}, /*wait_healthy=*/false);
  const HttpResponse health = http_get(s.port(), "/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.json()["status"], "loading");
  const json body = {{"prompt", "Once"}, {"max_tokens", 2}};
  const HttpResponse early = http_post(s.port(), "/v1/completions", body);
  EXPECT_EQ(early.status, 503);
  EXPECT_NE(early.json()["error"]["message"].get<std::string>().find("loading"), std::string::npos) << early.body;
  EXPECT_EQ(early.header("retry-after"), "1");
  EXPECT_TRUE(eventually([&] { return http_get(s.port(), "/health").status == 200; }, 30s));
  EXPECT_EQ(http_post(s.port(), "/v1/completions", body).status, 200);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerLifecycle, SigtermLetsInFlightStreamsFinish) {
  ServerProcess s({"--inject-faults", "slow=1,slow_ms=5"});
  HttpConnection streaming(s.port()), idle(s.port());
  EXPECT_EQ(idle.request("GET", "/health").status, 200);  // an idle keep-alive connection
  streaming.send("POST", "/v1/completions",
                 json({{"prompt", "Once"}, {"max_tokens", 100}, {"ignore_eos", true}, {"stream", true}}).dump());
  ASSERT_EQ(streaming.read_head().status, 200);
  ASSERT_EQ(streaming.read_events(2).size(), 2u);
  kill(s.pid(), SIGTERM);
  // The idle connection is closed; no new connection is accepted.
  EXPECT_TRUE(idle.peer_closed_within(5s));
  EXPECT_TRUE(eventually(
      [&] {
        try {
          HttpConnection c(s.port());
          return false;
        } catch (const std::exception&) {
          return true;
        }
      },
      5s));
  // The stream runs to its end.
  const auto events = streaming.read_events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(s.stop(SIGTERM, 30), 0) << s.stderr_text();
}

TEST(ServerLifecycle, ShutdownTimeoutFailsWhatIsLeftWithAClearError) {
  ServerProcess s({"--shutdown-timeout", "0.5", "--inject-faults", "slow=1,slow_ms=10"});
  const json body = {{"prompt", "Once"}, {"max_tokens", 400}, {"ignore_eos", true}};
  HttpConnection whole(s.port()), streaming(s.port());
  whole.send("POST", "/v1/completions", body.dump());
  json sb = body;
  sb["stream"] = true;
  streaming.send("POST", "/v1/completions", sb.dump());
  ASSERT_EQ(streaming.read_head().status, 200);
  ASSERT_TRUE(eventually([&] { return metrics(s.port()).at("pagoda_num_requests_running") == 2; }));
  kill(s.pid(), SIGTERM);
  const HttpResponse r = whole.read_response();
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("shutting down"), std::string::npos) << r.body;
  const auto events = streaming.read_events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_NE(events[events.size() - 2].find("shutting down"), std::string::npos);
  EXPECT_EQ(s.stop(SIGTERM, 30), 0) << s.stderr_text();
}

TEST(ServerLifecycle, BadFlagsFailBeforeListening) {
  const auto run = [](std::vector<std::string> args) {
    ServerProcess* p = nullptr;
    try {
      p = new ServerProcess(args);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    delete p;
    return std::string("started");
  };
  EXPECT_NE(run({"--inject-faults", "bogus=1"}).find("bogus"), std::string::npos);
  EXPECT_NE(run({"--chat-template", "nonsense"}).find("nonsense"), std::string::npos);
  EXPECT_NE(run({"--host", "not a host"}).find("host"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::testing
