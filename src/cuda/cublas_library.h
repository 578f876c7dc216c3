// cuBLAS, opened when a GPU is first used rather than linked: libcublasLt
// alone maps ~500 MB of address space at process start, which a CPU-only
// server under RLIMIT_AS cannot spare, and a build with the CUDA backend must
// serve on a CPU exactly as one without.
#pragma once

#include <cublas_v2.h>

namespace pagoda::cuda {

struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  // A workspace of the caller's: a GEMM captured into a CUDA graph then takes no memory of cuBLAS's own.
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  // cublasGemmEx's C entry (the header overloads the name with 64-bit sizes).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
};

// Opens libcublas.so.<toolkit major> once (the loader's search path, then the
// toolkit's library folder this was built with); Unsupported, naming dlerror,
// where it cannot be opened.
const CublasLibrary& cublas_library();

}  // namespace pagoda::cuda
