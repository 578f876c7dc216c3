// The connection's HTTP side: reading requests, routing, writing, closing.
// The generation endpoints are in generation.cpp.
#include "server/connection.h"

#include <boost/asio/dispatch.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <spdlog/spdlog.h>

#include <chrono>

#include "engine/clock.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/metrics.h"
#include "server/openai_response.h"

namespace pagoda::server {
namespace {

using namespace std::chrono_literals;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

constexpr size_t kLingerBytes = 64 << 20;  // what a lingering close discards at most

bool is_beast_http_error(const error_code& ec) { return ec.category() == make_error_code(http::error::bad_target).category(); }

}  // namespace

Connection::Connection(tcp::socket socket, std::shared_ptr<ServerState> state)
    : socket_(std::move(socket)),
      state_(std::move(state)),
      idle_timer_(socket_.get_executor()),
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
    if (self->phase_ == Phase::reading && self->out_.empty() && !self->write_in_flight_) self->close();
    else self->close_after_ = true;
  });
}

// ---- reading ----

void Connection::begin_reading() {
  phase_ = Phase::reading;
  if (state_->draining || close_after_) {
    close();
    return;
  }
  arm_idle_timer();
  if (!reading_) return read_request();
  // The read posted while the last request was pending is still out. If the
  // next request is already buffered (pipelining), stop that read: its
  // completion starts the parse. Otherwise its bytes will start it.
  if (buffer_.size() > 0) {
    error_code ec;
    socket_.cancel(ec);
  }
}

void Connection::arm_idle_timer() {
  idle_timer_.expires_after(seconds(state_->config.keep_alive_timeout_s));
  idle_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->phase_ != Phase::reading) return;
    if (self->idle_timer_.expiry() > std::chrono::steady_clock::now()) return;  // re-armed since
    self->close();
  });
}

void Connection::read_request() {
  parser_.emplace();
  parser_->header_limit(16 * 1024);
  parser_->body_limit(state_->config.max_body_bytes);
  reading_ = true;
  http::async_read_header(socket_, buffer_, *parser_,
                          [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void Connection::on_header(error_code ec) {
  reading_ = false;
  if (phase_ != Phase::reading) return;
  if (ec) return read_failed(ec);
  const auto& req = parser_->get();
  if (auto it = req.find(http::field::expect); it != req.end() && boost::beast::iequals(it->value(), "100-continue"))
    send("HTTP/1.1 100 Continue\r\n\r\n");
  if (parser_->is_done()) return on_request({});
  reading_ = true;
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, size_t) { self->on_request(ec); });
}

void Connection::read_failed(error_code ec) {
  if (ec == asio::error::operation_aborted) return;
  if (ec == http::error::body_limit || ec == http::error::header_limit) {
    phase_ = Phase::handling;
    keep_alive_ = false;
    linger_ = true;  // the client may still be sending the body: read it before closing
    const bool body = ec == http::error::body_limit;
    respond_error(ApiError(body ? 413 : 400,
                           body ? fmt::format("the request body exceeds the limit of {} bytes", state_->config.max_body_bytes)
                                : std::string("the request headers are too large")));
    return;
  }
  if (is_beast_http_error(ec) && ec != http::error::end_of_stream && ec != http::error::partial_message) {
    phase_ = Phase::handling;
    keep_alive_ = false;
    linger_ = true;
    respond_error(ApiError(400, fmt::format("malformed HTTP request: {}", ec.message())));
    return;
  }
  close();  // EOF, reset, timeout: the client is gone
}

void Connection::on_request(error_code ec) {
  reading_ = false;
  if (phase_ != Phase::reading) return;
  if (ec) return read_failed(ec);
  idle_timer_.cancel();
  phase_ = Phase::handling;
  complete_ = false;
  auto req = parser_->release();
  parser_.reset();
  keep_alive_ = req.keep_alive() && !state_->draining;
  http11_ = req.version() >= 11;
  try {
    route(req);
  } catch (const ApiError& e) {
    respond_error(e);
  } catch (const std::exception& e) {
    spdlog::error("internal error answering {} {}: {}", std::string_view(req.method_string()), std::string_view(req.target()), e.what());
    respond_error(ApiError(500, fmt::format("internal error: {}", e.what())));
  }
}

// ---- routing ----

void Connection::route(http::request<http::string_body>& req) {
  std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const auto method = req.method();
  auto require = [&](http::verb v) {
    if (method != v)
      throw ApiError(405, fmt::format("method {} is not allowed for {} (use {})", std::string_view(req.method_string()),
                                      path, std::string_view(http::to_string(v))));
  };
  if (path == "/health") {
    require(http::verb::get);
    return health();
  }
  if (path == "/metrics") {
    require(http::verb::get);
    return metrics();
  }
  const bool v1 = path == "/v1/models" || path.starts_with("/v1/models/") || path == "/v1/completions" ||
                  path == "/v1/chat/completions";
  if (!v1) throw ApiError(404, fmt::format("no such endpoint: {} {}", std::string_view(req.method_string()), path));
  if (const auto& key = state_->config.api_key; !key.empty()) {
    auto it = req.find(http::field::authorization);
    const std::string_view got = it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
    const std::string want = "Bearer " + key;
    bool ok = got.size() == want.size();
    unsigned diff = 0;  // compare in constant time
    for (size_t i = 0; ok && i < want.size(); ++i) diff |= unsigned(got[i] ^ want[i]);
    if (!ok || diff != 0) throw ApiError(401, "invalid or missing API key (send 'Authorization: Bearer KEY')");
  }
  if (path.starts_with("/v1/models")) {
    require(http::verb::get);
    return models(path);
  }
  require(http::verb::post);
  start_generation(path == "/v1/chat/completions", req.body());
}

void Connection::health() {
  const ServedModel* m = state_->model();
  if (!m) return respond_json(503, R"({"status":"loading"})");
  if (state_->draining) return respond_json(503, R"({"status":"shutting_down"})");
  const double stalled = state_->stall.stalled_for(SteadyClock().now());
  if (stalled > state_->config.stall_timeout_s)
    return respond_json(503, dump({{"status", "stalled"}, {"stalled_seconds", stalled}}));
  respond_json(200, R"({"status":"ok"})");
}

void Connection::metrics() {
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading");
  const EngineStats s = m->engine->snapshot();
  const double age = std::max(0.0, SteadyClock().now() - s.last_step_end);
  respond(200, "text/plain; version=0.0.4; charset=utf-8", render_metrics(s, state_->rejected.load(), age));
}

void Connection::models(std::string_view path) {
  const ServedModel* m = state_->model();
  if (!m) throw ApiError(503, "the model is still loading");
  const json card = {{"id", m->name},
                     {"object", "model"},
                     {"created", state_->started_at},
                     {"owned_by", "pagoda"},
                     {"max_model_len", m->engine->max_model_len()}};
  if (path == "/v1/models") return respond_json(200, dump({{"object", "list"}, {"data", json::array({card})}}));
  const std::string_view id = path.substr(std::string_view("/v1/models/").size());
  if (id != m->name) throw ApiError(404, fmt::format("the model '{}' does not exist", id), "model", "model_not_found");
  respond_json(200, dump(card));
}

// ---- writing ----

void Connection::respond(int status, std::string_view content_type, std::string_view body, const Headers& extra) {
  send(http_response(status, content_type, body, keep_alive_ && !close_after_ && !state_->draining, extra));
  response_complete();
}

void Connection::respond_error(const ApiError& e) {
  if (e.status >= 500) spdlog::warn("HTTP {}: {}", e.status, e.what());
  else spdlog::debug("HTTP {}: {}", e.status, e.what());
  Headers h;
  if (e.status == 401) h.emplace_back("WWW-Authenticate", "Bearer");
  if (e.retry_after_s > 0) h.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  respond(e.status, "application/json", dump(error_json(e.status, e.what(), e.param, e.code)), h);
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
    spdlog::warn("a client accepted no bytes for {} s (--write-timeout); dropping it", self->state_->config.write_timeout_s);
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
  active_.reset();
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
  idle_timer_.expires_after(2s);
  idle_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->close();
  });
  linger_read();
}

void Connection::linger_read() {
  if (reading_ || phase_ != Phase::lingering) return;
  buffer_.consume(buffer_.size());
  reading_ = true;
  socket_.async_read_some(buffer_.prepare(65536), [self = shared_from_this()](error_code ec, size_t n) {
    self->reading_ = false;
    self->lingered_ += n;
    if (ec || self->lingered_ > kLingerBytes) return self->close();
    self->linger_read();
  });
}

void Connection::close() {
  if (phase_ == Phase::closed) return;
  phase_ = Phase::closed;
  if (active_) retire(*active_, /*cancel=*/true);
  active_.reset();
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  idle_timer_.cancel();
  write_timer_.cancel();
  out_.clear();
}

}  // namespace pagoda::server
