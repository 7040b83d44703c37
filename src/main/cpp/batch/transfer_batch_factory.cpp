// transfer_batch_factory.cpp — TransferBatch::create and the batch that only says why not.
#include <new>
#include <string>

#include "batch/transfer_batches.h"

namespace te4j {
namespace {

class UnavailableTransferBatch final : public TransferBatch {
 public:
  UnavailableTransferBatch(int status, const std::string& why) {
    init_status_ = status;
    last_error_ = why;
  }
  int capacity() const override { return 0; }
  BatchDescriptor* descriptors() override { return nullptr; }
  int attachRdma(RdmaTransport*) override { return refuse(); }
  int submit(int, int, int64_t) override { return refuse(); }
  int submit(int, int, const int32_t*, const uint64_t*, const uint64_t*, const uint64_t*) override {
    return refuse();
  }
  int submitPublication(int, uint64_t, uint64_t, int64_t) override { return refuse(); }
  int states(int, int, int32_t*) override { return refuse(); }
  int syndromes(int, int, int32_t*) override { return refuse(); }
  int wait(int64_t) override { return refuse(); }
  int cancel() override { return refuse(); }

 private:
  int refuse() {
    std::lock_guard<std::mutex> lock(error_mu_);
    return init_status_;
  }
};

}  // namespace

TransferBatch* newUnavailableTransferBatch(int status, const std::string& why) {
  return new (std::nothrow) UnavailableTransferBatch(status, why);
}

TransferBatch* TransferBatch::create(int platform, int device, int capacity) {
  try {
    if (capacity < 1 || capacity > kMaxBatchCapacity) {
      return newUnavailableTransferBatch(
          kInvalidArgument, "TransferBatch.create: capacity " + std::to_string(capacity) +
                                " is outside 1.." + std::to_string(kMaxBatchCapacity));
    }
    if (platform == kPlatformHost) return createHostTransferBatch(capacity);
    if (platform == kPlatformCuda) return createCudaTransferBatch(device, capacity);
    return newUnavailableTransferBatch(
        kInvalidArgument, "TransferBatch.create: unknown platform " + std::to_string(platform));
  } catch (...) {
    return nullptr;  // std::bad_alloc from a message string
  }
}

}  // namespace te4j
