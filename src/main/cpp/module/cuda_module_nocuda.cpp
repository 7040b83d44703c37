// cuda_module_nocuda.cpp — te4j/module_api.h's device side in a build without CUDA: every call
// says so. (NVRTC compiles still work there: nvrtc_compiler.cpp needs no CUDA.)

#include <new>

#include "module/module_errors.h"
#include "te4j/module_api.h"

namespace te4j {
namespace {

const char kNoCuda[] =
    "te4j was built without CUDA (nvcc not found at build time): user kernels cannot be loaded "
    "or launched; fix: rebuild libte4j with the CUDA toolkit installed";

class HostOnlyModule final : public DeviceModule {
 public:
  HostOnlyModule() {
    init_status_ = kUnavailable;
    last_error_ = kNoCuda;
  }
  int device() const override { return -1; }
  int getFunction(const char*, void** function) override {
    if (function != nullptr) *function = nullptr;
    return fail(kUnavailable, kNoCuda);
  }
  int paramInfo(void*, int* count, int64_t*, int) override {
    if (count != nullptr) *count = -1;
    return fail(kUnavailable, kNoCuda);
  }
  int maxThreadsPerBlock(void*) override { return fail(kUnavailable, kNoCuda); }
  int maxCooperativeBlocks(void*, int, int64_t) override { return fail(kUnavailable, kNoCuda); }
  int launch(void*, void*, int, int, int, int, int, int, int64_t, int, const void*, const int64_t*,
             int) override {
    return fail(kUnavailable, kNoCuda);
  }
  int launchRepeated(void*, void*, int, int, int, int, int, int, int64_t, int, const void*,
                     const int64_t*, int, int) override {
    return fail(kUnavailable, kNoCuda);
  }
};

}  // namespace

DeviceModule* DeviceModule::load(int, const void*, int64_t) {
  return new (std::nothrow) HostOnlyModule();
}

int cudaComputeCapability(int) { return moduleFail(kUnavailable, kNoCuda); }

}  // namespace te4j
