// A client connection: reading requests, routing, writing, closing. The
// generation endpoints' work is in generation_stream.cpp.
#include "server/connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include "engine/clock.h"
#include "server/anthropic_messages.h"
#include "server/api_error.h"
#include "server/cors.h"
#include "server/generation_stream.h"
#include "server/metrics.h"
#include "server/vllm_metrics.h"
#include "util/error.h"
#include "server/openai_response.h"
#include "server/responses_output.h"

namespace pagoda::server {
namespace {

using namespace std::chrono_literals;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

constexpr size_t kLingerBytes = 64 << 20;  // what a lingering close discards at most

// The value of `name` in a query string ("?a=1&b=2"); empty when absent.
std::string_view query_value(std::string_view query, std::string_view name) {
  if (query.starts_with('?')) query.remove_prefix(1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.starts_with(name) && pair.size() > name.size() && pair[name.size()] == '=')
      return pair.substr(name.size() + 1);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  return {};
}

}  // namespace

Connection::Connection(tcp::socket socket, std::shared_ptr<ServerState> state)
    : socket_(std::move(socket)),
      state_(std::move(state)),
      read_timer_(socket_.get_executor()),
      write_timer_(socket_.get_executor()) {}

Connection::~Connection() { state_->remove_connection(this); }

void Connection::start() {
  state_->add_connection(this, weak_from_this());
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    error_code ec;
    self->socket_.set_option(tcp::no_delay(true), ec);  // stream tokens as they come
    self->begin_reading();
  });
}

void Connection::drain() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    if (self->phase_ == Phase::reading && self->out_.empty() && !self->write_in_flight_)
      self->close();
    else
      self->close_after_ = true;
  });
}

void Connection::abort_generation(const std::string& message) {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this(), message] {
    if (self->phase_ != Phase::handling) return;
    if (auto stream = self->stream_) stream->abort(message);
  });
}

// ---- reading ----

void Connection::begin_reading() {
  phase_ = Phase::reading;
  if (state_->draining || close_after_) {
    close();
    return;
  }
  reader_.emplace(RequestLimits{.body_bytes = state_->config.max_body_bytes});
  cors_origin_.clear();
  allow_.clear();
  anthropic_ = false;
  head_ = false;
  continue_sent_ = false;
  read_stage_ = ReadStage::idle;
  arm_read_timer();
  // A pipelined request may be buffered already. Posted, not called: a
  // buffer of thousands of small requests must not answer them recursively.
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->parse_request(); });
}

void Connection::parse_request() {
  if (phase_ != Phase::reading) return;
  const auto data = buffer_.data();
  buffer_.consume(reader_->feed(std::string_view(static_cast<const char*>(data.data()), data.size())));
  switch (reader_->state()) {
    case RequestReader::State::failed:
      anthropic_ = reader_->target().starts_with("/v1/messages");  // a body too large gets its API's error shape
      return refuse(reader_->error_status(), reader_->error());
    case RequestReader::State::done: return on_request();
    case RequestReader::State::need_more: break;
  }
  if (reader_->expects_continue() && !continue_sent_) {
    continue_sent_ = true;
    send("HTTP/1.1 100 Continue\r\n\r\n");
  }
  // The header deadline runs from the request's first byte; the body's
  // restarts with every byte that arrives.
  const ReadStage stage = reader_->header_done() ? ReadStage::body
                          : buffer_.size() > 0   ? ReadStage::header
                                                 : ReadStage::idle;
  if (stage != read_stage_ || stage == ReadStage::body) {
    read_stage_ = stage;
    arm_read_timer();
  }
  read_some();
}

void Connection::arm_read_timer() {
  const auto& c = state_->config;
  const double s = read_stage_ == ReadStage::idle     ? c.keep_alive_timeout_s
                   : read_stage_ == ReadStage::header ? c.header_timeout_s
                                                      : c.body_timeout_s;
  read_timer_.expires_after(seconds(s));
  read_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->phase_ != Phase::reading) return;
    if (self->read_timer_.expiry() > std::chrono::steady_clock::now()) return;  // re-armed since
    const auto& c = self->state_->config;
    switch (self->read_stage_) {
      case ReadStage::idle: return self->close();
      case ReadStage::header:
        return self->refuse(408, fmt::format("the request headers did not arrive within {} s", c.header_timeout_s));
      case ReadStage::body:
        return self->refuse(408, fmt::format("the request body brought no bytes for {} s", c.body_timeout_s));
    }
  });
}

// One read at a time, whatever the phase: while reading it feeds the parser;
// while a request is answered it keeps pipelined bytes and notices a client
// that leaves; while lingering it drops what the client still sends.
void Connection::read_some() {
  if (reading_ || phase_ == Phase::closed) return;
  if (phase_ == Phase::handling && buffer_.size() >= kMaxPipelined) return;
  if (phase_ == Phase::lingering) buffer_.consume(buffer_.size());
  reading_ = true;
  socket_.async_read_some(asio::buffer(chunk_.get(), kReadSize),
                          [self = shared_from_this()](error_code ec, size_t n) { self->on_read(ec, n); });
}

void Connection::on_read(error_code ec, size_t n) {
  reading_ = false;
  if (phase_ == Phase::closed) return;
  if (phase_ == Phase::lingering) {
    lingered_ += n;
    if (ec || lingered_ > kLingerBytes) return close();
    return read_some();
  }
  if (ec) {
    if (ec == asio::error::operation_aborted) return;
    if (stream_ && stream_->running()) spdlog::debug("client of {} left: {}", stream_->id(), ec.message());
    return close();  // EOF or a reset: the client is gone, wherever its request is
  }
  buffer_.commit(asio::buffer_copy(buffer_.prepare(n), asio::buffer(chunk_.get(), n)));
  if (phase_ == Phase::reading) return parse_request();
  read_some();
}

// An error answered before the request was read to its end: the connection
// cannot be trusted to find the next request, so it closes after the answer.
void Connection::refuse(int status, std::string message) {
  reader_.reset();
  read_timer_.cancel();
  phase_ = Phase::handling;
  keep_alive_ = false;
  linger_ = true;  // the client may still be sending: read it before closing
  respond_error(ApiError(status, message));
}

void Connection::on_request() {
  read_timer_.cancel();
  phase_ = Phase::handling;
  complete_ = false;
  auto req = reader_->release();
  reader_.reset();
  keep_alive_ = req.keep_alive() && !state_->draining;
  http11_ = req.version() >= 11;
  head_ = req.method() == http::verb::head;
  if (const auto origin = req.find(http::field::origin); origin != req.end())
    cors_origin_ = cors_allow_origin(state_->config.allowed_origins, std::string_view(origin->value()));
  read_some();  // from now on, EOF on the socket means the client left
  try {
    route(req);
  } catch (const ApiError& e) {
    respond_error(e);
  } catch (const std::exception& e) {
    spdlog::error("internal error answering {} {}: {}", std::string_view(req.method_string()),
                  std::string_view(req.target()), e.what());
    respond_error(ApiError(500, fmt::format("internal error: {}", e.what())));
  }
}

// ---- routing ----

// The route table: a path (or a path prefix), its method, and whether it is
// under /v1 or /debug (the API key guards those). Unknown path: 404; OPTIONS on
// a known path: 204 (a CORS preflight, no key needed); a known path without the
// key: 401; the wrong method: 405 with Allow. HEAD is answered on every GET route.
struct Connection::Route {
  std::string_view path;
  bool prefix;
  http::verb method;
  bool v1;
  void (Connection::*handle)(RequestReader::Request&, std::string_view path, std::string_view query);
};

const Connection::Route Connection::kRoutes[] = {
    {"/health", false, http::verb::get, false, &Connection::health},
    {"/health/live", false, http::verb::get, false, &Connection::health_live},
    {"/metrics", false, http::verb::get, false, &Connection::metrics},
    {"/reset_prefix_cache", false, http::verb::post, true, &Connection::reset_prefix_cache},
    {"/debug/kv_cache_blocks", false, http::verb::get, true, &Connection::kv_cache_blocks},
    {"/v1/models", false, http::verb::get, true, &Connection::models},
    {"/v1/models/", true, http::verb::get, true, &Connection::models},
    {"/v1/completions", false, http::verb::post, true, &Connection::completions},
    {"/v1/chat/completions", false, http::verb::post, true, &Connection::chat_completions},
    {"/v1/messages", false, http::verb::post, true, &Connection::messages},
    {"/v1/embeddings", false, http::verb::post, true, &Connection::embeddings},
    {"/v1/rerank", false, http::verb::post, true, &Connection::rerank},
    {"/rerank", false, http::verb::post, true, &Connection::rerank},
    {"/v2/rerank", false, http::verb::post, true, &Connection::rerank},
    {"/v1/messages/count_tokens", false, http::verb::post, true, &Connection::count_tokens},
    {"/v1/responses", false, http::verb::post, true, &Connection::responses},
    {"/v1/responses/", true, http::verb::get, true, &Connection::stored_response},
    {"/v1/responses/", true, http::verb::delete_, true, &Connection::stored_response},
    {"/tokenize", false, http::verb::post, true, &Connection::tokenize},
    {"/detokenize", false, http::verb::post, true, &Connection::detokenize},
    {"/apply-template", false, http::verb::post, true, &Connection::apply_template},
    {"/version", false, http::verb::get, false, &Connection::version},
    {"/", false, http::verb::get, false, &Connection::dashboard_page},
    {"/dashboard", false, http::verb::get, false, &Connection::dashboard_page},
    {"/dashboard/", true, http::verb::get, false, &Connection::dashboard_page},
    {"/debug/state", false, http::verb::get, true, &Connection::debug_state},
    {"/debug/events", false, http::verb::get, true, &Connection::debug_events},
};

void Connection::route(RequestReader::Request& req) {
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const std::string_view method(req.method_string().data(), req.method_string().size());
  const Route* match = nullptr;
  std::string methods;  // the path's methods, for Allow
  bool guarded = false;
  for (const Route& r : kRoutes) {
    if (r.prefix ? !path.starts_with(r.path) : path != r.path) continue;
    methods += fmt::format("{}{}", methods.empty() ? "" : ", ", std::string_view(http::to_string(r.method)));
    if (r.method == http::verb::get) methods += ", HEAD";
    guarded |= r.v1;
    const bool head_of_get = req.method() == http::verb::head && r.method == http::verb::get;
    if (!match && (req.method() == r.method || head_of_get)) match = &r;
  }
  if (methods.empty()) throw ApiError(404, fmt::format("no such endpoint: {} {}", method, path));
  anthropic_ = path.starts_with("/v1/messages");
  allow_ = methods + ", OPTIONS";
  if (req.method() == http::verb::options) return preflight(req);
  if (guarded && !authorized(req))
    throw ApiError(401, "invalid or missing API key (send 'Authorization: Bearer KEY' or 'x-api-key: KEY')");
  if (!match) throw ApiError(405, fmt::format("method {} is not allowed for {} (use {})", method, path, methods));
  // An event stream never ends: HEAD gets its head alone.
  if (head_ && match->handle == &Connection::debug_events && state_->config.dashboard)
    return respond(200, "text/event-stream; charset=utf-8", "", {{"Cache-Control", "no-cache"}});
  return (this->*match->handle)(req, path, target.substr(path.size()));
}

// OPTIONS: the path's methods, and for an allowed origin what CORS asks.
void Connection::preflight(const RequestReader::Request& req) {
  Headers h{{"Allow", allow_}};
  if (!cors_origin_.empty()) {
    const auto it = req.find(http::field::access_control_request_headers);
    const std::string_view asked = it == req.end() ? std::string_view() : std::string_view(it->value());
    for (auto& kv : cors_preflight_headers(allow_, asked)) h.push_back(std::move(kv));
  }
  respond(204, "", "", h);
}

// `Authorization: Bearer KEY`, or `x-api-key: KEY` (Anthropic's clients send that).
bool Connection::authorized(const RequestReader::Request& req) const {
  const auto& key = state_->config.api_key;
  if (key.empty()) return true;
  // The key is compared in constant time.
  const auto matches = [&key](std::string_view token) {
    unsigned diff = token.size() == key.size() ? 0 : 1;
    for (size_t i = 0; i < key.size(); ++i) diff |= unsigned(key[i] ^ (i < token.size() ? token[i] : 0));
    return diff == 0;
  };
  if (auto x = req.find("x-api-key"); x != req.end() && matches(std::string_view(x->value().data(), x->value().size())))
    return true;
  auto it = req.find(http::field::authorization);
  const std::string_view got =
      it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
  // The scheme is case-insensitive (RFC 9110 11.1).
  const bool bearer = got.size() > 7 && boost::beast::iequals(got.substr(0, 7), "Bearer ");
  return bearer && matches(got.substr(7));
}

// /health is readiness: 503 with a reason while loading, after the device
// was lost, draining or stalled; ?generate=1 also runs a one-token generation (SGLang's
// /health_generate). /health/live only says the process answers.
void Connection::health(RequestReader::Request&, std::string_view, std::string_view query) {
  const ServedModel* m = state_->model();
  if (!m) return respond_json(503, R"({"status":"loading"})");
  const EngineStats s = m->engine->snapshot();
  if (!s.device_lost.empty()) return respond_json(503, dump({{"status", "device_lost"}, {"reason", s.device_lost}}));
  if (state_->draining) return respond_json(503, R"({"status":"draining"})");
  const StallState st = state_->stall.check(s, SteadyClock().now());
  if (st.stalled)
    return respond_json(503, dump({{"status", "stalled"},
                                   {"reason", st.reason},
                                   {"seconds", st.seconds},
                                   {"limit_seconds", st.limit_seconds}}));
  if (const auto g = query_value(query, "generate"); g == "1" || g == "true") return new_stream()->start_health_probe();
  respond_json(200, R"({"status":"ok"})");
}

void Connection::health_live(RequestReader::Request&, std::string_view, std::string_view) {
  respond_json(200, R"({"status":"alive"})");
}

void Connection::completions(RequestReader::Request& req, std::string_view, std::string_view) {
  new_stream()->start(Api::completions, std::move(req.body()));
}

void Connection::chat_completions(RequestReader::Request& req, std::string_view, std::string_view) {
  new_stream()->start(Api::chat, std::move(req.body()));
}

void Connection::messages(RequestReader::Request& req, std::string_view, std::string_view) {
  new_stream()->start(Api::messages, std::move(req.body()));
}

void Connection::embeddings(RequestReader::Request& req, std::string_view, std::string_view) {
  new_stream()->start(Api::embeddings, std::move(req.body()));
}

void Connection::rerank(RequestReader::Request& req, std::string_view, std::string_view) {
  new_stream()->start(Api::rerank, std::move(req.body()));
}

void Connection::responses(RequestReader::Request& req, std::string_view, std::string_view) {
  new_stream()->start(Api::responses, std::move(req.body()));
}

// GET returns a stored response as it was returned, or with /input_items
// a page of its input items; DELETE forgets it.
void Connection::stored_response(RequestReader::Request& req, std::string_view path, std::string_view query) {
  std::string id(path.substr(std::string_view("/v1/responses/").size()));
  const bool items = req.method() != http::verb::delete_ && id.ends_with("/input_items");
  if (items) id.resize(id.size() - std::string_view("/input_items").size());
  const auto not_found = [&] {
    return ApiError(404, fmt::format("Response with id '{}' not found.", id.substr(0, 256)), "response_id");
  };
  if (id.empty() || id.find('/') != std::string::npos) throw not_found();
  if (items) {
    const std::string_view order = query_value(query, "order"), limit_text = query_value(query, "limit");
    if (!order.empty() && order != "asc" && order != "desc") bad_request("order", "'order' must be asc or desc");
    int limit = 20;
    if (!limit_text.empty()) {
      const auto [end, ec] = std::from_chars(limit_text.data(), limit_text.data() + limit_text.size(), limit);
      if (ec != std::errc() || end != limit_text.data() + limit_text.size() || limit < 1 || limit > 100)
        bad_request("limit", "'limit' must be an integer from 1 to 100");
    }
    const auto stored = state_->responses.get(id);
    if (!stored) throw not_found();
    const std::string after(query_value(query, "after"));
    return respond_json(200, dump(input_items_page(stored->input_items, order == "asc", size_t(limit), after)));
  }
  if (req.method() == http::verb::delete_) {
    if (!state_->responses.erase(id)) throw not_found();
    return respond_json(200, dump({{"id", id}, {"object", "response"}, {"deleted", true}}));
  }
  const auto stored = state_->responses.get(id);
  if (!stored) throw not_found();
  respond_json(200, dump(stored->response));
}

std::shared_ptr<GenerationStream> Connection::new_stream() {
  stream_ = std::make_shared<GenerationStream>(state_, shared_from_this(), socket_.get_executor());
  return stream_;
}

void Connection::end_stream() {
  if (auto stream = std::move(stream_)) stream->detach();
}

void Connection::metrics(RequestReader::Request&, std::string_view, std::string_view) {
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading");
  const EngineStats s = m->engine->snapshot();
  const double now = SteadyClock().now();
  ServerFigures f;
  f.rejected = state_->rejected.load();
  f.inbox = int64_t(m->engine->inbox_size());
  f.step_age_s = std::max(0.0, now - s.last_step_end);
  f.step_running_s = s.step_in_progress ? std::max(0.0, now - s.step_started_at) : 0;
  f.stalled = state_->stall.check(s, now).stalled;
  f.stalls = state_->stall.stalls();
  std::string body = render_metrics(s, f);
  render_vllm_metrics(body, s, f, {m->name, m->engine->config().block_size, s.prefix_caching});
  if (m->extra_metrics) m->extra_metrics(body);
  respond(200, "text/plain; version=0.0.4; charset=utf-8", body);
}

// vLLM's POST /reset_prefix_cache: drops every cached prefix (a KV event
// stream says AllBlocksCleared). Only while no request holds KV blocks.
void Connection::reset_prefix_cache(RequestReader::Request&, std::string_view, std::string_view) {
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading");
  try {
    if (!m->engine->reset_prefix_cache())
      throw ApiError(409, "requests hold KV blocks: the prefix cache can be reset only when none runs; retry later");
  } catch (const Overloaded& e) {
    throw ApiError(503, e.what());
  }
  respond_json(200, R"({"reset":true})");
}

// The prefix cache's distinct block hashes (the ones KV events name), for
// checking a subscriber's mirror of it.
void Connection::kv_cache_blocks(RequestReader::Request&, std::string_view, std::string_view) {
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading");
  std::vector<uint64_t> hashes;
  try {
    hashes = m->engine->cached_block_hashes();
  } catch (const Overloaded& e) {
    throw ApiError(503, e.what());
  }
  respond_json(200, dump({{"block_size", m->engine->config().block_size}, {"hashes", hashes}}));
}

// Every served name is a card, as vLLM lists them.
void Connection::models(RequestReader::Request&, std::string_view path, std::string_view) {
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading");
  const auto card = [&](const std::string& id) {
    return json{{"id", id},
                {"object", "model"},
                {"created", state_->started_at},
                {"owned_by", "pagoda"},
                {"root", m->name},
                {"max_model_len", m->engine->max_model_len()}};
  };
  if (path == "/v1/models") {
    json data = json::array();
    for (const auto& n : m->names) data.push_back(card(n));
    return respond_json(200, dump({{"object", "list"}, {"data", std::move(data)}}));
  }
  const std::string id(path.substr(std::string_view("/v1/models/").size()));
  if (std::find(m->names.begin(), m->names.end(), id) == m->names.end())
    throw ApiError(404, fmt::format("The model `{}` does not exist.", id), "model", "model_not_found");
  respond_json(200, dump(card(id)));
}

// ---- writing ----

void Connection::respond(int status, std::string_view content_type, std::string_view body, const Headers& extra) {
  Headers h = extra;
  if (!cors_origin_.empty())
    for (auto& kv : cors_headers(cors_origin_)) h.push_back(std::move(kv));
  std::string bytes = http_response(status, content_type, body, keep_alive_ && !close_after_ && !state_->draining, h);
  if (head_) bytes.resize(bytes.size() - body.size());  // HEAD: the same head, no body
  send(std::move(bytes));
  response_complete();
}

void Connection::respond_error(const ApiError& e) {
  if (e.status >= 500)
    spdlog::warn("HTTP {}: {}", e.status, e.what());
  else
    spdlog::debug("HTTP {}: {}", e.status, e.what());
  Headers h;
  if (e.status == 401) h.emplace_back("WWW-Authenticate", "Bearer");
  if (e.retry_after_s > 0) h.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  if (e.status == 405 && !allow_.empty()) h.emplace_back("Allow", allow_);
  const json body =
      anthropic_ ? anthropic_error_json(e.status, e.what(), e.param) : error_json(e.status, e.what(), e.param, e.code);
  respond(e.status, "application/json", dump(body), h);
}

void Connection::begin_events(const Headers& extra) {
  if (!http11_) keep_alive_ = false;  // HTTP/1.0: the stream ends when the connection does
  Headers h = extra;
  if (!cors_origin_.empty())
    for (auto& kv : cors_headers(cors_origin_)) h.push_back(std::move(kv));
  send(sse_head(keep_alive_ && !close_after_ && !state_->draining, http11_, h));
}

void Connection::send_event(std::string_view data) { send(sse_event(data, http11_)); }

void Connection::send_named_event(std::string_view name, std::string_view data) {
  send(sse_event(data, http11_, name));
}

void Connection::end_events() {
  if (http11_) send(chunked_end());
  response_complete();
}

void Connection::send(std::string bytes) {
  if (phase_ == Phase::closed) return;
  out_ += bytes;
  if (!write_in_flight_) write_some();
}

void Connection::write_some() {
  if (written_ == writing_.size()) {
    writing_.clear();
    written_ = 0;
    if (out_.empty()) {
      write_in_flight_ = false;
      write_timer_.cancel();
      return after_drained();
    }
    writing_.swap(out_);
  }
  write_in_flight_ = true;
  // Every write must make progress within --write-timeout.
  write_timer_.expires_after(seconds(state_->config.write_timeout_s));
  write_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || !self->write_in_flight_ || self->phase_ == Phase::closed) return;
    if (self->write_timer_.expiry() > std::chrono::steady_clock::now()) return;
    spdlog::warn("a client accepted no bytes for {} s (--write-timeout); dropping it",
                 self->state_->config.write_timeout_s);
    self->close();
  });
  socket_.async_write_some(asio::buffer(writing_.data() + written_, writing_.size() - written_),
                           [self = shared_from_this()](error_code ec, size_t n) { self->on_written(ec, n); });
}

void Connection::on_written(error_code ec, size_t n) {
  if (phase_ == Phase::closed) return;
  if (ec) return close();  // the client is gone
  written_ += n;
  write_some();
}

void Connection::response_complete() {
  complete_ = true;
  if (!write_in_flight_) after_drained();
}

void Connection::after_drained() {
  if (!complete_ || phase_ != Phase::handling) return;
  complete_ = false;
  end_stream();
  if (linger_) return linger_close();
  if (!keep_alive_ || close_after_ || state_->draining) {
    error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    return close();
  }
  begin_reading();
}

// After an error answered before the request was read to the end: stop
// sending, then read and drop what the client still sends (bounded in time
// and bytes), so that closing does not reset the connection before the
// client has read the error.
void Connection::linger_close() {
  phase_ = Phase::lingering;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  read_timer_.expires_after(2s);
  read_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->close();
  });
  read_some();
}

void Connection::close() {
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closed;
  end_stream();
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  read_timer_.cancel();
  write_timer_.cancel();
  out_.clear();
}

}  // namespace pagoda::server
