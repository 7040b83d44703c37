// socket_io.h — blocking TCP helpers of the software NIC, each bounded by a timeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <sys/uio.h>

namespace te4j {
namespace rdma {

/// Listens on ipv4:port (port 0 = any); returns the fd and the bound port, or -1 with *err.
int tcpListen(uint32_t ipv4_host_order, uint16_t* port, std::string* err);
/// Connects within timeout_ms; returns the fd or -1 with *err. TCP_NODELAY is set.
int tcpConnect(uint32_t ipv4_host_order, uint16_t port, int timeout_ms, std::string* err);
/// Accepts within timeout_ms; returns the fd, -1 on error, -2 on timeout.
int tcpAccept(int listen_fd, int timeout_ms);
/// Reads/writes exactly n bytes; each stall longer than timeout_ms fails. 0 ok, -1 error/EOF.
int readFull(int fd, void* buf, size_t n, int timeout_ms);
int writeFull(int fd, const void* buf, size_t n, int timeout_ms);
/// Writes a header then a payload (one writev where possible).
int writeFull2(int fd, const void* a, size_t na, const void* b, size_t nb, int timeout_ms);
/// Writes every byte of iov[0..n) (modified: advanced past what was sent) in as few sendmsg
/// calls as the socket takes; each stall longer than timeout_ms fails. 0 ok, -1 error.
int writeVecFull(int fd, struct iovec* iov, int n, int timeout_ms);
/// recv without blocking: bytes read (> 0), 0 when nothing is waiting, -1 on EOF or error.
long recvNow(int fd, void* buf, size_t n);
using Clock = std::chrono::steady_clock;
/// Milliseconds left until `deadline`: at least 1 while any time is left, 0 once it passed.
int millisUntil(Clock::time_point deadline);
/// readFull/writeFull bounded by one overall deadline instead of a timeout per stall, so a
/// peer dripping bytes cannot stretch them. 0 ok, -1 error/EOF (errno ETIMEDOUT on expiry).
int readFullBy(int fd, void* buf, size_t n, Clock::time_point deadline);
int writeFullBy(int fd, const void* buf, size_t n, Clock::time_point deadline);
/// Accepts one connection that is already waiting, non-blocking (O_NONBLOCK set on the new fd);
/// its source address in *peer_ipv4. -1 when none is waiting or on error.
int tcpAcceptNow(int listen_fd, uint32_t* peer_ipv4);
/// Whether ipv4 (host order) is a loopback address (127/8).
inline bool isLoopback(uint32_t ipv4) { return (ipv4 >> 24) == 127; }
/// Parses a dotted IPv4 address; false if malformed.
bool parseIpv4(const std::string& text, uint32_t* host_order);
std::string ipv4ToString(uint32_t host_order);

}  // namespace rdma
}  // namespace te4j
