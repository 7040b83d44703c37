// soft_nic.cpp — see soft_nic.h.
#include "rdma/soft/soft_nic.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <system_error>

#include "rdma/soft/doorbell_hint.h"
#include "rdma/soft/hmac_sha256.h"
#include "rdma/soft/socket_io.h"
#include "rdma/soft/wire_format.h"
#include "rdma/soft/wqe_parser.h"
#include "transport/device/ibgda/mlx5_defs.cuh"

namespace te4j {
namespace rdma {

namespace mlx5 = mooncake::device::mlx5;

namespace {

// The started NICs of this process, for host posters that run doorbells themselves.
std::mutex g_nics_mu;
std::vector<SoftNic*> g_nics;

constexpr int kIoTimeoutMs = 30000;  // a stalled peer for this long is a lost peer
constexpr int kIdlePollMs = 100;     // how often idle threads look at their stop flag
constexpr size_t kMaxDiagnostics = 32;
// How long the progress thread keeps scanning after device code's last doorbell (below).
constexpr auto kDeviceSpin = std::chrono::microseconds(500);

// Waits until fd is readable or `stop` is set; true when readable. busy (TE4J_SOFTNIC_POLL=busy):
// the thread polls without sleeping, so an arriving frame costs no wake-up (a core per
// connection thread: for machines with cores to spare).
bool waitReadable(int fd, const std::atomic<bool>& stop, bool busy = false) {
  if (busy) {
    for (uint32_t polls = 0; !stop.load(std::memory_order_acquire); ++polls) {
      pollfd p{fd, POLLIN, 0};
      const int r = poll(&p, 1, 0);
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
      if ((polls & 63u) == 63u) std::this_thread::yield();
    }
    return false;
  }
  while (!stop.load(std::memory_order_acquire)) {
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, kIdlePollMs);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
  return false;
}

// Names the NIC's threads (at most 15 characters), so a profile or top says which one runs.
void nameThread(const char* name) { pthread_setname_np(pthread_self(), name); }

int sendFrame(int fd, const Frame& f, const void* payload, size_t payload_bytes) {
  uint8_t header[kFrameHeaderBytes];
  encodeFrame(f, header);
  return writeFull2(fd, header, sizeof(header), payload, payload_bytes, kIoTimeoutMs);
}

// Reads and discards n payload bytes of a refused WRITE, keeping the stream in sync.
int drain(int fd, uint64_t n) {
  uint8_t sink[16384];
  while (n > 0) {
    const size_t take = n < sizeof(sink) ? (size_t)n : sizeof(sink);
    if (readFull(fd, sink, take, kIoTimeoutMs) != 0) return -1;
    n -= take;
  }
  return 0;
}

}  // namespace

// The receive side of one connection: headers (and the payloads of small requests) come out
// of one buffer that each recv fills as far as the socket allows, so a burst of frames costs a
// few system calls instead of two per frame; the rest of a large payload is received straight
// into its destination.
class RxBuffer {
 public:
  RxBuffer(int fd, size_t capacity) : fd_(fd), buf_(capacity) {}
  size_t available() const { return tail_ - head_; }
  const uint8_t* data() const { return buf_.data() + head_; }
  void consume(size_t n) {
    head_ += n;
    if (head_ == tail_) head_ = tail_ = 0;
  }
  /// Reads what is waiting, without blocking: bytes read (0: none waiting), -1 on EOF/error.
  long fillNow() {
    if (head_ > 0 && head_ * 2 > buf_.size()) {
      std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
      tail_ -= head_;
      head_ = 0;
    }
    if (tail_ == buf_.size()) return 0;
    const long r = recvNow(fd_, buf_.data() + tail_, buf_.size() - tail_);
    if (r > 0) tail_ += (size_t)r;
    return r;
  }
  /// Copies n bytes out: what is buffered, then straight from the socket. 0 ok, -1 error/EOF.
  int take(void* dst, uint64_t n) {
    const size_t m = (size_t)std::min<uint64_t>(n, available());
    std::memcpy(dst, data(), m);
    consume(m);
    return n > m ? readFull(fd_, (uint8_t*)dst + m, (size_t)(n - m), kIoTimeoutMs) : 0;
  }
  /// Discards n bytes (a refused WRITE's payload), keeping the stream in step.
  int skip(uint64_t n) {
    const size_t m = (size_t)std::min<uint64_t>(n, available());
    consume(m);
    return n > m ? drain(fd_, n - m) : 0;
  }

 private:
  int fd_;
  std::vector<uint8_t> buf_;
  size_t head_ = 0;
  size_t tail_ = 0;
};

namespace {

// Waits until rx holds a whole frame header. `before_sleep` runs when nothing is waiting, before
// the thread blocks (the responder sends the answers it holds). 0 ok; -1 closed, stopped or
// failed (errno as the failing call left it, 0 for an orderly close).
template <typename BeforeSleep>
int awaitHeader(RxBuffer* rx, int fd, const std::atomic<bool>& stop, bool busy,
                BeforeSleep before_sleep) {
  while (rx->available() < kFrameHeaderBytes) {
    errno = 0;
    const long got = rx->fillNow();
    if (got < 0) return -1;
    if (got > 0) continue;
    if (before_sleep() != 0) return -1;
    if (!waitReadable(fd, stop, busy)) return -1;
  }
  return 0;
}

constexpr size_t kRxBufferBytes = 64 * 1024;
// A WRITE staged through the port's arenas (memory not direct) moves in chunks of at most this
// size, kStagingSlots of them in flight: small enough that the copy left over at the end of a
// request (the one that cannot overlap the socket) is short.
constexpr size_t kStagingChunkBytes = 512 * 1024;
constexpr size_t kStagingSlots = 4;
size_t stagingChunk(size_t arena_bytes) {
  return std::min(kStagingChunkBytes, arena_bytes / kStagingSlots);
}
constexpr size_t kMaxHeldAnswers = 16 * 1024;  // answers held before they go out regardless

// A peer host that vanishes without a FIN or RST (power loss, cable, firewall) is noticed by
// TCP itself within about timeout_ms: keepalive probes on an idle connection, and
// TCP_USER_TIMEOUT for data that stays unacknowledged. The connection then fails with
// ETIMEDOUT. An abort comes at the first probe after user_ms of silence, so at most
// user_ms + probe after the last answer: timeout_ms - probe.
void boundSilence(int fd, int timeout_ms) {
  const int probe_s = std::max(1, timeout_ms / 10000);
  const int user_ms = std::max(1000, timeout_ms - 2 * probe_s * 1000);
  const int one = 1;
  const int count = std::max(1, user_ms / (probe_s * 1000));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &probe_s, sizeof(probe_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &probe_s, sizeof(probe_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
}

// HELLO_ACK status: 0 accepted, 1 not the rank asked for, kAckNotProven: the MAC was wrong.
constexpr uint32_t kAckNotProven = 2;

// Random bytes from the kernel; false when it has none to give (then nothing is keyed).
bool randomBytes(uint8_t* out, size_t n) {
  while (n > 0) {
    const ssize_t r = getrandom(out, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    out += r;
    n -= (size_t)r;
  }
  return true;
}

void helloMac(const uint8_t* key, const uint8_t* nonce, const uint8_t* hello_header,
              uint8_t out[kMacBytes]) {
  static const char kLabel[] = "te4j-nic-hello";
  const void* parts[] = {kLabel, nonce, hello_header};
  const size_t lengths[] = {sizeof(kLabel) - 1, kNonceBytes, kFrameHeaderBytes};
  hmacSha256(key, kAuthKeyBytes, parts, lengths, 3, out);
}

void ackMac(const uint8_t* key, const uint8_t* nonce, const uint8_t* hello_header,
            const uint8_t* ack_header, uint8_t out[kMacBytes]) {
  static const char kLabel[] = "te4j-nic-ack";
  const void* parts[] = {kLabel, nonce, hello_header, ack_header};
  const size_t lengths[] = {sizeof(kLabel) - 1, kNonceBytes, kFrameHeaderBytes, kFrameHeaderBytes};
  hmacSha256(key, kAuthKeyBytes, parts, lengths, 4, out);
}

// The requester's half of the handshake (wire_format.h), all of it by `deadline`. *closed is
// set when the responder closed the connection before answering: it dropped the handshake to
// make room under its caps (many ranks of one host connecting at once) or refused the proof.
bool clientHandshake(int fd, int local_rank, int dst_rank, size_t num_ranks, const uint8_t* key,
                     Clock::time_point deadline, std::string* why, bool* closed) {
  *closed = false;
  uint8_t challenge[kFrameHeaderBytes + kNonceBytes];
  if (readFullBy(fd, challenge, sizeof(challenge), deadline) != 0) {
    *why = errno == ETIMEDOUT
               ? "no challenge within the connect timeout (not a te4j software NIC, or stalled)"
               : "closed before its challenge";
    *closed = errno != ETIMEDOUT;
    return false;
  }
  Frame f;
  const char* bad = "";
  if (!decodeFrame(challenge, &f, &bad) || f.type != kFrameChallenge) {
    *why = std::string("bad challenge: ") +
           (f.type != kFrameChallenge && *bad == 0 ? "wrong frame type" : bad);
    return false;
  }
  uint8_t nonce[kNonceBytes];
  if (!randomBytes(nonce, sizeof(nonce))) {
    *why = "no random bytes from the kernel (getrandom)";
    return false;
  }
  Frame hello;
  hello.type = kFrameHello;
  hello.seq = (uint32_t)local_rank;
  hello.rkey = (uint32_t)dst_rank;
  hello.raddr = num_ranks;
  hello.length = kMacBytes;
  hello.src_qpn = getLe32(nonce);
  hello.dst_qpn = getLe32(nonce + 4);
  hello.arg0 = getLe32(nonce + 8);
  hello.arg1 = getLe32(nonce + 12);
  uint8_t msg[kFrameHeaderBytes + kMacBytes];
  encodeFrame(hello, msg);
  helloMac(key, challenge + kFrameHeaderBytes, msg, msg + kFrameHeaderBytes);
  if (writeFullBy(fd, msg, sizeof(msg), deadline) != 0) {
    *why = errno == ETIMEDOUT ? "HELLO not taken within the connect timeout"
                              : "closed while sending HELLO";
    return false;
  }
  uint8_t ack[kFrameHeaderBytes + kMacBytes];
  if (readFullBy(fd, ack, sizeof(ack), deadline) != 0) {
    *why = errno == ETIMEDOUT
               ? "no answer to HELLO within the connect timeout"
               : "it closed the connection each time: it refused this rank's proof of its key (the"
                 " metadata is not its current one, or not of this job), or strangers flood it";
    *closed = errno != ETIMEDOUT;
    return false;
  }
  if (!decodeFrame(ack, &f, &bad) || f.type != kFrameHelloAck) {
    *why = "bad answer to HELLO";
    return false;
  }
  if (f.rkey == kAckNotProven) {
    // Unauthenticated (a stranger can send it too): it only makes this attempt fail sooner.
    *why =
        "it refused this rank's proof of its key (the metadata is not its current one, or not of "
        "this job)";
    return false;
  }
  uint8_t expected[kMacBytes];
  ackMac(key, challenge + kFrameHeaderBytes, msg, ack, expected);
  if (!equalConstantTime(expected, ack + kFrameHeaderBytes, kMacBytes)) {
    *why = "it did not prove the key of its metadata (not the NIC the metadata names)";
    return false;
  }
  if (f.rkey != 0) {
    *why = "refused: it is not rank " + std::to_string(dst_rank);
    return false;
  }
  return true;
}

}  // namespace

int SoftNic::start(uint32_t ipv4, uint16_t port, std::string* err) {
  if (!randomBytes(key_, sizeof(key_))) {
    *err = std::string("no random bytes for the NIC's key (getrandom): ") + std::strerror(errno);
    return -1;
  }
  uint16_t bound = port;
  listen_fd_ = tcpListen(ipv4, &bound, err);
  if (listen_fd_ < 0) return -1;
  // The acceptor takes every waiting connection until none is left: accept must not block.
  fcntl(listen_fd_, F_SETFL, fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
  ipv4_ = ipv4;
  port_number_ = bound;
  stopping_.store(false);
  const char* poll_mode = std::getenv("TE4J_SOFTNIC_POLL");
  busy_poll_ = poll_mode != nullptr && std::strcmp(poll_mode, "busy") == 0;
  acceptor_ = std::thread([this] {
    nameThread("te4j-nic-accept");
    acceptLoop();
  });
  progress_ = std::thread([this] {
    nameThread("te4j-nic-progress");
    progressLoop();
  });
  {
    std::lock_guard<std::mutex> lock(g_nics_mu);
    g_nics.push_back(this);
  }
  return 0;
}

bool SoftNic::runDoorbellsHere() {
  bool all = true;
  std::lock_guard<std::mutex> lock(g_nics_mu);
  for (SoftNic* nic : g_nics) {
    if (nic->pause_.load(std::memory_order_acquire) || !nic->engine_mu_.try_lock()) {
      all = false;
      continue;
    }
    nic->scanOnce();
    nic->engine_mu_.unlock();
  }
  return all;
}

void softNicDoorbellHint() {
  // The calling thread sends what it posted where it can; otherwise the progress threads wake.
  if (!SoftNic::runDoorbellsHere()) wakeProgressThreads();
}

void SoftNic::stop() {
  if (listen_fd_ < 0) return;
  {
    std::lock_guard<std::mutex> lock(g_nics_mu);
    g_nics.erase(std::remove(g_nics.begin(), g_nics.end(), this), g_nics.end());
  }
  disconnect();
  stopping_.store(true, std::memory_order_release);
  // Wakes the acceptor's poll at once (it would otherwise notice the flag only after its idle
  // interval): closing a transport, and so an engine, takes no 100 ms per NIC.
  shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (progress_.joinable()) progress_.join();
  {
    std::lock_guard<std::mutex> lock(in_mu_);
    for (auto& c : in_) shutdown(c->fd, SHUT_RDWR);
  }
  std::vector<std::shared_ptr<InConn>> incoming;
  {
    std::lock_guard<std::mutex> lock(in_mu_);
    incoming.swap(in_);
  }
  for (auto& c : incoming)
    if (c->thread.joinable()) c->thread.join();
  close(listen_fd_);
  listen_fd_ = -1;
}

void SoftNic::setQps(std::vector<std::unique_ptr<SoftQp>> qps) {
  pause_.store(true);
  std::lock_guard<std::mutex> lock(engine_mu_);
  {
    std::lock_guard<std::mutex> map_lock(qpmap_mu_);
    qp_by_qpn_.clear();
    for (auto& qp : qps) qp_by_qpn_[qp->qpn] = qp.get();
  }
  qps_ = std::move(qps);
  pause_.store(false);
}

std::vector<std::unique_ptr<SoftQp>> SoftNic::takeQps() {
  disconnect();
  pause_.store(true);
  std::lock_guard<std::mutex> lock(engine_mu_);
  {
    std::lock_guard<std::mutex> map_lock(qpmap_mu_);
    qp_by_qpn_.clear();
  }
  std::vector<std::unique_ptr<SoftQp>> out;
  out.swap(qps_);
  pause_.store(false);
  return out;
}

int SoftNic::connect(int local_rank, const std::vector<PeerEndpoint>& peers, int timeout_ms,
                     std::string* err) {
  disconnect();
  local_rank_.store(local_rank);
  // One deadline for every peer and every step: a peer that answers slowly (or a stranger at
  // its address) cannot stretch the call past timeout_ms.
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<std::unique_ptr<OutConn>> conns(peers.size());
  auto closeAll = [&conns] {
    for (auto& c : conns)
      if (c) close(c->fd);
  };
  for (size_t r = 0; r < peers.size(); ++r) {
    if (!peers[r].active) continue;
    const std::string where = "rank " + std::to_string(r) + " (" + ipv4ToString(peers[r].ipv4) +
                              ":" + std::to_string(peers[r].port) + ")";
    int fd = -1;
    for (int backoff_ms = 5;; backoff_ms = std::min(backoff_ms * 2, 200)) {
      const int left = millisUntil(deadline);
      if (left == 0) {
        *err = "software NIC connect timed out after " + std::to_string(timeout_ms) +
               " ms before reaching " + where;
        closeAll();
        return -1;
      }
      fd = tcpConnect(peers[r].ipv4, peers[r].port, left, err);
      if (fd < 0) {
        *err = "software NIC cannot reach " + where + ": " + *err;
        closeAll();
        return -1;
      }
      boundSilence(fd, peer_timeout_ms_.load());
      std::string why;
      bool closed = false;
      if (clientHandshake(fd, local_rank, (int)r, peers.size(), peers[r].key, deadline, &why,
                          &closed))
        break;
      close(fd);
      // Closed unanswered: the responder may have dropped this handshake for room under its caps;
      // another attempt, within the same deadline, gets through.
      if (!closed || millisUntil(deadline) <= backoff_ms) {
        *err = "software NIC handshake with " + where + " failed: " + why +
               " (every rank must run te4j with wire"
               " version " +
               std::to_string(kWireVersion) + "; connect timeout " + std::to_string(timeout_ms) +
               " ms)";
        closeAll();
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    }
    conns[r] = std::make_unique<OutConn>();
    conns[r]->fd = fd;
    conns[r]->rank = (int)r;
    conns[r]->rx = std::make_unique<RxBuffer>(fd, kRxBufferBytes);
  }
  // The old connections' readers are joined (disconnect): nothing records a loss of them now.
  for (auto& l : lost_) l.store(0);
  pause_.store(true);
  {
    std::lock_guard<std::mutex> lock(engine_mu_);
    for (auto& qp : qps_) {
      const int peer = qp->peer_rank.load();
      if (peer >= 0 && (size_t)peer < conns.size() && conns[peer])
        conns[peer]->qps[qp->qpn] = qp.get();
    }
    for (auto& c : conns)
      if (c) {
        OutConn* raw = c.get();
        c->reader = std::thread([this, raw] {
          nameThread("te4j-nic-reader");
          readerLoop(raw);
        });
      }
    std::lock_guard<std::mutex> fds_lock(fds_mu_);
    for (auto& c : conns)
      if (c) out_live_.push_back(c.get());
    out_ = std::move(conns);
  }
  pause_.store(false);
  return 0;
}

void SoftNic::disconnect() {
  pause_.store(true);
  {
    // Shut the sockets before taking engine_mu_: the engine may hold it while blocked sending.
    std::lock_guard<std::mutex> lock(fds_mu_);
    for (OutConn* c : out_live_) {
      c->closing.store(true);
      shutdown(c->fd, SHUT_RDWR);
    }
    out_live_.clear();
  }
  std::lock_guard<std::mutex> lock(engine_mu_);
  for (auto& c : out_) {
    if (!c) continue;
    if (c->reader.joinable()) c->reader.join();
    close(c->fd);
  }
  out_.clear();
  pause_.store(false);
}

int SoftNic::lostCause(int rank) const {
  return rank >= 0 && rank < kMaxRanks ? lost_[rank].load() : 0;
}

void SoftNic::markLost(int rank, int cause) {
  if (rank < 0 || rank >= kMaxRanks) return;
  int none = 0;
  lost_[rank].compare_exchange_strong(none, cause == 0 ? kLostClosed : cause);
}

std::string SoftNic::diagnostics() {
  std::lock_guard<std::mutex> lock(diag_mu_);
  std::string all;
  for (const std::string& d : diagnostics_) all += d + "\n";
  if (diag_dropped_ > 0) all += std::to_string(diag_dropped_) + " more not kept\n";
  return all;
}

void SoftNic::flag(const std::string& message) {
  std::lock_guard<std::mutex> lock(diag_mu_);
  if (diagnostics_.size() < kMaxDiagnostics)
    diagnostics_.push_back(message);
  else
    ++diag_dropped_;
}

// ---- progress engine -----------------------------------------------------------------------

void SoftNic::progressLoop() {
  // The timed scans below are how device code's doorbells are found: with the default timer
  // slack (50 us) a 20 us wait would last ~70 us. (Host posters hint instead.)
  if (!port_->direct()) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  uint32_t idle = 0;
  Clock::time_point last_work = Clock::now();
  while (!stopping_.load(std::memory_order_acquire)) {
    bool worked = false;
    // Read before the scan: a hint given after it (for a doorbell the scan missed) moves the
    // count, and the sleep below then returns at once.
    const uint32_t hints = softNicHintCount();
    if (!pause_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(engine_mu_);
      worked = scanOnce();
    }
    if (worked) {
      idle = 0;
      if (!port_->direct()) last_work = Clock::now();
    } else if (busy_poll_ || ++idle <= 256 ||
               (!port_->direct() && Clock::now() - last_work < kDeviceSpin)) {
      // Device posts come in bursts (a kernel's WQEs, the next op of its stream) and give no
      // hint: the thread keeps scanning for a while after the last one before it sleeps.
      std::this_thread::yield();
    } else {
      // Idle: host posters wake this at once (doorbell_hint.h); device code's doorbells are
      // found by the timed scan, so two cores shared with the ranks' own threads stay usable.
      // Host memory: every host poster hints, so the short interval (which costs a wake-up
      // every 20 us on cores the ranks share) is only for device posts.
      softNicAwaitHint(hints, idle > 4096 || port_->direct() ? 200 : 20);
    }
  }
}

bool SoftNic::scanOnce() {
  bool worked = false;
  for (auto& qp : qps_) {
    for (uint32_t half = 0; half < 2; ++half) {
      uint64_t* word = qp->uar + half * (qp->bf_size / 8);
      // Taking the word (exchange with 0) consumes exactly one doorbell write; a write landing
      // after the exchange stays for the next scan. A doorbell is never 0 (qpn != 0).
      const uint64_t value = __atomic_exchange_n(word, 0, __ATOMIC_ACQ_REL);
      if (value == 0) continue;
      doorbell(qp.get(), value);
      worked = true;
    }
  }
  // Everything this scan found goes out now, coalesced per connection.
  flushBatch();
  return worked;
}

void SoftNic::doorbell(SoftQp* qp, uint64_t value) {
  stats_.doorbells.fetch_add(1);
  // The UAR word holds the WQE's first 8 bytes as they lie in memory (two big-endian words).
  const uint32_t w0 = __builtin_bswap32((uint32_t)value);
  const uint32_t w1 = __builtin_bswap32((uint32_t)(value >> 32));
  const uint32_t rung_qpn = w1 >> 8;
  const uint16_t rung_index = (uint16_t)(w0 >> 8);
  if (rung_qpn != qp->qpn) {
    stats_.uar_mismatches.fetch_add(1);
    flag("QP " + std::to_string(qp->qpn) + ": UAR written with qpn " + std::to_string(rung_qpn) +
         " (the doorbell must be the WQE's ctrl segment)");
    return;
  }
  const uint16_t dbr =
      (uint16_t)__builtin_bswap32(__atomic_load_n(&qp->sq_dbrec[mlx5::kSndDbr], __ATOMIC_ACQUIRE));
  const uint16_t fetched = (uint16_t)qp->fetch_ci;
  const uint32_t pending = (uint16_t)(dbr - fetched);
  if (pending > qp->sq_mask + 1) {
    stats_.dbr_mismatches.fetch_add(1);
    flag("QP " + std::to_string(qp->qpn) + ": doorbell record " + std::to_string(dbr) +
         " is more than a ring ahead of the NIC's index " + std::to_string(fetched) +
         "; WQEs ignored");
    return;
  }
  if ((int16_t)(rung_index - dbr) >= 0) {
    // The hardware would not fetch the rung WQE either: the record says it does not exist yet.
    stats_.dbr_mismatches.fetch_add(1);
    flag("QP " + std::to_string(qp->qpn) + ": UAR rung for WQE " + std::to_string(rung_index) +
         " but the doorbell record is " + std::to_string(dbr) +
         " (update the record, fence, then ring)");
  } else if ((uint16_t)(rung_index - fetched) < pending) {
    uint64_t first8;
    std::memcpy(&first8, qp->sq_buf + (size_t)(rung_index & qp->sq_mask) * mlx5::kSendWqeBB, 8);
    if (first8 != value) {
      stats_.uar_mismatches.fetch_add(1);
      flag("QP " + std::to_string(qp->qpn) + ": UAR value differs from WQE " +
           std::to_string(rung_index) + "'s first 8 bytes");
    }
  }
  for (uint32_t left = pending; left > 0;) left -= executeWqe(qp, left);
}

uint32_t SoftNic::executeWqe(SoftQp* qp, uint32_t left) {
  ParsedWqe w;
  parseWqe(qp->sq_buf, qp->sq_mask, qp->fetch_ci, qp->qpn, &w);
  stats_.wqes.fetch_add(1);
  if (w.num_bbs > left) {
    // The WQE claims blocks the doorbell record does not cover: refuse it, stay in step.
    w.num_bbs = left;
    if (w.syndrome == 0) w.syndrome = mlx5::kSyndromeLocalLengthErr;
  }
  const uint32_t consumed = w.num_bbs;
  InFlight e;
  e.wqe_counter = (uint16_t)qp->fetch_ci;
  e.opcode = w.opcode;
  e.signaled = w.signaled();
  qp->fetch_ci += w.num_bbs;

  uint8_t syndrome = w.syndrome;
  if (syndrome == 0) {
    // A READ's scatter list and an atomic's fetch address are written, a WRITE's gather list read.
    const uint32_t access =
        w.opcode == mlx5::kOpcodeAtomicMaskedFa || w.opcode == mlx5::kOpcodeRdmaRead
            ? kAccessLocalWrite
            : kAccessLocalRead;
    for (int i = 0; i < w.num_sge && syndrome == 0; ++i)
      if (!regions_->check(w.sge[i].lkey, w.sge[i].addr, w.sge[i].length, access))
        syndrome = mlx5::kSyndromeLocalProtErr;
  }
  const int peer = qp->peer_rank.load();
  OutConn* conn = (peer >= 0 && (size_t)peer < out_.size()) ? out_[peer].get() : nullptr;
  if (syndrome == 0 && w.opcode != mlx5::kOpcodeNop && conn == nullptr)
    syndrome = mlx5::kSyndromeLocalQpOpErr;  // a QP that is not connected (not in RTS)
  if (syndrome != 0) stats_.local_errors.fetch_add(1);
  if (syndrome == 0 && w.opcode != mlx5::kOpcodeNop && conn->broken.load())
    syndrome = mlx5::kSyndromeTransportRetryExcErr;  // the link to the peer is gone
  if (syndrome != 0 || w.opcode == mlx5::kOpcodeNop) {
    e.done = true;
    e.syndrome = syndrome;
    qp->push(e);
    qp->retire(&stats_);
    return consumed;
  }
  if (w.opcode == mlx5::kOpcodeAtomicMaskedFa) {
    e.has_fetch = true;
    e.fetch_addr = w.sge[0].addr;
    e.byte_count = 4;
  }
  if (w.opcode == mlx5::kOpcodeRdmaRead) {
    e.byte_count = (uint32_t)w.total_length;
    e.scatter.assign(w.sge, w.sge + w.num_sge);
  }
  if (!qp->push(e)) {
    qp->retire(&stats_);
    return consumed;
  }
  Frame f;
  f.src_qpn = qp->qpn;
  f.dst_qpn = qp->peer_qpn.load();
  f.seq = e.wqe_counter;
  f.rkey = w.rkey;
  f.raddr = w.raddr;
  if (w.opcode == mlx5::kOpcodeRdmaWrite && !port_->direct() && port_->gatherArena() != nullptr) {
    sendGathered(qp, conn, f, w);
    return consumed;
  }
  if (w.opcode == mlx5::kOpcodeRdmaWrite && !(port_->direct() && w.num_sge <= 1)) {
    sendStaged(qp, conn, f, w);
    return consumed;
  }
  if (w.opcode == mlx5::kOpcodeRdmaWrite) {
    f.type = kFrameWrite;
    f.length = (uint32_t)w.total_length;
    const void* src = w.num_sge == 1 ? (const void*)(uintptr_t)w.sge[0].addr : nullptr;
    queueFrame(qp, conn, f, src);
  } else if (w.opcode == mlx5::kOpcodeRdmaRead) {
    f.type = kFrameRead;
    f.arg0 = (uint32_t)w.total_length;  // the bytes asked for; the request itself carries none
    queueFrame(qp, conn, f, nullptr);
  } else {
    f.type = kFrameMaskedFa32;
    f.arg0 = w.add;
    f.arg1 = w.field_boundary;
    queueFrame(qp, conn, f, nullptr);
  }
  return consumed;
}

void SoftNic::queueFrame(SoftQp* qp, OutConn* conn, const Frame& f, const void* payload,
                         uint64_t gather_ticket) {
  if (batch_.conn != conn || batch_.frames.size() == kMaxBatchFrames) flushBatch();
  batch_.conn = conn;
  batch_.frames.emplace_back();
  QueuedFrame& q = batch_.frames.back();
  encodeFrame(f, q.header);
  q.payload = payload;
  q.length = f.type == kFrameWrite ? f.length : 0;
  q.qp = qp;
  q.seq = (uint16_t)f.seq;
  q.gather_ticket = gather_ticket;
  batch_.bytes += q.length;
  // A large message goes out at once: its bytes, not the coalescing, are the cost.
  if (batch_.bytes >= kMaxBatchBytes) flushBatch();
}

void SoftNic::flushBatch() {
  if (batch_.frames.empty()) return;
  OutConn* conn = batch_.conn;
  // Gathered payloads: one stream, so the newest ticket covers them all.
  uint64_t ticket = 0;
  for (const QueuedFrame& q : batch_.frames) ticket = std::max(ticket, q.gather_ticket);
  std::string gather_err;
  const bool gathered = ticket == 0 || port_->awaitGather(ticket, &gather_err) == 0;
  if (!gathered) {
    // Nothing of the batch is sent; the GPU failed its copies, so later ones would too: the
    // connection goes, and every request on it fails as on a lost link.
    breakConnection(conn, EIO, "gathering WRITE sources: " + gather_err);
  }
  // Headers and payloads in one sendmsg, the payloads straight from registered memory (or
  // from the gather arena).
  iovec iov[2 * kMaxBatchFrames];
  int n = 0;
  for (QueuedFrame& q : batch_.frames) {
    iov[n++] = iovec{q.header, kFrameHeaderBytes};
    if (q.length > 0) iov[n++] = iovec{(void*)q.payload, q.length};
  }
  errno = 0;
  const int rc = gathered ? writeVecFull(conn->fd, iov, n, kIoTimeoutMs) : -1;
  const int send_errno = gathered ? errno : EIO;
  // From here the sources are no longer read: a request's CQE may be written (by whichever of
  // this thread and the reader comes last), and the application may then reuse the source.
  for (QueuedFrame& q : batch_.frames) q.qp->markSent(q.seq);
  if (rc != 0) {
    if (!conn->closing.load()) markLost(conn->rank, send_errno);
    conn->broken.store(true);
  }
  // A broken connection after a good send: the reader gave up on it and may have failed the
  // pending requests before these were pushed; nobody will answer them.
  const bool failed = rc != 0 || conn->broken.load();
  SoftQp* last = nullptr;
  for (QueuedFrame& q : batch_.frames) {
    if (q.qp == last) continue;
    last = q.qp;
    if (failed) q.qp->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
    q.qp->retire(&stats_);
  }
  batch_.frames.clear();
  batch_.bytes = 0;
  batch_.gathered = 0;
  batch_.conn = nullptr;
}

int SoftNic::gatherRange(const ParsedWqe& w, uint64_t from, size_t n, size_t at, std::string* err) {
  uint64_t skip = from;
  for (int i = 0; i < w.num_sge && n > 0; ++i) {
    const uint64_t len = w.sge[i].length;
    if (skip >= len) {
      skip -= len;
      continue;
    }
    const size_t piece = (size_t)std::min<uint64_t>(len - skip, n);
    if (port_->gatherAsync(at, w.sge[i].addr + skip, piece, err) != 0) return -1;
    at += piece;
    n -= piece;
    skip = 0;
  }
  return 0;
}

void SoftNic::failUnsent(SoftQp* qp, uint16_t seq, const std::string& why) {
  flag("QP " + std::to_string(qp->qpn) + ": reading WRITE source: " + why);
  qp->markSent(seq);
  qp->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
  qp->retire(&stats_);
}

void SoftNic::breakConnection(OutConn* conn, int cause, const std::string& why) {
  flag("connection to rank " + std::to_string(conn->rank) + " closed: " + why);
  if (!conn->closing.load()) markLost(conn->rank, cause);
  conn->broken.store(true);
  // The reader ends on the shut socket and fails what was in flight.
  shutdown(conn->fd, SHUT_RDWR);
}

void SoftNic::sendGathered(SoftQp* qp, OutConn* conn, Frame f, const ParsedWqe& w) {
  f.type = kFrameWrite;
  f.length = (uint32_t)w.total_length;
  const size_t arena = port_->gatherArenaBytes();
  const size_t chunk = stagingChunk(arena);
  uint8_t* base = port_->gatherArena();
  std::string err;
  if (f.length <= chunk) {
    // Joins the batch; the batch is sent (its copies awaited) first if the arena is used up.
    if (batch_.conn != conn || batch_.frames.size() == kMaxBatchFrames ||
        batch_.gathered + f.length > arena)
      flushBatch();
    const size_t at = batch_.gathered;
    uint64_t ticket = 0;
    if (gatherRange(w, 0, f.length, at, &err) == 0) ticket = port_->gatherTicket(&err);
    if (ticket == 0) {
      // What is queued goes first, so that this QP has nothing in the batch when it fails.
      flushBatch();
      failUnsent(qp, (uint16_t)f.seq, err);
      return;
    }
    // Cache-line aligned, so that the next payload's copy does not share a line with this one.
    batch_.gathered = at + ((f.length + 63u) & ~(size_t)63u);
    queueFrame(qp, conn, f, base + at, ticket);
    return;
  }
  // Wire order: whatever is queued goes first; the arena is then free.
  flushBatch();
  const uint64_t total = f.length;
  const size_t chunks = (size_t)((total + chunk - 1) / chunk);
  uint64_t tickets[kStagingSlots] = {};
  auto bytesOf = [&](size_t c) { return (size_t)std::min<uint64_t>(chunk, total - c * chunk); };
  auto queueChunk = [&](size_t c) -> bool {
    const size_t slot = c % kStagingSlots;
    if (gatherRange(w, c * chunk, bytesOf(c), slot * chunk, &err) != 0) return false;
    tickets[slot] = port_->gatherTicket(&err);
    return tickets[slot] != 0;
  };
  size_t queued = 0;
  bool ok = true;
  while (ok && queued < chunks && queued < kStagingSlots) ok = queueChunk(queued++);
  // Nothing is sent until the first chunk is in: a failure up to here leaves the wire in step.
  if (ok) ok = port_->awaitGather(tickets[0], &err) == 0;
  if (!ok) {
    failUnsent(qp, (uint16_t)f.seq, err);
    return;
  }
  uint8_t header[kFrameHeaderBytes];
  encodeFrame(f, header);
  errno = 0;
  int rc = writeFull2(conn->fd, header, sizeof(header), base, bytesOf(0), kIoTimeoutMs);
  int send_errno = errno;
  for (size_t c = 1; rc == 0 && ok && c < chunks; ++c) {
    // Chunk c - 1 is sent: its slot takes the next chunk not yet queued.
    if (queued < chunks) ok = queueChunk(queued++);
    const size_t slot = c % kStagingSlots;
    if (ok) ok = port_->awaitGather(tickets[slot], &err) == 0;
    if (!ok) break;
    errno = 0;
    rc = writeFull(conn->fd, base + slot * chunk, bytesOf(c), kIoTimeoutMs);
    send_errno = errno;
  }
  qp->markSent((uint16_t)f.seq);
  if (!ok) {
    // Part of the frame's bytes went out and the rest cannot be had.
    breakConnection(conn, EIO, "QP " + std::to_string(qp->qpn) + ": gathering a WRITE: " + err);
    qp->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
  } else if (rc != 0) {
    if (!conn->closing.load()) markLost(conn->rank, send_errno);
    conn->broken.store(true);
    qp->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
  } else if (conn->broken.load()) {
    qp->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
  }
  qp->retire(&stats_);
}

void SoftNic::sendStaged(SoftQp* qp, OutConn* conn, Frame f, const ParsedWqe& w) {
  // Wire order: whatever is queued goes first. The staging buffer is reused per request, so
  // this frame is sent before the next one is gathered.
  flushBatch();
  f.type = kFrameWrite;
  f.length = (uint32_t)w.total_length;
  staging_.resize(f.length);
  std::string err;
  size_t at = 0;
  bool read_failed = false;
  for (int i = 0; i < w.num_sge && !read_failed; ++i) {
    read_failed = port_->read(staging_.data() + at, w.sge[i].addr, w.sge[i].length, &err) != 0;
    at += w.sge[i].length;
  }
  int rc = 0;
  errno = 0;
  if (read_failed)
    flag("QP " + std::to_string(qp->qpn) + ": reading WRITE source: " + err);
  else
    rc = sendFrame(conn->fd, f, staging_.data(), f.length);
  const int send_errno = errno;
  qp->markSent((uint16_t)f.seq);
  if (read_failed) {
    // Nothing was sent, the wire is in step: only this QP's requests fail.
    qp->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
  } else if (rc != 0) {
    if (!conn->closing.load()) markLost(conn->rank, send_errno);
    conn->broken.store(true);
    qp->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
  } else if (conn->broken.load()) {
    qp->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
  }
  qp->retire(&stats_);
}

// ---- requester side: responses -------------------------------------------------------------

int SoftNic::placeReadData(RxBuffer* rx, const std::vector<ParsedSge>& scatter, uint8_t* syndrome) {
  std::vector<uint8_t> staging;
  for (const ParsedSge& sge : scatter) {
    std::shared_lock<std::shared_mutex> hold;
    // The destination was checked at post time; it is checked again (and held) now, because the
    // application may have deregistered and freed it while the READ was on the wire.
    if (*syndrome != 0 ||
        !regions_->checkAndHold(sge.lkey, sge.addr, sge.length, kAccessLocalWrite, &hold)) {
      if (*syndrome == 0) *syndrome = mlx5::kSyndromeLocalProtErr;
      if (rx->skip(sge.length) != 0) return -1;
      continue;
    }
    if (port_->direct()) {
      if (rx->take((void*)(uintptr_t)sge.addr, sge.length) != 0) return -1;
      continue;
    }
    staging.resize(sge.length);
    if (rx->take(staging.data(), sge.length) != 0) return -1;
    std::string err;
    if (port_->write(sge.addr, staging.data(), sge.length, &err) != 0) {
      flag("placing READ data: " + err);
      *syndrome = mlx5::kSyndromeLocalProtErr;
    }
  }
  return 0;
}

int SoftNic::placeWriteData(RxBuffer* rx, uint64_t dst, uint64_t length, uint8_t* syndrome) {
  uint8_t* arena = port_->placementArena();
  const size_t chunk = stagingChunk(port_->placementArenaBytes());
  uint64_t tickets[kStagingSlots] = {};
  uint64_t newest = 0;
  uint64_t received = 0;
  std::string err;
  bool ok = true;
  for (size_t c = 0; ok && received < length; ++c) {
    const size_t slot = c % kStagingSlots;
    const size_t n = (size_t)std::min<uint64_t>(chunk, length - received);
    // The slot's previous chunk must be copied out before it is received into again.
    if (tickets[slot] != 0 && port_->awaitPlacement(tickets[slot], &err) != 0) {
      ok = false;
      break;
    }
    if (rx->take(arena + slot * chunk, n) != 0) {
      // The connection failed; what was queued still lands before the region is let go.
      (void)port_->awaitPlacement(newest, &err);
      return -1;
    }
    const uint64_t at = received;
    received += n;
    if (port_->placeAsync(dst + at, slot * chunk, n, &err) != 0) {
      ok = false;
      break;
    }
    tickets[slot] = port_->placementTicket(&err);
    if (tickets[slot] == 0) {
      ok = false;
      break;
    }
    newest = tickets[slot];
  }
  std::string wait_err;
  if (newest != 0 && port_->awaitPlacement(newest, &wait_err) != 0) {
    if (ok) err = wait_err;
    ok = false;
  }
  if (ok) return 0;
  flag("placing a WRITE: " + err);
  *syndrome = mlx5::kSyndromeRemoteOpErr;
  return rx->skip(length - received);
}

SoftNic::OutConn::~OutConn() = default;

void SoftNic::readerLoop(OutConn* conn) {
  int cause = 0;  // errno of the failed receive, 0: the peer closed the connection
  RxBuffer& rx = *conn->rx;
  for (;;) {
    if (awaitHeader(&rx, conn->fd, conn->closing, busy_poll_, [] { return 0; }) != 0) {
      cause = errno;
      break;
    }
    Frame f;
    const char* why = "";
    if (!decodeFrame(rx.data(), &f, &why)) {
      cause = EPROTO;
      if (!conn->closing.load())
        flag("connection to rank " + std::to_string(conn->rank) + ": " + why);
      break;
    }
    rx.consume(kFrameHeaderBytes);
    auto it = conn->qps.find(f.src_qpn);
    bool has_fetch = false;
    uint64_t fetch_addr = 0;
    uint8_t syndrome = (uint8_t)f.arg0;
    if (f.type == kFrameResponse && f.length > 0) {
      // A READ's bytes: only for the oldest request, a READ of exactly that many, answered ok.
      std::vector<ParsedSge> scatter;
      uint32_t want = 0;
      if (it == conn->qps.end() || syndrome != 0 ||
          !it->second->readTarget((uint16_t)f.seq, &scatter, &want) || want != f.length) {
        stats_.bad_frames.fetch_add(1);
        flag("rank " + std::to_string(conn->rank) + " sent READ data that no READ asked for");
        cause = EPROTO;
        break;
      }
      if (placeReadData(&rx, scatter, &syndrome) != 0) {
        cause = errno;
        break;
      }
    }
    if (f.type != kFrameResponse || it == conn->qps.end() || f.arg0 > 0xff ||
        !it->second->answer((uint16_t)f.seq, syndrome, &stats_, &has_fetch, &fetch_addr)) {
      stats_.bad_frames.fetch_add(1);
      flag("rank " + std::to_string(conn->rank) + " sent a response out of order or for no QP");
      cause = EPROTO;
      break;
    }
    if (syndrome == 0 && has_fetch) {
      std::string err;
      if (port_->write(fetch_addr, &f.arg1, 4, &err) != 0) flag("storing a fetched value: " + err);
    }
    it->second->retire(&stats_);
  }
  // Recorded before the error CQEs below, so whoever sees those can already name the lost rank.
  if (!conn->closing.load()) markLost(conn->rank, cause);
  conn->broken.store(true);
  // Requests without an answer never completed at the responder: as on a lost link, the first
  // one fails with "transport retry exceeded" and the rest are flushed.
  for (auto& entry : conn->qps) {
    if (entry.second->pending() == 0) continue;
    entry.second->failAll(mlx5::kSyndromeTransportRetryExcErr, &stats_);
    entry.second->retire(&stats_);
  }
}

// ---- responder side ------------------------------------------------------------------------

void SoftNic::acceptLoop() {
  std::vector<Pending> pending;  // oldest first
  std::vector<pollfd> fds;
  while (!stopping_.load(std::memory_order_acquire)) {
    fds.clear();
    fds.push_back(pollfd{listen_fd_, POLLIN, 0});
    int wait_ms = kIdlePollMs;
    for (const Pending& p : pending) {
      fds.push_back(pollfd{p.fd, POLLIN, 0});
      wait_ms = std::min(wait_ms, std::max(1, millisUntil(p.deadline)));
    }
    const int ready = poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kIdlePollMs));
      continue;
    }
    std::vector<Pending> next;
    next.reserve(pending.size());
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      bool finished = false;
      if (ready > 0 && (fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
        finished = advanceHandshake(&p);
      if (!finished && millisUntil(p.deadline) == 0) {
        // Too slow, however it paced its bytes: the deadline ran from the accept.
        stats_.handshakes_dropped.fetch_add(1);
        close(p.fd);
        finished = true;
      }
      if (!finished) next.push_back(p);
    }
    pending.swap(next);
    if (ready > 0 && (fds[0].revents & POLLIN) != 0) acceptPending(&pending);
  }
  for (const Pending& p : pending) close(p.fd);
}

void SoftNic::acceptPending(std::vector<Pending>* pending) {
  // A bounded number per wake-up, so the handshakes already pending get their turn.
  for (size_t k = 0; k < kMaxPending; ++k) {
    uint32_t ip = 0;
    const int fd = tcpAcceptNow(listen_fd_, &ip);
    if (fd < 0) return;
    size_t same = 0;
    size_t oldest_same = pending->size();
    for (size_t i = 0; i < pending->size(); ++i) {
      if ((*pending)[i].ipv4 != ip) continue;
      if (same++ == 0) oldest_same = i;
    }
    // Past a cap the oldest pending handshake makes room: a rank's handshake takes one round
    // trip, so strangers that hold connections open cannot keep it out.
    const size_t victim = same >= kMaxPendingPerSource     ? oldest_same
                          : pending->size() >= kMaxPending ? 0
                                                           : pending->size();
    if (victim < pending->size()) {
      close((*pending)[victim].fd);
      pending->erase(pending->begin() + (long)victim);
      stats_.handshakes_dropped.fetch_add(1);
    }
    Pending p;
    p.fd = fd;
    p.ipv4 = ip;
    p.deadline = Clock::now() + std::chrono::milliseconds(handshake_timeout_ms_.load());
    Frame challenge;
    challenge.type = kFrameChallenge;
    challenge.length = kNonceBytes;
    uint8_t msg[kFrameHeaderBytes + kNonceBytes];
    encodeFrame(challenge, msg);
    if (!randomBytes(p.nonce, sizeof(p.nonce))) {
      close(fd);
      continue;
    }
    std::memcpy(msg + kFrameHeaderBytes, p.nonce, kNonceBytes);
    // A fresh socket's send buffer takes these 64 bytes at once; a socket that does not is dropped.
    if (send(fd, msg, sizeof(msg), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(msg)) {
      close(fd);
      stats_.handshakes_dropped.fetch_add(1);
      continue;
    }
    pending->push_back(p);
  }
}

bool SoftNic::advanceHandshake(Pending* p) {
  const ssize_t n = recv(p->fd, p->hello + p->got, sizeof(p->hello) - p->got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (n <= 0) {
    stats_.handshakes_dropped.fetch_add(1);
    close(p->fd);
    return true;
  }
  p->got += (size_t)n;
  if (p->got < sizeof(p->hello)) return false;
  Frame hello;
  const char* why = "";
  bool ok = decodeFrame(p->hello, &hello, &why) && hello.type == kFrameHello;
  if (ok) {
    uint8_t mac[kMacBytes];
    helloMac(key_, p->nonce, p->hello, mac);
    ok = equalConstantTime(mac, p->hello + kFrameHeaderBytes, kMacBytes);
    if (!ok) why = "it did not prove this NIC's key";
  } else if (*why == 0) {
    why = "expected HELLO";
  }
  if (!ok) {
    stats_.handshakes_refused.fetch_add(1);
    flag("refused a connection from " + ipv4ToString(p->ipv4) + ": " + why);
    // A rank with stale metadata learns at once that retrying is useless; the answer carries
    // nothing a stranger could use (no MAC, no state).
    Frame refusal;
    refusal.type = kFrameHelloAck;
    refusal.rkey = kAckNotProven;
    refusal.length = kMacBytes;
    uint8_t msg[kFrameHeaderBytes + kMacBytes] = {};
    encodeFrame(refusal, msg);
    (void)!send(p->fd, msg, sizeof(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
    close(p->fd);
    return true;
  }
  const int me = local_rank_.load();
  Frame ack;
  ack.type = kFrameHelloAck;
  ack.seq = hello.rkey;
  ack.rkey = (me >= 0 && (uint32_t)me != hello.rkey) ? 1u : 0u;  // 1: not the rank you wanted
  ack.length = kMacBytes;
  uint8_t msg[kFrameHeaderBytes + kMacBytes];
  encodeFrame(ack, msg);
  ackMac(key_, p->nonce, p->hello, msg, msg + kFrameHeaderBytes);
  fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) & ~O_NONBLOCK);
  if (writeFullBy(p->fd, msg, sizeof(msg), p->deadline) != 0 || ack.rkey != 0) {
    close(p->fd);
    return true;
  }
  if (!serve(p->fd, (int)hello.seq)) {
    stats_.handshakes_dropped.fetch_add(1);
    flag("refused an authenticated connection from " + ipv4ToString(p->ipv4) + ": " +
         std::to_string(kMaxResponders) + " connections are served already");
    close(p->fd);
  }
  return true;
}

void SoftNic::reapResponders() {
  for (auto it = in_.begin(); it != in_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      it = in_.erase(it);  // the fd closes with the last owner (a waiter may still hold it)
    } else {
      ++it;
    }
  }
}

bool SoftNic::serve(int fd, int src_rank) {
  std::lock_guard<std::mutex> lock(in_mu_);
  // Reap responders whose peer went away, so reconnects do not accumulate threads.
  reapResponders();
  if (in_.size() >= kMaxResponders) return false;
  auto conn = std::make_shared<InConn>();
  conn->fd = fd;
  conn->src_rank = src_rank;
  conn->state = std::make_unique<ResponderState>(fd);
  InConn* raw = conn.get();
  try {
    conn->thread = std::thread([this, raw] {
      nameThread("te4j-nic-respond");
      responderLoop(raw);
    });
  } catch (const std::system_error&) {
    conn->fd = -1;  // the caller closes it
    return false;   // no thread to be had: refused like a connection over the cap
  }
  in_.push_back(std::move(conn));
  return true;
}

// What a responder keeps between requests: the buffered receive side, the answers not yet sent
// and the requester QPs whose requests are flushed from now on.
struct ResponderState {
  explicit ResponderState(int fd) : rx(fd, kRxBufferBytes) {
    answers.reserve(kMaxHeldAnswers + kFrameHeaderBytes);
  }
  RxBuffer rx;
  // Answers in arrival order, sent together when no request is waiting (or when many are
  // held): a burst of requests is answered with a few sends, not one per request.
  std::vector<uint8_t> answers;
  std::map<uint32_t, bool> errored;
  std::vector<uint8_t> staging;
  bool ended = false;  // the stream can no longer be followed; the thread shuts the connection
};

SoftNic::InConn::~InConn() {
  if (fd >= 0) close(fd);
}

int SoftNic::serveFrames(InConn* conn) {
  ResponderState& st = *conn->state;
  if (st.ended) return kServeEnded;
  const int src_rank = conn->src_rank;
  const char* why = "";
  RxBuffer& rx = st.rx;
  std::vector<uint8_t>& staging = st.staging;
  std::map<uint32_t, bool>& errored = st.errored;
  std::vector<uint8_t>& answers = st.answers;
  auto sendAnswers = [&]() -> int {
    if (answers.empty()) return 0;
    const int rc = writeFull(conn->fd, answers.data(), answers.size(), kIoTimeoutMs);
    answers.clear();
    return rc;
  };
  auto ended = [&]() -> int {
    // What was answered before the connection ended still goes out (best effort).
    (void)sendAnswers();
    st.ended = true;
    return kServeEnded;
  };
  for (;;) {
    if (rx.available() < kFrameHeaderBytes) {
      errno = 0;
      const long got = rx.fillNow();
      if (got < 0) return ended();
      if (got > 0) continue;
      // Nothing waiting: the answers held go out before whoever serves sleeps.
      return sendAnswers() != 0 ? ended() : kServeIdle;
    }
    Frame f;
    if (!decodeFrame(rx.data(), &f, &why)) {
      stats_.bad_frames.fetch_add(1);
      flag("rank " + std::to_string(src_rank) + " sent a bad frame: " + why);
      return ended();
    }
    rx.consume(kFrameHeaderBytes);
    if (!isRequestFrame(f.type)) {
      stats_.bad_frames.fetch_add(1);
      flag("rank " + std::to_string(src_rank) + " sent an unexpected frame type");
      return ended();
    }
    uint8_t syndrome = 0;
    {
      std::lock_guard<std::mutex> lock(qpmap_mu_);
      auto it = qp_by_qpn_.find(f.dst_qpn);
      // No QP, or one not connected to this requester: hardware drops the packets, and the
      // requester gives up after its retries.
      if (it == qp_by_qpn_.end() || it->second->peer_rank.load() != src_rank ||
          it->second->peer_qpn.load() != f.src_qpn)
        syndrome = mlx5::kSyndromeTransportRetryExcErr;
    }
    if (syndrome == 0 && errored[f.src_qpn]) syndrome = mlx5::kSyndromeWrFlushErr;
    uint32_t old_value = 0;
    // Held from the key check until the access is done: a deregistration (which comes before
    // the memory is freed) waits for it instead of freeing the memory under this thread.
    std::shared_lock<std::shared_mutex> hold;
    bool in_step = true;  // false: the byte stream can no longer be followed (I/O failed)
    // One case per request opcode (wire_format.h); each checks the key and bounds before any
    // access and leaves the stream at the next header.
    const void* read_data = nullptr;  // a READ that passed its checks: the bytes to answer with
    uint32_t read_bytes = 0;
    switch (f.type) {
      case kFrameRead: {
        if (syndrome == 0 && (f.arg0 == 0 || f.arg0 > kMaxFramePayload))
          syndrome = mlx5::kSyndromeRemoteInvalReqErr;
        if (syndrome == 0 &&
            !regions_->checkAndHold(f.rkey, f.raddr, f.arg0, kAccessRemoteRead, &hold))
          syndrome = mlx5::kSyndromeRemoteAccessErr;
        if (syndrome == 0) {
          if (port_->direct()) {
            read_data = (const void*)(uintptr_t)f.raddr;
          } else {
            std::string err;
            staging.resize(f.arg0);
            if (port_->read(staging.data(), f.raddr, f.arg0, &err) != 0) {
              flag("serving a READ: " + err);
              syndrome = mlx5::kSyndromeRemoteOpErr;
            } else {
              read_data = staging.data();
            }
          }
          if (syndrome == 0) {
            read_bytes = f.arg0;
            stats_.bytes_read.fetch_add(f.arg0);
          }
        }
        break;
      }
      case kFrameWrite: {
        if (syndrome == 0 &&
            !regions_->checkAndHold(f.rkey, f.raddr, f.length, kAccessRemoteWrite, &hold))
          syndrome = mlx5::kSyndromeRemoteAccessErr;
        int io = 0;
        if (syndrome != 0) {
          io = rx.skip(f.length);
        } else if (port_->direct()) {
          // Straight into the destination, checked above: no copy through a bounce buffer.
          io = rx.take((void*)(uintptr_t)f.raddr, f.length);
          // The data is placed before any later request's effect becomes visible: a signal after
          // it is applied by this same thread as a seq_cst (so release) RMW in
          // MemoryPort::fetchAddMasked32, which the waiter acquires. The fence additionally
          // orders it before a later WRITE that a reader might poll (ThreadSanitizer ignores
          // standalone fences; the signal's RMW is what it sees).
          __atomic_thread_fence(__ATOMIC_RELEASE);
        } else if (port_->placementArena() != nullptr) {
          io = placeWriteData(&rx, f.raddr, f.length, &syndrome);
        } else {
          staging.resize(f.length);
          std::string err;
          io = rx.take(staging.data(), f.length);
          if (io == 0 && port_->write(f.raddr, staging.data(), f.length, &err) != 0) {
            flag("placing a WRITE: " + err);
            syndrome = mlx5::kSyndromeRemoteOpErr;
          }
        }
        in_step = io == 0;
        if (in_step && syndrome == 0) stats_.bytes_written.fetch_add(f.length);
        break;
      }
      case kFrameMaskedFa32: {
        if (syndrome == 0 && (f.raddr & 3u) != 0) syndrome = mlx5::kSyndromeRemoteInvalReqErr;
        if (syndrome == 0 &&
            !regions_->checkAndHold(f.rkey, f.raddr, 4, kAccessRemoteAtomic, &hold))
          syndrome = mlx5::kSyndromeRemoteAccessErr;
        if (syndrome == 0) {
          std::string err;
          if (port_->fetchAddMasked32(f.raddr, f.arg0, f.arg1, &old_value, &err) != 0) {
            flag("applying an atomic: " + err);
            syndrome = mlx5::kSyndromeRemoteOpErr;
          } else {
            stats_.atomics.fetch_add(1);
          }
        }
        break;
      }
      default: break;  // not a request: refused above
    }
    if (!in_step) return ended();
    // A READ's bytes go out while the region is held: a deregistration waits for the send.
    if (f.type != kFrameRead && hold.owns_lock()) hold.unlock();
    if (syndrome != 0) {
      stats_.rejected.fetch_add(1);
      errored[f.src_qpn] = true;
    }
    Frame resp;
    resp.type = kFrameResponse;
    resp.src_qpn = f.src_qpn;
    resp.dst_qpn = f.dst_qpn;
    resp.seq = f.seq;
    resp.arg0 = syndrome;
    resp.arg1 = old_value;
    if (read_bytes > 0) {
      // Data follows this answer: what is held goes first, then header and bytes in one send.
      resp.length = read_bytes;
      const int sent = sendAnswers() != 0 ? -1 : sendFrame(conn->fd, resp, read_data, read_bytes);
      if (hold.owns_lock()) hold.unlock();
      if (sent != 0) return ended();
      continue;
    }
    if (hold.owns_lock()) hold.unlock();
    const size_t at = answers.size();
    answers.resize(at + kFrameHeaderBytes);
    encodeFrame(resp, answers.data() + at);
    if (answers.size() >= kMaxHeldAnswers && sendAnswers() != 0) return ended();
  }
}

void SoftNic::responderLoop(InConn* conn) {
  for (;;) {
    int r;
    {
      std::lock_guard<std::mutex> lock(conn->serve_mu);
      r = serveFrames(conn);
    }
    if (r == kServeEnded) break;
    if (!waitReadable(conn->fd, stopping_, busy_poll_)) {
      // Stopped or failed (the answers went out before the sleep).
      std::lock_guard<std::mutex> lock(conn->serve_mu);
      conn->state->ended = true;
      break;
    }
  }
  // The requester waits for answers on this connection: without this it would learn only
  // from its own timeout (the socket is closed when the last owner lets it go).
  shutdown(conn->fd, SHUT_RDWR);
  conn->done.store(true);
}

}  // namespace rdma
}  // namespace te4j
