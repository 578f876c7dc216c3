#include "server/rerank.h"

#include <algorithm>
#include <numeric>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {
namespace {

constexpr size_t kMaxDocuments = 1024;

void replace_all(std::string& s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::vector<TokenId> rerank_prompt(const std::string& query, const std::string& doc, const ModelLimits& model,
                                   const std::string& tmpl) {
  const Tokenizer& tok = *model.tokenizer;
  // Refused before encoding when no tokenization could fit the context.
  const size_t bytes = query.size() + doc.size() + tmpl.size();
  if (bytes / tok.max_token_bytes() > size_t(model.max_model_len))
    throw ApiError(
        400,
        fmt::format("a query and document of {} bytes exceed the context of {} tokens", bytes, model.max_model_len),
        "documents", "context_length_exceeded");
  std::vector<TokenId> ids;
  if (!tmpl.empty()) {
    std::string prompt = tmpl;
    replace_all(prompt, "{query}", query);
    replace_all(prompt, "{document}", doc);
    ids = tok.encode(prompt, false, /*parse_special=*/true);
  } else {
    const TokenId eos = tok.eos_id() >= 0 ? tok.eos_id() : tok.sep_id();
    const bool add_eos = tok.add_eos_by_default() && eos >= 0;
    if (tok.add_bos_by_default()) ids.push_back(tok.bos_id());
    const auto q = tok.encode(query, false), d = tok.encode(doc, false);
    ids.insert(ids.end(), q.begin(), q.end());
    if (add_eos) ids.push_back(eos);
    if (tok.add_sep_by_default()) ids.push_back(tok.sep_id());
    ids.insert(ids.end(), d.begin(), d.end());
    if (add_eos) ids.push_back(eos);
  }
  if (ids.empty()) bad_request("query", "the query and document are empty");
  if (ids.size() > size_t(model.max_model_len))
    throw ApiError(400,
                   fmt::format("This model's maximum context length is {} tokens. However, a query and document "
                               "have {} tokens.",
                               model.max_model_len, ids.size()),
                   "documents", "context_length_exceeded");
  return ids;
}

}  // namespace

GenerationRequest parse_rerank_request(const json& body, const ModelLimits& model, const std::string& tmpl) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object");
  GenerationRequest g;
  g.api = Api::rerank;
  const auto query = opt_string(body, "query");
  if (!query) bad_request("query", "'query' is required and must be a string");
  const json* docs = field(body, "documents");
  if (!docs || !docs->is_array() || docs->empty())
    bad_request("documents", "'documents' must be a non-empty array of strings");
  if (docs->size() > kMaxDocuments)
    bad_request("documents", "at most {} documents per request, got {}", kMaxDocuments, docs->size());
  for (const json& d : *docs) {
    const json* text = d.is_object() ? field(d, "text") : &d;  // Cohere's {text} objects too
    if (!text || !text->is_string())
      bad_request("documents", "each document must be a string or an object with a string 'text'");
    const std::string& s = text->get_ref<const std::string&>();
    g.prompts.push_back({rerank_prompt(*query, s, model, tmpl), s});
  }
  g.engine.prompt = g.prompts.front().ids;
  g.rerank_top_n = docs->size();
  if (auto n = opt_int32(body, "top_n", 1, INT32_MAX)) g.rerank_top_n = std::min(size_t(*n), docs->size());
  if (auto r = opt_bool(body, "return_documents")) g.rerank_documents = *r;
  return g;
}

json rerank_response(const ResponseIdentity& ident, const GenerationRequest& req,
                     const std::vector<ChoiceState>& choices, const Usage& usage) {
  const auto score = [&](size_t i) { return choices[i].embedding.empty() ? 0.0f : choices[i].embedding[0]; };
  std::vector<size_t> order(choices.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score(a) > score(b); });
  order.resize(std::min(order.size(), req.rerank_top_n));
  json results = json::array();
  for (size_t i : order) {
    json r = {{"index", i}, {"relevance_score", score(i)}};
    if (req.rerank_documents) r["document"] = {{"text", req.prompts[i].text}};
    results.push_back(std::move(r));
  }
  return {{"id", ident.id},
          {"model", ident.model},
          {"usage", {{"prompt_tokens", usage.prompt_tokens}, {"total_tokens", usage.prompt_tokens}}},
          {"results", std::move(results)}};
}

}  // namespace pagoda::server
