// The real `pagoda serve` binary as a child process on a free loopback port,
// for the server's end-to-end tests: starts it with --port 0, reads the port
// it prints, waits for /health to say 200, and stops it with a signal.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pagoda::testing {

// PAGODA_TEST_SCALE (default 1; the sanitizer run sets it lower) scales the
// load tests' request and connection counts.
double test_scale();
int scaled(int n, int minimum = 1);

std::string pagoda_binary();
std::string stories_model();

class ServerProcess {
 public:
  // `pagoda serve -m stories260K --port 0 --log-interval 0 <args>` (args may
  // name another model with -m). Waits
  // (bounded) until it listens and, if wait_healthy, until /health is 200.
  // launcher: a command that runs it (`prlimit --as=N`), its path first.
  explicit ServerProcess(const std::vector<std::string>& args = {}, bool wait_healthy = true,
                         const std::vector<std::string>& launcher = {});
  ~ServerProcess();  // kills it if still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running();
  // Sends `sig` and waits for the exit; returns the exit code (128 + signal
  // if killed), or -1 if it did not exit within timeout_s (it is then killed).
  int stop(int sig = 15, double timeout_s = 30);
  std::string stdout_text() const;
  std::string stderr_text() const;
  int num_threads() const;  // threads of the process now, from /proc

 private:
  void start(const std::vector<std::string>& args, bool wait_healthy, const std::vector<std::string>& launcher);
  void cleanup();
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  int exit_code_ = -1;
  std::string out_path_, err_path_;
};

}  // namespace pagoda::testing
