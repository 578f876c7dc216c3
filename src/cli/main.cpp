// The `pagoda` binary: parses the command line and dispatches to a
// subcommand. Every error ends here as one line on stderr and exit code 1
// (2 for a bad command line), never an abort.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "util/error.h"

namespace pagoda::cli {

std::string default_model_path() {
  const char* shared = std::getenv("PAGODA_SHARED");
  return std::string(shared && *shared ? shared : "../shared") + "/models/stories260K.gguf";
}

}  // namespace pagoda::cli

int main(int argc, char** argv) {
  using namespace pagoda::cli;
  // Logs go to stderr: stdout carries the generated text.
  spdlog::set_default_logger(spdlog::stderr_color_mt("pagoda"));
  if (const char* level = std::getenv("PAGODA_LOG"); level && *level)
    spdlog::set_level(spdlog::level::from_str(level));
  CLI::App app{"Pagoda: an LLM inference engine for Llama-family GGUF models", "pagoda"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");
  std::vector<Command> commands;
  for (auto add : {add_generate, add_tokenize, add_info, add_bench, add_bench_model, add_quantize, add_serve, add_loadgen,
                   add_soak}) commands.push_back(add(app));
  try {
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
