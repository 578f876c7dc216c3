// KV events (--kv-events-config): a subscriber of our own (kv_event_mirror.h)
// replays the stream into a set of hashes. After a random workload with
// evictions, preemptions, injected faults, clients hanging up and a
// prefix-cache reset, that set equals the block manager's cached hashes
// (GET /debug/kv_cache_blocks), and the blocks of known prompts carry their
// token ids. A subscriber that stops reading does not stop the engine, and
// catches up through the replay socket. Bad configs fail the start.
#include <gtest/gtest.h>

#include <algorithm>
#include <zmq.hpp>

#include "server/http_client.h"
#include "server/kv_event_mirror.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "testing/process.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;

// A free loopback port, from the kernel (closed again before use).
std::string free_endpoint() {
  zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::router);
  s.set(zmq::sockopt::linger, 0);
  s.bind("tcp://127.0.0.1:*");
  return s.get(zmq::sockopt::last_endpoint);
}

std::set<uint64_t> server_hashes(uint16_t port) {
  const json j = http_get(port, "/debug/kv_cache_blocks").json();
  std::set<uint64_t> out;
  for (const auto& h : j["hashes"]) out.insert(h.get<uint64_t>());
  return out;
}

json loadgen(uint16_t port, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {pagoda_binary(), "loadgen", "--port", std::to_string(port), "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult p = run_process(argv);
  if (p.exit_code != 0) throw std::runtime_error("loadgen failed: " + p.out + p.err);
  return json::parse(p.out);
}

// Waits for the engine to drain, then lets the mirror take every batch: what
// arrives, then (a subscriber reconciling) whatever the replay buffer holds
// past the last batch it saw, which covers batches published before its
// subscription reached the publisher.
void settle(uint16_t port, KvEventMirror& mirror) {
  ASSERT_TRUE(eventually([&] { return engine_idle(port); }));
  mirror.drain();
  mirror.replay_from(uint64_t(mirror.last_seq + 1));
}

TEST(KvEvents, MirrorEqualsTheCacheThroughFaultsAbortsAndReset) {
  const std::string topic = "kv@pod-a@stories260K";
  KvEventMirror mirror(topic);
  const std::string replay = free_endpoint();
  mirror.set_replay_endpoint(replay);
  const json config = {{"enable_kv_cache_events", true}, {"publisher", "zmq"},
                       {"endpoint", mirror.endpoint()},  {"topic", topic},
                       {"replay_endpoint", replay},      {"buffer_steps", 100000}};
  ServerProcess s({"--kv-cache-tokens", "256", "--max-num-seqs", "8", "--kv-headroom-per-seq", "0", "--inject-faults",
                   "forward=0.03,poison=0.05,seed=5", "--audit-every-step", "--kv-events-config", config.dump()});

  // Known prompts: 40 token ids, so two full blocks each.
  std::vector<std::vector<int>> prompts;
  for (int p = 0; p < 3; ++p) {
    std::vector<int> ids = {1};
    for (int k = 1; k < 40; ++k) ids.push_back(100 + (p * 37 + k * 11) % 400);
    prompts.push_back(ids);
    const HttpResponse r = http_post(s.port(), "/v1/completions", {{"prompt", ids}, {"max_tokens", 2}});
    ASSERT_TRUE(r.status == 200 || r.status == 500) << r.body;  // a poisoned request fails cleanly
  }
  settle(s.port(), mirror);
  // The first batches went out before the subscription reached the publisher: replayed.
  EXPECT_EQ(mirror.hashes, server_hashes(s.port()));
  // Each known prompt's blocks, found by their tokens, chain parent to child.
  for (const auto& ids : prompts) {
    std::vector<uint32_t> b0(ids.begin(), ids.begin() + 16), b1(ids.begin() + 16, ids.begin() + 32);
    std::optional<uint64_t> h0, h1;
    for (const auto& [h, t] : mirror.tokens) {
      if (t == b0 && !mirror.parent[h]) h0 = h;
      if (t == b1) h1 = h;
    }
    if (!h0) continue;  // a poisoned request never committed its blocks
    ASSERT_TRUE(h1.has_value());
    EXPECT_EQ(mirror.parent[*h1], h0);
  }

  // A random workload on 16 blocks: evictions, preemptions, faults, hang-ups.
  const json r1 = loadgen(s.port(), {"-c", "8", "-n", "40", "--max-tokens", "40", "--ignore-eos", "--hangup-fraction",
                                     "0.2", "--seed", "9", "--request-timeout", "60"});
  EXPECT_EQ(r1["ended"], 40) << r1.dump();
  settle(s.port(), mirror);
  const PromMetrics m = metrics(s.port());
  EXPECT_GT(m.at("pagoda_num_preemptions_total"), 0);
  EXPECT_GT(m.at("pagoda_kv_events_batches_published_total"), 0);
  EXPECT_FALSE(mirror.hashes.empty());
  EXPECT_GT(mirror.removed, 0);         // evictions
  EXPECT_EQ(mirror.topic_seen, topic);  // live messages arrived too, not only replays
  EXPECT_EQ(mirror.hashes, server_hashes(s.port()));

  // Reset: AllBlocksCleared, and the mirror empties with the cache.
  const int64_t cleared = mirror.cleared;
  ASSERT_EQ(http_post(s.port(), "/reset_prefix_cache", json::object()).status, 200);
  mirror.drain();
  EXPECT_EQ(mirror.cleared, cleared + 1);
  EXPECT_TRUE(mirror.hashes.empty());
  EXPECT_TRUE(server_hashes(s.port()).empty());

  // The mirror stops reading while a load runs: the engine goes on; then it catches up.
  const json r2 =
      loadgen(s.port(), {"-c", "8", "-n", "40", "--max-tokens", "40", "--seed", "10", "--request-timeout", "60"});
  EXPECT_EQ(r2["ended"], 40) << r2.dump();
  settle(s.port(), mirror);
  EXPECT_EQ(mirror.hashes, server_hashes(s.port()));
  EXPECT_GE(mirror.replays, 1);
  // A subscriber that joins now rebuilds the same set from the replay buffer alone.
  KvEventMirror late("unused");
  late.set_replay_endpoint(replay);
  late.replay_from(0);
  EXPECT_EQ(late.last_seq, mirror.last_seq);
  EXPECT_EQ(late.hashes, mirror.hashes);
  EXPECT_EQ(s.stop(), 0);
}

TEST(KvEvents, BadConfigFailsTheStartInOneLine) {
  struct Case {
    std::string config, message;
  };
  zmq::context_t ctx;
  zmq::socket_t taken(ctx, zmq::socket_type::pub);
  taken.set(zmq::sockopt::linger, 0);
  taken.bind("tcp://127.0.0.1:*");
  const std::string busy = taken.get(zmq::sockopt::last_endpoint);
  const std::vector<Case> cases = {
      {"{", "--kv-events-config: not valid JSON"},
      {R"({"enable_kv_cache_events": "yes"})", "'enable_kv_cache_events' must be true or false"},
      {R"({"enable_kv_cache_events": true, "publisher": "kafka"})", "publisher must be"},
      {R"({"enable_kv_cache_events": true, "endpoint": "http://x"})", "is not tcp://"},
      {R"({"enable_kv_cache_events": true, "bogus": 1})", "unknown field 'bogus'"},
      {R"({"enable_kv_cache_events": true, "hwm": -1})", "hwm must be"},
      {R"({"enable_kv_cache_events": true, "endpoint": "tcp://127.0.0.1:9", "replay_endpoint": ")" + busy + "\"}",
       "cannot bind replay_endpoint " + busy},
      {R"({"enable_kv_cache_events": true, "endpoint": "ipc:///no/such/dir/kv.sock"})",
       "cannot bind endpoint ipc:///no/such/dir/kv.sock"},
  };
  for (const auto& c : cases) {
    const ProcessResult p =
        run_process({pagoda_binary(), "serve", "-m", stories_model(), "--port", "0", "--kv-events-config", c.config});
    EXPECT_NE(p.exit_code, 0) << c.config;
    EXPECT_LT(p.exit_code, 128) << "crashed: " << p.err;
    const size_t at = p.err.find(c.message);
    ASSERT_NE(at, std::string::npos) << c.config << ": " << p.err;
  }
}

}  // namespace
}  // namespace pagoda::testing
