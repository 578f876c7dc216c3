#include "server/tool_results_fold.h"

#include <string>

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

bool has_role(const ojson& m, std::string_view role) {
  if (!m.is_object()) return false;
  const auto it = m.find("role");
  return it != m.end() && it->is_string() && it->get_ref<const std::string&>() == role;
}

bool has_calls(const ojson& m) {
  const auto it = m.find("tool_calls");
  return it != m.end() && it->is_array() && !it->empty();
}

bool has_content(const ojson& m) {
  const auto it = m.find("content");
  if (it == m.end()) return false;
  return (it->is_string() && !it->get_ref<const std::string&>().empty()) || (it->is_array() && !it->empty());
}

std::string string_at(const ojson& m, const char* key) {
  if (!m.is_object()) return "";
  const auto it = m.find(key);
  return it != m.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string call_name(const ojson& call) {
  if (!call.is_object()) return "";
  const auto f = call.find("function");
  return f == call.end() ? "" : string_at(*f, "name");
}

// The name of the call `result` answers: by id, else by position.
std::string result_name(const ojson& calls, const ojson& result, size_t position) {
  const std::string id = string_at(result, "tool_call_id");
  for (const ojson& c : calls)
    if (!id.empty() && string_at(c, "id") == id) return call_name(c);
  if (position < calls.size() && !call_name(calls[position]).empty()) return call_name(calls[position]);
  return id;
}

// A result as the template's response: JSON text parsed, other text as it is.
ojson response_of(const ojson& result) {
  const auto it = result.find("content");
  if (it == result.end()) return nullptr;
  if (!it->is_string()) return *it;
  ojson parsed = ojson::parse(it->get_ref<const std::string&>(), nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? *it : parsed;
}

}  // namespace

bool reads_only_tool_responses(std::string_view t) {
  // The current template also pairs `tool` messages by tool_call_id; the
  // earlier ones read tool_responses and never look at a `tool` message.
  return t.find("tool_responses") != std::string_view::npos && t.find("<|tool_response>") != std::string_view::npos &&
         t.find("tool_call_id") == std::string_view::npos;
}

ojson fold_tool_results(const ojson& messages) {
  if (!messages.is_array()) return messages;
  ojson out = ojson::array();
  for (size_t i = 0; i < messages.size();) {
    const ojson& m = messages[i];
    if (!has_role(m, "assistant") || !has_calls(m)) {
      out.push_back(m);
      ++i;
      continue;
    }
    ojson turn = m;  // its content and reasoning stay
    ojson responses = ojson::array();
    for (++i; i < messages.size() && has_role(messages[i], "tool"); ++i)
      responses.push_back({{"name", result_name(m["tool_calls"], messages[i], responses.size())},
                           {"response", response_of(messages[i])}});
    if (!responses.empty()) turn["tool_responses"] = std::move(responses);
    // The answer after the results belongs to the same model turn. Such a
    // template writes a turn's content after its results, so the answer
    // takes the place of any text the call turn had (as llama.cpp's fold does).
    if (i < messages.size() && has_role(messages[i], "assistant") && !has_calls(messages[i]) &&
        has_content(messages[i])) {
      turn["content"] = messages[i]["content"];
      ++i;
    }
    out.push_back(std::move(turn));
  }
  return out;
}

}  // namespace pagoda::server
