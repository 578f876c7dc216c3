// Helpers for the CUDA kernel tests: the skip when no device is usable, owned
// device buffers, NaN-filled outputs (an element a kernel forgets to write
// then fails the comparison) and random inputs.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/half.h"

namespace pagoda::cuda::testing {

// Whether a CUDA device can be used here; why not, when it cannot.
inline bool cuda_device_usable(std::string& why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    cudaGetLastError();  // clear it, so later calls do not report it again
    return false;
  }
  if (n == 0) {
    why = "cudaGetDeviceCount found 0 devices";
    return false;
  }
  return true;
}

// Skips the test (GTEST_SKIP returns from it) unless a CUDA device is usable.
#define PAGODA_REQUIRE_CUDA_DEVICE()                                        \
  do {                                                                      \
    std::string pagoda_no_device_why;                                       \
    if (!::pagoda::cuda::testing::cuda_device_usable(pagoda_no_device_why)) \
      GTEST_SKIP() << "no CUDA device (" << pagoda_no_device_why << ")";    \
  } while (0)

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail<Error>("{}: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

// n elements of T in device memory, freed with the object.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) { check_cuda(cudaMalloc(&p_, (n ? n : 1) * sizeof(T)), "cudaMalloc"); }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }

  T* get() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    if (host.size() != n_) fail<Error>("DeviceBuffer::upload: {} elements into {}", host.size(), n_);
    check_cuda(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    check_cuda(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    return host;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

inline std::vector<float> nan_floats(size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

// F16 NaN bit patterns.
inline std::vector<uint16_t> nan_halves(size_t n) { return std::vector<uint16_t>(n, 0x7E00); }

// n normally distributed floats (never all zeros), scaled by sigma.
inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// n random F16 bit patterns of normally distributed values.
inline std::vector<uint16_t> random_halves(size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::vector<uint16_t> v;
  v.reserve(n);
  for (float x : random_floats(n, rng, sigma)) v.push_back(f32_to_f16(x));
  return v;
}

// Waits for the device and fails the test on an error from any kernel.
#define PAGODA_CUDA_SYNC() ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError())

// RMS norm's result against a double loop: out[t][i] = x[t][i] / sqrt(mean(x[t]^2) + eps) * w[i],
// within 1e-4 relative (F32 sums of up to a few thousand squares).
inline void expect_rms_norm(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& got,
                            int n_tokens, int n, float eps) {
  for (int t = 0; t < n_tokens; ++t) {
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += double(x[size_t(t) * n + i]) * x[size_t(t) * n + i];
    const double inv = 1 / std::sqrt(ss / n + eps);
    for (int i = 0; i < n; ++i) {
      const double ref = x[size_t(t) * n + i] * inv * w[size_t(i)];
      ASSERT_NEAR(got[size_t(t) * n + i], ref, 1e-4 * std::abs(ref) + 1e-7) << "token " << t << " i " << i;
    }
  }
}

}  // namespace pagoda::cuda::testing
