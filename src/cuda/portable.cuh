// Macros for device code that the host compiler also reads: the weight
// decoders (host and device functions) and the kernels that tests run on the
// CPU (tests/cuda/host_emulation.h).
#pragma once

#define PAGODA_HD __host__ __device__ __forceinline__

// The device pass unrolls; a host compiler would warn about the pragma.
#ifdef __CUDA_ARCH__
#define PAGODA_UNROLL _Pragma("unroll")
#else
#define PAGODA_UNROLL
#endif
