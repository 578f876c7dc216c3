// store_kv, copy_blocks and gather_rows: pure data movement, so exact.
#include <random>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cuda/kv.h"
#include "cuda_test_util.h"

namespace pagoda::cuda {
namespace {

using testing::DeviceBuffer;

constexpr int kBlockSize = 16, kNumBlocks = 6, kKvDim = 80;  // kv_dim: 5 heads of 16, not a multiple of 64
constexpr size_t kCacheElems = size_t(kNumBlocks) * kBlockSize * kKvDim;

// Rows kKvDim apart, and wider (a KV page slot wider than the layer: model/kv_storage.h).
TEST(CudaKv, StoreKvWritesEachTokenAtItsSlotAndSkipsNegativeOnes) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(71);
  for (const auto& [n_tokens, stride] : std::vector<std::pair<int, int>>{{1, kKvDim}, {7, kKvDim}, {7, kKvDim + 16}}) {
    SCOPED_TRACE(fmt::format("tokens {} rows {} apart", n_tokens, stride));
    const std::vector<float> k = testing::random_floats(size_t(n_tokens) * kKvDim, rng);
    const std::vector<float> v = testing::random_floats(size_t(n_tokens) * kKvDim, rng);
    // Distinct slots across blocks, in no order; the second token (when there is one) is padding.
    std::vector<int32_t> slots = {3 * kBlockSize + 15, -1, 0, 5 * kBlockSize + 1, kBlockSize, 2 * kBlockSize + 7, 17};
    slots.resize(size_t(n_tokens));
    // The caches start as random values: a kernel writing the wrong slot or an
    // extra one shows as a changed element.
    const size_t elems = size_t(kNumBlocks) * kBlockSize * size_t(stride);
    const std::vector<uint16_t> k0 = testing::random_halves(elems, rng), v0 = testing::random_halves(elems, rng);
    DeviceBuffer<float> k_d(k), v_d(v);
    DeviceBuffer<int32_t> slots_d(slots);
    DeviceBuffer<uint16_t> kc_d(k0), vc_d(v0);
    ASSERT_EQ(store_kv(k_d.get(), v_d.get(), slots_d.get(), n_tokens, kKvDim, stride,
                       reinterpret_cast<__half*>(kc_d.get()), reinterpret_cast<__half*>(vc_d.get()), nullptr),
              cudaSuccess);
    PAGODA_CUDA_SYNC();
    std::vector<uint16_t> k_want = k0, v_want = v0;
    for (int t = 0; t < n_tokens; ++t) {
      if (slots[size_t(t)] < 0) continue;
      for (int i = 0; i < kKvDim; ++i) {
        k_want[size_t(slots[size_t(t)]) * stride + i] = f32_to_f16(k[size_t(t) * kKvDim + i]);
        v_want[size_t(slots[size_t(t)]) * stride + i] = f32_to_f16(v[size_t(t) * kKvDim + i]);
      }
    }
    EXPECT_EQ(kc_d.download(), k_want);
    EXPECT_EQ(vc_d.download(), v_want);
  }
}

TEST(CudaKv, CopyBlocksDuplicatesKAndVBlocks) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(72);
  const std::vector<uint16_t> k0 = testing::random_halves(kCacheElems, rng),
                              v0 = testing::random_halves(kCacheElems, rng);
  const std::vector<int32_t> pairs = {0, 3, 2, 5, 4, 1};
  DeviceBuffer<uint16_t> kc_d(k0), vc_d(v0);
  DeviceBuffer<int32_t> pairs_d(pairs);
  ASSERT_EQ(copy_blocks(reinterpret_cast<__half*>(kc_d.get()), reinterpret_cast<__half*>(vc_d.get()), pairs_d.get(), 3,
                        kBlockSize, kKvDim, nullptr),
            cudaSuccess);
  PAGODA_CUDA_SYNC();
  std::vector<uint16_t> k_want = k0, v_want = v0;
  const size_t block_elems = size_t(kBlockSize) * kKvDim;
  for (size_t p = 0; p < 3; ++p)
    for (size_t i = 0; i < block_elems; ++i) {
      k_want[size_t(pairs[2 * p + 1]) * block_elems + i] = k0[size_t(pairs[2 * p]) * block_elems + i];
      v_want[size_t(pairs[2 * p + 1]) * block_elems + i] = v0[size_t(pairs[2 * p]) * block_elems + i];
    }
  EXPECT_EQ(kc_d.download(), k_want);
  EXPECT_EQ(vc_d.download(), v_want);
}

TEST(CudaKv, GatherRowsPicksTheWantedLogits) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(73);
  const int64_t n = 1001;
  const std::vector<float> in = testing::random_floats(size_t(9 * n), rng);
  const std::vector<int32_t> idx = {8, 0, 3, 3};
  DeviceBuffer<float> in_d(in), out_d(testing::nan_floats(idx.size() * size_t(n)));
  DeviceBuffer<int32_t> idx_d(idx);
  ASSERT_EQ(gather_rows(in_d.get(), idx_d.get(), int(idx.size()), n, out_d.get(), nullptr), cudaSuccess);
  PAGODA_CUDA_SYNC();
  const std::vector<float> out = out_d.download();
  for (size_t r = 0; r < idx.size(); ++r)
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[r * n + i], in[size_t(idx[r]) * n + i]) << r << " " << i;
}

}  // namespace
}  // namespace pagoda::cuda
