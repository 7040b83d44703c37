// cuda_runtime_api.cu — the CUDA side of api.h's free functions (see cuda_bridge.h): device
// count, peer access, blocking copies and fills, and the "cuda.*" availability lines.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <string>

#include "core/cuda_bridge.h"
#include "core/cuda_driver_entry.cuh"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"

namespace te4j {
namespace cuda_bridge {
namespace {

using cuda_detail::describe;
using cuda_detail::statusOf;

int failWith(const char* call, cudaError_t e, std::string* error) {
  cudaGetLastError();  // a failed call may leave a non-sticky last error behind
  *error = describe(call, e);
  return statusOf(e);
}

int checkDevice(int device, std::string* error) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return failWith("cudaGetDeviceCount", e, error);
  if (device < 0 || device >= n) {
    *error = "device " + std::to_string(device) + " is outside 0.." + std::to_string(n - 1) + " (" +
             std::to_string(n) + " visible CUDA devices)";
    return kInvalidArgument;
  }
  return kOk;
}

// Whether memory shared through fabric handles can really be allocated on `device`. The
// attribute alone is not enough: without an IMEX channel the allocation fails with 800.
// TODO(fabric): allocate through cuMemCreate(FABRIC) + cuMemMap when this says "usable" (needs a
// host with IMEX channels to test); until then te4j always shares memory with CUDA IPC handles.
std::string fabricStatus(int device) {
  const auto device_get = cuda_detail::driverEntry<PFN_cuDeviceGet_v2000>("cuDeviceGet");
  const auto attribute =
      cuda_detail::driverEntry<PFN_cuDeviceGetAttribute_v2000>("cuDeviceGetAttribute");
  const auto granularity = cuda_detail::driverEntry<PFN_cuMemGetAllocationGranularity_v10020>(
      "cuMemGetAllocationGranularity");
  const auto create = cuda_detail::driverEntry<PFN_cuMemCreate_v10020>("cuMemCreate");
  const auto release = cuda_detail::driverEntry<PFN_cuMemRelease_v10020>("cuMemRelease");
  if (!device_get || !attribute || !granularity || !create || !release) {
    return "unusable: the driver lacks the virtual memory management API";
  }
  CUdevice dev = 0;
  int supported = 0;
  CUresult r = device_get(&dev, device);
  if (r == CUDA_SUCCESS) {
    r = attribute(&supported, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, dev);
  }
  if (r != CUDA_SUCCESS) {
    return "unusable: querying the device failed: " + cuda_detail::driverErrorText(r);
  }
  if (supported == 0) return "unsupported: the device has no fabric handle support";
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  size_t bytes = 0;
  r = granularity(&bytes, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS) {
    return "unusable: cuMemGetAllocationGranularity(FABRIC) failed: " +
           cuda_detail::driverErrorText(r);
  }
  CUmemGenericAllocationHandle handle = 0;
  r = create(&handle, bytes, &prop, 0);
  if (r != CUDA_SUCCESS) {
    std::string why = "unusable: cuMemCreate(CU_MEM_HANDLE_TYPE_FABRIC) failed: " +
                      cuda_detail::driverErrorText(r);
    if (r == CUDA_ERROR_NOT_PERMITTED) {
      why += " (no IMEX channel: /dev/nvidia-caps-imex-channels is missing or not accessible)";
    }
    return why + "; te4j uses CUDA IPC handles";
  }
  release(handle);
  return "usable (te4j still uses CUDA IPC handles)";
}

}  // namespace

bool built() { return true; }

int deviceCount(std::string* error) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorNoDevice) {
    cudaGetLastError();
    return 0;  // a working driver without GPUs: zero devices, not an error
  }
  if (e != cudaSuccess) return failWith("cudaGetDeviceCount", e, error);
  return n;
}

int currentDevice(std::string* error) {
  int device = 0;
  const cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return failWith("cudaGetDevice", e, error);
  return device;
}

int canAccessPeer(int device, int peer_device, std::string* error) {
  if (int st = checkDevice(device, error)) return st;
  if (int st = checkDevice(peer_device, error)) return st;
  if (device == peer_device) return 1;
  int can = 0;
  const cudaError_t e = cudaDeviceCanAccessPeer(&can, device, peer_device);
  if (e != cudaSuccess) return failWith("cudaDeviceCanAccessPeer", e, error);
  return can != 0 ? 1 : 0;
}

int copy(int device, void* dst, const void* src, std::size_t bytes, std::string* error) {
  if (int st = checkDevice(device, error)) return st;
  cuda_detail::DeviceScope scope(device, cuda_detail::DeviceScope::kBind);
  cudaError_t e = scope.status();
  if (e != cudaSuccess) return failWith("cudaSetDevice", e, error);
  e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  if (e != cudaSuccess) return failWith("cudaMemcpy", e, error);
  // Device-to-device cudaMemcpy may return before the copy is done; the API promises blocking.
  e = cudaStreamSynchronize(cudaStreamLegacy);
  if (e != cudaSuccess) return failWith("cudaStreamSynchronize after cudaMemcpy", e, error);
  return kOk;
}

int fill(int device, void* dst, int byte_value, std::size_t bytes, std::string* error) {
  if (int st = checkDevice(device, error)) return st;
  cuda_detail::DeviceScope scope(device, cuda_detail::DeviceScope::kBind);
  cudaError_t e = scope.status();
  if (e != cudaSuccess) return failWith("cudaSetDevice", e, error);
  e = cudaMemset(dst, byte_value, bytes);
  if (e != cudaSuccess) return failWith("cudaMemset", e, error);
  // cudaMemset of device memory may return before it is done; the API promises blocking.
  e = cudaStreamSynchronize(cudaStreamLegacy);
  if (e != cudaSuccess) return failWith("cudaStreamSynchronize after cudaMemset", e, error);
  return kOk;
}

int pointerKind(const void* ptr, int* device, std::string* error) {
  *device = -1;
  // A process that has not loaded the CUDA driver holds no CUDA memory. Asking anyway would load
  // and initialise the driver (device files, its threads) in a host-platform process that never
  // used CUDA, and keep them for the process's life.
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    dlclose(driver);
  } else {
    return kMemoryPageableHost;
  }
  // No device: no CUDA memory can exist. Counting devices also initialises the driver, which
  // cuPointerGetAttributes needs, without creating a context.
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return kMemoryPageableHost;
  }
  // The driver's query, not cudaPointerGetAttributes: the runtime would create the primary
  // context of the current device (GPU memory, and a context in a host-platform process that
  // never used CUDA), and it would not see memory of contexts other libraries made.
  static const auto attributes =
      cuda_detail::driverEntry<PFN_cuPointerGetAttributes_v7000>("cuPointerGetAttributes");
  if (attributes == nullptr) {
    *error = "the CUDA driver lacks cuPointerGetAttributes: the memory's kind cannot be told";
    return kUnavailable;
  }
  unsigned int type = 0;
  int managed = 0;  // a bool that the driver writes into the low byte of a zeroed int
  int ordinal = -1;
  CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* data[] = {&type, &managed, &ordinal};
  const CUresult r = attributes(3, which, data, reinterpret_cast<CUdeviceptr>(ptr));
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_CONTEXT) {
    return kMemoryPageableHost;  // no context of this process knows the address
  }
  if (r != CUDA_SUCCESS) {
    *error = "cuPointerGetAttributes failed: " + cuda_detail::driverErrorText(r);
    return kCudaError;
  }
  if ((managed & 0xff) != 0) {
    *device = ordinal;
    return kMemoryManaged;
  }
  if (type == CU_MEMORYTYPE_DEVICE) {
    *device = ordinal;
    return kMemoryDevice;
  }
  return type == CU_MEMORYTYPE_HOST ? kMemoryPinnedHost : kMemoryPageableHost;
}

void appendAvailability(std::string* report) {
  std::string& out = *report;
  int runtime = 0;
  int driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  out += "cuda.runtime.version=" + std::to_string(runtime) + "\n";
  out += "cuda.driver.version=" + std::to_string(driver) + "\n";
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess && e != cudaErrorNoDevice) {
    cudaGetLastError();
    out += "cuda.devices=0\ncuda.unavailable=" + describe("cudaGetDeviceCount", e) + "\n";
    out += "cuda.fabric=unusable: CUDA is unavailable\n";
    return;
  }
  if (e == cudaErrorNoDevice) {
    cudaGetLastError();
    n = 0;
  }
  out += "cuda.devices=" + std::to_string(n) + "\n";
  if (n == 0) {
    out += "cuda.unavailable=" + cuda_detail::causeOf(cudaErrorNoDevice) + "\n";
    out += "cuda.fabric=unusable: no CUDA device\n";
    return;
  }
  for (int i = 0; i < n; ++i) {
    char pci[32] = {0};
    if (cudaDeviceGetPCIBusId(pci, sizeof(pci), i) != cudaSuccess) cudaGetLastError();
    int major = 0;
    int minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, i);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, i);
    out += "cuda.device." + std::to_string(i) + ".pci=" + pci + "\n";
    out += "cuda.device." + std::to_string(i) + ".cc=" + std::to_string(major) + "." +
           std::to_string(minor) + "\n";
  }
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, i, j) != cudaSuccess) {
        cudaGetLastError();
        can = 0;
      }
      out += "cuda.peer." + std::to_string(i) + "." + std::to_string(j) + "=" +
             (can != 0 ? "1" : "0") + "\n";
    }
  }
  cuda_detail::DeviceScope scope(0, cuda_detail::DeviceScope::kBind);
  if (scope.status() != cudaSuccess) {
    cudaGetLastError();
    out += "cuda.fabric=unusable: cudaSetDevice(0) failed\n";
  } else {
    out += "cuda.fabric=" + fabricStatus(0) + "\n";
  }
  out += "cuda.handles=ipc\n";
}

}  // namespace cuda_bridge
}  // namespace te4j
