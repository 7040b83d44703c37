// put_launch.h — how a CUDA op stream launches a put / putWithSignal to a P2P or own-rank route
// (RDMA routes take kernels/put_kernels.cuh instead, which post RDMA ops).
//
// te4j's policy (put_launch.cu), the one that measured best (docs/history/PERFORMANCE-notebook.md):
// the lean kernel below kBulkPutBytes, the 8 x 16 KiB bulk kernel from there on; the op stream
// first hands bodies to the copy engine where the host tables map the route, from a size that
// depends on the route (body_path.h). Experiment variants (knob `put` of te4j/tuning.h) are
// compiled only into a libte4j configured with TE4J_PUT_VARIANTS=ON (variants/put_variants.cu), for
// te4j-bench.
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "stream/kernels/stream_state.cuh"
#include "transport/device/comm_device.cuh"

namespace te4j {
namespace cuda {

// From this size on a put leaves the lean kernel (the bulk kernel won at 1 GiB on 16 SMs and
// tied at 64 MiB); where the host tables map the route, body_path.h sends it to the copy engine.
constexpr size_t kBulkPutBytes = 32u << 20;

/// One put / putWithSignal (sig_ptr nullptr: put) on `stream`, the current device `device`.
struct PutLaunch {
  int device;
  cudaStream_t stream;
  unsigned blocks;
  unsigned threads;
  const mooncake::device::CommCtx* ctx;
  int dst_rank;
  void* recv_ptr;
  const void* send_ptr;
  size_t nbytes;
  uint32_t* sig_ptr;
  uint32_t value;
  McStreamScratch* scratch;
  McStreamStatus* status;
  uint32_t flags;  // kPutFlag*: putFlags() of the stream's knob snapshot
  bool pdl;        // programmatic dependent launch (knob pdl of the snapshot)
};

/// The kernel signature every P2P put kernel shares (lean and bulk families).
using PutKernelFn = void (*)(mooncake::device::CommCtx, int, void*, const void*, size_t, uint32_t*,
                             uint32_t, uint32_t, McStreamScratch*, McStreamStatus*);

/// Launches te4j's put kernel for the size (see above) with put.flags and put.pdl. Returns the
/// launch error or cudaSuccess.
cudaError_t launchPut(const PutLaunch& put);

/// Launches `kernel` for `put`: `smem` bytes of dynamic shared memory per block (the limit raised
/// once per kernel and device where it exceeds the default 48 KiB), programmatic dependent launch
/// when `pdl`, and the whole grid as one thread-block cluster when `cluster` (at most 8 blocks
/// then take part). Shared by te4j's policy and the experiment variants.
cudaError_t launchPutKernel(const PutLaunch& put, PutKernelFn kernel, uint32_t flags, size_t smem,
                            bool pdl, bool cluster);

/// The kernel flags (kPutFlag*) the knobs signal and arrival now ask for (read into a stream's
/// snapshot, not per launch).
uint32_t putFlags();

/// Launches the experiment variant `put_knob` (te4j/tuning.h, not one of te4j's own: base, auto,
/// ce, cesm). cudaErrorNotSupported where this libte4j was built without TE4J_PUT_VARIANTS
/// (tuning::apply refuses those values there, so an op stream never asks).
cudaError_t launchPutVariant(int put_knob, const PutLaunch& put);

}  // namespace cuda
}  // namespace te4j
