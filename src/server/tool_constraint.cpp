#include "server/tool_constraint.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "grammar/cache.h"
#include "server/api_error.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

ojson parameters_of(const ojson& tool) {
  const ojson& f = tool["function"];
  if (f.contains("parameters") && f["parameters"].is_object()) return f["parameters"];
  return {{"type", "object"}};
}

// The tools a forced choice may call: the named one, or all for "required".
std::vector<ojson> forced_tools(const ToolRequest& r) {
  std::vector<ojson> out;
  for (const auto& t : r.tools)
    if (r.choice != ToolChoice::named || t["function"]["name"] == r.function) out.push_back(t);
  if (out.empty())
    bad_request("tool_choice", "'tool_choice' names the function '{}', which is not in 'tools'", r.function);
  return out;
}

// The tagged grammar's body (grammar/frontends.h) for the format's markup.
ojson tagged_body(const ToolRequest& r, const toolcall::CallMarkup& m) {
  ojson items = ojson::array();
  for (const auto& t : forced_tools(r)) {
    const ojson& name = t["function"]["name"];
    items.push_back({{"begin", m.head_before + (m.quote_name ? name.dump() : name.get<std::string>()) + m.head_after},
                     {"schema", parameters_of(t)},
                     {"end", m.tail}});
  }
  ojson body = {{"begin", m.begin}, {"separator", m.separator}, {"end", m.end}, {"items", std::move(items)}};
  if (r.choice == ToolChoice::named || !r.parallel) body["max"] = 1;
  return body;
}

}  // namespace

bool forced_in_model_format(const ToolRequest& r) {
  const auto m = r.parser ? toolcall::call_markup(*r.parser) : std::nullopt;
  if (!m) return false;
  // A bare name ends at a newline or markup (deepseek_v3), or at a space or
  // anything but printable ASCII (harmony's header): names that hold one keep the plain form.
  if (!m->quote_name)
    for (const auto& t : r.tools) {
      const std::string& name = t["function"]["name"].get_ref<const std::string&>();
      if (name.find_first_of("\n<{`") != std::string::npos) return false;
      if (*r.parser == toolcall::Format::harmony &&
          std::any_of(name.begin(), name.end(), [](char c) { return c <= 0x20 || c > 0x7e; }))
        return false;
    }
  return true;
}

ojson forced_tool_schema(const ToolRequest& r) {
  const std::vector<ojson> tools = forced_tools(r);
  if (r.choice == ToolChoice::named) return parameters_of(tools.front());
  ojson any = ojson::array();
  for (const auto& t : tools)
    any.push_back(
        {{"type", "object"},
         {"properties",
          {{"name", {{"type", "string"}, {"enum", {t["function"]["name"]}}}}, {"parameters", parameters_of(t)}}},
         {"required", {"name", "parameters"}}});
  ojson schema = {{"type", "array"}, {"minItems", 1}};
  if (!r.parallel) schema["maxItems"] = 1;
  schema["items"] = {{"anyOf", std::move(any)}};
  return schema;
}

namespace {

// A tool with "strict": true gets every keyword of its parameters enforced or a 400 naming the one that cannot be.
void check_strict_tools(const ToolRequest& r, grammar::GrammarCache& cache) {
  for (const auto& t : forced_tools(r)) {
    const ojson& f = t["function"];
    if (!f.contains("strict") || f["strict"] != true) continue;
    try {
      cache.compile({grammar::ConstraintSpec::Kind::json_schema, parameters_of(t).dump(), true, false});
    } catch (const Error& e) {
      bad_request("tools", "the strict tool '{}': its 'parameters' cannot be enforced: {}",
                  f["name"].get<std::string>(), e.what());
    }
  }
}

}  // namespace

grammar::ConstraintSpec forced_tool_spec(const ToolRequest& r) {
  grammar::ConstraintSpec spec;
  // The combined grammar is lenient: strict tools were checked one by one (check_strict_tools);
  // what a non-strict tool's schema cannot enforce is ignored and logged, as for guided_json.
  spec.strict = false;
  if (forced_in_model_format(r)) {
    spec.kind = grammar::ConstraintSpec::Kind::tagged;
    spec.body = tagged_body(r, *toolcall::call_markup(*r.parser)).dump();
  } else {
    spec.kind = grammar::ConstraintSpec::Kind::json_schema;
    spec.body = forced_tool_schema(r).dump();
  }
  return spec;
}

std::shared_ptr<const grammar::MaskTables> forced_tool_constraint(const ToolRequest& r, const GrammarSupport& support) {
  if (r.choice != ToolChoice::required && r.choice != ToolChoice::named) return nullptr;
  if (!support.cache || !support.vocab)
    bad_request("tool_choice", "a forced 'tool_choice' needs constrained decoding, which this model lacks");
  check_strict_tools(r, *support.cache);
  const grammar::ConstraintSpec spec = forced_tool_spec(r);
  std::shared_ptr<const grammar::MaskTables> tables;
  try {
    tables = support.cache->tables(spec, support.vocab);
  } catch (const Error& e) {
    bad_request("tools", "a tool's 'parameters' is not a usable JSON Schema: {}", e.what());
  }
  if (const auto& ignored = tables->compiled().ignored_keywords; !ignored.empty())
    spdlog::info("tools: ignored unsupported JSON Schema keywords (tool not strict): {}", fmt::join(ignored, ", "));
  return tables;
}

}  // namespace pagoda::server
