#include "server/responses_request.h"

#include "server/api_error.h"
#include "server/request_fields.h"
#include "server/responses_output.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& string_field(const ojson& o, const char* name, const std::string& at) {
  const ojson* v = present_field(o, name);
  if (!v || !v->is_string()) bad_request(at + "." + name, "{}.{} must be a string", at, name);
  return *v;
}

// A message's content: a string, or text parts joined. Image, file and audio parts are refused.
std::string content_text(const ojson& c, const std::string& at) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) bad_request(at, "{} must be a string or an array of content parts", at);
  std::string text;
  for (size_t k = 0; k < c.size(); ++k) {
    const std::string part = fmt::format("{}.{}", at, k);
    const std::string type = type_of(c[k]);
    if (type == "input_text" || type == "output_text" || type == "text")
      text += string_field(c[k], "text", part).get<std::string>();
    else if (type == "refusal")
      text += string_field(c[k], "refusal", part).get<std::string>();
    else
      bad_request(part + ".type", "{}.type: content of type \"{}\" is not supported (text only)", part, type);
  }
  return text;
}

// Texts of reasoning parts ({type: reasoning_text | summary_text, text}) joined.
std::string reasoning_text(const ojson* parts, const std::string& at) {
  if (!parts) return "";
  if (!parts->is_array()) bad_request(at, "{} must be an array", at);
  std::string text;
  for (size_t k = 0; k < parts->size(); ++k)
    text += string_field((*parts)[k], "text", fmt::format("{}.{}", at, k)).get<std::string>();
  return text;
}

// The assistant message that a reasoning item, an assistant message or a
// function call joins: the last one while it can take that piece (calls
// always; text and reasoning only before its text and calls), else a new one.
ojson& assistant_turn(ojson& out, std::string_view piece) {
  bool open = !out.empty() && out.back()["role"] == "assistant";
  if (open && piece != "tool_calls")
    open = !out.back().contains("tool_calls") && out.back()["content"] == "" &&
           (piece == "content" || !out.back().contains(std::string(piece)));
  if (!open) out.push_back({{"role", "assistant"}, {"content", ""}});
  return out.back();
}

void translate_item(const ojson& item, size_t i, ojson& out) {
  const std::string at = fmt::format("input.{}", i);
  if (!item.is_object()) bad_request(at, "{} must be an object", at);
  std::string type = type_of(item);
  if (type.empty() && present_field(item, "role")) type = "message";  // an easy input message
  if (type == "message") {
    const ojson* role = present_field(item, "role");
    static const char* const kRoles[] = {"user", "system", "developer", "assistant"};
    if (!role || !role->is_string() ||
        std::none_of(std::begin(kRoles), std::end(kRoles), [&](const char* r) { return *role == r; }))
      bad_request(at + ".role", "{}.role must be \"user\", \"system\", \"developer\" or \"assistant\"", at);
    const ojson* content = present_field(item, "content");
    if (!content) bad_request(at + ".content", "{}.content is required", at);
    std::string text = content_text(*content, at + ".content");
    if (*role != "assistant") return out.push_back({{"role", *role}, {"content", std::move(text)}});
    ojson& turn = assistant_turn(out, "content");
    turn["content"] = std::move(text);
  } else if (type == "reasoning") {
    std::string text = reasoning_text(present_field(item, "content"), at + ".content");
    if (text.empty()) text = reasoning_text(present_field(item, "summary"), at + ".summary");
    if (!text.empty()) assistant_turn(out, "reasoning_content")["reasoning_content"] = std::move(text);
  } else if (type == "function_call") {
    const ojson& id = string_field(item, "call_id", at);
    const ojson& name = string_field(item, "name", at);
    const ojson& args = string_field(item, "arguments", at);
    ojson& turn = assistant_turn(out, "tool_calls");
    if (!turn.contains("tool_calls")) turn["tool_calls"] = ojson::array();
    turn["tool_calls"].push_back(
        {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}});
  } else if (type == "function_call_output") {
    const ojson& id = string_field(item, "call_id", at);
    const ojson* output = present_field(item, "output");
    if (!output) bad_request(at + ".output", "{}.output is required", at);
    out.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", content_text(*output, at + ".output")}});
  } else {
    bad_request(at + ".type", "{}.type: input items of type \"{}\" are not supported", at, type);
  }
}

ojson function_tools(const ojson& tools) {
  return map_tools(tools, [](const ojson& t, const std::string& at) {
    const std::string type = type_of(t);
    if (type != "function")
      bad_request(at + ".type", "{}.type: tool type \"{}\" is not supported (only function tools)", at, type);
    const ojson& name = string_field(t, "name", at);
    if (name.get_ref<const std::string&>().empty()) bad_request(at + ".name", "{}.name must not be empty", at);
    ojson fn = {{"name", name}};
    if (present_field(t, "description")) fn["description"] = string_field(t, "description", at);
    if (const ojson* p = present_field(t, "parameters")) {
      if (!p->is_object()) bad_request(at + ".parameters", "{}.parameters must be an object", at);
      fn["parameters"] = *p;
    }
    if (const ojson* s = present_field(t, "strict")) {
      if (!s->is_boolean()) bad_request(at + ".strict", "{}.strict must be a boolean", at);
      fn["strict"] = *s;
    }
    return ojson{{"type", "function"}, {"function", std::move(fn)}};
  });
}

ojson function_tool_choice(const ojson& c) {
  if (c.is_string()) {
    if (c != "auto" && c != "none" && c != "required")
      bad_request("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or {{\"type\": \"function\"}}");
    return c;
  }
  if (type_of(c) != "function")
    bad_request("tool_choice", "tool_choice: only \"auto\", \"none\", \"required\" or a function is supported");
  return {{"type", "function"}, {"function", {{"name", string_field(c, "name", "tool_choice")}}}};
}

ojson translate_text_format(const ojson& text) {
  if (!text.is_object()) bad_request("text", "'text' must be an object");
  const ojson* f = present_field(text, "format");
  if (!f) return nullptr;
  const std::string type = type_of(*f);
  if (type == "text") return nullptr;
  if (type == "json_object") return {{"type", "json_object"}};
  if (type != "json_schema")
    bad_request("text.format.type", "text.format.type must be \"text\", \"json_object\" or \"json_schema\"");
  ojson js = {{"name", present_field(*f, "name") ? string_field(*f, "name", "text.format") : ojson("response")}};
  const ojson* schema = present_field(*f, "schema");
  if (!schema || !schema->is_object()) bad_request("text.format.schema", "text.format.schema must be an object");
  js["schema"] = *schema;
  if (const ojson* s = present_field(*f, "strict")) {
    if (!s->is_boolean()) bad_request("text.format.strict", "text.format.strict must be a boolean");
    js["strict"] = *s;
  }
  return {{"type", "json_schema"}, {"json_schema", std::move(js)}};
}

void expect_type(const ojson& body, const char* name, bool (ojson::*is)() const noexcept, const char* what) {
  if (const ojson* v = present_field(body, name); v && !(v->*is)()) bad_request(name, "'{}' must be {}", name, what);
}

// An input item as GET /v1/responses/{id}/input_items lists it: with an id,
// a message's content as parts. Called once the item translated (it is well formed).
ojson input_item_record(const ojson& item) {
  ojson r = item;
  std::string type = type_of(item);
  if (type.empty()) r["type"] = type = "message";
  if (type == "message") {
    if (r["content"].is_string())
      r["content"] =
          ojson::array({{{"type", r["role"] == "assistant" ? "output_text" : "input_text"}, {"text", r["content"]}}});
    if (!r.contains("status")) r["status"] = "completed";
  }
  if (!r.contains("id") || !r["id"].is_string()) {
    const char* prefix = type == "message"         ? "msg_"
                         : type == "function_call" ? "fc_"
                         : type == "reasoning"     ? "rs_"
                                                   : "fco_";
    r["id"] = responses_id(prefix);
  }
  return r;
}

// The fields a response object repeats, as given or OpenAI's defaults.
ojson echo_fields(const ojson& body) {
  const auto or_default = [&](const char* name, ojson d) {
    const ojson* v = present_field(body, name);
    return v ? *v : d;
  };
  ojson reasoning = {{"effort", nullptr}, {"summary", nullptr}};
  if (const ojson* re = present_field(body, "reasoning"); re && re->is_object())
    if (const ojson* e = present_field(*re, "effort")) reasoning["effort"] = *e;
  ojson text = or_default("text", ojson::object());
  if (!text.contains("format") || text["format"].is_null()) text["format"] = {{"type", "text"}};
  return {{"instructions", or_default("instructions", nullptr)},
          {"max_output_tokens", or_default("max_output_tokens", nullptr)},
          {"parallel_tool_calls", or_default("parallel_tool_calls", true)},
          {"previous_response_id", or_default("previous_response_id", nullptr)},
          {"reasoning", std::move(reasoning)},
          {"store", or_default("store", true)},
          {"temperature", or_default("temperature", 1.0)},
          {"text", std::move(text)},
          {"tool_choice", or_default("tool_choice", "auto")},
          {"tools", or_default("tools", ojson::array())},
          {"top_p", or_default("top_p", 1.0)},
          {"truncation", or_default("truncation", "disabled")},
          {"user", or_default("user", nullptr)},
          {"metadata", or_default("metadata", ojson::object())}};
}

}  // namespace

ResponsesRequest translate_responses_request(const ojson& body, const PreviousResponse& previous) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object");
  for (const char* name : {"background", "conversation", "prompt"})
    if (const ojson* v = present_field(body, name); v && *v != false)
      bad_request(name, "'{}' is not supported by this server", name);
  expect_type(body, "store", &ojson::is_boolean, "a boolean");
  expect_type(body, "stream", &ojson::is_boolean, "a boolean");
  expect_type(body, "parallel_tool_calls", &ojson::is_boolean, "a boolean");
  expect_type(body, "metadata", &ojson::is_object, "an object");
  expect_type(body, "user", &ojson::is_string, "a string");
  expect_type(body, "instructions", &ojson::is_string, "a string");
  expect_type(body, "previous_response_id", &ojson::is_string, "a string");
  expect_type(body, "include", &ojson::is_array, "an array of strings");
  if (const ojson* inc = present_field(body, "include"))
    for (const auto& x : *inc)
      if (!x.is_string()) bad_request("include", "'include' must be an array of strings");
  if (const ojson* t = present_field(body, "truncation"); t && *t != "auto" && *t != "disabled")
    bad_request("truncation", "'truncation' must be \"auto\" or \"disabled\"");

  ResponsesRequest r;
  ojson& chat = r.chat;
  chat = ojson::object();
  if (const ojson* m = present_field(body, "model")) chat["model"] = *m;
  ojson conversation = ojson::array();
  if (const ojson* p = present_field(body, "previous_response_id")) {
    const auto prev = previous ? previous(p->get<std::string>()) : nullptr;
    if (!prev)
      throw ApiError(400,
                     fmt::format("Previous response with id '{}' not found.", p->get<std::string>().substr(0, 256)),
                     "previous_response_id", "previous_response_not_found");
    conversation = prev->conversation;
  }
  const ojson* input = present_field(body, "input");
  if (!input) bad_request("input", "'input' is required");
  ojson items = ojson::array();
  if (input->is_string()) {
    conversation.push_back({{"role", "user"}, {"content", *input}});
    items.push_back(input_item_record({{"role", "user"}, {"content", *input}}));
  } else if (input->is_array()) {
    for (size_t i = 0; i < input->size(); ++i) {
      translate_item((*input)[i], i, conversation);
      items.push_back(input_item_record((*input)[i]));
    }
  } else {
    bad_request("input", "'input' must be a string or an array of input items");
  }
  ojson messages = ojson::array();
  if (const ojson* ins = present_field(body, "instructions"); ins && !ins->get_ref<const std::string&>().empty())
    messages.push_back({{"role", "system"}, {"content", *ins}});
  for (const auto& m : conversation) messages.push_back(m);
  if (messages.empty()) bad_request("input", "'input' must hold at least one message");
  chat["messages"] = std::move(messages);

  if (const ojson* mt = present_field(body, "max_output_tokens")) {
    if (!mt->is_number_integer() || mt->get<int64_t>() < 1)
      bad_request("max_output_tokens", "'max_output_tokens' must be an integer of at least 1");
    chat["max_tokens"] = *mt;
  }
  for (const char* name : {"temperature", "top_p"})
    if (const ojson* v = present_field(body, name)) {
      if (!v->is_number()) bad_request(name, "'{}' must be a number", name);
      chat[name] = *v;
    }
  if (const ojson* t = present_field(body, "tools"); t && !(t->is_array() && t->empty()))
    chat["tools"] = function_tools(*t);
  if (const ojson* c = present_field(body, "tool_choice")) chat["tool_choice"] = function_tool_choice(*c);
  if (const ojson* p = present_field(body, "parallel_tool_calls")) chat["parallel_tool_calls"] = *p;
  if (const ojson* t = present_field(body, "text"))
    if (ojson rf = translate_text_format(*t); !rf.is_null()) chat["response_format"] = std::move(rf);
  if (const ojson* re = present_field(body, "reasoning")) {
    if (!re->is_object()) bad_request("reasoning", "'reasoning' must be an object");
    // "none" turns thinking off (templates read enable_thinking); the others reach the template as reasoning_effort.
    if (const ojson* e = present_field(*re, "effort"); e && *e == "none")
      chat["chat_template_kwargs"] = {{"enable_thinking", false}};
    else if (e)
      chat["reasoning_effort"] = *e;
  }
  if (const ojson* s = present_field(body, "stream")) chat["stream"] = *s;

  r.context.echo = json::parse(echo_fields(body).dump());
  r.context.conversation = std::move(conversation);
  r.context.input_items = json::parse(items.dump());
  if (const ojson* s = present_field(body, "store")) r.context.store = s->get<bool>();
  return r;
}

std::string responses_field(const std::string& chat_field) {
  if (chat_field == "max_tokens") return "max_output_tokens";
  if (chat_field == "reasoning_effort" || chat_field == "chat_template_kwargs") return "reasoning.effort";
  if (chat_field.starts_with("messages")) return "input";  // the message index is not the item's
  if (chat_field.starts_with("response_format")) return "text.format";
  if (chat_field.starts_with("tool_choice")) return "tool_choice";
  if (chat_field.starts_with("tools.") || chat_field.starts_with("tools[")) {
    std::string f = chat_field;
    if (const size_t p = f.find(".function"); p != std::string::npos) f.erase(p, 9);
    return f;
  }
  return chat_field;
}

GenerationRequest parse_responses_request(const std::string& body, const ModelLimits& model, const ChatPrompt& chat,
                                          const std::vector<std::string>& served, const PreviousResponse& previous) {
  const auto o = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (o.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  ResponsesRequest t = translate_responses_request(o, previous);
  GenerationRequest req = parse_translated_chat(t.chat, model, chat, served, responses_field);
  req.ignored_fields = ignored_fields(json::parse(body), Endpoint::responses);
  req.api = Api::responses;
  req.responses = std::make_shared<const ResponsesContext>(std::move(t.context));
  return req;
}

}  // namespace pagoda::server
