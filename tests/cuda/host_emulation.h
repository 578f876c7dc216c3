// Runs a CUDA kernel's own source on the CPU, so its logic is tested on
// machines without a GPU. Include it, then the kernel's .cuh, in a C++ test.
// A launch runs the grid's blocks one after another; a block's threads are
// std::threads meeting at a std::barrier for __syncthreads(). __shared__
// arrays become function statics, shared by one block's threads at a time,
// as on the device. A thread that returns leaves
// the barrier, as an exited GPU thread no longer holds up __syncthreads().
// Warp shuffles and atomics are not emulated: kernels that need them stay GPU-only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>

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
inline std::barrier<>* block_barrier = nullptr;
}  // namespace pagoda::cuda::emulation

inline void __syncthreads() { pagoda::cuda::emulation::block_barrier->arrive_and_wait(); }

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
        std::barrier<> barrier(n_threads);
        block_barrier = &barrier;
        std::vector<std::jthread> threads;
        threads.reserve(n_threads);
        for (unsigned t = 0; t < n_threads; ++t)
          threads.emplace_back([&, t] {
            blockIdx = {bx, by, bz};
            threadIdx = {t % block.x, t / block.x % block.y, t / (block.x * block.y)};
            kernel(args...);
            barrier.arrive_and_drop();
          });
      }  // the jthreads join here, before the next block reuses the statics
}

}  // namespace pagoda::cuda::emulation
