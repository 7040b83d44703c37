// device_work_queues.cu — asks the CUDA driver for its largest number of hardware work queues.
//
// Why: the driver feeds the GPU through CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 unless
// set); when a process has more streams than queues, streams share a queue and a kernel waits
// behind another stream's kernel as if they were one stream. te4j's software NIC executes a
// peer's atomic with a one-thread kernel on its own stream while other te4j kernels of the same
// process spin until that atomic's completion arrives: with several ranks in one process
// (threads, each with a few streams) the atomic's kernel could queue behind a spinning kernel
// and both sat until the device timeout. 32 queues (the driver's maximum) keep them apart. A
// value the user already set is left alone (setenv without overwrite); it only takes effect if
// CUDA is not yet initialised in this process.
#include <cstdlib>

namespace {

__attribute__((constructor)) void te4jRequestMoreWorkQueues() {
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
}

}  // namespace
