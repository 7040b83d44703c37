// soft_nic.h — the software mlx5 NIC: a progress engine that executes the WQEs device code
// posts, and a TCP wire (wire_format.h) to the other ranks' software NICs.
//
// Threads:
//   progress   watches every QP's UAR words; a written word is a doorbell: it checks the value
//              and the doorbell record against each other (flagging mismatches, as the hardware
//              contract requires both), fetches WQEs up to the record, parses them
//              (wqe_parser.h), checks local keys/bounds, and sends one request frame each.
//   reader     one per outgoing connection: takes responses in order, stores atomics' fetched
//              values, writes CQEs (soft_qp.h).
//   responder  one per authenticated incoming connection (at most kMaxResponders): checks each
//              request's QP, rkey and bounds (region_table.h), applies WRITEs and masked FAs in
//              arrival order through the MemoryPort, answers with a syndrome.
//   acceptor   accepts incoming connections and runs every pending handshake itself, polling
//              them together (no thread per stranger): each must prove the NIC's key
//              (wire_format.h) within the handshake timeout, at most kMaxPending at once and
//              kMaxPendingPerSource from one address; past a cap the oldest is dropped.
// Nothing here throws (a thread that cannot be made refuses its connection); failures become
// error CQEs, counters and diagnostics().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rdma/memory_port.h"
#include "rdma/region_table.h"
#include "rdma/soft/soft_nic_stats.h"
#include "rdma/soft/soft_qp.h"
#include "rdma/soft/wire_format.h"
#include "rdma/soft/wqe_parser.h"

namespace te4j {
namespace rdma {

constexpr size_t kAuthKeyBytes = 32;

class RxBuffer;         // soft_nic.cpp: the buffered receive side of one connection
struct ResponderState;  // soft_nic.cpp: what a responder keeps between requests

struct PeerEndpoint {
  bool active = false;
  uint32_t ipv4 = 0;  // host order
  uint16_t port = 0;
  uint8_t key[kAuthKeyBytes] =
      {};  // the peer NIC's key (its metadata), proves this rank is of the job
};

class SoftNic {
 public:
  SoftNic(MemoryPort* port, RegionTable* regions) : port_(port), regions_(regions) {}
  ~SoftNic() { stop(); }
  SoftNic(const SoftNic&) = delete;
  SoftNic& operator=(const SoftNic&) = delete;

  /// Listens on ipv4:port (0 = any port), makes this NIC's random key and starts the acceptor
  /// and progress threads.
  int start(uint32_t ipv4, uint16_t port, std::string* err);
  /// The key a peer must prove to connect (kAuthKeyBytes), valid after start.
  const uint8_t* authKey() const { return key_; }
  void stop();
  uint32_t ipv4() const { return ipv4_; }
  uint16_t port() const { return port_number_; }

  /// Installs the QPs the engine serves (replacing none: call takeQps first).
  void setQps(std::vector<std::unique_ptr<SoftQp>> qps);
  /// Closes every connection, then stops serving the QPs and hands them back.
  std::vector<std::unique_ptr<SoftQp>> takeQps();

  /// Opens one connection per active peer (own rank included: loopback through TCP) carrying
  /// the QPs whose peer_rank is that peer. QPs must have peer_rank/peer_qpn set. timeout_ms
  /// bounds the whole call (every connect, read and write of every peer's handshake).
  int connect(int local_rank, const std::vector<PeerEndpoint>& peers, int timeout_ms,
              std::string* err);
  /// Closes the outgoing connections; pending requests fail (transport retry exceeded).
  void disconnect();

  /// Why rank r's outgoing connection broke since the last connect: 0 while it is up (or none
  /// was made), kLostClosed when the peer closed it (its process exited or was killed), else
  /// the errno (ETIMEDOUT: its host stopped answering within the peer timeout).
  int lostCause(int rank) const;
  static constexpr int kLostClosed = -1;
  /// Bound of silence (unacknowledged data, unanswered keepalives) before a connection made
  /// from now on breaks: how soon a vanished peer host is noticed.
  void setPeerTimeoutMs(int ms) { peer_timeout_ms_.store(ms); }
  /// How long an accepted connection may take to authenticate (from its accept, however it
  /// paces its bytes) before it is dropped. Default kDefaultHandshakeTimeoutMs.
  void setHandshakeTimeoutMs(int ms) { handshake_timeout_ms_.store(ms); }
  static constexpr int kDefaultHandshakeTimeoutMs = 5000;
  static constexpr size_t kMaxPending = 64;
  static constexpr size_t kMaxPendingPerSource = 16;
  /// Authenticated incoming connections served at once: a rank's peers open one each, so
  /// this is twice the largest world; more are refused until one closes.
  static constexpr size_t kMaxResponders = 128;

  /// Runs the doorbells of every started software NIC of this process in the calling thread,
  /// where that NIC's engine is free: a host poster's request reaches the wire without waking
  /// the progress thread. False when some engine was busy or paused (its progress thread then
  /// takes the doorbell; the caller hints it, doorbell_hint.h).
  static bool runDoorbellsHere();

  SoftNicStats& stats() { return stats_; }
  /// Contract violations seen (doorbell record / UAR mismatches...), oldest first.
  std::string diagnostics();

 private:
  struct OutConn {
    int fd = -1;
    int rank = -1;
    std::atomic<bool> closing{false};
    std::atomic<bool> broken{false};
    std::map<uint32_t, SoftQp*> qps;  // by local qpn; fixed while the connection lives
    // The reader's receive buffer, made by connect with the connection: memory the connection
    // owns stays reachable from the transport, not only from the reader thread's stack.
    std::unique_ptr<RxBuffer> rx;
    std::thread reader;
    ~OutConn();  // in soft_nic.cpp, where RxBuffer is complete
  };
  /// One incoming connection, served by its responder thread under serve_mu. Shared: the fd is
  /// closed with the last owner.
  struct InConn {
    int fd = -1;
    int src_rank = -1;
    std::thread thread;
    std::atomic<bool> done{false};
    std::mutex serve_mu;
    std::unique_ptr<ResponderState> state;  // guarded by serve_mu
    ~InConn();
  };
  /// An accepted connection in its handshake, driven by the acceptor (non-blocking fd).
  struct Pending {
    int fd = -1;
    uint32_t ipv4 = 0;
    std::chrono::steady_clock::time_point deadline;
    uint8_t nonce[16];
    uint8_t hello[48 + 32];
    size_t got = 0;
  };

  /// A request frame waiting in the send batch: its header, and the payload to send from
  /// registered memory (the QP's CQE waits until the batch is sent).
  struct QueuedFrame {
    uint8_t header[48];
    const void* payload = nullptr;
    uint32_t length = 0;
    SoftQp* qp = nullptr;
    uint16_t seq = 0;
    uint64_t gather_ticket = 0;  // non-zero: the payload is being gathered (MemoryPort)
  };
  struct SendBatch {
    OutConn* conn = nullptr;
    std::vector<QueuedFrame> frames;
    uint64_t bytes = 0;
    size_t gathered = 0;  // bytes of the port's gather arena the frames' payloads use
  };
  static constexpr size_t kMaxBatchFrames = 64;
  static constexpr uint64_t kMaxBatchBytes = 256 * 1024;

  void progressLoop();
  bool scanOnce();
  /// Adds a request to the send batch (flushing it first when it is for another connection or
  /// full). Engine thread.
  void queueFrame(SoftQp* qp, OutConn* conn, const Frame& f, const void* payload,
                  uint64_t gather_ticket = 0);
  /// Sends the batch in one vectored write and completes its requests' sends.
  void flushBatch();
  /// A WRITE whose source must be gathered (several SGEs, or memory not reachable directly).
  void sendStaged(SoftQp* qp, OutConn* conn, Frame f, const ParsedWqe& w);
  /// A WRITE from memory that is not directly reachable (GPU memory), through the port's
  /// pipelined gather arena: a small one joins the send batch with its copy queued (several
  /// requests' copies in flight before one send), a large one is streamed in chunks, the copy
  /// of the next chunks overlapping the send of this one.
  void sendGathered(SoftQp* qp, OutConn* conn, Frame f, const ParsedWqe& w);
  /// Queues the gather of bytes [from, from + n) of w's gather list into the arena at `at`.
  int gatherRange(const ParsedWqe& w, uint64_t from, size_t n, size_t at, std::string* err);
  /// A WRITE that could not be gathered and of which nothing was sent: only its QP fails.
  void failUnsent(SoftQp* qp, uint16_t seq, const std::string& why);
  /// The wire can no longer be followed (a frame's bytes were promised and cannot be sent).
  void breakConnection(OutConn* conn, int cause, const std::string& why);
  void doorbell(SoftQp* qp, uint64_t value);
  /// Executes the WQE at fetch_ci; `left` WQEBBs are covered by the doorbell record.
  /// Returns the WQEBBs consumed (1 .. left).
  uint32_t executeWqe(SoftQp* qp, uint32_t left);
  void readerLoop(OutConn* conn);
  /// Reader: receives a READ response's payload from fd into its scatter list (checked again
  /// against the regions, held while written); a failed check drains the bytes and sets
  /// *syndrome. Returns non-zero when the connection failed.
  int placeReadData(RxBuffer* rx, const std::vector<ParsedSge>& scatter, uint8_t* syndrome);
  /// Responder, memory that is not directly reachable: receives a checked WRITE's payload from
  /// rx through the port's placement arena in chunks, each chunk's copy queued as soon as it is
  /// in (it overlaps the receive of the next), and waits for the last before returning (the
  /// region is held until then). A failed copy sets *syndrome and drains the rest. Returns
  /// non-zero when the connection failed.
  int placeWriteData(RxBuffer* rx, uint64_t dst, uint64_t length, uint8_t* syndrome);
  void acceptLoop();
  /// Accepts what waits on the listener, making room under the caps, and challenges it.
  void acceptPending(std::vector<Pending>* pending);
  /// Reads what arrived of p's HELLO; true when p is finished (served or dropped).
  bool advanceHandshake(Pending* p);
  /// Starts a responder for an authenticated connection; false when at kMaxResponders.
  bool serve(int fd, int src_rank);
  void reapResponders();
  void responderLoop(InConn* conn);
  /// Executes the requests of conn that can be taken now (serve_mu held), then sends the
  /// answers held. Returns kServeIdle or kServeEnded.
  int serveFrames(InConn* conn);
  static constexpr int kServeIdle = 0;
  static constexpr int kServeEnded = 2;
  void flag(const std::string& message);
  /// Records the first cause of rank's loss (a connection not closed by disconnect).
  void markLost(int rank, int cause);

  MemoryPort* port_;
  RegionTable* regions_;
  SoftNicStats stats_;
  uint32_t ipv4_ = 0;
  uint16_t port_number_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> pause_{false};
  // TE4J_SOFTNIC_POLL=busy: the progress, reader and responder threads never sleep (a latency
  // mode for machines with a core to spare per NIC thread).
  bool busy_poll_ = false;
  std::atomic<int> local_rank_{-1};
  std::atomic<int> peer_timeout_ms_{10000};
  std::atomic<int> handshake_timeout_ms_{kDefaultHandshakeTimeoutMs};
  uint8_t key_[kAuthKeyBytes] = {};
  static constexpr int kMaxRanks = 64;
  std::atomic<int> lost_[kMaxRanks] = {};

  std::mutex engine_mu_;  // held by the progress thread while it scans; guards qps_ and out_
  std::vector<std::unique_ptr<SoftQp>> qps_;
  std::vector<std::unique_ptr<OutConn>> out_;  // index: peer rank (nullptr: none)

  std::mutex fds_mu_;  // the outgoing sockets, so disconnect can unblock a sending engine
  std::vector<OutConn*> out_live_;

  std::mutex qpmap_mu_;  // responders' view of the QPs, by qpn
  std::map<uint32_t, SoftQp*> qp_by_qpn_;

  std::mutex in_mu_;
  std::vector<std::shared_ptr<InConn>> in_;

  std::mutex diag_mu_;
  std::vector<std::string> diagnostics_;
  uint64_t diag_dropped_ = 0;

  std::vector<uint8_t> staging_;  // engine: gather buffer when memory is not direct
  SendBatch batch_;               // engine: frames of the current scan not yet sent
  std::thread acceptor_;
  std::thread progress_;
};

}  // namespace rdma
}  // namespace te4j
