// The built-in families' tool layouts (chat_template.h, tool_layouts.h):
// chatml and llama3 render the tool conversations of conversations.json byte
// for byte as the real Qwen2.5 and Llama 3.1 templates do through our Jinja
// engine; the other families render the generic layout (golden strings).
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "chat/template_source.h"
#include "oracle.h"
#include "testing/shared_data.h"
#include "util/error.h"

namespace pagoda {
namespace {

using Json = nlohmann::ordered_json;

std::vector<Json> tool_conversations() {
  std::vector<Json> out;
  for (const Json& c : Json::parse(testing::read_file(testing::chat_tests_dir() + "/conversations.json")))
    if (c.contains("tools")) out.push_back(c);
  return out;
}

std::string real(const std::string& file, const Json& conv, const RenderOptions& o) {
  const jinja::Template t(testing::read_file(testing::chat_tests_dir() + "/templates/" + file));
  return render_jinja_chat(t, {conv["messages"], conv["tools"], o.add_generation_prompt, nullptr}, o);
}

std::string builtin(ChatTemplate t, const Json& conv, const RenderOptions& o) {
  return render_chat(t, chat_messages_from_json(conv["messages"]), o, conv["tools"]);
}

TEST(BuiltinTools, ChatmlIsQwen25sToolLayout) {
  const auto convs = tool_conversations();
  ASSERT_GE(convs.size(), 3u);
  for (const Json& conv : convs)
    for (bool gen : {true, false}) {
      SCOPED_TRACE(conv["name"].get<std::string>() + (gen ? " +gen" : ""));
      const RenderOptions o{"", "<|im_end|>", gen};
      std::string want = real("Qwen--Qwen2.5-7B-Instruct.jinja", conv, o);
      // Without a system message Qwen2.5 adds its default one; the built-in does not.
      if (conv["messages"][0]["role"] != "system") {
        const std::string qwen = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n";
        const size_t at = want.find(qwen);
        ASSERT_NE(at, std::string::npos);
        want.erase(at, qwen.size());
      }
      EXPECT_EQ(builtin(ChatTemplate::chatml, conv, o), want);
    }
}

TEST(BuiltinTools, Llama3IsLlama31sJsonToolCalling) {
  for (const Json& conv : tool_conversations())
    for (bool gen : {true, false}) {
      SCOPED_TRACE(conv["name"].get<std::string>() + (gen ? " +gen" : ""));
      const RenderOptions o{"<|begin_of_text|>", "<|eot_id|>", gen};
      EXPECT_EQ(builtin(ChatTemplate::llama3, conv, o), real("meta-llama--Llama-3.1-8B-Instruct.jinja", conv, o));
    }
}

// What Llama 3.1's template raises, the built-in raises.
TEST(BuiltinTools, Llama3RefusesWhatTheTemplateRefuses) {
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  const ChatMessage two_calls{"assistant", "", {{"f", Json::object()}, {"f", Json::object()}}};
  try {
    render_chat(ChatTemplate::llama3, {{"user", "hi"}, two_calls}, {}, tools);
    ADD_FAILURE() << "rendered two calls in one message";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "This model only supports single tool-calls at once!");
  }
  EXPECT_THROW(render_chat(ChatTemplate::llama3, {{"system", "s"}}, {}, tools), InvalidArgument);
}

const Json kTools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters":
    {"type": "object", "properties": {"city": {"type": "string"}}}}}])");

// The generic layout's instruction for kTools, as documented in tool_layouts.h.
const std::string kInstruction =
    "# Tools\n\nYou may call the functions below, given as JSON, one a line:\n<tools>\n"
    R"({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": )"
    R"({"city": {"type": "string"}}}}})"
    "\n</tools>\n\nTo call one, reply with a JSON object holding its name and arguments in <tool_call></tool_call> "
    "tags, one call per pair of tags:\n"
    R"(<tool_call>{"name": "function_name", "arguments": {"argument": "value"}}</tool_call>)"
    "\nResults come back in <tool_response></tool_response> tags.";
const std::string kCall = R"(<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>)";
const std::string kResults = "<tool_response>\n21 C\n</tool_response>\n<tool_response>\nsunny\n</tool_response>";

// A question, a call, and two results (one user turn, so turns still alternate).
std::vector<ChatMessage> round_trip() {
  return {{"user", "Weather in Paris?"},
          {"assistant", "", {{"get_weather", Json{{"city", "Paris"}}}}},
          {"tool", "21 C"},
          {"tool", "sunny"}};
}

TEST(BuiltinTools, GenericLayoutPerFamily) {
  const RenderOptions o{"<s>", "</s>", true};
  const std::string q = "Weather in Paris?";
  const auto render = [&](ChatTemplate t) { return render_chat(t, round_trip(), o, kTools); };
  EXPECT_EQ(render(ChatTemplate::mistral),
            "<s>[INST] " + kInstruction + "\n\n" + q + " [/INST]" + kCall + "</s>[INST] " + kResults + " [/INST]");
  EXPECT_EQ(render(ChatTemplate::llama2), "<s>[INST] <<SYS>>\n" + kInstruction + "\n<</SYS>>\n\n" + q + " [/INST] " +
                                              kCall + " </s><s>[INST] " + kResults + " [/INST]");
  EXPECT_EQ(render(ChatTemplate::zephyr), "<|system|>\n" + kInstruction + "</s>\n<|user|>\n" + q +
                                              "</s>\n<|assistant|>\n" + kCall + "</s>\n<|user|>\n" + kResults +
                                              "</s>\n<|assistant|>\n");
  EXPECT_EQ(render(ChatTemplate::gemma),
            "<s><start_of_turn>user\n" + kInstruction + "\n\n" + q + "<end_of_turn>\n<start_of_turn>model\n" + kCall +
                "<end_of_turn>\n<start_of_turn>user\n" + kResults + "<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(render(ChatTemplate::phi3), "<s><|user|>\n" + kInstruction + "\n\n" + q + "<|end|>\n<|assistant|>\n" +
                                            kCall + "<|end|>\n<|user|>\n" + kResults + "<|end|>\n<|assistant|>\n");
  EXPECT_EQ(render(ChatTemplate::plain), kInstruction + "\n" + q + "\n" + kCall + "\n" + kResults);
}

// A system message keeps its text and gains the instruction; text before a
// call stays; without tools, calls and results still render as text.
TEST(BuiltinTools, GenericLayoutSystemContentAndNoTools) {
  const RenderOptions o{"<s>", "</s>", false};
  const std::vector<ChatMessage> chat = {
      {"system", "Be brief."}, {"user", "Q"}, {"assistant", "Checking.", {{"get_weather", Json{{"city", "Paris"}}}}}};
  EXPECT_EQ(render_chat(ChatTemplate::zephyr, chat, o, kTools),
            "<|system|>\nBe brief.\n\n" + kInstruction + "</s>\n<|user|>\nQ</s>\n<|assistant|>\nChecking.\n" + kCall +
                "</s>\n");
  EXPECT_EQ(render_chat(ChatTemplate::plain, round_trip(), o), "Weather in Paris?\n" + kCall + "\n" + kResults);
  EXPECT_EQ(render_chat(ChatTemplate::plain, {{"user", "Q"}}, o, Json::array()), "Q");  // [] is no tools
}

// OpenAI messages: arguments as JSON text become the object; content parts join.
TEST(BuiltinTools, MessagesFromOpenAiJson) {
  const auto ms = chat_messages_from_json(Json::parse(R"([
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function",
      "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
    {"role": "tool", "tool_call_id": "1", "content": "ok"}])"));
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_EQ(ms[0].content, "ab");
  ASSERT_EQ(ms[1].tool_calls.size(), 1u);
  EXPECT_EQ(ms[1].tool_calls[0].name, "f");
  EXPECT_EQ(ms[1].tool_calls[0].arguments, Json({{"x", 1}}));
  EXPECT_EQ(ms[2].role, "tool");
  EXPECT_THROW(chat_messages_from_json(Json::parse(R"([{"role": "assistant", "tool_calls": [{}]}])")), InvalidArgument);
  EXPECT_THROW(chat_messages_from_json(Json::parse(R"([{"content": "x"}])")), InvalidArgument);
}

TEST(BuiltinTools, ParserPerFamily) {
  EXPECT_EQ(chat_template_tool_format(ChatTemplate::llama3), "llama3_json");
  for (ChatTemplate t : {ChatTemplate::chatml, ChatTemplate::llama2, ChatTemplate::mistral, ChatTemplate::zephyr,
                         ChatTemplate::gemma, ChatTemplate::phi3, ChatTemplate::plain})
    EXPECT_EQ(chat_template_tool_format(t), "hermes");
}

}  // namespace
}  // namespace pagoda
