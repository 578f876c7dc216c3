// The KV pool from a GPU's memory, as vLLM's --gpu-memory-utilization.
#include "gpu/gpu_memory_plan.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace pagoda::gpu {
namespace {

constexpr int64_t GiB = int64_t(1) << 30, MiB = int64_t(1) << 20;

GpuMemoryInput h100(int64_t setup) {
  return {.total_bytes = 80 * GiB,
          .free_at_start = 79 * GiB,  // the driver's own
          .free_after_setup = 79 * GiB - setup,
          .utilization = 0.9,
          .block_bytes = 2 * MiB,
          .block_size = 16,
          .max_model_len = 8192};
}

TEST(GpuMemoryPlan, ThePoolTakesTheShareLessWhatTheSetupTook) {
  const GpuMemoryPlan p = plan_gpu_memory(h100(20 * GiB));
  const int64_t share = int64_t(80.0 * 0.9 * double(GiB));
  EXPECT_EQ(p.num_blocks, (share - 20 * GiB) / (2 * MiB));
  EXPECT_EQ(p.kv_bytes, p.num_blocks * 2 * MiB);
  EXPECT_TRUE(p.warning.empty());
  EXPECT_NE(p.summary.find("blocks"), std::string::npos);
}

TEST(GpuMemoryPlan, ANeighboursMemoryIsNotCountedOn) {
  GpuMemoryInput in = h100(20 * GiB);
  in.free_at_start = 60 * GiB;  // another process holds 20 GiB
  in.free_after_setup = 40 * GiB;
  try {
    plan_gpu_memory(in);
    FAIL() << "planned a share that is not free";
  } catch (const ResourceExhausted& e) {
    EXPECT_NE(std::string(e.what()).find("--gpu-memory-utilization 0.9"), std::string::npos) << e.what();
  }
  in.utilization = 0.7;  // 56 GiB: free, and the pool gets 36 of it
  EXPECT_EQ(plan_gpu_memory(in).num_blocks, (int64_t(80.0 * 0.7 * double(GiB)) - 20 * GiB) / (2 * MiB));
}

TEST(GpuMemoryPlan, NoRoomForTheCacheSaysWhatToChange) {
  try {
    plan_gpu_memory(h100(72 * GiB));
    FAIL();
  } catch (const ResourceExhausted& e) {
    EXPECT_NE(std::string(e.what()).find("no room for the KV cache"), std::string::npos) << e.what();
  }
}

TEST(GpuMemoryPlan, AnExplicitPoolMustFitWhatIsFree) {
  GpuMemoryInput in = h100(20 * GiB);
  in.cache_tokens = 4096;
  EXPECT_EQ(plan_gpu_memory(in).num_blocks, 256);
  in.cache_tokens = 16 * 60 * 1024;  // 60 GiB of blocks, 59 free
  EXPECT_THROW(plan_gpu_memory(in), ResourceExhausted);
}

TEST(GpuMemoryPlan, APoolShorterThanOneContextIsAWarning) {
  GpuMemoryInput in = h100(20 * GiB);
  in.cache_tokens = 4096;
  EXPECT_NE(plan_gpu_memory(in).warning.find("less than the 512 of one full 8192-token context"), std::string::npos)
      << plan_gpu_memory(in).warning;
}

// KV groups (a Gemma 3-like model: 1 full group, 5 sliding): --kv-cache-tokens
// buys that many tokens of every layer, and a context's pages count only
// what its sliding groups keep.
TEST(GpuMemoryPlan, WithKvGroupsTokensAreOfEveryLayerAndAContextItsPagesAtRest) {
  GpuMemoryInput in = h100(20 * GiB);
  in.num_groups = 6;
  in.block_bytes = 2 * MiB / 6;
  in.cache_tokens = 4096;
  in.context_pages = 512 + 5 * 33;  // 8192 tokens in the full group, 512-token windows in the others
  const GpuMemoryPlan p = plan_gpu_memory(in);
  EXPECT_EQ(p.num_blocks, 6 * 256);
  EXPECT_NE(p.summary.find("4096 tokens in 6 KV groups, one 8192-token context 677 blocks"), std::string::npos)
      << p.summary;
  EXPECT_TRUE(p.warning.empty()) << p.warning;  // 1536 pages hold a context's 677
  in.cache_tokens = 1024;                       // 384 pages
  EXPECT_NE(plan_gpu_memory(in).warning.find("384 blocks, less than the 677"), std::string::npos);
}

TEST(GpuMemoryPlan, UtilizationOutsideZeroToOneIsRefused) {
  for (double u : {0.0, -0.5, 1.01}) {
    GpuMemoryInput in = h100(GiB);
    in.utilization = u;
    EXPECT_THROW(plan_gpu_memory(in), InvalidArgument) << u;
  }
}

}  // namespace
}  // namespace pagoda::gpu
