// POST /v1/embeddings (OpenAI's shape) on an embedding model: every input is
// one engine request whose prompt the engine computes and pools
// (engine/engine_pooling.cpp); the vectors come back in input order.
//
// Request -> engine:
//   input: a string, an array of strings, an array of token ids, or an array
//          of arrays of token ids (at most kMaxInputs)
//                                 -> one engine request per input
//   add_special_tokens (vLLM)     -> BOS (and the model's end token) as the tokenizer adds them; default true
//   truncate_prompt_tokens (vLLM) -> the last k tokens of each input
//   model, user                   -> checked / ignored
// Engine -> response:
//   the pooled vector -> L2-normalised unless normalize: false (vLLM's field;
//                        OpenAI's vectors are unit length)
//   dimensions        -> only the model's own width (no Matryoshka truncation:
//                        a GGUF does not say a model was trained for it)
//   encoding_format   -> "float": JSON numbers; "base64": the little-endian
//                        float32 bytes, base64 (what the openai SDKs ask for)
//   usage             -> prompt_tokens = total_tokens = the inputs' tokens
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "server/openai_request.h"
#include "server/openai_response.h"

namespace pagoda::server {

// 400 naming the field for anything malformed; the inputs in g.prompts.
GenerationRequest parse_embedding_request(const nlohmann::json& body, const ModelLimits& model);

// The response body: one vector per input, in input order.
nlohmann::json embeddings_response(const ResponseIdentity& ident, const GenerationRequest& req,
                                   const std::vector<ChoiceState>& choices, const Usage& usage);

}  // namespace pagoda::server
