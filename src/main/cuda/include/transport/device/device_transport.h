// device_transport.h — upstream Mooncake's host-side transport interfaces, implemented by
// libte4j over te4j's own transports (te4j/api.h, te4j/rdma_api.h).
//
// Host code written against upstream's header compiles and links against libte4j unchanged:
// the classes, their virtual methods and the two factories have upstream's names and
// signatures. Pure C++ (no CUDA or ibverbs header), like upstream's; kernels include
// comm_device.cuh instead.
//
// What the factories build:
//   createP2pDeviceTransport(num_ranks)  te4j's CUDA P2pTransport on the calling thread's
//       current CUDA device (the host platform when libte4j was built without CUDA). Tables and
//       buffers are those of te4j::P2pTransport; importPeerHandles makes a new window and
//       closes the previous one (upstream: "a later call replaces the previous mapping").
//   createIbgdaDeviceTransport(filter)   te4j's RdmaTransport (backend auto: a ConnectX NIC
//       through DevX when one matches, else te4j's software NIC) on the current CUDA device.
//       initialize's device_name, or when empty the first filter entry, selects the NIC. Its
//       QP table elements are te4j's QP contexts (type mlx5gda_qp_devctx, ibgda/qp_context.cuh).
// Both return nullptr when the platform is unusable here (no GPU, no driver); the reason is
// then in te4j::lastThreadError().
//
// Errors: upstream reports failures as nullptr / false / non-zero returns and logs the reason;
// te4j keeps the reason of the last failure in lastError() of the te4j object behind
// (te4jP2p()/te4jRdma() below, for programs that want it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "te4j/api.h"

namespace te4j {
class RdmaTransport;
}

namespace mooncake {

/// te4j's op stream under the namespace upstream-style code uses.
using OpStream = te4j::OpStream;

namespace device {

using OpStream = te4j::OpStream;

/// Intra-node GPU P2P: the symmetric buffer, its IPC handle and the peer tables kernels use.
class P2pTransport {
 public:
  virtual ~P2pTransport() = default;

  /// A zero-filled device buffer of bytes (> 0) to share with the peers; nullptr on failure.
  virtual void* allocateBuffer(size_t bytes) = 0;
  /// Frees a buffer from allocateBuffer.
  virtual void freeBuffer(void* ptr) = 0;
  /// The handle peers import to map the buffer holding ptr (empty on failure).
  virtual std::vector<int32_t> exportIpcHandle(void* ptr) = 0;
  /// Maps the peers' buffers: remote_handles[i] is rank i's exported handle, active_ranks_mask[i]
  /// is 1 for participating ranks. Replaces the tables of an earlier call.
  virtual void importPeerHandles(void* local_ptr, int rank, int num_ranks,
                                 const std::vector<std::vector<int32_t>>& remote_handles,
                                 const std::vector<int>& active_ranks_mask) = 0;
  /// Device table int32_t[num_ranks]: 1 where rank i's buffer is mapped (nullptr before import).
  virtual int32_t* availableTablePtr() = 0;
  /// Device table void*[num_ranks]: rank i's buffer as mapped here (nullptr before import).
  virtual void** peerPtrsTablePtr() = 0;
  /// Whether every active rank is mapped.
  virtual bool allPeersAccessible() const = 0;
  /// Writes and reads a probe word of every mapped peer; false (and allPeersAccessible() false
  /// from then on) when one fails.
  virtual bool verifyPeerAccess() = 0;
};

/// What one rank publishes for the others to connect its RDMA QPs (upstream's layout: one
/// qpns/lids entry per local QP).
struct RdmaLocalMetadata {
  int64_t raddr;
  int32_t rkey;
  int64_t subnet_prefix;
  int64_t interface_id;
  std::vector<int32_t> qpns;
  std::vector<int32_t> lids;
};

/// Inter-node GPU-initiated RDMA: registered memory, RC QPs posted to by device code, and the
/// device tables (raddrs, rkeys, QP contexts) kernels use. Methods return 0 on success.
class RdmaTransport {
 public:
  virtual ~RdmaTransport() = default;

  /// Opens the NIC (device_name; "" = the factory's filter, else automatic) for num_ranks ranks
  /// and num_qps QPs in total (a multiple of num_ranks).
  virtual int initialize(const std::string& device_name, int num_ranks, int num_qps) = 0;
  /// Registers the symmetric buffer.
  virtual int registerMemory(void* ptr, size_t bytes) = 0;
  /// Allocates the QPs' rings, completion queues and doorbell records.
  virtual int allocateControlBuffer() = 0;
  /// Creates the QPs (stream: a cudaStream_t as void*, or nullptr).
  virtual int createQueuePairs(void* stream) = 0;
  /// Destroys and creates the QPs (new QP numbers: exchange metadata and connect again).
  virtual int recreateQueuePairs(void* stream) = 0;
  /// Connects local QP i (serving rank i / (num_qps / num_ranks)) to remote_qpns[i]; per-rank
  /// vectors have num_ranks entries, per-QP ones (remote_qpns, remote_lids) num_qps.
  virtual int connectPeers(int local_rank, bool is_roce, const std::vector<int64_t>& remote_addrs,
                           const std::vector<int32_t>& remote_keys,
                           const std::vector<int32_t>& remote_qpns,
                           const std::vector<int32_t>& remote_lids,
                           const std::vector<int64_t>& subnet_prefixes,
                           const std::vector<int64_t>& interface_ids,
                           const std::vector<int>& active_ranks_mask) = 0;
  /// This rank's metadata (after createQueuePairs).
  virtual RdmaLocalMetadata localMetadata() const = 0;
  /// Device tables: uint64_t raddrs[num_ranks], uint32_t rkeys[num_ranks],
  /// mlx5gda_qp_devctx[num_qps].
  virtual void* raddrsPtr() = 0;
  virtual void* rkeysPtr() = 0;
  virtual void* qpDevCtxsPtr() = 0;
  virtual bool isRoce() const = 0;
  virtual int gidIndex() const = 0;
};

/// The P2P transport of this platform for num_ranks ranks; nullptr when unusable here.
std::unique_ptr<P2pTransport> createP2pDeviceTransport(int num_ranks);

/// The RDMA transport; device_filter: NIC names to choose from ({} = automatic). nullptr when
/// unusable here.
std::unique_ptr<RdmaTransport> createIbgdaDeviceTransport(
    const std::vector<std::string>& device_filter = {});

/// te4j's additions: upstream's interfaces over a te4j transport the caller created (any platform
/// and backend: the host platform, the software NIC), taking ownership of it. nullptr for a
/// nullptr transport or one whose status() is not ok (it is destroyed then).
std::unique_ptr<P2pTransport> wrapP2pTransport(te4j::P2pTransport* transport);
std::unique_ptr<RdmaTransport> wrapRdmaTransport(
    te4j::RdmaTransport* transport, const std::vector<std::string>& device_filter = {});

/// te4j's transport behind an object the factories made (nullptr for any other object): its
/// lastError() holds the reason of the last failure, and te4j's own calls apply to it.
te4j::P2pTransport* te4jP2p(P2pTransport* transport);
te4j::RdmaTransport* te4jRdma(RdmaTransport* transport);

}  // namespace device
}  // namespace mooncake
