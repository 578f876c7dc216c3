// POST /v1/rerank (also /rerank and /v2/rerank: the shape vLLM and
// llama.cpp share, after Jina's and Cohere's) on a reranker, a model served
// with rank pooling: one engine request per document, scored by the model's
// classification head (engine/engine_pooling.cpp), the best first.
//
// Request -> engine:
//   query (required string), documents (1..kMaxDocuments strings, or {text} objects)
//        -> per document, the file's rerank template (tokenizer.chat_template.rerank)
//           with {query} and {document} replaced, specials parsed; without one, as
//           llama.cpp builds it: BOS query EOS SEP document EOS, each special only
//           where the vocabulary adds it
//   model -> checked
// Engine -> response:
//   {id, model, usage {prompt_tokens, total_tokens}, results: [{index,
//    relevance_score (the head's first score: qwen3's P(yes)), document {text}}]}
//   sorted by score, the best top_n (default all); return_documents: false
//   leaves the documents out.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "server/openai_request.h"
#include "server/openai_response.h"

namespace pagoda::server {

// 400 naming the field for anything malformed; the documents in g.prompts.
GenerationRequest parse_rerank_request(const nlohmann::json& body, const ModelLimits& model,
                                       const std::string& rerank_template);

nlohmann::json rerank_response(const ResponseIdentity& ident, const GenerationRequest& req,
                               const std::vector<ChoiceState>& choices, const Usage& usage);

}  // namespace pagoda::server
