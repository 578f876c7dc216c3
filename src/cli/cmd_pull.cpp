// `pagoda pull`: a model from the Hugging Face hub into the cache, printing
// where each file is (stdout), with progress on stderr. Takes what -m takes
// (hf://ORG/REPO/FILE.gguf) and also ORG/REPO[:QUANT], positionally or as -hf.
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.h"
#include "cli/model_option.h"
#include "hub/model_ref.h"
#include "hub/progress.h"
#include "util/error.h"

namespace pagoda::cli {

Command add_pull(CLI::App& app) {
  struct Opts {
    std::string model;
    std::string hf_repo;
    std::string hf_endpoint;
    bool offline = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("pull", "Download a model from the Hugging Face hub into the cache");
  cmd->add_option("model", o->model, "hf://ORG/REPO/FILE.gguf or ORG/REPO[:QUANT] (a local path is left as it is)");
  cmd->add_option("--hf-repo", o->hf_repo, "ORG/REPO[:QUANT] (also -hf)");
  cmd->add_option("--hf-endpoint", o->hf_endpoint, "Hub URL (default $HF_ENDPOINT, else https://huggingface.co)");
  cmd->add_flag("--offline", o->offline, "Only look in the cache ($PAGODA_CACHE); also HF_HUB_OFFLINE=1");
  return {cmd, [o] {
            if (o->model.empty() == o->hf_repo.empty())
              fail<InvalidArgument>("pull: give one MODEL or -hf ORG/REPO[:QUANT]");
            hub::HubRef ref;
            if (!o->hf_repo.empty()) {
              ref = hub::parse_hf_repo(o->hf_repo);
            } else {
              const auto m = hub::parse_model_arg(o->model);
              std::error_code ec;
              if (!m.hub && std::filesystem::exists(m.path, ec)) {
                fmt::print("{}\n", m.path);  // already local: nothing to pull
                return 0;
              }
              ref = m.hub ? m.ref : hub::parse_hf_repo(o->model);
            }
            const auto pulled = hub::pull(ref, pull_options(o->hf_endpoint, o->offline));
            fmt::print(stderr, "{}: {} file{} cached, {} downloaded\n", ref.to_string(), pulled.files.size(),
                       pulled.files.size() == 1 ? "" : "s", hub::Progress::bytes(double(pulled.downloaded)));
            for (const auto& f : pulled.files) fmt::print("{}\n", f);
            return 0;
          }};
}

}  // namespace pagoda::cli
