// Runs a CUDA kernel's own source on the CPU, so its logic is tested on
// machines without a GPU. Include it, then the kernel's .cuh, in a C++ test.
// A launch runs the grid's blocks one after another; a block's threads are
// std::threads meeting at a std::barrier for __syncthreads(). __shared__
// arrays become function statics, shared by one block's threads at a time,
// as on the device. A thread that returns leaves
// the barrier, as an exited GPU thread no longer holds up __syncthreads().
// __shfl_xor_sync trades values within a warp at the warp's own barrier, and
// so does warp_exchange, which hands each lane all 32 lanes' values (what
// cuda/mma.cuh's tensor-core product computes its fragments from; it needs
// whole warps). Atomics and the other intrinsics are not emulated.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

// Tells code read by both compilers that this run is the CPU emulation (cuda/mma.cuh).
#define PAGODA_HOST_EMULATION 1

#define __launch_bounds__(...)
// Block-shared arrays become function statics (the host compiler's __shared__ is empty).
#undef __shared__
#define __shared__ static

// The built-in index variables, per emulated thread.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

namespace pagoda::cuda::emulation {

// The running block's meeting points and the lanes' values a shuffle exchanges.
struct BlockState {
  std::unique_ptr<std::barrier<>> block;
  std::vector<std::unique_ptr<std::barrier<>>> warps;  // one per 32 threads
  std::vector<float> exchange;                         // a value per thread
  std::vector<unsigned char> trade;                    // kTradeBytes per thread, for warp_exchange
};
inline constexpr size_t kTradeBytes = 64;
inline BlockState block_state;

inline unsigned linear_thread() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

}  // namespace pagoda::cuda::emulation

inline void __syncthreads() { pagoda::cuda::emulation::block_state.block->arrive_and_wait(); }

// A warp's lanes meet (at their warp's barrier), trade values, and meet again
// before the exchange slots are reused. All 32 lanes take part, as the
// kernels here call it.
inline float __shfl_xor_sync(unsigned /*mask*/, float v, int lane_mask, int /*width*/ = 32) {
  auto& b = pagoda::cuda::emulation::block_state;
  const unsigned tid = pagoda::cuda::emulation::linear_thread();
  b.exchange[tid] = v;
  b.warps[tid / 32]->arrive_and_wait();
  const float r = b.exchange[(tid & ~31u) | ((tid & 31u) ^ unsigned(lane_mask))];
  b.warps[tid / 32]->arrive_and_wait();
  return r;
}

namespace pagoda::cuda::emulation {

// all[l] = lane l's `mine`, for every lane of the calling warp: each lane
// deposits its value, the warp meets, each reads all 32, and the warp meets
// again before the slots are reused. All 32 lanes take part.
template <class T>
void warp_exchange(const T& mine, T* all) {
  static_assert(sizeof(T) <= kTradeBytes && std::is_trivially_copyable_v<T>);
  auto& b = block_state;
  const unsigned tid = linear_thread(), first = tid & ~31u;
  std::memcpy(&b.trade[tid * kTradeBytes], &mine, sizeof(T));
  b.warps[tid / 32]->arrive_and_wait();
  for (unsigned l = 0; l < 32; ++l) std::memcpy(&all[l], &b.trade[(first + l) * kTradeBytes], sizeof(T));
  b.warps[tid / 32]->arrive_and_wait();
}

}  // namespace pagoda::cuda::emulation

// __shfl_xor_sync for an int, through warp_exchange's byte slots.
inline int __shfl_xor_sync(unsigned /*mask*/, int v, int lane_mask, int /*width*/ = 32) {
  int all[32];
  pagoda::cuda::emulation::warp_exchange(v, all);
  return all[(pagoda::cuda::emulation::linear_thread() & 31u) ^ unsigned(lane_mask)];
}

// The device's integer min and max, unqualified as kernels call them.
using std::max;
using std::min;

namespace pagoda::cuda::emulation {

// kernel<<<grid, block>>>(args...), on the CPU; returns when every block is done.
template <class Kernel, class... Args>
void launch(dim3 grid, dim3 block, Kernel kernel, const Args&... args) {
  gridDim = grid;
  blockDim = block;
  const unsigned n_threads = block.x * block.y * block.z;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        block_state.block = std::make_unique<std::barrier<>>(n_threads);
        block_state.warps.clear();
        for (unsigned w = 0; w < (n_threads + 31) / 32; ++w)
          block_state.warps.push_back(std::make_unique<std::barrier<>>(std::min(32u, n_threads - 32 * w)));
        block_state.exchange.assign(n_threads, 0.0f);
        block_state.trade.assign(size_t(n_threads) * kTradeBytes, 0);
        std::vector<std::jthread> threads;
        threads.reserve(n_threads);
        for (unsigned t = 0; t < n_threads; ++t)
          threads.emplace_back([&, t] {
            blockIdx = {bx, by, bz};
            threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
            kernel(args...);
            block_state.block->arrive_and_drop();
            block_state.warps[t / 32]->arrive_and_drop();
          });
      }  // the jthreads join here, before the next block reuses the statics
}

}  // namespace pagoda::cuda::emulation
