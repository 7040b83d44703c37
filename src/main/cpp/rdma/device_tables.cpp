// device_tables.cpp — see device_tables.h.
#include "rdma/device_tables.h"

#include <cstring>
#include <string>
#include <vector>

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

std::string activeMaskError(int num_ranks, uint64_t active_ranks_mask) {
  if (num_ranks < 64 && (active_ranks_mask >> num_ranks) != 0)
    return "active_ranks_mask names ranks at or above num_ranks";
  return "";
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

mooncake::device::McErrorRecord* TableRdmaTransport::errorRecord(std::string* err) {
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
  registerErrorRecord(platform_, cuda_device_, (mooncake::device::McErrorRecord*)error_host_);
  return (mooncake::device::McErrorRecord*)error_dev_;
}

void TableRdmaTransport::releaseErrorRecord() {
  if (error_host_ == nullptr) return;
  unregisterErrorRecord((mooncake::device::McErrorRecord*)error_host_);
  if (memory_) memory_->freeControl(error_host_);
  error_host_ = error_dev_ = nullptr;
}

void TableRdmaTransport::freeTables() {
  if (memory_) {
    if (qp_table_) memory_->freeTable(qp_table_);
    if (raddrs_) memory_->freeTable(raddrs_);
    if (rkeys_) memory_->freeTable(rkeys_);
  }
  qp_table_ = raddrs_ = rkeys_ = nullptr;
}

int TableRdmaTransport::publishPeerWindows(const uint64_t* remote_addrs,
                                           const uint32_t* remote_keys,
                                           uint64_t active_ranks_mask) {
  std::vector<uint64_t> raddrs(num_ranks_, 0);
  std::vector<uint32_t> rkeys(num_ranks_, 0);
  for (int r = 0; r < num_ranks_; ++r) {
    if (((active_ranks_mask >> r) & 1u) == 0) continue;
    raddrs[r] = remote_addrs[r];
    rkeys[r] = remote_keys[r];
  }
  std::string why;
  if (memory_->toTable(raddrs_, raddrs.data(), sizeof(uint64_t) * num_ranks_, &why) != 0 ||
      memory_->toTable(rkeys_, rkeys.data(), sizeof(uint32_t) * num_ranks_, &why) != 0)
    return fail(kCudaError, "connectPeers: tables: " + why);
  return kOk;
}

int TableRdmaTransport::initialize(const char* device_name, int num_ranks, int num_qps) {
  if (initialized()) return fail(kIllegalState, "initialize: already initialized");
  const std::string bad_shape = shapeError(num_ranks, num_qps);
  if (!bad_shape.empty()) return fail(kInvalidArgument, "initialize: " + bad_shape);
  const int s = openNic(device_name);
  if (s != kOk) return s;
  num_ranks_ = num_ranks;
  qps_per_rank_ = num_qps / num_ranks;
  return ok();
}

int TableRdmaTransport::registerMemory(void* ptr, std::size_t bytes) {
  if (ptr == nullptr || bytes == 0) return fail(kInvalidArgument, "registerMemory: null or empty");
  const int s = registerWindow(ptr, bytes);
  if (s != kOk) return s;
  window_base_ = (uint64_t)(uintptr_t)ptr;
  window_bytes_ = bytes;
  return ok();
}

int TableRdmaTransport::deregisterMemory(void* ptr) {
  if (!forgetRegion(ptr))
    return fail(kInvalidArgument, "deregisterMemory: no region starts at that address");
  return ok();
}

int TableRdmaTransport::setRingSize(int wqebbs) {
  if (controlAllocated())
    return fail(kIllegalState, "setRingSize: control buffer already allocated");
  if (wqebbs < 2 || wqebbs > 32768 || (wqebbs & (wqebbs - 1)) != 0)
    return fail(kInvalidArgument,
                "setRingSize: a power of two in 2..32768, got " + std::to_string(wqebbs));
  useRingSize((uint32_t)wqebbs);
  return ok();
}

int TableRdmaTransport::allocateControlBuffer() {
  if (!initialized()) return fail(kIllegalState, "allocateControlBuffer: initialize first");
  if (controlAllocated()) return ok();
  const int s = allocateControl();
  if (s != kOk) return s;
  std::string why;
  if (memory_->allocTable(sizeof(mooncake::device::IbgdaQp) * numQps(), &qp_table_, &why) != 0 ||
      memory_->allocTable(sizeof(uint64_t) * num_ranks_, &raddrs_, &why) != 0 ||
      memory_->allocTable(sizeof(uint32_t) * num_ranks_, &rkeys_, &why) != 0) {
    // All or nothing: a later call must not find the control buffer without its tables.
    freeTables();
    releaseControl();
    return fail(kOutOfMemory, "allocateControlBuffer: device tables: " + why);
  }
  return ok();
}

int TableRdmaTransport::createQueuePairs(void* stream) {
  if (!initialized()) return fail(kIllegalState, "createQueuePairs: initialize first");
  if (!controlAllocated()) {
    const int s = allocateControlBuffer();
    if (s != kOk) return s;
  }
  std::string why;
  mooncake::device::McErrorRecord* record = errorRecord(&why);
  if (record == nullptr) return fail(kOutOfMemory, "createQueuePairs: error record: " + why);
  const int s = makeQueuePairs(stream, record);
  if (s != kOk) return s;
  connected_ = false;
  return ok();
}

int TableRdmaTransport::recreateQueuePairs(void* stream) {
  if (!initialized() || !haveQps())
    return fail(kIllegalState, "recreateQueuePairs: no queue pairs yet");
  return createQueuePairs(stream);
}

int TableRdmaTransport::connectPeers(int local_rank, bool is_roce, const uint64_t* remote_addrs,
                                     const uint32_t* remote_keys, const uint32_t* remote_qpns,
                                     const uint32_t* remote_lids, const uint64_t* subnet_prefixes,
                                     const uint64_t* interface_ids, uint64_t active_ranks_mask) {
  if (!haveQps()) return fail(kIllegalState, "connectPeers: createQueuePairs first");
  if (local_rank < 0 || local_rank >= num_ranks_)
    return fail(kInvalidArgument, "connectPeers: local_rank out of range");
  const std::string bad_mask = activeMaskError(num_ranks_, active_ranks_mask);
  if (!bad_mask.empty()) return fail(kInvalidArgument, "connectPeers: " + bad_mask);
  if (!remote_addrs || !remote_keys || !remote_qpns || !remote_lids || !subnet_prefixes ||
      !interface_ids)
    return fail(kInvalidArgument, "connectPeers: a table is null");
  const int s = connectQueuePairs(local_rank, is_roce, remote_addrs, remote_keys, remote_qpns,
                                  remote_lids, subnet_prefixes, interface_ids, active_ranks_mask);
  if (s != kOk) return s;
  connected_ = true;
  return ok();
}

int TableRdmaTransport::localMetadata(int64_t* out, int capacity) {
  if (!haveQps()) return fail(kIllegalState, "localMetadata: createQueuePairs first");
  if (out == nullptr || capacity < localMetadataLength())
    return fail(kInvalidArgument,
                "localMetadata: capacity below " + std::to_string(localMetadataLength()));
  out[0] = kRdmaMetadataMagic;
  out[1] = kRdmaMetadataVersion;
  out[2] = backend();
  out[3] = num_ranks_;
  out[4] = qps_per_rank_;
  out[5] = (int64_t)window_base_;
  addressValues(out);
  for (int i = 0; i < numQps(); ++i) out[kRdmaMetadataHeader + i] = qpNumber(i);
  ok();
  return localMetadataLength();
}

int TableRdmaTransport::statistics(int64_t* out, int capacity) {
  const int count = statisticsCount();
  if (!initialized() || out == nullptr || capacity < count)
    return fail(kInvalidArgument, "statistics: capacity below " + std::to_string(count));
  const int s = readStatistics(out);
  if (s != kOk) return s;
  ok();
  return count;
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
