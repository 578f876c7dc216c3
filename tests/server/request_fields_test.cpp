// The pure pieces of the HTTP surface: the `model` check, unknown-field
// detection and its header, and the CORS helpers (--allowed-origins parsing,
// the origin match, what a preflight echoes).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/cors.h"
#include "server/request_fields.h"
#include "util/error.h"

namespace pagoda::server {
namespace {

using nlohmann::json;

int model_status(const json& body) {
  try {
    check_model(body, {"a", "b"});
    return 200;
  } catch (const ApiError& e) {
    return e.status;
  }
}

TEST(RequestFields, ModelMustBeAServedNameOrAbsent) {
  EXPECT_EQ(model_status(json::object()), 200);
  EXPECT_EQ(model_status({{"model", nullptr}}), 200);
  EXPECT_EQ(model_status({{"model", "a"}}), 200);
  EXPECT_EQ(model_status({{"model", "b"}}), 200);
  EXPECT_EQ(model_status({{"model", "A"}}), 404);  // names are exact
  EXPECT_EQ(model_status({{"model", ""}}), 404);
  EXPECT_EQ(model_status({{"model", 5}}), 400);
  EXPECT_EQ(model_status({{"model", json::array({"a"})}}), 400);
}

TEST(RequestFields, UnknownFieldsPerEndpoint) {
  const json body = {{"prompt", "x"}, {"messages", json::array()}, {"top_logprobs", 2}, {"tokens", 1}, {"zzz", 1}};
  EXPECT_EQ(ignored_fields(body, Endpoint::completions),
            (std::vector<std::string>{"messages", "tokens", "top_logprobs", "zzz"}));
  EXPECT_EQ(ignored_fields(body, Endpoint::chat), (std::vector<std::string>{"prompt", "tokens", "zzz"}));
  EXPECT_EQ(ignored_fields(body, Endpoint::tokenize), (std::vector<std::string>{"tokens", "top_logprobs", "zzz"}));
  EXPECT_EQ(ignored_fields(body, Endpoint::detokenize),
            (std::vector<std::string>{"messages", "prompt", "top_logprobs", "zzz"}));
  // Every field issue 22 names is known to the chat endpoint.
  for (const char* f : {"tools",
                        "tool_choice",
                        "parallel_tool_calls",
                        "chat_template",
                        "chat_template_kwargs",
                        "add_generation_prompt",
                        "continue_final_message",
                        "logit_bias",
                        "stop_token_ids",
                        "min_tokens",
                        "include_stop_str_in_output",
                        "skip_special_tokens",
                        "truncate_prompt_tokens",
                        "best_of",
                        "prompt_logprobs",
                        "echo",
                        "logprobs",
                        "top_logprobs",
                        "user",
                        "metadata",
                        "store",
                        "service_tier",
                        "response_format",
                        "structured_outputs",
                        "guided_json",
                        "guided_choice",
                        "guided_regex",
                        "guided_grammar",
                        "grammar",
                        "json_schema"})
    EXPECT_TRUE(ignored_fields({{f, 1}}, Endpoint::chat).empty()) << f;
  EXPECT_TRUE(ignored_fields(json::array(), Endpoint::chat).empty());
}

TEST(RequestFields, HeaderIsSafeAndBounded) {
  EXPECT_EQ(ignored_fields_header({"a", "b_c"}), "a, b_c");
  EXPECT_EQ(ignored_fields_header({"x\r\ny: 1", "p,q%"}), "x%0D%0Ay:%201, p%2Cq%25");
  EXPECT_EQ(ignored_fields_header({std::string(100, 'n')}), std::string(64, 'n'));
  std::vector<std::string> many;
  for (int i = 0; i < 40; ++i) many.push_back(fmt::format("f{}", i));
  const std::string h = ignored_fields_header(many);
  EXPECT_NE(h.find("f31, ...8 more"), std::string::npos) << h;
  EXPECT_EQ(h.find("f32"), std::string::npos) << h;
}

TEST(Cors, AllowedOriginsFlag) {
  EXPECT_TRUE(parse_allowed_origins("").empty());
  EXPECT_EQ(parse_allowed_origins("*"), (std::vector<std::string>{"*"}));
  EXPECT_EQ(parse_allowed_origins(" https://a.example , http://localhost:3000"),
            (std::vector<std::string>{"https://a.example", "http://localhost:3000"}));
  EXPECT_EQ(parse_allowed_origins(R"(["https://a.example", "*"])"),
            (std::vector<std::string>{"https://a.example", "*"}));
  EXPECT_THROW(parse_allowed_origins("a,,b"), InvalidArgument);
  EXPECT_THROW(parse_allowed_origins("https://a b"), InvalidArgument);
  EXPECT_THROW(parse_allowed_origins("[1]"), InvalidArgument);
  EXPECT_THROW(parse_allowed_origins("[oops"), InvalidArgument);
}

TEST(Cors, OriginMatchAndPreflightEcho) {
  const std::vector<std::string> list = {"https://a.example"};
  EXPECT_EQ(cors_allow_origin(list, "https://a.example"), "https://a.example");
  EXPECT_EQ(cors_allow_origin(list, "https://a.example.evil"), "");
  EXPECT_EQ(cors_allow_origin(list, ""), "");
  EXPECT_EQ(cors_allow_origin({}, "https://a.example"), "");
  EXPECT_EQ(cors_allow_origin({"*"}, "https://b.example"), "*");
  const auto allow_headers = [](std::string_view asked) {
    for (const auto& [k, v] : cors_preflight_headers("POST, OPTIONS", asked))
      if (k == "Access-Control-Allow-Headers") return v;
    return std::string();
  };
  EXPECT_EQ(allow_headers(""), "Authorization, Content-Type");
  EXPECT_EQ(allow_headers("x-stainless-os, x-api-key"), "Authorization, Content-Type, x-stainless-os, x-api-key");
  EXPECT_EQ(allow_headers("x\r\nSet-Cookie: a"), "Authorization, Content-Type");  // never echoed
  EXPECT_EQ(allow_headers(std::string(2000, 'x')), "Authorization, Content-Type");
}

}  // namespace
}  // namespace pagoda::server
