// wire_format.h — the software NIC's TCP frame format, version 3.
//
// Ranks may run on different hosts, so every field has a fixed offset, size and byte order
// (little-endian), written and read field by field, never as a raw struct.
//
//   offset size field        HELLO            HELLO_ACK      WRITE / MASKED_FA32   RESPONSE
//                                                            / READ
//   0      4    magic        0x464e5354 ("TSNF" in memory)
//   4      2    version      kWireVersion; a receiver closes on any other value
//   6      2    type         kFrame*
//   8      4    src_qpn      client nonce     -              requester QP          requester QP
//   12     4    dst_qpn      client nonce     -              responder QP          responder QP
//   16     4    seq          src rank         accepted rank  wqe_counter           wqe_counter
//   20     4    rkey         dst rank         status (0 ok)  responder key         -
//   24     8    raddr        num ranks        -              responder address     -
//   32     4    length       32 (the MAC)     32 (the MAC)   WRITE: payload bytes  READ ok: payload
//                                                            (READ: 0)             bytes, else 0
//   36     4    arg0         client nonce     -              FA: add operand       syndrome (0 ok)
//                                                            READ: bytes wanted
//   40     4    arg1         client nonce     -              FA: field boundary    FA: old value
//   44     4    reserved     0
//   48     ...  payload (WRITE: `length` bytes of data; the RESPONSE to a READ that passed its
//                checks: the bytes read; CHALLENGE: 16-byte nonce; HELLO and HELLO_ACK: a 32-byte
//                HMAC-SHA256)
//
// The handshake authenticates every connection with the listening NIC's key K (32 random
// bytes made at start, published in its RDMA metadata, so known to the ranks of the job
// through their handle exchange and to nobody else):
//   responder -> CHALLENGE  16-byte server nonce, sent at accept
//   requester -> HELLO      header (ranks, 16-byte client nonce) + HMAC(K, "te4j-nic-hello" |
//                           server nonce | HELLO header)
//   responder -> HELLO_ACK  header + HMAC(K, "te4j-nic-ack" | server nonce | HELLO header |
//                           HELLO_ACK header), only for a HELLO whose MAC is right
// A connection whose HELLO is late, malformed or unauthenticated is closed without an answer.
// Requests of one connection are executed in order and answered in order, one RESPONSE each.
// The stream is only a sequence of frames: a sender may put any number of them into one
// write (a requester sends the requests of one doorbell scan together, headers and payloads
// in one sendmsg; a responder sends the answers of a burst together), and a receiver may not
// assume that a read ends at a frame boundary.
#pragma once

#include <cstddef>
#include <cstdint>

namespace te4j {
namespace rdma {

constexpr uint32_t kWireMagic = 0x464e5354u;
constexpr uint16_t kWireVersion = 3;
constexpr size_t kNonceBytes = 16;
constexpr size_t kMacBytes = 32;
constexpr size_t kFrameHeaderBytes = 48;
constexpr uint32_t kMaxFramePayload = 1u << 30;  // one WQE's largest message

enum FrameType : uint16_t {
  kFrameHello = 1,
  kFrameHelloAck = 2,
  kFrameWrite = 3,
  kFrameMaskedFa32 = 4,
  kFrameResponse = 5,
  kFrameChallenge = 6,
  kFrameRead = 7,
};

/// Whether frames of this type are requests a responder executes, answering each with one
/// RESPONSE (a new opcode is one more type here and one more case in the responder).
inline bool isRequestFrame(uint16_t type) {
  return type == kFrameWrite || type == kFrameMaskedFa32 || type == kFrameRead;
}

struct Frame {
  uint16_t version = kWireVersion;
  uint16_t type = 0;
  uint32_t src_qpn = 0;
  uint32_t dst_qpn = 0;
  uint32_t seq = 0;
  uint32_t rkey = 0;
  uint64_t raddr = 0;
  uint32_t length = 0;
  uint32_t arg0 = 0;
  uint32_t arg1 = 0;
};

inline void putLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
inline void putLe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
inline uint32_t getLe32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
inline uint64_t getLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

inline void encodeFrame(const Frame& f, uint8_t out[kFrameHeaderBytes]) {
  putLe32(out + 0, kWireMagic);
  out[4] = (uint8_t)f.version;
  out[5] = (uint8_t)(f.version >> 8);
  out[6] = (uint8_t)f.type;
  out[7] = (uint8_t)(f.type >> 8);
  putLe32(out + 8, f.src_qpn);
  putLe32(out + 12, f.dst_qpn);
  putLe32(out + 16, f.seq);
  putLe32(out + 20, f.rkey);
  putLe64(out + 24, f.raddr);
  putLe32(out + 32, f.length);
  putLe32(out + 36, f.arg0);
  putLe32(out + 40, f.arg1);
  putLe32(out + 44, 0);
}

/// Decodes a header; false (with *why) for a foreign magic, another version, an unknown type
/// or a payload length the type does not allow.
inline bool decodeFrame(const uint8_t in[kFrameHeaderBytes], Frame* f, const char** why) {
  if (getLe32(in) != kWireMagic) {
    *why = "bad magic";
    return false;
  }
  f->version = (uint16_t)(in[4] | (in[5] << 8));
  if (f->version != kWireVersion) {
    *why = "unsupported wire version";
    return false;
  }
  f->type = (uint16_t)(in[6] | (in[7] << 8));
  f->src_qpn = getLe32(in + 8);
  f->dst_qpn = getLe32(in + 12);
  f->seq = getLe32(in + 16);
  f->rkey = getLe32(in + 20);
  f->raddr = getLe64(in + 24);
  f->length = getLe32(in + 32);
  f->arg0 = getLe32(in + 36);
  f->arg1 = getLe32(in + 40);
  if (f->type < kFrameHello || f->type > kFrameRead) {
    *why = "unknown frame type";
    return false;
  }
  const uint32_t fixed = f->type == kFrameChallenge ? (uint32_t)kNonceBytes
                         : f->type == kFrameHello || f->type == kFrameHelloAck ? (uint32_t)kMacBytes
                                                                               : 0u;
  // A RESPONSE carries the bytes of the READ it answers; whether that many were asked for is
  // the requester's check (it knows the request).
  const bool variable = f->type == kFrameWrite || f->type == kFrameResponse;
  if (variable ? f->length > kMaxFramePayload : f->length != fixed) {
    *why = "bad payload length";
    return false;
  }
  return true;
}

}  // namespace rdma
}  // namespace te4j
