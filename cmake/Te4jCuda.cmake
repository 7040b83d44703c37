# The CUDA toolchain of libte4j and of the modules that build against it (te4j-bench), in one
# place. Include this file BEFORE project(): CMAKE_CUDA_ARCHITECTURES set later is ignored and
# CMake silently falls back to nvcc's default (sm_75). 90-real = sm_90 machine code, 90-virtual =
# compute_90 PTX for newer GPUs. After project(), te4j_enable_cuda() turns CUDA on when
# TE4J_WITH_CUDA is set and nvcc is found (else sets TE4J_WITH_CUDA OFF), and
# te4j_use_cuda(target) gives a target the flags and the static CUDA runtime.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
endif()

macro(te4j_enable_cuda)
  if(TE4J_WITH_CUDA)
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      enable_language(CUDA)
      set(CMAKE_CUDA_STANDARD 17)
      set(CMAKE_CUDA_STANDARD_REQUIRED ON)
      # Static cudart: the libraries then load on machines with no GPU and no driver.
      set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
      find_package(CUDAToolkit REQUIRED)
    else()
      message(STATUS "${PROJECT_NAME}: nvcc not found, building the host platform only")
      set(TE4J_WITH_CUDA OFF)
    endif()
  endif()
endmacro()

# scope: PUBLIC where users of the target compile against TE4J_WITH_CUDA (libte4j), else PRIVATE.
function(te4j_use_cuda target scope)
  target_compile_definitions(${target} ${scope} TE4J_WITH_CUDA=1)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
  target_link_libraries(${target} PRIVATE CUDA::cudart_static)
endfunction()
