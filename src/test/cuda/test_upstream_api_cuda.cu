// test_upstream_api_cuda.cu — upstream Mooncake's Device API names in CUDA kernels written the
// way upstream's clients write theirs (the transfer-engine example, the EP kernels), compiled
// by nvcc against te4j's headers and, where a GPU exists, run with all ranks on device 0.
//
// Without a CUDA device it prints SKIP and exits 0. With one, every check compares against
// values computed on the host from random data, and destinations start poisoned (0xa5):
//   ops        int-word acquire/release-store/release-add (negative too), non-coherent scalar
//              and 16-byte loads, non-allocating stores, const-pointer u32/u64 release stores,
//              named barriers of two warp groups (mc_bar_sync(id, n)), mc_fence_barrier_fence
//   grid       mc_grid_sync under a cooperative launch (skipped where unsupported)
//   put        every rank puts random data to every rank (mc_route_put + warp copy) and signals
//              with upstream's int* mc_signal (a store); receivers wait with mc_ld_acquire
//   counters   many writers: te4j's uint32_t mc_red_add adds (exact total), upstream's int*
//              mc_red_add stores (one of the written values)
//   rdma       an RDMA-only rank with contexts built by the 11-argument make_comm_ctx: the QP
//              chosen (dst * qps_per_rank + channel % qps_per_rank, from the caller's
//              qps_per_rank) and every failed post in an error record (context's, QP's)
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <vector>

#include "transport/device/comm_device.cuh"

using namespace mooncake::device;

namespace {

int g_failures = 0;

#define EXPECT(cond, ...)                                             \
  do {                                                                \
    if (!(cond)) {                                                    \
      ++g_failures;                                                   \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
    }                                                                 \
  } while (0)

#define CUDA_OK(call)                                                                             \
  do {                                                                                            \
    const cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "FAIL %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

constexpr int kRanks = 4;
constexpr size_t kBytes = 1 << 20;
constexpr size_t kSigOffset = 0;        // int[kRanks]: upstream-style signal per sender
constexpr size_t kCounterOffset = 256;  // uint32_t: te4j counter; int: upstream counter at +4
constexpr size_t kSlotOffset = 4096;    // kRanks slots of kSlotBytes: data from each sender
constexpr size_t kSlotBytes = 64 * 1024;
constexpr size_t kPutBytes = kSlotBytes - 16 * 13;  // not a multiple of a warp's 512 bytes
constexpr int kOpsThreads = 256;
constexpr uint64_t kWaitNs = 5000000000ull;

// ---- ops ----

struct OpsOut {
  int acquired;
  int after_store;
  int old_add;
  int old_negative;
  int final_word;
  uint32_t u32;
  uint64_t u64;
};

__global__ void opsKernel(int* word, const int* s32, const float* f32, const int64_t* s64,
                          int* s32_out, float* f32_out, int64_t* s64_out, const int4* v_in,
                          int4* v_out, int add, uint32_t* u32, uint64_t* u64, int* group_out,
                          OpsOut* out) {
  __shared__ int exchange[kOpsThreads];
  const int tid = threadIdx.x;
  mc_bar_init();
  if (tid == 0) {
    mc_st_release(word, 41);
    out->acquired = mc_ld_acquire(word);
    mc_st_release(word, 3);
    out->after_store = mc_ld_acquire(word);
    out->old_add = mc_atomic_add_release(word, add);
    out->old_negative = mc_atomic_add_release(word, -(add + 5));
    out->final_word = mc_ld_acquire(word);
    mc_st_release_u32((const uint32_t*)u32, 0xdeadbeefu);
    mc_st_release_u64((const uint64_t*)u64, 0x0123456789abcdefull);
    out->u32 = mc_ld_acquire_u32(u32);
    out->u64 = mc_ld_acquire_u64(u64);
  }
  s32_out[tid] = mc_ld_nc_s32(s32 + tid);
  f32_out[tid] = mc_ld_nc_f32(f32 + tid);
  s64_out[tid] = mc_ld_nc_s64(s64 + tid);
  mc_st_na(v_out + tid, mc_ld_nc(v_in + tid));
  // Two warp groups of 128 threads, each meeting on its own named barrier (ids 1 and 2, as
  // upstream's EP kernels number theirs), then reading a neighbour's value of its group.
  const int group = tid / 128;
  exchange[tid] = tid * 7 + 1;
  mc_bar_sync(group + 1, 128);
  const int neighbour = group * 128 + ((tid % 128) + 1) % 128;
  group_out[tid] = exchange[neighbour];
  mc_fence_barrier_fence();
  mc_fence();
}

template <typename T>
T* deviceCopy(const std::vector<T>& host) {
  T* d = nullptr;
  CUDA_OK(cudaMalloc((void**)&d, sizeof(T) * host.size()));
  CUDA_OK(cudaMemcpy(d, host.data(), sizeof(T) * host.size(), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
std::vector<T> hostCopy(const T* d, size_t n) {
  std::vector<T> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, sizeof(T) * n, cudaMemcpyDeviceToHost));
  return h;
}

void testOps(std::mt19937& rng) {
  std::vector<int> s32(kOpsThreads);
  std::vector<float> f32(kOpsThreads);
  std::vector<int64_t> s64(kOpsThreads);
  std::vector<int4> v(kOpsThreads);
  for (int i = 0; i < kOpsThreads; ++i) {
    s32[i] = (int)rng();
    f32[i] = (float)(rng() % 100000) / 9.0f;
    s64[i] = ((int64_t)rng() << 32) | rng();
    v[i] = make_int4((int)rng(), (int)rng(), (int)rng(), (int)rng());
  }
  int* d_s32 = deviceCopy(s32);
  float* d_f32 = deviceCopy(f32);
  int64_t* d_s64 = deviceCopy(s64);
  int4* d_v = deviceCopy(v);
  int *d_s32o, *d_word, *d_group;
  float* d_f32o;
  int64_t* d_s64o;
  int4* d_vo;
  uint32_t* d_u32;
  uint64_t* d_u64;
  OpsOut* d_out;
  CUDA_OK(cudaMalloc((void**)&d_s32o, sizeof(int) * kOpsThreads));
  CUDA_OK(cudaMalloc((void**)&d_f32o, sizeof(float) * kOpsThreads));
  CUDA_OK(cudaMalloc((void**)&d_s64o, sizeof(int64_t) * kOpsThreads));
  CUDA_OK(cudaMalloc((void**)&d_vo, sizeof(int4) * kOpsThreads));
  CUDA_OK(cudaMalloc((void**)&d_group, sizeof(int) * kOpsThreads));
  CUDA_OK(cudaMalloc((void**)&d_word, sizeof(int)));
  CUDA_OK(cudaMalloc((void**)&d_u32, sizeof(uint32_t)));
  CUDA_OK(cudaMalloc((void**)&d_u64, sizeof(uint64_t)));
  CUDA_OK(cudaMalloc((void**)&d_out, sizeof(OpsOut)));
  CUDA_OK(cudaMemset(d_vo, 0xa5, sizeof(int4) * kOpsThreads));
  CUDA_OK(cudaMemset(d_s32o, 0xa5, sizeof(int) * kOpsThreads));
  const int add = (int)(rng() % 1000) + 10;
  opsKernel<<<1, kOpsThreads>>>(d_word, d_s32, d_f32, d_s64, d_s32o, d_f32o, d_s64o, d_v, d_vo, add,
                                d_u32, d_u64, d_group, d_out);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  const OpsOut out = hostCopy(d_out, 1)[0];
  EXPECT(out.acquired == 41 && out.after_store == 3, "release store replaces: %d %d", out.acquired,
         out.after_store);
  EXPECT(out.old_add == 3 && out.old_negative == 3 + add && out.final_word == -2,
         "release add: old %d, %d, final %d", out.old_add, out.old_negative, out.final_word);
  EXPECT(out.u32 == 0xdeadbeefu && out.u64 == 0x0123456789abcdefull, "const-pointer stores");
  EXPECT(hostCopy(d_s32o, kOpsThreads) == s32, "mc_ld_nc_s32");
  EXPECT(hostCopy(d_f32o, kOpsThreads) == f32, "mc_ld_nc_f32");
  EXPECT(hostCopy(d_s64o, kOpsThreads) == s64, "mc_ld_nc_s64");
  const std::vector<int4> vo = hostCopy(d_vo, kOpsThreads);
  EXPECT(memcmp(vo.data(), v.data(), sizeof(int4) * kOpsThreads) == 0, "mc_ld_nc + mc_st_na copy");
  const std::vector<int> group = hostCopy(d_group, kOpsThreads);
  bool ok = true;
  for (int t = 0; t < kOpsThreads; ++t) {
    const int g = t / 128;
    ok = ok && group[t] == (g * 128 + ((t % 128) + 1) % 128) * 7 + 1;
  }
  EXPECT(ok, "named barriers: every thread saw its group's writes");
  cudaFree(d_s32);
  cudaFree(d_f32);
  cudaFree(d_s64);
  cudaFree(d_v);
  cudaFree(d_s32o);
  cudaFree(d_f32o);
  cudaFree(d_s64o);
  cudaFree(d_vo);
  cudaFree(d_group);
  cudaFree(d_word);
  cudaFree(d_u32);
  cudaFree(d_u64);
  cudaFree(d_out);
}

// ---- grid ----

__global__ void gridKernel(const int* values, int* staged, int* out) {
  const int b = blockIdx.x;
  if (threadIdx.x == 0) staged[b] = values[b] * 3;
  mc_grid_sync();
  if (threadIdx.x == 0) out[b] = staged[(b + 1) % gridDim.x];
}

void testGridSync(std::mt19937& rng) {
  int device = 0;
  int cooperative = 0;
  int sms = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (!cooperative) {
    printf("grid: SKIP (no cooperative launch on this device)\n");
    return;
  }
  const int blocks = sms;  // one block per SM is always co-resident
  std::vector<int> values(blocks);
  for (int& x : values) x = (int)(rng() % 100000);
  int* d_values = deviceCopy(values);
  int *d_staged, *d_out;
  CUDA_OK(cudaMalloc((void**)&d_staged, sizeof(int) * blocks));
  CUDA_OK(cudaMalloc((void**)&d_out, sizeof(int) * blocks));
  CUDA_OK(cudaMemset(d_out, 0xa5, sizeof(int) * blocks));
  void* args[] = {&d_values, &d_staged, &d_out};
  CUDA_OK(cudaLaunchCooperativeKernel((void*)gridKernel, dim3(blocks), dim3(64), args, 0, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<int> out = hostCopy(d_out, blocks);
  bool ok = true;
  for (int b = 0; b < blocks; ++b) ok = ok && out[b] == values[(b + 1) % blocks] * 3;
  EXPECT(ok, "mc_grid_sync: every block saw every other block's write (%d blocks)", blocks);
  cudaFree(d_values);
  cudaFree(d_staged);
  cudaFree(d_out);
}

// ---- put + signal, counters ----

struct RankTables {
  uint8_t* base[kRanks];
  int32_t* available;  // device: int32_t[kRanks], all 1
  void** peer_ptrs;    // device: the buffers
};

// One warp per destination, as upstream's kernels copy: lane-strided 16-byte non-coherent
// loads and non-allocating stores, then lane 0 signals.
__global__ void senderKernel(void* gdr_buffer, const int32_t* available, void* const* peer_ptrs,
                             int rank, size_t bytes, int signal_value, uint32_t te4j_add,
                             int upstream_value) {
  const CommCtx ctx = make_comm_ctx(gdr_buffer, available, peer_ptrs, nullptr, nullptr, nullptr,
                                    nullptr, nullptr, rank, kRanks, 256);
  const int dst = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (dst >= kRanks) return;
  uint8_t* local = (uint8_t*)ctx.p2p.local_base;
  uint8_t* slot = local + kSlotOffset + (size_t)rank * kSlotBytes;  // my slot, at every rank
  void* dst_ptr = mc_route_put(ctx, dst, slot);
  if (dst_ptr == nullptr) {
    if (lane == 0) printf("rank %d: no P2P route to %d\n", rank, dst);
    return;
  }
  const int4* src = (const int4*)(local + kSlotOffset + (size_t)kRanks * kSlotBytes);
  for (size_t i = (size_t)lane; i < bytes / 16; i += 32) {
    mc_st_na((int4*)dst_ptr + i, mc_ld_nc(src + i));
  }
  __syncwarp();
  if (lane == 0) {
    mc_fence();
    int* sig = (int*)(local + kSigOffset) + rank;
    mc_signal(ctx, dst, 0, 1, sig, signal_value);
  }
  if (lane == 0 && dst == 0) {  // once per sender: the many-writer counters at rank 0
    mc_red_add(ctx, 0, 0, 1, (uint32_t*)(local + kCounterOffset), te4j_add);
    mc_red_add(ctx, 0, 0, 1, (int*)(local + kCounterOffset + 4), upstream_value);
  }
}

__global__ void receiverKernel(void* gdr_buffer, int src_rank, int expected, size_t bytes,
                               const uint8_t* reference, int* result) {
  const uint8_t* local = (const uint8_t*)gdr_buffer;
  const int* sig = (const int*)(local + kSigOffset) + src_rank;
  if (threadIdx.x == 0) {
    const uint64_t deadline = mc_globaltimer_ns() + kWaitNs;
    while (mc_ld_acquire(sig) != expected && mc_globaltimer_ns() < deadline) {
    }
    result[0] = mc_ld_acquire(sig) == expected ? 1 : 0;
  }
  __syncthreads();
  if (result[0] != 1) return;
  const uint8_t* slot = local + kSlotOffset + (size_t)src_rank * kSlotBytes;
  int mismatches = 0;
  for (size_t i = threadIdx.x; i < kSlotBytes; i += blockDim.x) {
    const uint8_t want = i < bytes ? reference[i] : 0xa5;
    if (slot[i] != want) ++mismatches;
  }
  atomicAdd(result + 1, mismatches);
}

void testPutSignal(std::mt19937& rng, const RankTables& t) {
  for (int r = 0; r < kRanks; ++r) CUDA_OK(cudaMemset(t.base[r], 0xa5, kBytes));
  for (int r = 0; r < kRanks; ++r) CUDA_OK(cudaMemset(t.base[r], 0, kSlotOffset));
  std::vector<std::vector<uint8_t>> data(kRanks, std::vector<uint8_t>(kPutBytes));
  std::vector<int> signal(kRanks);
  std::vector<int> upstream_values(kRanks);
  uint32_t te4j_total = 0;
  std::vector<uint32_t> te4j_adds(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    for (uint8_t& b : data[r]) b = (uint8_t)rng();
    // the source staging area after the slots
    CUDA_OK(cudaMemcpy(t.base[r] + kSlotOffset + (size_t)kRanks * kSlotBytes, data[r].data(),
                       kPutBytes, cudaMemcpyHostToDevice));
    signal[r] = (int)(rng() % 100000) + 1;
    upstream_values[r] = (int)(rng() % 100000) + 1;
    te4j_adds[r] = rng() % 100000 + 1;
    te4j_total += te4j_adds[r];
  }
  for (int r = 0; r < kRanks; ++r) {
    senderKernel<<<1, 32 * kRanks>>>(t.base[r], t.available, t.peer_ptrs, r, kPutBytes, signal[r],
                                     te4j_adds[r], upstream_values[r]);
    CUDA_OK(cudaGetLastError());
  }
  CUDA_OK(cudaDeviceSynchronize());
  int* d_result;
  CUDA_OK(cudaMalloc((void**)&d_result, 2 * sizeof(int)));
  for (int dst = 0; dst < kRanks; ++dst) {
    for (int src = 0; src < kRanks; ++src) {
      uint8_t* d_ref = deviceCopy(data[src]);
      CUDA_OK(cudaMemset(d_result, 0, 2 * sizeof(int)));
      receiverKernel<<<1, 256>>>(t.base[dst], src, signal[src], kPutBytes, d_ref, d_result);
      CUDA_OK(cudaDeviceSynchronize());
      const std::vector<int> res = hostCopy(d_result, 2);
      EXPECT(res[0] == 1, "rank %d saw rank %d's signal (a stored value)", dst, src);
      EXPECT(res[1] == 0, "rank %d: %d wrong bytes from rank %d (data or poison)", dst, res[1],
             src);
      cudaFree(d_ref);
    }
  }
  const uint32_t total = hostCopy((const uint32_t*)(t.base[0] + kCounterOffset), 1)[0];
  EXPECT(total == te4j_total, "te4j's uint32_t mc_red_add adds: %u, expected %u", total,
         te4j_total);
  const int last = hostCopy((const int*)(t.base[0] + kCounterOffset + 4), 1)[0];
  bool one_of = false;
  for (int v : upstream_values) one_of = one_of || v == last;
  EXPECT(one_of, "upstream's int mc_red_add stores on P2P: %d is one of the written values", last);
  cudaFree(d_result);
}

// ---- rdma route: QP choice and error records ----

__global__ void rdmaFailKernel(void* gdr_buffer, const int32_t* available, void* const* peer_ptrs,
                               void* raddrs, void* rkeys, void* qps, McErrorRecord* record, int dst,
                               int channel, int qps_per_rank) {
  CommCtx ctx = make_comm_ctx(gdr_buffer, available, peer_ptrs, raddrs, rkeys, qps, nullptr,
                              nullptr, 0, kRanks, 256);
  ctx.ibgda.timeout_ns = 1000000;   // the chosen QP's held lock times out within 1 ms
  ctx.ibgda.error_record = record;  // nullptr: the QP's own record
  const int lane = threadIdx.x % 32;
  uint8_t* local = (uint8_t*)ctx.p2p.local_base;
  if (mc_route_put(ctx, dst, local + kSlotOffset) == nullptr) {
    mc_rdma_put(ctx, channel, dst, qps_per_rank, local + kSlotOffset, local + kSlotOffset, 4096,
                lane);
    if (lane == 0) mc_signal(ctx, dst, channel, qps_per_rank, (int*)(local + kSigOffset), 1);
  }
}

void testRdmaRoute(const RankTables& t) {
  constexpr int kQpr = 2;
  const int32_t only_self[kRanks] = {1, 0, 0, 0};
  int32_t* d_only_self = deviceCopy(std::vector<int32_t>(only_self, only_self + kRanks));
  McErrorRecord* h_records = nullptr;  // [0] the context's, [1] the QPs'
  McErrorRecord* d_records = nullptr;
  CUDA_OK(cudaHostAlloc((void**)&h_records, 2 * sizeof(McErrorRecord), cudaHostAllocMapped));
  CUDA_OK(cudaHostGetDevicePointer((void**)&d_records, h_records, 0));
  std::vector<uint64_t> raddrs(kRanks);
  std::vector<uint32_t> rkeys(kRanks, 7);
  for (int r = 0; r < kRanks; ++r) raddrs[r] = (uint64_t)(uintptr_t)t.base[r];
  uint64_t* d_raddrs = deviceCopy(raddrs);
  uint32_t* d_rkeys = deviceCopy(rkeys);
  for (int dst = 1; dst < kRanks; ++dst) {
    for (int ch = 0; ch < 3; ++ch) {
      const int expected = dst * kQpr + ch % kQpr;
      std::vector<IbgdaQp> qps(kRanks * kQpr);
      for (size_t i = 0; i < qps.size(); ++i) {
        memset(&qps[i], 0, sizeof(IbgdaQp));
        qps[i].err_count = (int)i == expected ? 0 : 1;  // others fail at once (QP error)
        qps[i].lock = (int)i == expected ? 1 : 0;       // the chosen one times out
        qps[i].error_record = d_records + 1;
      }
      IbgdaQp* d_qps = deviceCopy(qps);
      memset(h_records, 0, 2 * sizeof(McErrorRecord));
      rdmaFailKernel<<<1, 32>>>(t.base[0], d_only_self, t.peer_ptrs, d_raddrs, d_rkeys, d_qps,
                                d_records, dst, ch, kQpr);
      CUDA_OK(cudaDeviceSynchronize());
      EXPECT(h_records[0].count == 2 && h_records[0].first_status == kMcRdmaTimeout &&
                 h_records[0].first_dst_rank == dst && h_records[0].first_op == kMcOpRdmaWrite,
             "dst %d ch %d: both posts chose QP %d (count %u status %d)", dst, ch, expected,
             h_records[0].count, h_records[0].first_status);
      memset(h_records, 0, 2 * sizeof(McErrorRecord));
      rdmaFailKernel<<<1, 32>>>(t.base[0], d_only_self, t.peer_ptrs, d_raddrs, d_rkeys, d_qps,
                                nullptr, dst, ch, kQpr);
      CUDA_OK(cudaDeviceSynchronize());
      EXPECT(h_records[1].count == 2 && h_records[1].first_status == kMcRdmaTimeout &&
                 h_records[0].count == 0,
             "dst %d ch %d: without a context record the QP's record has them (count %u)", dst, ch,
             h_records[1].count);
      cudaFree(d_qps);
    }
  }
  cudaFree(d_only_self);
  cudaFree(d_raddrs);
  cudaFree(d_rkeys);
  cudaFreeHost(h_records);
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    printf("SKIP test_upstream_api_cuda: no usable CUDA device (%s)\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 0;
  }
  CUDA_OK(cudaSetDevice(0));
  std::random_device seed_source;
  const unsigned seed = seed_source();
  printf("test_upstream_api_cuda: seed %u, %d ranks on device 0\n", seed, kRanks);
  std::mt19937 rng(seed);

  testOps(rng);
  testGridSync(rng);

  RankTables t{};
  std::vector<void*> ptrs(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    CUDA_OK(cudaMalloc((void**)&t.base[r], kBytes));
    ptrs[r] = t.base[r];
  }
  t.available = deviceCopy(std::vector<int32_t>(kRanks, 1));
  t.peer_ptrs = deviceCopy(ptrs);
  testPutSignal(rng, t);
  testRdmaRoute(t);
  for (int r = 0; r < kRanks; ++r) cudaFree(t.base[r]);
  cudaFree(t.available);
  cudaFree(t.peer_ptrs);

  if (g_failures != 0) {
    fprintf(stderr, "test_upstream_api_cuda: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("test_upstream_api_cuda: all checks passed\n");
  return 0;
}
