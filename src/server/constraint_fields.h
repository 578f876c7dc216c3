// The request fields that constrain the output to a grammar, under every
// spelling clients use, compiled to mask tables on the request worker thread
// (never the engine's), through the model's shared GrammarCache:
//
//   OpenAI     response_format {"type": "json_object"} or {"type":
//              "json_schema", "json_schema": {"name", "schema", "strict"}}
//              (also llama.cpp's {"type": "json_object", "schema": {...}});
//              {"type": "text"} is no constraint.
//   vLLM       structured_outputs {json | regex | choice | grammar |
//              json_object: true}, and the older guided_json, guided_regex,
//              guided_choice, guided_grammar.
//   llama.cpp  grammar (GBNF) and json_schema.
//
// JSON Schema is strict (an unsupported keyword is a 400 naming it) only
// when response_format's json_schema.strict is true; elsewhere unsupported
// keywords are ignored and logged. Output whitespace is compact. vLLM's
// `grammar` is read as GBNF. At most one constraint per request: two are a
// 400 naming both fields; a bad schema, regex or grammar is a 400 whose
// param is the field and whose message names the problem.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string_view>

#include "grammar/cache.h"

namespace pagoda::server {

// What compiling needs: the shared cache and the served tokenizer's
// vocabulary. With no cache, any constraint field is a 400.
struct GrammarSupport {
  grammar::GrammarCache* cache = nullptr;
  std::shared_ptr<const grammar::TokenVocab> vocab;
};

// The mask tables the request's constraint compiles to; null when it has
// none. `raw_body` (the body's text, when known) keeps a schema's property
// order, which the parsed `body` sorts.
std::shared_ptr<const grammar::MaskTables> parse_constraint(const nlohmann::json& body, const GrammarSupport& support,
                                                            std::string_view raw_body = {});

}  // namespace pagoda::server
