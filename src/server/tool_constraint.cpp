#include "server/tool_constraint.h"

#include "server/api_error.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

ojson parameters_of(const ojson& tool) {
  const ojson& f = tool["function"];
  if (f.contains("parameters") && f["parameters"].is_object()) return f["parameters"];
  return {{"type", "object"}};
}

}  // namespace

ojson forced_tool_schema(const ToolRequest& r) {
  if (r.choice == ToolChoice::named) {
    for (const auto& t : r.tools)
      if (t["function"]["name"] == r.function) return parameters_of(t);
    bad_request("tool_choice", "'tool_choice' names the function '{}', which is not in 'tools'", r.function);
  }
  ojson any = ojson::array();
  for (const auto& t : r.tools)
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

std::shared_ptr<const grammar::MaskTables> forced_tool_constraint(const ToolRequest& r, const GrammarSupport& support) {
  if (r.choice != ToolChoice::required && r.choice != ToolChoice::named) return nullptr;
  if (!support.cache || !support.vocab)
    bad_request("tool_choice", "a forced 'tool_choice' needs constrained decoding, which this model lacks");
  grammar::ConstraintSpec spec;
  spec.kind = grammar::ConstraintSpec::Kind::json_schema;
  spec.strict = false;  // unsupported keywords in a tool's schema are ignored, as for guided_json
  spec.body = forced_tool_schema(r).dump();
  try {
    return support.cache->tables(spec, support.vocab);
  } catch (const Error& e) {
    bad_request("tools", "a tool's 'parameters' is not a usable JSON Schema: {}", e.what());
  }
}

}  // namespace pagoda::server
