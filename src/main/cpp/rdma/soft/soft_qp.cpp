// soft_qp.cpp — see soft_qp.h.
#include "rdma/soft/soft_qp.h"

#include "transport/device/ibgda/cqe.cuh"
#include "transport/device/ibgda/mlx5_defs.cuh"

namespace te4j {
namespace rdma {

namespace mlx5 = mooncake::device::mlx5;

bool SoftQp::push(const InFlight& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  InFlight e = entry;
  if (in_error.load(std::memory_order_acquire)) {
    // In the error state nothing more executes: the request is flushed, in order.
    e.done = true;
    e.syndrome = mlx5::kSyndromeWrFlushErr;
  } else if (e.done && e.syndrome != 0) {
    in_error.store(true, std::memory_order_release);
  }
  e.sent = e.done;  // a request that will be executed is sent by the caller, then markSent
  inflight_.push_back(e);
  return !e.done;
}

void SoftQp::markSent(uint16_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = inflight_.rbegin(); it != inflight_.rend(); ++it) {
    if (!it->sent && it->wqe_counter == seq) {
      it->sent = true;
      return;
    }
  }
}

bool SoftQp::answer(uint16_t seq, uint8_t syndrome, SoftNicStats* stats, bool* has_fetch,
                    uint64_t* fetch_addr) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (InFlight& e : inflight_) {
    if (e.done) continue;
    if (e.wqe_counter != seq) return false;
    e.done = true;
    e.syndrome = syndrome;
    *has_fetch = e.has_fetch;
    *fetch_addr = e.fetch_addr;
    if (syndrome != 0) {
      if (syndrome != mlx5::kSyndromeWrFlushErr) stats->remote_errors.fetch_add(1);
      in_error.store(true, std::memory_order_release);
    }
    return true;
  }
  return false;
}

bool SoftQp::readTarget(uint16_t seq, std::vector<ParsedSge>* out, uint32_t* bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const InFlight& e : inflight_) {
    if (e.done) continue;
    if (e.wqe_counter != seq || e.opcode != mlx5::kOpcodeRdmaRead) return false;
    *out = e.scatter;
    *bytes = e.byte_count;
    return true;
  }
  return false;
}

void SoftQp::failAll(uint8_t syndrome, SoftNicStats* stats) {
  std::lock_guard<std::mutex> lock(mutex_);
  bool first = !in_error.load(std::memory_order_acquire);
  for (InFlight& e : inflight_) {
    if (e.done) continue;
    e.done = true;
    e.syndrome = first ? syndrome : mlx5::kSyndromeWrFlushErr;
    first = false;
  }
  in_error.store(true, std::memory_order_release);
  (void)stats;
}

void SoftQp::retire(SoftNicStats* stats) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!inflight_.empty() && inflight_.front().done && inflight_.front().sent) {
    const InFlight& e = inflight_.front();
    // Errors always produce a CQE; successes only when the WQE asked for one.
    if (e.syndrome != 0 || e.signaled) writeCqe(e, stats);
    inflight_.pop_front();
  }
}

size_t SoftQp::pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return inflight_.size();
}

void SoftQp::writeCqe(const InFlight& e, SoftNicStats* stats) {
  const uint32_t n = cq_mask + 1;
  const uint32_t consumer = __builtin_bswap32(__atomic_load_n(&cq_dbrec[0], __ATOMIC_ACQUIRE));
  if (((cq_pi_ - consumer) & 0xffffffu) >= n) stats->cq_overruns.fetch_add(1);
  mlx5::Cqe64* cqe = (mlx5::Cqe64*)(cq_buf + (size_t)(cq_pi_ & cq_mask) * mlx5::kCqeSize);
  for (int i = 0; i < 15; ++i) cqe->dw[i] = 0;
  cqe->dw[mlx5::kCqeDwByteCnt] = __builtin_bswap32(e.byte_count);
  uint8_t opcode = mlx5::kCqeReq;
  if (e.syndrome != 0) {
    opcode = mlx5::kCqeReqErr;
    // Little-endian word of bytes 52..55: byte 54 vendor syndrome (0), byte 55 syndrome.
    cqe->dw[mlx5::kCqeDwSyndrome] = (uint32_t)e.syndrome << 24;
    if (e.syndrome == mlx5::kSyndromeWrFlushErr) stats->flushes.fetch_add(1);
  }
  cqe->dw[mlx5::kCqeDwOpcodeQpn] = __builtin_bswap32(((uint32_t)e.opcode << 24) | qpn);
  const uint32_t owner = (cq_pi_ & n) ? 1u : 0u;
  // op_own last, with release: the consumer's acquire load of it validates the whole CQE.
  __atomic_store_n(&cqe->dw[mlx5::kCqeDwOwner], mlx5::cqe_make_dw15(e.wqe_counter, opcode, owner),
                   __ATOMIC_RELEASE);
  ++cq_pi_;
  stats->cqes.fetch_add(1);
}

}  // namespace rdma
}  // namespace te4j
