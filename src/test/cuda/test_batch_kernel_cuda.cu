// test_batch_kernel_cuda.cu — the transfer-batch kernel (batch/kernels/batch_copy_kernel.cuh)
// on one GPU, without libte4j: random batches of copies (1 B .. 16 MiB, random offsets and
// alignments, READ-like and WRITE-like directions between two device regions) into poisoned
// destinations, checked byte for byte on the host, poison around every destination included;
// a cancelled batch, whose copies must be all-or-nothing (TIMEOUT copies leave their poison);
// and one large batch split into many chunks. Every CUDA call is checked. Exit 0 = passed or
// "SKIP: ..." (no GPU or driver), 1 = failed. Run it under compute-sanitizer on the GPU host.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "batch/kernels/batch_copy_kernel.cuh"

using namespace te4j::batch;

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

constexpr uint8_t kPoison = 0xa5;
constexpr size_t kRegion = 256u << 20;  // each of the two regions

struct Planned {
  size_t src_off, dst_off, len;
  bool to_b;  // a -> b ("WRITE") or b -> a ("READ")
};

// Disjoint destination ranges: lengths laid out in order with random gaps.
std::vector<Planned> plan(std::mt19937_64& rng, int count, size_t max_len) {
  std::vector<Planned> out;
  size_t pos_a = 64, pos_b = 64;
  for (int i = 0; i < count; ++i) {
    const int kind = (int)(rng() % 10);
    size_t len = kind < 4   ? 1 + rng() % 4096
                 : kind < 8 ? 4096 + rng() % (256 << 10)
                            : (256 << 10) + rng() % max_len;
    if (len > max_len) len = max_len;
    Planned p;
    p.to_b = (rng() & 1) != 0;
    size_t& pos = p.to_b ? pos_b : pos_a;
    pos += rng() % 97;  // odd gaps: every alignment of the destination occurs
    // Destinations in the lower half, sources in the upper: no copy reads what another writes.
    if (pos + len + 64 > kRegion / 2) break;
    p.dst_off = pos;
    p.src_off = kRegion / 2 + rng() % (kRegion / 2 - len);
    p.len = len;
    pos += len + 64;  // 64 poisoned bytes after each destination at least
    out.push_back(p);
  }
  return out;
}

uint8_t patternA(size_t i) { return (uint8_t)((i * 2654435761u) >> 11); }
uint8_t patternB(size_t i) { return (uint8_t)((i * 40503u + 17) >> 3); }

struct Run {
  std::vector<int32_t> states;
  float ms = 0;
};

// Launches one batch over the copies, with the cancel word set before the launch if asked.
Run runBatch(const std::vector<BatchCopy>& copies, bool cancel_first, cudaStream_t s) {
  std::vector<BatchProgress> progress(copies.size());
  std::vector<BatchChunk> chunks(chunkCount(copies.data(), (uint32_t)copies.size()));
  const uint64_t n = splitIntoChunks(copies.data(), (uint32_t)copies.size(), chunks.data(),
                                     chunks.size(), progress.data());
  CHECK(n == chunks.size(), "split gave %llu chunks, expected %zu", (unsigned long long)n,
        chunks.size());
  BatchCopy* d_copies;
  BatchChunk* d_chunks;
  BatchProgress* d_progress;
  CUDA_OK(cudaMalloc(&d_copies, copies.size() * sizeof(BatchCopy)));
  CUDA_OK(cudaMalloc(&d_chunks, chunks.size() * sizeof(BatchChunk)));
  CUDA_OK(cudaMalloc(&d_progress, progress.size() * sizeof(BatchProgress)));
  CUDA_OK(cudaMemcpy(d_copies, copies.data(), copies.size() * sizeof(BatchCopy),
                     cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_chunks, chunks.data(), chunks.size() * sizeof(BatchChunk),
                     cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_progress, progress.data(), progress.size() * sizeof(BatchProgress),
                     cudaMemcpyHostToDevice));
  // States and the cancel word in device memory, as libte4j's batch keeps them.
  int32_t* d_words;
  CUDA_OK(cudaMalloc(&d_words, (copies.size() + 1) * sizeof(int32_t)));
  CUDA_OK(cudaMemset(d_words, 0, (copies.size() + 1) * sizeof(int32_t)));
  if (cancel_first) {
    const int32_t one = 1;
    CUDA_OK(cudaMemcpy(d_words + copies.size(), &one, sizeof(one), cudaMemcpyHostToDevice));
  }
  int sms = 0;
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaEvent_t a, b;
  CUDA_OK(cudaEventCreate(&a));
  CUDA_OK(cudaEventCreate(&b));
  CUDA_OK(cudaEventRecord(a, s));
  batchCopyKernel<<<batchBlocks(n, sms * 8), kBatchThreads, 0, s>>>(
      d_copies, d_chunks, n, d_progress, d_words, d_words + copies.size());
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaEventRecord(b, s));
  CUDA_OK(cudaStreamSynchronize(s));
  Run r;
  CUDA_OK(cudaEventElapsedTime(&r.ms, a, b));
  r.states.resize(copies.size());
  CUDA_OK(cudaMemcpy(r.states.data(), d_words, copies.size() * sizeof(int32_t),
                     cudaMemcpyDeviceToHost));
  CUDA_OK(cudaEventDestroy(a));
  CUDA_OK(cudaEventDestroy(b));
  CUDA_OK(cudaFree(d_words));
  CUDA_OK(cudaFree(d_copies));
  CUDA_OK(cudaFree(d_chunks));
  CUDA_OK(cudaFree(d_progress));
  return r;
}

void resetRegions(uint8_t* d_a, uint8_t* d_b, std::vector<uint8_t>& a, std::vector<uint8_t>& b) {
  for (size_t i = 0; i < kRegion; ++i) {
    a[i] = patternA(i);
    b[i] = patternB(i);
  }
  CUDA_OK(cudaMemcpy(d_a, a.data(), kRegion, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_b, b.data(), kRegion, cudaMemcpyHostToDevice));
}

// Destinations must be poisoned first and sources hold their pattern: the lower 64 bytes of
// each region and every gap are the poison, every destination range gets the source bytes.
void poisonDestinations(uint8_t* d_a, uint8_t* d_b, const std::vector<Planned>& p) {
  for (const Planned& x : p)
    CUDA_OK(cudaMemset((x.to_b ? d_b : d_a) + x.dst_off, kPoison, x.len + 64));
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
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint8_t *d_a, *d_b;
  CUDA_OK(cudaMalloc(&d_a, kRegion));
  CUDA_OK(cudaMalloc(&d_b, kRegion));
  std::vector<uint8_t> a(kRegion), b(kRegion), got(kRegion);
  std::mt19937_64 rng(20261202);

  for (int round = 0; round < 4; ++round) {
    const bool cancel = round == 3;
    resetRegions(d_a, d_b, a, b);
    const std::vector<Planned> p = plan(rng, 400, 16u << 20);
    poisonDestinations(d_a, d_b, p);
    // The sources as they are now (a destination's poison may be another request's source).
    CUDA_OK(cudaMemcpy(a.data(), d_a, kRegion, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(b.data(), d_b, kRegion, cudaMemcpyDeviceToHost));
    // Sources read from the other region only, destinations disjoint: the result is defined.
    std::vector<BatchCopy> copies;
    for (const Planned& x : p) {
      const uint8_t* src = x.to_b ? d_a : d_b;
      uint8_t* dst = x.to_b ? d_b : d_a;
      copies.push_back(BatchCopy{(uint64_t)(uintptr_t)(src + x.src_off),
                                 (uint64_t)(uintptr_t)(dst + x.dst_off), x.len});
    }
    const Run r = runBatch(copies, cancel, s);
    std::vector<uint8_t> want_a = a, want_b = b;
    for (size_t i = 0; i < p.size(); ++i) {
      const int32_t st = r.states[i];
      CHECK(st == (cancel ? kStateTimeout : kStateCompleted), "round %d copy %zu: state %d", round,
            i, st);
      if (st != kStateCompleted) continue;
      const std::vector<uint8_t>& src = p[i].to_b ? a : b;
      std::vector<uint8_t>& dst = p[i].to_b ? want_b : want_a;
      std::memcpy(dst.data() + p[i].dst_off, src.data() + p[i].src_off, p[i].len);
    }
    CUDA_OK(cudaMemcpy(got.data(), d_a, kRegion, cudaMemcpyDeviceToHost));
    CHECK(std::memcmp(got.data(), want_a.data(), kRegion) == 0, "round %d: region a differs",
          round);
    CUDA_OK(cudaMemcpy(got.data(), d_b, kRegion, cudaMemcpyDeviceToHost));
    CHECK(std::memcmp(got.data(), want_b.data(), kRegion) == 0, "round %d: region b differs",
          round);
    size_t bytes = 0;
    for (const Planned& x : p) bytes += x.len;
    std::printf(
        "round %d: %zu copies, %zu bytes, %s, kernel %.3f ms\n", round, p.size(), bytes,
        cancel ? "cancelled (all TIMEOUT, destinations untouched)" : "all COMPLETED and verified",
        r.ms);
  }

  // KV-cache shapes: N x S scattered in region b, gathered into region a; kernel time beside one
  // contiguous copy of the same bytes (printed, not asserted).
  const size_t shapes[][2] = {{4096, 4096}, {1024, 16384}, {256, 65536}, {64, 1u << 20}};
  for (const auto& sh : shapes) {
    std::vector<BatchCopy> copies;
    const size_t slots = kRegion / sh[1];
    std::vector<size_t> order(slots);
    for (size_t i = 0; i < slots; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < sh[0]; ++i)
      copies.push_back(BatchCopy{(uint64_t)(uintptr_t)(d_b + order[i] * sh[1]),
                                 (uint64_t)(uintptr_t)(d_a + i * sh[1]), sh[1]});
    CUDA_OK(cudaMemset(d_a, kPoison, sh[0] * sh[1]));
    runBatch(copies, false, s);  // warm-up
    const Run r = runBatch(copies, false, s);
    for (size_t i = 0; i < copies.size(); ++i)
      CHECK(r.states[i] == kStateCompleted, "shape copy %zu", i);
    CUDA_OK(cudaMemcpy(got.data(), d_a, sh[0] * sh[1], cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(b.data(), d_b, kRegion, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < sh[0]; ++i)
      CHECK(std::memcmp(got.data() + i * sh[1], b.data() + order[i] * sh[1], sh[1]) == 0,
            "shape %zux%zu block %zu", sh[0], sh[1], i);
    cudaEvent_t x, y;
    CUDA_OK(cudaEventCreate(&x));
    CUDA_OK(cudaEventCreate(&y));
    CUDA_OK(cudaEventRecord(x, s));
    CUDA_OK(cudaMemcpyAsync(d_a, d_b, sh[0] * sh[1], cudaMemcpyDeviceToDevice, s));
    CUDA_OK(cudaEventRecord(y, s));
    CUDA_OK(cudaStreamSynchronize(s));
    float contiguous = 0;
    CUDA_OK(cudaEventElapsedTime(&contiguous, x, y));
    CUDA_OK(cudaEventDestroy(x));
    CUDA_OK(cudaEventDestroy(y));
    std::printf("shape %zu x %zu: batch kernel %.1f us, one contiguous copy %.1f us\n", sh[0],
                sh[1], r.ms * 1000, contiguous * 1000);
  }
  CUDA_OK(cudaFree(d_a));
  CUDA_OK(cudaFree(d_b));
  CUDA_OK(cudaStreamDestroy(s));
  std::printf("%s test_batch_kernel_cuda\n", g_fail == 0 ? "PASS" : "FAIL");
  return g_fail == 0 ? 0 : 1;
}
