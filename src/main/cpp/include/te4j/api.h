// te4j/api.h — the host-side C++ API that the JavaCPP peer classes map one to one.
//
// Rules for everything declared here (the JNI boundary):
//   * no C++ exception ever leaves a method: each returns a status (0 = ok, < 0 = te4j::Status)
//     and keeps a human-readable message in lastError();
//   * no CUDA, ibverbs or other optional header is included: this header compiles with plain g++
//     and the library loads on machines without a GPU, driver or NIC;
//   * pointers are plain addresses in the address space the platform uses for "device" memory
//     (CUDA: device virtual addresses; host: this process's mapping of the shared segment).
// The Java layer validates every argument before calling in; the native side re-checks what is
// cheap (null, ranges) and reports instead of crashing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace mooncake {
namespace device {
struct CommCtx;
}
}  // namespace mooncake

namespace te4j {

/// Platforms selected at run time by the Java layer (compile-time inside device code).
enum Platform : int { kPlatformHost = 0, kPlatformCuda = 1 };

/// Status codes returned by every API call (mirrored by io.github.te4j.Te4jException.Code;
/// StatusCodesTest ties the two).
enum Status : int {
  kOk = 0,
  kInvalidArgument = -1,  // a bad argument that Java should already have rejected
  kUnavailable = -2,      // the platform/driver/device is missing here
  kCudaError = -3,        // a CUDA runtime call failed (message has cudaGetErrorString)
  kSystemError = -4,      // an OS call failed (message has strerror)
  kTimeout = -5,          // a bounded wait expired (message names what was awaited)
  kPeerLost = -6,         // a peer process is gone
  kBadHandle = -7,        // corrupt, truncated or foreign handle
  kOutOfMemory = -8,
  kIllegalState = -9,  // wrong call order (import before allocate, use after close...)
  kDeviceFault = -10,  // a device-side error recorded in the status word (stream unusable)
  kRemoteError = -11,  // an RDMA completion with error
};

/// What is available here, as text lines "key=value" (Java parses them). Never fails.
std::string availabilityReport();

/// Message of the last failed free function (below) on the calling thread.
const char* lastThreadError();

/// Frees memory te4j keeps for reuse while the process lives (CUDA: the op streams' status-word
/// slabs, the transfer batches' idle streams and descriptor arenas) as far as no live object
/// uses it, and returns the bytes freed. For leak checkers at the end of a program; on CUDA it
/// synchronises the device like cudaFree does. Never fails.
std::size_t releaseCachedMemory();

/// Number of usable CUDA devices, or a negative Status when CUDA is unusable (reason in
/// lastThreadError()). 0 without the CUDA build.
int cudaDeviceCount();

/// Whether `device` can map `peer_device`'s memory (cudaDeviceCanAccessPeer); 0/1 or < 0.
int cudaCanAccessPeer(int device, int peer_device);

/// Blocking copy between host memory and platform memory, or within platform memory (any
/// direction: CUDA uses cudaMemcpy with cudaMemcpyDefault after cudaSetDevice(device)).
int copyMemory(int platform, int device, void* dst, const void* src, std::size_t bytes);
/// Blocking memset of platform memory.
int fillMemory(int platform, int device, void* dst, int byte_value, std::size_t bytes);

/// What memory is, as the CUDA driver sees it (mirrored by io.github.te4j.MemoryKind).
enum MemoryKindCode : int {
  kMemoryPageableHost = 0,  // host memory the driver does not know (or no CUDA driver/device)
  kMemoryPinnedHost = 1,    // page-locked host memory (cudaMallocHost, cudaHostRegister)
  kMemoryDevice = 2,        // device memory (cudaMalloc, pools, cuMemCreate mappings)
  kMemoryManaged = 3,       // managed memory (cudaMallocManaged)
};

/// The kind of the memory at [ptr, ptr + bytes) (a MemoryKindCode), and in *device the CUDA
/// device it belongs to (-1 for host memory). Memory the driver does not know must be mapped in
/// this process over the whole range, else kInvalidArgument: touching it would fault. Never
/// creates a CUDA context.
int memoryKind(const void* ptr, std::size_t bytes, int* device);

/// A watch on process `pid` (a pidfd, close-on-exec): its fd, or kPeerLost when no such
/// process exists, kUnavailable on a kernel without pidfds (Linux < 5.3), kSystemError.
int processWatchOpen(int pid);
/// 1 once the watched process has exited (a zombie included), 0 while it runs, or < 0.
int processWatchExited(int fd);
/// Closes a watch; a negative fd is ignored.
void processWatchClose(int fd);

/// Base of every native object: holds the last error message of the calling object.
/// Java may call one object from many threads at once, so the message is guarded by a mutex and
/// lastError() hands out the calling thread's own copy (valid until its next lastError()).
class NativeObject {
 public:
  virtual ~NativeObject() = default;
  const char* lastError() const {
    thread_local std::string copy;
    std::lock_guard<std::mutex> lock(error_mu_);
    copy = last_error_;
    return copy.c_str();
  }

 protected:
  int fail(int status, const std::string& message) {
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_ = message;
    has_error_.store(!message.empty(), std::memory_order_relaxed);
    return status;
  }
  // Every successful call ends here (one per enqueued op): the lock is taken only when there is
  // a message to clear.
  int ok() {
    if (!has_error_.load(std::memory_order_relaxed)) return kOk;
    std::lock_guard<std::mutex> lock(error_mu_);
    last_error_.clear();
    has_error_.store(false, std::memory_order_relaxed);
    return kOk;
  }
  std::string last_error_;
  mutable std::mutex error_mu_;
  std::atomic<bool> has_error_{false};  // last_error_ is not empty (written under error_mu_)
};

/// Deletes any te4j native object (the Java peers' close()).
inline void destroyObject(NativeObject* object) { delete object; }

/// The seed's P2pTransport: symmetric buffers, exported handles, imported peer tables.
///
/// Handles are int32 blobs (the device API's representation); the Java layer wraps them in a
/// versioned byte encoding. A blob carries platform, host identity, owner pid, size and what a peer
/// needs to map exactly that allocation and nothing else.
class P2pTransport : public NativeObject {
 public:
  /// Factory: platform kPlatformHost or kPlatformCuda; device ignored on host. Returns nullptr
  /// only on allocation failure; otherwise check status() / lastError().
  static P2pTransport* create(int platform, int device, int num_ranks);

  /// Values of describeHandle, in this order: platform, buffer size, owner pid, 1 when the
  /// handle comes from this host and pid namespace (else 0), blob words.
  static constexpr int kHandlePlatformAt = 0;
  static constexpr int kHandleSizeAt = 1;
  static constexpr int kHandlePidAt = 2;
  static constexpr int kHandleFromThisHostAt = 3;
  static constexpr int kHandleIntsAt = 4;
  static constexpr int kHandleValues = 5;
  /// Decodes and validates a handle's wire bytes (layout and checks: p2p/handle_blob.h) and writes
  /// the values above to out, the blob words to words (may be null when words_capacity is 0).
  /// Returns kOk, kBadHandle with the reason in why (NUL-terminated, truncated to why_capacity),
  /// or kInvalidArgument for buffers too small. Never reads outside [bytes, bytes + length).
  static int describeHandle(const uint8_t* bytes, int length, int64_t* out, int capacity,
                            int32_t* words, int words_capacity, char* why, int why_capacity);
  /// The wire bytes of `count` blob words, unchecked: for tools and tests that forge handles.
  /// Returns the length written, or kInvalidArgument (no words, or capacity too small).
  static int encodeHandleWords(const int32_t* words, int count, uint8_t* out, int capacity);

  int status() const { return init_status_; }
  virtual int platform() const = 0;
  virtual int device() const = 0;

  /// Allocates `bytes` (>0) of platform memory, zero-filled; *out receives the address.
  virtual int allocateBuffer(std::size_t bytes, void** out) = 0;
  /// Frees a buffer from allocateBuffer (or forgets one from registerBuffer).
  virtual int freeBuffer(void* ptr) = 0;
  /// CUDA only: registers an allocation made elsewhere (whole allocation; pool/managed refused).
  virtual int registerBuffer(void* ptr, std::size_t bytes) = 0;

  /// Writes the handle of the allocation holding `ptr` into blob (capacity ints);
  /// returns the number of ints written (>0) or a negative Status.
  virtual int exportIpcHandle(void* ptr, int32_t* blob, int capacity) = 0;
  /// Number of ints of a handle blob on this platform.
  virtual int handleInts() const = 0;

  /// Maps the peers' buffers. remote_handles holds num_ranks blobs of handleInts() ints each,
  /// row-major; the own rank's row and rows outside active_ranks_mask are ignored.
  /// Builds the peer tables for local_ptr; returns a window id >= 0 or a negative Status.
  virtual int importPeerHandles(void* local_ptr, int rank, int num_ranks,
                                const int32_t* remote_handles, uint64_t active_ranks_mask) = 0;
  /// Unmaps the peers of a window and frees its tables.
  virtual int closeWindow(int window) = 0;

  /// Seed accessors for the most recent window (or a given one): int[num_ranks] "available"
  /// flags and void*[num_ranks] peer base addresses, both in platform memory.
  virtual void* availableTablePtr(int window) = 0;
  virtual void* peerPtrsTablePtr(int window) = 0;
  virtual bool allPeersAccessible(int window) = 0;
  /// Runs a real access check (write/read of a probe word) to every active peer of a window.
  virtual int verifyPeerAccess(int window) = 0;

  /// Fills *ctx (host memory) with the CommCtx of a window: p2p tables, rank, no RDMA.
  virtual int makeCommCtx(int window, mooncake::device::CommCtx* ctx) = 0;

  /// Length of this platform's handle wire bytes (what exportHandleBytes writes).
  int handleBytesLength() const;
  /// exportIpcHandle as wire bytes (p2p/handle_blob.h); returns the length written or a
  /// negative Status.
  int exportHandleBytes(void* ptr, uint8_t* out, int capacity);
  /// importPeerHandles from wire bytes: `all` holds num_entries (== num_ranks) handles back to
  /// back, rank r's lengths[r] bytes long (0 for the own rank and ranks outside
  /// active_ranks_mask, which are not read). Each mapped handle is decoded strictly first; a
  /// refusal is kBadHandle naming the rank and the field.
  int importPeerHandleBytes(void* local_ptr, int rank, int num_ranks, const uint8_t* all,
                            const int32_t* lengths, int num_entries, uint64_t active_ranks_mask);
  /// mapSegment from a handle's wire bytes.
  int mapSegmentBytes(const uint8_t* bytes, int length, void** base, uint64_t* size);

  /// Maps one peer buffer of any size from its handle blob (`ints` ints, as exportIpcHandle
  /// wrote it) into this process for host-driven transfers; *base receives the address of its
  /// first byte, *bytes its size. Each call is a mapping of its own: undo it with unmapSegment.
  /// A platform without it says so (kUnavailable).
  virtual int mapSegment(const int32_t* blob, int ints, void** base, uint64_t* bytes) {
    (void)blob;
    (void)ints;
    (void)base;
    (void)bytes;
    return fail(kUnavailable, "mapSegment: not supported on this platform");
  }
  /// Undoes one mapSegment (base as it returned).
  virtual int unmapSegment(void* base) {
    (void)base;
    return fail(kUnavailable, "unmapSegment: not supported on this platform");
  }

 protected:
  int init_status_ = kOk;
};

/// Allocates a zeroed CommCtx in host memory (JavaCPP peer: io.github.te4j.internal.NativeCommCtx).
mooncake::device::CommCtx* newCommCtx();
void deleteCommCtx(mooncake::device::CommCtx* ctx);
/// Bit r set when rank r's route in ctx (decided when it was connected: McRankRoute,
/// transport/device/comm_device.cuh) is RDMA; 0 for a null ctx.
uint64_t commCtxRdmaRanks(const mooncake::device::CommCtx* ctx);

/// The host-side operations interface of a platform: asynchronous, in order, on one stream.
///
/// CUDA: kernels on a non-blocking stream (te4j's own, or a user's); host: one executor thread.
/// An error inside an operation (a wait that timed out, a device fault) is recorded in the
/// stream's status word and returned, with its message, by the next synchronize().
/// All ptr arguments are local symmetric addresses (the route maps them to the peer's).
class OpStream : public NativeObject {
 public:
  /// te4j's own stream (CUDA: cudaStreamNonBlocking on `device`; host: an executor thread).
  static OpStream* create(int platform, int device);
  /// CUDA only: wraps a stream created elsewhere (not owned; never the legacy default stream).
  static OpStream* wrapCuda(int device, void* cuda_stream);

  int status() const { return init_status_; }
  virtual int platform() const = 0;
  /// The platform stream handle (cudaStream_t) or nullptr on host.
  virtual void* nativeHandle() const = 0;

  /// Copies nbytes from send_ptr to dst_rank's copy of recv_ptr. blocks/threads: CUDA launch
  /// shape (0 = te4j's default); ignored on host.
  virtual int put(const mooncake::device::CommCtx* ctx, int dst_rank, void* recv_ptr,
                  const void* send_ptr, std::size_t nbytes, int blocks, int threads) = 0;
  /// put, then one release-ordered 32-bit atomic add of `value` on dst_rank's sig_ptr once the
  /// whole put (all blocks) is visible: one signal per operation, not per block.
  virtual int putWithSignal(const mooncake::device::CommCtx* ctx, int dst_rank, void* recv_ptr,
                            const void* send_ptr, std::size_t nbytes, uint32_t* sig_ptr,
                            uint32_t value, int blocks, int threads) = 0;
  /// Release-ordered 32-bit atomic add on dst_rank's sig_ptr.
  virtual int signal(const mooncake::device::CommCtx* ctx, int dst_rank, uint32_t* sig_ptr,
                     uint32_t value) = 0;
  /// Same operation as signal, on an arbitrary 32-bit word (the device API's mc_red_add).
  virtual int redAdd(const mooncake::device::CommCtx* ctx, int dst_rank, uint32_t* ptr,
                     uint32_t value) = 0;
  /// Waits until the local *sig_ptr >= expected (wrap-around aware), at most timeout_ns.
  virtual int waitSignal(uint32_t* sig_ptr, uint32_t expected, int64_t timeout_ns) = 0;
  /// Blocks until everything enqueued has finished, at most timeout_ns; returns the first error.
  virtual int synchronize(int64_t timeout_ns) = 0;

  /// CUDA graph capture of the operations enqueued in between (CUDA only).
  virtual int beginCapture() = 0;
  /// Ends the capture and instantiates it; *graph_exec receives an opaque handle.
  virtual int endCapture(void** graph_exec) = 0;
  virtual int launchGraph(void* graph_exec) = 0;
  virtual int destroyGraph(void* graph_exec) = 0;

 protected:
  int init_status_ = kOk;
};

}  // namespace te4j
