// The routes that turn text into tokens and back without generating: vLLM's
// POST /tokenize and /detokenize, llama.cpp's POST /apply-template, and
// GET /version. The API key guards the POST routes as it guards /v1; their
// bodies get the same `model` check and ignored-field header as generations
// (request_fields.h), and the work runs on the request workers.
//
//   /tokenize        {"prompt", "add_special_tokens"?: true}, or a chat body
//                    ({"messages", "add_generation_prompt"?, "tools"?,
//                    "chat_template"?, ...} rendered as chat completions
//                    render it), "return_token_strs"?: false
//                    -> {"count", "max_model_len", "tokens", "token_strs"?}
//   /detokenize      {"tokens": [ids]} -> {"prompt"}; ids outside the vocabulary: 400
//   /apply-template  a chat body -> {"prompt"} (the rendered text)
//   /version         -> {"version"}
//   /v1/messages/count_tokens  an Anthropic Messages body (anthropic_messages.h)
//                    -> {"input_tokens"}: the prompt /v1/messages would render
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "server/anthropic_messages.h"
#include "server/api_error.h"
#include "server/chat_body.h"
#include "server/connection.h"
#include "server/json_fields.h"
#include "server/openai_response.h"
#include "server/request_fields.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {
namespace {

const ServedModel& loaded_model(const ServerState& state) {
  const ServedModel* m = state.model();
  if (!m) throw ApiError(503, "the model is still loading; retry shortly", "", "", 1);
  return *m;
}

// The body as JSON, its `model` checked, its unknown fields named in `headers`.
json request_body(const std::string& text, const ServedModel& m, Endpoint endpoint, Headers& headers) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  if (!j.is_object()) bad_request("", "the request body must be a JSON object");
  check_model(j, m.names);
  const auto ignored = ignored_fields(j, endpoint);
  if (!ignored.empty()) headers.emplace_back(kIgnoredFieldsHeader, ignored_fields_header(ignored));
  return j;
}

json tokenize_body(const json& j, std::string_view raw, const ServedModel& m) {
  const Tokenizer& tok = m.tokenizer;
  const bool chat = field(j, "messages") != nullptr;
  if (chat && field(j, "prompt")) bad_request("prompt", "give either 'prompt' or 'messages', not both");
  const auto add_special = opt_bool(j, "add_special_tokens");
  std::vector<TokenId> ids;
  if (chat) {
    // As /v1/chat/completions tokenizes it, unless add_special_tokens says otherwise.
    const RenderedPrompt r = render_chat_body(j, raw, m.chat, tok, m.limits.tool_parser).prompt;
    ids = tok.encode(r.text, r.add_bos && add_special.value_or(true), r.parse_special);
  } else {
    const auto prompt = opt_string(j, "prompt");
    if (!prompt) bad_request("prompt", "'prompt' (a string) or 'messages' is required");
    ids = tok.encode(*prompt, tok.add_bos_by_default() && add_special.value_or(true), /*parse_special=*/true);
  }
  json out = {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", m.engine->max_model_len()}};
  if (opt_bool(j, "return_token_strs").value_or(false)) {
    json strs = json::array();
    for (const TokenId id : ids) strs.push_back(tok.token_text(id));
    out["token_strs"] = std::move(strs);
  }
  return out;
}

json detokenize_body(const json& j, const ServedModel& m) {
  const json* t = field(j, "tokens");
  if (!t) bad_request("tokens", "'tokens' is required");
  if (!t->is_array()) bad_request("tokens", "'tokens' must be an array of token ids");
  const int64_t vocab = int64_t(m.tokenizer.vocab_size());
  std::vector<TokenId> ids;
  ids.reserve(t->size());
  for (const auto& v : *t) {
    if (!v.is_number_integer()) bad_request("tokens", "'tokens' must hold integers only");
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id >= vocab) bad_request("tokens", "token id {} is outside the vocabulary (0..{})", id, vocab - 1);
    ids.push_back(TokenId(id));
  }
  return {{"prompt", m.tokenizer.decode(ids)}};
}

}  // namespace

void Connection::answer_off_thread(std::function<json(Headers&)> work) {
  asio::post(state_->workers, [self = shared_from_this(), work = std::move(work)] {
    Headers headers;
    std::string body;
    std::optional<ApiError> error;
    try {
      body = dump(work(headers));
    } catch (const ApiError& e) {
      error = e;
    } catch (const std::exception& e) {
      spdlog::error("internal error answering a request: {}", e.what());
      error = ApiError(500, fmt::format("internal error: {}", e.what()));
    }
    asio::post(self->socket_.get_executor(),
               [self, headers = std::move(headers), body = std::move(body), error = std::move(error)] {
                 if (error) return self->respond_error(*error);
                 self->respond(200, "application/json", body, headers);
               });
  });
}

void Connection::tokenize(RequestReader::Request& req, std::string_view, std::string_view) {
  const ServedModel& m = loaded_model(*state_);
  answer_off_thread([&m, text = std::move(req.body())](Headers& h) {
    return tokenize_body(request_body(text, m, Endpoint::tokenize, h), text, m);
  });
}

void Connection::detokenize(RequestReader::Request& req, std::string_view, std::string_view) {
  const ServedModel& m = loaded_model(*state_);
  answer_off_thread([&m, text = std::move(req.body())](Headers& h) {
    return detokenize_body(request_body(text, m, Endpoint::detokenize, h), m);
  });
}

void Connection::apply_template(RequestReader::Request& req, std::string_view, std::string_view) {
  const ServedModel& m = loaded_model(*state_);
  answer_off_thread([&m, text = std::move(req.body())](Headers& h) {
    const json j = request_body(text, m, Endpoint::apply_template, h);
    return json{{"prompt", render_chat_body(j, text, m.chat, m.tokenizer, m.limits.tool_parser).prompt.text}};
  });
}

void Connection::count_tokens(RequestReader::Request& req, std::string_view, std::string_view) {
  const ServedModel& m = loaded_model(*state_);
  answer_off_thread([&m, text = std::move(req.body())](Headers& h) {
    const auto o = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (o.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
    const std::string chat_text = translate_messages_request(o, /*count_only=*/true).chat.dump();
    const json chat = json::parse(chat_text);
    check_model(chat, m.names);
    const auto ignored = ignored_fields(json::parse(text), Endpoint::count_tokens);
    if (!ignored.empty()) h.emplace_back(kIgnoredFieldsHeader, ignored_fields_header(ignored));
    // Rendered and encoded as /v1/messages renders and encodes it.
    RenderedPrompt r;
    try {
      r = render_chat_body(chat, chat_text, m.chat, m.tokenizer, m.limits.tool_parser).prompt;
    } catch (const ApiError& e) {
      ApiError named = e;
      named.param = anthropic_field(e.param);
      throw named;
    }
    return json{{"input_tokens", m.tokenizer.encode(r.text, r.add_bos, r.parse_special).size()}};
  });
}

void Connection::version(RequestReader::Request&, std::string_view, std::string_view) {
  respond_json(200, dump({{"version", state_->config.version.empty() ? "unknown" : state_->config.version}}));
}

}  // namespace pagoda::server
