// A model from the hub into the cache, ready to load: pull() lists the
// repository (one API call; a commit already complete in the cache costs
// nothing more), picks the file (model_ref.h, repo_files.h), downloads each
// part of it with resume (a .part file kept across runs, re-requested with a
// Range from where it stopped, a broken transfer retried in the same run
// too), checks size, sha256 and the GGUF magic, and renames it into place.
// Offline (--offline, HF_HUB_OFFLINE=1) it answers from the cache alone.
// Every failure is one pagoda::Error whose message says what to do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/hub_client.h"
#include "hub/model_ref.h"

namespace pagoda::hub {

struct PullOptions {
  HubConfig hub;
  std::string cache_root;  // "" = ModelCache::default_root()
  bool offline = false;
  bool progress = true;  // a bar on a terminal, lines otherwise (stderr)
  int retries = 2;       // resumes in this run after a transfer breaks off
};

// HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE (1/true/yes/on) and PAGODA_CACHE.
PullOptions options_from_env();

struct Pulled {
  std::string path;                // the file to load (part 1 of a split model)
  std::vector<std::string> files;  // every part, cached
  std::string commit;
  uint64_t downloaded = 0;  // bytes received in this call
};

Pulled pull(const HubRef& ref, const PullOptions& options);

// A path stays a path, untouched and without network; a hub name is pulled.
std::string resolve_model(const ModelRef& model, const PullOptions& options);

}  // namespace pagoda::hub
