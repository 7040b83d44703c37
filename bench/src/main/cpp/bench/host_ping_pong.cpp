// bench/host_ping_pong.cpp — te4j::bench::PingPong on the host platform: the loops of
// bench_loops.cuh, compiled by g++, run on the calling thread against the shared segments.
#include <chrono>
#include <new>
#include <string>

#include "te4j/bench_api.h"
#include "te4j/bench_knobs.h"
// The single-source loops live with the CUDA bench sources (nvcc compiles the same file).
#include "bench_loops.cuh"

namespace te4j {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

class HostPingPong final : public PingPong {
 public:
  HostPingPong(const mooncake::device::CommCtx& ctx, int peer, uint32_t* sig, uint32_t* flag,
               uint32_t* peer_flag, uint32_t* ready)
      : ctx_(ctx), peer_(peer), sig_(sig), flag_(flag), peer_flag_(peer_flag), ready_(ready) {}

  int te4j(bool initiator, void* dst, const void* src, std::size_t bytes, int iters,
           int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check(iters, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    if (dst == nullptr || src == nullptr || bytes == 0) {
      return fail(kInvalidArgument, "te4j ping-pong: null buffer or zero bytes");
    }
    const uint64_t deadline = mooncake::device::mc_globaltimer_ns() + (uint64_t)timeout_ns;
    rc = meet(deadline);
    if (rc != kOk) return rc;
    BenchLoopResult r = {};
    const auto t0 = Clock::now();
    // Variants (te4j/bench_knobs.h): wait=spin (no pause between polls); signal=set (a release
    // store: a plain mov on x86, no lock prefix); signal=red is the same lock add as atom here.
    const BenchKnobs knobs = benchKnobs();
    const bool spin = knobs.spin_wait;
    const bool set = knobs.signal_set;
    auto loop = spin ? (set ? bench_te4j_side<true, kBenchSignalSet> : bench_te4j_side<true>)
                     : (set ? bench_te4j_side<false, kBenchSignalSet> : bench_te4j_side<false>);
    loop(ctx_, peer_, initiator, dst, src, bytes, sig_, sig_base_, (uint32_t)iters, deadline, 0, 1,
         &r);
    const auto t1 = Clock::now();
    if (r.status != kLoopOk) return broken(bench_loop_failure("te4j ping-pong", r));
    sig_base_ += (uint32_t)iters;
    rc = checkWord("te4j ping-pong signal", sig_, sig_base_);
    if (rc != kOk) return rc;
    *elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    return ok();
  }

  int te4jLl(bool initiator, void* slot, void* dst, const void* src, std::size_t bytes, int iters,
             int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check(iters, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    if (const char* why = bench_ll_args_error(slot, dst, src, bytes))
      return fail(kInvalidArgument, why);
    const uint64_t deadline = mooncake::device::mc_globaltimer_ns() + (uint64_t)timeout_ns;
    rc = meet(deadline);
    if (rc != kOk) return rc;
    BenchLoopResult r = {};
    const auto t0 = Clock::now();
    bench_ll_side(ctx_, peer_, initiator, (uint64_t*)slot, dst, src, bytes, ll_base_,
                  (uint32_t)iters, deadline, 0, 1, &r);
    const auto t1 = Clock::now();
    if (r.status != kLoopOk) return broken(bench_loop_failure("LL ping-pong", r));
    ll_base_ += (uint32_t)iters;
    // The slot's first word carries the peer's last flag in its high half.
    const uint32_t flag =
        (uint32_t)(mooncake::device::mc_ld_relaxed_u64((const uint64_t*)slot) >> 32);
    if (flag != ll_base_) {
      return broken("LL ping-pong slot flag " + std::to_string(flag) + ", expected exactly " +
                    std::to_string(ll_base_));
    }
    *elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    return ok();
  }

  int rawFlag(bool initiator, int iters, int64_t timeout_ns, int64_t* elapsed_ns) override {
    int rc = check(iters, timeout_ns, elapsed_ns);
    if (rc != kOk) return rc;
    const uint64_t deadline = mooncake::device::mc_globaltimer_ns() + (uint64_t)timeout_ns;
    rc = meet(deadline);
    if (rc != kOk) return rc;
    BenchLoopResult r = {};
    const auto t0 = Clock::now();
    if (benchKnobs().raw_data) {  // 8 bytes at the peer's window offset 64
      bench_raw_side<true>(flag_, peer_flag_, initiator, flag_base_, (uint32_t)iters, deadline, &r,
                           (uint64_t*)((uint8_t*)peer_flag_ - 64));
    } else {
      bench_raw_side(flag_, peer_flag_, initiator, flag_base_, (uint32_t)iters, deadline, &r);
    }
    const auto t1 = Clock::now();
    if (r.status != kLoopOk) return broken(bench_loop_failure("raw flag ping-pong", r));
    flag_base_ += (uint32_t)iters;
    rc = checkWord("raw flag", flag_, flag_base_);
    if (rc != kOk) return rc;
    *elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    return ok();
  }

 private:
  int check(int iters, int64_t timeout_ns, int64_t* elapsed_ns) {
    if (broken_)
      return fail(kIllegalState, "ping-pong is out of step with its peer after: " + why_);
    if (iters <= 0 || timeout_ns <= 0 || elapsed_ns == nullptr) {
      return fail(kInvalidArgument, "ping-pong: iters and timeout must be positive, out non-null");
    }
    return kOk;
  }

  int meet(uint64_t deadline) {
    BenchLoopResult r = {};
    bench_meet(ctx_, peer_, ready_, ++ready_count_, deadline, &r);
    if (r.status != kLoopOk) return broken(bench_loop_failure("handshake before the ping-pong", r));
    return kOk;
  }

  // The peer sends exactly as many as counted here: more or fewer means a lost or extra signal.
  int checkWord(const char* what, const uint32_t* word, uint32_t expected) {
    const uint32_t v = mooncake::device::mc_ld_acquire_u32(word);
    if (v != expected) {
      return broken(std::string(what) + " word holds " + std::to_string(v) + ", expected exactly " +
                    std::to_string(expected));
    }
    return kOk;
  }

  // Counters no longer match the peer's: refuse later calls instead of measuring garbage.
  int broken(const std::string& why) {
    broken_ = true;
    why_ = why;
    return fail(why.find("timed out") != std::string::npos ? kTimeout : kIllegalState, why);
  }

  mooncake::device::CommCtx ctx_;
  int peer_;
  uint32_t* sig_;
  uint32_t* flag_;
  uint32_t* peer_flag_;
  uint32_t* ready_;
  uint32_t sig_base_ = 0;
  uint32_t flag_base_ = 0;
  uint32_t ll_base_ = 0;
  uint32_t ready_count_ = 0;
  bool broken_ = false;
  std::string why_;
};

}  // namespace
}  // namespace bench
}  // namespace te4j

te4j::bench::PingPong* te4j_bench_new_host_ping_pong(const mooncake::device::CommCtx& ctx, int peer,
                                                     uint32_t* sig, uint32_t* flag,
                                                     uint32_t* peer_flag, uint32_t* ready) {
  return new (std::nothrow) te4j::bench::HostPingPong(ctx, peer, sig, flag, peer_flag, ready);
}
