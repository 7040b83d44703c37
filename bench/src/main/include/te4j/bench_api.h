// te4j/bench_api.h — the native half of te4j-bench (io.github.te4j.bench): stream timers,
// baseline copies that are not te4j (copy engine, a plain SM copy kernel, memcpy), device-side
// ping-pong loops (te4j put+signal and a raw flag) and the C++ twin of the Java launch loop.
//
// Same rules as te4j/api.h: every method returns a status (0 = ok, < 0 = te4j::Status) and keeps
// its message in lastError(); no exception leaves; no CUDA header is included, so this compiles
// with plain g++ and the library loads without a GPU. Pointers are platform addresses (CUDA:
// device virtual addresses, host: this process's mapping of a shared segment). Every wait is
// bounded by the timeout_ns it is given. Java (io.github.te4j.bench) validates arguments first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "te4j/api.h"

namespace te4j {
namespace bench {

/// Marks on a platform stream and the time between them. CUDA: events recorded on a
/// cudaStream_t (device time); host: CLOCK_MONOTONIC read at the call, so on the host platform
/// the caller must synchronize its OpStream before stop().
class StreamTimer : public NativeObject {
 public:
  /// stream: a cudaStream_t on `device` (CUDA; never the legacy default stream) or nullptr (host).
  static StreamTimer* create(int platform, int device, void* stream);
  int status() const { return init_status_; }

  virtual int start() = 0;
  virtual int stop() = 0;
  /// Time between the last start() and stop() marks, waiting at most timeout_ns for stop's mark.
  virtual int elapsedNs(int64_t timeout_ns, int64_t* out) = 0;

 protected:
  int init_status_ = kOk;
};

/// Baselines that do not use te4j: each call runs `count` copies back to back and reports the
/// time of the whole batch. dst is the peer-mapped destination, src the local source.
class CopyBaseline : public NativeObject {
 public:
  /// stream: as for StreamTimer::create.
  static CopyBaseline* create(int platform, int device, void* stream);
  int status() const { return init_status_; }

  /// CUDA: cudaMemcpyPeerAsync on the stream (the copy engine); host: memcpy on this thread.
  virtual int copyEngine(void* dst, const void* src, std::size_t bytes, int count,
                         int64_t timeout_ns, int64_t* elapsed_ns) = 0;
  /// CUDA only: a grid-stride kernel of 16-byte ld.global.nc / st.global, blocks x threads.
  /// dst and src must be 16-byte aligned.
  virtual int smCopy(void* dst, const void* src, std::size_t bytes, int blocks, int threads,
                     int count, int64_t timeout_ns, int64_t* elapsed_ns) = 0;
  /// The baselines of a transfer batch, `count` blocks dst[i] <- src[i] of bytes[i] each, timed
  /// as one: kBlocksLoop copies block by block (host: memcpy; CUDA: cudaMemcpyAsync each),
  /// kBlocksBatchAsync is one cudaMemcpyBatchAsync (CUDA only), kBlocksContiguous one copy of
  /// the total bytes from src[0] to dst[0] (the ceiling: the same bytes without scatter).
  static constexpr int kBlocksLoop = 0;
  static constexpr int kBlocksBatchAsync = 1;
  static constexpr int kBlocksContiguous = 2;
  virtual int copyBlocks(int how, const uint64_t* dst, const uint64_t* src, const uint64_t* bytes,
                         int count, int64_t timeout_ns, int64_t* elapsed_ns) = 0;

 protected:
  int init_status_ = kOk;
};

/// A two-rank ping-pong, both loops inside ONE kernel per sample (CUDA) or one call on the
/// calling thread (host). Both ranks call the same methods with the same arguments, in the same
/// order; the initiator sends first. Each call first meets the peer (an untimed handshake on the
/// ready word), then times `iters` round trips. Counters are kept here, so the words never need
/// resetting between calls; after each call every word is checked to hold exactly the count the
/// peer sent (a mismatch is kIllegalState).
class PingPong : public NativeObject {
 public:
  /// The window is given as in a CommContext (localBuffer().address(), availableTablePtr(),
  /// peerPtrsTablePtr(), rank()): enough to rebuild its device CommCtx. sig, flag, ready: local
  /// symmetric addresses of three 32-bit words in the window, zero at the start; peer_flag: the
  /// peer's flag word as mapped here (the raw baseline skips routing).
  static PingPong* create(int platform, int device, void* local_base, void* available_table,
                          void* peer_ptrs_table, int rank, int peer, uint32_t* sig, uint32_t* flag,
                          uint32_t* peer_flag, uint32_t* ready);
  int status() const { return init_status_; }

  /// te4j: put(bytes from src to the peer's dst, both local symmetric addresses) + signal, one
  /// warp a side (mc_route_put, mc_copy_cooperative, mc_signal, mc_wait_signal).
  virtual int te4j(bool initiator, void* dst, const void* src, std::size_t bytes, int iters,
                   int64_t timeout_ns, int64_t* elapsed_ns) = 0;
  /// te4j LL: the LL put (transport/device/ll_put.cuh) of bytes from src into the peer's copy
  /// of slot (8-byte aligned, mc_ll_slot_bytes(bytes) long, zero at the start), one warp a side;
  /// the receiver polls its slot and copies each message to dst. No fence, no signal word.
  virtual int te4jLl(bool initiator, void* slot, void* dst, const void* src, std::size_t bytes,
                     int iters, int64_t timeout_ns, int64_t* elapsed_ns) = 0;
  /// Baseline: one thread a side, st.release.sys of the round number to the peer's flag and
  /// ld.acquire.sys spin on the own flag (host: the same with C++ atomics).
  virtual int rawFlag(bool initiator, int iters, int64_t timeout_ns, int64_t* elapsed_ns) = 0;

 protected:
  int init_status_ = kOk;
};

/// The C++ twin of the Java launch loop: `count` OpStream::putWithSignal back to back on a te4j
/// stream of its own, timed the same way as from Java (StreamTimer around the loop). Gives the
/// JNI-overhead ratio of Java-launched operations.
class LaunchLoop : public NativeObject {
 public:
  /// The window as for PingPong::create.
  static LaunchLoop* create(int platform, int device, void* local_base, void* available_table,
                            void* peer_ptrs_table, int rank);
  int status() const { return init_status_; }

  /// recv, send, sig: local symmetric addresses as for OpStream::putWithSignal (value 1).
  virtual int putWithSignal(int dst_rank, void* recv, const void* send, std::size_t bytes,
                            uint32_t* sig, int blocks, int threads, int count, int64_t timeout_ns,
                            int64_t* elapsed_ns) = 0;

 protected:
  int init_status_ = kOk;
};

/// Raw TCP between two ranks' processes, the baseline of the software NIC's rows: plain C
/// sockets (TCP_NODELAY) between the same addresses the software NIC uses, no te4j in the path.
/// The responder listens, the initiator connects; then both call the same loop with the same
/// arguments. Every call is bounded by its timeout_ns.
class TcpBaseline : public NativeObject {
 public:
  static TcpBaseline* create();
  int status() const { return init_status_; }

  /// Responder: listens on ipv4 (dotted), any port. Returns the port (> 0) or a status.
  virtual int listen(const char* ipv4) = 0;
  /// Initiator: connects to ipv4:port. Responder: accepts the one connection.
  virtual int connect(const char* ipv4, int port, int64_t timeout_ns) = 0;
  virtual int accept(int64_t timeout_ns) = 0;
  /// `iters` round trips of `bytes` each way, the initiator sending first; *elapsed_ns the loop.
  virtual int pingPong(bool initiator, std::size_t bytes, int iters, int64_t timeout_ns,
                       int64_t* elapsed_ns) = 0;
  /// One way: the sender writes `count` messages of `bytes` (one send() each, from one buffer),
  /// the receiver reads them all and answers one byte; the sender's time ends at that byte, so
  /// it covers delivery, as a put's completion does.
  virtual int oneWay(bool sender, std::size_t bytes, int count, int64_t timeout_ns,
                     int64_t* elapsed_ns) = 0;

 protected:
  int init_status_ = kOk;
};

/// The variants (te4j/tuning.h and te4j/bench_knobs.h) for this whole process: resets every knob to
/// its default, then applies spec ("put=tma,signal=red"; "" = defaults). 0, or kInvalidArgument
/// with the reason in tuningText().
int applyTuning(const char* spec);
/// The knobs now in force ("put=base,signal=atom,..."), or after a failed applyTuning its reason.
const char* tuningText();

/// Ends the process now with `code` after flushing stdio, without exit()'s teardown: a CUDA
/// runtime torn down under a thread still inside one of its calls crashes the process, so an
/// exit that cannot wait for such threads (bounded waits of ranks run as threads) takes this.
void exitNow(int code);

}  // namespace bench
}  // namespace te4j
