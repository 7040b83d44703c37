// musa/musa_ops.cuh — where upstream Mooncake's selector finds the Moore Threads (MUSA) table.
//
// te4j has no MUSA platform: there is no MUSA toolkit to build or test one, so this path exists
// only to keep upstream's selector (device_ops.cuh) in its shape and to say so at compile time.
#pragma once

#error \
    "te4j does not support MUSA (MOONCAKE_EP_USE_MUSA): build for CUDA (nvcc) or the host platform (g++) instead"
