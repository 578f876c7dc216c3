// `pagoda serve`'s HTTP server: Boost.Asio + Beast, event-driven. A few I/O
// threads (--io-threads, default 1) run one io_context; each connection is a
// chain of asynchronous operations on its own strand, so thousands of idle
// or streaming clients cost memory, not threads. The engine runs on its own
// thread and hands deltas to the connections' strands.
//
// Connections beyond --max-connections (default: what the open-files limit
// leaves) get a 503 and are closed; at the open-files limit itself a spare
// descriptor is given up to accept and refuse one connection, so clients never
// hang in the listen queue.
//
// Lifecycle: listen() binds (port 0: any free port) -> run() starts the I/O
// threads and, while clients already get 503 from /health, loads the model ->
// serves until SIGINT/SIGTERM or stop() -> graceful shutdown: stop accepting,
// close idle connections, let in-flight requests finish for up to
// --shutdown-timeout, then answer the rest with an error (without waiting on
// a stuck step), flush for half a second, return within a second of the
// deadline.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <memory>

#include "server/server_state.h"

namespace pagoda::server {

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();

  // Binds and listens; returns the port. Error if the address is unusable.
  uint16_t listen();
  // Serves until a signal or stop(). `load` runs on the calling thread while
  // the server already answers; its exception is rethrown after cleanup.
  // Returns false if the engine's step was stuck at the end and was left
  // running: the caller should exit the process at once (non-zero).
  bool run(const std::function<std::unique_ptr<ServedModel>()>& load);
  // Begins the graceful shutdown; any thread.
  void stop();
  // After run(): whether it ended because the engine lost its device.
  bool device_lost() const { return device_lost_; }

  const ServerState& state() const { return *state_; }

 private:
  void accept();
  void on_accept_error(const boost::system::error_code& ec);
  void sample();
  void begin_shutdown();
  void on_device_lost(const std::string& cause);
  void shutdown_tick();
  void finish();

  boost::asio::io_context io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::shared_ptr<ServerState> state_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer sample_timer_, shutdown_timer_, accept_timer_;
  bool shutting_down_ = false, engine_stopped_ = false, finished_ = false;
  std::atomic<bool> device_lost_{false};  // the engine lost its device: run() ends for a restart
  double lost_at_ = 0;                    // when sample() saw it
  double deadline_ = 0;                   // shutdown: when in-flight requests are failed, then when flushing ends
  size_t max_connections_ = 0;
  int spare_fd_ = -1;  // closed to accept one connection at the open-files limit and refuse it
  double accept_warned_at_ = -1e9;
  int64_t accept_errors_ = 0;  // since the last warning
  std::promise<void> done_;
};

}  // namespace pagoda::server
