// POST /v1/rerank bodies (server/rerank.h): any bytes either parse
// into documents that fit the context and vocabulary or are refused
// with a 400; the response renders for any scores, best first.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>

#include "fuzz_shared.h"
#include "gguf/file.h"
#include "server/api_error.h"
#include "server/rerank.h"
#include "tokenizer/tokenizer.h"

using pagoda::fuzz::check;
using namespace pagoda::server;

namespace {
std::unique_ptr<pagoda::Tokenizer> tokenizer;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string model = pagoda::fuzz::shared_path("models/stories260K.gguf");
  tokenizer = std::make_unique<pagoda::Tokenizer>(pagoda::Tokenizer::from_gguf(pagoda::GgufFile::open(model)));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  ModelLimits limits{tokenizer.get(), 256, 1, {}, std::nullopt};
  limits.pooling = pagoda::Pooling::rank;
  limits.output_width = 8;
  try {
    const GenerationRequest g = parse_rerank_request(body, limits, size % 2 ? "Q: {query} D: {document}" : "");
    check(!g.prompts.empty() && g.prompts.size() <= 1024, "one to 1024 documents");
    check(g.rerank_top_n >= 1 && g.rerank_top_n <= g.prompts.size(), "top_n within the documents");
    std::vector<ChoiceState> choices(g.prompts.size());
    for (size_t i = 0; i < g.prompts.size(); ++i) {
      const auto& ids = g.prompts[i].ids;
      check(!ids.empty() && ids.size() <= 256, "every document fits the context");
      for (int32_t t : ids) check(t >= 0 && t < int32_t(tokenizer->vocab_size()), "token ids are in the vocabulary");
      choices[i].embedding = {float(i % 3), 0.5f};
    }
    const auto r = rerank_response({"rerank-1", 0, "m"}, g, choices, {});
    check(r["results"].size() == g.rerank_top_n, "top_n results");
  } catch (const ApiError& e) {
    check(e.status == 400, "refusals are 400s");
  }
  return 0;
}
