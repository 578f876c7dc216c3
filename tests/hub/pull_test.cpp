// Pulls through the library against the fake hub: resume, checksum, offline,
// quant choice, gated and missing repositories, split models, bad files.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/file.h"
#include "gguf/split.h"
#include "hub/errors.h"
#include "hub/fake_hub.h"
#include "hub/hub_fixture.h"
#include "hub/model_cache.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace pagoda::testing {
namespace {

namespace fs = std::filesystem;
using hub::HubRef;

HubRef file_ref(const std::string& repo, const std::string& file) {
  HubRef r;
  r.repo = repo;
  r.file = file;
  return r;
}

HubRef quant_ref(const std::string& repo, const std::string& quant) {
  HubRef r;
  r.repo = repo;
  r.quant = quant;
  return r;
}

template <class E>
std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type";
  return "";
}

TEST_F(HubTest, PullsVerifiesAndCachesByCommit) {
  const std::string bytes = stories();
  hub->repos["org/stories"].files = {{"stories260K.gguf", bytes}, {"README.md", "hi"}};
  const auto p = hub::pull(file_ref("org/stories", "stories260K.gguf"), options());
  EXPECT_EQ(p.path, (cache / "hub/org--stories" / hub->repos["org/stories"].sha / "stories260K.gguf").string());
  EXPECT_EQ(read_file(p.path), bytes);
  EXPECT_EQ(p.downloaded, bytes.size());
  EXPECT_EQ(hub->body_bytes, bytes.size());
  EXPECT_FALSE(fs::exists(p.path + ".part"));
  // Warm: one API call, no download.
  const size_t requests = hub->log().size();
  const auto again = hub::pull(file_ref("org/stories", "stories260K.gguf"), options());
  EXPECT_EQ(again.path, p.path);
  EXPECT_EQ(again.downloaded, 0u);
  EXPECT_EQ(hub->log().size(), requests + 1);
}

TEST_F(HubTest, AnInterruptedPullResumesWithOnlyTheRest) {
  const std::string bytes = stories();
  hub->repos["org/stories"].files = {{"stories260K.gguf", bytes}};
  hub->cut_after = 400000;
  hub->cut_responses = 1;
  const auto ref = file_ref("org/stories", "stories260K.gguf");
  const std::string msg = message_of<hub::NetworkError>([&] { hub::pull(ref, options()); });
  EXPECT_NE(msg.find("run the same command again to resume"), std::string::npos) << msg;
  const fs::path part = cache / "hub/org--stories" / hub->repos["org/stories"].sha / "stories260K.gguf.part";
  ASSERT_TRUE(fs::exists(part));
  EXPECT_EQ(fs::file_size(part), 400000u);
  EXPECT_EQ(hub->body_bytes, 400000u);
  hub->body_bytes = 0;
  const auto p = hub::pull(ref, options());  // a new run
  EXPECT_EQ(hub->body_bytes, bytes.size() - 400000);
  EXPECT_EQ(p.downloaded, bytes.size() - 400000);
  EXPECT_EQ(read_file(p.path), bytes);
  EXPECT_EQ(hub->log().back().find("bytes=400000-") != std::string::npos, true) << hub->log().back();
}

TEST_F(HubTest, ABrokenTransferIsResumedInTheSameRun) {
  const std::string bytes = stories();
  hub->repos["org/stories"].files = {{"stories260K.gguf", bytes}};
  hub->cut_after = 300000;
  hub->cut_responses = 2;
  auto o = options();
  o.retries = 2;
  const auto p = hub::pull(file_ref("org/stories", "stories260K.gguf"), o);
  EXPECT_EQ(read_file(p.path), bytes);
  EXPECT_EQ(hub->body_bytes, bytes.size());  // nothing sent twice
}

TEST_F(HubTest, ACorruptedByteIsCaughtAndTheFileDeleted) {
  hub->repos["org/stories"].files = {{"stories260K.gguf", stories()}};
  hub->corrupt_at = 123456;
  const std::string msg =
      message_of<hub::ChecksumMismatch>([&] { hub::pull(file_ref("org/stories", "stories260K.gguf"), options()); });
  EXPECT_NE(msg.find("checksum mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find("deleted"), std::string::npos) << msg;
  const fs::path dir = cache / "hub/org--stories" / hub->repos["org/stories"].sha;
  EXPECT_FALSE(fs::exists(dir / "stories260K.gguf"));
  EXPECT_FALSE(fs::exists(dir / "stories260K.gguf.part"));
}

TEST_F(HubTest, OfflineUsesTheCacheOnly) {
  hub->repos["org/multi"].files = {{"m-Q4_K_M.gguf", tagged_gguf("Q4_K_M")}, {"m-Q8_0.gguf", tagged_gguf("Q8_0")}};
  auto o = options();
  o.offline = true;
  const std::string msg = message_of<hub::NotFound>([&] { hub::pull(quant_ref("org/multi", "Q8_0"), o); });
  EXPECT_NE(msg.find("not in the cache"), std::string::npos) << msg;
  EXPECT_TRUE(hub->log().empty());  // offline never asked
  const auto online = hub::pull(quant_ref("org/multi", "Q8_0"), options());
  const std::string endpoint = hub->url();
  auto down = options();
  hub.reset();  // no server at all now
  const auto offline = hub::pull(quant_ref("org/multi", "q8_0"), o);
  EXPECT_EQ(offline.path, online.path);
  // A quant never pulled is not in the cache.
  EXPECT_THROW(hub::pull(quant_ref("org/multi", "Q4_K_M"), o), hub::NotFound);
  // Online with the endpoint down: names it and suggests --offline.
  const std::string net = message_of<hub::NetworkError>([&] { hub::pull(quant_ref("org/multi", "Q8_0"), down); });
  EXPECT_NE(net.find(endpoint), std::string::npos) << net;
  EXPECT_NE(net.find("--offline"), std::string::npos) << net;
}

TEST_F(HubTest, QuantPicksTheRightFile) {
  hub->repos["org/multi"].files = {{"m-Q4_K_M.gguf", tagged_gguf("Q4_K_M")},
                                   {"m-Q8_0.gguf", tagged_gguf("Q8_0")},
                                   {"mmproj-m-Q8_0.gguf", tagged_gguf("mmproj")},
                                   {"m-Q4_K.gguf", tagged_gguf("Q4_K")}};
  for (auto [quant, tag] : {std::pair{"Q8_0", "Q8_0"}, {"q4_k", "Q4_K"}, {"", "Q4_K_M"}}) {
    const auto p = hub::pull(quant_ref("org/multi", quant), options());
    EXPECT_EQ(GgufFile::open(p.path).get_string("test.which"), tag) << quant;
  }
}

TEST_F(HubTest, AGatedRepoAsksForHfToken) {
  hub->repos["org/gated"].files = {{"m.gguf", tagged_gguf("m")}};
  hub->repos["org/gated"].gated = true;
  const std::string msg = message_of<hub::AccessDenied>([&] { hub::pull(file_ref("org/gated", "m.gguf"), options()); });
  EXPECT_NE(msg.find("HF_TOKEN"), std::string::npos) << msg;
  EXPECT_NE(msg.find("licence"), std::string::npos) << msg;
  EXPECT_NE(msg.find(hub->url() + "/org/gated"), std::string::npos) << msg;
  // With the token: it goes to the hub, never to the CDN on another origin.
  FakeHub cdn;
  cdn.repos = hub->repos;
  hub->cdn_base = cdn.url();
  auto o = options();
  o.hub.token = hub->token;
  const auto p = hub::pull(file_ref("org/gated", "m.gguf"), o);
  EXPECT_EQ(GgufFile::open(p.path).get_string("test.which"), "m");
  EXPECT_GT(hub->auth_seen, 0);
  EXPECT_EQ(cdn.auth_seen, 0);
  EXPECT_EQ(cdn.log().size(), 1u);
  // A wrong token: says the token has no access.
  o.hub.token = "wrong";
  fs::remove_all(cache);
  const std::string wrong = message_of<hub::AccessDenied>([&] { hub::pull(file_ref("org/gated", "m.gguf"), o); });
  EXPECT_NE(wrong.find("HF_TOKEN is set"), std::string::npos) << wrong;
}

TEST_F(HubTest, NotFoundListsTheGgufFiles) {
  hub->repos["org/stories"].files = {{"stories260K.gguf", "x"}, {"README.md", "hi"}};
  const std::string msg =
      message_of<hub::NotFound>([&] { hub::pull(file_ref("org/stories", "stories15M.gguf"), options()); });
  EXPECT_NE(msg.find("org/stories"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stories15M.gguf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stories260K.gguf"), std::string::npos) << msg;
  const std::string repo = message_of<hub::NotFound>([&] { hub::pull(file_ref("org/nothing", "m.gguf"), options()); });
  EXPECT_NE(repo.find("org/nothing"), std::string::npos) << repo;
  EXPECT_NE(repo.find("404"), std::string::npos) << repo;
}

TEST_F(HubTest, ASplitModelIsPulledWhole) {
  SyntheticModelSpec spec;
  spec.type = TensorType::Q8_0;
  const GgufWriter w = synthetic_model(spec);
  const auto parts = w.split(3);
  for (int i = 0; i < 3; ++i) {
    const auto b = parts[size_t(i)].to_bytes();
    hub->repos["org/split"].files[split_name("q8/m-Q8_0", i + 1, 3)] = std::string(b.begin(), b.end());
  }
  const auto p = hub::pull(quant_ref("org/split", "Q8_0"), options());
  ASSERT_EQ(p.files.size(), 3u);
  EXPECT_EQ(fs::path(p.path).filename(), "m-Q8_0-00001-of-00003.gguf");
  const auto f = GgufFile::open(p.path);
  EXPECT_EQ(f.parts(), 3u);
  auto model = Model::load(p.path);
  EXPECT_EQ(model->config().n_layer, spec.n_layer);
  // Offline, the same three files.
  auto o = options();
  o.offline = true;
  EXPECT_EQ(hub::pull(quant_ref("org/split", "Q8_0"), o).files, p.files);
  // A part missing from the repository is named.
  hub->repos["org/split"].files.erase(split_name("q8/m-Q8_0", 3, 3));
  hub->repos["org/split"].sha = "1111111111111111111111111111111111111111";
  const std::string msg = message_of<hub::NotFound>([&] { hub::pull(quant_ref("org/split", "Q8_0"), options()); });
  EXPECT_NE(msg.find("00003-of-00003"), std::string::npos) << msg;
}

TEST_F(HubTest, AFileThatIsNotGgufIsRefusedAndRemoved) {
  hub->repos["org/bad"].files = {{"m.gguf", "<html>not a model</html>"}};
  const std::string msg = message_of<FormatError>([&] { hub::pull(file_ref("org/bad", "m.gguf"), options()); });
  EXPECT_NE(msg.find("not a GGUF file"), std::string::npos) << msg;
  EXPECT_TRUE(hub::ModelCache(cache.string()).files("org/bad", hub->repos["org/bad"].sha).empty());
}

TEST_F(HubTest, NoRoomOnDiskIsSaidBeforeDownloading) {
  hub->repos["org/stories"].files = {{"stories260K.gguf", "GGUF"}};
  hub->advertised_size = uint64_t(1) << 60;
  const std::string msg =
      message_of<ResourceExhausted>([&] { hub::pull(file_ref("org/stories", "stories260K.gguf"), options()); });
  EXPECT_NE(msg.find("disk space"), std::string::npos) << msg;
  EXPECT_EQ(hub->body_bytes, 0u);
}

}  // namespace
}  // namespace pagoda::testing
