// The memory decision at load (engine/memory_plan.h) on made-up limits: where
// the weights live, what is left for the KV pool and under which limit, and
// the pool kv/pool_size.h then sizes from it.
#include "engine/memory_plan.h"

#include <gtest/gtest.h>

#include "kv/pool_size.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20, kGiB = int64_t(1) << 30;

MemoryPlanInput input(int64_t weights, int64_t needs = kGiB) {
  MemoryPlanInput in;
  in.weight_bytes = weights;
  in.reserve_bytes = 256 * kMiB;
  in.kv_needs_bytes = needs;
  return in;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(MemoryPlan, ReserveIsWorkingMemoryAndAStackPerThread) {
  EXPECT_EQ(process_reserve_bytes(0), 256 * kMiB);
  EXPECT_EQ(process_reserve_bytes(4), 256 * kMiB + 4 * 8 * kMiB);
}

// The case: a 17 GiB model with 22 GiB available is copied, and the
// pool is sized from the 4.75 GiB the copy leaves, never from a fixed count.
TEST(MemoryPlan, CopiesWhenTheCopyLeavesTheKvCacheWhatItNeeds) {
  MemoryPlanInput in = input(17 * kGiB);
  in.limits.mem_available = 22 * kGiB;
  const MemoryPlan p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kInMemory);
  EXPECT_EQ(p.left_bytes, 22 * kGiB - 17 * kGiB - 256 * kMiB);
  EXPECT_EQ(p.max_bytes, p.left_bytes);
  EXPECT_EQ(p.limit, "MemAvailable");
  EXPECT_FALSE(p.warn);
  EXPECT_EQ(p.left_why, "left after the weights (17.0 GiB, in memory) under MemAvailable");
  EXPECT_TRUE(has(p.summary, "the weights (17.0 GiB) are copied into memory; 4.8 GiB left after")) << p.summary;
  EXPECT_TRUE(has(p.summary, "MemAvailable 22.0 GiB")) << p.summary;
}

// A copy that would leave less than the pool needs is not made: the weights
// are served from the map, whose page cache the default pool leaves alone
// (left_bytes) while an explicit pool may take it (max_bytes).
TEST(MemoryPlan, MapsWhenACopyWouldNotFit) {
  MemoryPlanInput in = input(21 * kGiB);
  in.limits.mem_available = 22 * kGiB;
  const MemoryPlan p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kMapped);
  EXPECT_TRUE(p.warn);
  EXPECT_EQ(p.left_bytes, kGiB - 256 * kMiB);
  EXPECT_EQ(p.max_bytes, 22 * kGiB - 256 * kMiB);
  EXPECT_EQ(p.left_why, "left after the weights (21.0 GiB, mapped) under MemAvailable");
  EXPECT_TRUE(has(p.summary,
                  "served from the file's map: a copy would leave 768.0 MiB under MemAvailable, less than "
                  "the 1.0 GiB the KV cache needs"))
      << p.summary;
}

TEST(MemoryPlan, TheTightestLimitDecides) {
  MemoryPlanInput in = input(2 * kGiB, 100 * kMiB);
  in.limits.mem_available = 60 * kGiB;
  in.limits.cgroup_limit = 8 * kGiB;
  in.limits.cgroup_used = 3 * kGiB;  // 5 GiB free in the cgroup
  const MemoryPlan p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kInMemory);
  EXPECT_EQ(p.left_bytes, 3 * kGiB - 256 * kMiB);
  EXPECT_EQ(p.limit, "the cgroup's memory limit");
  EXPECT_TRUE(has(p.summary, "cgroup 8.0 GiB with 3.0 GiB used")) << p.summary;
}

// Under RLIMIT_AS the map is already in VmSize and stays mapped after a
// copy: the copy costs its size again, the map nothing more.
TEST(MemoryPlan, UnderRlimitAsTheCopyAddsToTheMap) {
  MemoryPlanInput in = input(kGiB, 512 * kMiB);
  in.limits.mem_available = 100 * kGiB;
  in.limits.as_limit = 4 * kGiB;
  in.limits.as_used = 2 * kGiB + 512 * kMiB;  // the 1 GiB map included
  MemoryPlan p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kMapped);  // a copy would leave 256 MiB < 512 MiB
  EXPECT_EQ(p.left_bytes, kGiB + 256 * kMiB);
  EXPECT_EQ(p.max_bytes, p.left_bytes);
  EXPECT_EQ(p.limit, "RLIMIT_AS");
  EXPECT_TRUE(has(p.summary, "RLIMIT_AS 4.0 GiB with 2.5 GiB mapped")) << p.summary;
  in.kv_needs_bytes = 200 * kMiB;  // now the copy leaves enough
  p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kInMemory);
  EXPECT_EQ(p.left_bytes, 256 * kMiB);
}

// RLIMIT_DATA counts private writable memory: the copy, not the read-only map.
TEST(MemoryPlan, UnderRlimitDataOnlyTheCopyCounts) {
  MemoryPlanInput in = input(kGiB, 512 * kMiB);
  in.limits.data_limit = 2 * kGiB;
  in.limits.data_used = 512 * kMiB;
  MemoryPlan p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kMapped);
  EXPECT_EQ(p.left_bytes, kGiB + 256 * kMiB);
  EXPECT_EQ(p.limit, "RLIMIT_DATA");
}

// A limit the process has all but reached leaves nothing, never "no limit".
TEST(MemoryPlan, ALimitBelowTheReserveLeavesNothing) {
  MemoryPlanInput in = input(kMiB, kMiB);
  in.limits.as_limit = 300 * kMiB;
  in.limits.as_used = 60 * kMiB;
  const MemoryPlan p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kMapped);
  EXPECT_EQ(p.left_bytes, 0);
  EXPECT_EQ(p.max_bytes, 0);
  KvPoolOptions pool;
  pool.context_len = 512;
  pool.kv_bytes_per_token = 1280;
  pool.mem_left_bytes = p.left_bytes;
  EXPECT_THROW(size_kv_pool(pool), ResourceExhausted);
  pool.cache_tokens = 1024;
  EXPECT_THROW(size_kv_pool(pool), ResourceExhausted);
}

TEST(MemoryPlan, MmapNeverCopiesAndIsNoWarning) {
  MemoryPlanInput in = input(kGiB);
  in.may_copy = false;
  in.limits.mem_available = 64 * kGiB;
  const MemoryPlan p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kMapped);
  EXPECT_FALSE(p.warn);
  EXPECT_EQ(p.left_bytes, 63 * kGiB - 256 * kMiB);  // the page cache the weights need stays theirs
  EXPECT_TRUE(has(p.summary, "served from the file's map (--mmap)")) << p.summary;
}

TEST(MemoryPlan, NoLimitKnownLeavesThePoolUnbounded) {
  const MemoryPlan p = plan_memory(input(kGiB));
  EXPECT_EQ(p.residency, Residency::kInMemory);
  EXPECT_EQ(p.left_bytes, -1);
  EXPECT_TRUE(p.limit.empty());
}

// The plan feeds the pool: the default takes 90% of what is left, and a
// limit that leaves less than one context fails at start, naming the flags.
TEST(MemoryPlan, ThePoolIsAShareOfWhatIsLeft) {
  KvPoolOptions pool;
  pool.max_num_seqs = 256;
  pool.context_len = 4096;
  pool.kv_bytes_per_token = kv_bytes_per_token(32, 8, 128);  // 256 KiB: 1 GiB a context
  pool.physical_mem_bytes = 24 * kGiB;
  MemoryPlanInput in = input(17 * kGiB, kv_pool_needs_bytes(pool));
  in.limits.mem_available = 22 * kGiB;
  MemoryPlan p = plan_memory(in);
  ASSERT_EQ(p.residency, Residency::kInMemory);
  pool.mem_left_bytes = p.left_bytes;
  pool.mem_max_bytes = p.max_bytes;
  pool.mem_left_why = p.left_why;
  const KvPoolSize size = size_kv_pool(pool);
  EXPECT_EQ(size.bytes / (16 * 256 * 1024), size.num_blocks);
  EXPECT_LE(size.bytes, int64_t(double(p.left_bytes) * 0.9));
  EXPECT_GT(size.bytes, int64_t(double(p.left_bytes) * 0.9) - 16 * 256 * 1024);
  EXPECT_TRUE(has(size.summary, "90% of the 4.8 GiB left after the weights (17.0 GiB, in memory) under MemAvailable"))
      << size.summary;
  // 18 GiB available: a copy would leave 0.75 GiB, less than one 1 GiB
  // context needs; the map leaves as little: refused.
  in.limits.mem_available = 18 * kGiB;
  p = plan_memory(in);
  EXPECT_EQ(p.residency, Residency::kMapped);
  pool.mem_left_bytes = p.left_bytes;
  pool.mem_max_bytes = p.max_bytes;
  pool.mem_left_why = p.left_why;
  try {
    size_kv_pool(pool);
    FAIL() << "a pool of less than one context was accepted";
  } catch (const ResourceExhausted& e) {
    const std::string what = e.what();
    EXPECT_TRUE(has(what, "not enough memory for the KV cache")) << what;
    EXPECT_TRUE(has(what, "--max-model-len")) << what;
    EXPECT_TRUE(has(what, "--kv-cache-mem")) << what;
  }
}

}  // namespace
}  // namespace pagoda
