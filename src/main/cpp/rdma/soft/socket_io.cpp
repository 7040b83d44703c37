// socket_io.cpp — see socket_io.h.
#include "rdma/soft/socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace te4j {
namespace rdma {

namespace {

sockaddr_in makeAddr(uint32_t ipv4, uint16_t port) {
  sockaddr_in a;
  std::memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(ipv4);
  return a;
}

// Waits for `events` on fd; 1 ready, 0 timeout, -1 error.
int waitFd(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    return r < 0 ? -1 : (r == 0 ? 0 : 1);
  }
}

std::string sysError(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

int tcpListen(uint32_t ipv4, uint16_t* port, std::string* err) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *err = sysError("socket");
    return -1;
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a = makeAddr(ipv4, *port);
  if (bind(fd, (sockaddr*)&a, sizeof(a)) != 0 || listen(fd, 128) != 0) {
    *err = sysError(("bind/listen on " + ipv4ToString(ipv4)).c_str());
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, (sockaddr*)&a, &len);
  *port = ntohs(a.sin_port);
  return fd;
}

int tcpConnect(uint32_t ipv4, uint16_t port, int timeout_ms, std::string* err) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *err = sysError("socket");
    return -1;
  }
  sockaddr_in a = makeAddr(ipv4, port);
  const std::string where = ipv4ToString(ipv4) + ":" + std::to_string(port);
  if (connect(fd, (sockaddr*)&a, sizeof(a)) != 0) {
    if (errno != EINPROGRESS) {
      *err = sysError(("connect to " + where).c_str());
      close(fd);
      return -1;
    }
    if (waitFd(fd, POLLOUT, timeout_ms) != 1) {
      *err = "connect to " + where + " timed out";
      close(fd);
      return -1;
    }
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      *err = "connect to " + where + ": " + std::strerror(so_error);
      close(fd);
      return -1;
    }
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int tcpAccept(int listen_fd, int timeout_ms) {
  const int w = waitFd(listen_fd, POLLIN, timeout_ms);
  if (w <= 0) return w == 0 ? -2 : -1;
  const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int readFull(int fd, void* buf, size_t n, int timeout_ms) {
  uint8_t* p = (uint8_t*)buf;
  while (n > 0) {
    const ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Polled only when nothing is waiting: a stream of data costs one call per chunk.
      if (waitFd(fd, POLLIN, timeout_ms) != 1) return -1;
      continue;
    }
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int writeVecFull(int fd, iovec* iov, int n, int timeout_ms) {
  int first = 0;
  while (first < n) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    msghdr m;
    std::memset(&m, 0, sizeof(m));
    m.msg_iov = iov + first;
    m.msg_iovlen = (size_t)(n - first);
    // Tried before polling: a socket with room (the common case) costs one call.
    // MSG_NOSIGNAL: a peer that went away is an error return, never SIGPIPE.
    const ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (waitFd(fd, POLLOUT, timeout_ms) != 1) return -1;
      continue;
    }
    if (w < 0) return -1;
    size_t left = (size_t)w;
    while (left > 0 && first < n) {
      const size_t take = left < iov[first].iov_len ? left : iov[first].iov_len;
      iov[first].iov_base = (uint8_t*)iov[first].iov_base + take;
      iov[first].iov_len -= take;
      left -= take;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  return 0;
}

int writeFull2(int fd, const void* a, size_t na, const void* b, size_t nb, int timeout_ms) {
  iovec iov[2] = {{(void*)a, na}, {(void*)b, nb}};
  return writeVecFull(fd, iov, 2, timeout_ms);
}

long recvNow(int fd, void* buf, size_t n) {
  for (;;) {
    const ssize_t r = recv(fd, buf, n, MSG_DONTWAIT);
    if (r > 0) return (long)r;
    if (r == 0) return -1;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  }
}

int writeFull(int fd, const void* buf, size_t n, int timeout_ms) {
  return writeFull2(fd, buf, n, nullptr, 0, timeout_ms);
}

int millisUntil(Clock::time_point deadline) {
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1;
  return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

int readFullBy(int fd, void* buf, size_t n, Clock::time_point deadline) {
  uint8_t* p = (uint8_t*)buf;
  while (n > 0) {
    const int left = millisUntil(deadline);
    if (left == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    const int w = waitFd(fd, POLLIN, left);
    if (w == 0) continue;  // the loop head reports the expiry
    if (w < 0) return -1;
    const ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int writeFullBy(int fd, const void* buf, size_t n, Clock::time_point deadline) {
  const uint8_t* p = (const uint8_t*)buf;
  while (n > 0) {
    const int left = millisUntil(deadline);
    if (left == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    const int w = waitFd(fd, POLLOUT, left);
    if (w == 0) continue;
    if (w < 0) return -1;
    const ssize_t r = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r < 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int tcpAcceptNow(int listen_fd, uint32_t* peer_ipv4) {
  sockaddr_in a;
  socklen_t len = sizeof(a);
  const int fd = accept4(listen_fd, (sockaddr*)&a, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return -1;
  *peer_ipv4 = a.sin_family == AF_INET ? ntohl(a.sin_addr.s_addr) : 0;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool parseIpv4(const std::string& text, uint32_t* host_order) {
  in_addr a;
  if (inet_pton(AF_INET, text.c_str(), &a) != 1) return false;
  *host_order = ntohl(a.s_addr);
  return true;
}

std::string ipv4ToString(uint32_t host_order) {
  char buf[INET_ADDRSTRLEN];
  in_addr a;
  a.s_addr = htonl(host_order);
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return buf;
}

}  // namespace rdma
}  // namespace te4j
