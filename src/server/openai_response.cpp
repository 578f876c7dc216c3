#include "server/openai_response.h"

#include "server/tool_output.h"
#include "server/prompt_logprobs.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

json finish_reason_json(FinishReason r) {
  if (r == FinishReason::stop) return "stop";
  if (r == FinishReason::length) return "length";
  return nullptr;
}

json stop_reason_json(const RequestOutput& out) {
  if (out.finish != FinishReason::stop) return nullptr;
  if (out.stop_string) return *out.stop_string;
  if (out.stop_token) return *out.stop_token;
  return nullptr;
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

namespace {

std::string piece(const Tokenizer& tok, TokenId id) { return tok.decode_bytes(id); }

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

json base(const ResponseIdentity& id, const char* object) {
  return {{"id", id.id}, {"object", object}, {"created", id.created}, {"model", id.model}};
}

}  // namespace

json completion_logprobs(const Tokenizer& tok, std::span<const GeneratedLogprobs> lps, size_t& text_offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const auto& lp : lps) {
    const std::string t = piece(tok, lp.token);
    tokens.push_back(t);
    token_logprobs.push_back(lp.logprob);
    // As OpenAI's legacy API: the top entries, plus the sampled token.
    json entries = json::object();
    for (const auto& e : lp.top) entries[piece(tok, e.token)] = e.logprob;
    if (!entries.contains(t)) entries[t] = lp.logprob;
    top.push_back(std::move(entries));
    offsets.push_back(text_offset);
    text_offset += t.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json chat_logprobs(const Tokenizer& tok, std::span<const GeneratedLogprobs> lps) {
  json content = json::array();
  for (const auto& lp : lps) {
    const std::string t = piece(tok, lp.token);
    json top = json::array();
    for (const auto& e : lp.top) {
      const std::string s = piece(tok, e.token);
      top.push_back({{"token", s}, {"logprob", e.logprob}, {"bytes", bytes_of(s)}});
    }
    content.push_back({{"token", t}, {"logprob", lp.logprob}, {"bytes", bytes_of(t)}, {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

json completion_response(const ResponseIdentity& id, const GenerationRequest& req, std::vector<ChoiceState>& choices,
                         const Usage& usage, const Tokenizer& tok) {
  json j = base(id, "text_completion");
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    auto& c = choices[i];
    json lp = nullptr;
    if (req.echo_logprobs)
      lp = echo_logprobs(tok, req.prompt_ids(c.prompt), c.prompt_logprobs, c.logprobs, *req.engine.sampling.logprobs);
    else if (req.engine.sampling.logprobs)
      lp = completion_logprobs(tok, c.logprobs, c.text_offset);
    cs.push_back({{"index", i},
                  {"text", req.echo ? req.prompt_text_of(c.prompt) + c.text : c.text},
                  {"logprobs", lp},
                  {"finish_reason", finish_reason_json(c.finish)},
                  {"stop_reason", c.stop_reason}});
    if (req.prompt_logprobs)
      cs.back()["prompt_logprobs"] =
          vllm_prompt_logprobs(tok, req.prompt_ids(c.prompt), c.prompt_logprobs, *req.prompt_logprobs);
  }
  j["choices"] = std::move(cs);
  j["usage"] = usage_json(usage);
  return j;
}

json chat_response(const ResponseIdentity& id, const GenerationRequest& req, const std::vector<ChoiceState>& choices,
                   const Usage& usage, const Tokenizer& tok) {
  json j = base(id, "chat.completion");
  json cs = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const auto& c = choices[i];
    json lp = nullptr;
    if (req.engine.sampling.logprobs) lp = chat_logprobs(tok, c.logprobs);
    json message = {{"role", "assistant"}, {"content", c.text}};
    json finish = finish_reason_json(c.finish);
    if (tool_output_active(req.tools)) tool_message(req.tools, c, message, finish);
    cs.push_back({{"index", i},
                  {"message", std::move(message)},
                  {"logprobs", lp},
                  {"finish_reason", finish},
                  {"stop_reason", c.stop_reason}});
  }
  j["choices"] = std::move(cs);
  // vLLM puts the chat prompt's logprobs beside the choices: the prompt is shared.
  if (req.prompt_logprobs && !choices.empty())
    j["prompt_logprobs"] =
        vllm_prompt_logprobs(tok, req.engine.prompt, choices[0].prompt_logprobs, *req.prompt_logprobs);
  j["usage"] = usage_json(usage);
  return j;
}

json completion_chunk(const ResponseIdentity& id, const GenerationRequest& req, int index, const std::string& text,
                      json logprobs, json finish, json stop_reason) {
  json j = base(id, "text_completion");
  j["choices"] = json::array(
      {{{"index", index}, {"text", text}, {"logprobs", std::move(logprobs)}, {"finish_reason", std::move(finish)}}});
  if (!j["choices"][0]["finish_reason"].is_null()) j["choices"][0]["stop_reason"] = std::move(stop_reason);
  if (req.include_usage) j["usage"] = nullptr;
  return j;
}

json chat_chunk(const ResponseIdentity& id, const GenerationRequest& req, int index, json delta, json logprobs,
                json finish, json stop_reason) {
  json j = base(id, "chat.completion.chunk");
  j["choices"] = json::array({{{"index", index},
                               {"delta", std::move(delta)},
                               {"logprobs", std::move(logprobs)},
                               {"finish_reason", std::move(finish)}}});
  if (!j["choices"][0]["finish_reason"].is_null()) j["choices"][0]["stop_reason"] = std::move(stop_reason);
  if (req.include_usage) j["usage"] = nullptr;
  return j;
}

json usage_chunk(const ResponseIdentity& id, const GenerationRequest& req, const Usage& usage) {
  json j = base(id, req.api == Api::chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return j;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace pagoda::server
