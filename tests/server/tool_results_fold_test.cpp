// Folding tool results into the call turn (server/tool_results_fold.h) for
// templates that read only `tool_responses`: which templates, the folded
// messages (names by id and by position, JSON results parsed, the answer
// after the results joined, everything else unchanged), and a template of
// that kind rendering them.
#include <gtest/gtest.h>

#include <filesystem>

#include "jinja/template.h"
#include "server/tool_results_fold.h"
#include "testing/build_paths.h"
#include "testing/shared_data.h"

namespace pagoda::server {
namespace tool_results_fold_test {  // named: the suite's files share unity batches

using ojson = nlohmann::ordered_json;

std::string fixture(const std::string& name) {
  return testing::read_file((std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/chat/templates" / name).string());
}

// The earlier Gemma 4 templates' way: results only from the turn's own tool_responses.
constexpr std::string_view kOnlyResponses =
    "{%- for m in messages -%}<|turn>{{ m.role }}\n"
    "{%- for c in m.tool_calls or [] %}<|tool_call>call:{{ c.function.name }}{}<tool_call|>{% endfor -%}"
    "{%- for r in m.tool_responses or [] %}<|tool_response>response:{{ r.name }}{{ r.response | tojson }}"
    "<tool_response|>{% endfor -%}"
    "{{ m.content or '' }}<turn|>\n{% endfor %}";

TEST(ToolResultsFold, WhichTemplates) {
  EXPECT_TRUE(reads_only_tool_responses(kOnlyResponses));
  // Gemma 4's current template pairs `tool` messages itself.
  EXPECT_FALSE(reads_only_tool_responses(fixture("google--gemma-4-31B-it.jinja")));
  EXPECT_FALSE(reads_only_tool_responses(fixture("Qwen--Qwen3-0.6B.jinja")));
  EXPECT_FALSE(reads_only_tool_responses(fixture("openai--gpt-oss-120b.jinja")));
}

const ojson kConversation = ojson::parse(R"([
  {"role": "user", "content": "Weather in Paris and Oslo?"},
  {"role": "assistant", "content": "", "reasoning_content": "Two calls.", "tool_calls": [
    {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
    {"id": "b", "type": "function", "function": {"name": "get_time", "arguments": {"city": "Oslo"}}}]},
  {"role": "tool", "tool_call_id": "b", "content": "{\"time\": \"12:00\"}"},
  {"role": "tool", "tool_call_id": "x", "content": "sunny"},
  {"role": "assistant", "content": "Sunny; noon in Oslo."},
  {"role": "user", "content": "Thanks"}])");

TEST(ToolResultsFold, FoldsResultsAndTheAnswerIntoTheCallTurn) {
  const ojson folded = fold_tool_results(kConversation);
  ASSERT_EQ(folded.size(), 3u) << folded.dump();
  EXPECT_EQ(folded[0], kConversation[0]);
  EXPECT_EQ(folded[2], kConversation[5]);
  const ojson& turn = folded[1];
  EXPECT_EQ(turn["role"], "assistant");
  EXPECT_EQ(turn["reasoning_content"], "Two calls.");
  EXPECT_EQ(turn["tool_calls"], kConversation[1]["tool_calls"]);
  EXPECT_EQ(turn["content"], "Sunny; noon in Oslo.");
  // By id (b: get_time), JSON parsed; an unknown id: the call at its position (the second).
  EXPECT_EQ(turn["tool_responses"], ojson::parse(R"([{"name": "get_time", "response": {"time": "12:00"}},
    {"name": "get_time", "response": "sunny"}])"));
}

TEST(ToolResultsFold, LeavesOtherMessagesAlone) {
  // No results yet (the call is the last turn), and a turn with calls after the results.
  const ojson open = ojson(kConversation.begin(), kConversation.begin() + 2);
  EXPECT_EQ(fold_tool_results(open), open);
  ojson two_calls = ojson(kConversation.begin(), kConversation.begin() + 3);
  two_calls.push_back(kConversation[1]);
  const ojson folded = fold_tool_results(two_calls);
  ASSERT_EQ(folded.size(), 3u) << folded.dump();
  EXPECT_FALSE(folded[2].contains("tool_responses"));
  const ojson plain = ojson::parse(R"([{"role": "user", "content": "hi"}, 3, {"role": "tool", "content": "x"}])");
  EXPECT_EQ(fold_tool_results(plain), plain);
  EXPECT_EQ(fold_tool_results(ojson::object()), ojson::object());
  // Calls that are not objects: no name to find, the result keeps its id.
  const ojson odd =
      ojson::parse(R"([{"role": "assistant", "tool_calls": [1]}, {"role": "tool", "tool_call_id": "q"}])");
  EXPECT_EQ(fold_tool_results(odd)[0]["tool_responses"], ojson::parse(R"([{"name": "q", "response": null}])"));
}

TEST(ToolResultsFold, SuchATemplateRendersTheResultsInTheModelsTurn) {
  const jinja::Template t(kOnlyResponses);
  const std::string p = t.render({{"messages", fold_tool_results(kConversation)}});
  EXPECT_NE(p.find("<|turn>assistant<|tool_call>call:get_weather{}<tool_call|><|tool_call>call:get_time{}"
                   "<tool_call|><|tool_response>response:get_time{\"time\": \"12:00\"}<tool_response|>"
                   "<|tool_response>response:get_time\"sunny\"<tool_response|>Sunny; noon in Oslo.<turn|>"),
            std::string::npos)
      << p;
  EXPECT_EQ(p.find("<|turn>tool"), std::string::npos) << p;
}

}  // namespace tool_results_fold_test
}  // namespace pagoda::server
