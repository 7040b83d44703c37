// test_upstream_rdma_with_lib.cu — upstream Mooncake's host classes (device_transport.h, from
// libte4j) and an upstream-style kernel over the RDMA route, two ranks on CUDA device 0.
//
// Each rank is an upstream RdmaTransport over te4j's software NIC on the GPU (wrapRdmaTransport),
// set up and connected with upstream's calls and per-QP vectors. Rank 0's kernel builds its
// context with the 11-argument make_comm_ctx from the transport's raw tables (no P2P route to
// rank 1, te4j's fields all zero) and, per channel, posts mc_rdma_put of random data and an int*
// mc_signal (an add over RDMA). The host checks rank 1's signal total and its data against the
// random source, with the rest of rank 1's buffer still poisoned. Then a deliberate post to a
// rank outside the table must surface at te4j's CUDA OpStream::synchronize() as kRemoteError
// (the QP table's error record), once. Without a CUDA device it prints SKIP and exits 0.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "te4j/api.h"
#include "te4j/rdma_api.h"
#include "transport/device/comm_device.cuh"
#include "transport/device/device_transport.h"

namespace md = mooncake::device;

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
      return 1;                                                                                   \
    }                                                                                             \
  } while (0)

constexpr int kRanks = 2;
constexpr int kQpr = 2;
constexpr size_t kBytes = 1 << 20;
constexpr size_t kSigOffset = 64;
constexpr size_t kDataOffset = 4096;
constexpr size_t kSrcOffset = 512 * 1024;
constexpr size_t kPutBytes = 3 * 40000;

__global__ void upstreamRdmaSender(void* gdr_buffer, const int32_t* available,
                                   void* const* peer_ptrs, void* raddrs, void* rkeys,
                                   void* qp_devctxs, int dst_rank, int channels, int value_first,
                                   int value_rest) {
  const md::CommCtx ctx = md::make_comm_ctx(gdr_buffer, available, peer_ptrs, raddrs, rkeys,
                                            qp_devctxs, nullptr, nullptr, 0, kRanks, 256);
  const int lane = threadIdx.x % 32;
  uint8_t* local = (uint8_t*)ctx.p2p.local_base;
  const size_t part = kPutBytes / (size_t)channels;
  for (int ch = 0; ch < channels; ++ch) {
    uint8_t* recv = local + kDataOffset + (size_t)ch * part;
    if (md::mc_route_put(ctx, dst_rank, recv) != nullptr) continue;  // never: no P2P to dst
    md::mc_rdma_put(ctx, ch, dst_rank, kQpr, local + kSrcOffset + (size_t)ch * part, recv,
                    (uint32_t)part, lane);
    if (lane == 0) {
      md::mc_signal(ctx, dst_rank, ch, kQpr, (int*)(local + kSigOffset),
                    ch == 0 ? value_first : value_rest);
    }
  }
}

struct Rank {
  std::unique_ptr<md::RdmaTransport> t;
  uint8_t* buffer = nullptr;
  md::RdmaLocalMetadata meta;
};

int run() {
  std::random_device seed_source;
  const unsigned seed = seed_source();
  printf("test_upstream_rdma_with_lib: seed %u, %d ranks on device 0\n", seed, kRanks);
  std::mt19937 rng(seed);
  CUDA_OK(cudaSetDevice(0));

  std::unique_ptr<md::RdmaTransport> factory = md::createIbgdaDeviceTransport();
  EXPECT(factory != nullptr, "createIbgdaDeviceTransport on a GPU host: %s",
         te4j::lastThreadError());
  factory.reset();
  std::unique_ptr<md::P2pTransport> p2p_factory = md::createP2pDeviceTransport(kRanks);
  EXPECT(p2p_factory != nullptr, "createP2pDeviceTransport on a GPU host: %s",
         te4j::lastThreadError());
  p2p_factory.reset();

  Rank ranks[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    ranks[r].t = md::wrapRdmaTransport(
        te4j::RdmaTransport::create(te4j::kPlatformCuda, 0, te4j::kRdmaBackendSoft),
        {"soft@127.0.0.1"});
    EXPECT(ranks[r].t != nullptr, "wrapRdmaTransport: %s", te4j::lastThreadError());
    if (ranks[r].t == nullptr) return 1;
    CUDA_OK(cudaMalloc((void**)&ranks[r].buffer, kBytes));
    CUDA_OK(cudaMemset(ranks[r].buffer, 0xa5, kBytes));
    CUDA_OK(cudaMemset(ranks[r].buffer, 0, kDataOffset));
    md::RdmaTransport& t = *ranks[r].t;
    const auto why = [&] { return md::te4jRdma(&t)->lastError(); };
    EXPECT(t.initialize("", kRanks, kRanks * kQpr) == 0, "initialize: %s", why());
    EXPECT(t.registerMemory(ranks[r].buffer, kBytes) == 0, "registerMemory: %s", why());
    EXPECT(t.allocateControlBuffer() == 0, "allocateControlBuffer: %s", why());
    EXPECT(t.createQueuePairs(nullptr) == 0, "createQueuePairs: %s", why());
    ranks[r].meta = t.localMetadata();
    EXPECT(ranks[r].meta.qpns.size() == (size_t)(kRanks * kQpr), "one qpn per QP");
  }
  if (g_failures != 0) return 1;
  // The software NIC's per-NIC connection keys, which upstream's metadata has no field for.
  std::vector<uint8_t> all_keys;
  for (int r = 0; r < kRanks; ++r) {
    uint8_t key[64];
    const int n = md::te4jRdma(ranks[r].t.get())->authKey(key, (int)sizeof(key));
    EXPECT(n > 0, "rank %d: the software NIC has a connection key", r);
    all_keys.insert(all_keys.end(), key, key + (n > 0 ? n : 0));
  }
  for (int r = 0; r < kRanks; ++r) {
    EXPECT(md::te4jRdma(ranks[r].t.get())->setPeerKeys(all_keys.data(), (int)all_keys.size()) == 0,
           "rank %d setPeerKeys: %s", r, md::te4jRdma(ranks[r].t.get())->lastError());
  }
  if (g_failures != 0) return 1;

  int status[kRanks] = {-1, -1};
  std::vector<std::thread> threads;
  for (int me = 0; me < kRanks; ++me) {
    threads.emplace_back([&, me] {
      std::vector<int64_t> addrs, prefixes, ids;
      std::vector<int32_t> keys, qpns, lids;
      for (int r = 0; r < kRanks; ++r) {
        addrs.push_back(ranks[r].meta.raddr);
        keys.push_back(ranks[r].meta.rkey);
        prefixes.push_back(ranks[r].meta.subnet_prefix);
        ids.push_back(ranks[r].meta.interface_id);
        for (int c = 0; c < kQpr; ++c) {
          qpns.push_back(ranks[r].meta.qpns[(size_t)(me * kQpr + c)]);
          lids.push_back(ranks[r].meta.lids[(size_t)(me * kQpr + c)]);
        }
      }
      status[me] = ranks[me].t->connectPeers(me, ranks[me].t->isRoce(), addrs, keys, qpns, lids,
                                             prefixes, ids, std::vector<int>(kRanks, 1));
    });
  }
  for (std::thread& th : threads) th.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT(status[r] == 0, "rank %d connectPeers: %s", r,
           md::te4jRdma(ranks[r].t.get())->lastError());
  }
  if (g_failures != 0) return 1;

  std::vector<uint8_t> source(kPutBytes);
  for (uint8_t& b : source) b = (uint8_t)rng();
  CUDA_OK(
      cudaMemcpy(ranks[0].buffer + kSrcOffset, source.data(), kPutBytes, cudaMemcpyHostToDevice));
  const int32_t self_only[kRanks] = {1, 0};
  void* peers[kRanks] = {ranks[0].buffer, nullptr};
  int32_t* d_available = nullptr;
  void** d_peers = nullptr;
  CUDA_OK(cudaMalloc((void**)&d_available, sizeof(self_only)));
  CUDA_OK(cudaMalloc((void**)&d_peers, sizeof(peers)));
  CUDA_OK(cudaMemcpy(d_available, self_only, sizeof(self_only), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_peers, peers, sizeof(peers), cudaMemcpyHostToDevice));

  te4j::OpStream* stream = te4j::OpStream::create(te4j::kPlatformCuda, 0);
  EXPECT(stream != nullptr && stream->status() == 0, "OpStream: %s",
         stream ? stream->lastError() : "null");
  if (g_failures != 0) return 1;
  cudaStream_t s = (cudaStream_t)stream->nativeHandle();
  md::RdmaTransport& t0 = *ranks[0].t;
  const int channels = 3;  // channel 2 shares QP 0 with channel 0
  const int first = (int)(rng() % 1000) + 1;
  const int rest = (int)(rng() % 1000) + 1;
  upstreamRdmaSender<<<1, 32, 0, s>>>(ranks[0].buffer, d_available, d_peers, t0.raddrsPtr(),
                                      t0.rkeysPtr(), t0.qpDevCtxsPtr(), 1, channels, first, rest);
  CUDA_OK(cudaGetLastError());
  int sync = stream->synchronize(30000000000ll);
  EXPECT(sync == 0, "synchronize after the puts: %d %s", sync, stream->lastError());

  const int expected = first + (channels - 1) * rest;
  int seen = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    CUDA_OK(cudaMemcpy(&seen, ranks[1].buffer + kSigOffset, sizeof(int), cudaMemcpyDeviceToHost));
    if (seen == expected) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } while (std::chrono::steady_clock::now() < end);
  EXPECT(seen == expected, "the int* mc_signal adds over RDMA: expected %d, got %d", expected,
         seen);
  std::vector<uint8_t> received(kPutBytes + 64);
  CUDA_OK(cudaMemcpy(received.data(), ranks[1].buffer + kDataOffset, received.size(),
                     cudaMemcpyDeviceToHost));
  EXPECT(memcmp(received.data(), source.data(), kPutBytes) == 0, "rank 1 holds the random data");
  bool poisoned = true;
  for (size_t i = kPutBytes; i < received.size(); ++i) poisoned = poisoned && received[i] == 0xa5;
  EXPECT(poisoned, "nothing written past the data");

  // A post to rank 2 (outside the 2-rank table): upstream's mc_rdma_put returns nothing, the
  // QP table's record keeps it, and synchronize raises it once.
  upstreamRdmaSender<<<1, 32, 0, s>>>(ranks[0].buffer, d_available, d_peers, t0.raddrsPtr(),
                                      t0.rkeysPtr(), t0.qpDevCtxsPtr(), 2, 1, 1, 1);
  CUDA_OK(cudaGetLastError());
  sync = stream->synchronize(30000000000ll);
  const std::string message = stream->lastError();
  EXPECT(sync == te4j::kRemoteError && message.find("to rank 2") != std::string::npos,
         "the failed post surfaces at synchronize: %d %s", sync, message.c_str());
  sync = stream->synchronize(30000000000ll);
  EXPECT(sync == 0, "reported once, then cleared: %d %s", sync, stream->lastError());
  printf("synchronize reported: %s\n", message.c_str());

  te4j::destroyObject(stream);
  for (int r = 0; r < kRanks; ++r) {
    ranks[r].t.reset();
    cudaFree(ranks[r].buffer);
  }
  cudaFree(d_available);
  cudaFree(d_peers);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    printf("SKIP test_upstream_rdma_with_lib: no usable CUDA device (%s)\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 0;
  }
  const int rc = run();
  if (rc != 0 || g_failures != 0) {
    fprintf(stderr, "test_upstream_rdma_with_lib: %d failure(s)\n", g_failures);
    return 1;
  }
  printf("test_upstream_rdma_with_lib: all checks passed\n");
  return 0;
}
