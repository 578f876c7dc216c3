// The dashboard over real HTTP on stories260K: the page and its files are
// served from the binary; /debug/state tells the truth about the pool and
// holds no text; /debug/events streams the state then deltas that chain;
// streams are bounded; --api-key guards /debug/* but not the page;
// --no-dashboard turns it all off. Then the browser test (tests/dashboard):
// Debian's chromium, driven by playwright-core, against a live server.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>

#include "testing/build_paths.h"
#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "testing/npm_oracle.h"
#include "testing/process.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const json kCompletion = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"ignore_eos", true}};

TEST(ServerDashboard, ServesThePageAndItsFiles) {
  ServerProcess s({"--kv-cache-tokens", "2048"});
  for (const char* path : {"/", "/dashboard"}) {
    const HttpResponse r = http_get(s.port(), path);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.header("content-type"), "text/html; charset=utf-8");
    EXPECT_NE(r.body.find("<title>Pagoda dashboard</title>"), std::string::npos);
  }
  const HttpResponse js = http_get(s.port(), "/dashboard/dashboard.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_NE(js.body.find("/debug/events"), std::string::npos);
  EXPECT_EQ(http_get(s.port(), "/dashboard/dashboard.css").status, 200);
  EXPECT_EQ(http_get(s.port(), "/dashboard/nothing.js").status, 404);
  EXPECT_EQ(http_post(s.port(), "/", json::object()).status, 405);
}

TEST(ServerDashboard, StateMatchesTheEngineAndHoldsNoText) {
  ServerProcess s({"--kv-cache-tokens", "2048"});
  ASSERT_EQ(http_post(s.port(), "/v1/completions", kCompletion).status, 200);
  ASSERT_TRUE(eventually([&] { return engine_idle(s.port()); }, 5s));
  HttpResponse r;
  // The snapshot after the drain comes within a tick.
  ASSERT_TRUE(eventually(
      [&] {
        r = http_get(s.port(), "/debug/state");
        return r.status == 200 && r.json()["finishes"].size() == 1;
      },
      3s))
      << r.body;
  const json st = r.json();
  const PromMetrics m = metrics(s.port());
  EXPECT_EQ(st["type"], "state");
  EXPECT_EQ(st["blocks"]["state"].size(), size_t(m.at("pagoda_kv_blocks_total")));
  for (const char* col : {"ref", "lru", "tokens", "hash", "owners"})
    EXPECT_EQ(st["blocks"][col].size(), st["blocks"]["state"].size()) << col;
  int cached = 0;
  for (const auto& v : st["blocks"]["state"]) {
    EXPECT_TRUE(v == 0 || v == 1) << "a block still in use after the drain";
    cached += v == 1;
  }
  EXPECT_EQ(cached, int(m.at("pagoda_kv_blocks_cached")));
  EXPECT_TRUE(st["requests"].empty());
  EXPECT_EQ(st["finishes"][0]["reason"], "length");
  EXPECT_EQ(st["finishes"][0]["generated_tokens"], 24);
  EXPECT_EQ(st["counters"]["generation_tokens"], 24);
  EXPECT_EQ(st["health"]["status"], "ok");
  EXPECT_EQ(st["block_size"], 16);
  EXPECT_EQ(r.body.find("Once upon"), std::string::npos) << "prompt text leaked into /debug/state";
}

TEST(ServerDashboard, EventsAreTheStateThenChainedDeltas) {
  // Steps of 20 ms, so the request lives across several snapshots.
  ServerProcess s({"--kv-cache-tokens", "2048", "--inject-faults", "slow=1,slow_ms=20"});
  HttpConnection sse(s.port());
  sse.send("GET", "/debug/events");
  const HttpResponse head = sse.read_head();
  ASSERT_EQ(head.status, 200);
  EXPECT_TRUE(head.header("content-type").starts_with("text/event-stream")) << head.header("content-type");
  auto first = sse.read_events(1);
  ASSERT_EQ(first.size(), 1u);
  uint64_t version = json::parse(first[0])["version"];
  EXPECT_EQ(json::parse(first[0])["type"], "state");
  auto done = std::async(std::launch::async, [&] {
    return http_post(s.port(), "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 30}, {"ignore_eos", true}}).status;
  });
  int deltas = 0, with_blocks = 0;
  bool saw_request = false;
  for (int i = 0; i < 40 && !(deltas > 0 && done.wait_for(0s) == std::future_status::ready && saw_request); ++i) {
    const auto ev = sse.read_events(1);
    ASSERT_EQ(ev.size(), 1u);
    const json e = json::parse(ev[0]);
    if (e["type"] == "health") continue;
    ASSERT_EQ(e["type"], "delta");
    EXPECT_EQ(e["from"], version) << "deltas must chain";
    version = e["version"];
    ++deltas;
    with_blocks += !e["blocks"].empty();
    saw_request |= !e["upserted"].empty();
  }
  EXPECT_EQ(done.get(), 200);
  EXPECT_GT(deltas, 0);
  EXPECT_GT(with_blocks, 0);
  EXPECT_TRUE(saw_request);
}

TEST(ServerDashboard, StreamsAreBounded) {
  ServerProcess s;
  std::vector<std::unique_ptr<HttpConnection>> open;
  for (int i = 0; i < 8; ++i) {
    open.push_back(std::make_unique<HttpConnection>(s.port()));
    open.back()->send("GET", "/debug/events");
    ASSERT_EQ(open.back()->read_head().status, 200) << i;
  }
  EXPECT_EQ(http_get(s.port(), "/debug/events").status, 503);
  open.pop_back();  // a client that leaves frees its place
  ASSERT_TRUE(eventually(
      [&] {
        HttpConnection c(s.port());
        c.send("GET", "/debug/events");
        return c.read_head().status == 200;
      },
      3s, 50ms));
  EXPECT_EQ(s.stop(), 0);  // open streams do not hold up shutdown
}

TEST(ServerDashboard, ApiKeyGuardsTheDataNotThePage) {
  ServerProcess s({"--api-key", "sesame"});
  EXPECT_EQ(http_get(s.port(), "/").status, 200);
  EXPECT_EQ(http_get(s.port(), "/debug/state").status, 401);
  EXPECT_EQ(http_get(s.port(), "/debug/events").status, 401);
  EXPECT_EQ(http_get(s.port(), "/debug/state", {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(http_get(s.port(), "/debug/state", {{"Authorization", "Bearer sesame"}}).status, 200);
}

TEST(ServerDashboard, NoDashboardTurnsItAllOff) {
  ServerProcess s({"--no-dashboard"});
  for (const char* path : {"/", "/dashboard", "/dashboard/dashboard.js", "/debug/state", "/debug/events"})
    EXPECT_EQ(http_get(s.port(), path).status, 404) << path;
  EXPECT_EQ(http_post(s.port(), "/v1/completions", kCompletion).status, 200);
}

// The browser test: playwright-core is installed by the test setup
// (npm ci --prefix tests/dashboard) and chromium by scripts/install-deps.sh.
std::filesystem::path browser_check() {
  const auto dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/dashboard";
  EXPECT_TRUE(std::filesystem::exists("/usr/bin/chromium")) << "chromium is not installed (scripts/install-deps.sh)";
  return dir / "check.mjs";
}

std::string screenshot_dir() {
  const auto dir = std::filesystem::path(PAGODA_BINARY).parent_path() / "dashboard_screenshots";
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(ServerDashboardBrowser, LiveUnderLoadThenDrained) {
  PAGODA_REQUIRE_NPM("tests/dashboard", "playwright-core");
  const auto script = browser_check();
  // Steps of 20 ms: slow enough that a page sees the queues, quick enough for a test.
  ServerProcess s({"--kv-cache-tokens", "4096", "--inject-faults", "slow=1,slow_ms=20"});
  const auto p = run_process({"/usr/bin/env", "node", script.string(), "live",
                              "http://127.0.0.1:" + std::to_string(s.port()), PAGODA_BINARY, screenshot_dir()});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("dashboard live checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerDashboardBrowser, WithoutTheKeyOnlyTheLogin) {
  PAGODA_REQUIRE_NPM("tests/dashboard", "playwright-core");
  const auto script = browser_check();
  ServerProcess s({"--api-key", "sesame"});
  const auto p = run_process({"/usr/bin/env", "node", script.string(), "locked",
                              "http://127.0.0.1:" + std::to_string(s.port()), "sesame", screenshot_dir()});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("dashboard locked checks passed"), std::string::npos) << p.out << p.err;
}

}  // namespace
}  // namespace pagoda::testing
