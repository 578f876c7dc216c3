// What the pull tests share: a fake hub, a private cache folder
// (PAGODA_CACHE), an environment free of the user's HF_* settings, and small
// GGUF files to serve.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gguf/writer.h"
#include "hub/fake_hub.h"
#include "hub/pull.h"
#include "testing/shared_data.h"

namespace pagoda::testing {

class HubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"HF_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE", "http_proxy", "https_proxy", "HTTP_PROXY",
                          "HTTPS_PROXY", "ALL_PROXY", "all_proxy"})
      ::unsetenv(v);
    ::setenv("NO_PROXY", "*", 1);  // tests only ever talk to 127.0.0.1
    cache = std::filesystem::temp_directory_path() / ("pagoda-hub-" + std::to_string(::getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(cache);
    ::setenv("PAGODA_CACHE", cache.c_str(), 1);
    hub = std::make_unique<FakeHub>();
  }
  void TearDown() override { std::filesystem::remove_all(cache); }

  hub::PullOptions options() const {
    hub::PullOptions o;
    o.hub.endpoint = hub->url();
    o.hub.connect_timeout_s = 5;
    o.cache_root = cache.string();
    o.progress = false;
    o.retries = 0;
    return o;
  }

  static std::string stories() { return read_file(shared_path("models/stories260K.gguf")); }
  // A tiny valid GGUF whose metadata says which file it is.
  static std::string tagged_gguf(const std::string& tag) {
    GgufWriter w;
    w.set("test.which", Value::string(tag));
    w.add_f32_tensor("t", {4}, {1, 2, 3, 4});
    const auto b = w.to_bytes();
    return std::string(b.begin(), b.end());
  }

  std::filesystem::path cache;
  std::unique_ptr<FakeHub> hub;
};

}  // namespace pagoda::testing
