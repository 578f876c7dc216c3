// pagoda_cuda_probe: what this GPU does at its simplest, for scripts/device-check.sh's
// phase 0. Prints one JSON object a line: the device, device-to-device copy
// bandwidth, and cuBLAS F16 GEMM throughput through gemm_f16 (cuda/gemm.h).
// Exits 1, after a JSON line saying why, when there is no usable device.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "cuda/cublas_library.h"
#include "cuda/gemm.h"

namespace {

// Prints the failure as JSON and tells the caller to stop.
bool failed(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return false;
  std::printf("{\"probe\":\"error\",\"what\":\"%s\",\"error\":\"%s\"}\n", what, cudaGetErrorName(e));
  return true;
}

// Milliseconds of `iters` runs of f on the default stream, after one warm-up run.
template <class F>
float time_ms(int iters, F&& f) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  f();
  cudaEventRecord(start);
  for (int i = 0; i < iters; ++i) f();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

}  // namespace

int main() {
  int n = 0;
  if (failed(cudaGetDeviceCount(&n), "cudaGetDeviceCount")) return 1;
  if (n == 0) {
    std::printf("{\"probe\":\"error\",\"what\":\"no CUDA device\"}\n");
    return 1;
  }
  cudaDeviceProp prop{};
  if (failed(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf(
      "{\"probe\":\"device\",\"name\":\"%s\",\"cc\":\"%d.%d\",\"sms\":%d,\"memory_GiB\":%.1f,\"driver\":%d,"
      "\"runtime\":%d}\n",
      prop.name, prop.major, prop.minor, prop.multiProcessorCount, double(prop.totalGlobalMem) / (1 << 30), driver,
      runtime);
  std::fflush(stdout);

  // Copy bandwidth: 1 GiB device to device; each byte is read once and written once.
  const size_t bytes = size_t(1) << 30;
  void *a = nullptr, *b = nullptr;
  if (failed(cudaMalloc(&a, bytes), "cudaMalloc") || failed(cudaMalloc(&b, bytes), "cudaMalloc")) return 1;
  cudaMemset(a, 1, bytes);
  const int copies = 20;
  const float copy_ms = time_ms(copies, [&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); });
  if (failed(cudaGetLastError(), "cudaMemcpyAsync")) return 1;
  std::printf("{\"probe\":\"d2d_copy\",\"bytes\":%zu,\"iters\":%d,\"ms_each\":%.3f,\"read_plus_write_GBps\":%.1f}\n",
              bytes, copies, double(copy_ms) / copies, 2.0 * double(bytes) * copies / (double(copy_ms) * 1e6));
  std::fflush(stdout);
  cudaFree(a);
  cudaFree(b);

  // GEMM: out [m][n] = x [m][k] W^T, W [n][k], F16 in, F32 accumulate and out.
  cublasHandle_t handle = nullptr;
  try {
    if (pagoda::cuda::cublas_library().create(&handle) != CUBLAS_STATUS_SUCCESS) {
      std::printf("{\"probe\":\"error\",\"what\":\"cublasCreate\"}\n");
      return 1;
    }
  } catch (const std::exception& e) {  // no cuBLAS to open
    std::printf("{\"probe\":\"error\",\"what\":\"%s\"}\n", e.what());
    return 1;
  }
  const int dims[][3] = {{4096, 4096, 4096}, {512, 4096, 4096}, {8192, 8192, 8192}};  // tokens, rows, k
  for (const auto& d : dims) {
    const int m = d[0], rows = d[1], k = d[2];
    __half *x = nullptr, *w = nullptr;
    float* out = nullptr;
    if (failed(cudaMalloc(&x, size_t(m) * k * 2), "cudaMalloc") ||
        failed(cudaMalloc(&w, size_t(rows) * k * 2), "cudaMalloc") ||
        failed(cudaMalloc(&out, size_t(m) * rows * 4), "cudaMalloc"))
      return 1;
    cudaMemset(x, 0x3C, size_t(m) * k * 2);  // 0x3C3C: about 1.06 in F16, far from overflow in F32
    cudaMemset(w, 0x1C, size_t(rows) * k * 2);
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    const int iters = 10;
    const float ms = time_ms(iters, [&] {
      const cublasStatus_t s = pagoda::cuda::gemm_f16(handle, x, w, out, m, rows, k, nullptr);
      if (s != CUBLAS_STATUS_SUCCESS) status = s;
    });
    std::printf("{\"probe\":\"gemm_f16\",\"m\":%d,\"n\":%d,\"k\":%d,\"status\":%d,\"ms_each\":%.3f,\"TFLOPs\":%.1f}\n",
                m, rows, k, int(status), double(ms) / iters, 2.0 * m * rows * double(k) * iters / (double(ms) * 1e9));
    std::fflush(stdout);
    cudaFree(x);
    cudaFree(w);
    cudaFree(out);
  }
  pagoda::cuda::cublas_library().destroy(handle);
  return failed(cudaDeviceSynchronize(), "cudaDeviceSynchronize") ? 1 : 0;
}
