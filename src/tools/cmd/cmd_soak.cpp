// `pagoda soak`: the mixed soak as a tool. For each mode (paged, reserve,
// faults, audit) it starts `pagoda serve` (this binary) on a loopback port
// with a small KV pool, drives it with `loadgen`'s clients (streams and
// whole responses, completions and chat, hang-ups and bad input), then
// checks what must hold after any load:
//   - every request ended in one category, none timed out on the client;
//   - the server's counters balance: received == successes + failures;
//   - the engine drains: nothing running or waiting, no KV block and no
//     recurrent-state slot (a hybrid model's) in use,
//     the idle self-check never failed;
//   - RSS grew by less than --max-rss-growth-mib;
//   - a plain request still succeeds, and SIGTERM ends it with exit 0.
// Without faults no request may fail on the server's side. One line per
// mode; exit 1 if any check failed. Traffic goes to 127.0.0.1 only.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cli/model_option.h"
#include "tools/cmd/commands.h"
#include "tools/loadgen.h"
#include "util/error.h"

extern char** environ;

namespace pagoda::tools {
using cli::Command;
using cli::ModelOption;
namespace {

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct SoakConfig {
  ModelOption model_opt;
  std::string model;  // model_opt, resolved once for every mode's server
  std::vector<std::string> modes = {"paged", "reserve", "faults", "audit"};
  int64_t requests = 1000;  // per mode
  int clients = 96;
  int64_t kv_cache_tokens = 2048;
  double hangup_fraction = 0.3;
  double bad_fraction = 0.1;
  int max_tokens = 32;
  std::string faults = "forward=0.05,oom=0.02,alloc=0.02,seed=7";
  double max_rss_growth_mib = 256;
  std::vector<std::string> serve_args;  // more `serve` flags
};

std::pair<int, std::string> get(uint16_t port, const std::string& target, const std::string& body = "") {
  boost::asio::io_context io;
  tcp::socket s(io);
  s.connect({boost::asio::ip::address_v4::loopback(), port});
  http::request<http::string_body> req(body.empty() ? http::verb::get : http::verb::post, target, 11);
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  http::write(s, req);
  boost::beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(s, buf, res);
  return {int(res.result_int()), res.body()};
}

// Prometheus text: series name (with labels) -> value.
std::map<std::string, double> scrape(uint16_t port) {
  std::map<std::string, double> m;
  std::istringstream in(get(port, "/metrics").second);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    if (sp != std::string::npos) m[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return m;
}

double rss_mib(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

bool wait_until(const std::function<bool()>& done, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    try {
      if (done()) return true;
    } catch (const std::exception&) {
      // not answering yet
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// `pagoda serve` as a child on a free loopback port.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    int out[2];
    if (pipe(out) != 0) fail("pipe failed");
    char log_template[] = "/tmp/pagoda-soak-XXXXXX";
    const int log = mkstemp(log_template);
    log_path_ = log_template;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, log, STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    close(log);
    if (rc != 0) fail("cannot start pagoda serve");
    // "Pagoda listening on http://127.0.0.1:PORT (model ...)"
    std::string text;
    char c;
    while (text.find('\n') == std::string::npos && read(out[0], &c, 1) == 1) text += c;
    close(out[0]);
    const size_t at = text.find("127.0.0.1:");
    if (at == std::string::npos) fail("pagoda serve did not start: {}", log_tail());
    port_ = uint16_t(std::stoi(text.substr(at + 10)));
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove(log_path_.c_str());
  }
  // SIGTERM; the exit code, or -1 if it did not exit within timeout_s.
  int stop(double timeout_s) {
    if (pid_ > 0) kill(pid_, SIGTERM);
    if (!wait_until([&] { return exited(); }, timeout_s)) return -1;
    return exit_code_;
  }
  // True once the server has exited (reaped here, its code kept).
  bool exited() {
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return pid_ < 0;
  }
  // wait_until that gives up at once when the server exits: a server that
  // refused its model is told in milliseconds, not after the whole wait.
  bool wait_while_alive(const std::function<bool()>& done, double seconds) {
    return wait_until([&] { return exited() || done(); }, seconds) && !exited();
  }
  std::string exit_story() const { return fmt::format("pagoda serve exited with code {}: {}", exit_code_, log_tail()); }
  std::string log_tail() const {
    std::ifstream f(log_path_);
    std::string all((std::istreambuf_iterator<char>(f)), {});
    return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
  }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  uint16_t port_ = 0;
  std::string log_path_;
};

std::vector<std::string> mode_flags(const std::string& mode, const SoakConfig& c) {
  if (mode == "paged") return {};
  if (mode == "reserve") return {"--no-paged-attn"};
  if (mode == "faults") return {"--inject-faults", c.faults};
  if (mode == "audit") return {"--audit-every-step"};
  fail<InvalidArgument>("--modes: unknown mode '{}' (paged, reserve, faults, audit)", mode);
}

// The soak's load on a server: streamed completions, then whole chat
// responses, half the requests each; what did not end in a category fails.
LoadgenReport drive(const SoakConfig& c, uint16_t port, std::vector<std::string>& failed) {
  LoadgenReport total;
  const int64_t halves[2] = {c.requests / 2, c.requests - c.requests / 2};
  for (int half = 0; half < 2; ++half) {
    LoadgenConfig lc;
    lc.port = port;
    lc.chat = half == 1;
    lc.stream = half == 0;
    lc.clients = c.clients;
    lc.requests = halves[half];
    lc.duration_s = 1e9;
    lc.max_tokens = c.max_tokens;
    lc.hangup_fraction = c.hangup_fraction;
    lc.bad_fraction = c.bad_fraction;
    lc.request_timeout_s = 120;
    lc.seed = uint64_t(half + 1);
    const LoadgenReport r = run_loadgen(lc);
    if (r.ended() != r.requests)
      failed.push_back(fmt::format("{} of {} requests ended in no category", r.requests - r.ended(), r.requests));
    total.requests += r.requests;
    total.ok += r.ok;
    total.client_timeouts += r.client_timeouts;
    total.http_5xx += r.http_5xx;
    total.stream_errors += r.stream_errors;
    total.transport_errors += r.transport_errors;
    total.bad_accepted += r.bad_accepted;
    total.http_4xx += r.http_4xx;
  }
  return total;
}

// After the load: the engine drains to nothing, its counters balance and its
// idle self-check held. Returns the last /metrics scrape.
std::map<std::string, double> check_engine_after(Child& child, std::vector<std::string>& failed) {
  const uint16_t port = child.port();
  std::map<std::string, double> m;
  const bool drained = child.wait_while_alive(
      [&] {
        m = scrape(port);
        return m["pagoda_num_requests_running"] == 0 && m["pagoda_num_requests_waiting"] == 0 &&
               m["pagoda_kv_blocks_used"] == 0 && m["pagoda_state_slots_used"] == 0;
      },
      30);
  if (child.exited()) {
    failed.push_back(child.exit_story());
    return m;
  }
  if (!drained)
    failed.push_back(
        fmt::format("the engine did not drain: {} running, {} waiting, {} blocks and {} state slots in use",
                    m["pagoda_num_requests_running"], m["pagoda_num_requests_waiting"], m["pagoda_kv_blocks_used"],
                    m["pagoda_state_slots_used"]));
  double ended = 0;
  for (const char* r : {"stop", "length"})
    ended += m[fmt::format("pagoda_request_success_total{{finished_reason=\"{}\"}}", r)];
  for (const char* r : {"abort", "timeout", "error", "rejected"})
    ended += m[fmt::format("pagoda_request_failure_total{{reason=\"{}\"}}", r)];
  if (ended != m["pagoda_requests_received_total"])
    failed.push_back(
        fmt::format("counters do not balance: {} received, {} ended", m["pagoda_requests_received_total"], ended));
  if (m["pagoda_engine_idle_check_failures_total"] != 0) failed.push_back("the idle self-check failed");
  return m;
}

// One mode: the soak and its checks; returns the failed checks.
std::vector<std::string> soak_mode(const std::string& mode, const SoakConfig& c, std::string& summary) {
  std::vector<std::string> args = {"/proc/self/exe", "serve", "-m", c.model, "--port", "0", "--log-interval", "0"};
  args.insert(args.end(), {"--kv-cache-tokens", std::to_string(c.kv_cache_tokens)});
  for (const auto& f : mode_flags(mode, c)) args.push_back(f);
  for (const auto& f : c.serve_args) args.push_back(f);
  Child child(args);
  std::vector<std::string> failed;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) failed.push_back(what);
  };
  if (!child.wait_while_alive([&] { return get(child.port(), "/health").first == 200; }, 120)) {
    failed.push_back(child.exited() ? child.exit_story() : "never healthy: " + child.log_tail());
    return failed;
  }
  const double rss_before = rss_mib(child.pid());
  const auto t0 = Clock::now();
  const LoadgenReport total = drive(c, child.port(), failed);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  expect(total.client_timeouts == 0, fmt::format("{} requests hung (client timeout)", total.client_timeouts));
  expect(total.bad_accepted == 0, fmt::format("{} invalid requests were accepted", total.bad_accepted));
  expect(total.http_4xx == 0, fmt::format("{} valid requests got a 4xx", total.http_4xx));
  if (mode != "faults")
    expect(total.http_5xx + total.stream_errors == 0,
           fmt::format("{} requests failed on the server without faults", total.http_5xx + total.stream_errors));
  std::map<std::string, double> m = check_engine_after(child, failed);
  if (child.exited()) return failed;
  const double rss_after = rss_mib(child.pid());
  expect(rss_after - rss_before < c.max_rss_growth_mib,
         fmt::format("RSS grew {:.0f} -> {:.0f} MiB", rss_before, rss_after));
  // Injected faults may fail any one request: there, one of three must pass.
  bool served = false;
  for (int i = 0; i < (mode == "faults" ? 3 : 1) && !served; ++i)
    served = get(child.port(), "/v1/completions", R"({"prompt":"Once","max_tokens":4})").first == 200;
  expect(served, "a request after the soak failed");
  const double errors = m["pagoda_request_failure_total{reason=\"error\"}"];
  const int code = child.stop(30);
  expect(code == 0, fmt::format("SIGTERM: exit code {}", code));
  const double received = m["pagoda_requests_received_total"];
  summary = fmt::format(
      "{:8} {:6} requests in {:6.1f} s: {} ok, {} of {} in the engine ended in an error ({:.2f}%), "
      "{} preemptions, RSS {:.0f} -> {:.0f} MiB",
      mode, total.requests, seconds, total.ok, int64_t(errors), int64_t(received),
      100.0 * errors / std::max(1.0, received), int64_t(m["pagoda_num_preemptions_total"]), rss_before, rss_after);
  return failed;
}

}  // namespace

Command add_soak(CLI::App& app) {
  auto c = std::make_shared<SoakConfig>();
  auto* cmd = app.add_subcommand("soak", "Soak `pagoda serve` with rude mixed load per mode and check it holds");
  c->model_opt.add(cmd);
  cmd->add_option("--modes", c->modes, "Modes: paged, reserve, faults, audit")->delimiter(',')->capture_default_str();
  cmd->add_option("-n,--requests", c->requests, "Requests per mode")->capture_default_str();
  cmd->add_option("-c,--clients", c->clients, "Concurrent clients")->capture_default_str();
  cmd->add_option("--kv-cache-tokens", c->kv_cache_tokens, "The server's KV pool, small for pressure")
      ->capture_default_str();
  cmd->add_option("--hangup-fraction", c->hangup_fraction, "Share of requests whose client hangs up")
      ->capture_default_str();
  cmd->add_option("--bad-fraction", c->bad_fraction, "Share of requests with invalid input")->capture_default_str();
  cmd->add_option("--max-tokens", c->max_tokens, "max_tokens of each request")->capture_default_str();
  cmd->add_option("--faults", c->faults, "--inject-faults of the faults mode")->capture_default_str();
  cmd->add_option("--max-rss-growth-mib", c->max_rss_growth_mib, "Most the server's RSS may grow")
      ->capture_default_str();
  cmd->add_option("--serve-arg", c->serve_args, "One more flag for `pagoda serve` (repeatable)");
  return {cmd, [c] {
            c->model = c->model_opt.resolve();
            bool ok = true;
            for (const auto& mode : c->modes) {
              std::string summary;
              const std::vector<std::string> failed = soak_mode(mode, *c, summary);
              std::printf("%s\n", summary.empty() ? mode.c_str() : summary.c_str());
              for (const auto& f : failed) std::printf("  FAILED: %s\n", f.c_str());
              std::fflush(stdout);
              ok = ok && failed.empty();
            }
            std::printf("soak: %s\n", ok ? "every check held" : "some checks FAILED");
            return ok ? 0 : 1;
          }};
}

}  // namespace pagoda::tools
