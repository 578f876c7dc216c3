// The product's subcommands of the `pagoda` binary (the developer tools'
// are in tools/cmd/commands.h). Each registers its flags on the CLI11 app
// and returns it with the function that runs it once parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace pagoda::cli {

using Runner = std::function<int()>;
struct Command {
  CLI::App* app;
  Runner run;
};

// The default model, models/stories260K.gguf: found beside the binary, in the source tree, or
// under $PAGODA_SHARED (default ../shared).
std::string default_model_path();

Command add_generate(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_chat_template(CLI::App& app);
Command add_info(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_pull(CLI::App& app);

}  // namespace pagoda::cli
