# Te4jLayers.cmake — keeps the native tree layered: core/ is the bottom layer, so no file in a
# core/ folder includes a header of the layers built on it (p2p, rdma, stream, batch, module,
# mooncake). Those layers reach core through its headers; core reaches them only through
# interfaces it declares itself (core/cuda_bridge.h). Run as a script on every build (target
# te4j_layers): cmake -DTE4J_LAYER_ROOTS="<dir>[|<dir>...]" -P Te4jLayers.cmake, each root a
# folder that may hold a core/ folder (src/main/cpp, src/main/cuda).
set(above "p2p|rdma|stream|batch|module|mooncake")
set(violations "")
string(REPLACE "|" ";" roots "${TE4J_LAYER_ROOTS}")
foreach(root ${roots})
  file(GLOB_RECURSE core_files "${root}/core/*")
  foreach(file ${core_files})
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<](\\.\\./)*(${above})/")
    foreach(line ${lines})
      string(APPEND violations "\n  ${file}: ${line}")
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "core/ must not include the layers above it (${above}); move the code "
                      "that needs them into that layer:${violations}")
endif()
