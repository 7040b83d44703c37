// test_transfer_batch_cuda_with_lib.cu — libte4j's CUDA TransferBatch as a caller of
// te4j/batch_api.h sees it, on one GPU: many batches one after another (their resources come
// from the pool, so each batch after the first runs on a set an earlier one gave back), random
// parts (1 B .. 16 MiB, random offsets, READ and WRITE between two device regions) into
// poisoned destinations checked byte for byte, parts too large for the arena (a block of their
// own), a cancel before the first part and after it (every request COMPLETED with its bytes or
// TIMEOUT with its poison), a batch destroyed while its kernel runs, and releaseCachedMemory
// giving the idle sets back. Every CUDA call is checked. Exit 0 = passed or "SKIP: ...", 1 =
// failed. Run it under compute-sanitizer on the GPU host.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "te4j/api.h"
#include "te4j/batch_api.h"

namespace {

int g_fail = 0;

#define CUDA_OK(call)                                                                   \
  do {                                                                                  \
    const cudaError_t e_ = (call);                                                      \
    if (e_ != cudaSuccess) {                                                            \
      std::printf("FAIL line %d: %s: %s (%s)\n", __LINE__, #call, cudaGetErrorName(e_), \
                  cudaGetErrorString(e_));                                              \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

#define CHECK(cond, ...)                       \
  do {                                         \
    if (!(cond)) {                             \
      std::printf("FAIL line %d: ", __LINE__); \
      std::printf(__VA_ARGS__);                \
      std::printf("\n");                       \
      ++g_fail;                                \
    }                                          \
  } while (0)

constexpr uint8_t kPoison = 0x5a;
constexpr size_t kRegion = 64u << 20;  // "local" and "remote", each

struct Request {
  int32_t opcode;
  size_t local_off, remote_off, len;
};

// Requests with disjoint destinations (and sources in the other region), in random order.
std::vector<Request> plan(std::mt19937_64& rng, int count, size_t max_len) {
  std::vector<Request> out;
  size_t pos_l = 0, pos_r = 0;
  for (int i = 0; i < count; ++i) {
    const int kind = (int)(rng() % 10);
    size_t len = kind < 5   ? 1 + rng() % 8192
                 : kind < 9 ? 8192 + rng() % (256 << 10)
                            : 1 + rng() % max_len;
    const size_t gap_l = rng() % 512, gap_r = rng() % 512;
    if (pos_l + gap_l + len > kRegion || pos_r + gap_r + len > kRegion) break;
    out.push_back(Request{(int32_t)(rng() % 2), pos_l + gap_l, pos_r + gap_r, len});
    pos_l += gap_l + len;
    pos_r += gap_r + len;
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

struct Regions {
  uint8_t* local = nullptr;
  uint8_t* remote = nullptr;
  std::vector<uint8_t> l, r;  // what the host wrote: random bytes, then poison at destinations
};

void fill(std::mt19937_64& rng, Regions* g, const std::vector<Request>& p) {
  for (size_t i = 0; i < kRegion; i += 8) {
    const uint64_t v = rng();
    std::memcpy(&g->l[i], &v, 8);
    std::memcpy(&g->r[i], &v, 8);
    g->r[i] ^= 0xff;
  }
  for (const Request& q : p) {
    std::vector<uint8_t>& dst = q.opcode == te4j::kBatchRead ? g->l : g->r;
    std::memset(&dst[q.opcode == te4j::kBatchRead ? q.local_off : q.remote_off], kPoison, q.len);
  }
  CUDA_OK(cudaMemcpy(g->local, g->l.data(), kRegion, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(g->remote, g->r.data(), kRegion, cudaMemcpyHostToDevice));
}

// Submits `p` to `b` in `parts` parts; cancel_after: cancel after that many parts (-1 never).
int run(te4j::TransferBatch* b, const Regions& g, const std::vector<Request>& p, int parts,
        int cancel_after) {
  std::vector<int32_t> op;
  std::vector<uint64_t> lo, re, len;
  for (const Request& q : p) {
    op.push_back(q.opcode);
    lo.push_back((uint64_t)(uintptr_t)(g.local + q.local_off));
    re.push_back((uint64_t)(uintptr_t)(g.remote + q.remote_off));
    len.push_back(q.len);
  }
  const int n = (int)p.size();
  int first = 0;
  for (int k = 0; k < parts && first < n; ++k) {
    if (k == cancel_after) CHECK(b->cancel() == te4j::kOk, "cancel: %s", b->lastError());
    const int count = k == parts - 1 ? n - first : std::max(1, n / parts);
    const int st = b->submit(first, count, &op[first], &lo[first], &re[first], &len[first]);
    if (k >= cancel_after && cancel_after >= 0) {
      CHECK(st == te4j::kIllegalState, "submit after cancel: %d (%s)", st, b->lastError());
      return first;
    }
    CHECK(st == te4j::kOk, "submit part %d: %d (%s)", k, st, b->lastError());
    if (st != te4j::kOk) return first;
    first += count;
  }
  if (cancel_after == parts) CHECK(b->cancel() == te4j::kOk, "cancel: %s", b->lastError());
  return first;
}

// Checks the states and the bytes of the first `submitted` requests; untouched elsewhere.
void verify(te4j::TransferBatch* b, const Regions& g, const std::vector<Request>& p, int submitted,
            bool may_time_out, const char* what) {
  CHECK(b->wait(30'000'000'000LL) == te4j::kOk, "%s: wait: %s", what, b->lastError());
  std::vector<int32_t> st(p.size(), -1);
  if (submitted > 0) CHECK(b->states(0, submitted, st.data()) == te4j::kOk, "%s: states", what);
  std::vector<uint8_t> l(kRegion), r(kRegion);
  CUDA_OK(cudaMemcpy(l.data(), g.local, kRegion, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(r.data(), g.remote, kRegion, cudaMemcpyDeviceToHost));
  std::vector<uint8_t> want_l = g.l, want_r = g.r;
  for (int i = 0; i < submitted; ++i) {
    const Request& q = p[i];
    const bool ok = st[i] == te4j::kRequestCompleted;
    CHECK(ok || (may_time_out && st[i] == te4j::kRequestTimeout), "%s: request %d state %d", what,
          i, st[i]);
    if (!ok) continue;
    if (q.opcode == te4j::kBatchRead) {
      std::memcpy(&want_l[q.local_off], &g.r[q.remote_off], q.len);
    } else {
      std::memcpy(&want_r[q.remote_off], &g.l[q.local_off], q.len);
    }
  }
  size_t bad = 0, at = 0;
  for (size_t i = 0; i < kRegion; ++i) {
    if (l[i] != want_l[i] || r[i] != want_r[i]) {
      if (bad++ == 0) at = i;
    }
  }
  CHECK(bad == 0, "%s: %zu bytes differ, first at offset %zu", what, bad, at);
}

}  // namespace

int main() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::printf("SKIP: no usable CUDA device (%s)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 0;
  }
  CUDA_OK(cudaSetDevice(0));
  Regions g;
  CUDA_OK(cudaMalloc(&g.local, kRegion));
  CUDA_OK(cudaMalloc(&g.remote, kRegion));
  g.l.resize(kRegion);
  g.r.resize(kRegion);
  std::mt19937_64 rng(20261202);
  // Capacities that share a class (100, 128) and others, again and again: pooled sets reused.
  const int capacities[] = {100, 128, 7, 300, 100, 1, 128, 1000, 7, 300};
  int batches = 0;
  for (int round = 0; round < 2; ++round) {
    for (int cap : capacities) {
      const std::vector<Request> all = plan(rng, cap, 8u << 20);
      const int parts = 1 + (int)(rng() % 3);
      fill(rng, &g, all);
      std::unique_ptr<te4j::TransferBatch> b(
          te4j::TransferBatch::create(te4j::kPlatformCuda, 0, cap));
      CHECK(b && b->status() == te4j::kOk, "create(%d): %s", cap, b ? b->lastError() : "null");
      if (!b || b->status() != te4j::kOk) return 1;
      const int submitted = run(b.get(), g, all, parts, -1);
      char what[64];
      std::snprintf(what, sizeof what, "batch %d (capacity %d, %d parts)", batches++, cap, parts);
      verify(b.get(), g, all, submitted, false, what);
    }
  }
  // One request longer than a small batch's whole arena: a block of its own.
  {
    std::vector<Request> big = {{te4j::kBatchWrite, 4096, 12345, 16u << 20},
                                {te4j::kBatchRead, (20u << 20) + 3, (40u << 20) + 1, 5000}};
    fill(rng, &g, big);
    std::unique_ptr<te4j::TransferBatch> b(te4j::TransferBatch::create(te4j::kPlatformCuda, 0, 2));
    verify(b.get(), g, big, run(b.get(), g, big, 2, -1), false, "overflow block");
  }
  // Cancelled before the first part: nothing is submitted; after the first: the rest refused,
  // and each submitted request all or nothing.
  for (int cancel_after : {0, 1, 2}) {
    const std::vector<Request> all = plan(rng, 600, 4u << 20);
    fill(rng, &g, all);
    std::unique_ptr<te4j::TransferBatch> b(
        te4j::TransferBatch::create(te4j::kPlatformCuda, 0, 600));
    const int submitted = run(b.get(), g, all, 2, cancel_after);
    char what[64];
    std::snprintf(what, sizeof what, "cancel after %d parts", cancel_after);
    verify(b.get(), g, all, submitted, true, what);
  }
  // Destroyed with its kernel running: the destructor waits, the next batch reuses the set.
  for (int i = 0; i < 3; ++i) {
    const std::vector<Request> all = plan(rng, 64, 8u << 20);
    fill(rng, &g, all);
    {
      std::unique_ptr<te4j::TransferBatch> b(
          te4j::TransferBatch::create(te4j::kPlatformCuda, 0, 64));
      run(b.get(), g, all, 1, -1);
    }
    std::unique_ptr<te4j::TransferBatch> b(te4j::TransferBatch::create(te4j::kPlatformCuda, 0, 64));
    const std::vector<Request> again = plan(rng, 64, 1u << 20);
    fill(rng, &g, again);
    verify(b.get(), g, again, run(b.get(), g, again, 1, -1), false, "after a destroyed one");
  }
  const std::size_t freed = te4j::releaseCachedMemory();
  CHECK(freed > 0, "releaseCachedMemory freed nothing after %d batches", batches);
  CHECK(te4j::releaseCachedMemory() == 0, "a second releaseCachedMemory freed more");
  CUDA_OK(cudaFree(g.local));
  CUDA_OK(cudaFree(g.remote));
  if (g_fail != 0) {
    std::printf("FAILED: %d checks\n", g_fail);
    return 1;
  }
  std::printf(
      "OK: %d pooled batches, an overflow block, 3 cancels, 3 destroyed mid-run;"
      " releaseCachedMemory freed %zu B\n",
      batches, freed);
  return 0;
}
