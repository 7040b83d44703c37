// te4j/rdma_api.h — the device API's RdmaTransport: registered memory, RC QPs whose send rings
// device code writes (IBGDA), their connection to every rank, and the device tables kernels use.
//
// Conventions of te4j/api.h: status codes (0 / negative te4j::Status) + lastError(), no
// exception across the boundary, no CUDA or ibverbs header here.
//
// Backends:
//   kRdmaBackendSoft  the software mlx5 NIC: same WQEs, doorbells and CQEs, executed by a
//                     progress thread and carried to the other ranks over TCP.
//   kRdmaBackendMlx5  a ConnectX NIC through DevX (libibverbs/libmlx5 loaded with dlopen).
//   kRdmaBackendAuto  mlx5 when a device matches the filter, else the software NIC.
//
// Call order: create → initialize → registerMemory → allocateControlBuffer → createQueuePairs
// → (exchange encodedMetadata through the rendezvous) → connectMetadata → fillIbgdaContext / use
// → after an error CQE: recreateQueuePairs → exchange metadata again → connectPeers (both ends).
//
// Values of localMetadata (int64, in-process only; the bytes exchanged between ranks are
// encodedMetadata's), version kRdmaMetadataVersion:
//   [0] kRdmaMetadataMagic   [1] version      [2] backend           [3] num_ranks
//   [4] qps_per_rank         [5] raddr        [6] rkey              [7] subnet_prefix
//   [8] interface_id         [9] lid          [10] is_roce          [11] gid_index
//   [12 .. 12 + num_ranks * qps_per_rank)  qpns: QP i serves (dst rank i / qps_per_rank,
//                                           channel i % qps_per_rank)
// The GID is carried as two 64-bit numbers whose big-endian bytes are the GID's 16 bytes.
// Software NIC: is_roce = 1, the GID is the IPv4-mapped address ::ffff:a.b.c.d of its TCP
// listener (subnet_prefix = 0, interface_id = 0x0000ffff00000000 | IPv4) and lid = its TCP port.
#pragma once

#include <cstddef>
#include <cstdint>

#include "api.h"

namespace mooncake {
namespace device {
struct IbgdaContext;
}
}  // namespace mooncake

namespace te4j {
namespace rdma {
struct PeerMetadata;
}

enum RdmaBackend : int { kRdmaBackendAuto = 0, kRdmaBackendSoft = 1, kRdmaBackendMlx5 = 2 };

constexpr int64_t kRdmaMetadataMagic =
    0x5445344e;  // "TE4N" (native metadata; distinct from every wire magic)
constexpr int64_t kRdmaMetadataVersion = 1;
constexpr int kRdmaMetadataHeader = 12;

class RdmaTransport : public NativeObject {
 public:
  /// Factory: platform kPlatformHost or kPlatformCuda, device (CUDA ordinal), backend
  /// (RdmaBackend). Returns nullptr only on allocation failure; check status() / lastError().
  static RdmaTransport* create(int platform, int device, int backend);

  int status() const { return init_status_; }
  /// The backend in use (kRdmaBackendSoft / kRdmaBackendMlx5) once initialized, else requested.
  virtual int backend() const = 0;

  /// device_name: the device filter. Software NIC: "soft", "soft@<IPv4>" or "soft@<IPv4>:<port>"
  /// (the address its listener binds and advertises; default 127.0.0.1, any port). mlx5: an
  /// ibverbs device name prefix ("" = first mlx5 device). num_qps: QPs in total, a multiple of
  /// num_ranks (qps_per_rank = num_qps / num_ranks).
  virtual int initialize(const char* device_name, int num_ranks, int num_qps) = 0;
  /// Registers [ptr, ptr + bytes) for local and remote access; the latest registration is the
  /// symmetric buffer the metadata and the device tables describe.
  virtual int registerMemory(void* ptr, std::size_t bytes) = 0;
  virtual int deregisterMemory(void* ptr) = 0;
  /// Forgets every registration that shares a byte with [ptr, ptr + bytes): that memory is about
  /// to be freed. Remote accesses to it in flight finish first. Default: the one starting at ptr.
  virtual int deregisterRange(void* ptr, std::size_t bytes) {
    (void)bytes;
    return deregisterMemory(ptr);
  }
  /// Send-ring WQEBBs per QP (a power of two, 2 .. 32768); before allocateControlBuffer.
  virtual int setRingSize(int wqebbs) = 0;
  /// Allocates the rings, CQs, doorbell records and UAR words of every QP.
  virtual int allocateControlBuffer() = 0;
  /// Creates the QPs (new QP numbers); stream: CUDA stream for table copies, or nullptr.
  virtual int createQueuePairs(void* stream) = 0;
  /// Destroys and creates all QPs (after an error CQE). New QP numbers: exchange metadata and
  /// call connectPeers again, at both ends.
  virtual int recreateQueuePairs(void* stream) = 0;

  /// Connects QP (dst r, channel c) to rank r's QP (dst local_rank, channel c) for every r in
  /// active_ranks_mask (own rank included). Arrays have num_ranks entries, except remote_qpns:
  /// num_ranks rows of num_ranks * qps_per_rank (each rank's metadata qpns), row-major.
  virtual int connectPeers(int local_rank, bool is_roce, const uint64_t* remote_addrs,
                           const uint32_t* remote_keys, const uint32_t* remote_qpns,
                           const uint32_t* remote_lids, const uint64_t* subnet_prefixes,
                           const uint64_t* interface_ids, uint64_t active_ranks_mask) = 0;

  /// Number of int64 values of localMetadata (valid after createQueuePairs).
  virtual int localMetadataLength() const = 0;
  /// Writes this NIC's values (layout above, in-process only); returns the count written or a
  /// negative Status. What travels between ranks is encodedMetadata.
  virtual int localMetadata(int64_t* out, int capacity) = 0;
  /// Size of the last registered window (0: none), for the metadata.
  virtual uint64_t registeredBytes() const { return 0; }

  /// This rank's metadata as the opaque, versioned bytes the other ranks pass to connectMetadata
  /// (the layout is defined once, in rdma/metadata_codec.h): QP numbers, address, window and
  /// NIC key. Valid after createQueuePairs and registerMemory. The length, or a negative Status.
  int encodedMetadataLength();
  /// Writes encodedMetadataLength() bytes; returns that count or a negative Status.
  int encodedMetadata(uint8_t* out, int capacity);
  /// Connects from every rank's encodedMetadata bytes: entry r is lengths[r] bytes of `all`
  /// (entries back to back; 0 bytes for a rank outside active_ranks_mask). Each active entry is
  /// decoded and validated here, and must agree with this rank's (shape, backend, one software
  /// NIC per rank, a NIC key where one is needed); the own entry must be this rank's current
  /// metadata. A bad entry is kBadHandle naming the rank and the field; then the peers' keys are
  /// set and connectPeers runs with the decoded tables.
  int connectMetadata(int local_rank, const uint8_t* all, const int32_t* lengths, int num_entries,
                      uint64_t active_ranks_mask);

  /// Values of describeMetadata / encodeMetadataValues, before the QP numbers: backend, is_roce,
  /// num_ranks, qps_per_rank, gid_index, lid, raddr, rkey, registered bytes, subnet_prefix,
  /// interface_id, NIC key length; then num_ranks * qps_per_rank QP numbers.
  static constexpr int kMetadataValues = 12;
  /// Decodes and validates one rank's metadata bytes for a read-only view: writes the values
  /// above to out and the NIC key to key. Returns the count of values, or kBadHandle with the
  /// reason in why (NUL-terminated, truncated to why_capacity), or kInvalidArgument for
  /// buffers too small. Never reads outside [bytes, bytes + length).
  static int describeMetadata(const uint8_t* bytes, int length, int64_t* out, int capacity,
                              uint8_t* key, int key_capacity, char* why, int why_capacity);
  /// The bytes for the given values (layout of describeMetadata) and key, unchecked: for tools
  /// and tests that build metadata by hand. Returns the length written or kInvalidArgument.
  static int encodeMetadataValues(const int64_t* values, int count, const uint8_t* key,
                                  int key_length, uint8_t* out, int capacity);

  /// Device tables (platform memory): uint64 raddrs[num_ranks], uint32 rkeys[num_ranks],
  /// IbgdaQp[num_ranks * qps_per_rank]. nullptr before connectPeers / createQueuePairs.
  virtual void* raddrsPtr() = 0;
  virtual void* rkeysPtr() = 0;
  virtual void* qpDevCtxsPtr() = 0;
  virtual bool isRoce() const = 0;
  virtual int gidIndex() const = 0;
  virtual int numRanks() const = 0;
  virtual int qpsPerRank() const = 0;

  /// Bound of every device-side wait (lock, ring slot, quiet); default 10 s.
  virtual int setDeviceTimeoutNs(int64_t timeout_ns) = 0;
  /// Fills the RDMA part of a device context (host memory) after connectPeers.
  virtual int fillIbgdaContext(mooncake::device::IbgdaContext* out) = 0;
  /// Same, into ctx->ibgda of a CommCtx (e.g. one made by P2pTransport::makeCommCtx).
  int fillCommCtx(mooncake::device::CommCtx* ctx);
  /// Zeroes ctx->ibgda ("no RDMA route"): a context outliving its RdmaTransport never reaches
  /// freed QP tables. 0, or kInvalidArgument for a null ctx.
  static int clearCommCtx(mooncake::device::CommCtx* ctx);

  /// Error state of QP `qp_index` as device code recorded it, out[8]: error CQEs seen, first
  /// syndrome, its vendor syndrome, its CQE opcode, its wqe_counter, fatal CQEs, WQEBBs posted,
  /// WQEBBs completed. Returns 8 or a negative Status.
  virtual int queryQpError(int qp_index, int64_t* out, int capacity) = 0;
  /// NIC counters (software NIC: see statisticsNames()); returns the count written.
  virtual int statistics(int64_t* out, int capacity) = 0;
  /// Comma-separated names of the statistics values.
  virtual const char* statisticsNames() const = 0;
  /// Contract violations the NIC saw (software NIC: doorbell record / UAR mismatches...). The
  /// text is the calling thread's own copy, valid until its next call (callable concurrently).
  virtual const char* diagnostics() = 0;

  /// Liveness of the connected peers since the last connectPeers, out[num_ranks]: 0 while rank
  /// r is reachable (or not connected), kPeerClosedConnection when it closed the connection
  /// (its process exited or was killed), else the errno that broke it (ETIMEDOUT: its host did
  /// not answer within the peer timeout). Returns num_ranks or a negative Status. A backend
  /// without its own liveness source reports every rank as reachable.
  static constexpr int32_t kPeerClosedConnection = -1;
  virtual int lostPeers(int32_t* out, int capacity) {
    if (out == nullptr || capacity < numRanks())
      return fail(kInvalidArgument, "lostPeers: capacity below num_ranks");
    for (int r = 0; r < numRanks(); ++r) out[r] = 0;
    return numRanks();
  }
  /// How long a connected peer's host may stay silent (unacknowledged data, unanswered
  /// keepalives) before it counts as lost; applies to connections made afterwards. Default 10 s.
  virtual int setPeerTimeoutMs(int timeout_ms) {
    return timeout_ms > 0 ? kOk : fail(kInvalidArgument, "setPeerTimeoutMs: must be positive");
  }
  /// Bound of the whole of the next connectPeers (every peer, every step). Default: the
  /// backend's own bound.
  virtual int setConnectTimeoutMs(int timeout_ms) {
    return timeout_ms > 0 ? kOk : fail(kInvalidArgument, "setConnectTimeoutMs: must be positive");
  }
  /// The key peers must prove to connect to this rank (a NIC whose connections are not
  /// authenticated by the hardware, i.e. the software NIC); writes up to capacity bytes and
  /// returns its length, 0 when the backend has none.
  virtual int authKey(uint8_t* out, int capacity) {
    (void)out;
    (void)capacity;
    return 0;
  }
  /// The peers' keys (num_ranks rows of authKey's length, from their metadata) for the next
  /// connectPeers. Ignored by a backend without keys.
  virtual int setPeerKeys(const uint8_t* keys, int bytes) {
    (void)keys;
    (void)bytes;
    return kOk;
  }

  /// The key (lkey == rkey) of the live registration that starts at ptr and holds
  /// [ptr, ptr + bytes), for requests posted from the host (transfer batches); returns it as a
  /// positive value, or a negative Status (kInvalidArgument: no such registration; kUnavailable:
  /// the backend does not say).
  virtual int64_t regionKey(void* ptr, std::size_t bytes) {
    (void)ptr;
    (void)bytes;
    return fail(kUnavailable, "regionKey: this RDMA backend does not report registration keys");
  }

 protected:
  int init_status_ = kOk;

 private:
  /// This NIC's metadata now: its localMetadata values, registered size and key.
  int currentMetadata(rdma::PeerMetadata* out);
};

}  // namespace te4j
