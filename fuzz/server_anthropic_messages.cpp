// libFuzzer target for Anthropic's Messages API mapping (anthropic_messages.h):
// body bytes -> translate_messages_request (as /v1/messages and as
// count_tokens) -> parse_messages_request (the chat parser), against the real
// stories260K model's tokenizer and chat template. Any body must translate
// into a chat request the engine accepts, or be refused with an ApiError of
// status 400. The same bytes, read as a model's output, go through the
// response and the stream events, which must never throw and must carry the
// same text.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz_shared.h"
#include "gguf/file.h"
#include "grammar/cache.h"
#include "server/anthropic_messages.h"
#include "server/anthropic_stream.h"
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
  check(!g.engine.prompt.empty(), "a non-empty prompt");
  check(int64_t(g.engine.prompt.size()) + 1 <= limits.max_model_len, "room for one generated token");
  check(g.engine.n == 1, "one choice");
  check(g.engine.sampling.max_tokens.has_value(), "max_tokens is required");
  check(int64_t(g.engine.prompt.size()) + *g.engine.sampling.max_tokens <= limits.max_model_len, "max_tokens fits");
  try {
    g.engine.sampling.validate();
  } catch (const pagoda::InvalidArgument&) {
    check(false, "sampling fields the engine accepts");
  }
}

// The output text, whole and streamed in pieces, through the response translation.
void check_output(const GenerationRequest& g, std::string_view text) {
  const ResponseIdentity id{"msg_x", 0, "m"};
  ChoiceState whole;
  whole.text = std::string(text);
  whole.finish = pagoda::FinishReason::stop;
  const json m = messages_response(id, g, g.thinking, whole, Usage{});
  std::string want;
  for (const json& b : m["content"])
    if (b["type"] == "text") want += b["text"].get<std::string>();
  MessagesStream s(id, g);
  ChoiceState c;
  std::string got;
  auto collect = [&](const std::vector<json>& events) {
    for (const json& e : events)
      if (e["type"] == "content_block_delta" && e["delta"]["type"] == "text_delta")
        got += e["delta"]["text"].get<std::string>();
  };
  for (size_t i = 0; i < text.size(); i += 5) {
    pagoda::RequestOutput out;
    out.text = std::string(text.substr(i, 5));
    collect(s.push(c, out));
  }
  c.finish = pagoda::FinishReason::stop;
  collect(s.finish(c, Usage{}));
  check(got == want, "the stream's text is the message's text");
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
  const auto body = nlohmann::ordered_json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  const ModelLimits limits{tokenizer.get(), 512, 16, {grammars.get(), vocab}, pagoda::toolcall::Format::hermes};
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  try {  // count_tokens: the translation alone (it renders the same chat body)
    translate_messages_request(body, /*count_only=*/true);
  } catch (const ApiError& e) {
    check(e.status == 400, "refusals are 400s");
  }
  try {
    const GenerationRequest g = parse_messages_request(std::string(raw), limits, *chat, {"stories260K"});
    check(g.api == Api::messages, "an Anthropic request");
    check_request(g, limits);
    check_output(g, raw);
  } catch (const ApiError& e) {
    check(e.status == 400 || e.status == 404, "refusals are 400s, or 404 for another model");
  }
  return 0;
}
