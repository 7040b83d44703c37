// build_features.h — what this libte4j was built with, decided once from the build's definitions
// (CMakeLists.txt): for the availability report (core/api.cpp) and the backends that depend on it.
#pragma once

namespace te4j {

/// Whether this build holds the mlx5 hardware backend (rdma-core's headers were found); the
/// availability report says so as rdma.mlx5.built.
#if defined(TE4J_HAVE_RDMA_CORE_HEADERS)
constexpr bool kBuiltWithRdmaCore = true;
#else
constexpr bool kBuiltWithRdmaCore = false;
#endif

}  // namespace te4j
