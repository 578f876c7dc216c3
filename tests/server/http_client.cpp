#include "server/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <poll.h>

#include <algorithm>
#include <stdexcept>

namespace pagoda::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

nlohmann::json HttpResponse::json() const { return nlohmann::json::parse(body); }

std::string HttpResponse::header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

HttpConnection::HttpConnection(uint16_t port, int rcvbuf) : socket_(io_) {
  socket_.open(tcp::v4());
  if (rcvbuf > 0) socket_.set_option(asio::socket_base::receive_buffer_size(rcvbuf));
  socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  socket_.set_option(tcp::no_delay(true));
}

HttpConnection::~HttpConnection() { close(); }

void HttpConnection::send(const std::string& method, const std::string& target, const std::string& body,
                          const Headers& headers) {
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  head_sent_ = req.method() == http::verb::head;
  http::write(socket_, req);
}

void HttpConnection::write_raw(const std::string& bytes) {
  head_sent_ = false;
  asio::write(socket_, asio::buffer(bytes));
}

HttpResponse HttpConnection::read_head() {
  parser_.emplace();
  parser_->body_limit(boost::none);
  parser_->skip(head_sent_);  // a response to HEAD has a head alone
  http::read_header(socket_, buffer_, *parser_);
  HttpResponse r;
  r.status = int(parser_->get().result_int());
  for (const auto& f : parser_->get()) {
    std::string name(f.name_string());
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    r.headers[name] = std::string(f.value());
  }
  pending_.clear();
  return r;
}

std::string HttpConnection::read_body_some() {
  char buf[8192];
  // A read may parse only framing (a chunk header): go on until body bytes come or the body ends.
  while (parser_ && !parser_->is_done()) {
    parser_->get().body().data = buf;
    parser_->get().body().size = sizeof buf;
    boost::system::error_code ec;
    http::read_some(socket_, buffer_, *parser_, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) throw boost::system::system_error(ec);
    const size_t n = sizeof buf - parser_->get().body().size;
    if (n > 0) return std::string(buf, n);
  }
  return "";
}

HttpResponse HttpConnection::read_response() {
  HttpResponse r = read_head();
  while (!parser_->is_done()) r.body += read_body_some();
  return r;
}

HttpResponse HttpConnection::request(const std::string& method, const std::string& target, const std::string& body,
                                     const Headers& headers) {
  send(method, target, body, headers);
  return read_response();
}

std::vector<std::string> HttpConnection::read_events(size_t max_events) {
  std::vector<std::string> events;
  while (events.size() < max_events) {
    const size_t end = pending_.find("\n\n");
    if (end != std::string::npos) {
      const std::string e = pending_.substr(0, end);
      pending_.erase(0, end + 2);
      if (e.rfind("data: ", 0) == 0) events.push_back(e.substr(6));
      if (!events.empty() && events.back() == "[DONE]") break;
      continue;
    }
    const std::string more = read_body_some();
    if (more.empty()) break;
    pending_ += more;
  }
  return events;
}

void HttpConnection::shutdown_write() { socket_.shutdown(tcp::socket::shutdown_send); }

void HttpConnection::reset() {
  if (!socket_.is_open()) return;
  socket_.set_option(asio::socket_base::linger(true, 0));
  socket_.close();
}

void HttpConnection::close() {
  boost::system::error_code ec;
  socket_.close(ec);
}

bool HttpConnection::peer_closed_within(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{socket_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) <= 0) return false;
    char c[4096];
    boost::system::error_code ec;
    socket_.read_some(asio::buffer(c), ec);
    if (ec) return true;  // EOF or reset
  }
}

HttpResponse http_get(uint16_t port, const std::string& target, const Headers& headers) {
  HttpConnection c(port);
  return c.request("GET", target, "", headers);
}

HttpResponse http_post_raw(uint16_t port, const std::string& target, const std::string& body, const Headers& headers) {
  HttpConnection c(port);
  return c.request("POST", target, body, headers);
}

HttpResponse http_post(uint16_t port, const std::string& target, const nlohmann::json& body, const Headers& headers) {
  return http_post_raw(port, target, body.dump(), headers);
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t end; (end = body.find("\n\n", pos)) != std::string::npos; pos = end + 2) {
    const std::string e = body.substr(pos, end - pos);
    if (e.rfind("data: ", 0) != 0) throw std::runtime_error("an SSE event that is not 'data: ...': " + e);
    out.push_back(e.substr(6));
  }
  if (pos != body.size()) throw std::runtime_error("trailing bytes after the last SSE event: " + body.substr(pos));
  return out;
}

}  // namespace pagoda::testing
