// bench/tcp_baseline.cpp — te4j::bench::TcpBaseline: what a plain TCP socket does between the
// two processes the software NIC connects, measured in the same run as the NIC's rows.
//
// Blocking sockets with TCP_NODELAY, the way a hand-written C transport would use them. Every
// wait goes through poll() with the time left of the call's deadline, so a vanished peer ends
// the call with kTimeout instead of hanging the rank.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "te4j/bench_api.h"

namespace te4j {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

int msLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : (int)std::min<long long>(left + 1, 0x7fffffff);
}

class HostTcpBaseline final : public TcpBaseline {
 public:
  ~HostTcpBaseline() override {
    if (fd_ >= 0) close(fd_);
    if (listen_fd_ >= 0) close(listen_fd_);
  }

  int listen(const char* ipv4) override {
    sockaddr_in a;
    if (!address(ipv4, 0, &a))
      return fail(kInvalidArgument, std::string("TCP baseline: bad address ") + ipv4);
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return sysFail("socket");
    const int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(listen_fd_, (sockaddr*)&a, sizeof(a)) != 0 || ::listen(listen_fd_, 1) != 0)
      return sysFail("bind/listen");
    socklen_t len = sizeof(a);
    getsockname(listen_fd_, (sockaddr*)&a, &len);
    ok();
    return ntohs(a.sin_port);
  }

  int connect(const char* ipv4, int port, int64_t timeout_ns) override {
    sockaddr_in a;
    if (!address(ipv4, port, &a))
      return fail(kInvalidArgument, std::string("TCP baseline: bad address ") + ipv4);
    const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(timeout_ns);
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) return sysFail("socket");
    if (::connect(fd_, (sockaddr*)&a, sizeof(a)) != 0) {
      if (errno != EINPROGRESS) return sysFail("connect");
      if (!waitFor(POLLOUT, deadline)) return fail(kTimeout, "TCP baseline: connect timed out");
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      getsockopt(fd_, SOL_SOCKET, SO_ERROR, &so_error, &len);
      if (so_error != 0)
        return fail(kSystemError, std::string("TCP baseline: connect: ") + std::strerror(so_error));
    }
    return tune();
  }

  int accept(int64_t timeout_ns) override {
    if (listen_fd_ < 0) return fail(kIllegalState, "TCP baseline: accept before listen");
    const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(timeout_ns);
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, msLeft(deadline)) != 1) return fail(kTimeout, "TCP baseline: nobody connected");
    fd_ = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd_ < 0) return sysFail("accept");
    close(listen_fd_);
    listen_fd_ = -1;
    return tune();
  }

  int pingPong(bool initiator, std::size_t bytes, int iters, int64_t timeout_ns,
               int64_t* elapsed_ns) override {
    if (fd_ < 0) return fail(kIllegalState, "TCP baseline: not connected");
    buffer_.resize(bytes > 0 ? bytes : 1);
    const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(timeout_ns);
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
      if (initiator && !sendAll(buffer_.data(), bytes, deadline))
        return ioFail("ping-pong send", deadline);
      if (!recvAll(buffer_.data(), bytes, deadline)) return ioFail("ping-pong receive", deadline);
      if (!initiator && !sendAll(buffer_.data(), bytes, deadline))
        return ioFail("ping-pong send", deadline);
    }
    *elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    return ok();
  }

  int oneWay(bool sender, std::size_t bytes, int count, int64_t timeout_ns,
             int64_t* elapsed_ns) override {
    if (fd_ < 0) return fail(kIllegalState, "TCP baseline: not connected");
    buffer_.resize(bytes > 0 ? bytes : 1);
    const Clock::time_point deadline = Clock::now() + std::chrono::nanoseconds(timeout_ns);
    uint8_t ack = 0;
    const auto t0 = Clock::now();
    if (sender) {
      for (int i = 0; i < count; ++i)
        if (!sendAll(buffer_.data(), bytes, deadline)) return ioFail("send", deadline);
      if (!recvAll(&ack, 1, deadline)) return ioFail("waiting for the receiver's byte", deadline);
    } else {
      // The receiver reads in big gulps, as any stream reader would: what the link delivers
      // is measured, not the receiver's syscall count.
      std::vector<uint8_t>& sink = buffer_;
      if (sink.size() < (1u << 20)) sink.resize(1u << 20);
      size_t left = bytes * (size_t)count;
      while (left > 0) {
        const size_t take = left < sink.size() ? left : sink.size();
        const ssize_t r = recvSome(sink.data(), take, deadline);
        if (r <= 0) return ioFail("receive", deadline);
        left -= (size_t)r;
      }
      if (!sendAll(&ack, 1, deadline)) return ioFail("answering the sender", deadline);
    }
    *elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    return ok();
  }

 private:
  static bool address(const char* ipv4, int port, sockaddr_in* a) {
    std::memset(a, 0, sizeof(*a));
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    return ipv4 != nullptr && port >= 0 && port <= 65535 &&
           inet_pton(AF_INET, ipv4, &a->sin_addr) == 1;
  }

  int tune() {
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return ok();
  }

  bool waitFor(short events, Clock::time_point deadline) {
    for (;;) {
      const int left = msLeft(deadline);
      if (left == 0) return false;
      pollfd p{fd_, events, 0};
      const int r = poll(&p, 1, left);
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  }

  // Tries the socket first and polls only when it would block: a ready socket costs one call.
  ssize_t recvSome(void* p, size_t n, Clock::time_point deadline) {
    for (;;) {
      const ssize_t r = recv(fd_, p, n, MSG_DONTWAIT);
      if (r >= 0) return r;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!waitFor(POLLIN, deadline)) return -1;
    }
  }

  bool recvAll(void* buf, size_t n, Clock::time_point deadline) {
    uint8_t* p = (uint8_t*)buf;
    while (n > 0) {
      const ssize_t r = recvSome(p, n, deadline);
      if (r <= 0) return false;
      p += r;
      n -= (size_t)r;
    }
    return true;
  }

  bool sendAll(const void* buf, size_t n, Clock::time_point deadline) {
    const uint8_t* p = (const uint8_t*)buf;
    while (n > 0) {
      const ssize_t w = send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        p += w;
        n -= (size_t)w;
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
      if (!waitFor(POLLOUT, deadline)) return false;
    }
    return true;
  }

  int sysFail(const char* what) {
    return fail(kSystemError, std::string("TCP baseline: ") + what + ": " + std::strerror(errno));
  }

  int ioFail(const char* what, Clock::time_point deadline) {
    if (msLeft(deadline) == 0)
      return fail(kTimeout, std::string("TCP baseline: ") + what + " timed out");
    return fail(kPeerLost, std::string("TCP baseline: ") + what + ": the peer closed or failed (" +
                               std::strerror(errno) + ")");
  }

  int fd_ = -1;
  int listen_fd_ = -1;
  std::vector<uint8_t> buffer_;
};

}  // namespace

TcpBaseline* TcpBaseline::create() { return new (std::nothrow) HostTcpBaseline(); }

}  // namespace bench
}  // namespace te4j
