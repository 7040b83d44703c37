// test_transfer_list_cuda_with_lib.cu — libte4j's CUDA TransferList as a caller of
// te4j/list_api.h sees it, on one GPU: random lists (1 B .. 16 MiB, READ and WRITE between two
// device regions, multi-chunk copies included) prepared once and posted many times, whole and
// as ranges, with the sources rewritten between posts and every destination poisoned and checked
// byte for byte; a cancel right after a post (every request COMPLETED with its bytes or TIMEOUT
// with its poison, the skipped count matching) and a whole post after it; a post while one runs
// (refused); 4096 x 4 KiB reposted 200 times; a list destroyed while its kernel runs. Every
// CUDA call is checked. Exit 0 = passed or "SKIP: ...", 1 = failed. Run it under
// compute-sanitizer on the GPU host.
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
#include "te4j/list_api.h"

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
constexpr int64_t kWait = 30'000'000'000LL;

struct Request {
  int32_t opcode;
  size_t local_off, remote_off, len;
};

// Requests with disjoint destinations and sources, in random order.
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
  std::vector<uint8_t> l, r;  // what the host wrote: random bytes, poison at destinations
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

te4j::TransferList* prepare(const Regions& g, const std::vector<Request>& p) {
  std::vector<int32_t> op;
  std::vector<uint64_t> lo, re, len;
  for (const Request& q : p) {
    op.push_back(q.opcode);
    lo.push_back((uint64_t)(uintptr_t)(g.local + q.local_off));
    re.push_back((uint64_t)(uintptr_t)(g.remote + q.remote_off));
    len.push_back(q.len);
  }
  return te4j::TransferList::create(te4j::kPlatformCuda, 0, (int)p.size(), op.data(), lo.data(),
                                    re.data(), len.data());
}

// After the post of [from, to) ended: states and bytes; requests outside the range untouched.
void verify(te4j::TransferList* list, const Regions& g, const std::vector<Request>& p, int from,
            int to, bool may_skip, const char* what) {
  CHECK(list->wait(kWait) == te4j::kOk, "%s: wait: %s", what, list->lastError());
  CHECK(list->poll() == 1, "%s: poll after the wait", what);
  const int skipped = list->skipped();
  CHECK(skipped >= 0 && (may_skip || skipped == 0), "%s: skipped %d", what, skipped);
  std::vector<int32_t> st(p.size(), -1);
  CHECK(list->states(0, (int)p.size(), st.data()) == te4j::kOk, "%s: states: %s", what,
        list->lastError());
  std::vector<uint8_t> l(kRegion), r(kRegion);
  CUDA_OK(cudaMemcpy(l.data(), g.local, kRegion, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(r.data(), g.remote, kRegion, cudaMemcpyDeviceToHost));
  std::vector<uint8_t> want_l = g.l, want_r = g.r;
  int timed_out = 0;
  for (int i = from; i < to; ++i) {
    const Request& q = p[i];
    const bool ok = st[i] == te4j::kRequestCompleted;
    CHECK(ok || (may_skip && st[i] == te4j::kRequestTimeout), "%s: request %d state %d", what, i,
          st[i]);
    if (!ok) {
      ++timed_out;
      continue;
    }
    if (q.opcode == te4j::kBatchRead) {
      std::memcpy(&want_l[q.local_off], &g.r[q.remote_off], q.len);
    } else {
      std::memcpy(&want_r[q.remote_off], &g.l[q.local_off], q.len);
    }
  }
  CHECK(timed_out == skipped, "%s: %d requests TIMEOUT, the record says %d skipped", what,
        timed_out, skipped);
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
  std::mt19937_64 rng(20261206);
  int posts = 0;
  for (int count : {1, 7, 100, 300, 1000}) {
    const std::vector<Request> p = plan(rng, count, 16u << 20);
    std::unique_ptr<te4j::TransferList> list(prepare(g, p));
    CHECK(list && list->status() == te4j::kOk, "create(%d): %s", count,
          list ? list->lastError() : "null");
    if (!list || list->status() != te4j::kOk) return 1;
    const int size = list->size();
    for (int round = 0; round < 6; ++round) {
      fill(rng, &g, p);
      const int from = round % 2 == 0 ? 0 : (int)(rng() % size);
      const int to = round % 2 == 0 ? size : from + 1 + (int)(rng() % (size - from));
      CHECK(list->post(from, to) == te4j::kOk, "post: %s", list->lastError());
      char what[96];
      std::snprintf(what, sizeof what, "list of %d, post %d [%d, %d)", size, posts++, from, to);
      verify(list.get(), g, p, from, to, false, what);
    }
    // Cancel right after a post, then a whole post: the cancel never reaches it.
    fill(rng, &g, p);
    CHECK(list->post(0, size) == te4j::kOk, "post: %s", list->lastError());
    // Refused while the first runs; accepted only when it had already ended.
    const int again = list->post(0, size);
    CHECK(again == te4j::kIllegalState || again == te4j::kOk, "a second post: %d", again);
    CHECK(list->cancel() == te4j::kOk, "cancel: %s", list->lastError());
    verify(list.get(), g, p, 0, size, true, "cancelled post");
    fill(rng, &g, p);
    CHECK(list->post(0, size) == te4j::kOk, "post after cancel: %s", list->lastError());
    verify(list.get(), g, p, 0, size, false, "post after the cancelled one");
    CHECK(list->post(size, size + 1) == te4j::kInvalidArgument, "a range outside was accepted");
    CHECK(list->post(1, 1) == te4j::kInvalidArgument || size == 1, "an empty range was accepted");
  }
  // The bench's shape: 4096 x 4 KiB, reposted 200 times; bytes checked at the end.
  {
    std::vector<Request> p;
    for (int i = 0; i < 4096; ++i) {
      p.push_back(Request{te4j::kBatchWrite, (size_t)i * 4096,
                          (size_t)((i * 2654435761ull) % 8192) * 4096, 4096});
    }
    fill(rng, &g, p);
    std::unique_ptr<te4j::TransferList> list(prepare(g, p));
    CHECK(list && list->status() == te4j::kOk, "create(4096): %s", list ? list->lastError() : "");
    if (!list || list->status() != te4j::kOk) return 1;
    for (int k = 0; k < 200; ++k) {
      CHECK(list->post(0, 4096) == te4j::kOk, "repost %d: %s", k, list->lastError());
      CHECK(list->wait(kWait) == te4j::kOk, "repost %d: wait: %s", k, list->lastError());
    }
    verify(list.get(), g, p, 0, 4096, false, "4096 x 4 KiB after 200 posts");
  }
  // Destroyed while its kernel runs: the destructor cancels and waits, nothing faults.
  {
    std::vector<Request> p;
    for (int i = 0; i < 64; ++i) {
      p.push_back(Request{te4j::kBatchWrite, 0, (size_t)(i % 4) * (16u << 20), 16u << 20});
    }
    std::unique_ptr<te4j::TransferList> list(prepare(g, p));
    CHECK(list && list->status() == te4j::kOk, "create: %s", list ? list->lastError() : "");
    if (list && list->status() == te4j::kOk) CHECK(list->post(0, 64) == te4j::kOk, "post");
    list.reset();
  }
  te4j::releaseCachedMemory();
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaFree(g.local));
  CUDA_OK(cudaFree(g.remote));
  if (g_fail != 0) {
    std::printf("FAILED: %d checks\n", g_fail);
    return 1;
  }
  std::printf("PASS: %d posts of random lists, 200 reposts of 4096 x 4 KiB\n", posts);
  return 0;
}
