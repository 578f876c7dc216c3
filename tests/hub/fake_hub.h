// A fake Hugging Face hub for tests, on 127.0.0.1 (a free port), serving the
// hub's URL layout from memory: GET /api/models/ORG/REPO[/revision/REV] (the
// file list), HEAD/GET /ORG/REPO/resolve/REV/FILE (a 302 to /cdn/... with
// X-Linked-Etag/-Size and X-Repo-Commit, or 401 for a gated repo without the
// token, 404), and GET /cdn/ORG/REPO/FILE with Range (206). Knobs cut bodies
// short, corrupt a byte or misstate the size; counters say what was served.
// One connection at a time, each closed after its answer.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pagoda::testing {

struct FakeRepo {
  std::string sha = "0123456789abcdef0123456789abcdef01234567";
  std::map<std::string, std::string> files;  // path in the repo -> bytes
  bool gated = false;                        // resolve needs "Bearer " + FakeHub::token
};

class FakeHub {
 public:
  FakeHub();
  ~FakeHub();

  std::string url() const;  // http://127.0.0.1:PORT
  uint16_t port() const { return port_; }

  // Set up before a client runs (not thread-safe against serving).
  std::map<std::string, FakeRepo> repos;  // "ORG/REPO" -> files
  std::string token = "hf_test_token";
  std::string cdn_base;          // where resolve redirects ("" = this server)
  uint64_t cut_after = 0;        // with cut_responses: body bytes sent before hanging up
  uint64_t advertised_size = 0;  // != 0: the X-Linked-Size claimed
  int64_t corrupt_at = -1;       // >= 0: this byte of every file is served flipped

  std::atomic<int> cut_responses{0};     // the next N file bodies are cut short
  std::atomic<uint64_t> body_bytes{0};   // file body bytes sent by /cdn
  std::atomic<int> auth_seen{0};         // requests that carried Authorization
  std::vector<std::string> log() const;  // "METHOD TARGET [range] [auth]" per request

 private:
  void serve();
  void handle(void* socket);
  void record(std::string line);

  struct Io;
  std::unique_ptr<Io> io_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<std::string> log_;
  std::thread thread_;
};

}  // namespace pagoda::testing
