# test_devx_layout compares te4j's DevX command layout with the Linux kernel's mlx5_ifc.h, taken
# from the newest kernel headers package under /usr/src (Debian: linux-headers-<v>-common,
# Ubuntu: linux-headers-<v>-<n>; scripts/ensure-deps.sh installs it). The header is kernel C, so
# a small C file (devx_ifc_probe.c) reads it. Without a usable header the test still builds and
# fails, naming the package, unless TE4J_ALLOW_MISSING_IFC=1 at run time.
if(NOT TARGET test_devx_layout)
  return()
endif()

set(TE4J_LINUX_HEADERS_ROOT "/usr/src" CACHE PATH "Where linux-headers-* packages install")
file(GLOB te4j_ifc_candidates ${TE4J_LINUX_HEADERS_ROOT}/linux-headers-*/include/linux/mlx5/mlx5_ifc.h)
list(SORT te4j_ifc_candidates COMPARE NATURAL ORDER DESCENDING)
set(te4j_ifc "")
if(NOT te4j_ifc_candidates)
  set(te4j_ifc_missing "no ${TE4J_LINUX_HEADERS_ROOT}/linux-headers-*/include/linux/mlx5/mlx5_ifc.h")
else()
  list(GET te4j_ifc_candidates 0 te4j_ifc_newest)
  # Kernels before ~6.4 keep create_qp_in's umem fields reserved: too old to check against.
  file(STRINGS "${te4j_ifc_newest}" te4j_ifc_umem REGEX "wq_umem_offset")
  if(te4j_ifc_umem)
    set(te4j_ifc "${te4j_ifc_newest}")
  else()
    set(te4j_ifc_missing "${te4j_ifc_newest} is too old: no create_qp_in.wq_umem_offset")
  endif()
endif()

if(te4j_ifc)
  enable_language(C)
  target_sources(test_devx_layout PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/test/cpp/devx_ifc_probe.c)
  target_compile_definitions(test_devx_layout PRIVATE TE4J_MLX5_IFC_H="${te4j_ifc}")
  message(STATUS "te4j: test_devx_layout checks against ${te4j_ifc}")
else()
  target_compile_definitions(test_devx_layout PRIVATE TE4J_MLX5_IFC_MISSING="${te4j_ifc_missing}")
  message(WARNING "te4j: ${te4j_ifc_missing}; test_devx_layout will fail. Install the newest "
                  "linux-headers-*-common (Ubuntu: linux-headers-<version>-<n>).")
endif()
