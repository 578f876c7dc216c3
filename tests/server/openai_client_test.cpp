// The official `openai` npm client against the real server: a completion, a
// chat completion and a streamed chat completion, checked by
// openai_client/check.mjs; structured outputs (every spelling, validated by
// ajv and reference parsers), checked by openai_client/structured.mjs; a
// schema corpus, by openai_client/corpus.mjs; tool calls, by
// openai_client/tools.mjs. The packages are installed by the test setup:
//   npm ci --prefix tests/server/openai_client
#include <gtest/gtest.h>

#include <filesystem>

#include "testing/build_paths.h"
#include "server/server_process.h"
#include "testing/npm_oracle.h"
#include "testing/process.h"
#include "testing/shared_data.h"

namespace pagoda::testing {
namespace {

TEST(ServerOpenAiClient, CompletionChatAndStreamingChat) {
  const std::filesystem::path dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(dir.string(), "openai");
  ServerProcess s;
  const auto p = run_process({"/usr/bin/env", "node", (dir / "check.mjs").string(),
                              "http://127.0.0.1:" + std::to_string(s.port()) + "/v1",
                              shared_path("testdata/reference/stories260K_greedy.json")});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("openai client checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServerOpenAiClient, StructuredOutputsParseAndValidate) {
  const std::filesystem::path dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(dir.string(), "ajv");
  ServerProcess s;
  const auto p = run_process({"/usr/bin/env", "node", (dir / "structured.mjs").string(),
                              "http://127.0.0.1:" + std::to_string(s.port()) + "/v1"});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("structured output checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(s.stop(), 0);
}

// Tool calling (openai_client/tools.mjs) with a small template whose
// <tool_call> marker makes `auto` pick the hermes parser.
TEST(ServerOpenAiClient, ToolCallsForcedStreamedAndRefused) {
  const std::filesystem::path src = PAGODA_SOURCE_DIR;
  const std::filesystem::path dir = src / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(dir.string(), "ajv");
  ServerProcess s({"--chat-template", (src / "tests/server/templates/tiny_tools.jinja").string()});
  const auto p = run_process(
      {"/usr/bin/env", "node", (dir / "tools.mjs").string(), "http://127.0.0.1:" + std::to_string(s.port()) + "/v1"});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("tool calling checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(s.stop(), 0);
}

// Forced tool calls where the template names no tool-call format: vLLM's
// plain JSON form, streamed in pieces all the same (tools.mjs plain).
TEST(ServerOpenAiClient, ForcedToolCallsInThePlainForm) {
  const std::filesystem::path src = PAGODA_SOURCE_DIR;
  const std::filesystem::path dir = src / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(dir.string(), "ajv");
  ServerProcess s({"--chat-template", (src / "tests/server/templates/tiny_tools_plain.jinja").string()});
  const auto p = run_process({"/usr/bin/env", "node", (dir / "tools.mjs").string(),
                              "http://127.0.0.1:" + std::to_string(s.port()) + "/v1", "plain"});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("tool calling checks passed (plain form)"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(s.stop(), 0);
}

// A corpus of >= 50 JSON Schemas (ours and the JSON Schema Test Suite's),
// regexes and choice lists, checked by openai_client/corpus.mjs.
TEST(ServerOpenAiClient, SchemaCorpusValidatesOrIsRefusedByKeyword) {
  const std::filesystem::path dir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/server/openai_client";
  PAGODA_REQUIRE_NPM(dir.string(), "json-schema-test-suite");
  ServerProcess s;
  const auto p = run_process(
      {"/usr/bin/env", "node", (dir / "corpus.mjs").string(), "http://127.0.0.1:" + std::to_string(s.port()) + "/v1"});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("corpus checks passed"), std::string::npos) << p.out << p.err;
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace pagoda::testing
