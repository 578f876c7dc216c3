// A repository's file list, as the hub's /api/models/ORG/REPO[/revision/REV]
// answers it ({"sha": COMMIT, "siblings": [{"rfilename": PATH}, ...]}), and
// the choice of a GGUF file from it the way llama.cpp's -hf makes it: the file
// whose name carries the quant (case-insensitive, as a whole word: Q4_K does
// not pick Q4_K_M), else Q4_K_M, else the first .gguf by name. Projector
// files (mmproj) are never chosen; a split model counts by its first part.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::hub {

struct RepoInfo {
  std::string sha;                 // the commit the revision points at ("" if not given)
  std::vector<std::string> files;  // valid repository paths only, sorted
};

// FormatError for anything but an object whose siblings (if any) are objects
// with a string rfilename; entries with unsafe paths are dropped.
RepoInfo parse_repo_info(std::string_view json);

// The files a model can be loaded from: *.gguf (any case), no mmproj, and of
// a split model only part 1. Sorted.
std::vector<std::string> loadable_ggufs(const std::vector<std::string>& files);

// The chosen file, or NotFound naming `repo` and listing the GGUF files there.
std::string select_gguf(const std::vector<std::string>& files, std::string_view quant, std::string_view repo);

// Whether the file name (not its folder) carries the quant as a whole word.
bool carries_quant(std::string_view file, std::string_view quant);

// Every file making up the model `file` is part 1 of (itself if not split).
std::vector<std::string> model_parts(const std::string& file);

// "a.gguf, b.gguf" (at most 20, then "and N more"), or "none".
std::string list_for_message(const std::vector<std::string>& files);

}  // namespace pagoda::hub
