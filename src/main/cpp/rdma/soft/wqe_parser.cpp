// wqe_parser.cpp — see wqe_parser.h.
#include "rdma/soft/wqe_parser.h"

#include <cstring>

#include "transport/device/ibgda/mlx5_defs.cuh"

namespace te4j {
namespace rdma {

namespace mlx5 = mooncake::device::mlx5;

namespace {

uint32_t be32(const uint8_t* p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
uint64_t be64(const uint8_t* p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

// Copies n bytes starting at byte `offset` of the ring, wrapping at ring_bytes.
void copyFromRing(const uint8_t* ring, uint32_t ring_bytes, uint32_t offset, uint8_t* dst,
                  uint32_t n) {
  for (uint32_t done = 0; done < n;) {
    const uint32_t at = (offset + done) % ring_bytes;
    uint32_t len = ring_bytes - at;
    if (len > n - done) len = n - done;
    std::memcpy(dst + done, ring + at, len);
    done += len;
  }
}

bool parseSge(const uint8_t* seg, ParsedSge* sge) {
  const uint32_t byte_count = be32(seg);
  if (byte_count & mlx5::kInlineSeg) return false;  // inline data: not supported here
  // A zero byte_count stands for 2 GiB in mlx5 memory-pointer segments.
  sge->length = byte_count == 0 ? 0x80000000u : byte_count;
  sge->lkey = be32(seg + 4);
  sge->addr = be64(seg + 8);
  return true;
}

}  // namespace

bool ParsedWqe::signaled() const { return (fm_ce_se & mlx5::kCtrlCqUpdate) != 0; }

void parseWqe(const uint8_t* ring, uint32_t ring_mask, uint32_t index, uint32_t qpn,
              ParsedWqe* out) {
  *out = ParsedWqe();
  const uint32_t ring_bytes = (ring_mask + 1) * mlx5::kSendWqeBB;
  const uint32_t start = (index & ring_mask) * mlx5::kSendWqeBB;
  uint8_t wqe[64 * 16];  // ds is 6 bits: at most 63 x 16 bytes
  copyFromRing(ring, ring_bytes, start, wqe, 16);

  const uint32_t w0 = be32(wqe);
  const uint32_t w1 = be32(wqe + 4);
  out->opmod = (uint8_t)(w0 >> 24);
  out->wqe_index = (uint16_t)(w0 >> 8);
  out->opcode = (uint8_t)w0;
  out->qpn = w1 >> 8;
  out->ds = (uint8_t)(w1 & 0x3f);
  out->fm_ce_se = wqe[11];
  if (out->ds != 0) out->num_bbs = (out->ds * 16u + mlx5::kSendWqeBB - 1) / mlx5::kSendWqeBB;

  if (out->ds == 0 || out->qpn != qpn || out->wqe_index != (uint16_t)index) {
    out->syndrome = mlx5::kSyndromeLocalQpOpErr;
    out->num_bbs = 1;
    return;
  }
  if (out->num_bbs > ring_mask + 1) {
    out->syndrome = mlx5::kSyndromeLocalLengthErr;
    out->num_bbs = 1;
    return;
  }
  copyFromRing(ring, ring_bytes, start, wqe, out->ds * 16u);

  switch (out->opcode) {
    case mlx5::kOpcodeNop: return;
    case mlx5::kOpcodeRdmaWrite:
    case mlx5::kOpcodeRdmaRead: {  // same layout: ctrl | raddr | gather (WRITE) or scatter (READ)
      if (out->ds < 2) {
        out->syndrome = mlx5::kSyndromeLocalLengthErr;
        return;
      }
      out->raddr = be64(wqe + 16);
      out->rkey = be32(wqe + 24);
      const int n = out->ds - 2;
      if (n > kMaxSge) {
        out->syndrome = mlx5::kSyndromeLocalLengthErr;
        return;
      }
      for (int i = 0; i < n; ++i) {
        if (!parseSge(wqe + 32 + 16 * i, &out->sge[i])) {
          out->syndrome = mlx5::kSyndromeLocalQpOpErr;
          return;
        }
        out->total_length += out->sge[i].length;
      }
      out->num_sge = n;
      if (out->total_length > mlx5::kMaxMessageBytes) out->syndrome = mlx5::kSyndromeLocalLengthErr;
      return;
    }
    case mlx5::kOpcodeAtomicMaskedFa: {
      if (out->opmod != mlx5::kOpmodExtAtomic32) {
        out->syndrome = mlx5::kSyndromeLocalQpOpErr;
        return;
      }
      if (out->ds != 4) {
        out->syndrome = mlx5::kSyndromeLocalLengthErr;
        return;
      }
      out->raddr = be64(wqe + 16);
      out->rkey = be32(wqe + 24);
      out->add = be32(wqe + 32);
      out->field_boundary = be32(wqe + 36);
      if (!parseSge(wqe + 48, &out->sge[0])) {
        out->syndrome = mlx5::kSyndromeLocalQpOpErr;
        return;
      }
      out->num_sge = 1;
      out->total_length = out->sge[0].length;
      if (out->sge[0].length != 4) out->syndrome = mlx5::kSyndromeLocalLengthErr;
      return;
    }
    default: out->syndrome = mlx5::kSyndromeLocalQpOpErr; return;
  }
}

}  // namespace rdma
}  // namespace te4j
