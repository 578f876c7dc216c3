#include "server/openai_request.h"

#include <algorithm>
#include <climits>

#include "server/api_error.h"
#include "server/chat_body.h"
#include "server/json_fields.h"
#include "server/request_fields.h"
#include "server/tool_constraint.h"
#include "server/sampling_fields.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {
namespace {

// Fields Pagoda cannot honour: refused rather than silently ignored.
void reject_unsupported(const json& body, Api api) {
  if (api == Api::completions)
    for (const char* name : {"tools", "functions", "tool_choice", "function_call"}) {
      const json* f = field(body, name);
      if (f && !(f->is_array() && f->empty()) && !(f->is_string() && f->get<std::string>() == "none"))
        bad_request(name, "'{}' is not supported by this server", name);
    }
  if (auto s = opt_string(body, "suffix"); s && !s->empty()) bad_request("suffix", "'suffix' is not supported");
}

// The sampling and scheduling fields both endpoints share.
void parse_common(const json& body, const ModelLimits& model, GenerationRequest& g) {
  reject_unsupported(body, g.api);
  SamplingParams& s = g.engine.sampling;
  if (auto v = opt_number(body, "temperature")) s.temperature = float(*v);
  if (auto v = opt_number(body, "top_p")) s.top_p = float(*v);
  if (auto v = opt_int32(body, "top_k", -1, INT32_MAX)) s.top_k = *v;
  if (auto v = opt_number(body, "min_p")) s.min_p = float(*v);
  if (auto v = opt_number(body, "repetition_penalty")) s.repetition_penalty = float(*v);
  if (auto v = opt_number(body, "frequency_penalty")) s.frequency_penalty = float(*v);
  if (auto v = opt_number(body, "presence_penalty")) s.presence_penalty = float(*v);
  if (auto v = opt_integer(body, "seed")) s.seed = uint64_t(*v);
  s.stop = opt_string_list(body, "stop");
  if (auto v = opt_bool(body, "ignore_eos")) s.ignore_eos = *v;
  if (auto v = opt_int32(body, "n", 1, model.max_n)) g.engine.n = *v;
  parse_extra_sampling(body, g.engine.n, int64_t(model.tokenizer->vocab_size()), s);
  if (auto v = opt_int32(body, "priority", INT32_MIN, INT32_MAX)) g.engine.priority = *v;
  if (auto v = opt_string(body, "cache_salt")) g.engine.cache_salt = *v;
  if (auto v = opt_bool(body, "stream")) g.stream = *v;
  if (const json* so = field(body, "stream_options")) {
    if (!g.stream) bad_request("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (!so->is_object()) bad_request("stream_options", "'stream_options' must be an object");
    if (auto v = opt_bool(*so, "include_usage")) g.include_usage = *v;
  }
}

// The sampler's own range checks, reported against the field they name.
void validate_sampling(const SamplingParams& s) {
  try {
    s.validate();
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    throw ApiError(400, msg, msg.substr(0, msg.find(' ')));
  }
}

// Prompt and output must fit the context (and the KV pool, which bounds it).
void check_length(size_t prompt_len, const GenerationRequest& g, const ModelLimits& model, const char* prompt_field) {
  const int64_t prompt = int64_t(prompt_len);
  const auto& max_tokens = g.engine.sampling.max_tokens;
  if (prompt + 1 > model.max_model_len)
    throw ApiError(400,
                   fmt::format("This model's maximum context length is {} tokens. However, your prompt has {} tokens "
                               "(at least one more is needed for the completion).",
                               model.max_model_len, prompt),
                   prompt_field, "context_length_exceeded");
  if (max_tokens && prompt + *max_tokens > model.max_model_len)
    throw ApiError(400,
                   fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens "
                               "({} in the prompt, {} for the completion). Please reduce the prompt or the completion "
                               "length.",
                               model.max_model_len, prompt + *max_tokens, prompt, *max_tokens),
                   "max_tokens", "context_length_exceeded");
}

// Encodes a prompt, refusing first without encoding a text too long for any
// tokenization of it to fit the context (so a huge prompt costs no CPU).
// With truncate_prompt_tokens the whole text is encoded and its tail kept.
std::vector<TokenId> encode_prompt(const std::string& text, bool add_bos, bool parse_special, const ModelLimits& model,
                                   const char* prompt_field, std::optional<int32_t> truncate = std::nullopt) {
  const Tokenizer& tok = *model.tokenizer;
  const size_t min_tokens = (text.size() + tok.max_token_bytes() - 1) / tok.max_token_bytes();
  if (!truncate && min_tokens + 1 > size_t(model.max_model_len))
    throw ApiError(400,
                   fmt::format("This model's maximum context length is {} tokens. However, your prompt has at least {} "
                               "tokens ({} bytes).",
                               model.max_model_len, min_tokens, text.size()),
                   prompt_field, "context_length_exceeded");
  auto ids = tok.encode(text, add_bos, parse_special);
  truncate_prompt(ids, truncate);
  return ids;
}

std::vector<TokenId> token_ids(const json& arr, const ModelLimits& model) {
  std::vector<TokenId> ids;
  const int64_t vocab = int64_t(model.tokenizer->vocab_size());
  for (const auto& t : arr) {
    if (!t.is_number_integer()) bad_request("prompt", "a token-id prompt must hold integers only");
    ids.push_back(vocab_token_id(t.get<int64_t>(), vocab, "prompt"));
  }
  if (ids.empty()) bad_request("prompt", "the prompt is empty");
  return ids;
}

// One prompt: a string or an array of token ids.
PromptEntry parse_one_prompt(const json& p, const ModelLimits& model, std::optional<int32_t> truncate) {
  const Tokenizer& tok = *model.tokenizer;
  PromptEntry e;
  if (p.is_string()) {
    e.text = p.get<std::string>();
    e.ids = encode_prompt(e.text, tok.add_bos_by_default(), /*parse_special=*/true, model, "prompt", truncate);
    if (e.ids.empty()) bad_request("prompt", "the prompt is empty");
    if (truncate) e.text = tok.decode(e.ids);  // echo shows what the model saw
  } else if (p.is_array()) {
    e.ids = token_ids(p, model);
    truncate_prompt(e.ids, truncate);
    e.text = tok.decode(e.ids);
  } else {
    bad_request("prompt", "'prompt' must be a string or an array of token ids");
  }
  return e;
}

// prompt: a string, an array of token ids, or a list of up to kMaxPrompts of those.
void parse_prompt(const json& body, const ModelLimits& model, GenerationRequest& g) {
  const json* p = field(body, "prompt");
  if (!p) bad_request("prompt", "'prompt' is required");
  const auto truncate = parse_truncate_prompt_tokens(body, model.max_model_len);
  if (p->is_array() && !p->empty() && (p->front().is_string() || p->front().is_array())) {
    if (p->size() > GenerationRequest::kMaxPrompts)
      bad_request("prompt", "a list of prompts may hold at most {} prompts, got {}", GenerationRequest::kMaxPrompts,
                  p->size());
    if (p->size() > 1) {
      for (const auto& one : *p) {
        if (!one.is_string() && !one.is_array())
          bad_request("prompt", "a list of prompts must hold strings or arrays of token ids only");
        g.prompts.push_back(parse_one_prompt(one, model, truncate));
      }
      g.engine.prompt = g.prompts.front().ids;
      g.prompt_text = g.prompts.front().text;
      return;
    }
    p = &p->front();
  }
  PromptEntry e = parse_one_prompt(*p, model, truncate);
  g.engine.prompt = std::move(e.ids);
  g.prompt_text = std::move(e.text);
}

// echo + logprobs, max_tokens 0 and vLLM's prompt_logprobs: the engine
// computes the prompt's logprobs (Request::prompt_logprobs) with the larger k.
void parse_prompt_logprobs(const json& body, GenerationRequest& g) {
  SamplingParams& s = g.engine.sampling;
  if (s.max_tokens == 0) {
    // As vLLM: the prompt alone, scored; one token is still sampled, then dropped.
    if (!g.echo) bad_request("max_tokens", "max_tokens 0 is only allowed with echo (to score the prompt)");
    g.prompt_only = true;
    s.max_tokens = 1;
  }
  if (g.echo && s.logprobs) {
    g.echo_logprobs = true;
    g.engine.prompt_logprobs = *s.logprobs;
  }
  g.prompt_logprobs = opt_int32(body, "prompt_logprobs", 0, SamplingParams::kMaxLogprobs);
  if (g.prompt_logprobs) g.engine.prompt_logprobs = std::max(g.engine.prompt_logprobs.value_or(0), *g.prompt_logprobs);
  if (g.engine.prompt_logprobs && g.stream)
    bad_request(g.prompt_logprobs ? "prompt_logprobs" : "echo",
                "prompt logprobs (prompt_logprobs, or echo with logprobs) are not supported with stream");
}

}  // namespace

GenerationRequest parse_completion_request(const json& body, const ModelLimits& model, std::string_view raw_body) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object");
  GenerationRequest g;
  g.api = Api::completions;
  parse_common(body, model, g);
  g.engine.sampling.max_tokens = opt_int32(body, "max_tokens", 0, INT32_MAX).value_or(16);
  if (auto v = opt_int32(body, "logprobs", 0, SamplingParams::kMaxLogprobs)) g.engine.sampling.logprobs = *v;
  if (auto v = opt_bool(body, "echo")) g.echo = *v;
  parse_prompt_logprobs(body, g);
  parse_prompt(body, model, g);
  validate_sampling(g.engine.sampling);
  for (size_t i = 0; i < g.num_prompts(); ++i) check_length(g.prompt_ids(i).size(), g, model, "prompt");
  g.engine.constraint = parse_constraint(body, model.grammar, raw_body);  // last: the costly check
  return g;
}

GenerationRequest parse_translated_chat(const nlohmann::ordered_json& chat_body, const ModelLimits& model,
                                        const ChatPrompt& chat, const std::vector<std::string>& served,
                                        std::string (*field_name)(const std::string& chat_field)) {
  const std::string text = chat_body.dump();  // its key order, for a JSON Schema's property order
  const json body = json::parse(text);
  check_model(body, served);
  try {
    return parse_chat_request(body, model, chat, text);
  } catch (const ApiError& e) {
    ApiError named = e;
    named.param = field_name(e.param);
    throw named;
  }
}

GenerationRequest parse_chat_request(const json& body, const ModelLimits& model, const ChatPrompt& chat,
                                     std::string_view raw_body) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object");
  GenerationRequest g;
  g.api = Api::chat;
  parse_common(body, model, g);
  auto max_tokens = opt_int32(body, "max_completion_tokens", 1, INT32_MAX);
  if (!max_tokens) max_tokens = opt_int32(body, "max_tokens", 1, INT32_MAX);
  g.engine.sampling.max_tokens = max_tokens;
  const bool logprobs = opt_bool(body, "logprobs").value_or(false);
  const auto top = opt_int32(body, "top_logprobs", 0, SamplingParams::kMaxLogprobs);
  if (top && !logprobs) bad_request("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
  if (logprobs) g.engine.sampling.logprobs = top.value_or(0);
  parse_prompt_logprobs(body, g);
  ChatBody chat_body =
      render_chat_body(body, raw_body, chat, *model.tokenizer, model.tool_parser, model.reasoning_parser);
  g.tools = std::move(chat_body.tools);
  // Harmony's markers are control tokens, which a decode skips by default:
  // the reader needs them in the text (it hands the client only the fields).
  if (g.tools.harmony) g.engine.sampling.skip_special_tokens = false;
  // Likewise a vocabulary that made the reasoning's close tag or the call
  // marker a control token (most make </think> a user-defined one, decoded
  // as text; Gemma 4's <channel|>, <|tool_call>, <|"|> are control tokens).
  const auto keep_if_control = [&](std::string_view marker) {
    const int32_t id = model.tokenizer->find_token(marker);
    if (id >= 0 && model.tokenizer->token_type(id) == TokenType::Control) g.engine.sampling.skip_special_tokens = false;
  };
  // A prompt that closed the thinking leaves nothing to split: the decode
  // drops control tokens as usual (stray markup of Gemma 4's included).
  if (g.tools.reasoning && g.tools.think_start != toolcall::ThinkStart::closed)
    keep_if_control(toolcall::reasoning_close_tag(*g.tools.reasoning));
  if (g.tools.parser == toolcall::Format::gemma4) keep_if_control("<|tool_call>");
  const RenderedPrompt& rendered = chat_body.prompt;
  g.prompt_text = rendered.text;
  g.engine.prompt = encode_prompt(rendered.text, rendered.add_bos, rendered.parse_special, model, "messages",
                                  parse_truncate_prompt_tokens(body, model.max_model_len));
  if (g.engine.prompt.empty()) bad_request("messages", "the rendered prompt is empty");
  validate_sampling(g.engine.sampling);
  check_length(g.engine.prompt.size(), g, model, "messages");
  g.engine.constraint = parse_constraint(body, model.grammar, raw_body);  // last: the costly check
  if (auto forced = forced_tool_constraint(g.tools, model.grammar)) {
    if (g.engine.constraint)
      bad_request("tool_choice", "a forced 'tool_choice' cannot be combined with another output constraint");
    g.engine.constraint = std::move(forced);
  }
  // A thinking model's grammar starts after its reasoning (as vLLM's structured
  // outputs with a reasoning parser): the chain of thought is free text.
  if (g.engine.constraint && g.tools.reasoning && g.tools.think_start != toolcall::ThinkStart::closed) {
    g.engine.constraint_after = std::string(toolcall::reasoning_close_tag(*g.tools.reasoning));
    // qwen3 and gemma4 may answer without thinking: then the grammar holds from the first token.
    if (toolcall::thinking_optional(*g.tools.reasoning) && g.tools.think_start == toolcall::ThinkStart::maybe)
      g.engine.constraint_gate = std::string(toolcall::reasoning_open_tag(*g.tools.reasoning));
  }
  return g;
}

}  // namespace pagoda::server
