#include "server/tool_fields.h"

#include "server/api_error.h"
#include "server/request_fields.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

void check_tools(const ojson& tools) {
  if (!tools.is_array()) bad_request("tools", "'tools' must be an array");
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& t = tools[i];
    if (!field_is(t, "type", "function"))
      bad_request("tools", "tools[{}] must be an object with \"type\": \"function\"", i);
    const ojson* f = present_field(t, "function");
    if (!f || !f->is_object()) bad_request("tools", "tools[{}].function must be an object", i);
    const ojson* name = present_field(*f, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
      bad_request("tools", "tools[{}].function.name must be a non-empty string", i);
    if (const ojson* d = present_field(*f, "description"); d && !d->is_string())
      bad_request("tools", "tools[{}].function.description must be a string", i);
    if (const ojson* p = present_field(*f, "parameters"); p && !p->is_object())
      bad_request("tools", "tools[{}].function.parameters must be a JSON Schema object", i);
  }
}

bool has_tool(const ojson& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const auto& t : tools)
    if (t["function"]["name"] == name) return true;
  return false;
}

// An assistant message's tool_calls, checked, with arguments as objects.
void normalize_tool_calls(ojson& m, size_t i) {
  ojson& calls = m["tool_calls"];
  if (!calls.is_array()) bad_request("messages", "messages[{}].tool_calls must be an array", i);
  for (size_t k = 0; k < calls.size(); ++k) {
    ojson& c = calls[k];
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
        !c["function"]["name"].is_string())
      bad_request("messages", "messages[{}].tool_calls[{}] needs function.name", i, k);
    ojson& args = c["function"]["arguments"];
    if (args.is_string()) {
      ojson parsed = ojson::parse(args.get<std::string>(), nullptr, false);
      if (parsed.is_discarded())
        bad_request("messages", "messages[{}].tool_calls[{}].function.arguments is not valid JSON", i, k);
      args = std::move(parsed);
    } else if (args.is_null()) {
      args = ojson::object();
    }
  }
}

// gpt-oss's template reads an assistant turn's chain of thought from
// `thinking` (llama.cpp and vLLM hand it over the same way); OpenAI clients
// send it back as reasoning_content (or vLLM's newer `reasoning`). The
// template refuses content beside thinking in a turn with calls, so there
// the reasoning wins; a null content is left out (the template tests its text).
void harmony_message(ojson& m) {
  if (m["role"] != "assistant") return;
  if (m.contains("content") && m["content"].is_null()) m.erase("content");
  if (m.contains("thinking")) return;
  for (const char* key : {"reasoning_content", "reasoning"}) {
    const auto it = m.find(key);
    if (it == m.end() || !it->is_string()) continue;
    m["thinking"] = *it;
    if (m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty()) m.erase("content");
    return;
  }
}

ojson template_messages(const ojson& body, bool harmony) {
  const ojson* ms = present_field(body, "messages");
  if (!ms) bad_request("messages", "'messages' is required");
  if (!ms->is_array() || ms->empty()) bad_request("messages", "'messages' must be a non-empty array");
  ojson out = *ms;
  for (size_t i = 0; i < out.size(); ++i) {
    ojson& m = out[i];
    if (!m.is_object()) bad_request("messages", "messages[{}] must be an object", i);
    if (!m.contains("role") || !m["role"].is_string()) bad_request("messages", "messages[{}].role must be a string", i);
    std::string role = m["role"].get<std::string>();
    if (role == "developer") m["role"] = role = "system";  // OpenAI's newer name for the system role
    if (m.contains("content") && !m["content"].is_null() && !m["content"].is_string()) {
      if (!m["content"].is_array())
        bad_request("messages", "messages[{}].content must be a string or an array of parts", i);
      std::string text;  // text parts joined: what every template can render
      for (const auto& part : m["content"]) {
        if (!field_is(part, "type", "text") || !part.contains("text") || !part["text"].is_string())
          bad_request("messages", "messages[{}].content: only text parts are supported", i);
        text += part["text"].get<std::string>();
      }
      m["content"] = text;
    }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (role != "assistant") bad_request("messages", "messages[{}]: only assistant messages have tool_calls", i);
      normalize_tool_calls(m, i);
    }
    if (role == "tool" && (!m.contains("tool_call_id") || !m["tool_call_id"].is_string()))
      bad_request("messages", "messages[{}]: a tool message needs a string tool_call_id", i);
    if (harmony) harmony_message(m);
  }
  return out;
}

}  // namespace

ToolRequest parse_tool_request(const ojson& body, std::optional<toolcall::Format> parser) {
  for (const char* old : {"functions", "function_call"})
    if (present_field(body, old)) bad_request(old, "'{}' is deprecated and not supported; use 'tools'", old);
  ToolRequest r;
  if (const ojson* t = present_field(body, "tools")) {
    check_tools(*t);
    if (!t->empty()) r.tools = *t;
  }
  const bool have = !r.tools.is_null();
  r.choice = have ? ToolChoice::automatic : ToolChoice::none;
  if (const ojson* c = present_field(body, "tool_choice")) {
    if (c->is_string()) {
      const std::string s = c->get<std::string>();
      if (s == "none")
        r.choice = ToolChoice::none;
      else if (s == "auto")
        r.choice = ToolChoice::automatic;
      else if (s == "required")
        r.choice = ToolChoice::required;
      else
        bad_request("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a named function");
    } else if (c->is_object()) {
      const ojson* f = present_field(*c, "function");
      if (!field_is(*c, "type", "function") || !f || !f->is_object() || !f->contains("name") ||
          !(*f)["name"].is_string())
        bad_request("tool_choice",
                    "a named 'tool_choice' is {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}");
      r.choice = ToolChoice::named;
      r.function = (*f)["name"].get<std::string>();
      if (!has_tool(r.tools, r.function))
        bad_request("tool_choice", "'tool_choice' names the function '{}', which is not in 'tools'", r.function);
    } else {
      bad_request("tool_choice", "'tool_choice' must be a string or an object");
    }
    if (!have && r.choice != ToolChoice::none)
      bad_request("tool_choice", "'tool_choice' other than \"none\" needs 'tools'");
  }
  if (const ojson* p = present_field(body, "parallel_tool_calls")) {
    if (!p->is_boolean()) bad_request("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    r.parallel = p->get<bool>();
  }
  if (r.choice != ToolChoice::none) r.parser = parser;
  r.harmony = parser == toolcall::Format::harmony;
  return r;
}

ChatRenderRequest parse_render_request(const ojson& body, const ToolRequest& tools, bool& continue_final) {
  ChatRenderRequest r;
  r.messages = template_messages(body, tools.harmony);
  r.tools = tools.tools;
  if (const ojson* t = present_field(body, "chat_template")) {
    if (!t->is_string()) bad_request("chat_template", "'chat_template' must be a string");
    r.template_text = t->get<std::string>();
  }
  if (const ojson* k = present_field(body, "chat_template_kwargs")) {
    if (!k->is_object()) bad_request("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    r.kwargs = *k;
  }
  // OpenAI's reasoning_effort, for the templates that read it (gpt-oss's
  // writes "Reasoning: high" into its system message).
  if (const ojson* e = present_field(body, "reasoning_effort")) {
    if (!e->is_string() || (*e != "low" && *e != "medium" && *e != "high"))
      bad_request("reasoning_effort", "'reasoning_effort' must be \"low\", \"medium\" or \"high\"");
    if (r.kwargs.is_null()) r.kwargs = ojson::object();
    if (!r.kwargs.contains("reasoning_effort")) r.kwargs["reasoning_effort"] = *e;
  }
  const ojson* agp = present_field(body, "add_generation_prompt");
  const ojson* cfm = present_field(body, "continue_final_message");
  if (agp && !agp->is_boolean()) bad_request("add_generation_prompt", "'add_generation_prompt' must be a boolean");
  if (cfm && !cfm->is_boolean()) bad_request("continue_final_message", "'continue_final_message' must be a boolean");
  continue_final = cfm && cfm->get<bool>();
  r.add_generation_prompt = agp ? agp->get<bool>() : !continue_final;
  if (continue_final && r.add_generation_prompt)
    bad_request("continue_final_message", "'continue_final_message' and 'add_generation_prompt' cannot both be true");
  return r;
}

std::string cut_after_final_message(const std::string& rendered, const ojson& messages) {
  const ojson& last = messages.back();
  std::string content;
  if (last.contains("content") && last["content"].is_string()) {
    content = last["content"].get<std::string>();
  } else if (last.contains("content") && last["content"].is_array()) {
    for (const auto& part : last["content"])
      if (field_is(part, "type", "text") && part.contains("text") && part["text"].is_string())
        content += part["text"].get<std::string>();
  }
  size_t at = rendered.rfind(content);
  if (at == std::string::npos) {  // templates that strip contents (as transformers also tries)
    const size_t b = content.find_first_not_of(" \t\r\n"), e = content.find_last_not_of(" \t\r\n");
    content = b == std::string::npos ? "" : content.substr(b, e - b + 1);
    at = rendered.rfind(content);
  }
  if (content.empty() || at == std::string::npos)
    bad_request("continue_final_message",
                "the chat template did not render the final message's content verbatim, so it cannot be continued");
  return rendered.substr(0, at + content.size());
}

}  // namespace pagoda::server
