#include "server/responses_output.h"

#include <algorithm>
#include <random>

#include "server/responses_request.h"

namespace pagoda::server {

std::string responses_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}{:016x}", prefix, rng(), rng());
}

json responses_usage(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json response_object(const ResponseIdentity& id, const GenerationRequest& req, const std::string& status, json output,
                     const json& usage) {
  json r = {{"id", id.id},
            {"object", "response"},
            {"created_at", id.created},
            {"status", status},
            {"background", false},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"max_tool_calls", nullptr},
            {"model", id.model},
            {"output", std::move(output)},
            {"service_tier", "default"},
            {"usage", usage}};
  if (status == "incomplete") r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  if (req.responses)
    for (const auto& [k, v] : req.responses->echo.items()) r[k] = v;
  return r;
}

nlohmann::ordered_json output_as_chat(const json& output) {
  nlohmann::ordered_json m = {{"role", "assistant"}, {"content", ""}};
  std::string text, reasoning;
  for (const json& item : output) {
    const std::string type = item["type"].get<std::string>();
    if (type == "reasoning") {
      for (const json& part : item["content"]) reasoning += part["text"].get<std::string>();
    } else if (type == "message") {
      for (const json& part : item["content"]) text += part["text"].get<std::string>();
    } else if (type == "function_call" && item["status"] == "completed") {  // a call cut off was not made
      if (!m.contains("tool_calls")) m["tool_calls"] = nlohmann::ordered_json::array();
      m["tool_calls"].push_back({{"id", item["call_id"]},
                                 {"type", "function"},
                                 {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
    }
  }
  m["content"] = text;
  if (!reasoning.empty()) m["reasoning_content"] = reasoning;
  return m;
}

void store_response(ResponseStore& store, const GenerationRequest& req, const json& response) {
  if (!req.responses || !req.responses->store) return;
  // Round trips replace invalid UTF-8 (half a character cut by max_output_tokens): later dumps must not throw.
  StoredResponse s;
  s.response = json::parse(dump(response));
  nlohmann::ordered_json conversation = req.responses->conversation;
  conversation.push_back(output_as_chat(s.response["output"]));
  s.conversation = nlohmann::ordered_json::parse(conversation.dump(-1, ' ', false, json::error_handler_t::replace));
  s.input_items = req.responses->input_items;
  store.put(response["id"].get<std::string>(), std::move(s));
}

json input_items_page(const json& items, bool ascending, size_t limit, const std::string& after) {
  std::vector<const json*> order;
  for (const json& item : items) order.push_back(&item);
  if (!ascending) std::reverse(order.begin(), order.end());
  size_t start = 0;
  if (!after.empty()) {
    const auto it = std::find_if(order.begin(), order.end(), [&](const json* i) { return (*i)["id"] == after; });
    start = it == order.end() ? order.size() : size_t(it - order.begin()) + 1;
  }
  json data = json::array();
  for (size_t i = start; i < order.size() && data.size() < limit; ++i) data.push_back(*order[i]);
  const bool more = start + data.size() < order.size();
  return {{"object", "list"},
          {"data", data},
          {"first_id", data.empty() ? json(nullptr) : data.front()["id"]},
          {"last_id", data.empty() ? json(nullptr) : data.back()["id"]},
          {"has_more", more}};
}

}  // namespace pagoda::server
