// kernels/wait_kernels.cuh — waitSignal: one thread spins on the local signal word.
//
// The deadline is taken from %globaltimer when the kernel starts (not when it was enqueued), so
// a captured graph gets a fresh bound on every launch. On timeout the thread records the error
// in the stream status and returns: the stream then drains (later te4j kernels exit at entry)
// instead of hanging, and synchronize() reports it.
#pragma once

#include <stdint.h>

#include "stream/kernels/stream_state.cuh"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace cuda {

__global__ void mc_wait_signal_kernel(const uint32_t* sig_ptr, uint32_t expected,
                                      uint64_t timeout_ns, McStreamScratch* scratch,
                                      McStreamStatus* status) {
  using namespace mooncake::device;
  if (mc_stream_aborted(scratch)) return;
  const uint64_t start = mc_globaltimer_ns();
  uint32_t seen = 0;
  if (mc_wait_signal(sig_ptr, expected, start + timeout_ns, &seen)) return;
  McStreamStatus e = {};
  e.code = kMcStreamWaitTimeout;
  e.op = kMcOpWaitSignal;
  e.expected = expected;
  e.seen = seen;
  e.addr = (uint64_t)(uintptr_t)sig_ptr;
  e.waited_ns = mc_globaltimer_ns() - start;
  e.timeout_ns = timeout_ns;
  e.rank = -1;
  mc_stream_record(scratch, status, e);
}

}  // namespace cuda
}  // namespace te4j
