// device_scope.cuh — makes a device current for one call and restores the caller's device: the
// one device guard of libte4j. JNI threads belong to the application, which may use another
// device; the soft NIC's own threads start on device 0.
#pragma once

#include <cuda_runtime.h>

namespace te4j {
namespace cuda_detail {

class DeviceScope {
 public:
  /// What enter does when the device is already the current one.
  enum Mode {
    kSwitch,  // nothing: the cheap path of calls that use the runtime API only
    kBind,    // cudaSetDevice all the same, which binds the device's primary context to this
              // thread: driver-API calls (cuMem*, cuPointer*) made next need a current context
  };

  /// Makes `device` current now; status() says whether that worked.
  explicit DeviceScope(int device, Mode mode = kSwitch) { enter(device, mode); }
  /// Makes no device current yet (enter does, once the caller has checked what it needs first).
  DeviceScope() = default;
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

  /// Makes `device` current until the scope ends (then the device current before the first
  /// switch comes back); returns status().
  cudaError_t enter(int device, Mode mode = kSwitch) {
    int current = 0;
    status_ = cudaGetDevice(&current);
    if (status_ == cudaSuccess && (current != device || mode == kBind)) {
      status_ = cudaSetDevice(device);
      if (status_ == cudaSuccess && current != device && !switched_) {
        previous_ = current;
        switched_ = true;
      }
    }
    return status_;
  }
  cudaError_t status() const { return status_; }

 private:
  int previous_ = 0;
  bool switched_ = false;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace cuda_detail
}  // namespace te4j
