// The model flags every command that runs or reads a model shares: -m MODEL
// (a path, or hf://ORG/REPO/FILE.gguf), -hf/--hf-repo ORG/REPO[:QUANT],
// --hf-endpoint URL and --offline; resolve() turns them into a local file,
// pulling from the hub when needed (hub/pull.h). A path stays a path,
// untouched and without network.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "hub/pull.h"

namespace pagoda::cli {

struct ModelOption {
  std::string model;  // -m; the default model unless given
  std::string hf_repo;
  std::string hf_endpoint;
  bool offline = false;
  CLI::Option* model_flag = nullptr;

  // Registers the four flags on cmd; `model` starts as default_model_path().
  void add(CLI::App* cmd);
  // The local file to load; prints where a pulled model is cached (stderr).
  std::string resolve() const;
};

// The environment's pull settings (HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE,
// PAGODA_CACHE) with the flags over them.
hub::PullOptions pull_options(const std::string& hf_endpoint, bool offline);

// "-hf" (llama.cpp's spelling, not a CLI11 name) becomes "--hf-repo".
void rewrite_hf_flag(int argc, char** argv);

}  // namespace pagoda::cli
