// The engine a command serves, on the device its flags name: the CPU
// (Engine::load), or a CUDA GPU in a build that has the CUDA backend.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "engine/engine.h"

namespace pagoda::cli {

// --device, --gpu-memory-utilization, --gpu-step-deadline, --cpu-sampling
// and --kv-type (auto: f32 on a CPU, f16 on a GPU) into `cfg` and `kv_type`.
void add_device_options(CLI::App* cmd, EngineConfig& cfg, std::string& kv_type);

// Sets cfg.kv_type from --kv-type, then loads; InvalidArgument for an unknown
// device, Unsupported for cuda in a build without it.
std::unique_ptr<Engine> load_engine(const std::string& model_path, EngineConfig cfg, const std::string& kv_type);

}  // namespace pagoda::cli
