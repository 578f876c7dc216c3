// The server under a memory limit smaller than the weights plus its default
// KV pool (engine/memory_plan.h): it starts with a smaller pool sized from
// what the limit leaves, says so in its log, and serves, a full pool
// preempting rather than failing; an explicit pool that cannot fit is refused
// at start in one line. The limit is RLIMIT_AS, set by util-linux's prlimit:
// it works as any user, in a VM or a container, where a writable cgroup may
// not exist.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <future>
#include <regex>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kLimit = 1024 * kMiB;
// stories260K's default pool for 2048 sequences of its 512-token context
// (1280 bytes a token) is 1.25 GiB: more than the whole limit.
constexpr int64_t kDefaultBlocks = 2048 * 512 / 16;
const std::vector<std::string> kManySeqs = {"--max-num-seqs", "2048", "--threads", "2"};

// The prlimit command that runs the server under kLimit, or empty (then the test skips).
std::vector<std::string> limited() {
  for (const char* p : {"/usr/bin/prlimit", "/bin/prlimit"})
    if (access(p, X_OK) == 0) return {p, "--as=" + std::to_string(kLimit), "--"};
  return {};
}

int64_t logged_blocks(const std::string& log) {
  std::smatch m;
  return std::regex_search(log, m, std::regex(R"(KV cache: (\d+) blocks)")) ? std::stoll(m[1]) : -1;
}

// n completions at once; their statuses.
std::vector<int> complete(uint16_t port, int n, int max_tokens) {
  std::vector<std::future<int>> calls;
  for (int i = 0; i < n; ++i)
    calls.push_back(std::async(std::launch::async, [=] {
      const json body = {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"ignore_eos", true}};
      return http_post(port, "/v1/completions", body).status;
    }));
  std::vector<int> statuses;
  for (auto& c : calls) statuses.push_back(c.get());
  return statuses;
}

#if defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_ASAN() GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: no RLIMIT_AS applies"
#else
#define SKIP_UNDER_ASAN() (void)0
#endif

TEST(ServerMemoryLimit, StartsWithASmallerPoolUnderRlimitAsAndServes) {
  SKIP_UNDER_ASAN();
  const auto launcher = limited();
  if (launcher.empty()) GTEST_SKIP() << "prlimit (util-linux) is not installed";
  ServerProcess s(kManySeqs, true, launcher);
  const std::string log = s.stderr_text();
  EXPECT_NE(log.find("are copied into memory"), std::string::npos) << log;
  EXPECT_NE(log.find("90% of the"), std::string::npos) << log;
  EXPECT_NE(log.find("left after the weights"), std::string::npos) << log;
  EXPECT_NE(log.find("under RLIMIT_AS"), std::string::npos) << log;
  const int64_t blocks = logged_blocks(log);
  EXPECT_GT(blocks, 0) << log;
  EXPECT_LT(blocks, kDefaultBlocks) << log;
  EXPECT_LT(blocks * 16 * 1280, kLimit) << log;
  EXPECT_EQ(metrics(s.port()).at("pagoda_kv_blocks_total"), double(blocks));
  for (int status : complete(s.port(), 16, 32)) EXPECT_EQ(status, 200);
  EXPECT_TRUE(s.running());
  EXPECT_EQ(s.stop(SIGINT), 0) << s.stderr_text();
}

// A pool the load overfills, under the same limit: sequences are preempted
// and recomputed, every request completes, and the process lives.
TEST(ServerMemoryLimit, AFullPoolPreemptsUnderTheLimit) {
  SKIP_UNDER_ASAN();
  const auto launcher = limited();
  if (launcher.empty()) GTEST_SKIP() << "prlimit (util-linux) is not installed";
  ServerProcess s({"--kv-cache-tokens", "1024", "--threads", "2"}, true, launcher);
  for (int status : complete(s.port(), 8, 400)) EXPECT_EQ(status, 200);
  EXPECT_GT(metrics(s.port()).at("pagoda_num_preemptions_total"), 0);
  EXPECT_TRUE(s.running());
  EXPECT_EQ(s.stop(SIGINT), 0) << s.stderr_text();
}

// No machine has the 95 TiB asked for: the server refuses at start, naming
// the flag and the figures, instead of being killed once the pool fills.
TEST(ServerMemoryLimit, RefusesAnExplicitPoolThatCannotFit) {
  ServerProcess s({"--kv-cache-mem", "100000000"}, false);
  EXPECT_TRUE(eventually([&] { return !s.running(); }, 30s));
  EXPECT_EQ(s.stop(), 1);
  const std::string err = s.stderr_text();
  EXPECT_NE(err.find("error: --kv-cache-mem 100000000 MiB does not fit the"), std::string::npos) << err;
  EXPECT_NE(err.find("give at most --kv-cache-mem"), std::string::npos) << err;
}

}  // namespace
}  // namespace pagoda::testing
