#include "cli/load_engine.h"

#include "util/error.h"
#ifdef PAGODA_HAS_CUDA
#include "cuda/cuda_engine.h"
#endif

namespace pagoda::cli {

void add_device_options(CLI::App* cmd, EngineConfig& cfg, DeviceFlags& flags) {
  cmd->add_option("--device", cfg.device, "Where the model runs: cpu, or cuda (a build with the CUDA toolkit)")
      ->capture_default_str();
  cmd->add_option("--gpu-memory-utilization", cfg.gpu_memory_utilization,
                  "--device cuda: the share of the GPU's memory this process takes (weights, step buffers, KV cache)")
      ->capture_default_str();
  cmd->add_option("--gpu-step-deadline", cfg.gpu_step_deadline_s,
                  "--device cuda: seconds a step may take before the GPU counts as hung (every request then ends "
                  "and the server exits for a restart)")
      ->capture_default_str();
  cmd->add_flag(
      "--cpu-sampling", [&cfg](int64_t) { cfg.sample_on_device = false; },
      "--device cuda: sample every token on the CPU (the whole logits rows come back) instead of on the GPU");
  cmd->add_flag("--enforce-eager", flags.enforce_eager,
                "--device cuda: launch every step's kernels one by one; no CUDA graphs for decode steps");
  cmd->add_option("--kv-type", flags.kv_type, "KV cache element type: f32 or f16 (auto: f32 on a CPU, f16 on a GPU)")
      ->capture_default_str();
}

std::unique_ptr<Engine> load_engine(const std::string& model_path, EngineConfig cfg, const DeviceFlags& flags) {
  const bool gpu = cfg.device == "cuda";
  if (!gpu && cfg.device != "cpu") fail<InvalidArgument>("--device {}: cpu or cuda", cfg.device);
  cfg.kv_type = flags.kv_type == "auto" ? (gpu ? KvType::F16 : KvType::F32) : kv_type_from_name(flags.kv_type);
  if (!gpu) return Engine::load(model_path, cfg);
#ifdef PAGODA_HAS_CUDA
  return cuda::load_cuda_engine(model_path, cfg, {.graphs = !flags.enforce_eager});
#else
  fail<Unsupported>(
      "--device cuda: this build has no CUDA backend (the CUDA toolkit was not found when it was configured; "
      "configure with -DPAGODA_CUDA=ON to require it)");
#endif
}

}  // namespace pagoda::cli
