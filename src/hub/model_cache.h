// Where pulled models live: $PAGODA_CACHE (default ~/.cache/pagoda), laid out
//   hub/ORG--REPO/refs/REVISION      the commit the revision last pointed at
//   hub/ORG--REPO/COMMIT/FILE        a complete, verified file
//   hub/ORG--REPO/COMMIT/FILE.part   a download in progress (kept to resume)
// A file appears under its own name only by rename() after its size and
// sha256 were checked, so a loaded model is never partial. A commit folder
// never changes once complete; a moved branch gets a new folder.
// Names come from model_ref.h's validation (no "..", no "--" in ORG/REPO)
// and commits must be plain [A-Za-z0-9], so no name escapes the cache.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pagoda::hub {

class ModelCache {
 public:
  explicit ModelCache(std::string root);
  // $PAGODA_CACHE, else $HOME/.cache/pagoda (else ./.pagoda-cache).
  static std::string default_root();

  const std::string& root() const { return root_; }
  std::string repo_dir(const std::string& repo) const;  // root/hub/ORG--REPO
  // root/hub/ORG--REPO/COMMIT/FILE; InvalidArgument for an unsafe commit.
  std::string file_path(const std::string& repo, const std::string& commit, const std::string& file) const;
  static std::string part_path(const std::string& final_path) { return final_path + ".part"; }

  // The commit refs/REVISION names, if recorded.
  std::optional<std::string> commit_for(const std::string& repo, const std::string& revision) const;
  // Records it (written to a temporary name and renamed).
  void set_commit(const std::string& repo, const std::string& revision, const std::string& commit) const;
  // Complete files under the commit's folder, as repository paths (sorted).
  std::vector<std::string> files(const std::string& repo, const std::string& commit) const;

  static bool valid_commit(const std::string& commit);

 private:
  std::string root_;
};

}  // namespace pagoda::hub
