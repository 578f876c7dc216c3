#include "cuda/cublas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "util/error.h"

namespace pagoda::cuda {
namespace {

template <class F>
void resolve(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (!out) fail<Unsupported>("cuBLAS ({}) has no {}", PAGODA_CUBLAS_SONAME, name);
}

CublasLibrary open_cublas() {
  void* lib = dlopen(PAGODA_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  std::string why = lib ? "" : dlerror();
  if (!lib) lib = dlopen(PAGODA_CUBLAS_DIR "/" PAGODA_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    fail<Unsupported>("cannot open cuBLAS ({}; nor in {}): install the CUDA toolkit's cuBLAS or set LD_LIBRARY_PATH",
                      why, PAGODA_CUBLAS_DIR);
  CublasLibrary c;  // the library stays open for the process's life
  resolve(lib, "cublasCreate_v2", c.create);
  resolve(lib, "cublasDestroy_v2", c.destroy);
  resolve(lib, "cublasSetStream_v2", c.set_stream);
  resolve(lib, "cublasSetWorkspace_v2", c.set_workspace);
  resolve(lib, "cublasGemmEx", c.gemm_ex);
  return c;
}

}  // namespace

const CublasLibrary& cublas_library() {
  static std::once_flag once;
  static CublasLibrary lib;
  std::call_once(once, [] { lib = open_cublas(); });
  return lib;
}

}  // namespace pagoda::cuda
