#include "gpu/gpu_memory_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "kv/pool_size.h"  // format_bytes
#include "util/error.h"

namespace pagoda::gpu {

GpuMemoryPlan plan_gpu_memory(const GpuMemoryInput& in) {
  if (!(in.utilization > 0 && in.utilization <= 1))
    fail<InvalidArgument>("--gpu-memory-utilization {} is not in (0, 1]", in.utilization);
  if (in.block_bytes <= 0 || in.block_size <= 0 || in.num_groups <= 0)
    fail<InvalidArgument>("KV blocks of {} bytes, {} tokens, {} groups", in.block_bytes, in.block_size, in.num_groups);
  const int64_t share = int64_t(double(in.total_bytes) * in.utilization);
  // Another process's memory is not ours to count on: as vLLM, the share must be free at start.
  if (in.free_at_start < share)
    fail<ResourceExhausted>(
        "only {} of the device's {} is free, less than the {} that --gpu-memory-utilization {} asks for: lower it, or "
        "free what other processes hold",
        format_bytes(in.free_at_start), format_bytes(in.total_bytes), format_bytes(share), in.utilization);
  const int64_t setup = std::max<int64_t>(0, in.free_at_start - in.free_after_setup);
  GpuMemoryPlan p;
  if (in.cache_tokens > 0) {
    const int64_t blocks = (in.cache_tokens + in.block_size - 1) / in.block_size * in.num_groups;
    if (blocks * in.block_bytes > in.free_after_setup)
      fail<ResourceExhausted>("--kv-cache-tokens {} needs {} of device memory; {} is free after the weights",
                              in.cache_tokens, format_bytes(blocks * in.block_bytes),
                              format_bytes(in.free_after_setup));
    p.num_blocks = int32_t(std::min<int64_t>(blocks, INT32_MAX));
  } else {
    const int64_t left = std::min(share - setup, in.free_after_setup);
    p.num_blocks = int32_t(std::clamp<int64_t>(left / in.block_bytes, 0, INT32_MAX));
    if (p.num_blocks < 2)
      fail<ResourceExhausted>(
          "no room for the KV cache: the weights and step buffers take {} of the {} that --gpu-memory-utilization {} "
          "allows; raise it, or use a smaller model",
          format_bytes(setup), format_bytes(share), in.utilization);
  }
  p.kv_bytes = int64_t(p.num_blocks) * in.block_bytes;
  const int64_t tokens = int64_t(p.num_blocks) / in.num_groups * in.block_size;  // of every layer
  const int64_t context_pages =
      in.context_pages > 0 ? in.context_pages : (int64_t(in.max_model_len) + in.block_size - 1) / in.block_size;
  const std::string groups = in.num_groups == 1 ? std::string()
                                                : fmt::format(" in {} KV groups, one {}-token context {} blocks",
                                                              in.num_groups, in.max_model_len, context_pages);
  p.summary = fmt::format(
      "GPU KV pool: {} blocks, {} tokens{}, {} ({} of {} for this process at utilization {}, {} of "
      "it for weights and step buffers)",
      p.num_blocks, tokens, groups, format_bytes(p.kv_bytes), format_bytes(share), format_bytes(in.total_bytes),
      in.utilization, format_bytes(setup));
  if (p.num_blocks < context_pages)
    p.warning = fmt::format(
        "the GPU KV pool holds {} blocks, less than the {} of one full {}-token context: a longer sequence ends "
        "with finish reason length; raise --gpu-memory-utilization or lower --max-model-len",
        p.num_blocks, context_pages, in.max_model_len);
  return p;
}

}  // namespace pagoda::gpu
