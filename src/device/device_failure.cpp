#include "device/device_failure.h"

#include <algorithm>

namespace pagoda::device {
namespace {

constexpr auto kOutOfMemory = DeviceFailure::kOutOfMemory;
constexpr auto kRecoverable = DeviceFailure::kRecoverable;
constexpr auto kDeviceLost = DeviceFailure::kDeviceLost;

// cudaError_t (driver_types.h, CUDA 13), sorted by value. kDeviceLost are the
// codes whose documentation in that header says the process is left in an
// inconsistent state and must be relaunched (226, 700, 702, 710, 714-719, 721,
// 810, 911), and the ones where the device, its driver or its context is gone:
// initialisation and driver failures (3, 4, 35, 46, 100, 127, 201, 803), hardware
// faults (214 ECC, 220 NVLink), a destroyed context (709), a lost MPS server
// (805, 806) and cudaErrorUnknown (999). Only cudaErrorMemoryAllocation is out
// of memory: cudaErrorLaunchOutOfResources (701) is a launch asking too much of
// one SM (registers, shared memory), which a retry of the same kernel repeats
// but which leaves the context working.
constexpr DeviceErrorCode kCuda[] = {
    {1, "cudaErrorInvalidValue", kRecoverable},
    {2, "cudaErrorMemoryAllocation", kOutOfMemory},
    {3, "cudaErrorInitializationError", kDeviceLost},
    {4, "cudaErrorCudartUnloading", kDeviceLost},
    {5, "cudaErrorProfilerDisabled", kRecoverable},
    {6, "cudaErrorProfilerNotInitialized", kRecoverable},
    {7, "cudaErrorProfilerAlreadyStarted", kRecoverable},
    {8, "cudaErrorProfilerAlreadyStopped", kRecoverable},
    {9, "cudaErrorInvalidConfiguration", kRecoverable},
    {12, "cudaErrorInvalidPitchValue", kRecoverable},
    {13, "cudaErrorInvalidSymbol", kRecoverable},
    {16, "cudaErrorInvalidHostPointer", kRecoverable},
    {17, "cudaErrorInvalidDevicePointer", kRecoverable},
    {18, "cudaErrorInvalidTexture", kRecoverable},
    {19, "cudaErrorInvalidTextureBinding", kRecoverable},
    {20, "cudaErrorInvalidChannelDescriptor", kRecoverable},
    {21, "cudaErrorInvalidMemcpyDirection", kRecoverable},
    {22, "cudaErrorAddressOfConstant", kRecoverable},
    {23, "cudaErrorTextureFetchFailed", kRecoverable},
    {24, "cudaErrorTextureNotBound", kRecoverable},
    {25, "cudaErrorSynchronizationError", kRecoverable},
    {26, "cudaErrorInvalidFilterSetting", kRecoverable},
    {27, "cudaErrorInvalidNormSetting", kRecoverable},
    {28, "cudaErrorMixedDeviceExecution", kRecoverable},
    {31, "cudaErrorNotYetImplemented", kRecoverable},
    {32, "cudaErrorMemoryValueTooLarge", kRecoverable},
    {34, "cudaErrorStubLibrary", kRecoverable},
    {35, "cudaErrorInsufficientDriver", kDeviceLost},
    {36, "cudaErrorCallRequiresNewerDriver", kRecoverable},
    {37, "cudaErrorInvalidSurface", kRecoverable},
    {43, "cudaErrorDuplicateVariableName", kRecoverable},
    {44, "cudaErrorDuplicateTextureName", kRecoverable},
    {45, "cudaErrorDuplicateSurfaceName", kRecoverable},
    {46, "cudaErrorDevicesUnavailable", kDeviceLost},
    {49, "cudaErrorIncompatibleDriverContext", kRecoverable},
    {52, "cudaErrorMissingConfiguration", kRecoverable},
    {53, "cudaErrorPriorLaunchFailure", kRecoverable},
    {65, "cudaErrorLaunchMaxDepthExceeded", kRecoverable},
    {66, "cudaErrorLaunchFileScopedTex", kRecoverable},
    {67, "cudaErrorLaunchFileScopedSurf", kRecoverable},
    {68, "cudaErrorSyncDepthExceeded", kRecoverable},
    {69, "cudaErrorLaunchPendingCountExceeded", kRecoverable},
    {98, "cudaErrorInvalidDeviceFunction", kRecoverable},
    {100, "cudaErrorNoDevice", kDeviceLost},
    {101, "cudaErrorInvalidDevice", kRecoverable},
    {102, "cudaErrorDeviceNotLicensed", kRecoverable},
    {103, "cudaErrorSoftwareValidityNotEstablished", kRecoverable},
    {127, "cudaErrorStartupFailure", kDeviceLost},
    {200, "cudaErrorInvalidKernelImage", kRecoverable},
    {201, "cudaErrorDeviceUninitialized", kDeviceLost},
    {205, "cudaErrorMapBufferObjectFailed", kRecoverable},
    {206, "cudaErrorUnmapBufferObjectFailed", kRecoverable},
    {207, "cudaErrorArrayIsMapped", kRecoverable},
    {208, "cudaErrorAlreadyMapped", kRecoverable},
    {209, "cudaErrorNoKernelImageForDevice", kRecoverable},
    {210, "cudaErrorAlreadyAcquired", kRecoverable},
    {211, "cudaErrorNotMapped", kRecoverable},
    {212, "cudaErrorNotMappedAsArray", kRecoverable},
    {213, "cudaErrorNotMappedAsPointer", kRecoverable},
    {214, "cudaErrorECCUncorrectable", kDeviceLost},
    {215, "cudaErrorUnsupportedLimit", kRecoverable},
    {216, "cudaErrorDeviceAlreadyInUse", kRecoverable},
    {217, "cudaErrorPeerAccessUnsupported", kRecoverable},
    {218, "cudaErrorInvalidPtx", kRecoverable},
    {219, "cudaErrorInvalidGraphicsContext", kRecoverable},
    {220, "cudaErrorNvlinkUncorrectable", kDeviceLost},
    {221, "cudaErrorJitCompilerNotFound", kRecoverable},
    {222, "cudaErrorUnsupportedPtxVersion", kRecoverable},
    {223, "cudaErrorJitCompilationDisabled", kRecoverable},
    {224, "cudaErrorUnsupportedExecAffinity", kRecoverable},
    {225, "cudaErrorUnsupportedDevSideSync", kRecoverable},
    {226, "cudaErrorContained", kDeviceLost},
    {300, "cudaErrorInvalidSource", kRecoverable},
    {301, "cudaErrorFileNotFound", kRecoverable},
    {302, "cudaErrorSharedObjectSymbolNotFound", kRecoverable},
    {303, "cudaErrorSharedObjectInitFailed", kRecoverable},
    {304, "cudaErrorOperatingSystem", kRecoverable},
    {400, "cudaErrorInvalidResourceHandle", kRecoverable},
    {401, "cudaErrorIllegalState", kRecoverable},
    {402, "cudaErrorLossyQuery", kRecoverable},
    {500, "cudaErrorSymbolNotFound", kRecoverable},
    {600, "cudaErrorNotReady", kRecoverable},
    {700, "cudaErrorIllegalAddress", kDeviceLost},
    {701, "cudaErrorLaunchOutOfResources", kRecoverable},
    {702, "cudaErrorLaunchTimeout", kDeviceLost},
    {703, "cudaErrorLaunchIncompatibleTexturing", kRecoverable},
    {704, "cudaErrorPeerAccessAlreadyEnabled", kRecoverable},
    {705, "cudaErrorPeerAccessNotEnabled", kRecoverable},
    {708, "cudaErrorSetOnActiveProcess", kRecoverable},
    {709, "cudaErrorContextIsDestroyed", kDeviceLost},
    {710, "cudaErrorAssert", kDeviceLost},
    {711, "cudaErrorTooManyPeers", kRecoverable},
    {712, "cudaErrorHostMemoryAlreadyRegistered", kRecoverable},
    {713, "cudaErrorHostMemoryNotRegistered", kRecoverable},
    {714, "cudaErrorHardwareStackError", kDeviceLost},
    {715, "cudaErrorIllegalInstruction", kDeviceLost},
    {716, "cudaErrorMisalignedAddress", kDeviceLost},
    {717, "cudaErrorInvalidAddressSpace", kDeviceLost},
    {718, "cudaErrorInvalidPc", kDeviceLost},
    {719, "cudaErrorLaunchFailure", kDeviceLost},
    {720, "cudaErrorCooperativeLaunchTooLarge", kRecoverable},
    {721, "cudaErrorTensorMemoryLeak", kDeviceLost},
    {800, "cudaErrorNotPermitted", kRecoverable},
    {801, "cudaErrorNotSupported", kRecoverable},
    {802, "cudaErrorSystemNotReady", kRecoverable},
    {803, "cudaErrorSystemDriverMismatch", kDeviceLost},
    {804, "cudaErrorCompatNotSupportedOnDevice", kRecoverable},
    {805, "cudaErrorMpsConnectionFailed", kDeviceLost},
    {806, "cudaErrorMpsRpcFailure", kDeviceLost},
    {807, "cudaErrorMpsServerNotReady", kRecoverable},
    {808, "cudaErrorMpsMaxClientsReached", kRecoverable},
    {809, "cudaErrorMpsMaxConnectionsReached", kRecoverable},
    {810, "cudaErrorMpsClientTerminated", kDeviceLost},
    {811, "cudaErrorCdpNotSupported", kRecoverable},
    {812, "cudaErrorCdpVersionMismatch", kRecoverable},
    {900, "cudaErrorStreamCaptureUnsupported", kRecoverable},
    {901, "cudaErrorStreamCaptureInvalidated", kRecoverable},
    {902, "cudaErrorStreamCaptureMerge", kRecoverable},
    {903, "cudaErrorStreamCaptureUnmatched", kRecoverable},
    {904, "cudaErrorStreamCaptureUnjoined", kRecoverable},
    {905, "cudaErrorStreamCaptureIsolation", kRecoverable},
    {906, "cudaErrorStreamCaptureImplicit", kRecoverable},
    {907, "cudaErrorCapturedEvent", kRecoverable},
    {908, "cudaErrorStreamCaptureWrongThread", kRecoverable},
    {909, "cudaErrorTimeout", kRecoverable},
    {910, "cudaErrorGraphExecUpdateFailure", kRecoverable},
    {911, "cudaErrorExternalDevice", kDeviceLost},
    {912, "cudaErrorInvalidClusterSize", kRecoverable},
    {913, "cudaErrorFunctionNotLoaded", kRecoverable},
    {914, "cudaErrorInvalidResourceType", kRecoverable},
    {915, "cudaErrorInvalidResourceConfiguration", kRecoverable},
    {999, "cudaErrorUnknown", kDeviceLost},
    {10000, "cudaErrorApiFailureBase", kRecoverable},
};

// cublasStatus_t (cublas_api.h). A failed execution reports the CUDA error of
// the kernel underneath at the next synchronisation, where a sticky one is seen.
constexpr DeviceErrorCode kCublas[] = {
    {1, "CUBLAS_STATUS_NOT_INITIALIZED", kDeviceLost},  {3, "CUBLAS_STATUS_ALLOC_FAILED", kOutOfMemory},
    {7, "CUBLAS_STATUS_INVALID_VALUE", kRecoverable},   {8, "CUBLAS_STATUS_ARCH_MISMATCH", kRecoverable},
    {11, "CUBLAS_STATUS_MAPPING_ERROR", kRecoverable},  {13, "CUBLAS_STATUS_EXECUTION_FAILED", kRecoverable},
    {14, "CUBLAS_STATUS_INTERNAL_ERROR", kRecoverable}, {15, "CUBLAS_STATUS_NOT_SUPPORTED", kRecoverable},
    {16, "CUBLAS_STATUS_LICENSE_ERROR", kDeviceLost},
};

const DeviceErrorCode* find(std::span<const DeviceErrorCode> table, int code) {
  const auto it =
      std::lower_bound(table.begin(), table.end(), code, [](const DeviceErrorCode& e, int c) { return e.code < c; });
  return it != table.end() && it->code == code ? &*it : nullptr;
}

}  // namespace

std::span<const DeviceErrorCode> cuda_error_codes() { return kCuda; }
std::span<const DeviceErrorCode> cublas_status_codes() { return kCublas; }

DeviceFailure classify_cuda_error(int code) {
  const DeviceErrorCode* e = find(kCuda, code);
  return e ? e->failure : kDeviceLost;
}

DeviceFailure classify_cublas_status(int code) {
  const DeviceErrorCode* e = find(kCublas, code);
  return e ? e->failure : kDeviceLost;
}

std::string cuda_error_name(int code) {
  const DeviceErrorCode* e = find(kCuda, code);
  return e ? std::string(e->name) : "cudaError " + std::to_string(code);
}

std::string_view failure_name(DeviceFailure f) {
  switch (f) {
    case kOutOfMemory: return "out of memory";
    case kRecoverable: return "recoverable";
    case kDeviceLost: return "device lost";
  }
  return "device lost";
}

}  // namespace pagoda::device
