#include "cuda/cuda_engine.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "cuda/cuda_device.h"
#include "gpu/cuda_runner.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace pagoda::cuda {

std::unique_ptr<Engine> load_cuda_engine(const std::string& model_path, const EngineConfig& config,
                                         const CudaEngineOptions& cuda_options) {
  if (config.faults.load_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(config.faults.load_ms));
  if (config.pooling && *config.pooling != Pooling::none)
    fail<Unsupported>("--device cuda serves generating models; embedding models run on the CPU");
  if (config.kv_type != KvType::F16) fail<Unsupported>("--device cuda keeps its KV cache in f16 (--kv-type f16)");
  // Mapped: the device takes the blocks from the file's pages; no CPU copy or row panels.
  auto model = std::shared_ptr<Model>(Model::load(model_path, Residency::kMapped, config.load_progress));
  const FaultSpec& f = config.faults;
  auto device = CudaDevice::open(
      0,
      {.trap_at_launch = f.gpu_trap_at_pass, .hang_at_launch = f.gpu_hang_at_pass, .oom_at_launch = f.gpu_oom_at_pass},
      cuda_options.graphs);
  spdlog::info("device: {}{}", device->name(), cuda_options.graphs ? "" : " (--enforce-eager: no CUDA graphs)");
  const gpu::CudaRunnerOptions options{.gpu_memory_utilization = config.gpu_memory_utilization,
                                       .kv_cache_tokens = config.kv_cache_tokens,
                                       .block_size = config.block_size,
                                       .kv_type = config.kv_type,
                                       .max_batched_tokens = config.sched.max_batched_tokens,
                                       .max_num_seqs = config.sched.max_num_seqs,
                                       .max_model_len = config.max_model_len,
                                       .step_deadline_s = config.gpu_step_deadline_s,
                                       .state_slots = config.state_slots,
                                       .state_checkpoints = config.prefix_caching ? config.state_checkpoints : 0,
                                       .hybrid_kv_cache = config.hybrid_kv_cache};
  auto runner = std::make_unique<gpu::CudaRunner>(model, std::move(device), options);
  if (!runner->state_summary().empty()) spdlog::info("{}", runner->state_summary());
  spdlog::info("{}", runner->memory_plan().summary);
  if (!runner->memory_plan().warning.empty()) spdlog::warn("{}", runner->memory_plan().warning);
  auto tokenizer = std::make_shared<const Tokenizer>(Tokenizer::from_gguf(model->file()));
  const int32_t blocks = runner->num_blocks();
  return std::make_unique<Engine>(config, std::move(runner), blocks, tokenizer);
}

}  // namespace pagoda::cuda
