// Replicas behind a real router: three `pagoda serve` replicas behind HAProxy
// (Debian's haproxy; the configuration is deploy/haproxy/haproxy.cfg's, with
// this test's ports) with `option httpchk GET /health`, leastconn and
// retries. While `pagoda loadgen` runs through it, one replica is killed and
// another stalls (fault injection: every step from step 40 on takes 5 s).
// Every request ends, completed or with an error a client can retry (5xx, or
// a stream cut short), never hanging; HAProxy marks the stalled replica down
// by its /health; the survivors end with no request and no KV block held.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"
#include "testing/process.h"

extern char** environ;

namespace pagoda::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A free loopback port, from the kernel (closed again before use).
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string haproxy_binary() {
  for (const char* p : {"/usr/sbin/haproxy", "/usr/bin/haproxy"})
    if (fs::exists(p)) return p;
  return "";
}

// HAProxy in the foreground, killed with the test.
class Haproxy {
 public:
  explicit Haproxy(const std::string& config_path) {
    std::vector<std::string> args = {haproxy_binary(), "-db", "-f", config_path};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~Haproxy() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  bool started() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

std::string config(uint16_t front, uint16_t stats, const std::vector<uint16_t>& replicas) {
  std::string c = R"(global
    maxconn 4096
defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout 503
frontend pagoda
    bind 127.0.0.1:)" +
                  std::to_string(front) + R"(
    default_backend replicas
frontend stats
    bind 127.0.0.1:)" +
                  std::to_string(stats) + R"(
    stats enable
    stats uri /stats
backend replicas
    balance leastconn
    option httpchk GET /health
    http-check expect status 200
    default-server inter 200ms fall 2 rise 2 on-marked-down shutdown-sessions
)";
  for (size_t i = 0; i < replicas.size(); ++i)
    c += "    server r" + std::to_string(i) + " 127.0.0.1:" + std::to_string(replicas[i]) + " check\n";
  return c;
}

// r<i>'s status column ("UP", "DOWN", ...) from the stats CSV.
std::string status_of(uint16_t stats_port, int i) {
  const HttpResponse r = http_get(stats_port, "/stats;csv");
  std::istringstream in(r.body);
  std::string line;
  const std::string name = "replicas,r" + std::to_string(i) + ",";
  while (std::getline(in, line)) {
    if (!line.starts_with(name)) continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string col; std::getline(ss, col, ',');) cols.push_back(col);
    return cols.size() > 17 ? cols[17] : "";  // column 18: status
  }
  return "";
}

TEST(Haproxy, KilledAndStalledReplicasCostRetriesNotHangs) {
  if (haproxy_binary().empty()) GTEST_SKIP() << "haproxy is not installed (scripts/install-deps.sh installs it)";
  const std::vector<std::string> common = {"--kv-cache-tokens", "1024", "--max-num-seqs", "16", "--threads", "1"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), common.begin(), common.end());
    return extra;
  };
  ServerProcess healthy(with({}));
  ServerProcess doomed(with({}));
  ServerProcess stalling(
      with({"--inject-faults", "slow=1,slow_ms=5000,at_step=40", "--stall-min-ms", "300", "--stall-timeout", "0.5"}));
  const uint16_t front = free_port(), stats = free_port();
  const fs::path cfg = fs::temp_directory_path() / ("pagoda_haproxy_" + std::to_string(::getpid()) + ".cfg");
  std::ofstream(cfg) << config(front, stats, {healthy.port(), doomed.port(), stalling.port()});
  Haproxy proxy(cfg.string());
  ASSERT_TRUE(proxy.started());
  ASSERT_TRUE(eventually([&] {
    try {
      return status_of(stats, 0) == "UP" && status_of(stats, 1) == "UP" && status_of(stats, 2) == "UP";
    } catch (const std::exception&) {
      return false;
    }
  }));

  const int n = scaled(160, 48);
  auto load = std::async(std::launch::async, [&] {
    const ProcessResult p =
        run_process({pagoda_binary(), "loadgen", "--port", std::to_string(front), "--json", "-c", "12", "-n",
                     std::to_string(n), "--max-tokens", "24", "--request-timeout", "60", "--seed", "4"});
    return p;
  });
  // Once the load is on every replica, one dies.
  ASSERT_TRUE(eventually([&] { return metrics(doomed.port()).at("pagoda_requests_received_total") >= 5; },
                         std::chrono::seconds(30)));
  EXPECT_EQ(doomed.stop(SIGKILL), 128 + SIGKILL);
  // The stalling replica's /health says so, and HAProxy takes it out.
  EXPECT_TRUE(eventually([&] { return status_of(stats, 2).starts_with("DOWN"); }, std::chrono::seconds(30)));
  EXPECT_TRUE(status_of(stats, 1).starts_with("DOWN"));

  const ProcessResult p = load.get();
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json r = json::parse(p.out);
  SCOPED_TRACE(r.dump(1));
  EXPECT_EQ(r["ended"], n);
  EXPECT_EQ(r["client_timeouts"], 0);
  EXPECT_EQ(r["http_4xx"], 0);
  // What did not complete failed in a way a client retries: a 5xx, an error
  // event, or a stream cut short (loadgen's transport_errors) when its replica
  // died or was taken out.
  EXPECT_EQ(
      r["ok"].get<int>() + r["http_5xx"].get<int>() + r["stream_errors"].get<int>() + r["transport_errors"].get<int>(),
      n);
  EXPECT_GT(r["ok"].get<int>(), n / 2);
  // The survivors hold nothing once their clients are gone.
  for (ServerProcess* s : {&healthy, &stalling}) {
    EXPECT_TRUE(eventually([&] { return engine_idle(s->port()); }, std::chrono::seconds(30)));
    EXPECT_EQ(metrics(s->port()).at("pagoda_engine_idle_check_failures_total"), 0);
  }
  fs::remove(cfg);
}

}  // namespace
}  // namespace pagoda::testing
