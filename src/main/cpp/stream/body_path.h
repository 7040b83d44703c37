// body_path.h — which engine moves the body of a CUDA put to a rank the host tables map: the copy
// engine (cudaMemcpyAsync on the op stream, copy_engine_route.cuh), an SM kernel (put_launch.h),
// or both at once. te4j's policy (knob put=auto) decides by the rank's route, decided once when
// the context is connected (McRankRoute in the CommCtx, transport/device/comm_device.cuh), and
// by the size; the knobs put=ce / cesm / base name one path for every size. The knobs come as a
// snapshot the op stream takes when it is created (Knobs::now), not per op. Host C++ without
// CUDA, so the policy is tested anywhere.
#pragma once

#include <cstddef>

#include "te4j/tuning.h"

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

/// The knobs the policy reads (te4j/tuning.h), read once into a snapshot.
struct Knobs {
  int put = tuning::kPutAuto;
  std::size_t same_device_ce_bytes = kSameDeviceCopyEngineBytes;  // knob samedevce, or te4j's
  /// The knobs now in force.
  static Knobs now();
};

/// The size from which put=auto moves a body on `route` (a McRankRoute) by the copy engine
/// (SIZE_MAX for a route without a mapping: the engine cannot reach it).
std::size_t copyEngineFrom(int route, const Knobs& knobs);

/// Whether a body of nbytes may leave the kernel on some route under `knobs`: a caller skips
/// the rest of the choice when not.
bool mayLeaveKernel(std::size_t nbytes, const Knobs& knobs);

/// The path of a body of nbytes on `route` (a McRankRoute) under `knobs`.
Path choose(int route, std::size_t nbytes, const Knobs& knobs);

}  // namespace body_path
}  // namespace te4j
