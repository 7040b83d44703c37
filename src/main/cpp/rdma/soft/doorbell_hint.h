// doorbell_hint.h — how a host-side poster wakes the software NICs of its process at once.
//
// The NIC learns of a doorbell by scanning the QPs' UAR words; an idle progress thread scans on
// a timer (device code cannot make system calls, so the words stay the contract). Host posters
// (the host op stream's executor) add a hint after ringing: a process-wide counter that a
// sleeping progress thread waits on with a futex, so a post reaches the wire in microseconds
// instead of at the next timed scan.
#pragma once

#include <cstdint>

namespace te4j {
namespace rdma {

/// After ringing a doorbell (host posters): runs the software NICs' doorbells in the calling
/// thread where their engines are free, else wakes their progress threads (soft_nic.cpp).
void softNicDoorbellHint();
/// Wakes every software NIC progress thread that sleeps in softNicAwaitHint.
void wakeProgressThreads();
/// The hint count now; a progress thread reads it before its last scan.
uint32_t softNicHintCount();
/// Sleeps up to timeout_us unless the count moved past `seen` (then returns at once).
void softNicAwaitHint(uint32_t seen, int timeout_us);

/// Wakes every thread, of any process, futex-waiting on the 32-bit word at addr (a signal word
/// in shared memory that the NIC has just changed). Cheap when nobody waits.
void wakeWordWaiters(const void* addr);
/// Waits on the 32-bit word at addr while it holds `seen`, up to timeout_ns; returns on a
/// wake, a change, a signal or the timeout (the caller re-reads the word in every case).
void waitWordChange(const void* addr, uint32_t seen, int64_t timeout_ns);

}  // namespace rdma
}  // namespace te4j
