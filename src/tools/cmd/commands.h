// The developer tools' subcommands of the `pagoda` binary; they register
// like the product's commands (cli/commands.h).
#pragma once

#include "cli/commands.h"

namespace pagoda::tools {

cli::Command add_bench_model(CLI::App& app);
cli::Command add_loadgen(CLI::App& app);
cli::Command add_soak(CLI::App& app);
cli::Command add_quantize(CLI::App& app);
cli::Command add_synth(CLI::App& app);

}  // namespace pagoda::tools
