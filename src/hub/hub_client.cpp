#include "hub/hub_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>

#include "hub/errors.h"

#ifndef PAGODA_HUB_VERSION
#define PAGODA_HUB_VERSION "0"
#endif

namespace pagoda::hub {
namespace {

constexpr size_t kMaxBody = size_t(32) << 20;  // a file list of a huge repository is a few MiB
constexpr int kMaxRedirects = 10;

CURL* as_curl(void* p) { return static_cast<CURL*>(p); }

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

std::string trim(std::string s) {
  const auto not_space = [](char c) { return c != ' ' && c != '\t' && c != '\r' && c != '\n'; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// An ETag without W/ and quotes.
std::string etag_value(std::string v) {
  if (v.rfind("W/", 0) == 0) v.erase(0, 2);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string header(const HubClient::Response& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

bool parse_u64(const std::string& s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + uint64_t(c - '0');
  }
  return true;
}

// scheme://host:port of a URL (port made explicit), or "" if it does not parse.
std::string origin_of(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), curl_url_cleanup);
  if (!u || curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return "";
  std::string out;
  for (auto part : {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT}) {
    char* p = nullptr;
    if (curl_url_get(u.get(), part, &p, CURLU_DEFAULT_PORT) != CURLUE_OK) return "";
    out += lower(p) + "|";
    curl_free(p);
  }
  return out;
}

// A Location (absolute or relative) against the URL it came from.
std::string redirect_target(const std::string& base, const std::string& location) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> u(curl_url(), curl_url_cleanup);
  char* p = nullptr;
  if (!u || curl_url_set(u.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK ||
      curl_url_set(u.get(), CURLUPART_URL, location.c_str(), 0) != CURLUE_OK ||
      curl_url_get(u.get(), CURLUPART_URL, &p, 0) != CURLUE_OK)
    fail<NetworkError>("{} redirected to an unusable location '{}'", base, location);
  std::string out = p;
  curl_free(p);
  return out;
}

// Each segment of a repository path %-escaped, the slashes kept.
std::string escape_path(CURL* c, const std::string& path) {
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string seg = path.substr(start, slash == std::string::npos ? slash : slash - start);
    char* e = curl_easy_escape(c, seg.c_str(), int(seg.size()));
    if (!e) fail<ResourceExhausted>("curl_easy_escape failed");
    out += e;
    curl_free(e);
    if (slash == std::string::npos) return out;
    out += '/';
    start = slash + 1;
  }
}

bool redirect(long status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

// What libcurl's callbacks share with request(); exceptions wait here (never
// thrown through libcurl's C frames).
struct Transfer {
  HubClient::Response* r;
  const HubClient::Sink* sink;
  uint64_t range_from;
  bool started = false;
  std::exception_ptr error;
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->r->headers.clear();  // a new response (after a 100 Continue, say)
    const size_t sp = line.find(' ');
    t->r->status = sp == std::string::npos ? 0 : std::atol(line.c_str() + sp + 1);
  } else if (const size_t colon = line.find(':'); colon != std::string::npos) {
    t->r->headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
  }
  return size * n;
}

// The offset a 206 starts at, from "Content-Range: bytes A-B/T".
uint64_t range_start(const HubClient::Response& r) {
  const std::string cr = header(r, "content-range");
  uint64_t from = 0;
  const size_t dash = cr.find('-');
  if (cr.rfind("bytes ", 0) != 0 || dash == std::string::npos || !parse_u64(cr.substr(6, dash - 6), from))
    fail<NetworkError>("a 206 answer without a usable Content-Range ('{}')", cr);
  return from;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  const long s = t->r->status;
  try {
    if (t->sink && (s == 200 || s == 206)) {
      if (!t->started) {
        t->started = true;
        const uint64_t from = s == 206 ? range_start(*t->r) : 0;
        if (s == 206 && from != t->range_from)
          fail<NetworkError>("asked for bytes from {}, the server sent them from {}", t->range_from, from);
        t->sink->start(from);
      }
      t->sink->bytes(data, len);
    } else {
      if (t->r->body.size() + len > kMaxBody) fail<NetworkError>("an answer larger than {} bytes", kMaxBody);
      t->r->body.append(data, len);
    }
  } catch (...) {
    t->error = std::current_exception();
    return 0;  // not len: libcurl aborts the transfer
  }
  return len;
}

}  // namespace

HubClient::HubClient(HubConfig config) : config_(std::move(config)), endpoint_(config_.endpoint) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  while (!endpoint_.empty() && endpoint_.back() == '/') endpoint_.pop_back();
  if (endpoint_.rfind("http://", 0) != 0 && endpoint_.rfind("https://", 0) != 0)
    fail<InvalidArgument>("hub endpoint '{}' is not an http:// or https:// URL", config_.endpoint);
  curl_ = curl_easy_init();
  if (!curl_) fail<ResourceExhausted>("curl_easy_init failed");
}

HubClient::~HubClient() { curl_easy_cleanup(as_curl(curl_)); }

bool HubClient::same_origin(const std::string& url) const {
  const std::string o = origin_of(url);
  return !o.empty() && o == origin_of(endpoint_);
}

HubClient::Response HubClient::request(const std::string& url, bool head, uint64_t range_from, const Sink* sink) {
  CURL* c = as_curl(curl_);
  curl_easy_reset(c);
  Response r;
  Transfer t{&r, sink, range_from, false, nullptr};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  // The token goes only to the endpoint's own origin, never to a CDN.
  const std::string auth = "Authorization: Bearer " + config_.token;
  if (!config_.token.empty() && same_origin(url)) headers = curl_slist_append(headers, auth.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> hold(headers, curl_slist_free_all);
  const std::string range = std::to_string(range_from) + "-";
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "pagoda/" PAGODA_HUB_VERSION);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, config_.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, config_.low_speed_time_s);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (head) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (range_from > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  const CURLcode rc = curl_easy_perform(c);
  if (t.error) std::rethrow_exception(t.error);
  if (rc != CURLE_OK) {
    const std::string why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    if (r.status == 0)
      fail<NetworkError>("cannot reach {}: {}", origin_of(url) == origin_of(endpoint_) ? endpoint_ : url, why);
    fail<NetworkError>("the transfer from {} broke off: {}", endpoint_, why);
  }
  return r;
}

void HubClient::fail_status(const Response& r, const std::string& repo, const std::string& what) const {
  if (r.status == 401 || r.status == 403) {
    const std::string page = endpoint_ + "/" + repo;
    if (config_.token.empty())
      fail<AccessDenied>(
          "{}: access denied (HTTP {}) by {}: the model is gated or private. Set HF_TOKEN to an access "
          "token ({}/settings/tokens) and accept the model's licence on {}",
          what, r.status, endpoint_, endpoint_, page);
    fail<AccessDenied>(
        "{}: access denied (HTTP {}) by {} although HF_TOKEN is set: accept the model's licence on {} "
        "with that token's account, or check the token",
        what, r.status, endpoint_, page);
  }
  if (r.status == 404) fail<NotFound>("{}: not found on {} (HTTP 404)", what, endpoint_);
  fail<NetworkError>("{}: HTTP {} from {}", what, r.status, endpoint_);
}

RepoInfo HubClient::repo_info(const std::string& repo, const std::string& revision) {
  CURL* c = as_curl(curl_);
  std::string url = endpoint_ + "/api/models/" + escape_path(c, repo);
  if (revision != "main") url += "/revision/" + escape_path(c, revision);
  for (int hop = 0;; ++hop) {
    Response r = request(url, false, 0, nullptr);
    if (redirect(r.status) && hop < kMaxRedirects && !header(r, "location").empty()) {
      url = redirect_target(url, header(r, "location"));  // a renamed repository
      continue;
    }
    if (r.status != 200) fail_status(r, repo, "repository " + repo);
    try {
      return parse_repo_info(r.body);
    } catch (const FormatError& e) {
      fail<NetworkError>("{} answered the file list of {} with something else: {}", endpoint_, repo, e.what());
    }
  }
}

FileMeta HubClient::file_meta(const std::string& repo, const std::string& revision, const std::string& file) {
  CURL* c = as_curl(curl_);
  std::string url =
      endpoint_ + "/" + escape_path(c, repo) + "/resolve/" + escape_path(c, revision) + "/" + escape_path(c, file);
  const std::string what = repo + "/" + file;
  for (int hop = 0;; ++hop) {
    Response r = request(url, true, 0, nullptr);
    FileMeta m;
    m.commit = header(r, "x-repo-commit");
    const std::string linked = lower(etag_value(header(r, "x-linked-etag")));
    const std::string etag = lower(etag_value(header(r, "etag")));
    m.sha256 = is_sha256_hex(linked) ? linked : is_sha256_hex(etag) ? etag : "";
    const std::string size = header(r, !header(r, "x-linked-size").empty() ? "x-linked-size" : "content-length");
    m.size_known = parse_u64(size, m.size);
    if (redirect(r.status)) {
      const std::string location = header(r, "location");
      if (location.empty() || hop >= kMaxRedirects)
        fail<NetworkError>("{}: a redirect without a usable Location", what);
      const std::string next = redirect_target(url, location);
      // The 302 to the CDN carries the LFS headers: the bytes are there.
      if (!header(r, "x-linked-etag").empty() || !same_origin(next)) {
        m.url = next;
        return m;
      }
      url = next;  // a renamed repository: resolve again there
      continue;
    }
    if (r.status != 200) fail_status(r, repo, what);
    m.url = url;
    return m;
  }
}

bool HubClient::download(const FileMeta& meta, uint64_t offset, const Sink& sink) {
  std::string url = meta.url;
  for (int hop = 0;; ++hop) {
    Response r = request(url, false, offset, &sink);
    if (redirect(r.status) && hop < kMaxRedirects && !header(r, "location").empty()) {
      url = redirect_target(url, header(r, "location"));
      continue;
    }
    if (r.status == 416) return false;
    if (r.status != 200 && r.status != 206) fail_status(r, "", url);
    return true;
  }
}

}  // namespace pagoda::hub
