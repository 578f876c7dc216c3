#include "cli/model_option.h"

#include <fmt/format.h>

#include <cstring>

#include "cli/commands.h"
#include "hub/model_ref.h"
#include "util/error.h"

namespace pagoda::cli {

void ModelOption::add(CLI::App* cmd) {
  model = default_model_path();
  model_flag = cmd->add_option("-m,--model", model, "GGUF model: a file, or hf://ORG/REPO/FILE.gguf from the hub")
                   ->capture_default_str();
  cmd->add_option("--hf-repo", hf_repo,
                  "Hub repository ORG/REPO[:QUANT] (also -hf): the GGUF carrying QUANT, default Q4_K_M or the first");
  cmd->add_option("--hf-endpoint", hf_endpoint, "Hub URL (default $HF_ENDPOINT, else https://huggingface.co)");
  cmd->add_flag("--offline", offline, "Use only models already in the cache ($PAGODA_CACHE); also HF_HUB_OFFLINE=1");
}

hub::PullOptions pull_options(const std::string& hf_endpoint, bool offline) {
  hub::PullOptions o = hub::options_from_env();
  if (!hf_endpoint.empty()) o.hub.endpoint = hf_endpoint;
  o.offline = o.offline || offline;
  return o;
}

std::string ModelOption::resolve() const {
  hub::HubRef ref;
  if (!hf_repo.empty()) {
    if (model_flag && model_flag->count() > 0) fail<InvalidArgument>("give -m or -hf/--hf-repo, not both");
    ref = hub::parse_hf_repo(hf_repo);
  } else {
    const auto m = hub::parse_model_arg(model);
    if (!m.hub) return m.path;
    ref = m.ref;
  }
  const auto pulled = hub::pull(ref, pull_options(hf_endpoint, offline));
  fmt::print(stderr, "model {}: {}\n", ref.to_string(), pulled.path);
  return pulled.path;
}

void rewrite_hf_flag(int argc, char** argv) {
  static char long_name[] = "--hf-repo";
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-hf") == 0) argv[i] = long_name;
}

}  // namespace pagoda::cli
