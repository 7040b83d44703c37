// te4j/bench_knobs.h — the knobs only te4j-bench reads: variants of its own ping-pong loops, and
// the launch shape of a variant. They ride in the same --variant spec as the library's knobs
// (te4j/tuning.h); applyTuning (bench_factory.cpp) takes these out and hands the rest to
// tuning::apply.
//
// knob      values            affects
// wait      sleep | spin      device-side waits of the ping-pong loops (spin: no nanosleep/pause
//                             between polls)
// rawdata   0 | 1             raw-flag loop: also store 8 B of data before the release flag (the
//                             floor of a correctly ordered put+signal)
// signal    set               the te4j ping-pong signals with mc_signal_set, a release store of
//                             the round (the library's signal=atom|red pass through; with set
//                             the library's putWithSignal keeps its red add)
// threads   32..1024          threads per block of the variant's te4j puts (the Java side
//                             applies it)
// put       u8 | u16 | u8c    the put kernel's experiment variants (put_variants.cu, measured
//           | tma | tma8      beside te4j's own policy; te4j's put=auto|base|ce|cesm pass
//           | tma3 | tmah     through): CUDA puts to P2P and own-rank routes take the variant's
//           | tmaq | cluster  kernel at every size, through libte4j's launcher hook
#pragma once

#include <string>

namespace te4j {
namespace bench {

enum PutVariant : int {
  kPutLibrary = 0,  // te4j's own put (the library's knob put decides)
  kPutU8,           // grid-stride, 8 x 16-byte loads in flight per thread
  kPutU16,          // grid-stride, 16 in flight
  kPutU8Contig,     // each block copies one contiguous slab, 8 in flight
  kPutTma,          // cp.async.bulk through shared memory, 4 stages x 32 KiB per block
  kPutTma8,         // 8 stages x 16 KiB
  kPutTma3,         // 3 stages x 64 KiB
  kPutTmaHalf,      // half the body through tma8's bulk pipeline (thread 0), half by LSU stores
  kPutTmaQuarter,   // a quarter through the bulk pipeline, three quarters by LSU stores
  kPutCluster,      // the lean kernel as one thread-block cluster (<= 8 blocks)
};

struct BenchKnobs {
  bool spin_wait = false;         // wait=spin
  bool raw_data = false;          // rawdata=1
  bool signal_set = false;        // signal=set
  int put_variant = kPutLibrary;  // put=u8 ... (PutVariant)
};

/// Splits `spec` ("name=value[,...]"; nullptr, "" or "default": the defaults) into the bench's
/// knobs (*knobs, from their defaults) and the library's (*library_spec, for tuning::apply).
/// False with *why naming the bad item and the bench's valid values.
bool splitBenchKnobs(const char* spec, BenchKnobs* knobs, std::string* library_spec,
                     std::string* why);

/// The bench's knobs and values, for error messages ("wait=sleep|spin, ...").
const char* benchKnobNames();

/// The knobs in force for this process's loops (set by applyTuning).
BenchKnobs benchKnobs();
void setBenchKnobs(const BenchKnobs& knobs);

/// "wait=sleep,rawdata=0" for the knobs given.
std::string describeBenchKnobs(const BenchKnobs& knobs);

/// The knob value of a PutVariant ("u8"), or nullptr for kPutLibrary and unknown numbers.
const char* putVariantName(int variant);

}  // namespace bench
}  // namespace te4j
