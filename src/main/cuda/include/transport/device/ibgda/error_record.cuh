// ibgda/error_record.cuh — where device code leaves a failed post that no caller can see.
//
// Upstream Mooncake's RDMA functions (mc_rdma_put on a CommCtx, the int* mc_signal /
// mc_red_add, mc_ibgda_put, mc_ibgda_red_add) return void, so a post that fails (no QP for the
// rank, a timed-out lock or ring slot, a QP in the error state, no route at all) would vanish.
// te4j writes it into the context's error record instead: a few words of host-visible memory
// (CUDA: pinned and mapped) that the RdmaTransport owns and that CUDA OpStream::synchronize()
// reads, raising the failure there. te4j's own int-returning functions report through their
// return value and leave the record alone.
//
// A context without a record of its own (ibgda.error_record == nullptr, e.g. one assembled
// the upstream way) uses the record te4j's RdmaTransport put into every QP context of its
// table. With neither (no QP table either), the failure has nowhere to go: on CUDA the kernel
// prints it and traps (the next synchronize reports a device fault and the CUDA context must be
// recreated); on the host platform it goes to a fallback record of the loaded image
// (mc_host_fallback_error_record).
//
// Writers race benignly: count is an approximate tally (plain stores; atomics on mapped host
// memory are not available everywhere), the first_* words describe one of the failures.
#pragma once

#include <stdint.h>

#include "transport/device/platform.cuh"
#include "transport/device/device_ops.cuh"

// Device printf: nvcc declares it in <cstdio>; NVRTC has it built in and ships no <cstdio>.
#if defined(MC_PLATFORM_CUDA) && !defined(__CUDACC_RTC__)
#include <cstdio>
#endif

namespace mooncake {
namespace device {

/// What failed: op codes of McErrorRecord::first_op.
enum : uint32_t { kMcOpRdmaWrite = 1, kMcOpRdmaAtomicAdd = 2, kMcOpSignalNoRoute = 3 };

struct McErrorRecord {
  uint32_t count;        // failed posts since the host last cleared the record (approximate)
  int32_t first_status;  // negative kMcRdma* status, or kMcNoRoute (routing.cuh)
  int32_t first_dst_rank;
  uint32_t first_op;  // kMcOp*
};

#if defined(MC_PLATFORM_HOST)
/// The host platform's record for contexts without one (one per loaded image).
inline McErrorRecord* mc_host_fallback_error_record() {
  static McErrorRecord record;
  return &record;
}
#endif

/// Leaves a failed post in rec (see the file comment for rec == nullptr).
MC_DEVICE_INLINE void mc_record_post_failure(McErrorRecord* rec, int status, int dst_rank,
                                             uint32_t op) {
  if (rec == nullptr) {
#if defined(MC_PLATFORM_CUDA)
    printf(
        "te4j: device-side RDMA post (op %u) to rank %d failed with status %d and the "
        "context has no error record (build it with te4j's makeCommCtx/fillCommCtx); "
        "trapping\n",
        op, dst_rank, status);
    __trap();
#else
    rec = mc_host_fallback_error_record();
#endif
  }
  volatile McErrorRecord* v = rec;
  if (v->count == 0) {
    v->first_status = status;
    v->first_dst_rank = dst_rank;
    v->first_op = op;
    mc_fence();  // the description before the count that makes the host read it
  }
  v->count = v->count + 1;
  mc_fence();
}

}  // namespace device
}  // namespace mooncake
