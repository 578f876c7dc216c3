// An engine on a CUDA device: the model mapped (its blocks go to the device
// as the file stores them), the weights and the KV pool on the device
// (gpu/cuda_runner.h), and the same engine as on a CPU above them.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"

namespace pagoda::cuda {

// What only the CUDA engine takes (the CLI's --enforce-eager).
struct CudaEngineOptions {
  bool graphs = true;  // pure-decode steps as CUDA graphs (cuda_device.h)
};

// Unsupported where no CUDA device can be used or the device cannot run the
// model; ResourceExhausted where its memory cannot hold it (each naming what
// to change).
std::unique_ptr<Engine> load_cuda_engine(const std::string& model_path, const EngineConfig& config,
                                         const CudaEngineOptions& options = {});

}  // namespace pagoda::cuda
