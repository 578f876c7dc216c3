// Embedding models against llama.cpp v0.5.0 (libllama's embeddings API,
// testing/llama_oracle.h): synthetic decoders that declare a pooling_type
// load in both, and the engine's pooled vector of each prompt (a reranker's:
// its classification head's scores) matches llama_get_embeddings_seq's, with the prompts batched together and
// prefilled in chunks of 16 tokens (the pooling spans passes).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "engine/engine.h"
#include "testing/llama_cpp_libs.h"
#include "testing/llama_oracle.h"
#include "testing/npm_oracle.h"
#include "tools/synthetic.h"
#include "util/error.h"

namespace pagoda {
namespace {

struct TempFile {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("pagoda-embed-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".gguf"))
                         .string();
  ~TempFile() { std::filesystem::remove(path); }
  static inline int counter = 0;
};

// The cosine and the largest difference relative to the vector's largest entry.
std::pair<double, double> compare(const std::vector<float>& got, const std::vector<float>& want) {
  double dot = 0, ng = 0, nw = 0, diff = 0, top = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    dot += double(got[i]) * want[i];
    ng += double(got[i]) * got[i];
    nw += double(want[i]) * want[i];
    diff = std::max(diff, std::abs(double(got[i]) - want[i]));
    top = std::max(top, std::abs(double(want[i])));
  }
  return {dot / std::sqrt(ng * nw), diff / top};
}

class EmbeddingOracle : public ::testing::TestWithParam<std::tuple<const char*, Pooling>> {};

TEST_P(EmbeddingOracle, PooledVectorsMatchLlamaCpp) {
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const auto [arch, pooling] = GetParam();
  SyntheticModelSpec s;
  s.arch = arch;
  s.n_embd = 128;
  s.n_ff = 256;
  s.pooling_type = int(pooling);
  if (pooling == Pooling::rank) s.n_cls_out = 2;  // a reranker's head: qwen3's reads the last position and softmaxes
  if (std::string(arch) == "qwen3") s.head_dim = 64, s.tokenizer = "gpt2";
  TempFile file;
  synthetic_model(s).write(file.path);

  EngineConfig cfg;
  cfg.threads = 1;
  cfg.log_interval_s = 0;
  cfg.audit_every_step = true;
  cfg.kv_cache_tokens = 512;
  cfg.sched.max_batched_tokens = 16;  // every prompt over 16 tokens is pooled over several passes
  auto engine = Engine::load(file.path, cfg);
  ASSERT_EQ(engine->pooling(), pooling);
  ASSERT_EQ(engine->output_width(), s.n_embd);  // the hidden rows; a reranker's head then scores them

  std::mt19937 rng(7);
  std::vector<Request> requests;
  for (size_t n : {40u, 17u, 5u, 1u}) {
    Request r;
    for (size_t i = 0; i < n; ++i) r.prompt.push_back(TokenId(3 + rng() % uint32_t(s.n_vocab - 3)));
    requests.push_back(std::move(r));
  }
  const auto prompts = requests;
  const auto done = engine->generate(std::move(requests));
  auto& oracle = testing::LlamaOracle::get();
  for (size_t i = 0; i < done.size(); ++i) {
    const auto& c = done[i].choices.at(0);
    ASSERT_EQ(c.finish, FinishReason::stop) << c.error;
    EXPECT_TRUE(c.tokens.empty());
    const std::vector<float> want = oracle.embed(file.path, prompts[i].prompt);
    ASSERT_EQ(c.embedding.size(), want.size());
    const auto [cosine, rel] = compare(c.embedding, want);
    EXPECT_GT(cosine, 0.99999) << "prompt " << i << " of " << prompts[i].prompt.size() << " tokens";
    EXPECT_LT(rel, 1e-3) << "prompt " << i << " of " << prompts[i].prompt.size() << " tokens";
    EXPECT_EQ(done[i].num_prompt_tokens, int32_t(prompts[i].prompt.size()));
  }
}

std::string oracle_name(const ::testing::TestParamInfo<EmbeddingOracle::ParamType>& info) {
  return std::string(std::get<0>(info.param)) + "_" + pooling_name(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(Archs, EmbeddingOracle,
                         ::testing::Combine(::testing::Values("llama", "qwen3"),
                                            ::testing::Values(Pooling::mean, Pooling::cls, Pooling::last)),
                         oracle_name);
// Rerankers: llama.cpp gives qwen3 (not llama) a classification head.
INSTANTIATE_TEST_SUITE_P(Rerankers, EmbeddingOracle,
                         ::testing::Combine(::testing::Values("qwen3"), ::testing::Values(Pooling::rank)), oracle_name);

// A negative control: a different pooling of the same file is far from llama.cpp's.
TEST(EmbeddingOracleNegative, AnotherPoolingDoesNotMatch) {
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  SyntheticModelSpec s;
  s.n_embd = 128;
  s.n_ff = 256;
  s.pooling_type = int(Pooling::mean);
  TempFile file;
  synthetic_model(s).write(file.path);
  EngineConfig cfg;
  cfg.threads = 1;
  cfg.log_interval_s = 0;
  cfg.kv_cache_tokens = 512;
  cfg.pooling = Pooling::last;
  auto engine = Engine::load(file.path, cfg);
  Request r;
  for (int i = 0; i < 24; ++i) r.prompt.push_back(TokenId(3 + i * 7));
  const auto prompt = r.prompt;
  const auto done = engine->generate({std::move(r)});
  const auto [cosine, rel] =
      compare(done[0].choices[0].embedding, testing::LlamaOracle::get().embed(file.path, prompt));
  EXPECT_LT(cosine, 0.99);
}

// BERT encoders: synthetic `bert` files (positions, token types, post
// LayerNorms, GELU, non-causal attention) and `nomic-bert` ones (RoPE, a
// fused QKV, SwiGLU) against llama.cpp, F32 and Q8_0, cls and mean pooling.
// Each input is computed in one pass (max_batched_tokens 64 holds the
// longest); several prompts share a pass.
class BertOracle : public ::testing::TestWithParam<std::tuple<const char*, TensorType, Pooling>> {};

SyntheticModelSpec bert_spec(TensorType type, Pooling pooling, const std::string& arch = "bert") {
  SyntheticModelSpec s;
  s.arch = arch;
  if (arch == "nomic-bert") s.fused_qkv = true, s.rope_freq_base = 1000.0f;  // nomic-embed-text's
  s.n_embd = 128;
  s.n_ff = 256;
  s.n_head = s.n_head_kv = 4;
  s.type = type;
  s.pooling_type = int(pooling);
  if (pooling == Pooling::rank) s.n_cls_out = 1;  // bge-reranker's head: one score from the first position
  return s;
}

EngineConfig bert_engine_config() {
  EngineConfig cfg;
  cfg.threads = 1;
  cfg.log_interval_s = 0;
  cfg.audit_every_step = true;
  cfg.kv_cache_tokens = 512;
  cfg.sched.max_batched_tokens = 64;
  return cfg;
}

std::vector<Request> bert_requests(int n_vocab) {
  std::mt19937 rng(11);
  std::vector<Request> requests;
  for (size_t n : {40u, 17u, 5u, 1u, 64u}) {
    Request r;
    for (size_t i = 0; i < n; ++i) r.prompt.push_back(TokenId(3 + rng() % uint32_t(n_vocab - 3)));
    requests.push_back(std::move(r));
  }
  return requests;
}

TEST_P(BertOracle, PooledVectorsMatchLlamaCpp) {
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  const auto [arch, type, pooling] = GetParam();
  const SyntheticModelSpec s = bert_spec(type, pooling, arch);
  TempFile file;
  synthetic_model(s).write(file.path);
  auto engine = Engine::load(file.path, bert_engine_config());
  ASSERT_EQ(engine->pooling(), pooling);
  ASSERT_EQ(engine->output_width(), s.n_embd);
  auto requests = bert_requests(s.n_vocab);
  const auto prompts = requests;
  const auto done = engine->generate(std::move(requests));
  // Q8_0 (both quantize the activations to Q8_0 for its dot products) measured cosines of 0.99996 and up.
  const double min_cosine = type == TensorType::F32 ? 0.99999 : 0.9999, max_rel = type == TensorType::F32 ? 1e-3 : 3e-2;
  for (size_t i = 0; i < done.size(); ++i) {
    const auto& c = done[i].choices.at(0);
    ASSERT_EQ(c.finish, FinishReason::stop) << c.error;
    const std::vector<float> want = testing::LlamaOracle::get().embed(file.path, prompts[i].prompt);
    ASSERT_EQ(c.embedding.size(), want.size());
    const auto [cosine, rel] = compare(c.embedding, want);
    EXPECT_GT(cosine, min_cosine) << "prompt " << i << " of " << prompts[i].prompt.size() << " tokens";
    EXPECT_LT(rel, max_rel) << "prompt " << i << " of " << prompts[i].prompt.size() << " tokens";
  }
}

std::string bert_name(const ::testing::TestParamInfo<BertOracle::ParamType>& info) {
  std::string arch = std::get<0>(info.param);
  std::replace(arch.begin(), arch.end(), '-', '_');
  return arch + "_" + std::string(tensor_type_name(std::get<1>(info.param))) + "_" +
         pooling_name(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Types, BertOracle,
                         ::testing::Combine(::testing::Values("bert", "nomic-bert"),
                                            ::testing::Values(TensorType::F32, TensorType::Q8_0),
                                            ::testing::Values(Pooling::cls, Pooling::mean)),
                         bert_name);
// A BERT reranker (bge-reranker's head: cls, tanh, cls.output, biases).
INSTANTIATE_TEST_SUITE_P(Rerankers, BertOracle,
                         ::testing::Combine(::testing::Values("bert"), ::testing::Values(TensorType::F32),
                                            ::testing::Values(Pooling::rank)),
                         bert_name);

// A negative control: the same weights read with causal attention are far from llama.cpp's encoder.
TEST(BertOracleNegative, CausalAttentionDoesNotMatch) {
  PAGODA_REQUIRE_NPM(testing::kLlamaCppPrefix, testing::kLlamaCppPackage);
  for (const char* arch : {"bert", "nomic-bert"}) {
    SyntheticModelSpec s = bert_spec(TensorType::F32, Pooling::cls, arch);
    TempFile encoder, causal;
    synthetic_model(s).write(encoder.path);
    s.causal = true;
    synthetic_model(s).write(causal.path);
    auto engine = Engine::load(causal.path, bert_engine_config());
    auto requests = bert_requests(s.n_vocab);
    const auto prompt = requests[0].prompt;
    const auto done = engine->generate({std::move(requests[0])});
    ASSERT_EQ(done[0].choices[0].finish, FinishReason::stop) << done[0].choices[0].error;
    const auto [cosine, rel] =
        compare(done[0].choices[0].embedding, testing::LlamaOracle::get().embed(encoder.path, prompt));
    EXPECT_LT(cosine, 0.99) << arch;
  }
}

// An encoder's input must fit one pass: a longer one is refused up front, naming both numbers.
TEST(BertEngine, InputLongerThanOnePassIsRefused) {
  TempFile file;
  synthetic_model(bert_spec(TensorType::F32, Pooling::cls)).write(file.path);
  auto engine = Engine::load(file.path, bert_engine_config());
  Request r;
  r.prompt.assign(65, TokenId(5));
  try {
    engine->submit(std::move(r), [](RequestOutput&&) { return true; });
    FAIL() << "a 65-token input was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("65"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace pagoda
