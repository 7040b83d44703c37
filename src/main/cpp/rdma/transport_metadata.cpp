// transport_metadata.cpp — RdmaTransport's metadata bytes: this rank's encoding, the read-only
// view of any rank's, and the connect that decodes and checks every rank's before it connects.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/copy_text.h"
#include "rdma/device_tables.h"
#include "rdma/metadata_codec.h"
#include "te4j/rdma_api.h"

namespace te4j {
namespace {

constexpr int kBackendAt = 0, kRoceAt = 1, kNumRanksAt = 2, kQpsAt = 3, kGidIndexAt = 4, kLidAt = 5,
              kRaddrAt = 6, kRkeyAt = 7, kRegisteredAt = 8, kPrefixAt = 9, kIfidAt = 10,
              kKeyLengthAt = 11;
static_assert(kKeyLengthAt + 1 == RdmaTransport::kMetadataValues, "values before the QP numbers");

bool sameEndpointAndQps(const rdma::PeerMetadata& a, const rdma::PeerMetadata& b) {
  return a.qpns == b.qpns && a.lid == b.lid && a.interface_id == b.interface_id &&
         a.subnet_prefix == b.subnet_prefix && a.raddr == b.raddr && a.rkey == b.rkey &&
         a.key == b.key;
}

}  // namespace

int RdmaTransport::currentMetadata(rdma::PeerMetadata* out) {
  RdmaTransport* t = this;
  const int n = t->localMetadataLength();
  if (n < kRdmaMetadataHeader) return t->localMetadata(nullptr, 0);
  std::vector<int64_t> v((size_t)n);
  const int got = t->localMetadata(v.data(), n);
  if (got < 0) return got;
  if (got != n || v[0] != kRdmaMetadataMagic || v[1] != kRdmaMetadataVersion ||
      (int64_t)v[3] * v[4] != n - kRdmaMetadataHeader)
    return t->fail(kIllegalState, "encodedMetadata: the backend wrote an unknown layout");
  out->backend = (int)v[2];
  out->num_ranks = (uint32_t)v[3];
  out->qps_per_rank = (uint32_t)v[4];
  out->raddr = (uint64_t)v[5];
  out->rkey = (uint32_t)v[6];
  out->subnet_prefix = (uint64_t)v[7];
  out->interface_id = (uint64_t)v[8];
  out->lid = (uint32_t)v[9];
  out->roce = v[10] != 0;
  out->gid_index = (uint32_t)v[11];
  out->registered_bytes = t->registeredBytes();
  out->qpns.assign(v.begin() + kRdmaMetadataHeader, v.end());
  uint8_t key[rdma::kMetadataKeyBytes];
  const int k = t->authKey(key, (int)sizeof(key));
  if (k < 0) return k;
  out->key.assign(key, key + std::min(k, (int)sizeof(key)));
  return kOk;
}

int RdmaTransport::encodedMetadataLength() {
  rdma::PeerMetadata m;
  const int s = currentMetadata(&m);
  if (s != kOk) return s;
  return (int)rdma::encodeMetadata(m).size();
}

int RdmaTransport::encodedMetadata(uint8_t* out, int capacity) {
  rdma::PeerMetadata m;
  const int s = currentMetadata(&m);
  if (s != kOk) return s;
  if (m.registered_bytes == 0)
    return fail(kIllegalState, "encodedMetadata: register a buffer first");
  const std::vector<uint8_t> bytes = rdma::encodeMetadata(m);
  if (out == nullptr || capacity < (int)bytes.size())
    return fail(kInvalidArgument,
                "encodedMetadata: capacity below " + std::to_string(bytes.size()));
  std::memcpy(out, bytes.data(), bytes.size());
  ok();
  return (int)bytes.size();
}

int RdmaTransport::connectMetadata(int local_rank, const uint8_t* all, const int32_t* lengths,
                                   int num_entries, uint64_t active_ranks_mask) {
  const int n = numRanks();
  if (n <= 0) return fail(kIllegalState, "connectPeers: initialize first");
  if (num_entries != n || lengths == nullptr)
    return fail(kInvalidArgument, "connectPeers: " + std::to_string(num_entries) +
                                      " metadata entries for " + std::to_string(n) + " ranks");
  if (local_rank < 0 || local_rank >= n || ((active_ranks_mask >> local_rank) & 1u) == 0)
    return fail(kInvalidArgument, "connectPeers: local_rank " + std::to_string(local_rank) +
                                      " out of range or not in active_ranks_mask");
  const std::string bad_mask = rdma::activeMaskError(n, active_ranks_mask);
  if (!bad_mask.empty()) return fail(kInvalidArgument, "connectPeers: " + bad_mask);
  std::vector<size_t> at((size_t)n + 1, 0);
  for (int r = 0; r < n; ++r) {
    if (lengths[r] < 0) return fail(kInvalidArgument, "connectPeers: negative metadata length");
    at[(size_t)r + 1] = at[(size_t)r] + (size_t)lengths[r];
  }
  if (all == nullptr && at[(size_t)n] != 0)
    return fail(kInvalidArgument, "connectPeers: the metadata bytes are null");

  rdma::PeerMetadata own;
  const int s = currentMetadata(&own);
  if (s != kOk) return s;
  std::vector<rdma::PeerMetadata> peers((size_t)n);
  std::string why;
  // The own entry first: a stale one (from before recreateQueuePairs) or another rank's (a
  // misordered list) would connect the peers' QPs to QPs this rank does not have.
  const rdma::PeerMetadata* mine = &peers[(size_t)local_rank];
  if (!rdma::decodeMetadata(all + at[(size_t)local_rank], (size_t)lengths[local_rank],
                            &peers[(size_t)local_rank], &why))
    return fail(kBadHandle, "own metadata (rank " + std::to_string(local_rank) + "): " + why);
  if (!sameEndpointAndQps(*mine, own))
    return fail(kBadHandle, "metadata entry " + std::to_string(local_rank) +
                                " is not this rank's current metadata " + rdma::describe(own) +
                                " but " + rdma::describe(*mine) +
                                " (a misordered list, or metadata from before recreateQueuePairs)");

  const int total = n * qpsPerRank();
  std::vector<uint64_t> addrs((size_t)n, 0), prefixes((size_t)n, 0), ifids((size_t)n, 0);
  std::vector<uint32_t> keys((size_t)n, 0), lids((size_t)n, 0), qpns((size_t)n * total, 0);
  std::vector<uint8_t> nic_keys((size_t)n * rdma::kMetadataKeyBytes, 0);
  std::vector<std::string> where((size_t)n);
  for (int r = 0; r < n; ++r) {
    if (((active_ranks_mask >> r) & 1u) == 0) continue;
    const std::string rank = "rank " + std::to_string(r);
    rdma::PeerMetadata& m = peers[(size_t)r];
    if (r != local_rank && !rdma::decodeMetadata(all + at[(size_t)r], (size_t)lengths[r], &m, &why))
      return fail(kBadHandle, rank + ": " + why);
    if ((int)m.num_ranks != n || (int)m.qps_per_rank != qpsPerRank())
      return fail(kBadHandle, rank + " has " + std::to_string(m.num_ranks) + " ranks x " +
                                  std::to_string(m.qps_per_rank) + " QPs, this rank " +
                                  std::to_string(n) + " x " + std::to_string(qpsPerRank()));
    if (m.backend != mine->backend || m.roce != mine->roce)
      return fail(kBadHandle, rank + " uses " + rdma::describe(m) + ", this rank " +
                                  rdma::describe(*mine) + " (every rank needs the same backend)");
    where[(size_t)r] = rdma::endpointOf(m);
    for (int o = 0; o < r; ++o) {
      // Each software NIC listens on its own port: two ranks at one endpoint are one rank twice.
      if (m.backend == kRdmaBackendSoft && where[(size_t)r] == where[(size_t)o])
        return fail(kBadHandle, "ranks " + std::to_string(o) + " and " + std::to_string(r) +
                                    " name the same software NIC " + where[(size_t)r] +
                                    " (a duplicated or misordered metadata list)");
    }
    if (m.backend == kRdmaBackendSoft && m.key.size() != rdma::kMetadataKeyBytes)
      return fail(kBadHandle, rank +
                                  "'s metadata has no NIC key: its NIC would refuse the connection"
                                  " (fix: use the metadata that rank's localMetadata() made)");
    addrs[(size_t)r] = m.raddr;
    keys[(size_t)r] = m.rkey;
    lids[(size_t)r] = m.lid;
    prefixes[(size_t)r] = m.subnet_prefix;
    ifids[(size_t)r] = m.interface_id;
    std::copy(m.qpns.begin(), m.qpns.end(), qpns.begin() + (size_t)r * total);
    std::copy(m.key.begin(), m.key.end(), nic_keys.begin() + (size_t)r * rdma::kMetadataKeyBytes);
  }
  const int k = setPeerKeys(nic_keys.data(), (int)nic_keys.size());
  if (k != kOk) return k;
  return connectPeers(local_rank, mine->roce, addrs.data(), keys.data(), qpns.data(), lids.data(),
                      prefixes.data(), ifids.data(), active_ranks_mask);
}

int RdmaTransport::describeMetadata(const uint8_t* bytes, int length, int64_t* out, int capacity,
                                    uint8_t* key, int key_capacity, char* why, int why_capacity) {
  rdma::PeerMetadata m;
  std::string reason;
  if (length < 0) {
    copyText("RDMA metadata length is negative", why, why_capacity);
    return kInvalidArgument;
  }
  if (!rdma::decodeMetadata(bytes, (size_t)length, &m, &reason)) {
    copyText(reason, why, why_capacity);
    return kBadHandle;
  }
  const int count = kMetadataValues + (int)m.qpns.size();
  if (out == nullptr || capacity < count || (int)m.key.size() > key_capacity ||
      (key == nullptr && !m.key.empty())) {
    copyText("describeMetadata: room for " + std::to_string(count) + " values and a key of " +
                 std::to_string(m.key.size()) + " bytes needed",
             why, why_capacity);
    return kInvalidArgument;
  }
  out[kBackendAt] = m.backend;
  out[kRoceAt] = m.roce ? 1 : 0;
  out[kNumRanksAt] = m.num_ranks;
  out[kQpsAt] = m.qps_per_rank;
  out[kGidIndexAt] = m.gid_index;
  out[kLidAt] = m.lid;
  out[kRaddrAt] = (int64_t)m.raddr;
  out[kRkeyAt] = m.rkey;
  out[kRegisteredAt] = (int64_t)m.registered_bytes;
  out[kPrefixAt] = (int64_t)m.subnet_prefix;
  out[kIfidAt] = (int64_t)m.interface_id;
  out[kKeyLengthAt] = (int64_t)m.key.size();
  for (size_t i = 0; i < m.qpns.size(); ++i) out[kMetadataValues + i] = m.qpns[i];
  if (!m.key.empty()) std::memcpy(key, m.key.data(), m.key.size());
  copyText("", why, why_capacity);
  return count;
}

int RdmaTransport::encodeMetadataValues(const int64_t* values, int count, const uint8_t* key,
                                        int key_length, uint8_t* out, int capacity) {
  if (values == nullptr || count < kMetadataValues ||
      count - kMetadataValues > (int)rdma::kMaxMetadataQpns || key_length < 0 ||
      key_length > (int)rdma::kMetadataKeyBytes || (key == nullptr && key_length > 0))
    return kInvalidArgument;
  rdma::PeerMetadata m;
  m.backend = (int)values[kBackendAt];
  m.roce = values[kRoceAt] != 0;
  m.num_ranks = (uint32_t)values[kNumRanksAt];
  m.qps_per_rank = (uint32_t)values[kQpsAt];
  m.gid_index = (uint32_t)values[kGidIndexAt];
  m.lid = (uint32_t)values[kLidAt];
  m.raddr = (uint64_t)values[kRaddrAt];
  m.rkey = (uint32_t)values[kRkeyAt];
  m.registered_bytes = (uint64_t)values[kRegisteredAt];
  m.subnet_prefix = (uint64_t)values[kPrefixAt];
  m.interface_id = (uint64_t)values[kIfidAt];
  m.qpns.assign(values + kMetadataValues, values + count);
  if (key_length > 0) m.key.assign(key, key + key_length);
  const std::vector<uint8_t> bytes = rdma::encodeMetadata(m);
  if (out == nullptr || capacity < (int)bytes.size()) return kInvalidArgument;
  std::memcpy(out, bytes.data(), bytes.size());
  return (int)bytes.size();
}

}  // namespace te4j
