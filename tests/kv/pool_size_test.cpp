// KV pool sizing from --kv-cache-tokens, --kv-cache-mem or the default
// (vLLM's test_get_kv_cache_config / check_enough_kv_cache_memory, reshaped).
#include "kv/pool_size.h"

#include <gtest/gtest.h>

#include <cmath>

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

// What is left after the weights (engine/memory_plan.h) bounds the default:
// 90% of it, never more than --max-num-seqs full contexts.
TEST(PoolSize, DefaultTakesNinetyPercentOfWhatIsLeft) {
  KvPoolOptions o = base();  // wants 4 x 2048 tokens x 16 KiB = 128 MiB
  o.mem_left_bytes = 100 * kMiB;
  o.mem_left_why = "left after the weights (1.0 GiB, in memory) under RLIMIT_AS";
  KvPoolSize s = size_kv_pool(o);
  EXPECT_EQ(s.num_blocks, 90 * kMiB / (16 * 1024 * 16));
  EXPECT_TRUE(s.warning.empty());
  EXPECT_NE(s.summary.find("90% of the 100.0 MiB left after the weights (1.0 GiB, in memory) under RLIMIT_AS; the "
                           "default, 4 seqs x 2048 tokens, would take 128.0 MiB"),
            std::string::npos)
      << s.summary;
  o.mem_left_bytes = kGiB;  // room for the whole default: as without a limit, and the figures said
  s = size_kv_pool(o);
  EXPECT_EQ(s.num_blocks, 4 * 2048 / 16);
  EXPECT_NE(s.summary.find("default: 4 seqs x 2048 tokens; 1.0 GiB left after the weights"), std::string::npos)
      << s.summary;
}

TEST(PoolSize, DefaultStillCappedAtAQuarterOfPhysicalMemory) {
  KvPoolOptions o = base();
  o.max_num_seqs = 256;  // 8 GiB wanted
  o.physical_mem_bytes = 16 * kGiB;
  o.mem_left_bytes = 12 * kGiB;  // 90% is 10.8 GiB: the quarter is smaller
  EXPECT_EQ(size_kv_pool(o).bytes, 4 * kGiB);
}

// Less than one full context after the weights: refused at start, with the
// figures and the flags that fix it, rather than started and OOM-killed.
TEST(PoolSize, DefaultRefusesLessThanOneContextOfWhatIsLeft) {
  KvPoolOptions o = base();      // one context: 128 blocks, 32 MiB
  o.mem_left_bytes = 35 * kMiB;  // 90%: 31.5 MiB, 126 blocks
  o.mem_left_why = "left after the weights (17.0 GiB, in memory) under MemAvailable";
  try {
    size_kv_pool(o);
    FAIL() << "accepted";
  } catch (const ResourceExhausted& e) {
    EXPECT_STREQ(e.what(),
                 "not enough memory for the KV cache: 90% of the 35.0 MiB left after the weights (17.0 GiB, in memory) "
                 "under MemAvailable holds 2016 tokens, less than one 2048-token context (32.0 MiB); lower "
                 "--max-model-len, or give --kv-cache-mem MIB (at most 35; a pool smaller than a context limits the "
                 "model length)");
  }
  o.mem_left_bytes = 36 * kMiB;  // 90%: 32.4 MiB, 129 blocks
  EXPECT_EQ(size_kv_pool(o).num_blocks, 129);
  o.mem_left_bytes = 0;
  try {
    size_kv_pool(o);
    FAIL() << "accepted";
  } catch (const ResourceExhausted& e) {
    EXPECT_NE(std::string(e.what()).find("nothing is left for a KV cache: free memory, or raise the limit"),
              std::string::npos)
        << e.what();
  }
}

// vLLM refuses a KV cache larger than the memory there is; so does an
// explicit size here. One the limit allows only by evicting the mapped
// weights' page cache is served, with a warning.
TEST(PoolSize, ExplicitSizesAboveWhatIsLeftAreRefused) {
  KvPoolOptions o = base();
  o.mem_left_bytes = 100 * kMiB;
  o.mem_left_why = "left after the weights (1.0 GiB, in memory) under MemAvailable";
  o.cache_mem_mib = 100;
  EXPECT_EQ(size_kv_pool(o).bytes, 100 * kMiB);  // all of it: the flag is the user's word
  o.cache_mem_mib = 101;
  try {
    size_kv_pool(o);
    FAIL() << "accepted";
  } catch (const ResourceExhausted& e) {
    EXPECT_STREQ(e.what(),
                 "--kv-cache-mem 101 MiB does not fit the 100.0 MiB left after the weights (1.0 GiB, in memory) under "
                 "MemAvailable: give at most --kv-cache-mem 100");
  }
  o.cache_mem_mib = 0;
  o.cache_tokens = 8192;  // 128 MiB
  EXPECT_THROW(size_kv_pool(o), ResourceExhausted);
  o.mem_left_why = "left after the weights (1.0 GiB, mapped) under MemAvailable";
  o.mem_max_bytes = 200 * kMiB;  // mapped weights whose page cache the pool may take
  const KvPoolSize s = size_kv_pool(o);
  EXPECT_EQ(s.bytes, 128 * kMiB);
  EXPECT_NE(s.warning.find("evicts the mapped weights from the page cache"), std::string::npos) << s.warning;
  o.cache_tokens = 16384;  // 256 MiB: beyond even that
  try {
    size_kv_pool(o);
    FAIL() << "accepted";
  } catch (const ResourceExhausted& e) {
    EXPECT_STREQ(e.what(),
                 "--kv-cache-tokens 16384 (256.0 MiB) does not fit the 100.0 MiB left after the weights (1.0 GiB, "
                 "mapped) under MemAvailable (200.0 MiB if it evicts the mapped weights' page cache): give at most "
                 "--kv-cache-mem 200");
  }
}

TEST(PoolSize, NeedsAContextOrTheExplicitSize) {
  KvPoolOptions o = base();
  EXPECT_EQ(kv_pool_needs_bytes(o), int64_t(std::ceil(32.0 * kMiB / kDefaultKvShare)));
  o.cache_mem_mib = 64;
  EXPECT_EQ(kv_pool_needs_bytes(o), 64 * kMiB);
  o.cache_mem_mib = 0;
  o.cache_tokens = 10001;  // whole blocks: 626
  EXPECT_EQ(kv_pool_needs_bytes(o), 626 * 16 * 16 * 1024);
  o = gemma3();  // one 8192-token context holds 2 x 512 + 11 x 32 pages of 64 KiB
  EXPECT_EQ(kv_pool_needs_bytes(o), int64_t(std::ceil((2 * 512 + 11 * 32) * 64.0 * 1024 / kDefaultKvShare)));
}

TEST(PoolSize, ReadsPhysicalMemory) {
  EXPECT_GT(physical_memory_bytes(), 64 * kMiB);
  KvPoolOptions o = base();
  o.physical_mem_bytes = 0;  // ask the system
  EXPECT_GT(size_kv_pool(o).num_blocks, 0);
}

}  // namespace
}  // namespace pagoda
