// te4j/batch_api.h — batches of READ/WRITE transfers between local memory and other processes'
// segments, started from the host, with a state per request. The JavaCPP peer
// NativeTransferBatch maps it.
//
// Same rules as api.h: no exception leaves a method, statuses are te4j::Status, no optional
// header is included. Addresses are the platform's (CUDA: device virtual addresses, including
// peers' memory mapped through CUDA IPC; host: this process's mappings) or, for a request routed
// over RDMA, the owner's registered address with its key. The Java layer has checked every
// request against the registered ranges; the native side re-checks only what is cheap (null,
// zero length, keys, rank, capacity).
//
// One batch carries every route: each request's descriptor names its route (a mapped segment the
// platform copies, an owner reached over the attached RdmaTransport, or an owner already known
// lost), and the batch keeps one state word per request whatever its route.
#pragma once

#include <cstdint>

#include "te4j/api.h"

namespace te4j {

class RdmaTransport;  // te4j/rdma_api.h

/// What a request does: READ copies remote -> local, WRITE local -> remote.
enum BatchOpcode : int32_t { kBatchRead = 0, kBatchWrite = 1 };

/// A request's state word. A failed request holds its negative te4j::Status instead.
enum RequestState : int32_t {
  kRequestPending = 0,
  kRequestCompleted = 1,
  kRequestTimeout = 2,  // never started: the batch was cancelled (its deadline passed) first
};

/// A descriptor's route; a route >= 0 is the owner's rank on the attached RdmaTransport (host
/// platform): one RDMA WRITE or READ work request per request (split at 1 GiB).
enum BatchRoute : int32_t {
  kRouteMapped = -1,    // the segment is mapped here: the platform copies it
  kRoutePeerLost = -2,  // the owner is known lost: final at submit as kPeerLost, never run
};

/// One request, as the batch reads it in place from descriptors(). 40 bytes, no padding: the
/// Java layer writes this layout directly (io.github.te4j.BatchRequests).
struct BatchDescriptor {
  int32_t opcode;   // BatchOpcode
  int32_t route;    // BatchRoute, or an RDMA rank
  uint64_t local;   // local address
  uint64_t remote;  // mapped address, or the owner's address over RDMA
  uint64_t length;  // 1 .. 2^40
  uint32_t lkey;    // RDMA routes: the local registration's key
  uint32_t rkey;    // RDMA routes: the owner's key of the remote range
};
static_assert(sizeof(BatchDescriptor) == 40, "the Java layer writes 40-byte descriptors");

/// One batch of at most capacity() requests, submitted in one or more parts. Requests of a
/// batch may run in any order and at once; each reaches exactly one final state.
class TransferBatch : public NativeObject {
 public:
  /// kPlatformHost: mapped requests run on a process-wide worker thread, parts of 1 MiB or more
  /// split with its helper threads (knob batchthreads), RDMA requests on a posting thread of the
  /// batch; kPlatformCuda: one copy kernel per part on the batch's own stream of `device` (no
  /// RDMA route). capacity is 1 .. kMaxBatchCapacity.
  static TransferBatch* create(int platform, int device, int capacity);
  static constexpr int kMaxBatchCapacity = 1 << 20;

  int status() const { return init_status_; }
  virtual int capacity() const = 0;

  /// The batch's capacity() descriptor slots, in host memory, indexed by request: a caller
  /// writes the slots of a part and submits them, and the batch reads them where they are (they
  /// keep the requests for messages). Slots of submitted requests must not be written again.
  /// nullptr when status() is not kOk.
  virtual BatchDescriptor* descriptors() = 0;
  /// Lets requests route over `transport` (host platform, connected): before the first part
  /// that names a rank; once per batch.
  virtual int attachRdma(RdmaTransport* transport) = 0;
  /// Submits requests [first, first + count) (first: the number submitted so far), read from
  /// their descriptor slots. RDMA requests not posted within timeout_ns end as kRequestTimeout
  /// (mapped ones run until cancel()).
  virtual int submit(int first, int count, int64_t timeout_ns) = 0;
  /// Publishes one notification slot over the attached RdmaTransport (docs/MLX5.md,
  /// "Notifications"): requests [first, first + 2), read from their slots, both routed to one
  /// rank and posted on one queue pair in one run, in this order:
  ///   first      its RDMA WRITE (the slot's length, CRC, flags and payload);
  ///   first + 1  an 8-byte compare-and-swap of the sequence word at its remote address (8-byte
  ///              aligned) from `expected` to `sequence`, fenced, the word's old value landing
  ///              at its local address (8-byte aligned); its slot's opcode is kBatchWrite and
  ///              its length 8.
  /// An RC responder makes an atomic's update visible only after the bytes of the WRITEs before
  /// it on the queue pair (the InfiniBand ordering rule for RDMA WRITE), so a receiver that sees
  /// the new sequence sees the whole slot. Once both completed, the caller compares the old
  /// value with `expected`: another value means the swap did not happen. The software NIC
  /// executes no 8-byte compare-and-swap: there the second request fails with a local QP
  /// operation error.
  virtual int submitPublication(int first, uint64_t expected, uint64_t sequence,
                                int64_t timeout_ns) = 0;
  /// The same, mapped requests described by four host arrays of `count` entries (opcode, local
  /// address, remote address, length), written into the slots first.
  virtual int submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
                     const uint64_t* remote, const uint64_t* lengths) = 0;
  /// Copies the states of requests [first, first + count) into out.
  virtual int states(int first, int count, int32_t* out) = 0;
  /// Copies the completion words of requests [first, first + count) into out: an RDMA
  /// request's error CQE (syndrome | vendor << 8 | CQE opcode << 16, as
  /// RdmaTransport::queryQpError), else 0.
  virtual int syndromes(int first, int count, int32_t* out) = 0;
  /// Waits until every submitted request is final, at most timeout_ns: kOk or kTimeout.
  virtual int wait(int64_t timeout_ns) = 0;
  /// Requests not started (posted) yet end as kRequestTimeout; running ones finish. Idempotent.
  virtual int cancel() = 0;

 protected:
  int init_status_ = kOk;
};

}  // namespace te4j
