// What a failed device call means for the engine, as a pure function of the
// error code, so that every code has one documented answer and no error path
// guesses. Three answers, three reactions (issue 39's rules):
//   kOutOfMemory  the device ran out of memory (a CUDA or cuBLAS allocation,
//                 pinned host memory): ResourceExhausted, the engine halves the
//                 step and retries; no request is lost.
//   kRecoverable  the call failed but the context still works (a bad launch
//                 configuration, too many resources for one launch, an
//                 unsupported operation): the engine's bisect-and-retry.
//   kDeviceLost   the context is unusable, or the device or driver is gone
//                 (an illegal address, a trap or assert in a kernel, a
//                 hardware fault, a kernel past the watchdog) and every code
//                 Pagoda does not know: no retry; every request ends with an
//                 error naming the cause and the process exits for its
//                 supervisor to restart it.
// The codes are the CUDA runtime's cudaError_t and cuBLAS's cublasStatus_t
// values (CUDA 13); this file needs no CUDA header, so it builds and is tested
// everywhere.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace pagoda::device {

enum class DeviceFailure { kOutOfMemory, kRecoverable, kDeviceLost };

struct DeviceErrorCode {
  int code;
  std::string_view name;  // the enumerator's name in the CUDA headers
  DeviceFailure failure;
};

// Every cudaError_t code but cudaSuccess, by value.
std::span<const DeviceErrorCode> cuda_error_codes();
// Every cublasStatus_t code but CUBLAS_STATUS_SUCCESS, by value.
std::span<const DeviceErrorCode> cublas_status_codes();

// The answer for a non-zero cudaError_t; kDeviceLost for a code not in the table.
DeviceFailure classify_cuda_error(int code);
// The answer for a non-zero cublasStatus_t; kDeviceLost for a code not in the table.
DeviceFailure classify_cublas_status(int code);

// "cudaErrorIllegalAddress", or "cudaError 1234" for a code not in the table.
std::string cuda_error_name(int code);

std::string_view failure_name(DeviceFailure f);  // "out of memory", "recoverable", "device lost"

}  // namespace pagoda::device
