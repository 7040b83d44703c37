// doorbell_proxy.h — rings the NIC for device code that cannot reach the UAR itself.
//
// Device code always writes the WQE and then the doorbell record (ibgda/doorbell.cuh); with
// IbgdaQp::bf_reg == nullptr it stops there. A ConnectX NIC does not poll doorbell records, so
// one proxy thread per transport watches every QP's record and, when the send counter moved,
// writes the last new WQE's first 8 bytes (read back from the ring in host memory) to the UAR
// register with one 64-bit store, alternating the BlueFlame half as device code would.
//
// The ring slot it reads may be reused by a later WQE if the NIC completed the earlier one
// (another doorbell made it fetch ahead): the 8 bytes must then carry the expected WQE index
// and QP number, otherwise the proxy looks at the record again instead of ringing stale bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace te4j {
namespace rdma {

/// One QP as the proxy sees it (host addresses).
struct ProxyQp {
  const uint32_t* dbrec = nullptr;  // [1]: send counter, big-endian (mlx5 doorbell record)
  const uint8_t* ring = nullptr;    // send ring, (sq_mask + 1) x 64-byte WQEBBs
  uint32_t sq_mask = 0;
  uint32_t qpn = 0;
  uint32_t bf_size = 0;  // 0: always the same register offset
};

class DoorbellProxy {
 public:
  /// uar_reg: host address of the UAR doorbell/BlueFlame register.
  explicit DoorbellProxy(uint64_t* uar_reg) : uar_reg_(uar_reg) {}
  ~DoorbellProxy() { stop(); }
  DoorbellProxy(const DoorbellProxy&) = delete;
  DoorbellProxy& operator=(const DoorbellProxy&) = delete;

  void start();
  void stop();
  /// Replaces the watched QPs (new QPs start with send counter 0 and BlueFlame half 0).
  void setQps(const std::vector<ProxyQp>& qps);

  uint64_t doorbells() const { return doorbells_.load(std::memory_order_relaxed); }
  /// Ring slots found reused (or not yet written) and read again.
  uint64_t rereads() const { return rereads_.load(std::memory_order_relaxed); }
  /// QPs whose WQE never carried the expected index / QP number (a device-code contract bug).
  std::string diagnostics();

 private:
  struct Watched {
    ProxyQp qp;
    uint16_t rung = 0;  // send counter covered by the last doorbell
    uint32_t bf_offset = 0;
    uint32_t bad_reads = 0;  // consecutive reads that did not match the record
  };
  void loop();
  bool scan();
  bool ring(Watched* w);

  uint64_t* const uar_reg_;
  std::mutex mu_;  // guards qps_ (held for a whole scan) and diagnostics_
  std::vector<Watched> qps_;
  std::vector<std::string> diagnostics_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> doorbells_{0};
  std::atomic<uint64_t> rereads_{0};
};

}  // namespace rdma
}  // namespace te4j
