#include "server/server.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "engine/clock.h"
#include "server/api_error.h"
#include "server/connection.h"
#include "server/http_response.h"
#include "server/openai_response.h"
#include "util/error.h"
#include "util/thread_priority.h"

namespace pagoda::server {
namespace {

using namespace std::chrono_literals;
double now() { return SteadyClock().now(); }

int open_spare_fd() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

// A connection the server will not serve: a 503 written without waiting (it
// fits an empty socket buffer), then closed.
void refuse_connection(tcp::socket& socket, const std::string& why) {
  const std::string body = dump(error_json(503, why, "", "too_many_connections"));
  const std::string bytes = http_response(503, "application/json", body, /*keep_alive=*/false, {{"Retry-After", "1"}});
  error_code ec;
  socket.non_blocking(true, ec);
  socket.write_some(asio::buffer(bytes), ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

// What the open-files limit leaves for connections after the model, the
// engine's and the server's own descriptors.
size_t connections_allowed_by_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return size_t(std::max<rlim_t>(1, lim.rlim_cur > 64 ? lim.rlim_cur - 64 : 1));
}

}  // namespace

Server::Server(ServerConfig config)
    : strand_(asio::make_strand(io_)),
      state_(std::make_shared<ServerState>(std::move(config))),
      acceptor_(strand_),
      signals_(strand_),
      sample_timer_(strand_),
      shutdown_timer_(strand_),
      accept_timer_(strand_),
      spare_fd_(open_spare_fd()) {}

Server::~Server() {
  if (spare_fd_ >= 0) ::close(spare_fd_);
  io_.stop();
  state_->workers.stop();
  state_->workers.join();
  state_->release_model();
}

uint16_t Server::listen() {
  const auto& cfg = state_->config;
  error_code ec;
  tcp::resolver resolver(io_);
  const auto results = resolver.resolve(cfg.host, std::to_string(cfg.port), tcp::resolver::passive, ec);
  if (ec || results.empty()) fail<InvalidArgument>("--host {}: {}", cfg.host, ec ? ec.message() : "no address");
  const tcp::endpoint ep = results.begin()->endpoint();
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("cannot listen on {}:{}: {}", cfg.host, cfg.port, ec.message());
  max_connections_ = cfg.max_connections > 0 ? size_t(cfg.max_connections) : connections_allowed_by_fd_limit();
  return acceptor_.local_endpoint().port();
}

bool Server::run(const std::function<std::unique_ptr<ServedModel>()>& load) {
  auto work = asio::make_work_guard(io_);
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  std::function<void(error_code, int)> on_signal = [this, &on_signal](error_code ec, int sig) {
    if (ec) return;
    if (shutting_down_) {
      spdlog::warn("signal {} again: ending in-flight requests now", sig);
      deadline_ = std::min(deadline_, now());
    } else {
      spdlog::info("signal {}: shutting down (in-flight requests get up to {} s)", sig,
                   state_->config.shutdown_timeout_s);
      begin_shutdown();
    }
    signals_.async_wait(on_signal);
  };
  signals_.async_wait(on_signal);
  asio::post(strand_, [this] {
    accept();
    sample();
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, state_->config.io_threads); ++i)
    threads.emplace_back([this] {
      run_as_batch_thread();  // woken every token: it must not preempt the engine (thread_priority.h)
      io_.run();
    });

  std::exception_ptr error;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    state_->set_model(load());
    spdlog::info("model '{}' loaded in {:.2f} s; ready", state_->model()->name,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } catch (...) {
    error = std::current_exception();
    stop();
  }
  done_.get_future().wait();
  work.reset();
  io_.stop();
  for (auto& t : threads) t.join();
  state_->workers.stop();  // requests still being parsed are dropped with their connections
  state_->workers.join();
  bool clean = true;
  if (const ServedModel* m = state_->model()) {
    m->engine->shutdown();
    if (!m->engine->wait_stopped(std::max(0.1, deadline_ + 0.5 - now()))) {
      spdlog::error("shutdown: the engine's step is stuck; leaving it behind");
      state_->abandon_model();
      clean = false;
    }
  }
  state_->release_model();  // the engine's destructor ends whatever is left
  if (error) std::rethrow_exception(error);
  return clean;
}

void Server::stop() {
  asio::post(strand_, [this] { begin_shutdown(); });
}

void Server::accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](error_code ec, tcp::socket socket) {
    if (!acceptor_.is_open()) return;
    if (ec) return on_accept_error(ec);
    if (state_->num_connections() >= max_connections_)
      refuse_connection(socket, fmt::format("the server has {} connections open (--max-connections); retry shortly",
                                            max_connections_));
    else
      std::make_shared<Connection>(std::move(socket), state_)->start();
    accept();
  });
}

void Server::on_accept_error(const error_code& ec) {
  ++accept_errors_;
  const bool out_of_fds = ec == asio::error::no_descriptors || ec.value() == ENFILE;
  if (out_of_fds && spare_fd_ >= 0) {
    // Give up the spare descriptor to take a waiting connection and say no.
    ::close(spare_fd_);
    error_code e2;
    tcp::socket socket(io_);
    acceptor_.non_blocking(true, e2);
    acceptor_.accept(socket, e2);
    if (!e2) refuse_connection(socket, "the server is out of file descriptors; retry shortly");
    acceptor_.non_blocking(false, e2);
    spare_fd_ = open_spare_fd();
  }
  if (now() - accept_warned_at_ >= 10) {  // one line per 10 s, not one per failure
    spdlog::warn("accepting connections failed {} times: {}{}", accept_errors_, ec.message(),
                 out_of_fds ? " (new connections get 503 until descriptors free up)" : "");
    accept_warned_at_ = now();
    accept_errors_ = 0;
  }
  if (out_of_fds && spare_fd_ >= 0) {
    // Linux fails accept() for want of a descriptor before it looks for a
    // connection: wait for one to be pending, then accept or refuse it.
    acceptor_.async_wait(tcp::acceptor::wait_read, [this](error_code ec) {
      if (!ec) accept();
    });
    return;
  }
  // Retry shortly rather than spinning; connections that close free descriptors.
  accept_timer_.expires_after(50ms);
  accept_timer_.async_wait([this](error_code ec) {
    if (!ec) accept();
  });
}

void Server::sample() {
  if (const ServedModel* m = state_->model()) {
    const EngineStats s = m->engine->snapshot();
    state_->stall.sample(s, m->engine->inbox_size(), now());
    if (!s.device_lost.empty()) on_device_lost(s.device_lost);
  }
  sample_timer_.expires_after(100ms);
  sample_timer_.async_wait([this](error_code ec) {
    if (!ec) sample();
  });
}

// The engine ended every request already and runs nothing more (a request
// that comes now ends at once with the same error). /health says why (503
// device_lost) for 0.75 s, so a load balancer sees the reason; then the
// shutdown, with 0.5 s for answers left to write, and `pagoda serve` exits 4
// for its supervisor to restart it: gone within 2 s of the loss.
void Server::on_device_lost(const std::string& cause) {
  if (!device_lost_) {
    device_lost_ = true;
    lost_at_ = now();
    spdlog::error("the device was lost ({}): shutting down for a restart", cause);
  } else if (!shutting_down_ && now() - lost_at_ >= 0.75) {
    begin_shutdown();
    deadline_ = std::min(deadline_, now() + 0.5);
  }
}

void Server::begin_shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  state_->draining = true;
  error_code ec;
  acceptor_.close(ec);
  state_->for_each_connection([](std::shared_ptr<Connection> c) { c->drain(); });
  deadline_ = now() + state_->config.shutdown_timeout_s;
  shutdown_tick();
}

// Until the deadline, in-flight requests may finish. At the deadline every
// connection still waiting answers now (503, or an error event ending its
// stream), without waiting on the engine, whose step may be stuck; then half
// a second to write those answers.
void Server::shutdown_tick() {
  const int64_t active = state_->active_generations.load();
  const ServedModel* m = state_->model();
  if (!engine_stopped_ && (active == 0 || now() >= deadline_ || !m)) {
    engine_stopped_ = true;
    if (active > 0 && m) {
      spdlog::warn("shutdown: {} requests still running after {} s; ending them with an error", active,
                   state_->config.shutdown_timeout_s);
      state_->for_each_connection(
          [](std::shared_ptr<Connection> c) { c->abort_generation("the server is shutting down"); });
      m->engine->shutdown("the server is shutting down");
    }
    deadline_ = now() + 0.5;
  }
  if (engine_stopped_ && ((active == 0 && state_->num_connections() == 0) || now() >= deadline_)) return finish();
  shutdown_timer_.expires_after(20ms);
  shutdown_timer_.async_wait([this](error_code ec) {
    if (!ec) shutdown_tick();
  });
}

void Server::finish() {
  if (finished_) return;
  finished_ = true;
  sample_timer_.cancel();
  error_code ec;
  signals_.cancel(ec);
  spdlog::info("shutdown complete");
  done_.set_value();
}

}  // namespace pagoda::server
