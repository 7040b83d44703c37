// te4j/rdma_batch_api.h — batches of READ/WRITE transfers to segments reachable only over RDMA,
// started from the host: one RDMA WRITE or READ work request per request (split at 1 GiB), posted
// on the RdmaTransport's queue pair to the owner, many in flight (up to the send ring, then
// back-pressure), a state per request from the completions. The JavaCPP peer
// NativeRdmaTransferBatch maps it.
//
// Host platform only: the queue-pair table must be host memory (a CUDA transport keeps it in
// device memory, where only kernels post). Same rules as api.h. The Java layer has checked every
// request against the registered ranges (local registration and the owner's descriptor) before
// anything is posted; the native side re-checks only what is cheap.
//
// A request's state word is a te4j::RequestState, or a negative te4j::Status when it failed; a
// failure from an error CQE also leaves its completion word (syndrome | vendor << 8 | CQE opcode
// << 16, as RdmaTransport::queryQpError) in syndromes(). RC semantics: after an error CQE the
// queue pair is in the error state; requests behind the failed one on that queue pair complete
// with the flush syndrome (0x05) until every rank reconnects (RdmaTransport::reconnect).
#pragma once

#include <cstdint>

#include "te4j/api.h"
#include "te4j/rdma_api.h"

namespace te4j {

class RdmaTransferBatch : public NativeObject {
 public:
  /// A batch over `transport` (host platform, connected), capacity 1 .. 2^20. Never nullptr
  /// except on allocation failure; check status().
  static RdmaTransferBatch* create(RdmaTransport* transport, int capacity);

  int status() const { return init_status_; }
  virtual int capacity() const = 0;

  /// Submits requests [first, first + count) (first: the number submitted so far). Per request:
  /// opcode (kBatchRead / kBatchWrite), local address and its key, the owner's address and key,
  /// length, the owner's rank. Posting runs on a thread of the batch; requests not posted
  /// within timeout_ns end as kRequestTimeout.
  virtual int submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
                     const uint32_t* lkeys, const uint64_t* remote, const uint32_t* rkeys,
                     const uint64_t* lengths, const int32_t* ranks, int64_t timeout_ns) = 0;
  /// Publishes one notification slot over this NIC (docs/MLX5.md, "Notifications"): requests
  /// [first, first + 2) on the queue pair (rank, first % qps_per_rank), posted in one run under
  /// one doorbell (two if the send ring fills between them), in this order:
  ///   first      RDMA WRITE of slot_bytes from slot_local to slot_remote (the slot's length,
  ///              CRC, flags and payload);
  ///   first + 1  8-byte compare-and-swap of the sequence word at seq_remote (8-byte aligned)
  ///              from `expected` to `sequence`, fenced, its old value landing at fetch_local.
  /// Both use lkey locally and rkey at the owner. An RC responder makes an atomic's update
  /// visible only after the bytes of the WRITEs before it on the queue pair (the InfiniBand
  /// ordering rule for RDMA WRITE), so a receiver that sees the new sequence sees the whole
  /// slot. Once both completed, the caller compares the old value at fetch_local with
  /// `expected`: another value means the word was not where this sender left it (the swap did
  /// not happen). The software NIC executes no 8-byte compare-and-swap: its request fails with
  /// a local QP operation error.
  virtual int submitPublication(int first, uint64_t slot_local, uint64_t fetch_local, uint32_t lkey,
                                uint64_t slot_remote, uint64_t seq_remote, uint32_t rkey,
                                uint32_t slot_bytes, uint64_t expected, uint64_t sequence,
                                int32_t rank, int64_t timeout_ns) = 0;
  /// Copies the states of requests [first, first + count) into out.
  virtual int states(int first, int count, int32_t* out) = 0;
  /// Copies the completion words of requests [first, first + count) into out (0: none).
  virtual int syndromes(int first, int count, int32_t* out) = 0;
  /// Waits until every submitted request is final, at most timeout_ns: kOk or kTimeout.
  virtual int wait(int64_t timeout_ns) = 0;
  /// Requests not posted yet end as kRequestTimeout; posted ones finish. Idempotent.
  virtual int cancel() = 0;

 protected:
  int init_status_ = kOk;
};

}  // namespace te4j
