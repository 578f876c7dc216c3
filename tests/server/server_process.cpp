#include <algorithm>
#include "testing/build_paths.h"
#include "server/server_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "server/http_client.h"
#include "testing/shared_data.h"

extern char** environ;

namespace pagoda::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string temp_path(const char* what) {
  std::string p = std::string("/tmp/pagoda_server_test_") + what + "_XXXXXX";
  const int fd = mkstemp(p.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  close(fd);
  return p;
}

// The port in "... listening on http://HOST:PORT ...", or 0.
int printed_port(const std::string& out) {
  const std::string mark = "listening on http://";
  const size_t at = out.find(mark);
  if (at == std::string::npos) return 0;
  const size_t end = out.find_first_of(" \n", at + mark.size());
  if (end == std::string::npos) return 0;
  const size_t colon = out.rfind(':', end);
  if (colon == std::string::npos || colon < at) return 0;
  const std::string digits = out.substr(colon + 1, end - colon - 1);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoi(digits);
}

}  // namespace

double test_scale() {
  const char* s = std::getenv("PAGODA_TEST_SCALE");
  const double v = s && *s ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

int scaled(int n, int minimum) { return std::max(minimum, int(double(n) * test_scale())); }

std::string pagoda_binary() { return PAGODA_BINARY; }
std::string stories_model() { return shared_path("models/stories260K.gguf"); }

ServerProcess::ServerProcess(const std::vector<std::string>& args, bool wait_healthy,
                             const std::vector<std::string>& launcher) {
  try {
    start(args, wait_healthy, launcher);
  } catch (...) {
    cleanup();  // a constructor that throws gets no destructor call
    throw;
  }
}

void ServerProcess::start(const std::vector<std::string>& args, bool wait_healthy,
                          const std::vector<std::string>& launcher) {
  out_path_ = temp_path("out");
  err_path_ = temp_path("err");
  std::vector<std::string> argv = {pagoda_binary(), "serve", "--port", "0", "--log-interval", "0"};
  // stories260K unless the arguments name another model.
  if (std::find(args.begin(), args.end(), "-m") == args.end() &&
      std::find(args.begin(), args.end(), "--model") == args.end())
    argv.insert(argv.end(), {"-m", stories_model()});
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.begin(), launcher.begin(), launcher.end());
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_TRUNC, 0);
  std::vector<char*> cargs;
  for (auto& a : argv) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  const int rc = posix_spawn(&pid_, cargs[0], &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);

  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (port_ == 0) {
    const std::string out = slurp(out_path_);
    if (const int port = printed_port(out); port > 0)
      port_ = uint16_t(port);
    else if (!running())
      throw std::runtime_error("pagoda serve exited (" + std::to_string(exit_code_) + "): " + stderr_text());
    else if (Clock::now() > deadline)
      throw std::runtime_error("pagoda serve printed no port: " + out + stderr_text());
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  while (wait_healthy) {
    try {
      if (http_get(port_, "/health").status == 200) break;
    } catch (const std::exception&) {
    }
    if (Clock::now() > deadline) throw std::runtime_error("pagoda serve never became healthy: " + stderr_text());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ServerProcess::~ServerProcess() { cleanup(); }

void ServerProcess::cleanup() {
  if (running()) stop(SIGKILL, 10);
  if (!out_path_.empty()) unlink(out_path_.c_str());
  if (!err_path_.empty()) unlink(err_path_.c_str());
  out_path_.clear();
  err_path_.clear();
}

bool ServerProcess::running() {
  if (pid_ <= 0 || exit_code_ >= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return true;
  exit_code_ = r == pid_ ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) : 255;
  return false;
}

int ServerProcess::stop(int sig, double timeout_s) {
  if (!running()) return exit_code_;
  kill(pid_, sig);
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (running()) {
    if (Clock::now() > deadline) {
      kill(pid_, SIGKILL);
      while (running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exit_code_;
}

std::string ServerProcess::stdout_text() const { return slurp(out_path_); }
std::string ServerProcess::stderr_text() const { return slurp(err_path_); }

int ServerProcess::num_threads() const {
  int n = 0;
  if (DIR* d = opendir(("/proc/" + std::to_string(pid_) + "/task").c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

}  // namespace pagoda::testing
