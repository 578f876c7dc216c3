// The generation endpoints on a connection: parse, submit to the engine,
// turn the engine's deltas into a response or an event stream, and cancel
// the engine request when the client leaves.
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <ctime>
#include <limits>
#include <optional>
#include <random>

#include "server/api_error.h"
#include "server/connection.h"
#include "server/generation.h"
#include "server/openai_response.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {
namespace {

std::string new_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{:016x}", prefix, rng());
}

bool natural(FinishReason r) { return r == FinishReason::stop || r == FinishReason::length; }

}  // namespace

// Parsing and tokenizing run on the request workers (a big prompt must not
// hold up the I/O thread and every connection on it); the engine request is
// submitted back on this connection's strand.
void Connection::start_generation(bool chat, std::string body) {
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading; retry shortly", "", "", 1);
  if (state_->draining) throw ApiError(503, "the server is shutting down");
  parsing_ = true;
  asio::post(state_->workers, [self = shared_from_this(), ex = socket_.get_executor(), exchange = exchange_, m, chat,
                               body = std::move(body)] {
    std::shared_ptr<Generation> g;
    std::optional<ApiError> error;
    try {
      const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
      const Engine& engine = *m->engine;
      const ModelLimits limits{engine.tokenizer(), engine.max_model_len(), engine.config().max_n};
      g = std::make_shared<Generation>();
      g->req = chat ? parse_chat_request(j, limits, m->chat) : parse_completion_request(j, limits);
      g->choices.resize(size_t(g->req.engine.n));
      g->ident = {new_id(chat ? "chatcmpl-" : "cmpl-"), int64_t(std::time(nullptr)), m->name};
    } catch (const ApiError& e) {
      error = e;
    } catch (const std::exception& e) {
      spdlog::error("internal error parsing a request: {}", e.what());
      error = ApiError(500, fmt::format("internal error: {}", e.what()));
    }
    asio::post(ex, [self, exchange, g = std::move(g), error = std::move(error)]() mutable {
      self->submit_generation(exchange, std::move(g), error ? &*error : nullptr);
    });
  });
}

void Connection::submit_generation(uint64_t exchange, std::shared_ptr<Generation> g, const ApiError* error) {
  if (exchange != exchange_ || !parsing_ || phase_ != Phase::handling) return;  // answered or gone meanwhile
  parsing_ = false;
  try {
    if (error) throw *error;
    if (state_->draining) throw ApiError(503, "the server is shutting down");
    Engine& engine = *state_->model()->engine;
    // Runs on the engine thread: never blocks, only hands the delta over.
    OutputSink sink = [g, self = shared_from_this(), ex = socket_.get_executor()](RequestOutput&& out) {
      if (g->gone.load(std::memory_order_relaxed)) return false;
      asio::post(ex, [g, self, out = std::move(out)]() mutable { self->on_output(g, std::move(out)); });
      return true;
    };
    try {
      g->id = engine.submit(g->req.engine, std::move(sink));
    } catch (const InvalidArgument& e) {
      throw ApiError(400, e.what());
    } catch (const Overloaded& e) {
      if (state_->draining) throw ApiError(503, "the server is shutting down");
      ++state_->rejected;
      throw ApiError(429, e.what(), "", "", 1);
    }
  } catch (const ApiError& e) {
    return respond_error(e);
  }
  ++state_->active_generations;
  active_ = g;
}

// One greedy token from a one-token prompt, at the front of the queue, with
// a deadline: the whole path from admission to sampling works.
void Connection::health_generate(const ServedModel& m) {
  constexpr double kProbeTimeout = 10;
  auto g = std::make_shared<Generation>();
  g->health_probe = true;
  const Tokenizer* tok = m.engine->tokenizer();
  g->req.engine.prompt = {tok && tok->bos_id() >= 0 ? tok->bos_id() : 0};
  g->req.engine.sampling.temperature = 0;
  g->req.engine.sampling.max_tokens = 1;
  g->req.engine.sampling.ignore_eos = true;
  g->req.engine.priority = std::numeric_limits<int32_t>::min();
  g->req.engine.timeout_s = kProbeTimeout;
  g->choices.resize(1);
  g->ident = {new_id("health-"), int64_t(std::time(nullptr)), m.name};
  parsing_ = true;
  submit_generation(exchange_, std::move(g), nullptr);
}

void Connection::on_output(const std::shared_ptr<Generation>& gp, RequestOutput&& out) {
  Generation& g = *gp;
  if (out.request_done) g.engine_done = true;
  if (g.finished || phase_ != Phase::handling || active_ != gp) return;
  if (g.health_probe && out.finish != FinishReason::none) {
    g.finished = true;
    retire(g, /*cancel=*/true);
    const bool ok = out.finish == FinishReason::stop || out.finish == FinishReason::length;
    if (ok) return respond_json(200, R"({"status":"ok","generate":"ok"})");
    return respond_json(503, dump({{"status", "generate_failed"},
                                   {"reason", out.error.empty() ? std::string(to_string(out.finish)) : out.error}}));
  }
  g.usage.prompt_tokens = out.num_prompt_tokens;
  g.usage.cached_tokens = out.num_cached_tokens;
  switch (out.finish) {
    case FinishReason::timeout:
      return fail_generation(g, 504, "the request timed out (--request-timeout)");
    case FinishReason::error:
      return fail_generation(g, state_->draining ? 503 : 500, out.error.empty() ? "generation failed" : out.error);
    case FinishReason::abort:
      return fail_generation(g, 500, out.error.empty() ? "the request was aborted" : out.error);
    default:
      break;
  }
  ChoiceState& c = g.choices.at(size_t(out.choice));
  g.usage.completion_tokens += int64_t(out.tokens.size());
  if (out.finish != FinishReason::none) c.finish = out.finish;
  if (g.req.stream) {
    stream_delta(g, out);
  } else {
    c.text += out.text;
    c.tokens.insert(c.tokens.end(), out.tokens.begin(), out.tokens.end());
    for (auto& lp : out.logprobs) c.logprobs.push_back(std::move(lp));
  }
  if (out.request_done) finish_generation(g);
}

void Connection::stream_head(Generation& g) {
  if (!http11_) keep_alive_ = false;  // HTTP/1.0: the stream ends when the connection does
  send(sse_head(keep_alive_ && !close_after_ && !state_->draining, http11_, {{"X-Request-Id", g.ident.id}}));
  g.head_sent = true;
  for (int i = 0; i < g.req.engine.n; ++i) {
    if (g.req.api == Api::chat)
      send(sse_event(dump(chat_chunk(g.ident, g.req, i, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr)), http11_));
    else if (g.req.echo)
      send(sse_event(dump(completion_chunk(g.ident, g.req, i, g.req.prompt_text, nullptr, nullptr)), http11_));
  }
}

void Connection::stream_delta(Generation& g, const RequestOutput& out) {
  if (!g.head_sent) stream_head(g);
  const bool chat = g.req.api == Api::chat;
  ChoiceState& c = g.choices.at(size_t(out.choice));
  if (!out.text.empty() || !out.logprobs.empty()) {
    json lp = nullptr;
    if (g.req.engine.sampling.logprobs && !out.logprobs.empty()) {
      const Tokenizer& tok = *state_->model()->engine->tokenizer();
      lp = chat ? chat_logprobs(tok, out.logprobs) : completion_logprobs(tok, out.logprobs, c.text_offset);
    }
    const json chunk = chat ? chat_chunk(g.ident, g.req, out.choice, {{"content", out.text}}, std::move(lp), nullptr)
                            : completion_chunk(g.ident, g.req, out.choice, out.text, std::move(lp), nullptr);
    send(sse_event(dump(chunk), http11_));
  }
  if (natural(out.finish)) {
    const json fin = finish_reason_json(out.finish);
    const json chunk = chat ? chat_chunk(g.ident, g.req, out.choice, json::object(), nullptr, fin)
                            : completion_chunk(g.ident, g.req, out.choice, "", nullptr, fin);
    send(sse_event(dump(chunk), http11_));
  }
}

void Connection::finish_generation(Generation& g) {
  g.finished = true;
  retire(g, /*cancel=*/false);
  if (g.req.stream) {
    if (!g.head_sent) stream_head(g);
    if (g.req.include_usage) send(sse_event(dump(usage_chunk(g.ident, g.req, g.usage)), http11_));
    send(sse_event("[DONE]", http11_));
    if (http11_) send(chunked_end());
    return response_complete();
  }
  const Tokenizer& tok = *state_->model()->engine->tokenizer();
  const json body = g.req.api == Api::chat ? chat_response(g.ident, g.req, g.choices, g.usage, tok)
                                           : completion_response(g.ident, g.req, g.choices, g.usage, tok);
  respond(200, "application/json", dump(body), {{"X-Request-Id", g.ident.id}});
}

void Connection::fail_generation(Generation& g, int status, const std::string& message) {
  g.finished = true;
  retire(g, /*cancel=*/true);  // the other choices stop too
  if (g.req.stream && g.head_sent) {
    // The status line is long gone: the error is the stream's last event.
    spdlog::warn("stream {} failed: {}", g.ident.id, message);
    send(sse_event(dump(error_json(status, message)), http11_));
    send(sse_event("[DONE]", http11_));
    if (http11_) send(chunked_end());
    return response_complete();
  }
  respond_error(ApiError(status, message));
}

void Connection::retire(Generation& g, bool cancel) {
  if (g.retired) return;
  g.retired = true;
  --state_->active_generations;
  if (cancel && !g.engine_done) {
    g.gone.store(true, std::memory_order_relaxed);
    if (const ServedModel* m = state_->model()) m->engine->cancel(g.id);
  }
}

}  // namespace pagoda::server
