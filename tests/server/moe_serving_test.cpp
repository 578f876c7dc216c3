// A mixture of experts served under pressure: a synthetic qwen3moe in a KV
// pool too small for the crowd (preemption), with failing forward passes
// (bisect-and-retry) and the accounting audited after every step. Routing
// keeps no per-sequence state, so the engine's rules (and its simulation)
// need nothing new: every request ends, no block is left, and /metrics counts
// the experts the passes ran.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <future>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "tools/synthetic.h"

namespace pagoda::testing {
namespace {

namespace fs = std::filesystem;

TEST(ServerMoe, ExpertsServeThroughPreemptionAndFaults) {
  SyntheticModelSpec s;
  s.arch = "qwen3moe";
  s.n_vocab = 400;
  s.n_embd = 64;
  s.n_ff = 96;
  s.n_layer = 2;
  s.head_dim = 32;
  s.n_expert = 8;
  s.n_expert_used = 2;
  s.n_ff_expert = 32;
  s.type = TensorType::Q8_0;
  const fs::path dir = fs::temp_directory_path() / ("pagoda-moe-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model = (dir / "model.gguf").string();
  synthetic_model(s).write(model);

  // 16 blocks of 16 tokens for 12 requests of ~60 tokens each (4 blocks).
  ServerProcess server({"-m", model, "--kv-cache-tokens", "256", "--max-model-len", "128", "--kv-headroom-per-seq", "0",
                        "--inject-faults", "forward=0.05,seed=3", "--audit-every-step"});
  std::vector<std::future<HttpResponse>> replies;
  for (int i = 0; i < 12; ++i)
    replies.push_back(std::async(std::launch::async, [&, i] {
      return http_post(server.port(), "/v1/completions",
                       {{"prompt", "Once upon a time " + std::to_string(i)}, {"max_tokens", 48}, {"ignore_eos", true}});
    }));
  int ok = 0;
  for (auto& f : replies) {
    const HttpResponse r = f.get();
    if (r.status == 200) {
      ++ok;
      EXPECT_EQ(r.json()["usage"]["completion_tokens"], 48) << r.body;
    } else {
      EXPECT_EQ(r.status, 500) << r.body;  // a pass that failed for this request alone, said so
    }
  }
  EXPECT_GE(ok, 10);
  EXPECT_TRUE(eventually([&] { return engine_idle(server.port()); }));
  const PromMetrics m = metrics(server.port());
  EXPECT_GT(m.at("pagoda_num_preemptions_total"), 0);
  EXPECT_GE(m.at("pagoda_moe_last_step_experts"), 2 * 2);  // at least k experts in each of 2 layers
  EXPECT_GE(m.at("pagoda_moe_experts_run_total"), 12 * 48 * 2 * 2 / 12.0);
  EXPECT_EQ(http_get(server.port(), "/health").status, 200);
  EXPECT_EQ(server.stop(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pagoda::testing
