// The Responses API's translation without a server: request bodies into chat
// bodies (responses_request.h), errors naming the Responses field, the
// response object and stream events built from model output
// (responses_stream.h), the store's bounds (response_store.h).
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/response_store.h"
#include "server/responses_output.h"
#include "server/responses_request.h"
#include "server/responses_stream.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

ResponsesRequest translated(const std::string& body, const PreviousResponse& previous = {}) {
  return translate_responses_request(ojson::parse(body), previous);
}

// The param of the 400 a body gets ("" when it translates).
std::string refused_param(const std::string& body) {
  try {
    translated(body);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << e.what();
    return e.param.empty() ? "(none)" : e.param;
  }
  return "";
}

TEST(ResponsesTranslate, StringInputAndInstructions) {
  const auto r = translated(R"({"model":"m","input":"Hi","instructions":"Be brief.","max_output_tokens":9,
                                "temperature":0.5,"top_p":0.9,"stream":true,"reasoning":{"effort":"low"}})");
  EXPECT_EQ(r.chat["messages"], ojson::parse(R"([{"role":"system","content":"Be brief."},
                                                  {"role":"user","content":"Hi"}])"));
  EXPECT_EQ(r.chat["model"], "m");
  EXPECT_EQ(r.chat["max_tokens"], 9);
  EXPECT_EQ(r.chat["temperature"], 0.5);
  EXPECT_EQ(r.chat["top_p"], 0.9);
  EXPECT_EQ(r.chat["stream"], true);
  EXPECT_EQ(r.chat["reasoning_effort"], "low");
  // The conversation a stored response continues from leaves the instructions out.
  EXPECT_EQ(r.context.conversation, ojson::parse(R"([{"role":"user","content":"Hi"}])"));
  EXPECT_TRUE(r.context.store);
  EXPECT_EQ(r.context.echo["instructions"], "Be brief.");
  EXPECT_EQ(r.context.echo["max_output_tokens"], 9);
  EXPECT_EQ(r.context.echo["tool_choice"], "auto");
  EXPECT_EQ(r.context.echo["text"]["format"]["type"], "text");
  EXPECT_EQ(r.context.echo["reasoning"]["effort"], "low");
  const auto off = translated(R"({"input":"x","reasoning":{"effort":"none"}})");
  EXPECT_EQ(off.chat["chat_template_kwargs"], ojson::parse(R"({"enable_thinking":false})"));
  EXPECT_FALSE(off.chat.contains("reasoning_effort"));
  EXPECT_EQ(off.context.echo["reasoning"]["effort"], "none");
}

TEST(ResponsesTranslate, ItemsBecomeChatMessages) {
  const auto r = translated(R"({"input":[
      {"role":"developer","content":"Rules."},
      {"type":"message","role":"user","content":[{"type":"input_text","text":"Weather "},{"type":"input_text","text":"in Oslo?"}]},
      {"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Look it up."}]},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},
      {"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
      {"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_1","output":"Sunny"},
      {"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"noon"}]},
      {"role":"user","content":"Thanks"}]})");
  EXPECT_EQ(r.chat["messages"], ojson::parse(R"([
      {"role":"developer","content":"Rules."},
      {"role":"user","content":"Weather in Oslo?"},
      {"role":"assistant","content":"Checking.","reasoning_content":"Look it up.",
       "tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
                     {"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"Sunny"},
      {"role":"tool","tool_call_id":"call_2","content":"noon"},
      {"role":"user","content":"Thanks"}])"))
      << r.chat["messages"].dump(1);
  // The items as input_items lists them: each with an id, a string content as a part.
  const json& items = r.context.input_items;
  ASSERT_EQ(items.size(), 9u);
  EXPECT_EQ(items[0]["type"], "message");
  EXPECT_EQ(items[0]["content"], json::parse(R"([{"type":"input_text","text":"Rules."}])"));
  EXPECT_EQ(items[2]["id"], "rs_1");  // an id given is kept
  EXPECT_TRUE(items[4]["id"].get<std::string>().starts_with("fc_"));
  EXPECT_TRUE(items[6]["id"].get<std::string>().starts_with("fco_"));
  for (const json& item : items) EXPECT_TRUE(item["id"].is_string()) << item;
}

TEST(ResponsesTranslate, ToolsToolChoiceAndTextFormat) {
  const auto r = translated(R"({"input":"x",
      "tools":[{"type":"function","name":"w","description":"Weather","parameters":{"type":"object"},"strict":true}],
      "tool_choice":{"type":"function","name":"w"},"parallel_tool_calls":false,
      "text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}}})");
  EXPECT_EQ(r.chat["tools"], ojson::parse(R"([{"type":"function","function":{"name":"w","description":"Weather",
                                              "parameters":{"type":"object"},"strict":true}}])"));
  EXPECT_EQ(r.chat["tool_choice"], ojson::parse(R"({"type":"function","function":{"name":"w"}})"));
  EXPECT_EQ(r.chat["parallel_tool_calls"], false);
  EXPECT_EQ(r.chat["response_format"], ojson::parse(R"({"type":"json_schema","json_schema":{"name":"out",
                                                        "schema":{"type":"object"},"strict":true}})"));
  // The echo keeps the Responses spelling.
  EXPECT_EQ(r.context.echo["tools"][0]["name"], "w");
  EXPECT_EQ(r.context.echo["tool_choice"]["name"], "w");
  EXPECT_EQ(translated(R"({"input":"x","text":{"format":{"type":"json_object"}}})").chat["response_format"],
            ojson::parse(R"({"type":"json_object"})"));
  EXPECT_FALSE(translated(R"({"input":"x","text":{"format":{"type":"text"}}})").chat.contains("response_format"));
  EXPECT_EQ(translated(R"({"input":"x","tool_choice":"required"})").chat["tool_choice"], "required");
}

TEST(ResponsesTranslate, HarmlessFieldsAreAccepted) {
  EXPECT_EQ(refused_param(R"({"input":"x","store":false,"metadata":{"k":"v"},"user":"u","truncation":"auto",
                              "include":["reasoning.encrypted_content"],"previous_response_id":null,"tools":[]})"),
            "");
  EXPECT_FALSE(translated(R"({"input":"x","store":false})").context.store);
}

TEST(ResponsesTranslate, RefusalsNameTheField) {
  EXPECT_EQ(refused_param(R"([1])"), "(none)");
  EXPECT_EQ(refused_param(R"({})"), "input");
  EXPECT_EQ(refused_param(R"({"input":5})"), "input");
  EXPECT_EQ(refused_param(R"({"input":[]})"), "input");
  EXPECT_EQ(refused_param(R"({"input":[{"role":"tool","content":"x"}]})"), "input.0.role");
  EXPECT_EQ(refused_param(R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]})"),
            "input.0.content.0.type");
  EXPECT_EQ(refused_param(R"({"input":[{"type":"item_reference","id":"x"}]})"), "input.0.type");
  EXPECT_EQ(refused_param(R"({"input":[{"type":"function_call","name":"f","arguments":"{}"}]})"), "input.0.call_id");
  EXPECT_EQ(refused_param(R"({"input":[{"type":"function_call_output","call_id":"c"}]})"), "input.0.output");
  EXPECT_EQ(refused_param(R"({"input":"x","tools":[{"type":"web_search"}]})"), "tools.0.type");
  EXPECT_EQ(refused_param(R"({"input":"x","tools":[{"type":"function"}]})"), "tools.0.name");
  EXPECT_EQ(refused_param(R"({"input":"x","tools":[{"type":"function","name":"f","parameters":3}]})"),
            "tools.0.parameters");
  EXPECT_EQ(refused_param(R"({"input":"x","tool_choice":{"type":"web_search_preview"}})"), "tool_choice");
  EXPECT_EQ(refused_param(R"({"input":"x","tool_choice":"sometimes"})"), "tool_choice");
  EXPECT_EQ(refused_param(R"({"input":"x","text":{"format":{"type":"xml"}}})"), "text.format.type");
  EXPECT_EQ(refused_param(R"({"input":"x","text":{"format":{"type":"json_schema"}}})"), "text.format.schema");
  EXPECT_EQ(refused_param(R"({"input":"x","max_output_tokens":0})"), "max_output_tokens");
  EXPECT_EQ(refused_param(R"({"input":"x","temperature":"hot"})"), "temperature");
  EXPECT_EQ(refused_param(R"({"input":"x","store":"yes"})"), "store");
  EXPECT_EQ(refused_param(R"({"input":"x","metadata":[]})"), "metadata");
  EXPECT_EQ(refused_param(R"({"input":"x","include":[1]})"), "include");
  EXPECT_EQ(refused_param(R"({"input":"x","truncation":"middle"})"), "truncation");
  EXPECT_EQ(refused_param(R"({"input":"x","background":true})"), "background");
  EXPECT_EQ(refused_param(R"({"input":"x","reasoning":"high"})"), "reasoning");
  EXPECT_EQ(refused_param(R"({"input":"x","previous_response_id":"resp_none"})"), "previous_response_id");
  // The chat parser's fields, as the Responses request spells them.
  EXPECT_EQ(responses_field("max_tokens"), "max_output_tokens");
  EXPECT_EQ(responses_field("response_format.json_schema.schema"), "text.format");
  EXPECT_EQ(responses_field("tools.0.function.parameters"), "tools.0.parameters");
  EXPECT_EQ(responses_field("messages"), "input");
  EXPECT_EQ(responses_field("reasoning_effort"), "reasoning.effort");
}

TEST(ResponsesTranslate, PreviousResponseComesFirst) {
  auto prev = std::make_shared<StoredResponse>();
  prev->conversation = ojson::parse(R"([{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}])");
  const auto r = translated(R"({"input":"More","instructions":"New rules.","previous_response_id":"resp_1"})",
                            [&](const std::string& id) { return id == "resp_1" ? prev : nullptr; });
  EXPECT_EQ(r.chat["messages"], ojson::parse(R"([{"role":"system","content":"New rules."},
      {"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":"More"}])"));
  EXPECT_EQ(r.context.conversation.size(), 3u);
  EXPECT_EQ(r.context.echo["previous_response_id"], "resp_1");
}

GenerationRequest responses_req(const std::string& body) {
  GenerationRequest g;
  g.api = Api::responses;
  g.responses = std::make_shared<const ResponsesContext>(translated(body).context);
  return g;
}

TEST(ResponsesOutput, WholeResponseAndStreamAgree) {
  const GenerationRequest g = responses_req(R"({"input":"x","max_output_tokens":5,"metadata":{"a":"b"}})");
  const ResponseIdentity id{"resp_1", 42, "m"};
  ChoiceState c;
  c.text = "Once upon a time";
  c.finish = FinishReason::length;
  const json r = responses_response(id, g, c, Usage{7, 5, 3});
  EXPECT_EQ(r["id"], "resp_1");
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["created_at"], 42);
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(r["max_output_tokens"], 5);
  EXPECT_EQ(r["metadata"]["a"], "b");
  ASSERT_EQ(r["output"].size(), 1u) << r;
  const json& msg = r["output"][0];
  EXPECT_EQ(msg["type"], "message");
  EXPECT_TRUE(msg["id"].get<std::string>().starts_with("msg_"));
  EXPECT_EQ(msg["status"], "incomplete");
  EXPECT_EQ(msg["content"], json::parse(R"([{"type":"output_text","text":"Once upon a time","annotations":[]}])"));
  EXPECT_EQ(r["usage"], json::parse(R"({"input_tokens":7,"input_tokens_details":{"cached_tokens":3},
      "output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":12})"));

  ResponsesStream s(id, g);
  std::vector<json> events = s.start();
  ChoiceState sc;
  for (const char* piece : {"Once ", "upon a", " time"}) {
    RequestOutput out;
    out.text = piece;
    for (json& e : s.push(sc, out)) events.push_back(std::move(e));
  }
  sc.finish = FinishReason::length;
  for (json& e : s.finish(sc, Usage{7, 5, 3})) events.push_back(std::move(e));
  std::vector<std::string> names;
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["sequence_number"], i);
    names.push_back(events[i]["type"]);
    if (names.back() == "response.output_text.delta") text += events[i]["delta"].get<std::string>();
  }
  const std::vector<std::string> want = {"response.created",           "response.in_progress",
                                         "response.output_item.added", "response.content_part.added",
                                         "response.output_text.delta", "response.output_text.delta",
                                         "response.output_text.delta", "response.output_text.done",
                                         "response.content_part.done", "response.output_item.done",
                                         "response.incomplete"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(text, "Once upon a time");
  EXPECT_EQ(events[0]["response"]["status"], "in_progress");
  EXPECT_EQ(events[0]["response"]["output"], json::array());
  json last = events.back()["response"];
  last["output"][0].erase("id");
  json whole = r;
  whole["output"][0].erase("id");
  EXPECT_EQ(last, whole);
  EXPECT_EQ(s.response()["status"], "incomplete");
}

TEST(ResponsesOutput, ReasoningAndEmptyOutput) {
  GenerationRequest g = responses_req(R"({"input":"x"})");
  g.tools.reasoning = toolcall::ReasoningFormat::qwen3;
  ChoiceState c;
  c.text = "<think>Hmm.</think>Yes.";
  c.finish = FinishReason::stop;
  const json r = responses_response({"resp_2", 1, "m"}, g, c, Usage{});
  EXPECT_EQ(r["status"], "completed");
  ASSERT_EQ(r["output"].size(), 2u) << r;
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_TRUE(r["output"][0]["id"].get<std::string>().starts_with("rs_"));
  EXPECT_EQ(r["output"][0]["content"][0]["type"], "reasoning_text");
  EXPECT_NE(r["output"][0]["content"][0]["text"].get<std::string>().find("Hmm."), std::string::npos) << r;
  EXPECT_NE(r["output"][1]["content"][0]["text"].get<std::string>().find("Yes."), std::string::npos) << r;
  // Back in as chat: one assistant message with its reasoning.
  const ojson m = output_as_chat(r["output"]);
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_EQ(m["content"], r["output"][1]["content"][0]["text"]);
  EXPECT_EQ(m["reasoning_content"], r["output"][0]["content"][0]["text"]);

  ChoiceState empty;
  empty.finish = FinishReason::stop;
  const json e = responses_response({"resp_3", 1, "m"}, responses_req(R"({"input":"x"})"), empty, Usage{});
  ASSERT_EQ(e["output"].size(), 1u);
  EXPECT_EQ(e["output"][0]["content"][0]["text"], "");
  EXPECT_EQ(e["output"][0]["status"], "completed");
}

// Gemma 4's thought and call: a reasoning item, the message, a function_call item.
TEST(ResponsesOutput, Gemma4ReasoningAndCallItems) {
  GenerationRequest g = responses_req(R"({"input":"x"})");
  g.tools.tools = ojson::parse(R"([{"type":"function","function":{"name":"w","parameters":{"type":"object"}}}])");
  g.tools.choice = ToolChoice::automatic;
  g.tools.parser = toolcall::Format::gemma4;
  g.tools.reasoning = toolcall::ReasoningFormat::gemma4;
  ChoiceState c;
  c.text = "<|channel>thought\nNeed w.<channel|>Checking.<|tool_call>call:w{c:<|\"|>O<|\"|>}<tool_call|>";
  c.finish = FinishReason::stop;
  const json r = responses_response({"resp_g", 1, "m"}, g, c, Usage{});
  ASSERT_EQ(r["output"].size(), 3u) << r;
  EXPECT_EQ(r["output"][0]["type"], "reasoning");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Need w.");
  EXPECT_EQ(r["output"][1]["content"][0]["text"], "Checking.");
  EXPECT_EQ(r["output"][2]["type"], "function_call");
  EXPECT_EQ(r["output"][2]["name"], "w");
  EXPECT_EQ(r["output"][2]["arguments"], R"({"c":"O"})");
}

// Hermes calls become function_call items, streamed as argument deltas; one cut by max_output_tokens is incomplete.
TEST(ResponsesOutput, FunctionCallItems) {
  GenerationRequest g = responses_req(R"({"input":"x"})");
  g.tools.tools = ojson::parse(R"([{"type":"function","function":{"name":"w","parameters":{"type":"object"}}}])");
  g.tools.choice = ToolChoice::automatic;
  g.tools.parser = toolcall::Format::hermes;
  const std::string text =
      R"(Let me check.<tool_call>{"name": "w", "arguments": {"c": "O"}}</tool_call><tool_call>{"name": "w", "arguments": {"c": )";
  ChoiceState c;
  c.text = text;
  c.finish = FinishReason::length;
  const json r = responses_response({"resp_6", 1, "m"}, g, c, Usage{});
  ASSERT_EQ(r["output"].size(), 3u) << r;
  EXPECT_EQ(r["output"][0]["type"], "message");
  EXPECT_EQ(r["output"][0]["status"], "completed");
  const json& call = r["output"][1];
  EXPECT_EQ(call["type"], "function_call");
  EXPECT_TRUE(call["id"].get<std::string>().starts_with("fc_"));
  EXPECT_TRUE(call["call_id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(call["name"], "w");
  EXPECT_EQ(json::parse(call["arguments"].get<std::string>()), json({{"c", "O"}}));
  EXPECT_EQ(call["status"], "completed");
  EXPECT_EQ(r["output"][2]["status"], "incomplete") << r;

  ResponsesStream s({"resp_6", 1, "m"}, g);
  ChoiceState sc;
  std::string args;
  std::vector<std::string> names;
  for (size_t i = 0; i < text.size(); i += 7) {
    RequestOutput out;
    out.text = text.substr(i, 7);
    for (const json& e : s.push(sc, out)) {
      names.push_back(e["type"]);
      if (e["type"] == "response.function_call_arguments.delta" && e["output_index"] == 1)
        args += e["delta"].get<std::string>();
    }
  }
  EXPECT_EQ(json::parse(args), json({{"c", "O"}}));
  EXPECT_NE(std::find(names.begin(), names.end(), "response.function_call_arguments.done"), names.end());
  // As chat again: one assistant message with its text and the call made (not the one cut off).
  const ojson m = output_as_chat(r["output"]);
  EXPECT_EQ(m["content"], "Let me check.");
  EXPECT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["id"], call["call_id"]);
}

TEST(ResponsesOutput, StoreKeepsConversationUnlessStoreFalse) {
  ResponseStore store;
  const GenerationRequest g = responses_req(R"({"input":"Hi","instructions":"Rules."})");
  ChoiceState c;
  c.text = "Hello";
  c.finish = FinishReason::stop;
  const json r = responses_response({"resp_4", 1, "m"}, g, c, Usage{});
  store_response(store, g, r);
  const auto got = store.get("resp_4");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->response, r);
  EXPECT_EQ(got->conversation,
            ojson::parse(R"([{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"}])"));
  store_response(store, responses_req(R"({"input":"Hi","store":false})"), json{{"id", "resp_5"}, {"output", {}}});
  EXPECT_FALSE(store.get("resp_5"));
}

TEST(ResponseStore, BoundedByCountAndBytesLeastRecentlyUsedFirst) {
  ResponseStore store(3, 1000);
  for (const char* id : {"a", "b", "c"}) store.put(id, StoredResponse{.response = json{{"id", id}}, .bytes = 100});
  ASSERT_TRUE(store.get("a"));  // a is now the most recently used
  store.put("d", StoredResponse{.response = json{{"id", "d"}}, .bytes = 100});
  EXPECT_FALSE(store.get("b"));
  EXPECT_TRUE(store.get("a") && store.get("c") && store.get("d"));
  store.put("big", StoredResponse{.bytes = 850});  // over the bytes: the oldest go
  EXPECT_EQ(store.size(), 2u);
  EXPECT_TRUE(store.get("big"));
  store.put("huge", StoredResponse{.bytes = 5000});  // alone above the bound: not kept
  EXPECT_FALSE(store.get("huge"));
  EXPECT_TRUE(store.erase("big"));
  EXPECT_FALSE(store.erase("big"));
}

}  // namespace
}  // namespace pagoda::server
