// socket_io.h — blocking TCP helpers of the software NIC, each bounded by a timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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
/// Parses a dotted IPv4 address; false if malformed.
bool parseIpv4(const std::string& text, uint32_t* host_order);
std::string ipv4ToString(uint32_t host_order);

}  // namespace rdma
}  // namespace te4j
