// libFuzzer target for the Responses API's mapping (responses_request.h):
// body bytes -> parse_responses_request (the translation, then the chat
// parser), against the real stories260K model's tokenizer and chat template,
// with one stored response ("resp_prev") for previous_response_id. Any body
// must translate into a chat request the engine accepts, or be refused with an
// ApiError of status 400 (404 for another model). The same bytes, read as a
// model's output, go through the whole response and the stream events, which
// must never throw, must number their events in order and carry the same
// text; its input items all have ids and page.
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
#include "server/response_store.h"
#include "server/responses_output.h"
#include "server/responses_request.h"
#include "server/responses_stream.h"
#include "tokenizer/tokenizer.h"

namespace {

using pagoda::fuzz::check;
using namespace pagoda::server;

std::unique_ptr<pagoda::Tokenizer> tokenizer;
std::unique_ptr<ChatPrompt> chat;
std::unique_ptr<pagoda::grammar::GrammarCache> grammars;
std::shared_ptr<const pagoda::grammar::TokenVocab> vocab;
std::unique_ptr<ResponseStore> store;

void check_request(const GenerationRequest& g, const ModelLimits& limits) {
  check(g.responses != nullptr, "the response's context");
  check(!g.engine.prompt.empty(), "a non-empty prompt");
  check(int64_t(g.engine.prompt.size()) + 1 <= limits.max_model_len, "room for one generated token");
  check(g.engine.n == 1, "one choice");
  try {
    g.engine.sampling.validate();
  } catch (const pagoda::InvalidArgument&) {
    check(false, "sampling fields the engine accepts");
  }
}

std::string text_of(const json& response) {
  std::string text;
  for (const json& item : response["output"])
    if (item["type"] == "message") text += item["content"][0]["text"].get<std::string>();
  return text;
}

// The output text, whole and streamed in pieces, through the response translation.
void check_output(const GenerationRequest& g, std::string_view text) {
  const ResponseIdentity id{"resp_x", 0, "m"};
  ChoiceState whole;
  whole.text = std::string(text);
  whole.finish = pagoda::FinishReason::length;
  const json r = responses_response(id, g, whole, Usage{});
  check(r["status"] == "incomplete", "cut by length: incomplete");
  ResponsesStream s(id, g);
  std::vector<json> events = s.start();
  ChoiceState c;
  for (size_t i = 0; i < text.size(); i += 5) {
    pagoda::RequestOutput out;
    out.text = std::string(text.substr(i, 5));
    for (json& e : s.push(c, out)) events.push_back(std::move(e));
  }
  c.finish = pagoda::FinishReason::length;
  for (json& e : s.finish(c, Usage{})) events.push_back(std::move(e));
  std::string got;
  for (size_t i = 0; i < events.size(); ++i) {
    check(events[i]["sequence_number"] == i, "events numbered in order");
    if (events[i]["type"] == "response.output_text.delta") got += events[i]["delta"].get<std::string>();
  }
  check(got == text_of(r), "the stream's text is the response's text");
  check(text_of(s.response()) == got, "the stream's last response holds its text");
  store_response(*store, g, r);  // must not throw, whatever the bytes
  const json& items = g.responses->input_items;
  check(items.is_array(), "input items listed");
  for (const json& item : items)
    check(item.is_object() && item.contains("id") && item["id"].is_string(), "every input item has an id");
  const json page = input_items_page(items, false, 2, "");
  check(page["data"].size() <= 2 && page["has_more"] == (items.size() > 2), "a page of input items");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string model = pagoda::fuzz::shared_path("models/stories260K.gguf");
  tokenizer = std::make_unique<pagoda::Tokenizer>(pagoda::Tokenizer::from_gguf(pagoda::GgufFile::open(model)));
  chat = std::make_unique<ChatPrompt>(ChatPrompt::for_model(model, std::nullopt));
  grammars = std::make_unique<pagoda::grammar::GrammarCache>(8);
  vocab = pagoda::grammar::TokenVocab::from_tokenizer(*tokenizer);
  store = std::make_unique<ResponseStore>(4, 1 << 20);
  StoredResponse prev;
  prev.conversation = nlohmann::ordered_json::parse(
      R"([{"role":"user","content":"Once upon a time"},{"role":"assistant","content":"there was a cat"}])");
  store->put("resp_prev", std::move(prev));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ModelLimits limits{tokenizer.get(), 512, 16, {grammars.get(), vocab}, pagoda::toolcall::Format::hermes};
  const std::string raw(reinterpret_cast<const char*>(data), size);
  const PreviousResponse previous = [](const std::string& id) { return store->get(id); };
  try {
    const GenerationRequest g = parse_responses_request(raw, limits, *chat, {"stories260K"}, previous);
    check(g.api == Api::responses, "a Responses request");
    check_request(g, limits);
    check_output(g, raw);
  } catch (const ApiError& e) {
    check(e.status == 400 || e.status == 404, "refusals are 400s, or 404 for another model");
  }
  if (store->size() > 1) store->erase("resp_x");  // the next input starts from resp_prev alone
  return 0;
}
