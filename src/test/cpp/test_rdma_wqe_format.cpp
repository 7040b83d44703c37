// test_rdma_wqe_format.cpp — te4j's mlx5 WQE/CQE bytes against independent sources.
//
//   ctrl / data segments    byte-compared with rdma-core's mlx5dv_set_ctrl_seg / _data_seg
//   raddr segment           against struct mlx5_wqe_raddr_seg filled field by field
//   masked FA 32-bit WQE    golden bytes from the PRM (opcode 0x15, opmod 0x08 | log2(4)-2)
//   RDMA READ WQE           golden bytes from the PRM (opcode 0x10), and the whole WQE against
//                           one assembled with mlx5dv_set_ctrl_seg / _data_seg and
//                           MLX5_OPCODE_RDMA_READ
//   CAS 64-bit WQE          golden bytes from the PRM (opcode 0x11, fenced), and the whole WQE
//                           against one assembled with mlx5dv_set_ctrl_seg / _data_seg,
//                           struct mlx5_wqe_atomic_seg, MLX5_OPCODE_ATOMIC_CS and
//                           MLX5_WQE_CTRL_FENCE (a notification's sequence word, docs/MLX5.md)
//   CQE field offsets and opcode/syndrome values against struct mlx5_cqe64 / mlx5_err_cqe
// The rdma-core parts need <infiniband/mlx5dv.h> (Debian: libibverbs-dev); without it they
// print SKIP with the reason. The PRM golden bytes always run.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>

#include "transport/device/ibgda_device.cuh"

#if __has_include(<infiniband/mlx5dv.h>)
#include <endian.h>
#include <infiniband/mlx5dv.h>
#define TE4J_HAVE_MLX5DV 1
#endif

using namespace mooncake::device;

static int failures = 0;

static void expectBytes(const char* what, const void* got, const void* want, size_t n) {
  if (std::memcmp(got, want, n) == 0) return;
  ++failures;
  std::printf("FAIL %s\n  got: ", what);
  for (size_t i = 0; i < n; ++i) std::printf("%02x", ((const uint8_t*)got)[i]);
  std::printf("\n want: ");
  for (size_t i = 0; i < n; ++i) std::printf("%02x", ((const uint8_t*)want)[i]);
  std::printf("\n");
}

static void expectEq(const char* what, long long got, long long want) {
  if (got == want) return;
  ++failures;
  std::printf("FAIL %s: got %lld want %lld\n", what, got, want);
}

// PRM-derived golden bytes of a complete masked FA 32-bit WQE (one WQEBB).
static void testMaskedFaGolden() {
  alignas(64) uint8_t wqe[64];
  std::memset(wqe, 0xee, sizeof(wqe));
  const uint64_t word =
      ibgda_build_masked_fa32(wqe, 0x1234, 0x00abcd, 0x1122334455667788ull, 0xdeadbeefu,
                              0x0102030405060708ull, 0xcafef00du, 5u, 0u);
  const uint8_t golden[64] = {
      0x08, 0x12, 0x34, 0x15,  // opmod 0x08 (ext atomic, 4 bytes) | wqe index | opcode 0x15
      0x00, 0xab, 0xcd, 0x04,  // qpn | ds = 4 (ctrl, raddr, atomic, data)
      0x00, 0x00, 0x00, 0x08,  // signature, dci stream id, fm_ce_se = CQ_UPDATE
      0x00, 0x00, 0x00, 0x00,  // imm
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  // raddr
      0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x00,  // rkey, reserved
      0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00,  // add data, field boundary
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // reserved (pads the segment to 16 B)
      0x00, 0x00, 0x00, 0x04, 0xca, 0xfe, 0xf0, 0x0d,  // byte count 4, lkey
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // fetch address
  };
  expectBytes("masked FA 32 WQE vs PRM golden bytes", wqe, golden, 64);
  // The doorbell word comes from registers, and must be what the ring holds.
  expectBytes("masked FA doorbell word = the WQE's first 8 bytes", &word, golden, 8);
}

// RDMA WRITE: ds = 3, and the unused last 16 bytes of the WQEBB are left alone.
static void testWriteShape() {
  alignas(64) uint8_t wqe[64];
  std::memset(wqe, 0xee, sizeof(wqe));
  const uint64_t word = ibgda_build_rdma_write(wqe, 7, 0x123, 0xa0, 0x55, 0xb0, 0x66, 100);
  const uint8_t ctrl[8] = {0x00, 0x00, 0x07, 0x08, 0x00, 0x01, 0x23, 0x03};
  expectBytes("WRITE ctrl first 8 bytes", wqe, ctrl, 8);
  expectBytes("WRITE doorbell word = the WQE's first 8 bytes", &word, ctrl, 8);
  uint8_t tail[16];
  std::memset(tail, 0xee, sizeof(tail));
  expectBytes("WRITE leaves bytes 48..63", wqe + 48, tail, 16);
}

// RDMA READ: one WQEBB, ds = 3, opcode 0x10, CQ_UPDATE; the data segment is the local scatter
// entry.
static void testReadGolden() {
  alignas(64) uint8_t wqe[64];
  std::memset(wqe, 0xee, sizeof(wqe));
  const uint64_t word =
      ibgda_build_rdma_read(wqe, 0xbeef, 0x00c0de, 0x0011223344556677ull, 0x89abcdefu,
                            0x8877665544332211ull, 0x01234567u, 0x00100000u);
  const uint8_t golden[48] = {
      0x00, 0xbe, 0xef, 0x10,  // opmod 0 | wqe index | opcode 0x10 (RDMA READ)
      0x00, 0xc0, 0xde, 0x03,  // qpn | ds = 3 (ctrl, raddr, data)
      0x00, 0x00, 0x00, 0x08,  // signature, dci stream id, fm_ce_se = CQ_UPDATE
      0x00, 0x00, 0x00, 0x00,  // imm
      0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,  // raddr (the source)
      0x89, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x00,  // rkey, reserved
      0x00, 0x10, 0x00, 0x00, 0x01, 0x23, 0x45, 0x67,  // byte count 1 MiB, lkey
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // local address (the destination)
  };
  expectBytes("READ WQE vs PRM golden bytes", wqe, golden, 48);
  expectBytes("READ doorbell word = the WQE's first 8 bytes", &word, golden, 8);
  uint8_t tail[16];
  std::memset(tail, 0xee, sizeof(tail));
  expectBytes("READ leaves bytes 48..63", wqe + 48, tail, 16);
}

// 8-byte compare-and-swap, fenced: one WQEBB, ds = 4, opcode 0x11, opmod 0, fm_ce_se = FENCE |
// CQ_UPDATE; operands swap then compare; the data segment receives the 8-byte old value.
static void testCompareSwapGolden() {
  alignas(64) uint8_t wqe[64];
  std::memset(wqe, 0xee, sizeof(wqe));
  const uint64_t word = ibgda_build_atomic_cs64(
      wqe, 0x0102, 0x00beef, 0x1122334455667788ull, 0x0badf00du, 0x99aabbccddeeff00ull, 0x13579bdfu,
      0x0000000000000009ull, 0x0000000000000011ull, mlx5::kCtrlFence);
  const uint8_t golden[64] = {
      0x00, 0x01, 0x02, 0x11,  // opmod 0 | wqe index | opcode 0x11 (ATOMIC_CS)
      0x00, 0xbe, 0xef, 0x04,  // qpn | ds = 4 (ctrl, raddr, atomic, data)
      0x00, 0x00, 0x00, 0x88,  // signature, dci stream id, fm_ce_se = FENCE (4 << 5) | CQ_UPDATE
      0x00, 0x00, 0x00, 0x00,  // imm
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  // raddr (the word)
      0x0b, 0xad, 0xf0, 0x0d, 0x00, 0x00, 0x00, 0x00,  // rkey, reserved
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11,  // swap: the new value
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09,  // compare: the value expected there
      0x00, 0x00, 0x00, 0x08, 0x13, 0x57, 0x9b, 0xdf,  // byte count 8, lkey
      0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00,  // where the old value lands
  };
  expectBytes("CAS 64 WQE vs PRM golden bytes", wqe, golden, 64);
  expectBytes("CAS 64 doorbell word = the WQE's first 8 bytes", &word, golden, 8);
  // Without the fence only CQ_UPDATE is set.
  ibgda_build_atomic_cs64(wqe, 0x0102, 0x00beef, 0, 1, 0, 1, 0, 1, 0);
  expectEq("CAS 64 unfenced fm_ce_se", wqe[11], mlx5::kCtrlCqUpdate);
}

#if defined(TE4J_HAVE_MLX5DV)
// The whole fenced CAS WQE as rdma-core's helpers and structs assemble it, for random fields.
static void testCompareSwapAgainstRdmaCore() {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 1000; ++i) {
    const uint16_t pi = (uint16_t)rng();
    const uint32_t qpn = (uint32_t)rng() & 0xffffffu, rkey = (uint32_t)rng(),
                   lkey = (uint32_t)rng();
    const uint64_t raddr = rng() & ~7ull, fetch = rng(), compare = rng(), swap = rng();
    alignas(64) uint8_t theirs[64];
    std::memset(theirs, 0, sizeof(theirs));
    mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg*)theirs, pi, MLX5_OPCODE_ATOMIC_CS, 0, qpn,
                        MLX5_WQE_CTRL_CQ_UPDATE | MLX5_WQE_CTRL_FENCE, 4, 0, 0);
    struct mlx5_wqe_raddr_seg* r = (struct mlx5_wqe_raddr_seg*)(theirs + 16);
    r->raddr = htobe64(raddr);
    r->rkey = htobe32(rkey);
    r->reserved = 0;
    struct mlx5_wqe_atomic_seg* a = (struct mlx5_wqe_atomic_seg*)(theirs + 32);
    a->swap_add = htobe64(swap);
    a->compare = htobe64(compare);
    mlx5dv_set_data_seg((struct mlx5_wqe_data_seg*)(theirs + 48), 8, lkey, (uintptr_t)fetch);
    alignas(64) uint8_t ours[64];
    std::memset(ours, 0, sizeof(ours));
    const uint64_t word = ibgda_build_atomic_cs64(ours, pi, qpn, raddr, rkey, fetch, lkey, compare,
                                                  swap, mlx5::kCtrlFence);
    expectBytes("CAS 64 WQE vs rdma-core's assembly", ours, theirs, 64);
    expectBytes("CAS 64 doorbell word vs rdma-core's ctrl segment", &word, theirs, 8);
  }
  expectEq("CAS opcode", mlx5::kOpcodeAtomicCs, MLX5_OPCODE_ATOMIC_CS);
  expectEq("fence flag", mlx5::kCtrlFence, MLX5_WQE_CTRL_FENCE);
  expectEq("CQ update flag", mlx5::kCtrlCqUpdate, MLX5_WQE_CTRL_CQ_UPDATE);
  expectEq("sizeof atomic", sizeof(mlx5::AtomicSeg), sizeof(struct mlx5_wqe_atomic_seg));
  expectEq("swap_add offset", offsetof(mlx5::AtomicSeg, swap_add),
           offsetof(struct mlx5_wqe_atomic_seg, swap_add));
  expectEq("compare offset", offsetof(mlx5::AtomicSeg, compare),
           offsetof(struct mlx5_wqe_atomic_seg, compare));
}

// The whole READ WQE as rdma-core's helpers assemble it, for random fields.
static void testReadAgainstRdmaCore() {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint16_t pi = (uint16_t)rng();
    const uint32_t qpn = (uint32_t)rng() & 0xffffffu, rkey = (uint32_t)rng(),
                   lkey = (uint32_t)rng();
    const uint64_t raddr = rng(), laddr = rng();
    const uint32_t len = 1 + (uint32_t)(rng() % 0x7fffffffu);
    alignas(64) uint8_t theirs[48];
    std::memset(theirs, 0, sizeof(theirs));
    mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg*)theirs, pi, MLX5_OPCODE_RDMA_READ, 0, qpn,
                        MLX5_WQE_CTRL_CQ_UPDATE, 3, 0, 0);
    struct mlx5_wqe_raddr_seg* r = (struct mlx5_wqe_raddr_seg*)(theirs + 16);
    r->raddr = htobe64(raddr);
    r->rkey = htobe32(rkey);
    r->reserved = 0;
    mlx5dv_set_data_seg((struct mlx5_wqe_data_seg*)(theirs + 32), len, lkey, (uintptr_t)laddr);
    alignas(64) uint8_t ours[64];
    std::memset(ours, 0, sizeof(ours));
    const uint64_t word = ibgda_build_rdma_read(ours, pi, qpn, raddr, rkey, laddr, lkey, len);
    expectBytes("READ WQE vs rdma-core's assembly", ours, theirs, 48);
    expectBytes("READ doorbell word vs rdma-core's ctrl segment", &word, theirs, 8);
  }
  expectEq("READ opcode", mlx5::kOpcodeRdmaRead, MLX5_OPCODE_RDMA_READ);
}

static void testAgainstRdmaCore() {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 1000; ++i) {
    const uint16_t pi = (uint16_t)rng();
    const uint8_t opcode = (uint8_t)rng(), opmod = (uint8_t)rng(), fm = (uint8_t)rng();
    const uint8_t ds = (uint8_t)(rng() & 0x3f), sig = (uint8_t)rng();
    const uint32_t qpn = (uint32_t)rng() & 0xffffffu, imm = (uint32_t)rng();
    struct mlx5_wqe_ctrl_seg theirs;
    std::memset(&theirs, 0, sizeof(theirs));
    mlx5dv_set_ctrl_seg(&theirs, pi, opcode, opmod, qpn, fm, ds, sig, imm);
    mlx5::CtrlSeg ours;
    mlx5::set_ctrl_seg(&ours, pi, opcode, opmod, qpn, fm, ds, sig, imm);
    expectBytes("ctrl segment vs mlx5dv_set_ctrl_seg", &ours, &theirs, 16);
    const uint64_t word = mlx5::ctrl_doorbell_word(pi, opcode, opmod, qpn, ds);
    expectBytes("doorbell word vs mlx5dv_set_ctrl_seg's first 8 bytes", &word, &theirs, 8);

    const uint32_t len = (uint32_t)rng(), lkey = (uint32_t)rng();
    const uint64_t addr = rng();
    struct mlx5_wqe_data_seg dtheirs;
    mlx5dv_set_data_seg(&dtheirs, len, lkey, (uintptr_t)addr);
    mlx5::DataSeg dours;
    mlx5::set_data_seg(&dours, len, lkey, addr);
    expectBytes("data segment vs mlx5dv_set_data_seg", &dours, &dtheirs, 16);

    const uint64_t raddr = rng();
    const uint32_t rkey = (uint32_t)rng();
    struct mlx5_wqe_raddr_seg rtheirs;
    rtheirs.raddr = htobe64(raddr);
    rtheirs.rkey = htobe32(rkey);
    rtheirs.reserved = 0;
    mlx5::RaddrSeg rours;
    mlx5::set_raddr_seg(&rours, raddr, rkey);
    expectBytes("raddr segment vs struct mlx5_wqe_raddr_seg", &rours, &rtheirs, 16);
  }
  expectEq("sizeof ctrl", sizeof(mlx5::CtrlSeg), sizeof(struct mlx5_wqe_ctrl_seg));
  expectEq("sizeof data", sizeof(mlx5::DataSeg), sizeof(struct mlx5_wqe_data_seg));
  expectEq("sizeof raddr", sizeof(mlx5::RaddrSeg), sizeof(struct mlx5_wqe_raddr_seg));
  expectEq("atomic seg is 16 B", sizeof(mlx5::MaskedFa32Seg), sizeof(struct mlx5_wqe_atomic_seg));

  // CQE layout: te4j reads words 11, 13, 14, 15.
  expectEq("byte_cnt offset", offsetof(struct mlx5_cqe64, byte_cnt), mlx5::kCqeDwByteCnt * 4);
  expectEq("sop_drop_qpn offset", offsetof(struct mlx5_cqe64, sop_drop_qpn),
           mlx5::kCqeDwOpcodeQpn * 4);
  expectEq("wqe_counter offset", offsetof(struct mlx5_cqe64, wqe_counter), mlx5::kCqeDwOwner * 4);
  expectEq("op_own offset", offsetof(struct mlx5_cqe64, op_own), 63);
  expectEq("err syndrome offset", offsetof(struct mlx5_err_cqe, syndrome),
           mlx5::kCqeDwSyndrome * 4 + 3);
  expectEq("err vendor offset", offsetof(struct mlx5_err_cqe, vendor_err_synd),
           mlx5::kCqeDwSyndrome * 4 + 2);
  // A CQE as rdma-core's consumer sees it, decoded by te4j.
  struct mlx5_err_cqe e;
  std::memset(&e, 0, sizeof(e));
  e.syndrome = MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR;
  e.vendor_err_synd = 0x77;
  e.wqe_counter = htobe16(0xbeef);
  e.op_own = (MLX5_CQE_REQ_ERR << 4) | 1;
  mlx5::Cqe64 c;
  std::memcpy(&c, &e, 64);
  expectEq("decoded opcode", mlx5::cqe_opcode(c.dw[15]), MLX5_CQE_REQ_ERR);
  expectEq("decoded wqe_counter", mlx5::cqe_wqe_counter(c.dw[15]), 0xbeef);
  expectEq("decoded syndrome", mlx5::cqe_syndrome(c.dw[13]), MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  expectEq("decoded vendor syndrome", mlx5::cqe_vendor_syndrome(c.dw[13]), 0x77);
  expectEq("owner bit ready on pass 1", mlx5::cqe_ready(c.dw[15], 64, 64), 1);
  expectEq("owner bit not ready on pass 0", mlx5::cqe_ready(c.dw[15], 0, 64), 0);
  const uint32_t dw15 = mlx5::cqe_make_dw15(0x1234, MLX5_CQE_REQ, 1);
  struct mlx5_cqe64 produced;
  std::memcpy((uint8_t*)&produced + 60, &dw15, 4);
  expectEq("produced wqe_counter", be16toh(produced.wqe_counter), 0x1234);
  expectEq("produced op_own", produced.op_own, (MLX5_CQE_REQ << 4) | 1);

  // Constants.
  expectEq("WRITE", mlx5::kOpcodeRdmaWrite, MLX5_OPCODE_RDMA_WRITE);
  expectEq("MASKED_FA", mlx5::kOpcodeAtomicMaskedFa, MLX5_OPCODE_ATOMIC_MASKED_FA);
  expectEq("NOP", mlx5::kOpcodeNop, MLX5_OPCODE_NOP);
  expectEq("CQ_UPDATE", mlx5::kCtrlCqUpdate, MLX5_WQE_CTRL_CQ_UPDATE);
  expectEq("FENCE", mlx5::kCtrlFence, MLX5_WQE_CTRL_FENCE);
  expectEq("WQEBB", mlx5::kSendWqeBB, MLX5_SEND_WQE_BB);
  expectEq("CQE_REQ", mlx5::kCqeReq, MLX5_CQE_REQ);
  expectEq("CQE_REQ_ERR", mlx5::kCqeReqErr, MLX5_CQE_REQ_ERR);
  expectEq("CQE_INVALID", mlx5::kCqeInvalid, MLX5_CQE_INVALID);
  expectEq("REMOTE_ACCESS", mlx5::kSyndromeRemoteAccessErr, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
  expectEq("REMOTE_OP", mlx5::kSyndromeRemoteOpErr, MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
  expectEq("REMOTE_INVAL_REQ", mlx5::kSyndromeRemoteInvalReqErr,
           MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
  expectEq("LOCAL_PROT", mlx5::kSyndromeLocalProtErr, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR);
  expectEq("LOCAL_QP_OP", mlx5::kSyndromeLocalQpOpErr, MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
  expectEq("LOCAL_LENGTH", mlx5::kSyndromeLocalLengthErr, MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR);
  expectEq("WR_FLUSH", mlx5::kSyndromeWrFlushErr, MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
  expectEq("TRANSPORT_RETRY", mlx5::kSyndromeTransportRetryExcErr,
           MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR);
  expectEq("SND_DBR", mlx5::kSndDbr, MLX5_SND_DBR);
}
#endif

int main() {
  testMaskedFaGolden();
  testWriteShape();
  testReadGolden();
  testCompareSwapGolden();
#if defined(TE4J_HAVE_MLX5DV)
  testAgainstRdmaCore();
  testReadAgainstRdmaCore();
  testCompareSwapAgainstRdmaCore();
#else
  std::printf(
      "SKIP rdma-core comparisons: <infiniband/mlx5dv.h> not found (install libibverbs-dev)\n");
#endif
  std::printf("%s test_rdma_wqe_format (%d failures)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
