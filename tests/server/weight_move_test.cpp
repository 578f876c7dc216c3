// The default serve answers from the file's map and moves the weights into
// memory in the background (model/weight_mover.h): the log reports the end
// of the move, and greedy text after it is --mmap's (which never moves).
// stories260K moves in milliseconds, so the first request may already find
// it moved; the switch mid-generation is model/weight_mover_test.cpp's.
#include <gtest/gtest.h>
#include <signal.h>

#include "server/http_client.h"
#include "server/server_process.h"
#include "server/test_util.h"

namespace pagoda::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::string greedy(uint16_t port) {
  const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 16}, {"temperature", 0}};
  const HttpResponse r = http_post(port, "/v1/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json()["choices"][0]["text"].get<std::string>();
}

TEST(ServerWeightMove, LogsTheMoveAndGreedyTextIsMmaps) {
  ServerProcess s;
  const std::string first = greedy(s.port());
  EXPECT_TRUE(eventually([&] { return s.stderr_text().find("moved into memory in") != std::string::npos; }, 10s))
      << s.stderr_text();
  EXPECT_EQ(greedy(s.port()), first);  // this pass reads the moved weights
  EXPECT_EQ(s.stop(SIGINT), 0);

  ServerProcess mapped({"--mmap"});
  EXPECT_EQ(greedy(mapped.port()), first);
  EXPECT_EQ(mapped.stderr_text().find("moved into memory"), std::string::npos) << mapped.stderr_text();
  EXPECT_EQ(mapped.stop(SIGINT), 0);
}

}  // namespace
}  // namespace pagoda::testing
