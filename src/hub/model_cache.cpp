#include "hub/model_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace pagoda::hub {

namespace fs = std::filesystem;

ModelCache::ModelCache(std::string root) : root_(std::move(root)) {
  if (root_.empty()) fail<InvalidArgument>("the model cache folder is empty (PAGODA_CACHE)");
}

std::string ModelCache::default_root() {
  if (const char* c = std::getenv("PAGODA_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "pagoda").string();
  return ".pagoda-cache";
}

bool ModelCache::valid_commit(const std::string& commit) {
  return !commit.empty() && commit.size() <= 64 && std::all_of(commit.begin(), commit.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

std::string ModelCache::repo_dir(const std::string& repo) const {
  std::string dir = repo;
  dir.replace(dir.find('/'), 1, "--");  // ORG/REPO -> ORG--REPO (model_ref.h rules out "--" inside each)
  return (fs::path(root_) / "hub" / dir).string();
}

std::string ModelCache::file_path(const std::string& repo, const std::string& commit, const std::string& file) const {
  if (!valid_commit(commit)) fail<InvalidArgument>("'{}' is not a commit id", commit);
  return (fs::path(repo_dir(repo)) / commit / file).string();
}

std::optional<std::string> ModelCache::commit_for(const std::string& repo, const std::string& revision) const {
  std::ifstream in(fs::path(repo_dir(repo)) / "refs" / revision);
  std::string commit;
  if (!in || !std::getline(in, commit) || !valid_commit(commit)) return std::nullopt;
  return commit;
}

void ModelCache::set_commit(const std::string& repo, const std::string& revision, const std::string& commit) const {
  const fs::path dir = fs::path(repo_dir(repo)) / "refs";
  fs::create_directories(dir);
  const fs::path tmp = dir / (revision + ".tmp" + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << commit << "\n";
    if (!out.flush()) fail<ResourceExhausted>("cannot write {} (disk full?)", tmp.string());
  }
  fs::rename(tmp, dir / revision);
}

std::vector<std::string> ModelCache::files(const std::string& repo, const std::string& commit) const {
  std::vector<std::string> out;
  if (!valid_commit(commit)) return out;
  const fs::path dir = fs::path(repo_dir(repo)) / commit;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (!ec && !(rel.size() >= 5 && rel.compare(rel.size() - 5, 5, ".part") == 0)) out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace pagoda::hub
