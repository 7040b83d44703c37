// mlx5_gpu_support.cu — gpu_support.h in the CUDA build.
//
// dma-buf: cuMemGetHandleForAddressRange (driver API, fetched through cudart so libte4j never
// links libcuda) exports a GPU range as a Linux dma-buf the NIC driver imports
// (ibv_reg_dmabuf_mr): no nvidia-peermem needed, but the open GPU kernel module and a kernel
// with dma-buf support are. The range must start and end on host-page boundaries.
// UAR: the doorbell register is MMIO; cudaHostRegisterIoMemory maps it into the GPU's address
// space so device code can ring the NIC with one 64-bit store.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <unistd.h>

#include <cctype>
#include <string>

#include "rdma/mlx5/gpu_support.h"
#include "core/cuda_driver_entry.cuh"
#include "core/cuda_errors.cuh"
#include "core/device_scope.cuh"
#include "transport/device/ibgda_device.cuh"

namespace te4j {
namespace rdma {

namespace {

namespace dev = mooncake::device;

// One thread: post a zero-length WRITE (ds 2: ctrl + raddr), ring the UAR from the GPU, wait
// for the CQE. The protocol of completion.cuh (lock, ring slot, doorbell, lock-free wait).
__global__ void doorbellProbeKernel(dev::IbgdaQp* qp, uint64_t raddr, uint32_t rkey,
                                    uint64_t timeout_ns, int* out) {
  const uint64_t deadline = dev::mc_globaltimer_ns() + timeout_ns;
  if (!dev::ibgda_lock(&qp->lock, deadline)) {
    *out = dev::kMcRdmaTimeout;
    return;
  }
  int status = dev::ibgda_wait_ring_slot(qp, deadline);
  if (status == dev::kMcRdmaOk) {
    namespace mlx5 = dev::mlx5;
    mlx5::CtrlSeg* ctrl =
        (mlx5::CtrlSeg*)(qp->sq_buf + (size_t)(qp->sq_pi & qp->sq_mask) * mlx5::kSendWqeBB);
    mlx5::set_ctrl_seg(ctrl, (uint16_t)qp->sq_pi, mlx5::kOpcodeRdmaWrite, 0, qp->qpn,
                       mlx5::kCtrlCqUpdate, 2, 0, 0);
    mlx5::set_raddr_seg((mlx5::RaddrSeg*)(ctrl + 1), raddr, rkey);
    const uint64_t word =
        mlx5::ctrl_doorbell_word((uint16_t)qp->sq_pi, mlx5::kOpcodeRdmaWrite, 0, qp->qpn, 2);
    ++qp->sq_pi;
    dev::ibgda_ring_doorbell(qp, word);
  }
  const uint32_t target = qp->sq_pi;
  dev::ibgda_unlock(&qp->lock);
  if (status == dev::kMcRdmaOk) status = dev::ibgda_wait_completed(qp, target, deadline);
  *out = status;
}

}  // namespace

int gpuDoorbellProbe(int device, void* qp, uint64_t raddr, uint32_t rkey, uint64_t timeout_ns,
                     std::string* why) {
  cuda_detail::DeviceScope scope(device);
  if (scope.status() != cudaSuccess) {
    *why = cuda_detail::describe("cudaSetDevice", scope.status());
    return 1;
  }
  int* out = nullptr;
  cudaError_t e = cudaMallocHost((void**)&out, sizeof(int));
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = cuda_detail::describe("cudaMallocHost(probe status)", e);
    return 1;
  }
  *out = 1;
  cudaStream_t stream = nullptr;
  e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) {
    doorbellProbeKernel<<<1, 1, 0, stream>>>((dev::IbgdaQp*)qp, raddr, rkey, timeout_ns, out);
    e = cudaGetLastError();
    // The kernel bounds its own wait; this one only collects it.
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  int status = *out;
  cudaFreeHost(out);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = cuda_detail::describe("the doorbell probe kernel", e);
    return 1;
  }
  return status;
}

int gpuDmabufFd(int device, void* ptr, size_t bytes, uint64_t* offset, std::string* why) {
  static const auto get_handle = cuda_detail::driverEntry<PFN_cuMemGetHandleForAddressRange_v11070>(
      "cuMemGetHandleForAddressRange");
  if (get_handle == nullptr) {
    *why = "the CUDA driver lacks cuMemGetHandleForAddressRange (driver older than 515)";
    return -1;
  }
  cuda_detail::DeviceScope scope(device);
  if (scope.status() != cudaSuccess) {
    *why = cuda_detail::describe("cudaSetDevice", scope.status());
    return -1;
  }
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t start = (uintptr_t)ptr & ~(page - 1);
  const uintptr_t end = ((uintptr_t)ptr + bytes + page - 1) & ~(page - 1);
  int fd = -1;
  const CUresult r =
      get_handle(&fd, (CUdeviceptr)start, end - start, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS || fd < 0) {
    *why = "cuMemGetHandleForAddressRange(DMA_BUF_FD) failed: " + cuda_detail::driverErrorText(r) +
           " (dma-buf needs the open GPU kernel module and Linux >= 5.12)";
    return -1;
  }
  *offset = (uint64_t)((uintptr_t)ptr - start);
  return fd;
}

void* mapUarForGpu(int device, void* reg, size_t bytes, std::string* why) {
  cuda_detail::DeviceScope scope(device);
  if (scope.status() != cudaSuccess) {
    *why = cuda_detail::describe("cudaSetDevice", scope.status());
    return nullptr;
  }
  cudaError_t e = cudaHostRegister(
      reg, bytes, cudaHostRegisterIoMemory | cudaHostRegisterMapped | cudaHostRegisterPortable);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = cuda_detail::describe("cudaHostRegister(UAR, cudaHostRegisterIoMemory)", e);
    return nullptr;
  }
  void* dev = nullptr;
  e = cudaHostGetDevicePointer(&dev, reg, 0);
  if (e != cudaSuccess) {
    cudaGetLastError();
    cudaHostUnregister(reg);
    *why = cuda_detail::describe("cudaHostGetDevicePointer(UAR)", e);
    return nullptr;
  }
  return dev;
}

void unmapUarForGpu(int device, void* reg) {
  cuda_detail::DeviceScope scope(device);
  cudaHostUnregister(reg);
}

std::string gpuPciBusId(int device, std::string* why) {
  char id[32] = {};
  const cudaError_t e = cudaDeviceGetPCIBusId(id, (int)sizeof(id), device);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = cuda_detail::describe("cudaDeviceGetPCIBusId", e);
    return "";
  }
  // CUDA writes "0000:3B:00.0"; sysfs names functions in lower case.
  std::string text(id);
  for (char& c : text) c = (char)std::tolower((unsigned char)c);
  return text;
}

}  // namespace rdma
}  // namespace te4j
