// ibgda/qp_context.cuh — the per-QP device context: what device code needs to post to one RC QP
// and to poll its completions.
//
// Where each part lives:
//   IbgdaQp itself        platform memory the posting threads own (CUDA: device memory, so the
//                         lock and counters stay on the GPU; host: the process's heap).
//   sq_buf, cq_buf,       hardware: DevX umem the NIC reads/writes; software NIC: memory its
//   sq_dbrec, cq_dbrec    progress thread reads/writes (CUDA: pinned host memory mapped into
//                         the GPU; host: ordinary memory).
//   bf_reg                hardware: the UAR BlueFlame register mapped for the GPU, or nullptr
//                         when a host proxy rings the UAR; software NIC: its watched UAR words.
//
// Every WQE te4j builds occupies exactly one 64-byte WQEBB and requests a CQE, so counts of
// WQEs and WQEBBs are equal, and a CQE's wqe_counter w means "WQEs up to w have completed".
//
// The struct is declared at global scope under upstream Mooncake's name, mlx5gda_qp_devctx, so
// kernels written against upstream (which name the QP table's element type that way) compile
// and index the table te4j's RdmaTransport builds. Its members are te4j's own: upstream's
// per-field mlx5gda layout is not part of the Device API contract, only the type name is.
#pragma once

#include <stdint.h>

#include "transport/device/ibgda/error_record.cuh"

struct alignas(64) mlx5gda_qp_devctx {
  // Set by the host at creation, read-only for device code.
  uint32_t qpn;           // 24-bit QP number
  uint32_t sq_mask;       // WQEBBs in the send ring - 1 (ring size is a power of two)
  uint32_t cq_mask;       // CQEs in the completion queue - 1 (power of two, >= ring size)
  uint32_t bf_size;       // bytes between the two BlueFlame halves (the offset alternates)
  uint8_t* sq_buf;        // send ring: (sq_mask + 1) x 64-byte WQEBB
  uint8_t* cq_buf;        // completion queue: (cq_mask + 1) x 64-byte CQE
  uint32_t* sq_dbrec;     // doorbell record: [0] receive counter, [1] send counter (big-endian)
  uint32_t* cq_dbrec;     // CQ doorbell record: [0] consumer index (24 bits, big-endian), [1] arm
  uint64_t* bf_reg;       // BlueFlame/UAR register base; nullptr: a host proxy rings the UAR
  uint64_t scratch_addr;  // 8 bytes of registered memory receiving atomics' fetched values
  uint32_t scratch_lkey;  // their local key

  // Device state, changed only with `lock` held (sq_ci and err_count with release stores:
  // quiets read them without the lock; see completion.cuh for the protocol).
  uint32_t lock;       // 0 free, 1 held
  uint32_t bf_offset;  // 0 or bf_size: the BlueFlame half the next doorbell uses
  uint32_t sq_pi;      // WQEBBs posted (free-running; the WQE index is its low 16 bits)
  uint32_t sq_ci;      // WQEBBs completed (free-running)
  uint32_t cq_ci;      // CQEs consumed (free-running)

  // Errors seen by completion polling, for the host (RdmaTransport::queryQpError).
  uint32_t err_count;        // error CQEs consumed (the first error and the flushes after it)
  uint32_t err_first;        // first error: syndrome | vendor syndrome << 8 | cqe opcode << 16
  uint32_t err_wqe_counter;  // wqe_counter of the first error CQE
  uint32_t err_fatal;        // CQEs with an opcode a requester never gets (counted, not trapped)

  // Set by the host: where the void (upstream-style) functions leave a failed post when the
  // context they were given has no error record of its own (error_record.cuh).
  mooncake::device::McErrorRecord* error_record;
};

namespace mooncake {
namespace device {

/// te4j's name of the QP context.
typedef ::mlx5gda_qp_devctx IbgdaQp;

}  // namespace device
}  // namespace mooncake
