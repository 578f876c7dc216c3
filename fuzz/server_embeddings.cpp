// POST /v1/embeddings bodies (server/embeddings.h): any bytes either parse
// into inputs that fit the model's context and vocabulary or are refused
// with a 400; the response renders for any vectors.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>

#include "fuzz_shared.h"
#include "gguf/file.h"
#include "server/api_error.h"
#include "server/embeddings.h"
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
  limits.pooling = pagoda::Pooling::mean;
  limits.output_width = 8;
  try {
    const GenerationRequest g = parse_embedding_request(body, limits);
    check(!g.prompts.empty() && g.prompts.size() <= 2048, "one to 2048 inputs");
    std::vector<ChoiceState> choices(g.prompts.size());
    for (size_t i = 0; i < g.prompts.size(); ++i) {
      const auto& ids = g.prompts[i].ids;
      check(!ids.empty() && ids.size() <= 256, "every input fits the context");
      for (int32_t t : ids) check(t >= 0 && t < tokenizer->vocab_size(), "token ids are in the vocabulary");
      choices[i].embedding.assign(8, float(i) - 1.5f);
    }
    embeddings_response({"embd-1", 0, "m"}, g, choices, {});
  } catch (const ApiError& e) {
    check(e.status == 400, "refusals are 400s");
  }
  return 0;
}
