// The engine on a real sliding-window model (a synthetic Gemma 3: 6 layers,
// 2 global, window 16) over KV groups: batching, chunked prefill,
// preemption, prefix hits and blocks given back behind the windows change no
// greedy token against one request at a time with every block kept
// (--disable-hybrid-kv-cache-manager).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "engine/engine.h"
#include "tools/synthetic.h"

namespace pagoda {
namespace {

std::string write_gemma3(const std::string& name) {
  SyntheticModelSpec spec;
  spec.arch = "gemma3";
  spec.n_layer = 6;
  spec.sliding_window = 16;
  spec.sliding_pattern = 3;
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  synthetic_model(spec).write(path);
  return path;
}

Request greedy_request(std::vector<TokenId> prompt, int32_t max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

TEST(SlidingWindowEngine, KvGroupsChangeNoToken) {
  spdlog::set_level(spdlog::level::err);
  const std::string path = write_gemma3("pagoda_swa_engine_test_" + std::to_string(getpid()) + ".gguf");
  std::mt19937 rng(5);
  std::vector<TokenId> shared;
  for (int i = 0; i < 40; ++i) shared.push_back(TokenId(3 + rng() % 300));
  std::vector<Request> requests;
  for (int i = 0; i < 10; ++i) {
    std::vector<TokenId> p = i % 2 ? shared : std::vector<TokenId>{};
    for (int j = 0; j < 10 + 5 * i; ++j) p.push_back(TokenId(3 + rng() % 300));
    requests.push_back(greedy_request(p, 40 + 4 * i));
  }
  std::vector<std::vector<TokenId>> expected;
  {
    EngineConfig cfg;
    cfg.hybrid_kv_cache = false;
    cfg.prefix_caching = false;
    cfg.sched.max_num_seqs = 1;
    cfg.audit_every_step = true;
    cfg.log_interval_s = 0;
    auto e = Engine::load(path, cfg);
    for (const auto& r : requests) expected.push_back(e->generate({r})[0].choices[0].tokens);
  }
  EngineConfig cfg;
  cfg.kv_cache_tokens = 320;  // the memory of 320 tokens of every layer, 3 groups' pages
  cfg.block_size = 4;
  cfg.sched.max_batched_tokens = 23;
  cfg.sched.max_num_seqs = 10;
  cfg.sched.kv_headroom_per_seq = 0;  // admit greedily, so the pool fills and preempts
  cfg.audit_every_step = true;
  cfg.log_interval_s = 0;
  auto e = Engine::load(path, cfg);
  const auto got = e->generate(requests);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(got[i].choices[0].tokens, expected[i]) << "request " << i;
  const auto s = e->snapshot();
  EXPECT_EQ(s.kv_blocks_total, 320 / 4 * 3);  // 1 full and 2 sliding groups of 2 layers
  EXPECT_GT(s.preemptions, 0);
  EXPECT_GT(s.prefix_hits, 0);
  e.reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagoda
