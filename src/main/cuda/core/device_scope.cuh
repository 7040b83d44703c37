// device_scope.cuh — makes a device current for one call and restores the caller's device.
// JNI threads belong to the application, which may use another device; the soft NIC's own
// threads start on device 0.
#pragma once

#include <cuda_runtime.h>

namespace te4j {
namespace cuda_detail {

class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    status_ = cudaGetDevice(&previous_);
    if (status_ == cudaSuccess && previous_ != device) {
      status_ = cudaSetDevice(device);
      switched_ = status_ == cudaSuccess;
    }
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  cudaError_t status() const { return status_; }

 private:
  int previous_ = 0;
  bool switched_ = false;
  cudaError_t status_;
};

}  // namespace cuda_detail
}  // namespace te4j
