// Both shapes walk the prompt once; a prompt logprob missing (the request
// ended early) leaves its position null rather than inventing a value.
#include "server/prompt_logprobs.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace pagoda::server {

using json = nlohmann::json;

namespace {

// The `top` most likely entries, plus the token itself, keyed by piece.
json top_entries(const Tokenizer& tok, const GeneratedLogprobs& lp, int top) {
  json entries = json::object();
  const size_t n = std::min(lp.top.size(), size_t(std::max(top, 0)));
  for (size_t i = 0; i < n; ++i) entries[tok.decode_bytes(lp.top[i].token)] = lp.top[i].logprob;
  const std::string own = tok.decode_bytes(lp.token);
  if (!entries.contains(own)) entries[own] = lp.logprob;
  return entries;
}

}  // namespace

json echo_logprobs(const Tokenizer& tok, std::span<const TokenId> prompt, std::span<const GeneratedLogprobs> plp,
                   std::span<const GeneratedLogprobs> generated, int top) {
  json tokens = json::array(), token_logprobs = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  auto add = [&](TokenId id, const GeneratedLogprobs* lp) {
    const std::string piece = tok.decode_bytes(id);
    tokens.push_back(piece);
    token_logprobs.push_back(lp ? json(lp->logprob) : json(nullptr));
    tops.push_back(lp ? top_entries(tok, *lp, top) : json(nullptr));
    offsets.push_back(offset);
    offset += piece.size();
  };
  for (size_t i = 0; i < prompt.size(); ++i) add(prompt[i], i >= 1 && i - 1 < plp.size() ? &plp[i - 1] : nullptr);
  for (const auto& lp : generated) add(lp.token, &lp);
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json vllm_prompt_logprobs(const Tokenizer& tok, std::span<const TokenId> prompt, std::span<const GeneratedLogprobs> plp,
                          int k) {
  json out = json::array();
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (i == 0 || i - 1 >= plp.size()) {
      out.push_back(nullptr);
      continue;
    }
    const GeneratedLogprobs& lp = plp[i - 1];
    json pos = json::object();
    const size_t n = std::min(lp.top.size(), size_t(std::max(k, 0)));
    for (size_t r = 0; r < n; ++r)
      pos[std::to_string(lp.top[r].token)] = {
          {"logprob", lp.top[r].logprob}, {"rank", r + 1}, {"decoded_token", tok.decode_bytes(lp.top[r].token)}};
    pos[std::to_string(lp.token)] = {
        {"logprob", lp.logprob}, {"rank", lp.rank}, {"decoded_token", tok.decode_bytes(lp.token)}};
    out.push_back(std::move(pos));
  }
  return out;
}

}  // namespace pagoda::server
