// The tagged front end (frontends.h): JSON values inside literal markup, so a
// forced tool call can be written in the model's own format.
#include <nlohmann/json.hpp>

#include "grammar/frontends.h"
#include "util/error.h"

namespace pagoda::grammar {
namespace {

using json = nlohmann::ordered_json;

[[noreturn]] void bad(std::string_view what) { fail<InvalidArgument>("tagged grammar: {}", what); }

std::string text_of(const json& j, const char* key) {
  if (!j.contains(key)) return "";
  if (!j[key].is_string()) bad(std::string(key) + " must be a string");
  return j[key].get<std::string>();
}

}  // namespace

JsonSchemaGrammar compile_tagged(std::string_view body, const JsonSchemaOptions& options) {
  if (body.size() > options.limits.max_input_bytes)
    fail<InvalidArgument>("tagged grammar of {} bytes exceeds the limit of {}", body.size(),
                          options.limits.max_input_bytes);
  const json spec = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!spec.is_object()) bad("the body must be a JSON object");
  if (!spec.contains("items") || !spec["items"].is_array() || spec["items"].empty())
    bad("items must be a non-empty array");
  uint32_t max = Expr::kUnbounded;
  if (spec.contains("max")) {
    const json& m = spec["max"];
    if (!m.is_number_unsigned() || m.get<uint64_t>() == 0 || m.get<uint64_t>() > options.limits.max_repeat)
      bad("max must be an integer from 1 to " + std::to_string(options.limits.max_repeat));
    max = uint32_t(m.get<uint64_t>());
  }
  GrammarBuilder b(options.limits);
  JsonSchemaGrammar out;
  const uint32_t root = b.rule("root"), item = b.fresh_rule("item");
  std::vector<Expr> alts;
  for (const json& it : spec["items"]) {
    if (!it.is_object() || !it.contains("schema")) bad("each item must be an object with a schema");
    alts.push_back(
        Expr::seq({Expr::literal(text_of(it, "begin")), json_schema_expr(b, it["schema"].dump(), options, out.ignored),
                   Expr::literal(text_of(it, "end"))}));
  }
  b.define(item, Expr::alt(std::move(alts)));
  std::vector<Expr> whole = {Expr::literal(text_of(spec, "begin")), Expr::ref(item)};
  if (max > 1) {
    Expr next = Expr::seq({Expr::literal(text_of(spec, "separator")), Expr::ref(item)});
    whole.push_back(Expr::repeat(std::move(next), 0, max == Expr::kUnbounded ? Expr::kUnbounded : max - 1));
  }
  whole.push_back(Expr::literal(text_of(spec, "end")));
  b.define(root, Expr::seq(std::move(whole)));
  out.grammar = b.finish(root);
  return out;
}

}  // namespace pagoda::grammar
