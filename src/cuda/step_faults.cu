#include "cuda/step_faults.h"

namespace pagoda::cuda {
namespace {

__global__ void trap_kernel() { __trap(); }

__global__ void spin_kernel(const volatile int32_t* release) {
  while (*release == 0) __nanosleep(1000);
}

__global__ void add_bias_kernel(float* y, const float* b, int64_t total, int n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += b[i % n];
}

}  // namespace

cudaError_t launch_trap(cudaStream_t stream) {
  trap_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t launch_spin(const volatile int32_t* release, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(release);
  return cudaGetLastError();
}

cudaError_t add_bias(float* y, const float* b, int n_rows, int n, cudaStream_t stream) {
  if (n_rows <= 0 || n <= 0) return n_rows == 0 ? cudaSuccess : cudaErrorInvalidValue;
  const int64_t total = int64_t(n_rows) * n;
  const int blocks = int((total + 255) / 256 < 4096 ? (total + 255) / 256 : 4096);
  add_bias_kernel<<<blocks, 256, 0, stream>>>(y, b, total, n);
  return cudaGetLastError();
}

}  // namespace pagoda::cuda
