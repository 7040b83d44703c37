// test_peer_table_mirror.cpp — the host copies of the peer tables that the CUDA op stream's
// copy-engine put translates through: only published, mapped, in-window ranges translate, and
// each with the route published for its rank.
#include <stdio.h>

#include <vector>

#include "p2p/peer_table_mirror.h"

static int g_failures = 0;
#define EXPECT(cond)                                                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                     \
    }                                                                   \
  } while (0)

int main() {
  using namespace te4j;
  static char local[4096], peer1[4096];
  static int device_table_a, device_table_b;  // stand-ins for the device copies' addresses
  const std::vector<int> available = {1, 1, 0};
  const std::vector<void*> ptrs = {local, peer1, nullptr};
  void* out = nullptr;

  EXPECT(!peer_tables::translate(&device_table_a, 1, local, 8, &out));  // unknown tables
  const std::vector<int> routes = {peer_tables::kRouteSameDevice, peer_tables::kRoutePeerDevice,
                                   peer_tables::kRouteUnmapped};
  peer_tables::publish(&device_table_a, local, sizeof(local), available, ptrs, routes);
  EXPECT(peer_tables::translate(&device_table_a, 1, local + 100, 8, &out) && out == peer1 + 100);
  peer_tables::Route route = peer_tables::kRouteUnmapped;
  EXPECT(peer_tables::translate(&device_table_a, 0, local, 8, &out, &route) &&
         route == peer_tables::kRouteSameDevice);
  EXPECT(peer_tables::translate(&device_table_a, 1, local, 8, &out, &route) &&
         route == peer_tables::kRoutePeerDevice);
  // Published again as ranks sharing one GPU: the new routes replace the old.
  peer_tables::publish(
      &device_table_a, local, sizeof(local), available, ptrs,
      {peer_tables::kRouteSameDevice, peer_tables::kRouteSameDevice, peer_tables::kRouteUnmapped});
  EXPECT(peer_tables::translate(&device_table_a, 1, local, 8, &out, &route) &&
         route == peer_tables::kRouteSameDevice);
  EXPECT(peer_tables::translate(&device_table_a, 0, local, sizeof(local), &out) && out == local);
  EXPECT(
      peer_tables::translate(&device_table_a, 1, local + sizeof(local), 0, &out));  // empty at end
  EXPECT(!peer_tables::translate(&device_table_a, 2, local, 8, &out));  // rank not mapped here
  EXPECT(!peer_tables::translate(&device_table_a, 3, local, 8, &out));  // rank out of range
  EXPECT(!peer_tables::translate(&device_table_a, -1, local, 8, &out));
  EXPECT(!peer_tables::translate(&device_table_a, 1, local - 1, 8, &out));     // before the window
  EXPECT(!peer_tables::translate(&device_table_a, 1, local + 4090, 8, &out));  // runs past it
  EXPECT(
      !peer_tables::translate(&device_table_a, 1, local + 8, (size_t)-1, &out));  // overflow bait
  EXPECT(!peer_tables::translate(&device_table_b, 1, local, 8, &out));            // other tables
  peer_tables::withdraw(&device_table_a);
  EXPECT(!peer_tables::translate(&device_table_a, 1, local, 8, &out));  // withdrawn
  peer_tables::withdraw(&device_table_a);                               // twice: harmless

  if (g_failures == 0) printf("test_peer_table_mirror: OK\n");
  return g_failures == 0 ? 0 : 1;
}
