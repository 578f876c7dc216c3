// libFuzzer target for the OpenAI request mapping: body bytes -> JSON ->
// parse_completion_request and parse_chat_request against the real
// stories260K model's tokenizer and chat template. Any body must map to a
// request the engine accepts (a non-empty prompt of ids inside the
// vocabulary that leaves room in the context, n in range) or be refused with
// an ApiError of status 400; nothing else may escape. Output constraints
// (response_format, structured_outputs, guided_*, grammar, json_schema) are
// compiled through a real GrammarCache over the model's vocabulary.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_shared.h"
#include "gguf/file.h"
#include "grammar/cache.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace {

using pagoda::fuzz::check;
using namespace pagoda::server;

std::unique_ptr<pagoda::Tokenizer> tokenizer;
std::unique_ptr<ChatPrompt> chat;
std::unique_ptr<pagoda::grammar::GrammarCache> grammars;
std::shared_ptr<const pagoda::grammar::TokenVocab> vocab;

void check_request(const GenerationRequest& g, const ModelLimits& limits) {
  check(g.num_prompts() <= GenerationRequest::kMaxPrompts, "a bounded list of prompts");
  for (size_t i = 0; i < g.num_prompts(); ++i) {
    const auto prompt = g.prompt_ids(i);
    check(!prompt.empty(), "a non-empty prompt");
    check(int64_t(prompt.size()) + 1 <= limits.max_model_len, "room for one generated token");
    for (int32_t id : prompt) check(id >= 0 && size_t(id) < tokenizer->vocab_size(), "prompt ids in the vocabulary");
  }
  try {  // logit_bias, stop_token_ids, min_tokens: what the engine accepts
    g.engine.sampling.validate();
    g.engine.sampling.validate_vocab(int64_t(tokenizer->vocab_size()));
  } catch (const pagoda::InvalidArgument&) {
    check(false, "sampling fields the engine accepts");
  }
  if (g.engine.prompt_logprobs) check(*g.engine.prompt_logprobs >= 0 && *g.engine.prompt_logprobs <= 20, "k in range");
  check(g.engine.n >= 1 && g.engine.n <= limits.max_n, "n in range");
  if (g.engine.constraint)
    check(&g.engine.constraint->vocab() == vocab.get(), "constraints over the model's vocabulary");
  if (g.engine.sampling.max_tokens)
    check(int64_t(g.engine.prompt.size()) + *g.engine.sampling.max_tokens <= limits.max_model_len, "max_tokens fits");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string model = pagoda::fuzz::shared_path("models/stories260K.gguf");
  tokenizer = std::make_unique<pagoda::Tokenizer>(pagoda::Tokenizer::from_gguf(pagoda::GgufFile::open(model)));
  chat = std::make_unique<ChatPrompt>(ChatPrompt::for_model(model, std::nullopt));
  grammars = std::make_unique<pagoda::grammar::GrammarCache>(8);
  vocab = pagoda::grammar::TokenVocab::from_tokenizer(*tokenizer);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  const ModelLimits limits{tokenizer.get(), 512, 16, {grammars.get(), vocab}, pagoda::toolcall::Format::hermes};
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  for (bool is_chat : {false, true}) {
    try {
      const GenerationRequest g =
          is_chat ? parse_chat_request(body, limits, *chat, raw) : parse_completion_request(body, limits, raw);
      check_request(g, limits);
    } catch (const ApiError& e) {
      check(e.status == 400, "refusals are 400s");
    }
  }
  return 0;
}
