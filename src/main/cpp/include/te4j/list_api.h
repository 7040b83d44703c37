// te4j/list_api.h — reusable transfer lists: READ/WRITE requests prepared once (checked, cut
// into copies and, on CUDA, moved into device memory) and then posted many times, whole or as a
// range of their indices, with a host cost per post that does not grow with the request count.
// The JavaCPP peer NativeTransferList maps it.
//
// Same rules as api.h. Addresses are the platform's, as for batch_api.h; the Java layer has
// checked every request against the registered ranges and keeps the memory they name alive
// (and mapped) while the list lives. One post runs at a time: a post's requests turn final
// together when it ends, and their states are only read when asked.
#pragma once

#include <cstdint>

#include "te4j/api.h"
#include "te4j/batch_api.h"

namespace te4j {

class TransferList : public NativeObject {
 public:
  /// kPlatformHost: a post runs on the batches' process-wide worker (and its helpers for
  /// posts of 1 MiB or more); kPlatformCuda: a post is one launch of the list kernel on the
  /// list's stream of `device` over descriptors copied to device memory here, once.
  /// count is 1 .. TransferBatch::kMaxBatchCapacity; the four arrays hold `count` entries
  /// (opcode, local address, remote address, length), as TransferBatch::submit takes them.
  static TransferList* create(int platform, int device, int count, const int32_t* opcodes,
                              const uint64_t* local, const uint64_t* remote,
                              const uint64_t* lengths);

  int status() const { return init_status_; }
  virtual int size() const = 0;

  /// Starts requests [from, to) (0 <= from < to <= size()). kIllegalState while the previous
  /// post has not ended (wait, or cancel and wait, first).
  virtual int post(int from, int to) = 0;
  /// 1 once the last post has ended (every request final), 0 while it runs; < 0 on an error.
  /// No wait: a load of the post's completion record.
  virtual int poll() = 0;
  /// Waits until the last post has ended, at most timeout_ns: kOk or kTimeout.
  virtual int wait(int64_t timeout_ns) = 0;
  /// The last post's requests not started yet end as kRequestTimeout, running ones finish.
  /// Returns once the device (or the worker) will see it. Idempotent; no effect on a later post.
  virtual int cancel() = 0;
  /// The requests of the ended last post that were skipped (cancelled), 0 when every one
  /// completed: a post's outcome without a state per request.
  virtual int skipped() = 0;
  /// The states of list requests [first, first + count) as the ended last post left them
  /// (RequestState); only those inside the post's range mean anything.
  virtual int states(int first, int count, int32_t* out) = 0;

 protected:
  int init_status_ = kOk;
};

}  // namespace te4j
