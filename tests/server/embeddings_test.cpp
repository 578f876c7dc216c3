// /v1/embeddings on a real server with a synthetic embedding model (a llama
// decoder declaring mean pooling), audited after every step: OpenAI's
// shapes (one input, lists, token ids, base64), a list longer than what one
// exchange keeps in flight, the refusals, the official SDK, and a
// generating model that refuses it, an encoder (bert) whose inputs must fit
// one pass; no request leaves a block behind. And /v1/rerank on a synthetic
// qwen3 reranker (rank pooling, a yes/no head).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "gguf/file.h"
#include "server/embeddings.h"
#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "testing/build_paths.h"
#include "testing/llama_cpp_libs.h"
#include "testing/llama_oracle.h"
#include "testing/npm_oracle.h"
#include "testing/process.h"
#include "tokenizer/tokenizer.h"
#include "tools/synthetic.h"

namespace pagoda::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kWidth = 64;

class ServerEmbeddings : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SyntheticModelSpec s;
    s.n_vocab = 400, s.n_embd = kWidth, s.pooling_type = 1;  // mean
    fs::create_directories(dir());
    synthetic_model(s).write(model());
  }
  static void TearDownTestSuite() { fs::remove_all(dir()); }
  static fs::path dir() { return fs::temp_directory_path() / ("pagoda-embeddings-" + std::to_string(::getpid())); }
  static std::string model() { return (dir() / "embed.gguf").string(); }
};

double norm(const json& v) {
  double s = 0;
  for (const auto& x : v) s += x.get<double>() * x.get<double>();
  return std::sqrt(s);
}

std::string param_of(const HttpResponse& r) {
  const json e = json::parse(r.body).value("error", json::object());
  return r.status == 400 && e.contains("param") && e["param"].is_string() ? e["param"].get<std::string>() : r.body;
}

TEST_F(ServerEmbeddings, OpenAiShapesInInputOrder) {
  ServerProcess server({"-m", model(), "--audit-every-step", "--max-batched-tokens", "16"});
  const uint16_t port = server.port();
  auto r = http_post(port, "/v1/embeddings", {{"input", "Once upon a time there was a fox"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json one = json::parse(r.body);
  EXPECT_EQ(one["object"], "list");
  EXPECT_EQ(one["model"], "embed");
  ASSERT_EQ(one["data"].size(), 1u);
  const json& v = one["data"][0]["embedding"];
  ASSERT_EQ(v.size(), size_t(kWidth));
  EXPECT_NEAR(norm(v), 1.0, 1e-5);
  EXPECT_GT(one["usage"]["prompt_tokens"].get<int>(), 5);

  // A list: in input order, each the vector it is alone (to rounding: batches differ).
  r = http_post(port, "/v1/embeddings", {{"input", {"a cat", "Once upon a time there was a fox", "a dog"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json list = json::parse(r.body);
  ASSERT_EQ(list["data"].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(list["data"][i]["index"], i);
  for (int k = 0; k < kWidth; ++k) EXPECT_NEAR(list["data"][1]["embedding"][k], v[k], 1e-5);
  EXPECT_EQ(list["usage"]["prompt_tokens"].get<int>() > one["usage"]["prompt_tokens"].get<int>(), true);

  // Token ids, unnormalised vectors, base64 floats.
  r = http_post(port, "/v1/embeddings", {{"input", {{1, 20, 30}, {1, 40}}}, {"normalize", false}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GT(std::abs(norm(json::parse(r.body)["data"][0]["embedding"]) - 1.0), 1e-3);
  r = http_post(port, "/v1/embeddings", {{"input", "Once upon a time there was a fox"}, {"encoding_format", "base64"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(json::parse(r.body)["data"][0]["embedding"].is_string());

  // 300 inputs: more than an exchange keeps in the engine at once (64).
  json inputs = json::array();
  for (int i = 0; i < 300; ++i) inputs.push_back("input number " + std::to_string(i));
  r = http_post(port, "/v1/embeddings", {{"input", inputs}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json big = json::parse(r.body);
  ASSERT_EQ(big["data"].size(), 300u);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(big["data"][i]["index"], i);
  EXPECT_NE(big["data"][0]["embedding"], big["data"][299]["embedding"]);
  EXPECT_TRUE(eventually([&] { return engine_idle(port); }));
  EXPECT_EQ(server.stop(), 0);
}

TEST_F(ServerEmbeddings, RefusalsNameTheField) {
  ServerProcess server({"-m", model()});
  const uint16_t port = server.port();
  const auto post = [&](const json& body) { return http_post(port, "/v1/embeddings", body); };
  EXPECT_EQ(param_of(post(json::object())), "input");
  EXPECT_EQ(param_of(post({{"input", ""}})), "input");
  EXPECT_EQ(param_of(post({{"input", json::array()}})), "input");
  EXPECT_EQ(param_of(post({{"input", {1, "x"}}})), "input");
  EXPECT_EQ(param_of(post({{"input", {{1, 99999}}}})), "input");
  EXPECT_EQ(param_of(post({{"input", 3}})), "input");
  EXPECT_EQ(param_of(post({{"input", "x"}, {"encoding_format", "int8"}})), "encoding_format");
  EXPECT_EQ(param_of(post({{"input", "x"}, {"dimensions", 32}})), "dimensions");
  EXPECT_EQ(post({{"input", "x"}, {"dimensions", kWidth}}).status, 200);
  json many = json::array();
  for (int i = 0; i < 2049; ++i) many.push_back("x");
  EXPECT_EQ(param_of(post({{"input", many}})), "input");
  std::string huge(40000, 'a');  // past the 512-token context in any tokenization
  const auto r = post({{"input", huge}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("context_length_exceeded"), std::string::npos) << r.body;
  // An embedding model generates nothing.
  EXPECT_EQ(http_post(port, "/v1/completions", {{"prompt", "x"}}).status, 400);
  EXPECT_EQ(http_post(port, "/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}}).status,
            400);
  EXPECT_TRUE(eventually([&] { return engine_idle(port); }));
  EXPECT_EQ(server.stop(), 0);
}

TEST_F(ServerEmbeddings, OfficialSdk) {
  const fs::path dir = fs::path(PAGODA_SOURCE_DIR) / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(dir.string(), "openai");
  ServerProcess server({"-m", model()});
  const auto p =
      run_process({"/usr/bin/env", "node", (dir / "embeddings.mjs").string(),
                   "http://127.0.0.1:" + std::to_string(server.port()) + "/v1", "embed", std::to_string(kWidth)});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("embeddings checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(server.stop(), 0);
}

// An input's tokens are llama.cpp's with add_special: BOS where the file
// says (llama), EOS where it says (a Qwen3-Embedding-like file: add_eos_token).
TEST_F(ServerEmbeddings, InputsTokenizeAsLlamaCppsAddSpecial) {
  PAGODA_REQUIRE_NPM(kLlamaCppPrefix, kLlamaCppPackage);
  for (const bool qwen : {false, true}) {
    SyntheticModelSpec s;
    s.n_vocab = 400, s.n_embd = kWidth, s.pooling_type = 3;
    if (qwen) s.arch = "qwen3", s.tokenizer = "gpt2", s.head_dim = 16;
    GgufWriter w = synthetic_model(s);
    if (qwen) w.set("tokenizer.ggml.add_eos_token", Value::boolean(true));
    const std::string path = (dir() / "tokens.gguf").string();
    w.write(path);
    const Tokenizer tok = Tokenizer::from_gguf(GgufFile::open(path));
    server::ModelLimits limits{&tok, 512, 1, {}, std::nullopt};
    limits.pooling = Pooling::last;
    limits.output_width = kWidth;
    for (const char* text : {"Once upon a time", "a b  c\n", "x"}) {
      const auto g = server::parse_embedding_request({{"input", text}}, limits);
      EXPECT_EQ(g.prompts[0].ids, LlamaOracle::get().tokenize(path, text, true, true))
          << (qwen ? "qwen3 " : "llama ") << text;
      if (qwen) EXPECT_EQ(g.prompts[0].ids.back(), tok.eos_id());
    }
  }
}

TEST(ServerRerank, ScoresSortedTopNAndRefusals) {
  const fs::path dir = fs::temp_directory_path() / ("pagoda-rerank-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SyntheticModelSpec s;
  s.arch = "qwen3", s.tokenizer = "gpt2", s.head_dim = 16, s.n_vocab = 400, s.n_embd = kWidth;
  s.pooling_type = 4, s.n_cls_out = 2;
  GgufWriter w = synthetic_model(s);
  w.set("tokenizer.chat_template.rerank", Value::string("Query: {query}\nDocument: {document}\nRelevant:"));
  const std::string model = (dir / "rerank.gguf").string();
  w.write(model);
  ServerProcess server({"-m", model, "--audit-every-step"});
  const uint16_t port = server.port();
  const json docs = {"a cat sat", "the fox ran far away", "x", "a dog"};
  auto r = http_post(port, "/v1/rerank", {{"query", "where did the fox go"}, {"documents", docs}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json all = json::parse(r.body);
  ASSERT_EQ(all["results"].size(), 4u);
  EXPECT_GT(all["usage"]["total_tokens"].get<int>(), 20);
  std::set<int> seen;
  for (size_t i = 0; i < 4; ++i) {
    const json& e = all["results"][i];
    const double score = e["relevance_score"].get<double>();
    EXPECT_GT(score, 0.0);  // qwen3's head: P(yes)
    EXPECT_LT(score, 1.0);
    if (i > 0) EXPECT_GE(all["results"][i - 1]["relevance_score"].get<double>(), score);
    EXPECT_EQ(e["document"]["text"], docs[e["index"].get<size_t>()]);
    seen.insert(e["index"].get<int>());
    // Each document alone scores the same (to rounding: the batch differs).
    const auto one = http_post(port, "/rerank",
                               {{"query", "where did the fox go"}, {"documents", {docs[e["index"].get<size_t>()]}}});
    ASSERT_EQ(one.status, 200) << one.body;
    EXPECT_NEAR(json::parse(one.body)["results"][0]["relevance_score"].get<double>(), score, 1e-5);
  }
  EXPECT_EQ(seen.size(), 4u);
  r = http_post(port, "/v2/rerank",
                {{"query", "q"},
                 {"documents", {{{"text", "one"}}, {{"text", "two"}}}},
                 {"top_n", 1},
                 {"return_documents", false}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["results"].size(), 1u);
  EXPECT_FALSE(json::parse(r.body)["results"][0].contains("document"));
  EXPECT_EQ(param_of(http_post(port, "/v1/rerank", {{"documents", docs}})), "query");
  EXPECT_EQ(param_of(http_post(port, "/v1/rerank", {{"query", "q"}, {"documents", json::array()}})), "documents");
  EXPECT_EQ(param_of(http_post(port, "/v1/rerank", {{"query", "q"}, {"documents", {1}}})), "documents");
  EXPECT_EQ(param_of(http_post(port, "/v1/rerank", {{"query", "q"}, {"documents", docs}, {"top_n", 0}})), "top_n");
  EXPECT_EQ(http_post(port, "/v1/embeddings", {{"input", "x"}}).status, 400);  // a reranker only reranks
  EXPECT_TRUE(eventually([&] { return engine_idle(port); }));
  EXPECT_EQ(server.stop(), 0);
  fs::remove_all(dir);
}

// A generating model has no embeddings; --pooling makes it an embedding model.
TEST_F(ServerEmbeddings, GeneratingModelRefusesUnlessPooled) {
  {
    ServerProcess server;  // stories260K
    const auto r = http_post(server.port(), "/v1/embeddings", {{"input", "x"}});
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("--pooling"), std::string::npos) << r.body;
    EXPECT_EQ(server.stop(), 0);
  }
  ServerProcess server({"--pooling", "last"});
  const auto r = http_post(server.port(), "/v1/embeddings", {{"input", "Once upon a time"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(http_post(server.port(), "/v1/rerank", {{"query", "q"}, {"documents", {"d"}}}).status, 400);
  EXPECT_EQ(json::parse(r.body)["data"][0]["embedding"].size(), 64u);  // stories260K's width
  EXPECT_EQ(server.stop(), 0);
}

// An encoder (bert: non-causal attention) serves embeddings; an input that
// would not fit one pass is refused with both numbers, and the server lives on.
TEST_F(ServerEmbeddings, EncoderRefusesAnInputLongerThanOnePass) {
  SyntheticModelSpec s;
  s.arch = "bert";
  s.n_vocab = 400, s.n_embd = kWidth, s.n_head_kv = s.n_head, s.pooling_type = 2;  // cls
  const std::string path = (dir() / "bert.gguf").string();
  synthetic_model(s).write(path);
  ServerProcess server({"-m", path, "--audit-every-step", "--max-batched-tokens", "16"});
  auto r = http_post(server.port(), "/v1/embeddings", {{"input", json::array({5, 6, 7, 8})}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NEAR(norm(json::parse(r.body)["data"][0]["embedding"]), 1.0, 1e-5);
  r = http_post(server.port(), "/v1/embeddings", {{"input", json(std::vector<int>(17, 5))}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("17 tokens"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("16"), std::string::npos) << r.body;
  r = http_post(server.port(), "/v1/embeddings", {{"input", json(std::vector<int>(16, 5))}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
