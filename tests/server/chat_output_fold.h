// A chat completion's output read back as a client reads it, for the tests of
// the output parsers (harmony_fields_test.cpp, gemma4_output_test.cpp): the
// whole message, and the stream's deltas folded at several piece sizes,
// which must give the same fields.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/tool_fields.h"
#include "server/tool_output.h"

namespace pagoda::server::chat_fold {

using json = nlohmann::json;

struct Message {
  json message;
  json finish;
};

inline Message whole(const ToolRequest& r, const std::string& text, FinishReason why) {
  ChoiceState c;
  c.text = text;
  c.finish = why;
  Message m{{{"role", "assistant"}, {"content", text}}, finish_reason_json(why)};
  tool_message(r, c, m.message, m.finish);
  return m;
}

// The stream's deltas folded as a client folds them, `step` bytes at a time.
inline Message streamed(const ToolRequest& r, const std::string& text, FinishReason why, size_t step) {
  GenerationRequest req;
  req.api = Api::chat;
  req.tools = r;
  ChoiceState c;
  Message m{{{"role", "assistant"}}, nullptr};
  std::string content, reasoning;
  json calls = json::array();
  for (size_t i = 0; i < text.size() || i == 0; i += step) {
    RequestOutput out;
    out.text = text.substr(std::min(i, text.size()), step);
    if (i + step >= text.size()) out.finish = why;
    for (const json& chunk : tool_stream_chunks({"id", 0, "m"}, req, 0, c, out, nullptr)) {
      const json& ch = chunk["choices"][0];
      const json& d = ch["delta"];
      if (!ch["finish_reason"].is_null()) m.finish = ch["finish_reason"];
      if (d.contains("reasoning_content")) {
        EXPECT_EQ(d["reasoning_content"], d["reasoning"]);
        EXPECT_EQ(d.size(), 2u) << d;  // reasoning has deltas of its own
        reasoning += d["reasoning_content"].get<std::string>();
      }
      if (d.contains("content")) content += d["content"].get<std::string>();
      if (d.contains("tool_calls")) {
        const json& t = d["tool_calls"][0];
        if (t.contains("id"))
          calls.push_back({{"id", t["id"]}, {"type", t["type"]}, {"function", t["function"]}});
        else
          calls.back()["function"]["arguments"] =
              calls.back()["function"]["arguments"].get<std::string>() + t["function"]["arguments"].get<std::string>();
      }
    }
  }
  m.message["content"] = content.empty() ? json(nullptr) : json(content);
  m.message["reasoning_content"] = reasoning.empty() ? json(nullptr) : json(reasoning);
  if (!calls.empty()) m.message["tool_calls"] = calls;
  return m;
}

// Whole and streamed at several piece sizes: the same fields.
inline void expect_message(const ToolRequest& r, const std::string& text, FinishReason why, const json& content,
                           const json& reasoning, const std::vector<std::string>& call_args, const json& finish) {
  SCOPED_TRACE(text);
  const Message w = whole(r, text, why);
  EXPECT_EQ(w.message["content"], content);
  EXPECT_EQ(w.message["reasoning_content"], reasoning);
  EXPECT_EQ(w.message["reasoning"], reasoning);
  EXPECT_EQ(w.finish, finish);
  const json none = json::array();
  const json& calls = w.message.contains("tool_calls") ? w.message["tool_calls"] : none;
  ASSERT_EQ(calls.size(), call_args.size());
  for (size_t i = 0; i < call_args.size(); ++i) {
    EXPECT_EQ(calls[i]["type"], "function");
    EXPECT_EQ(calls[i]["function"]["name"], "get_weather");
    EXPECT_EQ(calls[i]["function"]["arguments"], call_args[i]);
  }
  for (size_t step : {1, 3, 7, 64}) {
    const Message s = streamed(r, text, why, step);
    EXPECT_EQ(s.message["content"], content) << step;
    EXPECT_EQ(s.message["reasoning_content"], reasoning) << step;
    EXPECT_EQ(s.finish, finish) << step;
    const json& scalls = s.message.contains("tool_calls") ? s.message["tool_calls"] : none;
    ASSERT_EQ(scalls.size(), calls.size()) << step;
    for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(scalls[i]["function"], calls[i]["function"]) << step;
  }
}

}  // namespace pagoda::server::chat_fold
