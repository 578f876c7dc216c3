// The top-level fields each JSON endpoint knows, in one place, and the two
// checks every request body gets before its endpoint parses it:
//
//   `model`  absent or null: the default (first served) model, as vLLM does;
//            not a string: 400; not one of the served names: 404
//            model_not_found ("The model `X` does not exist.").
//   others   a field no list below names is ignored, as vLLM ignores it:
//            logged once per field name for the life of the process (a
//            bounded set, so a client cannot grow it), and returned so the
//            response can name it in X-Pagoda-Ignored-Fields.
//
// "Known" means the field is part of the endpoint's API (OpenAI's or vLLM's);
// it may still be refused with a 400 by the endpoint when Pagoda cannot honour
// the value given.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace pagoda::server {

enum class Endpoint {
  completions,
  chat,
  tokenize,
  detokenize,
  apply_template,
  messages,
  count_tokens,
  embeddings,
  rerank,
  responses
};

// body[name], or null where the field is absent or JSON null (an optional
// field left out, as OpenAI's and Anthropic's APIs both read null).
inline const nlohmann::ordered_json* present_field(const nlohmann::ordered_json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

// Whether body[name] is the string `value`; a field of another JSON type is
// just "no" (nlohmann's value() would throw a type_error on user input).
inline bool field_is(const nlohmann::ordered_json& body, const char* name, std::string_view value) {
  const nlohmann::ordered_json* f = body.is_object() ? present_field(body, name) : nullptr;
  return f && f->is_string() && f->get_ref<const std::string&>() == value;
}

// An object's string "type" (a content part, an input item, a block), else
// empty: "no such type" for the caller's own 400.
inline std::string type_of(const nlohmann::ordered_json& part) {
  const nlohmann::ordered_json* t = part.is_object() ? present_field(part, "type") : nullptr;
  return t && t->is_string() ? t->get<std::string>() : "";
}

// A translated API's `tools` (Messages, Responses): each entry as
// `one(tool, path)` makes it, the path ("tools.3") naming it in a 400; the
// array must hold objects only.
template <class One>
nlohmann::ordered_json map_tools(const nlohmann::ordered_json& tools, One&& one) {
  if (!tools.is_array()) bad_request("tools", "'tools' must be an array");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = fmt::format("tools.{}", i);
    if (!tools[i].is_object()) bad_request(at, "{} must be an object", at);
    out.push_back(one(tools[i], at));
  }
  return out;
}

// The header that lists a request's ignored fields.
inline constexpr std::string_view kIgnoredFieldsHeader = "X-Pagoda-Ignored-Fields";

// 400 if `model` is not a string, 404 if it names none of `served`.
void check_model(const nlohmann::json& body, const std::vector<std::string>& served);

// The body's unknown top-level fields, sorted by name (empty for a
// non-object body). Logs the ones not logged before.
std::vector<std::string> ignored_fields(const nlohmann::json& body, Endpoint endpoint);

// The header value for ignored field names: at most 32 names, each cut to 64
// bytes, bytes other than visible ASCII (and ',' '%') percent-encoded, so no
// client text can break the header.
std::string ignored_fields_header(const std::vector<std::string>& names);

}  // namespace pagoda::server
