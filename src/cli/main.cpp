// The `pagoda` binary: parses the command line and dispatches to a
// subcommand. Every error ends here as one line on stderr and exit code 1
// (2 for a bad command line), never an abort.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/model_option.h"
#include "pagoda_version.h"
#include "tools/cmd/commands.h"
#include "util/error.h"

namespace pagoda::cli {

// The installed copy (<prefix>/bin/pagoda -> <prefix>/share/pagoda/models/,
// relative to the binary, so a scratch root or any prefix finds its own),
// models/ beside the binary (build/pagoda -> models/), the source tree it was
// built from, then the shared data folder; the first that exists.
std::string default_model_path() {
  namespace fs = std::filesystem;
  const fs::path file = fs::path("models") / "stories260K.gguf";
  std::vector<fs::path> places;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    places.push_back(exe.parent_path().parent_path() / "share" / "pagoda" / file);
    places.push_back(exe.parent_path().parent_path() / file);
    places.push_back(exe.parent_path() / file);
  }
  places.push_back(fs::path(PAGODA_SOURCE_DIR) / file);
  const char* shared = std::getenv("PAGODA_SHARED");
  places.push_back(fs::path(shared && *shared ? shared : "../shared") / file);
  for (const auto& p : places)
    if (fs::exists(p, ec)) return p.lexically_normal().string();
  return places.front().lexically_normal().string();
}

}  // namespace pagoda::cli

int main(int argc, char** argv) {
  using namespace pagoda::cli;
  // Logs go to stderr: stdout carries the generated text.
  spdlog::set_default_logger(spdlog::stderr_color_mt("pagoda"));
  if (const char* level = std::getenv("PAGODA_LOG"); level && *level) spdlog::set_level(spdlog::level::from_str(level));
  CLI::App app{"Pagoda: an LLM inference engine for Llama-family GGUF models", "pagoda"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");
  app.set_version_flag("--version", "pagoda " PAGODA_VERSION " (git " PAGODA_GIT_REVISION ")");
  std::vector<Command> commands;
  for (auto add : {add_generate, add_tokenize, add_chat_template, add_info, add_serve, add_bench, add_pull,
                   pagoda::tools::add_bench_model, pagoda::tools::add_quantize, pagoda::tools::add_loadgen,
                   pagoda::tools::add_soak, pagoda::tools::add_synth})
    commands.push_back(add(app));
  try {
    rewrite_hf_flag(argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    for (auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const pagoda::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
