// atomic_route.h — which path self / P2P adds take when a ConnectX NIC also adds to the words.
//
// A ConnectX atomic (te4j's masked fetch-add) is atomic only against other atomics through the
// same adapter: an atom.add.sys from a GPU on the same word between the NIC's read and write
// is lost. A signal word written by a remote rank over RDMA and by its own rank or a P2P peer
// with GPU atomics would therefore lose adds now and then. TE4J_RDMA_ATOMICS picks the rule:
//   nic    (default) every add on a rank with a connected QP is posted to the NIC, the own
//          rank's through the loopback QP, so no word mixes the two kinds (NVSHMEM's choice for
//          its IBGDA atomics); P2P adds then cost a NIC round trip instead of an NVLink one.
//   local  self / P2P adds stay GPU atomics; correct only when each word has writers on one
//          transport (RDMA-only, or self/P2P-only), which te4j cannot check word by word.
#pragma once

#include <cstdint>
#include <string>

#include "rdma/mlx5/qp_tuning.h"

namespace te4j {
namespace rdma {

/// IbgdaContext::flags for TE4J_RDMA_ATOMICS (read through `env`); false with *why naming the
/// variable when its value is neither "nic" nor "local".
bool readAtomicRoute(EnvLookup env, uint32_t* flags, std::string* why);

}  // namespace rdma
}  // namespace te4j
