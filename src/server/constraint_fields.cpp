#include "server/constraint_fields.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "util/error.h"

namespace pagoda::server {
namespace {

using Kind = grammar::ConstraintSpec::Kind;

// One constraint as found: the spec and where it came from.
struct Found {
  grammar::ConstraintSpec spec;
  std::string param;              // the field, for errors ("structured_outputs.json")
  std::vector<std::string> path;  // of a JSON Schema object in the body, to re-read in order
};

Found make(Kind kind, std::string body, std::string param) {
  Found f;
  f.spec.kind = kind;
  f.spec.body = std::move(body);
  f.param = std::move(param);
  return f;
}

// A schema given as an object (its path noted) or as JSON text.
Found schema_of(const json& v, const std::string& param, std::vector<std::string> path, bool strict) {
  Found f = make(Kind::json_schema, "", param);
  f.spec.strict = strict;
  if (v.is_string()) {
    f.spec.body = v.get<std::string>();
  } else if (v.is_object() || v.is_boolean()) {
    f.spec.body = v.dump();
    f.path = std::move(path);
  } else {
    bad_request(param, "'{}' must be a JSON Schema (an object or its JSON text), got {}", param, v.type_name());
  }
  return f;
}

std::string string_of(const json& v, const std::string& param) {
  if (!v.is_string()) bad_request(param, "'{}' must be a string, got {}", param, v.type_name());
  return v.get<std::string>();
}

Found choice_of(const json& v, const std::string& param) {
  if (!v.is_array() || v.empty()) bad_request(param, "'{}' must be a non-empty array of strings", param);
  for (const auto& c : v)
    if (!c.is_string()) bad_request(param, "'{}' must be a non-empty array of strings", param);
  return make(Kind::choice, v.dump(), param);
}

std::optional<Found> from_response_format(const json& body) {
  const json* rf = field(body, "response_format");
  if (!rf) return std::nullopt;
  if (!rf->is_object()) bad_request("response_format", "'response_format' must be an object");
  const std::string type = opt_string(*rf, "type").value_or("text");
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    if (const json* s = field(*rf, "schema"))  // llama.cpp's spelling
      return schema_of(*s, "response_format.schema", {"response_format", "schema"}, false);
    return make(Kind::json_object, "", "response_format");
  }
  if (type != "json_schema")
    bad_request("response_format", "response_format.type must be 'text', 'json_object' or 'json_schema', got '{}'",
                type);
  const json* js = field(*rf, "json_schema");
  if (!js || !js->is_object())
    bad_request("response_format.json_schema", "response_format of type 'json_schema' needs a 'json_schema' object");
  const bool strict = opt_bool(*js, "strict").value_or(false);
  if (const json* s = field(*js, "schema"))
    return schema_of(*s, "response_format.json_schema.schema", {"response_format", "json_schema", "schema"}, strict);
  return make(Kind::json_object, "", "response_format");  // no schema: any JSON object
}

// vLLM's structured_outputs object: exactly one of its constraint keys.
std::optional<Found> from_structured_outputs(const json& body) {
  const json* so = field(body, "structured_outputs");
  if (!so) return std::nullopt;
  if (!so->is_object()) bad_request("structured_outputs", "'structured_outputs' must be an object");
  std::vector<Found> found;
  if (const json* v = field(*so, "json"))
    found.push_back(schema_of(*v, "structured_outputs.json", {"structured_outputs", "json"}, false));
  if (const json* v = field(*so, "regex"))
    found.push_back(make(Kind::regex, string_of(*v, "structured_outputs.regex"), "structured_outputs.regex"));
  if (const json* v = field(*so, "choice")) found.push_back(choice_of(*v, "structured_outputs.choice"));
  if (const json* v = field(*so, "grammar"))
    found.push_back(make(Kind::gbnf, string_of(*v, "structured_outputs.grammar"), "structured_outputs.grammar"));
  if (opt_bool(*so, "json_object").value_or(false))
    found.push_back(make(Kind::json_object, "", "structured_outputs.json_object"));
  if (found.size() > 1)
    bad_request(found[1].param, "only one constraint may be given; got '{}' and '{}'", found[0].param, found[1].param);
  if (found.empty()) return std::nullopt;
  return found[0];
}

std::vector<Found> find_all(const json& body) {
  std::vector<Found> found;
  if (auto f = from_response_format(body)) found.push_back(std::move(*f));
  if (auto f = from_structured_outputs(body)) found.push_back(std::move(*f));
  if (const json* v = field(body, "guided_json")) found.push_back(schema_of(*v, "guided_json", {"guided_json"}, false));
  if (const json* v = field(body, "guided_regex"))
    found.push_back(make(Kind::regex, string_of(*v, "guided_regex"), "guided_regex"));
  if (const json* v = field(body, "guided_choice")) found.push_back(choice_of(*v, "guided_choice"));
  if (const json* v = field(body, "guided_grammar"))
    found.push_back(make(Kind::gbnf, string_of(*v, "guided_grammar"), "guided_grammar"));
  if (const json* v = field(body, "grammar")) {
    const std::string g = string_of(*v, "grammar");
    if (!g.empty()) found.push_back(make(Kind::gbnf, g, "grammar"));  // llama.cpp sends "" for none
  }
  if (const json* v = field(body, "json_schema")) found.push_back(schema_of(*v, "json_schema", {"json_schema"}, false));
  return found;
}

// The schema object's text in the order the client wrote it.
void keep_property_order(Found& f, std::string_view raw_body) {
  if (f.path.empty() || raw_body.empty()) return;
  const auto doc = nlohmann::ordered_json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return;
  const nlohmann::ordered_json* at = &doc;
  for (const auto& key : f.path) {
    if (!at->is_object() || !at->contains(key)) return;
    at = &(*at)[key];
  }
  f.spec.body = at->dump();
}

}  // namespace

std::shared_ptr<const grammar::MaskTables> parse_constraint(const json& body, const GrammarSupport& support,
                                                            std::string_view raw_body) {
  std::vector<Found> found = find_all(body);
  if (found.empty()) return nullptr;
  if (found.size() > 1)
    bad_request(found[1].param, "only one output constraint may be given; got '{}' and '{}'", found[0].param,
                found[1].param);
  Found& f = found[0];
  if (!support.cache || !support.vocab)
    bad_request(f.param, "'{}': constrained decoding is not available for this model", f.param);
  keep_property_order(f, raw_body);
  std::shared_ptr<const grammar::MaskTables> tables;
  try {
    tables = support.cache->tables(f.spec, support.vocab);
  } catch (const Error& e) {
    bad_request(f.param, "'{}' is not a valid constraint: {}", f.param, e.what());
  }
  if (const auto& ignored = tables->compiled().ignored_keywords; !ignored.empty())
    spdlog::info("{}: ignored unsupported JSON Schema keywords (not strict): {}", f.param, fmt::join(ignored, ", "));
  return tables;
}

}  // namespace pagoda::server
