// op_stream_factory.cpp — OpStream::create / wrapCuda: picks the platform's implementation.
//
// The CUDA implementation (src/main/cuda/cuda_op_stream.cu) is linked only when the library is
// built with nvcc (TE4J_WITH_CUDA); otherwise CUDA requests get a stream object whose status()
// is kUnavailable and whose every call says why, so Java sees a reason instead of a null.
#include <new>
#include <string>

#include "te4j/api.h"

te4j::OpStream* te4j_create_host_op_stream();  // host_op_stream.cpp
#if defined(TE4J_WITH_CUDA)
/// cuda_op_stream.cu. owned=true with stream=nullptr: te4j creates its own non-blocking stream;
/// owned=false: wraps `stream` (a cudaStream_t) without taking ownership.
te4j::OpStream* te4j_create_cuda_op_stream(int device, void* stream, bool owned);
#endif

namespace te4j {
namespace {

// A stream that cannot run anything: carries the reason in status() and every lastError().
class UnusableOpStream final : public OpStream {
 public:
  UnusableOpStream(int platform, int status, const std::string& reason)
      : platform_(platform), reason_(reason) {
    init_status_ = status;
    last_error_ = reason;
  }

  int platform() const override { return platform_; }
  void* nativeHandle() const override { return nullptr; }
  int put(const mooncake::device::CommCtx*, int, void*, const void*, std::size_t, int,
          int) override {
    return refuse();
  }
  int putWithSignal(const mooncake::device::CommCtx*, int, void*, const void*, std::size_t,
                    uint32_t*, uint32_t, int, int) override {
    return refuse();
  }
  int signal(const mooncake::device::CommCtx*, int, uint32_t*, uint32_t) override {
    return refuse();
  }
  int redAdd(const mooncake::device::CommCtx*, int, uint32_t*, uint32_t) override {
    return refuse();
  }
  int waitSignal(uint32_t*, uint32_t, int64_t) override { return refuse(); }
  int synchronize(int64_t) override { return refuse(); }
  int beginCapture() override { return refuse(); }
  int endCapture(void** graph_exec) override {
    if (graph_exec != nullptr) *graph_exec = nullptr;
    return refuse();
  }
  int launchGraph(void*) override { return refuse(); }
  int destroyGraph(void*) override { return refuse(); }

 private:
  int refuse() { return fail(init_status_, reason_); }
  int platform_;
  std::string reason_;
};

#if !defined(TE4J_WITH_CUDA)
const char kNoCudaBuild[] =
    "CUDA OpStream unavailable: te4j was built without CUDA (nvcc was not found at build time)";
#endif

}  // namespace

OpStream* OpStream::create(int platform, int device) {
  switch (platform) {
    case kPlatformHost:
      return te4j_create_host_op_stream();
    case kPlatformCuda:
#if defined(TE4J_WITH_CUDA)
      return te4j_create_cuda_op_stream(device, nullptr, true);
#else
      (void)device;
      return new (std::nothrow) UnusableOpStream(kPlatformCuda, kUnavailable, kNoCudaBuild);
#endif
    default:
      return new (std::nothrow) UnusableOpStream(
          platform, kInvalidArgument,
          "OpStream::create: unknown platform " + std::to_string(platform) +
              " (expected 0 = host or 1 = CUDA)");
  }
}

OpStream* OpStream::wrapCuda(int device, void* cuda_stream) {
#if defined(TE4J_WITH_CUDA)
  return te4j_create_cuda_op_stream(device, cuda_stream, false);
#else
  (void)device;
  (void)cuda_stream;
  return new (std::nothrow) UnusableOpStream(kPlatformCuda, kUnavailable, kNoCudaBuild);
#endif
}

}  // namespace te4j
