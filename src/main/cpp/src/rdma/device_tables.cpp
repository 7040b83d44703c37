// device_tables.cpp — see device_tables.h.
#include "device_tables.h"

#include <cstring>

#include "memory_port.h"
#include "transport/device/ibgda_device.cuh"

namespace te4j {
namespace rdma {

void fillIbgdaContext(const DeviceTables& t, mooncake::device::IbgdaContext* out) {
  std::memset(out, 0, sizeof(*out));
  out->qps = t.qp_table;
  out->raddrs = (const uint64_t*)t.raddrs;
  out->rkeys = (const uint32_t*)t.rkeys;
  out->local_base = (void*)(uintptr_t)t.window_base;
  out->num_ranks = t.num_ranks;
  out->qps_per_rank = t.qps_per_rank;
  out->lkey = t.window_lkey;
  out->timeout_ns = t.timeout_ns;
}

int readQpError(MemoryPort& memory, const void* qp_table, int qp_index, int64_t out[8],
                std::string* err) {
  mooncake::device::IbgdaQp qp;
  if (memory.fromTable(&qp, (const mooncake::device::IbgdaQp*)qp_table + qp_index, sizeof(qp),
                       err) != 0) {
    return -1;
  }
  out[0] = qp.err_count;
  out[1] = qp.err_first & 0xff;           // syndrome
  out[2] = (qp.err_first >> 8) & 0xff;    // vendor syndrome
  out[3] = (qp.err_first >> 16) & 0xff;   // CQE opcode
  out[4] = qp.err_wqe_counter;
  out[5] = qp.err_fatal;
  out[6] = qp.sq_pi;
  out[7] = qp.sq_ci;
  return 0;
}

}  // namespace rdma
}  // namespace te4j
