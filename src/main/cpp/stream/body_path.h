// body_path.h — which engine moves the body of a CUDA put to a rank the host tables map: the copy
// engine (cudaMemcpyAsync on the op stream, copy_engine_route.cuh), an SM kernel (put_launch.h),
// or both at once. te4j's policy (knob put=auto) decides by the rank's route, published once when
// the window is connected (p2p/peer_table_mirror.h), and by the size; the knobs put=ce / cesm /
// base name one path for every size. Host C++ without CUDA, so the policy is tested anywhere.
#pragma once

#include <cstddef>

#include "p2p/peer_table_mirror.h"

namespace te4j {
namespace body_path {

enum Path : int {
  kKernel = 0,           // an SM kernel (put_launch.h; RDMA and unmapped routes always)
  kCopyEngine,           // the copy engine, then the signal kernel for putWithSignal
  kCopyEngineAndKernel,  // put=cesm: a share by the copy engine beside the kernel
};

// Between two GPUs (NVLink): from 32 MiB. On 2xH200 the engine moved 1 GiB at 395 GB/s against
// 350 on 16 SMs and 64 MiB at 380 against 332; but a kernel queued right after a copy (the
// signal of putWithSignal, the next op) waits ~10 us for the engine switch, which only vanishes
// against bodies this large.
constexpr std::size_t kPeerDeviceCopyEngineBytes = 32u << 20;

// Within one device (ranks sharing a GPU, a put to the own rank): from 4 MiB. Here the engine
// copies HBM to HBM at ~2.4 TB/s (H200) while the put kernel's default 16 SMs copy ~0.66 TB/s:
// the engine saves ~1.1 us per MiB, and puts of 4..16 MiB under the NVLink threshold ran at
// 0.27..0.62x the engine. Below a few MiB both are bound by their launch (a few us), and a
// putWithSignal on the engine also pays the switch to its signal kernel, so the kernel's one
// launch is as fast or faster there. The crossover of putWithSignal lies higher than that of a
// put (by the switch's cost); 4 MiB favours back-to-back bodies. Knob samedevce moves the point
// for measuring it (32m: the NVLink threshold).
constexpr std::size_t kSameDeviceCopyEngineBytes = 4u << 20;

/// The size from which put=auto moves a body on `route` by the copy engine (SIZE_MAX for
/// kRouteUnmapped: the engine cannot reach it).
std::size_t copyEngineFrom(peer_tables::Route route);

/// Whether a body of nbytes may leave the kernel on some route under the knobs now in force: a
/// caller skips the route lookup when not.
bool mayLeaveKernel(std::size_t nbytes);

/// The path of a body of nbytes on `route` under the knobs now in force.
Path choose(peer_tables::Route route, std::size_t nbytes);

}  // namespace body_path
}  // namespace te4j
