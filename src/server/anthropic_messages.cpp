#include "server/anthropic_messages.h"

#include "server/api_error.h"
#include "server/request_fields.h"
#include "server/tool_output.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

// A string, or text blocks joined (system, and a tool_result's content).
std::string text_of(const ojson& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) bad_request(where, "{} must be a string or an array of text blocks", where);
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    const ojson* t = type_of(v[i]) == "text" ? present_field(v[i], "text") : nullptr;
    if (!t || !t->is_string())
      bad_request(where, "{}[{}] must be a text block {{\"type\": \"text\", \"text\": ...}}", where, i);
    text += t->get<std::string>();
  }
  return text;
}

// Appends a user or assistant turn. Anthropic combines consecutive turns of
// one role into one; templates that demand alternating roles need that too.
void push_turn(ojson& out, ojson msg) {
  if (out.empty() || out.back()["role"] != msg["role"]) return out.push_back(std::move(msg));
  ojson& last = out.back();
  const std::string a = last["content"].get<std::string>(), b = msg["content"].get<std::string>();
  last["content"] = a.empty() || b.empty() ? a + b : a + "\n\n" + b;
  for (const char* key : {"reasoning_content", "tool_calls"}) {
    if (!msg.contains(key)) continue;
    if (!last.contains(key))
      last[key] = msg[key];
    else if (last[key].is_string())
      last[key] = last[key].get<std::string>() + msg[key].get<std::string>();
    else
      for (auto& c : msg[key]) last[key].push_back(c);
  }
}

// One Anthropic message -> one or more chat messages, in block order: tool
// results become tool messages, the rest of a user turn a user message.
void translate_message(const ojson& m, size_t i, ojson& out) {
  const std::string where = fmt::format("messages.{}", i);
  if (!m.is_object()) bad_request(where, "{} must be an object", where);
  const ojson* role = present_field(m, "role");
  if (!role || !role->is_string() || (*role != "user" && *role != "assistant"))
    bad_request(where + ".role", "{}.role must be \"user\" or \"assistant\"", where);
  const bool assistant = *role == "assistant";
  const ojson* content = present_field(m, "content");
  if (!content) bad_request(where + ".content", "{}.content is required", where);
  if (content->is_string()) {
    push_turn(out, {{"role", *role}, {"content", *content}});
    return;
  }
  if (!content->is_array()) bad_request(where + ".content", "{}.content must be a string or an array of blocks", where);
  std::string text, thinking;
  ojson calls = ojson::array();
  bool pending = false;  // text gathered for a user message not yet written
  auto flush_user = [&] {
    if (pending) push_turn(out, {{"role", "user"}, {"content", text}});
    text.clear();
    pending = false;
  };
  for (size_t k = 0; k < content->size(); ++k) {
    const ojson& b = (*content)[k];
    const std::string at = fmt::format("{}.content.{}", where, k);
    const std::string type = type_of(b);
    if (type == "text") {
      const ojson* t = present_field(b, "text");
      if (!t || !t->is_string()) bad_request(at + ".text", "{}.text must be a string", at);
      text += t->get<std::string>();
      pending = true;
    } else if (type == "tool_use" && assistant) {
      const ojson* id = present_field(b, "id");
      const ojson* name = present_field(b, "name");
      const ojson* input = present_field(b, "input");
      if (!id || !id->is_string()) bad_request(at + ".id", "{}.id must be a string", at);
      if (!name || !name->is_string()) bad_request(at + ".name", "{}.name must be a string", at);
      if (input && !input->is_object()) bad_request(at + ".input", "{}.input must be an object", at);
      calls.push_back({{"id", *id},
                       {"type", "function"},
                       {"function", {{"name", *name}, {"arguments", input ? *input : ojson::object()}}}});
    } else if (type == "tool_result" && !assistant) {
      const ojson* id = present_field(b, "tool_use_id");
      if (!id || !id->is_string()) bad_request(at + ".tool_use_id", "{}.tool_use_id must be a string", at);
      const ojson* c = present_field(b, "content");
      std::string result = c ? text_of(*c, at + ".content") : "";
      if (const ojson* e = present_field(b, "is_error"); e && e->is_boolean() && e->get<bool>())
        result = "Error: " + result;  // the template has no error flag: say it in the text
      flush_user();
      out.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", result}});
    } else if ((type == "thinking" || type == "redacted_thinking") && assistant) {
      if (const ojson* t = present_field(b, "thinking"); t && t->is_string()) thinking += t->get<std::string>();
    } else {
      bad_request(at + ".type", "{}: a {} message cannot hold a block of type \"{}\" here", at,
                  role->get<std::string>(), type);
    }
  }
  if (!assistant) return flush_user();
  ojson msg = {{"role", "assistant"}, {"content", text}};
  if (!thinking.empty()) msg["reasoning_content"] = thinking;
  if (!calls.empty()) msg["tool_calls"] = std::move(calls);
  push_turn(out, std::move(msg));
}

ojson translate_tools(const ojson& tools) {
  return map_tools(tools, [](const ojson& t, const std::string& at) {
    // Anthropic's server tools (web search, bash, ...) carry a versioned type.
    if (const std::string type = type_of(t); !type.empty() && type != "custom")
      bad_request(at + ".type", "{}: tool type \"{}\" is not supported (only client tools)", at, type);
    const ojson* name = present_field(t, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
      bad_request(at + ".name", "{}.name must be a non-empty string", at);
    const ojson* schema = present_field(t, "input_schema");
    if (!schema || !schema->is_object()) bad_request(at + ".input_schema", "{}.input_schema must be an object", at);
    ojson fn = {{"name", *name}};
    if (const ojson* d = present_field(t, "description")) {
      if (!d->is_string()) bad_request(at + ".description", "{}.description must be a string", at);
      fn["description"] = *d;
    }
    fn["parameters"] = *schema;
    return ojson{{"type", "function"}, {"function", std::move(fn)}};
  });
}

void translate_tool_choice(const ojson& c, ojson& chat) {
  const std::string type = type_of(c);
  if (type == "auto")
    chat["tool_choice"] = "auto";
  else if (type == "any")
    chat["tool_choice"] = "required";
  else if (type == "none")
    chat["tool_choice"] = "none";
  else if (type == "tool") {
    const ojson* name = present_field(c, "name");
    if (!name || !name->is_string()) bad_request("tool_choice.name", "tool_choice {{\"type\": \"tool\"}} needs a name");
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
  } else {
    bad_request("tool_choice.type", "tool_choice.type must be \"auto\", \"any\", \"tool\" or \"none\"");
  }
  if (const ojson* p = present_field(c, "disable_parallel_tool_use")) {
    if (!p->is_boolean()) bad_request("tool_choice.disable_parallel_tool_use", "must be a boolean");
    chat["parallel_tool_calls"] = !p->get<bool>();
  }
}

}  // namespace

MessagesRequest translate_messages_request(const ojson& body, bool count_only) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object");
  MessagesRequest r;
  ojson& chat = r.chat;
  chat = ojson::object();
  if (const ojson* m = present_field(body, "model")) chat["model"] = *m;
  if (!count_only) {
    const ojson* mt = present_field(body, "max_tokens");
    if (!mt) bad_request("max_tokens", "max_tokens: Field required");
    if (!mt->is_number_integer() || mt->get<int64_t>() < 1)
      bad_request("max_tokens", "max_tokens: must be an integer of at least 1");
    chat["max_tokens"] = *mt;
  }
  ojson messages = ojson::array();
  if (const ojson* s = present_field(body, "system")) {
    const std::string text = text_of(*s, "system");
    if (!text.empty()) messages.push_back({{"role", "system"}, {"content", text}});
  }
  const ojson* ms = present_field(body, "messages");
  if (!ms) bad_request("messages", "messages: Field required");
  if (!ms->is_array() || ms->empty()) bad_request("messages", "messages: must be a non-empty array");
  for (size_t i = 0; i < ms->size(); ++i) translate_message((*ms)[i], i, messages);
  // A last assistant turn is a prefill: the model continues it (vLLM's continue_final_message).
  if (!messages.empty() && messages.back()["role"] == "assistant" && !messages.back().contains("tool_calls")) {
    chat["add_generation_prompt"] = false;
    chat["continue_final_message"] = true;
  }
  chat["messages"] = std::move(messages);
  if (const ojson* s = present_field(body, "stop_sequences")) {
    if (!s->is_array()) bad_request("stop_sequences", "stop_sequences: must be an array of strings");
    for (const auto& x : *s)
      if (!x.is_string()) bad_request("stop_sequences", "stop_sequences: must be an array of strings");
    if (!s->empty()) chat["stop"] = *s;
  }
  for (const char* name : {"temperature", "top_p", "top_k"})
    if (const ojson* v = present_field(body, name)) {
      if (!v->is_number()) bad_request(name, "{}: must be a number", name);
      chat[name] = *v;
    }
  if (const ojson* t = present_field(body, "tools")) {
    if (!t->empty()) chat["tools"] = translate_tools(*t);
  }
  if (const ojson* c = present_field(body, "tool_choice")) {
    if (!c->is_object()) bad_request("tool_choice", "tool_choice: must be an object with a type");
    translate_tool_choice(*c, chat);
  }
  if (const ojson* t = present_field(body, "thinking")) {
    const std::string type = type_of(*t);
    if (type != "enabled" && type != "disabled")
      bad_request("thinking.type", "thinking.type must be \"enabled\" or \"disabled\"");
    r.thinking = type == "enabled";
    chat["chat_template_kwargs"] = {{"enable_thinking", r.thinking}};
  }
  if (const ojson* s = present_field(body, "mcp_servers"); s && !(s->is_array() && s->empty()))
    bad_request("mcp_servers", "mcp_servers: MCP servers are not supported by this server");
  if (const ojson* s = present_field(body, "stream")) {
    if (!s->is_boolean()) bad_request("stream", "stream: must be a boolean");
    if (!count_only) chat["stream"] = *s;
  }
  return r;
}

std::string anthropic_field(const std::string& chat_field) {
  if (chat_field == "stop") return "stop_sequences";
  if (chat_field == "chat_template_kwargs") return "thinking";
  if (chat_field == "parallel_tool_calls") return "tool_choice.disable_parallel_tool_use";
  return chat_field;
}

GenerationRequest parse_messages_request(const std::string& body, const ModelLimits& model, const ChatPrompt& chat,
                                         const std::vector<std::string>& served) {
  const auto o = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  const MessagesRequest t = translate_messages_request(o);
  GenerationRequest req = parse_translated_chat(t.chat, model, chat, served, anthropic_field);
  req.ignored_fields = ignored_fields(json::parse(body), Endpoint::messages);
  req.api = Api::messages;
  req.thinking = t.thinking;
  return req;
}

json anthropic_error_json(int status, const std::string& message, const std::string& param) {
  const char* type = status == 401                    ? "authentication_error"
                     : status == 403                  ? "permission_error"
                     : status == 404                  ? "not_found_error"
                     : status == 413                  ? "request_too_large"
                     : status == 429                  ? "rate_limit_error"
                     : status == 503 || status == 529 ? "overloaded_error"
                     : status >= 500                  ? "api_error"
                                                      : "invalid_request_error";
  // Anthropic names the field in the message ("max_tokens: Field required").
  const bool named = param.empty() || message.find(param) != std::string::npos;
  return {{"type", "error"}, {"error", {{"type", type}, {"message", named ? message : param + ": " + message}}}};
}

StopInfo anthropic_stop(const ChoiceState& c, bool made_calls) {
  if (c.finish == FinishReason::length) return {"max_tokens", nullptr};
  if (c.stop_reason.is_string()) return {"stop_sequence", c.stop_reason};
  if (made_calls) return {"tool_use", nullptr};
  return {"end_turn", nullptr};
}

json tool_input(const std::string& arguments) {
  json v = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  return v.is_object() ? v : json::object();
}

json anthropic_usage(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens}, {"output_tokens", u.completion_tokens}};
}

std::string anthropic_tool_id(const std::string& id) { return id.starts_with("call_") ? "toolu_" + id.substr(5) : id; }

json messages_response(const ResponseIdentity& id, const GenerationRequest& req, bool thinking, const ChoiceState& c,
                       const Usage& usage) {
  ToolOutput parse(req.tools);
  std::string text, reasoning;
  std::vector<toolcall::ToolCall> calls;
  for (auto step : {parse.push(c.text), parse.finish()}) {
    text += step.content;
    reasoning += step.reasoning;
    toolcall::apply_deltas(calls, step.calls);
  }
  json content = json::array();
  if (thinking && !reasoning.empty())
    content.push_back({{"type", "thinking"}, {"thinking", reasoning}, {"signature", ""}});
  if (!text.empty()) content.push_back({{"type", "text"}, {"text", text}});
  for (const auto& call : calls)
    content.push_back({{"type", "tool_use"},
                       {"id", anthropic_tool_id(call.id)},
                       {"name", call.name},
                       {"input", tool_input(call.arguments)}});
  const StopInfo stop = anthropic_stop(c, !calls.empty());
  return {{"id", id.id},
          {"type", "message"},
          {"role", "assistant"},
          {"model", id.model},
          {"content", std::move(content)},
          {"stop_reason", stop.reason},
          {"stop_sequence", stop.sequence},
          {"usage", anthropic_usage(usage)}};
}

}  // namespace pagoda::server
