// test_peer_table_mirror.cpp — the host copies of the peer tables that the CUDA op stream's
// copy-engine put translates through: only published, mapped, in-window ranges translate, and a
// new publication replaces the old.
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
  peer_tables::publish(&device_table_a, local, sizeof(local), available, ptrs);
  EXPECT(peer_tables::translate(&device_table_a, 1, local + 100, 8, &out) && out == peer1 + 100);
  // Published again with another mapping of rank 1: the new tables replace the old.
  static char peer1_again[4096];
  peer_tables::publish(&device_table_a, local, sizeof(local), available,
                       {local, peer1_again, nullptr});
  EXPECT(peer_tables::translate(&device_table_a, 1, local + 8, 8, &out) && out == peer1_again + 8);
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
