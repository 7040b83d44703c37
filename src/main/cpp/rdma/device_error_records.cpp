// device_error_records.cpp — see device_error_records.h.
#include "rdma/device_error_records.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "transport/device/comm_device.cuh"

namespace te4j {
namespace {

struct Entry {
  int platform;
  int device;
  mooncake::device::McErrorRecord* record;
};

std::mutex& registryMutex() {
  static std::mutex mu;
  return mu;
}

std::vector<Entry>& registry() {
  static std::vector<Entry> entries;
  return entries;
}

const char* opText(uint32_t op) {
  switch (op) {
    case mooncake::device::kMcOpRdmaWrite: return "RDMA write (mc_rdma_put / mc_ibgda_put)";
    case mooncake::device::kMcOpRdmaAtomicAdd:
      return "RDMA atomic add (mc_signal / mc_red_add / mc_ibgda_red_add)";
    case mooncake::device::kMcOpSignalNoRoute: return "signal (mc_signal / mc_red_add)";
  }
  return "device-side post";
}

}  // namespace

void registerErrorRecord(int platform, int device, mooncake::device::McErrorRecord* host_view) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().push_back(Entry{platform, device, host_view});
}

void unregisterErrorRecord(mooncake::device::McErrorRecord* host_view) {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<Entry>& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(), [&](const Entry& e) { return e.record == host_view; }),
          r.end());
}

std::string takeDeviceErrors(int platform, int device) {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::string message;
  for (const Entry& e : registry()) {
    if (e.platform != platform || e.device != device) continue;
    volatile mooncake::device::McErrorRecord* rec = e.record;
    const uint32_t count = rec->count;
    if (count == 0) continue;
    std::atomic_thread_fence(std::memory_order_acquire);  // the description was stored first
    if (message.empty()) {
      const int status = rec->first_status;
      message = std::string("a device-side ") + opText(rec->first_op) + " to rank " +
                std::to_string(rec->first_dst_rank) +
                " failed: " + mooncake::device::mc_route_status_text(status) + " (status " +
                std::to_string(status) + "), " + std::to_string(count) +
                " failed post(s) in all; fix: build the CommCtx with te4j's makeCommCtx + "
                "fillCommCtx, check the rank's route, and recreate the QPs after an error "
                "(RdmaTransport.queryQpError has the completion's syndrome)";
    }
    rec->count = 0;
  }
  return message;
}

}  // namespace te4j
