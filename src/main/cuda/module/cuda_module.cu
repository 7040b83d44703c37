// cuda_module.cu — te4j/module_api.h on CUDA: users' modules loaded into the device's primary
// context and their kernels launched on te4j's (or the user's) streams. Driver functions come
// through cudart's entry-point lookup (cuda_driver_entry.cuh): libte4j links no libcuda.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <new>
#include <string>
#include <vector>

#include "core/cuda_driver_entry.cuh"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"
#include "module/module_errors.h"
#include "te4j/module_api.h"

namespace te4j {
namespace cuda {
namespace {

using cuda_detail::DeviceScope;
using cuda_detail::driverEntry;
using cuda_detail::driverErrorText;

// The driver functions of this file, looked up once. cuFuncGetParamInfo appeared in 12.4, so it
// is asked for with that ABI version; without it, argument checks fall back to Java's own.
struct ModuleDriver {
  PFN_cuModuleLoadDataEx_v2010 load =
      driverEntry<PFN_cuModuleLoadDataEx_v2010>("cuModuleLoadDataEx");
  PFN_cuModuleUnload_v2000 unload = driverEntry<PFN_cuModuleUnload_v2000>("cuModuleUnload");
  PFN_cuModuleGetFunction_v2000 get_function =
      driverEntry<PFN_cuModuleGetFunction_v2000>("cuModuleGetFunction");
  PFN_cuFuncGetAttribute_v2020 get_attribute =
      driverEntry<PFN_cuFuncGetAttribute_v2020>("cuFuncGetAttribute");
  PFN_cuFuncSetAttribute_v9000 set_attribute =
      driverEntry<PFN_cuFuncSetAttribute_v9000>("cuFuncSetAttribute");
  PFN_cuLaunchKernelEx_v11060 launch = driverEntry<PFN_cuLaunchKernelEx_v11060>("cuLaunchKernelEx");
  PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050 occupancy =
      driverEntry<PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050>(
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  PFN_cuFuncGetParamInfo_v12040 param_info = paramInfoEntry();

  static PFN_cuFuncGetParamInfo_v12040 paramInfoEntry() {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuFuncGetParamInfo", &fn, 12040, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<PFN_cuFuncGetParamInfo_v12040>(fn);
  }

  bool complete() const {
    return load != nullptr && unload != nullptr && get_function != nullptr &&
           get_attribute != nullptr && set_attribute != nullptr && launch != nullptr &&
           occupancy != nullptr;
  }

  static const ModuleDriver& instance() {
    static const ModuleDriver d;
    return d;
  }
};

// Errors after which the context cannot run anything again (the process must restart).
bool isSticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: return true;
    default: return false;
  }
}

int statusOf(CUresult r) {
  if (isSticky(r)) return kDeviceFault;
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY: return kOutOfMemory;
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return kInvalidArgument;
    default: return kCudaError;
  }
}

std::string explain(const std::string& call, CUresult r) {
  std::string m = call + " failed: " + driverErrorText(r);
  if (isSticky(r)) {
    m += ": a kernel on this device faulted earlier (sticky error): this process's CUDA context "
         "is unusable, restart the process (compute-sanitizer finds the faulting access)";
  } else if (r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_SOURCE) {
    m += ": the image holds no code for this GPU's architecture; compile for it (NVRTC: "
         "KernelCompiler's default architecture, nvcc: -arch=sm_XY) or ship PTX";
  } else if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
    m += ": the PTX is newer than this driver: update the NVIDIA driver or compile with an older "
         "toolkit";
  } else if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) {
    m += ": a cooperative grid must fit on the GPU at once (Kernel.maxCooperativeBlocks)";
  } else if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    m += ": too many threads per block for this kernel's registers, or too much shared memory";
  }
  return m;
}

int checkDriver() {
  if (ModuleDriver::instance().complete()) return kOk;
  return moduleFail(kUnavailable,
                    "the CUDA driver lacks module functions (cuModuleLoadDataEx, cuLaunchKernelEx) "
                    "or is absent: install or update the NVIDIA driver");
}

class CudaModule final : public DeviceModule {
 public:
  CudaModule(int device, const void* image, int64_t bytes) : device_(device) {
    init_status_ = init(image, bytes);
  }

  ~CudaModule() override {
    if (module_ != nullptr) {
      DeviceScope scope(device_);
      // Unloading waits for nothing: a kernel still running keeps its code alive in the
      // driver until it ends (the Java layer drains the streams that launched it first).
      ModuleDriver::instance().unload(module_);
    }
    cudaGetLastError();
  }

  int device() const override { return device_; }

  int getFunction(const char* name, void** function) override {
    if (function == nullptr || name == nullptr) return fail(kInvalidArgument, "getFunction: null");
    *function = nullptr;
    if (init_status_ != kOk) return fail(init_status_, last_error_);
    DeviceScope scope(device_);
    CUfunction f = nullptr;
    const CUresult r = ModuleDriver::instance().get_function(&f, module_, name);
    if (r != CUDA_SUCCESS) {
      return fail(statusOf(r), explain(std::string("cuModuleGetFunction(\"") + name + "\")", r) +
                                   (r == CUDA_ERROR_NOT_FOUND
                                        ? " (no such kernel: C++ kernels need extern \"C\" or "
                                          "their lowered name, e.g. from a name expression)"
                                        : ""));
    }
    *function = f;
    return ok();
  }

  int paramInfo(void* function, int* count, int64_t* sizes, int capacity) override {
    if (function == nullptr || count == nullptr) return fail(kInvalidArgument, "paramInfo: null");
    *count = -1;
    const auto fn = ModuleDriver::instance().param_info;
    if (fn == nullptr) return ok();
    DeviceScope scope(device_);
    for (int i = 0;; ++i) {
      size_t offset = 0;
      size_t size = 0;
      const CUresult r =
          fn(static_cast<CUfunction>(function), static_cast<size_t>(i), &offset, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) {  // index past the last parameter
        *count = i;
        return ok();
      }
      if (r != CUDA_SUCCESS) {
        *count = -1;
        return ok();  // the driver cannot tell (e.g. an old image): no check, not an error
      }
      if (sizes != nullptr && i < capacity) sizes[i] = static_cast<int64_t>(size);
      if (i > 4096) return fail(kCudaError, "paramInfo: more than 4096 parameters");
    }
  }

  int maxThreadsPerBlock(void* function) override {
    if (function == nullptr) return fail(kInvalidArgument, "maxThreadsPerBlock: null");
    DeviceScope scope(device_);
    int v = 0;
    const CUresult r = ModuleDriver::instance().get_attribute(
        &v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, static_cast<CUfunction>(function));
    if (r != CUDA_SUCCESS) return fail(statusOf(r), explain("cuFuncGetAttribute", r));
    return v;
  }

  int maxCooperativeBlocks(void* function, int threads, int64_t shared_bytes) override {
    if (function == nullptr || threads <= 0 || shared_bytes < 0) {
      return fail(kInvalidArgument, "maxCooperativeBlocks: null function or bad shape");
    }
    DeviceScope scope(device_);
    int per_sm = 0;
    const CUresult r = ModuleDriver::instance().occupancy(
        &per_sm, static_cast<CUfunction>(function), threads, static_cast<size_t>(shared_bytes));
    if (r != CUDA_SUCCESS) {
      return fail(statusOf(r), explain("cuOccupancyMaxActiveBlocksPerMultiprocessor", r));
    }
    int sms = 0;
    const cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_);
    if (e != cudaSuccess) {
      return fail(cuda_detail::statusOf(e), cuda_detail::describe("cudaDeviceGetAttribute", e));
    }
    return per_sm * sms;
  }

  int launch(void* function, void* stream, int grid_x, int grid_y, int grid_z, int block_x,
             int block_y, int block_z, int64_t shared_bytes, int cooperative, const void* args,
             const int64_t* offsets, int count) override {
    return launchRepeated(function, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z,
                          shared_bytes, cooperative, args, offsets, count, 1);
  }

  int launchRepeated(void* function, void* stream, int grid_x, int grid_y, int grid_z, int block_x,
                     int block_y, int block_z, int64_t shared_bytes, int cooperative,
                     const void* args, const int64_t* offsets, int count, int repeats) override {
    if (repeats < 1) return fail(kInvalidArgument, "launch: repeats < 1");
    if (function == nullptr || stream == nullptr || count < 0 ||
        (count > 0 && (args == nullptr || offsets == nullptr))) {
      return fail(kInvalidArgument, "launch: null function, stream or arguments");
    }
    if (grid_x <= 0 || grid_y <= 0 || grid_z <= 0 || block_x <= 0 || block_y <= 0 || block_z <= 0 ||
        shared_bytes < 0) {
      return fail(kInvalidArgument, "launch: grid and block dimensions must be > 0");
    }
    // No DeviceScope here: cuLaunchKernelEx runs a CUfunction in its module's context (the
    // stream's, whose device Java checked), whatever is current on the calling thread, and a
    // cudaGetDevice per launch costs more than the rest of this function.
    const ModuleDriver& d = ModuleDriver::instance();
    const auto f = static_cast<CUfunction>(function);
    if (shared_bytes > 48 * 1024) {
      DeviceScope scope(device_);
      if (scope.status() != cudaSuccess) {
        return fail(cuda_detail::statusOf(scope.status()),
                    cuda_detail::describe("launch: cudaSetDevice", scope.status()));
      }
      // Above 48 KiB a kernel must opt in to its dynamic shared memory.
      const CUresult r = d.set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(shared_bytes));
      if (r != CUDA_SUCCESS) {
        return fail(statusOf(r), explain("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES=" +
                                             std::to_string(shared_bytes) + ")",
                                         r));
      }
    }
    // Kernel parameters fit in 32 KiB, so most lists are short: those stay on the stack.
    constexpr int kStackParams = 64;
    void* stack_params[kStackParams];
    std::vector<void*> heap_params;
    void** params = stack_params;
    if (count > kStackParams) {
      try {
        heap_params.resize(static_cast<size_t>(count));
      } catch (const std::bad_alloc&) {
        return fail(kOutOfMemory, "launch: out of host memory for the parameter list");
      }
      params = heap_params.data();
    }
    for (int i = 0; i < count; ++i) {
      params[i] = const_cast<char*>(static_cast<const char*>(args) + offsets[i]);
    }
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    CUlaunchConfig config{};
    config.gridDimX = static_cast<unsigned>(grid_x);
    config.gridDimY = static_cast<unsigned>(grid_y);
    config.gridDimZ = static_cast<unsigned>(grid_z);
    config.blockDimX = static_cast<unsigned>(block_x);
    config.blockDimY = static_cast<unsigned>(block_y);
    config.blockDimZ = static_cast<unsigned>(block_z);
    config.sharedMemBytes = static_cast<unsigned>(shared_bytes);
    config.hStream = static_cast<CUstream>(stream);
    config.attrs = cooperative != 0 ? &attr : nullptr;
    config.numAttrs = cooperative != 0 ? 1 : 0;
    for (int i = 0; i < repeats; ++i) {
      const CUresult r = d.launch(&config, f, count > 0 ? params : nullptr, nullptr);
      if (r != CUDA_SUCCESS) {
        return fail(statusOf(r), explain("cuLaunchKernelEx", r) +
                                     (i > 0 ? " (after " + std::to_string(i) + " launches)" : ""));
      }
    }
    return ok();
  }

 private:
  int init(const void* image, int64_t bytes) {
    if (image == nullptr || bytes <= 0) return fail(kInvalidArgument, "load: empty image");
    if (checkDriver() != kOk) return fail(kUnavailable, moduleLastError());
    DeviceScope scope(device_);
    if (scope.status() != cudaSuccess) {
      return fail(cuda_detail::statusOf(scope.status()),
                  cuda_detail::describe("load: cudaSetDevice", scope.status()));
    }
    // The runtime creates the primary context lazily; the driver calls below need it current.
    const cudaError_t e = cudaFree(nullptr);
    if (e != cudaSuccess) {
      return fail(cuda_detail::statusOf(e), cuda_detail::describe("load: cudaFree(0)", e));
    }
    char error_log[8192] = {0};
    char info_log[4096] = {0};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {error_log, reinterpret_cast<void*>(sizeof(error_log) - 1), info_log,
                      reinterpret_cast<void*>(sizeof(info_log) - 1)};
    const CUresult r = ModuleDriver::instance().load(&module_, image, 4, options, values);
    if (r != CUDA_SUCCESS) {
      module_ = nullptr;
      std::string m = explain("cuModuleLoadDataEx (" + std::to_string(bytes) + " bytes)", r);
      if (error_log[0] != '\0') m += "\nJIT log:\n" + std::string(error_log);
      return fail(statusOf(r), m);
    }
    return ok();
  }

  int device_;
  CUmodule module_ = nullptr;
};

}  // namespace
}  // namespace cuda

DeviceModule* DeviceModule::load(int device, const void* image, int64_t bytes) {
  return new (std::nothrow) cuda::CudaModule(device, image, bytes);
}

int cudaComputeCapability(int device) {
  int major = 0;
  int minor = 0;
  cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (e == cudaSuccess) {
    e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  }
  if (e != cudaSuccess) {
    const std::string m = cuda_detail::describe("cudaDeviceGetAttribute(compute capability)", e);
    cudaGetLastError();
    return moduleFail(cuda_detail::statusOf(e), m);
  }
  return major * 10 + minor;
}

}  // namespace te4j
