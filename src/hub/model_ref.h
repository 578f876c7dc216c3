// What a model argument names: a local path, a file in a Hugging Face hub
// repository (hf://ORG/REPO/FILE.gguf), or a repository and a quant
// (llama.cpp's -hf ORG/REPO[:QUANT]). Parsing is pure (no network, no file
// system) and every accepted name is safe to use as a cache path and a URL
// segment: ORG and REPO are [A-Za-z0-9._-] without "--" or "..", a file path
// has no empty, "." or ".." segment and no control character or backslash.
// Anything not starting with hf:// is a path, returned untouched.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::hub {

struct HubRef {
  std::string repo;               // "ORG/REPO"
  std::string file;               // path in the repository; empty: choose by quant
  std::string quant;              // with no file: the quant wanted, e.g. "Q4_K_M" ("" = default)
  std::string revision = "main";  // branch, tag or commit

  std::string to_string() const;  // hf://ORG/REPO/FILE or ORG/REPO[:QUANT]
};

struct ModelRef {
  bool hub = false;
  std::string path;  // when !hub
  HubRef ref;        // when hub
};

// "hf://ORG/REPO/FILE.gguf" (also "hf://ORG/REPO[:QUANT]") or a path.
// InvalidArgument for a malformed hf:// name.
ModelRef parse_model_arg(std::string_view arg);
// llama.cpp's -hf form "ORG/REPO[:QUANT]". InvalidArgument if malformed.
HubRef parse_hf_repo(std::string_view arg);

bool valid_repo_id(std::string_view repo);    // "ORG/REPO"
bool valid_repo_file(std::string_view file);  // a relative path within a repository
bool valid_revision(std::string_view rev);    // [A-Za-z0-9._-], 1-128 chars, not "." or ".."

}  // namespace pagoda::hub
