// memory_port.h — how the software NIC reaches the platform's memory.
//
// Host platform: "device" memory is this process's memory (shared segments), so the NIC reads
// and writes it directly and applies atomics with C++/GCC atomics (coherent with the executor
// threads and with other processes mapping the same segment).
// CUDA platform: registered memory is GPU memory; the NIC copies through pinned staging on its
// own stream, and applies remote atomics with a small kernel on that same stream, so an atomic
// lands after every earlier write of the connection (see rdma/memory/cuda_memory_port.cu).
// Control memory (send rings, CQs, doorbell records, UAR words) must be visible to both the
// device code that posts and the NIC thread: host memory (CUDA: pinned and mapped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace te4j {
namespace rdma {

class MemoryPort {
 public:
  virtual ~MemoryPort() = default;
  /// Whether registered addresses can be dereferenced by this process (host platform).
  virtual bool direct() const = 0;
  /// Zeroed control memory: *host for the NIC thread, *dev for device code (may be equal).
  virtual int allocControl(size_t bytes, void** host, void** dev, std::string* err) = 0;
  virtual void freeControl(void* host) = 0;
  /// Zeroed memory for device tables (QP contexts, raddrs, rkeys) and copies in and out.
  virtual int allocTable(size_t bytes, void** dev, std::string* err) = 0;
  virtual void freeTable(void* dev) = 0;
  virtual int toTable(void* dev, const void* src, size_t bytes, std::string* err) = 0;
  virtual int fromTable(void* dst, const void* dev, size_t bytes, std::string* err) = 0;
  /// Reads registered memory (already key- and bounds-checked) into host memory.
  virtual int read(void* dst, uint64_t src, size_t bytes, std::string* err) = 0;
  /// Writes registered memory; visible before any later write/atomic of this port.
  virtual int write(uint64_t dst, const void* src, size_t bytes, std::string* err) = 0;
  /// Atomic masked fetch-and-add on a 4-byte aligned registered word; *old gets the value before.
  virtual int fetchAddMasked32(uint64_t addr, uint32_t add, uint32_t field_boundary, uint32_t* old,
                               std::string* err) = 0;
};

std::unique_ptr<MemoryPort> makeHostMemoryPort();
/// nullptr (with *err) when this build has no CUDA or the device is unusable.
std::unique_ptr<MemoryPort> makeCudaMemoryPort(int device, std::string* err);

/// a + b where a set bit i of field_boundary drops the carry out of bit i (the masked-FA rule;
/// field_boundary 0 is the plain 32-bit add modulo 2^32).
inline uint32_t maskedAdd32(uint32_t a, uint32_t b, uint32_t field_boundary) {
  if (field_boundary == 0) return a + b;
  uint32_t result = 0;
  uint32_t carry = 0;
  for (int i = 0; i < 32; ++i) {
    const uint32_t s = ((a >> i) & 1u) + ((b >> i) & 1u) + carry;
    result |= (s & 1u) << i;
    carry = (field_boundary >> i) & 1u ? 0u : s >> 1;
  }
  return result;
}

}  // namespace rdma
}  // namespace te4j
