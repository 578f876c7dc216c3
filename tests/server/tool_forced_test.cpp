// Forced tool calls without a server: the grammar of each form (the model's
// own format, or vLLM's plain JSON) accepts exactly well-formed calls, every
// output it allows reads back as calls (never content) the same whole and
// streamed at every split, and "required" streams: name first, then the
// arguments in pieces.
#include <gtest/gtest.h>

#include <random>

#include "grammar/grammar_testing.h"
#include "server/api_error.h"
#include "server/tool_constraint.h"
#include "server/tool_output.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;
using toolcall::Format;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "ping"}}])");

ToolRequest request(std::optional<Format> f, const ojson& choice, bool parallel = true) {
  return parse_tool_request({{"tools", kTools}, {"tool_choice", choice}, {"parallel_tool_calls", parallel}}, f);
}
const ojson kNamed = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};

grammar::Grammar forced_grammar(const ToolRequest& r) { return grammar::compile(forced_tool_spec(r))->grammar; }

// What a model writing calls in format f writes.
std::string calls_text(Format f, const std::vector<std::pair<std::string, std::string>>& calls) {
  const toolcall::CallMarkup m = *toolcall::call_markup(f);
  std::string s = m.begin;
  for (size_t i = 0; i < calls.size(); ++i)
    s += (i ? m.separator : "") + m.head_before + (m.quote_name ? ojson(calls[i].first).dump() : calls[i].first) +
         m.head_after + calls[i].second + m.tail;
  return s + m.end;
}

const Format kMarkupFormats[] = {Format::hermes, Format::llama3_json, Format::mistral, Format::deepseek_v3,
                                 Format::harmony};

TEST(ForcedGrammar, ModelFormatAcceptsExactlyWellFormedCalls) {
  using grammar::testing::full_match;
  for (Format f : kMarkupFormats) {
    SCOPED_TRACE(std::string(toolcall::format_name(f)));
    const ToolRequest r = request(f, "required");
    ASSERT_TRUE(forced_in_model_format(r));
    const grammar::Grammar g = forced_grammar(r);
    const std::string weather = calls_text(f, {{"get_weather", R"({"city":"Oslo","days":2})"}});
    EXPECT_TRUE(full_match(g, weather));
    EXPECT_TRUE(full_match(g, calls_text(f, {{"ping", R"({})"}})));
    EXPECT_TRUE(full_match(g, calls_text(f, {{"get_weather", R"({"city":"a"})"}, {"ping", "{}"}})));
    EXPECT_FALSE(full_match(g, calls_text(f, {{"nope", "{}"}})));                    // not a tool
    EXPECT_FALSE(full_match(g, calls_text(f, {{"get_weather", R"({"days":2})"}})));  // city is required
    EXPECT_FALSE(full_match(g, calls_text(f, {{"get_weather", R"({"city":1})"}})));  // city is a string
    EXPECT_FALSE(full_match(g, calls_text(f, {{"ping", R"({"x":1})"}}).substr(1)));  // markup cut
    EXPECT_FALSE(full_match(g, "Sure. " + weather));                                 // no content around calls
    EXPECT_FALSE(full_match(g, weather + " done"));
    EXPECT_FALSE(full_match(g, ""));
    // One call only: a named function, or parallel_tool_calls false.
    const std::string two = calls_text(f, {{"get_weather", R"({"city":"a"})"}, {"get_weather", R"({"city":"b"})"}});
    for (const ToolRequest& one : {request(f, kNamed), request(f, "required", false)}) {
      const grammar::Grammar g1 = forced_grammar(one);
      EXPECT_TRUE(full_match(g1, weather));
      EXPECT_FALSE(full_match(g1, two));
      EXPECT_EQ(full_match(g1, calls_text(f, {{"ping", "{}"}})), one.choice == ToolChoice::required);
    }
  }
  // llama3_json spells the key "parameters"; the others "arguments".
  const grammar::Grammar llama = forced_grammar(request(Format::llama3_json, "required"));
  EXPECT_TRUE(full_match(llama, R"({"name": "ping", "parameters": {}})"));
  EXPECT_FALSE(full_match(llama, R"({"name": "ping", "arguments": {}})"));
  EXPECT_TRUE(full_match(forced_grammar(request(Format::hermes, "required")),
                         "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
}

TEST(ForcedGrammar, PlainFormWhereNoFormatIsKnown) {
  using grammar::testing::full_match;
  for (std::optional<Format> f : {std::optional<Format>(), std::optional<Format>(Format::pythonic)}) {
    const ToolRequest r = request(f, "required");
    EXPECT_FALSE(forced_in_model_format(r));
    EXPECT_EQ(forced_tool_spec(r).kind, grammar::ConstraintSpec::Kind::json_schema);
    const grammar::Grammar g = forced_grammar(r);
    EXPECT_TRUE(
        full_match(g, R"([{"name":"get_weather","parameters":{"city":"Oslo"}},{"name":"ping","parameters":{}}])"));
    EXPECT_FALSE(full_match(g, R"([{"name":"get_weather","arguments":{"city":"Oslo"}}])"));
    EXPECT_FALSE(full_match(g, "[]"));
  }
  // deepseek_v3 writes names bare: one its markup cannot hold keeps the plain form.
  ojson tools = kTools;
  tools[1]["function"]["name"] = "two\nlines";
  EXPECT_FALSE(
      forced_in_model_format(parse_tool_request({{"tools", tools}, {"tool_choice", "required"}}, Format::deepseek_v3)));
  // harmony's header ends a name at a space.
  tools[1]["function"]["name"] = "two words";
  EXPECT_FALSE(
      forced_in_model_format(parse_tool_request({{"tools", tools}, {"tool_choice", "required"}}, Format::harmony)));
  EXPECT_TRUE(
      forced_in_model_format(parse_tool_request({{"tools", tools}, {"tool_choice", "required"}}, Format::deepseek_v3)));
}

// The calls and content of a whole output, and of the same output streamed
// in pieces cut at `cuts`.
struct Read {
  std::string content;
  std::vector<toolcall::ToolCall> calls;
  size_t deltas = 0;
};
Read read_output(const ToolRequest& r, const std::string& text, const std::vector<size_t>& cuts) {
  ToolOutput out(r);
  Read got;
  auto take = [&](toolcall::ParseStep s) {
    got.content += s.content;
    got.deltas += s.calls.size();
    toolcall::apply_deltas(got.calls, s.calls);
  };
  size_t at = 0;
  for (size_t cut : cuts) take(out.push(text.substr(at, cut - at))), at = cut;
  take(out.push(text.substr(at)));
  take(out.finish());
  return got;
}

TEST(ForcedGrammar, EveryAllowedOutputReadsAsCallsAtEverySplit) {
  std::vector<ToolRequest> requests;
  for (Format f : kMarkupFormats)
    for (const ojson& choice : {ojson("required"), kNamed}) requests.push_back(request(f, choice));
  for (const ojson& choice : {ojson("required"), kNamed}) {
    requests.push_back(request(std::nullopt, choice));
    requests.push_back(request(Format::pythonic, choice));
  }
  std::mt19937 rng(5);
  for (const ToolRequest& r : requests) {
    const grammar::Grammar g = forced_grammar(r);
    for (int trial = 0; trial < 12; ++trial) {
      const std::string text = grammar::testing::random_string(g, rng, 80);
      SCOPED_TRACE(text);
      const Read whole = read_output(r, text, {});
      EXPECT_EQ(whole.content, "");
      ASSERT_FALSE(whole.calls.empty());
      for (const auto& c : whole.calls) {
        EXPECT_TRUE(r.choice == ToolChoice::required || c.name == "get_weather");
        EXPECT_TRUE(ojson::parse(c.arguments).is_object()) << c.arguments;
      }
      for (size_t cut = 0; cut <= text.size(); ++cut) {
        const Read split = read_output(r, text, {cut});
        EXPECT_EQ(split.content, "");
        ASSERT_EQ(split.calls.size(), whole.calls.size());
        for (size_t i = 0; i < whole.calls.size(); ++i) {
          EXPECT_EQ(split.calls[i].name, whole.calls[i].name);
          EXPECT_EQ(split.calls[i].arguments, whole.calls[i].arguments);
        }
      }
    }
  }
}

// "required" streams like auto: per call the id, type and name first
// (arguments ""), then the arguments in pieces; the same calls as the
// non-streamed message.
TEST(ToolOutput, RequiredStreamsInPieces) {
  const std::string args = R"({"city":"Oslo","days":3})";
  const std::vector<std::pair<std::optional<Format>, std::string>> cases = {
      {std::nullopt, R"([{"name":"get_weather","parameters":)" + args + R"(},{"name":"ping","parameters":{}}])"},
      {Format::hermes, calls_text(Format::hermes, {{"get_weather", args}, {"ping", "{}"}})},
      {Format::mistral, calls_text(Format::mistral, {{"get_weather", args}, {"ping", "{}"}})},
      {Format::deepseek_v3, calls_text(Format::deepseek_v3, {{"get_weather", args}, {"ping", "{}"}})},
      {Format::harmony, calls_text(Format::harmony, {{"get_weather", args}, {"ping", "{}"}})}};
  for (const auto& [f, text] : cases) {
    SCOPED_TRACE(text);
    GenerationRequest req;
    req.api = Api::chat;
    req.tools = request(f, "required");
    ASSERT_TRUE(grammar::testing::full_match(forced_grammar(req.tools), text));

    ChoiceState whole;
    whole.text = text;
    whole.finish = FinishReason::stop;
    json message = {{"role", "assistant"}, {"content", text}};
    json finish = "stop";
    tool_message(req.tools, whole, message, finish);
    EXPECT_EQ(finish, "tool_calls");
    EXPECT_EQ(message["content"], nullptr);
    ASSERT_EQ(message["tool_calls"].size(), 2u);

    ChoiceState c;
    json calls = json::array();
    std::vector<size_t> pieces(2, 0);
    json last_finish;
    for (size_t i = 0; i < text.size(); i += 5) {
      RequestOutput out;
      out.text = text.substr(i, 5);
      if (i + 5 >= text.size()) out.finish = FinishReason::stop;
      for (const json& chunk : tool_stream_chunks({"id", 0, "m"}, req, 0, c, out, nullptr)) {
        const json& ch = chunk["choices"][0];
        EXPECT_FALSE(ch["delta"].contains("content")) << ch;
        if (!ch["finish_reason"].is_null()) last_finish = ch["finish_reason"];
        if (!ch["delta"].contains("tool_calls")) continue;
        const json& d = ch["delta"]["tool_calls"][0];
        const size_t k = d["index"];
        if (d.contains("id")) {  // the call's first delta: before any of its arguments
          ASSERT_EQ(k, calls.size());
          EXPECT_EQ(d["type"], "function");
          EXPECT_EQ(d["function"]["arguments"], "");
          calls.push_back({{"id", d["id"]}, {"type", "function"}, {"function", d["function"]}});
        } else {
          ASSERT_EQ(k + 1, calls.size());
          EXPECT_EQ(d["function"].size(), 1u) << d;
          calls[k]["function"]["arguments"] =
              calls[k]["function"]["arguments"].get<std::string>() + d["function"]["arguments"].get<std::string>();
          ++pieces[k];
        }
      }
    }
    EXPECT_EQ(last_finish, "tool_calls");
    ASSERT_EQ(calls.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(calls[k]["function"], message["tool_calls"][k]["function"]);
      EXPECT_EQ(calls[k]["id"].get<std::string>().empty(), false);
    }
    EXPECT_EQ(calls[0]["function"]["arguments"], args);
    EXPECT_GT(pieces[0], 1u);  // the arguments came as the model wrote them, 5 bytes at a time
  }
}

// A forced call cut off by max_tokens inside its opening markup: the markup
// is the parser's, never content (whole and streamed).
TEST(ToolOutput, RequiredCutOffInItsMarkupLeavesNoContent) {
  const std::string text = calls_text(Format::hermes, {{"ping", "{}"}}) + "\n<tool_call";
  GenerationRequest req;
  req.api = Api::chat;
  req.tools = request(Format::hermes, "required");
  ChoiceState whole;
  whole.text = text;
  whole.finish = FinishReason::length;
  json message = {{"role", "assistant"}, {"content", text}};
  json finish = "length";
  tool_message(req.tools, whole, message, finish);
  EXPECT_EQ(message["content"], nullptr) << message;
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  ChoiceState c;
  RequestOutput out;
  out.text = text;
  out.finish = FinishReason::length;
  for (const json& chunk : tool_stream_chunks({"id", 0, "m"}, req, 0, c, out, nullptr))
    EXPECT_FALSE(chunk["choices"][0]["delta"].contains("content")) << chunk;
}

// Tool parameters keep number bounds; a strict tool with a keyword that cannot be enforced is a 400 naming it.
TEST(ForcedGrammar, ToolParametersKeepBoundsAndStrictNamesTheRest) {
  const ojson tools = ojson::parse(R"([{"type": "function", "function": {"name": "rate", "strict": true,
    "parameters": {"type": "object", "properties": {"stars": {"type": "number", "minimum": 1, "maximum": 5}},
    "required": ["stars"]}}}])");
  const ojson named = {{"type", "function"}, {"function", {{"name", "rate"}}}};
  const auto g = forced_grammar(parse_tool_request({{"tools", tools}, {"tool_choice", named}}, std::nullopt));
  EXPECT_TRUE(grammar::testing::full_match(g, R"({"stars":4.5})"));
  EXPECT_FALSE(grammar::testing::full_match(g, R"({"stars":95.5})"));

  grammar::GrammarCache cache;
  auto vocab =
      std::make_shared<const grammar::TokenVocab>(std::vector<std::string>{"", "{", "}"}, std::vector<int32_t>{0});
  const GrammarSupport support{&cache, vocab};
  ojson bad = tools;
  bad[0]["function"]["parameters"]["patternProperties"] = ojson::object();
  try {
    forced_tool_constraint(parse_tool_request({{"tools", bad}, {"tool_choice", named}}, std::nullopt), support);
    ADD_FAILURE() << "a strict tool's unsupported keyword was accepted";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("patternProperties"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'rate'"), std::string::npos) << e.what();
  }
  bad[0]["function"]["strict"] = false;  // not strict: ignored (and logged)
  EXPECT_NE(forced_tool_constraint(parse_tool_request({{"tools", bad}, {"tool_choice", named}}, std::nullopt), support),
            nullptr);
}

}  // namespace
}  // namespace pagoda::server
