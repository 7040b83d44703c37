// bench/exit_now.cpp — te4j::bench::exitNow: the process ends without exit()'s teardown.
//
// Why: ranks run as threads of one JVM may still be inside a bounded CUDA call when the JVM
// exits (a run given up on, SIGTERM). exit() runs the static CUDA runtime's teardown under them,
// which crashes the process; _exit() leaves the driver to reclaim the context instead.
#include <stdio.h>
#include <unistd.h>

#include "te4j/bench_api.h"

namespace te4j {
namespace bench {

void exitNow(int code) {
  fflush(nullptr);
  _exit(code);
}

}  // namespace bench
}  // namespace te4j
