// test_host_list.cpp — te4j::TransferList on the host platform (te4j/list_api.h):
//  - random lists (1 B .. 4 MiB, READ and WRITE mixed, poisoned destinations) prepared once and
//    posted many times, whole and as ranges, with the sources rewritten between posts: each post
//    moves the current bytes of exactly its range;
//  - a cancel racing a post: every request COMPLETED with its bytes or TIMEOUT with its poison,
//    skipped() counting the TIMEOUT ones; the next post runs whole (the cancel never reaches it);
//  - a post while one runs is refused; ranges outside the list and bad descriptors are refused;
//  - destroying a list while its post runs returns only after the worker left its memory (the
//    memory is unmapped right after: a late copy would fault).
// TE4J_TIMEOUT_SCALE multiplies every bound (sanitizer runs).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <memory>
#include <random>
#include <vector>

#include "check.h"
#include "te4j/batch_api.h"
#include "te4j/list_api.h"

namespace {

constexpr uint8_t kPoison = 0xA5;
constexpr size_t kRegion = 32u << 20;

int64_t waitNanos() {
  const char* s = getenv("TE4J_TIMEOUT_SCALE");
  const int64_t scale = s != nullptr && atoi(s) > 0 ? atoi(s) : 1;
  return 60'000'000'000LL * scale;
}

struct Request {
  int32_t opcode;
  size_t local_off, remote_off, len;
};

std::vector<Request> plan(std::mt19937_64& rng, int count, size_t max_len) {
  std::vector<Request> out;
  size_t pos_l = 0, pos_r = 0;
  for (int i = 0; i < count; ++i) {
    const int kind = (int)(rng() % 10);
    const size_t len = kind < 5 ? 1 + rng() % 8192 : 1 + rng() % max_len;
    const size_t gap_l = rng() % 256, gap_r = rng() % 256;
    if (pos_l + gap_l + len > kRegion || pos_r + gap_r + len > kRegion) break;
    out.push_back(Request{(int32_t)(rng() % 2), pos_l + gap_l, pos_r + gap_r, len});
    pos_l += gap_l + len;
    pos_r += gap_r + len;
  }
  return out;
}

struct Regions {
  std::vector<uint8_t> local, remote;  // the memory the list moves between
  std::vector<uint8_t> l, r;           // what was written there before the post
};

void fill(std::mt19937_64& rng, Regions* g, const std::vector<Request>& p) {
  for (size_t i = 0; i < kRegion; i += 8) {
    const uint64_t v = rng();
    memcpy(&g->l[i], &v, 8);
    memcpy(&g->r[i], &v, 8);
    g->r[i] ^= 0xff;
  }
  for (const Request& q : p) {
    std::vector<uint8_t>& dst = q.opcode == te4j::kBatchRead ? g->l : g->r;
    memset(&dst[q.opcode == te4j::kBatchRead ? q.local_off : q.remote_off], kPoison, q.len);
  }
  g->local = g->l;
  g->remote = g->r;
}

te4j::TransferList* prepare(Regions& g, const std::vector<Request>& p) {
  std::vector<int32_t> op;
  std::vector<uint64_t> lo, re, len;
  for (const Request& q : p) {
    op.push_back(q.opcode);
    lo.push_back((uint64_t)(uintptr_t)(g.local.data() + q.local_off));
    re.push_back((uint64_t)(uintptr_t)(g.remote.data() + q.remote_off));
    len.push_back(q.len);
  }
  return te4j::TransferList::create(te4j::kPlatformHost, 0, (int)p.size(), op.data(), lo.data(),
                                    re.data(), len.data());
}

// `landed_before`: an earlier post of the same requests already landed every byte, so a request
// this post skipped still finds its destination written (by that post, with the same bytes).
void verify(te4j::TransferList* list, const Regions& g, const std::vector<Request>& p, int from,
            int to, bool may_skip, const char* what, bool landed_before = false) {
  CHECK(list->wait(waitNanos()) == te4j::kOk, "%s: wait: %s", what, list->lastError());
  CHECK(list->poll() == 1, "%s: poll", what);
  const int skipped = list->skipped();
  CHECK(skipped >= 0 && (may_skip || skipped == 0), "%s: skipped %d", what, skipped);
  std::vector<int32_t> st(p.size(), -1);
  CHECK(list->states(0, (int)p.size(), st.data()) == te4j::kOk, "%s: states", what);
  std::vector<uint8_t> want_l = g.l, want_r = g.r;
  int timed_out = 0;
  for (int i = from; i < to; ++i) {
    const Request& q = p[(size_t)i];
    const bool ok = st[(size_t)i] == te4j::kRequestCompleted;
    CHECK(ok || (may_skip && st[(size_t)i] == te4j::kRequestTimeout), "%s: request %d state %d",
          what, i, st[(size_t)i]);
    if (!ok) {
      ++timed_out;
      if (!landed_before) continue;
    }
    if (q.opcode == te4j::kBatchRead) {
      memcpy(&want_l[q.local_off], &g.r[q.remote_off], q.len);
    } else {
      memcpy(&want_r[q.remote_off], &g.l[q.local_off], q.len);
    }
  }
  CHECK(timed_out == skipped, "%s: %d TIMEOUT, skipped() says %d", what, timed_out, skipped);
  CHECK(g.local == want_l && g.remote == want_r, "%s: bytes differ", what);
}

}  // namespace

int main() {
  std::mt19937_64 rng(20261206);
  Regions g;
  g.local.resize(kRegion);
  g.remote.resize(kRegion);
  g.l.resize(kRegion);
  g.r.resize(kRegion);
  int posts = 0;
  for (int count : {1, 5, 64, 400}) {
    const std::vector<Request> p = plan(rng, count, 4u << 20);
    std::unique_ptr<te4j::TransferList> list(prepare(g, p));
    CHECK(list && list->status() == te4j::kOk, "create: %s", list ? list->lastError() : "null");
    if (!list || list->status() != te4j::kOk) return 1;
    const int size = list->size();
    for (int round = 0; round < 6; ++round) {
      fill(rng, &g, p);
      const int from = round % 2 == 0 ? 0 : (int)(rng() % (uint64_t)size);
      const int to = round % 2 == 0 ? size : from + 1 + (int)(rng() % (uint64_t)(size - from));
      CHECK(list->post(from, to) == te4j::kOk, "post: %s", list->lastError());
      char what[80];
      snprintf(what, sizeof what, "list of %d, post %d [%d, %d)", size, posts++, from, to);
      verify(list.get(), g, p, from, to, false, what);
    }
    fill(rng, &g, p);
    CHECK(list->post(0, size) == te4j::kOk, "post: %s", list->lastError());
    const int again = list->post(0, size);
    CHECK(again == te4j::kIllegalState || again == te4j::kOk, "a second post: %d", again);
    CHECK(list->cancel() == te4j::kOk, "cancel");
    // A second post is accepted only once the first one finished: then the bytes are all there
    // whatever the cancel skipped of the second.
    verify(list.get(), g, p, 0, size, true, "cancelled post", again == te4j::kOk);
    fill(rng, &g, p);
    CHECK(list->post(0, size) == te4j::kOk, "post after cancel: %s", list->lastError());
    verify(list.get(), g, p, 0, size, false, "post after the cancelled one");
    CHECK(list->post(size, size + 1) == te4j::kInvalidArgument, "a range outside was accepted");
    CHECK(list->post(0, 0) == te4j::kInvalidArgument, "an empty range was accepted");
  }
  // Bad descriptors are refused at create, naming the request.
  {
    int32_t op[2] = {te4j::kBatchWrite, 7};
    uint64_t lo[2] = {(uint64_t)(uintptr_t)g.local.data(), (uint64_t)(uintptr_t)g.local.data()};
    uint64_t re[2] = {(uint64_t)(uintptr_t)g.remote.data(), (uint64_t)(uintptr_t)g.remote.data()};
    uint64_t len[2] = {1, 1};
    std::unique_ptr<te4j::TransferList> bad(
        te4j::TransferList::create(te4j::kPlatformHost, 0, 2, op, lo, re, len));
    CHECK(bad && bad->status() == te4j::kInvalidArgument &&
              strstr(bad->lastError(), "request 1") != nullptr,
          "a bad opcode: %s", bad ? bad->lastError() : "null");
    CHECK(bad && bad->post(0, 1) == te4j::kInvalidArgument, "a refused list posted");
  }
  // Destroyed while a post runs, then the memory unmapped: the destructor waited.
  {
    const size_t bytes = 64u << 20;
    void* m = mmap(nullptr, 2 * bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED, "mmap");
    if (m == MAP_FAILED) return 1;
    std::vector<int32_t> op(64, te4j::kBatchWrite);
    std::vector<uint64_t> lo(64, (uint64_t)(uintptr_t)m);
    std::vector<uint64_t> re(64, (uint64_t)(uintptr_t)m + bytes);
    std::vector<uint64_t> len(64, bytes);
    std::unique_ptr<te4j::TransferList> list(te4j::TransferList::create(
        te4j::kPlatformHost, 0, 64, op.data(), lo.data(), re.data(), len.data()));
    CHECK(list && list->status() == te4j::kOk, "create: %s", list ? list->lastError() : "null");
    if (list && list->status() == te4j::kOk) CHECK(list->post(0, 64) == te4j::kOk, "post");
    list.reset();
    munmap(m, 2 * bytes);
  }
  if (g_failures != 0) {
    fprintf(stderr, "test_host_list: %d failures\n", g_failures);
    return 1;
  }
  printf("test_host_list: OK (%d posts)\n", posts);
  return 0;
}
