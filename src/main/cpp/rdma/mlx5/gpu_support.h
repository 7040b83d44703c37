// gpu_support.h — the two CUDA services the mlx5 backend needs, without CUDA or rdma-core
// types: a dma-buf of GPU memory (to register it with the NIC) and a GPU mapping of the UAR
// (so kernels ring the doorbell themselves). CUDA build: mlx5_gpu_support.cu;
// otherwise gpu_support_stub.cpp reports why neither exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace te4j {
namespace rdma {

/// A dma-buf fd of device `device`'s memory covering [ptr, ptr + bytes), rounded out to host
/// pages (cuMemGetHandleForAddressRange); *offset receives ptr's offset inside it. The caller
/// closes the fd. -1 with *why (no CUDA build, driver or kernel without dma-buf, ...).
int gpuDmabufFd(int device, void* ptr, size_t bytes, uint64_t* offset, std::string* why);

/// Maps `bytes` of MMIO at host address `reg` (a UAR register) into device `device`'s address
/// space (cudaHostRegister with cudaHostRegisterIoMemory); the device address, or nullptr with
/// *why.
void* mapUarForGpu(int device, void* reg, size_t bytes, std::string* why);
/// Undoes mapUarForGpu.
void unmapUarForGpu(int device, void* reg);

/// Posts one zero-length RDMA WRITE on the QP whose device context is `qp` (device memory, an
/// IbgdaQp of a connected loopback QP) from a one-thread kernel that rings the doorbell itself,
/// and waits in the kernel up to timeout_ns for its completion. Returns the device status
/// (kMcRdmaOk: the GPU's UAR write reached the NIC and the WQE completed; kMcRdmaTimeout: no
/// completion), or 1 with *why when the kernel could not run. A zero-length WRITE (ctrl and
/// raddr segments, no data segment) moves no byte of the window.
int gpuDoorbellProbe(int device, void* qp, uint64_t raddr, uint32_t rkey, uint64_t timeout_ns,
                     std::string* why);

/// Device `device`'s PCI function as sysfs names it ("0000:3b:00.0", lower case), for choosing
/// the nearest NIC; "" with *why when unknown (no CUDA build, no such device).
std::string gpuPciBusId(int device, std::string* why);

}  // namespace rdma
}  // namespace te4j
