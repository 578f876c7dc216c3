// Real device faults for the device check (scripts/device-check.sh) and the
// extra element-wise step the forward pass needs beside the kernels: a
// kernel that traps (a sticky error: the context is lost), a kernel that
// never ends (the step's deadline fires), and a bias added to every row.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace pagoda::cuda {

// One thread that executes a trap instruction: the next synchronisation
// reports a sticky launch failure.
cudaError_t launch_trap(cudaStream_t stream);

// One thread that spins until *release becomes non-zero (device memory the
// host never writes): a hung kernel.
cudaError_t launch_spin(const volatile int32_t* release, cudaStream_t stream);

// y[t][i] += b[i].
//   y  [n_rows][n] F32
//   b  [n] F32
cudaError_t add_bias(float* y, const float* b, int n_rows, int n, cudaStream_t stream);

}  // namespace pagoda::cuda
