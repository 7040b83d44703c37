// device_tables.cpp — see device_tables.h.
#include "rdma/device_tables.h"

#include <cstring>

#include "rdma/device_error_records.h"
#include "rdma/memory_port.h"
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
  out->flags = t.flags;
  out->error_record = t.error_record;
}

int readQpError(MemoryPort& memory, const void* qp_table, int qp_index, int64_t out[8],
                std::string* err) {
  mooncake::device::IbgdaQp qp;
  if (memory.fromTable(&qp, (const mooncake::device::IbgdaQp*)qp_table + qp_index, sizeof(qp),
                       err) != 0) {
    return -1;
  }
  out[0] = qp.err_count;
  out[1] = qp.err_first & 0xff;          // syndrome
  out[2] = (qp.err_first >> 8) & 0xff;   // vendor syndrome
  out[3] = (qp.err_first >> 16) & 0xff;  // CQE opcode
  out[4] = qp.err_wqe_counter;
  out[5] = qp.err_fatal;
  out[6] = qp.sq_pi;
  out[7] = qp.sq_ci;
  return 0;
}

int TableRdmaTransport::setDeviceTimeoutNs(int64_t timeout_ns) {
  if (timeout_ns <= 0) return fail(kInvalidArgument, "setDeviceTimeoutNs: must be positive");
  timeout_ns_ = (uint64_t)timeout_ns;
  return ok();
}

int TableRdmaTransport::fillIbgdaContext(mooncake::device::IbgdaContext* out) {
  if (out == nullptr) return fail(kInvalidArgument, "fillIbgdaContext: null context");
  if (!connected_) return fail(kIllegalState, "fillIbgdaContext: connectPeers first");
  if (windowKey() == 0) return fail(kIllegalState, "fillIbgdaContext: registerMemory first");
  DeviceTables t;
  t.qp_table = qp_table_;
  t.raddrs = raddrs_;
  t.rkeys = rkeys_;
  t.window_base = window_base_;
  t.window_lkey = windowKey();
  t.num_ranks = num_ranks_;
  t.qps_per_rank = qps_per_rank_;
  t.timeout_ns = timeout_ns_;
  t.flags = ibgdaFlags();
  t.error_record = (mooncake::device::McErrorRecord*)error_dev_;
  rdma::fillIbgdaContext(t, out);
  return ok();
}

mooncake::device::McErrorRecord* TableRdmaTransport::errorRecord(int platform, int device,
                                                                 std::string* err) {
  if (error_dev_ != nullptr) return (mooncake::device::McErrorRecord*)error_dev_;
  if (!memory_) {
    *err = "no memory port";
    return nullptr;
  }
  void* host = nullptr;
  void* dev = nullptr;
  if (memory_->allocControl(sizeof(mooncake::device::McErrorRecord), &host, &dev, err) != 0)
    return nullptr;
  error_host_ = host;
  error_dev_ = dev;
  registerErrorRecord(platform, device, (mooncake::device::McErrorRecord*)error_host_);
  return (mooncake::device::McErrorRecord*)error_dev_;
}

void TableRdmaTransport::releaseErrorRecord() {
  if (error_host_ == nullptr) return;
  unregisterErrorRecord((mooncake::device::McErrorRecord*)error_host_);
  if (memory_) memory_->freeControl(error_host_);
  error_host_ = error_dev_ = nullptr;
}

int TableRdmaTransport::queryQpError(int qp_index, int64_t* out, int capacity) {
  if (!haveQps() || qp_index < 0 || qp_index >= numQps() || out == nullptr || capacity < 8)
    return fail(kInvalidArgument, "queryQpError: bad QP index or capacity < 8");
  std::string err;
  if (readQpError(*memory_, qp_table_, qp_index, out, &err) != 0)
    return fail(kCudaError, "queryQpError: " + err);
  ok();
  return 8;
}

std::string TableRdmaTransport::shapeError(int num_ranks, int num_qps) {
  if (num_ranks <= 0 || num_ranks > 64) {
    return "num_ranks must be 1..64, got " + std::to_string(num_ranks);
  }
  if (num_qps < num_ranks || num_qps % num_ranks != 0) {
    return "num_qps (" + std::to_string(num_qps) + ") must be a positive multiple of num_ranks (" +
           std::to_string(num_ranks) + ")";
  }
  return "";
}

}  // namespace rdma
}  // namespace te4j
