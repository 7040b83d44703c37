// copy_helpers.cpp — see copy_helpers.h.
//
// The helpers are started on first use and live as long as the process (a leaked singleton: no
// destructor can race a helper at exit). Every caller also runs queued chunks itself while it
// waits, so a chunk never waits for a busy helper: progress needs no helper at all.
#include "stream/copy_helpers.h"

#include <stdint.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace te4j {
namespace {

constexpr int kMaxHelpers = 7;
constexpr std::size_t kChunkAlign = 4096;  // chunk boundaries on pages: no line is shared

// One parallelCopy call: how many of its chunks are not yet copied.
struct Batch {
  std::mutex m;
  std::condition_variable done;
  int remaining = 0;
};

struct Chunk {
  uint8_t* dst;
  const uint8_t* src;
  std::size_t n;
  CopyBody body;
  std::shared_ptr<Batch> batch;  // shared: the caller may return as soon as the count is 0
};

void runChunk(const Chunk& c) {
  c.body(c.dst, c.src, c.n);
  std::lock_guard<std::mutex> g(c.batch->m);
  if (--c.batch->remaining == 0) c.batch->done.notify_all();
}

class CopyHelpers {
 public:
  static CopyHelpers& instance() {
    static CopyHelpers* helpers = new CopyHelpers();  // never destroyed (see above)
    return *helpers;
  }

  // Starts helpers up to `wanted` (at most kMaxHelpers); returns how many run.
  int ensure(int wanted) {
    std::lock_guard<std::mutex> g(m_);
    wanted = std::min(wanted, kMaxHelpers);
    while (started_ < wanted) {
      try {
        std::thread(&CopyHelpers::loop, this).detach();
      } catch (const std::system_error&) {
        break;  // no more threads: the callers copy what the helpers cannot
      }
      ++started_;
    }
    return started_;
  }

  void submit(std::vector<Chunk>&& chunks) {
    {
      std::lock_guard<std::mutex> g(m_);
      for (Chunk& c : chunks) queue_.push_back(std::move(c));
    }
    work_.notify_all();
  }

  // Runs one queued chunk (of any caller) on this thread; false when the queue is empty.
  bool runOne() {
    Chunk c;
    {
      std::lock_guard<std::mutex> g(m_);
      if (queue_.empty()) return false;
      c = std::move(queue_.front());
      queue_.pop_front();
    }
    runChunk(c);
    return true;
  }

 private:
  void loop() {
    for (;;) {
      Chunk c;
      {
        std::unique_lock<std::mutex> l(m_);
        work_.wait(l, [this] { return !queue_.empty(); });
        c = std::move(queue_.front());
        queue_.pop_front();
      }
      runChunk(c);
    }
  }

  std::mutex m_;
  std::condition_variable work_;
  std::deque<Chunk> queue_;
  int started_ = 0;
};

}  // namespace

void parallelCopy(void* dst, const void* src, std::size_t n, int threads, CopyBody body) {
  if (n == 0) return;  // nothing to copy (and memcpy's pointers may then be null)
  std::size_t chunks =
      std::min<std::size_t>(threads > 0 ? (std::size_t)threads : 1, n / kMinCopyChunk);
  if (chunks > 1) {
    chunks = std::min<std::size_t>(
        chunks, 1 + (std::size_t)CopyHelpers::instance().ensure((int)chunks - 1));
  }
  if (chunks <= 1) {
    body(dst, src, n);
    return;
  }
  const std::size_t per = (n / chunks + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  auto batch = std::make_shared<Batch>();
  std::vector<Chunk> others;
  uint8_t* d = (uint8_t*)dst;
  const uint8_t* s = (const uint8_t*)src;
  for (std::size_t at = per; at < n; at += per) {
    others.push_back(Chunk{d + at, s + at, std::min(per, n - at), body, batch});
  }
  batch->remaining = (int)others.size();
  CopyHelpers& helpers = CopyHelpers::instance();
  helpers.submit(std::move(others));
  body(dst, src, std::min(per, n));
  // Help with queued chunks (ours or another caller's) until ours are all done.
  for (;;) {
    {
      std::unique_lock<std::mutex> l(batch->m);
      if (batch->remaining == 0) return;
    }
    if (helpers.runOne()) continue;
    std::unique_lock<std::mutex> l(batch->m);
    // Bounded wake-up as a safety net; the last chunk notifies.
    batch->done.wait_for(l, std::chrono::milliseconds(1), [&] { return batch->remaining == 0; });
  }
}

}  // namespace te4j
