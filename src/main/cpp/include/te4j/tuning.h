// te4j/tuning.h — process-wide performance knobs of te4j's own paths: the kernel and protocol
// variants that te4j-bench measures side by side in one run (the bench's own loop variants are
// its knobs, te4j-bench's te4j/bench_knobs.h). Every knob defaults to te4j's production choice;
// the environment variable TE4J_TUNING ("put=ce,signal=red,pdl=1") or te4j::tuning::apply()
// (te4j-bench --variant) changes them for the whole process. An op stream reads the knobs it
// uses once, into a snapshot, when it is created; an op compares one counter (generation())
// and takes a new snapshot only after an apply(). Changing a knob while ops are in flight on a
// stream is allowed (ops already enqueued keep the knobs they were enqueued under).
//
// knob      values                                        affects
// put       auto | base | ce | cesm                       CUDA put / putWithSignal body
//                                                         (auto, the default: by route and size,
//                                                         stream/body_path.h: the copy engine
//                                                         from 32 MiB between two GPUs and from
//                                                         samedevce within one device, else the
//                                                         lean kernel below 32 MiB and the bulk
//                                                         kernel from there; base: the
//                                                         RDMA-capable kernels; ce: the copy
//                                                         engine at every size, cesm: copy engine
//                                                         and SM kernel at once). The put kernel's
//                                                         experiment variants are te4j-bench's
//                                                         (te4j-bench --variant put=u8 ...)
// samedevce auto | 0 | 64k | 256k | 1m | 2m | 4m | 8m     put=auto between ranks of one device:
//           | 16m | 32m                                   the size from which the copy engine
//                                                         moves the body (auto: te4j's choice,
//                                                         stream/body_path.h; 32m: the policy
//                                                         between two GPUs)
// cesplit   50 | 55 | ... | 95                            put=cesm: the copy engine's percent
// signal    atom | red                                    CUDA signal atomic of putWithSignal
//                                                         (red = no return)
// arrival   gpu | sys                                     lean putWithSignal kernel, several
//                                                         blocks: no per-block fence before the
//                                                         arrival (gpu, the default: the
//                                                         signal's release covers them) or a
//                                                         system-scope fence per block (sys)
// pdl       0 | 1                                         CUDA programmatic dependent launch of
//                                                         put kernels (variants other than base)
// hostcopy  memmove | memcpy | nt                         host platform put body (nt: SSE2
//                                                         non-temporal stores for >= 256 KiB)
// hostthreads 4 | 1 | 2 | 8                               host platform put: threads that copy
//                                                         one put of >= 4 MiB in chunks (the
//                                                         stream's executor + helpers)
// hostspin  auto | 0 | 2 | 5 | 20 | 50 | 200              host platform: most microseconds a
//                                                         waitSignal polls its word before it
//                                                         parks (its spin adapts below it); auto:
//                                                         20 with 4 or more CPUs online, else 0
// batchthreads auto | 1 | 2 | 4 | 8                       host platform transfer batch: threads
//                                                         that copy one part of >= 1 MiB (the
//                                                         batch worker + helpers); auto: one per
//                                                         CPU online, at most 4
#pragma once

namespace te4j {
namespace tuning {

enum Knob : int {
  kPut = 0,
  kSignal,
  kPdl,
  kHostCopy,
  kCopyEngineSplit,
  kArrival,
  kHostThreads,
  kHostSpin,
  kBatchThreads,
  kSameDeviceCopyEngine,
  kKnobCount
};

// te4j's put paths: kPutAuto is the default, the policy that measured best.
enum PutKernel : int {
  kPutBase = 0,      // the RDMA-capable kernels (kernels/put_kernels.cuh) for every route
  kPutAuto,          // by route and size (stream/body_path.h): the copy engine on routes the host
                     // tables map from their threshold, else the lean kernel < 32 MiB and the
                     // 8 x 16 KiB bulk kernel from there (stream/put_launch.cu)
  kPutCopyEngine,    // cudaMemcpyAsync to the peer mapping (copy_engine_route.cuh), no SM
  kPutCopyEngineSm,  // a cesplit share by the copy engine, the rest by the kernel, concurrently
};

enum SignalOp : int { kSignalAtom = 0, kSignalRed = 1 };
enum Arrival : int { kArrivalSys = 0, kArrivalGpu = 1 };
enum HostCopy : int { kHostMemmove = 0, kHostMemcpy = 1, kHostNonTemporal = 2 };

/// Why TE4J_TUNING was refused at load time (unknown knob or value, with the valid ones), or
/// nullptr when it was absent or valid. Transports and streams refuse to be created while set.
const char* environmentError();

/// Current value of a knob (relaxed load).
int get(Knob knob);

/// Counts the apply() calls (TE4J_TUNING's at load time included): a snapshot of the knobs
/// taken at generation g is current while generation() == g.
unsigned generation();

/// hostthreads: how many threads copy one large host-platform put (value names are the counts).
int hostThreads();

/// hostspin: the bounded spin of a host-platform waitSignal before it parks, in nanoseconds.
long long hostSpinNs();

/// batchthreads: how many threads copy one large part of a host-platform transfer batch.
int batchThreads();

/// samedevce: the size from which put=auto moves a body within one device by the copy engine,
/// or -1 for auto (te4j's choice, stream/body_path.h).
long long sameDeviceCopyEngineBytes();

/// put=cesm: the copy engine's share of the body in percent (knob cesplit: 50 + 5 x value).
inline int copyEnginePercent() { return 50 + 5 * get(kCopyEngineSplit); }

/// Resets every knob to its default, then applies "name=value[,name=value...]" (names or
/// numbers as in the table above; "" or "default" applies nothing). Returns 0 or -1 (unknown
/// name or value: the knobs are left at their defaults and *error, if given, says why and names
/// the valid ones).
int apply(const char* spec, const char** error);

/// "put=base,signal=atom,..." for the current values (static storage, per thread).
const char* describe();

}  // namespace tuning
}  // namespace te4j
