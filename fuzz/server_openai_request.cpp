// libFuzzer target for the OpenAI request mapping: body bytes -> JSON ->
// parse_completion_request and parse_chat_request against the real
// stories260K model's tokenizer and chat template. Any body must map to a
// request the engine accepts (a non-empty prompt of ids inside the
// vocabulary that leaves room in the context, n in range) or be refused with
// an ApiError of status 400; nothing else may escape.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_shared.h"
#include "gguf/file.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace {

using pagoda::fuzz::check;
using namespace pagoda::server;

std::unique_ptr<pagoda::Tokenizer> tokenizer;
std::unique_ptr<ChatPrompt> chat;

void check_request(const GenerationRequest& g, const ModelLimits& limits) {
  check(!g.engine.prompt.empty(), "a non-empty prompt");
  check(int64_t(g.engine.prompt.size()) + 1 <= limits.max_model_len, "room for one generated token");
  for (int32_t id : g.engine.prompt)
    check(id >= 0 && size_t(id) < tokenizer->vocab_size(), "prompt ids in the vocabulary");
  check(g.engine.n >= 1 && g.engine.n <= limits.max_n, "n in range");
  if (g.engine.sampling.max_tokens)
    check(int64_t(g.engine.prompt.size()) + *g.engine.sampling.max_tokens <= limits.max_model_len, "max_tokens fits");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string model = pagoda::fuzz::shared_path("models/stories260K.gguf");
  tokenizer = std::make_unique<pagoda::Tokenizer>(pagoda::Tokenizer::from_gguf(pagoda::GgufFile::open(model)));
  chat = std::make_unique<ChatPrompt>(ChatPrompt::for_model(model, std::nullopt));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  const ModelLimits limits{tokenizer.get(), 512, 16};
  for (bool is_chat : {false, true}) {
    try {
      const GenerationRequest g =
          is_chat ? parse_chat_request(body, limits, *chat) : parse_completion_request(body, limits);
      check_request(g, limits);
    } catch (const ApiError& e) {
      check(e.status == 400, "refusals are 400s");
    }
  }
  return 0;
}
