// The engine a command serves, on the device its flags name: the CPU
// (Engine::load), or a CUDA GPU in a build that has the CUDA backend.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "engine/engine.h"

namespace pagoda::cli {

// The device flags that are not the engine's (EngineConfig) to hold.
struct DeviceFlags {
  std::string kv_type = "auto";  // auto: f32 on a CPU, f16 on a GPU
  bool enforce_eager = false;    // --device cuda: no CUDA graphs, every step launched kernel by kernel
};

// --device, --gpu-memory-utilization, --gpu-step-deadline, --cpu-sampling
// and --enforce-eager into `cfg` and `flags`, and --kv-type into flags.kv_type.
void add_device_options(CLI::App* cmd, EngineConfig& cfg, DeviceFlags& flags);

// Sets cfg.kv_type from --kv-type, then loads; InvalidArgument for an unknown
// device, Unsupported for cuda in a build without it.
std::unique_ptr<Engine> load_engine(const std::string& model_path, EngineConfig cfg, const DeviceFlags& flags);

}  // namespace pagoda::cli
