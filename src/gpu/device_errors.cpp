#include "device/device_failure.h"
#include "gpu/device.h"
#include "util/error.h"

namespace pagoda::gpu {
namespace {

std::string code_name(const DeviceStatus& s) {
  if (s.api == DeviceStatus::Api::kCuda) return device::cuda_error_name(s.code);
  for (const auto& e : device::cublas_status_codes())
    if (e.code == s.code) return std::string(e.name);
  return "cublasStatus " + std::to_string(s.code);
}

}  // namespace

void raise_device_error(const DeviceStatus& s, std::string_view what) {
  if (s.ok()) return;
  if (s.api == DeviceStatus::Api::kDeadline)
    fail<DeviceLost>("{}: {} did not finish by its deadline (a hung kernel or device)", what, s.call);
  const device::DeviceFailure f =
      s.api == DeviceStatus::Api::kCuda ? device::classify_cuda_error(s.code) : device::classify_cublas_status(s.code);
  const std::string message = fmt::format("{}: {} failed with {}", what, s.call, code_name(s));
  switch (f) {
    case device::DeviceFailure::kOutOfMemory: throw ResourceExhausted("out of device memory in " + message);
    case device::DeviceFailure::kRecoverable: throw Error(message);
    case device::DeviceFailure::kDeviceLost: throw DeviceLost(message);
  }
  throw DeviceLost(message);
}

}  // namespace pagoda::gpu
