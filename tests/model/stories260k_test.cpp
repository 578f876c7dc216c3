// The real stories260K model against llama.cpp's greedy reference outputs
// (prompt ids taken from the reference, so this checks the forward pass alone).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "testing/shared_data.h"

namespace pagoda {
namespace {

struct Greedy {
  std::vector<int32_t> ids;
  std::vector<float> first_logits;
};

Greedy greedy(Model& model, const std::vector<int32_t>& prompt, int n, int block_size, KvType kv_type) {
  const int max_len = int(prompt.size()) + n;
  std::vector<int32_t> table;
  for (int b = 0; b * block_size < max_len; ++b) table.push_back(b * 3 % 97);  // scattered ids
  KvStorage kv(model.config(), 97, block_size, kv_type);
  ThreadPool pool(2);
  Greedy g;
  std::vector<float> logits;
  Batch b;
  b.add_sequence(table);
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], 0, int(i), i + 1 == prompt.size());
  int pos = int(prompt.size());
  for (int step = 0; step < n; ++step) {
    model.forward(b, kv, pool, logits);
    if (step == 0) g.first_logits = logits;
    const int32_t next = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (next == 2) break;  // EOS
    g.ids.push_back(next);
    b.tokens.clear();
    b.add(next, 0, pos++, true);
  }
  return g;
}

TEST(Stories260K, GreedyMatchesReference) {
  auto model = Model::load(testing::shared_path("models/stories260K.gguf"));
  EXPECT_EQ(model->config().n_vocab, 512);
  EXPECT_EQ(model->config().n_head_kv, 4);
  const auto ref =
      nlohmann::json::parse(testing::read_file(testing::shared_path("testdata/reference/stories260K_greedy.json")));
  int n = 0;
  for (const auto& r : ref["results"]) {
    const auto prompt = r["prompt_token_ids"].get<std::vector<int32_t>>();
    for (auto [block_size, kv_type] : {std::pair{16, KvType::F32}, {5, KvType::F32}, {16, KvType::F16}}) {
      const Greedy g = greedy(*model, prompt, 64, block_size, kv_type);
      const auto f16 = r["output_token_ids"].get<std::vector<int32_t>>();
      const auto f32 = r["output_token_ids_kv_f32"].get<std::vector<int32_t>>();
      EXPECT_EQ(g.ids, kv_type == KvType::F32 ? f32 : f16);
      EXPECT_TRUE(g.ids == f32 || g.ids == f16) << "prompt: " << r["prompt"] << " got " << nlohmann::json(g.ids).dump()
                                                << " want " << nlohmann::json(f32).dump();
      // The reference's log-probabilities come from its F16-cache run.
      if (r.contains("first_position_top10") && kv_type == KvType::F16) {
        double max = -1e30, sum = 0;
        for (float v : g.first_logits) max = std::max(max, double(v));
        for (float v : g.first_logits) sum += std::exp(v - max);
        for (const auto& e : r["first_position_top10"]) {
          const double lp = g.first_logits[e["id"].get<size_t>()] - max - std::log(sum);
          EXPECT_NEAR(lp, e["logprob"].get<double>(), 1e-3) << "token " << e["id"];
        }
      }
    }
    ++n;
  }
  EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace pagoda
