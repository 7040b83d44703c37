// maca/maca_ops.cuh — where upstream Mooncake's selector finds the MetaX (MACA) table.
//
// te4j has no MACA platform: there is no MACA toolkit to build or test one, so this path exists
// only to keep upstream's selector (device_ops.cuh) in its shape and to say so at compile time.
#pragma once

#error \
    "te4j does not support MACA (MOONCAKE_EP_USE_MACA): build for CUDA (nvcc) or the host platform (g++) instead"
