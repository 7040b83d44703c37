// cuda_errors.cuh — CUDA runtime errors as te4j statuses and messages that name the call, the
// error and, for the common failures, the cause and the fix. Private to libte4j (nvcc only).
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "te4j/api.h"

namespace te4j {
namespace cuda_detail {

inline std::string versionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

/// Cause and fix of the errors users meet when setting up; empty for the others.
inline std::string causeOf(cudaError_t e) {
  switch (e) {
    case cudaErrorInsufficientDriver: {
      int driver = 0;
      int runtime = 0;
      cudaDriverGetVersion(&driver);
      cudaRuntimeGetVersion(&runtime);
      if (driver == 0) {
        return "no NVIDIA driver (libcuda.so.1 not found): install the NVIDIA driver";
      }
      return "the NVIDIA driver supports CUDA " + versionText(driver) + ", te4j's runtime needs " +
             versionText(runtime) + ": update the NVIDIA driver";
    }
    case cudaErrorStubLibrary:
      return "only the CUDA stub library was found, not the driver's libcuda.so.1: install the "
             "NVIDIA driver";
    case cudaErrorNoDevice:
      return "no CUDA device is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES (an empty or "
             "wrong value hides every GPU)";
    case cudaErrorInvalidDevice:
      return "device ordinal out of range: ordinals count the visible devices only "
             "(CUDA_VISIBLE_DEVICES renumbers them)";
    case cudaErrorInitializationError:
      return "the CUDA driver failed to initialize: check dmesg for NVRM errors and that "
             "/dev/nvidia* exist and are accessible";
    case cudaErrorSystemDriverMismatch:
      return "the driver library and the loaded kernel module differ in version: reboot, or "
             "reload the nvidia kernel module";
    case cudaErrorCompatNotSupportedOnDevice:
      return "the CUDA forward-compatibility package does not support this GPU: use the driver's "
             "own libcuda";
    case cudaErrorDevicesUnavailable:
      return "the GPU is busy or in exclusive-process / prohibited compute mode: check "
             "nvidia-smi -q -d COMPUTE";
    case cudaErrorSystemNotReady:
      return "the system is not ready for CUDA (NVSwitch systems: start nvidia-fabricmanager)";
    case cudaErrorMemoryAllocation: return "out of GPU memory: free buffers or use a smaller size";
    case cudaErrorNoKernelImageForDevice:
      return "te4j's kernels were not built for this GPU's architecture: rebuild with "
             "-DCMAKE_CUDA_ARCHITECTURES set for it";
    case cudaErrorUnsupportedPtxVersion:
      return "the driver is too old for the PTX te4j carries: update the NVIDIA driver";
    case cudaErrorPeerAccessUnsupported:
      return "these GPUs cannot map each other's memory (no NVLink or PCIe P2P path): check "
             "nvidia-smi topo -m";
    case cudaErrorTooManyPeers:
      return "too many peer mappings for this GPU: close windows you no longer use";
    case cudaErrorMapBufferObjectFailed:
    case cudaErrorInvalidResourceHandle:
      return "the handle is corrupt, or its allocation was freed or its process exited";
    case cudaErrorDeviceUninitialized:
      return "invalid device context (opening a CUDA IPC handle in the process that exported it "
             "fails; te4j uses direct pointers between ranks of one process)";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
      return "a kernel faulted; this process's CUDA context is now unusable: restart the "
             "process (compute-sanitizer finds the faulting access)";
    case cudaErrorCudartUnloading: return "CUDA is shutting down (called during process exit)";
    default: return std::string();
  }
}

/// te4j status of a CUDA error.
inline int statusOf(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return kOk;
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorNoDevice:
    case cudaErrorInitializationError:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemNotReady:
    case cudaErrorPeerAccessUnsupported:
    case cudaErrorCallRequiresNewerDriver: return kUnavailable;
    case cudaErrorInvalidDevice: return kInvalidArgument;
    case cudaErrorMemoryAllocation: return kOutOfMemory;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout: return kDeviceFault;
    default: return kCudaError;
  }
}

/// "call failed: cudaErrorX (N): text: cause and fix".
inline std::string describe(const char* call, cudaError_t e) {
  std::string m = std::string(call) + " failed: " + cudaGetErrorName(e) + " (" +
                  std::to_string(static_cast<int>(e)) + "): " + cudaGetErrorString(e);
  const std::string cause = causeOf(e);
  if (!cause.empty()) m += ": " + cause;
  return m;
}

/// For code that reports through a message out-parameter: clears the runtime's sticky last error
/// (the failure is handled here), sets *why to describe(call, e) and returns statusOf(e).
inline int whyOf(const std::string& call, cudaError_t e, std::string* why) {
  cudaGetLastError();
  *why = describe(call.c_str(), e);
  return statusOf(e);
}

}  // namespace cuda_detail
}  // namespace te4j
