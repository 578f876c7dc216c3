// What device code that the host compiler also reads needs: the weight
// decoders (host and device functions) and the kernels that tests run on the
// CPU (tests/cuda/host_emulation.h).
#pragma once

#include <cstdint>
#include <cstring>

#define PAGODA_HD __host__ __device__ __forceinline__

// The device pass unrolls; a host compiler would warn about the pragma.
#ifdef __CUDA_ARCH__
#define PAGODA_UNROLL _Pragma("unroll")
#else
#define PAGODA_UNROLL
#endif

namespace pagoda::cuda::detail {

// a * b, a - b and a + b rounded once each, never fused into an FMA: the _rn
// intrinsics on the device; the host compiler contracts nothing here
// (-ffp-contract is off in ISO C++ mode, and no FMA is enabled).
PAGODA_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
PAGODA_HD float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
PAGODA_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// A float's bit pattern and back: the device's intrinsics, memcpy on the host.
PAGODA_HD uint32_t float_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
PAGODA_HD float bits_float(uint32_t b) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(b);
#else
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
#endif
}

}  // namespace pagoda::cuda::detail
