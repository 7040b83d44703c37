// te4j/module_api.h — users' own kernels: run-time compilation (NVRTC), module loading and
// launches on an OpStream. JavaCPP peers: io.github.te4j.internal.NativeNvrtc / NativeModule.
//
// The rules of te4j/api.h hold here too (statuses, lastError(), no optional header). NVRTC is
// loaded with dlopen on first use, so neither libte4j nor the JVM needs it to load; compiling
// needs no GPU. Module loading and launches use the CUDA driver through the runtime's
// entry-point lookup and report "built without CUDA" in the host-only build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "te4j/api.h"

namespace te4j {

/// Message of the last failed free function of this header on the calling thread.
const char* moduleLastError();

/// Loads NVRTC if not done yet. `candidates`: library paths or sonames joined by '\n', tried in
/// order; empty: TE4J_NVRTC_LIBRARY, libnvrtc.so.13, libnvrtc.so, then the CUDA toolkit's
/// lib64 folders. Returns NVRTC's version (major * 1000 + minor * 10) or kUnavailable, with the
/// libraries tried and the fix in moduleLastError(). Explicit candidates are always tried (a
/// probe); the first library that loads stays loaded for the life of the process.
int nvrtcLoad(const char* candidates);
/// The path (or soname) of the NVRTC library that nvrtcLoad() opened; empty before.
std::string nvrtcLibrary();

/// One NVRTC compilation: made by compile(), then read. status() < 0 when the compile failed;
/// lastError() then says why and log() holds the compiler's own output.
class NvrtcCompilation : public NativeObject {
 public:
  /// Compiles `source` (program name `name`, used in messages). `options` and
  /// `name_expressions` are lists joined by '\n' (either may be empty). A target option
  /// "--gpu-architecture=sm_XY" (or -arch=sm_XY) produces a cubin, compute_XY produces PTX.
  /// nullptr only when memory is exhausted.
  static NvrtcCompilation* compile(const char* source, const char* name, const char* options,
                                   const char* name_expressions);

  int status() const { return status_; }
  /// The compiler's log (warnings, errors); may be empty.
  const char* log() const { return log_.c_str(); }
  /// Bytes of the image (cubin or PTX including its terminating NUL); 0 when none.
  int64_t imageBytes() const { return static_cast<int64_t>(image_.size()); }
  /// 1 when the image is a cubin, 0 when it is PTX.
  int imageIsCubin() const { return cubin_ ? 1 : 0; }
  /// Copies the image into dst (capacity bytes); returns the bytes copied or kInvalidArgument.
  int copyImage(void* dst, int64_t capacity);
  /// The lowered (mangled) name of name expression `index`; empty when out of range.
  const char* loweredName(int index) const;
  int nameExpressionCount() const { return static_cast<int>(lowered_.size()); }

 private:
  int status_ = kOk;
  bool cubin_ = false;
  std::string log_;
  std::vector<char> image_;
  std::vector<std::string> lowered_;
};

/// The compute capability of CUDA `device` as major * 10 + minor, or a negative Status
/// (moduleLastError() says why).
int cudaComputeCapability(int device);

/// sizeof(mooncake::device::CommCtx) as libte4j was built: the bytes a kernel receives.
int64_t commCtxSize();
/// "size=N p2p=O ibgda=O rank=O p2p.available=O ... " offsets of CommCtx's fields (bytes).
std::string commCtxLayout();
/// Copies *ctx's bytes (commCtxSize()) into dst of `capacity` bytes; returns the bytes or < 0.
int copyCommCtx(const mooncake::device::CommCtx* ctx, void* dst, int64_t capacity);

/// A loaded CUDA module (PTX, cubin or fatbin) on one device, with its kernels.
class DeviceModule : public NativeObject {
 public:
  /// Loads `image` (bytes; PTX must end with NUL) into `device`'s primary context. nullptr only
  /// when memory is exhausted; otherwise check status() / lastError() (the JIT log included).
  static DeviceModule* load(int device, const void* image, int64_t bytes);

  int status() const { return init_status_; }
  virtual int device() const = 0;
  /// Finds kernel `name` (a lowered name for templates); *function receives an opaque handle.
  virtual int getFunction(const char* name, void** function) = 0;
  /// The kernel's parameters: *count (-1 when the driver cannot tell) and, for index < count,
  /// sizes[index] in bytes; `capacity` entries of sizes at most. kOk or < 0.
  virtual int paramInfo(void* function, int* count, int64_t* sizes, int capacity) = 0;
  /// cuFuncGetAttribute(MAX_THREADS_PER_BLOCK) of the kernel, or < 0.
  virtual int maxThreadsPerBlock(void* function) = 0;
  /// The most co-resident blocks of `threads` threads (and `shared_bytes`) over the whole GPU:
  /// the grid limit of a cooperative launch. < 0 on error.
  virtual int maxCooperativeBlocks(void* function, int threads, int64_t shared_bytes) = 0;
  /// Launches on `stream` (a cudaStream_t of this device; inside a graph capture too).
  /// args holds the parameters' bytes back to back; offsets[i] is where parameter i starts.
  /// cooperative != 0 launches cooperatively (grid-wide sync).
  virtual int launch(void* function, void* stream, int grid_x, int grid_y, int grid_z, int block_x,
                     int block_y, int block_z, int64_t shared_bytes, int cooperative,
                     const void* args, const int64_t* offsets, int count) = 0;
  /// launch() `repeats` times back to back (the arguments marshalled once): a launch loop in
  /// C++, for many small launches and for comparing with a loop of launch() calls.
  virtual int launchRepeated(void* function, void* stream, int grid_x, int grid_y, int grid_z,
                             int block_x, int block_y, int block_z, int64_t shared_bytes,
                             int cooperative, const void* args, const int64_t* offsets, int count,
                             int repeats) = 0;

 protected:
  int init_status_ = kOk;
};

}  // namespace te4j
