#include "server/embeddings.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "server/api_error.h"
#include "server/json_fields.h"
#include "server/sampling_fields.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {
namespace {

constexpr size_t kMaxInputs = 2048;  // OpenAI's own limit per request

std::string base64(const void* data, size_t n) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = uint32_t(p[i]) << 16 | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += kDigits[v >> 18 & 63];
    out += kDigits[v >> 12 & 63];
    out += i + 1 < n ? kDigits[v >> 6 & 63] : '=';
    out += i + 2 < n ? kDigits[v & 63] : '=';
  }
  return out;
}

std::vector<TokenId> encode_input(const json& in, const ModelLimits& model, bool add_special,
                                  std::optional<int32_t> truncate) {
  const Tokenizer& tok = *model.tokenizer;
  std::vector<TokenId> ids;
  if (in.is_string()) {
    const std::string& text = in.get_ref<const std::string&>();
    if (text.empty()) bad_request("input", "an input is an empty string");  // OpenAI refuses it too
    // Refused before encoding when no tokenization of it could fit.
    if (!truncate && text.size() / tok.max_token_bytes() > size_t(model.max_model_len))
      throw ApiError(400,
                     fmt::format("an input of {} bytes is longer than this model's maximum context length of {} tokens",
                                 text.size(), model.max_model_len),
                     "input", "context_length_exceeded");
    ids = tok.encode(text, add_special && tok.add_bos_by_default(), /*parse_special=*/true);
    if (add_special && tok.add_eos_by_default()) ids.push_back(tok.eos_id());  // as llama.cpp's add_special
  } else {
    const int64_t vocab = int64_t(tok.vocab_size());
    for (const auto& t : in) {
      if (!t.is_number_integer()) bad_request("input", "a token-id input must hold integers only");
      ids.push_back(vocab_token_id(t.get<int64_t>(), vocab, "input"));
    }
  }
  truncate_prompt(ids, truncate);
  if (ids.empty()) bad_request("input", "an input is empty");
  if (ids.size() > size_t(model.max_model_len))
    throw ApiError(400,
                   fmt::format("This model's maximum context length is {} tokens. However, an input has {} tokens.",
                               model.max_model_len, ids.size()),
                   "input", "context_length_exceeded");
  return ids;
}

}  // namespace

GenerationRequest parse_embedding_request(const json& body, const ModelLimits& model) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object");
  GenerationRequest g;
  g.api = Api::embeddings;
  const json* input = field(body, "input");
  if (!input) bad_request("input", "'input' is required");
  // One input (a string or token ids) or a list of them.
  const bool list = input->is_array() && !input->empty() && (input->front().is_string() || input->front().is_array());
  if (!input->is_string() && !input->is_array())
    bad_request("input", "'input' must be a string, an array of strings, or token ids");
  if (input->is_array() && input->empty()) bad_request("input", "'input' is empty");
  if (list && input->size() > kMaxInputs)
    bad_request("input", "at most {} inputs per request, got {}", kMaxInputs, input->size());
  const bool add_special = opt_bool(body, "add_special_tokens").value_or(true);
  const auto truncate = parse_truncate_prompt_tokens(body, model.max_model_len);
  for (size_t i = 0, n = list ? input->size() : 1; i < n; ++i) {
    const json& one = list ? (*input)[i] : *input;
    if (list && !one.is_string() && !one.is_array())
      bad_request("input", "a list of inputs must hold strings or arrays of token ids only");
    g.prompts.push_back({encode_input(one, model, add_special, truncate), ""});
  }
  g.engine.prompt = g.prompts.front().ids;
  if (auto f = opt_string(body, "encoding_format")) {
    if (*f != "float" && *f != "base64")
      bad_request("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    g.embedding_base64 = *f == "base64";
  }
  if (auto d = opt_integer(body, "dimensions"); d && *d != model.output_width)
    bad_request("dimensions",
                "this model's embeddings have {} dimensions; it was not declared to support shortened ones",
                model.output_width);
  if (auto v = opt_bool(body, "normalize")) g.embedding_normalize = *v;
  opt_string(body, "user");  // checked, not used
  return g;
}

json embeddings_response(const ResponseIdentity& ident, const GenerationRequest& req,
                         const std::vector<ChoiceState>& choices, const Usage& usage) {
  json data = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    std::vector<float> v = choices[i].embedding;
    if (req.embedding_normalize) {
      double sum = 0;
      for (float x : v) sum += double(x) * x;
      const float inv = sum > 0 ? float(1 / std::sqrt(sum)) : 0.0f;
      for (float& x : v) x *= inv;
    }
    json vec;
    if (req.embedding_base64) {
      static_assert(std::endian::native == std::endian::little, "base64 embeddings are little-endian float32");
      vec = base64(v.data(), v.size() * sizeof(float));
    } else {
      vec = std::move(v);
    }
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(vec)}});
  }
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", ident.model},
          {"usage", {{"prompt_tokens", usage.prompt_tokens}, {"total_tokens", usage.prompt_tokens}}}};
}

}  // namespace pagoda::server
