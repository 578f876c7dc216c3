#include "hub/pull.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "hub/errors.h"
#include "hub/model_cache.h"
#include "hub/progress.h"
#include "hub/sha256.h"

namespace pagoda::hub {
namespace {

namespace fs = std::filesystem;

bool env_true(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

[[noreturn]] void write_failed(const std::string& part, int err, uint64_t have, const FileMeta& meta) {
  if (err == ENOSPC || err == EDQUOT)
    fail<ResourceExhausted>(
        "disk full writing {} ({} of {} received): free some space (or set PAGODA_CACHE to "
        "another disk) and run again to resume",
        part, Progress::bytes(double(have)), Progress::bytes(double(meta.size)));
  fail("cannot write {}: {}", part, std::strerror(err));
}

// Refuses a download that cannot fit before it starts.
void check_space(const fs::path& dir, uint64_t need, const std::string& file) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return;
  const uint64_t free_bytes = uint64_t(st.f_bavail) * uint64_t(st.f_frsize);
  if (need > free_bytes)
    fail<ResourceExhausted>(
        "not enough disk space for {}: it needs {} more, {} has {} free; free some space or set "
        "PAGODA_CACHE to another disk",
        file, Progress::bytes(double(need)), dir.string(), Progress::bytes(double(free_bytes)));
}

// Checks the finished .part (size, sha256, GGUF magic); deletes it if bad.
void verify(const std::string& part, uint64_t have, Sha256& hash, const FileMeta& meta, const std::string& what) {
  if (meta.size_known && have != meta.size) {
    fs::remove(part);
    fail<ChecksumMismatch>(
        "{}: received {} bytes, the hub publishes {}; deleted the bad download {}; run again to "
        "fetch it afresh",
        what, have, meta.size, part);
  }
  const std::string got = hash.hex();
  if (!meta.sha256.empty() && got != meta.sha256) {
    fs::remove(part);
    fail<ChecksumMismatch>(
        "{}: checksum mismatch: the hub publishes sha256 {}, the download has {}; deleted the bad "
        "file {}; run again to download it afresh",
        what, meta.sha256, got, part);
  }
  if (meta.sha256.empty())
    fmt::print(stderr, "warning: the hub publishes no sha256 for {}; only its size was checked\n", what);
  char magic[4] = {0};
  FilePtr in(std::fopen(part.c_str(), "rb"));
  const bool gguf = in && std::fread(magic, 1, 4, in.get()) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  in.reset();
  if (!gguf) {
    fs::remove(part);
    fail<FormatError>("{} is not a GGUF file (it does not start with 'GGUF'); deleted the download", what);
  }
}

// Downloads one file to final_path by way of its .part; returns bytes received.
uint64_t download_file(HubClient& client, const HubRef& ref, const std::string& revision, const std::string& file,
                       const std::string& final_path, const PullOptions& o) {
  const std::string what = ref.repo + "/" + file;
  FileMeta meta;
  try {
    meta = client.file_meta(ref.repo, revision, file);
  } catch (const NotFound& e) {
    fail<NotFound>("{}: the hub lists it but its download is missing ({})", what, e.what());
  }
  const std::string part = ModelCache::part_path(final_path);
  fs::create_directories(fs::path(final_path).parent_path());
  std::error_code ec;
  uint64_t have = fs::exists(part, ec) ? fs::file_size(part) : 0;
  if (meta.size_known && have > meta.size) fs::remove(part), have = 0;  // not a prefix of this file
  if (meta.size_known) check_space(fs::path(final_path).parent_path(), meta.size - have, what);
  Sha256 hash;
  if (have > 0) hash.update_from_file(part, have);
  std::optional<Progress> progress;
  if (o.progress) progress.emplace(what, meta.size_known ? meta.size : 0, have, ::isatty(2) == 1);
  uint64_t received = 0;
  for (int attempt = 0; !(meta.size_known && have == meta.size && have > 0); ++attempt) {
    FilePtr out(std::fopen(part.c_str(), "ab"));
    if (!out) write_failed(part, errno, have, meta);
    const uint64_t before = have;
    HubClient::Sink sink;
    sink.start = [&](uint64_t from) {
      if (from == have) return;
      // The server sent the whole file: start the part over.
      if (::ftruncate(::fileno(out.get()), 0) != 0) write_failed(part, errno, have, meta);
      hash.reset();
      have = 0;
    };
    sink.bytes = [&](const char* data, size_t n) {
      if (std::fwrite(data, 1, n, out.get()) != n) write_failed(part, errno, have, meta);
      hash.update(data, n);
      have += n, received += n;
      if (progress) progress->update(have);
    };
    try {
      const bool ranged = client.download(meta, have, sink);
      if (std::fflush(out.get()) != 0 || ::fsync(::fileno(out.get())) != 0) write_failed(part, errno, have, meta);
      if (ranged) break;
      // 416: the part is no prefix of what the server has; start over, once.
      out.reset();
      fs::remove(part);
      hash.reset();
      have = 0;
      if (attempt > 0) fail<NetworkError>("{}: the server refused a download from offset 0 (HTTP 416)", what);
    } catch (const NetworkError& e) {
      std::fflush(out.get());
      if (have > before && attempt < o.retries) {
        fmt::print(stderr, "{}: {}; resuming at {}\n", what, e.what(), Progress::bytes(double(have)));
        continue;
      }
      fail<NetworkError>("{} (downloading {}); {} kept in {}: run the same command again to resume", e.what(), what,
                         Progress::bytes(double(have)), part);
    }
  }
  if (progress) progress->finish(have);
  verify(part, have, hash, meta, what);
  fs::rename(part, final_path);
  return received;
}

// The cached model for ref, or NotFound saying why not.
Pulled from_cache(const ModelCache& cache, const HubRef& ref) {
  const auto commit = cache.commit_for(ref.repo, ref.revision);
  if (!commit)
    fail<NotFound>(
        "{} is not in the cache ({}) and offline mode (--offline or HF_HUB_OFFLINE=1) allows no "
        "download: run `pagoda pull {}` once while online",
        ref.to_string(), cache.root(), ref.to_string());
  const auto files = cache.files(ref.repo, *commit);
  std::string file = ref.file;
  if (file.empty()) {
    file = select_gguf(files, ref.quant, ref.repo + " (in the cache, offline)");
  } else if (std::find(files.begin(), files.end(), file) == files.end()) {
    fail<NotFound>("{} is not in the cache (offline); cached GGUF files of {}: {}", ref.to_string(), ref.repo,
                   list_for_message(loadable_ggufs(files)));
  }
  Pulled p;
  p.commit = *commit;
  for (const auto& part : model_parts(file)) {
    if (std::find(files.begin(), files.end(), part) == files.end())
      fail<NotFound>("{}: part {} is not in the cache (offline); pull it once while online", ref.to_string(), part);
    p.files.push_back(cache.file_path(ref.repo, *commit, part));
  }
  p.path = p.files.front();
  return p;
}

}  // namespace

PullOptions options_from_env() {
  PullOptions o;
  if (const char* e = std::getenv("HF_ENDPOINT"); e && *e) o.hub.endpoint = e;
  if (const char* t = std::getenv("HF_TOKEN"); t && *t) o.hub.token = t;
  o.offline = env_true("HF_HUB_OFFLINE");
  o.cache_root = ModelCache::default_root();
  return o;
}

Pulled pull(const HubRef& ref, const PullOptions& o) {
  const ModelCache cache(o.cache_root.empty() ? ModelCache::default_root() : o.cache_root);
  if (o.offline) return from_cache(cache, ref);
  HubClient client(o.hub);
  RepoInfo info;
  try {
    info = client.repo_info(ref.repo, ref.revision);
  } catch (const NetworkError& e) {
    bool cached = false;
    try {
      cached = !from_cache(cache, ref).path.empty();
    } catch (const Error&) {
    }
    if (cached)
      fail<NetworkError>("{}; {} is in the cache: run with --offline (or HF_HUB_OFFLINE=1) to use it", e.what(),
                         ref.to_string());
    fail<NetworkError>(
        "{}; check the network and --hf-endpoint (HF_ENDPOINT); --offline uses only models already "
        "in the cache ({})",
        e.what(), cache.root());
  }
  // Files are kept by commit; a hub that names none gets the revision's name.
  const std::string commit = ModelCache::valid_commit(info.sha) ? info.sha : ref.revision;
  if (!ModelCache::valid_commit(commit))
    fail<NetworkError>("{} named no commit for {} and the revision '{}' cannot name a cache folder", o.hub.endpoint,
                       ref.repo, ref.revision);
  const std::string file = ref.file.empty() ? select_gguf(info.files, ref.quant, ref.repo) : ref.file;
  const auto ggufs = loadable_ggufs(info.files);
  Pulled p;
  p.commit = commit;
  for (const auto& part : model_parts(file)) {
    if (std::find(info.files.begin(), info.files.end(), part) == info.files.end())
      fail<NotFound>("{} has no file {}; its GGUF files: {}", ref.repo, part, list_for_message(ggufs));
    const std::string final_path = cache.file_path(ref.repo, commit, part);
    std::error_code ec;
    if (!fs::exists(final_path, ec)) p.downloaded += download_file(client, ref, commit, part, final_path, o);
    p.files.push_back(final_path);
  }
  cache.set_commit(ref.repo, ref.revision, commit);
  p.path = p.files.front();
  return p;
}

std::string resolve_model(const ModelRef& model, const PullOptions& options) {
  if (!model.hub) return model.path;
  return pull(model.ref, options).path;
}

}  // namespace pagoda::hub
