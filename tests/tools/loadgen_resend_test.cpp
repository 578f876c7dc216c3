// The load generator against a server that closes kept-alive connections
// unanswered after a few requests (llama-server does): the request is sent
// again on a fresh connection and counts by its answer, not as a transport
// error; a fresh connection closed unanswered is a transport error, and is not
// retried. The server here is the test's own fake (a few lines of Beast on a
// loopback thread): only the client's behaviour is under test.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <atomic>
#include <thread>

#include "tools/loadgen.h"

namespace pagoda::tools {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Answers `answered` requests per connection with a whole completion, then
// reads the next one and closes without a byte.
class ClosingServer {
 public:
  explicit ClosingServer(int answered) : answered_(answered), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~ClosingServer() {
    stop_ = true;
    beast::error_code ec;
    tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);  // wakes accept()
    thread_.join();
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  int closed_unanswered() const { return closed_unanswered_; }

 private:
  void serve() {
    while (!stop_) {
      tcp::socket s(io_);
      beast::error_code ec;
      acceptor_.accept(s, ec);
      if (ec || stop_) continue;
      beast::flat_buffer buf;
      for (int n = 0;; ++n) {
        http::request<http::string_body> req;
        http::read(s, buf, req, ec);
        if (ec) break;
        if (n >= answered_) {
          ++closed_unanswered_;
          break;  // the socket closes with nothing sent
        }
        http::response<http::string_body> res{
            req.target() == "/v1/completions" ? http::status::ok : http::status::not_found, 11};
        res.set(http::field::content_type, "application/json");
        res.keep_alive(true);
        res.body() = R"({"choices":[{"text":"hi","finish_reason":"length"}],)"
                     R"("usage":{"prompt_tokens":3,"completion_tokens":1}})";
        res.prepare_payload();
        http::write(s, res, ec);
        if (ec) break;
      }
    }
  }

  int answered_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  std::atomic<int> closed_unanswered_{0};
  std::thread thread_;
};

LoadgenConfig whole_requests(uint16_t port, int n) {
  LoadgenConfig c;
  c.port = port;
  c.stream = false;
  c.clients = 1;
  c.requests = n;
  c.max_tokens = 1;
  c.request_timeout_s = 10;
  return c;
}

TEST(LoadgenResend, AKeptAliveConnectionClosedUnansweredIsRetriedOnAFreshOne) {
  ClosingServer server(2);  // every third request on a connection is dropped
  const LoadgenReport r = run_loadgen(whole_requests(server.port(), 7));
  EXPECT_EQ(r.ok, 7) << r.summary();
  EXPECT_EQ(r.transport_errors, 0);
  EXPECT_EQ(r.resent, 3);  // requests 3, 5 and 7 of the client's connection sequence
  EXPECT_EQ(r.ended(), r.requests);
}

TEST(LoadgenResend, AFreshConnectionClosedUnansweredIsATransportError) {
  ClosingServer server(0);  // answers nothing
  const LoadgenReport r = run_loadgen(whole_requests(server.port(), 3));
  EXPECT_EQ(r.ok, 0);
  EXPECT_EQ(r.transport_errors, 3);
  EXPECT_EQ(r.resent, 0);
  EXPECT_EQ(r.ended(), r.requests);
}

}  // namespace
}  // namespace pagoda::tools
