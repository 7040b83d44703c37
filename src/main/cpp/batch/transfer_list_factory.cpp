// transfer_list_factory.cpp — TransferList::create (the checks every platform shares) and the
// list that only says why not.
#include <new>
#include <string>

#include "batch/batch_descriptors.h"
#include "batch/transfer_lists.h"

namespace te4j {
namespace {

class UnavailableTransferList final : public TransferList {
 public:
  UnavailableTransferList(int status, const std::string& why) {
    init_status_ = status;
    last_error_ = why;
  }
  int size() const override { return 0; }
  int post(int, int) override { return refuse(); }
  int poll() override { return refuse(); }
  int wait(int64_t) override { return refuse(); }
  int cancel() override { return refuse(); }
  int skipped() override { return refuse(); }
  int states(int, int, int32_t*) override { return refuse(); }

 private:
  int refuse() {
    std::lock_guard<std::mutex> lock(error_mu_);
    return init_status_;
  }
};

}  // namespace

TransferList* newUnavailableTransferList(int status, const std::string& why) {
  return new (std::nothrow) UnavailableTransferList(status, why);
}

TransferList* TransferList::create(int platform, int device, int count, const int32_t* opcodes,
                                   const uint64_t* local, const uint64_t* remote,
                                   const uint64_t* lengths) {
  try {
    if (count < 1 || count > TransferBatch::kMaxBatchCapacity) {
      return newUnavailableTransferList(kInvalidArgument,
                                        "TransferList.create: count " + std::to_string(count) +
                                            " is outside 1.." +
                                            std::to_string(TransferBatch::kMaxBatchCapacity));
    }
    if (opcodes == nullptr || local == nullptr || remote == nullptr || lengths == nullptr) {
      return newUnavailableTransferList(kInvalidArgument,
                                        "TransferList.create: a null descriptor array");
    }
    // Checked before either platform does arithmetic on them (chunk counts, byte sums).
    batch::DescriptorProblem problem;
    const int bad = batch::firstBadDescriptor(count, opcodes, local, remote, lengths, &problem);
    if (bad >= 0) {
      return newUnavailableTransferList(kInvalidArgument, "TransferList.create: request " +
                                                              std::to_string(bad) + " has " +
                                                              batch::describe(problem));
    }
    if (platform == kPlatformHost) {
      return createHostTransferList(count, opcodes, local, remote, lengths);
    }
    if (platform == kPlatformCuda) {
      return createCudaTransferList(device, count, opcodes, local, remote, lengths);
    }
    return newUnavailableTransferList(
        kInvalidArgument, "TransferList.create: unknown platform " + std::to_string(platform));
  } catch (...) {
    return nullptr;  // std::bad_alloc from a message string
  }
}

}  // namespace te4j
