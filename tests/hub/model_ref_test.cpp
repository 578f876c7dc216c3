// The pure parts of hub pulls: model names, the file list and the choice of
// a GGUF file in it, SHA-256, progress lines and the cache's layout.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "hub/errors.h"
#include "hub/model_cache.h"
#include "hub/model_ref.h"
#include "hub/progress.h"
#include "hub/repo_files.h"
#include "hub/sha256.h"

namespace pagoda::hub {
namespace {

TEST(ModelRef, PathsStayPaths) {
  for (const char* p : {"models/x.gguf", "/abs/x.gguf", "hf:/x", "HF://a/b/c.gguf", "", "org/repo"}) {
    const auto m = parse_model_arg(p);
    EXPECT_FALSE(m.hub) << p;
    EXPECT_EQ(m.path, p);
  }
}

TEST(ModelRef, HubFileNames) {
  const auto m = parse_model_arg("hf://ggml-org/models/tinyllamas/stories260K.gguf");
  ASSERT_TRUE(m.hub);
  EXPECT_EQ(m.ref.repo, "ggml-org/models");
  EXPECT_EQ(m.ref.file, "tinyllamas/stories260K.gguf");
  EXPECT_EQ(m.ref.revision, "main");
  EXPECT_EQ(m.ref.to_string(), "hf://ggml-org/models/tinyllamas/stories260K.gguf");
  const auto r = parse_model_arg("hf://org/repo:q8_0");
  EXPECT_EQ(r.ref.repo, "org/repo");
  EXPECT_EQ(r.ref.quant, "q8_0");
  EXPECT_TRUE(r.ref.file.empty());
}

TEST(ModelRef, HfRepoForm) {
  const auto a = parse_hf_repo("bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M");
  EXPECT_EQ(a.repo, "bartowski/Llama-3.2-1B-Instruct-GGUF");
  EXPECT_EQ(a.quant, "Q4_K_M");
  EXPECT_EQ(parse_hf_repo("org/repo").quant, "");
  EXPECT_EQ(parse_hf_repo("org/repo").to_string(), "org/repo");
}

TEST(ModelRef, UnsafeOrMalformedNamesAreRefused) {
  for (const char* bad :
       {"hf://", "hf://org", "hf://org/", "hf:///repo/x.gguf", "hf://org/../x.gguf", "hf://org/repo/../../etc/passwd",
        "hf://org/repo/a//b.gguf", "hf://org/repo/./a.gguf", "hf://o--rg/repo/a.gguf", "hf://org/re po/a.gguf",
        "hf://org/repo:", "hf://org/repo:Q4/K", "hf://.org/repo/a.gguf", "hf://org/repo/a\\b.gguf"})
    EXPECT_THROW(parse_model_arg(bad), InvalidArgument) << bad;
  for (const char* bad : {"org", "org/repo/extra", "org/repo:", "/repo", "org/", "org/repo:Q4 K", "a/b:c:d"})
    EXPECT_THROW(parse_hf_repo(bad), InvalidArgument) << bad;
  EXPECT_THROW(parse_model_arg(std::string("hf://org/repo/a\nb.gguf")), InvalidArgument);
}

TEST(RepoFiles, ParsesTheHubsFileList) {
  const auto info =
      parse_repo_info(R"({"id":"o/r","sha":"abc123","siblings":[{"rfilename":"b.gguf"},{"rfilename":"README.md"},)"
                      R"({"rfilename":"../evil.gguf"},{"rfilename":"a/c.gguf","size":3}],"tags":[]})");
  EXPECT_EQ(info.sha, "abc123");
  EXPECT_EQ(info.files, (std::vector<std::string>{"README.md", "a/c.gguf", "b.gguf"}));  // ../evil dropped
  EXPECT_TRUE(parse_repo_info(R"({"sha":"x"})").files.empty());
  for (const char* bad :
       {"", "[]", "{", R"({"siblings":{}})", R"({"siblings":[1]})", R"({"siblings":[{"rfilename":2}]})"})
    EXPECT_THROW(parse_repo_info(bad), FormatError) << bad;
}

TEST(RepoFiles, ChoosesLikeLlamaCpp) {
  const std::vector<std::string> files = {"README.md",
                                          "m-IQ2_XXS.gguf",
                                          "m-Q4_K.gguf",
                                          "m-Q4_K_M.gguf",
                                          "m.Q8_0.gguf",
                                          "mmproj-m-Q8_0.gguf",
                                          "big/m-Q6_K-00001-of-00002.gguf",
                                          "big/m-Q6_K-00002-of-00002.gguf"};
  EXPECT_EQ(select_gguf(files, "q8_0", "o/r"), "m.Q8_0.gguf");  // case-insensitive, never the projector
  EXPECT_EQ(select_gguf(files, "Q4_K", "o/r"), "m-Q4_K.gguf");  // a whole word: not Q4_K_M
  EXPECT_EQ(select_gguf(files, "", "o/r"), "m-Q4_K_M.gguf");
  EXPECT_EQ(select_gguf(files, "Q6_K", "o/r"), "big/m-Q6_K-00001-of-00002.gguf");
  EXPECT_EQ(select_gguf({"b-F16.gguf", "a-Q8_0.gguf"}, "", "o/r"), "a-Q8_0.gguf");  // no Q4_K_M: the first
  try {
    select_gguf(files, "Q5_K_S", "o/r");
    FAIL();
  } catch (const NotFound& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Q5_K_S"), std::string::npos) << msg;
    EXPECT_NE(msg.find("m-Q4_K_M.gguf"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("mmproj"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("00002-of"), std::string::npos) << msg;
  }
  EXPECT_THROW(select_gguf({"README.md"}, "", "o/r"), NotFound);
  EXPECT_EQ(
      model_parts("d/m-00001-of-00003.gguf"),
      (std::vector<std::string>{"d/m-00001-of-00003.gguf", "d/m-00002-of-00003.gguf", "d/m-00003-of-00003.gguf"}));
  EXPECT_EQ(model_parts("m.gguf"), std::vector<std::string>{"m.gguf"});
}

TEST(Sha256, KnownVectors) {
  Sha256 h;
  EXPECT_EQ(h.hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  h.update("ab", 2);
  h.update("c", 1);
  EXPECT_EQ(h.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Progress, LinesCarryBytesRateAndEta) {
  using namespace std::chrono_literals;
  const auto t0 = Progress::Clock::time_point{};
  std::FILE* out = std::tmpfile();
  Progress p("o/r/m.gguf", 10 << 20, 0, false, out, t0);
  EXPECT_EQ(p.line(5 << 20, t0 + 5s), "o/r/m.gguf  50% 5.0 MiB/10.0 MiB  1.0 MiB/s  ETA 5s");
  p.update(1 << 20, t0 + 1s);  // under 5 s since the start: no line yet
  p.update(6 << 20, t0 + 6s);
  p.finish(10 << 20, t0 + 7s);
  std::rewind(out);
  char buf[512] = {0};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, out);
  std::fclose(out);
  const std::string text(buf, n);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_NE(text.find("100% 10.0 MiB/10.0 MiB"), std::string::npos) << text;
  EXPECT_EQ(Progress::bytes(512), "512 B");
}

TEST(ModelCache, LayoutByRepoAndCommit) {
  const auto root = std::filesystem::temp_directory_path() / ("pagoda-cache-layout-" + std::to_string(::getpid()));
  const ModelCache c(root.string());
  EXPECT_EQ(c.file_path("org/repo", "abc", "d/m.gguf"), (root / "hub/org--repo/abc/d/m.gguf").string());
  EXPECT_THROW(c.file_path("org/repo", "../x", "m.gguf"), InvalidArgument);
  EXPECT_FALSE(c.commit_for("org/repo", "main"));
  c.set_commit("org/repo", "main", "abc");
  EXPECT_EQ(c.commit_for("org/repo", "main"), "abc");
  std::filesystem::create_directories(root / "hub/org--repo/abc/d");
  for (const char* f : {"hub/org--repo/abc/d/m.gguf", "hub/org--repo/abc/n.gguf.part"}) std::ofstream(root / f) << "x";
  EXPECT_EQ(c.files("org/repo", "abc"), std::vector<std::string>{"d/m.gguf"});
  ::setenv("PAGODA_CACHE", "/some/where", 1);
  EXPECT_EQ(ModelCache::default_root(), "/some/where");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace pagoda::hub
