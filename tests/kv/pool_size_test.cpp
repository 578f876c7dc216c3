// KV pool sizing from --kv-cache-tokens, --kv-cache-mem or the default
// (vLLM's test_get_kv_cache_config / check_enough_kv_cache_memory, reshaped).
#include "kv/pool_size.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace pagoda {
namespace {

constexpr int64_t kMiB = 1 << 20, kGiB = int64_t(1) << 30;

KvPoolOptions base() {
  KvPoolOptions o;
  o.max_num_seqs = 4;
  o.context_len = 2048;
  o.block_size = 16;
  o.kv_bytes_per_token = kv_bytes_per_token(/*n_layers=*/8, /*n_kv_heads=*/4, /*head_dim=*/64);  // 16 KiB
  o.physical_mem_bytes = 64 * kGiB;
  return o;
}

TEST(PoolSize, BytesPerTokenIsKAndVForEveryLayer) {
  EXPECT_EQ(kv_bytes_per_token(8, 4, 64), 2 * 8 * 4 * 64 * 4);
  EXPECT_EQ(kv_bytes_per_token(8, 4, 64, 2), 2 * 8 * 4 * 64 * 2);
  EXPECT_THROW(kv_bytes_per_token(0, 4, 64), InvalidArgument);
}

TEST(PoolSize, DefaultHoldsMaxNumSeqsFullContexts) {
  KvPoolSize s = size_kv_pool(base());
  EXPECT_EQ(s.num_blocks, 4 * 2048 / 16);
  EXPECT_EQ(s.bytes, int64_t(4) * 2048 * 16 * 1024);
  EXPECT_NE(s.summary.find("512 blocks"), std::string::npos) << s.summary;
  EXPECT_NE(s.summary.find("default"), std::string::npos) << s.summary;
}

TEST(PoolSize, DefaultRoundsUpToWholeBlocks) {
  KvPoolOptions o = base();
  o.max_num_seqs = 3;
  o.context_len = 1000;  // 3000 tokens -> 187.5 blocks
  EXPECT_EQ(size_kv_pool(o).num_blocks, 188);
}

TEST(PoolSize, DefaultIsCappedAtAQuarterOfPhysicalMemory) {
  KvPoolOptions o = base();
  o.max_num_seqs = 256;              // wants 256 * 2048 * 16 KiB = 8 GiB
  o.physical_mem_bytes = 16 * kGiB;  // a quarter is 4 GiB
  KvPoolSize s = size_kv_pool(o);
  EXPECT_EQ(s.bytes, 4 * kGiB);
  EXPECT_EQ(s.num_blocks, 4 * kGiB / (16 * 1024 * 16));
  EXPECT_NE(s.summary.find("capped"), std::string::npos) << s.summary;
}

TEST(PoolSize, FromTokens) {  // like vLLM's num_gpu_blocks_override
  KvPoolOptions o = base();
  o.cache_tokens = 10000;
  KvPoolSize s = size_kv_pool(o);
  EXPECT_EQ(s.num_blocks, 625);
  o.cache_tokens = 10001;
  EXPECT_EQ(size_kv_pool(o).num_blocks, 626);
  o.physical_mem_bytes = 1;  // an explicit size is not capped
  o.cache_tokens = 1 << 20;
  EXPECT_EQ(size_kv_pool(o).num_blocks, (1 << 20) / 16);
}

TEST(PoolSize, FromMemoryBudget) {
  KvPoolOptions o = base();
  o.cache_mem_mib = 64;  // 64 MiB / (16 KiB * 16 tokens) = 256 blocks
  KvPoolSize s = size_kv_pool(o);
  EXPECT_EQ(s.num_blocks, 256);
  EXPECT_EQ(s.bytes, 64 * kMiB);
  o.cache_mem_mib = 65;  // whole blocks only: rounds down
  EXPECT_EQ(size_kv_pool(o).num_blocks, 260);
}

TEST(PoolSize, RejectsContradictionsAndImpossibleSizes) {
  KvPoolOptions o = base();
  o.cache_tokens = 4096;
  o.cache_mem_mib = 64;
  EXPECT_THROW(size_kv_pool(o), InvalidArgument);  // exclusive flags
  o = base();
  o.kv_bytes_per_token = int64_t(1) << 30;  // 1 GiB per token: 1 MiB holds no block
  o.cache_mem_mib = 1;
  EXPECT_THROW(size_kv_pool(o), InvalidArgument);
  o = base();
  o.block_size = 0;
  EXPECT_THROW(size_kv_pool(o), InvalidArgument);
  o = base();
  o.max_num_seqs = 0;
  EXPECT_THROW(size_kv_pool(o), InvalidArgument);
  o = base();
  o.cache_tokens = -5;
  EXPECT_THROW(size_kv_pool(o), InvalidArgument);
}

// A pool smaller than one context limits the model length (the engine lowers
// --max-model-len to it) and says so in the startup line; only a pool of
// fewer than two tokens is refused.
TEST(PoolSize, APoolSmallerThanOneContextIsAllowedAndLogged) {
  KvPoolOptions o = base();
  o.cache_tokens = 2032;  // 127 blocks: one block short of a full context
  EXPECT_EQ(size_kv_pool(o).num_blocks, 127);
  EXPECT_NE(size_kv_pool(o).summary.find("limits the model length"), std::string::npos);
  o.cache_tokens = 2033;  // rounds up to 128 blocks = 2048 tokens
  EXPECT_EQ(size_kv_pool(o).num_blocks, 128);
  EXPECT_EQ(size_kv_pool(o).summary.find("limits the model length"), std::string::npos);
  o = base();
  o.physical_mem_bytes = 64 * kMiB;  // a quarter is 16 MiB: 64 blocks, 1024 tokens < 2048
  EXPECT_EQ(size_kv_pool(o).num_blocks, 64);
  o = base();
  o.block_size = 1;
  o.cache_tokens = 1;
  EXPECT_THROW(size_kv_pool(o), InvalidArgument);
}

// A Gemma 3 1B shape: 26 layers (one 256-wide KV head), 2 full and 11
// sliding groups of 2 layers, window 512: a page is 2 layers' worth.
KvPoolOptions gemma3() {
  KvPoolOptions o = base();
  o.context_len = 8192;
  o.kv_bytes_per_token = kv_bytes_per_token(26, 1, 256);
  o.group_windows = {0, 0};
  o.group_windows.resize(13, 512);
  return o;
}

TEST(PoolSize, GroupsCountPagesOfTheirShareOfTheLayers) {
  KvPoolOptions o = gemma3();
  o.cache_mem_mib = 1024;
  KvPoolSize s = size_kv_pool(o);
  EXPECT_EQ(s.num_blocks, kGiB / (2 * 2 * 256 * 4 * 16));  // 16384 pages of 64 KiB
  EXPECT_EQ(s.bytes, kGiB);
  EXPECT_NE(s.summary.find("13 groups (11 sliding)"), std::string::npos) << s.summary;
  // --kv-cache-tokens buys what that many tokens of every layer take.
  o.cache_mem_mib = 0;
  o.cache_tokens = 8192;
  EXPECT_EQ(size_kv_pool(o).num_blocks, 512 * 13);
  EXPECT_EQ(size_kv_pool(o).bytes, 8192 * kv_bytes_per_token(26, 1, 256));
}

TEST(PoolSize, AWindowedContextHoldsItsWindowsPagesByDefault) {
  KvPoolSize s = size_kv_pool(gemma3());
  EXPECT_EQ(s.num_blocks, 4 * (2 * 512 + 11 * 32));  // 4 contexts of 8192 tokens at rest
  KvPoolOptions o = gemma3();
  o.cache_mem_mib = 1;  // 16 pages: less than one context
  EXPECT_NE(size_kv_pool(o).summary.find("limits the model length"), std::string::npos);
}

TEST(PoolSize, ReadsPhysicalMemory) {
  EXPECT_GT(physical_memory_bytes(), 64 * kMiB);
  KvPoolOptions o = base();
  o.physical_mem_bytes = 0;  // ask the system
  EXPECT_GT(size_kv_pool(o).num_blocks, 0);
}

}  // namespace
}  // namespace pagoda
