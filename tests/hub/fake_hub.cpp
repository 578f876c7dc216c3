#include "hub/fake_hub.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <nlohmann/json.hpp>

#include "hub/sha256.h"

namespace pagoda::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

struct FakeHub::Io {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
};

namespace {

std::string sha256_of(const std::string& bytes) {
  hub::Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

struct Answer {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  uint64_t content_length = 0;  // what Content-Length says (body may be cut shorter)
  bool head = false;
};

void send(tcp::socket& s, const Answer& a) {
  std::string out = "HTTP/1.1 " + std::to_string(a.status) + " X\r\n";
  for (const auto& [k, v] : a.headers) out += k + ": " + v + "\r\n";
  out += "Content-Length: " + std::to_string(a.content_length) + "\r\nConnection: close\r\n\r\n";
  if (!a.head) out += a.body;
  boost::system::error_code ec;
  asio::write(s, asio::buffer(out), ec);
}

Answer text(int status, const std::string& body) {
  Answer a;
  a.status = status;
  a.body = body;
  a.content_length = body.size();
  return a;
}

// "a/b/c" -> {"a", "b", "c"}
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    const size_t slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v, size_t from) {
  std::string out;
  for (size_t i = from; i < v.size(); ++i) out += (i > from ? "/" : "") + v[i];
  return out;
}

}  // namespace

FakeHub::FakeHub() : io_(std::make_unique<Io>()) {
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  io_->acceptor.open(ep.protocol());
  io_->acceptor.set_option(asio::socket_base::reuse_address(true));
  io_->acceptor.bind(ep);
  io_->acceptor.listen();
  port_ = io_->acceptor.local_endpoint().port();
  thread_ = std::thread([this] { serve(); });
}

FakeHub::~FakeHub() {
  stopping_ = true;
  boost::system::error_code ec;
  tcp::socket wake(io_->ioc);  // unblocks accept()
  wake.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ec);
  thread_.join();
}

std::string FakeHub::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<std::string> FakeHub::log() const {
  std::lock_guard lock(mu_);
  return log_;
}

void FakeHub::record(std::string line) {
  std::lock_guard lock(mu_);
  log_.push_back(std::move(line));
}

void FakeHub::serve() {
  while (!stopping_) {
    tcp::socket s(io_->ioc);
    boost::system::error_code ec;
    io_->acceptor.accept(s, ec);
    if (stopping_) break;
    if (!ec) handle(&s);
  }
}

void FakeHub::handle(void* socket) {
  auto& s = *static_cast<tcp::socket*>(socket);
  boost::beast::flat_buffer buf;
  http::request<http::string_body> req;
  boost::system::error_code ec;
  http::read(s, buf, req, ec);
  if (ec) return;
  const std::string target(req.target());
  const std::string auth(req[http::field::authorization]);
  const std::string range(req[http::field::range]);
  if (!auth.empty()) ++auth_seen;
  record(std::string(req.method_string()) + " " + target + (range.empty() ? "" : " " + range) +
         (auth.empty() ? "" : " auth"));
  const bool head = req.method() == http::verb::head;
  const auto seg = segments(target);

  // GET /api/models/ORG/REPO[/revision/REV]
  if (seg.size() >= 4 && seg[0] == "api" && seg[1] == "models") {
    auto it = repos.find(seg[2] + "/" + seg[3]);
    if (it == repos.end()) return send(s, text(404, R"({"error":"Repository not found"})"));
    nlohmann::json j = {{"id", it->first}, {"sha", it->second.sha}, {"siblings", nlohmann::json::array()}};
    for (const auto& [name, bytes] : it->second.files) j["siblings"].push_back({{"rfilename", name}});
    return send(s, text(200, j.dump()));
  }
  // HEAD/GET /ORG/REPO/resolve/REV/FILE
  if (seg.size() >= 5 && seg[2] == "resolve") {
    auto it = repos.find(seg[0] + "/" + seg[1]);
    if (it == repos.end()) return send(s, text(404, "Repository not found"));
    const FakeRepo& repo = it->second;
    if (seg[3] != "main" && seg[3] != repo.sha) return send(s, text(404, "Revision not found"));
    if (repo.gated && auth != "Bearer " + token) return send(s, text(401, "Access to model is restricted"));
    const std::string file = join(seg, 4);
    auto f = repo.files.find(file);
    if (f == repo.files.end()) return send(s, text(404, "Entry not found"));
    Answer a = text(302, "");
    a.head = head;
    const std::string base = cdn_base.empty() ? url() : cdn_base;
    a.headers = {{"Location", base + "/cdn/" + seg[0] + "/" + seg[1] + "/" + file},
                 {"X-Linked-Etag", "\"" + sha256_of(f->second) + "\""},
                 {"X-Linked-Size", std::to_string(advertised_size ? advertised_size : f->second.size())},
                 {"X-Repo-Commit", repo.sha},
                 {"ETag", "\"deadbeef\""}};
    return send(s, a);
  }
  // GET /cdn/ORG/REPO/FILE, with an optional "Range: bytes=N-"
  if (seg.size() >= 4 && seg[0] == "cdn") {
    auto it = repos.find(seg[1] + "/" + seg[2]);
    const std::string file = join(seg, 3);
    if (it == repos.end() || !it->second.files.count(file)) return send(s, text(404, "no such object"));
    std::string bytes = it->second.files.at(file);
    if (corrupt_at >= 0 && uint64_t(corrupt_at) < bytes.size()) bytes[size_t(corrupt_at)] ^= 0x20;
    uint64_t from = 0;
    if (range.rfind("bytes=", 0) == 0) from = std::stoull(range.substr(6));
    if (from >= bytes.size() && !bytes.empty()) return send(s, text(416, ""));
    Answer a = text(from > 0 ? 206 : 200, bytes.substr(size_t(from)));
    a.head = head;
    if (from > 0)
      a.headers.push_back({"Content-Range", "bytes " + std::to_string(from) + "-" + std::to_string(bytes.size() - 1) +
                                                "/" + std::to_string(bytes.size())});
    if (cut_responses > 0) {
      --cut_responses;
      a.body.resize(std::min<size_t>(a.body.size(), size_t(cut_after)));  // Content-Length still promises all
    }
    if (!head) body_bytes += a.body.size();
    return send(s, a);
  }
  send(s, text(404, "unknown path"));
}

}  // namespace pagoda::testing
