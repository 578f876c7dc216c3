// Every CUDA and cuBLAS code becomes the engine's exception its class says.
#include <gtest/gtest.h>

#include "device/device_failure.h"
#include "gpu/device.h"
#include "util/error.h"

namespace pagoda::gpu {
namespace {

using device::DeviceFailure;

// Which reaction raise_device_error chose, by the exception's type.
DeviceFailure reaction(const DeviceStatus& s, std::string& message) {
  try {
    raise_device_error(s, "step 7");
  } catch (const ResourceExhausted& e) {
    message = e.what();
    return DeviceFailure::kOutOfMemory;
  } catch (const DeviceLost& e) {
    message = e.what();
    return DeviceFailure::kDeviceLost;
  } catch (const Error& e) {
    message = e.what();
    return DeviceFailure::kRecoverable;
  }
  ADD_FAILURE() << "no exception for code " << s.code;
  return DeviceFailure::kRecoverable;
}

TEST(DeviceErrors, EveryCudaCodeTakesItsClassesReaction) {
  for (const auto& c : device::cuda_error_codes()) {
    std::string message;
    EXPECT_EQ(reaction(DeviceStatus::cuda(c.code, "cudaLaunchKernel"), message), c.failure) << c.name;
    EXPECT_NE(message.find(c.name), std::string::npos) << message;
    EXPECT_NE(message.find("step 7: cudaLaunchKernel"), std::string::npos) << message;
  }
}

TEST(DeviceErrors, EveryCublasCodeTakesItsClassesReaction) {
  for (const auto& c : device::cublas_status_codes()) {
    std::string message;
    EXPECT_EQ(reaction(DeviceStatus::cublas(c.code, "cublasGemmEx"), message), c.failure) << c.name;
    EXPECT_NE(message.find(c.name), std::string::npos) << message;
  }
}

TEST(DeviceErrors, AnUnknownCodeOrAMissedDeadlineLosesTheDevice) {
  std::string message;
  EXPECT_EQ(reaction(DeviceStatus::cuda(4242, "cudaMemcpyAsync"), message), DeviceFailure::kDeviceLost);
  EXPECT_NE(message.find("cudaError 4242"), std::string::npos) << message;
  EXPECT_EQ(reaction(DeviceStatus::cublas(77, "cublasGemmEx"), message), DeviceFailure::kDeviceLost);
  EXPECT_EQ(reaction(DeviceStatus::deadline("the step's kernels"), message), DeviceFailure::kDeviceLost);
  EXPECT_NE(message.find("did not finish by its deadline"), std::string::npos) << message;
  EXPECT_NO_THROW(raise_device_error(DeviceStatus::success(), "step 1"));
}

}  // namespace
}  // namespace pagoda::gpu
