// process_watch.cpp — te4j/api.h's processWatch functions: whether a peer process has exited,
// asked through a pidfd.
//
// Why a pidfd: a batch asks, at every submit, whether each segment's owner is still there.
// Reading /proc/<pid>/stat for its start time costs 20-60 us in a JVM (the kernel formats the
// whole line, Java splits it), more than a batch of small blocks takes to move. A pidfd names
// one process, not a number that may be reused, and turns readable once that process has
// exited (a zombie included), so the question is one poll(2) with no wait.
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/thread_error.h"
#include "te4j/api.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434  // the same number on every Linux architecture
#endif

namespace te4j {

int processWatchOpen(int pid) {
  if (pid <= 0) {
    setLastThreadError("processWatchOpen: pid " + std::to_string(pid) + " is not a process");
    return kInvalidArgument;
  }
  // pidfds are close-on-exec: a child this process starts does not inherit the watch.
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) {
    const int e = errno;
    setLastThreadError("pidfd_open(" + std::to_string(pid) + "): " + std::strerror(e) +
                       (e == ENOSYS ? " (Linux before 5.3)" : ""));
    return e == ESRCH ? kPeerLost : e == ENOSYS ? kUnavailable : kSystemError;
  }
  return static_cast<int>(fd);
}

int processWatchExited(int fd) {
  if (fd < 0) {
    setLastThreadError("processWatchExited: fd " + std::to_string(fd) + " is not a watch");
    return kInvalidArgument;
  }
  struct pollfd p = {fd, POLLIN, 0};
  for (;;) {
    const int n = ::poll(&p, 1, 0);
    if (n >= 0) {
      if (n == 1 && (p.revents & POLLNVAL) != 0) {
        setLastThreadError("processWatchExited: fd " + std::to_string(fd) + " is not open");
        return kInvalidArgument;
      }
      return n == 1 ? 1 : 0;
    }
    if (errno != EINTR) {
      setLastThreadError(std::string("processWatchExited: poll: ") + std::strerror(errno));
      return kSystemError;
    }
  }
}

void processWatchClose(int fd) {
  if (fd >= 0) ::close(fd);
}

}  // namespace te4j
