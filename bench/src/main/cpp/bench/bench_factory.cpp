// bench/bench_factory.cpp — StreamTimer / CopyBaseline / PingPong ::create: picks the platform's
// implementation. CUDA implementations (src/main/cuda/bench/ of this module) exist only in a build
// with nvcc; otherwise, as for OpStream, a CUDA request gets an object whose status() says why.
#include <new>
#include <string>

#include "te4j/bench_api.h"
#include "te4j/tuning.h"
#include "te4j/bench_knobs.h"
#include "bench_loops.cuh"

te4j::bench::StreamTimer* te4j_bench_new_host_timer();  // host_stream_timer.cpp
te4j::bench::CopyBaseline* te4j_bench_new_host_copy();  // host_copy_baseline.cpp
te4j::bench::PingPong* te4j_bench_new_host_ping_pong(const mooncake::device::CommCtx& ctx, int peer,
                                                     uint32_t* sig, uint32_t* flag,
                                                     uint32_t* peer_flag, uint32_t* ready);
#if defined(TE4J_WITH_CUDA)
// te4j-bench/src/main/cuda/bench/*.cu
te4j::bench::StreamTimer* te4j_bench_new_cuda_timer(int device, void* stream);
te4j::bench::CopyBaseline* te4j_bench_new_cuda_copy(int device, void* stream);
void te4j_bench_route_put_variant(int variant);  // put_variants.cu
te4j::bench::PingPong* te4j_bench_new_cuda_ping_pong(int device,
                                                     const mooncake::device::CommCtx& ctx, int peer,
                                                     uint32_t* sig, uint32_t* flag,
                                                     uint32_t* peer_flag, uint32_t* ready);
#endif

namespace te4j {
namespace bench {
namespace {

std::string unusableReason(int platform) {
  if (platform == kPlatformCuda) {
    return "CUDA bench objects unavailable: te4j was built without CUDA (nvcc was not found at "
           "build time)";
  }
  return "unknown platform " + std::to_string(platform) + " (expected 0 = host or 1 = CUDA)";
}

int unusableStatus(int platform) {
  return platform == kPlatformCuda ? kUnavailable : kInvalidArgument;
}

// Objects that cannot run: status() and every call carry the reason.
class UnusableTimer final : public StreamTimer {
 public:
  explicit UnusableTimer(int platform) {
    init_status_ = fail(unusableStatus(platform), unusableReason(platform));
  }
  int start() override { return init_status_; }
  int stop() override { return init_status_; }
  int elapsedNs(int64_t, int64_t*) override { return init_status_; }
};

class UnusableCopy final : public CopyBaseline {
 public:
  explicit UnusableCopy(int platform) {
    init_status_ = fail(unusableStatus(platform), unusableReason(platform));
  }
  int copyEngine(void*, const void*, std::size_t, int, int64_t, int64_t*) override {
    return init_status_;
  }
  int smCopy(void*, const void*, std::size_t, int, int, int, int64_t, int64_t*) override {
    return init_status_;
  }
  int copyBlocks(int, const uint64_t*, const uint64_t*, const uint64_t*, int, int64_t,
                 int64_t*) override {
    return init_status_;
  }
};

class UnusablePingPong final : public PingPong {
 public:
  explicit UnusablePingPong(int platform) {
    init_status_ = fail(unusableStatus(platform), unusableReason(platform));
  }
  int te4j(bool, void*, const void*, std::size_t, int, int64_t, int64_t*) override {
    return init_status_;
  }
  int te4jLl(bool, void*, void*, const void*, std::size_t, int, int64_t, int64_t*) override {
    return init_status_;
  }
  int rawFlag(bool, int, int64_t, int64_t*) override { return init_status_; }
};

}  // namespace

StreamTimer* StreamTimer::create(int platform, int device, void* stream) {
  if (platform == kPlatformHost) return te4j_bench_new_host_timer();
#if defined(TE4J_WITH_CUDA)
  if (platform == kPlatformCuda) return te4j_bench_new_cuda_timer(device, stream);
#else
  (void)device;
  (void)stream;
#endif
  return new (std::nothrow) UnusableTimer(platform);
}

CopyBaseline* CopyBaseline::create(int platform, int device, void* stream) {
  if (platform == kPlatformHost) return te4j_bench_new_host_copy();
#if defined(TE4J_WITH_CUDA)
  if (platform == kPlatformCuda) return te4j_bench_new_cuda_copy(device, stream);
#else
  (void)device;
  (void)stream;
#endif
  return new (std::nothrow) UnusableCopy(platform);
}

PingPong* PingPong::create(int platform, int device, void* local_base, void* available_table,
                           void* peer_ptrs_table, int rank, int peer, uint32_t* sig, uint32_t* flag,
                           uint32_t* peer_flag, uint32_t* ready) {
  const mooncake::device::CommCtx ctx =
      bench_window_ctx(local_base, available_table, peer_ptrs_table, rank);
  if (platform == kPlatformHost) {
    return te4j_bench_new_host_ping_pong(ctx, peer, sig, flag, peer_flag, ready);
  }
#if defined(TE4J_WITH_CUDA)
  if (platform == kPlatformCuda) {
    return te4j_bench_new_cuda_ping_pong(device, ctx, peer, sig, flag, peer_flag, ready);
  }
#else
  (void)device;
#endif
  return new (std::nothrow) UnusablePingPong(platform);
}

namespace {
thread_local std::string g_tuning_text;
}

// Shows `name`'s value in the library's "name=value,..." as `value`.
void showAs(std::string* text, const std::string& name, const char* value) {
  const size_t at = text->find(name + "=");
  if (at == std::string::npos) return;
  const size_t end = text->find(',', at);
  text->replace(at, end == std::string::npos ? end : end - at, name + "=" + value);
}

// The library's knobs, then the bench's; signal=set shows as the signal the loops use, a put
// variant as the put the CUDA streams launch.
std::string describeAll(const BenchKnobs& knobs) {
  std::string text = tuning::describe();
  if (knobs.signal_set) showAs(&text, "signal", "set");
  if (const char* put = putVariantName(knobs.put_variant)) showAs(&text, "put", put);
  return text + "," + describeBenchKnobs(knobs);
}

// Where CUDA puts go: a put variant's launcher (put_variants.cu) or te4j's own. Set before
// tuning::apply, whose new generation makes every op stream read it with the knobs.
void routePutVariant(int variant) {
#if defined(TE4J_WITH_CUDA)
  te4j_bench_route_put_variant(variant);
#else
  (void)variant;  // no CUDA streams: the knob has nothing to route
#endif
}

int applyTuning(const char* spec) {
  BenchKnobs knobs;
  std::string library_spec;
  std::string bad;
  if (!splitBenchKnobs(spec, &knobs, &library_spec, &bad)) {
    g_tuning_text = bad;
    return kInvalidArgument;
  }
  routePutVariant(knobs.put_variant);
  const char* why = nullptr;
  if (tuning::apply(library_spec.c_str(), &why) != 0) {
    g_tuning_text = std::string(why != nullptr ? why : "bad tuning spec") +
                    "; te4j-bench's own knobs: " + benchKnobNames();
    setBenchKnobs(BenchKnobs());
    routePutVariant(kPutLibrary);
    (void)tuning::apply("", nullptr);  // the defaults again, under a generation streams see
    return kInvalidArgument;
  }
  setBenchKnobs(knobs);
  g_tuning_text = describeAll(knobs);
  return kOk;
}

const char* tuningText() {
  if (g_tuning_text.empty()) g_tuning_text = describeAll(benchKnobs());
  return g_tuning_text.c_str();
}

}  // namespace bench
}  // namespace te4j
