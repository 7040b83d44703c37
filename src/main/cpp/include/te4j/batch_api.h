// te4j/batch_api.h — batches of READ/WRITE transfers between local memory and mapped segments,
// started from the host, with a state per request. The JavaCPP peer NativeTransferBatch maps it.
//
// Same rules as api.h: no exception leaves a method, statuses are te4j::Status, no optional
// header is included. Addresses are the platform's (CUDA: device virtual addresses, including
// peers' memory mapped through CUDA IPC; host: this process's mappings). The Java layer has
// checked every request against the registered ranges; the native side re-checks only what is
// cheap (null, zero length, capacity).
#pragma once

#include <cstdint>

#include "te4j/api.h"

namespace te4j {

/// What a request does: READ copies remote -> local, WRITE local -> remote.
enum BatchOpcode : int32_t { kBatchRead = 0, kBatchWrite = 1 };

/// A request's state word. A failed request holds its negative te4j::Status instead.
enum RequestState : int32_t {
  kRequestPending = 0,
  kRequestCompleted = 1,
  kRequestTimeout = 2,  // never started: the batch was cancelled (its deadline passed) first
};

/// One batch of at most capacity() requests, submitted in one or more parts. Requests of a
/// batch may run in any order and at once; each reaches exactly one final state.
class TransferBatch : public NativeObject {
 public:
  /// kPlatformHost: the requests run on a process-wide worker thread, parts of 1 MiB or more
  /// split with its helper threads (knob batchthreads); kPlatformCuda: one copy kernel per part
  /// on the batch's own stream of `device`. capacity is 1 .. kMaxBatchCapacity.
  static TransferBatch* create(int platform, int device, int capacity);
  static constexpr int kMaxBatchCapacity = 1 << 20;

  int status() const { return init_status_; }
  virtual int capacity() const = 0;

  /// Submits requests [first, first + count) (first: the number submitted so far), described
  /// by four host arrays of `count` entries: opcode, local address, remote address, length.
  virtual int submit(int first, int count, const int32_t* opcodes, const uint64_t* local,
                     const uint64_t* remote, const uint64_t* lengths) = 0;
  /// Copies the states of requests [first, first + count) into out.
  virtual int states(int first, int count, int32_t* out) = 0;
  /// Waits until every submitted request is final, at most timeout_ns: kOk or kTimeout.
  virtual int wait(int64_t timeout_ns) = 0;
  /// Requests not started yet end as kRequestTimeout; running ones finish. Idempotent.
  virtual int cancel() = 0;

 protected:
  int init_status_ = kOk;
};

}  // namespace te4j
