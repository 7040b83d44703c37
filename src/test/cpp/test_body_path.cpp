// test_body_path.cpp — te4j's choice of the engine that moves a CUDA put's body
// (stream/body_path.h), host-only: within one device the copy engine from its own threshold,
// between two GPUs from 32 MiB (the NVLink policy, unchanged), never on an unmapped (RDMA) route
// (routes are the context's McRankRoute; the knobs a snapshot as an op stream takes one);
// the knobs put=ce / cesm / base name one path at every size, and samedevce moves the same-device
// threshold (32m: the NVLink policy) without touching the two-GPU one.
#include <stdio.h>

#include <cstddef>
#include <initializer_list>

#include "check.h"
#include "stream/body_path.h"
#include "te4j/tuning.h"
#include "transport/device/comm_device.cuh"

namespace {

using te4j::body_path::kCopyEngine;
using te4j::body_path::kCopyEngineAndKernel;
using te4j::body_path::kKernel;
using te4j::body_path::kPeerDeviceCopyEngineBytes;
using te4j::body_path::kSameDeviceCopyEngineBytes;

constexpr int kRouteSameDevice = mooncake::device::kMcRankRouteSameDevice;
constexpr int kRoutePeerDevice = mooncake::device::kMcRankRoutePeerDevice;
constexpr int kRouteUnmapped = mooncake::device::kMcRankRouteRdma;

// The policy under the knobs now in force, read as a new op stream reads them.
te4j::body_path::Path choose(int route, std::size_t nbytes) {
  return te4j::body_path::choose(route, nbytes, te4j::body_path::Knobs::now());
}
bool mayLeaveKernel(std::size_t nbytes) {
  return te4j::body_path::mayLeaveKernel(nbytes, te4j::body_path::Knobs::now());
}

constexpr std::size_t kMiB = std::size_t(1) << 20;

void setKnobs(const char* spec) {
  const char* why = nullptr;
  CHECK(te4j::tuning::apply(spec, &why) == 0, "%s refused: %s", spec, why);
}

void testDefaultPolicy() {
  setKnobs("");
  CHECK(kPeerDeviceCopyEngineBytes == 32 * kMiB, "the NVLink threshold stays 32 MiB");
  CHECK(kSameDeviceCopyEngineBytes < kPeerDeviceCopyEngineBytes,
        "one device hands bodies to the copy engine earlier than two GPUs");
  for (std::size_t n : {std::size_t(0), std::size_t(8), 64 * std::size_t(1024), kMiB,
                        kSameDeviceCopyEngineBytes - 1}) {
    CHECK(choose(kRouteSameDevice, n) == kKernel, "same device, %zu B: kernel", n);
  }
  for (std::size_t n : {kSameDeviceCopyEngineBytes, 16 * kMiB, 64 * kMiB, 1024 * kMiB}) {
    CHECK(choose(kRouteSameDevice, n) == kCopyEngine, "same device, %zu B: copy engine", n);
  }
  for (std::size_t n : {std::size_t(8), kSameDeviceCopyEngineBytes, 16 * kMiB, 32 * kMiB - 1}) {
    CHECK(choose(kRoutePeerDevice, n) == kKernel, "two GPUs, %zu B: kernel", n);
  }
  for (std::size_t n : {32 * kMiB, 1024 * kMiB}) {
    CHECK(choose(kRoutePeerDevice, n) == kCopyEngine, "two GPUs, %zu B: copy engine", n);
  }
  for (std::size_t n : {std::size_t(8), 64 * kMiB}) {
    CHECK(choose(kRouteUnmapped, n) == kKernel, "unmapped (RDMA), %zu B: kernel", n);
  }
  CHECK(!mayLeaveKernel(kSameDeviceCopyEngineBytes - 1), "below both thresholds: no lookup");
  CHECK(mayLeaveKernel(kSameDeviceCopyEngineBytes), "from the lower threshold: look the route up");
}

void testSameDeviceKnob() {
  setKnobs("samedevce=32m");  // the NVLink threshold within one device too: the old policy
  CHECK(choose(kRouteSameDevice, 16 * kMiB) == kKernel, "samedevce=32m, 16 MiB: kernel");
  CHECK(choose(kRouteSameDevice, 32 * kMiB) == kCopyEngine, "samedevce=32m, 32 MiB: copy engine");
  CHECK(!mayLeaveKernel(16 * kMiB), "samedevce=32m: nothing below 32 MiB leaves the kernel");
  setKnobs("samedevce=0");
  CHECK(choose(kRouteSameDevice, 8) == kCopyEngine, "samedevce=0: the copy engine at every size");
  CHECK(choose(kRoutePeerDevice, 8) == kKernel, "samedevce leaves two GPUs alone");
  CHECK(choose(kRoutePeerDevice, 32 * kMiB) == kCopyEngine, "two GPUs keep 32 MiB");
  setKnobs("samedevce=64k");
  CHECK(choose(kRouteSameDevice, 64 * 1024 - 1) == kKernel, "samedevce=64k, 64 KiB - 1: kernel");
  CHECK(choose(kRouteSameDevice, 64 * 1024) == kCopyEngine, "samedevce=64k, 64 KiB: copy engine");
  const char* why = nullptr;
  CHECK(te4j::tuning::apply("samedevce=3m", &why) != 0, "3m is not a value");
  setKnobs("");
}

void testPathKnobs() {
  setKnobs("put=ce");
  CHECK(choose(kRouteSameDevice, 8) == kCopyEngine && choose(kRoutePeerDevice, 8) == kCopyEngine,
        "put=ce: the copy engine at every size on mapped routes");
  CHECK(choose(kRouteUnmapped, 64 * kMiB) == kKernel, "put=ce: an unmapped route stays a kernel");
  CHECK(mayLeaveKernel(8), "put=ce looks every route up");
  setKnobs("put=cesm");
  CHECK(choose(kRoutePeerDevice, 8) == kCopyEngineAndKernel, "put=cesm: both engines");
  setKnobs("put=base");
  CHECK(choose(kRouteSameDevice, 1024 * kMiB) == kKernel, "put=base: always the kernels");
  CHECK(!mayLeaveKernel(1024 * kMiB), "put=base: no lookup");
  setKnobs("");
}

}  // namespace

int main() {
  testDefaultPolicy();
  testSameDeviceKnob();
  testPathKnobs();
  if (g_failures != 0) {
    fprintf(stderr, "test_body_path: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("test_body_path: all checks passed\n");
  return 0;
}
