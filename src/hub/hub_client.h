// The Hugging Face hub over HTTP (libcurl's easy interface), in the hub's URL
// layout: GET /api/models/ORG/REPO[/revision/REV] lists the files; HEAD
// /ORG/REPO/resolve/REV/FILE answers (for an LFS file) a 302 to the CDN with
// X-Linked-Etag (the sha256), X-Linked-Size and X-Repo-Commit; the bytes come
// from the redirect target, from an offset with a Range request.
//
// Redirects are followed here, not by libcurl, so the X-Linked-* headers of
// the 302 are read and the bearer token (HF_TOKEN) goes only to the
// endpoint's own origin (scheme, host, port), never to a CDN. Connects time
// out, a transfer slower than 1 KiB/s for `low_speed_time_s` is abandoned,
// and libcurl never prints: every body goes to a callback.
// Errors: NetworkError (unreachable, broken off), AccessDenied (401/403, the
// message says what to do about HF_TOKEN), NotFound (404), all naming the
// endpoint and the repository.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "hub/repo_files.h"

namespace pagoda::hub {

struct HubConfig {
  std::string endpoint = "https://huggingface.co";  // no trailing slash needed
  std::string token;                                // bearer token; empty: none
  long connect_timeout_s = 15;
  long low_speed_time_s = 30;
};

// Where one file's bytes are and what they must hash to.
struct FileMeta {
  std::string url;  // the bytes' URL (the redirect target, or resolve itself)
  uint64_t size = 0;
  bool size_known = false;
  std::string sha256;  // lower-case hex; "" when the hub publishes none (a non-LFS file)
  std::string commit;  // X-Repo-Commit, "" if absent
};

class HubClient {
 public:
  explicit HubClient(HubConfig config);
  ~HubClient();
  HubClient(const HubClient&) = delete;
  HubClient& operator=(const HubClient&) = delete;

  const HubConfig& config() const { return config_; }

  RepoInfo repo_info(const std::string& repo, const std::string& revision);
  FileMeta file_meta(const std::string& repo, const std::string& revision, const std::string& file);

  // Streams meta.url's bytes from `offset` on (a Range request when offset >
  // 0). start(from) is called once before the first byte: from == offset when
  // the server honoured the range, 0 when it sent the whole file. Returns
  // false, calling nothing, when the server refuses the range (416).
  // Exceptions thrown by the callbacks (a full disk) come out of download.
  struct Sink {
    std::function<void(uint64_t from)> start;
    std::function<void(const char* data, size_t n)> bytes;
  };
  bool download(const FileMeta& meta, uint64_t offset, const Sink& sink);

  struct Response {
    long status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;                            // non-streamed bodies (capped)
  };

 private:
  Response request(const std::string& url, bool head, uint64_t range_from, const Sink* sink);
  [[noreturn]] void fail_status(const Response& r, const std::string& repo, const std::string& what) const;
  bool same_origin(const std::string& url) const;

  HubConfig config_;
  std::string endpoint_;  // config_.endpoint without a trailing '/'
  void* curl_ = nullptr;  // CURL*
};

}  // namespace pagoda::hub
