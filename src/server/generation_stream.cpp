#include "server/generation_stream.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <ctime>
#include <limits>
#include <optional>
#include <random>

#include "server/anthropic_messages.h"
#include "server/embeddings.h"
#include "server/rerank.h"
#include "server/api_error.h"
#include "server/request_fields.h"
#include "server/responses_output.h"
#include "server/responses_request.h"
#include "server/tool_output.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {
namespace {

namespace asio = boost::asio;

std::string new_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}", prefix, rng());
}

bool natural(FinishReason r) { return r == FinishReason::stop || r == FinishReason::length; }

// The request as the chat pipeline takes it: Anthropic's and the Responses
// API's bodies are translated into a chat body first (anthropic_messages.h,
// responses_request.h), then parsed as chat.
GenerationRequest parse_request(Api api, const std::string& body, const ServedModel& m, ResponseStore& store) {
  // An embedding model serves embeddings only, a reranker reranks, as vLLM's
  // pooling runner and llama.cpp's --embeddings / --reranking.
  const Pooling p = m.limits.pooling;
  const bool rank = p == Pooling::rank, embed = p != Pooling::none && !rank;
  if (api == Api::embeddings && !embed)
    throw ApiError(400, rank ? "this model is a reranker: it serves /v1/rerank only"
                             : "this model generates text and has no embeddings (serve an embedding model, or this "
                               "one with --pooling mean|cls|last)");
  if (api == Api::rerank && !rank)
    throw ApiError(400,
                   "this model is not a reranker (serve one whose file declares rank pooling and a "
                   "classification head)");
  if (api != Api::embeddings && api != Api::rerank && p != Pooling::none)
    throw ApiError(400, fmt::format("this is {}: it serves {} only", rank ? "a reranker" : "an embedding model",
                                    rank ? "/v1/rerank" : "/v1/embeddings"));
  if (api == Api::messages) return parse_messages_request(body, m.limits, m.chat, m.names);
  if (api == Api::responses)
    return parse_responses_request(body, m.limits, m.chat, m.names,
                                   [&store](const std::string& id) { return store.get(id); });
  const bool chat = api == Api::chat;
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  check_model(j, m.names);
  const Endpoint endpoint = api == Api::embeddings ? Endpoint::embeddings
                            : api == Api::rerank   ? Endpoint::rerank
                            : chat                 ? Endpoint::chat
                                                   : Endpoint::completions;
  auto ignored = ignored_fields(j, endpoint);
  GenerationRequest req = api == Api::embeddings ? parse_embedding_request(j, m.limits)
                          : api == Api::rerank   ? parse_rerank_request(j, m.limits, m.chat.rerank_template())
                          : chat                 ? parse_chat_request(j, m.limits, m.chat, body)
                                                 : parse_completion_request(j, m.limits, body);
  req.ignored_fields = std::move(ignored);
  return req;
}

const char* id_prefix(Api api) {
  return api == Api::messages     ? "msg_"
         : api == Api::responses  ? "resp_"
         : api == Api::chat       ? "chatcmpl-"
         : api == Api::embeddings ? "embd-"
         : api == Api::rerank     ? "rerank-"
                                  : "cmpl-";
}

// Engine requests of one exchange in flight at once: a list of 2,048
// embedding inputs goes in as the earlier ones finish, not into the queue at once.
constexpr size_t kMaxInFlight = 64;

}  // namespace

GenerationStream::GenerationStream(std::shared_ptr<ServerState> state, std::shared_ptr<ResponseChannel> channel,
                                   asio::any_io_executor strand)
    : state_(std::move(state)), channel_(std::move(channel)), strand_(std::move(strand)) {}

void GenerationStream::start(Api api, std::string body) {
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading; retry shortly", "", "", 1);
  if (state_->draining) throw ApiError(503, "the server is shutting down");
  stage_ = Stage::parsing;
  asio::post(state_->workers, [self = shared_from_this(), m, api, body = std::move(body)] {
    GenerationRequest req;
    ResponseIdentity ident;
    std::optional<ApiError> error;
    try {
      req = parse_request(api, body, *m, self->state_->responses);
      ident = {new_id(id_prefix(api)), int64_t(std::time(nullptr)), m->name};
    } catch (const ApiError& e) {
      error = e;
    } catch (const std::exception& e) {
      spdlog::error("internal error parsing a request: {}", e.what());
      error = ApiError(500, fmt::format("internal error: {}", e.what()));
    }
    asio::post(self->strand_,
               [self, m, req = std::move(req), ident = std::move(ident), error = std::move(error)]() mutable {
                 self->submit(*m, std::move(req), std::move(ident), error ? &*error : nullptr);
               });
  });
}

void GenerationStream::start_health_probe() {
  constexpr double kProbeTimeout = 10;
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading");
  health_probe_ = true;
  GenerationRequest req;
  req.engine.prompt = {m->tokenizer.bos_id() >= 0 ? m->tokenizer.bos_id() : 0};
  req.engine.sampling.temperature = 0;
  req.engine.sampling.max_tokens = 1;
  req.engine.sampling.ignore_eos = true;
  req.engine.priority = std::numeric_limits<int32_t>::min();
  req.engine.timeout_s = kProbeTimeout;
  stage_ = Stage::parsing;
  submit(*m, std::move(req), {new_id("health-"), int64_t(std::time(nullptr)), m->name}, nullptr);
}

void GenerationStream::submit(const ServedModel& model, GenerationRequest req, ResponseIdentity ident,
                              const ApiError* error) {
  if (!channel_ || stage_ != Stage::parsing) return;  // answered or gone meanwhile
  try {
    if (error) throw *error;
    if (state_->draining) throw ApiError(503, "the server is shutting down");
    req_ = std::move(req);
    ident_ = std::move(ident);
    const size_t n = size_t(req_.engine.n), prompts = req_.num_prompts();
    choices_.resize(prompts * n);
    for (size_t i = 0; i < choices_.size(); ++i) choices_[i].prompt = i / n;
    prompt_usage_.assign(prompts, {0, 0});
    for (size_t p = 0; p < std::min(prompts, kMaxInFlight); ++p) submit_one(model, p);
  } catch (const ApiError& e) {
    // A list of prompts refused halfway: the ones already in the engine end too.
    gone_.store(true, std::memory_order_relaxed);
    for (uint64_t id : engine_ids_) model.engine->cancel(id);
    stage_ = Stage::done;
    const auto channel = channel_;  // answering may detach this stream
    return channel->respond_error(e);
  }
  model_ = &model;
  stage_ = Stage::running;
  ++state_->active_generations;
}

void GenerationStream::submit_one(const ServedModel& model, size_t prompt) {
  // Runs on the engine thread: never blocks, only hands the delta over.
  OutputSink sink = [self = shared_from_this(), prompt](RequestOutput&& out) {
    if (self->gone_.load(std::memory_order_relaxed)) return false;
    asio::post(self->strand_,
               [self, prompt, out = std::move(out)]() mutable { self->on_output(prompt, std::move(out)); });
    return true;
  };
  Request r = req_.engine;
  if (!req_.prompts.empty()) r.prompt = req_.prompts[prompt].ids;
  try {
    engine_ids_.push_back(model.engine->submit(std::move(r), std::move(sink)));
  } catch (const InvalidArgument& e) {
    throw ApiError(400, e.what());
  } catch (const Overloaded& e) {
    if (state_->draining) throw ApiError(503, "the server is shutting down");
    ++state_->rejected;
    throw ApiError(429, e.what(), "", "", 1);
  }
}

void GenerationStream::abort(const std::string& message) {
  if (!channel_) return;
  if (stage_ == Stage::running) return fail(503, message);
  if (stage_ == Stage::parsing) {
    stage_ = Stage::done;  // its parse result will find the exchange over
    const auto channel = channel_;
    channel->respond_error(ApiError(503, message));
  }
}

void GenerationStream::detach() {
  channel_.reset();
  if (stage_ == Stage::running) retire(/*cancel=*/true);
  stage_ = Stage::done;
}

void GenerationStream::on_output(size_t prompt, RequestOutput&& out) {
  if (out.request_done) engine_done_ = ++engine_requests_done_ == req_.num_prompts();
  if (!channel_ || stage_ != Stage::running) return;
  if (out.request_done && engine_ids_.size() < req_.num_prompts() && natural(out.finish)) {
    try {
      submit_one(*model_, engine_ids_.size());
    } catch (const ApiError& e) {
      return fail(e.status, e.what());
    }
  }
  if (health_probe_) return on_probe_output(out);
  // Usage over every prompt; choices numbered prompt-major from here on.
  auto& [prompt_tokens, cached_tokens] = prompt_usage_.at(prompt);
  usage_.prompt_tokens += out.num_prompt_tokens - prompt_tokens;
  usage_.cached_tokens += out.num_cached_tokens - cached_tokens;
  prompt_tokens = out.num_prompt_tokens;
  cached_tokens = out.num_cached_tokens;
  out.choice += int32_t(prompt * size_t(req_.engine.n));
  switch (out.finish) {
    case FinishReason::timeout: return fail(504, "the request timed out (--request-timeout)");
    case FinishReason::error:
      return fail(state_->draining ? 503 : 500, out.error.empty() ? "generation failed" : out.error);
    case FinishReason::abort: return fail(500, out.error.empty() ? "the request was aborted" : out.error);
    default: break;
  }
  ChoiceState& c = choices_.at(size_t(out.choice));
  if (!out.prompt_logprobs.empty()) c.prompt_logprobs = std::move(out.prompt_logprobs);
  if (!out.embedding.empty()) c.embedding = std::move(out.embedding);
  if (req_.prompt_only) {
    // max_tokens 0: the one token sampled is not part of the answer.
    out.tokens.clear();
    out.text.clear();
    out.logprobs.clear();
    if (out.finish != FinishReason::none) out.finish = FinishReason::length;
  }
  usage_.completion_tokens += int64_t(out.tokens.size());
  if (out.finish != FinishReason::none) {
    c.finish = out.finish;
    c.stop_reason = stop_reason_json(out);
  }
  if (req_.stream) {
    stream_delta(out);
  } else {
    c.text += out.text;
    c.tokens.insert(c.tokens.end(), out.tokens.begin(), out.tokens.end());
    for (auto& lp : out.logprobs) c.logprobs.push_back(std::move(lp));
  }
  if (out.request_done && engine_done_) finish();
}

void GenerationStream::on_probe_output(const RequestOutput& out) {
  if (out.finish == FinishReason::none) return;
  stage_ = Stage::done;
  retire(/*cancel=*/true);
  const auto channel = channel_;
  if (natural(out.finish)) return channel->respond(200, "application/json", R"({"status":"ok","generate":"ok"})");
  channel->respond(503, "application/json",
                   dump({{"status", "generate_failed"},
                         {"reason", out.error.empty() ? std::string(to_string(out.finish)) : out.error}}));
}

void GenerationStream::stream_head() {
  channel_->begin_events(response_headers());
  head_sent_ = true;
  if (req_.api == Api::messages) {
    messages_ = std::make_unique<MessagesStream>(ident_, req_);
    return send_named({messages_->start(int64_t(req_.engine.prompt.size()))});
  }
  if (req_.api == Api::responses) {
    responses_ = std::make_unique<ResponsesStream>(ident_, req_);
    return send_named(responses_->start());
  }
  for (int i = 0; i < int(choices_.size()); ++i) {
    if (req_.api == Api::chat)
      channel_->send_event(
          dump(chat_chunk(ident_, req_, i, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)));
    else if (req_.echo)
      channel_->send_event(
          dump(completion_chunk(ident_, req_, i, req_.prompt_text_of(choices_[size_t(i)].prompt), nullptr, nullptr)));
  }
}

void GenerationStream::stream_delta(const RequestOutput& out) {
  if (!head_sent_) stream_head();
  const bool chat = req_.api == Api::chat;
  ChoiceState& c = choices_.at(size_t(out.choice));
  if (req_.api == Api::messages) return send_named(messages_->push(c, out));
  if (req_.api == Api::responses) return send_named(responses_->push(c, out));
  if (chat && tool_output_active(req_.tools)) {  // content and tool calls parsed apart
    json lp = req_.engine.sampling.logprobs && !out.logprobs.empty() ? chat_logprobs(model_->tokenizer, out.logprobs)
                                                                     : json(nullptr);
    for (const json& chunk : tool_stream_chunks(ident_, req_, out.choice, c, out, std::move(lp)))
      channel_->send_event(dump(chunk));
    return;
  }
  if (!out.text.empty() || !out.logprobs.empty()) {
    json lp = nullptr;
    if (req_.engine.sampling.logprobs && !out.logprobs.empty())
      lp = chat ? chat_logprobs(model_->tokenizer, out.logprobs)
                : completion_logprobs(model_->tokenizer, out.logprobs, c.text_offset);
    const json chunk = chat ? chat_chunk(ident_, req_, out.choice, {{"content", out.text}}, std::move(lp), nullptr)
                            : completion_chunk(ident_, req_, out.choice, out.text, std::move(lp), nullptr);
    channel_->send_event(dump(chunk));
  }
  if (natural(out.finish)) {
    const json fin = finish_reason_json(out.finish);
    const json chunk = chat ? chat_chunk(ident_, req_, out.choice, json::object(), nullptr, fin, c.stop_reason)
                            : completion_chunk(ident_, req_, out.choice, "", nullptr, fin, c.stop_reason);
    channel_->send_event(dump(chunk));
  }
}

void GenerationStream::finish() {
  stage_ = Stage::done;
  retire(/*cancel=*/false);
  const auto channel = channel_;  // the last call may detach this stream
  if (req_.stream) {
    if (!head_sent_) stream_head();
    if (messages_) {
      send_named(messages_->finish(choices_.front(), usage_));
      return channel->end_events();
    }
    if (responses_) {  // stored before its last event goes out: a client may GET it at once
      const std::vector<json> events = responses_->finish(choices_.front(), usage_);
      store_response(state_->responses, req_, responses_->response());
      send_named(events);
      return channel->end_events();
    }
    if (req_.include_usage) channel->send_event(dump(usage_chunk(ident_, req_, usage_)));
    channel->send_event("[DONE]");
    return channel->end_events();
  }
  if (req_.api == Api::responses) {
    const json body = responses_response(ident_, req_, choices_.front(), usage_);
    store_response(state_->responses, req_, body);
    return channel->respond(200, "application/json", dump(body), response_headers());
  }
  const json body = req_.api == Api::embeddings ? embeddings_response(ident_, req_, choices_, usage_)
                    : req_.api == Api::rerank   ? rerank_response(ident_, req_, choices_, usage_)
                    : req_.api == Api::messages
                        ? messages_response(ident_, req_, req_.thinking, choices_.front(), usage_)
                    : req_.api == Api::chat ? chat_response(ident_, req_, choices_, usage_, model_->tokenizer)
                                            : completion_response(ident_, req_, choices_, usage_, model_->tokenizer);
  channel->respond(200, "application/json", dump(body), response_headers());
}

void GenerationStream::send_named(const std::vector<json>& events) {
  for (const json& e : events) channel_->send_named_event(e["type"].get<std::string>(), dump(e));
}

Headers GenerationStream::response_headers() const {
  Headers h{{"X-Request-Id", ident_.id}};
  if (!req_.ignored_fields.empty()) h.emplace_back(kIgnoredFieldsHeader, ignored_fields_header(req_.ignored_fields));
  return h;
}

void GenerationStream::fail(int status, const std::string& message) {
  stage_ = Stage::done;
  retire(/*cancel=*/true);  // the other choices stop too
  const auto channel = channel_;
  if (req_.stream && head_sent_) {
    // The status line is long gone: the error is the stream's last event.
    spdlog::warn("stream {} failed: {}", ident_.id, message);
    if (messages_) {  // Anthropic's stream ends with an error event, no [DONE]
      channel->send_named_event("error", dump(anthropic_error_json(status, message)));
      return channel->end_events();
    }
    if (responses_) {  // the Responses stream ends with response.failed, no [DONE]
      send_named({responses_->failed(message)});
      return channel->end_events();
    }
    channel->send_event(dump(error_json(status, message)));
    channel->send_event("[DONE]");
    return channel->end_events();
  }
  channel->respond_error(ApiError(status, message));
}

void GenerationStream::retire(bool cancel) {
  if (retired_ || !model_) return;
  retired_ = true;
  --state_->active_generations;
  if (cancel && !engine_done_) {
    gone_.store(true, std::memory_order_relaxed);
    for (uint64_t id : engine_ids_) model_->engine->cancel(id);  // ids already ended are ignored
  }
}

}  // namespace pagoda::server
