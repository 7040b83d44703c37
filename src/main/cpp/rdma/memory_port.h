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

  // Pipelined staging, for ports that are not direct: the NIC moves a request's bytes through
  // pinned arenas with copies queued on the port's streams, so that the copy of one chunk
  // overlaps the socket I/O of the next (and of the next request) instead of one synchronous
  // copy per request. A ticket names everything queued on one arena until it was taken;
  // waiting for a ticket waits for all of that. Direct ports have no arenas (nullptr, 0).

  /// Responder side: received WRITE payloads are read into this arena, then placed.
  virtual uint8_t* placementArena() { return nullptr; }
  virtual size_t placementArenaBytes() const { return 0; }
  /// Queues the copy of arena[offset, offset + bytes) to registered memory at dst. It lands
  /// after every earlier write, placement or atomic of the port, and before later ones.
  virtual int placeAsync(uint64_t dst, size_t offset, size_t bytes, std::string* err) {
    (void)dst, (void)offset, (void)bytes;
    *err = "this memory port places directly (no staging)";
    return -1;
  }
  /// A ticket for every placement queued so far; 0 with *err on failure.
  virtual uint64_t placementTicket(std::string* err) {
    (void)err;
    return 1;
  }
  /// Waits (bounded) until the placements of `ticket` are visible: then their arena bytes
  /// may be reused.
  virtual int awaitPlacement(uint64_t ticket, std::string* err) {
    (void)ticket, (void)err;
    return 0;
  }
  /// Requester side: WRITE sources are gathered into this arena, then sent from it.
  virtual uint8_t* gatherArena() { return nullptr; }
  virtual size_t gatherArenaBytes() const { return 0; }
  /// Queues the copy of registered memory [src, src + bytes) into arena[offset, offset + bytes).
  virtual int gatherAsync(size_t offset, uint64_t src, size_t bytes, std::string* err) {
    (void)offset, (void)src, (void)bytes;
    *err = "this memory port reads directly (no staging)";
    return -1;
  }
  /// A ticket for every gather queued so far; 0 with *err on failure.
  virtual uint64_t gatherTicket(std::string* err) {
    (void)err;
    return 1;
  }
  /// Waits (bounded) until the gathers of `ticket` are in the arena.
  virtual int awaitGather(uint64_t ticket, std::string* err) {
    (void)ticket, (void)err;
    return 0;
  }
};

std::unique_ptr<MemoryPort> makeHostMemoryPort();
/// Host memory through the staging arenas, as the CUDA port stages GPU memory: tests the NIC's
/// staged path without a GPU (TE4J_SOFTNIC_MEMORY=staged; staged_host_memory_port.cpp).
std::unique_ptr<MemoryPort> makeStagedHostMemoryPort();
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
