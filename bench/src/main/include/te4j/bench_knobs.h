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
#pragma once

#include <string>

namespace te4j {
namespace bench {

struct BenchKnobs {
  bool spin_wait = false;   // wait=spin
  bool raw_data = false;    // rawdata=1
  bool signal_set = false;  // signal=set
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

}  // namespace bench
}  // namespace te4j
