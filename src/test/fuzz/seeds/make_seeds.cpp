// make_seeds.cpp — writes the seed corpus of the fuzz targets: valid encodings made with the
// library's own encoders (frames, WQEs, handles) plus the edge cases next to each limit. The
// output is checked in under src/test/fuzz/corpus/<target>/; run again when a format changes:
//   build/fuzz/fuzz_seeds src/test/fuzz/corpus
// Inputs use the fixed addresses, keys and nonce of fuzz_support.h, so they stay valid in every
// run. Handle seeds carry choice bits (see fuzz_handle_blob.cpp), not this process's pid.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../fuzz_support.h"
#include "p2p/handle_blob.h"
#include "p2p/host_p2p_transport.h"
#include "rdma/soft/hmac_sha256.h"
#include "rdma/soft/wire_format.h"
#include "transport/device/ibgda/mlx5_defs.cuh"

using namespace te4j::rdma;
namespace fz = te4j::fuzz;
namespace mlx5 = mooncake::device::mlx5;

namespace {

std::string g_root;
int g_written = 0;

void save(const char* target, const char* name, const std::vector<uint8_t>& bytes) {
  const std::string dir = g_root + "/" + target;
  mkdir(g_root.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fclose(f);
  ++g_written;
}

void append(std::vector<uint8_t>* out, const void* p, size_t n) {
  out->insert(out->end(), (const uint8_t*)p, (const uint8_t*)p + n);
}
void le32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back((uint8_t)(v >> (8 * i)));
}
void le16(std::vector<uint8_t>* out, uint16_t v) {
  out->push_back((uint8_t)v);
  out->push_back((uint8_t)(v >> 8));
}

// ---- wire frames ---------------------------------------------------------------------------

void frame(std::vector<uint8_t>* out, const Frame& f, const void* payload = nullptr, size_t n = 0) {
  uint8_t h[kFrameHeaderBytes];
  encodeFrame(f, h);
  append(out, h, sizeof(h));
  if (n > 0) append(out, payload, n);
}

void hello(std::vector<uint8_t>* out, bool good_mac) {
  Frame f;
  f.type = kFrameHello;
  f.seq = 1;    // src rank
  f.rkey = 0;   // dst rank
  f.raddr = 2;  // num ranks
  f.length = kMacBytes;
  f.src_qpn = 0x11223344;
  f.dst_qpn = 0x55667788;
  f.arg0 = 0x99aabbcc;
  f.arg1 = 0xddeeff00;
  uint8_t h[kFrameHeaderBytes];
  encodeFrame(f, h);
  static const char kLabel[] = "te4j-nic-hello";
  const void* parts[] = {kLabel, fz::kNonce, h};
  const size_t lengths[] = {sizeof(kLabel) - 1, kNonceBytes, kFrameHeaderBytes};
  uint8_t mac[kMacBytes];
  hmacSha256(fz::kKey, sizeof(fz::kKey), parts, lengths, 3, mac);
  if (!good_mac) mac[7] ^= 0x40;
  append(out, h, sizeof(h));
  append(out, mac, sizeof(mac));
}

Frame write(uint32_t key, uint64_t raddr, uint32_t length) {
  Frame f;
  f.type = kFrameWrite;
  f.src_qpn = 0x101;
  f.dst_qpn = 0x202;
  f.seq = 7;
  f.rkey = key;
  f.raddr = raddr;
  f.length = length;
  return f;
}

Frame fetchAdd(uint32_t key, uint64_t raddr, uint32_t add, uint32_t boundary) {
  Frame f;
  f.type = kFrameMaskedFa32;
  f.src_qpn = 0x101;
  f.dst_qpn = 0x202;
  f.seq = 8;
  f.rkey = key;
  f.raddr = raddr;
  f.arg0 = add;
  f.arg1 = boundary;
  return f;
}

void wireSeeds() {
  fz::Arena& a = fz::arena();
  const char* t = "fuzz_wire_frame";
  const std::vector<uint8_t> data(64, 0xab);
  std::vector<uint8_t> s;

  hello(&s, true);
  frame(&s, write(a.key_a, fz::kRegionA, 16), data.data(), 16);
  frame(&s, fetchAdd(a.key_a, fz::kRegionA + 64, 1, 0));
  frame(&s, write(a.key_b, fz::kRegionB, 64), data.data(), 64);
  frame(&s, fetchAdd(a.key_b, fz::kRegionB, 1, 0));  // B allows no atomics: refused
  save(t, "session_hello_write_signal", s);

  s.clear();
  hello(&s, false);
  frame(&s, write(a.key_a, fz::kRegionA, 8), data.data(), 8);
  save(t, "hello_wrong_mac", s);

  s.clear();
  hello(&s, true);
  frame(&s, write(a.key_a, fz::kRegionA + fz::kRegionABytes - 8, 8), data.data(), 8);  // last bytes
  frame(&s, write(a.key_a, fz::kRegionA + fz::kRegionABytes - 8, 9), data.data(), 9);  // one past
  frame(&s, write(a.key_a, fz::kRegionA + fz::kRegionABytes, 0));  // empty, at end
  frame(&s, write(a.key_a, ~0ull - 3, 8), data.data(), 8);         // wraps
  frame(&s, write(a.key_a ^ 1, fz::kRegionA, 8), data.data(), 8);  // stale tag
  save(t, "writes_at_the_edges", s);

  s.clear();
  hello(&s, true);
  frame(&s, fetchAdd(a.key_a, fz::kRegionA + fz::kRegionABytes - 4, 0xffff, 0x8000));  // last word
  frame(&s, fetchAdd(a.key_a, fz::kRegionA + 2, 1, 0));                                // unaligned
  frame(&s, fetchAdd(a.key_a, fz::kRegionA + fz::kRegionABytes, 1, 0));  // past the end
  save(t, "atomics_at_the_edges", s);

  s.clear();
  hello(&s, true);
  frame(&s, write(a.key_a, fz::kRegionA, kMaxFramePayload), data.data(),
        64);  // ends in the payload
  save(t, "write_truncated", s);

  s.clear();
  hello(&s, true);
  Frame too_long = write(a.key_a, fz::kRegionA, kMaxFramePayload + 1);
  frame(&s, too_long);
  save(t, "write_over_the_limit", s);

  // Headers a decoder must refuse, one per reason.
  s.clear();
  Frame f = write(a.key_a, fz::kRegionA, 0);
  uint8_t h[kFrameHeaderBytes];
  encodeFrame(f, h);
  h[0] ^= 1;
  append(&s, h, sizeof(h));
  save(t, "bad_magic", s);
  s.clear();
  encodeFrame(f, h);
  h[4] = 1;  // version 1
  append(&s, h, sizeof(h));
  save(t, "old_version", s);
  s.clear();
  f.type = 7;
  encodeFrame(f, h);
  append(&s, h, sizeof(h));
  save(t, "unknown_type", s);
  s.clear();
  Frame resp;
  resp.type = kFrameResponse;
  resp.length = 4;  // a response carries no payload
  frame(&s, resp);
  save(t, "response_with_length", s);
  s.clear();
  Frame challenge;
  challenge.type = kFrameChallenge;
  challenge.length = kNonceBytes;
  frame(&s, challenge, fz::kNonce, kNonceBytes);
  save(t, "challenge_as_request", s);
}

// ---- WQE rings -----------------------------------------------------------------------------

void be32(uint8_t* p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}
void be64(uint8_t* p, uint64_t v) {
  be32(p, (uint32_t)(v >> 32));
  be32(p + 4, (uint32_t)v);
}

// Writes a WQE at WQEBB `bb` of the ring (wrapping), ds 16-byte units from `wqe`.
void place(std::vector<uint8_t>* ring, uint32_t bb, const uint8_t* wqe, uint32_t ds) {
  const size_t bytes = ring->size();
  for (uint32_t i = 0; i < ds * 16; ++i) (*ring)[(bb * 64 + i) % bytes] = wqe[i];
}

void ctrl(uint8_t* w, uint8_t opcode, uint8_t opmod, uint16_t index, uint32_t qpn, uint8_t ds) {
  be32(w, (uint32_t)opmod << 24 | (uint32_t)index << 8 | opcode);
  be32(w + 4, qpn << 8 | ds);
  w[11] = mlx5::kCtrlCqUpdate;
}

void dataSeg(uint8_t* p, uint32_t byte_count, uint32_t lkey, uint64_t addr) {
  be32(p, byte_count);
  be32(p + 4, lkey);
  be64(p + 8, addr);
}

std::vector<uint8_t> ringInput(uint8_t log2_bbs, uint32_t index, uint32_t qpn, uint16_t pending,
                               const std::vector<uint8_t>& ring) {
  std::vector<uint8_t> s;
  s.push_back(log2_bbs);
  le32(&s, index);
  le32(&s, qpn);
  le16(&s, pending);
  append(&s, ring.data(), ring.size());
  return s;
}

void wqeSeeds() {
  fz::Arena& a = fz::arena();
  const char* t = "fuzz_wqe_parser";
  constexpr uint32_t kQpn = 0x000123;
  uint8_t w[64 * 16];

  // A put + signal as the device code posts them: WRITE (1 SGE), then masked FA, then a NOP.
  std::vector<uint8_t> ring(8 * 64, 0);
  std::memset(w, 0, sizeof(w));
  ctrl(w, mlx5::kOpcodeRdmaWrite, 0, 0, kQpn, 3);
  be64(w + 16, 0x7f0000001000ull);
  be32(w + 24, 0x1234);
  dataSeg(w + 32, 256, a.key_a, fz::kRegionA);
  place(&ring, 0, w, 3);
  std::memset(w, 0, sizeof(w));
  ctrl(w, mlx5::kOpcodeAtomicMaskedFa, mlx5::kOpmodExtAtomic32, 1, kQpn, 4);
  be64(w + 16, 0x7f0000002000ull);
  be32(w + 24, 0x1234);
  be32(w + 32, 1);
  be32(w + 36, 0);
  dataSeg(w + 48, 4, a.key_a, fz::kRegionA + 64);
  place(&ring, 1, w, 4);
  std::memset(w, 0, sizeof(w));
  ctrl(w, mlx5::kOpcodeNop, 0, 2, kQpn, 1);
  place(&ring, 2, w, 1);
  save(t, "write_fa_nop", ringInput(3, 0, kQpn, 3, ring));

  // A gather list of 5 entries (2 WQEBBs), the last one ending at the region's end, starting
  // at the ring's last WQEBB so it wraps.
  ring.assign(4 * 64, 0);
  std::memset(w, 0, sizeof(w));
  ctrl(w, mlx5::kOpcodeRdmaWrite, 0, 3, kQpn, 7);
  be64(w + 16, 0x7f0000001000ull);
  be32(w + 24, 0x1234);
  for (int i = 0; i < 5; ++i)
    dataSeg(w + 32 + 16 * i, 512, a.key_a, fz::kRegionA + fz::kRegionABytes - 512 * (5 - i));
  place(&ring, 3, w, 7);
  save(t, "gather_wrapping", ringInput(2, 3, kQpn, 2, ring));

  // The longest WQE: 30 SGEs (ds 32, 8 WQEBBs) in a ring of 8.
  ring.assign(8 * 64, 0);
  std::memset(w, 0, sizeof(w));
  ctrl(w, mlx5::kOpcodeRdmaWrite, 0, 0, kQpn, 32);
  for (int i = 0; i < 30; ++i) dataSeg(w + 32 + 16 * i, 4, a.key_a, fz::kRegionA + 4 * i);
  place(&ring, 0, w, 32);
  save(t, "thirty_sges", ringInput(3, 0, kQpn, 8, ring));

  // Edge cases, each alone in a ring of 2.
  struct Edge {
    const char* name;
    uint8_t opcode, opmod, ds;
    uint32_t byte_count, lkey;
    uint64_t addr;
  } edges[] = {
      {"sge_past_region", mlx5::kOpcodeRdmaWrite, 0, 3, 8, a.key_a,
       fz::kRegionA + fz::kRegionABytes - 4},
      {"sge_zero_means_2g", mlx5::kOpcodeRdmaWrite, 0, 3, 0, a.key_a, fz::kRegionA},
      {"sge_inline", mlx5::kOpcodeRdmaWrite, 0, 3, mlx5::kInlineSeg | 8, a.key_a, fz::kRegionA},
      {"sge_remote_only_region", mlx5::kOpcodeRdmaWrite, 0, 3, 8, a.key_b, fz::kRegionB},
      {"write_without_sge", mlx5::kOpcodeRdmaWrite, 0, 2, 0, 0, 0},
      {"write_ds1", mlx5::kOpcodeRdmaWrite, 0, 1, 0, 0, 0},
      {"fa_wrong_opmod", mlx5::kOpcodeAtomicMaskedFa, 0, 4, 4, a.key_a, fz::kRegionA},
      {"fa_ds3", mlx5::kOpcodeAtomicMaskedFa, mlx5::kOpmodExtAtomic32, 3, 4, a.key_a, fz::kRegionA},
      {"fa_sge8", mlx5::kOpcodeAtomicMaskedFa, mlx5::kOpmodExtAtomic32, 4, 8, a.key_a,
       fz::kRegionA},
      {"read_opcode", mlx5::kOpcodeRdmaRead, 0, 3, 8, a.key_a, fz::kRegionA},
      {"ds0", mlx5::kOpcodeNop, 0, 0, 0, 0, 0},
      {"ds63", mlx5::kOpcodeRdmaWrite, 0, 63, 8, a.key_a, fz::kRegionA},
  };
  for (const Edge& e : edges) {
    ring.assign(2 * 64, 0);
    std::memset(w, 0, sizeof(w));
    ctrl(w, e.opcode, e.opmod, 0, kQpn, e.ds);
    const int at = e.opcode == mlx5::kOpcodeAtomicMaskedFa ? 48 : 32;
    if (e.ds * 16 >= (unsigned)at + 16) dataSeg(w + at, e.byte_count, e.lkey, e.addr);
    place(&ring, 0, w, e.ds > 8 ? 8 : (e.ds == 0 ? 1 : e.ds));
    save(t, e.name, ringInput(1, 0, kQpn, 2, ring));
  }
  ring.assign(2 * 64, 0);
  std::memset(w, 0, sizeof(w));
  ctrl(w, mlx5::kOpcodeNop, 0, 5, kQpn + 1, 1);  // another QP's, another index
  place(&ring, 0, w, 1);
  save(t, "foreign_qpn", ringInput(1, 0, kQpn, 1, ring));
}

// ---- handle blobs --------------------------------------------------------------------------

void handleRow(std::vector<uint8_t>* s, uint8_t choice, int32_t fill) {
  s->push_back(choice);
  for (int i = 0; i < te4j::kHostHandleInts; ++i) le32(s, (uint32_t)fill);
}

void handleSeeds() {
  const char* t = "fuzz_handle_blob";
  // rank, num_ranks byte (<200: the transport's 4), mask, size class, then 4 rows, then the
  // direct check's platform and expected-size choice.
  auto start = [](uint8_t rank, uint8_t ranks, uint8_t mask, uint8_t size_class) {
    return std::vector<uint8_t>{rank, ranks, mask, size_class};
  };
  std::vector<uint8_t> s = start(0, 0, 0x3, 1);
  handleRow(&s, 0, 0);
  handleRow(&s, 0x1 | 0x2 | 0x4 | (1 << 4), 0);  // rank 1: another transport's real segment
  handleRow(&s, 0, 0);
  handleRow(&s, 0, 0);
  s.push_back(0);
  s.push_back(0);
  save(t, "import_peer_segment", s);

  s = start(2, 0, 0xf, 0);
  for (int r = 0; r < 4; ++r) handleRow(&s, 0x7 | (0 << 4), 0);
  s.push_back(0);
  s.push_back(0);
  save(t, "import_all_ranks", s);

  s = start(0, 0, 0x3, 2);
  handleRow(&s, 0, 0);
  handleRow(&s, 0x8 | 0x7, 0);  // the importer's own buffer as a peer's
  handleRow(&s, 0, 0);
  handleRow(&s, 0, 0);
  s.push_back(0);
  s.push_back(0);
  save(t, "import_own_buffer", s);

  s = start(0, 0, 0x3, 1);
  handleRow(&s, 0, 0);
  handleRow(&s, 0x1 | (1 << 4), 3);  // a real header, a forged fd and token
  handleRow(&s, 0, 0);
  handleRow(&s, 0, 0);
  s.push_back(0);
  s.push_back(0);
  save(t, "forged_fd_token", s);

  s = start(0, 0, 0x3, 1);
  handleRow(&s, 0, 0);
  handleRow(&s, 0x1 | 0x2 | 0x4 | (2 << 4), 0);  // a segment of another size
  handleRow(&s, 0, 0);
  handleRow(&s, 0, 0);
  s.push_back(1);
  s.push_back(200);
  for (int i = 0; i < 8; ++i) s.push_back(0xff);
  save(t, "size_mismatch", s);

  s = start(0, 0, 0x13, 1);  // a rank past num_ranks in the mask
  for (int r = 0; r < 4; ++r) handleRow(&s, 0x7, 0);
  save(t, "mask_past_ranks", s);
  s = start(0, 255, 0x3, 1);  // num_ranks 54, the transport has 4
  save(t, "num_ranks_mismatch", s);
  s = start(0, 200, 0x1, 1);  // num_ranks -1
  save(t, "num_ranks_negative", s);
  s = start(4, 0, 0x3, 1);  // rank past the end
  save(t, "rank_past_end", s);
  s = start(0, 0, 0x3, 3);
  for (int r = 0; r < 4; ++r) handleRow(&s, 0, -1);
  save(t, "junk", s);
}

// ---- RDMA metadata ------------------------------------------------------------------------

// One rank's fields (see fuzz_rdma_metadata.cpp): the choice byte, then raddr, rkey, lid,
// subnet prefix, interface id, 2 QP numbers and a 32-byte key.
void metaRow(std::vector<uint8_t>* s, uint8_t choice, uint64_t raddr, uint32_t rkey, uint32_t lid,
             uint64_t prefix, uint64_t ifid, uint32_t qpn) {
  s->push_back(choice);
  for (int i = 0; i < 8; ++i) s->push_back((uint8_t)(raddr >> (8 * i)));
  le32(s, rkey);
  le32(s, lid);
  for (int i = 0; i < 8; ++i) s->push_back((uint8_t)(prefix >> (8 * i)));
  for (int i = 0; i < 8; ++i) s->push_back((uint8_t)(ifid >> (8 * i)));
  le32(s, qpn);
  le32(s, qpn + 1);
  for (int i = 0; i < 32; ++i) s->push_back((uint8_t)(0xc0 + i));
}

void metadataSeeds() {
  const char* t = "fuzz_rdma_metadata";
  constexpr uint64_t kLoopback = 0x0000ffff7f000001ull;  // ::ffff:127.0.0.1
  // local rank, mask, is_roce (0 = RoCE), key mode (0 = both keys), then both ranks.
  auto start = [](uint8_t rank, uint8_t mask, uint8_t roce, uint8_t keys) {
    return std::vector<uint8_t>{rank, mask, roce, keys};
  };
  std::vector<uint8_t> s = start(0, 3, 0, 0);
  metaRow(&s, 0xf, 0, 0, 0, 0, 0, 0);  // every field the real one: connects
  metaRow(&s, 0xf, 0, 0, 0, 0, 0, 0);
  save(t, "both_ranks_real", s);
  s = start(0, 3, 0, 0);
  metaRow(&s, 0xf, 0, 0, 0, 0, 0, 0);
  metaRow(&s, 0x1 | 0x2 | 0x8, 0, 0, 0, 0, 0, 0);  // rank 1's key wrong: its NIC refuses
  save(t, "wrong_key", s);
  s = start(0, 2, 0, 0);
  metaRow(&s, 0, 0, 0, 0, 0, 0, 0);
  metaRow(&s, 0x4 | 0x2, 0x1000, 0x5b, 1, 0, kLoopback, 0x10);  // port 1: nobody listens
  save(t, "closed_port", s);
  s = start(0, 2, 0, 0);
  metaRow(&s, 0, 0, 0, 0, 0, 0, 0);
  metaRow(&s, 0x4, 0x1000, 0x5b, 4791, 0, 0x0000ffff0a000001ull, 0x10);  // 10.0.0.1: unreachable
  save(t, "unreachable_address", s);
  s = start(0, 2, 0, 0);
  metaRow(&s, 0, 0, 0, 0, 0, 0, 0);
  metaRow(&s, 0x6, 0, 0, 0x10000, 0, kLoopback, 0);  // lid over 16 bits
  save(t, "lid_too_big", s);
  s = start(0, 2, 0, 0);
  metaRow(&s, 0, 0, 0, 0, 0, 0, 0);
  metaRow(&s, 0x6, 0, 0, 4791, 0xfe80000000000000ull, kLoopback, 0);  // an IB/RoCE v1 prefix
  save(t, "not_ipv4_mapped", s);
  s = start(0, 7, 0, 0);  // a rank past the job's two
  metaRow(&s, 0xf, 0, 0, 0, 0, 0, 0);
  metaRow(&s, 0xf, 0, 0, 0, 0, 0, 0);
  save(t, "mask_past_ranks", s);
  s = start(2, 3, 0, 0);
  save(t, "local_rank_past_end", s);
  s = start(0, 3, 1, 0);
  save(t, "infiniband", s);
  s = start(0, 3, 0, 1);
  metaRow(&s, 0xf, 0, 0, 0, 0, 0, 0);
  metaRow(&s, 0xf, 0, 0, 0, 0, 0, 0);
  save(t, "keys_short", s);
}

// ---- HMAC ----------------------------------------------------------------------------------

void hmacSeeds() {
  const char* t = "fuzz_hmac_sha256";
  auto seed = [&](const char* name, const std::vector<uint8_t>& key, const std::string& msg,
                  uint8_t c1, uint8_t c2, uint8_t c3) {
    std::vector<uint8_t> s{(uint8_t)key.size(), c1, c2, c3};
    append(&s, key.data(), key.size());
    append(&s, msg.data(), msg.size());
    save(t, name, s);
  };
  // RFC 4231 cases 1, 2 and 6 (a key longer than a block), split at assorted places.
  seed("rfc4231_case1", std::vector<uint8_t>(20, 0x0b), "Hi There", 0, 128, 255);
  seed("rfc4231_case2", {'J', 'e', 'f', 'e'}, "what do ya want for nothing?", 10, 20, 30);
  seed("rfc4231_case6", std::vector<uint8_t>(131, 0xaa),
       "Test Using Larger Than Block-Size Key - Hash Key First", 64, 64, 200);
  seed("empty", {}, "", 0, 0, 0);
  seed("block_boundaries", std::vector<uint8_t>(64, 0x36), std::string(119, 'x'), 55, 56, 64);
}

// ---- transfer-batch descriptors (layout: fuzz_batch_descriptors.cpp) ------------------------

void le64(std::vector<uint8_t>* out, uint64_t v) {
  le32(out, (uint32_t)v);
  le32(out, (uint32_t)(v >> 32));
}

// One request: choice bits (opcode, local, remote and length classes), offsets, the raw word.
void batchRequest(std::vector<uint8_t>* s, int op, int local, int remote, int length,
                  uint32_t local_off, uint32_t remote_off, uint64_t raw) {
  s->push_back((uint8_t)(op | (local << 2) | (remote << 4) | (length << 6)));
  if (op == 3) le32(s, 0x7fffffff);
  le32(s, local_off);
  le32(s, remote_off);
  le64(s, raw);
}

// Header: platform, capacity byte, then a chunking section of `copies` lengths of `cls`.
std::vector<uint8_t> batchHeader(uint8_t platform, uint8_t capacity, uint8_t copies, uint8_t cls) {
  std::vector<uint8_t> s{platform, capacity, copies};
  for (int i = 0; i < copies; ++i) {
    s.push_back((uint8_t)(cls + i));
    le64(&s, 0x123456789abcdefull * (uint64_t)(i + 1));
  }
  s.push_back(0);  // max_chunks: exactly what is needed
  return s;
}

void batchSubmit(std::vector<uint8_t>* s, int count) {
  s->push_back(0);                     // submit
  s->push_back((uint8_t)(count + 1));  // count
  s->push_back(0);                     // first: the model's
}

void batchSeeds() {
  const char* t = "fuzz_batch_descriptors";
  {  // good READs and WRITEs, waits and state reads between parts
    std::vector<uint8_t> s = batchHeader(0, 15, 2, 0);
    batchSubmit(&s, 4);
    batchRequest(&s, 1, 0, 0, 0, 0, 0, 4096);
    batchRequest(&s, 0, 1, 1, 0, 100, 2000, 1000);
    batchRequest(&s, 2, 0, 1, 0, 4095, 0, 0);
    batchRequest(&s, 0, 0, 0, 0, 17, 4000, 77);
    s.insert(s.end(), {2, 7, 1, 8, 12});
    batchSubmit(&s, 2);
    batchRequest(&s, 1, 0, 0, 0, 0, 4095, 5);
    batchRequest(&s, 0, 0, 0, 0, 2048, 2048, 2047);
    s.insert(s.end(), {1, 8, 14});
    save(t, "good_parts", s);
  }
  {  // each kind of bad descriptor after a good one
    std::vector<uint8_t> s = batchHeader(0, 31, 0, 0);
    const int bad[][4] = {{3, 0, 0, 0}, {1, 2, 0, 0}, {0, 0, 2, 0}, {1, 3, 0, 0}, {0, 0, 3, 0},
                          {1, 0, 0, 1}, {0, 0, 0, 2}, {1, 0, 0, 3}, {1, 3, 3, 2}};
    for (const auto& b : bad) {
      batchSubmit(&s, 2);
      batchRequest(&s, 1, 0, 0, 0, 8, 8, 64);
      batchRequest(&s, b[0], b[1], b[2], b[3], 4, 4, 0xfedcba9876543210ull);
    }
    batchSubmit(&s, 1);
    batchRequest(&s, 1, 0, 0, 0, 8, 8, 64);
    save(t, "bad_descriptors", s);
  }
  {  // a wrong first, a count over the capacity, an empty part, a negative count
    std::vector<uint8_t> s = batchHeader(0, 2, 0, 0);  // capacity 3
    s.insert(s.end(), {0, 2, 255, 5});                 // first 5
    batchRequest(&s, 1, 0, 0, 0, 0, 0, 10);
    batchSubmit(&s, 4);
    for (int i = 0; i < 4; ++i) batchRequest(&s, 1, 0, 0, 0, (uint32_t)i, 0, 10);
    s.insert(s.end(), {0, 1, 0});  // count 0
    s.insert(s.end(), {0, 0, 0});  // count -1
    batchSubmit(&s, 3);
    for (int i = 0; i < 3; ++i) batchRequest(&s, 0, 0, 0, 0, (uint32_t)(i * 100), 0, 10);
    batchSubmit(&s, 1);  // the batch is full
    batchRequest(&s, 0, 0, 0, 0, 0, 0, 10);
    s.insert(s.end(), {1, 8, 11, 1, 0, 90, 1, 7, 8});  // states inside, past the end, negative
    save(t, "first_and_capacity", s);
  }
  {  // cancel with work queued, then a submit that must be refused
    std::vector<uint8_t> s = batchHeader(0, 40, 0, 0);
    batchSubmit(&s, 10);
    for (int i = 0; i < 10; ++i)
      batchRequest(&s, i & 1, 0, 0, 0, (uint32_t)(i * 300), (uint32_t)(i * 200), 4000);
    s.push_back(3);
    batchSubmit(&s, 1);
    batchRequest(&s, 1, 0, 0, 0, 0, 0, 1);
    save(t, "cancel_then_submit", s);
  }
  {  // chunking: lengths at the per-copy chunk limit, at 2^40 and just over, a max_chunks too small
    std::vector<uint8_t> s = batchHeader(0, 0, 3, 1);
    s.back() = 150;  // max_chunks: one short
    save(t, "chunks_at_the_limits", s);
    save(t, "chunks_exact", batchHeader(0, 0, 8, 0));
    // A raw length of 2^64 - 1: the sums of the chunk arithmetic would wrap (a division by zero).
    std::vector<uint8_t> huge{0, 0, 1, 5};
    le64(&huge, ~0ull);
    huge.push_back(0);
    save(t, "chunk_length_2_64_minus_1", huge);
  }
  // Batches that refuse everything: CUDA in a host-only build, an unknown platform, bad capacities.
  save(t, "cuda_unavailable", batchHeader(2, 0, 0, 0));
  save(t, "unknown_platform", batchHeader(3, 0, 0, 0));
  save(t, "capacity_zero", batchHeader(0, 252, 0, 0));
  save(t, "capacity_negative", batchHeader(0, 253, 0, 0));
  save(t, "capacity_over_max", batchHeader(0, 254, 0, 0));
}

}  // namespace

// ---- handle wire bytes ---------------------------------------------------------------------

void handleWireSeeds() {
  const char* t = "fuzz_handle_wire";
  namespace blob = te4j::blob;
  // A well-formed host handle (pid 1, 4096 bytes, host identity 0: foreign, so never mapped).
  std::vector<int32_t> host((size_t)blob::kHostBlobInts, 0);
  host[blob::kMagicAt] = blob::kMagic;
  host[blob::kVersionAt] = blob::kVersion;
  host[blob::kPlatformAt] = te4j::kPlatformHost;
  host[blob::kPidAt] = 1;
  host[blob::kSizeLoAt] = 4096;
  const std::vector<uint8_t> good = blob::encodeWire(host.data(), (int)host.size());
  save(t, "host_valid", good);
  std::vector<int32_t> cuda((size_t)blob::kCudaBlobInts, 0);
  std::copy(host.begin(), host.begin() + blob::kHeaderInts, cuda.begin());
  cuda[blob::kPlatformAt] = te4j::kPlatformCuda;
  save(t, "cuda_valid", blob::encodeWire(cuda.data(), (int)cuda.size()));
  save(t, "truncated", std::vector<uint8_t>(good.begin(), good.end() - 4));
  std::vector<uint8_t> flipped = good;
  flipped[20] ^= 1;
  save(t, "bad_crc", flipped);
  std::vector<int32_t> no_pid = host;
  no_pid[blob::kPidAt] = 0;
  save(t, "pid_zero", blob::encodeWire(no_pid.data(), (int)no_pid.size()));
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  wireSeeds();
  wqeSeeds();
  handleSeeds();
  handleWireSeeds();
  metadataSeeds();
  hmacSeeds();
  batchSeeds();
  std::printf("fuzz_seeds: %d inputs under %s\n", g_written, g_root.c_str());
  return 0;
}
