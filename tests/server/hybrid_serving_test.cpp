// A hybrid model (qwen35: Gated DeltaNet layers with a recurrent state per
// sequence, and attention) served under pressure, the state slots audited
// after every step:
//  - greedy completions through a crowd, a KV pool and a slot pool too small
//    for it (queueing and preemption) and failing forward passes
//    (bisect-and-retry) are the same text as each request served alone: a
//    state was never folded twice, skipped, or read from another sequence;
//  - `pagoda loadgen` with clients hanging up while waiting and mid-stream,
//    bad input and faults: every request ends, and no slot or block is left;
//  - prefix caching through state checkpoints: a repeated prompt, and one
//    that shares a prefix with it, start from a checkpoint and give the text
//    a server without checkpoints gives.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <future>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "testing/process.h"
#include "tools/synthetic.h"

namespace pagoda::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

class ServerHybrid : public ::testing::Test {
 protected:
  void SetUp() override {
    SyntheticModelSpec s;
    s.arch = "qwen35";
    s.n_vocab = 400, s.n_embd = 64, s.n_ff = 96, s.n_layer = 4, s.n_head = 4, s.n_head_kv = 2;
    s.head_dim = 32, s.rope_dims = 16, s.ssm_state = 16, s.ssm_k_heads = 2, s.ssm_v_heads = 4;
    s.full_attention_interval = 2;
    s.type = TensorType::Q8_0;
    fs::create_directories(dir_);
    synthetic_model(s).write(model_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  const fs::path dir_ = fs::temp_directory_path() / ("pagoda-hybrid-" + std::to_string(::getpid()));
  const std::string model_ = (dir_ / "model.gguf").string();
};

std::string prompt(int i) { return "Once upon a time there was story number " + std::to_string(i); }

HttpResponse complete(uint16_t port, int i) {
  return http_post(port, "/v1/completions",
                   {{"prompt", prompt(i)}, {"max_tokens", 40}, {"ignore_eos", true}, {"temperature", 0}});
}

TEST_F(ServerHybrid, GreedyTextThroughACrowdAndFaultsIsTheTextServedAlone) {
  const int n = 12;
  std::vector<std::string> alone;
  {
    ServerProcess server({"-m", model_, "--audit-every-step"});
    for (int i = 0; i < n; ++i) {
      const HttpResponse r = complete(server.port(), i);
      ASSERT_EQ(r.status, 200) << r.body;
      alone.push_back(r.json()["choices"][0]["text"]);
    }
    EXPECT_EQ(server.stop(), 0);
  }
  // 16 blocks of 16 tokens for 12 requests of ~55 tokens each (4 blocks);
  // 3 state slots, so at most 3 run at once and the rest queue; prefix
  // caching off (the loadgen test below serves with it).
  ServerProcess server({"-m", model_, "--kv-cache-tokens", "256", "--max-model-len", "128", "--kv-headroom-per-seq",
                        "0", "--state-slots", "3", "--max-num-seqs", "8", "--state-checkpoints", "0", "--inject-faults",
                        "forward=0.05,seed=5", "--audit-every-step"});
  std::vector<std::future<HttpResponse>> replies;
  for (int i = 0; i < n; ++i)
    replies.push_back(std::async(std::launch::async, [&, i] { return complete(server.port(), i); }));
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    const HttpResponse r = replies[size_t(i)].get();
    if (r.status != 200) {
      EXPECT_EQ(r.status, 500) << r.body;  // a pass that failed for this request alone, said so
      continue;
    }
    ++ok;
    EXPECT_EQ(r.json()["choices"][0]["text"], alone[size_t(i)]) << "request " << i;
  }
  EXPECT_GE(ok, n - 2);
  PromMetrics m;
  EXPECT_TRUE(eventually([&] {
    m = metrics(server.port());
    return engine_idle(server.port()) && m.at("pagoda_state_slots_used") == 0;
  }));
  EXPECT_EQ(m.at("pagoda_state_slots_total"), 3);
  EXPECT_EQ(m.at("pagoda_prefix_caching_enabled"), 0);  // no state checkpoints: no prefix caching
  EXPECT_EQ(m.at("pagoda_state_checkpoints_total"), 0);
  EXPECT_GT(m.at("pagoda_num_preemptions_total"), 0);  // the pressure was real
  EXPECT_EQ(http_get(server.port(), "/health").status, 200);
  EXPECT_EQ(server.stop(), 0);
}

TEST_F(ServerHybrid, HangUpsBadInputAndFaultsLeaveNoSlotOrBlock) {
  ServerProcess server({"-m", model_, "--kv-cache-tokens", "1024", "--state-slots", "6", "--max-num-seqs", "6",
                        "--inject-faults", "forward=0.02,poison=0.1,at_step=5,seed=7", "--audit-every-step"});
  const int n = scaled(96, 48);
  const ProcessResult p = run_process({pagoda_binary(), "loadgen", "--port", std::to_string(server.port()), "--json",
                                       "-c", "24", "-n", std::to_string(n), "--max-tokens", "96", "--hangup-fraction",
                                       "0.3", "--bad-fraction", "0.1", "--seed", "9", "--request-timeout", "120"});
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  const json r = json::parse(p.out);
  SCOPED_TRACE(r.dump(1));
  EXPECT_EQ(r["ended"], n);
  EXPECT_EQ(r["transport_errors"], 0);
  EXPECT_EQ(r["client_timeouts"], 0);
  EXPECT_GT(r["ok"].get<int>(), 0);
  EXPECT_GT(r["hung_up_waiting"].get<int>() + r["hung_up_streaming"].get<int>(), 0);
  PromMetrics m;
  EXPECT_TRUE(eventually(
      [&] {
        m = metrics(server.port());
        return engine_idle(server.port()) && m.at("pagoda_state_slots_used") == 0 &&
               m.at("pagoda_requests_received_total") == terminal_total(m);
      },
      10s));
  EXPECT_EQ(m.at("pagoda_kv_blocks_used"), 0);
  EXPECT_EQ(m.at("pagoda_state_slots_used"), 0);
  EXPECT_EQ(m.at("pagoda_prefix_caching_enabled"), 1);  // state checkpoints, one a slot
  EXPECT_EQ(m.at("pagoda_state_checkpoints_total"), 6);
  EXPECT_GT(failures(m, "error"), 0);
  EXPECT_GT(failures(m, "abort"), 0);
  EXPECT_EQ(http_get(server.port(), "/health").status, 200);
  EXPECT_EQ(server.stop(), 0);
}

HttpResponse complete_text(uint16_t port, const std::string& text) {
  return http_post(port, "/v1/completions",
                   {{"prompt", text}, {"max_tokens", 24}, {"ignore_eos", true}, {"temperature", 0}});
}

TEST_F(ServerHybrid, PrefixHitsStartFromStateCheckpointsWithTheSameText) {
  std::string shared;  // ~120 tokens, several checkpoint intervals of 32
  for (int i = 0; i < 12; ++i) shared += "The little fox ran far. ";
  const std::vector<std::string> prompts = {shared + "Then it slept.", shared + "Then it slept.",
                                            shared + "But the moon rose over the hill."};
  std::vector<std::string> want;
  {
    ServerProcess server({"-m", model_, "--state-checkpoints", "0", "--audit-every-step"});
    for (const auto& p : prompts) {
      const HttpResponse r = complete_text(server.port(), p);
      ASSERT_EQ(r.status, 200) << r.body;
      want.push_back(r.json()["choices"][0]["text"]);
    }
    const PromMetrics m = metrics(server.port());
    EXPECT_EQ(m.at("pagoda_prefix_caching_enabled"), 0);
    EXPECT_EQ(server.stop(), 0);
  }
  ServerProcess server({"-m", model_, "--state-checkpoint-interval", "32", "--audit-every-step"});
  for (size_t i = 0; i < prompts.size(); ++i) {
    const HttpResponse r = complete_text(server.port(), prompts[i]);
    ASSERT_EQ(r.status, 200) << r.body;
    const json body = r.json();
    const json& usage = body["usage"];
    const int cached = usage["prompt_tokens_details"]["cached_tokens"];
    EXPECT_EQ(body["choices"][0]["text"], want[i]) << "prompt " << i;
    if (i == 0) {
      EXPECT_EQ(cached, 0);
    } else {
      // The repeat from its last block boundary, the other from the shared checkpoints'.
      EXPECT_GE(cached, 96) << "prompt " << i << ": " << usage.dump();
      EXPECT_LT(cached, usage["prompt_tokens"].get<int>());
    }
  }
  PromMetrics m;
  EXPECT_TRUE(eventually([&] {
    m = metrics(server.port());
    return engine_idle(server.port()) && m.at("pagoda_state_slots_used") == 0;
  }));
  EXPECT_EQ(m.at("pagoda_prefix_caching_enabled"), 1);
  EXPECT_EQ(m.at("pagoda_state_checkpoint_hits_total"), 2);
  EXPECT_GE(m.at("pagoda_state_checkpoint_saves_total"), 4);
  EXPECT_GT(m.at("pagoda_state_checkpoints_used"), 0);
  // The dashboard's counters say the same.
  const HttpResponse dash = http_get(server.port(), "/debug/state");
  ASSERT_EQ(dash.status, 200);
  EXPECT_EQ(dash.json()["counters"]["state_checkpoints"], m.at("pagoda_state_checkpoints_total"));
  EXPECT_GT(dash.json()["counters"]["state_checkpoints_used"].get<int>(), 0);
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
