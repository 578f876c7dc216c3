// Field by field, with vLLM's ranges; the value checks shared with the
// engine (bias range, min_tokens <= max_tokens) stay in SamplingParams.
#include "server/sampling_fields.h"

#include <charconv>
#include <climits>

#include "server/api_error.h"
#include "server/json_fields.h"

namespace pagoda::server {
namespace {

// A logit_bias key: a token id written as a decimal integer string.
int32_t bias_token(const std::string& key, int64_t vocab_size) {
  int64_t id = -1;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
  if (ec != std::errc() || end != key.data() + key.size() || key.empty())
    bad_request("logit_bias", "logit_bias keys must be token ids written as integers, got '{}'", key);
  return vocab_token_id(id, vocab_size, "logit_bias");
}

void parse_logit_bias(const json& body, int64_t vocab_size, SamplingParams& s) {
  const json* lb = field(body, "logit_bias");
  if (!lb) return;
  if (!lb->is_object()) bad_request("logit_bias", "'logit_bias' must be an object mapping token ids to biases");
  if (lb->size() > SamplingParams::kMaxLogitBiasEntries)
    bad_request("logit_bias", "'logit_bias' may hold at most {} entries, got {}", SamplingParams::kMaxLogitBiasEntries,
                lb->size());
  for (const auto& [key, value] : lb->items()) {
    const int32_t id = bias_token(key, vocab_size);
    if (!value.is_number()) bad_request("logit_bias", "logit_bias['{}'] must be a number", key);
    const double bias = value.get<double>();
    if (!(-SamplingParams::kMaxLogitBias <= bias && bias <= SamplingParams::kMaxLogitBias))
      bad_request("logit_bias", "logit_bias['{}'] must be in [-100, 100], got {}", key, bias);
    s.logit_bias.emplace_back(id, float(bias));
  }
}

void parse_stop_token_ids(const json& body, int64_t vocab_size, SamplingParams& s) {
  const json* ids = field(body, "stop_token_ids");
  if (!ids) return;
  if (!ids->is_array()) bad_request("stop_token_ids", "'stop_token_ids' must be an array of token ids");
  if (ids->size() > SamplingParams::kMaxStopTokenIds)
    bad_request("stop_token_ids", "'stop_token_ids' may hold at most {} ids, got {}", SamplingParams::kMaxStopTokenIds,
                ids->size());
  for (const auto& t : *ids) {
    if (!t.is_number_integer()) bad_request("stop_token_ids", "'stop_token_ids' must hold integers only");
    s.stop_token_ids.push_back(vocab_token_id(t.get<int64_t>(), vocab_size, "stop_token_ids"));
  }
}

}  // namespace

void parse_extra_sampling(const json& body, int32_t n, int64_t vocab_size, SamplingParams& s) {
  parse_logit_bias(body, vocab_size, s);
  parse_stop_token_ids(body, vocab_size, s);
  if (auto v = opt_int32(body, "min_tokens", 0, INT32_MAX)) s.min_tokens = *v;
  if (auto v = opt_bool(body, "include_stop_str_in_output")) s.include_stop_str_in_output = *v;
  if (auto v = opt_bool(body, "skip_special_tokens")) s.skip_special_tokens = *v;
  // vLLM's V1 engine dropped best_of > n: one sample per choice, no reranking.
  if (auto v = opt_int32(body, "best_of", 1, INT32_MAX); v && *v != n)
    bad_request("best_of", "best_of must equal n ({}) or be absent: this server does not rerank samples, got {}", n,
                *v);
}

std::optional<int32_t> parse_truncate_prompt_tokens(const json& body, int32_t max_model_len) {
  const auto k = opt_int32(body, "truncate_prompt_tokens", -1, INT32_MAX);
  if (!k) return std::nullopt;
  if (*k == 0)
    bad_request("truncate_prompt_tokens", "truncate_prompt_tokens must be an integer >= 1 or -1, got {}", *k);
  if (*k > max_model_len)
    bad_request("truncate_prompt_tokens", "truncate_prompt_tokens ({}) is greater than max_model_len ({})", *k,
                max_model_len);
  return *k == -1 ? max_model_len : *k;
}

void truncate_prompt(std::vector<TokenId>& prompt, std::optional<int32_t> keep) {
  if (keep && prompt.size() > size_t(*keep)) prompt.erase(prompt.begin(), prompt.end() - *keep);
}

}  // namespace pagoda::server
