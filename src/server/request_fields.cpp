#include "server/request_fields.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <set>

#include "server/api_error.h"

namespace pagoda::server {
namespace {

using Names = std::vector<std::string_view>;

// OpenAI's sampling and request fields plus vLLM's extra sampling parameters,
// shared by both generation endpoints.
const Names kSampling = {
    "model", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options", "stop", "presence_penalty",
    "frequency_penalty", "logit_bias", "seed", "user", "metadata", "store", "service_tier", "response_format",
    // vLLM's sampling parameters
    "best_of", "use_beam_search", "top_k", "min_p", "repetition_penalty", "length_penalty", "stop_token_ids",
    "include_stop_str_in_output", "ignore_eos", "min_tokens", "skip_special_tokens", "spaces_between_special_tokens",
    "truncate_prompt_tokens", "prompt_logprobs", "allowed_token_ids", "bad_words", "add_special_tokens", "priority",
    "request_id", "cache_salt", "logits_processors", "return_tokens_as_token_ids", "return_token_ids",
    "kv_transfer_params", "vllm_xargs",
    // structured outputs (vLLM's current and older names, llama.cpp's)
    "structured_outputs", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided_decoding_backend",
    "guided_whitespace_pattern", "grammar", "json_schema"};

// Fields of a chat body that shape the rendered prompt.
const Names kChatPrompt = {"messages",
                           "tools",
                           "tool_choice",
                           "parallel_tool_calls",
                           "functions",
                           "function_call",
                           "chat_template",
                           "chat_template_kwargs",
                           "add_generation_prompt",
                           "continue_final_message",
                           "documents",
                           "mm_processor_kwargs",
                           "reasoning_effort"};  // a template variable (gpt-oss's reads it)

const Names kCompletionsOnly = {"prompt", "suffix", "echo", "logprobs", "prompt_embeds"};

const Names kChatOnly = {
    "logprobs",           "top_logprobs", "max_completion_tokens", "modalities",        "audio", "prediction",
    "web_search_options", "verbosity",    "prompt_cache_key",      "safety_identifier", "echo"};

// Anthropic's Messages API (anthropic_messages.h); count_tokens takes the same body less the sampling.
const Names kMessages = {"model",  "max_tokens",   "messages",  "system",     "stop_sequences", "temperature",
                         "top_p",  "top_k",        "metadata",  "tools",      "tool_choice",    "thinking",
                         "stream", "service_tier", "container", "mcp_servers"};

// OpenAI's embeddings fields and vLLM's extras (embeddings.h).
const Names kEmbeddings = {"model", "input",     "encoding_format",        "dimensions",
                           "user",  "normalize", "truncate_prompt_tokens", "add_special_tokens"};

// vLLM's and llama.cpp's rerank fields (rerank.h).
const Names kRerank = {"model", "query", "documents", "top_n", "return_documents"};
// OpenAI's Responses API (responses_request.h).
const Names kResponses = {"model",
                          "input",
                          "instructions",
                          "previous_response_id",
                          "tools",
                          "tool_choice",
                          "parallel_tool_calls",
                          "text",
                          "max_output_tokens",
                          "temperature",
                          "top_p",
                          "reasoning",
                          "stream",
                          "stream_options",
                          "store",
                          "metadata",
                          "user",
                          "truncation",
                          "include",
                          "background",
                          "conversation",
                          "prompt",
                          "service_tier",
                          "prompt_cache_key",
                          "safety_identifier",
                          "max_tool_calls",
                          "top_logprobs"};

const Names kTokenize = {"model", "prompt", "add_special_tokens", "return_token_strs"};
const Names kDetokenize = {"model", "tokens"};

bool in(const Names& names, std::string_view s) { return std::find(names.begin(), names.end(), s) != names.end(); }

bool known(Endpoint e, std::string_view name) {
  switch (e) {
    case Endpoint::completions: return in(kSampling, name) || in(kCompletionsOnly, name);
    case Endpoint::chat:
    case Endpoint::apply_template: return in(kSampling, name) || in(kChatOnly, name) || in(kChatPrompt, name);
    case Endpoint::tokenize: return in(kTokenize, name) || in(kChatPrompt, name);
    case Endpoint::detokenize: return in(kDetokenize, name);
    case Endpoint::messages:
    case Endpoint::count_tokens: return in(kMessages, name);
    case Endpoint::embeddings: return in(kEmbeddings, name);
    case Endpoint::rerank: return in(kRerank, name);
    case Endpoint::responses: return in(kResponses, name);
  }
  return false;
}

// Names logged so far, process-wide. Bounded: past the cap no more are logged.
constexpr size_t kMaxLogged = 1024;
constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxHeaderNames = 32;

void log_once(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string> logged;
  std::lock_guard lock(mu);
  if (logged.size() >= kMaxLogged || !logged.insert(name.substr(0, kMaxNameBytes)).second) return;
  spdlog::warn("request field '{}' is not part of the API and is ignored (logged once per field name)",
               ignored_fields_header({name}));
  if (logged.size() == kMaxLogged) spdlog::warn("{} unknown field names logged; no more will be", kMaxLogged);
}

}  // namespace

void check_model(const nlohmann::json& body, const std::vector<std::string>& served) {
  if (!body.is_object()) return;
  const auto it = body.find("model");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_string()) bad_request("model", "'model' must be a string");
  const auto& name = it->get_ref<const std::string&>();
  if (std::find(served.begin(), served.end(), name) == served.end())
    throw ApiError(404, fmt::format("The model `{}` does not exist.", name.substr(0, 256)), "model", "model_not_found");
}

std::vector<std::string> ignored_fields(const nlohmann::json& body, Endpoint endpoint) {
  std::vector<std::string> out;
  if (!body.is_object()) return out;
  for (const auto& [name, value] : body.items()) {
    if (known(endpoint, name)) continue;
    log_once(name);
    out.push_back(name);
  }
  return out;
}

std::string ignored_fields_header(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kMaxHeaderNames; ++i) {
    if (i) out += ", ";
    const std::string_view name = std::string_view(names[i]).substr(0, kMaxNameBytes);
    for (const char ch : name) {
      const auto c = static_cast<unsigned char>(ch);
      if (c > 0x20 && c < 0x7f && c != ',' && c != '%')
        out += ch;
      else
        out += fmt::format("%{:02X}", c);
    }
  }
  if (names.size() > kMaxHeaderNames) out += fmt::format(", ...{} more", names.size() - kMaxHeaderNames);
  return out;
}

}  // namespace pagoda::server
