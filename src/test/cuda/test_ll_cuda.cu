// test_ll_cuda.cu — the LL put (transport/device/ll_put.cuh) on real GPUs: two sides, one warp
// each, ping-pong messages whose payload changes every round; each receiver checks every message
// in the kernel (no torn, stale or early word) and the host checks the destination's last
// message and its poisoned guard. GPU 0 <-> GPU 1 over NVLink/PCIe P2P when two GPUs can reach
// each other, else two streams on GPU 0. Also: a wait with no sender times out (bounded) and
// delivers nothing. Every CUDA call and launch is checked. Exit 0 = passed or skipped (no GPU:
// "SKIP: ...", as test_cuda_ops), 1 = failed.
// Argument "quick": 1/100 of the rounds (for compute-sanitizer, which slows every access).
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "../cpp/check.h"
#include "transport/device/comm_device.cuh"

using namespace mooncake::device;

namespace {

#define CUDA_OK(call)                                                                             \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      return false;                                                                               \
    }                                                                                             \
  } while (0)

constexpr size_t kSlotOffset = 4096;      // symmetric offset of each side's LL slot
constexpr size_t kDstOffset = 64 * 1024;  // where the receiver delivers
constexpr size_t kBufferBytes = 128 * 1024;
constexpr size_t kGuard = 64;
constexpr uint8_t kPoison = 0xA5;

// Word i of side `from`'s message in round r (seeded: differs per run, side, round and word).
__host__ __device__ uint32_t message_word(uint64_t seed, int from, uint32_t r, size_t i) {
  uint64_t x = seed ^ ((uint64_t)from << 56) ^ ((uint64_t)r << 20) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (uint32_t)x;
}

struct SideResult {
  uint32_t rounds;   // completed
  uint32_t bad;      // messages that differed from what the peer sent that round
  uint32_t timeout;  // 1 when a wait passed the deadline
  uint32_t seen;
};

// One side: per round, build the message in shared memory, mc_ll_put it (32 lanes), and/or
// mc_ll_wait for the peer's into dst, then check it against message_word.
template <size_t kUnroll>
__global__ void ll_side_kernel(CommCtx ctx, int peer, bool initiator, size_t bytes, uint32_t rounds,
                               uint64_t seed, uint64_t timeout_ns, SideResult* out) {
  __shared__ uint32_t msg[1024];
  __shared__ uint64_t deadline;
  const unsigned lane = threadIdx.x;
  if (lane == 0) deadline = mc_globaltimer_ns() + timeout_ns;
  uint8_t* base = (uint8_t*)ctx.p2p.local_base;
  uint64_t* slot = (uint64_t*)(base + kSlotOffset);
  uint8_t* dst = base + kDstOffset;
  uint32_t bad = 0;
  __syncwarp();
  for (uint32_t r = 1; r <= rounds; ++r) {
    for (size_t i = lane; i < (bytes + 3) / 4; i += 32) msg[i] = message_word(seed, ctx.rank, r, i);
    __syncwarp();
    uint32_t seen = 0;
    bool ok = true;
    if (!initiator) ok = mc_ll_wait<kUnroll>(slot, dst, bytes, r, deadline, lane, 32, &seen);
    if (__all_sync(0xffffffffu, ok)) {
      if (!initiator) {
        __syncwarp();
        for (size_t i = lane; i < bytes; i += 32) {
          const uint32_t w = message_word(seed, peer, r, i / 4);
          bad += dst[i] != (uint8_t)(w >> (8 * (i % 4)));
        }
      }
      mc_ll_store<kUnroll>((uint64_t*)mc_route_put(ctx, peer, slot), msg, bytes, r, lane, 32);
      if (initiator) ok = mc_ll_wait<kUnroll>(slot, dst, bytes, r, deadline, lane, 32, &seen);
    }
    const unsigned failed = __ballot_sync(0xffffffffu, !ok);
    if (failed != 0) {
      seen = __shfl_sync(0xffffffffu, seen, __ffs(failed) - 1);
      if (lane == 0) *out = SideResult{r - 1, 0, 1, seen};
      return;
    }
    if (initiator) {
      __syncwarp();
      for (size_t i = lane; i < bytes; i += 32) {
        const uint32_t w = message_word(seed, peer, r, i / 4);
        bad += dst[i] != (uint8_t)(w >> (8 * (i % 4)));
      }
    }
    __syncwarp();  // msg is rewritten next round only after every lane stored this one
  }
  for (int o = 16; o > 0; o /= 2) bad += __shfl_down_sync(0xffffffffu, bad, o);
  if (lane == 0) *out = SideResult{rounds, bad, 0, 0};
}

struct Side {
  int device;
  uint8_t* buffer = nullptr;
  int* available = nullptr;  // device tables of the CommCtx
  void** peer_ptrs = nullptr;
  cudaStream_t stream = nullptr;
  SideResult* result = nullptr;  // mapped pinned
  SideResult* result_dev = nullptr;
  CommCtx ctx;
};

bool setUpSide(Side* s, int rank, int device) {
  s->device = device;
  CUDA_OK(cudaSetDevice(device));
  CUDA_OK(cudaMalloc((void**)&s->buffer, kBufferBytes));
  CUDA_OK(cudaMemset(s->buffer, 0, kBufferBytes));  // zeroed slots hold no message
  CUDA_OK(cudaMalloc((void**)&s->available, 2 * sizeof(int)));
  CUDA_OK(cudaMalloc((void**)&s->peer_ptrs, 2 * sizeof(void*)));
  CUDA_OK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
  CUDA_OK(cudaHostAlloc((void**)&s->result, sizeof(SideResult), cudaHostAllocMapped));
  CUDA_OK(cudaHostGetDevicePointer((void**)&s->result_dev, s->result, 0));
  memset(&s->ctx, 0, sizeof(s->ctx));
  s->ctx.p2p.available = s->available;
  s->ctx.p2p.peer_ptrs = s->peer_ptrs;
  s->ctx.p2p.local_base = s->buffer;
  s->ctx.rank = rank;
  return true;
}

bool linkSides(Side* a, Side* b) {
  const int avail[2] = {1, 1};
  void* ptrs[2] = {a->buffer, b->buffer};
  for (Side* s : {a, b}) {
    CUDA_OK(cudaSetDevice(s->device));
    CUDA_OK(cudaMemcpy(s->available, avail, sizeof(avail), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(s->peer_ptrs, ptrs, sizeof(ptrs), cudaMemcpyHostToDevice));
  }
  return true;
}

bool poisonDst(Side* s, size_t bytes) {
  CUDA_OK(cudaSetDevice(s->device));
  CUDA_OK(cudaMemset(s->buffer + kDstOffset, kPoison, bytes + kGuard));
  return true;
}

bool launch(Side* s, int peer, bool initiator, size_t bytes, uint32_t rounds, uint64_t seed,
            uint64_t timeout_ns, size_t unroll = kMcLlUnroll) {
  CUDA_OK(cudaSetDevice(s->device));
  s->result->rounds = 0xffffffffu;  // "not written"
  auto kernel = unroll == 4   ? ll_side_kernel<4>
                : unroll == 8 ? ll_side_kernel<8>
                              : ll_side_kernel<kMcLlUnroll>;
  kernel<<<1, 32, 0, s->stream>>>(s->ctx, peer, initiator, bytes, rounds, seed, timeout_ns,
                                  s->result_dev);
  CUDA_OK(cudaGetLastError());
  return true;
}

bool finish(Side* s) {
  CUDA_OK(cudaSetDevice(s->device));
  CUDA_OK(cudaStreamSynchronize(s->stream));
  return true;
}

// The last message the side received sits in dst; the guard after it still holds the poison.
bool checkDst(Side* s, int from, size_t bytes, uint32_t last_round, uint64_t seed) {
  std::vector<uint8_t> got(bytes + kGuard);
  CUDA_OK(cudaSetDevice(s->device));
  CUDA_OK(cudaMemcpy(got.data(), s->buffer + kDstOffset, got.size(), cudaMemcpyDeviceToHost));
  size_t wrong = 0, overrun = 0;
  for (size_t i = 0; i < bytes; ++i) {
    wrong += got[i] != (uint8_t)(message_word(seed, from, last_round, i / 4) >> (8 * (i % 4)));
  }
  for (size_t i = bytes; i < got.size(); ++i) overrun += got[i] != kPoison;
  CHECK(wrong == 0, "rank %d dst: %zu of %zu bytes differ from round %u's message", s->ctx.rank,
        wrong, bytes, last_round);
  CHECK(overrun == 0, "rank %d dst: %zu guard bytes overwritten after %zu", s->ctx.rank, overrun,
        bytes);
  return true;
}

bool pingPong(Side* a, Side* b, size_t bytes, uint32_t rounds, uint64_t seed,
              size_t unroll = kMcLlUnroll, float* us_per_round_trip = nullptr) {
  // Each case starts from zeroed slots: round numbers restart at 1.
  for (Side* s : {a, b}) {
    CUDA_OK(cudaSetDevice(s->device));
    CUDA_OK(cudaMemset(s->buffer + kSlotOffset, 0, mc_ll_slot_bytes(4096)));
    CUDA_OK(cudaDeviceSynchronize());
    if (!poisonDst(s, bytes)) return false;
    CUDA_OK(cudaDeviceSynchronize());
  }
  const uint64_t timeout_ns = 10ull * 1000 * 1000 * 1000;
  cudaEvent_t t0 = nullptr, t1 = nullptr;
  CUDA_OK(cudaSetDevice(a->device));
  CUDA_OK(cudaEventCreate(&t0));
  CUDA_OK(cudaEventCreate(&t1));
  if (!launch(b, 0, false, bytes, rounds, seed, timeout_ns, unroll)) return false;
  CUDA_OK(cudaSetDevice(a->device));
  CUDA_OK(cudaEventRecord(t0, a->stream));
  if (!launch(a, 1, true, bytes, rounds, seed, timeout_ns, unroll)) return false;
  CUDA_OK(cudaEventRecord(t1, a->stream));
  if (!finish(a) || !finish(b)) return false;
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
  CUDA_OK(cudaEventDestroy(t0));
  CUDA_OK(cudaEventDestroy(t1));
  if (us_per_round_trip != nullptr) *us_per_round_trip = ms * 1000.0f / (float)rounds;
  for (Side* s : {a, b}) {
    const SideResult r = *s->result;
    CHECK(r.timeout == 0 && r.rounds == rounds,
          "%zu B: rank %d did %u of %u rounds (timeout %u, seen %u)", bytes, s->ctx.rank, r.rounds,
          rounds, r.timeout, r.seen);
    CHECK(r.bad == 0, "%zu B: rank %d received %u wrong bytes over %u rounds", bytes, s->ctx.rank,
          r.bad, rounds);
  }
  return checkDst(a, 1, bytes, rounds, seed) && checkDst(b, 0, bytes, rounds, seed);
}

// No sender: the wait must give up at its deadline, say what it saw, and deliver nothing.
bool timeoutCase(Side* a) {
  if (!poisonDst(a, 8)) return false;
  CUDA_OK(cudaSetDevice(a->device));
  CUDA_OK(cudaMemset(a->buffer + kSlotOffset, 0, 64));
  CUDA_OK(cudaDeviceSynchronize());
  // Initiator of a ping-pong whose peer never answers: round 1's wait times out (its own put
  // goes to the peer's slot, which nobody reads).
  if (!launch(a, 1, true, 8, 1, 1, 50ull * 1000 * 1000)) return false;
  if (!finish(a)) return false;
  const SideResult r = *a->result;
  CHECK(r.timeout == 1 && r.rounds == 0 && r.seen == 0,
        "timeout case: rounds %u timeout %u seen %u", r.rounds, r.timeout, r.seen);
  std::vector<uint8_t> got(8);
  CUDA_OK(cudaMemcpy(got.data(), a->buffer + kDstOffset, 8, cudaMemcpyDeviceToHost));
  CHECK(got[0] == kPoison && got[7] == kPoison, "timeout case: nothing delivered");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t divisor = argc > 1 && strcmp(argv[1], "quick") == 0 ? 100 : 1;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("SKIP: test_ll_cuda: no CUDA device\n");
    return 0;
  }
  int can01 = 0, can10 = 0;
  if (devices >= 2) {
    cudaDeviceCanAccessPeer(&can01, 0, 1);
    cudaDeviceCanAccessPeer(&can10, 1, 0);
  }
  const bool two = can01 && can10;
  Side a, b;
  bool ok = setUpSide(&a, 0, 0) && setUpSide(&b, 1, two ? 1 : 0);
  if (ok && two) {
    ok = cudaSetDevice(0) == cudaSuccess && cudaDeviceEnablePeerAccess(1, 0) == cudaSuccess &&
         cudaSetDevice(1) == cudaSuccess && cudaDeviceEnablePeerAccess(0, 0) == cudaSuccess;
    CHECK(ok, "enabling peer access between GPU 0 and 1");
  }
  ok = ok && linkSides(&a, &b);
  printf("test_ll_cuda: %s\n", two ? "GPU 0 <-> GPU 1 (peer access)" : "two streams on GPU 0");
  uint64_t seed = 0;
  {
    FILE* f = fopen("/dev/urandom", "rb");
    if (f == nullptr || fread(&seed, sizeof(seed), 1, f) != 1) seed = 0x5eed5eed5eedull;
    if (f != nullptr) fclose(f);
  }
  printf("test_ll_cuda: seed %llu\n", (unsigned long long)seed);
  const size_t sizes[] = {1, 4, 8, 12, 100, 128, 129, 1000, 4096};
  for (size_t bytes : sizes) {
    if (!ok) break;
    const uint32_t rounds = (bytes <= 128 ? 20000 : 2000) / divisor;
    ok = pingPong(&a, &b, bytes, rounds, seed + bytes);
    printf("  %zu B x %u rounds: %s\n", bytes, rounds, ok ? "ran" : "CUDA error");
  }
  // Round trips per words-in-flight setting (printed for docs/history/PERFORMANCE-notebook.md, not
  // asserted: tests never assert timings). Each run is also a checked ping-pong.
  if (divisor == 1) {
    for (size_t bytes : {(size_t)8, (size_t)64, (size_t)256, (size_t)1024, (size_t)4096}) {
      for (size_t unroll : {kMcLlUnroll, (size_t)4, (size_t)8}) {
        float us = 0;
        if (!ok) break;
        ok = pingPong(&a, &b, bytes, 5000, seed + 7 * bytes + unroll, unroll, &us);
        printf("  timing: %zu B, %zu word(s) in flight per lane: %.3f us per round trip\n", bytes,
               unroll, us);
      }
    }
  }
  ok = ok && timeoutCase(&a);
  if (!ok) ++g_failures;
  if (g_failures != 0) {
    fprintf(stderr, "test_ll_cuda: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("test_ll_cuda: all checks passed\n");
  return 0;
}
