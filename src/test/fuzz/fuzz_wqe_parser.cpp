// fuzz_wqe_parser.cpp — the send WQEs a software-NIC QP fetches from a ring that device code
// (or a hostile kernel of the job) writes.
//
// Input: byte 0 picks the ring size (1 << (b & 7) WQEBBs), bytes 1-4 the producer index the NIC
// starts at, bytes 5-8 the QP number, bytes 9-10 how many WQEBBs the doorbell record covers; the
// rest is the ring (zero-padded). The NIC's fetch loop is replayed: parseWqe at the consumer
// index, the doorbell record's bound on the blocks a WQE may claim, the region check of every
// gather entry (local read for a WRITE's source, local write for an atomic's fetch target),
// and for an accepted WRITE the gather read through the host memory port, then on to the next
// WQE. The ring is a heap block of exactly its size, so any read past it is an ASan report.
// Invariants: num_bbs >= 1 always, a WQE never claims more than the ring, a well-formed WQE
// has a gather list within kMaxSge whose sum is total_length and within the message limit.
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_support.h"
#include "rdma/memory_port.h"
#include "rdma/soft/wqe_parser.h"
#include "transport/device/ibgda/mlx5_defs.cuh"

using namespace te4j::rdma;
namespace fz = te4j::fuzz;
namespace mlx5 = mooncake::device::mlx5;

namespace {

MemoryPort& port() {
  static MemoryPort* p = makeHostMemoryPort().release();
  return *p;
}

void checkParsed(const ParsedWqe& w, uint32_t ring_bbs) {
  FUZZ_ASSERT(w.num_bbs >= 1);
  FUZZ_ASSERT(w.num_bbs <= ring_bbs);
  FUZZ_ASSERT(w.num_sge >= 0 && w.num_sge <= kMaxSge);
  if (w.syndrome != 0) return;
  uint64_t sum = 0;
  for (int i = 0; i < w.num_sge; ++i) sum += w.sge[i].length;
  FUZZ_ASSERT(sum == w.total_length);
  FUZZ_ASSERT(w.total_length <= mlx5::kMaxMessageBytes);
  FUZZ_ASSERT(w.ds != 0 && w.num_bbs == (w.ds * 16u + mlx5::kSendWqeBB - 1) / mlx5::kSendWqeBB);
  if (w.opcode == mlx5::kOpcodeAtomicMaskedFa)
    FUZZ_ASSERT(w.num_sge == 1 && w.total_length == 4);
  else if (w.opcode != mlx5::kOpcodeRdmaWrite && w.opcode != mlx5::kOpcodeRdmaRead)
    FUZZ_ASSERT(w.opcode == mlx5::kOpcodeNop);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fz::Bytes in{data, size};
  const uint32_t ring_bbs = 1u << (in.u8() & 7);
  uint32_t index = in.u32();
  const uint32_t qpn = in.u32();
  uint32_t pending = (uint32_t)in.u8() | ((uint32_t)in.u8() << 8);
  if (pending > ring_bbs) pending = ring_bbs;  // the NIC ignores a record more than a ring ahead
  const size_t ring_bytes = (size_t)ring_bbs * mlx5::kSendWqeBB;
  std::unique_ptr<uint8_t[]> ring(new uint8_t[ring_bytes]);
  std::memset(ring.get(), 0, ring_bytes);
  std::memcpy(ring.get(), in.p, in.n < ring_bytes ? in.n : ring_bytes);

  fz::Arena& a = fz::arena();
  std::vector<uint8_t> staging;
  for (uint32_t left = pending; left > 0;) {
    ParsedWqe w;
    parseWqe(ring.get(), ring_bbs - 1, index, qpn, &w);
    checkParsed(w, ring_bbs);
    uint8_t syndrome = w.syndrome;
    if (w.num_bbs > left) {
      w.num_bbs = left;
      if (syndrome == 0) syndrome = mlx5::kSyndromeLocalLengthErr;
    }
    if (syndrome == 0) {
      const uint32_t access =
          w.opcode == mlx5::kOpcodeAtomicMaskedFa || w.opcode == mlx5::kOpcodeRdmaRead
              ? kAccessLocalWrite
              : kAccessLocalRead;
      for (int i = 0; i < w.num_sge && syndrome == 0; ++i)
        if (!a.regions.check(w.sge[i].lkey, w.sge[i].addr, w.sge[i].length, access))
          syndrome = mlx5::kSyndromeLocalProtErr;
    }
    if (syndrome == 0 && w.opcode == mlx5::kOpcodeRdmaWrite) {
      // Every entry passed the check, so the sum is bounded by the registered bytes x kMaxSge.
      staging.resize(w.total_length);
      std::string err;
      size_t at = 0;
      for (int i = 0; i < w.num_sge; ++i) {
        FUZZ_ASSERT(port().read(staging.data() + at, w.sge[i].addr, w.sge[i].length, &err) == 0);
        at += w.sge[i].length;
      }
    } else if (syndrome == 0 && w.opcode == mlx5::kOpcodeAtomicMaskedFa) {
      // The fetched value's store, as the requester does when the response arrives.
      const uint32_t fetched = 0x5a5a5a5a;
      std::string err;
      FUZZ_ASSERT(port().write(w.sge[0].addr, &fetched, 4, &err) == 0);
    }
    index += w.num_bbs;
    left -= w.num_bbs;
  }
  return 0;
}
